#!/usr/bin/env bash
# daemon_stall.sh: a daemon whose loop does not run for a while (its main thread frozen through
# a cgroup v1 freezer; its ZeroMQ I/O threads keep running), as on a loaded host, with a barrier
# in flight (doc/design.md 5.1, "A probe unanswered"):
#   - held for less than the heartbeat timeout: nobody is lost, the barrier ends with success,
#     and the held daemon counts its stall (hb_stalls) and says so in its log;
#   - held for more than twice the timeout: its neighbours take it for lost, it rejoins by
#     itself, and it takes no other node for lost on its own stale probes.
# Needs root and the cgroup v1 freezer (else exit 77). The times are bounds, not measurements.
TEST_TAG=stall
. "$(dirname "$0")/hb_test.sh"
hb_use_run
FZ=/sys/fs/cgroup/freezer
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (cgroup freezer)"; exit 77; }
[ -w "$FZ/tasks" ] || { echo "SKIP: no cgroup v1 freezer at $FZ"; exit 77; }
HIBAR_TEST_CONFIG=$src/examples/local.yaml
hb_use_cluster
hb_prog EX examples/hibar-example
HB_TIMEOUT=4000
SETS+=(--set "heartbeat.interval_ms=500" --set "heartbeat.timeout_ms=$HB_TIMEOUT")
CG=$FZ/hibar-$$-stall
# thaw and remove the freezer group whatever happens (a frozen daemon would never stop)
on_exit 'hb_thaw'
hb_thaw() {
    [ -d "$CG" ] || return 0
    echo THAWED >"$CG/freezer.state"
    local t
    for t in $(cat "$CG/tasks"); do echo "$t" >"$FZ/tasks"; done
    rmdir "$CG"
}
mkdir "$CG" || fail "cannot create $CG"
TMP_OUT=$TMP/barrier.out
up
victim=n04 # an inter-level chassis port: links to its Center and its chassis mates

# hold NODE SEC: NODE's main thread (its pid: the loop) frozen for SEC seconds
hold() {
    local pid
    pid=$(cat "$RUN_DIR/$1.pid")
    echo "$pid" >"$CG/tasks" || fail "cannot move $1's main thread into $CG"
    echo FROZEN >"$CG/freezer.state"
    sleep "$2"
    echo THAWED >"$CG/freezer.state"
    echo "$pid" >"$FZ/tasks"
}

# judged: the nodes taken for lost by their own probes in every log, one per line
judged() { cat "$RUN_DIR"/*.log | sed -n 's/.*hibard\[\(n[0-9]*\)\]: warn: node \([0-9]*\) answered no heartbeat.*/\1 \2/p'; }

cl barrier --count 3 >/dev/null || fail "warm-up barriers"

# 1. held 2.5 s: past the stall mark (interval + timeout / 4 = 1.5 s), within the timeout (4 s);
# the barrier waits 6 s for a late node, so it is in flight all along
cl barrier --late n09:6000 --timeout 60000 >"$TMP_OUT" 2>&1 & bp=$!
sleep 0.5
hold "$victim" 2.5
wait "$bp" || { cat "$TMP_OUT"; fail "held below the timeout: the barrier failed"; }
[ -z "$(judged)" ] || { judged; fail "held below the timeout: a node was judged lost"; }
cl status >/dev/null || { cl status; fail "held below the timeout: not every daemon up"; }
[ "$(stat_of "$victim" hb_stalls)" -ge 1 ] || fail "$victim did not count its stall (hb_stalls)"
grep -q "ran [0-9]* ms late" "$RUN_DIR/$victim.log" || fail "$victim did not log its stall"
[ "$(stat_of "$victim" self_rejoins)" -eq 0 ] || fail "$victim rejoined though it was not lost"
echo "ok: held 2.5 s, nothing lost, the stall counted"

# 2. held 9 s, past twice the timeout (a probe starts within an interval of the hold and is
# judged within a timeout and a tick of it, later on a loaded host): lost, rejoins, and
# judges nobody else; the barrier waits 11 s for a late node, so it is in flight all along
cl barrier --late n09:11000 --timeout 60000 >"$TMP_OUT" 2>&1 & bp=$!
sleep 0.5
hold "$victim" 9
! wait "$bp" || { cat "$TMP_OUT"; fail "held past the timeout: the barrier did not fail"; }
grep -q -- "-4 peer lost" "$TMP_OUT" || { cat "$TMP_OUT"; fail "held past the timeout: not PEER_LOST"; }
for _ in $(seq 300); do
    cl status >/dev/null 2>&1 && break
    sleep 0.1
done
cl status >/dev/null || { cl status; fail "held past the timeout: $victim did not rejoin"; }
[ "$(stat_of "$victim" self_rejoins)" -ge 1 ] || fail "$victim did not count its rejoin"
bad=$(judged | awk -v v="${victim#n}" '$2 + 0 != v + 0')
[ -z "$bad" ] || { echo "$bad"; fail "held past the timeout: a live node was judged lost"; }
run 0 --config "$CONFIG" "${SETS[@]}" -n 12 -N 1 "$EX"
grep -q "12 ranks: .*data checked: ok" "$OUT" || fail "a job on every node after the rejoin"
echo "ok: held 9 s, $victim lost, rejoined, nobody else judged lost"

down
check_clean
echo "PASS: a daemon held below the heartbeat timeout is not lost; held past it, it rejoins"
