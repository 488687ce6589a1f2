/* bench_methods.c: hibar-bench methods: cost and agreement of MPIBlib's timing methods. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include "client.h"
#include "hb_log.h"
#include "hb_meas.h"
#include "hb_stats.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hibar.h"
#include "seg.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * As MPIBlib's table: a sweep of message sizes (default 0..100 KiB by 1 KiB) of scatter and
 * gather, each size measured with every timing method of common/hb_meas (global, maximum,
 * root), the methods interleaved per size so machine load hits them alike. Per method: the
 * wall time the sweep cost (what a run-time selector pays), repetitions, and the agreement
 * of its mean with global's per size. The ranks are libhibar ranks on this node (forked,
 * joined through a segment this process creates, as bench_client.c does); the core's
 * callbacks are the library's own barrier, gather and bcast, and a shared-memory mailbox for
 * the ping-pongs of the global method. A multi-node client path plugs in by giving other
 * callbacks (bm_comm) to the same core.
 */

#define BM_MAX_RANKS 64
#define BM_MAX_SIZES 1024
#define BM_OPS 2

static const char *const bm_op_names[BM_OPS] = {"scatter", "gather"};

typedef struct bm_opts {
    uint32_t n;
    int ops[BM_OPS];
    int methods[HB_MEAS_NMETHODS];
    size_t sizes[BM_MAX_SIZES];
    int nsizes;
    uint32_t warmup;
    hb_meas_opts_t meas;
    const char *plot;
} bm_opts_t;

/* One rank's mailbox for the ping-pongs (in memory shared by the forked ranks). */
typedef struct bm_mail {
    _Atomic uint32_t ping, pong;
    double t;
    hb_wait_word_t w_ping, w_pong;
} bm_mail_t;

typedef struct bm_res {
    hb_meas_result_t r;
    int done;
} bm_res_t;

typedef struct bm_shared {
    int status[BM_MAX_RANKS];
    bm_mail_t mail[BM_MAX_RANKS];
    int cma;
    bm_res_t res[]; /* [BM_OPS][nsizes][HB_MEAS_NMETHODS] */
} bm_shared_t;

#define BM_RES(sh, o, op, s, m)                                                                    \
    (&(sh)->res[((size_t)(op) * (size_t)(o)->nsizes + (size_t)(s)) * HB_MEAS_NMETHODS +            \
                (size_t)(m)])

/* What the callbacks of one rank need. */
typedef struct bm_comm {
    hibar_t *h;
    bm_shared_t *sh;
    uint32_t rank, n;
    int op;
    size_t size;
    char *sbuf, *rbuf;
    double *gbuf; /* root: gather of doubles */
    uint32_t last_ping;
} bm_comm_t;

static int bm_barrier(void *arg)
{
    return hibar_barrier(((bm_comm_t *)arg)->h);
}

static int bm_run(void *arg, double *self)
{
    bm_comm_t *c = arg;
    (void)self;
    if (c->op == 0)
        return hibar_scatter(c->h, c->sbuf, c->rbuf, c->size, 0);
    return hibar_gather(c->h, c->rbuf, c->sbuf, c->size, 0);
}

static int bm_gather(void *arg, const double *in, size_t n, double *out)
{
    bm_comm_t *c = arg;
    return hibar_gather(c->h, in, c->rank == 0 ? out : NULL, n * sizeof(double), 0);
}

static int bm_bcast(void *arg, double *v, size_t n)
{
    return hibar_bcast(((bm_comm_t *)arg)->h, v, n * sizeof(double), 0);
}

typedef struct bm_poll {
    _Atomic uint32_t *word;
    uint32_t want;
} bm_poll_t;

static int bm_poll_fn(void *arg, int slow)
{
    bm_poll_t *p = arg;
    (void)slow;
    return atomic_load_explicit(p->word, memory_order_acquire) == p->want ? 0
                                                                          : HIBAR_ERR_WOULD_BLOCK;
}

/* Ping-pong through the mailbox of `peer`: the waiting rule of hb_wait (spin, yield, sleep). */
static int bm_pingpong(void *arg, uint32_t peer, double *t_remote)
{
    bm_comm_t *c = arg;
    bm_mail_t *m = &c->sh->mail[peer];
    uint64_t deadline = hb_time_now_ns() + 60ull * 1000000000ull;
    bm_poll_t p;
    int rc;
    if (c->rank == 0) {
        uint32_t seq = atomic_load(&m->ping) + 1;
        atomic_store_explicit(&m->ping, seq, memory_order_release);
        hb_wait_word_wake(&m->w_ping);
        p = (bm_poll_t){.word = &m->pong, .want = seq};
        rc = hb_wait_until(&m->w_pong, bm_poll_fn, &p, hb_wait_policy_default(), deadline);
        if (rc == 0)
            *t_remote = m->t;
        return rc;
    }
    p = (bm_poll_t){.word = &m->ping, .want = c->last_ping + 1};
    rc = hb_wait_until(&m->w_ping, bm_poll_fn, &p, hb_wait_policy_default(), deadline);
    if (rc != 0)
        return rc;
    m->t = hb_time_now_us();
    c->last_ping++;
    atomic_store_explicit(&m->pong, c->last_ping, memory_order_release);
    hb_wait_word_wake(&m->w_pong);
    return 0;
}

/* One rank: every (op, size, method) of the sweep. */
static int bm_rank(int seg_fd, uint32_t me, const bm_opts_t *o, bm_shared_t *sh)
{
    size_t maxsz = 0;
    bm_comm_t c = {.sh = sh, .rank = me, .n = o->n};
    hb_meas_comm_t mc = {.arg = &c,
                         .rank = me,
                         .size = o->n,
                         .barrier = bm_barrier,
                         .run = bm_run,
                         .pingpong = bm_pingpong,
                         .gather = bm_gather,
                         .bcast = bm_bcast};
    int rc, tty = me == 0 && isatty(STDERR_FILENO);
    int total = 0, step = 0;
    {
        cpu_set_t set;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        CPU_ZERO(&set);
        CPU_SET((int)(me % (uint32_t)(ncpu > 0 ? ncpu : 1)), &set);
        (void)sched_setaffinity(0, sizeof(set), &set);
    }
    for (int s = 0; s < o->nsizes; s++)
        maxsz = o->sizes[s] > maxsz ? o->sizes[s] : maxsz;
    c.sbuf = malloc(maxsz * o->n + 1);
    c.rbuf = malloc(maxsz + 1);
    c.gbuf = malloc(2 * sizeof(double) * o->n);
    if (c.sbuf == NULL || c.rbuf == NULL || c.gbuf == NULL) {
        rc = HIBAR_ERR_NOMEM;
        goto out;
    }
    memset(c.sbuf, 0x5a, maxsz * o->n + 1);
    memset(c.rbuf, 0x5a, maxsz + 1);
    rc = hb_client_attach(seg_fd, -1, me, &c.h);
    if (rc != 0)
        goto out;
    if (me == 0)
        sh->cma = hb_client_cma(c.h);
    for (int op = 0; op < BM_OPS; op++)
        total += o->ops[op] ? o->nsizes : 0;
    for (int op = 0; op < BM_OPS && rc == 0; op++) {
        if (!o->ops[op])
            continue;
        c.op = op;
        /* root method: every libhibar collective ends in a barrier (libclient/ncoll.c, step
         * 5), which the root can leave before the others, gather included: it needs their
         * word for both operations (without it the gather's root read 13-19 % low at 4 ranks
         * over 2 cores) */
        mc.confirm = bm_barrier;
        for (int s = 0; s < o->nsizes && rc == 0; s++) {
            c.size = o->sizes[s];
            for (uint32_t w = 0; w < o->warmup && rc == 0; w++)
                rc = bm_run(&c, NULL);
            for (int m = 0; m < HB_MEAS_NMETHODS && rc == 0; m++) {
                hb_meas_result_t r;
                if (!o->methods[m])
                    continue;
                rc = hb_meas_run(&mc, (hb_meas_method_t)m, &o->meas, &r);
                if (rc == 0 && me == 0) {
                    BM_RES(sh, o, op, s, m)->r = r;
                    BM_RES(sh, o, op, s, m)->done = 1;
                }
            }
            step++;
            if (tty)
                fprintf(stderr, "\r  %s %zu B: %d/%d sizes", bm_op_names[op], c.size, step, total);
        }
    }
    if (tty)
        fputc('\n', stderr);
    {
        int frc = hibar_finalize(&c.h);
        if (rc == 0)
            rc = frc;
    }
out:
    free(c.sbuf);
    free(c.rbuf);
    free(c.gbuf);
    return rc;
}

typedef struct bm_rank_arg {
    int seg_fd;
    const bm_opts_t *o;
    bm_shared_t *sh;
} bm_rank_arg_t;

static int bm_rank_run(uint32_t me, void *arg)
{
    const bm_rank_arg_t *a = arg;
    return bm_rank(a->seg_fd, me, a->o, a->sh);
}

static int bm_fork(const bm_opts_t *o, bm_shared_t *sh)
{
    hb_seg_t seg;
    int rc = hb_seg_create(o->n, HB_SEG_DEFAULT_DEPTH, HB_SEG_DEFAULT_BUF, (uint64_t)getpid(), 0, 1,
                           0, &seg);
    if (rc != 0) {
        fprintf(stderr, "hibar-bench methods: segment: %s\n", hibar_strerror(rc));
        return -1;
    }
    bm_rank_arg_t ra = {.seg_fd = seg.fd, .o = o, .sh = sh};
    rc = hb_bench_fork_ranks("hibar-bench methods", o->n, bm_rank_run, &ra, sh->status);
    hb_seg_unmap(&seg);
    return rc;
}

static void bm_usage(FILE *f)
{
    fprintf(
        f,
        "usage: hibar-bench methods [--ranks N] [--ops scatter,gather] [--sizes SPEC]\n"
        "          [--methods global,maximum,root] [--min-reps N] [--max-reps N] [--err E]\n"
        "          [--warmup W] [--sync-pings N] [--resync N] [--plot DIR] " HB_BENCH_COMMON_USAGE
        "\n"
        "  --ranks N       libhibar ranks on this node (2..%d), default 4\n"
        "  --sizes SPEC    bytes per rank: FROM..TO:STEP (default 0..100K:1K) or a list\n"
        "  --min-reps N    --max-reps N   repetitions per size and method (default 5, 200)\n"
        "  --err E         stop when the CI is within E of the mean (default 0.025)\n"
        "  --sync-pings N  global: ping-pongs per rank per synchronisation (default 20)\n"
        "  --resync N      global: re-synchronise every N repetitions (default 0: per size)\n"
        "  --plot DIR      gnuplot scripts and PNGs: latency per method, cost per method\n",
        BM_MAX_RANKS);
}

static int bm_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *v)
{
    char *end;
    unsigned long x;
    errno = 0;
    x = strtoul(s, &end, 10);
    if (errno || *end || end == s || x < lo || x > hi)
        return -1;
    *v = (uint32_t)x;
    return 0;
}

static int bm_list(const char *arg, const char *const *names, int n, int *on)
{
    char *l = strdup(arg), *save = NULL, *t;
    int any = 0;
    if (l == NULL)
        return -1;
    memset(on, 0, sizeof(int) * (size_t)n);
    for (t = strtok_r(l, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k;
        for (k = 0; k < n && strcmp(t, names[k]) != 0; k++)
            ;
        if (k == n) {
            fprintf(stderr, "hibar-bench methods: unknown '%s'\n", t);
            free(l);
            return -1;
        }
        on[k] = any = 1;
    }
    free(l);
    return any ? 0 : -1;
}

static int bm_parse(int argc, char **argv, bm_opts_t *o)
{
    static const struct option lo[] = {
        {"ranks", required_argument, NULL, 'n'},
        {"ops", required_argument, NULL, 'o'},
        {"sizes", required_argument, NULL, 's'},
        {"methods", required_argument, NULL, 'm'},
        {"min-reps", required_argument, NULL, 'a'},
        {"max-reps", required_argument, NULL, 'b'},
        {"err", required_argument, NULL, 'e'},
        {"warmup", required_argument, NULL, 'w'},
        {"sync-pings", required_argument, NULL, 'p'},
        {"resync", required_argument, NULL, 'r'},
        {"plot", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *names[HB_MEAS_NMETHODS];
    int c;
    char *end;
    for (int m = 0; m < HB_MEAS_NMETHODS; m++)
        names[m] = hb_meas_method_name((hb_meas_method_t)m), o->methods[m] = 1;
    o->n = 4;
    o->ops[0] = o->ops[1] = 1;
    o->warmup = 3;
    hb_meas_opts_default(&o->meas);
    if (hb_bench_sizes_parse("0..100K:1K", o->sizes, BM_MAX_SIZES, &o->nsizes) != 0)
        return -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:h", lo, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'n':
            bad = bm_u32(optarg, 2, BM_MAX_RANKS, &o->n);
            break;
        case 'o':
            bad = bm_list(optarg, bm_op_names, BM_OPS, o->ops);
            break;
        case 'm':
            bad = bm_list(optarg, names, HB_MEAS_NMETHODS, o->methods);
            break;
        case 's':
            bad = hb_bench_sizes_parse(optarg, o->sizes, BM_MAX_SIZES, &o->nsizes);
            break;
        case 'a':
            bad = bm_u32(optarg, 2, 1000000, &o->meas.min_reps);
            break;
        case 'b':
            bad = bm_u32(optarg, 2, 1000000, &o->meas.max_reps);
            break;
        case 'w':
            bad = bm_u32(optarg, 0, 1000000, &o->warmup);
            break;
        case 'p':
            bad = bm_u32(optarg, 1, 100000, &o->meas.sync_pings);
            break;
        case 'r':
            bad = bm_u32(optarg, 0, 1000000, &o->meas.resync_reps);
            break;
        case 'e':
            o->meas.rel_err = strtod(optarg, &end);
            bad = *end != '\0' || !(o->meas.rel_err > 0.0 && o->meas.rel_err < 1.0);
            break;
        case 'P':
            o->plot = optarg;
            break;
        case 'h':
            bm_usage(stdout);
            exit(0);
        default:
            bm_usage(stderr);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "hibar-bench methods: bad value '%s'\n", optarg);
            return -1;
        }
    }
    if (optind < argc || o->meas.max_reps < o->meas.min_reps) {
        fprintf(stderr, "hibar-bench methods: bad arguments (see --help)\n");
        return -1;
    }
    return 0;
}

/* Per-method summary of one op: cost, repetitions, agreement with global. */
typedef struct bm_sum {
    double cost_us, overhead_us, mean_diff, max_diff; /* |median - global's median| / global's */
    double mean_diff_mean;                            /* the same on the means */
    uint64_t reps;
    int within, within_mean, compared, converged, n;
    double *cost; /* per size */
} bm_sum_t;

static void bm_plot(const bm_opts_t *o, bm_shared_t *sh,
                    const bm_sum_t sum[BM_OPS][HB_MEAS_NMETHODS])
{
    for (int op = 0; op < BM_OPS; op++) {
        char name[64], title[160];
        hb_bench_series_t ser[HB_MEAS_NMETHODS];
        int ns = 0;
        if (!o->ops[op])
            continue;
        snprintf(name, sizeof(name), "methods-%s", bm_op_names[op]);
        snprintf(title, sizeof(title), "hibar %s, %u ranks on one node: timing methods",
                 bm_op_names[op], (unsigned)o->n);
        for (int m = 0; m < HB_MEAS_NMETHODS; m++)
            if (o->methods[m]) {
                static char lab[HB_MEAS_NMETHODS][96];
                snprintf(lab[m], sizeof(lab[m]), "%s (sweep cost %.2f s)",
                         hb_meas_method_name((hb_meas_method_t)m), sum[op][m].cost_us / 1e6);
                ser[ns].title = lab[m];
                ser[ns].x = malloc(sizeof(double) * (size_t)o->nsizes);
                ser[ns].y = malloc(sizeof(double) * (size_t)o->nsizes);
                ser[ns].n = 0;
                if (ser[ns].x == NULL || ser[ns].y == NULL)
                    continue;
                for (int s = 0; s < o->nsizes; s++) {
                    bm_res_t *r = BM_RES(sh, o, op, s, m);
                    if (!r->done)
                        continue;
                    ser[ns].x[ser[ns].n] = (double)o->sizes[s];
                    ser[ns].y[ser[ns].n++] = r->r.st.median;
                }
                ns++;
            }
        hb_bench_plot(o->plot, name, title, "bytes per rank", "median latency (us)", ser, ns, 0);
        for (int i = 0; i < ns; i++) {
            free(ser[i].x);
            free(ser[i].y);
        }
    }
}

int hb_bench_methods_main(int argc, char **argv)
{
    hb_bench_common_t com;
    hb_bench_out_t out;
    bm_opts_t *o = calloc(1, sizeof(*o));
    bm_shared_t *sh = MAP_FAILED;
    size_t shlen = 0;
    bm_sum_t sum[BM_OPS][HB_MEAS_NMETHODS];
    int rc = 1;
    double wall;

    memset(sum, 0, sizeof(sum));
    if (o == NULL)
        return 1;
    if (hb_bench_common_parse(&argc, argv, &com) < 0 || bm_parse(argc, argv, o) < 0) {
        free(o);
        return 2;
    }
    o->meas.confidence = com.confidence;
    shlen = sizeof(*sh) + sizeof(bm_res_t) * BM_OPS * (size_t)o->nsizes * HB_MEAS_NMETHODS;
    sh = mmap(NULL, shlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "hibar-bench methods: out of memory\n");
        free(o);
        return 1;
    }
    for (uint32_t i = 0; i < o->n; i++) {
        hb_wait_word_init(&sh->mail[i].w_ping);
        hb_wait_word_init(&sh->mail[i].w_pong);
    }
    if (hb_bench_out_open(&out, "methods", &com) != 0)
        goto out;
    wall = hb_time_now_us();
    if (bm_fork(o, sh) != 0)
        goto out_close;
    wall = hb_time_now_us() - wall;
    hb_bench_out_note(&out,
                      "hibar-bench methods: one node, %u libhibar ranks, %ld cores online, %d "
                      "sizes %zu..%zu B; reps %u..%u until the %.0f%% CI is within %.1f%% of the "
                      "mean; global: %u ping-pongs per rank, resync %s",
                      (unsigned)o->n, sysconf(_SC_NPROCESSORS_ONLN), o->nsizes, o->sizes[0],
                      o->sizes[o->nsizes - 1], (unsigned)o->meas.min_reps,
                      (unsigned)o->meas.max_reps, 100 * com.confidence, 100 * o->meas.rel_err,
                      (unsigned)o->meas.sync_pings, o->meas.resync_reps ? "periodic" : "per size");
    for (int op = 0; op < BM_OPS; op++) {
        if (!o->ops[op])
            continue;
        out.bench = bm_op_names[op];
        for (int m = 0; m < HB_MEAS_NMETHODS; m++)
            if (o->methods[m])
                sum[op][m].cost = calloc((size_t)o->nsizes, sizeof(double));
        for (int s = 0; s < o->nsizes; s++) {
            bm_res_t *g = BM_RES(sh, o, op, s, HB_MEAS_GLOBAL);
            for (int m = 0; m < HB_MEAS_NMETHODS; m++) {
                bm_res_t *r = BM_RES(sh, o, op, s, m);
                bm_sum_t *u = &sum[op][m];
                char extra[320];
                double diff = -1.0;
                if (!o->methods[m] || !r->done)
                    continue;
                if (g->done && g->r.st.median > 0 && g->r.st.mean > 0) {
                    double dm = (r->r.st.mean - g->r.st.mean) / g->r.st.mean;
                    diff = (r->r.st.median - g->r.st.median) / g->r.st.median;
                    u->mean_diff += fabs(diff);
                    u->max_diff = fmax(u->max_diff, fabs(diff));
                    u->within += fabs(diff) <= 0.10;
                    u->mean_diff_mean += fabs(dm);
                    u->within_mean += fabs(dm) <= 0.10;
                    u->compared++;
                }
                u->cost_us += r->r.cost_us;
                u->overhead_us += r->r.overhead_us;
                u->reps += r->r.reps;
                u->converged += r->r.converged;
                if (u->cost != NULL)
                    u->cost[u->n] = r->r.cost_us;
                u->n++;
                snprintf(extra, sizeof(extra),
                         "\"method\": \"%s\", \"mean_us\": %.3f, \"cost_us\": %.1f, "
                         "\"overhead_us\": %.1f, \"converged\": %d, \"vs_global\": %.4f%s",
                         hb_meas_method_name((hb_meas_method_t)m), r->r.st.mean, r->r.cost_us,
                         r->r.overhead_us, r->r.converged, diff, "");
                if (m == HB_MEAS_GLOBAL)
                    snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                             ", \"max_offset_us\": %.3f", r->r.max_offset_us);
                if (m == HB_MEAS_ROOT)
                    snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                             ", \"confirm_us\": %.3f", r->r.confirm_us);
                hb_bench_row_t row = {.impl = "hibar",
                                      .nodes = 1,
                                      .ranks = o->n,
                                      .size = o->sizes[s],
                                      .reps = r->r.reps,
                                      .iters = r->r.reps,
                                      .st = &r->r.st,
                                      .extra_json = extra};
                if (!com.json && !com.osu)
                    printf("# %s %s\n", bm_op_names[op], hb_meas_method_name((hb_meas_method_t)m));
                hb_bench_out_row(&out, &row);
            }
        }
    }
    /* the summary: MPIBlib's table */
    out.bench = "method-cost";
    hb_bench_out_note(&out, "agreement with global per size: |median - global median| / global "
                            "median (and the same on the means)");
    hb_bench_out_note(&out, "%-8s %-8s %9s %8s %12s %7s %9s %9s %9s %7s %9s %7s", "op", "method",
                      "cost(s)", "/global", "sync/conf(s)", "reps", "converged", "med|d|%",
                      "max|d|%", "<=10%", "mean|d|%", "<=10%");
    for (int op = 0; op < BM_OPS; op++)
        for (int m = 0; m < HB_MEAS_NMETHODS; m++) {
            bm_sum_t *u = &sum[op][m];
            hb_stats_t cst;
            char extra[320];
            if (!o->ops[op] || !o->methods[m] || u->n == 0)
                continue;
            double cg = sum[op][HB_MEAS_GLOBAL].cost_us;
            hb_bench_out_note(&out,
                              "%-8s %-8s %9.3f %8.2f %12.3f %7llu %5d/%-3d %9.2f %9.2f %5d/%-3d "
                              "%7.2f %5d/%-3d",
                              bm_op_names[op], hb_meas_method_name((hb_meas_method_t)m),
                              u->cost_us / 1e6, cg > 0 ? u->cost_us / cg : 0.0,
                              u->overhead_us / 1e6, (unsigned long long)u->reps, u->converged, u->n,
                              u->compared ? 100 * u->mean_diff / u->compared : 0, 100 * u->max_diff,
                              u->within, u->compared,
                              u->compared ? 100 * u->mean_diff_mean / u->compared : 0,
                              u->within_mean, u->compared);
            if (u->cost == NULL ||
                hb_stats_summarize(u->cost, (size_t)u->n, com.confidence, &cst) != 0)
                continue;
            snprintf(
                extra, sizeof(extra),
                "\"op\": \"%s\", \"method\": \"%s\", \"sizes\": %d, \"cost_s\": %.4f, "
                "\"overhead_s\": %.4f, \"converged\": %d, \"mean_abs_diff\": %.4f, "
                "\"max_abs_diff\": %.4f, \"within_10pct\": %d, \"compared\": %d, "
                "\"mean_abs_diff_means\": %.4f, \"within_10pct_means\": %d, "
                "\"cost_vs_global\": %.4f",
                bm_op_names[op], hb_meas_method_name((hb_meas_method_t)m), u->n, u->cost_us / 1e6,
                u->overhead_us / 1e6, u->converged, u->compared ? u->mean_diff / u->compared : 0.0,
                u->max_diff, u->within, u->compared,
                u->compared ? u->mean_diff_mean / u->compared : 0.0, u->within_mean,
                sum[op][HB_MEAS_GLOBAL].cost_us > 0 ? u->cost_us / sum[op][HB_MEAS_GLOBAL].cost_us
                                                    : 0.0);
            /* latency keys of this row: the cost of one size's measurement, µs */
            hb_bench_row_t row = {.impl = "hibar",
                                  .nodes = 1,
                                  .ranks = o->n,
                                  .size = o->sizes[o->nsizes - 1],
                                  .reps = u->reps,
                                  .iters = (uint64_t)u->n,
                                  .st = &cst,
                                  .extra_json = extra};
            if (com.json)
                hb_bench_out_row(&out, &row);
        }
    hb_bench_out_note(&out, "wall time of the whole run %.2f s (cma %d)", wall / 1e6, sh->cma);
    if (o->plot != NULL)
        bm_plot(o, sh, (const bm_sum_t(*)[HB_MEAS_NMETHODS])sum);
    rc = 0;
out_close:
    hb_bench_out_close(&out);
out:
    for (int op = 0; op < BM_OPS; op++)
        for (int m = 0; m < HB_MEAS_NMETHODS; m++)
            free(sum[op][m].cost);
    munmap(sh, shlen);
    free(o);
    return rc;
}
