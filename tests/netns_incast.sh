#!/usr/bin/env bash
# netns_incast.sh: PlogP-BR on incast: with a small switch queue the model predicts the flat
# gather (all children send at once) losing to the binomial one (pairwise), and the
# daemons' `auto` picks binomial from the parameters hibar-bench logp measured. The measured
# times of both are printed (a benchmark, not asserted).
# One site of 6 namespace hosts, every switch port capped at 100 Mbit/s with a 4-packet pfifo
# (tests/netns/testbed --lan-mbit 100 --queue-limit 4). Needs root (exit 77 without).
# Runs in about 25 s. Each gather is measured 7 times (median), 16 KiB per node.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
SIZE=16384
REPS=7

. "$(dirname "$0")/hb_test.sh"

if [ "${1-}" = --inside ]; then
    NAME=hibar-inc$$
    DIR=/tmp/hibar-$(id -u)-inc$$
    mkdir -p "$DIR" || exit 99
    export HIBAR_MODEL_CACHE=$DIR/params.plogp # the daemons read it, the tools write it
    SETS=(--set "cluster=$NAME" --set "run_dir=$DIR")
    # after the daemons stopped (a daemon that died leaves its chassis segment)
    on_exit 'rm -rf "$DIR" /dev/shm/hibar-"$(id -u)"-"$NAME"-*'
    # the daemons' side, before the cleanup removes it
    on_fail 'for l in "$DIR"/*.log; do [ -f "$l" ] && { echo "== $l (last 30 lines)" >&2; tail -n 30 "$l" >&2; }; done'
    # heartbeat timeout 15 s: the many-to-one flood of hibar-bench logp into 4-packet queues
    # stalls TCP (retransmission back-off, the PING behind megabytes) for seconds, and the
    # default 2 s would drop the link as dead
    bed_daemons "$NAME" "$DIR" -o heartbeat.timeout_ms=15000 || fail "daemons not ready"
    # PlogP(-BR) parameters; q from the bed's queue (4 x 1514 B), no flow control
    "$bld/tools/hibar-bench" logp --config "$HIBAR_TESTBED_CONFIG" -o "cluster=$NAME" -o "run_dir=$DIR" \
        --sizes 0,4K,16K,32K --max-reps 200 --flood 50 --floods 3 >"$DIR/logp.txt" 2>&1 ||
        { cat "$DIR/logp.txt"; fail "hibar-bench logp"; }
    grep -q '^flow_control 0' "$HIBAR_MODEL_CACHE" || fail "the parameter file lacks flow_control 0"
    info=$("$bld/tools/hibar-info" --config "$HIBAR_TESTBED_CONFIG" -o "cluster=$NAME" --model --size $SIZE)
    echo "$info" | grep -E "^model|^  L|gather "
    line=$(echo "$info" | awk '$1 == "gather"')
    pflat=$(echo "$line" | awk '{print $3}')
    pbin=$(echo "$line" | awk '{print $4}')
    echo "$line" | grep -q "binomial (" || fail "PlogP-BR does not choose binomial: $line"
    awk -v f="$pflat" -v b="$pbin" 'BEGIN { exit !(f > b) }' || fail "flat not predicted slower"
    # measured: median of REPS per algorithm, last end - first start over the daemons
    meas() {
        local alg=$1 r
        for ((r = 0; r < REPS; r++)); do
            "$bld/tests/xcoll_drive" --config "$HIBAR_TESTBED_CONFIG" "${SETS[@]}" coll gather "$alg" 0 $SIZE |
                awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                       if ($2 != "ok") bad = 1
                       if (t0 == "" || v["t0_ns"] < t0) t0 = v["t0_ns"]; if (v["t1_ns"] > t1) t1 = v["t1_ns"]
                       alg = v["alg"] }
                     END { if (bad) exit 1; printf "%.0f %s\n", (t1 - t0) / 1e3, alg }' || return 1
        done | sort -n | awk -v n=$REPS 'NR == int((n + 1) / 2) { print }'
    }
    "$bld/tests/xcoll_drive" --config "$HIBAR_TESTBED_CONFIG" "${SETS[@]}" coll gather flat 0 1 >/dev/null ||
        fail "warm-up gather"
    "$bld/tests/xcoll_drive" --config "$HIBAR_TESTBED_CONFIG" "${SETS[@]}" coll gather binomial 0 1 >/dev/null ||
        fail "warm-up gather"
    mf=$(meas flat) || fail "flat gather failed"
    mb=$(meas binomial) || fail "binomial gather failed"
    ma=$(meas auto) || fail "auto gather failed"
    echo "gather $SIZE B per node, median of $REPS: flat ${mf% *} us, binomial ${mb% *} us, auto ${ma% *} us (chose ${ma#* }); predicted flat $pflat us, binomial $pbin us"
    [ "${ma#* }" = binomial ] || fail "the daemons chose ${ma#* }, not binomial"
    # the measured order is reported, not asserted: it is a benchmark, and with a second suite
    # running beside this one flat and binomial came within 1 % (6193 against 6238 us); alone
    # flat loses by 16-73 % (hibar-bench gather and doc/model.md measure it properly)
    lost=lost
    [ "${mf% *}" -gt "${mb% *}" ] || lost="did not lose this time"
    echo "PASS: PlogP-BR predicted the overlapping (flat) gather losing, auto chose binomial; measured, flat $lost (${mf% *} against ${mb% *} us)"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "SKIP: no ip/tc"; exit 77; }
[ -x "$bld/tests/xcoll_drive" ] || { echo "SKIP: tests/xcoll_drive not built"; exit 77; }
exec "$src/tests/netns/testbed" --name "b9i$$" --net 10.239 --sites 1 --nodes 6 --lan-mbit 100 \
    --queue-limit 4 -- "$0" --inside
