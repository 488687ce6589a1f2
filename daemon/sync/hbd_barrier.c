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
 * One hier engine per daemon (job 0, epoch d->epoch). Events go through a small queue so
 * that actions which produce events (an hwbarrier round that completes at once, a send that
 * fails) are handled after the current step, never inside it.
 *
 * Chassis barriers: hier uses sync numbers 0..HBD_HIER_NSYNC-1; HBD_TIB_SYNC is kept for the
 * T_IB probe. The loop never blocks on one; it waits by doc/design.md section 6.1 without
 * leaving the loop. Yield stage: for the policy's yield time after an arrival, a zero timer
 * keeps the loop polling its sockets without sleeping, and each turn tests the pending rounds
 * and calls sched_yield (yield_cb). Sleep stage: then it arms the backend's fd, tests once
 * more and sleeps in epoll with everything else; the fd wakes it when a round may have ended
 * (scic: the board's interrupt; shm: a datagram from whoever ends one of our rounds while we
 * are armed). Arming only then means that a round that ends within the yield stage costs
 * nobody a syscall or a wake-up.
 */
#define HBD_HIER_NSYNC 8
#define HBD_TIB_SYNC (HB_HWB_NSYNC - 1)
#define HBD_EVQ 64

static void yield_arm(hbd_t *d);

typedef struct hbd_req {
    uint64_t coll;
    uint64_t t0;
    hbd_reply_t *conn;
    hbd_barrier_cb_t cb; /* instead of a reply to conn (hbd_barrier_start) */
    void *cb_arg;
    struct hbd_req *next;
} hbd_req_t;

typedef struct hbd_hwb_pend {
    int used;
    uint64_t coll;
} hbd_hwb_pend_t;

typedef struct hbd_barrier_state {
    hb_hier_t *h;
    hb_hier_act_t *acts;
    size_t max_acts;
    hb_hier_ev_t q[HBD_EVQ];
    unsigned q_head, q_len;
    int draining;
    hbd_req_t *reqs;
    uint32_t n_reqs;
    hbd_hwb_pend_t pend[HB_HWB_NSYNC];
    unsigned n_pend;
    uint64_t next_coll;
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
    /* HIBAR_TRACE_DIR: every event fed to hier and every outcome, one line each (below) */
    FILE *trace;
    uint64_t trace_t0;
} hbd_barrier_state_t;

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

/* hb_hier_step with the trace. */
static int step(hbd_t *d, const hb_hier_ev_t *ev, size_t *n_p)
{
    hbd_barrier_state_t *b = d->bar;
    hb_hier_rec_t r = {.coll_id = ev->coll_id, .peer = ev->from, .msg = ev->msg};
    char text[64];
    if (b->trace != NULL) {
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
    int rc = hb_hier_step(b->h, ev, b->acts, b->max_acts, n_p);
    if (b->trace == NULL)
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
        /* cannot happen with HBD_HIER_NSYNC collectives in flight; never lose one silently */
        hb_log_error("barrier event queue full; event %d for coll %" PRIu64 " dropped", ev->kind,
                     ev->coll_id);
        return;
    }
    b->q[(b->q_head + b->q_len++) % HBD_EVQ] = *ev;
}

static hbd_req_t *req_take(hbd_barrier_state_t *b, uint64_t coll)
{
    for (hbd_req_t **pp = &b->reqs; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->coll == coll) {
            hbd_req_t *r = *pp;
            *pp = r->next;
            b->n_reqs--;
            return r;
        }
    return NULL;
}

static void req_finish(hbd_t *d, uint64_t coll, int status)
{
    hbd_req_t *r = req_take(d->bar, coll);
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

static void exec_act(hbd_t *d, const hb_hier_act_t *a)
{
    hbd_barrier_state_t *b = d->bar;
    switch (a->kind) {
    case HB_HIER_ACT_SEND: {
        uint8_t pl[4];
        hbd_wire_put32(pl, (uint32_t)a->msg);
        hb_log_debug("coll %" PRIu64 ": %s: send %s to node %" PRIu32, a->coll_id,
                     a->step ? a->step : "?", hb_hier_msg_name(a->msg), a->to);
        if (hbd_net_send(d, a->to, HBD_WIRE_HIER, 0, a->coll_id, pl, sizeof(pl)) != 0) {
            hb_hier_ev_t ev = {.kind = HB_HIER_EV_PEER_LOST, .from = a->to};
            push(d, &ev);
        }
        break;
    }
    case HB_HIER_ACT_HWB_ARRIVE: {
        int rc = d->hwb ? hb_hwb_arrive(d->hwb, a->sync_no, a->mask) : HB_ERR_UNAVAIL;
        hb_log_debug("coll %" PRIu64 ": %s: chassis barrier sync %" PRIu32 " mask %#" PRIx32,
                     a->coll_id, a->step ? a->step : "?", a->sync_no, a->mask);
        if (rc == 0 && a->sync_no < HB_HWB_NSYNC) {
            b->yield_t0 = hb_time_now_ns();
            b->armed = 0;
            b->pend[a->sync_no].used = 1;
            b->pend[a->sync_no].coll = a->coll_id;
            b->n_pend++;
            d->st.hwb_rounds++;
        } else {
            hb_log_error("chassis barrier arrive (sync %" PRIu32 "): %s", a->sync_no,
                         hb_status_str(rc));
            hb_hier_ev_t ev = {.kind = HB_HIER_EV_HWB_DONE,
                               .coll_id = a->coll_id,
                               .sync_no = a->sync_no,
                               .status = rc ? rc : HB_ERR_INTERNAL};
            push(d, &ev);
        }
        break;
    }
    case HB_HIER_ACT_COMPLETE:
        req_finish(d, a->coll_id, 0);
        break;
    case HB_HIER_ACT_FAIL:
        req_finish(d, a->coll_id, a->status);
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
        hb_hier_ev_t ev = {
            .kind = HB_HIER_EV_HWB_DONE, .coll_id = b->pend[s].coll, .sync_no = s, .status = rc};
        push(d, &ev);
    }
}

static void tib_check(hbd_t *d);
static void tib_done(hbd_t *d, int rc);

/* Step the engine on every queued event, executing the actions in order. */
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
                hbd_net_peer_lost(d, ev.from, HB_ERR_PEER_LOST);
                b->draining = 1;
                continue;
            }
            size_t n = 0;
            int rc = step(d, &ev, &n);
            if (rc != 0) {
                hb_log_debug("hier refused event %d coll %" PRIu64 " from %" PRIu32 ": %s", ev.kind,
                             ev.coll_id, ev.from, hb_status_str(rc));
                if (ev.kind == HB_HIER_EV_ARRIVE)
                    req_finish(d, ev.coll_id, rc);
                continue;
            }
            if (ev.kind == HB_HIER_EV_ARRIVE && ev.coll_id >= b->next_coll)
                b->next_coll = ev.coll_id + 1;
            for (size_t i = 0; i < n; i++)
                exec_act(d, &b->acts[i]);
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
 * (cpu.reserved), or cores >= daemons + their running ranks (an emulated cluster's daemons all
 * share this host's cores) -- and yields between turns where cores are scarce. `poll` forces
 * one way (sleep: no poll stage at all). Chosen again at every barrier arrival.
 */
static int poll_mode(hbd_t *d)
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
    uint64_t busy = daemons * (1 + (uint64_t)d->jobs.n_local_ranks);
    return busy <= d->bar->cores ? HBD_POLL_SPIN : HBD_POLL_YIELD;
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

/* A request for barrier coll_id (answered to conn, or through cb): queued, the deadline check
 * armed, and this node arrives. 0 or NOMEM. */
static int req_arrive(hbd_t *d, uint64_t coll_id, hbd_reply_t *conn, hbd_barrier_cb_t cb, void *arg)
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
    r->next = b->reqs;
    b->reqs = r;
    b->n_reqs++;
    b->active_t0 = r->t0;
    b->poll_mode = poll_mode(d);
    hbd_cron_arm(d);
    hb_hier_ev_t ev = {.kind = HB_HIER_EV_ARRIVE, .job = 0, .coll_id = coll_id, .epoch = d->epoch};
    push(d, &ev);
    drain(d);
    return 0;
}

void hbd_barrier_request(hbd_t *d, hbd_reply_t *conn, uint64_t coll_id)
{
    hbd_barrier_state_t *b = d->bar;
    if (d->lost) {
        hbd_reply(conn, "err barrier %" PRIu64 " %d %s", coll_id, HB_ERR_PEER_LOST,
                  hb_status_str(HB_ERR_PEER_LOST));
        d->st.barriers_failed++;
        return;
    }
    if (!d->ready) {
        hbd_reply(conn, "err barrier %" PRIu64 " %d %s (not every neighbour linked yet)", coll_id,
                  HB_ERR_NOT_INIT, hb_status_str(HB_ERR_NOT_INIT));
        return;
    }
    for (hbd_req_t *r = b->reqs; r != NULL; r = r->next)
        if (r->coll == coll_id) {
            hbd_reply(conn, "err barrier %" PRIu64 " %d %s", coll_id, HB_ERR_BUSY,
                      hb_status_str(HB_ERR_BUSY));
            return;
        }
    if (req_arrive(d, coll_id, conn, NULL, NULL) != 0)
        hbd_reply(conn, "err barrier %" PRIu64 " %d %s", coll_id, HB_ERR_NOMEM,
                  hb_status_str(HB_ERR_NOMEM));
}

int hbd_barrier_start(hbd_t *d, uint64_t coll_id, hbd_barrier_cb_t cb, void *arg)
{
    hbd_barrier_state_t *b = d->bar;
    if (b == NULL || cb == NULL)
        return HB_ERR_INVAL;
    if (d->lost)
        return HB_ERR_PEER_LOST;
    if (!d->ready)
        return HB_ERR_NOT_INIT;
    for (hbd_req_t *r = b->reqs; r != NULL; r = r->next)
        if (r->coll == coll_id)
            return HB_ERR_BUSY;
    return req_arrive(d, coll_id, NULL, cb, arg);
}

/* A HIER frame from a neighbour. */
static void on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    if (d->bar == NULL || d->lost)
        return;
    hb_hier_ev_t ev = {.kind = HB_HIER_EV_MSG,
                       .job = m->job,
                       .coll_id = m->coll_id,
                       .epoch = m->epoch,
                       .from = m->src,
                       .msg = hbd_wire_get32(m->payload),
                       .data = m->len > 4 ? m->payload + 4 : NULL,
                       .len = m->len - 4};
    d->bar->active_t0 = hb_time_now_ns();
    push(d, &ev);
    drain(d);
}

/* The cluster's first lost node: fail every barrier in flight with status. */
static void on_lost(hbd_t *d, uint32_t lost, int status, int first)
{
    hbd_barrier_state_t *b = d->bar;
    if (b == NULL || !first)
        return;
    hb_hier_ev_t ev = {.kind = HB_HIER_EV_PEER_LOST, .from = lost};
    size_t n = 0;
    /* directly, not through the queue: this is what a queued PEER_LOST turns into */
    if (lost < d->topo->n_nodes && step(d, &ev, &n) == 0)
        for (size_t i = 0; i < n; i++)
            exec_act(d, &b->acts[i]);
    /* the cluster is broken: chassis barriers still pending will never be waited for again
     * (their sync numbers stay reserved in hier, which refuses new barriers anyway) */
    memset(b->pend, 0, sizeof(b->pend));
    b->n_pend = 0;
    /* whatever hier did not fail (not yet arrived there) fails here */
    while (b->reqs != NULL)
        req_finish(d, b->reqs->coll, status);
    if (b->tib_conn != NULL) {
        hbd_reply(b->tib_conn, "err tib %d %s", status, hb_status_str(status));
        hbd_reply_release(b->tib_conn);
        b->tib_conn = NULL;
        free(b->tib);
        b->tib = NULL;
    }
    drain(d);
}

/* The cron's tick (hbd_cron.h): barrier timeouts, a chassis round's test; 1 while barriers
 * are in flight. */
static int tick(hbd_t *d, uint64_t now)
{
    hbd_barrier_state_t *b = d->bar;
    uint32_t to_ms = d->cfg->barrier_timeout_ms;
    if (b == NULL)
        return 0;
    if (to_ms > 0) {
        for (hbd_req_t *r = b->reqs; r != NULL; r = r->next)
            if (now - r->t0 > (uint64_t)to_ms * 1000000ull) {
                hb_hier_ev_t ev = {.kind = HB_HIER_EV_TIMEOUT, .coll_id = r->coll};
                hb_log_warn("barrier %" PRIu64 " timed out after %" PRIu32 " ms", r->coll, to_ms);
                r->t0 = UINT64_MAX / 2; /* once */
                push(d, &ev);
            }
    }
    if (b->n_pend > 0)
        hwb_check(d);
    drain(d);
    return hbd_barrier_in_flight(d) > 0;
}

uint32_t hbd_barrier_in_flight(const hbd_t *d)
{
    return d->bar ? d->bar->n_reqs : 0;
}

void hbd_barrier_drops(const hbd_t *d, uint64_t *dropped_p, uint64_t *late_p)
{
    hb_hier_stats_t s;
    memset(&s, 0, sizeof(s));
    if (d->bar != NULL)
        hb_hier_stats(d->bar->h, &s);
    *dropped_p = s.drop_mismatch + s.drop_role + s.drop_dup + s.drop_order + s.drop_stale +
                 s.drop_window + s.bad_hwb;
    *late_p = s.late;
}

uint64_t hbd_barrier_next_coll(const hbd_t *d)
{
    return d->bar ? d->bar->next_coll : 0;
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
    hb_hier_cfg_t hc;
    hbd_barrier_state_t *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return HB_ERR_NOMEM;
    d->bar = b;
    hb_hier_cfg_init(&hc);
    hc.protocol = d->cfg->protocol == HB_CFG_PROTO_TREE ? HB_HIER_TREE : HB_HIER_SCMD;
    hc.job = 0;
    hc.epoch = d->epoch;
    hc.sync_base = 0;
    hc.n_sync = HBD_HIER_NSYNC;
    int rc = hb_hier_create(d->topo, d->self, &hc, &b->h);
    if (rc != 0) {
        hb_log_error("cannot create the %s barrier engine: %s",
                     hb_cfg_protocol_name(d->cfg->protocol), hb_status_str(rc));
        return rc;
    }
    b->max_acts = hb_hier_max_actions(b->h);
    hbd_hooks_frame(d, HBD_WIRE_HIER, on_msg, NULL);
    if ((rc = hbd_hooks_lost(d, on_lost, 20)) != 0 || (rc = hbd_hooks_cron(d, tick)) != 0)
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
        fprintf(b->trace,
                "# hibard trace: node %" PRIu32 " nodes %" PRIu32 " protocol %s job %" PRIu32
                " epoch %" PRIu32 " first_coll %" PRIu64 " sync_base %" PRIu32 " n_sync %" PRIu32
                " t0_ns %" PRIu64 "\n",
                d->self, d->topo->n_nodes, hb_hier_proto_name(hc.protocol), hc.job, hc.epoch,
                hc.first_coll, hc.sync_base, hc.n_sync, b->trace_t0);
        fflush(b->trace);
    }
    b->cores = d->cfg->cpu_count;
    if (b->cores == 0) {
        cpu_set_t set;
        b->cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? (uint32_t)CPU_COUNT(&set) : 1;
    }
    b->poll_mode = poll_mode(d);
    b->acts = calloc(b->max_acts, sizeof(*b->acts));
    b->ev_yield = evtimer_new(d->base, yield_cb, d);
    if (b->acts == NULL || b->ev_yield == NULL)
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
    hb_log_info("barrier engine: %s, role %s, chassis barrier %s", hb_hier_proto_name(hc.protocol),
                hb_hier_role(b->h), d->hwb ? hb_hwb_name(d->hwb) : "none");
    return 0;
}

void hbd_barrier_fini(hbd_t *d)
{
    hbd_barrier_state_t *b = d->bar;
    if (b == NULL)
        return;
    while (b->reqs != NULL) {
        hbd_req_t *r = b->reqs;
        b->reqs = r->next;
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
    hb_hier_destroy(b->h);
    if (b->trace != NULL)
        fclose(b->trace);
    free(b->acts);
    free(b);
    d->bar = NULL;
}
