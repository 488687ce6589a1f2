/* hbd_barrier.c: hibard's barrier engine: runs the hier state machine over the wire and the
 * hwbarrier. */
#include "hb_config.h"
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hbd_hooks.h"
#include "hbd_barrier.h"
#include "hbd_cron.h"
#include "hbd_net.h"
#include "hb_status.h"
#include "hier.h"
#include "hier_local.h"
#include "hwb.h"

/*
 * One hier engine per job, and one for the cluster (job 0: the control command "barrier", over
 * the whole topology). A job's engine runs over its view (hb_topo_restrict: its member nodes,
 * the tree pruned to the chassis that hold them) with the sync numbers the cluster gave the job
 * (hbd_barrier_job_open); its frames carry the job's number in the header's job field, so the
 * jobs' collectives never mix, and a job's failure or timeout moves no other engine. Events go
 * through one small queue (each names its engine by job) so that actions which produce events
 * (an hwbarrier round that completes at once, a send that fails) are handled after the current
 * step, never inside it. A job's tree may link nodes that are no neighbours in the cluster's
 * tree (a stand-in Center, a pruned level): its engine asks for those links when it opens
 * (hbd_net_link), and a message whose link is not up yet waits in a per-engine queue, retried
 * every millisecond, behind which later ones to the same node queue up. A message for a job
 * this node has not opened yet (another node got the spec first) is kept until it does
 * (HBD_EARLY_MAX at most, HBD_EARLY_TTL_MS long); one for a job it closed is dropped and
 * counted. An arrival hier refuses as BUSY (more collectives of the job in flight here than it
 * has sync numbers: a fence beside a split-phase barrier) waits for the next completion.
 *
 * Chassis barriers: the cluster engine uses sync numbers 0..HBD_CLUSTER_NSYNC-1, jobs theirs
 * (HBD_SYNC_JOB_FIRST..HBD_SYNC_JOB_END-1, allocated per chassis by the cluster's root daemon,
 * hbd_slot.h); HBD_TIB_SYNC is kept for the T_IB probe. The loop never blocks on one; it
 * waits by doc/design.md section 6.1 without leaving the loop. Yield stage: for the policy's
 * yield time after an arrival, a zero timer keeps the loop polling its sockets without
 * sleeping, and each turn tests the pending rounds and calls sched_yield (yield_cb). Sleep
 * stage: then it arms the backend's fd, tests once more and sleeps in epoll with everything
 * else; the fd wakes it when a round may have ended (scic: the board's interrupt; shm: a
 * datagram from whoever ends one of our rounds while we are armed). Arming only then means
 * that a round that ends within the yield stage costs nobody a syscall or a wake-up.
 */
#define HBD_TIB_SYNC (HB_HWB_NSYNC - 1)
_Static_assert(HB_HWB_NSYNC == 16, "hbd_barrier_job_counts takes 16 counts");
#define HBD_EVQ 256
#define HBD_EARLY_MAX 4096
#define HBD_EARLY_TTL_MS 60000
#define HBD_CLOSED_RING 64
#define HBD_SUB_NSYNC 4 /* a subset engine's collectives in flight per node (hier's window) */
#define HBD_SUB_KEEP 32 /* subset engines a job keeps here; idle ones beyond go (sub_evict) */

static void yield_arm(hbd_t *d);

typedef struct hbd_req {
    uint64_t coll;
    uint64_t t0;
    int timed_out; /* its TIMEOUT went to hier */
    hbd_reply_t *conn;
    hbd_barrier_cb_t cb; /* instead of a reply to conn (hbd_barrier_start) */
    void *cb_arg;
    struct hbd_req *next;
} hbd_req_t;

typedef struct hbd_hwb_pend {
    int used;
    uint32_t job;
    uint64_t coll;
} hbd_hwb_pend_t;

/* A message waiting for its link (or kept for a job not opened yet). */
typedef struct hbd_hmsg {
    uint32_t job, to, from, msg, epoch;
    uint64_t coll, t_ns;
    struct hbd_hmsg *next;
} hbd_hmsg_t;

/* One engine: a job's, or the cluster's (job 0). */
typedef struct hbd_bar {
    uint32_t job;
    hb_hier_t *h;
    hb_topo_t *view; /* a job's view (owned); NULL: the cluster's topology */
    hbd_req_t *reqs;
    uint32_t n_reqs;
    uint64_t next_coll;
    uint64_t held[64]; /* arrivals waiting for a sync number (hier said BUSY), in order */
    uint32_t n_held;
    int held_inq;     /* the first of them is in the event queue (one at a time: order) */
    hbd_hmsg_t *outq; /* sends waiting for an on-demand link */
    /* a job's engine: its chassis mask and sync numbers; closing: draining them */
    uint32_t mask, sync_base, n_sync;
    uint32_t arrivals[HB_HWB_NSYNC]; /* chassis rounds this node arrived at, per sync number */
    int closing, verdict;
    int broken; /* one of its nodes is lost (on_lost): new barriers fail at once */
    int sub;    /* a subset engine (hbd_barrier_sub_start): chassis rounds in software */
    uint32_t tag;     /* a subset engine's tag (its collective ids carry it) */
    uint64_t key;     /* and its rank set's whole hash (hbd_barrier_sub_start) */
    uint64_t used_ns; /* a subset engine's last barrier start (which idle one goes first) */
    uint64_t close_ns;
    struct hbd_bar *next;
} hbd_bar_t;

typedef struct hbd_barrier_state {
    hbd_bar_t *bars; /* the cluster engine last */
    hb_hier_act_t *acts;
    size_t max_acts;
    hb_hier_ev_t q[HBD_EVQ];
    unsigned q_head, q_len;
    int draining;
    hbd_hwb_pend_t pend[HB_HWB_NSYNC];
    unsigned n_pend;
    hbd_hmsg_t *early; /* messages for jobs not opened yet */
    uint32_t n_early;
    uint32_t closed[HBD_CLOSED_RING]; /* jobs closed lately */
    uint32_t closed_next;
    uint64_t drop_job;    /* messages for a job closed, unknown too long, or beyond the bound */
    hb_hier_stats_t gone; /* counters of the engines closed */
    hbd_timer_t *retry;   /* the send queues' retry (1 ms) */
    hbd_timer_t *purge;   /* the kept messages' expiry: its own timer, never holding a send back */
    hb_topo_t *solo;      /* the subset engines' shape: every node a chassis of its own (lazy) */
    struct hbd_sub_rec {  /* subset engines that went idle: where their count stands */
        uint32_t job;
        uint64_t key, next_seq;
    } * recs;
    uint32_t n_recs, cap_recs;
    struct event *ev_yield; /* zero timer: the yield stage */
    uint64_t yield_t0;      /* last arrival (its yield stage runs from there) */
    int armed;              /* the fd was armed since the last arrival or wake-up */
    uint64_t active_t0;     /* last barrier activity (arrival, message, completion) */
    int poll_mode;          /* HBD_POLL_*: how the loop waits while barriers are busy */
    uint32_t cores;         /* the node's cores (cpu.count, else this process's affinity) */
    /* T_IB probe */
    hbd_reply_t *tib_conn;
    uint32_t tib_n, tib_done;
    uint64_t tib_t0, tib_t1; /* the last round's arrival and completion (CLOCK_MONOTONIC ns) */
    double *tib;
    /* HIBAR_TRACE_DIR: every event fed to the cluster engine and every outcome (below) */
    FILE *trace;
    uint64_t trace_t0;
} hbd_barrier_state_t;

/* Does B's collective involve node n (the cluster engine: every node)? */
static int bar_has(const hbd_t *d, const hbd_bar_t *B, uint32_t n)
{
    if (B->view == NULL || n >= d->topo->n_nodes)
        return 1;
    return B->view->nodes[n].member != 0;
}

static hbd_bar_t *bar_find(const hbd_barrier_state_t *b, uint32_t job)
{
    for (hbd_bar_t *B = b != NULL ? b->bars : NULL; B != NULL; B = B->next)
        if (B->job == job && !B->sub)
            return B;
    return NULL;
}

/* The engine of collective coll of job `job`: a subset engine's ids have HBD_BARRIER_SUB_BIT
 * and its tag, the others' not. */
static hbd_bar_t *bar_find_coll(const hbd_barrier_state_t *b, uint32_t job, uint64_t coll)
{
    if (!(coll & HBD_BARRIER_SUB_BIT))
        return bar_find(b, job);
    for (hbd_bar_t *B = b != NULL ? b->bars : NULL; B != NULL; B = B->next)
        if (B->job == job && B->sub && B->tag == hbd_barrier_sub_tag(coll))
            return B;
    return NULL;
}

/*
 * The trace (HIBAR_TRACE_DIR=DIR: DIR/n<node>.trace, flushed per line) for `hibar-sim
 * replay`: a '#' header with the engine's configuration, then each event fed to hb_hier_step
 * (ARRIVE, MSG, HWB_DONE in hb_hier_rec_format's format; "PEER_LOST from nX", "TIMEOUT"),
 * followed by what it gave: its actions, or one REFUSED line with the status. t = us since
 * the engine was created (t0_ns in the header: that moment on CLOCK_MONOTONIC, so the traces
 * of daemons sharing a host line up); ib/sr are not known here (0).
 */
static void trace_line(hbd_t *d, hb_hier_rec_t *r, const char *text)
{
    char line[256];
    r->node = d->self;
    r->t = (double)(hb_time_now_ns() - d->bar->trace_t0) / 1e3;
    if (text != NULL)
        snprintf(line, sizeof(line), "n%" PRIu32 " coll %" PRIu64 " %s ib=0 sr=0 t=%.9g", r->node,
                 r->coll_id, text, r->t);
    else if (hb_hier_rec_format(r, line, sizeof(line)) != 0)
        return;
    fprintf(d->bar->trace, "%s\n", line);
    fflush(d->bar->trace);
}

/* hb_hier_step on B, with the trace (the cluster engine's). */
static int step(hbd_t *d, hbd_bar_t *B, const hb_hier_ev_t *ev, size_t *n_p)
{
    hbd_barrier_state_t *b = d->bar;
    hb_hier_rec_t r = {.coll_id = ev->coll_id, .peer = ev->from, .msg = ev->msg};
    char text[64];
    int traced = b->trace != NULL && B->job == 0;
    if (traced) {
        const char *t = NULL;
        if (ev->kind == HB_HIER_EV_ARRIVE)
            r.kind = HB_HIER_REC_ARRIVE;
        else if (ev->kind == HB_HIER_EV_MSG)
            r.kind = HB_HIER_REC_MSG;
        else if (ev->kind == HB_HIER_EV_HWB_DONE) {
            r.kind = HB_HIER_REC_HWB_DONE;
            r.sync_no = ev->sync_no;
            if (ev->status != 0) {
                snprintf(text, sizeof(text), "HWB_DONE sync %" PRIu32 " status %d", ev->sync_no,
                         ev->status);
                t = text;
            }
        } else if (ev->kind == HB_HIER_EV_PEER_LOST) {
            snprintf(text, sizeof(text), "PEER_LOST from n%" PRIu32, ev->from);
            t = text;
        } else
            t = "TIMEOUT";
        trace_line(d, &r, t);
    }
    int rc = hb_hier_step(B->h, ev, b->acts, b->max_acts, n_p);
    if (!traced)
        return rc;
    if (rc != 0) {
        hb_hier_rec_t f = {.kind = HB_HIER_REC_REFUSED, .coll_id = ev->coll_id, .status = rc};
        trace_line(d, &f, NULL);
    }
    for (size_t i = 0; rc == 0 && i < *n_p; i++) {
        const hb_hier_act_t *a = &b->acts[i];
        hb_hier_rec_t o = {.coll_id = a->coll_id, .step = a->step};
        if (a->kind == HB_HIER_ACT_SEND) {
            o.kind = HB_HIER_REC_SEND;
            o.peer = a->to;
            o.msg = a->msg;
        } else if (a->kind == HB_HIER_ACT_HWB_ARRIVE) {
            o.kind = HB_HIER_REC_HWB_ARRIVE;
            o.sync_no = a->sync_no;
            o.phase = a->phase;
        } else if (a->kind == HB_HIER_ACT_COMPLETE) {
            o.kind = HB_HIER_REC_COMPLETE;
        } else {
            o.kind = HB_HIER_REC_FAIL;
            o.status = a->status;
        }
        trace_line(d, &o, NULL);
    }
    return rc;
}

static void push(hbd_t *d, const hb_hier_ev_t *ev)
{
    hbd_barrier_state_t *b = d->bar;
    if (b->q_len == HBD_EVQ) {
        /* cannot happen with the engines' sync numbers in flight; never lose one silently */
        hb_log_error("barrier event queue full; event %d for job %" PRIu32 " coll %" PRIu64
                     " dropped",
                     ev->kind, ev->job, ev->coll_id);
        return;
    }
    b->q[(b->q_head + b->q_len++) % HBD_EVQ] = *ev;
}

static hbd_req_t *req_take(hbd_bar_t *B, uint64_t coll)
{
    for (hbd_req_t **pp = &B->reqs; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->coll == coll) {
            hbd_req_t *r = *pp;
            *pp = r->next;
            B->n_reqs--;
            return r;
        }
    return NULL;
}

static void req_finish(hbd_t *d, hbd_bar_t *B, uint64_t coll, int status)
{
    hbd_req_t *r = req_take(B, coll);
    d->bar->active_t0 = hb_time_now_ns();
    if (status == 0)
        d->st.barriers_done++;
    else
        d->st.barriers_failed++;
    if (r == NULL)
        return;
    if (r->cb != NULL) {
        r->cb(d, coll, status, r->cb_arg);
        free(r);
        return;
    }
    /* elapsed us, then arrival and completion on CLOCK_MONOTONIC (ns): daemons sharing a host
     * share that clock, so a driver can tell the last arrival from the last completion */
    uint64_t now = hb_time_now_ns();
    if (status == 0)
        hbd_reply(r->conn, "ok barrier %" PRIu64 " 0 %.1f %" PRIu64 " %" PRIu64, coll,
                  (double)(now - r->t0) / 1e3, r->t0, now);
    else
        hbd_reply(r->conn, "err barrier %" PRIu64 " %d %s", coll, status, hb_status_str(status));
    hbd_reply_release(r->conn);
    free(r);
}

/* Send hier message `msg` of B's collective coll to `to`: now, or behind what waits for that
 * link. 0, or PEER_LOST / NOMEM. */
static int send_msg(hbd_t *d, hbd_bar_t *B, uint32_t to, uint64_t coll, uint32_t msg)
{
    uint8_t pl[4];
    int queued = 0;
    for (hbd_hmsg_t *o = B->outq; o != NULL && !queued; o = o->next)
        queued = o->to == to;
    hbd_wire_put32(pl, msg);
    int rc = queued
                 ? HB_ERR_WOULD_BLOCK
                 : hbd_net_send_job(d, to, HBD_WIRE_HIER, 0, B->job, coll, pl, sizeof(pl), NULL, 0);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    hbd_hmsg_t *o = calloc(1, sizeof(*o)), **pp = &B->outq;
    if (o == NULL)
        return HB_ERR_NOMEM;
    *o = (hbd_hmsg_t){.job = B->job, .to = to, .coll = coll, .msg = msg, .t_ns = hb_time_now_ns()};
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = o;
    if (!queued)
        (void)hbd_net_link(d, to); /* say HELLO again */
    hbd_timer_arm(d->bar->retry, 1000, 0);
    return 0;
}

/* The oldest waiting arrival goes to the queue (one at a time, so they keep their order). */
static void held_next(hbd_t *d, hbd_bar_t *B)
{
    if (B->n_held == 0 || B->held_inq)
        return;
    hb_hier_ev_t ev = {
        .kind = HB_HIER_EV_ARRIVE, .job = B->job, .coll_id = B->held[0], .epoch = d->epoch};
    memmove(B->held, B->held + 1, (B->n_held - 1) * sizeof(B->held[0]));
    B->n_held--;
    B->held_inq = 1;
    push(d, &ev);
}

static void exec_act(hbd_t *d, hbd_bar_t *B, const hb_hier_act_t *a)
{
    hbd_barrier_state_t *b = d->bar;
    switch (a->kind) {
    case HB_HIER_ACT_SEND: {
        hb_log_debug("job %" PRIu32 " coll %" PRIu64 ": %s: send %s to node %" PRIu32, B->job,
                     a->coll_id, a->step ? a->step : "?", hb_hier_msg_name(a->msg), a->to);
        if (send_msg(d, B, a->to, a->coll_id, (uint32_t)a->msg) != 0) {
            hb_hier_ev_t ev = {.kind = HB_HIER_EV_PEER_LOST, .from = a->to};
            push(d, &ev);
        }
        break;
    }
    case HB_HIER_ACT_HWB_ARRIVE: {
        if (B->sub) { /* a chassis of one node: the round is over as it starts */
            hb_hier_ev_t ev = {.kind = HB_HIER_EV_HWB_DONE,
                               .job = B->job,
                               .coll_id = a->coll_id,
                               .sync_no = a->sync_no};
            push(d, &ev);
            break;
        }
        int rc = d->hwb ? hb_hwb_arrive(d->hwb, a->sync_no, a->mask) : HB_ERR_UNAVAIL;
        hb_log_debug("job %" PRIu32 " coll %" PRIu64 ": %s: chassis barrier sync %" PRIu32
                     " mask %#" PRIx32,
                     B->job, a->coll_id, a->step ? a->step : "?", a->sync_no, a->mask);
        if (rc == 0 && a->sync_no < HB_HWB_NSYNC && !b->pend[a->sync_no].used) {
            b->yield_t0 = hb_time_now_ns();
            b->armed = 0;
            b->pend[a->sync_no].used = 1;
            b->pend[a->sync_no].job = B->job;
            B->arrivals[a->sync_no]++;
            b->pend[a->sync_no].coll = a->coll_id;
            b->n_pend++;
            d->st.hwb_rounds++;
        } else {
            hb_log_error("chassis barrier arrive (sync %" PRIu32 "): %s", a->sync_no,
                         rc ? hb_status_str(rc) : "sync number in use by another engine");
            hb_hier_ev_t ev = {.kind = HB_HIER_EV_HWB_DONE,
                               .job = B->job,
                               .coll_id = a->coll_id,
                               .sync_no = a->sync_no,
                               .status = rc ? rc : HB_ERR_INTERNAL};
            push(d, &ev);
        }
        break;
    }
    case HB_HIER_ACT_COMPLETE:
    case HB_HIER_ACT_FAIL:
        req_finish(d, B, a->coll_id, a->kind == HB_HIER_ACT_COMPLETE ? 0 : a->status);
        held_next(d, B); /* an arrival that waited for a sync number tries again */
        break;
    }
}

/* Test every outstanding chassis barrier once; queue the completions. */
static void hwb_check(hbd_t *d)
{
    hbd_barrier_state_t *b = d->bar;
    for (uint32_t s = 0; s < HB_HWB_NSYNC && b->n_pend > 0; s++) {
        if (!b->pend[s].used)
            continue;
        int rc = hb_hwb_test(d->hwb, s);
        if (rc == HB_ERR_WOULD_BLOCK)
            continue;
        b->pend[s].used = 0;
        b->n_pend--;
        hb_hier_ev_t ev = {.kind = HB_HIER_EV_HWB_DONE,
                           .job = b->pend[s].job,
                           .coll_id = b->pend[s].coll,
                           .sync_no = s,
                           .status = rc};
        push(d, &ev);
    }
}

static void tib_check(hbd_t *d);
static void tib_done(hbd_t *d, int rc);
static void bar_free(hbd_t *d, hbd_bar_t *B);
static int bar_new(hbd_t *d, uint32_t job, hb_topo_t *view, uint32_t sync_base, uint32_t n_sync,
                   uint64_t first_coll, hbd_bar_t **B_p);

/* A closing engine whose drain the origin decided and whose chassis rounds all ended goes. */
static void drain_check(hbd_t *d, hbd_bar_t *B)
{
    if (!B->verdict)
        return;
    for (uint32_t k = 0; k < HB_HWB_NSYNC; k++)
        if (d->bar->pend[k].used && d->bar->pend[k].job == B->job)
            return;
    hb_log_debug("job %" PRIu32 ": sync numbers drained", B->job);
    bar_free(d, B);
}

/* Step the engines on every queued event, executing the actions in order. */
static void drain(hbd_t *d)
{
    hbd_barrier_state_t *b = d->bar;
    if (b->draining)
        return;
    b->draining = 1;
    for (;;) {
        while (b->q_len > 0) {
            hb_hier_ev_t ev = b->q[b->q_head];
            b->q_head = (b->q_head + 1) % HBD_EVQ;
            b->q_len--;
            if (ev.kind == HB_HIER_EV_PEER_LOST) {
                /* the whole daemon learns it (and floods it) once; that feeds hier below */
                b->draining = 0;
                hbd_net_peer_suspect(d, ev.from);
                b->draining = 1;
                continue;
            }
            hbd_bar_t *B = bar_find_coll(b, ev.job, ev.coll_id);
            if (B == NULL) /* the job closed meanwhile */
                continue;
            if (B->closing) { /* a drain round ended (or a late event): maybe the last one */
                if (ev.kind == HB_HIER_EV_HWB_DONE && ev.status != 0)
                    hb_log_warn("job %" PRIu32 ": chassis barrier sync %" PRIu32
                                " did not drain: %s",
                                B->job, ev.sync_no, hb_status_str(ev.status));
                drain_check(d, B);
                continue;
            }
            size_t n = 0;
            int rc = step(d, B, &ev, &n);
            int was_held = ev.kind == HB_HIER_EV_ARRIVE && B->held_inq;
            if (was_held)
                B->held_inq = 0;
            if (rc == HB_ERR_BUSY && ev.kind == HB_HIER_EV_ARRIVE &&
                B->n_held < sizeof(B->held) / sizeof(B->held[0])) {
                /* first in line again, after the next completion */
                memmove(B->held + 1, B->held, B->n_held * sizeof(B->held[0]));
                B->held[0] = ev.coll_id;
                B->n_held++;
                continue;
            }
            if (was_held)
                held_next(d, B);
            if (rc != 0) {
                hb_log_debug("hier refused event %d job %" PRIu32 " coll %" PRIu64 " from %" PRIu32
                             ": %s",
                             ev.kind, ev.job, ev.coll_id, ev.from, hb_status_str(rc));
                if (ev.kind == HB_HIER_EV_ARRIVE)
                    req_finish(d, B, ev.coll_id, rc);
                continue;
            }
            if (ev.kind == HB_HIER_EV_ARRIVE && ev.coll_id >= B->next_coll)
                B->next_coll = ev.coll_id + 1;
            for (size_t i = 0; i < n; i++)
                exec_act(d, B, &b->acts[i]);
        }
        if (b->n_pend == 0)
            break;
        hwb_check(d);
        if (b->q_len == 0)
            break;
    }
    b->draining = 0;
    yield_arm(d);
}

static int yield_spent(const hbd_barrier_state_t *b)
{
    return hb_time_now_ns() - b->yield_t0 >= hb_wait_policy_default()->yield_ns;
}

/*
 * The waiting rule for the daemon (doc/design.md section 6.1). While barriers are busy the
 * loop spins where every busy process of the node has a core -- hibard has one set aside
 * (cpu.reserved), or cores >= daemons + their running ranks + those jobs' PMIx steps (an
 * emulated cluster's daemons all share this host's cores) -- and yields between turns where
 * cores are scarce. `poll` forces one way (sleep: no poll stage at all). Chosen again at every
 * barrier arrival and every kick of the poll stage (hbd_poll_kick).
 */
static int poll_mode_busy(hbd_t *d, uint64_t *busy_p)
{
    switch (d->cfg->poll) {
    case HB_CFG_POLL_SPIN:
        return HBD_POLL_SPIN;
    case HB_CFG_POLL_YIELD:
        return HBD_POLL_YIELD;
    case HB_CFG_POLL_SLEEP:
        return HBD_POLL_OFF;
    default:
        break;
    }
    if (d->cfg->cpu_reserved > 0)
        return HBD_POLL_SPIN;
    uint64_t daemons = d->cfg->bootstrap == HB_CFG_BOOT_LOCAL ? d->topo->n_nodes : 1;
    /* the daemon, its running ranks and their jobs' PMIx steps (busy in every fence) */
    uint64_t busy = daemons * (1 + (uint64_t)d->jobs.n_local_ranks + d->jobs.n_local_jobs);
    if (busy_p != NULL)
        *busy_p = busy;
    return busy <= d->bar->cores ? HBD_POLL_SPIN : HBD_POLL_YIELD;
}

static int poll_mode(hbd_t *d)
{
    return poll_mode_busy(d, NULL);
}

int hbd_barrier_ranks_sleep(hbd_t *d)
{
    uint64_t busy = 0;
    int mode = poll_mode_busy(d, &busy);
    if (mode == HBD_POLL_SPIN)
        return 0;
    /* forced by `poll`, or at least two busy processes to a core */
    return busy == 0 || busy >= 2 * (uint64_t)d->bar->cores;
}

/* Poll stage: for the policy's yield time after the last barrier or collective activity
 * (arrival, completion, frame, doorbell: hbd_poll_kick) the loop keeps polling its sockets and
 * the doorbells (epoll with a zero timeout) instead of sleeping, spinning or yielding between
 * turns by the waiting rule. */
static int poll_wanted(const hbd_barrier_state_t *b)
{
    if (b->poll_mode == HBD_POLL_OFF)
        return 0;
    return hb_time_now_ns() - b->active_t0 < hb_wait_policy_default()->yield_ns;
}

/* While some round is pending and the yield time since the last arrival is not spent, come
 * back after the loop has polled its sockets once more (a zero timer runs after the poll).
 * Once it is spent: arm the fd, and come back once more to test after arming; then only the
 * fd wakes the loop. */
static void yield_arm(hbd_t *d)
{
    static const struct timeval now = {0, 0};
    hbd_barrier_state_t *b = d->bar;
    if (d->stopping || evtimer_pending(b->ev_yield, NULL))
        return;
    if (b->n_pend == 0 && b->tib_conn == NULL) {
        if (poll_wanted(b))
            evtimer_add(b->ev_yield, &now);
        return;
    }
    if (yield_spent(b)) {
        if (b->armed)
            return;
        b->armed = 1;
        if (hb_hwb_fd_arm(d->hwb, 1) != 0)
            hb_log_warn("chassis barrier fd: cannot arm it (testing every round anyway)");
    }
    evtimer_add(b->ev_yield, &now);
}

static void yield_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    hbd_barrier_state_t *b = d->bar;
    (void)fd;
    (void)what;
    if (b->n_pend > 0)
        hwb_check(d);
    if (b->tib_conn != NULL)
        tib_check(d);
    drain(d);
    if (b->n_pend == 0 && b->tib_conn == NULL) {
        /* only the poll stage: come back after one more look at the sockets */
        if (poll_wanted(b)) {
            static const struct timeval now = {0, 0};
            evtimer_add(b->ev_yield, &now);
            if (b->poll_mode == HBD_POLL_YIELD)
                sched_yield();
        }
        return;
    }
    if (evtimer_pending(b->ev_yield, NULL) && !yield_spent(b))
        sched_yield(); /* still waiting: let the others of the chassis run */
}

void hbd_poll_kick(hbd_t *d)
{
    hbd_barrier_state_t *b = d->bar;
    if (b == NULL)
        return;
    b->active_t0 = hb_time_now_ns();
    b->poll_mode = poll_mode(d); /* a job that runs only collectives arrives at no barrier */
    yield_arm(d);
}

void hbd_barrier_on_hwb(hbd_t *d)
{
    if (d->bar == NULL)
        return;
    /* clear it and disarm: yield_arm arms it again before the loop sleeps */
    d->bar->armed = 0;
    if (hb_hwb_fd_arm(d->hwb, 0) != 0)
        hb_log_warn("chassis barrier fd: cannot clear it (testing every round anyway)");
    if (d->bar->n_pend > 0)
        hwb_check(d);
    if (d->bar->tib_conn != NULL)
        tib_check(d);
    drain(d);
}

/* A request for barrier coll_id of B (answered to conn, or through cb): queued, the deadline
 * check armed, and this node arrives. 0 or NOMEM. */
static int req_arrive(hbd_t *d, hbd_bar_t *B, uint64_t coll_id, hbd_reply_t *conn,
                      hbd_barrier_cb_t cb, void *arg)
{
    hbd_barrier_state_t *b = d->bar;
    hbd_req_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return HB_ERR_NOMEM;
    r->coll = coll_id;
    r->t0 = hb_time_now_ns();
    r->conn = hbd_reply_hold(conn); /* NULL stays NULL */
    r->cb = cb;
    r->cb_arg = arg;
    r->next = B->reqs;
    B->reqs = r;
    B->n_reqs++;
    b->active_t0 = r->t0;
    b->poll_mode = poll_mode(d);
    hbd_cron_arm(d);
    if ((B->n_held > 0 || B->held_inq) && B->n_held < sizeof(B->held) / sizeof(B->held[0])) {
        B->held[B->n_held++] = coll_id; /* behind the ones waiting: arrivals keep their order */
        return 0;
    }
    hb_hier_ev_t ev = {
        .kind = HB_HIER_EV_ARRIVE, .job = B->job, .coll_id = coll_id, .epoch = d->epoch};
    push(d, &ev);
    drain(d);
    return 0;
}

static int req_exists(const hbd_bar_t *B, uint64_t coll_id)
{
    for (const hbd_req_t *r = B->reqs; r != NULL; r = r->next)
        if (r->coll == coll_id)
            return 1;
    for (uint32_t i = 0; i < B->n_held; i++)
        if (B->held[i] == coll_id)
            return 1;
    return 0;
}

void hbd_barrier_request(hbd_t *d, hbd_reply_t *conn, uint64_t coll_id)
{
    hbd_bar_t *B = bar_find(d->bar, 0);
    if (d->lost) { /* the cluster engine spans every node */
        hbd_reply(conn, "err barrier %" PRIu64 " %d %s", coll_id, HB_ERR_PEER_LOST,
                  hb_status_str(HB_ERR_PEER_LOST));
        d->st.barriers_failed++;
        return;
    }
    if (!d->ready || B == NULL) {
        hbd_reply(conn, "err barrier %" PRIu64 " %d %s (not every neighbour linked yet)", coll_id,
                  HB_ERR_NOT_INIT, hb_status_str(HB_ERR_NOT_INIT));
        return;
    }
    if (req_exists(B, coll_id)) {
        hbd_reply(conn, "err barrier %" PRIu64 " %d %s", coll_id, HB_ERR_BUSY,
                  hb_status_str(HB_ERR_BUSY));
        return;
    }
    if (req_arrive(d, B, coll_id, conn, NULL, NULL) != 0)
        hbd_reply(conn, "err barrier %" PRIu64 " %d %s", coll_id, HB_ERR_NOMEM,
                  hb_status_str(HB_ERR_NOMEM));
}

int hbd_barrier_start(hbd_t *d, uint32_t job, uint64_t coll_id, hbd_barrier_cb_t cb, void *arg)
{
    hbd_barrier_state_t *b = d->bar;
    hbd_bar_t *B = bar_find(b, job);
    if (b == NULL || cb == NULL)
        return HB_ERR_INVAL;
    if (B != NULL && B->broken)
        return HB_ERR_PEER_LOST; /* one of its nodes is gone (others' jobs go on) */
    if (B == NULL || B->closing)
        return job == 0 ? HB_ERR_NOT_INIT : HB_ERR_NOT_FOUND;
    if (job == 0 && !d->ready)
        return HB_ERR_NOT_INIT;
    if (req_exists(B, coll_id))
        return HB_ERR_BUSY;
    return req_arrive(d, B, coll_id, NULL, cb, arg);
}

static int recently_closed(const hbd_barrier_state_t *b, uint32_t job)
{
    for (uint32_t i = 0; i < HBD_CLOSED_RING; i++)
        if (b->closed[i] == job)
            return 1;
    return 0;
}

/* A HIER frame from a neighbour. */
static void on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    hbd_barrier_state_t *b = d->bar;
    if (b == NULL || (d->lost && m->job == 0))
        return;
    hb_hier_ev_t ev = {.kind = HB_HIER_EV_MSG,
                       .job = m->job,
                       .coll_id = m->coll_id,
                       .epoch = d->epoch,
                       .from = m->src,
                       .msg = hbd_wire_get32(m->payload),
                       .data = m->len > 4 ? m->payload + 4 : NULL,
                       .len = m->len - 4};
    b->active_t0 = hb_time_now_ns();
    hbd_bar_t *B = bar_find_coll(b, m->job, m->coll_id), *J = bar_find(b, m->job);
    if ((B != NULL && B->closing) || (B == NULL && J != NULL && J->closing)) {
        b->drop_job++; /* for a job that ended here */
        return;
    }
    if (B == NULL) {
        /* a job not opened here yet: kept until it is; one closed here: dropped */
        hbd_hmsg_t *o = NULL;
        if (m->job != 0 && !recently_closed(b, m->job) && m->len == 4 &&
            b->n_early < HBD_EARLY_MAX && (o = calloc(1, sizeof(*o))) != NULL) {
            *o = (hbd_hmsg_t){.job = m->job,
                              .from = m->src,
                              .coll = m->coll_id,
                              .msg = ev.msg,
                              .epoch = d->epoch,
                              .t_ns = b->active_t0};
            o->next = b->early;
            b->early = o;
            b->n_early++;
            hbd_timer_arm(b->purge, (uint64_t)HBD_EARLY_TTL_MS * 1000, 0);
        } else {
            b->drop_job++;
        }
        return;
    }
    push(d, &ev);
    drain(d);
}

/* The retry timer: queued sends whose link came up; kept messages too old. */
static void retry_cb(hbd_t *d, void *arg)
{
    hbd_barrier_state_t *b = d->bar;
    uint64_t now = hb_time_now_ns();
    int again = 0;
    (void)arg;
    for (hbd_bar_t *B = b->bars; B != NULL; B = B->next) {
        uint32_t blocked[16], nb = 0;
        for (hbd_hmsg_t **pp = &B->outq; *pp != NULL;) {
            hbd_hmsg_t *o = *pp;
            int skip = nb == 16;
            for (uint32_t i = 0; i < nb; i++)
                skip |= blocked[i] == o->to;
            uint8_t pl[4];
            hbd_wire_put32(pl, o->msg);
            int rc = skip ? HB_ERR_WOULD_BLOCK
                          : hbd_net_send_job(d, o->to, HBD_WIRE_HIER, 0, B->job, o->coll, pl,
                                             sizeof(pl), NULL, 0);
            uint64_t to_ms = d->cfg->barrier_timeout_ms ? d->cfg->barrier_timeout_ms : 30000;
            if (rc == HB_ERR_WOULD_BLOCK && now - o->t_ns < to_ms * 1000000ull) {
                if (!skip) {
                    blocked[nb++] = o->to;
                    (void)hbd_net_link(d, o->to);
                }
                pp = &o->next;
                again = 1;
                continue;
            }
            *pp = o->next;
            if (rc != 0) {
                hb_log_warn("job %" PRIu32 ": no link to node %" PRIu32 " for its barrier: %s",
                            B->job, o->to, hb_status_str(rc));
                hb_hier_ev_t ev = {.kind = HB_HIER_EV_PEER_LOST, .from = o->to};
                push(d, &ev);
            }
            free(o);
        }
    }
    for (hbd_hmsg_t **pp = &b->early; *pp != NULL;) {
        hbd_hmsg_t *o = *pp;
        if (now - o->t_ns < (uint64_t)HBD_EARLY_TTL_MS * 1000000ull) {
            pp = &o->next;
            continue;
        }
        *pp = o->next;
        b->n_early--;
        b->drop_job++;
        free(o);
    }
    if (again)
        hbd_timer_arm(b->retry, 1000, 0);
    if (b->early != NULL)
        hbd_timer_arm(b->purge, (uint64_t)HBD_EARLY_TTL_MS * 1000, 0);
    drain(d);
}

static void fail_all(hbd_t *d, hbd_bar_t *B, int status)
{
    B->n_held = 0;
    B->held_inq = 0;
    while (B->reqs != NULL)
        req_finish(d, B, B->reqs->coll, status);
}

/* A lost node: every engine whose collectives involve it fails what it has in flight (and
 * from then on refuses new ones: hier after PEER_LOST); the others go on. */
static void on_lost(hbd_t *d, uint32_t lost, int status, int first)
{
    hbd_barrier_state_t *b = d->bar;
    if (b == NULL)
        return;
    for (hbd_bar_t *B = b->bars; B != NULL; B = B->next) {
        if (!bar_has(d, B, lost) || B->closing)
            continue;
        B->broken = 1;
        hb_hier_ev_t ev = {.kind = HB_HIER_EV_PEER_LOST, .from = lost};
        size_t n = 0;
        /* directly, not through the queue: this is what a queued PEER_LOST turns into */
        if (lost < d->topo->n_nodes && step(d, B, &ev, &n) == 0)
            for (size_t i = 0; i < n; i++)
                exec_act(d, B, &b->acts[i]);
        /* its chassis rounds stay tested: one with the lost node ends with the backend's
         * PEER_LOST, after which the sync number is clean here (hwb.h) */
        /* whatever hier did not fail (not yet arrived there) fails here */
        fail_all(d, B, status);
    }
    if (lost == d->self && d->hwb != NULL) {
        /* taken for lost, this process goes on as a new incarnation (hbd_net.c self_rejoin):
         * the chassis rounds of its ended jobs end now, its mates' with it too, instead of
         * holding their sync numbers until the barrier timeout (a stopped daemon's round
         * there would make the next job on that chassis wait for it) */
        int rc = hb_hwb_abandon(d->hwb);
        if (rc != 0 && rc != HB_ERR_UNAVAIL)
            hb_log_warn("chassis barrier: cannot end the rounds of this node's previous "
                        "incarnation: %s",
                        hb_status_str(rc));
    }
    if (first && b->tib_conn != NULL) {
        hbd_reply(b->tib_conn, "err tib %d %s", status, hb_status_str(status));
        hbd_reply_release(b->tib_conn);
        b->tib_conn = NULL;
        free(b->tib);
        b->tib = NULL;
    }
    drain(d);
}

/* A node came back. Once nothing is lost any more, the cluster engine (job 0: every node)
 * starts over at collective 0 on every daemon that had it fail (a restarted daemon's is new
 * already), so cluster barriers run again; jobs have engines of their own. */
static void on_join(hbd_t *d, uint32_t node, uint64_t inc)
{
    hbd_barrier_state_t *b = d->bar;
    hbd_bar_t *B = b != NULL ? bar_find(b, 0) : NULL, *N = NULL;
    (void)node;
    (void)inc;
    if (B == NULL || d->lost || !B->broken)
        return;
    fail_all(d, B, HB_ERR_PEER_LOST);
    bar_free(d, B);
    if (bar_new(d, 0, NULL, 0, HBD_CLUSTER_NSYNC, 0, &N) != 0) {
        hb_log_error("cannot make the cluster's barrier engine again: cluster barriers fail");
        return;
    }
    b->bars = N->next; /* the cluster engine last */
    N->next = NULL;
    hbd_bar_t **pp = &b->bars;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = N;
    hb_log_info("every node is up again: cluster barriers start over at collective 0");
}

/* The cron's tick (hbd_cron.h): barrier timeouts, a chassis round's test; 1 while barriers
 * are in flight. */
static int tick(hbd_t *d, uint64_t now)
{
    hbd_barrier_state_t *b = d->bar;
    uint32_t to_ms = d->cfg->barrier_timeout_ms;
    if (b == NULL)
        return 0;
    for (hbd_bar_t *B = b->bars; B != NULL && to_ms > 0; B = B->next)
        for (hbd_req_t *r = B->reqs; r != NULL; r = r->next)
            if (!r->timed_out && now - r->t0 > (uint64_t)to_ms * 1000000ull) {
                hb_hier_ev_t ev = {.kind = HB_HIER_EV_TIMEOUT, .job = B->job, .coll_id = r->coll};
                hb_log_warn("job %" PRIu32 ": barrier %" PRIu64 " timed out after %" PRIu32 " ms",
                            B->job, r->coll, to_ms);
                r->timed_out = 1; /* once (a t0 far ahead wrapped around: every tick again) */
                push(d, &ev);
            }
    int closing = 0;
    for (hbd_bar_t *B = b->bars, *next; B != NULL; B = next) {
        next = B->next;
        if (!B->closing)
            continue;
        uint64_t lim = (uint64_t)(to_ms ? to_ms : 30000) * 1000000ull;
        if (now - B->close_ns > lim) {
            hb_log_error("job %" PRIu32 ": its chassis-barrier sync numbers %" PRIu32 "..%" PRIu32
                         " did not drain within %" PRIu64 " ms (a chassis mate never ended the "
                         "job): they may stay busy",
                         B->job, B->sync_base, B->sync_base + B->n_sync - 1, lim / 1000000u);
            bar_free(d, B);
        } else {
            closing = 1;
        }
    }
    if (b->n_pend > 0)
        hwb_check(d);
    drain(d);
    return hbd_barrier_in_flight(d) > 0 || closing;
}

uint32_t hbd_barrier_in_flight(const hbd_t *d)
{
    uint32_t n = 0;
    for (hbd_bar_t *B = d->bar != NULL ? d->bar->bars : NULL; B != NULL; B = B->next)
        n += B->n_reqs;
    return n;
}

static void stats_add(hb_hier_stats_t *to, const hb_hier_stats_t *s)
{
    to->completed += s->completed;
    to->failed += s->failed;
    to->drop_mismatch += s->drop_mismatch;
    to->drop_role += s->drop_role;
    to->drop_dup += s->drop_dup;
    to->drop_order += s->drop_order;
    to->drop_stale += s->drop_stale;
    to->drop_window += s->drop_window;
    to->bad_hwb += s->bad_hwb;
    to->late += s->late;
}

void hbd_barrier_drops(const hbd_t *d, uint64_t *dropped_p, uint64_t *late_p)
{
    hb_hier_stats_t s, one;
    memset(&s, 0, sizeof(s));
    if (d->bar != NULL) {
        s = d->bar->gone;
        for (hbd_bar_t *B = d->bar->bars; B != NULL; B = B->next) {
            hb_hier_stats(B->h, &one);
            stats_add(&s, &one);
        }
    }
    *dropped_p = s.drop_mismatch + s.drop_role + s.drop_dup + s.drop_order + s.drop_stale +
                 s.drop_window + s.bad_hwb + (d->bar != NULL ? d->bar->drop_job : 0);
    *late_p = s.late;
}

uint64_t hbd_barrier_next_coll(const hbd_t *d)
{
    hbd_bar_t *B = bar_find(d->bar, 0);
    return B != NULL ? B->next_coll : 0;
}

uint32_t hbd_barrier_n_jobs(const hbd_t *d)
{
    uint32_t n = 0;
    for (hbd_bar_t *B = d->bar != NULL ? d->bar->bars : NULL; B != NULL; B = B->next)
        n += B->job != 0 && !B->sub;
    return n;
}

/* Create an engine (the cluster's when view is NULL; a subset engine when first_coll has
 * HBD_BARRIER_SUB_BIT: the tree protocol, its ids from first_coll). */
static int bar_new(hbd_t *d, uint32_t job, hb_topo_t *view, uint32_t sync_base, uint32_t n_sync,
                   uint64_t first_coll, hbd_bar_t **B_p)
{
    hbd_barrier_state_t *b = d->bar;
    hb_hier_cfg_t hc;
    hbd_bar_t *B = calloc(1, sizeof(*B));
    if (B == NULL)
        return HB_ERR_NOMEM;
    hb_hier_cfg_init(&hc);
    hc.protocol = d->cfg->protocol == HB_CFG_PROTO_TREE ? HB_HIER_TREE : HB_HIER_SCMD;
    hc.job = job;
    hc.epoch = d->epoch;
    hc.sync_base = sync_base;
    hc.n_sync = n_sync;
    hc.first_coll = first_coll;
    if (first_coll & HBD_BARRIER_SUB_BIT)
        hc.protocol = HB_HIER_TREE;
    int rc = hb_hier_create(view != NULL ? view : d->topo, d->self, &hc, &B->h);
    if (rc != 0) {
        free(B);
        return rc;
    }
    size_t m = hb_hier_max_actions(B->h);
    if (m > b->max_acts) {
        hb_hier_act_t *acts = realloc(b->acts, m * sizeof(*acts));
        if (acts == NULL) {
            hb_hier_destroy(B->h);
            free(B);
            return HB_ERR_NOMEM;
        }
        b->acts = acts;
        b->max_acts = m;
    }
    B->job = job;
    B->view = view;
    B->sub = (first_coll & HBD_BARRIER_SUB_BIT) != 0;
    B->tag = B->sub ? hbd_barrier_sub_tag(first_coll) : 0;
    B->next_coll = first_coll;
    B->next = b->bars;
    b->bars = B;
    *B_p = B;
    return 0;
}

static void bar_free(hbd_t *d, hbd_bar_t *B)
{
    hbd_barrier_state_t *b = d->bar;
    hb_hier_stats_t s;
    for (hbd_bar_t **pp = &b->bars; *pp != NULL; pp = &(*pp)->next)
        if (*pp == B) {
            *pp = B->next;
            break;
        }
    hb_hier_stats(B->h, &s);
    stats_add(&b->gone, &s);
    while (B->outq != NULL) {
        hbd_hmsg_t *o = B->outq;
        B->outq = o->next;
        free(o);
    }
    /* its chassis rounds: nobody waits for them any more (a subset engine has none) */
    for (uint32_t k = 0; k < HB_HWB_NSYNC && !B->sub; k++)
        if (b->pend[k].used && b->pend[k].job == B->job) {
            b->pend[k].used = 0;
            b->n_pend--;
        }
    hb_hier_destroy(B->h);
    hb_topo_free(B->view);
    free(B);
}

/* A new engine B over its view (members member[n_nodes]) joins in: broken if one of its
 * nodes is lost already, its tree's links asked for (parent, child Centers: maybe no
 * neighbours in the cluster's tree), and what came for it before it existed delivered. */
static void bar_attach(hbd_t *d, hbd_bar_t *B, const uint8_t *member)
{
    hbd_barrier_state_t *b = d->bar;
    const hb_topo_t *view = B->view;
    for (uint32_t n = 0; d->lost && n < d->topo->n_nodes && !B->broken; n++)
        B->broken = member[n] && hbd_node_lost(d, n); /* lost before it opened here */
    const hb_topo_node_t *tn = &view->nodes[d->self];
    if (tn->parent != HB_TOPO_NONE)
        (void)hbd_net_link(d, tn->parent);
    for (uint32_t i = 0; i < tn->n_children; i++)
        (void)hbd_net_link(d, hb_topo_center_of(view, tn->children[i]));
    int kept = 0;
    for (hbd_hmsg_t **pp = &b->early; *pp != NULL;) {
        hbd_hmsg_t *o = *pp;
        if (o->job != B->job || bar_find_coll(b, o->job, o->coll) != B) {
            pp = &o->next;
            continue;
        }
        *pp = o->next;
        b->n_early--;
        hb_hier_ev_t ev = {.kind = HB_HIER_EV_MSG,
                           .job = o->job,
                           .coll_id = o->coll,
                           .epoch = o->epoch,
                           .from = o->from,
                           .msg = o->msg};
        push(d, &ev);
        kept = 1;
        free(o);
    }
    if (kept)
        drain(d);
}

int hbd_barrier_job_open(hbd_t *d, uint32_t job, const uint8_t *member, uint32_t sync_base,
                         uint32_t n_sync, char *err, size_t cap)
{
    hbd_barrier_state_t *b = d->bar;
    hb_topo_t *view = NULL;
    hbd_bar_t *B = NULL;
    int rc;
    if (b == NULL || job == 0 || member == NULL || !member[d->self] || n_sync == 0 ||
        sync_base < HBD_SYNC_JOB_FIRST || sync_base + n_sync > HBD_SYNC_JOB_END) {
        snprintf(err, cap,
                 "job %" PRIu32 ": bad engine parameters (sync %" PRIu32 "+%" PRIu32
                 ", member here %d)",
                 job, sync_base, n_sync, member != NULL ? member[d->self] : -1);
        return HB_ERR_INVAL;
    }
    if (bar_find(b, job) != NULL) {
        snprintf(err, cap, "job %" PRIu32 ": its barrier engine exists already", job);
        return HB_ERR_EXISTS;
    }
    char terr[256] = "";
    if ((rc = hb_topo_restrict(d->topo, member, &view, terr, sizeof(terr))) != 0) {
        snprintf(err, cap, "job %" PRIu32 ": %s", job, terr[0] ? terr : hb_status_str(rc));
        return rc;
    }
    if ((rc = bar_new(d, job, view, sync_base, n_sync, 0, &B)) != 0) {
        hb_topo_free(view);
        snprintf(err, cap, "job %" PRIu32 ": cannot create its barrier engine: %s", job,
                 hb_status_str(rc));
        return rc;
    }
    B->mask = view->chassis[view->nodes[d->self].chassis].mask;
    B->sync_base = sync_base;
    B->n_sync = n_sync;
    hb_log_info("job %" PRIu32 ": barrier engine over %" PRIu32 " of %" PRIu32
                " nodes, role %s, sync %" PRIu32 "..%" PRIu32,
                job, view->n_members, view->n_nodes, hb_hier_role(B->h), sync_base,
                sync_base + n_sync - 1);
    bar_attach(d, B, member);
    return 0;
}

/*
 * A job's sync numbers must be clean before the root gives them to another job: a job that
 * failed can leave a chassis round open (some mates arrived, others never will). Rounds on one
 * sync number follow each other (a node arrives at the next only after it saw the last one
 * end), so when the job has stopped, the members of a chassis have arrived at either m or m + 1
 * rounds of each sync number, and those at m + 1 wait in the last round. The relay collects
 * every member's counts (hbd_barrier_job_counts) when the job ended everywhere, and tells each
 * member at which sync numbers to arrive once more (hbd_barrier_job_drain: the verdict, maybe
 * none); the engine goes once its rounds ended, and the relay then reports the node clean.
 */
void hbd_barrier_job_close(hbd_t *d, uint32_t job)
{
    hbd_barrier_state_t *b = d->bar;
    hbd_bar_t *B = job != 0 ? bar_find(b, job) : NULL;
    if (B == NULL || B->closing)
        return;
    /* its subset engines go at once (their rounds are software, nothing to drain), and the
     * records of those that went idle */
    for (uint32_t i = 0; i < b->n_recs;)
        if (b->recs[i].job == job)
            b->recs[i] = b->recs[--b->n_recs];
        else
            i++;
    for (hbd_bar_t *S = b->bars, *next; S != NULL; S = next) {
        next = S->next;
        if (S->sub && S->job == job) {
            fail_all(d, S, HB_ERR_UNAVAIL);
            bar_free(d, S);
        }
    }
    fail_all(d, B, HB_ERR_UNAVAIL);
    b->closed[b->closed_next++ % HBD_CLOSED_RING] = job;
    B->closing = 1;
    B->close_ns = hb_time_now_ns();
    hbd_cron_arm(d);
    drain(d);
}

uint32_t hbd_barrier_job_list(const hbd_t *d, uint32_t *jobs, uint32_t max)
{
    uint32_t k = 0;
    for (const hbd_bar_t *B = d->bar != NULL ? d->bar->bars : NULL; B != NULL && k < max;
         B = B->next)
        if (B->job != 0 && !B->sub)
            jobs[k++] = B->job;
    return k;
}

int hbd_barrier_job_counts(const hbd_t *d, uint32_t job, uint32_t *base_p, uint32_t *n_p,
                           uint32_t counts[HB_HWB_NSYNC])
{
    const hbd_bar_t *B = job != 0 ? bar_find(d->bar, job) : NULL;
    if (B == NULL)
        return HB_ERR_NOT_FOUND;
    *base_p = B->sync_base;
    *n_p = B->n_sync;
    for (uint32_t k = 0; k < B->n_sync; k++)
        counts[k] = B->arrivals[B->sync_base + k];
    return 0;
}

void hbd_barrier_job_drain(hbd_t *d, uint32_t job, uint64_t syncs)
{
    hbd_barrier_state_t *b = d->bar;
    hbd_bar_t *B = job != 0 ? bar_find(b, job) : NULL;
    if (B == NULL || !B->closing || B->verdict)
        return;
    B->verdict = 1;
    for (uint32_t k = B->sync_base; k < B->sync_base + B->n_sync && k < HB_HWB_NSYNC; k++) {
        if (!(syncs >> k & 1) || d->hwb == NULL)
            continue;
        int rc = b->pend[k].used ? HB_ERR_BUSY : hb_hwb_arrive(d->hwb, k, B->mask);
        if (rc != 0) {
            hb_log_warn("job %" PRIu32 ": cannot drain chassis-barrier sync %" PRIu32 ": %s", job,
                        k, hb_status_str(rc));
            continue;
        }
        hb_log_debug("job %" PRIu32 ": drains chassis-barrier sync %" PRIu32, job, k);
        b->pend[k] = (hbd_hwb_pend_t){.used = 1, .job = job, .coll = UINT64_MAX};
        b->n_pend++;
        b->yield_t0 = hb_time_now_ns();
        b->armed = 0;
    }
    hwb_check(d);
    drain(d);
    if (bar_find(b, job) == B)
        drain_check(d, B);
}

int hbd_barrier_job_has(const hbd_t *d, uint32_t job, uint32_t node)
{
    const hbd_bar_t *B = job != 0 ? bar_find(d->bar, job) : NULL;
    return B == NULL || bar_has(d, B, node);
}

int hbd_barrier_job_busy(const hbd_t *d, uint32_t job)
{
    return job != 0 && bar_find(d->bar, job) != NULL;
}

/* ---- subset barriers across nodes: an engine per rank set ---- */

/* The subset engines' shape: the cluster's nodes, each a chassis of its own, in a tree of the
 * cluster's fanout (fanout 0: as many children as its largest chassis has ports, at least 2). */
static int solo_topo(hbd_t *d, const hb_topo_t **t_p)
{
    hbd_barrier_state_t *b = d->bar;
    uint32_t n = d->topo->n_nodes, fan = d->topo->fanout, ports = 0;
    if (b->solo == NULL) {
        uint32_t *start = malloc((n + 1) * sizeof(uint32_t)), *nodes = malloc(n * sizeof(uint32_t));
        char err[256] = "";
        int rc = start == NULL || nodes == NULL ? HB_ERR_NOMEM : 0;
        for (uint32_t c = 0; c < d->topo->n_chassis; c++)
            ports = d->topo->chassis[c].ports > ports ? d->topo->chassis[c].ports : ports;
        fan = fan != 0 ? fan : ports;
        for (uint32_t i = 0; rc == 0 && i <= n; i++) {
            start[i] = i;
            if (i < n)
                nodes[i] = i;
        }
        hb_topo_spec_t spec = {.n_nodes = n,
                               .n_chassis = n,
                               .chassis_start = start,
                               .chassis_nodes = nodes,
                               .fanout = fan < 2 ? 2 : fan};
        if (rc == 0 && (rc = hb_topo_build(&spec, &b->solo, err, sizeof(err))) != 0)
            hb_log_error("subset barriers: %s", err[0] ? err : hb_status_str(rc));
        free(start);
        free(nodes);
        if (rc != 0)
            return rc;
    }
    *t_p = b->solo;
    return 0;
}

/* More than HBD_SUB_KEEP subset engines of job `job` here: the least recently used idle one
 * (nothing in flight, kept by hier or waiting to be sent; keep: the one just opened) goes, its
 * set's count
 * kept in a record (16 bytes) so that it opens again where it stopped. A message for it that
 * comes meanwhile is kept as for an engine not opened yet. NOMEM for the record: it stays. */
static void sub_evict(hbd_t *d, uint32_t job, const hbd_bar_t *keep)
{
    hbd_barrier_state_t *b = d->bar;
    hbd_bar_t *lru = NULL;
    uint32_t n = 0;
    for (hbd_bar_t *B = b->bars; B != NULL; B = B->next) {
        if (!B->sub || B->job != job)
            continue;
        n++;
        if (B != keep && B->n_reqs == 0 && B->n_held == 0 && !B->held_inq && B->outq == NULL &&
            !B->broken && hb_hier_idle(B->h) && (lru == NULL || B->used_ns < lru->used_ns))
            lru = B;
    }
    if (n <= HBD_SUB_KEEP || lru == NULL)
        return;
    if (b->n_recs == b->cap_recs) {
        uint32_t cap = b->cap_recs ? 2 * b->cap_recs : 16;
        struct hbd_sub_rec *r = realloc(b->recs, cap * sizeof(*r));
        if (r == NULL)
            return;
        b->recs = r;
        b->cap_recs = cap;
    }
    b->recs[b->n_recs++] = (struct hbd_sub_rec){
        .job = job, .key = lru->key, .next_seq = lru->next_coll & HBD_BARRIER_SUB_SEQ_MAX};
    hb_log_debug("job %" PRIu32 ": subset engine %#" PRIx32 " idle, freed at barrier %" PRIu64, job,
                 lru->tag, lru->next_coll & HBD_BARRIER_SUB_SEQ_MAX);
    bar_free(d, lru);
}

/* Job `job`'s engine for rank set `key` over the nodes member[n_nodes]: found (its rank set and
 * node set must be those: another set whose tag is the same is MISMATCH) or opened. */
static int sub_engine(hbd_t *d, uint32_t job, uint64_t key, const uint8_t *member, hbd_bar_t **S_p)
{
    hbd_barrier_state_t *b = d->bar;
    uint32_t tag = hbd_barrier_sub_tag_of(key);
    uint64_t first = hbd_barrier_sub_id(tag, 1);
    hbd_bar_t *S = bar_find_coll(b, job, first);
    const hb_topo_t *solo;
    hb_topo_t *view = NULL;
    char err[256] = "";
    int rc;
    if (S != NULL) {
        for (uint32_t n = 0; n < d->topo->n_nodes; n++)
            if (S->key != key || (member[n] != 0) != (S->view->nodes[n].member != 0)) {
                hb_log_error("job %" PRIu32 ": two rank sets with tag %#" PRIx32
                             " (hashes %#" PRIx64 ", %#" PRIx64 ")",
                             job, tag, S->key, key);
                return HB_ERR_MISMATCH;
            }
        *S_p = S;
        return 0;
    }
    if ((rc = solo_topo(d, &solo)) != 0)
        return rc;
    uint32_t rec = 0; /* an engine of this set went idle here before: its count goes on */
    while (rec < b->n_recs && !(b->recs[rec].job == job && b->recs[rec].key == key))
        rec++;
    if (rec < b->n_recs)
        first = hbd_barrier_sub_id(tag, (uint32_t)b->recs[rec].next_seq);
    if ((rc = hb_topo_restrict(solo, member, &view, err, sizeof(err))) != 0) {
        hb_log_error("job %" PRIu32 ": subset %#" PRIx32 ": %s", job, tag,
                     err[0] ? err : hb_status_str(rc));
        return rc;
    }
    if ((rc = bar_new(d, job, view, 0, HBD_SUB_NSYNC, first, &S)) != 0) {
        hb_topo_free(view);
        return rc;
    }
    hb_log_debug("job %" PRIu32 ": subset engine %#" PRIx32 " over %" PRIu32 " nodes, role %s", job,
                 tag, view->n_members, hb_hier_role(S->h));
    S->key = key;
    if (rec < b->n_recs)
        b->recs[rec] = b->recs[--b->n_recs];
    bar_attach(d, S, member);
    sub_evict(d, job, S);
    *S_p = S;
    return 0;
}

int hbd_barrier_sub_start(hbd_t *d, uint32_t job, uint64_t key, const uint8_t *member, uint32_t seq,
                          hbd_barrier_cb_t cb, void *arg)
{
    hbd_barrier_state_t *b = d->bar;
    hbd_bar_t *J = bar_find(b, job), *S = NULL;
    if (b == NULL || cb == NULL || member == NULL || !member[d->self] || seq == 0 ||
        seq > HBD_BARRIER_SUB_SEQ_MAX)
        return HB_ERR_INVAL;
    if (J != NULL && J->broken)
        return HB_ERR_PEER_LOST;
    if (J == NULL || J->closing)
        return HB_ERR_NOT_FOUND;
    int rc = sub_engine(d, job, key, member, &S);
    if (rc != 0)
        return rc;
    uint64_t coll = hbd_barrier_sub_id(S->tag, seq);
    S->used_ns = hb_time_now_ns();
    if (S->broken)
        return HB_ERR_PEER_LOST;
    if (req_exists(S, coll) || coll < S->next_coll)
        return HB_ERR_BUSY;
    return req_arrive(d, S, coll, NULL, cb, arg);
}

/* ---- T_IB probe: n chassis barriers in a row on the reserved sync number ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int tib_arrive(hbd_t *d)
{
    hbd_barrier_state_t *b = d->bar;
    uint32_t n = d->topo->chassis[d->topo->nodes[d->self].chassis].n_nodes;
    uint32_t mask = n >= 32 ? UINT32_MAX : (1u << n) - 1;
    b->tib_t0 = b->yield_t0 = hb_time_now_ns();
    b->armed = 0;
    return hb_hwb_arrive(d->hwb, HBD_TIB_SYNC, mask);
}

static void tib_end(hbd_t *d, int rc)
{
    hbd_barrier_state_t *b = d->bar;
    if (rc == 0) {
        qsort(b->tib, b->tib_n, sizeof(double), cmp_double);
        hbd_reply(b->tib_conn,
                  "ok tib %.3f p99=%.3f min=%.3f n=%" PRIu32 " arrived=%" PRIu64 " done=%" PRIu64,
                  b->tib[b->tib_n / 2], b->tib[(size_t)((b->tib_n - 1) * 0.99)], b->tib[0],
                  b->tib_n, b->tib_t0, b->tib_t1);
    } else {
        hbd_reply(b->tib_conn, "err tib %d %s", rc, hb_status_str(rc));
    }
    hbd_reply_release(b->tib_conn);
    b->tib_conn = NULL;
    free(b->tib);
    b->tib = NULL;
}

/* One probe round ended with rc (0: complete): record it and start the next. */
static void tib_done(hbd_t *d, int rc)
{
    hbd_barrier_state_t *b = d->bar;
    if (rc != 0) {
        tib_end(d, rc);
        return;
    }
    b->tib_t1 = hb_time_now_ns();
    b->tib[b->tib_done++] = (double)(b->tib_t1 - b->tib_t0) / 1e3;
    d->st.hwb_rounds++;
    if (b->tib_done == b->tib_n) {
        tib_end(d, 0);
        return;
    }
    if ((rc = tib_arrive(d)) != 0)
        tib_end(d, rc);
}

static void tib_check(hbd_t *d)
{
    hbd_barrier_state_t *b = d->bar;
    while (b->tib_conn != NULL) {
        int rc = hb_hwb_test(d->hwb, HBD_TIB_SYNC);
        if (rc == HB_ERR_WOULD_BLOCK)
            return;
        tib_done(d, rc);
    }
}

void hbd_barrier_tib(hbd_t *d, hbd_reply_t *conn, uint32_t n)
{
    hbd_barrier_state_t *b = d->bar;
    int rc = 0;
    if (d->hwb == NULL)
        rc = HB_ERR_UNAVAIL;
    else if (b->tib_conn != NULL)
        rc = HB_ERR_BUSY;
    else if (d->lost)
        rc = HB_ERR_PEER_LOST;
    else if ((b->tib = calloc(n, sizeof(double))) == NULL)
        rc = HB_ERR_NOMEM;
    if (rc == 0) {
        b->tib_n = n;
        b->tib_done = 0;
        b->tib_conn = hbd_reply_hold(conn);
        if ((rc = tib_arrive(d)) != 0) {
            tib_end(d, rc);
            return;
        }
        tib_check(d);
        yield_arm(d);
        return;
    }
    hbd_reply(conn, "err tib %d %s", rc, hb_status_str(rc));
}

static void hwb_fd_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    hbd_barrier_on_hwb(arg);
}

int hbd_barrier_init(hbd_t *d)
{
    hbd_barrier_state_t *b = calloc(1, sizeof(*b));
    hbd_bar_t *B = NULL;
    if (b == NULL)
        return HB_ERR_NOMEM;
    d->bar = b;
    int rc = bar_new(d, 0, NULL, 0, HBD_CLUSTER_NSYNC, 0, &B);
    if (rc != 0) {
        hb_log_error("cannot create the %s barrier engine: %s",
                     hb_cfg_protocol_name(d->cfg->protocol), hb_status_str(rc));
        return rc;
    }
    hbd_hooks_frame(d, HBD_WIRE_HIER, on_msg, NULL);
    if ((rc = hbd_hooks_lost(d, on_lost, 20)) != 0 || (rc = hbd_hooks_join(d, on_join)) != 0 ||
        (rc = hbd_hooks_cron(d, tick)) != 0)
        return rc;
    const char *tdir = getenv("HIBAR_TRACE_DIR");
    if (tdir != NULL && *tdir != '\0') {
        char path[4096];
        snprintf(path, sizeof(path), "%s/n%" PRIu32 ".trace", tdir, d->self);
        b->trace = fopen(path, "w");
        if (b->trace == NULL) {
            hb_log_error("barrier trace %s: %m", path);
            return HB_ERR_IO;
        }
        b->trace_t0 = hb_time_now_ns();
        fprintf(
            b->trace,
            "# hibard trace: node %" PRIu32 " nodes %" PRIu32 " protocol %s job %" PRIu32
            " epoch %" PRIu32 " first_coll %" PRIu64 " sync_base %" PRIu32 " n_sync %" PRIu32
            " t0_ns %" PRIu64 "\n",
            d->self, d->topo->n_nodes,
            hb_hier_proto_name(d->cfg->protocol == HB_CFG_PROTO_TREE ? HB_HIER_TREE : HB_HIER_SCMD),
            0u, d->epoch, (uint64_t)0, 0u, (uint32_t)HBD_CLUSTER_NSYNC, b->trace_t0);
        fflush(b->trace);
    }
    b->cores = hbd_node_cores(d);
    b->poll_mode = poll_mode(d);
    b->ev_yield = evtimer_new(d->base, yield_cb, d);
    b->retry = hbd_timer_new(d, retry_cb, NULL);
    b->purge = hbd_timer_new(d, retry_cb, NULL);
    if (b->ev_yield == NULL || b->retry == NULL || b->purge == NULL)
        return HB_ERR_NOMEM;
    d->hwb_fd = -1;
    if (d->hwb != NULL) {
        rc = hb_hwb_fd(d->hwb, &d->hwb_fd);
        if (rc != 0) {
            hb_log_error("chassis barrier %s: no event-loop fd: %s", hb_hwb_name(d->hwb),
                         hb_status_str(rc));
            d->hwb_fd = -1;
            return rc;
        }
        d->ev_hwb = event_new(d->base, d->hwb_fd, EV_READ | EV_PERSIST, hwb_fd_cb, d);
        if (d->ev_hwb == NULL || event_add(d->ev_hwb, NULL) != 0)
            return HB_ERR_NOMEM;
    }
    hb_log_info("barrier engine: %s, role %s, chassis barrier %s",
                hb_cfg_protocol_name(d->cfg->protocol), hb_hier_role(B->h),
                d->hwb ? hb_hwb_name(d->hwb) : "none");
    return 0;
}

void hbd_barrier_fini(hbd_t *d)
{
    hbd_barrier_state_t *b = d->bar;
    if (b == NULL)
        return;
    for (hbd_bar_t *B = b->bars; B != NULL; B = B->next)
        while (B->reqs != NULL) {
            hbd_req_t *r = B->reqs;
            B->reqs = r->next;
            if (r->cb != NULL)
                r->cb(d, r->coll, HB_ERR_UNAVAIL, r->cb_arg);
            hbd_reply(r->conn, "err barrier %" PRIu64 " %d daemon shutting down", r->coll,
                      HB_ERR_UNAVAIL);
            hbd_reply_release(r->conn);
            free(r);
        }
    if (b->tib_conn != NULL) {
        hbd_reply_release(b->tib_conn);
        free(b->tib);
    }
    if (d->ev_hwb != NULL)
        event_free(d->ev_hwb);
    d->ev_hwb = NULL;
    if (b->ev_yield != NULL)
        event_free(b->ev_yield);
    hbd_timer_free(b->retry);
    hbd_timer_free(b->purge);
    while (b->bars != NULL)
        bar_free(d, b->bars);
    hb_topo_free(b->solo);
    free(b->recs);
    while (b->early != NULL) {
        hbd_hmsg_t *o = b->early;
        b->early = o->next;
        free(o);
    }
    if (b->trace != NULL)
        fclose(b->trace);
    free(b->acts);
    free(b);
    d->bar = NULL;
}
