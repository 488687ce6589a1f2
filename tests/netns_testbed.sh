#!/usr/bin/env bash
# netns_testbed.sh: integration test of tests/netns/testbed: bed up, WAN caps measured, torn down always.
# Needs root (skip 77 otherwise). Bandwidth bounds are loose (a shared 2-core machine); the
# upper bounds are what proves a cap, the lower ones that traffic flowed at all.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
probe=$bld/tests/netns/hb_bwprobe
name=t$$
pfx=hibar-$name
LANE=100 TOTAL=250 SECS=1.5

. "$(dirname "$0")/hb_test.sh"

# ---- inside the bed (the script re-runs itself as the bed's COMMAND) ----
if [ "${1-}" = --inside ]; then
    pfx=$HIBAR_TESTBED_PREFIX
    n=$(ip netns list 2>/dev/null | awk -v p="$pfx-" 'index($1, p) == 1' | wc -l)
    [ "$n" -eq 11 ] || fail "expected 11 namespaces (8 hosts, 2 switches, router), found $n"
    for v in HIBAR_TESTBED_HOSTS HIBAR_TESTBED_CONFIG HIBAR_TESTBED_SUBNET HIBAR_TESTBED_DIR; do
        [ -n "${!v:-}" ] || fail "$v not exported"
    done
    [ "$(echo $HIBAR_TESTBED_HOSTS | wc -w)" -eq 8 ] || fail "HIBAR_TESTBED_HOSTS: $HIBAR_TESTBED_HOSTS"
    grep -q "^bootstrap: static" "$HIBAR_TESTBED_CONFIG" || fail "config lacks bootstrap: static"
    [ "$(grep -c 'address: ' "$HIBAR_TESTBED_CONFIG")" -eq 8 ] || fail "config lacks the 8 addresses"
    # The config module reads the generated file (when hibar-info is built).
    info=$bld/tools/hibar-info
    if [ -x "$info" ]; then
        "$info" --config "$HIBAR_TESTBED_CONFIG" >/dev/null || fail "hibar-info rejects $HIBAR_TESTBED_CONFIG"
    fi
    h=$("$HIBAR_TESTBED_HOSTEXEC" "$pfx-s1-n2" hostname) || fail "hostexec failed"
    [ "$h" = "$pfx-s1-n2" ] || fail "hostexec hostname is '$h'"

    # flows SRC_SITE DST_SITE P [SHIFT]: P concurrent pairs s<a>-n<j> -> s<b>-n<j+SHIFT>;
    # prints the sum in Mbit/s.
    flows() {
        local a=$1 b=$2 p=$3 k=${4:-0} j out
        for ((j = 0; j < p; j++)); do
            ip netns exec "$pfx-s$b-n$((j + k))" "$probe" -s -n 1 -T 30 -p 5301 &
        done
        out=$(for ((j = 0; j < p; j++)); do
            ip netns exec "$pfx-s$a-n$j" "$probe" -c "10.231.$b.$((j + k + 1))" -p 5301 -t $SECS -l "p$j" &
        done; wait)
        wait
        echo "$out" >&2
        [ "$(echo "$out" | grep -c '"mbit"')" -eq "$p" ] || fail "not all $p probes reported"
        echo "$out" | sed 's/.*"mbit": \([0-9.]*\).*/\1/' | awk '{ s += $1 } END { printf "%.0f\n", s }'
    }
    one=$(flows 0 1 1) || exit 1
    echo "one WAN pair: $one Mbit/s (lane cap $LANE)"
    [ "$one" -le $((LANE * 110 / 100)) ] || fail "one pair got $one Mbit/s, above the lane cap $LANE"
    [ "$one" -ge $((LANE * 40 / 100)) ] || fail "one pair got only $one Mbit/s"
    four=$(flows 1 0 4) || exit 1
    echo "four WAN pairs: $four Mbit/s (total cap $TOTAL, 4 lanes would give $((4 * LANE)))"
    [ "$four" -le $((TOTAL * 110 / 100)) ] || fail "4 pairs got $four Mbit/s, above the total cap $TOTAL"
    [ "$four" -ge $((TOTAL * 40 / 100)) ] || fail "4 pairs got only $four Mbit/s"
    lan=$(flows 0 0 1 1) || exit 1
    echo "one LAN pair: $lan Mbit/s (uncapped)"
    [ "$lan" -ge $((LANE * 2)) ] || fail "LAN pair got only $lan Mbit/s: is the LAN capped?"

    # Round trips across the router (the echo path works; the time is reported, not checked).
    ip netns exec "$pfx-s1-n3" "$probe" -s -n 1 -T 30 -p 5302 &
    rtt=$(ip netns exec "$pfx-s0-n3" "$probe" -c 10.231.1.4 -p 5302 -r 200) || fail "rtt probe failed"
    wait
    echo "$rtt"
    echo "$rtt" | grep -q '"bench": "rtt", .*"iters": 200, "median_us": [0-9.]*' || fail "no rtt row"

    # Lanes really used: exactly the 4 lanes s1-nj -> s0-nj carried bulk data into site 0.
    stats=$($HIBAR_TESTBED_STATS) || fail "testbed --stats failed"
    busy=$(echo "$stats" | awk '$1 == "lane" && $2 ~ /\.1\./ && $3 ~ /\.0\./ && $4 > 1000000' | wc -l)
    echo "$stats" | awk '$1 == "lane" && $4 > 1000000' >&2
    [ "$busy" -eq 4 ] || fail "expected 4 busy lanes into site 0, counters show $busy"
    echo "$stats" | awk '$1 == "host"' | grep -q . || fail "no host counters"
    exit 0
fi

# ---- outside ----
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x "$probe" ] || fail "$probe not built"

# After each run: nothing of the bed left (namespaces, state; the bed adds nothing else).
check_bed_gone() {
    local left
    left=$(ip netns list 2>/dev/null | awk -v p="$pfx-" 'index($1, p) == 1 { print $1 }')
    [ -z "$left" ] || fail "$1: namespaces left: $left"
    [ ! -e "/tmp/$pfx.testbed" ] || fail "$1: /tmp/$pfx.testbed left"
    ! ip -o link show | grep -q hibar || fail "$1: a hibar link in the root namespace"
}

"$tb" --sites 2 --nodes 4 --lane-mbit $LANE --total-mbit $TOTAL --name "$name" -- "$0" --inside
rc=$?
check_bed_gone "after the measured run"
[ $rc -eq 0 ] || fail "bed run exited $rc"

# A failing command: its status comes back, the bed is gone.
"$tb" --sites 2 --nodes 1 --name "$name" -- sh -c 'exit 3'
rc=$?
[ $rc -eq 3 ] || fail "command status 3 came back as $rc"
check_bed_gone "after a failing command"

# A signal: TERM to the bed while its command runs.
"$tb" --sites 1 --nodes 2 --name "$name" -- sleep 60 &
bed=$!
# once the bed runs its command (a signal in the middle of bash's own set-up, inside a command
# substitution, once made bash report a syntax error in the trap and go on)
for _ in $(seq 300); do
    pgrep -P "$bed" -x sleep >/dev/null && break
    sleep 0.1
done
kill -TERM $bed
wait $bed
rc=$?
[ $rc -eq 143 ] || fail "TERM: bed exited $rc, expected 143"
check_bed_gone "after TERM"

# A stale bed of the same name (a crashed run) is removed first.
ip netns add "$pfx-s0-n0" || fail "cannot create the stale namespace"
ip netns exec "$pfx-s0-n0" sleep 60 &
"$tb" --sites 1 --nodes 1 --name "$name" -- true || fail "bed over a stale one failed"
wait
check_bed_gone "after a stale bed"

# --cleanup with a name.
ip netns add "$pfx-s0-n0"
"$tb" --cleanup --name "$name" || fail "--cleanup failed"
check_bed_gone "after --cleanup"
echo "PASS"
