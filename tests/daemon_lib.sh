# daemon_lib.sh: shared set-up of the daemon integration tests (sourced): a private emulated
# cluster of examples/scmd-30.yaml (30 daemons), torn down on exit, also on failure.
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$(pwd)/..}
CLUSTER_TOOL="$bld/tools/hibar-cluster"
export HIBARD="$bld/daemon/hibard"
# sanitizer builds: libpmix's own one-time allocations are not ours to free
export LSAN_OPTIONS="suppressions=$src/tests/daemon_lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
CONFIG=${HIBAR_TEST_CONFIG:-$src/examples/scmd-30.yaml}
NAME="hbt-$$-${TEST_TAG:-x}"
RUN_DIR="/tmp/hibar-$(id -u)-$NAME"
# a private cluster name and run dir, so parallel runs never meet
SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR")

[ -x "$CLUSTER_TOOL" ] && [ -x "$HIBARD" ] || { echo "SKIP: hibar-cluster or hibard not built"; exit 77; }
[ -w /dev/shm ] || { echo "SKIP: /dev/shm not writable"; exit 77; }

cl() { "$CLUSTER_TOOL" --config "$CONFIG" "${SETS[@]}" "$@"; }

fail() { echo "FAIL: $*"; exit 1; }

# Nothing of this cluster may remain: process, socket or pid file, segment.
check_clean() {
    local left
    left=$(pgrep -f -- "cluster=$NAME" || true)
    [ -z "$left" ] || fail "daemons still running: $left"
    [ ! -e "$RUN_DIR" ] || { ls -la "$RUN_DIR"; fail "run dir $RUN_DIR left behind"; }
    left=$(ls /dev/shm | grep -F -- "hibar-$(id -u)-$NAME-" || true)
    [ -z "$left" ] || fail "segments left behind: $left"
}

cleanup() {
    local rc=$?
    trap - EXIT
    if [ -d "$RUN_DIR" ] && [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
        for f in "$RUN_DIR"/*.log; do [ -f "$f" ] && tail -n 5 "$f" | sed "s|^|$(basename "$f"): |"; done
    fi
    cl down >/dev/null 2>&1
    exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

up() { cl "$@" up || fail "cluster did not come up"; }

# Stop the cluster; a daemon log with a sanitizer report (ASan/UBSan builds) fails the test.
down() {
    cl down --keep-logs >/dev/null || fail "down"
    if grep -l -E "Sanitizer|runtime error:" "$RUN_DIR"/*.log 2>/dev/null; then
        grep -h -A20 -E "Sanitizer|runtime error:" "$RUN_DIR"/*.log | head -60
        fail "sanitizer report in a daemon log"
    fi
    rm -f "$RUN_DIR"/*.log
    rmdir "$RUN_DIR" 2>/dev/null
}

# stats NODE KEY: one counter of a daemon's stats line
stat_of() { cl ctl "$1" stats | tr ' ' '\n' | sed -n "s/^$2=//p"; }
