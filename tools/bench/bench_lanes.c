/* bench_lanes.c: hibar-bench lanes: b_WAN(P), the WAN bandwidth with P node pairs at once, cached
 * per cluster. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfg.h"
#include "hb_params.h"
#include "hb_size.h"
#include "hb_stats.h"
#include "hb_time.h"
#include "hbd_client.h"
#include "hbd_emu.h"
#include "hibar.h"

/*
 * For P = 1 .. Pmax (default min(n0, n1)): P daemons of the first node's site each send --size
 * bytes in --frame-byte frames to their own daemon of the other site (pair j: the j-th node of
 * each site), all at once, through the daemons' data plane (the `logp TO FRAME COUNT flood`
 * control command, daemon/hbd_logp.c: frames back to back, the last one answered). A lane's
 * time T_j runs from its first send to that answer; from the bench's clock the P transfers
 * span max_j(reply_j) - min_j(reply_j - T_j) (start skew included, no clock shared with the
 * daemons), and the aggregate b_WAN is P·size over that span; the per-lane b_WAN(P) (DESIGN
 * section 1) is the aggregate / P. Repetitions: --reps, the median is kept. The table goes
 * to the cluster's parameter file (common/hb_params.h, `bwan P MBIT` lines; a PlogP part
 * written by hibar-bench logp is kept), which the daemons' chooser and hibar-info read.
 */

#define BN_MAX_OVER 32
#define BN_MAX_REPS 64

typedef struct bn_opts {
    const char *config, *cache;
    const char *over[BN_MAX_OVER];
    size_t n_over;
    uint32_t pmax, reps;
    uint64_t size, frame;
    int no_cache;
} bn_opts_t;

static void bn_usage(FILE *f)
{
    fprintf(
        f, "usage: hibar-bench lanes [--config FILE] [-o KEY=VALUE]... [--pmax N] [--size BYTES]\n"
           "          [--frame BYTES] [--reps R] [--cache FILE] [--no-cache] " HB_BENCH_COMMON_USAGE
           "\n"
           "  --pmax N       lanes 1 .. N (default min(n0, n1): the smaller site)\n"
           "  --size BYTES   what each lane carries per repetition (default 4M)\n"
           "  --frame BYTES  frame size, at most 256K (default 64K)\n"
           "  --reps R       repetitions per P, the median kept (default 3)\n"
           "  --cache FILE   where to write (default: hb_params_path: $HIBAR_MODEL_CACHE or\n"
           "                 ~/.cache/hibar/CLUSTER.plogp); --no-cache: write nothing\n"
           "Needs two sites. Inside tests/netns/testbed the bed's cluster ($HIBAR_TESTBED_CONFIG)\n"
           "on its hosts; else the emulated cluster of --config, started when none is running.\n");
}

static int bn_parse(int argc, char **argv, bn_opts_t *o)
{
    static const struct option lo[] = {
        {"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, 'o'},
        {"pmax", required_argument, NULL, 'P'},   {"size", required_argument, NULL, 's'},
        {"frame", required_argument, NULL, 'f'},  {"reps", required_argument, NULL, 'r'},
        {"cache", required_argument, NULL, 'C'},  {"no-cache", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    int c;
    o->reps = 3;
    o->size = 4u << 20;
    o->frame = 64u << 10;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:o:h", lo, NULL)) != -1) {
        unsigned long v = 0;
        char *end = NULL;
        int bad = 0;
        errno = 0;
        if (c == 'P' || c == 'r') {
            v = strtoul(optarg, &end, 10);
            bad = *end != '\0' || errno != 0 || optarg[0] == '-' || v < 1 ||
                  v > (c == 'P' ? HB_PARAMS_MAXLANES : BN_MAX_REPS);
        }
        switch (c) {
        case 'c':
            o->config = optarg;
            break;
        case 'o':
            bad = o->n_over == BN_MAX_OVER;
            if (!bad)
                o->over[o->n_over++] = optarg;
            break;
        case 'P':
            o->pmax = (uint32_t)v;
            break;
        case 'r':
            o->reps = (uint32_t)v;
            break;
        case 's':
        case 'f': {
            uint64_t sz = 0;
            bad = hb_size_parse(optarg, c == 'f' ? 262144 : (1u << 30), &sz) != 0 || sz < 1;
            if (c == 's')
                o->size = sz;
            else
                o->frame = sz;
            break;
        }
        case 'C':
            o->cache = optarg;
            break;
        case 'N':
            o->no_cache = 1;
            break;
        case 'h':
            bn_usage(stdout);
            exit(0);
        default:
            bn_usage(stderr);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "hibar-bench lanes: bad value '%s'\n", optarg ? optarg : "");
            return -1;
        }
    }
    if (o->config == NULL) /* inside tests/netns/testbed: the bed's cluster */
        o->config = getenv("HIBAR_TESTBED_CONFIG");
    if (optind < argc || o->config == NULL) {
        fprintf(stderr, "hibar-bench lanes: %s (see --help)\n",
                o->config == NULL ? "--config FILE is required" : "bad arguments");
        return -1;
    }
    return 0;
}

/* One repetition with P lanes: a[j] -> b[j], j < P. *span_us: the transfers' span on this
 * clock; lane_mbit[j]: each lane's own rate. 0 or an error (printed). */
static int bn_round(hbd_cluster_t *cl, const bn_opts_t *o, const uint32_t *a, const uint32_t *b,
                    uint32_t P, double *span_us, double *lane_mbit)
{
    uint64_t count = (o->size + o->frame - 1) / o->frame, t_end = 0, t_start = UINT64_MAX;
    uint64_t bytes = count * o->frame;
    struct pollfd pf[HB_PARAMS_MAXLANES];
    uint32_t left = P;
    char cmd[128], rep[512];
    int rc = 0;
    for (uint32_t j = 0; j < P && rc == 0; j++) {
        snprintf(cmd, sizeof(cmd), "logp %u %llu %llu flood", (unsigned)b[j],
                 (unsigned long long)o->frame, (unsigned long long)count);
        pf[j] = (struct pollfd){.fd = cl->fd[a[j]], .events = POLLIN};
        rc = pf[j].fd < 0 ? HIBAR_ERR_NOT_FOUND : hbd_client_send(pf[j].fd, cmd);
    }
    while (rc == 0 && left > 0) {
        int n = poll(pf, P, 600000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = HIBAR_ERR_TIMEOUT;
            break;
        }
        uint64_t now = hb_time_now_ns();
        for (uint32_t j = 0; j < P && rc == 0; j++) {
            if (pf[j].fd < 0 || !(pf[j].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char v[64];
            rc = hbd_client_recv(pf[j].fd, rep, sizeof(rep), 10000);
            if (rc == 0 &&
                (strncmp(rep, "ok", 2) != 0 || hbd_client_field(rep, "us", v, sizeof(v))))
                rc = HIBAR_ERR_PROTO;
            if (rc != 0)
                break;
            double us = strtod(v, NULL);
            uint64_t t0 = now - (uint64_t)(us * 1e3);
            t_start = t0 < t_start ? t0 : t_start;
            t_end = now > t_end ? now : t_end;
            lane_mbit[j] = us > 0 ? (double)bytes * 8.0 / us : 0.0;
            pf[j].fd = -1;
            left--;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "hibar-bench lanes: %u lanes: %s%s%s\n", (unsigned)P, hibar_strerror(rc),
                rc == HIBAR_ERR_PROTO ? ": " : "", rc == HIBAR_ERR_PROTO ? rep : "");
        return rc;
    }
    *span_us = (double)(t_end - t_start) / 1e3;
    return 0;
}

int hb_bench_lanes_main(int argc, char **argv)
{
    hb_bench_common_t com;
    hb_bench_out_t out;
    bn_opts_t o;
    hb_cfg_t *cfg = NULL;
    hbd_cluster_t *cl = NULL;
    hbd_emu_opts_t eo = {0};
    hb_params_t *p = NULL;
    char err[HB_CFG_ERRLEN], path[4096];
    int started = 0, rc = 1, out_open = 0;
    uint32_t a[HB_PARAMS_MAXLANES], b[HB_PARAMS_MAXLANES], na = 0, nb = 0, sb = UINT32_MAX;
    double best = 0.0;

    memset(&o, 0, sizeof(o));
    if (hb_bench_common_parse(&argc, argv, &com) < 0 || bn_parse(argc, argv, &o) < 0)
        return 2;
    if (hb_cfg_load(o.config, o.over, o.n_over, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "hibar-bench lanes: %s\n", err);
        return 2;
    }
    for (uint32_t i = 0; i < cfg->n_nodes; i++) { /* the first node's site and the next one */
        if (cfg->site_of[i] == cfg->site_of[0]) {
            if (na < HB_PARAMS_MAXLANES)
                a[na++] = i;
        } else if (sb == UINT32_MAX || cfg->site_of[i] == sb) {
            sb = cfg->site_of[i];
            if (nb < HB_PARAMS_MAXLANES)
                b[nb++] = i;
        }
    }
    uint32_t pmax = na < nb ? na : nb;
    if (pmax == 0) {
        fprintf(stderr, "hibar-bench lanes: needs two sites (the cluster has %u)\n",
                (unsigned)cfg->n_sites);
        goto out;
    }
    if (o.pmax > 0 && o.pmax < pmax)
        pmax = o.pmax;
    eo = (hbd_emu_opts_t){.config = o.config,
                          .over = o.over,
                          .n_over = o.n_over,
                          .timeout_ms = 60000,
                          .hostexec =
                              hb_bench_on_bed(o.config) ? getenv("HIBAR_TESTBED_HOSTEXEC") : NULL};
    if (hbd_emu_acquire(cfg, &eo, 60000, "hibar-bench lanes", &started, &cl) != 0)
        goto out;
    if (hb_bench_out_open(&out, "lanes", &com) != 0)
        goto out;
    out_open = 1;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        goto out;
    snprintf(p->cluster, sizeof(p->cluster), "%s", cfg->cluster);
    p->nodes = cfg->n_nodes;
    p->bwan_measured = (double)time(NULL);
    hb_bench_out_note(&out,
                      "hibar-bench lanes: cluster %s, sites %s (%u nodes) -> %s (%u nodes); "
                      "P = 1..%u pairs at once, %llu bytes per lane in %llu-byte frames, %u reps",
                      cfg->cluster, cfg->site_names[cfg->site_of[0]], (unsigned)na,
                      cfg->site_names[sb], (unsigned)nb, (unsigned)pmax, (unsigned long long)o.size,
                      (unsigned long long)o.frame, (unsigned)o.reps);
    { /* warm-up: links come up on demand, from one side of a pair only (hbd_net_link): a
       * one-byte flat gather to a[j] on every daemon links a[j] with every node; then one
       * round on every pair opens TCP's windows (not counted) */
        double span, lm[HB_PARAMS_MAXLANES];
        uint32_t *all = calloc(cl->n, sizeof(uint32_t));
        char(*reps)[512] = calloc(cl->n, sizeof(*reps)), cmd[64];
        int wrc = all == NULL || reps == NULL ? HIBAR_ERR_NOMEM : 0;
        for (uint32_t i = 0; i < cl->n && wrc == 0; i++)
            all[i] = i;
        for (uint32_t j = 0; j < pmax && wrc == 0; j++) {
            snprintf(cmd, sizeof(cmd), "coll gather flat %u 1", (unsigned)a[j]);
            wrc = hbd_cluster_all(cl, all, cl->n, cmd, reps, 60000);
            for (uint32_t i = 0; i < cl->n && wrc == 0; i++)
                if (strncmp(reps[i], "ok", 2) != 0) {
                    fprintf(stderr, "hibar-bench lanes: warm-up on %s: %s\n", cfg->nodes[i].name,
                            reps[i]);
                    wrc = HIBAR_ERR_PROTO;
                }
        }
        free(all);
        free(reps);
        if (wrc != 0 || bn_round(cl, &o, a, b, pmax, &span, lm) != 0)
            goto out;
    }
    for (uint32_t P = 1; P <= pmax; P++) {
        double span[BN_MAX_REPS], agg[BN_MAX_REPS], lm[HB_PARAMS_MAXLANES], lo = INFINITY, hi = 0.0;
        uint64_t bytes = (o.size + o.frame - 1) / o.frame * o.frame;
        for (uint32_t r = 0; r < o.reps; r++) {
            if (bn_round(cl, &o, a, b, P, &span[r], lm) != 0)
                goto out;
            agg[r] = span[r] > 0 ? (double)P * (double)bytes * 8.0 / span[r] : 0.0;
            for (uint32_t j = 0; j < P; j++) {
                lo = fmin(lo, lm[j]);
                hi = fmax(hi, lm[j]);
            }
        }
        hb_stats_t st;
        hb_stats_sort(agg, o.reps);
        double sum = hb_stats_quantile_sorted(agg, o.reps, 0.5);
        if (hb_stats_summarize(span, o.reps, com.confidence, &st) != 0)
            goto out;
        best = fmax(best, sum);
        p->bwan[P - 1] = sum / P / 8.0; /* Mbit/s -> bytes/µs */
        p->n_bwan = P;
        char extra[320];
        snprintf(extra, sizeof(extra),
                 "\"lanes\": %u, \"mbit\": %.1f, \"sum_mbit\": %.1f, \"total_mbit\": %.1f, "
                 "\"lane_min_mbit\": %.1f, \"lane_max_mbit\": %.1f, \"frame\": %llu",
                 (unsigned)P, sum / P, sum, best, lo, hi, (unsigned long long)o.frame);
        hb_bench_row_t row = {.impl = "wan",
                              .nodes = 2 * P,
                              .ranks = 2 * P,
                              .size = bytes,
                              .reps = o.reps,
                              .iters = o.reps,
                              .st = &st,
                              .extra_json = extra};
        hb_bench_out_note(&out,
                          "lanes %2u: b_WAN aggregate %8.1f Mbit/s, per lane b_WAN(%u) %7.1f "
                          "(single lanes %.1f .. %.1f)",
                          (unsigned)P, sum, (unsigned)P, sum / P, lo, hi);
        hb_bench_out_row(&out, &row);
    }
    if (o.no_cache) {
        rc = 0;
        goto out;
    }
    if (o.cache != NULL)
        snprintf(path, sizeof(path), "%s", o.cache);
    else if (hb_params_path(cfg->cluster, path, sizeof(path)) != 0)
        goto out;
    if (hb_params_update(path, p, HB_PARAMS_BWAN) != 0)
        goto out;
    hb_bench_out_note(&out,
                      "b_WAN(P) written to %s (hibar-info --model shows it; the daemons' "
                      "chooser uses it)",
                      path);
    if (com.json)
        fprintf(stderr, "hibar-bench lanes: b_WAN(P) written to %s\n", path);
    rc = 0;
out:
    free(p);
    if (out_open)
        hb_bench_out_close(&out);
    if (cfg != NULL)
        hbd_emu_release(cfg, &eo, cl, started, 0);
    hb_cfg_free(cfg);
    return rc;
}
