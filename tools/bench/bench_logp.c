/* bench_logp.c: hibar-bench logp: PlogP(-BR) parameters between daemons, cached per cluster. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "hb_log.h"
#include "hb_params.h"
#include "hb_stats.h"
#include "hbd_client.h"
#include "hbd_emu.h"
#include "hibar.h"

/*
 * PlogP (Kielmann et al.) by the logp_mpi method, between daemon A (--from, default the
 * first node) and B (--to, default the second), through the daemons' `logp` control command
 * (daemon/hbd_logp.c):
 *   RTT(m)   m bytes A -> B, a short answer back (adaptive repetitions in the daemon until
 *            the 95% CI is within 2%, or --max-reps; the median is used: on a shared machine
 *            the mean is the scheduler's tail);
 *   g(0)     flooding: K zero-byte frames back to back, only the last answered:
 *            T_K = (K - 1)·g(0) + RTT(0), g(0) = (T_K - RTT(0)) / (K - 1) (median of R);
 *   L        RTT(0) = 2·(L + g(0)), L = RTT(0)/2 - g(0);
 *   g(m)     RTT(m) - RTT(0) + g(0);
 *   o_s(m)   A's send call for an m-byte frame; o_r(m): B's handling of it (hbd_logp.c).
 * PlogP-BR patterns, with every node (n >= 3): g(m, one-to-many): A floods all others round
 * robin, g = (T - RTT(m)) / (K·(n-1) - 1); g(m, many-to-one): all others flood A at once,
 * g = (max T - RTT(m)) / (K·(n-1) - 1). With two nodes both are g(m). The switch queue q and
 * T_RTO cannot be seen from here: --queue BYTES (0: flow control, no RTO penalty; inside
 * the test bed the default is its pfifo limit x 1514 bytes when its LAN is capped) and
 * --rto US (default 200000, Linux's minimum RTO). --burst BYTES (default 14480, Linux's
 * initial window of 10 segments) caps what each sender of a many-to-one phase puts in the
 * queue at once (coll_model.h: E_q with burst); 0 gives the paper's E_q.
 */

#define BL_MAX_SIZES 32
#define BL_MAX_OVER 32

typedef struct bl_opts {
    const char *config, *cache;
    const char *over[BL_MAX_OVER];
    size_t n_over;
    size_t sizes[BL_MAX_SIZES];
    int nsizes;
    uint32_t from, to, flood, floods, max_reps;
    double queue, rto, burst;
    int queue_set, no_patterns;
    const char *plot;
} bl_opts_t;

static void bl_usage(FILE *f)
{
    fprintf(
        f, "usage: hibar-bench logp [--config FILE] [-o KEY=VALUE]... [--sizes LIST] [--from N]\n"
           "          [--to N] [--flood K] [--floods R] [--max-reps N] [--queue BYTES]\n"
           "          [--rto US] [--no-patterns] [--cache FILE] [--plot DIR] " HB_BENCH_COMMON_USAGE
           "\n"
           "  --sizes LIST   message sizes, at most 32 KiB (default 0,1K,4K,8K,16K,32K)\n"
           "  --flood K      frames per flood and peer (default 200); --floods R floods (5)\n"
           "  --max-reps N   round trips per size at most (default 2000)\n"
           "  --queue BYTES  switch queue q (0: flow control); --rto US: T_RTO (200000)\n"
           "  --burst BYTES  what a sender has in flight at first (TCP initial window, 14480;\n"
           "                 0: the whole message, the paper's E_q)\n"
           "  --cache FILE   where to write (default: hb_params_path: $HIBAR_MODEL_CACHE or\n"
           "                 ~/.cache/hibar/CLUSTER.plogp)\n"
           "Starts the emulated cluster of --config when none is running (stops it after).\n");
}

static int bl_parse(int argc, char **argv, bl_opts_t *o)
{
    static const struct option lo[] = {
        {"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, 'o'},
        {"sizes", required_argument, NULL, 's'},  {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},     {"flood", required_argument, NULL, 'k'},
        {"floods", required_argument, NULL, 'r'}, {"max-reps", required_argument, NULL, 'm'},
        {"queue", required_argument, NULL, 'q'},  {"rto", required_argument, NULL, 'R'},
        {"cache", required_argument, NULL, 'C'},  {"no-patterns", no_argument, NULL, 'N'},
        {"plot", required_argument, NULL, 'P'},   {"help", no_argument, NULL, 'h'},
        {"burst", required_argument, NULL, 'B'},  {NULL, 0, NULL, 0},
    };
    int c;
    char *end;
    o->from = 0;
    o->to = 1;
    o->flood = 200;
    o->floods = 5;
    o->max_reps = 2000;
    o->rto = 200000;
    o->burst = 14480; /* Linux's initial congestion window: 10 segments of 1448 B */
    if (hb_bench_sizes_parse("0,1K,4K,8K,16K,32K", o->sizes, BL_MAX_SIZES, &o->nsizes) != 0)
        return -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:o:h", lo, NULL)) != -1) {
        unsigned long v = 0;
        int bad = 0;
        errno = 0;
        if (strchr("ftkrm", c) != NULL) {
            v = strtoul(optarg, &end, 10);
            bad = *end != '\0' || errno != 0 || optarg[0] == '-' || v > 100000;
        }
        switch (c) {
        case 'c':
            o->config = optarg;
            break;
        case 'o':
            if (o->n_over == BL_MAX_OVER)
                bad = 1;
            else
                o->over[o->n_over++] = optarg;
            break;
        case 's':
            bad = hb_bench_sizes_parse(optarg, o->sizes, BL_MAX_SIZES, &o->nsizes) != 0;
            for (int i = 0; !bad && i < o->nsizes; i++)
                bad = o->sizes[i] > 32768;
            break;
        case 'f':
            o->from = (uint32_t)v;
            break;
        case 't':
            o->to = (uint32_t)v;
            break;
        case 'k':
            o->flood = (uint32_t)v;
            bad |= v < 2;
            break;
        case 'r':
            o->floods = (uint32_t)v;
            bad |= v < 1;
            break;
        case 'm':
            o->max_reps = (uint32_t)v;
            bad |= v < 10;
            break;
        case 'q':
            o->queue = strtod(optarg, &end);
            o->queue_set = 1;
            bad = *end != '\0' || !(o->queue >= 0);
            break;
        case 'R':
            o->rto = strtod(optarg, &end);
            bad = *end != '\0' || !(o->rto >= 0);
            break;
        case 'B':
            o->burst = strtod(optarg, &end);
            bad = *end != '\0' || !(o->burst >= 0);
            break;
        case 'C':
            o->cache = optarg;
            break;
        case 'N':
            o->no_patterns = 1;
            break;
        case 'P':
            o->plot = optarg;
            break;
        case 'h':
            bl_usage(stdout);
            exit(0);
        default:
            bl_usage(stderr);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "hibar-bench logp: bad value '%s'\n", optarg);
            return -1;
        }
    }
    if (optind < argc || o->from == o->to) {
        fprintf(stderr, "hibar-bench logp: bad arguments (see --help)\n");
        return -1;
    }
    return 0;
}

static double bl_field(const char *reply, const char *key)
{
    char v[64];
    if (hbd_client_field(reply, key, v, sizeof(v)) != 0)
        return NAN;
    return strtod(v, NULL);
}

/* One command on one daemon; the reply must start with "ok". */
static int bl_cmd(const hb_cfg_t *cfg, uint32_t node, const char *cmd, char *reply, size_t cap)
{
    char sock[4096];
    int rc;
    hbd_client_sock_path(cfg, node, sock, sizeof(sock));
    rc = hbd_client_cmd(sock, cmd, reply, cap, 600000);
    if (rc == 0 && strncmp(reply, "ok", 2) != 0)
        rc = HIBAR_ERR_PROTO;
    if (rc != 0)
        fprintf(stderr, "hibar-bench logp: node %s: '%s': %s\n", cfg->nodes[node].name, cmd,
                rc == HIBAR_ERR_PROTO ? reply : hibar_strerror(rc));
    return rc;
}

static int bl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over o->floods floods of `cmd` on the given nodes at once; per flood the largest
 * time over those nodes. */
static int bl_flood(hbd_cluster_t *cl, const bl_opts_t *o, const uint32_t *nodes, uint32_t n,
                    const char *cmd, double *t_p, double *os_p)
{
    double t[64];
    char(*rep)[512] = calloc(n, sizeof(*rep));
    int rc = rep == NULL ? HIBAR_ERR_NOMEM : 0;
    uint32_t r;
    *os_p = 0;
    for (r = 0; r < o->floods && r < 64 && rc == 0; r++) {
        rc = hbd_cluster_all(cl, nodes, n, cmd, rep, 600000);
        if (rc != 0)
            fprintf(stderr, "hibar-bench logp: '%s': %s\n", cmd, hibar_strerror(rc));
        t[r] = 0;
        for (uint32_t i = 0; i < n && rc == 0; i++) {
            if (strncmp(rep[i], "ok", 2) != 0) {
                fprintf(stderr, "hibar-bench logp: '%s': %s\n", cmd, rep[i]);
                if (strstr(rep[i], "lost during the flood") != NULL)
                    fprintf(stderr, "hibar-bench logp: a flood into a small switch queue can stall "
                                    "TCP for longer than heartbeat.timeout_ms (%u ms), and the "
                                    "daemons then drop the link: raise it for this measurement\n",
                            (unsigned)cl->cfg->heartbeat_timeout_ms);
                rc = HIBAR_ERR_PROTO;
                break;
            }
            t[r] = fmax(t[r], bl_field(rep[i], "us"));
            *os_p += bl_field(rep[i], "os_us") / (double)(n * o->floods);
        }
    }
    free(rep);
    if (rc == 0) {
        qsort(t, r, sizeof(double), bl_cmp);
        *t_p = t[r / 2];
    }
    return rc;
}

int hb_bench_link(hbd_cluster_t *cl, const uint32_t *roots, uint32_t n, const char *prog)
{
    char cmd[64];
    uint32_t *all = calloc(cl->n, sizeof(uint32_t));
    char(*reps)[512] = calloc(cl->n, sizeof(*reps));
    int rc = all == NULL || reps == NULL ? HIBAR_ERR_NOMEM : 0;
    for (uint32_t i = 0; i < cl->n && all != NULL; i++)
        all[i] = i;
    for (uint32_t r = 0; r < n && rc == 0; r++) {
        snprintf(cmd, sizeof(cmd), "coll gather flat %u 1", (unsigned)roots[r]);
        rc = hbd_cluster_all(cl, all, cl->n, cmd, reps, 60000);
        if (rc != 0)
            fprintf(stderr, "%s: warm-up '%s': %s\n", prog, cmd, hibar_strerror(rc));
        for (uint32_t i = 0; i < cl->n && rc == 0; i++)
            if (strncmp(reps[i], "ok", 2) != 0) {
                fprintf(stderr, "%s: warm-up on %s: %s\n", prog, cl->cfg->nodes[i].name, reps[i]);
                rc = HIBAR_ERR_PROTO;
            }
    }
    free(all);
    free(reps);
    return rc;
}

int hb_bench_cache_write(hb_bench_out_t *out, const char *cache, const hb_params_t *p,
                         unsigned what, const char *prog)
{
    char path[4096];
    if (cache != NULL)
        snprintf(path, sizeof(path), "%s", cache);
    else if (hb_params_path(p->cluster, path, sizeof(path)) != 0)
        return HIBAR_ERR_TRUNCATED;
    int rc = hb_params_update(path, p, what);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, hibar_strerror(rc));
        return rc;
    }
    hb_bench_out_note(out,
                      "%s written to %s (hibar-info --model shows them; the daemons read them "
                      "for their choices)",
                      what == HB_PARAMS_BWAN ? "b_WAN(P)" : "parameters", path);
    if (out->common->json)
        fprintf(stderr, "%s: %s written to %s\n", prog,
                what == HB_PARAMS_BWAN ? "b_WAN(P)" : "parameters", path);
    return 0;
}

int hb_bench_logp_main(int argc, char **argv)
{
    hb_bench_common_t com;
    hb_bench_out_t out;
    bl_opts_t o;
    hb_cfg_t *cfg = NULL;
    hbd_cluster_t *cl = NULL;
    hbd_emu_opts_t eo = {0};
    hb_params_t p;
    char err[HB_CFG_ERRLEN];
    int started = 0, rc = 1, out_open = 0;
    double rtt[BL_MAX_SIZES], rtt_ci[BL_MAX_SIZES], gf[BL_MAX_SIZES];
    uint32_t others[256], n_others = 0;

    memset(&o, 0, sizeof(o));
    memset(&p, 0, sizeof(p));
    if (hb_bench_common_parse(&argc, argv, &com) < 0 || bl_parse(argc, argv, &o) < 0)
        return 2;
    if (hb_cfg_load(o.config, o.over, o.n_over, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "hibar-bench logp: %s\n", err);
        return 2;
    }
    if (cfg->n_nodes < 2 || o.from >= cfg->n_nodes || o.to >= cfg->n_nodes) {
        fprintf(stderr, "hibar-bench logp: needs two nodes (the cluster has %u)\n",
                (unsigned)cfg->n_nodes);
        goto out;
    }
    eo = (hbd_emu_opts_t){
        .config = o.config, .over = o.over, .n_over = o.n_over, .timeout_ms = 60000};
    if (hbd_emu_acquire(cfg, &eo, 60000, "hibar-bench logp", &started, &cl) != 0)
        goto out;
    if (hb_bench_out_open(&out, "logp", &com) != 0)
        goto out;
    out_open = 1;
    if (!o.queue_set && getenv("HIBAR_TESTBED_QUEUE_LIMIT") != NULL &&
        getenv("HIBAR_TESTBED_LAN_MBIT") != NULL && atoi(getenv("HIBAR_TESTBED_LAN_MBIT")) > 0)
        o.queue = 1514.0 * atof(getenv("HIBAR_TESTBED_QUEUE_LIMIT"));
    for (uint32_t i = 0; i < cfg->n_nodes && n_others < 256; i++)
        if (i != o.from)
            others[n_others++] = i;
    snprintf(p.cluster, sizeof(p.cluster), "%s", cfg->cluster);
    p.nodes = cfg->n_nodes;
    p.measured = (double)time(NULL);
    p.q = o.queue;
    p.flow_control = o.queue <= 0;
    p.t_rto = o.rto;
    p.burst = o.burst;
    p.n = (uint32_t)o.nsizes;
    hb_bench_out_note(&out,
                      "hibar-bench logp: cluster %s, %u nodes, %s -> %s; flood %u frames x %u; "
                      "q %.0f bytes%s, T_RTO %.0f us",
                      cfg->cluster, (unsigned)cfg->n_nodes, cfg->nodes[o.from].name,
                      cfg->nodes[o.to].name, (unsigned)o.flood, (unsigned)o.floods, o.queue,
                      p.flow_control ? " (flow control: no RTO penalty)" : "", o.rto);
    /* warm-up: links come up on demand (hb_bench_link) */
    {
        char cmd[128], rep[512];
        if (hb_bench_link(cl, &o.from, 1, "hibar-bench logp") != 0)
            goto out;
        snprintf(cmd, sizeof(cmd), "logp %u 0 20 rtt 2", (unsigned)o.to);
        if (bl_cmd(cfg, o.from, cmd, rep, sizeof(rep)) != 0)
            goto out;
    }
    for (int s = 0; s < o.nsizes; s++) {
        char cmd[128], rep[512];
        double tf, os_f;
        snprintf(cmd, sizeof(cmd), "logp %u %zu %u rtt 10", (unsigned)o.to, o.sizes[s],
                 (unsigned)o.max_reps);
        if (bl_cmd(cfg, o.from, cmd, rep, sizeof(rep)) != 0)
            goto out;
        p.m[s] = (double)o.sizes[s];
        /* the median: on a shared machine the mean is the scheduler's tail (both reported) */
        rtt[s] = bl_field(rep, "median_us");
        rtt_ci[s] = bl_field(rep, "ci_us");
        p.os[s] = bl_field(rep, "os_us");
        p.orv[s] = bl_field(rep, "or_us");
        {
            hb_stats_t st = {.n = (size_t)bl_field(rep, "reps"),
                             .mean = bl_field(rep, "mean_us"),
                             .median = bl_field(rep, "median_us"),
                             .min = bl_field(rep, "min_us"),
                             .max = bl_field(rep, "max_us"),
                             .p99 = bl_field(rep, "p99_us"),
                             .ci = rtt_ci[s],
                             .confidence = 0.95};
            char extra[160];
            hb_bench_row_t row = {.impl = "rtt",
                                  .nodes = 2,
                                  .ranks = 2,
                                  .size = o.sizes[s],
                                  .reps = st.n,
                                  .iters = st.n,
                                  .st = &st,
                                  .extra_json = extra};
            snprintf(extra, sizeof(extra), "\"os_us\": %.3f, \"or_us\": %.3f, \"converged\": %d",
                     p.os[s], p.orv[s], (int)bl_field(rep, "converged"));
            hb_bench_out_row(&out, &row);
        }
        /* pair flood */
        snprintf(cmd, sizeof(cmd), "logp %u %zu %u flood", (unsigned)o.to, o.sizes[s],
                 (unsigned)o.flood);
        if (bl_flood(cl, &o, &o.from, 1, cmd, &tf, &os_f) != 0)
            goto out;
        gf[s] = fmax(0.0, (tf - rtt[s]) / (o.flood - 1));
        if (isatty(STDERR_FILENO))
            fprintf(stderr, "\r  logp: %d/%d sizes", s + 1, o.nsizes);
    }
    if (isatty(STDERR_FILENO))
        fputc('\n', stderr);
    /* logp_mpi: g(0) by flooding, L from RTT(0), g(m) from RTT(m) - RTT(0) */
    {
        double g0 = gf[0];
        int z = o.sizes[0] == 0;
        if (!z)
            hb_bench_out_note(&out, "no zero-byte size: g(0) and L from the smallest size");
        p.L = fmax(0.0, rtt[0] / 2 - g0);
        for (int s = 0; s < o.nsizes; s++)
            p.g[s] = fmax(g0, rtt[s] - rtt[0] + g0);
    }
    /* PlogP-BR patterns, each gap from a flood in that pattern (a flood meets the links'
     * rate limits a lone round trip can slip under, e.g. a token bucket's first packet): the
     * pair's is the pair flood above */
    for (int s = 0; s < o.nsizes; s++) {
        p.g_pair[s] = o.no_patterns ? p.g[s] : fmax(gf[s], p.g[0]);
        p.g_o2m[s] = p.g_m2o[s] = p.g[s];
        if (o.no_patterns || n_others < 2)
            continue;
        char cmd[2048], list[1500] = "";
        double t, os_f;
        for (uint32_t i = 0; i < n_others; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%u", i ? "," : "",
                     (unsigned)others[i]);
        snprintf(cmd, sizeof(cmd), "logp %s %zu %u flood", list, o.sizes[s], (unsigned)o.flood);
        if (bl_flood(cl, &o, &o.from, 1, cmd, &t, &os_f) != 0)
            goto out;
        p.g_o2m[s] = fmax(0.0, (t - rtt[s]) / ((double)o.flood * n_others - 1));
        snprintf(cmd, sizeof(cmd), "logp %u %zu %u flood", (unsigned)o.from, o.sizes[s],
                 (unsigned)o.flood);
        if (bl_flood(cl, &o, others, n_others, cmd, &t, &os_f) != 0)
            goto out;
        p.g_m2o[s] = fmax(0.0, (t - rtt[s]) / ((double)o.flood * n_others - 1));
    }
    hb_bench_out_note(&out,
                      "PlogP: L = %.2f us; per size (us): RTT, g (logp_mpi), g by flooding, "
                      "o_s, o_r, g one-to-many, g many-to-one (%u senders)",
                      p.L, (unsigned)n_others);
    for (int s = 0; s < o.nsizes; s++) {
        char extra[400];
        hb_stats_t st = {.n = 1,
                         .mean = p.g[s],
                         .median = p.g[s],
                         .min = p.g[s],
                         .max = p.g[s],
                         .p99 = p.g[s],
                         .ci = rtt_ci[s],
                         .confidence = 0.95};
        hb_bench_row_t row = {.impl = "plogp",
                              .nodes = cfg->n_nodes,
                              .ranks = cfg->n_nodes,
                              .size = o.sizes[s],
                              .reps = 1,
                              .iters = 1,
                              .st = &st,
                              .extra_json = extra};
        hb_bench_out_note(&out,
                          "%8zu  rtt %9.2f  g %9.2f  g_flood %9.2f  os %7.2f  or %7.2f  "
                          "g_o2m %9.2f  g_m2o %9.2f",
                          o.sizes[s], rtt[s], p.g[s], gf[s], p.os[s], p.orv[s], p.g_o2m[s],
                          p.g_m2o[s]);
        snprintf(extra, sizeof(extra),
                 "\"L_us\": %.3f, \"g_us\": %.3f, \"g_flood_us\": %.3f, \"os_us\": %.3f, "
                 "\"or_us\": %.3f, \"g_one_to_many_us\": %.3f, \"g_many_to_one_us\": %.3f, "
                 "\"rtt_us\": %.3f, \"q_bytes\": %.0f, \"t_rto_us\": %.0f",
                 p.L, p.g[s], gf[s], p.os[s], p.orv[s], p.g_o2m[s], p.g_m2o[s], rtt[s], p.q,
                 p.t_rto);
        if (com.json)
            hb_bench_out_row(&out, &row);
    }
    if (hb_bench_cache_write(&out, o.cache, &p, HB_PARAMS_PLOGP, "hibar-bench logp") != 0)
        goto out;
    if (o.plot != NULL) {
        hb_bench_series_t ser[4];
        const char *t[4] = {"g(m) (logp_mpi)", "g(m) one-to-many", "g(m) many-to-one",
                            "g(m) by flooding"};
        double x[BL_MAX_SIZES], y[4][BL_MAX_SIZES];
        for (int s = 0; s < o.nsizes; s++) {
            x[s] = p.m[s];
            y[0][s] = p.g[s];
            y[1][s] = p.g_o2m[s];
            y[2][s] = p.g_m2o[s];
            y[3][s] = gf[s];
        }
        for (int i = 0; i < 4; i++)
            ser[i] = (hb_bench_series_t){.title = t[i], .x = x, .y = y[i], .n = (size_t)o.nsizes};
        hb_bench_plot(o.plot, "logp-gap", "PlogP(-BR) gap per message size", "bytes", "gap (us)",
                      ser, 4, 0);
    }
    rc = 0;
out:
    if (out_open)
        hb_bench_out_close(&out);
    hbd_emu_release(cfg, &eo, cl, started, 0);
    hb_cfg_free(cfg);
    return rc;
}
