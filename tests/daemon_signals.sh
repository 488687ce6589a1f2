#!/usr/bin/env bash
# daemon_signals.sh: daemons under a storm of signals (SIGCHLD, as their ranks' exits send)
# complete 2,000 barriers with no neighbour lost and no message dropped: ZeroMQ calls that a
# signal interrupts (EINTR) are made again, never taken for a failure.
TEST_TAG=sig
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
HIBAR_TEST_CONFIG=$src/examples/local.yaml
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
up
pids=$(pgrep -f -- "cluster=$NAME" | tr '\n' ' ')
[ "$(echo $pids | wc -w)" -eq 12 ] || fail "expected 12 daemons, found: $pids"
# the storm: every daemon gets SIGCHLD as fast as this loop can send it, until it is stopped
(
    trap 'exit 0' TERM
    while :; do kill -CHLD $pids 2>/dev/null || exit 0; done
) &
STORM=$!
on_exit 'kill $STORM 2>/dev/null'
out=$(cl barrier --count 2000)
rc=$?
kill $STORM 2>/dev/null
wait $STORM 2>/dev/null
echo "$out"
[ $rc -eq 0 ] || fail "2000 barriers under signals"
echo "$out" | grep -q "^barriers 2000 (ids from 0), bad 0" || fail "unexpected: $out"
stats=$(cl ctl all stats)
[ "$(echo "$stats" | grep -c " barriers=2000 failed=0 ")" -eq 12 ] ||
    { echo "$stats"; fail "not every daemon completed 2000 barriers"; }
[ "$(echo "$stats" | grep -c " tx_fail=0 ")" -eq 12 ] || { echo "$stats"; fail "sends failed"; }
[ "$(echo "$stats" | grep -c ' bad=0 ')" -eq 12 ] || { echo "$stats"; fail "malformed frames counted"; }
if grep -l -E "lost|Interrupted" "$RUN_DIR"/*.log 2>/dev/null; then
    grep -h -E "lost|Interrupted" "$RUN_DIR"/*.log | head
    fail "a daemon logged a lost neighbour or an interrupted call"
fi
down
check_clean
echo "PASS: 2000 barriers on 12 daemons under a SIGCHLD storm"
