/* hibar_sim_host.c: hibar-sim measures the host model (hop, chassis round, CPU per message) on a
 * running emulated cluster. */
#include "hb_config.h" /* first: _GNU_SOURCE for sched_getaffinity */

#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hb_log.h"
#include "hb_proc.h"
#include "hb_time.h"
#include "hbd_client.h"
#include "hibar.h"
#include "hibar_sim_host.h"

#define HBS_MAX_PIDS 8
#define HBS_CMD_MS 120000

/* CPU time (ns) of some daemons' threads, by kind. */
typedef struct hbs_cpu {
    double main_ns, io_ns, other_ns;
} hbs_cpu_t;

/* Add a thread's CPU time by kind: the main thread (tid == pid), libzmq's I/O threads
 * (comm "ZMQbg/IO/..."), the others. */
static void cpu_thread(void *arg, pid_t pid, pid_t tid, const char *comm, double ns)
{
    hbs_cpu_t *c = arg;

    if (tid == pid)
        c->main_ns += ns;
    else if (strncmp(comm, "ZMQbg/IO", 8) == 0)
        c->io_ns += ns;
    else
        c->other_ns += ns;
}

/* CPU of the daemons of nodes[0..n) now. */
static int cpu_now(const hb_cfg_t *cfg, const uint32_t *nodes, uint32_t n, hbs_cpu_t *c)
{
    uint32_t i;
    int rc;

    memset(c, 0, sizeof(*c));
    for (i = 0; i < n; i++) {
        pid_t pid = hbd_client_pid(cfg, nodes[i]);
        if (pid <= 0)
            return HIBAR_ERR_NOT_FOUND;
        rc = hb_proc_threads_cpu(pid, cpu_thread, c);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* A window of CPU accounting: the daemons' idle rate (measured over idle_ms first) is taken
 * off what they used between start and stop. */
typedef struct hbs_win {
    const hb_cfg_t *cfg;
    const uint32_t *nodes;
    uint32_t n;
    hbs_cpu_t idle_rate; /* ns per ns of wall time */
    hbs_cpu_t c0;
    uint64_t t0;
} hbs_win_t;

static int win_start(hbs_win_t *w, const hb_cfg_t *cfg, const uint32_t *nodes, uint32_t n,
                     unsigned idle_ms)
{
    struct timespec ts = {0, (long)idle_ms * 1000000L};
    hbs_cpu_t a, b;
    uint64_t t0, t1;
    int rc;

    w->cfg = cfg;
    w->nodes = nodes;
    w->n = n;
    t0 = hb_time_now_ns();
    rc = cpu_now(cfg, nodes, n, &a);
    if (rc == 0) {
        nanosleep(&ts, NULL);
        rc = cpu_now(cfg, nodes, n, &b);
    }
    t1 = hb_time_now_ns();
    if (rc != 0)
        return rc;
    w->idle_rate.main_ns = (b.main_ns - a.main_ns) / (double)(t1 - t0);
    w->idle_rate.io_ns = (b.io_ns - a.io_ns) / (double)(t1 - t0);
    w->idle_rate.other_ns = (b.other_ns - a.other_ns) / (double)(t1 - t0);
    w->t0 = hb_time_now_ns();
    return cpu_now(cfg, nodes, n, &w->c0);
}

/* CPU used since win_start, less the idle rate, in µs. */
static int win_stop(hbs_win_t *w, hbs_cpu_t *used_us)
{
    hbs_cpu_t c1;
    double dt;
    int rc = cpu_now(w->cfg, w->nodes, w->n, &c1);

    if (rc != 0)
        return rc;
    dt = (double)(hb_time_now_ns() - w->t0);
    used_us->main_ns = (c1.main_ns - w->c0.main_ns - w->idle_rate.main_ns * dt) / 1e3;
    used_us->io_ns = (c1.io_ns - w->c0.io_ns - w->idle_rate.io_ns * dt) / 1e3;
    used_us->other_ns = (c1.other_ns - w->c0.other_ns - w->idle_rate.other_ns * dt) / 1e3;
    if (used_us->main_ns < 0)
        used_us->main_ns = 0;
    if (used_us->io_ns < 0)
        used_us->io_ns = 0;
    if (used_us->other_ns < 0)
        used_us->other_ns = 0;
    return 0;
}

/* "WORD <number>" in a reply: the number, or -1. */
static double reply_num(const char *reply, const char *word)
{
    const char *p = strstr(reply, word);

    return p != NULL ? strtod(p + strlen(word), NULL) : -1;
}

/*
 * A step's occasional long wait as one stall of s µs with probability p, from its median,
 * p99 and mean: s = max(p99, mean) - median, p = (mean - median) / s, so that median + p s is
 * the mean (a loaded host: most steps take the median, a few wait milliseconds for a core).
 */
static void stall(double med, double p99, double mean, double *s_p, double *p_p)
{
    double s = (p99 > mean ? p99 : mean) - med;

    *s_p = 0;
    *p_p = 0;
    if (!(med >= 0) || !(s > 0) || !(mean > med))
        return;
    *s_p = s;
    *p_p = (mean - med) / s;
}

static int probe_tsr(hbd_cluster_t *cl, const hb_cfg_t *cfg, const hb_topo_t *t, unsigned iters,
                     hbs_host_t *h)
{
    uint32_t nodes[2], c, x = HB_TOPO_NONE;
    char cmd[48], rep[1][512];
    uint64_t t0;
    double wall;
    hbs_win_t w;
    hbs_cpu_t u;
    int rc;

    /* the deepest non-root Center (the last chassis with a parent), as hibar-bench's alone */
    for (c = 0; c < t->n_chassis; c++)
        if (t->chassis[c].parent != HB_TOPO_NONE)
            x = t->chassis[c].nodes[0];
    if (x == HB_TOPO_NONE) {
        hb_log_error("the cluster has a single chassis: no tree hop to measure T_SR on");
        return HIBAR_ERR_INVAL;
    }
    nodes[0] = x;
    nodes[1] = t->nodes[x].parent;
    rc = win_start(&w, cfg, nodes, 2, 200);
    if (rc != 0)
        return rc;
    snprintf(cmd, sizeof(cmd), "tsr %u %s", iters, cfg->nodes[nodes[1]].name);
    t0 = hb_time_now_ns();
    rc = hbd_cluster_all(cl, &x, 1, cmd, rep, HBS_CMD_MS);
    wall = (double)(hb_time_now_ns() - t0) / 1e3;
    if (rc == 0 && strncmp(rep[0], "ok tsr ", 7) != 0) {
        hb_log_error("tsr on %s: %s", cfg->nodes[x].name, rep[0]);
        rc = HIBAR_ERR_PROTO;
    }
    if (rc == 0)
        rc = win_stop(&w, &u);
    if (rc != 0)
        return rc;
    h->t_sr_us = reply_num(rep[0], "ok tsr ");
    h->t_sr_mean_us = wall / (2.0 * iters);
    /* stalls of a round trip from its median, p99 and mean; half of them per hop */
    stall(2 * h->t_sr_us, reply_num(rep[0], "rtt_p99="), 2 * h->t_sr_mean_us, &h->sr_stall_us,
          &h->sr_stall_p);
    h->sr_stall_p /= 2;
    h->msg_cpu_us = u.main_ns / (4.0 * iters);
    h->io_cpu_us = u.io_ns / (4.0 * iters);
    h->other_cpu_us = u.other_ns / (2.0 * iters);
    return 0;
}

static int probe_tib(hbd_cluster_t *cl, const hb_cfg_t *cfg, const hb_topo_t *t, unsigned iters,
                     hbs_host_t *h)
{
    const hb_topo_chassis_t *ch = &t->chassis[0]; /* the root */
    char cmd[32], (*rep)[512];
    uint64_t t0;
    double wall;
    hbs_win_t w;
    hbs_cpu_t u;
    uint32_t i;
    int rc;

    rep = calloc(ch->n_nodes, sizeof(*rep));
    if (rep == NULL)
        return HIBAR_ERR_NOMEM;
    rc = win_start(&w, cfg, ch->nodes, ch->n_nodes, 200);
    snprintf(cmd, sizeof(cmd), "tib %u", iters);
    t0 = hb_time_now_ns();
    if (rc == 0)
        rc = hbd_cluster_all(cl, ch->nodes, ch->n_nodes, cmd, rep, HBS_CMD_MS);
    wall = (double)(hb_time_now_ns() - t0) / 1e3;
    for (i = 0; rc == 0 && i < ch->n_nodes; i++)
        if (strncmp(rep[i], "ok tib ", 7) != 0) {
            hb_log_error("tib on %s: %s", cfg->nodes[ch->nodes[i]].name, rep[i]);
            rc = HIBAR_ERR_PROTO;
        }
    if (rc == 0)
        rc = win_stop(&w, &u);
    if (rc == 0) {
        h->t_ib_us = reply_num(rep[0], "ok tib "); /* nodes[0] is the Center */
        h->t_ib_mean_us = wall / iters;
        stall(h->t_ib_us, reply_num(rep[0], "p99="), h->t_ib_mean_us, &h->ib_stall_us,
              &h->ib_stall_p);
        h->ib_cpu_us = u.main_ns / ((double)ch->n_nodes * iters);
    }
    free(rep);
    return rc;
}

static int probe_ctl(hbd_cluster_t *cl, const hb_cfg_t *cfg, unsigned iters, hbs_host_t *h)
{
    uint32_t node = 0, k;
    char rep[512];
    hbs_win_t w;
    hbs_cpu_t u;
    int rc;

    if (cl->fd[node] < 0)
        return HIBAR_ERR_NOT_FOUND;
    rc = win_start(&w, cfg, &node, 1, 200);
    for (k = 0; k < iters && rc == 0; k++) {
        rc = hbd_client_send(cl->fd[node], "ping");
        if (rc == 0)
            rc = hbd_client_recv(cl->fd[node], rep, sizeof(rep), 10000);
        if (rc == 0 && strncmp(rep, "ok pong", 7) != 0)
            rc = HIBAR_ERR_PROTO;
    }
    if (rc == 0)
        rc = win_stop(&w, &u);
    if (rc == 0)
        h->cpu_us = u.main_ns / (2.0 * iters);
    return rc;
}

int hbs_host_probe(const hb_cfg_t *cfg, const hb_topo_t *t, unsigned iters, hbs_host_t *h_p)
{
    hbd_cluster_t *cl = NULL;
    hbs_host_t h;
    cpu_set_t set;
    double load[1];
    int rc;

    memset(&h, 0, sizeof(h));
    if (iters == 0)
        iters = 1;
    h.iters = iters;
    h.nodes = t->n_nodes;
    h.cores = 1;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        h.cores = (uint32_t)CPU_COUNT(&set);
    rc = hbd_cluster_open(cfg, 30000, 0, &cl);
    if (rc == 0)
        rc = probe_tsr(cl, cfg, t, iters, &h);
    if (rc == 0)
        rc = probe_tib(cl, cfg, t, iters, &h);
    if (rc == 0)
        rc = probe_ctl(cl, cfg, iters, &h);
    hbd_cluster_close(cl);
    if (rc != 0) {
        hb_log_error("host probe of cluster %s failed: %s", cfg->cluster, hibar_strerror(rc));
        return rc;
    }
    /* the wake-ups: what the CPU leaves of an uncontended hop (its median) */
    h.wake_us = (h.t_sr_us - 2 * h.msg_cpu_us - 2 * h.io_cpu_us) / 3;
    if (h.wake_us < 0)
        h.wake_us = 0;
    h.load1 = getloadavg(load, 1) == 1 ? load[0] : -1;
    *h_p = h;
    return 0;
}

void hbs_host_row(FILE *f, const char *impl, const hbs_host_t *h)
{
    fprintf(f,
            "{\"bench\": \"host\", \"impl\": \"%s\", \"nodes\": %" PRIu32 ", \"iters\": %" PRIu32
            ", \"cores\": %" PRIu32 ", \"t_sr_us\": %.2f, \"t_ib_us\": %.2f, \"msg_cpu_us\": %.2f, "
            "\"io_cpu_us\": %.2f, \"ib_cpu_us\": %.2f, \"ctl_cpu_us\": %.2f, \"wake_us\": %.2f, "
            "\"other_cpu_us\": %.2f, \"sr_stall_us\": %.1f, \"sr_stall_p\": %.5f, "
            "\"ib_stall_us\": %.1f, \"ib_stall_p\": %.5f, \"t_sr_mean_us\": %.2f, "
            "\"t_ib_mean_us\": %.2f, \"load1\": %.2f}\n",
            impl, h->nodes, h->iters, h->cores, h->t_sr_us, h->t_ib_us, h->msg_cpu_us, h->io_cpu_us,
            h->ib_cpu_us, h->cpu_us, h->wake_us, h->other_cpu_us, h->sr_stall_us, h->sr_stall_p,
            h->ib_stall_us, h->ib_stall_p, h->t_sr_mean_us, h->t_ib_mean_us, h->load1);
}
