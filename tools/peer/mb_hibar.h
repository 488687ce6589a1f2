/* mb_hibar.h: the few MPI calls of mpi_bench.c, done with libhibar: the same harness (reps,
 * isolation, maximum method, JSON rows) then measures hibar (hibar-lib-bench). */
#ifndef MB_HIBAR_H
#define MB_HIBAR_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hibar.h"

#define MB_IMPL "hibar"
#define MB_PROG "hibar-lib-bench"

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
#define MPI_COMM_WORLD 0
#define MPI_SUCCESS 0
#define MPI_ERR_ARG (-1)
#define MPI_BYTE 1
#define MPI_INT ((int)sizeof(int))
#define MPI_LONG ((int)sizeof(long))
#define MPI_DOUBLE ((int)sizeof(double) + 100) /* a distinct tag; size below */
#define MPI_SUM 1
#define MPI_MAX 2
#define MPI_ERRORS_RETURN 0

static hibar_t *mb_h;
/* --coll-subset: MB_COMM_SUB names this rank's subset (mb_sub, mb_n_sub job ranks), whose data
 * operations go to hibar's collectives of a rank set */
#define MB_COMM_SUB 1
static const int *mb_sub;
static int mb_n_sub;

static size_t mb_tsize(MPI_Datatype t)
{
    return t == MPI_DOUBLE ? sizeof(double) : (size_t)t;
}
static int MPI_Init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return hibar_init(&mb_h);
}
static int MPI_Finalize(void)
{
    return hibar_finalize(&mb_h);
}
static void MPI_Abort(MPI_Comm c, int code)
{
    (void)c;
    _exit(code); /* the launcher stops the job */
}
static int MPI_Comm_rank(MPI_Comm c, int *r)
{
    (void)c;
    return hibar_rank(mb_h, r);
}
static int MPI_Comm_size(MPI_Comm c, int *s)
{
    (void)c;
    return hibar_size(mb_h, s);
}
static int MPI_Comm_set_errhandler(MPI_Comm c, int e)
{
    (void)c;
    (void)e;
    return 0;
}
static int MPI_Barrier(MPI_Comm c)
{
    (void)c;
    return hibar_barrier(mb_h);
}
static int MPI_Scatter(const void *s, int n, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                       int root, MPI_Comm c)
{
    (void)rn;
    (void)rt;
    if (c == MB_COMM_SUB)
        return hibar_scatter_subset(mb_h, mb_sub, mb_n_sub, s, r, (size_t)n * mb_tsize(st), root);
    return hibar_scatter(mb_h, s, r, (size_t)n * mb_tsize(st), root);
}
static int MPI_Gather(const void *s, int n, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                      int root, MPI_Comm c)
{
    (void)rn;
    (void)rt;
    if (c == MB_COMM_SUB)
        return hibar_gather_subset(mb_h, mb_sub, mb_n_sub, s, r, (size_t)n * mb_tsize(st), root);
    return hibar_gather(mb_h, s, r, (size_t)n * mb_tsize(st), root);
}
static int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    if (c == MB_COMM_SUB)
        return hibar_bcast_subset(mb_h, mb_sub, mb_n_sub, b, (size_t)n * mb_tsize(t), root);
    return hibar_bcast(mb_h, b, (size_t)n * mb_tsize(t), root);
}
static int MPI_Allgather(const void *s, int n, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                         MPI_Comm c)
{
    (void)rn;
    (void)rt;
    if (c == MB_COMM_SUB)
        return hibar_allgather_subset(mb_h, mb_sub, mb_n_sub, s, r, (size_t)n * mb_tsize(st));
    return hibar_allgather(mb_h, s, r, (size_t)n * mb_tsize(st));
}
/* Reductions: a gather to root (every rank's vector), combined there. */
static int mb_reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, int all)
{
    int me, np, rc;
    size_t es = mb_tsize(t), len = (size_t)n * es;
    hibar_rank(mb_h, &me);
    hibar_size(mb_h, &np);
    char *every = malloc(len * (size_t)np + 1);
    if (every == NULL)
        return MPI_ERR_ARG;
    rc = all ? hibar_allgather(mb_h, s, every, len) : hibar_gather(mb_h, s, every, len, root);
    if (rc == 0 && (all || me == root)) {
        memcpy(r, every, len);
        for (int p = 1; p < np; p++)
            for (int i = 0; i < n; i++) {
                const char *x = every + (size_t)p * len + (size_t)i * es;
                char *y = (char *)r + (size_t)i * es;
                if (t == MPI_DOUBLE) {
                    double a, b;
                    memcpy(&a, x, es);
                    memcpy(&b, y, es);
                    b = op == MPI_MAX ? (a > b ? a : b) : a + b;
                    memcpy(y, &b, es);
                } else {
                    long a = 0, b = 0; /* int or long */
                    memcpy(&a, x, es);
                    memcpy(&b, y, es);
                    b = op == MPI_MAX ? (a > b ? a : b) : a + b;
                    memcpy(y, &b, es);
                }
            }
    }
    free(every);
    return rc;
}
static int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root,
                      MPI_Comm c)
{
    (void)c;
    return mb_reduce(s, r, n, t, op, root, 0);
}
static int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    (void)c;
    return mb_reduce(s, r, n, t, op, 0, 1);
}
/* Distinct nodes: every rank's hostname and its daemon's socket (the emulated nodes of one
 * host each have their own daemon), compared. */
static int mb_count_nodes(MPI_Comm comm)
{
    int np, nodes = 0;
    char name[256] = {0};
    const char *sock = getenv("HIBAR_SOCKET");
    (void)comm;
    hibar_size(mb_h, &np);
    gethostname(name, 63);
    snprintf(name + strlen(name), sizeof(name) - strlen(name), ":%s", sock != NULL ? sock : "");
    char *all = malloc(sizeof(name) * (size_t)np);
    if (all == NULL || hibar_allgather(mb_h, name, all, sizeof(name)) != 0) {
        free(all);
        return 0;
    }
    for (int p = 0; p < np; p++) {
        int seen = 0;
        for (int q = 0; q < p && !seen; q++)
            seen = strcmp(all + (size_t)p * sizeof(name), all + (size_t)q * sizeof(name)) == 0;
        nodes += !seen;
    }
    free(all);
    return nodes;
}
#endif
