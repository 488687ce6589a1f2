#!/usr/bin/env bash
# netns_mpi_coll.sh: mca_coll_hibar across hosts: tests/mpi_coll_check (see mpi_coll.sh) under
# hibar-run on 4 network-namespace hosts x 2 ranks, one hibard per host: the component joins
# the job as "several nodes" on every rank, and the results by the table and with every call
# forced to hibar are bit-identical to OMPI_MCA_coll=^hibar's. Needs root (77 without), mpirun
# and the component (77 without). About a minute.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}

. "$(dirname "$0")/hb_test.sh"

if [ "${1-}" = --inside ]; then
    NAME=hibar-mc$$
    DIR=/tmp/hibar-$(id -u)-mc$$
    mkdir -p "$DIR" || exit 99
    TMP=$(mktemp -d /tmp/hibar-mpicoll.XXXXXX) || exit 99
    # Open MPI's session directories (TMPDIR/ompi.HOST.UID) inside TMP: removed with it
    mkdir -p "$TMP/tmp" && export TMPDIR="$TMP/tmp"
    on_exit 'rm -rf "$DIR" "$TMP" /dev/shm/hibar-"$(id -u)"-"$NAME"-*'
    on_fail 'for l in "$DIR"/*.log; do [ -f "$l" ] && { echo "== $l" >&2; tail -n 20 "$l" >&2; }; done'
    on_fail 'echo "--- stderr" >&2; grep -v "^\[" "$TMP/err" | tail -n 20 >&2'
    bed_daemons "$NAME" "$DIR" || fail "daemons not ready"
    PROG=$TMP/mpi_coll_check
    cp "$bld/tests/mpi_coll_check" "$PROG" || exit 99
    CTR=$TMP/hibar-barrier-counter # the hosts share /tmp: one counter for every rank
    truncate -s 8 "$CTR" "$CTR.0" "$CTR.1" || exit 99
    SEED=${HIBAR_TEST_SEED:-$RANDOM}
    echo "seed $SEED (HIBAR_TEST_SEED=$SEED repeats it)"
    hb_mpi_component "$TMP/comp"
    export OMPI_MCA_coll_base_verbose=10
    mpi() { # NAME
        timeout -s TERM 300 "$bld/tools/hibar-run" --config "$HIBAR_TESTBED_CONFIG" \
            -o "cluster=$NAME" -o "run_dir=$DIR" -n 8 -N 2 "$PROG" "$CTR" 10 200000 "$SEED" \
            >"$TMP/out" 2>"$TMP/err" || fail "$1: hibar-run exit $?"
        [ "$(grep -c "^mpi_coll_check: rank [0-7] of 8 ok digest" "$TMP/out")" -eq 8 ] ||
            fail "$1: not every rank passed"
        grep "^mpi_coll_check: rank" "$TMP/out" | sort >"$TMP/$1"
    }
    OMPI_MCA_coll='^hibar' mpi ompi
    mpi auto
    [ "$(grep -c "coll:hibar: joined the hibar job (several nodes)" "$TMP/err")" -eq 8 ] ||
        fail "the component did not join the job on every rank (several nodes)"
    OMPI_MCA_coll_hibar_force=hibar mpi hibar
    cmp -s "$TMP/ompi" "$TMP/auto" || fail "the table's results differ from Open MPI's"
    cmp -s "$TMP/ompi" "$TMP/hibar" || fail "hibar's results differ from Open MPI's"
    echo "PASS: 4 hosts x 2 ranks, the same results with and without hibar"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
[ -e "$bld/mpi/.libs/mca_coll_hibar.so" ] && [ -x "$bld/tests/mpi_coll_check" ] ||
    { echo "SKIP: mca_coll_hibar or tests/mpi_coll_check not built"; exit 77; }
exec "$src/tests/netns/testbed" --name "mc$$" --net 10.233 --sites 1 --nodes 4 -- "$0" --inside
