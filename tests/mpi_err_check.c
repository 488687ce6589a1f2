/* mpi_err_check.c: an MPI program that misuses a collective under MPI_ERRORS_RETURN, for
 * tests/mpi_err.sh: with every call forced to hibar (OMPI_MCA_coll_hibar_force=hibar) the
 * ranks of one call disagree, hibar reports HIBAR_ERR_MISMATCH on every rank, and the call
 * returns the mapped MPI error class (mpi/mpi_err.c: MPI_ERR_ARG) instead of hanging:
 *  1. MPI_Bcast with rank 0 naming root 0 and the others root 1;
 *  2. MPI_Gather with rank 0 sending 1024 bytes and the others 2048;
 *  3. then correct calls (MPI_Bcast, MPI_Barrier) succeed and move the right data: the job
 *     goes on.
 * Prints "mpi_err_check: rank R CASE class C (NAME)" per case and rank, "mpi_err_check: rank
 * R of N ok" at the end; exit 1 when a correct call fails. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, np;

static const char *class_name(int c)
{
    switch (c) {
    case MPI_SUCCESS:
        return "MPI_SUCCESS";
    case MPI_ERR_ARG:
        return "MPI_ERR_ARG";
    case MPI_ERR_OTHER:
        return "MPI_ERR_OTHER";
    case MPI_ERR_TRUNCATE:
        return "MPI_ERR_TRUNCATE";
    case MPI_ERR_INTERN:
        return "MPI_ERR_INTERN";
    case MPI_ERR_NO_MEM:
        return "MPI_ERR_NO_MEM";
    default:
        return "another class";
    }
}

static void report(const char *what, int rc)
{
    int c = rc;

    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &c);
    printf("mpi_err_check: rank %d %s class %d (%s)\n", me, what, c, class_name(c));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    enum { N = 1024 };
    static char buf[2 * N], all[64 * 2 * N];
    int rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2 || np > 64) {
        fprintf(stderr, "mpi_err_check: 2 to 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    memset(buf, me + 1, sizeof buf);

    /* 1. the ranks disagree on the root */
    rc = MPI_Bcast(buf, N, MPI_BYTE, me == 0 ? 0 : 1, MPI_COMM_WORLD);
    report("bcast-root", rc);

    /* 2. the ranks disagree on the size */
    rc = MPI_Gather(buf, me == 0 ? N : 2 * N, MPI_BYTE, all, me == 0 ? N : 2 * N, MPI_BYTE, 0,
                    MPI_COMM_WORLD);
    report("gather-size", rc);

    /* 3. the job goes on: a correct bcast and barrier */
    memset(buf, me == 1 ? 0x5a : 0, N);
    rc = MPI_Bcast(buf, N, MPI_BYTE, 1, MPI_COMM_WORLD);
    report("bcast", rc);
    for (int i = 0; rc == MPI_SUCCESS && i < N; i++)
        if (buf[i] != 0x5a) {
            fprintf(stderr, "mpi_err_check: rank %d: byte %d of the bcast is %d\n", me, i, buf[i]);
            rc = MPI_ERR_OTHER;
        }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Barrier(MPI_COMM_WORLD);
        report("barrier", rc);
    }
    if (rc == MPI_SUCCESS)
        printf("mpi_err_check: rank %d of %d ok\n", me, np);
    MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : 1;
}
