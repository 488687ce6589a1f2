#!/bin/bash
# run_ompi.sh: an unmodified Open MPI program (MPI_Init, MPI_Barrier, MPI_Allreduce,
# MPI_Finalize) under hibar-run on 1 node x 4 ranks and on 4 emulated nodes x 2 ranks (MPI_Init's
# fence with data across nodes), on part of the cluster and inside an allocation of part of it
# (with a libhibar program too); skipped when Open MPI's mpicc is not installed.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
command -v mpicc >/dev/null || { echo "SKIP: no mpicc"; exit 77; }
cat > "$TMP/mpi_hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 20; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("mpi rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
C
mpicc -o "$TMP/mpi_hello" "$TMP/mpi_hello.c" || { echo "SKIP: mpicc cannot build"; exit 77; }
# Open MPI's session directory (TMPDIR/ompi.HOST.UID/jf.N/M; hb_use_run's TMPDIR is the
# test's own) goes with the job: Open MPI registers it for cleanup with the PMIx server, which
# removes it when the rank finalizes
run 0 -n 4 "$TMP/mpi_hello"
[ "$(grep -c '^mpi rank [0-3] of 4 sum 6$' "$OUT")" -eq 4 ] || fail "Open MPI 1x4"
[ -n "$(find "$TMPDIR" -maxdepth 2 -name 'jf.*')" ] || fail "no Open MPI session dir seen"
left=$(find "$TMPDIR" -mindepth 3 -path '*/ompi.*/jf.*/*')
[ -z "$left" ] || fail "Open MPI's job session dirs left behind: $left"
run 0 -n 8 --emulate "$FOUR" "$TMP/mpi_hello"
[ "$(grep -c '^mpi rank [0-7] of 8 sum 28$' "$OUT")" -eq 8 ] || fail "Open MPI 4x2"
# inside a Slurm allocation but outside a job step (a batch script), Open MPI's slurm schizo
# component would make every rank a singleton: the job still forms one world
SLURM_JOB_ID=77 SLURM_JOBID=77 SLURM_NODELIST=rt0 SLURM_JOB_NODELIST=rt[0-3] \
    run 0 -n 8 --per-node 2 --emulate "$FOUR" "$TMP/mpi_hello"
[ "$(grep -c '^mpi rank [0-7] of 8 sum 28$' "$OUT")" -eq 8 ] || fail "Open MPI 4x2 inside sbatch"
# a job on part of the cluster: 3 of the 4 nodes, the fourth takes no part
run 0 -n 6 -H 'rt[1-3]' --emulate "$FOUR" "$TMP/mpi_hello"
[ "$(grep -c '^mpi rank [0-5] of 6 sum 15$' "$OUT")" -eq 6 ] || fail "Open MPI on 3 of 4 nodes"
# inside an allocation of part of the cluster (a batch script): its nodes only, its tasks per
# node; an Open MPI program and a libhibar program alike
SLURM_JOB_ID=78 SLURM_JOBID=78 SLURM_JOB_NODELIST='rt[1-2]' SLURM_TASKS_PER_NODE='2(x2)' \
    run 0 --emulate "$FOUR" "$TMP/mpi_hello"
[ "$(grep -c '^mpi rank [0-3] of 4 sum 6$' "$OUT")" -eq 4 ] || fail "Open MPI on an allocation of 2 of 4 nodes"
if [ -x "$bld/examples/hibar-example" ]; then
    SLURM_JOB_ID=79 SLURM_JOBID=79 SLURM_JOB_NODELIST='rt[0,3]' SLURM_TASKS_PER_NODE='2(x2)' \
        run 0 --emulate "$FOUR" "$bld/examples/hibar-example"
    grep -q "4 ranks: .* data checked: ok" "$OUT" || fail "libhibar on an allocation of 2 of 4 nodes"
fi
left=$(pgrep -f -- "$TMP/mpi_hello" || true)
[ -z "$left" ] || fail "MPI ranks left: $left"
check_clean
echo "PASS: run_ompi"
