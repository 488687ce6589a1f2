/* test_meas.c: tests of common/hb_meas (MPIBlib timing methods, adaptive repetitions), the
 * Student-t quantiles of common/hb_stats and the resident size of common/hb_proc. */
#include "hb_config.h"
#include "hb_meas.h"
#include "hb_params.h"
#include "hb_proc.h"
#include "hb_stats.h"
#include "hb_status.h"
#include "hb_test.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NEAR(a, b, eps) CU_ASSERT(fabs((a) - (b)) <= (eps))

/* hb_proc_rss_kb: this process' resident size, which grows by what it writes; -1 for no process. */
static void test_proc_rss(void)
{
    long before = hb_proc_rss_kb(getpid());
    CU_ASSERT(before > 0);
    size_t n = 16u << 20;
    char *p = malloc(n);
    CU_ASSERT_FATAL(p != NULL);
    memset(p, 1, n);
    CU_ASSERT(((volatile char *)p)[n - 1] == 1); /* the writes happen (not elided) */
    long after = hb_proc_rss_kb(getpid());
    CU_ASSERT(after - before >= (long)(n / 1024) * 3 / 4);
    free(p);
    CU_ASSERT(hb_proc_rss_kb(0) == -1);
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    CU_ASSERT_FATAL(c > 0);
    CU_ASSERT(waitpid(c, NULL, 0) == c);
    CU_ASSERT(hb_proc_rss_kb(c) == -1); /* reaped: gone */
}

/* Two-sided critical values from the printed tables (3 decimals). */
static void test_t_quantiles(void)
{
    static const struct {
        double conf;
        size_t df;
        double t;
    } tab[] = {
        {0.95, 1, 12.706}, {0.95, 2, 4.303},   {0.95, 5, 2.571},   {0.95, 9, 2.262},
        {0.95, 10, 2.228}, {0.95, 30, 2.042},  {0.95, 120, 1.980}, {0.99, 1, 63.657},
        {0.99, 10, 3.169}, {0.99, 30, 2.750},  {0.90, 5, 2.015},   {0.90, 20, 1.725},
        {0.80, 3, 1.638},  {0.999, 10, 4.587},
    };
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        double t = hb_stats_t_critical(tab[i].conf, tab[i].df);
        if (fabs(t - tab[i].t) > 0.0006)
            fprintf(stderr, "t(%.3f, %zu) = %.5f, want %.3f\n", tab[i].conf, tab[i].df, t,
                    tab[i].t);
        NEAR(t, tab[i].t, 0.0006);
    }
    /* large df: the normal quantile 1.95996 */
    NEAR(hb_stats_t_critical(0.95, 100000), 1.95996, 0.0001);
    CU_ASSERT(isnan(hb_stats_t_critical(0.95, 0)));
    CU_ASSERT(isnan(hb_stats_t_critical(1.0, 5)));
}

static void test_ci(void)
{
    /* 10 samples 1..10: mean 5.5, s = 3.02765, ci = 2.262 * s / sqrt(10) = 2.16585 */
    double x[10];
    for (int i = 0; i < 10; i++)
        x[i] = i + 1;
    NEAR(hb_stats_ci(x, 10, 0.95), 2.16585, 0.0005);
    NEAR(hb_stats_ci(x, 1, 0.95), 0.0, 0);
}

static void test_enough(void)
{
    hb_meas_opts_t o;
    hb_meas_opts_default(&o);
    o.min_reps = 5;
    o.max_reps = 10;
    o.rel_err = 0.05;
    CU_ASSERT_FALSE(hb_meas_enough(4, 100, 0, &o));   /* below min_reps */
    CU_ASSERT_TRUE(hb_meas_enough(5, 100, 5, &o));    /* ci = 5% of mean */
    CU_ASSERT_FALSE(hb_meas_enough(5, 100, 5.1, &o)); /* just outside */
    CU_ASSERT_TRUE(hb_meas_enough(10, 100, 50, &o));  /* max_reps */
}

static void test_adapt(void)
{
    hb_meas_opts_t o;
    hb_meas_adapt_t a;
    hb_stats_t s;
    int rc = 0;
    size_t n;
    hb_meas_opts_default(&o);
    o.min_reps = 4;
    o.max_reps = 50;
    o.rel_err = 0.01;
    /* constant samples: enough at min_reps */
    CU_ASSERT_EQUAL(hb_meas_adapt_init(&a, &o), 0);
    for (n = 0; rc == 0; n++)
        rc = hb_meas_adapt_add(&a, 7.0);
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(hb_meas_adapt_stats(&a, &s), 0);
    NEAR(s.mean, 7.0, 1e-12);
    hb_meas_adapt_free(&a);
    /* 1, 100, 1, 100...: never within 1%: stops at max_reps */
    CU_ASSERT_EQUAL(hb_meas_adapt_init(&a, &o), 0);
    rc = 0;
    for (n = 0; rc == 0; n++)
        rc = hb_meas_adapt_add(&a, n % 2 ? 100.0 : 1.0);
    CU_ASSERT_EQUAL(n, 50);
    hb_meas_adapt_free(&a);
    /* mildly noisy: 100 +- 1 alternating: s ~ 1, ci ~ 2.3/sqrt(n) < 1 after a few */
    CU_ASSERT_EQUAL(hb_meas_adapt_init(&a, &o), 0);
    rc = 0;
    for (n = 0; rc == 0; n++)
        rc = hb_meas_adapt_add(&a, n % 2 ? 101.0 : 99.0);
    CU_ASSERT(n >= 4 && n < 50);
    CU_ASSERT_EQUAL(hb_meas_adapt_stats(&a, &s), 0);
    CU_ASSERT(s.ci <= 0.01 * s.mean);
    hb_meas_adapt_free(&a);
    /* bad options */
    o.min_reps = 1;
    CU_ASSERT_EQUAL(hb_meas_adapt_init(&a, &o), HB_ERR_INVAL);
}

static void test_offset(void)
{
    /* remote clock 1000 ahead; 10 each way: sent at 0, remote reads 1010, back at 20 */
    NEAR(hb_meas_offset(0, 1010, 20), 1000, 1e-12);
    NEAR(hb_meas_offset(50, 40, 70), -20, 1e-12);
}

static void test_names(void)
{
    hb_meas_method_t m;
    CU_ASSERT_EQUAL(hb_meas_method_parse("root", &m), 0);
    CU_ASSERT_EQUAL(m, HB_MEAS_ROOT);
    CU_ASSERT_STRING_EQUAL(hb_meas_method_name(HB_MEAS_GLOBAL), "global");
    CU_ASSERT_EQUAL(hb_meas_method_parse("min", &m), HB_ERR_INVAL);
}

/* ---- one participant with a fake clock: the runner's arithmetic ---- */

typedef struct fake1 {
    double clock;
    double step[4];
    int k, calls;
} fake1_t;

static double fake1_now(void *arg)
{
    return ((fake1_t *)arg)->clock;
}
static int fake1_run(void *arg, double *self)
{
    fake1_t *f = arg;
    (void)self;
    f->clock += f->step[f->k++ % 4];
    f->calls++;
    return 0;
}

static void test_run_single(void)
{
    hb_meas_opts_t o;
    hb_meas_result_t r;
    hb_meas_opts_default(&o);
    o.min_reps = 8;
    o.max_reps = 400;
    o.rel_err = 0.02;
    for (int m = 0; m < HB_MEAS_NMETHODS; m++) {
        fake1_t f = {.clock = 1e6, .step = {10, 10, 10, 10}};
        hb_meas_comm_t c = {.arg = &f, .rank = 0, .size = 1, .now = fake1_now, .run = fake1_run};
        CU_ASSERT_EQUAL(hb_meas_run(&c, (hb_meas_method_t)m, &o, &r), 0);
        CU_ASSERT_EQUAL(r.reps, 8);
        CU_ASSERT_EQUAL(f.calls, 8);
        NEAR(r.st.mean, 10.0, 1e-9);
        CU_ASSERT_EQUAL(r.converged, 1);
        NEAR(r.cost_us, 80.0, 1e-9);
    }
    /* noisy: 8, 12, 9, 11 -> the CI at 2% of 10 needs a few dozen reps */
    {
        fake1_t f = {.clock = 0, .step = {8, 12, 9, 11}};
        hb_meas_comm_t c = {.arg = &f, .rank = 0, .size = 1, .now = fake1_now, .run = fake1_run};
        CU_ASSERT_EQUAL(hb_meas_run(&c, HB_MEAS_MAXIMUM, &o, &r), 0);
        CU_ASSERT(r.reps > 8 && r.reps < 400);
        CU_ASSERT(r.st.ci <= 0.02 * r.st.mean);
        NEAR(r.st.mean, 10.0, 0.3);
    }
    /* no run callback */
    {
        hb_meas_comm_t c = {.rank = 0, .size = 1};
        CU_ASSERT_EQUAL(hb_meas_run(&c, HB_MEAS_ROOT, &o, &r), HB_ERR_INVAL);
    }
}

/* ---- several participants (threads) with skewed clocks ---- */

#define NT 4
#define SKEW_US 1e6 /* rank i's clock is i seconds ahead */

typedef struct shared {
    pthread_barrier_t bar;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ping[NT], pong[NT];
    double t[NT];
    double g[NT * 2], b[4];
    _Atomic unsigned go; /* the root's "data sent" of the current repetition */
} shared_t;

typedef struct part {
    shared_t *sh;
    uint32_t rank;
    hb_meas_method_t m;
    hb_meas_result_t r;
    int rc;
    unsigned seen; /* last rank: repetitions of the root seen */
} part_t;

static double mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
static double p_now(void *arg)
{
    return mono_us() + ((part_t *)arg)->rank * SKEW_US;
}
static int p_barrier(void *arg)
{
    pthread_barrier_wait(&((part_t *)arg)->sh->bar);
    return 0;
}
/* the operation, like a scatter: the root "sends" and returns, the last rank waits for it
 * and then works ~200 µs, the others return at once */
static int p_run(void *arg, double *self)
{
    part_t *p = arg;
    (void)self;
    if (p->rank == 0)
        atomic_fetch_add(&p->sh->go, 1);
    if (p->rank == NT - 1) {
        double t0;
        while (atomic_load(&p->sh->go) == p->seen)
            sched_yield();
        p->seen++;
        t0 = mono_us();
        while (mono_us() - t0 < 200)
            ;
    }
    return 0;
}
static int p_pingpong(void *arg, uint32_t peer, double *t_remote)
{
    part_t *p = arg;
    shared_t *sh = p->sh;
    pthread_mutex_lock(&sh->mu);
    if (p->rank == 0) {
        sh->ping[peer]++;
        pthread_cond_broadcast(&sh->cv);
        while (sh->pong[peer] != sh->ping[peer])
            pthread_cond_wait(&sh->cv, &sh->mu);
        *t_remote = sh->t[peer];
    } else {
        while (sh->ping[peer] == sh->pong[peer])
            pthread_cond_wait(&sh->cv, &sh->mu);
        sh->t[peer] = p_now(arg);
        sh->pong[peer] = sh->ping[peer];
        pthread_cond_broadcast(&sh->cv);
    }
    pthread_mutex_unlock(&sh->mu);
    return 0;
}
static int p_gather(void *arg, const double *in, size_t n, double *out)
{
    part_t *p = arg;
    memcpy(p->sh->g + p->rank * n, in, n * sizeof(double));
    pthread_barrier_wait(&p->sh->bar);
    if (p->rank == 0)
        memcpy(out, p->sh->g, NT * n * sizeof(double));
    return 0;
}
static int p_bcast(void *arg, double *v, size_t n)
{
    part_t *p = arg;
    if (p->rank == 0)
        memcpy(p->sh->b, v, n * sizeof(double));
    pthread_barrier_wait(&p->sh->bar);
    if (p->rank != 0)
        memcpy(v, p->sh->b, n * sizeof(double));
    /* a second barrier: the root may not overwrite b before everyone read it */
    pthread_barrier_wait(&p->sh->bar);
    return 0;
}

static void *p_main(void *arg)
{
    part_t *p = arg;
    hb_meas_opts_t o;
    hb_meas_comm_t c = {.arg = p,
                        .rank = p->rank,
                        .size = NT,
                        .now = p_now,
                        .barrier = p_barrier,
                        .run = p_run,
                        .pingpong = p_pingpong,
                        .gather = p_gather,
                        .bcast = p_bcast,
                        .confirm = p_barrier};
    hb_meas_opts_default(&o);
    o.min_reps = 5;
    o.max_reps = 30;
    o.rel_err = 0.5;
    o.sync_pings = 5;
    o.resync_reps = 7;
    p->rc = hb_meas_run(&c, p->m, &o, &p->r);
    return NULL;
}

static void test_run_threads(void)
{
    for (int m = 0; m < HB_MEAS_NMETHODS; m++) {
        shared_t sh;
        part_t p[NT];
        pthread_t th[NT];
        memset(&sh, 0, sizeof(sh));
        pthread_barrier_init(&sh.bar, NULL, NT);
        pthread_mutex_init(&sh.mu, NULL);
        pthread_cond_init(&sh.cv, NULL);
        for (uint32_t i = 0; i < NT; i++) {
            p[i] = (part_t){.sh = &sh, .rank = i, .m = (hb_meas_method_t)m};
            CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, p_main, &p[i]), 0);
        }
        for (uint32_t i = 0; i < NT; i++) {
            pthread_join(th[i], NULL);
            CU_ASSERT_EQUAL(p[i].rc, 0);
            CU_ASSERT_EQUAL(p[i].r.reps, p[0].r.reps); /* every rank saw the same decisions */
        }
        /* every method sees the 200 µs of the slowest rank (root: less what it subtracts for
         * the confirmation) and, for global, the clocks' skew of seconds is corrected
         * (uncorrected it would show up as ~3 s) */
        if (m == HB_MEAS_MAXIMUM)
            CU_ASSERT(p[0].r.st.median >= 190.0);
        if (m == HB_MEAS_ROOT)
            CU_ASSERT(p[0].r.st.median + p[0].r.confirm_us >= 190.0);
        /* global: the offsets are known to half the best round trip (a loaded host: tens of
         * µs); uncorrected, the 1 s skews would give ~3 s or a negative time */
        CU_ASSERT(p[0].r.st.median >= 100.0);
        CU_ASSERT(p[0].r.st.median < 0.5 * SKEW_US);
        if (m == HB_MEAS_ROOT)
            CU_ASSERT(p[0].r.confirm_us > 0.0 && p[0].r.confirm_us < 0.5 * SKEW_US);
        if (m == HB_MEAS_GLOBAL) {
            NEAR(p[0].r.max_offset_us, (NT - 1) * SKEW_US, 0.01 * SKEW_US);
            CU_ASSERT(p[0].r.overhead_us > 0.0);
        }
        pthread_barrier_destroy(&sh.bar);
        pthread_mutex_destroy(&sh.mu);
        pthread_cond_destroy(&sh.cv);
    }
}

/* ---- the PlogP parameter file ---- */

static void test_params(void)
{
    hb_params_t p, q;
    char buf[4096], err[256];
    memset(&p, 0, sizeof(p));
    snprintf(p.cluster, sizeof(p.cluster), "b9-x");
    p.nodes = 4;
    p.L = 40.5;
    p.q = 6000;
    p.t_rto = 200000;
    p.flow_control = 0;
    p.n = 3;
    for (uint32_t i = 0; i < 3; i++) {
        p.m[i] = 1024.0 * i * i;
        p.os[i] = 1 + i;
        p.orv[i] = 2 + i;
        p.g[i] = 10 + i;
        p.g_o2m[i] = 11 + i;
        p.g_m2o[i] = 12 + i;
        p.g_pair[i] = 13 + i;
    }
    CU_ASSERT_EQUAL(hb_params_format(&p, buf, sizeof(buf)), 0);
    CU_ASSERT_EQUAL(hb_params_parse(buf, &q, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(q.cluster, "b9-x");
    CU_ASSERT_EQUAL(q.n, 3);
    CU_ASSERT_EQUAL(q.flow_control, 0);
    NEAR(q.L, 40.5, 1e-9);
    NEAR(q.g_m2o[2], 14, 1e-9);
    NEAR(q.g_pair[2], 15, 1e-9);
    NEAR(q.m[2], 4096, 1e-9);
    /* a file written before g(m, pair) had its own column: the pair's gap is g(m) */
    CU_ASSERT_EQUAL(hb_params_parse("L 1\npoint 10 1 2 3 4 5\n", &q, err, sizeof(err)), 0);
    NEAR(q.g_pair[0], 3, 1e-9);
    CU_ASSERT_EQUAL(hb_params_parse("L 1\npoint 10 1 2 3 4 5 6\n", &q, err, sizeof(err)), 0);
    NEAR(q.g_pair[0], 6, 1e-9);
    NEAR(q.g[0], 3, 1e-9);
    CU_ASSERT_EQUAL(hb_params_parse("L 1\npoint 10 1 2 3 4 5 6 7\n", &q, err, sizeof(err)),
                    HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_params_parse("L 1\npoint 10 1 2 3 4 5 z\n", &q, err, sizeof(err)),
                    HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_params_format(&p, buf, 40), HB_ERR_TRUNCATED);
    /* refusals: descending sizes, a bad number, an unknown key, no points */
    CU_ASSERT_EQUAL(
        hb_params_parse("L 1\npoint 10 1 1 1 1 1\npoint 5 1 1 1 1 1\n", &q, err, sizeof(err)),
        HB_ERR_CONFIG);
    CU_ASSERT(strstr(err, "line 3") != NULL);
    CU_ASSERT_EQUAL(hb_params_parse("L 1\npoint 10 1 x 1 1 1\n", &q, err, sizeof(err)),
                    HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_params_parse("L 1\nfoo 3\npoint 10 1 1 1 1 1\n", &q, err, sizeof(err)),
                    HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_params_parse("L 1\n# nothing\n", &q, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_params_parse("L -1\npoint 10 1 1 1 1 1\n", &q, err, sizeof(err)),
                    HB_ERR_CONFIG);
}

/* ---- b_WAN(P) in the same file (hibar-bench lanes), kept apart from the PlogP part ---- */

static void test_params_bwan(void)
{
    hb_params_t p, q;
    char buf[4096], err[256], path[256], got[4096];
    memset(&p, 0, sizeof(p));
    snprintf(p.cluster, sizeof(p.cluster), "ln-unit");
    p.n_bwan = 3;
    p.bwan_measured = 1700000000;
    p.bwan[0] = 12.5; /* bytes/µs: 100 Mbit/s */
    p.bwan[1] = 12.0;
    p.bwan[2] = 10.0;
    /* a b_WAN-only file: no L, no point */
    CU_ASSERT_EQUAL(hb_params_format(&p, buf, sizeof(buf)), 0);
    CU_ASSERT(strstr(buf, "bwan 1 100.000\n") != NULL);
    CU_ASSERT(strstr(buf, "point") == NULL);
    CU_ASSERT_EQUAL(hb_params_parse(buf, &q, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(q.n, 0);
    CU_ASSERT_EQUAL(q.n_bwan, 3);
    NEAR(q.bwan[2], 10.0, 1e-9);
    NEAR(q.bwan_measured, 1700000000, 1e-3);
    /* refusals: P out of order, a bandwidth of 0, L without a point */
    CU_ASSERT_EQUAL(hb_params_parse("bwan 1 100\nbwan 3 90\n", &q, err, sizeof(err)),
                    HB_ERR_CONFIG);
    CU_ASSERT(strstr(err, "line 2") != NULL);
    CU_ASSERT_EQUAL(hb_params_parse("bwan 1 0\n", &q, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_params_parse("bwan 1 100 7\n", &q, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_params_parse("L 1\nbwan 1 100\n", &q, err, sizeof(err)), HB_ERR_CONFIG);

    /* update: each writer keeps the other's part of the file */
    snprintf(path, sizeof(path), "/tmp/hibar-test-params-%ld/ln-unit.plogp", (long)getpid());
    CU_ASSERT_EQUAL(hb_params_update(path, &p, HB_PARAMS_BWAN), 0);
    hb_params_t lp;
    memset(&lp, 0, sizeof(lp));
    snprintf(lp.cluster, sizeof(lp.cluster), "ln-unit");
    lp.L = 30;
    lp.n = 1;
    lp.g[0] = lp.g_o2m[0] = lp.g_m2o[0] = lp.g_pair[0] = 5;
    CU_ASSERT_EQUAL(hb_params_update(path, &lp, HB_PARAMS_PLOGP), 0);
    CU_ASSERT_EQUAL(hb_params_read(path, &q, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(q.n, 1);
    CU_ASSERT_EQUAL(q.n_bwan, 3);
    NEAR(q.L, 30, 1e-9);
    p.n_bwan = 1; /* a new b_WAN table replaces the old, the PlogP part stays */
    CU_ASSERT_EQUAL(hb_params_update(path, &p, HB_PARAMS_BWAN), 0);
    CU_ASSERT_EQUAL(hb_params_read(path, &q, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(q.n, 1);
    CU_ASSERT_EQUAL(q.n_bwan, 1);
    /* load: the cluster must match; HIBAR_MODEL_CACHE=none: nothing */
    setenv("HIBAR_MODEL_CACHE", path, 1);
    CU_ASSERT_EQUAL(hb_params_load("ln-unit", &q, got, sizeof(got), err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(got, path);
    CU_ASSERT_EQUAL(hb_params_load("ln-other", &q, got, sizeof(got), err, sizeof(err)),
                    HB_ERR_CONFIG);
    CU_ASSERT(strstr(err, "ln-unit") != NULL);
    setenv("HIBAR_MODEL_CACHE", "none", 1);
    CU_ASSERT_EQUAL(hb_params_load("ln-unit", &q, got, sizeof(got), err, sizeof(err)),
                    HB_ERR_NOT_FOUND);
    unsetenv("HIBAR_MODEL_CACHE");
    unlink(path);
    *strrchr(path, '/') = '\0';
    rmdir(path);
}

int main(void)
{
    CU_pSuite s;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    s = CU_add_suite("meas", NULL, NULL);
    if (s == NULL || !CU_add_test(s, "student-t quantiles", test_t_quantiles) ||
        !CU_add_test(s, "confidence interval", test_ci) ||
        !CU_add_test(s, "stopping rule", test_enough) ||
        !CU_add_test(s, "adaptive repetitions", test_adapt) ||
        !CU_add_test(s, "clock offset", test_offset) || !CU_add_test(s, "names", test_names) ||
        !CU_add_test(s, "runner, one participant", test_run_single) ||
        !CU_add_test(s, "runner, skewed clocks", test_run_threads) ||
        !CU_add_test(s, "parameter file", test_params) ||
        !CU_add_test(s, "parameter file, b_WAN(P)", test_params_bwan) ||
        !CU_add_test(s, "resident size (/proc)", test_proc_rss)) {
        CU_cleanup_registry();
        return 99;
    }
    return hb_test_run(CU_BRM_VERBOSE);
}
