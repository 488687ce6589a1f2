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
#include "wire.h"

/*
 * For P = 1 .. Pmax (default min(n0, n1)): P daemons of the first node's site each send --size
 * bytes in --frame-byte frames to their own daemon of the other site (pair j: the j-th node of
 * each site), all at once, through the daemons' data plane (the `logp TO FRAME COUNT flood`
 * control command, daemon/hbd_logp.c: frames back to back, the last one answered). A lane's
 * time T_j runs from its first send to that answer; from the bench's clock the P transfers
 * span max_j(reply_j) - min_j(reply_j - T_j) (start skew included, no clock shared with the
 * daemons), and the aggregate b_WAN is P·size over that span; the per-lane b_WAN(P)
 * (doc/design.md section 1) is the aggregate / P. Repetitions: --reps, the median is kept.
 * The table goes to the cluster's parameter file (common/hb_params.h, `bwan P MBIT` lines; a
 * PlogP part written by hibar-bench logp is kept), which the daemons' chooser and hibar-info
 * read.
 */

#define BN_MAX_OVER 32
#define BN_MAX_REPS 64

typedef struct bn_opts {
    uint32_t pmax, reps;           /* lanes 1 .. pmax (0: the smaller site); repetitions per P */
    uint64_t size, frame;          /* bytes per lane and repetition; frame size */
    const char *config;            /* the cluster */
    const char *cache;             /* where the table goes (NULL: hb_params_path) */
    int no_cache;                  /* write nothing */
    const char *over[BN_MAX_OVER]; /* -o KEY=VALUE */
    size_t n_over;
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

/* One option c with its argument v into o: 0, or -1 if v is no value for it. */
static int bn_opt(bn_opts_t *o, int c, const char *v)
{
    uint64_t x = 0;
    if (c == 'c')
        o->config = v;
    else if (c == 'C')
        o->cache = v;
    else if (c == 'N')
        o->no_cache = 1;
    else if (c == 'o' && o->n_over < BN_MAX_OVER)
        o->over[o->n_over++] = v;
    else if (c == 'P' && hb_size_parse(v, HB_PARAMS_MAXLANES, &x) == 0 && x >= 1)
        o->pmax = (uint32_t)x;
    else if (c == 'r' && hb_size_parse(v, BN_MAX_REPS, &x) == 0 && x >= 1)
        o->reps = (uint32_t)x;
    else if (c == 's' && hb_size_parse(v, 1u << 30, &x) == 0 && x >= 1)
        o->size = x;
    else if (c == 'f' && hb_size_parse(v, HBD_WIRE_COLL_MAX_DATA, &x) == 0 && x >= 1)
        o->frame = x;
    else
        return -1;
    return 0;
}

static int bn_parse(int argc, char **argv, bn_opts_t *o)
{
    static const struct option lo[] = {
        {.name = "config", .has_arg = required_argument, .val = 'c'},
        {.name = "set", .has_arg = required_argument, .val = 'o'},
        {.name = "pmax", .has_arg = required_argument, .val = 'P'},
        {.name = "size", .has_arg = required_argument, .val = 's'},
        {.name = "frame", .has_arg = required_argument, .val = 'f'},
        {.name = "reps", .has_arg = required_argument, .val = 'r'},
        {.name = "cache", .has_arg = required_argument, .val = 'C'},
        {.name = "no-cache", .has_arg = no_argument, .val = 'N'},
        {.name = "help", .has_arg = no_argument, .val = 'h'},
        {0},
    };
    int c;
    o->reps = 3;
    o->size = 4u << 20;
    o->frame = 64u << 10;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:o:h", lo, NULL)) != -1) {
        if (c == 'h') {
            bn_usage(stdout);
            exit(0);
        }
        if (c == '?' || bn_opt(o, c, optarg) != 0) {
            if (c != '?')
                fprintf(stderr, "hibar-bench lanes: bad value '%s'\n", optarg ? optarg : "");
            bn_usage(stderr);
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

/* The lanes: a[j] in the first node's site, b[j] the j-th node of the next site. */
typedef struct bn_pairs {
    uint32_t a[HB_PARAMS_MAXLANES], b[HB_PARAMS_MAXLANES], na, nb, sb;
} bn_pairs_t;

static void bn_pairs(const hb_cfg_t *cfg, bn_pairs_t *pr)
{
    pr->na = pr->nb = 0;
    pr->sb = UINT32_MAX;
    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        if (cfg->site_of[i] == cfg->site_of[0]) {
            if (pr->na < HB_PARAMS_MAXLANES)
                pr->a[pr->na++] = i;
        } else if (pr->sb == UINT32_MAX || cfg->site_of[i] == pr->sb) {
            pr->sb = cfg->site_of[i];
            if (pr->nb < HB_PARAMS_MAXLANES)
                pr->b[pr->nb++] = i;
        }
    }
}

/* P = 1 .. pmax on the running daemons of cl: rows on out, the table into p. */
static int bn_measure(hbd_cluster_t *cl, const bn_opts_t *o, const bn_pairs_t *pr, uint32_t pmax,
                      hb_bench_out_t *out, hb_params_t *p)
{
    double best = 0.0;
    { /* warm-up: links come up (hb_bench_link), one round on every pair opens TCP's windows
       * (not counted) */
        double span, lm[HB_PARAMS_MAXLANES];
        int rc = hb_bench_link(cl, pr->a, pmax, "hibar-bench lanes");
        if (rc != 0 || (rc = bn_round(cl, o, pr->a, pr->b, pmax, &span, lm)) != 0)
            return rc;
    }
    for (uint32_t P = 1; P <= pmax; P++) {
        double span[BN_MAX_REPS], agg[BN_MAX_REPS], lm[HB_PARAMS_MAXLANES], lo = INFINITY, hi = 0.0;
        uint64_t bytes = (o->size + o->frame - 1) / o->frame * o->frame;
        int rc;
        for (uint32_t r = 0; r < o->reps; r++) {
            if ((rc = bn_round(cl, o, pr->a, pr->b, P, &span[r], lm)) != 0)
                return rc;
            agg[r] = span[r] > 0 ? (double)P * (double)bytes * 8.0 / span[r] : 0.0;
            for (uint32_t j = 0; j < P; j++) {
                lo = fmin(lo, lm[j]);
                hi = fmax(hi, lm[j]);
            }
        }
        hb_stats_t st;
        hb_stats_sort(agg, o->reps);
        double sum = hb_stats_quantile_sorted(agg, o->reps, 0.5);
        if ((rc = hb_stats_summarize(span, o->reps, out->common->confidence, &st)) != 0)
            return rc;
        best = fmax(best, sum);
        p->bwan[P - 1] = sum / P / 8.0; /* Mbit/s -> bytes/µs */
        p->n_bwan = P;
        char extra[320];
        snprintf(extra, sizeof(extra),
                 "\"lanes\": %u, \"mbit\": %.1f, \"sum_mbit\": %.1f, \"total_mbit\": %.1f, "
                 "\"lane_min_mbit\": %.1f, \"lane_max_mbit\": %.1f, \"frame\": %llu",
                 (unsigned)P, sum / P, sum, best, lo, hi, (unsigned long long)o->frame);
        hb_bench_row_t row = {.impl = "wan",
                              .nodes = 2 * P,
                              .ranks = 2 * P,
                              .size = bytes,
                              .reps = o->reps,
                              .iters = o->reps,
                              .st = &st,
                              .extra_json = extra};
        hb_bench_out_note(out,
                          "lanes %2u: b_WAN aggregate %8.1f Mbit/s, per lane b_WAN(%u) %7.1f "
                          "(single lanes %.1f .. %.1f)",
                          (unsigned)P, sum, (unsigned)P, sum / P, lo, hi);
        hb_bench_out_row(out, &row);
    }
    return 0;
}

int hb_bench_lanes_main(int argc, char **argv)
{
    bn_opts_t o = {0};
    hb_bench_common_t com;
    char err[HB_CFG_ERRLEN];
    hb_cfg_t *cfg = NULL;
    if (hb_bench_common_parse(&argc, argv, &com) < 0 || bn_parse(argc, argv, &o) < 0)
        return 2;
    if (hb_cfg_load(o.config, o.over, o.n_over, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "hibar-bench lanes: %s\n", err);
        return 2;
    }
    bn_pairs_t pr;
    bn_pairs(cfg, &pr);
    uint32_t pmax = pr.na < pr.nb ? pr.na : pr.nb;
    if (pmax == 0) {
        fprintf(stderr, "hibar-bench lanes: needs two sites (the cluster has %u)\n",
                (unsigned)cfg->n_sites);
        hb_cfg_free(cfg);
        return 1;
    }
    if (o.pmax > 0 && o.pmax < pmax)
        pmax = o.pmax;
    /* inside the test bed the daemons run on the bed's hosts */
    hbd_emu_opts_t eo = {.config = o.config,
                         .over = o.over,
                         .n_over = o.n_over,
                         .timeout_ms = 60000,
                         .hostexec =
                             hb_bench_on_bed(o.config) ? getenv("HIBAR_TESTBED_HOSTEXEC") : NULL};
    hbd_cluster_t *cl = NULL;
    hb_bench_out_t out;
    hb_params_t *p = calloc(1, sizeof(*p));
    int started = 0, rc = 1;
    if (p != NULL && hbd_emu_acquire(cfg, &eo, 60000, "hibar-bench lanes", &started, &cl) == 0 &&
        hb_bench_out_open(&out, "lanes", &com) == 0) {
        snprintf(p->cluster, sizeof(p->cluster), "%s", cfg->cluster);
        p->nodes = cfg->n_nodes;
        p->bwan_measured = (double)time(NULL);
        hb_bench_out_note(
            &out,
            "hibar-bench lanes: cluster %s, sites %s (%u nodes) -> %s (%u nodes); P = 1..%u "
            "pairs at once, %llu bytes per lane in %llu-byte frames, %u reps",
            cfg->cluster, cfg->site_names[cfg->site_of[0]], (unsigned)pr.na, cfg->site_names[pr.sb],
            (unsigned)pr.nb, (unsigned)pmax, (unsigned long long)o.size,
            (unsigned long long)o.frame, (unsigned)o.reps);
        if (bn_measure(cl, &o, &pr, pmax, &out, p) == 0 &&
            (o.no_cache ||
             hb_bench_cache_write(&out, o.cache, p, HB_PARAMS_BWAN, "hibar-bench lanes") == 0))
            rc = 0;
        hb_bench_out_close(&out);
    }
    free(p);
    hbd_emu_release(cfg, &eo, cl, started, 0);
    hb_cfg_free(cfg);
    return rc;
}
