#!/usr/bin/env bash
# daemon_hang.sh: SIGSTOP one daemon mid-barrier (a hung node, its sockets stay open): the
# heartbeats find it, and every other daemon reports HIBAR_ERR_PEER_LOST within twice the
# heartbeat timeout.
TEST_TAG=hang
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
HB_TIMEOUT=1000
SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR" --set "heartbeat.interval_ms=250"
      --set "heartbeat.timeout_ms=$HB_TIMEOUT")
up
cl barrier --count 5 >/dev/null || fail "warm-up barriers"
victim=n06 # Center of an inter-level chassis: links up, down and to its mates
out=$(cl barrier --kill "$victim:200" --stop --expect -4 --timeout $((4 * HB_TIMEOUT))) ||
    { echo "$out"; fail "hung $victim: not every daemon reported -4"; }
echo "$out"
pid=$(cat "$RUN_DIR/$victim.pid")
kill -CONT "$pid" 2>/dev/null
ms=$(echo "$out" | sed -n 's/.*last reply \([0-9.]*\) ms after the kill.*/\1/p')
[ -n "$ms" ] || fail "no detection latency in: $out"
awk -v m="$ms" -v t=$((2 * HB_TIMEOUT)) 'BEGIN { exit !(m <= t) }' ||
    fail "last PEER_LOST $ms ms after the hang (limit $((2 * HB_TIMEOUT)) ms)"
down
check_clean
echo "PASS: a hung daemon was found by the heartbeats in $ms ms"
