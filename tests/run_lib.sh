# run_lib.sh: shared set-up of the hibar-run tests (sourced): paths, a 4-node configuration,
# checks that nothing is left behind (ranks, daemons, run dirs), cleanup on exit.
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$(pwd)/..}
RUN="$bld/tools/hibar-run"
HELLO="$bld/tests/pmix_hello"
export HIBARD="$bld/daemon/hibard"
TMP=$(mktemp -d /tmp/hibar-runtest.XXXXXX)
OUT="$TMP/out"
ERR="$TMP/err"
unset HIBAR_CONFIG
# sanitizer builds: libpmix's own leaks (in the ranks and the daemons) are not ours
export LSAN_OPTIONS="suppressions=$src/tests/lsan-pmix.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

[ -x "$RUN" ] && [ -x "$HIBARD" ] && [ -x "$HELLO" ] || { echo "SKIP: hibar-run, hibard or pmix_hello not built"; exit 77; }
[ -w /dev/shm ] || { echo "SKIP: /dev/shm not writable"; exit 77; }
# A private copy of the client, so that check_clean's pgrep sees this test's ranks only, not
# those of the other run_* tests that make check runs at the same time.
cp "$HELLO" "$TMP/pmix_hello"
HELLO="$TMP/pmix_hello"

# 4 nodes, 2 chassis of 2 (shm chassis barrier inside each, a 2-level tree)
cat > "$TMP/four.yaml" <<YAML
cluster: hbrt
nodes: rt[0-3]
chassis:
  - rt[0-1]
  - rt[2-3]
protocol: scmd
bootstrap: local
heartbeat:
  interval_ms: 200
  timeout_ms: 2000
barrier_timeout_ms: 20000
YAML
FOUR="$TMP/four.yaml"

# LOG_DIR: the run dir of a cluster the test started (with --keep-logs): fail shows its logs
LOG_DIR=
fail() {
    local f
    echo "FAIL: $*"
    echo "--- stdout"; tail -n 20 "$OUT" 2>/dev/null
    echo "--- stderr"; tail -n 20 "$ERR" 2>/dev/null
    for f in ${LOG_DIR:+"$LOG_DIR"/*.log}; do
        [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
    done
    exit 1
}

# Nothing of the jobs may remain: no rank process, no run dir of a finished hibar-run.
check_clean() {
    local left d
    left=$(pgrep -f -- "$HELLO" || true)
    [ -z "$left" ] || fail "ranks still running: $left"
    for d in /tmp/hibar-$(id -u)-hbrun*; do
        [ -e "$d" ] || continue
        kill -0 "${d##*hbrun}" 2>/dev/null && continue # a hibar-run still running
        ls -la "$d"
        fail "run dir $d left behind"
    done
}

EXTRA_CLEANUP=:
cleanup() {
    local rc=$?
    trap - EXIT
    eval "$EXTRA_CLEANUP" # a command line: quotes and ; in it count
    rm -rf "$TMP"
    exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# run EXPECTED_STATUS ARGS...: hibar-run with a time bound (never hang the test suite)
run() {
    local want=$1 rc
    shift
    local t0=$SECONDS
    timeout -k 5 60 "$RUN" "$@" >"$OUT" 2>"$ERR"
    rc=$?
    # 124: it ended on SIGTERM; killed by timeout's SIGKILL 5 s later, the status is 137
    [ $((SECONDS - t0)) -ge 60 ] && [ "$want" != 124 ] && fail "hibar-run $* did not end within 60 s"
    [ $rc -eq "$want" ] || fail "hibar-run $*: exit $rc, expected $want"
}
