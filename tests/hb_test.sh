#!/usr/bin/env bash
# hb_test.sh: what the shell tests share (sourced; hb_test.h is its CUnit counterpart). Also
# installed under libexec/hibar, where the test-bed scripts hibar-bench runs source it.
# shellcheck shell=bash
#
# Sourcing it gives every test:
#   src, bld      the source and build trees (a test may set them first to other defaults)
#   fail MSG      "FAIL: MSG" on stderr, the on_fail diagnostics, exit 1
#   on_exit CMD   run the command line CMD when the test exits, passed, failed or signalled
#                 (last registered first; HB_RC holds the exit status meanwhile, which is kept)
#   on_fail CMD   run CMD after fail's message (what to show: logs, outputs)
# and installs the only EXIT trap (INT and TERM exit 130 and 143 through it): a test never
# sets an EXIT trap or defines fail itself. Then, as the test needs them:
#   hb_use_cluster   a private emulated cluster (cl, up, down, stat_of, check_clean)
#   hb_use_run       hibar-run jobs on emulated clusters (run, check_clean, FOUR, OUT, ERR,
#                    hb_prog)
#   hb_use_bed NAME  a cluster bootstrapped on the namespace test bed (bed_done, stop_daemons,
#                    wait_up, wait_gone)
#   bed_daemons      inside the bed: one hibard per host, stopped on exit

src=${src:-${top_srcdir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}}
bld=${bld:-${top_builddir:-$(pwd)/..}}

HB_EXIT_CMDS=()
HB_FAIL_CMDS=()
HB_RC=0
on_exit() { HB_EXIT_CMDS+=("$1"); }
on_fail() { HB_FAIL_CMDS+=("$1"); }

fail() {
    local i
    echo "FAIL: $*" >&2
    for ((i = 0; i < ${#HB_FAIL_CMDS[@]}; i++)); do eval "${HB_FAIL_CMDS[i]}"; done
    exit 1
}

hb_exit() {
    HB_RC=$?
    local i
    trap - EXIT
    for ((i = ${#HB_EXIT_CMDS[@]} - 1; i >= 0; i--)); do eval "${HB_EXIT_CMDS[i]}"; done
    exit $HB_RC
}
trap hb_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# hb_lsan FILE: sanitizer builds ignore the leaks listed in tests/FILE (libpmix's own)
hb_lsan() { export LSAN_OPTIONS="suppressions=$src/tests/$1${LSAN_OPTIONS:+:$LSAN_OPTIONS}"; }

# Nothing the test set up may remain (what hb_use_cluster and hb_use_run started).
check_clean() {
    [ -z "${HB_CLUSTER-}" ] || hb_cluster_clean
    [ -z "${HB_RUN-}" ] || hb_run_clean
}

# ---- an emulated cluster ----------------------------------------------------------------------
# hb_use_cluster: a private cluster of $CONFIG (examples/scmd-30.yaml, or HIBAR_TEST_CONFIG:
# 30 daemons) named hbt-PID-TAG (TEST_TAG), so parallel runs never meet; torn down on exit,
# also on failure (the daemons' last log lines shown when the test failed).
hb_use_cluster() {
    CLUSTER_TOOL="$bld/tools/hibar-cluster"
    export HIBARD="$bld/daemon/hibard"
    hb_lsan daemon_lsan.supp
    CONFIG=${HIBAR_TEST_CONFIG:-$src/examples/scmd-30.yaml}
    NAME="hbt-$$-${TEST_TAG:-x}"
    RUN_DIR="/tmp/hibar-$(id -u)-$NAME"
    SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR")
    [ -x "$CLUSTER_TOOL" ] && [ -x "$HIBARD" ] ||
        { echo "SKIP: hibar-cluster or hibard not built"; exit 77; }
    [ -w /dev/shm ] || { echo "SKIP: /dev/shm not writable"; exit 77; }
    HB_CLUSTER=1
    on_exit hb_cluster_exit
}

cl() { "$CLUSTER_TOOL" --config "$CONFIG" "${SETS[@]}" "$@"; }

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

# stat_of NODE KEY: one counter of a daemon's stats line
stat_of() { cl ctl "$1" stats | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# Nothing of the cluster may remain: process, socket or pid file, segment.
hb_cluster_clean() {
    local left
    left=$(pgrep -f -- "cluster=$NAME" || true)
    [ -z "$left" ] || fail "daemons still running: $left"
    [ ! -e "$RUN_DIR" ] || { ls -la "$RUN_DIR"; fail "run dir $RUN_DIR left behind"; }
    left=$(ls /dev/shm | grep -F -- "hibar-$(id -u)-$NAME-" || true)
    [ -z "$left" ] || fail "segments left behind: $left"
}

hb_cluster_exit() {
    local f
    if [ -d "$RUN_DIR" ] && [ "$HB_RC" -ne 0 ] && [ "$HB_RC" -ne 77 ]; then
        for f in "$RUN_DIR"/*.log; do
            [ -f "$f" ] && tail -n 5 "$f" | sed "s|^|$(basename "$f"): |"
        done
    fi
    cl down >/dev/null 2>&1
}

# ---- hibar-run jobs ---------------------------------------------------------------------------
# hb_use_run: paths (RUN, HELLO: a private copy of pmix_hello, so that check_clean's pgrep sees
# this test's ranks only), TMP with OUT and ERR, FOUR: a 4-node configuration (2 chassis of 2,
# scmd, short heartbeats). LOG_DIR: the run dir of a cluster the test started (with
# --keep-logs): fail shows its logs. EXTRA_CLEANUP: a command line run on exit (quotes and ; in
# it count), for a cluster the test started.
hb_use_run() {
    RUN="$bld/tools/hibar-run"
    HELLO="$bld/tests/pmix_hello"
    export HIBARD="$bld/daemon/hibard"
    unset HIBAR_CONFIG
    hb_lsan lsan-pmix.supp # in the ranks and the daemons
    [ -x "$RUN" ] && [ -x "$HIBARD" ] && [ -x "$HELLO" ] ||
        { echo "SKIP: hibar-run, hibard or pmix_hello not built"; exit 77; }
    [ -w /dev/shm ] || { echo "SKIP: /dev/shm not writable"; exit 77; }
    TMP=$(mktemp -d /tmp/hibar-runtest.XXXXXX) || exit 99
    # the jobs' temporary files inside TMP (Open MPI leaves its empty session directories,
    # TMPDIR/ompi.HOST.UID/jf.N, behind: removed with TMP)
    mkdir -p "$TMP/tmp" && export TMPDIR="$TMP/tmp"
    OUT="$TMP/out"
    ERR="$TMP/err"
    LOG_DIR=
    EXTRA_CLEANUP=:
    HB_RUN=1
    on_exit 'eval "$EXTRA_CLEANUP"; rm -rf "$TMP"'
    on_fail hb_run_show
    cp "$HELLO" "$TMP/pmix_hello"
    HELLO="$TMP/pmix_hello"
    cat >"$TMP/four.yaml" <<YAML
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
}

# hb_prog VAR PROG: a private copy in TMP of the program PROG of the build tree (tests/NAME,
# examples/NAME...), its path in VAR (so pgrep sees this test's ranks only); 77 when not built
hb_prog() {
    [ -x "$bld/$2" ] || { echo "SKIP: $2 not built"; exit 77; }
    cp "$bld/$2" "$TMP/${2##*/}" || exit 99
    printf -v "$1" '%s' "$TMP/${2##*/}"
}

# hb_mpi_component DIR: a private copy of the build's component in DIR, exported as
# HIBAR_OMPI_COMPONENT_DIR (hibar-run adds it to Open MPI's component path). Never the build's
# mpi/.libs itself: a `make install` beside the test (install_check.sh) relinks the component
# there, and while libtool does so the file is missing or another one, so ranks that start then
# run without it.
hb_mpi_component() {
    mkdir -p "$1" && cp "$bld/mpi/.libs/mca_coll_hibar.so" "$1/" || exit 99
    export HIBAR_OMPI_COMPONENT_DIR=$1
}

# hb_use_mpi [PROG]: what the MPI tests share, after hb_use_run: skipped (77) without the
# component (mca_coll_hibar) or mpirun; the ranks find the build's component; with PROG
# (tests/NAME), its copy in $PROG, and no rank of it may be left behind.
hb_use_mpi() {
    [ -e "$bld/mpi/.libs/mca_coll_hibar.so" ] ||
        { echo "SKIP: mca_coll_hibar not built (configure found no Open MPI coll headers)"; exit 77; }
    command -v mpirun >/dev/null || { echo "SKIP: no mpirun (apt-get install openmpi-bin)"; exit 77; }
    hb_mpi_component "$TMP/comp"
    [ $# -gt 0 ] || return 0
    hb_prog PROG "$1"
    on_exit '[ -z "$(pgrep -f -- "$PROG" || true)" ] || fail "MPI ranks left behind"'
}

hb_run_show() {
    local f
    echo "--- stdout"; tail -n 20 "$OUT" 2>/dev/null
    echo "--- stderr"; tail -n 20 "$ERR" 2>/dev/null
    for f in ${LOG_DIR:+"$LOG_DIR"/*.log}; do
        [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
    done
}

# Nothing of the jobs may remain: no rank process, no run dir of a finished hibar-run.
hb_run_clean() {
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

# run EXPECTED_STATUS ARGS...: hibar-run with a time bound (never hang the test suite). The
# bound is far above any job's time on a loaded host (the longest take ~20 s beside another
# suite on 2 cores): it catches hangs, it measures nothing. RUN_BOUND overrides it.
run() {
    local want=$1 rc bound=${RUN_BOUND:-240}
    shift
    local t0=$SECONDS
    timeout -k 5 "$bound" "$RUN" "$@" >"$OUT" 2>"$ERR"
    rc=$?
    # 124: it ended on SIGTERM; killed by timeout's SIGKILL 5 s later, the status is 137
    [ $((SECONDS - t0)) -ge "$bound" ] && [ "$want" != 124 ] &&
        fail "hibar-run $* did not end within $bound s"
    [ $rc -eq "$want" ] || fail "hibar-run $*: exit $rc, expected $want"
}

# ---- the namespace test bed -------------------------------------------------------------------
# hb_use_bed NAME: a cluster NAME (the bed carries the same name) whose daemons a resource
# manager or the test starts on the bed's hosts; run_dir is its run dir.
hb_use_bed() {
    name=$1
    run_dir=/tmp/hibar-$(id -u)-$name
}

# outside, after the bed: nothing of the cluster may be left (daemons, run dir, namespaces);
# exits with rc
bed_done() {
    local rc=$1 left
    left=$(pgrep -f -- "cluster=$name" || true)
    if [ -n "$left" ] || [ -e "$run_dir" ]; then
        [ -n "$left" ] && kill -KILL $left 2>/dev/null
        rm -rf "$run_dir"
        [ "$rc" -eq 0 ] && fail "daemons or run dir left behind"
    fi
    [ -z "$(ip netns list 2>/dev/null | grep "hibar-$name-")" ] || fail "namespaces left"
    # chassis-barrier segments of daemons that were killed (a SIGKILLed Center cannot unlink)
    rm -f /dev/shm/hibar-"$(id -u)"-"$name"-*
    exit "$rc"
}

# stop the cluster's daemons: SIGTERM, then SIGKILL a second later
stop_daemons() {
    local left
    left=$(pgrep -f -- "cluster=$name" || true)
    [ -n "$left" ] && kill -TERM $left 2>/dev/null && sleep 1
    left=$(pgrep -f -- "cluster=$name" || true)
    [ -z "$left" ] || kill -KILL $left 2>/dev/null
}

# wait (bounded) until the cluster file lists n nodes and every daemon has its socket
wait_up() {
    local n=$1
    for _ in $(seq 1 100); do
        if [ -f "$run_dir/cluster.yaml" ] &&
            [ "$(grep -c '^  - {name:' "$run_dir/cluster.yaml")" -eq "$n" ] &&
            [ "$(ls "$run_dir"/*.sock 2>/dev/null | wc -l)" -eq "$n" ]; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# wait (bounded, 15 s) until no hibard of the cluster is left
wait_gone() {
    for _ in $(seq 1 75); do
        [ -z "$(pgrep -f -- "$hibard .*cluster=$name" || true)" ] && return 0
        sleep 0.2
    done
    return 1
}

# bed_daemons CLUSTER RUN_DIR [HIBARD_OPTION...]: inside the bed, one hibard per host of the bed
# (the node named after its host, bootstrap static from the bed's configuration, its log
# RUN_DIR/HOST.log), stopped on exit; then waits (bounded: 20 s) until every daemon is ready.
# Returns 1 if they are not.
HB_BED_PIDS=()
bed_daemons() {
    local cn=$1 rd=$2 hs ns
    shift 2
    mkdir -p "$rd" || return 1
    [ ${#HB_BED_PIDS[@]} -gt 0 ] || on_exit 'kill "${HB_BED_PIDS[@]}" 2>/dev/null; wait 2>/dev/null'
    for hs in $HIBAR_TESTBED_HOSTS; do
        ns=${hs%%:*}
        "$HIBAR_TESTBED_HOSTEXEC" "$ns" "${HIBARD:-$bld/daemon/hibard}" -f \
            --config "$HIBAR_TESTBED_CONFIG" --node "$ns" -o "cluster=$cn" -o "run_dir=$rd" "$@" \
            >"$rd/$ns.log" 2>&1 &
        HB_BED_PIDS+=($!)
    done
    for _ in $(seq 100); do
        "$bld/tools/hibar-cluster" --config "$HIBAR_TESTBED_CONFIG" --set "cluster=$cn" \
            --set "run_dir=$rd" status >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}
