#!/usr/bin/env bash
# daemon_kill.sh: SIGKILL one daemon mid-barrier: every other daemon reports HIBAR_ERR_PEER_LOST
# (-4) within twice the heartbeat timeout, none hangs or crashes, and down cleans up after it.
TEST_TAG=kill
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
HB_TIMEOUT=2000
for victim in n03 n17; do # an inter-level Center (segment owner), a low-end port
    SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR" --set "heartbeat.timeout_ms=$HB_TIMEOUT")
    up
    cl barrier --count 5 >/dev/null || fail "warm-up barriers"
    out=$(cl barrier --kill "$victim:300" --expect -4 --timeout $((4 * HB_TIMEOUT))) ||
        { echo "$out"; fail "kill $victim: not every daemon reported -4"; }
    echo "$out"
    ms=$(echo "$out" | sed -n 's/.*last reply \([0-9.]*\) ms after the kill.*/\1/p')
    [ -n "$ms" ] || fail "no kill latency in: $out"
    awk -v m="$ms" -v t=$((2 * HB_TIMEOUT)) 'BEGIN { exit !(m <= t) }' ||
        fail "last PEER_LOST $ms ms after the kill (limit $((2 * HB_TIMEOUT)) ms)"
    # the 29 others are alive and answer at once, with PEER_LOST for new barriers
    st=$(cl status); up_n=$(echo "$st" | sed -n 's/^\([0-9]*\) of 30 daemons up.*/\1/p')
    [ "$up_n" = 29 ] || { echo "$st"; fail "$up_n daemons alive after the kill, expected 29"; }
    out=$(cl barrier --kill "$victim:0" --expect -4 --timeout 5000) || { echo "$out"; fail "barrier after the loss"; }
    down
    check_clean
done
echo "PASS: every surviving daemon reported HIBAR_ERR_PEER_LOST in time"
