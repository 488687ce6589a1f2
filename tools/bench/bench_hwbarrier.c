/* bench_hwbarrier.c: hibar-bench hwbarrier: chassis-barrier latency and idle-wait CPU per backend.
 */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include "hb_log.h"
#include "hb_stats.h"
#include "hb_time.h"
#include "hibar.h"
#include "hwb.h"
#include "scic_model.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * N participant processes, one per port of one chassis, each opening the backend as a daemon
 * would. Every iteration i each participant records when it arrived and when it saw the
 * completion (CLOCK_MONOTONIC, one clock for the whole host). The sample of iteration i is
 * max(done) - max(arrive): from the last arrival until every participant has seen the
 * completion. Sync numbers rotate over all HB_HWB_NSYNC. With --backend scic and no board on
 * this host, the SCIC device model is started (impl "scic-model").
 * --idle-wait S: afterwards ports 1..N-1 wait in one barrier while the Center sleeps S
 * seconds before arriving; each participant reports its user+sys CPU over that wait.
 * --roles: also one row per role (the SCMD paper's per-node figures, Center 2.37 us and port
 * 3.86 us): the Center's and the ports' samples done_j - max(arrive), from the last arrival
 * until that participant saw the completion (impl BACKEND:center, BACKEND:port).
 */

typedef struct bh_opts {
    const char *backend;
    uint32_t n;
    uint64_t iters, warmup;
    double idle_s;
    int roles;
} bh_opts_t;

typedef struct bh_shared {
    int status[HB_HWB_MAX_NODES];
    double cpu_s[HB_HWB_MAX_NODES];
    double loop_us;
    char impl[HB_HWB_NAME_MAX];
    uint64_t t[]; /* [2][n][iters]: arrive, done */
} bh_shared_t;

static void bh_usage(FILE *f)
{
    fprintf(f,
            "usage: hibar-bench hwbarrier [--backend auto|shm|scic] [-n N] [--iters I] "
            "[--warmup W]\n"
            "                             [--idle-wait SECONDS] " HB_BENCH_COMMON_USAGE "\n"
            "  -n N            participants (nodes of one chassis), 1..%d, default 2\n"
            "  --iters I       measured barriers, default 10000\n"
            "  --warmup W      barriers before measuring, default 1000\n"
            "  --idle-wait S   then report each participant's CPU over an idle wait of S s\n"
            "  --roles         also the latency seen by the Center and by the ports\n",
            HB_HWB_MAX_NODES);
}

static int bh_parse(int argc, char **argv, bh_opts_t *o)
{
    static const struct option lo[] = {
        {"backend", required_argument, NULL, 'b'},
        {"iters", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, 'w'},
        {"idle-wait", required_argument, NULL, 'I'},
        {"roles", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    char *end;
    *o = (bh_opts_t){.backend = "auto", .n = 2, .iters = 10000, .warmup = 1000, .idle_s = 0};
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:b:i:h", lo, NULL)) != -1) {
        errno = 0;
        switch (c) {
        case 'b':
            o->backend = optarg;
            break;
        case 'n':
            o->n = (uint32_t)strtoul(optarg, &end, 10);
            if (*end || o->n < 1 || o->n > HB_HWB_MAX_NODES) {
                fprintf(stderr, "hibar-bench hwbarrier: -n must be 1..%d\n", HB_HWB_MAX_NODES);
                return -1;
            }
            break;
        case 'i':
        case 'w':
            if (c == 'i')
                o->iters = strtoull(optarg, &end, 10);
            else
                o->warmup = strtoull(optarg, &end, 10);
            if (*end || errno || (c == 'i' && (o->iters < 1 || o->iters > 10000000))) {
                fprintf(stderr, "hibar-bench hwbarrier: bad --%s '%s'\n",
                        c == 'i' ? "iters" : "warmup", optarg);
                return -1;
            }
            break;
        case 'r':
            o->roles = 1;
            break;
        case 'I':
            o->idle_s = strtod(optarg, &end);
            if (*end || o->idle_s <= 0 || o->idle_s > 3600) {
                fprintf(stderr, "hibar-bench hwbarrier: --idle-wait takes 0 < seconds <= 3600\n");
                return -1;
            }
            break;
        case 'h':
            bh_usage(stdout);
            exit(0);
        default:
            bh_usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hibar-bench hwbarrier: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* --roles: the Center's (participant 0) and the ports' samples, from the last arrival of an
 * iteration until that participant saw its completion; one row each. */
static void bh_roles(hb_bench_out_t *out, const bh_shared_t *sh, const bh_opts_t *o, double conf)
{
    uint64_t n_port = (uint64_t)(o->n - 1) * o->iters;
    double *y = malloc((n_port > o->iters ? n_port : o->iters) * sizeof(*y));
    if (y == NULL)
        return;
    for (int role = 0; role < 2; role++) {
        uint64_t k = 0;
        for (uint64_t i = 0; i < o->iters; i++) {
            uint64_t amax = 0;
            for (uint32_t j = 0; j < o->n; j++) {
                uint64_t a = sh->t[(uint64_t)j * o->iters + i];
                amax = a > amax ? a : amax;
            }
            for (uint32_t j = role == 0 ? 0 : 1; j < (role == 0 ? 1 : o->n); j++) {
                uint64_t d = sh->t[((uint64_t)o->n + j) * o->iters + i];
                y[k++] = d > amax ? (double)(d - amax) / 1e3 : 0.0;
            }
        }
        hb_stats_t st;
        char impl[HB_HWB_NAME_MAX + 16];
        snprintf(impl, sizeof(impl), "%s:%s", sh->impl, role == 0 ? "center" : "port");
        hb_bench_row_t row = {
            .impl = impl, .nodes = o->n, .ranks = o->n, .reps = o->iters, .iters = k, .st = &st};
        hb_stats_summarize(y, k, conf, &st);
        hb_bench_out_row(out, &row);
    }
    free(y);
}

static double bh_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* One participant process. Returns its status. */
static int bh_participant(const bh_opts_t *o, const char *backend, const char *cluster,
                          hb_scic_model_t *model, uint32_t me, bh_shared_t *sh)
{
    hb_hwb_params_t p = {
        .cluster = cluster, .chassis = 0, .port = me, .nodes = o->n, .timeout_ms = 30000};
    uint64_t *arr = sh->t + (uint64_t)me * o->iters;
    uint64_t *done = sh->t + ((uint64_t)o->n + me) * o->iters;
    uint32_t mask = o->n == 32 ? 0xffffffffu : (1u << o->n) - 1;
    uint64_t t0, t1;
    hb_hwb_t *h;
    int rc;

    if (model != NULL) {
        p.uio_path = hb_scic_model_uio_path(model, me);
        p.bar_path = hb_scic_model_bar_path(model, me);
    }
    rc = hb_hwb_open(backend, &p, &h);
    if (rc < 0)
        return rc;
    if (me == 0)
        snprintf(sh->impl, sizeof(sh->impl), "%s%s", hb_hwb_name(h), model ? "-model" : "");
    for (uint64_t i = 0; i < o->warmup && rc == 0; i++)
        rc = hb_hwb_barrier(h, (uint32_t)(i % HB_HWB_NSYNC), mask, 30000);
    t0 = hb_time_now_ns();
    for (uint64_t i = 0; i < o->iters && rc == 0; i++) {
        uint32_t s = (uint32_t)(i % HB_HWB_NSYNC);
        arr[i] = hb_time_now_ns();
        rc = hb_hwb_arrive(h, s, mask);
        if (rc == 0)
            rc = hb_hwb_wait(h, s, 30000);
        done[i] = hb_time_now_ns();
    }
    t1 = hb_time_now_ns();
    if (me == 0)
        sh->loop_us = (double)(t1 - t0) / 1e3 / (double)o->iters;
    if (rc == 0 && o->idle_s > 0) {
        double c0 = bh_cpu_s();
        if (me == 0) {
            struct timespec ts = {(time_t)o->idle_s,
                                  (long)((o->idle_s - (double)(time_t)o->idle_s) * 1e9)};
            nanosleep(&ts, NULL);
        }
        rc = hb_hwb_barrier(h, 0, mask, (int)(o->idle_s * 1000) + 30000);
        sh->cpu_s[me] = bh_cpu_s() - c0;
    }
    /* Leave together: a participant closing early would be "lost" for the others. */
    if (rc == 0)
        rc = hb_hwb_barrier(h, 1, mask, 30000);
    hb_hwb_close(h);
    return rc;
}

int hb_bench_hwbarrier_main(int argc, char **argv)
{
    hb_bench_common_t com;
    bh_opts_t o;
    hb_bench_out_t out;
    hb_scic_model_t *model = NULL;
    const char *backend;
    char cluster[40];
    bh_shared_t *sh;
    size_t shlen;
    pid_t pid[HB_HWB_MAX_NODES];
    double *x = NULL;
    int rc = 1, failed = 0;

    if (hb_bench_common_parse(&argc, argv, &com) < 0 || bh_parse(argc, argv, &o) < 0)
        return 2;
    backend = getenv("HIBAR_HWBARRIER") && *getenv("HIBAR_HWBARRIER") ? getenv("HIBAR_HWBARRIER")
                                                                      : o.backend;
    snprintf(cluster, sizeof(cluster), "bench%d", (int)getpid());
    if (strcmp(backend, "scic") == 0) {
        hb_hwb_info_t info[4];
        size_t n = 0;
        hb_hwb_list(NULL, info, 4, &n);
        for (size_t i = 0; i < n && i < 4; i++)
            if (strcmp(info[i].name, "scic") == 0 && !info[i].available &&
                hb_scic_model_create(o.n, cluster, &model) < 0) {
                fprintf(stderr, "hibar-bench hwbarrier: cannot start the SCIC device model\n");
                return 1;
            }
    }
    shlen = sizeof(*sh) + 2ull * o.n * o.iters * sizeof(uint64_t);
    sh = mmap(NULL, shlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "hibar-bench hwbarrier: mmap %zu bytes: %s\n", shlen, strerror(errno));
        goto out_model;
    }
    fflush(stdout);
    for (uint32_t i = 0; i < o.n; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            sh->status[i] = bh_participant(&o, backend, cluster, model, i, sh);
            _exit(0);
        }
        if (pid[i] < 0) {
            fprintf(stderr, "hibar-bench hwbarrier: fork: %s\n", strerror(errno));
            for (uint32_t k = 0; k < i; k++)
                kill(pid[k], SIGKILL);
            o.n = i;
            failed = 1;
            break;
        }
    }
    for (uint32_t i = 0; i < o.n; i++) {
        int st;
        while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || sh->status[i] != 0) {
            fprintf(stderr, "hibar-bench hwbarrier: participant %u failed: %s\n", i,
                    WIFEXITED(st) ? hibar_strerror(sh->status[i]) : "killed");
            failed = 1;
        }
    }
    {
        /* the Center unlinks its segment on close; if it crashed, do it here */
        char name[96];
        snprintf(name, sizeof(name), "/hibar-%u-%s-c0", (unsigned)getuid(), cluster);
        shm_unlink(name);
    }
    if (failed)
        goto out_unmap;
    x = malloc(o.iters * sizeof(*x));
    if (x == NULL)
        goto out_unmap;
    for (uint64_t i = 0; i < o.iters; i++) {
        uint64_t amax = 0, dmax = 0;
        for (uint32_t j = 0; j < o.n; j++) {
            uint64_t a = sh->t[(uint64_t)j * o.iters + i];
            uint64_t d = sh->t[((uint64_t)o.n + j) * o.iters + i];
            amax = a > amax ? a : amax;
            dmax = d > dmax ? d : dmax;
        }
        x[i] = (double)(dmax - amax) / 1e3;
    }
    if (hb_bench_out_open(&out, "hwbarrier", &com) == 0) {
        hb_stats_t st;
        char extra[160];
        hb_bench_row_t row = {.impl = sh->impl,
                              .nodes = o.n,
                              .ranks = o.n,
                              .size = 0,
                              .reps = o.iters,
                              .iters = o.iters,
                              .st = &st,
                              .extra_json = extra};
        hb_stats_summarize(x, o.iters, com.confidence, &st);
        snprintf(extra, sizeof(extra), "\"loop_us\": %.3f, \"warmup\": %llu", sh->loop_us,
                 (unsigned long long)o.warmup);
        hb_bench_out_note(&out,
                          "hibar-bench hwbarrier: backend %s, %u participants (processes), "
                          "%ld cores online",
                          sh->impl, o.n, sysconf(_SC_NPROCESSORS_ONLN));
        hb_bench_out_note(&out,
                          "latency = last arrival -> completion seen by every participant; "
                          "loop %.2f us per barrier",
                          sh->loop_us);
        hb_bench_out_row(&out, &row);
        if (o.roles && o.n > 1)
            bh_roles(&out, sh, &o, com.confidence);
        if (o.idle_s > 0) {
            hb_bench_out_note(&out, "idle wait of %.1f s (the Center arrives last):", o.idle_s);
            for (uint32_t j = 0; j < o.n; j++) {
                if (com.json)
                    printf("{\"bench\": \"hwbarrier-idle\", \"impl\": \"%s\", \"nodes\": %u, "
                           "\"ranks\": %u, \"participant\": %u, \"wait_s\": %.3f, "
                           "\"cpu_s\": %.6f}\n",
                           sh->impl, o.n, o.n, j, o.idle_s, sh->cpu_s[j]);
                else
                    printf("# participant %2u: user+sys CPU %.4f s (%.3f%% of one core)%s\n", j,
                           sh->cpu_s[j], 100.0 * sh->cpu_s[j] / o.idle_s,
                           j == 0 ? " (slept: the late arriver)" : "");
            }
        }
        hb_bench_out_close(&out);
        rc = 0;
    }
    free(x);
out_unmap:
    munmap(sh, shlen);
out_model:
    hb_scic_model_destroy(model);
    return rc;
}
