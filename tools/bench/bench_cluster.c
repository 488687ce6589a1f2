/* bench_cluster.c: hibar-bench cluster-barrier: whole-cluster barriers on an (emulated) cluster vs
 * the paper's formula. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "hb_log.h"
#include "hb_proc.h"
#include "hb_stats.h"
#include "hb_time.h"
#include "hbd_client.h"
#include "hbd_emu.h"
#include "hibar.h"
#include "hier.h"
#include "topo.h"

/*
 * Per protocol: start the emulated cluster of --config with that protocol unless one is
 * running, warm up, then drive --iters barriers through every daemon's control socket (all
 * asked at once; a sample is first request -> last reply). In the same run, T_IB (chassis
 * barrier through the hwbarrier, as the daemons run it) and T_SR (one tree hop, half a
 * ping-pong between a non-root Center and its parent daemon, "tsr") three ways:
 *   step    as the protocol's steps run them (predicted_us uses these): per tree depth, the
 *           chassis (links up) of that depth at once, the concurrency of one step of the
 *           waves. T_IB: the ports asked "tib 1" first (they arrive and sleep), the Centers
 *           BC_STAGGER_US later; a round is the last arrival -> the last completion over all
 *           those nodes (the daemons' CLOCK_MONOTONIC stamps), as scripts/trace-steps.py
 *           times a chassis step. T_SR: "tsr" on the Centers of that depth at once. Each
 *           protocol's critical path crosses the depths a known number of times (scmd: root
 *           2, inter-level 3, low-end 2 chassis barriers, 3 hops per link level; tree: 1, 2,
 *           2 and 2), so t_ib_step_us / t_sr_step_us are those path-weighted means, and
 *           (4 + 3L)·t_ib_step + 3(L + 1)·t_sr_step is the sum over the steps.
 *   all     every chassis / every link at once, rounds back to back (t_ib_us, t_sr_us)
 *   alone   the root chassis / the deepest link alone, back to back (t_ib_alone_us, ...)
 * and print the predictions of config/topo.h: (4 + 3L)·T_IB + 3(L + 1)·T_SR for scmd,
 * hb_topo_predict_tree for tree, with each set. Also the driver's own share: a "ping" to
 * every daemon at once, to the last reply (t_ctl_us; ratio_net leaves it out), and the
 * protocol alone: last arrival at a daemon to last completion, from the stamps the daemons
 * put in their replies (CLOCK_MONOTONIC, shared on one host: protocol_median_us; first to
 * last arrival: arrive_spread_us), the CPU the daemons use per barrier (all threads, probes
 * left out: cpu_per_barrier_us) and per ping round (cpu_per_ping_us; hibar-sim's host model
 * is scaled to these). With --idle-cpu S, the CPU the idle daemons use together over S
 * seconds is measured (percent of one core).
 */

typedef struct bc_opts {
    const char *config;
    const char *protocols;
    const char *over[32];
    size_t n_over;
    unsigned iters, warmup, probe_iters;
    double idle_s;
    int keep;
    hb_bench_common_t common;
    hb_bench_out_t *out;
} bc_opts_t;

#define BC_BLOCKS 5
#define BC_MAXDEPTH 16
/* the ports of a stepped T_IB round arrive this much before their Centers: long enough to be
 * asleep (an emulated cluster has no yield stage; elsewhere it lasts 2 ms) */
#define BC_STAGGER_US 3000

typedef struct bc_probe {
    double t_ib, t_sr, t_ib_alone, t_sr_alone;
    double t_ctl; /* "ping" to every daemon at once -> last reply: the driver's own share */
    double t_ib_lv[BC_MAXDEPTH + 1]; /* stepped T_IB of the chassis at depth d */
    double t_sr_lv[BC_MAXDEPTH + 1]; /* T_SR of the links from depth d up, d >= 1, at once */
    double cpu_ctl;                  /* the daemons' CPU per ping round, all together */
} bc_probe_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: hibar-bench cluster-barrier --config FILE [--protocol scmd|tree|scmd,tree]\n"
               "         [--iters N (1000)] [--warmup N (100)] [--probe-iters N (300)]\n"
               "         [--idle-cpu SECONDS] [--set KEY=VALUE]... [--keep] " HB_BENCH_COMMON_USAGE
               "\n"
               "predicted_us: the paper's formula with T_IB and T_SR measured as the protocol's\n"
               "steps run them (t_ib_step_us, t_sr_step_us: per depth, the chassis or links of\n"
               "one step at once, sleeping ports woken by the last arrival); also printed: every\n"
               "chassis/link at once back to back (t_ib_us, t_sr_us, predicted_all_us) and one\n"
               "alone (t_ib_alone_us, t_sr_alone_us, predicted_alone_us).\n");
}

static double field_num(const char *reply, const char *word)
{
    /* "ok tib 12.3 ..." / "ok tsr 45.6 ..." -> the number after word */
    const char *p = strstr(reply, word);
    return p ? strtod(p + strlen(word), NULL) : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *x, size_t n)
{
    qsort(x, n, sizeof(double), cmp_double);
    return n ? x[n / 2] : -1;
}

/* CPU seconds of every daemon of cfg together (all their threads; a daemon whose process
 * cannot be read counts 0). */
static double daemons_cpu(const hb_cfg_t *cfg)
{
    double s = 0;
    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        double c = hb_proc_cpu_seconds(hbd_client_pid(cfg, i));
        if (c > 0)
            s += c;
    }
    return s;
}

/* T_IB: "tib n" to every node of the given chassis at once; median of the Centers' medians. */
static int probe_tib(hbd_cluster_t *cl, const hb_topo_t *t, const uint32_t *chassis, uint32_t nc,
                     unsigned n, double *out)
{
    uint32_t *nodes = malloc(sizeof(uint32_t) * t->n_nodes), k = 0;
    char(*rep)[512] = malloc(512 * (size_t)t->n_nodes);
    double *med = malloc(sizeof(double) * nc);
    char cmd[32];
    int rc = nodes && rep && med ? 0 : HIBAR_ERR_NOMEM;
    for (uint32_t c = 0; c < nc && rc == 0; c++)
        for (uint32_t j = 0; j < t->chassis[chassis[c]].n_nodes; j++)
            nodes[k++] = t->chassis[chassis[c]].nodes[j];
    snprintf(cmd, sizeof(cmd), "tib %u", n);
    if (rc == 0)
        rc = hbd_cluster_all(cl, nodes, k, cmd, rep, 120000);
    uint32_t m = 0;
    for (uint32_t i = 0; i < k && rc == 0; i++) {
        if (strncmp(rep[i], "ok tib ", 7) != 0) {
            hb_log_error("tib on node %" PRIu32 ": %s", nodes[i], rep[i]);
            rc = HIBAR_ERR_PROTO;
        } else if (t->nodes[nodes[i]].port == 0) {
            med[m++] = field_num(rep[i], "ok tib ");
        }
    }
    if (rc == 0)
        *out = median(med, m);
    free(nodes);
    free(rep);
    free(med);
    return rc;
}

/* "arrived=NS done=NS" of a tib reply; 0 or PROTO. */
static int tib_stamps(const char *reply, uint64_t *a_p, uint64_t *d_p)
{
    const char *a = strstr(reply, " arrived="), *d = strstr(reply, " done=");
    if (strncmp(reply, "ok tib ", 7) != 0 || a == NULL || d == NULL)
        return HIBAR_ERR_PROTO;
    *a_p = strtoull(a + 9, NULL, 10);
    *d_p = strtoull(d + 6, NULL, 10);
    return 0;
}

/* T_IB as a step runs it (see the top): the chassis at `depth` at once, ports first, Centers
 * BC_STAGGER_US later; median over n rounds of last arrival -> last completion. */
static int probe_tib_step(hbd_cluster_t *cl, const hb_topo_t *t, uint32_t depth, unsigned n,
                          double *out)
{
    uint32_t *nodes = malloc(sizeof(uint32_t) * t->n_nodes), k = 0, np = 0;
    double *v = malloc(sizeof(double) * n);
    int rc = nodes && v ? 0 : HIBAR_ERR_NOMEM;
    for (int pass = 0; pass < 2 && rc == 0; pass++) { /* ports, then Centers */
        if (pass == 1)
            np = k;
        for (uint32_t c = 0; c < t->n_chassis; c++)
            for (uint32_t j = 0; t->chassis[c].depth == depth && j < t->chassis[c].n_nodes; j++)
                if ((j == 0) == (pass == 1))
                    nodes[k++] = t->chassis[c].nodes[j];
    }
    for (unsigned r = 0; r < n && rc == 0 && k > 0; r++) {
        struct timespec ts = {0, BC_STAGGER_US * 1000L};
        uint64_t last_a = 0, last_d = 0;
        for (uint32_t i = 0; i < k && rc == 0; i++) {
            if (i == np)
                nanosleep(&ts, NULL);
            rc = cl->fd[nodes[i]] < 0 ? HIBAR_ERR_NOT_FOUND
                                      : hbd_client_send(cl->fd[nodes[i]], "tib 1");
        }
        for (uint32_t i = 0; i < k && rc == 0; i++) {
            char rep[512];
            uint64_t a, d;
            rc = hbd_client_recv(cl->fd[nodes[i]], rep, sizeof(rep), 30000);
            if (rc == 0 && (rc = tib_stamps(rep, &a, &d)) != 0)
                hb_log_error("tib on node %" PRIu32 ": %s", nodes[i], rep);
            if (rc == 0) {
                last_a = a > last_a ? a : last_a;
                last_d = d > last_d ? d : last_d;
            }
        }
        v[r] = last_d > last_a ? (double)(last_d - last_a) / 1e3 : 0;
    }
    if (rc == 0)
        *out = k > 0 ? median(v, n) : 0;
    free(nodes);
    free(v);
    return rc;
}

/* T_SR: "tsr n" on the given non-root Centers at once; median of the one-way medians. */
static int probe_tsr(hbd_cluster_t *cl, const uint32_t *nodes, uint32_t k, unsigned n, double *out)
{
    char(*rep)[512] = malloc(512 * (size_t)(k ? k : 1));
    double *v = malloc(sizeof(double) * (k ? k : 1));
    char cmd[32];
    int rc = rep && v ? 0 : HIBAR_ERR_NOMEM;
    snprintf(cmd, sizeof(cmd), "tsr %u", n);
    if (rc == 0)
        rc = hbd_cluster_all(cl, nodes, k, cmd, rep, 120000);
    for (uint32_t i = 0; i < k && rc == 0; i++) {
        if (strncmp(rep[i], "ok tsr ", 7) != 0) {
            hb_log_error("tsr on node %" PRIu32 ": %s", nodes[i], rep[i]);
            rc = HIBAR_ERR_PROTO;
        } else {
            v[i] = field_num(rep[i], "ok tsr ");
        }
    }
    if (rc == 0)
        *out = median(v, k);
    free(rep);
    free(v);
    return rc;
}

/* The driver's fan-out and fan-in alone: every daemon asked "ping" at once, to the last reply. */
static int probe_ctl(hbd_cluster_t *cl, unsigned n, double *out, double *cpu_p)
{
    double cpu0 = daemons_cpu(cl->cfg);
    uint32_t *nodes = malloc(sizeof(uint32_t) * cl->n);
    char(*rep)[512] = malloc(512 * (size_t)cl->n);
    double *v = malloc(sizeof(double) * n);
    int rc = nodes && rep && v ? 0 : HIBAR_ERR_NOMEM;
    for (uint32_t i = 0; rc == 0 && i < cl->n; i++)
        nodes[i] = i;
    for (unsigned k = 0; k < n && rc == 0; k++) {
        uint64_t t0 = hb_time_now_ns();
        rc = hbd_cluster_all(cl, nodes, cl->n, "ping", rep, 10000);
        v[k] = (double)(hb_time_now_ns() - t0) / 1e3;
    }
    if (rc == 0) {
        *out = median(v, n);
        *cpu_p = (daemons_cpu(cl->cfg) - cpu0) * 1e6 / n;
    }
    free(nodes);
    free(rep);
    free(v);
    return rc;
}

static int probe(hbd_cluster_t *cl, const hb_topo_t *t, unsigned n, bc_probe_t *p)
{
    uint32_t *all = malloc(sizeof(uint32_t) * t->n_chassis);
    uint32_t *centers = malloc(sizeof(uint32_t) * t->n_chassis), nc = 0;
    int rc = all && centers ? 0 : HIBAR_ERR_NOMEM;
    for (uint32_t c = 0; rc == 0 && c < t->n_chassis; c++) {
        all[c] = c;
        if (t->chassis[c].parent != HB_TOPO_NONE)
            centers[nc++] = t->chassis[c].nodes[0];
    }
    /* alone: the root chassis; the deepest non-root Center's link */
    if (rc == 0)
        rc = probe_tib(cl, t, all, 1, n, &p->t_ib_alone);
    if (rc == 0)
        rc = probe_tib(cl, t, all, t->n_chassis, n, &p->t_ib);
    p->t_sr = p->t_sr_alone = 0;
    if (rc == 0 && nc > 0) {
        rc = probe_tsr(cl, centers + nc - 1, 1, n, &p->t_sr_alone);
        if (rc == 0)
            rc = probe_tsr(cl, centers, nc, n, &p->t_sr);
    }
    if (rc == 0)
        rc = probe_ctl(cl, n, &p->t_ctl, &p->cpu_ctl);
    /* as the steps run them: depth by depth */
    for (uint32_t d = 0; rc == 0 && d <= t->depth && d <= BC_MAXDEPTH; d++) {
        uint32_t k = 0;
        rc = probe_tib_step(cl, t, d, n, &p->t_ib_lv[d]);
        for (uint32_t c = 0; rc == 0 && d > 0 && c < t->n_chassis; c++)
            if (t->chassis[c].depth == d)
                centers[k++] = t->chassis[c].nodes[0];
        if (rc == 0 && k > 0)
            rc = probe_tsr(cl, centers, k, n, &p->t_sr_lv[d]);
    }
    free(all);
    free(centers);
    return rc;
}

/* How often the critical path of protocol p takes a chassis barrier at depth d (*ib_p) and a
 * hop between depths d - 1 and d (*sr_p), on a tree of the given depth (see the top). */
static void path_weights(int scmd, uint32_t depth, uint32_t d, double *ib_p, double *sr_p)
{
    *sr_p = d == 0 ? 0 : scmd ? 3 : 2;
    if (depth == 0)
        *ib_p = 1;
    else if (d == 0)
        *ib_p = scmd ? 2 : 1;
    else if (d == depth)
        *ib_p = 2;
    else
        *ib_p = scmd ? 3 : 2;
}

static int idle_cpu(const hb_cfg_t *cfg, double secs, double *pct_p)
{
    double before = daemons_cpu(cfg);
    uint64_t t0 = hb_time_now_ns();
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    double after = daemons_cpu(cfg);
    double wall = (double)(hb_time_now_ns() - t0) / 1e9;
    *pct_p = 100.0 * (after - before) / wall;
    return 0;
}

static int run_protocol(const bc_opts_t *o, const char *proto, double *median_p)
{
    const char *over[40];
    size_t n_over = 0;
    char pset[32], err[HB_CFG_ERRLEN];
    for (size_t i = 0; i < o->n_over; i++)
        over[n_over++] = o->over[i];
    snprintf(pset, sizeof(pset), "protocol=%s", proto);
    over[n_over++] = pset;
    hb_cfg_t *cfg = NULL;
    hb_topo_t *topo = NULL;
    hb_topo_spec_t spec;
    int rc = hb_cfg_load(o->config, over, n_over, &cfg, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "hibar-bench: %s\n", err);
        return 2;
    }
    if ((rc = hb_cfg_topo_spec(cfg, &spec)) != 0 ||
        (rc = hb_topo_build(&spec, &topo, err, sizeof(err))) != 0) {
        fprintf(stderr, "hibar-bench: %s\n", err);
        hb_cfg_free(cfg);
        return 2;
    }
    hbd_emu_opts_t eo = {.config = o->config, .over = over, .n_over = n_over, .timeout_ms = 60000};
    int started = 0;
    hbd_cluster_t *cl = NULL;
    uint64_t coll = 0;
    if ((rc = hbd_emu_acquire(cfg, &eo, 30000, "hibar-bench", &started, &cl)) != 0)
        goto out_cl;
    if ((rc = hbd_cluster_next_coll(cl, &coll)) != 0) {
        fprintf(stderr, "hibar-bench: cluster %s not usable: %s\n", cfg->cluster,
                hibar_strerror(rc));
        goto out_cl;
    }
    /* a running cluster keeps its protocol: say which one is measured */
    char reply[512], running[16] = "?";
    if (hbd_client_send(cl->fd[0], "status") == 0 &&
        hbd_client_recv(cl->fd[0], reply, sizeof(reply), 5000) == 0)
        hbd_client_field(reply, "protocol", running, sizeof(running));
    if (strcmp(running, proto) != 0)
        fprintf(stderr, "hibar-bench: note: the running cluster uses protocol %s, not %s\n",
                running, proto);
    hbd_drive_opts_t dopt;
    hbd_drive_opts_init(&dopt);
    double *x = malloc(sizeof(double) * (o->iters ? o->iters : 1));
    double *y = malloc(sizeof(double) * (o->iters ? o->iters : 1));
    double *sp_v = malloc(sizeof(double) * (o->iters ? o->iters : 1));
    unsigned ny = 0;
    if (x == NULL || y == NULL || sp_v == NULL) {
        free(x);
        free(y);
        free(sp_v);
        rc = HIBAR_ERR_NOMEM;
        goto out_cl;
    }
    /* barriers and probes alternate in BC_BLOCKS blocks, so that both see the same machine
     * (this host is shared); each probe figure is the median of its block medians */
    bc_probe_t pb[BC_BLOCKS];
    unsigned nb = 0, per_block = (o->iters + BC_BLOCKS - 1) / BC_BLOCKS;
    unsigned probe_n = o->probe_iters / BC_BLOCKS ? o->probe_iters / BC_BLOCKS : 1;
    /* the daemons' CPU over the measured barriers, the probes' share taken out */
    double cpu0 = 0, cpu_probe = 0;
    for (unsigned i = 0; i < o->warmup + o->iters && rc == 0; i++) {
        hbd_drive_result_t r;
        if (i == o->warmup)
            cpu0 = daemons_cpu(cfg);
        rc = hbd_cluster_barrier(cl, coll++, &dopt, &r);
        if (rc == 0 && (r.n_err || r.n_missing)) {
            fprintf(stderr, "hibar-bench: barrier %" PRIu64 ": %u failed (%s), %u missing\n",
                    coll - 1, r.n_err, hibar_strerror(r.first_err), r.n_missing);
            rc = r.first_err ? r.first_err : HIBAR_ERR_PEER_LOST;
        }
        if (rc == 0 && i >= o->warmup) {
            x[i - o->warmup] = r.total_us;
            if (r.proto_us > 0) {
                sp_v[ny] = r.spread_us;
                y[ny++] = r.proto_us;
            }
        }
        unsigned done = i + 1 - o->warmup;
        if (rc == 0 && i >= o->warmup && nb < BC_BLOCKS &&
            (done % per_block == 0 || done == o->iters)) {
            double c = daemons_cpu(cfg);
            rc = probe(cl, topo, probe_n, &pb[nb++]);
            cpu_probe += daemons_cpu(cfg) - c;
        }
    }
    double cpu_barrier_us =
        rc == 0 && o->iters > 0 ? (daemons_cpu(cfg) - cpu0 - cpu_probe) * 1e6 / o->iters : -1;
    bc_probe_t p = {0};
    double lv_ib[BC_MAXDEPTH + 1] = {0}, lv_sr[BC_MAXDEPTH + 1] = {0};
    uint32_t nlv = topo->depth < BC_MAXDEPTH ? topo->depth + 1 : BC_MAXDEPTH + 1;
    if (rc == 0 && nb > 0) {
        double v[6][BC_BLOCKS] = {{0}};
        for (uint32_t d = 0; d < nlv; d++) {
            double a[BC_BLOCKS], b[BC_BLOCKS];
            for (unsigned k = 0; k < nb; k++) {
                a[k] = pb[k].t_ib_lv[d];
                b[k] = pb[k].t_sr_lv[d];
            }
            lv_ib[d] = median(a, nb);
            lv_sr[d] = median(b, nb);
        }
        for (unsigned k = 0; k < nb; k++) {
            v[0][k] = pb[k].t_ib;
            v[1][k] = pb[k].t_sr;
            v[2][k] = pb[k].t_ib_alone;
            v[3][k] = pb[k].t_sr_alone;
            v[4][k] = pb[k].t_ctl;
            v[5][k] = pb[k].cpu_ctl;
        }
        p.cpu_ctl = median(v[5], nb);
        p.t_ib = median(v[0], nb);
        p.t_sr = median(v[1], nb);
        p.t_ib_alone = median(v[2], nb);
        p.t_sr_alone = median(v[3], nb);
        p.t_ctl = median(v[4], nb);
    }
    double idle = -1;
    if (rc == 0 && o->idle_s > 0)
        idle_cpu(cfg, o->idle_s, &idle);
    if (rc == 0) {
        hb_stats_t s, sp = {0};
        hb_stats_summarize(x, o->iters, o->common.confidence, &s);
        if (ny > 0)
            hb_stats_summarize(y, ny, o->common.confidence, &sp);
        int scmd = strcmp(proto, "scmd") == 0;
        /* the steps' path-weighted means (see the top) */
        double w_ib = 0, w_sr = 0, s_ib = 0, s_sr = 0, t_ib_step = 0, t_sr_step = 0;
        char lvs[256] = "", lvs_ib[128] = "", lvs_sr[128] = "";
        size_t o1 = 0, o2 = 0, o3 = 0;
        for (uint32_t d = 0; d < nlv; d++) {
            double wi, ws;
            path_weights(scmd, topo->depth, d, &wi, &ws);
            w_ib += wi;
            s_ib += wi * lv_ib[d];
            w_sr += ws;
            s_sr += ws * lv_sr[d];
            if (o1 < sizeof(lvs))
                o1 += (size_t)snprintf(lvs + o1, sizeof(lvs) - o1, "%sdepth %u: T_IB %.1f x%.0f",
                                       d ? "; " : "", d, lv_ib[d], wi);
            if (d > 0 && o1 < sizeof(lvs))
                o1 += (size_t)snprintf(lvs + o1, sizeof(lvs) - o1, ", T_SR up %.1f x%.0f", lv_sr[d],
                                       ws);
            if (o2 < sizeof(lvs_ib))
                o2 += (size_t)snprintf(lvs_ib + o2, sizeof(lvs_ib) - o2, "%s%.1f", d ? ", " : "",
                                       lv_ib[d]);
            if (d > 0 && o3 < sizeof(lvs_sr))
                o3 += (size_t)snprintf(lvs_sr + o3, sizeof(lvs_sr) - o3, "%s%.1f",
                                       d > 1 ? ", " : "", lv_sr[d]);
        }
        if (w_ib > 0)
            t_ib_step = s_ib / w_ib;
        if (w_sr > 0)
            t_sr_step = s_sr / w_sr;
        double pred = scmd ? hb_topo_predict_scmd(topo, t_ib_step, t_sr_step)
                           : hb_topo_predict_tree(topo, t_ib_step, t_sr_step);
        double pred_all = scmd ? hb_topo_predict_scmd(topo, p.t_ib, p.t_sr)
                               : hb_topo_predict_tree(topo, p.t_ib, p.t_sr);
        double pred_alone = scmd ? hb_topo_predict_scmd(topo, p.t_ib_alone, p.t_sr_alone)
                                 : hb_topo_predict_tree(topo, p.t_ib_alone, p.t_sr_alone);
        double pred_hier =
            hb_hier_predict(topo, scmd ? HB_HIER_SCMD : HB_HIER_TREE, t_ib_step, t_sr_step);
        *median_p = s.median;
        double spread = ny > 0 ? median(sp_v, ny) : -1.0;
        char extra[1280];
        int k = snprintf(
            extra, sizeof(extra),
            "\"predicted_us\": %.1f, \"predicted_from\": \"step\", \"ratio\": %.3f, "
            "\"t_ib_step_us\": %.2f, \"t_sr_step_us\": %.2f, \"t_ib_depth_us\": [%s], "
            "\"t_sr_depth_us\": [%s], \"t_ib_us\": %.2f, \"t_sr_us\": %.2f, "
            "\"predicted_all_us\": %.1f, \"L\": %" PRIu32 ", \"chassis\": %" PRIu32 ", "
            "\"t_ib_alone_us\": %.2f, \"t_sr_alone_us\": %.2f, "
            "\"predicted_alone_us\": %.1f, \"predicted_hier_us\": %.1f, "
            "\"t_ctl_us\": %.1f, \"ratio_net\": %.3f, "
            "\"protocol_median_us\": %.1f, \"protocol_p99_us\": %.1f, "
            "\"ratio_protocol\": %.3f, \"cpu_per_barrier_us\": %.1f, \"cpu_per_ping_us\": %.1f, "
            "\"arrive_spread_us\": %.1f",
            pred, s.median / pred, t_ib_step, t_sr_step, lvs_ib, lvs_sr, p.t_ib, p.t_sr, pred_all,
            topo->L, topo->n_chassis, p.t_ib_alone, p.t_sr_alone, pred_alone, pred_hier, p.t_ctl,
            (s.median - p.t_ctl) / pred, sp.median, sp.p99, sp.median / pred, cpu_barrier_us,
            p.cpu_ctl, spread);
        if (idle >= 0 && k > 0 && (size_t)k < sizeof(extra))
            snprintf(extra + k, sizeof(extra) - (size_t)k, ", \"idle_cpu_pct\": %.2f", idle);
        hb_bench_row_t row = {.impl = proto,
                              .nodes = topo->n_nodes,
                              .ranks = topo->n_nodes,
                              .size = 0,
                              .reps = o->iters,
                              .st = &s,
                              .iters = o->iters,
                              .extra_json = extra};
        hb_bench_out_note(o->out,
                          "cluster-barrier %s: %" PRIu32 " daemons, %" PRIu32
                          " chassis, L = %" PRIu32 ", cluster %s",
                          proto, topo->n_nodes, topo->n_chassis, topo->L, cfg->cluster);
        hb_bench_out_row(o->out, &row);
        hb_bench_out_note(o->out, "%s: median %.1f us, p99 %.1f us; predicted %.1f us (ratio %.2f)",
                          proto, s.median, s.p99, pred, s.median / pred);
        hb_bench_out_note(o->out,
                          "T_IB %.1f us, T_SR %.1f us as the steps run them (predicted_us): %s",
                          t_ib_step, t_sr_step, lvs);
        hb_bench_out_note(o->out,
                          "T_IB %.1f us (every chassis at once, back to back; alone %.1f), "
                          "T_SR %.1f us (every link at once; alone %.1f)",
                          p.t_ib, p.t_ib_alone, p.t_sr, p.t_sr_alone);
        hb_bench_out_note(o->out,
                          "formula %s (config/topo.h); with every chassis/link at once %.1f us "
                          "(ratio %.2f), alone %.1f us (ratio %.2f); hier's count %.1f us",
                          scmd ? "(4 + 3L)·T_IB + 3(L + 1)·T_SR" : "hb_topo_predict_tree", pred_all,
                          s.median / pred_all, pred_alone, s.median / pred_alone, pred_hier);
        hb_bench_out_note(o->out,
                          "driver share (ping to every daemon, last reply) %.1f us; "
                          "(median - that) / predicted = %.2f",
                          p.t_ctl, (s.median - p.t_ctl) / pred);
        hb_bench_out_note(o->out,
                          "protocol alone (last arrival -> last completion, daemons' "
                          "clocks): median %.1f us, p99 %.1f us, ratio to predicted %.2f; "
                          "arrivals spread over %.1f us (median, first -> last)",
                          sp.median, sp.p99, sp.median / pred, spread);
        if (cpu_barrier_us >= 0)
            hb_bench_out_note(o->out,
                              "CPU per barrier: %.1f us, the %" PRIu32 " daemons together (all "
                              "threads; per ping round %.1f us; %.0f%% of %ld cores over the "
                              "median)",
                              cpu_barrier_us, topo->n_nodes, p.cpu_ctl,
                              100.0 * cpu_barrier_us /
                                  (s.median * (double)sysconf(_SC_NPROCESSORS_ONLN)),
                              sysconf(_SC_NPROCESSORS_ONLN));
        if (idle >= 0)
            hb_bench_out_note(o->out,
                              "idle: %" PRIu32 " daemons used %.2f%% of one core together "
                              "over %.0f s",
                              topo->n_nodes, idle, o->idle_s);
        fflush(stdout);
    } else {
        fprintf(stderr, "hibar-bench: cluster-barrier %s failed: %s\n", proto, hibar_strerror(rc));
    }
    free(x);
    free(y);
    free(sp_v);
out_cl:
    hbd_emu_release(cfg, &eo, cl, started, o->keep);
    hb_topo_free(topo);
    hb_cfg_free(cfg);
    return rc == 0 ? 0 : 1;
}

int hb_bench_cluster_main(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"protocol", required_argument, NULL, 'P'},
                                         {"iters", required_argument, NULL, 'n'},
                                         {"warmup", required_argument, NULL, 'w'},
                                         {"probe-iters", required_argument, NULL, 'p'},
                                         {"idle-cpu", required_argument, NULL, 'I'},
                                         {"set", required_argument, NULL, 'o'},
                                         {"keep", no_argument, NULL, 'k'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bc_opts_t o = {.protocols = "scmd,tree", .iters = 1000, .warmup = 100, .probe_iters = 300};
    hb_bench_out_t out;
    int c;
    if (hb_bench_common_parse(&argc, argv, &o.common) != 0)
        return 2;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:n:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            o.config = optarg;
            break;
        case 'P':
            o.protocols = optarg;
            break;
        case 'n':
            o.iters = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'w':
            o.warmup = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'p':
            o.probe_iters = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'I':
            o.idle_s = strtod(optarg, NULL);
            break;
        case 'o':
            if (o.n_over < 32)
                o.over[o.n_over++] = optarg;
            break;
        case 'k':
            o.keep = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (o.iters == 0 || o.probe_iters == 0 || optind != argc) {
        usage(stderr);
        return 2;
    }
    if (hb_bench_out_open(&out, "cluster-barrier", &o.common) != 0)
        return 2;
    o.out = &out;
    char list[64];
    snprintf(list, sizeof(list), "%s", o.protocols);
    double med[2] = {0, 0};
    int rc = 0, k = 0;
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p != NULL && rc == 0;
         p = strtok_r(NULL, ",", &save), k++) {
        if (strcmp(p, "scmd") != 0 && strcmp(p, "tree") != 0) {
            fprintf(stderr, "hibar-bench: unknown protocol '%s' (scmd, tree)\n", p);
            return 2;
        }
        rc = run_protocol(&o, p, &med[strcmp(p, "tree") == 0]);
    }
    if (rc == 0 && med[0] > 0 && med[1] > 0)
        hb_bench_out_note(&out, "tree / scmd median: %.2f", med[1] / med[0]);
    hb_bench_out_close(&out);
    return rc;
}
