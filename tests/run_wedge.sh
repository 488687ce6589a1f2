#!/bin/bash
# run_wedge.sh: hung parts give errors, never a hang.
# 1. A node whose libpmix server thread stops answering (as libpmix 4.2.2's does when a client
#    dies inside its connection handshake; here it is stopped with ptrace) fails the jobs sent
#    to it with a clear error: the daemon stays up and answers, status says pmix=wedged, later
#    jobs fail at once, the cluster still stops cleanly.
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
pid=$(pgrep -f -- "--node rt1 .*cluster=hbrw$$") || fail "no daemon of rt1"
python3 "$src/tests/thread_stop.py" "$pid" >"$TMP/hold" 2>&1 &
HOLD=$!
for _ in $(seq 100); do grep -q . "$TMP/hold" && break; sleep 0.1; done
if grep -q "^SKIP" "$TMP/hold"; then cat "$TMP/hold"; exit 77; fi
grep -q "^stopped" "$TMP/hold" || { cat "$TMP/hold"; fail "libpmix's thread not stopped"; }

run 1 "${SETS[@]}" -n 8 "$HELLO" --fences 2
grep -q "node rt1: the PMIx server of node rt1 is wedged" "$ERR" || fail "wedge not reported"
st=$("${CL[@]}" ctl rt1 status) || fail "rt1 does not answer: $st"
echo "$st" | grep -q " pmix=wedged" || fail "status: $st"
"${CL[@]}" ctl rt0 status | grep -q " pmix=ok" || fail "rt0 status"
# the next job fails at once, with the same reason
run 1 "${SETS[@]}" -n 8 "$HELLO" --fences 2
grep -q "the PMIx server of node rt1 is wedged" "$ERR" || fail "second job: wedge not reported"
grep -q "libpmix's server thread did not answer" "/tmp/hibar-$(id -u)-hbrw$$/rt1.log" ||
    fail "no error in rt1's log"
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
