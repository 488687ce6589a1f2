#!/bin/bash
# mpi_err.sh: mca_coll_hibar maps hibar's errors to MPI error classes. tests/mpi_err_check
# misuses collectives under MPI_ERRORS_RETURN (the ranks disagree on MPI_Bcast's root, then on
# MPI_Gather's size) with every call forced to hibar: hibar reports the mismatch on every rank
# and each call returns MPI_ERR_ARG on every rank instead of hanging; correct calls after them
# succeed. On 1 node x 4 ranks and 4 emulated nodes x 2 ranks (the daemons agree the calls'
# arguments first). The same program with OMPI_MCA_coll=^hibar is not run: Open MPI's own
# collectives do not check such misuse (they may hang). A timeout bounds each job against a
# hang only. Skipped (77) when the component or mpirun is missing.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
hb_use_mpi tests/mpi_err_check

# errs NAME N ARGS...: the program under hibar-run, every call forced to hibar
errs() {
    local name=$1 n=$2 rc c
    shift 2
    OMPI_MCA_coll_hibar_force=hibar OMPI_MCA_coll_base_verbose=1 \
        timeout -k 10 600 "$RUN" "$@" "$PROG" >"$OUT" 2>"$ERR"
    rc=$?
    [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$name: the job hung (killed after 600 s)"
    [ $rc -eq 0 ] || fail "$name: hibar-run exit $rc"
    for c in bcast-root gather-size; do
        [ "$(grep -c "^mpi_err_check: rank [0-9]* $c class [0-9]* (MPI_ERR_ARG)$" "$OUT")" -eq "$n" ] ||
            fail "$name: $c did not return MPI_ERR_ARG on every rank"
    done
    [ "$(grep -c "^mpi_err_check: rank [0-9]* of $n ok$" "$OUT")" -eq "$n" ] ||
        fail "$name: the correct calls after the errors did not succeed on every rank"
    # the component said why (coll_base_verbose 1): hibar's status of the call
    grep -q "coll:hibar: hibar_bcast: .*" "$ERR" || fail "$name: no verbose line for hibar_bcast's error"
    echo "$name: MPI_Bcast (root) and MPI_Gather (size) mismatches: MPI_ERR_ARG on all $n ranks; the job went on"
}
errs one 4 -n 4 --per-node 4 --emulate "$src/examples/local.yaml"
errs four 8 -n 8 --per-node 2 --emulate "$FOUR"
check_clean
echo "PASS: mpi_err"
