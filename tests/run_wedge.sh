#!/bin/bash
# run_wedge.sh: hung parts give errors, never a hang.
# 1. libpmix's server thread stops answering (as libpmix 4.2.2's does when a client dies inside
#    its connection handshake; here it is stopped with ptrace) in one job's PMIx step on rt1
#    while the job runs: the job still ends when hibar-run is stopped, its step goes (its
#    PMIx_server_finalize is bounded), the daemon answers with status pmix=ok, and the next job
#    on that node runs (it gets a step of its own), the cluster still stops cleanly.
# 2. An origin daemon that stops answering in the middle of a job (SIGSTOP): hibar-run gives
#    up with an error after 5 x heartbeat.timeout_ms of silence.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
CL=(env "HIBARD=$HIBARD" "$bld/tools/hibar-cluster" --config "$FOUR" --set "cluster=hbrw$$"
    --set "run_dir=/tmp/hibar-$(id -u)-hbrw$$" --keep-logs)
HOLD=
EXTRA_CLEANUP='[ -n "$HOLD" ] && kill $HOLD 2>/dev/null; "${CL[@]}" down >/dev/null 2>&1; rm -rf "/tmp/hibar-$(id -u)-hbrw$$"'
LOG_DIR="/tmp/hibar-$(id -u)-hbrw$$"
"${CL[@]}" up >/dev/null || fail "cluster did not come up"
SETS=(--config "$FOUR" -o "cluster=hbrw$$" -o "run_dir=/tmp/hibar-$(id -u)-hbrw$$")
run 0 "${SETS[@]}" -n 8 "$HELLO" --fences 2
timeout -k 5 60 "$RUN" "${SETS[@]}" -n 8 "$HELLO" --fences 1 --hang-rank 3 >"$OUT" 2>"$ERR" &
job=$!
for _ in $(seq 200); do [ "$(grep -c '^hello' "$OUT")" -eq 8 ] && break; sleep 0.1; done
[ "$(grep -c '^hello' "$OUT")" -eq 8 ] || fail "the job did not start"
step="--pmix-step 3 /tmp/hibar-$(id -u)-hbrw$$/rt1.pmix/"
spid=$(pgrep -f -- "$step") || fail "no PMIx step of the job on rt1"
python3 "$src/tests/thread_stop.py" "$spid" >"$TMP/hold" 2>&1 &
HOLD=$!
for _ in $(seq 100); do grep -q . "$TMP/hold" && break; sleep 0.1; done
if grep -q "^SKIP" "$TMP/hold"; then cat "$TMP/hold"; kill $job; exit 77; fi
grep -q "^stopped" "$TMP/hold" || { cat "$TMP/hold"; fail "libpmix's thread not stopped"; }
kill -TERM $job
wait $job
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "hibar-run exit $rc after SIGTERM"
for _ in $(seq 300); do pgrep -f -- "$step" >/dev/null || break; sleep 0.1; done
! pgrep -f -- "$step" >/dev/null || fail "the wedged step outlived its job"
st=$("${CL[@]}" ctl rt1 status) || fail "rt1 does not answer: $st"
echo "$st" | grep -q " pmix=ok" || fail "status: $st"
# the next job runs on that node
run 0 "${SETS[@]}" -n 8 "$HELLO" --fences 2
kill $HOLD
wait $HOLD 2>/dev/null
HOLD=
"${CL[@]}" down >/dev/null || fail "cluster down"
LOG_DIR=
rm -rf "/tmp/hibar-$(id -u)-hbrw$$"
EXTRA_CLEANUP=:
check_clean

# 2: the origin (rt0, the first daemon that answers) stopped while rank 3 hangs
"${CL[@]}" up >/dev/null || fail "cluster did not come up (2)"
LOG_DIR="/tmp/hibar-$(id -u)-hbrw$$"
EXTRA_CLEANUP='kill -CONT $pid 2>/dev/null; "${CL[@]}" down >/dev/null 2>&1; rm -rf "/tmp/hibar-$(id -u)-hbrw$$"'
pid=$(pgrep -f -- "--node rt0 .*cluster=hbrw$$") || fail "no daemon of rt0"
timeout -k 5 60 "$RUN" "${SETS[@]}" -n 8 "$HELLO" --fences 1 --hang-rank 3 >"$OUT" 2>"$ERR" &
job=$!
for _ in $(seq 200); do [ "$(grep -c '^hello' "$OUT")" -eq 8 ] && break; sleep 0.1; done
[ "$(grep -c '^hello' "$OUT")" -eq 8 ] || fail "the job did not start"
kill -STOP "$pid"
t0=$SECONDS
wait $job
rc=$?
kill -CONT "$pid"
[ $((SECONDS - t0)) -lt 55 ] || fail "hibar-run waited for the stopped daemon ($((SECONDS - t0)) s)"
[ $rc -eq 1 ] || fail "hibar-run exit $rc with its daemon stopped, expected 1"
grep -q "the daemon of node rt0 has not answered for 1[0-9].[0-9] s (stopped, or hung)" "$ERR" ||
    fail "silent daemon not reported"
"${CL[@]}" down >/dev/null || fail "cluster down (2)"
LOG_DIR=
rm -rf "/tmp/hibar-$(id -u)-hbrw$$"
EXTRA_CLEANUP=:
check_clean
echo "PASS: run_wedge"
