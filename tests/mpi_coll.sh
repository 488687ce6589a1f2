#!/bin/bash
# mpi_coll.sh: mca_coll_hibar, Open MPI's coll component on hibar. An unmodified MPI program
# (mpi_coll_check.c: barrier ordering on the world (MPI_Barrier, MPI_Ibarrier), a reordered
# split, a dup and the halves of a split (hibar's subset barrier; its collectives of a rank set
# on one node, and through the daemons where forced); collectives with random sizes, roots, types and
# MPI_IN_PLACE checked bit for bit against Open MPI's own in the same job; derived datatypes,
# passed down) under hibar-run on 1 node x 4 ranks and 4 emulated nodes x 2 ranks, by the table
# and with every call forced to hibar; the same results with OMPI_MCA_coll=^hibar (the
# component not even opened); under mpirun without hibard the component is not selected and
# says nothing. Skipped (77) when the component (Open MPI's coll headers) or mpirun is
# missing. HIBAR_TEST_SEED repeats a run.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
hb_use_mpi tests/mpi_coll_check
CTR="$TMP/hibar-barrier-counter" # the barrier ordering's shared counter
truncate -s 8 "$CTR" "$CTR.0" "$CTR.1" || exit 99
SEED=${HIBAR_TEST_SEED:-$RANDOM}
echo "seed $SEED (HIBAR_TEST_SEED=$SEED repeats it)"
ROUNDS=20
MAXB=300000

# mpi NAME N ARGS...: run the program (N ranks) under hibar-run, coll_base_verbose on; every
# rank's result line (rank, digest) into $TMP/NAME
mpi() {
    local name=$1 n=$2
    shift 2
    OMPI_MCA_coll_base_verbose=10 run 0 "$@" "$PROG" "$CTR" $ROUNDS $MAXB "$SEED"
    [ "$(grep -c "^mpi_coll_check: rank [0-9]* of $n ok digest" "$OUT")" -eq "$n" ] ||
        fail "$name: not every rank passed"
    grep "^mpi_coll_check: rank" "$OUT" | sort >"$TMP/$name"
}

# selected NAME N REGIME: the component joined the job on every rank and took MPI_COMM_WORLD
selected() {
    [ "$(grep -c "coll:hibar: joined the hibar job ($3)" "$ERR")" -eq "$2" ] || {
        grep "coll:hibar: \(not used\|joined\)" "$ERR" # why a rank did not join
        fail "$1: the component did not join the job on every rank ($3)"
    }
    [ "$(grep -c "coll:hibar: communicator MPI_COMM_WORLD ($2 ranks): barrier, ibarrier, bcast" "$ERR")" \
        -eq "$2" ] || fail "$1: MPI_COMM_WORLD not served by hibar on every rank"
}

same() { cmp -s "$TMP/$1" "$TMP/$2" || { diff "$TMP/$1" "$TMP/$2"; fail "$1 and $2 differ"; }; }

# 1. one node x 4 ranks: Open MPI's own, the table, every call to hibar
OMPI_MCA_coll='^hibar' mpi one-ompi 4 -n 4 --per-node 4 --emulate "$src/examples/local.yaml"
! grep -q "coll:hibar" "$ERR" || fail "OMPI_MCA_coll=^hibar: the component still ran"
mpi one 4 -n 4 --per-node 4 --emulate "$src/examples/local.yaml"
selected one 4 "one node"
OMPI_MCA_coll_hibar_force=hibar mpi one-hibar 4 -n 4 --per-node 4 --emulate "$src/examples/local.yaml"
selected one-hibar 4 "one node"
# on one node the halves of the split and the reordered split get hibar's collectives of a
# rank set (hibar_*_subset)
[ "$(grep -c '(2 ranks): barrier, bcast, scatter, gather, allgather (ranks of one node)' "$ERR")" \
    -eq 4 ] || fail "one-hibar: the halves of the split did not get hibar's collectives"
[ "$(grep -c 'allgather (the whole job in another order, on one node)' "$ERR")" -eq 4 ] ||
    fail "one-hibar: the reordered split did not get hibar's collectives"
# a crossover inside the sizes drawn: each collective goes both ways in one job
OMPI_MCA_coll_hibar_bcast_min_node=100000 OMPI_MCA_coll_hibar_scatter_min_node=100000 \
    OMPI_MCA_coll_hibar_gather_max_node=100000 OMPI_MCA_coll_hibar_allgather_max_node=100000 \
    mpi one-mixed 4 -n 4 --per-node 4 --emulate "$src/examples/local.yaml"
same one-ompi one
same one-ompi one-hibar
same one-ompi one-mixed
echo "1 node x 4: the same results with and without hibar"

# 2. 4 emulated nodes x 2 ranks
OMPI_MCA_coll='^hibar' mpi four-ompi 8 -n 8 --per-node 2 --emulate "$FOUR"
mpi four 8 -n 8 --per-node 2 --emulate "$FOUR"
selected four 8 "several nodes"
OMPI_MCA_coll_hibar_force=hibar mpi four-hibar 8 -n 8 --per-node 2 --emulate "$FOUR"
# each node's ranks (MPI_COMM_TYPE_SHARED) get hibar's collectives of a rank set
[ "$(grep -c '(2 ranks): barrier, bcast, scatter, gather, allgather (ranks of one node)' "$ERR")" \
    -eq 8 ] || fail "four-hibar: the nodes' communicators did not get hibar's collectives"
# the halves of the split and the reordered split span the nodes: forced, they get hibar's
# collectives of a rank set through the daemons (by the table, only the barrier)
[ "$(grep -c '(4 ranks): barrier; bcast, scatter, gather, allgather forced (a subset of the job' \
    "$ERR")" -eq 8 ] || fail "four-hibar: the halves did not get hibar's collectives"
[ "$(grep -c 'allgather forced (the whole job in another order, through the daemons)' "$ERR")" \
    -eq 8 ] || fail "four-hibar: the reordered split did not get hibar's collectives"
same four-ompi four
same four-ompi four-hibar
echo "4 nodes x 2: the same results with and without hibar"
# 4 nodes x 1: the regime with one rank a node (its own row of the table)
OMPI_MCA_coll='^hibar' mpi four1-ompi 4 -n 4 --per-node 1 --emulate "$FOUR"
mpi four1 4 -n 4 --per-node 1 --emulate "$FOUR"
selected four1 4 "several nodes, one rank each"
same four1-ompi four1
echo "4 nodes x 1: the same results with and without hibar"

# 3. without hibard (Open MPI's mpirun, the component on its path): not selected, not a word
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$(ompi_info --path pkglibdir --parsable |
    sed -n 's/^path:pkglibdir://p'):$HIBAR_OMPI_COMPONENT_DIR"
ompi_info | grep -q "MCA coll: hibar" || fail "ompi_info does not list the component"
without() {
    env -u HIBAR_SOCKET -u HIBAR_RANK -u HIBAR_JOB timeout -k 5 120 mpirun -n 2 --oversubscribe \
        "$@" "$PROG" "$CTR" 5 4096 "$SEED" >"$OUT" 2>"$ERR" || fail "mpirun $*: exit $?"
    [ "$(grep -c "^mpi_coll_check: rank [01] of 2 ok" "$OUT")" -eq 2 ] || fail "mpirun: not ok"
}
without
! grep -qi "hibar" "$ERR" || fail "without hibard the component printed something"
without -x OMPI_MCA_coll_base_verbose=10
grep -q "coll:hibar: not used: the process was not started by hibard" "$ERR" ||
    fail "without hibard: no verbose line saying why the component is not used"
! grep -q "coll:hibar: joined" "$ERR" || fail "without hibard the component joined a job"
echo "mpirun without hibard: component not selected, quietly"
check_clean
echo "PASS: mpi_coll"
