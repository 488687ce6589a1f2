#!/bin/bash
# fence_lost.sh: a daemon killed while a fence with data is in flight: the ranks of the other
# nodes leave PMIx_Fence with PMIX_ERR_COMM_FAILURE (or LOST_CONNECTION), found by the
# heartbeats (the barrier timeout is 2 minutes, so only the loss can end it), never a hang.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
hb_prog FC tests/fence_client
RD=/tmp/hibar-$(id -u)-hbfk$$
sed -e "s/^cluster: .*/cluster: hbfk$$/" -e 's/^barrier_timeout_ms: .*/barrier_timeout_ms: 120000/' \
    "$FOUR" >"$TMP/lost.yaml"
echo "run_dir: $RD" >>"$TMP/lost.yaml"
CL=(env "HIBARD=$HIBARD" "$bld/tools/hibar-cluster" --config "$TMP/lost.yaml")
EXTRA_CLEANUP='"${CL[@]}" down >/dev/null 2>&1; rm -rf "$RD"'
"${CL[@]}" up >/dev/null || fail "cluster did not come up"
# rank 7 (node rt3) stays out of the fence for 30 s; rt3's daemon is killed meanwhile
timeout -k 5 60 "$RUN" --config "$TMP/lost.yaml" -n 8 --per-node 2 "$FC" --size 100 \
    --timeout 27 --hang-rank 7 >"$OUT" 2>"$ERR" &
job=$!
for _ in $(seq 100); do # until the ranks of rt0..rt2 are in the fence (their daemons log it)
    [ "$(pgrep -fc -- "$FC")" -ge 8 ] && break
    sleep 0.1
done
sleep 1
kill -9 "$(cat "$RD/rt3.pid")" || fail "no daemon pid for rt3"
wait $job
rc=$?
[ $rc -ne 124 ] || fail "the job hung after a daemon died"
[ $rc -ne 0 ] || fail "the job succeeded without a daemon"
# every rank of rt0..rt2 that left the fence did so on the loss; once the first one exits
# with an error hibar-run stops the job, so a rank whose daemon learned of the loss later (a
# loaded host) may be stopped before it says so: at least one, and no other verdict
n=$(grep -cE 'rank [0-5]: fence: .*(COMM|LOST)' "$ERR")
all=$(grep -cE 'rank [0-5]: fence: ' "$ERR")
[ "$n" -ge 1 ] && [ "$n" -eq "$all" ] ||
    fail "ranks 0-5: $n of $all that left the fence did so with COMM_FAILURE/LOST_CONNECTION"
grep -q 'TIMEOUT' "$ERR" && fail "a fence timed out instead of failing on the loss"
"${CL[@]}" down >/dev/null 2>&1
EXTRA_CLEANUP='rm -rf "$RD"'
sleep 0.5
check_clean
echo "PASS: fence_lost"
