#!/bin/bash
# jobs_lost.sh: a lost node ends only the jobs it is part of. On examples/local.yaml (12 nodes,
# chassis n[00-02] n[03-05] n[06-08] n[09-11]; chassis 2 hangs below n01 in the chassis tree),
# two jobs run fences with data: A on n[00-02], B on n[06-11] (its frames to and from the
# origin, n00, cross n01). n01's daemon is killed (SIGKILL): A ends with an error naming n01,
# B finishes with its data checked; a rank of n03 goes with its SIGKILLed daemon; a new job on
# the live nodes runs, one naming n01 is refused.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
TEST_TAG=jl
HIBAR_TEST_CONFIG=$src/examples/local.yaml
hb_use_cluster
FC="$bld/tests/fence_client"
EX="$bld/examples/hibar-example"
[ -x "$FC" ] && [ -x "$EX" ] || { echo "SKIP: fence_client or hibar-example not built"; exit 77; }
cp "$FC" "$TMP/fence_client"
FC="$TMP/fence_client"
up
R() { timeout -k 5 120 "$RUN" --config "$CONFIG" "${SETS[@]}" "$@"; }

R -H 'n[00-02]' -n 3 "$FC" --size 256 --iters 1000000 >"$TMP/a.out" 2>"$TMP/a.err" &
pa=$!
R -H 'n[06-11]' -n 6 "$FC" --size 256 --iters 2000 >"$TMP/b.out" 2>"$TMP/b.err" &
pb=$!
for _ in $(seq 200); do
    [ "$(cl jobs 2>/dev/null | grep -c running)" -ge 2 ] && break
    sleep 0.05
done
cl jobs
sleep 0.5
kill -KILL "$(cat "$RUN_DIR/n01.pid")"
rca=0
wait "$pa" || rca=$?
cat "$TMP/a.err"
[ $rca -ne 0 ] || fail "job A (with the lost node) ended with status 0"
grep -q "lost node n01" "$TMP/a.err" || fail "job A: the lost node was not named"
rcb=0
wait "$pb" || rcb=$?
[ $rcb -eq 0 ] || { cat "$TMP/b.out" "$TMP/b.err"; fail "job B (not on the lost node): exit $rcb"; }
grep -q "^fence size=256 ranks=6 .*iters=2000" "$TMP/b.out" ||
    { cat "$TMP/b.out" "$TMP/b.err"; fail "job B: no result"; }

# a rank never outlives its daemon: n03's daemon killed, its rank (a plain program that never
# talks to the daemon) goes too (PR_SET_PDEATHSIG)
cp /bin/sleep "$TMP/hb_sleep"
R -H n03 -n 1 "$TMP/hb_sleep" 600 >"$TMP/s.out" 2>&1 &
ps_=$!
for _ in $(seq 100); do pgrep -f -- "$TMP/hb_sleep 600" >/dev/null && break; sleep 0.05; done
pgrep -f -- "$TMP/hb_sleep 600" >/dev/null || fail "the sleeping rank did not start"
kill -KILL "$(cat "$RUN_DIR/n03.pid")"
for _ in $(seq 100); do pgrep -f -- "$TMP/hb_sleep 600" >/dev/null || break; sleep 0.1; done
pgrep -af -- "$TMP/hb_sleep 600" && fail "a rank outlived its SIGKILLed daemon"
wait "$ps_" 2>/dev/null

# new jobs: on the live nodes they run (the default placement leaves n01 out); on n01 refused
run 0 --config "$CONFIG" "${SETS[@]}" -n 4 "$EX"
grep -q "data checked: ok" "$OUT" || fail "a job on the live nodes after the loss"
run 1 --config "$CONFIG" "${SETS[@]}" -H 'n[01-02]' -n 2 "$HELLO"
grep -q "node n01 is lost" "$ERR" || fail "a job naming the lost node: not refused with its name"
run 0 --config "$CONFIG" "${SETS[@]}" -H 'n00,n07,n10' -n 3 "$HELLO" --fences 3
# n04 and n05 hung below n03: a job with them starts through the root, which links to them
run 0 --config "$CONFIG" "${SETS[@]}" -H 'n00,n04,n05' -n 3 "$EX"
grep -q "data checked: ok" "$OUT" || fail "a job on the nodes cut off by the lost Center"

down
hb_cluster_clean
hb_run_clean
echo "PASS: jobs_lost"
