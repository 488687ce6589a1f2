#!/usr/bin/env bash
# netns_partition.sh: a partition on the network-namespace bed (doc/design.md section 5.1). One
# site of 4 hosts, one hibard each (heartbeat 200 ms, timeout 1 s). A job on every host runs
# fences with data; the last host's switch port drops everything for 5 s (the port is taken down:
# a pulled cable; no reset reaches either side, the traffic just stops). The job ends with an
# error naming that host; the others hold it lost, it holds them lost; once the port forwards
# again the two sides meet, the cut-off host gives way and rejoins as a new incarnation by itself,
# and a job on every host runs again with its data checked. Needs root (exit 77 without). About
# 20 s; the waits below are bounds against hangs, not measurements.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}

. "$(dirname "$0")/hb_test.sh"

if [ "${1-}" = --inside ]; then
    NAME=hibar-prt$$
    DIR=/tmp/hibar-$(id -u)-prt$$
    mkdir -p "$DIR" || exit 99
    SETS=(--set "cluster=$NAME" --set "run_dir=$DIR")
    on_exit 'rm -rf "$DIR" /dev/shm/hibar-"$(id -u)"-"$NAME"-*'
    on_fail 'for l in "$DIR"/*.log; do
        [ -f "$l" ] && { echo "== $l (last 15 lines)" >&2; tail -n 15 "$l" >&2; }
    done'
    sw=$HIBAR_TESTBED_PREFIX-sw0
    # the port back to forwarding whatever happens (the bed goes anyway, but not before us)
    on_exit 'ip -n "$sw" link set dev h3 up 2>/dev/null'
    bed_daemons "$NAME" "$DIR" -o heartbeat.interval_ms=200 -o heartbeat.timeout_ms=1000 ||
        fail "daemons not ready"
    CL=("$bld/tools/hibar-cluster" --config "$HIBAR_TESTBED_CONFIG" "${SETS[@]}")
    R=("$bld/tools/hibar-run" --config "$HIBAR_TESTBED_CONFIG" "${SETS[@]}")
    cut=$(echo "$HIBAR_TESTBED_HOSTS" | tr ' ' '\n' | sed -n '4s/:.*//p')
    [ -n "$cut" ] || fail "no fourth host in the bed"
    old=$("${CL[@]}" ctl "$cut" status | tr ' ' '\n' | sed -n 's/^inc=//p')
    timeout -k 5 120 "${R[@]}" -n 4 -N 1 "$bld/tests/fence_client" --size 256 --iters 1000000 \
        >"$DIR/a.out" 2>"$DIR/a.err" &
    pa=$!
    for _ in $(seq 200); do
        "${CL[@]}" jobs 2>/dev/null | grep -q running && break
        sleep 0.05
    done
    sleep 0.5
    ip -n "$sw" link set dev h3 down || fail "cannot take the switch port down"
    rca=0
    wait "$pa" || rca=$?
    [ $rca -ne 0 ] || fail "the job with the cut-off host ended with status 0"
    grep -q "$cut" "$DIR/a.err" || { cat "$DIR/a.err"; fail "the job's error does not name $cut"; }
    # both sides: the others hold it lost (it answers no heartbeat)
    first=$(echo "$HIBAR_TESTBED_HOSTS" | tr ' ' '\n' | sed -n '1s/:.*//p')
    for _ in $(seq 300); do
        "${CL[@]}" ctl "$first" members | grep -q " $cut:lost:" && break
        sleep 0.1
    done
    "${CL[@]}" ctl "$first" members | grep -q " $cut:lost:" || fail "$first does not hold $cut lost"
    sleep 4
    ip -n "$sw" link set dev h3 up || fail "cannot bring the switch port up"
    for _ in $(seq 300); do
        new=$("${CL[@]}" ctl "$cut" status 2>/dev/null | tr ' ' '\n' | sed -n 's/^inc=//p')
        "${CL[@]}" status >"$DIR/status" 2>&1 && [ -n "$new" ] && [ "$new" != "$old" ] && break
        sleep 0.1
    done
    cat "$DIR/status"
    "${CL[@]}" status >/dev/null || fail "the cluster did not come back whole"
    [ "$new" != "$old" ] || fail "$cut rejoined without a new incarnation"
    gave=$("${CL[@]}" ctl "$cut" stats | tr ' ' '\n' | sed -n 's/^self_rejoins=//p')
    [ "${gave:-0}" -ge 1 ] || fail "$cut did not give way (self_rejoins=$gave)"
    timeout -k 5 60 "${R[@]}" -n 4 -N 1 "$bld/examples/hibar-example" >"$DIR/b.out" 2>&1 ||
        { cat "$DIR/b.out"; fail "a job on every host after the partition"; }
    grep -q "4 ranks: .*data checked: ok" "$DIR/b.out" || fail "no data check after the partition"
    "${CL[@]}" ctl all shutdown >/dev/null 2>&1
    echo "PASS: $cut cut off for 5 s: its job ended naming it, it rejoined as a new incarnation"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip"; exit 77; }
for p in tests/fence_client examples/hibar-example; do
    [ -x "$bld/$p" ] || { echo "SKIP: $p not built"; exit 77; }
done
exec "$src/tests/netns/testbed" --name "b9p$$" --net 10.238 --sites 1 --nodes 4 -- "$0" --inside
