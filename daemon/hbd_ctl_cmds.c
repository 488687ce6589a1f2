/* hbd_ctl_cmds.c: hibard's control commands: the one list, and the parsing in front of each
 * service (replies start with "ok" or "err <status> <text>"). */
#include "hb_config.h"
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hb_log.h"
#include "hb_proc.h"
#include "hbd_barrier.h"
#include "hbd_coll.h"
#include "hbd_ctl_cmds.h"
#include "hbd_fence.h"
#include "hbd_launch.h"
#include "hbd_logp.h"
#include "hbd_pmix.h"
#include "hbd_relay.h"
#include "hb_status.h"
#include "hwb.h"

/* The next blank-separated word of *s (NULL when none); *s moves past it. */
static char *word(char **s)
{
    return strtok_r(NULL, " \t", s);
}

static void cmd_ping(hbd_t *d, hbd_reply_t *r, char *args)
{
    (void)args;
    hbd_reply(r, "ok pong node=%s id=%" PRIu32 " pid=%d", d->name, d->self, (int)getpid());
}

static void cmd_status(hbd_t *d, hbd_reply_t *r, char *args)
{
    uint32_t linked = 0, lost = 0;
    (void)args;
    for (uint32_t i = 0; i < d->n_peers; i++)
        linked += d->peers[i].hello_rx && d->peers[i].hello_ack && !d->peers[i].lost;
    for (uint32_t n = 0; n < d->topo->n_nodes; n++)
        lost += hbd_node_lost(d, n);
    hbd_reply(r,
              "ok node=%s id=%" PRIu32 " pid=%d inc=%" PRIx64 " ready=%d peers=%" PRIu32 "/%" PRIu32
              " lost=%" PRIu32 " chassis=%" PRIu32 " port=%" PRIu32 " role=%s protocol=%s"
              " hwbarrier=%s endpoint=%s in_flight=%" PRIu32 " next_coll=%" PRIu64 " pmix=%s",
              d->name, d->self, (int)getpid(), d->inc, d->ready, linked, d->n_peers, lost,
              d->topo->nodes[d->self].chassis, d->topo->nodes[d->self].port,
              hb_topo_role_name(d->topo->chassis[d->topo->nodes[d->self].chassis].role),
              hb_cfg_protocol_name(d->cfg->protocol), d->hwb ? hb_hwb_name(d->hwb) : "none",
              d->endpoint, hbd_barrier_in_flight(d), hbd_barrier_next_coll(d),
              hbd_pmix_wedged(d) ? "wedged" : "ok");
}

/* Every node as this daemon sees it: NAME:up|lost:INC (INC 0: not heard of yet). */
static void cmd_members(hbd_t *d, hbd_reply_t *r, char *args)
{
    (void)args;
    size_t cap = 32 + (size_t)d->topo->n_nodes * 96, off = 0;
    char *buf = malloc(cap);
    if (buf == NULL) {
        hbd_reply(r, "err %d out of memory", HB_ERR_NOMEM);
        return;
    }
    off += (size_t)snprintf(buf, cap, "ok n=%" PRIu32, d->topo->n_nodes);
    for (uint32_t n = 0; n < d->topo->n_nodes && off < cap; n++)
        off += (size_t)snprintf(buf + off, cap - off, " %s:%s:%" PRIx64, d->cfg->nodes[n].name,
                                hbd_node_lost(d, n) ? "lost" : "up",
                                d->node_inc != NULL ? d->node_inc[n] : 0);
    hbd_reply(r, "%s", buf);
    free(buf);
}

static void cmd_stats(hbd_t *d, hbd_reply_t *r, char *args)
{
    char buf[2400]; /* every counter at its widest */
    size_t off = 0;
    const hbd_stats_t *s = &d->st;
    uint64_t hier_drop, hier_late;
    (void)args;
    hbd_barrier_drops(d, &hier_drop, &hier_late);
    off += (size_t)snprintf(buf + off, sizeof(buf) - off,
                            "ok rx=%" PRIu64 " tx=%" PRIu64 " tx_fail=%" PRIu64 " bad=%" PRIu64,
                            s->rx_frames, s->tx_frames, s->tx_fail, s->rx_bad_total);
    for (int i = 1; i < HBD_WIRE_N_REASONS && off < sizeof(buf); i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, " bad_%s=%" PRIu64,
                                hbd_wire_reason_name((hbd_wire_reason_t)i), s->rx_bad[i]);
    if (off < sizeof(buf))
        snprintf(buf + off, sizeof(buf) - off,
                 " bad_parts=%" PRIu64 " unknown_peer=%" PRIu64 " auth_denied=%" PRIu64
                 " barriers=%" PRIu64 " failed=%" PRIu64 " peers_lost=%" PRIu64
                 " hwb_rounds=%" PRIu64 " in_flight=%" PRIu32 " hier_drop=%" PRIu64
                 " hier_late=%" PRIu64 " relay_jobs=%" PRIu32 " relay_drop=%" PRIu64
                 " relay_resent=%" PRIu64 " relay_unacked=%" PRIu32 " relay_draining=%" PRIu32
                 " data_rx=%" PRIu64 " data_tx=%" PRIu64 " bulk_tx=%" PRIu64 " data_denied=%" PRIu64
                 " data_bad=%" PRIu64 " fast_rx=%" PRIu64 " fast_tx=%" PRIu64 " fast_full=%" PRIu64
                 " fast_bad=%" PRIu64 " fast_denied=%" PRIu64 " from_lost=%" PRIu64
                 " rejoins=%" PRIu64 " self_rejoins=%" PRIu64 " suspects_held=%" PRIu64
                 " hb_stalls=%" PRIu64 " pmix_steps=%" PRIu32 " pmix_bad=%" PRIu64 " rss_kb=%ld",
                 s->rx_bad_parts, s->rx_unknown_peer, s->auth_denied, s->barriers_done,
                 s->barriers_failed, s->peers_lost, s->hwb_rounds, hbd_barrier_in_flight(d),
                 hier_drop, hier_late, hbd_relay_n_jobs(d), hbd_relay_drops(d), hbd_relay_resent(d),
                 hbd_relay_unacked(d), hbd_relay_draining(d), s->data_rx, s->data_tx, s->bulk_tx,
                 s->data_denied, s->data_bad, s->fast_rx, s->fast_tx, s->fast_full, s->fast_bad,
                 s->fast_denied, s->rx_from_lost, s->rejoins, s->self_rejoins, s->suspects_held,
                 s->hb_stalls, hbd_pmix_steps(d), hbd_pmix_bad(d), hb_proc_rss_kb(getpid()));
    hbd_reply(r, "%s", buf);
}

static void cmd_fence_stats(hbd_t *d, hbd_reply_t *r, char *args)
{
    char fs[2000];
    (void)args;
    hbd_fence_stats(d, fs, sizeof(fs));
    hbd_reply(r, "%s", fs);
}

static void cmd_barrier(hbd_t *d, hbd_reply_t *r, char *args)
{
    char *save = NULL, *arg = strtok_r(args, " \t", &save), *end = NULL;
    errno = 0;
    unsigned long long id = arg ? strtoull(arg, &end, 0) : 0;
    if (arg == NULL || *end != '\0' || errno != 0 || arg[0] == '-')
        hbd_reply(r, "err %d usage: barrier <coll_id>", HB_ERR_INVAL);
    else
        hbd_barrier_request(d, r, (uint64_t)id);
}

/* "tib N" and "tsr N [NODE]": a count 1..1000000, or a usage error (0). */
static uint32_t count_arg(hbd_reply_t *r, const char *cmd, const char *arg)
{
    char *end = NULL;
    unsigned long n = arg ? strtoul(arg, &end, 10) : 0;
    if (arg == NULL || *end != '\0' || n == 0 || n > 1000000) {
        hbd_reply(r, "err %d usage: %s <count 1..1000000>", HB_ERR_INVAL, cmd);
        return 0;
    }
    return (uint32_t)n;
}

static void cmd_tib(hbd_t *d, hbd_reply_t *r, char *args)
{
    char *save = NULL;
    uint32_t n = count_arg(r, "tib", strtok_r(args, " \t", &save));
    if (n != 0)
        hbd_barrier_tib(d, r, n);
}

static void cmd_tsr(hbd_t *d, hbd_reply_t *r, char *args)
{
    char *save = NULL, *end;
    uint32_t n = count_arg(r, "tsr", strtok_r(args, " \t", &save));
    if (n == 0)
        return;
    char *arg2 = word(&save);
    uint32_t to = UINT32_MAX;
    if (arg2 != NULL) {
        unsigned long v = strtoul(arg2, &end, 10);
        if (*end == '\0')
            to = (uint32_t)v;
        else if (hb_cfg_node_find(d->cfg, arg2, &to) != 0)
            to = UINT32_MAX - 1;
    } else if (d->topo->nodes[d->self].parent != HB_TOPO_NONE) {
        to = d->topo->nodes[d->self].parent;
    } else if (d->n_peers > 0) {
        to = d->peers[0].node;
    }
    int rc = d->ready ? hbd_logp_tsr_start(d, r, to, n) : HB_ERR_NOT_INIT;
    if (rc != 0)
        hbd_reply(r, "err %d %s", rc, hb_status_str(rc));
}

/* The arguments of logp and coll as the services parse them (at most 255 bytes). */
static void rest_copy(char *dst, size_t cap, const char *args)
{
    snprintf(dst, cap, "%s", args);
}

static void cmd_logp(hbd_t *d, hbd_reply_t *r, char *args)
{
    char rest[256];
    rest_copy(rest, sizeof(rest), args);
    hbd_logp_request(d, r, rest);
}

static void cmd_coll(hbd_t *d, hbd_reply_t *r, char *args)
{
    char rest[256];
    rest_copy(rest, sizeof(rest), args);
    hbd_coll_request(d, r, rest);
}

static void cmd_launch(hbd_t *d, hbd_reply_t *r, char *args)
{
    char *save = NULL;
    hbd_launch_request(d, r, strtok_r(args, " \t", &save));
}

static void cmd_run(hbd_t *d, hbd_reply_t *r, char *args)
{
    char *save = NULL;
    hbd_relay_run(d, r, strtok_r(args, " \t", &save));
}

static void cmd_jobs(hbd_t *d, hbd_reply_t *r, char *args)
{
    (void)args;
    hbd_relay_jobs(d, r);
}

static void cmd_shutdown(hbd_t *d, hbd_reply_t *r, char *args)
{
    (void)args;
    hbd_reply(r, "ok bye");
    hb_log_info("shutdown requested on the control socket");
    d->stopping = 1;
    event_base_loopexit(d->base, NULL);
}

const hbd_ctl_cmd_t hbd_ctl_cmds[] = {
    {"ping", "", "ok pong node=NAME id=N pid=PID", cmd_ping},
    {"status", "", "ok node= id= ready=0|1 peers=LINKED/N lost=0|1 in_flight= next_coll= ...",
     cmd_status},
    {"members", "", "ok n=N NAME:up|lost:INC ... (every node as this daemon sees it)", cmd_members},
    {"stats", "", "ok rx= tx= bad= bad_REASON= ... data_* fast_* from_lost= (counters)", cmd_stats},
    {"fence_stats", "", "ok NODE:TX_UP:TX_DOWN:RX_UP:RX_DOWN ... (fence data bytes per link)",
     cmd_fence_stats},
    {"barrier", "COLL_ID", "when it completes: ok barrier ID 0 | err barrier ID STATUS TEXT",
     cmd_barrier},
    {"tib", "N", "N chassis barriers (every node of the chassis asked at once): the median",
     cmd_tib},
    {"tsr", "N [NODE]", "N round trips with a neighbour (default: parent, else first)", cmd_tsr},
    {"logp", "TO[,TO..] SIZE COUNT rtt|flood [MIN_REPS]", "PlogP probes (hibar-bench logp)",
     cmd_logp},
    {"coll", "OP ALG ROOT SIZE [LANES [SEG]]", "a collective across the nodes (hbd_coll.c)",
     cmd_coll},
    {"launch", "SPEC", "start this node's ranks of a job; the connection streams its output",
     cmd_launch},
    {"run", "SPEC", "start a job on the nodes its spec names, through this daemon (forwarding)",
     cmd_run},
    {"jobs", "",
     "root only: ok jobs=N then per job job=NUM:ID:ORIGIN:RANKS:NODES:AGE_MS:SYNC (NODES: ids "
     "a-b.c)",
     cmd_jobs},
    {"shutdown", "", "ok bye, then the daemon exits cleanly", cmd_shutdown},
};
const size_t hbd_ctl_n_cmds = sizeof(hbd_ctl_cmds) / sizeof(hbd_ctl_cmds[0]);

void hbd_ctl_cmds_usage(FILE *f)
{
    for (size_t i = 0; i < hbd_ctl_n_cmds; i++) {
        char head[64];
        snprintf(head, sizeof(head), "%s %s", hbd_ctl_cmds[i].name, hbd_ctl_cmds[i].args);
        if (strlen(head) > 24)
            fprintf(f, "  %s\n  %-24s %s\n", head, "", hbd_ctl_cmds[i].help);
        else
            fprintf(f, "  %-24s %s\n", head, hbd_ctl_cmds[i].help);
    }
}
