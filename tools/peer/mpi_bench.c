/* mpi_bench.c: hibar-mpi-bench, the Open MPI peer of hibar-bench --compare (JSON rows,
 * doc/design.md section 6); built with HB_LIB_BENCH it is hibar-lib-bench, the same harness
 * on libhibar. */
/*
 * Measures MPI_Barrier, MPI_Scatter, MPI_Gather, MPI_Bcast, MPI_Allgather and MPI_Alltoall
 * (hibar-mpi-bench only: libhibar has no alltoall yet) latency per message size the way MPIBlib
 * does (and, with --bench subset, a barrier of the even ranks beside one of the odd ranks:
 * hibar_barrier_subset, or MPI_Barrier on the halves' communicators):
 *  - warm-up iterations (not timed; the first one also checks the data moved correctly, so
 *    --warmup 0 skips the check);
 *  - every timed repetition is isolated by an MPI_Barrier (no pipelining between reps);
 *  - the maximum method: each rank times the operation with its own monotonic clock, the
 *    repetition's time is the maximum over ranks (one MPI_Reduce per batch, outside timing);
 *  - repetitions continue from --min-iters until the 95% Student-t confidence interval of the
 *    mean is within --err of the mean, or --max-iters, or --max-secs for that row.
 * Rank 0 prints one JSON object per (operation, size):
 *   {"bench": "barrier", "impl": "open-mpi", "nodes": 4, "ranks": 16, "size": 0, "iters": 1000,
 *    "median_us": ..., "min_us": ..., "max_us": ..., "p99_us": ..., "ci_us": ..., "mean_us": ...}
 * size is the message per rank in bytes (0 for the barrier); nodes counts distinct hosts.
 * With --osu it prints the OSU micro-benchmarks' tables instead (common/hb_osu.h: their title,
 * "# Size  Avg Latency(us)  Min Latency(us)  Max Latency(us)  Iterations", as osu_* -f), the
 * same as hibar-bench --osu. Exit status 0, 2 for bad usage, 1 on error.
 */
#include "hb_config.h"

#include "hb_cli.h"
#include "hb_osu.h"

#include <errno.h>
#include <math.h>
#ifdef HB_LIB_BENCH
#include "mb_hibar.h" /* MPI's calls done by libhibar; mb_count_nodes by hostname */
#else
#include <mpi.h>
#define MB_IMPL "open-mpi"
#define MB_PROG "hibar-mpi-bench"
#endif

#include "hb_meas.h"
#include "hb_size.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MB_MAX_SIZES 64
#define MB_BATCH_MAX 1000

typedef enum {
    MB_BARRIER,
    MB_SCATTER,
    MB_GATHER,
    MB_BCAST,
    MB_ALLGATHER,
    MB_SUBSET,
    MB_ALLTOALL,
    MB_N_OPS
} mb_op_t;

#ifdef HB_LIB_BENCH
#define MB_HAVE_ALLTOALL 0
#else
#define MB_HAVE_ALLTOALL 1
#endif

static const char *const mb_op_names[MB_N_OPS] = {"barrier",   "scatter", "gather",  "bcast",
                                                  "allgather", "subset",  "alltoall"};

typedef struct mb_opts {
    int ops[MB_N_OPS];
    size_t sizes[MB_MAX_SIZES];
    int n_sizes;
    long warmup, min_iters, max_iters;
    double err, max_secs;
    int root;
    int sub_block; /* --subset-block K: the subset is a block of K ranks, not a parity class */
    int coll_subset; /* --coll-subset: scatter, gather, bcast, allgather on the subsets, at once */
    int osu;
    int method; /* -1: the built-in batched maximum loop; else an hb_meas_method_t */
} mb_opts_t;

typedef struct mb_ctx {
    MPI_Comm comm;
    int rank, size, nodes;
    int *half, n_half; /* subset: the ranks of this rank's parity (or block), ascending */
#ifndef HB_LIB_BENCH
    MPI_Comm half_comm;
#endif
    unsigned char *sbuf, *rbuf; /* sized for the largest size of the run */
    /* where the data operations run: this context, or with --coll-subset its subset's (the
     * subset's communicator, this rank's index in it, its size; the same buffers) */
    struct mb_ctx *oc;
} mb_ctx_t;

typedef struct mb_stats {
    long n;
    double median, min, max, p99, mean, ci;
} mb_stats_t;

static double mb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void mb_usage(FILE *f)
{
    fprintf(f,
            "usage: " MB_PROG
            " [--bench barrier,scatter,gather,bcast,allgather,subset,alltoall|all]\n"
            "         [--sizes 0,1K,64K..8M] [--iters N | --min-iters N --max-iters N]\n"
            "         [--warmup N] [--err REL] [--max-secs S] [--root R] [--subset-block K]\n"
            "         [--coll-subset]  (the data operations on each rank's subset, all at once;\n"
            "          --root is then a member index)\n"
            "         [--json | --osu]\n"
            "         [--method global|maximum|root]  (hibar's measurement core, common/hb_meas;\n"
            "          hibar-mpi-bench only)\n"
            "  (run under mpirun; rank 0 prints one JSON row per operation and size)\n"
            "       " MB_PROG " --help | --version\n");
}

/* "0,1K,64K..1M": a list (hb_size.h), each size at most 4G. 0 or -1. */
static int mb_parse_sizes(const char *arg, mb_opts_t *o)
{
    size_t n;
    if (hb_size_list_parse(arg, 0, 1ull << 32, o->sizes, MB_MAX_SIZES, &n) != 0)
        return -1;
    o->n_sizes = (int)n;
    return 0;
}

static int mb_parse_ops(const char *arg, mb_opts_t *o)
{
    char buf[256], *save = NULL;
    if (strlen(arg) >= sizeof(buf))
        return -1;
    strcpy(buf, arg);
    memset(o->ops, 0, sizeof(o->ops));
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < MB_N_OPS; i++) {
            if (i == MB_ALLTOALL && !MB_HAVE_ALLTOALL)
                continue; /* "alltoall" alone: unknown here */
            /* all: every operation but subset (barriers of two halves at once) */
            if ((strcmp(tok, "all") == 0 && i != MB_SUBSET) || strcmp(tok, mb_op_names[i]) == 0) {
                o->ops[i] = 1;
                found = 1;
            }
        }
        if (!found)
            return -1;
    }
    return 0;
}

static int mb_parse_long(const char *s, long min, long *out_p)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min)
        return -1;
    *out_p = v;
    return 0;
}

static int mb_parse_args(int argc, char **argv, mb_opts_t *o)
{
    int sizes_given = 0;
    o->ops[MB_BARRIER] = 1;
    o->warmup = 10;
    o->min_iters = 20;
    o->max_iters = 10000;
    o->err = 0.025;
    o->max_secs = 5.0;
    o->method = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (strcmp(a, "--osu") == 0 || strcmp(a, "--json") == 0) {
            o->osu = a[2] == 'o'; /* JSON rows are the default; --json is accepted */
            continue;
        }
        if (strcmp(a, "--coll-subset") == 0) {
            o->coll_subset = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || !v)
            return -1;
        i++;
        if (strcmp(a, "--bench") == 0) {
            if (mb_parse_ops(v, o) != 0)
                return -1;
        } else if (strcmp(a, "--sizes") == 0) {
            if (mb_parse_sizes(v, o) != 0)
                return -1;
            sizes_given = 1;
        } else if (strcmp(a, "--iters") == 0) {
            if (mb_parse_long(v, 1, &n) != 0)
                return -1;
            o->min_iters = o->max_iters = n;
        } else if (strcmp(a, "--min-iters") == 0) {
            if (mb_parse_long(v, 2, &o->min_iters) != 0)
                return -1;
        } else if (strcmp(a, "--max-iters") == 0) {
            if (mb_parse_long(v, 1, &o->max_iters) != 0)
                return -1;
        } else if (strcmp(a, "--warmup") == 0) {
            if (mb_parse_long(v, 0, &o->warmup) != 0)
                return -1;
        } else if (strcmp(a, "--method") == 0) {
            hb_meas_method_t m;
#ifdef HB_LIB_BENCH
            return -1; /* the MPIBlib methods need point-to-point: hibar-bench methods */
#endif
            if (hb_meas_method_parse(v, &m) != 0)
                return -1;
            o->method = (int)m;
        } else if (strcmp(a, "--subset-block") == 0) {
            if (mb_parse_long(v, 0, &n) != 0 || n > 1000000)
                return -1;
            o->sub_block = (int)n;
        } else if (strcmp(a, "--root") == 0) {
            if (mb_parse_long(v, 0, &n) != 0 || n > 1000000)
                return -1;
            o->root = (int)n;
        } else if (strcmp(a, "--err") == 0 || strcmp(a, "--max-secs") == 0) {
            char *end;
            double d = strtod(v, &end);
            if (end == v || *end != '\0' || !(d > 0.0 && d < 1e6))
                return -1;
            if (a[2] == 'e')
                o->err = d;
            else
                o->max_secs = d;
        } else {
            return -1;
        }
    }
    if (o->max_iters < o->min_iters)
        o->max_iters = o->min_iters;
    if (!sizes_given) {
        o->n_sizes = 4;
        o->sizes[0] = 4;
        o->sizes[1] = 1024;
        o->sizes[2] = 64 * 1024;
        o->sizes[3] = 1024 * 1024;
    }
    return 0;
}

/* Two-sided 95% Student-t quantile for df degrees of freedom. */
static double mb_t95(long df)
{
    static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                               2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                               2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                               2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1)
        return INFINITY;
    if (df <= 30)
        return t[df];
    if (df <= 60)
        return 2.000 + (2.042 - 2.000) * (60.0 - (double)df) / 30.0;
    if (df <= 120)
        return 1.980 + (2.000 - 1.980) * (120.0 - (double)df) / 60.0;
    return 1.960;
}

static int mb_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean and 95% confidence half-width of s[0..n-1]. */
static void mb_mean_ci(const double *s, long n, double *mean_p, double *ci_p)
{
    double sum = 0, sq = 0;
    for (long i = 0; i < n; i++)
        sum += s[i];
    double mean = sum / (double)n;
    for (long i = 0; i < n; i++)
        sq += (s[i] - mean) * (s[i] - mean);
    *mean_p = mean;
    *ci_p = n > 1 ? mb_t95(n - 1) * sqrt(sq / (double)(n - 1)) / sqrt((double)n) : INFINITY;
}

static void mb_stats(double *s, long n, mb_stats_t *st)
{
    qsort(s, (size_t)n, sizeof(*s), mb_cmp_double);
    st->n = n;
    st->min = s[0];
    st->max = s[n - 1];
    st->median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
    long k = (long)ceil(0.99 * (double)n) - 1; /* nearest rank */
    st->p99 = s[k < 0 ? 0 : k];
    mb_mean_ci(s, n, &st->mean, &st->ci);
}

/* One operation of size bytes per rank. */
static int mb_run_op(mb_ctx_t *c, mb_op_t op, size_t size, int root)
{
    int cnt = (int)size;
    switch (op) {
    case MB_BARRIER:
        return MPI_Barrier(c->comm);
    case MB_SCATTER:
        return MPI_Scatter(c->sbuf, cnt, MPI_BYTE, c->rbuf, cnt, MPI_BYTE, root, c->comm);
    case MB_GATHER:
        return MPI_Gather(c->sbuf, cnt, MPI_BYTE, c->rbuf, cnt, MPI_BYTE, root, c->comm);
    case MB_BCAST:
        return MPI_Bcast(c->sbuf, cnt, MPI_BYTE, root, c->comm);
    case MB_ALLGATHER:
        return MPI_Allgather(c->sbuf, cnt, MPI_BYTE, c->rbuf, cnt, MPI_BYTE, c->comm);
    case MB_SUBSET:
#ifdef HB_LIB_BENCH
        return hibar_barrier_subset(mb_h, c->half, c->n_half);
#else
        return MPI_Barrier(c->half_comm);
#endif
#if MB_HAVE_ALLTOALL
    case MB_ALLTOALL:
        return MPI_Alltoall(c->sbuf, cnt, MPI_BYTE, c->rbuf, cnt, MPI_BYTE, c->comm);
#endif
    default:
        return MPI_ERR_ARG;
    }
}

/* The byte rank r contributes at offset i (rank-dependent so misplaced blocks show). */
static unsigned char mb_pattern(int r, size_t i)
{
    return (unsigned char)(r * 31 + (int)(i % 251));
}

/* Fill the buffers before the checked warm-up iteration; what must be received is poisoned. */
static void mb_fill(mb_ctx_t *c, mb_op_t op, size_t size, int root)
{
    size_t all = size * (size_t)c->size;
    switch (op) {
    case MB_SCATTER:
        if (c->rank == root)
            for (int r = 0; r < c->size; r++)
                for (size_t i = 0; i < size; i++)
                    c->sbuf[(size_t)r * size + i] = mb_pattern(r, i);
        memset(c->rbuf, 0xee, size);
        break;
    case MB_GATHER:
    case MB_ALLGATHER:
        for (size_t i = 0; i < size; i++)
            c->sbuf[i] = mb_pattern(c->rank, i);
        memset(c->rbuf, 0xee, all);
        break;
    case MB_BCAST:
        for (size_t i = 0; i < size; i++)
            c->sbuf[i] = c->rank == root ? mb_pattern(root, i) : 0xee;
        break;
    case MB_ALLTOALL: /* block r for rank r: pattern rank·size + r */
        for (int r = 0; r < c->size; r++)
            for (size_t i = 0; i < size; i++)
                c->sbuf[(size_t)r * size + i] = mb_pattern(c->rank * c->size + r, i);
        memset(c->rbuf, 0xee, all);
        break;
    default:
        break;
    }
}

/* Check the data of the warm-up iteration; returns the number of wrong bytes here. */
static long mb_check(const mb_ctx_t *c, mb_op_t op, size_t size, int root)
{
    long bad = 0;
    if (op == MB_SCATTER) {
        for (size_t i = 0; i < size; i++)
            bad += c->rbuf[i] != mb_pattern(c->rank, i);
    } else if (op == MB_BCAST) {
        for (size_t i = 0; i < size; i++)
            bad += c->sbuf[i] != mb_pattern(root, i);
    } else if (op == MB_ALLTOALL) {
        for (int r = 0; r < c->size; r++)
            for (size_t i = 0; i < size; i++)
                bad += c->rbuf[(size_t)r * size + i] != mb_pattern(r * c->size + c->rank, i);
    } else if (op == MB_ALLGATHER || (op == MB_GATHER && c->rank == root)) {
        for (int r = 0; r < c->size; r++)
            for (size_t i = 0; i < size; i++)
                bad += c->rbuf[(size_t)r * size + i] != mb_pattern(r, i);
    }
    return bad;
}

/* Measure one (operation, size); rank 0 fills *st. Returns 0 or -1 (MPI error, bad data). */
static int mb_measure(mb_ctx_t *c, const mb_opts_t *o, mb_op_t op, size_t size, mb_stats_t *st)
{
    double *local = NULL, *maxed = NULL, *all = NULL, *prof = NULL;
    long n_all = 0, n_all_rank = 0, bad = 0, bad_sum = 0;
    int rc = -1, go = 1;
    const char *pe = getenv("HIBAR_BENCH_PROF");

    local = malloc(sizeof(double) * MB_BATCH_MAX);
    maxed = malloc(sizeof(double) * MB_BATCH_MAX);
    all = c->rank == 0 ? malloc(sizeof(double) * (size_t)o->max_iters) : NULL;
    if (pe != NULL && *pe != '\0' && *pe != '0')
        prof = malloc(sizeof(double) * 3 * MB_BATCH_MAX);
    if (!local || !maxed || (c->rank == 0 && !all)) {
        fprintf(stderr, MB_PROG ": out of memory\n");
        goto out;
    }
    for (long w = 0; w < o->warmup; w++) {
        if (w == 0)
            mb_fill(c->oc, op, size, o->root);
        if (mb_run_op(c->oc, op, size, o->root) != MPI_SUCCESS)
            goto out;
        if (w == 0)
            bad = mb_check(c->oc, op, size, o->root);
    }
    MPI_Allreduce(&bad, &bad_sum, 1, MPI_LONG, MPI_SUM, c->comm);
    if (bad_sum != 0) {
        if (c->rank == 0)
            fprintf(stderr, MB_PROG ": %s of %zu bytes delivered %ld wrong bytes\n",
                    mb_op_names[op], size, bad_sum);
        goto out;
    }
    double t_start = mb_now_us();
    long batch = o->min_iters < MB_BATCH_MAX ? o->min_iters : MB_BATCH_MAX;
    if (batch > o->max_iters)
        batch = o->max_iters;
    while (go) {
        long next[2] = {0, 0}; /* go on?, next batch: decided by rank 0 for everyone */
        for (long i = 0; i < batch; i++) {
            double tb = prof != NULL ? mb_now_us() : 0;
            MPI_Barrier(c->comm); /* isolate the repetition */
            double t0 = mb_now_us();
            if (mb_run_op(c->oc, op, size, o->root) != MPI_SUCCESS)
                goto out;
            local[i] = mb_now_us() - t0;
            if (prof != NULL) {
                prof[3 * i] = tb;
                prof[3 * i + 1] = t0;
                prof[3 * i + 2] = t0 + local[i];
            }
        }
        /* HIBAR_BENCH_PROF: every repetition's times (CLOCK_MONOTONIC, us), for
         * scripts/coll-steps.py: "tbench RANK OP SIZE IT BARRIER_CALL OP_CALL OP_RETURN" */
        for (long i = 0; prof != NULL && i < batch; i++)
            fprintf(stderr, "tbench %d %s %zu %ld %.3f %.3f %.3f\n", c->rank, mb_op_names[op], size,
                    n_all_rank + i, prof[3 * i], prof[3 * i + 1], prof[3 * i + 2]);
        n_all_rank += batch;
        MPI_Reduce(local, maxed, (int)batch, MPI_DOUBLE, MPI_MAX, 0, c->comm);
        if (c->rank == 0) {
            double mean, ci, spent;
            memcpy(all + n_all, maxed, sizeof(double) * (size_t)batch);
            n_all += batch;
            mb_mean_ci(all, n_all, &mean, &ci);
            spent = mb_now_us() - t_start;
            next[0] = n_all < o->max_iters && ci > o->err * mean && spent < o->max_secs * 1e6;
            /* Later batches are sized from the time so far: about 0.2 s each. */
            double per = spent / (double)n_all;
            next[1] = per > 0 ? (long)(2e5 / per) : MB_BATCH_MAX;
            next[1] = next[1] < 1 ? 1 : next[1] > MB_BATCH_MAX ? MB_BATCH_MAX : next[1];
            if (next[1] > o->max_iters - n_all)
                next[1] = o->max_iters - n_all;
        }
        MPI_Bcast(next, 2, MPI_LONG, 0, c->comm);
        go = next[0] != 0 && next[1] > 0;
        batch = next[1];
    }
    if (c->rank == 0)
        mb_stats(all, n_all, st);
    rc = 0;
out:
    free(local);
    free(maxed);
    free(all);
    free(prof);
    return rc;
}

#ifndef HB_LIB_BENCH
/* ---- the same measurement through hibar's core (common/hb_meas.h) with MPI callbacks ---- */

typedef struct mb_meas {
    mb_ctx_t *c; /* c->comm: rotated so that the operation's root is rank 0 */
    mb_op_t op;
    size_t size;
} mb_meas_t;

static double mb_m_now(void *arg)
{
    (void)arg;
    return mb_now_us();
}
static int mb_m_barrier(void *arg)
{
    return MPI_Barrier(((mb_meas_t *)arg)->c->comm) == MPI_SUCCESS ? 0 : -6;
}
static int mb_m_run(void *arg, double *self)
{
    mb_meas_t *m = arg;
    (void)self;
    return mb_run_op(m->c, m->op, m->size, 0) == MPI_SUCCESS ? 0 : -6;
}
static int mb_m_pingpong(void *arg, uint32_t peer, double *t_remote)
{
    mb_meas_t *m = arg;
    double t = 0.0;
    if (m->c->rank == 0) {
        if (MPI_Send(NULL, 0, MPI_BYTE, (int)peer, 77, m->c->comm) != MPI_SUCCESS ||
            MPI_Recv(t_remote, 1, MPI_DOUBLE, (int)peer, 78, m->c->comm, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS)
            return -6;
        return 0;
    }
    if (MPI_Recv(NULL, 0, MPI_BYTE, 0, 77, m->c->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return -6;
    t = mb_now_us();
    return MPI_Send(&t, 1, MPI_DOUBLE, 0, 78, m->c->comm) == MPI_SUCCESS ? 0 : -6;
}
static int mb_m_gather(void *arg, const double *in, size_t n, double *out)
{
    return MPI_Gather(in, (int)n, MPI_DOUBLE, out, (int)n, MPI_DOUBLE, 0,
                      ((mb_meas_t *)arg)->c->comm) == MPI_SUCCESS
               ? 0
               : -6;
}
static int mb_m_bcast(void *arg, double *v, size_t n)
{
    return MPI_Bcast(v, (int)n, MPI_DOUBLE, 0, ((mb_meas_t *)arg)->c->comm) == MPI_SUCCESS ? 0 : -6;
}

/* Measure one (operation, size) with hb_meas_run; rank 0 fills *st and *cost_us. */
static int mb_measure_core(mb_ctx_t *c, const mb_opts_t *o, mb_op_t op, size_t size, mb_stats_t *st,
                           double *cost_us)
{
    mb_meas_t m = {.c = c, .op = op, .size = size};
    hb_meas_opts_t mo;
    hb_meas_result_t r;
    hb_meas_comm_t mc = {.arg = &m,
                         .rank = (uint32_t)c->rank,
                         .size = (uint32_t)c->size,
                         .now = mb_m_now,
                         .barrier = mb_m_barrier,
                         .run = mb_m_run,
                         .pingpong = mb_m_pingpong,
                         .gather = mb_m_gather,
                         .bcast = mb_m_bcast,
                         /* the root finishes last only in a gather */
                         .confirm = op == MB_GATHER ? NULL : mb_m_barrier};
    for (long w = 0; w < o->warmup; w++)
        if (mb_run_op(c, op, size, 0) != MPI_SUCCESS)
            return -1;
    hb_meas_opts_default(&mo);
    mo.min_reps = o->min_iters < 2 ? 2 : (uint32_t)o->min_iters;
    mo.max_reps = o->max_iters < (long)mo.min_reps ? mo.min_reps : (uint32_t)o->max_iters;
    mo.rel_err = o->err;
    if (hb_meas_run(&mc, (hb_meas_method_t)o->method, &mo, &r) != 0)
        return -1;
    if (c->rank == 0) {
        st->n = (long)r.reps;
        st->median = r.st.median;
        st->min = r.st.min;
        st->max = r.st.max;
        st->p99 = r.st.p99;
        st->mean = r.st.mean;
        st->ci = r.st.ci;
        *cost_us = r.cost_us;
    }
    return 0;
}

#endif /* HB_LIB_BENCH */
#ifndef HB_LIB_BENCH
/* Distinct hosts of the communicator (ranks sharing memory count once). */
static int mb_count_nodes(MPI_Comm comm)
{
    MPI_Comm local;
    int lrank = 0, first, nodes = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) != MPI_SUCCESS)
        return 0;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    first = lrank == 0;
    MPI_Allreduce(&first, &nodes, 1, MPI_INT, MPI_SUM, comm);
    return nodes;
}
#endif

int main(int argc, char **argv)
{
    mb_opts_t o;
    mb_ctx_t c = {.comm = MPI_COMM_WORLD};
    size_t max_size = 0;
    int rc = 1, usage_bad;

    memset(&o, 0, sizeof(o));
    /* before MPI_Init: answered without a launcher or a daemon */
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        mb_usage(stdout);
        return HB_EXIT_OK;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0))
        return hb_cli_version(MB_PROG);
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, MB_PROG ": MPI_Init failed\n");
        return 1;
    }
    MPI_Comm_rank(c.comm, &c.rank);
    MPI_Comm_size(c.comm, &c.size);
    usage_bad = mb_parse_args(argc, argv, &o) != 0;
    /* --coll-subset: the root is a member index of every subset (the smallest has c.size / 2
     * or the block's ranks); the measurement core's methods time the world's operations */
    if (!usage_bad)
        usage_bad = o.root >= (!o.coll_subset    ? c.size
                               : o.sub_block > 0 ? o.sub_block
                                                 : c.size / 2) ||
                    (o.coll_subset && o.method >= 0);
    if (usage_bad) {
        if (c.rank == 0)
            mb_usage(stderr);
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(c.comm, MPI_ERRORS_RETURN);
    c.nodes = mb_count_nodes(c.comm);
    for (int i = 0; i < o.n_sizes; i++)
        max_size = o.sizes[i] > max_size ? o.sizes[i] : max_size;
    /* Scatter's send and gather's receive buffers hold one block per rank. */
    c.sbuf = malloc(max_size * (size_t)c.size + 1);
    c.rbuf = malloc(max_size * (size_t)c.size + 1);
    /* the subset: this rank's parity class, or with --subset-block K its block of K ranks
     * (with ranks placed by block, one node's) */
    int blk = o.sub_block, first = blk > 0 ? c.rank / blk * blk : c.rank % 2;
    int step = blk > 0 ? 1 : 2, end = blk > 0 && first + blk < c.size ? first + blk : c.size;
    c.n_half = (end - first + step - 1) / step;
    c.half = malloc(sizeof(int) * (size_t)c.n_half);
    for (int r = first, i = 0; c.half != NULL && r < end; r += step)
        c.half[i++] = r;
#ifndef HB_LIB_BENCH
    MPI_Comm_split(c.comm, first, c.rank, &c.half_comm);
#endif
    mb_ctx_t sub = c;
    c.oc = &c;
    if (o.coll_subset && c.half != NULL) {
#ifdef HB_LIB_BENCH
        mb_sub = c.half;
        mb_n_sub = c.n_half;
        sub.comm = MB_COMM_SUB;
#else
        sub.comm = c.half_comm;
#endif
        sub.size = c.n_half;
        for (int i = 0; i < c.n_half; i++)
            if (c.half[i] == c.rank)
                sub.rank = i;
        c.oc = &sub;
    }
    if (!c.sbuf || !c.rbuf || !c.half) {
        fprintf(stderr, MB_PROG ": cannot allocate 2 x %zu bytes\n", max_size * (size_t)c.size);
        MPI_Abort(c.comm, 1);
    }
    for (int op = 0; op < MB_N_OPS; op++) {
        if (!o.ops[op])
            continue;
        if (o.osu && c.rank == 0) {
            char who[160];
            snprintf(who, sizeof(who), MB_PROG " %s, impl " MB_IMPL ", %d ranks on %d nodes",
                     PACKAGE_VERSION, c.size, c.nodes);
            hb_osu_header(stdout, mb_op_names[op], who);
        }
        int no_data = op == MB_BARRIER || op == MB_SUBSET;
        for (int s = 0; s < (no_data ? 1 : o.n_sizes); s++) {
            size_t size = no_data ? 0 : o.sizes[s];
            mb_stats_t st;
            double cost_us = 0.0;
            int mrc;
#ifndef HB_LIB_BENCH
            if (o.method >= 0) {
                /* the operation's root becomes rank 0 of a rotated communicator */
                mb_ctx_t rc2 = c;
                MPI_Comm_split(c.comm, 0, (c.rank - o.root + c.size) % c.size, &rc2.comm);
                MPI_Comm_set_errhandler(rc2.comm, MPI_ERRORS_RETURN);
                MPI_Comm_rank(rc2.comm, &rc2.rank);
                mrc = mb_measure_core(&rc2, &o, (mb_op_t)op, size, &st, &cost_us);
                if (rc2.rank == 0 && c.rank != 0) {
                    /* rank 0 of the world prints: send it the row */
                    double v[8] = {(double)st.n, st.median, st.min,  st.max,
                                   st.p99,       st.ci,     st.mean, cost_us};
                    MPI_Send(v, 8, MPI_DOUBLE, 0, 79, c.comm);
                } else if (rc2.rank != 0 && c.rank == 0) {
                    double v[8];
                    MPI_Recv(v, 8, MPI_DOUBLE, MPI_ANY_SOURCE, 79, c.comm, MPI_STATUS_IGNORE);
                    st = (mb_stats_t){.n = (long)v[0],
                                      .median = v[1],
                                      .min = v[2],
                                      .max = v[3],
                                      .p99 = v[4],
                                      .ci = v[5],
                                      .mean = v[6]};
                    cost_us = v[7];
                }
                MPI_Comm_free(&rc2.comm);
            } else
#endif
            {
                mrc = mb_measure(&c, &o, (mb_op_t)op, size, &st);
            }
            if (mrc != 0) {
                if (c.rank == 0)
                    fprintf(stderr, MB_PROG ": %s size %zu failed\n", mb_op_names[op], size);
                MPI_Abort(c.comm, 1);
            }
            if (c.rank != 0)
                continue;
            if (o.osu)
                hb_osu_row(stdout, mb_op_names[op], size, st.mean, st.min, st.max, (uint64_t)st.n);
            else
                printf("{\"bench\": \"%s\", \"impl\": \"" MB_IMPL
                       "\", \"nodes\": %d, \"ranks\": %d, "
                       "\"size\": %zu, \"iters\": %ld, \"median_us\": %.3f, \"min_us\": %.3f, "
                       "\"max_us\": %.3f, \"p99_us\": %.3f, \"ci_us\": %.3f, \"mean_us\": %.3f, "
                       "\"method\": \"%s\", \"core\": %d, \"cost_us\": %.1f}\n",
                       mb_op_names[op], c.nodes, c.size, size, st.n, st.median, st.min, st.max,
                       st.p99, st.ci, st.mean,
                       o.method >= 0 ? hb_meas_method_name((hb_meas_method_t)o.method) : "maximum",
                       o.method >= 0, cost_us);
            fflush(stdout);
        }
    }
    rc = 0;
#ifndef HB_LIB_BENCH
    MPI_Comm_free(&c.half_comm);
#endif
    free(c.half);
    free(c.sbuf);
    free(c.rbuf);
    MPI_Finalize();
    return rc;
}
