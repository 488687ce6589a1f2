/* hibar_sim.c: hibar-sim, scale predictions (barrier, fence, multi-lane scatter) from the
 * production sans-I/O code. */
#include "hb_config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cfg.h"
#include "hb_cli.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hbd_emu.h"
#include "hibar.h"
#include "hibar_sim_host.h"
#include "hier.h"
#include "coll_model.h"
#include "sim.h"
#include "sim_coll.h"
#include "topo.h"

extern char **environ;

#define MAX_LIST 16

typedef struct opts {
    const char *mode;
    const char *config, *calibrate, *plot, *trace, *trace_dir;
    int measure;            /* validate: run hibar-bench cluster-barrier first */
    uint32_t measure_iters; /* its --iters (0: its default) */
    uint32_t host_iters;    /* the host probe's round trips / rounds / pings */
    const char *save;       /* --measure: keep the rows in this file */
    int no_host;            /* validate: ignore host rows */
    int stalls;             /* validate: host rows' medians + stalls, not their means */
    uint32_t blocks;        /* --measure: bench runs, each between two probes */
    const char *bed_rows;   /* validate: scatter/gather rows of the test bed */
    uint32_t nodes, chassis, fanout, sites;
    int have_fanout;
    int protos; /* bit 0 scmd, bit 1 tree */
    uint32_t sweep[MAX_LIST], n_sweep;
    uint32_t fanouts[MAX_LIST], n_fanouts;
    uint32_t barriers;
    double skew;
    uint64_t seed;
    const char *members; /* barrier: a job on part of the cluster: PCT% or a hostlist */
    int json, quiet;
    hb_sim_params_t p;
    hb_sim_calib_t cal;
    /* fence / scatter */
    uint32_t ppn;
    double blob;
    double sizes[MAX_LIST];
    uint32_t n_sizes;
    uint32_t lanes[MAX_LIST], n_lanes;
    const char *const *over;
    size_t n_over;
} opts_t;

static int tty; /* stderr is a terminal: show progress */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: hibar-sim [MODE] [options]\n"
        "modes:\n"
        "  barrier    barrier latency: a sweep over 1k/10k/100k nodes (--sweep), scmd and tree,\n"
        "             fanouts 0 2 4 8 16 (--fanouts), the best fanout marked; --nodes N: that\n"
        "             node count (all fanouts unless --fanout); --config: that cluster\n"
        "  fence      PMIx fence (tree barrier + coll allgather of --ppn x --blob bytes per\n"
        "             node, flat and binomial) at 100/108/1k/10k nodes (--nodes: one count)\n"
        "  scatter    2 sites x 1000 nodes (--nodes: total): single-lane against multi-lane\n"
        "             at P = 2..64 (--lanes) and the model's P_opt, sizes 1K/64K/1M (--size),\n"
        "             scatter and gather, with the closed-form T(P) beside each\n"
        "  alltoall   one site of 16/64/256/1000 nodes (--sweep, --nodes): flat (every node\n"
        "             sends to all at once) against pairwise (n - 1 rounds), --size bytes\n"
        "             per pair (1K/64K), with Hockney's prediction beside each\n"
        "  predict    barrier + fence + scatter\n"
        "  replay     feed each node's events recorded by hibard (HIBAR_TRACE_DIR) through\n"
        "             the simulator's driver and compare the actions line by line:\n"
        "             --config FILE (the daemons' cluster) --trace-dir DIR; exit 1 at a\n"
        "             difference (the first one of each node is shown)\n"
        "  validate   simulate the cluster-barrier rows of --calibrate on --config's topology\n"
        "             and compare with their measured medians (15%% target), with the host\n"
        "             model when the file has host rows; --measure: per protocol, start the\n"
        "             emulated cluster, probe the host model, run hibar-bench cluster-barrier\n"
        "             on it (--measure-iters N: its --iters), probe again, and use those rows\n"
        "             (--blocks B: B bench runs, each between two probes, 3; --save FILE\n"
        "             keeps the rows; --host-iters N: the probe, 2000; --no-host);\n"
        "             --bed-rows FILE: the scatter/gather rows of the multi-lane test bed\n"
        "             (tests/netns/xcoll-bench, tests/sim_bed.sh) against the simulation on\n"
        "             --config (the bed's hibar.yaml), --calibrate: its lanes rows (20%% target)\n"
        "topology:\n"
        "  --config FILE        cluster file (hb_cfg_load; --set KEY=VALUE overrides)\n"
        "  --nodes N --chassis-size C (3) --fanout K (0) --sites S (1)\n"
        "  --sweep N,N,...      node counts of the sweeps; --fanouts K,K,...\n"
        "model:\n"
        "  --calibrate FILE     hibar-bench --json rows (hwbarrier, tsr, cluster-barrier,\n"
        "                       lanes, logp)\n"
        "  --t-ib US --t-sr US --gap US --alpha US --lan-mbit M --lan-lat US\n"
        "  --wan-lat US --lane-mbit M --wan-mbit M --hop tsr|plogp\n"
        "  hosts: --cores N (0: off) --cpu US (control command) --msg-cpu US --io-cpu US\n"
        "         --ib-cpu US --wake US (see hibar-sim(1), MODEL)\n"
        "run:\n"
        "  --protocol scmd|tree|both   --barriers N   --skew US   --seed N\n"
        "  --members PCT%%|LIST  barrier: a job on part of the cluster, PCT%% of the nodes\n"
        "                       drawn with --seed, or a hostlist of --config's nodes; the\n"
        "                       tree is pruned to the chassis holding members (hibar-info\n"
        "                       --members shows it)\n"
        "  --ppn N (1) --blob BYTES (1024)  --size BYTES,...  --lanes P,...\n"
        "output:\n"
        "  --json        one JSON row per result (doc/design.md section 6 keys)\n"
        "  --plot DIR    gnuplot scripts, data and PNGs in DIR\n"
        "  --trace FILE  (one barrier topology) every event fed to and action produced by\n"
        "                each node's engine, one line each, without times\n"
        "  -q            no progress on the terminal\n");
}

/* ---- helpers ------------------------------------------------------------------------------ */

static int parse_u32(const char *s, uint32_t *v)
{
    char *end;
    unsigned long x;

    errno = 0;
    x = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || x > UINT32_MAX || s[0] == '-')
        return -1;
    *v = (uint32_t)x;
    return 0;
}

static int parse_dbl(const char *s, double *v)
{
    char *end;

    errno = 0;
    *v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(*v) || *v < 0)
        return -1;
    return 0;
}

static int parse_u32_list(const char *s, uint32_t *v, uint32_t *n)
{
    char buf[256], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", s);
    *n = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (*n >= MAX_LIST || parse_u32(tok, &v[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n > 0 ? 0 : -1;
}

static int parse_dbl_list(const char *s, double *v, uint32_t *n)
{
    char buf[256], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", s);
    *n = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (*n >= MAX_LIST || parse_dbl(tok, &v[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n > 0 ? 0 : -1;
}

static void progress(void *arg, uint64_t events, double t_us)
{
    const char *what = arg;

    if (tty)
        fprintf(stderr, "\r  %s: %" PRIu64 "M events, simulated t = %.1f us   ", what, events >> 20,
                t_us);
}

static void progress_clear(void)
{
    if (tty)
        fprintf(stderr, "\r%70s\r", "");
}

static double wall_s(uint64_t t0)
{
    return (double)(hb_time_now_ns() - t0) / 1e9;
}

/* Topology from --config (with its fanout unless --fanout) or generated. */
static int make_topo(const opts_t *o, uint32_t nodes, uint32_t fanout, hb_topo_t **t_p)
{
    char err[HB_CFG_ERRLEN];
    int rc;

    if (o->config != NULL) {
        hb_cfg_t *cfg;
        hb_topo_spec_t spec;
        rc = hb_cfg_load(o->config, o->over, o->n_over, &cfg, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "hibar-sim: %s\n", err);
            return rc;
        }
        rc = hb_cfg_topo_spec(cfg, &spec);
        if (rc == 0) {
            if (o->have_fanout)
                spec.fanout = fanout;
            rc = hb_topo_build(&spec, t_p, err, sizeof(err));
            if (rc != 0)
                fprintf(stderr, "hibar-sim: %s: %s\n", o->config, err);
        }
        hb_cfg_free(cfg);
        return rc;
    }
    rc = hb_sim_topo_gen(nodes, o->chassis, fanout, o->sites, t_p, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "hibar-sim: topology: %s\n", err);
    return rc;
}

/* --members: replace *t_p by the view of a job on part of it (hb_topo_restrict). */
static int view_topo(const opts_t *o, hb_topo_t **t_p)
{
    hb_topo_t *t = *t_p, *v = NULL;
    uint8_t *m = calloc(t->n_nodes, 1);
    char err[HB_CFG_ERRLEN] = "", *end;
    int rc = 0;

    if (m == NULL)
        return HIBAR_ERR_NOMEM;
    double pct = strtod(o->members, &end);
    if (end != o->members && strcmp(end, "%") == 0) {
        uint64_t st = o->seed * 0x9e3779b97f4a7c15ull + 1;
        if (!(pct > 0 && pct <= 100)) {
            snprintf(err, sizeof(err), "--members %s: a share in (0, 100]%%", o->members);
            rc = HIBAR_ERR_CONFIG;
        }
        for (uint32_t i = 0; i < t->n_nodes && rc == 0; i++) {
            st ^= st >> 12, st ^= st << 25, st ^= st >> 27;
            m[i] = (double)((st * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0 * 100 < pct;
        }
    } else if (o->config == NULL) {
        snprintf(err, sizeof(err), "--members %s: a hostlist needs --config (else PCT%%)",
                 o->members);
        rc = HIBAR_ERR_CONFIG;
    } else {
        hb_cfg_t *cfg = NULL;
        rc = hb_cfg_load(o->config, o->over, o->n_over, &cfg, err, sizeof(err));
        if (rc == 0)
            rc = hb_cfg_members(cfg, o->members, m, NULL, err, sizeof(err));
        hb_cfg_free(cfg);
    }
    if (rc == 0)
        rc = hb_topo_restrict(t, m, &v, err, sizeof(err));
    free(m);
    if (rc != 0) {
        fprintf(stderr, "hibar-sim: --members: %s\n", err[0] ? err : hibar_strerror(rc));
        return rc;
    }
    hb_topo_free(t);
    *t_p = v;
    return 0;
}

/* Heap bytes per hb_hier engine (glibc's mallinfo2 around creating some of them). */
static double engine_bytes(const hb_topo_t *t, hb_hier_proto_t proto)
{
    uint32_t n = t->n_members < 2000 ? t->n_members : 2000, i, node = 0;
    hb_hier_t **e = calloc(n, sizeof(*e));
    hb_hier_cfg_t cfg;
    struct mallinfo2 a, b;
    double per = -1;

    if (e == NULL)
        return -1;
    hb_hier_cfg_init(&cfg);
    cfg.protocol = proto;
    cfg.n_sync = 2; /* what the simulator uses */
    a = mallinfo2();
    for (i = 0; i < n; i++, node++) {
        while (!t->nodes[node].member) /* a job's view: engines on members only */
            node++;
        if (hb_hier_create(t, node, &cfg, &e[i]) != 0)
            break;
    }
    b = mallinfo2();
    if (i == n)
        per = (double)(b.uordblks - a.uordblks) / n;
    while (i-- > 0)
        hb_hier_destroy(e[i]);
    free(e);
    return per;
}

static void print_params(const opts_t *o)
{
    const hb_sim_params_t *p = &o->p;

    if (o->json)
        return;
    printf("# model: T_IB %.2f us, T_SR %.2f us, gap %.2f us, hop %s; alpha %.1f us, b_LAN %.0f "
           "Mbit/s; WAN L %.0f us, lane %.0f Mbit/s, total %.0f Mbit/s%s\n",
           p->t_ib, p->t_sr, p->ctl_gap, p->hop == HB_SIM_HOP_PLOGP ? "plogp" : "tsr", p->alpha,
           p->b_lan * 8, p->wan_lat, p->b_lane * 8, p->B_wan * 8,
           p->n_b_wan ? " (measured b_WAN(P) table)" : "");
    if (p->cores > 0)
        printf("# hosts: %" PRIu32 " cores per host; CPU per message %.2f us (main) + %.2f us "
               "(I/O thread) at each end, per control command %.2f us, per chassis round %.2f "
               "us; wake-up %.2f us\n",
               p->cores, p->msg_cpu_us, p->io_cpu_us, p->cpu_us, p->ib_cpu_us, p->wake_us);
    if (o->calibrate != NULL)
        printf("# calibrated from %s: %" PRIu32 " rows, %" PRIu32 " used%s%s%s%s%s\n", o->calibrate,
               o->cal.rows, o->cal.used, o->cal.set & HB_SIM_SET_TIB ? ", T_IB" : "",
               o->cal.set & HB_SIM_SET_TSR ? ", T_SR" : "",
               o->cal.set & HB_SIM_SET_LAN ? ", LAN" : "",
               o->cal.set & HB_SIM_SET_WAN ? ", WAN" : "",
               o->cal.set & HB_SIM_SET_LOGP ? ", PlogP" : "");
}

/* ---- plots ------------------------------------------------------------------------------- */

/* Run gnuplot on script; 0 if it exited 0. */
static int run_gnuplot(const char *arg1, const char *arg2)
{
    char *argv[4] = {"gnuplot", (char *)arg1, (char *)arg2, NULL};
    pid_t pid;
    int st;
    posix_spawn_file_actions_t fa;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1 /* O_WRONLY */, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1, 0);
    if (posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The PNG terminal this gnuplot has: pngcairo, else png; NULL if no gnuplot. */
static const char *png_terminal(void)
{
    static const char *term;
    static int probed;

    if (!probed) {
        probed = 1;
        if (run_gnuplot("-e", "set terminal pngcairo") == 0)
            term = "pngcairo";
        else if (run_gnuplot("-e", "set terminal png") == 0)
            term = "png";
    }
    return term;
}

static FILE *plot_open(const char *dir, const char *name, char *path, size_t len)
{
    FILE *f;

    snprintf(path, len, "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL)
        fprintf(stderr, "hibar-sim: %s: %s\n", path, strerror(errno));
    return f;
}

/* Write script (the caller wrote the data), then run it; says what was made. */
static void plot_finish(const char *gp, const char *png)
{
    const char *term = png_terminal();

    if (term == NULL) {
        fprintf(stderr, "hibar-sim: gnuplot with a PNG terminal not found; script left in %s\n",
                gp);
        return;
    }
    if (run_gnuplot(gp, NULL) != 0)
        fprintf(stderr, "hibar-sim: gnuplot %s failed\n", gp);
    else if (!tty || 1)
        fprintf(stderr, "hibar-sim: wrote %s\n", png);
}

/* ---- barrier ------------------------------------------------------------------------------- */

typedef struct bar_row {
    hb_hier_proto_t proto;
    uint32_t nodes, members, fanout, L, chassis;
    double sim, formula, wall;
    uint64_t events;
    int best, ok;
} bar_row_t;

static FILE *trace_f;
static void trace_fn(void *arg, const hb_hier_rec_t *r)
{
    char line[256];

    (void)arg;
    hb_hier_rec_format(r, line, sizeof(line));
    fprintf(trace_f, "%s\n", line);
}

static int bar_one(const opts_t *o, const hb_topo_t *t, hb_hier_proto_t proto, bar_row_t *row)
{
    hb_sim_opts_t so;
    hb_sim_result_t r;
    char what[96];
    uint64_t t0;
    int rc;

    hb_sim_opts_init(&so);
    so.proto = proto;
    so.barriers = o->barriers;
    so.skew_us = o->skew;
    so.seed = o->seed;
    snprintf(what, sizeof(what), "%s %" PRIu32 " nodes fanout %" PRIu32, hb_hier_proto_name(proto),
             t->n_nodes, t->fanout);
    if (!o->quiet) {
        so.progress = progress;
        so.progress_arg = what;
        if (tty)
            fprintf(stderr, "\r  %s ...", what);
    }
    if (trace_f != NULL) {
        so.trace = trace_fn;
    }
    t0 = hb_time_now_ns();
    rc = hb_sim_barrier(t, &o->p, &so, &r);
    row->wall = wall_s(t0);
    if (!o->quiet)
        progress_clear();
    row->proto = proto;
    row->nodes = t->n_nodes;
    row->members = t->n_members;
    row->fanout = t->fanout;
    row->L = t->L;
    row->chassis = t->n_chassis;
    row->formula = hb_hier_predict(t, proto, o->p.t_ib, o->p.t_sr);
    if (rc != 0) {
        fprintf(stderr, "hibar-sim: %s: %s\n", what, hibar_strerror(rc));
        return rc;
    }
    row->sim = r.latency_us;
    row->events = r.events;
    row->ok = 1;
    return 0;
}

static void bar_print(const opts_t *o, const bar_row_t *rows, size_t n)
{
    size_t i;

    if (!o->json)
        printf("# %-8s %8s %7s %4s %8s %14s %14s %10s %8s %s\n", "Protocol", "Nodes", "Fanout", "L",
               "Chassis", "Sim(us)", "Formula(us)", "Events", "Wall(s)", "Best");
    for (i = 0; i < n; i++) {
        const bar_row_t *r = &rows[i];
        if (!r->ok)
            continue;
        if (o->json)
            printf("{\"bench\": \"sim-barrier\", \"impl\": \"%s\", \"nodes\": %" PRIu32
                   ", \"ranks\": %" PRIu32 ", \"size\": 0, \"iters\": %" PRIu32
                   ", \"predicted_us\": %.2f, \"fanout\": %" PRIu32 ", \"L\": %" PRIu32
                   ", \"chassis\": %" PRIu32 ", \"formula_us\": %.2f, \"t_ib_us\": %.2f, "
                   "\"t_sr_us\": %.2f, \"best\": %s, \"events\": %" PRIu64 ", \"wall_s\": %.3f, "
                   "\"members\": %" PRIu32 "}\n",
                   hb_hier_proto_name(r->proto), r->nodes, r->members, o->barriers, r->sim,
                   r->fanout, r->L, r->chassis, r->formula, o->p.t_ib, o->p.t_sr,
                   r->best ? "true" : "false", r->events, r->wall, r->members);
        else
            printf("  %-8s %8" PRIu32 " %7" PRIu32 " %4" PRIu32 " %8" PRIu32
                   " %14.1f %14.1f %10" PRIu64 " %8.2f %s\n",
                   hb_hier_proto_name(r->proto), r->nodes, r->fanout, r->L, r->chassis, r->sim,
                   r->formula, r->events, r->wall, r->best ? "<- best" : "");
    }
    fflush(stdout);
}

static void bar_plot(const opts_t *o, const bar_row_t *rows, size_t n)
{
    char dat[512], gp[512], png[512];
    FILE *f;
    size_t i, k;
    int pr;

    f = plot_open(o->plot, "barrier.dat", dat, sizeof(dat));
    if (f == NULL)
        return;
    /* one block per (protocol, fanout): nodes sim */
    for (pr = 0; pr < 2; pr++)
        for (k = 0; k < o->n_fanouts; k++) {
            fprintf(f, "# %s fanout %" PRIu32 "\n", pr ? "tree" : "scmd", o->fanouts[k]);
            for (i = 0; i < n; i++)
                if (rows[i].ok && (int)rows[i].proto == pr && rows[i].fanout == o->fanouts[k])
                    fprintf(f, "%" PRIu32 " %.3f %d\n", rows[i].nodes, rows[i].sim, rows[i].best);
            fprintf(f, "\n\n");
        }
    fclose(f);
    f = plot_open(o->plot, "barrier.gp", gp, sizeof(gp));
    if (f == NULL)
        return;
    snprintf(png, sizeof(png), "%s/barrier.png", o->plot);
    fprintf(
        f,
        "# barrier.gp: hibar-sim barrier latency against node count (hibar-sim barrier --plot)\n"
        "set terminal %s noenhanced size 900,600\nset output '%s'\n"
        "set title 'hibar-sim: barrier latency (T_IB %.2f us, T_SR %.2f us)'\n"
        "set logscale xy\nset xlabel 'nodes'\nset ylabel 'latency (us)'\nset key left top\n"
        "set grid\nplot ",
        png_terminal() ? png_terminal() : "pngcairo", png, o->p.t_ib, o->p.t_sr);
    for (pr = 0, i = 0; pr < 2; pr++)
        for (k = 0; k < o->n_fanouts; k++, i++)
            fprintf(f, "%s'%s' index %zu using 1:2 with linespoints title '%s fanout %" PRIu32 "'",
                    i ? ", " : "", dat, i, pr ? "tree" : "scmd", o->fanouts[k]);
    fprintf(f,
            ", '%s' using 1:($3 > 0 ? $2 : 1/0) with points pt 7 ps 2 lc rgb 'black' "
            "title 'best fanout'\n",
            dat);
    fclose(f);
    plot_finish(gp, png);
}

static int mode_barrier(opts_t *o)
{
    bar_row_t *rows;
    size_t n = 0, i, j;
    int pr, rc = 0, single = o->config != NULL || o->nodes > 0;
    uint32_t s, k;

    if (!o->n_fanouts) {
        static const uint32_t def[] = {0, 2, 4, 8, 16};
        memcpy(o->fanouts, def, sizeof(def));
        o->n_fanouts = 5;
    }
    if (single) {
        o->n_sweep = 1;
        o->sweep[0] = o->nodes;
        if (o->have_fanout || o->config != NULL) {
            o->n_fanouts = 1;
            o->fanouts[0] = o->fanout;
        }
    } else if (!o->n_sweep) {
        o->sweep[0] = 1000;
        o->sweep[1] = 10000;
        o->sweep[2] = 100000;
        o->n_sweep = 3;
    }
    rows = calloc((size_t)o->n_sweep * o->n_fanouts * 2, sizeof(*rows));
    if (rows == NULL)
        return HIBAR_ERR_NOMEM;
    print_params(o);
    for (s = 0; s < o->n_sweep && rc == 0; s++) {
        for (k = 0; k < o->n_fanouts && rc == 0; k++) {
            hb_topo_t *t = NULL;
            rc = make_topo(o, o->sweep[s], o->fanouts[k], &t);
            if (rc == 0 && o->members != NULL && (rc = view_topo(o, &t)) != 0)
                hb_topo_free(t);
            if (rc != 0)
                break;
            if (o->members != NULL && !o->json)
                printf("# members %s: %" PRIu32 " of %" PRIu32 " nodes, %" PRIu32 " of %" PRIu32
                       " chassis, root chassis %" PRIu32 ", L %" PRIu32 "\n",
                       o->members, t->n_members, t->n_nodes, t->n_active, t->n_chassis, t->root,
                       t->L);
            if (single && !o->json) {
                double eb = engine_bytes(t, HB_HIER_SCMD);
                printf("# topology: %" PRIu32 " nodes, %" PRIu32 " chassis, %" PRIu32
                       " sites, fanout %" PRIu32 ", depth %" PRIu32 ", L %" PRIu32
                       "; hb_hier engine %.0f bytes/node\n",
                       t->n_nodes, t->n_chassis, t->n_sites, t->fanout, t->depth, t->L, eb);
            }
            for (pr = 0; pr < 2 && rc == 0; pr++)
                if (o->protos & (1 << pr))
                    rc = bar_one(o, t, (hb_hier_proto_t)pr, &rows[n++]);
            hb_topo_free(t);
        }
    }
    /* best fanout per (nodes, protocol): the fastest, the first of equals */
    for (i = 0; i < n; i++) {
        int best = rows[i].ok;
        for (j = 0; j < n && best; j++) {
            int earlier = j < i;
            if (j == i || !rows[j].ok || rows[j].nodes != rows[i].nodes ||
                rows[j].proto != rows[i].proto)
                continue;
            if (rows[j].sim < rows[i].sim || (rows[j].sim == rows[i].sim && earlier))
                best = 0;
        }
        rows[i].best = best && o->n_fanouts > 1;
    }
    bar_print(o, rows, n);
    if (o->plot != NULL && n > 0)
        bar_plot(o, rows, n);
    free(rows);
    return rc;
}

/* ---- validate ------------------------------------------------------------------------------ */

/*
 * validate --measure: per protocol (scmd, tree, or --protocol), start the emulated cluster of
 * --config with that protocol (the same --set overrides), probe the host model on it
 * (hibar_sim_host.c: a hop, a chassis round, control commands, one at a time), run
 * `hibar-bench cluster-barrier --protocol P --config F --json` on it, probe again, stop it.
 * All rows go to a private file (or --save FILE), which then calibrates the simulation: the
 * measurement and its simulation side by side in one run. hibar-bench is $HIBAR_BENCH, else
 * the one beside this program, else found on PATH.
 */
static void bench_path(char *bench, size_t len)
{
    const char *env = getenv("HIBAR_BENCH");
    char self[4096];
    ssize_t n;

    if (env != NULL && *env != '\0') {
        snprintf(bench, len, "%s", env);
        return;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
    if (slash != NULL) {
        *slash = '\0';
        snprintf(bench, len, "%.4000s/hibar-bench", self);
    }
    if (slash == NULL || access(bench, X_OK) != 0) {
        /* a libtool build keeps the program in .libs/ */
        if (slash != NULL && strlen(self) > 6 && strcmp(self + strlen(self) - 6, "/.libs") == 0)
            self[strlen(self) - 6] = '\0';
        snprintf(bench, len, "%.4000s/hibar-bench", self);
        if (slash == NULL || access(bench, X_OK) != 0)
            snprintf(bench, len, "hibar-bench");
    }
}

/* hibar-bench cluster-barrier --protocol proto on the running cluster, its stdout onto fd. */
static int bench_run(const opts_t *o, const char *proto, int fd)
{
    char bench[4096], iters[16];
    const char *argv[12 + 2 * 64 + 1];
    posix_spawn_file_actions_t fa;
    size_t i, k = 0;
    pid_t pid;
    int st, rc;

    bench_path(bench, sizeof(bench));
    argv[k++] = bench;
    argv[k++] = "cluster-barrier";
    argv[k++] = "--config";
    argv[k++] = o->config;
    argv[k++] = "--protocol";
    argv[k++] = proto;
    argv[k++] = "--json";
    if (o->measure_iters > 0) {
        snprintf(iters, sizeof(iters), "%" PRIu32, o->measure_iters);
        argv[k++] = "--iters";
        argv[k++] = iters;
    }
    for (i = 0; i < o->n_over && i < 64; i++) {
        argv[k++] = "--set";
        argv[k++] = o->over[i];
    }
    argv[k] = NULL;
    if (!o->quiet)
        fprintf(stderr, "hibar-sim: measuring: %s cluster-barrier --protocol %s --config %s ...\n",
                bench, proto, o->config);
    fflush(NULL);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    rc = posix_spawnp(&pid, bench, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "hibar-sim: cannot run %s: %s\n", bench, strerror(rc));
        return HIBAR_ERR_IO;
    }
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            st = -1;
            break;
        }
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "hibar-sim: %s cluster-barrier failed (status %d)\n", bench, st);
        return HIBAR_ERR_IO;
    }
    return 0;
}

/* One protocol: cluster up, probe, bench, probe, cluster down; rows onto f (fd). */
static int measure_proto(const opts_t *o, const char *proto, FILE *f)
{
    const char *over[66];
    char pset[32], err[HB_CFG_ERRLEN];
    hb_cfg_t *cfg = NULL;
    hb_topo_t *t = NULL;
    hb_topo_spec_t spec;
    hbd_emu_opts_t eo;
    hbs_host_t h;
    size_t n = 0, i;
    int rc, k;

    for (i = 0; i < o->n_over && i < 64; i++)
        over[n++] = o->over[i];
    snprintf(pset, sizeof(pset), "protocol=%s", proto);
    over[n++] = pset;
    rc = hb_cfg_load(o->config, over, n, &cfg, err, sizeof(err));
    if (rc == 0 && (rc = hb_cfg_topo_spec(cfg, &spec)) == 0)
        rc = hb_topo_build(&spec, &t, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "hibar-sim: %s\n", err);
        hb_cfg_free(cfg);
        return rc;
    }
    memset(&eo, 0, sizeof(eo));
    eo.config = o->config;
    eo.over = over;
    eo.n_over = n;
    eo.timeout_ms = 60000;
    if (hbd_emu_running(cfg) > 0) {
        fprintf(stderr, "hibar-sim: cluster %s is already running: give --set cluster=NAME\n",
                cfg->cluster);
        rc = HIBAR_ERR_EXISTS;
        goto out;
    }
    rc = hbd_emu_up(cfg, &eo);
    if (rc != 0) {
        fprintf(stderr, "hibar-sim: cannot start the emulated cluster: %s\n", hibar_strerror(rc));
        goto out;
    }
    /* probe, bench, probe, bench, ..., probe: the host figures bracket the barriers they are
     * used for, and both see the same (shared, changing) machine */
    for (k = 0; k < 2 * (int)o->blocks + 1 && rc == 0; k++) {
        if (k % 2 == 1) {
            fflush(f);
            rc = bench_run(o, proto, fileno(f));
            continue;
        }
        if (!o->quiet)
            fprintf(stderr, "hibar-sim: probing the host model (%s, %" PRIu32 " iterations)\n",
                    proto, o->host_iters);
        rc = hbs_host_probe(cfg, t, o->host_iters, &h);
        if (rc == 0)
            hbs_host_row(f, proto, &h);
    }
    fflush(f);
    hbd_emu_down(cfg, &eo);
out:
    hb_topo_free(t);
    hb_cfg_free(cfg);
    return rc;
}

static int measure_run(const opts_t *o, char *path, size_t len)
{
    static const char *const protos[] = {"scmd", "tree"};
    FILE *f;
    int fd, rc = 0, i;

    if (o->save != NULL) {
        snprintf(path, len, "%s", o->save);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
        const char *tmp = getenv("TMPDIR");
        if (tmp == NULL || tmp[0] != '/')
            tmp = "/tmp";
        if ((size_t)snprintf(path, len, "%s/hibar-sim-measure.XXXXXX", tmp) >= len) {
            errno = ENAMETOOLONG;
            fd = -1;
        } else {
            fd = mkstemp(path);
        }
    }
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        fprintf(stderr, "hibar-sim: %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        path[0] = '\0';
        return HIBAR_ERR_IO;
    }
    for (i = 0; i < 2 && rc == 0; i++)
        if (o->protos & (1 << i))
            rc = measure_proto(o, protos[i], f);
    if (fclose(f) != 0 && rc == 0)
        rc = HIBAR_ERR_IO;
    if (rc != 0 && o->save == NULL) {
        unlink(path);
        path[0] = '\0';
    }
    return rc;
}

/* Host of each node: nodes with the same address share one (an emulated cluster: all). */
static uint32_t *hosts_of(const opts_t *o, uint32_t n_nodes)
{
    char err[HB_CFG_ERRLEN];
    hb_cfg_t *cfg = NULL;
    uint32_t *h = calloc(n_nodes, sizeof(uint32_t)), i, j, nh = 0;

    if (h == NULL || o->config == NULL ||
        hb_cfg_load(o->config, o->over, o->n_over, &cfg, err, sizeof(err)) != 0 ||
        cfg->n_nodes != n_nodes) {
        hb_cfg_free(cfg);
        return h; /* all on host 0 */
    }
    for (i = 0; i < n_nodes; i++) {
        const char *a = cfg->nodes[i].address ? cfg->nodes[i].address : "127.0.0.1";
        for (j = 0; j < i; j++)
            if (strcmp(cfg->nodes[j].address ? cfg->nodes[j].address : "127.0.0.1", a) == 0)
                break;
        h[i] = j < i ? h[j] : nh++;
    }
    hb_cfg_free(cfg);
    return h;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* With stalls or skewed arrivals a barrier's time is random: the median of VALIDATE_RUNS
 * independent barriers (seeds 1..N), as the measurement is a median; without, the one
 * deterministic run. */
#define VALIDATE_RUNS 201
static int sim_median(const hb_topo_t *t, const hb_sim_params_t *p, hb_sim_opts_t *so,
                      hb_sim_result_t *r_p)
{
    double v[VALIDATE_RUNS] = {0};
    uint32_t k, n = p->sr_stall_p > 0 || p->ib_stall_p > 0 || so->skew_us > 0 ? VALIDATE_RUNS : 1;
    int rc = 0;

    for (k = 0; k < n && rc == 0; k++) {
        so->seed = k + 1;
        rc = hb_sim_barrier(t, p, so, r_p);
        v[k] = r_p->latency_us;
    }
    if (rc == 0) {
        qsort(v, n, sizeof(double), cmp_dbl);
        r_p->latency_us = v[n / 2];
    }
    return rc;
}

static int mode_validate(opts_t *o)
{
    hb_topo_t *t = NULL;
    uint32_t i, *host_of = NULL;
    int rc;
    unsigned fails = 0, rows = 0;

    if (o->calibrate == NULL || (o->config == NULL && o->nodes == 0)) {
        fprintf(stderr,
                "hibar-sim: validate needs --calibrate FILE and --config FILE (or --nodes)\n");
        return HIBAR_ERR_CONFIG;
    }
    if (o->cal.n_meas == 0) {
        fprintf(stderr, "hibar-sim: %s has no cluster-barrier row to validate against\n",
                o->calibrate);
        return HIBAR_ERR_NOT_FOUND;
    }
    rc = make_topo(o, o->nodes, o->fanout, &t);
    if (rc != 0)
        return rc;
    host_of = hosts_of(o, t->n_nodes);
    if (host_of == NULL) {
        hb_topo_free(t);
        return HIBAR_ERR_NOMEM;
    }
    if (!o->json) {
        double load[1];
        printf(
            "# validate: one barrier on %s (%" PRIu32 " nodes), measured and simulated side by "
            "side\n"
            "# measured:  %s; the daemons' protocol-only median (protocol_median_us) when the "
            "row has it, else median_us; the mean over the rows of a protocol (blocks)\n"
            "# simulated: hibar-sim, every node's hb_hier engine; with host rows: the host model "
            "(cores, CPU per message, wake-up, T_IB and T_SR of one chassis / one hop alone, "
            "measured by the probes, each the median over the probes; the CPU figures scaled "
            "by CPUx so that the simulated barrier uses the CPU per barrier the rows measured "
            "in the daemons), else the row's own T_IB and T_SR\n"
            "# error:     (simulated - measured) / measured; target: within +-15%%\n",
            o->config ? o->config : "the generated topology", t->n_nodes,
            o->measure ? "hibar-bench cluster-barrier, run just now" : o->calibrate);
        if (getloadavg(load, 1) == 1)
            printf("# load average now: %.2f\n", load[0]);
        printf("# %-8s %6s %14s %14s %10s %7s %-8s %8s %8s %7s %7s %7s %7s %5s %6s\n", "Protocol",
               "Nodes", "Measured(us)", "Simulated(us)", "Error(%)", "Target", "Within", "T_IB(us)",
               "T_SR(us)", "Msg(us)", "IO(us)", "IB(us)", "Wake", "Cores", "CPUx");
    }
    for (i = 0; i < o->cal.n_meas; i++) {
        const hb_sim_meas_t *m = &o->cal.meas[i];
        hb_hier_proto_t proto;
        hb_sim_params_t p = o->p;
        hb_sim_opts_t so;
        hb_sim_result_t r;
        double err, meas = 0, tib = 0, tsr = 0, cpu = 0, ping = 0, scale = 1, spread = 0;
        uint32_t j, nb = 0, ncpu = 0, nspread = 0;
        int host, seen = 0;
        /* the rows of one protocol (--measure's blocks) are one measurement: their mean */
        for (j = 0; j < i; j++)
            seen |= strcmp(o->cal.meas[j].impl, m->impl) == 0 && o->cal.meas[j].nodes == m->nodes;
        if (seen)
            continue;
        for (j = i; j < o->cal.n_meas; j++) {
            const hb_sim_meas_t *q = &o->cal.meas[j];
            if (strcmp(q->impl, m->impl) != 0 || q->nodes != m->nodes)
                continue;
            meas += q->protocol_median_us > 0 ? q->protocol_median_us : q->median_us;
            tib += q->t_ib_us;
            tsr += q->t_sr_us;
            if (q->arrive_spread_us >= 0) {
                spread += q->arrive_spread_us;
                nspread++;
            }
            if (q->cpu_per_barrier_us > 0 && q->cpu_per_ping_us >= 0 &&
                q->cpu_per_ping_us < q->cpu_per_barrier_us) {
                cpu += q->cpu_per_barrier_us;
                ping += q->cpu_per_ping_us;
                ncpu++;
            }
            nb++;
        }
        meas /= nb;
        if (hb_hier_proto_parse(m->impl, &proto) != 0 || m->nodes != t->n_nodes) {
            fprintf(stderr,
                    "hibar-sim: skipping the %s row of %" PRIu32 " nodes (topology has %" PRIu32
                    ")\n",
                    m->impl, m->nodes, t->n_nodes);
            continue;
        }
        host = o->no_host
                   ? 0
                   : hb_sim_calib_host(&o->cal, NULL,
                                       o->stalls ? HB_SIM_STEP_STALLS : HB_SIM_STEP_MEAN, &p) == 0;
        if (!host && tib >= 0 && tsr >= 0) {
            p.t_ib = tib / nb;
            p.t_sr = tsr / nb;
        }
        hb_sim_opts_init(&so);
        so.proto = proto;
        so.host_of = host_of;
        /* the driver asks the daemons one after the other: they arrive over the spread the
         * rows measured, and the early ones start the protocol before the last arrives */
        if (host && nspread > 0)
            so.skew_us = spread / nspread;
        rc = sim_median(t, &p, &so, &r);
        /* The probes time each kind of work alone; among 30 daemons' threads on 2 cores
         * every piece costs more (switches, caches). The rows measured, in the same run, the
         * daemons' CPU per barrier and per round of control commands: a node's control
         * command and reply cost that round's share, and the protocol's work (messages, chassis
         * rounds) is scaled so that the simulated barrier uses the CPU the daemons used
         * (cpu_busy_us is linear in the costs); the probes give the proportions. */
        if (rc == 0 && host && ncpu > 0) {
            /* the model books cpu_us twice per node: the command and its reply */
            double ctl = ping / ncpu / (2.0 * t->n_nodes);
            double proto_sim = r.cpu_busy_us - 2.0 * p.cpu_us * t->n_nodes;
            if (proto_sim > 0) {
                scale = (cpu - ping) / ncpu / proto_sim;
                p.cpu_us = ctl;
                p.msg_cpu_us *= scale;
                p.io_cpu_us *= scale;
                p.ib_cpu_us *= scale;
                rc = sim_median(t, &p, &so, &r);
            }
        }
        if (rc != 0)
            break;
        err = 100.0 * (r.latency_us - meas) / meas;
        fails += fabs(err) > 15.0;
        if (o->json)
            printf("{\"bench\": \"sim-validate\", \"impl\": \"%s\", \"nodes\": %" PRIu32
                   ", \"size\": 0, \"median_us\": %.2f, \"predicted_us\": %.2f, \"error_pct\": "
                   "%.1f, \"t_ib_us\": %.2f, \"t_sr_us\": %.2f, \"host_model\": %s, \"cores\": "
                   "%" PRIu32 ", \"msg_cpu_us\": %.2f, \"io_cpu_us\": %.2f, \"ib_cpu_us\": %.2f, "
                   "\"ctl_cpu_us\": %.2f, \"wake_us\": %.2f, \"cpu_busy_us\": %.1f, "
                   "\"core_wait_us\": %.1f, \"cpu_per_barrier_us\": %.1f, \"cpu_scale\": "
                   "%.3f, \"blocks\": %" PRIu32 ", \"within\": %s}\n",
                   m->impl, m->nodes, meas, r.latency_us, err, p.t_ib, p.t_sr,
                   host ? "true" : "false", p.cores, p.msg_cpu_us, p.io_cpu_us, p.ib_cpu_us,
                   p.cpu_us, p.wake_us, r.cpu_busy_us, r.core_wait_us, ncpu > 0 ? cpu / ncpu : -1.0,
                   scale, nb, fabs(err) <= 15.0 ? "true" : "false");
        else
            printf("  %-8s %6" PRIu32 " %14.1f %14.1f %+10.1f %7s %-8s %8.2f %8.2f %7.2f %7.2f "
                   "%7.2f %7.2f %5" PRIu32 " %6.2f\n",
                   m->impl, m->nodes, meas, r.latency_us, err, "15%",
                   fabs(err) <= 15.0 ? "yes" : "NO", p.t_ib, p.t_sr, p.msg_cpu_us, p.io_cpu_us,
                   p.ib_cpu_us, p.wake_us, p.cores, scale);
        rows++;
    }
    if (rc == 0 && !o->json)
        printf("validate: %u of %u protocols within 15%% of the measured barrier\n", rows - fails,
               rows);
    free(host_of);
    hb_topo_free(t);
    if (rc == 0 && fails > 0)
        return 1;
    return rc;
}

/* ---- validate --bed-rows: scatter / gather on the multi-lane test bed -------------------- */

#define BED_TARGET 20.0

/* "a,b,c" -> n values into v (at most max). 0, or -1 if malformed or not n values. */
static int parse_starts(const char *s, double *v, uint32_t n)
{
    uint32_t k = 0;
    char *end;

    while (*s != '\0' && k < n) {
        errno = 0;
        v[k] = strtod(s, &end);
        if (end == s || errno != 0 || !(v[k] >= 0) || !isfinite(v[k]))
            return -1;
        k++;
        s = end;
        if (*s == ',')
            s++;
    }
    return k == n && *s == '\0' ? 0 : -1;
}

/*
 * Every scatter / gather row of --bed-rows (tests/netns/xcoll-bench's, or tests/sim_bed.sh's,
 * which add starts_us: each daemon's start, in node order, from the first) simulated on the
 * bed's topology (--config: the bed's hibar.yaml) with the daemons' segment (32 KiB), and the
 * calibration's LAN and WAN figures (lanes rows: what hb_bwprobe measured on the bed), side
 * by side; target 20%.
 */
/* The number at key in a JSON row, dflt when absent or not a number. */
static double row_num(const json_t *row, const char *key, double dflt)
{
    const json_t *v = json_object_get(row, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static int mode_validate_bed(opts_t *o)
{
    hb_topo_t *t = NULL;
    hb_coll_nodes_t nodes;
    uint32_t *site_of = NULL;
    double *starts = NULL;
    char line[16384];
    json_t *row = NULL;
    unsigned lineno = 0, rows = 0, fails = 0;
    FILE *f;
    int rc;

    if (o->config == NULL) {
        fprintf(stderr, "hibar-sim: validate --bed-rows needs --config (the bed's hibar.yaml)\n");
        return HIBAR_ERR_CONFIG;
    }
    rc = make_topo(o, 0, o->fanout, &t);
    if (rc != 0)
        return HIBAR_ERR_CONFIG;
    site_of = calloc(t->n_nodes, sizeof(uint32_t));
    starts = calloc(t->n_nodes, sizeof(double));
    if (site_of == NULL || starts == NULL) {
        rc = HIBAR_ERR_NOMEM;
        goto out;
    }
    rc = hb_coll_nodes_from_topo(t, NULL, site_of, &nodes);
    if (rc != 0)
        goto out;
    f = fopen(o->bed_rows, "r");
    if (f == NULL) {
        fprintf(stderr, "hibar-sim: %s: %s\n", o->bed_rows, strerror(errno));
        rc = HIBAR_ERR_CONFIG;
        goto out;
    }
    print_params(o);
    if (!o->json) {
        double load[1];
        printf("# validate: scatter / gather on the test bed %s (%" PRIu32 " nodes, %" PRIu32
               " sites), measured (%s) and simulated side by side\n"
               "# measured:  time_us, the last completion minus the first start over all "
               "daemons\n"
               "# simulated: hibar-sim, the coll schedule with one executor per node, segment "
               "32768 B, every node starting %s\n"
               "# error:     (simulated - measured) / measured; target: within +-%.0f%%\n",
               o->config, t->n_nodes, t->n_sites, o->bed_rows,
               "when its daemon did (starts_us) if the row says, else at 0", BED_TARGET);
        if (getloadavg(load, 1) == 1)
            printf("# load average now: %.2f\n", load[0]);
        printf("# %-8s %-12s %5s %10s %14s %14s %10s %7s %-6s %10s\n", "Op", "Algorithm", "Lanes",
               "Size(B)", "Measured(us)", "Simulated(us)", "Error(%)", "Target", "Within",
               "Skew(us)");
    }
    rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        const char *bench, *impl, *st;
        double size, meas, lanes, skew, n;
        json_error_t je;
        hb_coll_args_t args;
        hb_sim_opts_t so;
        hb_sim_result_t r;
        double err;
        lineno++;
        if (line[0] != '{')
            continue;
        json_decref(row);
        row = json_loads(line, JSON_DECODE_INT_AS_REAL, &je);
        if (row == NULL || !json_is_object(row)) {
            fprintf(stderr, "hibar-sim: %s:%u: malformed JSON%s%s\n", o->bed_rows, lineno,
                    row != NULL ? ": not an object" : ": ", row != NULL ? "" : je.text);
            rc = HIBAR_ERR_CONFIG;
            break;
        }
        bench = json_string_value(json_object_get(row, "bench"));
        impl = json_string_value(json_object_get(row, "impl"));
        st = json_string_value(json_object_get(row, "starts_us"));
        size = row_num(row, "size", -1);
        meas = row_num(row, "time_us", -1);
        lanes = row_num(row, "lanes", 0);
        skew = row_num(row, "skew_us", -1);
        n = row_num(row, "nodes", -1);
        if (bench == NULL || (strcmp(bench, "scatter") != 0 && strcmp(bench, "gather") != 0))
            continue; /* not a row of this kind */
        memset(&args, 0, sizeof(args));
        if (impl == NULL || hb_coll_op_parse(bench, &args.op) != 0 ||
            hb_coll_alg_parse(impl, &args.alg) != 0 || size < 0 || !(meas > 0) || lanes < 0 ||
            lanes > 4096 || n != t->n_nodes) {
            fprintf(stderr,
                    "hibar-sim: %s:%u: a %s row needs impl, size, time_us > 0, lanes and nodes = "
                    "%" PRIu32 "\n",
                    o->bed_rows, lineno, bench, t->n_nodes);
            rc = HIBAR_ERR_CONFIG;
            break;
        }
        args.root = 0;
        args.size = (uint64_t)size;
        args.lanes = (uint32_t)lanes;
        args.seg_size = 32768; /* the daemons' default: one COLL frame */
        hb_sim_opts_init(&so);
        if (st != NULL) {
            if (parse_starts(st, starts, t->n_nodes) != 0) {
                fprintf(stderr, "hibar-sim: %s:%u: starts_us needs %" PRIu32 " numbers >= 0\n",
                        o->bed_rows, lineno, t->n_nodes);
                rc = HIBAR_ERR_CONFIG;
                break;
            }
            so.start_us = starts;
        }
        rc = hb_sim_coll(&nodes, &args, &o->p, &so, &r);
        if (rc != 0) {
            fprintf(stderr, "hibar-sim: %s:%u: simulating %s %s: %s\n", o->bed_rows, lineno, bench,
                    impl, hibar_strerror(rc));
            break;
        }
        err = 100.0 * (r.latency_us - meas) / meas;
        fails += fabs(err) > BED_TARGET;
        rows++;
        if (o->json)
            printf(
                "{\"bench\": \"sim-validate-%s\", \"impl\": \"%s\", \"nodes\": %" PRIu32
                ", \"size\": %.0f, \"lanes\": %.0f, \"median_us\": %.1f, \"predicted_us\": "
                "%.1f, \"error_pct\": %.1f, \"skew_us\": %.1f, \"starts\": %s, \"within\": %s}\n",
                bench, impl, t->n_nodes, size, lanes, meas, r.latency_us, err, skew,
                st ? "true" : "false", fabs(err) <= BED_TARGET ? "true" : "false");
        else
            printf("  %-8s %-12s %5.0f %10.0f %14.1f %14.1f %+10.1f %6.0f%% %-6s %10.1f\n", bench,
                   impl, lanes, size, meas, r.latency_us, err, BED_TARGET,
                   fabs(err) <= BED_TARGET ? "yes" : "NO", skew);
    }
    fclose(f);
    if (rc == 0 && rows == 0) {
        fprintf(stderr, "hibar-sim: %s has no scatter or gather row\n", o->bed_rows);
        rc = HIBAR_ERR_NOT_FOUND;
    }
    if (rc == 0 && !o->json)
        printf("validate: %u of %u scatter/gather rows within %.0f%% of the measured time\n",
               rows - fails, rows, BED_TARGET);
    if (rc == 0 && fails > 0)
        rc = 1;
out:
    json_decref(row);
    free(site_of);
    free(starts);
    hb_topo_free(t);
    return rc;
}

/* ---- replay ------------------------------------------------------------------------------- */

/* Every node's DIR/n<node>.trace through hb_sim_replay_file. */
static int mode_replay(opts_t *o)
{
    hb_topo_t *t = NULL;
    uint64_t ev_all = 0, act_all = 0;
    uint32_t i, same = 0, differ = 0;
    int rc = 0;

    if (o->trace_dir == NULL || o->config == NULL) {
        fprintf(stderr, "hibar-sim: replay needs --config FILE and --trace-dir DIR\n");
        return HIBAR_ERR_CONFIG;
    }
    rc = make_topo(o, 0, o->fanout, &t);
    if (rc != 0)
        return HIBAR_ERR_CONFIG;
    for (i = 0; i < t->n_nodes; i++) {
        char path[4096], err[1024];
        uint64_t n_ev = 0, n_act = 0;
        int r;
        snprintf(path, sizeof(path), "%s/n%" PRIu32 ".trace", o->trace_dir, i);
        r = hb_sim_replay_file(t, path, &n_ev, &n_act, err, sizeof(err));
        if (r == HIBAR_ERR_MISMATCH) {
            printf("n%-4" PRIu32 " DIFFERS  %s\n", i, err);
            differ++;
            continue;
        }
        if (r != 0) {
            fprintf(stderr, "hibar-sim: replay: %s\n", err[0] ? err : hibar_strerror(r));
            rc = HIBAR_ERR_CONFIG;
            break;
        }
        same++;
        ev_all += n_ev;
        act_all += n_act;
        if (!o->quiet)
            printf("n%-4" PRIu32 " same     %" PRIu64 " events, %" PRIu64 " action lines\n", i,
                   n_ev, n_act);
    }
    hb_topo_free(t);
    if (rc != 0)
        return rc;
    printf("replay: %" PRIu32 " of %" PRIu32 " nodes: the simulator's driver gave the daemon's "
           "actions (%" PRIu64 " events, %" PRIu64 " action lines); %" PRIu32 " differ\n",
           same, same + differ, ev_all, act_all, differ);
    return differ > 0 ? 1 : 0;
}

/* ---- fence --------------------------------------------------------------------------------- */

/* Polyakov et al., EuroMPI 2019: a full PMIx fence on 108 nodes takes about 10 ms. */
#define PUBLISHED_FENCE_NODES 108
#define PUBLISHED_FENCE_US 10000.0

static int mode_fence(opts_t *o)
{
    static const uint32_t def_nodes[] = {100, 108, 1000, 10000};
    static const hb_coll_alg_t algs[] = {HB_COLL_ALG_FLAT, HB_COLL_ALG_BINOMIAL};
    uint32_t nn = 4, i, k;
    const uint32_t *nodes = def_nodes;
    char dat[512], gp[512], png[512];
    FILE *df = NULL;
    int rc = 0;

    if (o->nodes > 0) {
        nodes = &o->nodes;
        nn = 1;
    }
    print_params(o);
    if (!o->json) {
        printf("# fence: tree barrier, then allgather of %" PRIu32 " rank(s) x %.0f bytes per node "
               "(coll schedule); chassis %" PRIu32 ", fanout %" PRIu32 "\n",
               o->ppn, o->blob, o->chassis, o->fanout);
        printf("# published: about %.0f us for a full fence on %d nodes (Polyakov et al., "
               "EuroMPI 2019)\n",
               PUBLISHED_FENCE_US, PUBLISHED_FENCE_NODES);
        printf("# %-10s %8s %12s %14s %14s %10s %8s %s\n", "Allgather", "Nodes", "Blob(B)",
               "Fence(us)", "Barrier(us)", "Messages", "Wall(s)", "Best");
    }
    if (o->plot != NULL)
        df = plot_open(o->plot, "fence.dat", dat, sizeof(dat));
    for (i = 0; i < nn && rc == 0; i++) {
        hb_topo_t *t = NULL;
        double best = -1, val[2] = {-1, -1};
        hb_sim_result_t res[2];
        double wall[2] = {0, 0};
        rc = make_topo(o, nodes[i], o->fanout, &t);
        if (rc != 0)
            break;
        for (k = 0; k < 2 && rc == 0; k++) {
            hb_sim_opts_t so;
            char what[64];
            uint64_t t0 = hb_time_now_ns();
            hb_sim_opts_init(&so);
            so.proto = HB_HIER_TREE;
            snprintf(what, sizeof(what), "fence %s %" PRIu32 " nodes", hb_coll_alg_name(algs[k]),
                     t->n_nodes);
            if (!o->quiet) {
                so.progress = progress;
                so.progress_arg = what;
                if (tty)
                    fprintf(stderr, "\r  %s ...", what);
            }
            rc = hb_sim_fence(t, o->ppn, (uint64_t)o->blob, algs[k], &o->p, &so, &res[k]);
            wall[k] = wall_s(t0);
            if (!o->quiet)
                progress_clear();
            if (rc != 0) {
                fprintf(stderr, "hibar-sim: %s: %s\n", what, hibar_strerror(rc));
                break;
            }
            val[k] = res[k].latency_us;
            if (best < 0 || val[k] < best)
                best = val[k];
        }
        for (k = 0; k < 2 && rc == 0; k++) {
            int is_best = val[k] == best && (k == 0 || val[0] != best);
            if (o->json)
                printf("{\"bench\": \"sim-fence\", \"impl\": \"%s\", \"nodes\": %" PRIu32
                       ", \"ranks\": %" PRIu64 ", \"size\": %.0f, \"iters\": 1, "
                       "\"predicted_us\": %.2f, \"barrier_us\": %.2f, \"fanout\": %" PRIu32
                       ", \"ppn\": %" PRIu32 ", \"messages\": %" PRIu64 ", \"best\": %s%s}\n",
                       hb_coll_alg_name(algs[k]), t->n_nodes, (uint64_t)t->n_nodes * o->ppn,
                       o->blob, val[k], res[k].barrier_us, t->fanout, o->ppn, res[k].messages,
                       is_best ? "true" : "false",
                       t->n_nodes == PUBLISHED_FENCE_NODES
                           ? ", \"published_us\": 10000, \"published\": \"Polyakov et al., "
                             "EuroMPI 2019\""
                           : "");
            else
                printf("  %-10s %8" PRIu32 " %12.0f %14.1f %14.1f %10" PRIu64 " %8.2f %s%s\n",
                       hb_coll_alg_name(algs[k]), t->n_nodes, o->ppn * o->blob, val[k],
                       res[k].barrier_us, res[k].messages, wall[k], is_best ? "<- best" : "",
                       t->n_nodes == PUBLISHED_FENCE_NODES ? "  (published: ~10000 us)" : "");
        }
        if (df != NULL && rc == 0)
            fprintf(df, "%" PRIu32 " %.3f %.3f %.3f\n", t->n_nodes, val[0], val[1],
                    res[0].barrier_us);
        hb_topo_free(t);
    }
    fflush(stdout);
    if (df != NULL) {
        FILE *f;
        fclose(df);
        f = plot_open(o->plot, "fence.gp", gp, sizeof(gp));
        if (f != NULL && rc == 0) {
            snprintf(png, sizeof(png), "%s/fence.png", o->plot);
            fprintf(
                f,
                "# fence.gp: hibar-sim PMIx fence prediction (hibar-sim fence --plot)\n"
                "set terminal %s noenhanced size 900,600\nset output '%s'\n"
                "set title 'hibar-sim: PMIx fence, %" PRIu32 " x %.0f B per node'\n"
                "set logscale xy\nset xlabel 'nodes'\nset ylabel 'time (us)'\n"
                "set key left top\nset grid\n"
                "plot '%s' using 1:2 with linespoints title 'fence, flat allgather', "
                "'%s' using 1:3 with linespoints title 'fence, binomial allgather', "
                "'%s' using 1:4 with linespoints title 'its tree barrier', "
                "'-' with points pt 7 ps 2 title 'published: 108 nodes (Polyakov et al. 2019)'\n"
                "%d %.0f\ne\n",
                png_terminal() ? png_terminal() : "pngcairo", png, o->ppn, o->blob, dat, dat, dat,
                PUBLISHED_FENCE_NODES, PUBLISHED_FENCE_US);
            fclose(f);
            plot_finish(gp, png);
        } else if (f != NULL) {
            fclose(f);
        }
    }
    return rc;
}

/* ---- scatter / gather: multi-lane against single-lane ----------------------------------- */

/* One simulated collective, its progress (what) on the terminal; an error is printed. */
static int sim_coll_shown(const opts_t *o, const hb_coll_nodes_t *nodes, const hb_coll_args_t *args,
                          const char *what, hb_sim_result_t *r_p)
{
    hb_sim_opts_t so;
    hb_sim_opts_init(&so);
    if (!o->quiet) {
        so.progress = progress;
        so.progress_arg = (void *)what;
        if (tty)
            fprintf(stderr, "\r  %s ...", what);
    }
    int rc = hb_sim_coll(nodes, args, &o->p, &so, r_p);
    if (!o->quiet)
        progress_clear();
    if (rc != 0)
        fprintf(stderr, "hibar-sim: %s: %s\n", what, hibar_strerror(rc));
    return rc;
}

typedef struct sc_row {
    hb_coll_op_t op;
    hb_coll_alg_t alg;
    uint32_t lanes;
    double size, sim, model;
    uint64_t flows;
    uint32_t max_active;
    int best, popt;
} sc_row_t;

static int mode_scatter(opts_t *o)
{
    static const double def_sizes[] = {1024, 65536, 1048576};
    static const uint32_t def_lanes[] = {2, 4, 8, 16, 32, 64};
    uint32_t per_site = o->nodes > 0 ? o->nodes / 2 : 1000, n, i, s, k, nl, ns;
    uint32_t *site_of = NULL;
    const double *sizes = o->n_sizes ? o->sizes : def_sizes;
    const uint32_t *lanes = o->n_lanes ? o->lanes : def_lanes;
    sc_row_t *rows = NULL;
    size_t nr = 0, cap;
    hb_model_lanes_t ml;
    hb_coll_nodes_t nodes;
    int rc = 0, op;
    char dat[512], gp[512], png[512];

    ns = o->n_sizes ? o->n_sizes : 3;
    nl = o->n_lanes ? o->n_lanes : 6;
    if (per_site < 1)
        per_site = 1;
    n = 2 * per_site;
    cap = (size_t)2 * ns * (nl + 4);
    site_of = malloc(sizeof(uint32_t) * n);
    rows = calloc(cap, sizeof(*rows));
    if (site_of == NULL || rows == NULL) {
        free(site_of);
        free(rows);
        return HIBAR_ERR_NOMEM;
    }
    for (i = 0; i < n; i++)
        site_of[i] = i < per_site ? 0 : 1;
    memset(&nodes, 0, sizeof(nodes));
    nodes.n_nodes = n;
    nodes.site_of = site_of;
    memset(&ml, 0, sizeof(ml));
    ml.L = o->p.wan_lat;
    ml.alpha = o->p.alpha;
    ml.b_lan = o->p.b_lan;
    ml.b_lane = o->p.b_lane;
    ml.B_wan = o->p.B_wan;
    ml.b_wan = o->p.n_b_wan ? o->p.b_wan : NULL;
    ml.n_b_wan = o->p.n_b_wan;
    ml.lan_startup = 1;
    ml.pipeline = 1; /* the model the chooser uses: the schedule's pipelined lanes */
    ml.seg = 65536;  /* the segment simulated below */
    ml.queue = HB_MODEL_QUEUE_FRAMES * ml.seg;
    ml.relay = ml.alpha; /* as hibard charges a tree's relays */
    print_params(o);
    for (op = 0; op < 2 && rc == 0; op++) {
        for (s = 0; s < ns && rc == 0; s++) {
            uint32_t popt = 1;
            double popt_t;
            size_t first = nr;
            /* single-lane, multi-lane at each P and at the model's P_opt, then the site-blind
             * flat and binomial */
            hb_model_popt_op(&ml, op ? HB_COLL_GATHER : HB_COLL_SCATTER, per_site, per_site,
                             sizes[s], 0, &popt, &popt_t);
            for (k = 0; k <= nl + 3 && rc == 0; k++) {
                hb_coll_args_t args;
                hb_sim_result_t r;
                sc_row_t *row = &rows[nr];
                char what[96];
                int blind = k > nl + 1;
                uint32_t P = k == 0 ? 1 : k <= nl ? lanes[k - 1] : blind ? 0 : popt;
                size_t j;
                int dup = 0;
                if (k > 0 && !blind && P > per_site)
                    continue;
                for (j = first + 1; j < nr; j++)
                    dup |= rows[j].lanes == P;
                if (k > 0 && !blind && dup)
                    continue;
                memset(&args, 0, sizeof(args));
                args.op = op ? HB_COLL_GATHER : HB_COLL_SCATTER;
                args.alg = k == 0        ? HB_COLL_ALG_SINGLE_LANE
                           : !blind      ? HB_COLL_ALG_MULTI_LANE
                           : k == nl + 2 ? HB_COLL_ALG_FLAT
                                         : HB_COLL_ALG_BINOMIAL;
                args.root = 0;
                args.size = (uint64_t)sizes[s];
                args.seg_size = 65536;
                args.lanes = P;
                snprintf(what, sizeof(what), "%s %s P=%" PRIu32 " %.0f B", hb_coll_op_name(args.op),
                         hb_coll_alg_name(args.alg), P, sizes[s]);
                rc = sim_coll_shown(o, &nodes, &args, what, &r);
                if (rc != 0)
                    break;
                row->op = args.op;
                row->alg = args.alg;
                row->lanes = P;
                row->size = sizes[s];
                row->sim = r.latency_us;
                row->flows = r.wan_flows;
                row->popt = k > 0 && P == popt;
                row->max_active = r.max_wan_active;
                row->model = -1;
                if (k == 0)
                    hb_model_single_lane(&ml, per_site, per_site, sizes[s], &row->model);
                else if (!blind)
                    hb_model_multi_lane_pipe(&ml, args.op, per_site, per_site, sizes[s], P,
                                             &row->model);
                else
                    hb_model_tree(&ml, args.op, args.alg, per_site, per_site, sizes[s],
                                  &row->model);
                nr++;
            }
            /* the best P of this size */
            {
                size_t b = first + 1, j;
                for (j = first + 1; j < nr; j++)
                    if (rows[j].alg == HB_COLL_ALG_MULTI_LANE && rows[j].sim < rows[b].sim)
                        b = j;
                if (b < nr && rows[b].alg == HB_COLL_ALG_MULTI_LANE)
                    rows[b].best = 1;
            }
        }
    }
    if (rc == 0) {
        size_t j;
        if (!o->json)
            printf("# %-8s %-12s %5s %10s %14s %14s %9s %8s %s\n", "Op", "Algorithm", "Lanes",
                   "Size(B)", "Sim(us)", "Model T(P)", "vs single", "WANflows", "Best");
        for (j = 0; j < nr; j++) {
            const sc_row_t *r = &rows[j];
            double single = r->sim;
            size_t q;
            for (q = 0; q < nr; q++)
                if (rows[q].op == r->op && rows[q].size == r->size &&
                    rows[q].alg == HB_COLL_ALG_SINGLE_LANE)
                    single = rows[q].sim;
            if (o->json)
                printf("{\"bench\": \"sim-%s\", \"impl\": \"%s\", \"nodes\": %" PRIu32
                       ", \"ranks\": %" PRIu32 ", \"size\": %.0f, \"iters\": 1, \"predicted_us\": "
                       "%.2f, \"model_us\": %.2f, \"lanes\": %" PRIu32 ", \"sites\": 2, "
                       "\"speedup\": %.3f, \"best\": %s, \"model_popt\": %s}\n",
                       hb_coll_op_name(r->op), hb_coll_alg_name(r->alg), n, n, r->size, r->sim,
                       r->model, r->lanes, single / r->sim, r->best ? "true" : "false",
                       r->popt ? "true" : "false");
            else
                printf("  %-8s %-12s %5" PRIu32 " %10.0f %14.1f %14.1f %9.2f %8" PRIu64 " %s%s\n",
                       hb_coll_op_name(r->op), hb_coll_alg_name(r->alg), r->lanes, r->size, r->sim,
                       r->model, single / r->sim, r->flows, r->best ? "<- best P" : "",
                       r->popt ? " (model's P_opt)" : "");
        }
        fflush(stdout);
    }
    if (rc == 0 && o->plot != NULL) {
        FILE *f = plot_open(o->plot, "scatter.dat", dat, sizeof(dat));
        size_t j;
        if (f != NULL) {
            for (s = 0; s < ns; s++) {
                fprintf(f, "# scatter %.0f B: lanes sim model (lanes 1 = single-lane)\n", sizes[s]);
                /* ascending P, one row each (the P_opt row may repeat a P) */
                uint32_t last = 0;
                for (;;) {
                    size_t b = nr;
                    for (j = 0; j < nr; j++)
                        if (rows[j].op == HB_COLL_SCATTER && rows[j].size == sizes[s] &&
                            rows[j].lanes > last && (b == nr || rows[j].lanes < rows[b].lanes))
                            b = j;
                    if (b == nr)
                        break;
                    fprintf(f, "%" PRIu32 " %.3f %.3f\n", rows[b].lanes, rows[b].sim,
                            rows[b].model);
                    last = rows[b].lanes;
                }
                fprintf(f, "\n\n");
            }
            fclose(f);
            f = plot_open(o->plot, "scatter.gp", gp, sizeof(gp));
        }
        if (f != NULL) {
            snprintf(png, sizeof(png), "%s/scatter.png", o->plot);
            fprintf(
                f,
                "# scatter.gp: hibar-sim multi-lane scatter, 2 sites (hibar-sim scatter --plot)\n"
                "set terminal %s noenhanced size 900,600\nset output '%s'\n"
                "set title 'hibar-sim: scatter, 2 sites x %" PRIu32 " nodes (P = 1: single-lane)'\n"
                "set logscale xy\nset xlabel 'lanes P'\nset ylabel 'time (us)'\n"
                "set key outside right\nset grid\nplot ",
                png_terminal() ? png_terminal() : "pngcairo", png, per_site);
            for (s = 0; s < ns; s++)
                fprintf(f,
                        "%s'%s' index %" PRIu32 " using 1:2 with linespoints title 'sim %.0f B', "
                        "'%s' index %" PRIu32 " using 1:3 with lines dt 2 title 'T(P) %.0f B'",
                        s ? ", " : "", dat, s, sizes[s], dat, s, sizes[s]);
            fprintf(f, "\n");
            fclose(f);
            plot_finish(gp, png);
        }
    }
    free(site_of);
    free(rows);
    return rc;
}

/* ---- alltoall: PlogP-BR's two patterns, flat (all at once) and pairwise ------------------ */

static int mode_alltoall(opts_t *o)
{
    static const double def_sizes[] = {1024, 65536};
    static const uint32_t def_nodes[] = {16, 64, 256, 1000};
    const double *sizes = o->n_sizes ? o->sizes : def_sizes;
    uint32_t ns = o->n_sizes ? o->n_sizes : 2, nn = o->nodes > 0 ? 1 : o->n_sweep ? o->n_sweep : 4;
    const uint32_t *counts = o->nodes > 0 ? &o->nodes : o->n_sweep ? o->sweep : def_nodes;
    hb_model_lanes_t ml;
    int rc = 0;

    memset(&ml, 0, sizeof(ml));
    ml.alpha = o->p.alpha;
    ml.b_lan = o->p.b_lan;
    print_params(o);
    if (!o->json)
        printf("# %-8s %-10s %7s %10s %14s %14s\n", "Op", "Algorithm", "Nodes", "Size(B)",
               "Sim(us)", "Hockney(us)");
    for (uint32_t c = 0; c < nn && rc == 0; c++)
        for (uint32_t z = 0; z < ns && rc == 0; z++)
            for (int k = 0; k < 2 && rc == 0; k++) {
                hb_coll_nodes_t nodes = {.n_nodes = counts[c]};
                hb_coll_args_t args = {.op = HB_COLL_ALLTOALL,
                                       .alg = k ? HB_COLL_ALG_PAIRWISE : HB_COLL_ALG_FLAT,
                                       .size = (uint64_t)sizes[z],
                                       .seg_size = 65536};
                hb_sim_result_t r;
                double model = -1.0;
                char what[96];
                snprintf(what, sizeof(what), "alltoall %s %" PRIu32 " nodes %.0f B",
                         hb_coll_alg_name(args.alg), counts[c], sizes[z]);
                rc = sim_coll_shown(o, &nodes, &args, what, &r);
                if (rc != 0)
                    break;
                hb_model_tree(&ml, args.op, args.alg, counts[c], 0, sizes[z], &model);
                if (o->json)
                    printf("{\"bench\": \"sim-alltoall\", \"impl\": \"%s\", \"nodes\": %" PRIu32
                           ", \"ranks\": %" PRIu32 ", \"size\": %.0f, \"iters\": 1, "
                           "\"predicted_us\": %.2f, \"model_us\": %.2f, \"sites\": 1}\n",
                           hb_coll_alg_name(args.alg), counts[c], counts[c], sizes[z], r.latency_us,
                           model);
                else
                    printf("  %-8s %-10s %7" PRIu32 " %10.0f %14.1f %14.1f\n", "alltoall",
                           hb_coll_alg_name(args.alg), counts[c], sizes[z], r.latency_us, model);
                fflush(stdout);
            }
    return rc;
}

/* ---- main ---------------------------------------------------------------------------------- */

enum {
    OPT_CONFIG = 256,
    OPT_NODES,
    OPT_CHASSIS,
    OPT_FANOUT,
    OPT_SITES,
    OPT_SWEEP,
    OPT_FANOUTS,
    OPT_CAL,
    OPT_TIB,
    OPT_TSR,
    OPT_GAP,
    OPT_ALPHA,
    OPT_LANMBIT,
    OPT_LANLAT,
    OPT_WANLAT,
    OPT_LANEMBIT,
    OPT_WANMBIT,
    OPT_HOP,
    OPT_PROTO,
    OPT_BARRIERS,
    OPT_SKEW,
    OPT_SEED,
    OPT_MEMBERS,
    OPT_PPN,
    OPT_BLOB,
    OPT_SIZE,
    OPT_LANES,
    OPT_JSON,
    OPT_PLOT,
    OPT_TRACE,
    OPT_SET,
    OPT_CPU,
    OPT_CORES,
    OPT_TRACE_DIR,
    OPT_MEASURE,
    OPT_MEASURE_ITERS,
    OPT_MSGCPU,
    OPT_IOCPU,
    OPT_IBCPU,
    OPT_WAKE,
    OPT_SAVE,
    OPT_HOST_ITERS,
    OPT_NO_HOST,
    OPT_BED_ROWS,
    OPT_BLOCKS,
    OPT_STALLS
};

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"nodes", required_argument, NULL, OPT_NODES},
        {"chassis-size", required_argument, NULL, OPT_CHASSIS},
        {"fanout", required_argument, NULL, OPT_FANOUT},
        {"sites", required_argument, NULL, OPT_SITES},
        {"sweep", required_argument, NULL, OPT_SWEEP},
        {"fanouts", required_argument, NULL, OPT_FANOUTS},
        {"calibrate", required_argument, NULL, OPT_CAL},
        {"t-ib", required_argument, NULL, OPT_TIB},
        {"t-sr", required_argument, NULL, OPT_TSR},
        {"gap", required_argument, NULL, OPT_GAP},
        {"alpha", required_argument, NULL, OPT_ALPHA},
        {"lan-mbit", required_argument, NULL, OPT_LANMBIT},
        {"lan-lat", required_argument, NULL, OPT_LANLAT},
        {"wan-lat", required_argument, NULL, OPT_WANLAT},
        {"lane-mbit", required_argument, NULL, OPT_LANEMBIT},
        {"wan-mbit", required_argument, NULL, OPT_WANMBIT},
        {"hop", required_argument, NULL, OPT_HOP},
        {"protocol", required_argument, NULL, OPT_PROTO},
        {"barriers", required_argument, NULL, OPT_BARRIERS},
        {"skew", required_argument, NULL, OPT_SKEW},
        {"seed", required_argument, NULL, OPT_SEED},
        {"members", required_argument, NULL, OPT_MEMBERS},
        {"ppn", required_argument, NULL, OPT_PPN},
        {"blob", required_argument, NULL, OPT_BLOB},
        {"size", required_argument, NULL, OPT_SIZE},
        {"lanes", required_argument, NULL, OPT_LANES},
        {"json", no_argument, NULL, OPT_JSON},
        {"plot", required_argument, NULL, OPT_PLOT},
        {"trace", required_argument, NULL, OPT_TRACE},
        {"set", required_argument, NULL, OPT_SET},
        {"cpu", required_argument, NULL, OPT_CPU},
        {"cores", required_argument, NULL, OPT_CORES},
        {"trace-dir", required_argument, NULL, OPT_TRACE_DIR},
        {"measure", no_argument, NULL, OPT_MEASURE},
        {"measure-iters", required_argument, NULL, OPT_MEASURE_ITERS},
        {"msg-cpu", required_argument, NULL, OPT_MSGCPU},
        {"io-cpu", required_argument, NULL, OPT_IOCPU},
        {"ib-cpu", required_argument, NULL, OPT_IBCPU},
        {"wake", required_argument, NULL, OPT_WAKE},
        {"save", required_argument, NULL, OPT_SAVE},
        {"host-iters", required_argument, NULL, OPT_HOST_ITERS},
        {"no-host", no_argument, NULL, OPT_NO_HOST},
        {"bed-rows", required_argument, NULL, OPT_BED_ROWS},
        {"blocks", required_argument, NULL, OPT_BLOCKS},
        {"stalls", no_argument, NULL, OPT_STALLS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    static const char *over[64];
    char measured[4096] = "";
    opts_t o;
    char err[256];
    int c, rc = 0, bad = 0;
    double d;
    uint32_t u;
    /* command-line values of the model, applied over the calibration */
    double tib = -1, tsr = -1, gap = -1, alpha = -1, lanm = -1, lanl = -1, wanl = -1, lanem = -1,
           wanm = -1;
    int hop = -1;
    double cpu = -1, msgcpu = -1, iocpu = -1, ibcpu = -1, wake = -1;
    uint32_t cores = UINT32_MAX;

    hb_log_init_from_env();
    hb_log_set_ident("hibar-sim");
    memset(&o, 0, sizeof(o));
    o.mode = "barrier";
    o.chassis = 3;
    o.sites = 1;
    o.protos = 3;
    o.barriers = 1;
    o.seed = 1;
    o.ppn = 1;
    o.blob = 1024;
    o.host_iters = 2000;
    o.blocks = 3;
    o.over = over;
    hb_sim_params_init(&o.p);
    if (argc > 1 && argv[1][0] != '-') {
        o.mode = argv[1];
        argv++;
        argc--;
    }
    while ((c = getopt_long(argc, argv, "hqV", lo, NULL)) != -1) {
        switch (c) {
        case OPT_CONFIG:
            o.config = optarg;
            break;
        case OPT_NODES:
            bad |= parse_u32(optarg, &o.nodes) != 0 || o.nodes == 0;
            break;
        case OPT_CHASSIS:
            bad |= parse_u32(optarg, &o.chassis) != 0;
            break;
        case OPT_FANOUT:
            bad |= parse_u32(optarg, &o.fanout) != 0;
            o.have_fanout = 1;
            break;
        case OPT_SITES:
            bad |= parse_u32(optarg, &o.sites) != 0;
            break;
        case OPT_SWEEP:
            bad |= parse_u32_list(optarg, o.sweep, &o.n_sweep) != 0;
            break;
        case OPT_FANOUTS:
            bad |= parse_u32_list(optarg, o.fanouts, &o.n_fanouts) != 0;
            break;
        case OPT_CAL:
            o.calibrate = optarg;
            break;
        case OPT_TIB:
            bad |= parse_dbl(optarg, &tib) != 0;
            break;
        case OPT_TSR:
            bad |= parse_dbl(optarg, &tsr) != 0;
            break;
        case OPT_GAP:
            bad |= parse_dbl(optarg, &gap) != 0;
            break;
        case OPT_ALPHA:
            bad |= parse_dbl(optarg, &alpha) != 0;
            break;
        case OPT_LANMBIT:
            bad |= parse_dbl(optarg, &lanm) != 0;
            break;
        case OPT_LANLAT:
            bad |= parse_dbl(optarg, &lanl) != 0;
            break;
        case OPT_WANLAT:
            bad |= parse_dbl(optarg, &wanl) != 0;
            break;
        case OPT_LANEMBIT:
            bad |= parse_dbl(optarg, &lanem) != 0;
            break;
        case OPT_WANMBIT:
            bad |= parse_dbl(optarg, &wanm) != 0;
            break;
        case OPT_HOP:
            hop = strcmp(optarg, "tsr") == 0 ? 0 : strcmp(optarg, "plogp") == 0 ? 1 : -2;
            bad |= hop == -2;
            break;
        case OPT_PROTO:
            o.protos = strcmp(optarg, "scmd") == 0   ? 1
                       : strcmp(optarg, "tree") == 0 ? 2
                       : strcmp(optarg, "both") == 0 ? 3
                                                     : 0;
            bad |= o.protos == 0;
            break;
        case OPT_BARRIERS:
            bad |= parse_u32(optarg, &o.barriers) != 0 || o.barriers == 0;
            break;
        case OPT_SKEW:
            bad |= parse_dbl(optarg, &o.skew) != 0;
            break;
        case OPT_SEED:
            bad |= parse_u32(optarg, &u) != 0;
            o.seed = u;
            break;
        case OPT_MEMBERS:
            o.members = optarg;
            break;
        case OPT_PPN:
            bad |= parse_u32(optarg, &o.ppn) != 0 || o.ppn == 0;
            break;
        case OPT_BLOB:
            bad |= parse_dbl(optarg, &o.blob) != 0;
            break;
        case OPT_SIZE:
            bad |= parse_dbl_list(optarg, o.sizes, &o.n_sizes) != 0;
            break;
        case OPT_LANES:
            bad |= parse_u32_list(optarg, o.lanes, &o.n_lanes) != 0;
            break;
        case OPT_JSON:
            o.json = 1;
            break;
        case OPT_PLOT:
            o.plot = optarg;
            break;
        case OPT_TRACE:
            o.trace = optarg;
            break;
        case OPT_SET:
            if (o.n_over >= 64)
                bad = 1;
            else
                over[o.n_over++] = optarg;
            break;
        case OPT_CPU:
            bad |= parse_dbl(optarg, &cpu) != 0;
            break;
        case OPT_CORES:
            bad |= parse_u32(optarg, &cores) != 0;
            break;
        case OPT_TRACE_DIR:
            o.trace_dir = optarg;
            break;
        case OPT_MEASURE:
            o.measure = 1;
            break;
        case OPT_MEASURE_ITERS:
            bad |= parse_u32(optarg, &o.measure_iters) != 0 || o.measure_iters == 0;
            break;
        case OPT_MSGCPU:
            bad |= parse_dbl(optarg, &msgcpu) != 0;
            break;
        case OPT_IOCPU:
            bad |= parse_dbl(optarg, &iocpu) != 0;
            break;
        case OPT_IBCPU:
            bad |= parse_dbl(optarg, &ibcpu) != 0;
            break;
        case OPT_WAKE:
            bad |= parse_dbl(optarg, &wake) != 0;
            break;
        case OPT_SAVE:
            o.save = optarg;
            break;
        case OPT_HOST_ITERS:
            bad |= parse_u32(optarg, &o.host_iters) != 0 || o.host_iters == 0 ||
                   o.host_iters > 1000000;
            break;
        case OPT_NO_HOST:
            o.no_host = 1;
            break;
        case OPT_BED_ROWS:
            o.bed_rows = optarg;
            break;
        case OPT_STALLS:
            o.stalls = 1;
            break;
        case OPT_BLOCKS:
            bad |= parse_u32(optarg, &o.blocks) != 0 || o.blocks == 0 || o.blocks > 20;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            return hb_cli_version("hibar-sim");
        default:
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "hibar-sim: bad value for --%s: '%s'\n", lo[c - OPT_CONFIG].name,
                    optarg ? optarg : "");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hibar-sim: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    tty = isatty(2) && !o.quiet;
    /* the config file's link figures first, then the calibration, then the flags */
    if (o.config != NULL) {
        hb_cfg_t *cfg;
        char cerr[HB_CFG_ERRLEN];
        rc = hb_cfg_load(o.config, o.over, o.n_over, &cfg, cerr, sizeof(cerr));
        if (rc != 0) {
            fprintf(stderr, "hibar-sim: %s\n", cerr);
            return 2;
        }
        o.p.alpha = cfg->links.lan_lat_us;
        o.p.b_lan = HB_MODEL_MBIT(cfg->links.lan_bw_mbps);
        o.p.wan_lat = cfg->links.wan_lat_us;
        o.p.b_lane = HB_MODEL_MBIT(cfg->links.wan_lane_bw_mbps);
        o.p.B_wan = HB_MODEL_MBIT(cfg->links.wan_total_bw_mbps);
        if (!o.have_fanout)
            o.fanout = cfg->fanout;
        hb_cfg_free(cfg);
    }
    if (o.measure) {
        if (strcmp(o.mode, "validate") != 0 || o.config == NULL || o.calibrate != NULL) {
            fprintf(stderr, "hibar-sim: --measure needs mode validate and --config, and no "
                            "--calibrate\n");
            return 2;
        }
        rc = measure_run(&o, measured, sizeof(measured));
        if (rc != 0)
            return 1;
        o.calibrate = measured;
    }
    if (o.calibrate != NULL) {
        rc = hb_sim_calibrate(o.calibrate, &o.p, &o.cal, err, sizeof(err));
        if (measured[0] != '\0' && o.save == NULL)
            unlink(measured); /* read: the rows are in o.cal */
        if (rc != 0) {
            fprintf(stderr, "hibar-sim: %s\n", err);
            return 2;
        }
    }
    if (tib >= 0)
        o.p.t_ib = tib;
    if (tsr >= 0)
        o.p.t_sr = tsr;
    if (gap >= 0)
        o.p.ctl_gap = gap;
    if (alpha >= 0)
        o.p.alpha = alpha;
    if (lanm >= 0)
        o.p.b_lan = HB_MODEL_MBIT(lanm);
    if (lanl >= 0)
        o.p.lan_lat = lanl;
    if (wanl >= 0)
        o.p.wan_lat = wanl;
    if (lanem >= 0) {
        o.p.b_lane = HB_MODEL_MBIT(lanem);
        o.p.n_b_wan = 0;
    }
    if (wanm >= 0) {
        o.p.B_wan = HB_MODEL_MBIT(wanm);
        o.p.n_b_wan = 0;
    }
    if (hop >= 0)
        o.p.hop = (hb_sim_hop_t)hop;
    if (cpu >= 0)
        o.p.cpu_us = cpu;
    if (msgcpu >= 0)
        o.p.msg_cpu_us = msgcpu;
    if (iocpu >= 0)
        o.p.io_cpu_us = iocpu;
    if (ibcpu >= 0)
        o.p.ib_cpu_us = ibcpu;
    if (wake >= 0)
        o.p.wake_us = wake;
    if (cores != UINT32_MAX)
        o.p.cores = cores;
    if (hb_sim_params_check(&o.p, err, sizeof(err)) != 0) {
        fprintf(stderr, "hibar-sim: %s\n", err);
        return 2;
    }
    if (o.trace != NULL) {
        if (strcmp(o.mode, "barrier") != 0 || (o.config == NULL && o.nodes == 0)) {
            fprintf(stderr, "hibar-sim: --trace needs mode barrier and one topology\n");
            return 2;
        }
        trace_f = fopen(o.trace, "w");
        if (trace_f == NULL) {
            fprintf(stderr, "hibar-sim: %s: %s\n", o.trace, strerror(errno));
            return 2;
        }
    }
    if (o.plot != NULL && mkdir(o.plot, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "hibar-sim: %s: %s\n", o.plot, strerror(errno));
        return 2;
    }
    (void)d;
    if (strcmp(o.mode, "barrier") == 0)
        rc = mode_barrier(&o);
    else if (strcmp(o.mode, "validate") == 0 && o.bed_rows != NULL)
        rc = mode_validate_bed(&o);
    else if (strcmp(o.mode, "validate") == 0)
        rc = mode_validate(&o);
    else if (strcmp(o.mode, "replay") == 0)
        rc = mode_replay(&o);
    else if (strcmp(o.mode, "fence") == 0)
        rc = mode_fence(&o);
    else if (strcmp(o.mode, "scatter") == 0)
        rc = mode_scatter(&o);
    else if (strcmp(o.mode, "alltoall") == 0)
        rc = mode_alltoall(&o);
    else if (strcmp(o.mode, "predict") == 0) {
        rc = mode_barrier(&o);
        if (rc == 0)
            rc = mode_fence(&o);
        if (rc == 0)
            rc = mode_scatter(&o);
    } else {
        fprintf(stderr, "hibar-sim: unknown mode '%s'\n", o.mode);
        usage(stderr);
        return 2;
    }
    if (trace_f != NULL && fclose(trace_f) != 0) {
        fprintf(stderr, "hibar-sim: %s: %s\n", o.trace, strerror(errno));
        rc = HIBAR_ERR_IO;
    }
    if (!o.quiet && !o.json) {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0)
            fprintf(stderr, "hibar-sim: peak RSS %.1f MiB\n", ru.ru_maxrss / 1024.0);
    }
    return rc == 0 ? 0 : rc == 1 ? 1 : rc == HIBAR_ERR_CONFIG ? 2 : 1;
}
