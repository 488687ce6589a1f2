/* bench_coll.c: hibar-bench scatter|gather|alltoall across nodes: flat, single-lane, multi-lane
 * (alltoall: flat, pairwise) vs the model, the P sweep, plots, Open MPI beside them. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "coll_model.h"
#include "coll_params.h"
#include "hb_log.h"
#include "hb_proc.h"
#include "hb_size.h"
#include "hb_stats.h"
#include "hb_time.h"
#include "wire.h"
#include "hbd_client.h"
#include "hbd_emu.h"
#include "hibar.h"
#include "topo.h"

/*
 * Three parts, kept apart so that another driver (libhibar ranks through hibar-run) can be
 * added without touching the rest:
 *   driver   runs ONE collective and returns one sample (bcoll_driver_t); here the daemons'
 *            `coll` command: every daemon asked at once, a sample is the last completion
 *            minus the first start over all daemons (MPIBlib's "global" method: the
 *            daemons' CLOCK_MONOTONIC stamps, one clock on one host, also across network
 *            namespaces), with one rank per node the daemons' collective IS the node-level one.
 *   model    the prediction beside each row (coll/coll_model.h with the configuration's links,
 *            as hibard's chooser uses them).
 *   output   rows (JSON/CSV/table), the P sweep table, gnuplot plots.
 * Repetitions follow one another (each waits for every daemon's reply, so none overlaps the
 * next) from --min-reps until the Student-t CI of the mean is within --err of it, or
 * --max-reps, or --max-secs for the row.
 */

/* ---- the driver interface ---- */

typedef struct bcoll_case {
    hb_coll_op_t op;
    hb_coll_alg_t alg;
    uint64_t size;  /* bytes per rank */
    uint32_t lanes; /* multi-lane P; 0: the driver's default */
    uint64_t seg;   /* pipelining segment; 0: default */
} bcoll_case_t;

typedef struct bcoll_sample {
    double us;          /* the collective's time */
    double skew_us;     /* spread of the participants' starts */
    uint32_t lanes;     /* P the schedule used */
    double daemon_pred; /* what hibard's own model said (< 0: not told) */
    double cpu_ms;      /* CPU the participants used together (< 0: not known) */
    double cpu_max_ms;  /* ... the busiest of them */
} bcoll_sample_t;

typedef struct bcoll_driver {
    const char *name; /* "daemons" */
    void *ctx;
    int (*run)(void *ctx, const bcoll_case_t *c, bcoll_sample_t *s_p);
} bcoll_driver_t;

/* ---- options ---- */

#define BCOLL_MAX_SIZES 64
/* The daemons' segment for control-command collectives (hbd_coll.c HBD_COLL_SEG_DEFAULT): what
 * the model's pipelined lanes take when --seg is not given. */
#define BCOLL_SEG_DEFAULT 32768u
#define BCOLL_MAX_OVER 32

typedef struct bcoll_opts {
    hb_coll_op_t op;
    const char *config;
    const char *over[BCOLL_MAX_OVER];
    size_t n_over;
    size_t sizes[BCOLL_MAX_SIZES];
    size_t n_sizes;
    int algs[HB_COLL_ALG_COUNT]; /* which to measure */
    uint32_t lanes;              /* multi-lane P in the size rows; 0: the model's P_opt */
    int sweep;                   /* --sweep-lanes */
    uint64_t sweep_size;
    uint64_t seg;
    unsigned min_reps, max_reps;
    double err, max_secs;
    const char *plot_dir;
    int lane_stats; /* -1 auto (when the bed's counters are there), 0, 1 */
    int keep;
    int compare; /* --compare: Open MPI's collective under mpirun, ranks on this host */
    hb_bench_common_t common;
} bcoll_opts_t;

static void usage(FILE *f, const char *mode)
{
    fprintf(f,
            "usage: hibar-bench %s [--config FILE] [--sizes 64K..8M] [--alg flat,single-lane,"
            "multi-lane]\n"
            "         [--lanes P] [--sweep-lanes] [--sweep-size 4M] [--seg BYTES] [--min-reps 3]\n"
            "         [--max-reps 10] [--err 0.05] [--max-secs 30] [--plot DIR] [--lane-stats|"
            "--no-lane-stats]\n"
            "         [--set KEY=VALUE]... [--keep] [--compare] " HB_BENCH_COMMON_USAGE "\n"
            "Measures %s across the daemons of the cluster of --config (default inside\n"
            "tests/netns/testbed: $HIBAR_TESTBED_CONFIG; 1 rank per node; started unless running:\n"
            "on the bed's hosts inside the bed, else emulated on this host) with the model's\n"
            "prediction beside each row. --lanes: P of the multi-lane rows (default P_opt). "
            "--sweep-lanes: multi-lane for P = 1..min(n0, n1) at\n"
            "--sweep-size, measured against predicted T(P). --plot DIR: gnuplot SVG and PNG.\n"
            "alltoall: --alg flat,pairwise (PlogP-BR's A/B: all at once against n - 1 pair\n"
            "rounds), predicted by PlogP-BR from the cached hibar-bench logp parameters, else\n"
            "Hockney. --compare: also Open MPI's collective (hibar-mpi-bench under mpirun, one\n"
            "rank per daemon on this host, TCP), in the same run, row impl open-mpi.\n",
            mode, mode);
}

/* "64K" -> 65536 (hb_size.h); 0 on error. */
static uint64_t parse_size(const char *s)
{
    uint64_t v;
    return hb_size_parse(s, UINT64_MAX, &v) == 0 ? v : 0;
}

/* "64K..8M" (doubling) or "1K,64K,1M" (hb_size.h); 0 or -1. */
static int parse_sizes(const char *arg, bcoll_opts_t *o)
{
    return hb_size_list_parse(arg, 1, SIZE_MAX, o->sizes, BCOLL_MAX_SIZES, &o->n_sizes) == 0 ? 0
                                                                                             : -1;
}

static int parse_algs(const char *arg, bcoll_opts_t *o)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", arg);
    memset(o->algs, 0, sizeof(o->algs));
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        hb_coll_alg_t a;
        if (hb_coll_alg_parse(t, &a) != 0 || !hb_coll_alg_valid(o->op, a))
            return -1;
        o->algs[a] = 1;
    }
    return 0;
}

/* ---- the daemons' driver ---- */

typedef struct bcoll_daemons {
    hb_cfg_t *cfg;
    hbd_cluster_t *cl;
    uint32_t *nodes;
    char (*rep)[512];
    uint32_t root;
    int started;  /* this run started the daemons (hbd_emu_acquire) */
    pid_t *dpid;  /* [n] the daemons' pids (pid files), for their CPU time */
    double *cpu0; /* [n] scratch */
    hbd_emu_opts_t eo;
} bcoll_daemons_t;

static uint64_t field_u64(const char *reply, const char *key)
{
    char v[64];
    return hbd_client_field(reply, key, v, sizeof(v)) == 0 ? strtoull(v, NULL, 10) : 0;
}

static double field_dbl(const char *reply, const char *key, double dflt)
{
    char v[64];
    return hbd_client_field(reply, key, v, sizeof(v)) == 0 ? strtod(v, NULL) : dflt;
}

static const char *alg_word(hb_coll_alg_t a)
{
    return hb_coll_alg_name(a);
}

static int daemons_run(void *ctx, const bcoll_case_t *c, bcoll_sample_t *s_p)
{
    bcoll_daemons_t *dm = ctx;
    char cmd[160];
    for (uint32_t k = 0; k < dm->cl->n; k++)
        dm->cpu0[k] = hb_proc_cpu_seconds(dm->dpid[k]);
    snprintf(cmd, sizeof(cmd), "coll %s %s %" PRIu32 " %" PRIu64 " %" PRIu32 " %" PRIu64,
             hb_coll_op_name(c->op), alg_word(c->alg), dm->root, c->size, c->lanes, c->seg);
    int rc = hbd_cluster_all(dm->cl, dm->nodes, dm->cl->n, cmd, dm->rep, 600000);
    if (rc != 0) {
        fprintf(stderr, "hibar-bench: %s: %s\n", cmd, hibar_strerror(rc));
        return rc;
    }
    uint64_t t0 = UINT64_MAX, s1 = 0, t1 = 0;
    bcoll_sample_t s = {.daemon_pred = -1.0};
    for (uint32_t k = 0; k < dm->cl->n; k++) {
        const char *r = dm->rep[k];
        if (strncmp(r, "ok coll", 7) != 0 || strstr(r, "check=ok") == NULL) {
            fprintf(stderr, "hibar-bench: %s: node %s: %s\n", cmd, dm->cfg->nodes[k].name, r);
            return HIBAR_ERR_PROTO;
        }
        uint64_t a = field_u64(r, "t0_ns"), b = field_u64(r, "t1_ns");
        if (a < t0)
            t0 = a;
        if (a > s1)
            s1 = a;
        if (b > t1)
            t1 = b;
        if (k == dm->root) {
            s.lanes = (uint32_t)field_u64(r, "lanes");
            s.daemon_pred = field_dbl(r, "predicted_us", -1.0);
        }
    }
    s.us = (double)(t1 - t0) / 1e3;
    s.skew_us = (double)(s1 - t0) / 1e3;
    s.cpu_ms = s.cpu_max_ms = 0.0;
    for (uint32_t k = 0; k < dm->cl->n; k++) {
        double c1 = hb_proc_cpu_seconds(dm->dpid[k]);
        if (c1 < 0 || dm->cpu0[k] < 0) {
            s.cpu_ms = s.cpu_max_ms = -1.0;
            break;
        }
        double ms = (c1 - dm->cpu0[k]) * 1e3;
        s.cpu_ms += ms;
        if (ms > s.cpu_max_ms)
            s.cpu_max_ms = ms;
    }
    *s_p = s;
    return 0;
}

/* Inside tests/netns/testbed with its configuration: the daemons must run on the bed's hosts. */
int hb_bench_on_bed(const char *config)
{
    const char *bc = getenv("HIBAR_TESTBED_CONFIG"), *he = getenv("HIBAR_TESTBED_HOSTEXEC");
    char a[PATH_MAX], b[PATH_MAX];
    if (bc == NULL || he == NULL || config == NULL)
        return 0;
    if (realpath(bc, a) == NULL || realpath(config, b) == NULL)
        return 0;
    return strcmp(a, b) == 0;
}

static void daemons_close(bcoll_daemons_t *dm, const bcoll_opts_t *o)
{
    if (dm->cfg != NULL)
        hbd_emu_release(dm->cfg, &dm->eo, dm->cl, dm->started, o->keep);
    dm->cl = NULL;
    free(dm->dpid);
    free(dm->cpu0);
    dm->dpid = NULL;
    dm->cpu0 = NULL;
    free(dm->nodes);
    free(dm->rep);
    dm->nodes = NULL;
    dm->rep = NULL;
}

static int daemons_open(bcoll_daemons_t *dm, const bcoll_opts_t *o)
{
    /* inside the test bed the daemons run on the bed's hosts (each node is named after its
     * host's namespace) */
    dm->eo = (hbd_emu_opts_t){
        .config = o->config,
        .over = o->over,
        .n_over = o->n_over,
        .timeout_ms = 60000,
        .hostexec = hb_bench_on_bed(o->config) ? getenv("HIBAR_TESTBED_HOSTEXEC") : NULL};
    int rc = hbd_emu_acquire(dm->cfg, &dm->eo, 60000, "hibar-bench", &dm->started, &dm->cl);
    if (rc != 0)
        return rc;
    dm->nodes = calloc(dm->cl->n, sizeof(uint32_t));
    dm->rep = calloc(dm->cl->n, sizeof(*dm->rep));
    dm->dpid = calloc(dm->cl->n, sizeof(pid_t));
    dm->cpu0 = calloc(dm->cl->n, sizeof(double));
    if (dm->nodes == NULL || dm->rep == NULL || dm->dpid == NULL || dm->cpu0 == NULL)
        return HIBAR_ERR_NOMEM;
    for (uint32_t k = 0; k < dm->cl->n; k++) {
        dm->nodes[k] = k;
        dm->dpid[k] = hbd_client_pid(dm->cfg, k);
    }
    return 0;
}

/* ---- the model ---- */

typedef struct bcoll_model {
    hb_model_lanes_t lanes;
    uint32_t n0, n1;
    hb_params_t cached; /* the cluster's cached parameters: lanes.b_wan points here */
    int measured;       /* lanes use a measured b_WAN(P) table (hibar-bench lanes) */
    int have_plogp;     /* cached holds PlogP(-BR) parameters (hibar-bench logp) */
    hb_model_plogp_t plogp;
} bcoll_model_t;

/* The same parameters hibard's chooser uses (daemon/hbd_coll.c model_choose). */
static void model_init(bcoll_model_t *m, const hb_cfg_t *cfg, const hb_topo_t *t, uint32_t root,
                       uint64_t seg)
{
    const hb_cfg_links_t *l = &cfg->links;
    uint32_t rs = t->nodes[root].site, other = UINT32_MAX;
    m->n0 = m->n1 = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        if (t->nodes[i].site == rs) {
            m->n0++;
        } else if (other == UINT32_MAX || t->nodes[i].site == other) {
            other = t->nodes[i].site;
            m->n1++;
        }
    }
    m->lanes =
        hb_model_lanes_links(l->wan_lat_us, l->lan_lat_us, l->lan_bw_mbps, l->wan_lane_bw_mbps,
                             l->wan_total_bw_mbps, (double)(seg ? seg : BCOLL_SEG_DEFAULT));
    char path[4096];
    int loaded = hb_params_load(cfg->cluster, &m->cached, path, sizeof(path), NULL, 0) == 0;
    m->measured = loaded && hb_model_lanes_view(&m->cached, &m->lanes);
    m->have_plogp = loaded && m->cached.n > 0;
    if (m->have_plogp)
        hb_model_plogp_view(&m->cached, &m->plogp);
}

/* Predicted time of alg at P lanes (multi-lane: the pipelined lane model the chooser uses,
 * hb_model_multi_lane_pipe); < 0 if not applicable. */
static double model_predict(const bcoll_model_t *m, hb_coll_op_t op, hb_coll_alg_t alg, double M,
                            uint32_t P)
{
    double t = -1.0;
    int rc = HIBAR_ERR_INVAL;
    if (op == HB_COLL_ALLTOALL) { /* one site of every node, as the chooser sees it */
        rc = m->have_plogp ? hb_model_plogp_predict(&m->plogp, op, alg, m->n0 + m->n1, M, &t)
                           : hb_model_tree(&m->lanes, op, alg, m->n0 + m->n1, 0, M, &t);
        return rc == 0 ? t : -1.0;
    }
    switch (alg) {
    case HB_COLL_ALG_FLAT:
    case HB_COLL_ALG_BINOMIAL:
        rc = hb_model_tree(&m->lanes, op, alg, m->n0, m->n1, M, &t);
        break;
    case HB_COLL_ALG_SINGLE_LANE:
        if (m->n1 > 0)
            rc = hb_model_single_lane(&m->lanes, m->n0, m->n1, M, &t);
        break;
    case HB_COLL_ALG_MULTI_LANE:
        if (m->n1 > 0)
            rc = hb_model_multi_lane_pipe(&m->lanes, op, m->n0, m->n1, M, P, &t);
        break;
    default:
        break;
    }
    return rc == 0 ? t : -1.0;
}

/* The paper's T(P) (doc/design.md section 1) at P lanes, beside the prediction; < 0: not
 * multi-lane. */
static double model_formula(const bcoll_model_t *m, hb_coll_alg_t alg, double M, uint32_t P)
{
    double t = -1.0;
    if (alg != HB_COLL_ALG_MULTI_LANE || m->n1 == 0 ||
        hb_model_multi_lane(&m->lanes, m->n0, m->n1, M, P, &t) != 0)
        return -1.0;
    return t;
}

static uint32_t model_popt(const bcoll_model_t *m, hb_coll_op_t op, double M)
{
    uint32_t P = 1;
    double t;
    if (m->n1 == 0 || hb_model_popt_op(&m->lanes, op, m->n0, m->n1, M, 0, &P, &t) != 0)
        return 1;
    return P;
}

/* ---- the bed's WAN lane counters (tests/netns/testbed --stats) ---- */

#define BCOLL_MAX_LANES 4096

typedef struct bcoll_lanes {
    uint32_t n;
    char key[BCOLL_MAX_LANES][40];
    uint64_t bytes[BCOLL_MAX_LANES];
} bcoll_lanes_t;

/* 0, or -1 when the counters cannot be read. */
static int lanes_read(bcoll_lanes_t *l)
{
    const char *cmd = getenv("HIBAR_TESTBED_STATS");
    char line[256];
    l->n = 0;
    if (cmd == NULL || *cmd == '\0')
        return -1;
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    while (fgets(line, sizeof(line), p) != NULL && l->n < BCOLL_MAX_LANES) {
        char src[20], dst[20];
        unsigned long long b;
        if (sscanf(line, "lane %19s %19s %llu", src, dst, &b) == 3) {
            snprintf(l->key[l->n], sizeof(l->key[0]), "%s>%s", src, dst);
            l->bytes[l->n++] = b;
        }
    }
    return pclose(p) == 0 && l->n > 0 ? 0 : -1;
}

/* Lanes whose bytes grew by more than min_bytes between a and b. */
static int lanes_busy(const bcoll_lanes_t *a, const bcoll_lanes_t *b, uint64_t min_bytes)
{
    int busy = 0;
    for (uint32_t i = 0; i < b->n; i++)
        for (uint32_t j = 0; j < a->n; j++)
            if (strcmp(a->key[j], b->key[i]) == 0) {
                busy += b->bytes[i] - a->bytes[j] > min_bytes;
                break;
            }
    return busy;
}

/* ---- measuring a row ---- */

typedef struct bcoll_row {
    hb_coll_alg_t alg;
    uint64_t size;
    uint32_t lanes;
    int sweep;
    int peer; /* Open MPI's row (--compare): impl open-mpi, the maximum method, no model */
    hb_stats_t st;
    double predicted, formula, daemon_pred, skew_med; /* formula: T(P), multi-lane only */
    double cpu_ms, cpu_max_ms;                        /* medians per repetition; < 0: not known */
    int lanes_busy;                                   /* -1: not known */
} bcoll_row_t;

static int measure_row(const bcoll_driver_t *drv, const bcoll_opts_t *o, const bcoll_model_t *m,
                       int use_stats, bcoll_lanes_t *lb, bcoll_row_t *row)
{
    bcoll_case_t c = {.op = o->op, .alg = row->alg, .size = 1, .lanes = row->lanes, .seg = o->seg};
    bcoll_sample_t s;
    /* warm-up: links to peers come up on demand, on the first collective that needs them; then
     * one at the row's size, not counted: the first collective of a larger size than before
     * grows every daemon's heap and pays its first-touch page faults (the first repetition of
     * each size took 1.7-6.7x the next one on the bed) */
    int rc = drv->run(drv->ctx, &c, &s);
    c.size = row->size;
    if (rc == 0)
        rc = drv->run(drv->ctx, &c, &s);
    if (rc != 0)
        return rc;
    double *x = calloc(o->max_reps, sizeof(double)), *sk = calloc(o->max_reps, sizeof(double));
    double *cpu = calloc(o->max_reps, sizeof(double)), *cmax = calloc(o->max_reps, sizeof(double));
    if (x == NULL || sk == NULL || cpu == NULL || cmax == NULL) {
        free(x);
        free(sk);
        free(cpu);
        free(cmax);
        return HIBAR_ERR_NOMEM;
    }
    row->lanes_busy = -1;
    int have_before = use_stats && lanes_read(&lb[0]) == 0;
    uint64_t t_start = hb_time_now_ns();
    unsigned n = 0;
    double dpred = -1.0;
    while (n < o->max_reps) {
        rc = drv->run(drv->ctx, &c, &s);
        if (rc != 0)
            break;
        x[n] = s.us;
        sk[n] = s.skew_us;
        cpu[n] = s.cpu_ms;
        cmax[n] = s.cpu_max_ms;
        row->lanes = s.lanes;
        dpred = s.daemon_pred;
        n++;
        double secs = (double)(hb_time_now_ns() - t_start) / 1e9;
        if (n >= o->min_reps) {
            double mean = hb_stats_mean(x, n), ci = hb_stats_ci(x, n, o->common.confidence);
            if (ci <= o->err * mean || secs >= o->max_secs)
                break;
        }
    }
    if (rc == 0 && have_before && lanes_read(&lb[1]) == 0)
        row->lanes_busy = lanes_busy(&lb[0], &lb[1], (uint64_t)n * row->size / 4);
    if (rc == 0) {
        hb_stats_summarize(x, n, o->common.confidence, &row->st);
        hb_stats_sort(sk, n);
        row->skew_med = hb_stats_quantile_sorted(sk, n, 0.5);
        hb_stats_sort(cpu, n);
        hb_stats_sort(cmax, n);
        row->cpu_ms = cpu[0] < 0 ? -1.0 : hb_stats_quantile_sorted(cpu, n, 0.5);
        row->cpu_max_ms = cmax[0] < 0 ? -1.0 : hb_stats_quantile_sorted(cmax, n, 0.5);
        row->daemon_pred = dpred;
        row->predicted = model_predict(m, o->op, row->alg, (double)row->size, row->lanes);
        row->formula = model_formula(m, row->alg, (double)row->size, row->lanes);
    }
    free(x);
    free(sk);
    free(cpu);
    free(cmax);
    return rc;
}

/* ---- output ---- */

typedef struct bcoll_out {
    const bcoll_opts_t *o;
    hb_bench_out_t json; /* rows as doc/design.md section 6's JSON lines (--json) */
    FILE *csv;
    uint32_t nodes, n0, n1;
    int header;
    const char *model; /* what predicted_us comes from: "plogp-br", "hockney", "lanes" */
} bcoll_out_t;

static void out_row(bcoll_out_t *out, const bcoll_row_t *r)
{
    const hb_stats_t *s = &r->st;
    double ratio = r->predicted > 0 ? s->median / r->predicted : 0.0;
    if (out->o->common.json || out->o->common.osu) { /* the shared row writer */
        char extra[512];
        int k =
            snprintf(extra, sizeof(extra),
                     "\"lanes\": %" PRIu32 ", \"predicted_us\": %.1f, \"ratio\": %.3f, "
                     "\"n0\": %" PRIu32 ", \"n1\": %" PRIu32 ", \"skew_us\": %.1f, "
                     "\"daemon_predicted_us\": %.1f, \"sweep\": %s, \"method\": \"%s\", "
                     "\"driver\": \"%s\", \"model\": \"%s\"",
                     r->lanes, r->predicted, ratio, out->n0, out->n1, r->skew_med, r->daemon_pred,
                     r->sweep ? "true" : "false", r->peer ? "maximum" : "global",
                     r->peer ? "mpirun" : "daemons", r->peer ? "none" : out->model);
        if (r->formula >= 0 && k > 0 && (size_t)k < sizeof(extra))
            k += snprintf(extra + k, sizeof(extra) - (size_t)k, ", \"formula_us\": %.1f",
                          r->formula);
        if (r->cpu_ms >= 0 && k > 0 && (size_t)k < sizeof(extra))
            k += snprintf(extra + k, sizeof(extra) - (size_t)k,
                          ", \"cpu_ms\": %.1f, \"cpu_max_ms\": %.1f", r->cpu_ms, r->cpu_max_ms);
        if (r->lanes_busy >= 0 && k > 0 && (size_t)k < sizeof(extra))
            snprintf(extra + k, sizeof(extra) - (size_t)k, ", \"wan_lanes_busy\": %d",
                     r->lanes_busy);
        hb_bench_row_t row = {.impl = r->peer ? "open-mpi" : hb_coll_alg_name(r->alg),
                              .nodes = out->nodes,
                              .ranks = out->nodes,
                              .size = r->size,
                              .reps = s->n,
                              .st = s,
                              .iters = s->n,
                              .extra_json = extra};
        hb_bench_out_row(&out->json, &row);
    } else {
        if (!out->header) {
            printf("# %-8s %-12s %5s %13s %11s %11s %11s %5s %10s %13s %6s %5s %9s %9s\n", "Size",
                   "Impl", "Lanes", "Avg(us)", "Min", "Max", "Median", "Reps", "CI(us)",
                   "Predicted(us)", "Ratio", "Busy", "CPU(ms)", "CPUmax");
            out->header = 1;
        }
        char busy[16] = "-";
        if (r->lanes_busy >= 0)
            snprintf(busy, sizeof(busy), "%d", r->lanes_busy);
        printf("%-10" PRIu64 " %-12s %5" PRIu32 " %13.1f %11.1f %11.1f %11.1f %5zu %10.1f %13.1f "
               "%6.2f %5s %9.1f %9.1f\n",
               r->size, r->peer ? "open-mpi" : hb_coll_alg_name(r->alg), r->lanes, s->mean, s->min,
               s->max, s->median, s->n, s->ci, r->predicted, ratio, busy, r->cpu_ms, r->cpu_max_ms);
    }
    fflush(stdout);
    if (out->csv != NULL)
        fprintf(out->csv,
                "%s,%s,%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%" PRIu32
                ",%zu,%.3f,%.3f,%.3f,%.3f,%.3f,"
                "%.4f,%.3f,%.1f,%d,%d\n",
                hb_coll_op_name(out->o->op), r->peer ? "open-mpi" : hb_coll_alg_name(r->alg),
                out->nodes, out->nodes, r->size, r->lanes, s->n, s->mean, s->median, s->min, s->max,
                s->p99, s->ci, s->confidence, r->predicted, r->sweep, r->lanes_busy);
}

static void note(const bcoll_opts_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const bcoll_opts_t *o, const char *fmt, ...)
{
    va_list ap;
    FILE *f = o->common.json || o->common.osu ? stderr : stdout;
    va_start(ap, fmt);
    fputs("# ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
}

/* gnuplot script + data; runs gnuplot when it is there. 0, or -1 (said why). */
static int plot_write(const bcoll_opts_t *o, const char *name, const char *title, const char *data,
                      const char *plots, const char *xlabel, int logx, const char *xrange)
{
    char path[PATH_MAX];
    const char *op = hb_coll_op_name(o->op);
    snprintf(path, sizeof(path), "%s/%s-%s.dat", o->plot_dir, op, name);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(data, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "hibar-bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s-%s.gp", o->plot_dir, op, name);
    f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "hibar-bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f,
            "# %s-%s.gp: written by hibar-bench %s; gnuplot %s-%s.gp\n"
            "set title \"%s\"\nset xlabel \"%s\"\nset ylabel \"time (ms)\"\nset key top right\n"
            "set grid\n%s%s",
            op, name, op, op, name, title, xlabel, logx ? "set logscale x 2\n" : "", xrange);
    fprintf(f, "set terminal svg size 800,500 dynamic\nset output \"%s-%s.svg\"\nplot %s\n", op,
            name, plots);
    fprintf(f, "set terminal png size 800,500\nset output \"%s-%s.png\"\nreplot\n", op, name);
    fclose(f);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof(cmd), "cd '%s' && gnuplot %s-%s.gp 1>&2", o->plot_dir, op, name);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        note(o, "plot: gnuplot not found; wrote %s", path);
        return 0;
    }
    if (system(cmd) != 0) {
        fprintf(stderr, "hibar-bench: gnuplot failed on %s\n", path);
        return -1;
    }
    note(o, "plot: %s/%s-%s.svg and .png", o->plot_dir, op, name);
    return 0;
}

/* Measured and predicted T(P), the paper's figure. */
static int plot_sweep(const bcoll_opts_t *o, const bcoll_row_t *r, size_t n)
{
    char data[8192], title[256];
    size_t k = 0;
    k += (size_t)snprintf(data + k, sizeof(data) - k,
                          "# P measured_median_ms ci_ms predicted_ms min_ms max_ms paper_tp_ms\n");
    for (size_t i = 0; i < n && k < sizeof(data); i++)
        k += (size_t)snprintf(data + k, sizeof(data) - k,
                              "%" PRIu32 " %.3f %.3f %.3f %.3f %.3f %.3f\n", r[i].lanes,
                              r[i].st.median / 1e3, r[i].st.ci / 1e3, r[i].predicted / 1e3,
                              r[i].st.min / 1e3, r[i].st.max / 1e3, r[i].formula / 1e3);
    snprintf(title, sizeof(title), "multi-lane %s of %.0f KiB per node: T(P)",
             hb_coll_op_name(o->op), (double)o->sweep_size / 1024.0);
    const char *op = hb_coll_op_name(o->op);
    char plots[1024];
    snprintf(plots, sizeof(plots),
             "\"%s-lanes.dat\" using 1:2:3 with yerrorbars title \"measured (median, CI)\" pt 7, "
             "\"%s-lanes.dat\" using 1:2 with lines notitle lc 1, "
             "\"%s-lanes.dat\" using 1:4 with linespoints title \"predicted (pipelined lanes)\" "
             "dt 2 pt 6, "
             "\"%s-lanes.dat\" using 1:7 with linespoints title \"paper T(P)\" dt 3 pt 4",
             op, op, op, op);
    char xr[96];
    snprintf(xr, sizeof(xr), "set xrange [0.5:%.1f]\nset xtics 1\nset yrange [0:*]\n",
             (double)n + 0.5);
    return plot_write(o, "lanes", title, data, plots, "lanes P", 0, xr);
}

/* Time against size per implementation, measured and predicted. */
static int plot_sizes(const bcoll_opts_t *o, const bcoll_row_t *r, size_t n)
{
    char data[16384], plots[2048];
    size_t k = 0, kp = 0;
    int blocks = 0;
    const char *op = hb_coll_op_name(o->op);
    for (int a = 0; a < HB_COLL_ALG_COUNT; a++) {
        int any = 0;
        for (size_t i = 0; i < n && k < sizeof(data); i++) {
            if (r[i].alg != (hb_coll_alg_t)a || r[i].sweep)
                continue;
            if (!any)
                k += (size_t)snprintf(data + k, sizeof(data) - k,
                                      "# %s: size_bytes measured_median_ms ci_ms predicted_ms\n",
                                      hb_coll_alg_name((hb_coll_alg_t)a));
            any = 1;
            k += (size_t)snprintf(data + k, sizeof(data) - k, "%" PRIu64 " %.3f %.3f %.3f\n",
                                  r[i].size, r[i].st.median / 1e3, r[i].st.ci / 1e3,
                                  r[i].predicted / 1e3);
        }
        if (!any || k >= sizeof(data))
            continue;
        k += (size_t)snprintf(data + k, sizeof(data) - k, "\n\n");
        kp += (size_t)snprintf(plots + kp, sizeof(plots) - kp,
                               "%s\"%s-sizes.dat\" index %d using 1:2:3 with yerrorlines title "
                               "\"%s measured\" lc %d pt 7, \"%s-sizes.dat\" index %d using 1:4 "
                               "with lines title \"%s predicted\" lc %d dt 2",
                               blocks ? ", " : "", op, blocks, hb_coll_alg_name((hb_coll_alg_t)a),
                               blocks + 1, op, blocks, hb_coll_alg_name((hb_coll_alg_t)a),
                               blocks + 1);
        blocks++;
        if (kp >= sizeof(plots))
            return -1;
    }
    if (blocks == 0)
        return 0;
    char title[128], xr[160];
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = r[i].size < lo ? r[i].size : lo;
        hi = r[i].size > hi ? r[i].size : hi;
    }
    snprintf(title, sizeof(title), "%s across two sites: measured and predicted", op);
    snprintf(xr, sizeof(xr), "set xrange [%.0f:%.0f]\nset format x \"%%.0b%%BB\"\nset logscale y\n",
             (double)lo / 1.5, (double)hi * 1.5);
    return plot_write(o, "sizes", title, data, plots, "bytes per node", 1, xr);
}

/* ---- the mode ---- */

static int run(const bcoll_opts_t *o)
{
    char err[HB_CFG_ERRLEN] = "";
    hb_topo_spec_t spec;
    hb_topo_t *topo = NULL;
    bcoll_daemons_t dm = {.root = 0};
    bcoll_model_t m;
    bcoll_out_t out = {.o = o};
    bcoll_row_t *rows = NULL;
    size_t nrows = 0, cap = 0;
    bcoll_lanes_t *lb = NULL;
    int peer_rc = 0, rc = hb_cfg_load(o->config, o->over, o->n_over, &dm.cfg, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "hibar-bench: %s\n", err[0] ? err : hibar_strerror(rc));
        return 2;
    }
    if ((rc = hb_cfg_topo_spec(dm.cfg, &spec)) != 0 ||
        (rc = hb_topo_build(&spec, &topo, err, sizeof(err))) != 0) {
        fprintf(stderr, "hibar-bench: topology: %s\n", err[0] ? err : hibar_strerror(rc));
        hb_cfg_free(dm.cfg);
        return 2;
    }
    model_init(&m, dm.cfg, topo, dm.root, o->seg);
    if (o->op == HB_COLL_ALLTOALL)
        note(o, "model: %s",
             m.have_plogp ? "PlogP-BR (cached hibar-bench logp parameters)"
                          : "Hockney (no cached PlogP parameters)");
    if (m.measured)
        note(o, "model: measured b_WAN(P), P = 1..%" PRIu32 " (hibar-bench lanes)",
             m.lanes.n_b_wan);
    out.nodes = topo->n_nodes;
    out.model = o->op != HB_COLL_ALLTOALL ? "lanes" : m.have_plogp ? "plogp-br" : "hockney";
    out.n0 = m.n0;
    out.n1 = m.n1;
    if (topo->n_sites > 2)
        note(o, "note: %" PRIu32 " sites; the model counts the root's site and one other",
             topo->n_sites);
    int use_stats = o->lane_stats;
    if (use_stats < 0)
        use_stats = getenv("HIBAR_TESTBED_STATS") != NULL && m.n1 > 0;
    if (use_stats && (lb = malloc(2 * sizeof(*lb))) == NULL) {
        rc = HIBAR_ERR_NOMEM;
        goto out;
    }
    if (o->common.json || o->common.osu) {
        if (hb_bench_out_open(&out.json, hb_coll_op_name(o->op), &o->common) != 0) {
            rc = HIBAR_ERR_IO;
            goto out;
        }
        hb_bench_out_close(&out.json); /* CSV is written here, with impl and lanes */
    }
    if (o->common.csv != NULL) {
        out.csv = fopen(o->common.csv, "w");
        if (out.csv == NULL) {
            fprintf(stderr, "hibar-bench: cannot write %s: %s\n", o->common.csv, strerror(errno));
            rc = HIBAR_ERR_IO;
            goto out;
        }
        fprintf(out.csv, "bench,impl,nodes,ranks,size,lanes,reps,avg_us,median_us,min_us,max_us,"
                         "p99_us,ci_us,confidence,predicted_us,sweep,wan_lanes_busy\n");
    }
    if (o->plot_dir != NULL && mkdir(o->plot_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "hibar-bench: cannot create %s: %s\n", o->plot_dir, strerror(errno));
        rc = HIBAR_ERR_IO;
        goto out;
    }
    if ((rc = daemons_open(&dm, o)) != 0)
        goto out;
    bcoll_driver_t drv = {.name = "daemons", .ctx = &dm, .run = daemons_run};
    const hb_cfg_links_t *l = &dm.cfg->links;
    note(o,
         "hibar-bench %s: %" PRIu32 " daemons (1 rank each), n0 %" PRIu32 " n1 %" PRIu32
         ", cluster %s, root %s",
         hb_coll_op_name(o->op), topo->n_nodes, m.n0, m.n1, dm.cfg->cluster,
         dm.cfg->nodes[dm.root].name);
    note(o,
         "model: b_LAN %g Mbit/s, alpha %g us, b_WAN %g Mbit/s per lane, B_WAN %g Mbit/s, L %g "
         "us; time = last completion - first start over the daemons",
         l->lan_bw_mbps, l->lan_lat_us, l->wan_lane_bw_mbps, l->wan_total_bw_mbps, l->wan_lat_us);

    /* size rows, then the sweep */
    size_t n_plan =
        o->n_sizes * (HB_COLL_ALG_COUNT + 1) + (o->sweep ? (m.n0 < m.n1 ? m.n0 : m.n1) : 0);
    cap = n_plan ? n_plan : 1;
    rows = calloc(cap, sizeof(*rows));
    if (rows == NULL) {
        rc = HIBAR_ERR_NOMEM;
        goto out;
    }
    for (size_t si = 0; si < o->n_sizes && rc == 0; si++) {
        for (int a = 0; a < HB_COLL_ALG_COUNT && rc == 0; a++) {
            if (!o->algs[a])
                continue;
            hb_coll_alg_t alg = (hb_coll_alg_t)a;
            if (m.n1 == 0 && (alg == HB_COLL_ALG_SINGLE_LANE || alg == HB_COLL_ALG_MULTI_LANE))
                continue;
            bcoll_row_t *r = &rows[nrows];
            *r = (bcoll_row_t){.alg = alg, .size = o->sizes[si]};
            if (alg == HB_COLL_ALG_MULTI_LANE)
                r->lanes = o->lanes ? o->lanes : model_popt(&m, o->op, (double)r->size);
            rc = measure_row(&drv, o, &m, use_stats, lb, r);
            if (rc == 0) {
                out_row(&out, r);
                nrows++;
            }
        }
        if (o->compare && rc == 0) {
            bcoll_row_t *r = &rows[nrows];
            uint64_t it = 0;
            *r = (bcoll_row_t){.size = o->sizes[si],
                               .peer = 1,
                               .predicted = -1.0,
                               .formula = -1.0,
                               .daemon_pred = -1.0,
                               .cpu_ms = -1.0,
                               .cpu_max_ms = -1.0,
                               .lanes_busy = -1};
            /* TCP, as the daemons use it, and as many repetitions as the daemons' rows got */
            /* a peer that fails costs its row only: hibar's rows of the other sizes still come,
             * and the exit status says the comparison is not whole */
            if (hb_bench_mpi_peer(hb_coll_op_name(o->op), topo->n_nodes, o->sizes[si], o->max_reps,
                                  2, "--mca btl self,tcp", &r->st, &it) != 0) {
                peer_rc = HIBAR_ERR_IO;
                continue;
            }
            out_row(&out, r);
            nrows++;
        }
    }
    size_t sweep0 = nrows;
    uint32_t pmax = m.n0 < m.n1 ? m.n0 : m.n1;
    if (o->sweep && m.n1 > 0 && rc == 0) {
        for (uint32_t P = 1; P <= pmax && rc == 0; P++) {
            bcoll_row_t *r = &rows[nrows];
            *r = (bcoll_row_t){
                .alg = HB_COLL_ALG_MULTI_LANE, .size = o->sweep_size, .lanes = P, .sweep = 1};
            rc = measure_row(&drv, o, &m, use_stats, lb, r);
            if (rc == 0) {
                out_row(&out, r);
                nrows++;
            }
        }
    }
    if (rc != 0)
        goto out;

    /* what the rows say against the targets */
    for (size_t si = 0; si < o->n_sizes; si++) {
        const bcoll_row_t *sl = NULL, *ml = NULL, *fl = NULL;
        for (size_t i = 0; i < sweep0; i++) {
            if (rows[i].size != o->sizes[si] || rows[i].peer)
                continue;
            if (rows[i].alg == HB_COLL_ALG_SINGLE_LANE)
                sl = &rows[i];
            if (rows[i].alg == HB_COLL_ALG_MULTI_LANE)
                ml = &rows[i];
            if (rows[i].alg == HB_COLL_ALG_FLAT)
                fl = &rows[i];
        }
        if (sl != NULL && ml != NULL)
            note(o, "%zu bytes: single-lane / multi-lane (P %" PRIu32 ") = %.2f", o->sizes[si],
                 ml->lanes, sl->st.median / ml->st.median);
        if (fl != NULL && ml != NULL)
            note(o, "%zu bytes: flat / multi-lane (P %" PRIu32 ") = %.2f", o->sizes[si], ml->lanes,
                 fl->st.median / ml->st.median);
        const bcoll_row_t *pw = NULL, *om = NULL;
        for (size_t i = 0; i < sweep0; i++) {
            if (rows[i].size == o->sizes[si] && rows[i].peer)
                om = &rows[i];
            else if (rows[i].size == o->sizes[si] && rows[i].alg == HB_COLL_ALG_PAIRWISE)
                pw = &rows[i];
        }
        if (fl != NULL && pw != NULL)
            note(o, "%zu bytes: flat / pairwise = %.2f measured, %.2f predicted", o->sizes[si],
                 fl->st.median / pw->st.median,
                 pw->predicted > 0 ? fl->predicted / pw->predicted : -1.0);
        const bcoll_row_t *best =
            fl != NULL && (pw == NULL || fl->st.median <= pw->st.median) ? fl : pw;
        if (om != NULL && best != NULL)
            note(o, "%zu bytes: Open MPI / hibar %s = %.2f", o->sizes[si],
                 hb_coll_alg_name(best->alg), om->st.median / best->st.median);
    }
    if (nrows > sweep0) {
        const bcoll_row_t *sw = rows + sweep0;
        size_t ns = nrows - sweep0, best = 0;
        double worst = 0.0;
        uint32_t popt = model_popt(&m, o->op, (double)o->sweep_size);
        for (size_t i = 0; i < ns; i++) {
            if (sw[i].st.median < sw[best].st.median)
                best = i;
            double d = fabs(sw[i].predicted - sw[i].st.median) / sw[i].st.median;
            if (d > worst)
                worst = d;
        }
        if (!o->common.json && !o->common.osu) {
            printf("# P sweep, multi-lane %s of %" PRIu64 " bytes per node (ms)\n",
                   hb_coll_op_name(o->op), o->sweep_size);
            printf("# %-3s %12s %10s %14s %9s %12s %9s %6s\n", "P", "measured", "CI",
                   "predicted T(P)", "error", "paper T(P)", "error", "busy");
            for (size_t i = 0; i < ns; i++)
                printf("%-5" PRIu32 " %12.1f %10.1f %14.1f %8.1f%% %12.1f %8.1f%% %6d%s%s\n",
                       sw[i].lanes, sw[i].st.median / 1e3, sw[i].st.ci / 1e3, sw[i].predicted / 1e3,
                       100.0 * (sw[i].predicted - sw[i].st.median) / sw[i].st.median,
                       sw[i].formula / 1e3,
                       100.0 * (sw[i].formula - sw[i].st.median) / sw[i].st.median,
                       sw[i].lanes_busy, sw[i].lanes == popt ? "  <- P_opt (model)" : "",
                       i == best ? "  <- best measured" : "");
        }
        double t_popt = -1.0;
        for (size_t i = 0; i < ns; i++)
            if (sw[i].lanes == popt)
                t_popt = sw[i].st.median;
        note(o,
             "P_opt (model) %" PRIu32 ", best measured P %" PRIu32
             "; measured T(P_opt) / T(best) = %.3f; predicted T(P) off by at most %.1f%%",
             popt, sw[best].lanes, t_popt > 0 ? t_popt / sw[best].st.median : -1.0, 100.0 * worst);
        if (o->plot_dir != NULL && plot_sweep(o, sw, ns) != 0)
            rc = HIBAR_ERR_IO;
    }
    if (o->plot_dir != NULL && sweep0 > 0 && plot_sizes(o, rows, sweep0) != 0)
        rc = HIBAR_ERR_IO;
    if (rc == 0)
        rc = peer_rc;
out:
    daemons_close(&dm, o);
    if (out.csv != NULL && fclose(out.csv) != 0)
        rc = HIBAR_ERR_IO;
    free(rows);
    free(lb);
    hb_topo_free(topo);
    hb_cfg_free(dm.cfg);
    return rc == 0 ? 0 : 1;
}

int hb_bench_coll_wants(int argc, char **argv)
{
    if (argc < 1 || (strcmp(argv[0], "scatter") != 0 && strcmp(argv[0], "gather") != 0 &&
                     strcmp(argv[0], "alltoall") != 0))
        return 0;
    if (strcmp(argv[0], "gather") == 0 || strcmp(argv[0], "alltoall") == 0)
        return 1;
    int ranks = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 || strncmp(argv[i], "--config=", 9) == 0)
            return 1;
        ranks |= strcmp(argv[i], "--ranks") == 0 || strncmp(argv[i], "--ranks=", 8) == 0;
    }
    /* inside the test bed, without the one-node client mode's --ranks: the bed's cluster */
    return !ranks && getenv("HIBAR_TESTBED_CONFIG") != NULL;
}

int hb_bench_coll_main(int argc, char **argv)
{
    /* gather --ranks N: libhibar's gather, as scatter --ranks is (bench_client.c) */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--ranks") == 0 || strncmp(argv[i], "--ranks=", 8) == 0 ||
            strcmp(argv[i], "-n") == 0)
            return hb_bench_gather_main(argc, argv);
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"sizes", required_argument, NULL, 's'},
                                         {"alg", required_argument, NULL, 'a'},
                                         {"lanes", required_argument, NULL, 'P'},
                                         {"sweep-lanes", no_argument, NULL, 'S'},
                                         {"sweep-size", required_argument, NULL, 'Z'},
                                         {"seg", required_argument, NULL, 'g'},
                                         {"min-reps", required_argument, NULL, 'm'},
                                         {"max-reps", required_argument, NULL, 'M'},
                                         {"err", required_argument, NULL, 'e'},
                                         {"max-secs", required_argument, NULL, 'T'},
                                         {"plot", required_argument, NULL, 'p'},
                                         {"lane-stats", no_argument, NULL, 'L'},
                                         {"no-lane-stats", no_argument, NULL, 'N'},
                                         {"set", required_argument, NULL, 'o'},
                                         {"keep", no_argument, NULL, 'k'},
                                         {"compare", no_argument, NULL, 'C'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bcoll_opts_t o = {.sweep_size = 4u << 20,
                      .min_reps = 3,
                      .max_reps = 10,
                      .err = 0.05,
                      .max_secs = 30.0,
                      .lane_stats = -1};
    const char *mode = argv[0];
    int c;
    o.op = strcmp(mode, "gather") == 0     ? HB_COLL_GATHER
           : strcmp(mode, "alltoall") == 0 ? HB_COLL_ALLTOALL
                                           : HB_COLL_SCATTER;
    if (o.op == HB_COLL_ALLTOALL)
        o.algs[HB_COLL_ALG_FLAT] = o.algs[HB_COLL_ALG_PAIRWISE] = 1;
    else
        o.algs[HB_COLL_ALG_FLAT] = o.algs[HB_COLL_ALG_SINGLE_LANE] =
            o.algs[HB_COLL_ALG_MULTI_LANE] = 1;
    parse_sizes("64K..8M", &o);
    if (hb_bench_common_parse(&argc, argv, &o.common) != 0)
        return 2;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:s:a:o:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'c':
            o.config = optarg;
            break;
        case 's':
            if (parse_sizes(optarg, &o) != 0) {
                fprintf(stderr, "hibar-bench: bad --sizes '%s' (e.g. 64K..8M or 1K,1M)\n", optarg);
                return 2;
            }
            break;
        case 'a':
            if (parse_algs(optarg, &o) != 0) {
                fprintf(stderr,
                        "hibar-bench: bad --alg '%s' (flat, binomial, single-lane, "
                        "multi-lane; alltoall: flat, pairwise)\n",
                        optarg);
                return 2;
            }
            break;
        case 'P':
            o.lanes = (uint32_t)strtoul(optarg, &end, 10);
            break;
        case 'S':
            o.sweep = 1;
            break;
        case 'Z':
            o.sweep_size = parse_size(optarg);
            if (o.sweep_size == 0) {
                fprintf(stderr, "hibar-bench: bad --sweep-size '%s'\n", optarg);
                return 2;
            }
            break;
        case 'g':
            o.seg = parse_size(optarg);
            if (o.seg == 0) {
                fprintf(stderr, "hibar-bench: bad --seg '%s'\n", optarg);
                return 2;
            }
            break;
        case 'm':
            o.min_reps = (unsigned)strtoul(optarg, &end, 10);
            break;
        case 'M':
            o.max_reps = (unsigned)strtoul(optarg, &end, 10);
            break;
        case 'e':
            o.err = strtod(optarg, &end);
            break;
        case 'T':
            o.max_secs = strtod(optarg, &end);
            break;
        case 'p':
            o.plot_dir = optarg;
            break;
        case 'L':
            o.lane_stats = 1;
            break;
        case 'N':
            o.lane_stats = 0;
            break;
        case 'o':
            if (o.n_over >= BCOLL_MAX_OVER) {
                fprintf(stderr, "hibar-bench: too many --set\n");
                return 2;
            }
            o.over[o.n_over++] = optarg;
            break;
        case 'k':
            o.keep = 1;
            break;
        case 'C':
            o.compare = 1;
            break;
        case 'h':
            usage(stdout, mode);
            return 0;
        default:
            usage(stderr, mode);
            return 2;
        }
        if (end != NULL && (*end != '\0' || end == optarg)) {
            fprintf(stderr, "hibar-bench: bad number '%s'\n", optarg);
            return 2;
        }
    }
    if (o.config == NULL) /* inside tests/netns/testbed: the bed's cluster */
        o.config = getenv("HIBAR_TESTBED_CONFIG");
    if (o.config == NULL || optind != argc || o.min_reps < 2 || o.max_reps < o.min_reps ||
        !(o.err > 0.0) || !(o.max_secs > 0.0)) {
        if (o.config == NULL)
            fprintf(stderr,
                    "hibar-bench %s: --config FILE is required (the cluster; inside "
                    "tests/netns/testbed: $HIBAR_TESTBED_CONFIG)\n",
                    mode);
        usage(stderr, mode);
        return 2;
    }
    return run(&o);
}
