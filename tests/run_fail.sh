#!/bin/bash
# run_fail.sh: a failing rank aborts the job: non-zero exit, killed rank, PMIx_Abort, a rank
# that dies mid-job while the others wait in a fence, timeout; the others are stopped and
# hibar-run names the rank and its status; nothing is left behind.
. "$(dirname "$0")/hb_test.sh"
hb_use_run

# exit 3 after init, on one node: the others' fence fails (PMIx sees the rank's connection
# go) or they are stopped; hibar-run's status is that of the first failure it hears of
run_nz() {
    local t0=$SECONDS
    timeout -k 5 60 "$RUN" "$@" >"$OUT" 2>"$ERR"
    local rc=$?
    [ $((SECONDS - t0)) -lt 60 ] || fail "hibar-run $* did not end within 60 s (exit $rc)"
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "hibar-run $*: exit $rc, expected a failure"
}
run_nz -n 4 "$HELLO" --fences 2 --fail-rank 2
grep -q "rank 2 (node .*) exited with status 3" "$ERR" || fail "exit status not reported"
check_clean

# across nodes: rank 5 exits 3 while the others wait in the fence for it
run_nz -n 8 --emulate "$FOUR" "$HELLO" --fences 3 --fail-rank 5
grep -q "rank 5 (node rt2) exited with status 3" "$ERR" || fail "4x2: exit status not reported"
check_clean

# PMIx_Abort(4, ...)
run 4 -n 8 --emulate "$FOUR" "$HELLO" --fences 3 --abort-rank 1
grep -q "rank 1 (node rt0) called PMIx_Abort with status 4: pmix_hello asked to abort" "$ERR" ||
    fail "abort not reported"
check_clean

# dead client: rank 6 kills itself (SIGKILL) while the others are in the fence
run_nz -n 8 --emulate "$FOUR" "$HELLO" --fences 3 --die-rank 6
grep -q "rank 6 (node rt3) was killed by signal 9" "$ERR" || fail "killed rank not reported"
check_clean

# a rank that never reaches the fence: --timeout stops the job (exit 124)
run 124 -n 4 --timeout 2 "$HELLO" --fences 1 --hang-rank 0
grep -q "timeout after 2 s" "$ERR" || fail "timeout not reported"
check_clean
# a running cluster (not one hibar-run starts) survives failed jobs: after PMIx_Abort and a
# rank killed inside a fence, the next jobs run (its daemons' barrier engines are brought back
# in step, PMIx's server is not wedged)
CL=(env "HIBARD=$HIBARD" "$bld/tools/hibar-cluster" --config "$FOUR" --set "cluster=hbrt$$"
    --set "run_dir=/tmp/hibar-$(id -u)-hbrt$$" --keep-logs --log-level info)
EXTRA_CLEANUP='"${CL[@]}" down >/dev/null 2>&1; rm -rf "/tmp/hibar-$(id -u)-hbrt$$"'
LOG_DIR="/tmp/hibar-$(id -u)-hbrt$$"
"${CL[@]}" up >/dev/null || fail "cluster did not come up"
SETS=(--config "$FOUR" -o "cluster=hbrt$$" -o "run_dir=/tmp/hibar-$(id -u)-hbrt$$")
run 4 "${SETS[@]}" -n 8 "$HELLO" --fences 3 --abort-rank 2
run_nz "${SETS[@]}" -n 8 "$HELLO" --fences 3 --die-rank 0
run 0 "${SETS[@]}" -n 8 "$HELLO" --fences 3
[ "$(grep -c '^bye rank' "$OUT")" -eq 8 ] || fail "job after failed jobs"
run 0 "${SETS[@]}" -n 4 --per-node 1 "$HELLO" --fences 2
"${CL[@]}" down >/dev/null || fail "cluster down"
LOG_DIR=
rm -f "/tmp/hibar-$(id -u)-hbrt$$"/*.log
rmdir "/tmp/hibar-$(id -u)-hbrt$$" || fail "cluster run dir left behind"
EXTRA_CLEANUP=:
check_clean

# ranks that ignore SIGTERM (and never connect to PMIx) are stopped all the same: the
# launcher waits for their connection (2 s), sends SIGTERM, then SIGKILL 2 s later
cat >"$TMP/stubborn.sh" <<'SH'
#!/bin/bash
[ "$PMIX_RANK" = 0 ] && { sleep 0.5; exit 3; }
trap '' TERM
sleep 30
SH
chmod +x "$TMP/stubborn.sh"
t0=$SECONDS
run 3 -n 3 "$TMP/stubborn.sh"
[ $((SECONDS - t0)) -lt 20 ] || fail "ranks ignoring SIGTERM were not killed (took $((SECONDS - t0)) s)"
grep -q "rank 0 (node .*) exited with status 3" "$ERR" || fail "stubborn ranks: exit status"
[ -z "$(pgrep -f -- "$TMP/stubborn.sh")" ] || fail "stubborn ranks left running"
check_clean
echo "PASS: run_fail"
