/* hbd_relay.c: launch forwarding: hibar-run hands a job to its own node's daemon, which runs it on
 * every node over the daemons' ZeroMQ links and streams the output back. */
#include "hb_config.h"
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hb_log.h"
#include "hb_time.h"
#include "hbd_hooks.h"
#include "hbd_barrier.h"
#include "hwb.h"
#include "hbd_cron.h"
#include "hbd_launch.h"
#include "hbd_net.h"
#include "hbd_relay.h"
#include "hbd_route.h"
#include "hbd_slot.h"
#include "hb_status.h"

/*
 * "run SPEC" on the control socket (hibar-run) makes this daemon the job's origin. It loads the
 * spec (the checks of "launch"), asks the cluster's root daemon for the job's slot (ALLOC: its
 * number and chassis-barrier sync numbers, hbd_slot.h; the root answers SLOT at once), adds
 * the slot to the spec, sends it in JOB SPEC chunks to every other node of the job and starts
 * its own ranks if it has any. The job's nodes are the ones its map names: the other nodes of
 * the cluster hear nothing of it (but forward its frames when they lie on the tree path).
 * Every node of the job, origin included, starts its part through the local launcher exactly
 * as a "launch SPEC" on a control connection would: one end of a socketpair becomes the
 * command's reply handle (hbd_reply_fd_new), so hbd_launch.c is untouched and its lines
 * (hbd_launch.c's protocol) arrive on the other end. Remote nodes send them back in OUT
 * frames, then END when their part ended; once every node of the job ended, the origin gives
 * the slot back (FREE). JOB frames go hop by hop along the chassis data tree, like direct
 * modex (every hop is a link the daemons keep anyway), through a per-hop FIFO that keeps their
 * order.
 *
 * The origin writes to hibar-run, one line each:
 *   <node> <launcher line>        ok launch, o, p, a, x, err, done (hbd_launch.c)
 *   <node> end                    that node's part ended; nothing more comes from it
 *   <node> lost <text>            that node's daemon died or cannot be reached
 *   err <st> <text>               the job got no slot (it never started anywhere)
 * and closes the connection once every node of the job ended.
 * hibar-run may send "ping" (the origin answers "<origin> pong": hibar-run's check that the
 * daemon's loop runs) and "kill": the origin kills its part and sends KILL to every node. If
 * hibar-run goes away the job is killed everywhere. A lost node (hbd_net_peer_lost, on every
 * daemon through the failure flood) kills the job's part on every daemon; the origin reports
 * the node lost and gives the others HBD_RELAY_LOST_WAIT_MS to report their end, after which
 * they are reported lost too: never a hang.
 *
 * Output flow control (hibar-run or its reader slower than the ranks): the origin stops
 * reading its own part while more than HBD_RELAY_RUN_MAX bytes wait for hibar-run, until that
 * is down to HBD_RELAY_RUN_LOW. Every other node may have at most HBD_RELAY_OUT_WINDOW bytes
 * of OUT data that the origin has not given back as CREDIT; it stops reading its part at the
 * window. The origin gives the bytes of each OUT back at once while hibar-run keeps up, and
 * only once it has caught up otherwise. A part that is not read makes its launcher stop
 * reading the ranks' pipes (hbd_launch.c), and the ranks block in write(2), as under a slow
 * terminal. So what the origin queues for hibar-run stays under HBD_RELAY_RUN_MAX + the job's
 * nodes x (HBD_RELAY_OUT_WINDOW + one frame), whatever the ranks write, and no line is lost.
 * A stopped job's output stays under the same control while hibar-run reads it; once hibar-run
 * is gone the origin drops the lines and gives their bytes back at once, and a node whose
 * origin is lost reads its part to the end without sending it.
 *
 * The relay's record of a job (rl_job_t) is the job object's relay part (hbd_job.h): made with
 * the object by "run" at the origin (also for a job with no rank here) or by the first SPEC chunk
 * elsewhere, found through the registry by id (and origin) or job number, and let go (job_free,
 * then hbd_job_release) at the origin's finish or a member's CLEAN; the job's nodes and member
 * set are the object's.
 */
#define HBD_RELAY_LOST_WAIT_MS 5000    /* after a loss, how long the other nodes have to report */
#define HBD_RELAY_REDRAIN_MS 1000      /* after a loss, DRAIN again this often until CLEAN */
#define HBD_RELAY_QUEUE_MAX (8u << 20) /* queued for the links: output reading pauses above */
#define HBD_RELAY_RUN_MAX (1u << 20)   /* origin: queued for hibar-run: its own part paused */
#define HBD_RELAY_RUN_LOW (256u << 10) /* ... and read again at or below */
#define HBD_RELAY_OUT_WINDOW (512u << 10) /* a node's OUT bytes not yet given back (CREDIT) */
#define HBD_RELAY_JOB_NSYNC 1             /* sync numbers a job gets: 11 jobs share a chassis */
#define HBD_RELAY_MAX_JOBS 64             /* relayed jobs one daemon takes part in at once */

/* The relay's part of a job (the job object's relay, hbd_job.h): from hibar-run's "run" at the
 * origin, or the first JOB SPEC chunk elsewhere, until job_free. */
typedef struct rl_job {
    hbd_t *d;
    hbd_job_t *job; /* the job object that holds this record */
    uint64_t id;
    uint32_t origin;
    /* spec reassembly (other nodes) */
    uint8_t *spec;
    uint64_t spec_len;
    uint32_t spec_seq;
    /* this node's part: our end of the socketpair whose other end the launcher has */
    struct bufferevent *part;
    uint8_t obuf[HBD_WIRE_JOB_MAX_DATA]; /* lines not yet sent to the origin */
    uint32_t olen, out_seq;
    int origin_lost;
    int held;          /* origin: hibar-run is behind, its own part is not read */
    uint64_t inflight; /* other nodes: OUT bytes the origin has not given back yet */
    int ending;        /* the part is at its end: read the rest whatever the window */
    /* origin only */
    struct bufferevent *run; /* hibar-run */
    int finishing;           /* every node ended: closing hibar-run's connection */
    int killed;
    uint32_t size; /* ranks */
    char *raw;     /* the spec as hibar-run wrote it, until the slot comes */
    size_t raw_len;
    char *spec_out;      /* the spec with its slot, until every other node was heard from (sent */
    size_t spec_out_len; /* again after a loss to those that were not) */
    uint32_t spec_unheard;
    uint32_t jobno;     /* origin: the slot it holds (0: not given yet, or given back) */
    int end_wait;       /* the part ended: the engine waits for its drain (then CLEAN) */
    struct rl_cnt *cnt; /* origin: [n_nodes] each node's chassis-round counts (END), verdict */
    int drain_sent;     /* origin: the verdicts went out */
    uint32_t clean_wait;
    uint64_t drain_ns;
    uint64_t redrain_ns; /* origin: a node was lost while verdicts were out: DRAIN again then */
    uint8_t *ended;     /* [n_nodes] */
    uint32_t *out_next; /* origin: [n_nodes] the next OUT or END seq it takes */
    uint32_t *acked;    /* origin: [n_nodes] the seq its last CREDIT acknowledged up to */
    uint64_t *owed;     /* origin: [n_nodes] OUT bytes received, not yet given back */
    uint32_t n_ended;
    uint32_t lost_node;
    uint64_t lost_ns; /* a node was lost: the others have until then + LOST_WAIT */
} rl_job_t;

/* A node's chassis-round counts on the job's sync numbers (END), and the origin's verdict. */
typedef struct rl_cnt {
    uint32_t base, n;
    uint32_t c[16];
    uint64_t verdict; /* the sync numbers it arrives at once more (DRAIN's arg) */
    int unclean;      /* its verdict went out (DRAIN, or the drain here), no CLEAN yet */
} rl_cnt_t;

/* A member's OUT or END frame that the origin has not acknowledged yet (by CREDIT): the relay's
 * send log, outside the job's record (which may go first), sent again after a loss. */
typedef struct rl_sent {
    struct rl_sent *next;
    uint64_t id;
    hbd_wire_job_t x; /* its header: kind, seq, dest (the origin), arg */
    uint32_t dlen;
    uint8_t data[];
} rl_sent_t;

typedef struct rl_out {
    uint32_t to, len;
    uint64_t job;
    struct rl_out *next;
    uint8_t pl[]; /* payload */
} rl_out_t;

/* A slot request waiting for the root's census (the root changed, or started). */
typedef struct rl_alloc {
    uint64_t id;
    uint32_t src, size;
    uint8_t *member; /* [n_nodes] */
    struct rl_alloc *next;
} rl_alloc_t;

/* The relay's state in the daemon context (d->relay). */
struct hbd_relay {
    hbd_slots_t slots; /* the cluster's job slots (on the root only) */
    int is_root;
    /* root: the census that tells a new root (or a restarted one) the running jobs' slots */
    int census_done;       /* every live node answered (or the deadline passed) */
    uint8_t *census_wait;  /* [n_nodes] asked, no answer yet; NULL: not started */
    uint64_t census_until; /* its deadline */
    rl_alloc_t *allocq;    /* requests waiting for it, oldest first */
    rl_out_t *outq;
    uint64_t outq_bytes, drops;
    rl_sent_t *sent, **sent_tail; /* the send log, oldest first */
    uint64_t resent;              /* frames of it sent again after losses */
    hbd_timer_t *tick;
    int reading_paused;
};
typedef struct hbd_relay rl_state_t;

static void tick_arm(hbd_t *d, int fast);
static void part_read_cb(struct bufferevent *bev, void *arg);
static void alloc_request(hbd_t *d, uint64_t id, uint32_t src, uint32_t size,
                          const uint8_t *member);
static void census_answer(hbd_t *d, uint32_t root);
static void census_hold(hbd_t *d, uint32_t src, uint32_t k, const uint8_t *recs);

uint64_t hbd_relay_drops(const hbd_t *d)
{
    return d->relay != NULL ? d->relay->drops : 0;
}

uint64_t hbd_relay_resent(const hbd_t *d)
{
    return d->relay != NULL ? d->relay->resent : 0;
}

uint32_t hbd_relay_unacked(const hbd_t *d)
{
    uint32_t n = 0;
    for (const rl_sent_t *e = d->relay != NULL ? d->relay->sent : NULL; e != NULL; e = e->next)
        n++;
    return n;
}

uint32_t hbd_relay_n_jobs(const hbd_t *d)
{
    uint32_t n = 0;
    for (hbd_job_t *j = d->jobs.head; j != NULL; j = j->next)
        n += j->relay != NULL;
    return n;
}

uint32_t hbd_relay_draining(const hbd_t *d)
{
    uint32_t n = 0;
    for (hbd_job_t *j = d->jobs.head; j != NULL; j = j->next)
        n += j->relay != NULL && j->relay->end_wait;
    return n;
}

/* The relay's record of job id from origin, or NULL. */
static rl_job_t *job_find(hbd_t *d, uint64_t id, uint32_t origin)
{
    hbd_job_t *j = hbd_job_get(d, id);
    return j != NULL && j->relay != NULL && j->relay->origin == origin ? j->relay : NULL;
}

/* A record for job id from origin, held by its job object (found, or made). NULL: no memory. */
static rl_job_t *job_new(hbd_t *d, uint64_t id, uint32_t origin)
{
    hbd_job_t *j = NULL;
    rl_job_t *J = calloc(1, sizeof(*J));
    if (J == NULL || hbd_job_open(d, id, &j) != 0) {
        free(J);
        return NULL;
    }
    J->d = d;
    J->job = j;
    J->id = id;
    J->origin = origin;
    j->relay = J;
    return J;
}

/* The record goes, then its job object unless another part (the launcher's) still holds it. */
static void job_free(rl_job_t *J)
{
    hbd_job_t *j = J->job;
    if (J->part != NULL)
        bufferevent_free(J->part); /* the launcher sees EOF: it stops the job's ranks */
    if (J->run != NULL)
        bufferevent_free(J->run);
    free(J->spec);
    free(J->ended);
    free(J->cnt);
    free(J->raw);
    free(J->spec_out);
    free(J->out_next);
    free(J->acked);
    free(J->owed);
    free(J);
    j->relay = NULL;
    hbd_job_release(j);
}

/* The relay's record of the next job of the registry from j on (j included), or NULL. */
static rl_job_t *job_next(hbd_job_t *j)
{
    while (j != NULL && j->relay == NULL)
        j = j->next;
    return j != NULL ? j->relay : NULL;
}

/* ---- frames to other daemons ---- */

/* May this node's part be read now? Not while the links are behind, the origin's hibar-run is
 * (origin), or the origin has not given back a window's worth of OUT (other nodes); a part
 * at its end, or whose origin is lost (its lines go nowhere), always is. */
static int part_may_read(const rl_job_t *J)
{
    if (J->origin_lost || J->ending)
        return 1;
    return !J->d->relay->reading_paused && !J->held && J->inflight < HBD_RELAY_OUT_WINDOW;
}

/* Read this node's part again if it may be (after a pause), or stop reading it. */
static void part_reading(rl_job_t *J)
{
    if (J->part == NULL)
        return;
    if (!part_may_read(J)) {
        bufferevent_disable(J->part, EV_READ);
        return;
    }
    bufferevent_enable(J->part, EV_READ);
    part_read_cb(J->part, J); /* what arrived meanwhile */
}

/* Send a JOB frame toward dest, or queue it behind what already waits for that hop. */
static int job_send(hbd_t *d, uint64_t id, hbd_wire_job_t *x, const void *data, uint32_t dlen)
{
    rl_state_t *R = d->relay;
    uint8_t pl[HBD_WIRE_JOB_MAX_PAYLOAD];
    uint32_t len = HBD_WIRE_JOB_HDR + dlen;
    x->src = x->src == UINT32_MAX ? d->self : x->src;
    hbd_wire_job_pack(x, pl);
    if (dlen > 0)
        memcpy(pl + HBD_WIRE_JOB_HDR, data, dlen);
    uint32_t to = hbd_route_next_hop(d, x->dest);
    if (to == HB_TOPO_NONE || to >= d->topo->n_nodes)
        return HB_ERR_NOT_FOUND;
    if (hbd_node_lost(d, x->dest))
        return HB_ERR_PEER_LOST;
    int queued = 0;
    for (rl_out_t *o = R->outq; o != NULL && !queued; o = o->next)
        queued = o->to == to;
    /* a hop of the live tree not linked yet (a stand-in Center after a loss): linked now, the
     * frame waits for it in the queue */
    int lk = hbd_net_peer_up(d, to) ? 0 : hbd_net_link(d, to);
    if (lk != 0 && lk != HB_ERR_WOULD_BLOCK)
        return lk;
    int rc =
        queued || lk != 0 ? HB_ERR_WOULD_BLOCK : hbd_net_send(d, to, HBD_WIRE_JOB, 0, id, pl, len);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    rl_out_t *o = malloc(sizeof(*o) + len), **pp = &R->outq;
    if (o == NULL)
        return HB_ERR_NOMEM;
    o->to = to;
    o->len = len;
    o->job = id;
    o->next = NULL;
    memcpy(o->pl, pl, len);
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = o;
    R->outq_bytes += len;
    if (R->outq_bytes > HBD_RELAY_QUEUE_MAX && !R->reading_paused) {
        /* the links are behind: stop reading the ranks' output until they catch up */
        R->reading_paused = 1;
        for (rl_job_t *j = job_next(d->jobs.head); j != NULL; j = job_next(j->job->next))
            if (j->part != NULL)
                bufferevent_disable(j->part, EV_READ);
    }
    tick_arm(d, 1);
    return 0;
}

static void send_simple(hbd_t *d, rl_job_t *J, uint32_t dest, uint8_t kind, uint64_t arg)
{
    hbd_wire_job_t x = {.kind = kind, .src = UINT32_MAX, .dest = dest, .arg = arg};
    int rc = job_send(d, J->id, &x, NULL, 0);
    if (rc != 0 && !d->lost)
        hb_log_warn("job %" PRIu64 ": JOB frame for node %" PRIu32 " not sent: %s", J->id, dest,
                    hb_status_str(rc));
}

/* ---- the origin's stream to hibar-run ---- */

static void run_printf(rl_job_t *J, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_printf(rl_job_t *J, const char *fmt, ...)
{
    va_list ap;
    if (J->run == NULL)
        return;
    va_start(ap, fmt);
    evbuffer_add_vprintf(bufferevent_get_output(J->run), fmt, ap);
    va_end(ap);
}

/* Origin: CREDIT to node n: the frames it took from n so far (seq), and the OUT bytes it gives
 * back (arg). */
static void send_credit(hbd_t *d, uint64_t id, uint32_t n, uint32_t seq, uint64_t bytes)
{
    hbd_wire_job_t x = {
        .kind = HBD_WIRE_JOB_CREDIT, .src = UINT32_MAX, .dest = n, .seq = seq, .arg = bytes};
    int rc = job_send(d, id, &x, NULL, 0);
    if (rc != 0 && !d->lost)
        hb_log_warn("job %" PRIu64 ": CREDIT for node %" PRIu32 " not sent: %s", id, n,
                    hb_status_str(rc));
}

/* Origin: give node n back the OUT bytes it is owed and acknowledge its frames (all of them,
 * or once they make a quarter window). */
static void credit(rl_job_t *J, uint32_t n, int all)
{
    if (J->acked[n] == J->out_next[n] || (!all && J->owed[n] < HBD_RELAY_OUT_WINDOW / 4))
        return;
    send_credit(J->d, J->id, n, J->out_next[n], J->owed[n]);
    J->acked[n] = J->out_next[n];
    J->owed[n] = 0;
}

/* Origin: hibar-run is behind (on), or has caught up: its own part and the credits wait. */
static void run_hold(rl_job_t *J, int on)
{
    if (J->held == on)
        return;
    J->held = on;
    for (uint32_t n = 0; !on && J->ended != NULL && n < J->d->topo->n_nodes; n++)
        if (!J->ended[n])
            credit(J, n, 1);
    part_reading(J); /* last: what it reads may hold the output again */
}

static void run_line(rl_job_t *J, uint32_t node, const char *line, size_t n)
{
    if (J->run == NULL)
        return;
    struct evbuffer *out = bufferevent_get_output(J->run);
    evbuffer_add_printf(out, "%" PRIu32 " ", node);
    evbuffer_add(out, line, n);
    evbuffer_add(out, "\n", 1);
    if (evbuffer_get_length(out) > HBD_RELAY_RUN_MAX)
        run_hold(J, 1); /* run_write_cb lets it go */
}

static void relay_kill(rl_job_t *J, const char *why)
{
    hbd_t *d = J->d;
    if (J->killed)
        return;
    J->killed = 1;
    if (J->run == NULL)
        run_hold(J, 0); /* its lines go nowhere now: nothing to wait for */
    hb_log_info("job %" PRIu64 ": stopping it on every node (%s)", J->id, why);
    for (uint32_t n = 0, shown = 0; n < d->topo->n_nodes && shown < 16; n++)
        if (J->job->member[n] && !J->ended[n] && ++shown) /* the first 16 of them */
            hb_log_info("job %" PRIu64 ": node %s had not reported its end%s", J->id,
                        d->cfg->nodes[n].name,
                        n == d->self ? (J->part != NULL ? " (its part here still runs)" : "") : "");
    if (J->part != NULL)
        evbuffer_add(bufferevent_get_output(J->part), "kill\n", 5);
    for (uint32_t n = 0; n < d->topo->n_nodes; n++)
        if (n != d->self && J->job->member[n] && !J->ended[n])
            send_simple(d, J, n, HBD_WIRE_JOB_KILL, 0);
}

/* The root daemon's node: the Center of the live tree's root chassis (hbd_route_root). */
static uint32_t root_node(const hbd_t *d)
{
    return hbd_route_root(d);
}

/* The job ended everywhere (or never started): its slot goes back to the root. */
static void slot_give_back(rl_job_t *J)
{
    hbd_t *d = J->d;
    if (J->jobno == 0)
        return;
    if (d->relay->is_root)
        hbd_slots_free(&d->relay->slots, d->topo, J->jobno);
    else
        send_simple(d, J, root_node(d), HBD_WIRE_JOB_FREE, J->jobno);
    J->jobno = 0;
}

static void finish(rl_job_t *J)
{
    if (J->finishing)
        return;
    J->finishing = 1;
    slot_give_back(J);
    hb_log_info("job %" PRIu64 ": ended on every node", J->id);
    if (J->run == NULL || evbuffer_get_length(bufferevent_get_output(J->run)) == 0) {
        job_free(J);
        return;
    }
    bufferevent_disable(J->run, EV_READ); /* freed by run_write_cb once the rest is out */
}

static void send_drain(rl_job_t *J);

/* Every node of the job ended: the sync numbers are cleaned, then finish. */
static void check_done(rl_job_t *J)
{
    if (J->n_ended < J->job->n_nodes || J->finishing)
        return;
    if (!J->drain_sent) {
        send_drain(J);
        if (J->finishing)
            return;
    }
    /* with a node lost too: its chassis mates' rounds with it ended (PEER_LOST), and the
     * live members' verdicts are waited for, so the slot goes back clean (a new job on those
     * chassis would find the sync number busy) */
    if (J->clean_wait == 0)
        finish(J);
}

static void node_ended(rl_job_t *J, uint32_t node)
{
    if (J->ended[node] || !J->job->member[node])
        return;
    J->ended[node] = 1;
    J->n_ended++;
    run_printf(J, "%" PRIu32 " end\n", node);
    check_done(J);
}

/* Node `node` of the job reported clean sync numbers (a CLEAN twice counts once: DRAIN is sent
 * again after a loss), or was lost with its verdict out. J may be freed. */
static void node_clean(rl_job_t *J, uint32_t node)
{
    if (J->cnt == NULL || node >= J->d->topo->n_nodes || !J->cnt[node].unclean)
        return;
    J->cnt[node].unclean = 0;
    if (J->clean_wait > 0 && --J->clean_wait == 0)
        check_done(J);
}

/* After a loss, the verdicts that have no CLEAN yet go out again: a DRAIN or a CLEAN may have
 * died inside a daemon on the way. Both ends take a repeat as nothing new: the engine arrives
 * once per verdict (hbd_barrier_job_drain), a node whose engine went answers CLEAN again. */
static void drain_again(rl_job_t *J)
{
    hbd_t *d = J->d;
    for (uint32_t m = 0; J->cnt != NULL && m < d->topo->n_nodes; m++)
        if (m != d->self && J->cnt[m].unclean && !hbd_node_lost(d, m)) {
            send_simple(d, J, m, HBD_WIRE_JOB_DRAIN, J->cnt[m].verdict);
            d->relay->resent++;
        }
    J->redrain_ns = hb_time_now_ns() + HBD_RELAY_REDRAIN_MS * 1000000ull;
}

/* The verdicts: per chassis and sync number the most rounds a member arrived at; a member at one
 * fewer arrives once more (hbd_barrier.h). Not in a chassis with a member whose counts did not
 * come (lost, or without an engine): every round there names that member, so an arrival once
 * more completes nothing. Its mates' rounds with it end by themselves: PEER_LOST once it is
 * seen dead, or aborted by its next incarnation (hwbarrier's liveness); a drain round begun
 * after a restart would wait for the new incarnation and cross its first round there. */
static void send_drain(rl_job_t *J)
{
    hbd_t *d = J->d;
    uint32_t n = d->topo->n_nodes;
    J->drain_sent = 1;
    J->drain_ns = hb_time_now_ns();
    if (J->cnt == NULL)
        return;
    for (uint32_t m = 0; m < n; m++) {
        const rl_cnt_t *cm = &J->cnt[m];
        if (!J->job->member[m] || cm->n == 0)
            continue;
        uint64_t bits = 0;
        uint32_t unknown = n;
        for (uint32_t o = 0; o < n && unknown == n; o++)
            if (J->job->member[o] && d->topo->nodes[o].chassis == d->topo->nodes[m].chassis &&
                (J->cnt[o].n != cm->n || J->cnt[o].base != cm->base))
                unknown = o;
        if (unknown != n)
            hb_log_info("job %" PRIu64 ": node %s does not clean its sync numbers: the counts of "
                        "its chassis mate %s did not come",
                        J->id, d->cfg->nodes[m].name, d->cfg->nodes[unknown].name);
        for (uint32_t k = 0; k < cm->n && unknown == n; k++) {
            uint32_t most = cm->c[k];
            for (uint32_t o = 0; o < n; o++)
                if (J->job->member[o] && J->cnt[o].n == cm->n && J->cnt[o].base == cm->base &&
                    d->topo->nodes[o].chassis == d->topo->nodes[m].chassis && J->cnt[o].c[k] > most)
                    most = J->cnt[o].c[k];
            if (most > cm->c[k])
                bits |= 1ull << (cm->base + k);
        }
        if (bits != 0)
            hb_log_info("job %" PRIu64 ": node %s arrives once more at sync numbers %#" PRIx64
                        " to clean them",
                        J->id, d->cfg->nodes[m].name, bits);
        if (m == d->self && !J->end_wait)
            continue; /* its engine here is gone already */
        J->clean_wait++;
        J->cnt[m].verdict = bits;
        J->cnt[m].unclean = 1;
        if (m == d->self)
            hbd_barrier_job_drain(d, J->job->jobno, bits);
        else
            send_simple(d, J, m, HBD_WIRE_JOB_DRAIN, bits);
    }
    tick_arm(d, 1);
}

/* ---- this node's part ---- */

/*
 * OUT and END go to the origin hop by hop; a daemon on the way that dies takes the frames it
 * held with it. So a member keeps each in the relay's send log until the origin's CREDIT says
 * it took it (CREDIT's seq: the frames taken so far, in order), and after a lost node sends
 * what is in the log again, on the tree of the live nodes. The origin takes each seq once, in
 * order: a frame it took already gets its last CREDIT again (that one may have been lost too),
 * and it sends every member its last CREDIT again after a loss. What it will not take any
 * more (the job over, or that node's part ended) gets CREDIT with seq UINT32_MAX: the member
 * forgets the job's frames. The log holds at most the window (what CREDIT did not give back
 * yet) and an END per job.
 */

/* The send log's tail again, after entries left it. */
static void sent_retail(rl_state_t *R)
{
    R->sent_tail = &R->sent;
    while (*R->sent_tail != NULL)
        R->sent_tail = &(*R->sent_tail)->next;
}

/* Does the send log hold frames of job id for origin? (its part here ran) */
static int sent_has(const hbd_t *d, uint64_t id, uint32_t origin)
{
    for (const rl_sent_t *e = d->relay->sent; e != NULL; e = e->next)
        if (e->id == id && e->x.dest == origin)
            return 1;
    return 0;
}

/* Send a member's OUT or END to the origin, and keep it in the send log. */
static int member_send(rl_job_t *J, uint8_t kind, uint64_t arg, const void *data, uint32_t dlen)
{
    hbd_t *d = J->d;
    rl_state_t *R = d->relay;
    hbd_wire_job_t x = {
        .kind = kind, .src = UINT32_MAX, .dest = J->origin, .seq = J->out_seq++, .arg = arg};
    rl_sent_t *e = malloc(sizeof(*e) + dlen);
    if (e != NULL) {
        e->next = NULL;
        e->id = J->id;
        e->x = x;
        e->dlen = dlen;
        if (dlen > 0)
            memcpy(e->data, data, dlen);
        *R->sent_tail = e;
        R->sent_tail = &e->next;
    }
    if (kind == HBD_WIRE_JOB_OUT)
        J->inflight += dlen; /* given back by CREDIT, whether this send fails or not */
    return job_send(d, J->id, &x, data, dlen);
}

/* CREDIT from the origin of job id: its frames below seq are taken (UINT32_MAX: all of them, it
 * takes no more); their OUT bytes leave the window of the job's record J (if any). */
static void sent_acked(hbd_t *d, uint64_t id, uint32_t origin, uint32_t seq, rl_job_t *J)
{
    rl_state_t *R = d->relay;
    for (rl_sent_t **pp = &R->sent; *pp != NULL;) {
        rl_sent_t *e = *pp;
        if (e->id != id || e->x.dest != origin || (seq != UINT32_MAX && e->x.seq >= seq)) {
            pp = &e->next;
            continue;
        }
        if (J != NULL && e->x.kind == HBD_WIRE_JOB_OUT)
            J->inflight -= e->dlen < J->inflight ? e->dlen : J->inflight;
        *pp = e->next;
        free(e);
    }
    sent_retail(R);
}

/* A node was lost: the log's frames for a lost origin go; the others are sent again, in order,
 * on the tree of the live nodes. */
static void sent_again(hbd_t *d)
{
    rl_state_t *R = d->relay;
    for (rl_sent_t **pp = &R->sent; *pp != NULL;) {
        rl_sent_t *e = *pp;
        if (hbd_node_lost(d, e->x.dest)) {
            *pp = e->next;
            free(e);
            continue;
        }
        hbd_wire_job_t x = e->x;
        int rc = job_send(d, e->id, &x, e->data, e->dlen);
        R->resent++;
        if (rc != 0)
            hb_log_warn("job %" PRIu64 ": frame %" PRIu32 " for node %" PRIu32
                        " not sent again: %s",
                        e->id, e->x.seq, e->x.dest, hb_status_str(rc));
        pp = &e->next;
    }
    sent_retail(R);
}

static void out_flush(rl_job_t *J)
{
    if (J->olen == 0)
        return;
    int rc =
        J->origin_lost ? HB_ERR_PEER_LOST : member_send(J, HBD_WIRE_JOB_OUT, 0, J->obuf, J->olen);
    if (rc != 0 && !J->origin_lost && !J->d->lost)
        hb_log_warn("job %" PRIu64 ": output for node %" PRIu32 " not sent yet: %s", J->id,
                    J->origin, hb_status_str(rc));
    J->olen = 0;
}

/* One launcher line (without its newline). */
static void part_line(rl_job_t *J, const char *line, size_t n)
{
    if (J->origin == J->d->self) {
        run_line(J, J->d->self, line, n);
        return;
    }
    if (n + 1 > sizeof(J->obuf)) /* cannot happen: launcher lines are bounded */
        return;
    if (J->olen + n + 1 > sizeof(J->obuf))
        out_flush(J);
    memcpy(J->obuf + J->olen, line, n);
    J->obuf[J->olen + n] = '\n';
    J->olen += (uint32_t)n + 1;
}

/* The job's sync numbers are clean here (its engine went): tell the origin. J may be freed. */
static void part_clean(rl_job_t *J)
{
    J->end_wait = 0;
    if (J->origin == J->d->self) {
        node_clean(J, J->d->self);
        return;
    }
    if (!J->origin_lost)
        send_simple(J->d, J, J->origin, HBD_WIRE_JOB_CLEAN, 0);
    job_free(J);
}

/* The part ended: END with the engine's round counts; then its verdict, then CLEAN. */
static void part_end(rl_job_t *J)
{
    hbd_t *d = J->d;
    rl_cnt_t c = {0};
    J->ending = 1;
    part_read_cb(J->part, J);
    bufferevent_free(J->part);
    J->part = NULL;
    if (hbd_barrier_job_counts(d, J->job->jobno, &c.base, &c.n, c.c) != 0)
        c.n = 0;
    J->end_wait = hbd_barrier_job_busy(d, J->job->jobno);
    if (J->origin == d->self) {
        if (J->cnt != NULL)
            J->cnt[d->self] = c;
        node_ended(J, d->self); /* may free J (with no engine here) */
        return;
    }
    out_flush(J);
    if (!J->origin_lost) {
        int rc = member_send(J, HBD_WIRE_JOB_END, (uint64_t)c.base << 8 | c.n, c.c, c.n * 4);
        if (rc != 0 && !d->lost)
            hb_log_warn("job %" PRIu64 ": END for node %" PRIu32 " not sent yet: %s", J->id,
                        J->origin, hb_status_str(rc));
    }
    if (!J->end_wait || J->origin_lost)
        job_free(J);
    else
        tick_arm(d, 0);
}

static void part_read_cb(struct bufferevent *bev, void *arg)
{
    rl_job_t *J = arg;
    char *line;
    size_t n;
    while ((line = evbuffer_readln(bufferevent_get_input(bev), &n, EVBUFFER_EOL_LF)) != NULL) {
        if (strlen(line) == n) /* the launcher escapes its text: a NUL is never ours */
            part_line(J, line, n);
        free(line);
        if (!part_may_read(J)) { /* the rest waits for credit (or hibar-run) */
            bufferevent_disable(bev, EV_READ);
            break;
        }
    }
    if (J->origin != J->d->self)
        out_flush(J);
}

static void part_event_cb(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        part_end(arg);
}

/* Start this node's part of J from the spec file at path, as "launch path" would. */
static void part_start(rl_job_t *J, const char *path)
{
    hbd_t *d = J->d;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        hb_log_error("job %" PRIu64 ": socketpair: %m", J->id);
        goto err_out;
    }
    J->part = bufferevent_socket_new(d->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    if (J->part == NULL) {
        close(sv[0]);
        close(sv[1]);
        goto err_out;
    }
    hbd_reply_t *c = hbd_reply_fd_new(sv[1]);
    if (c == NULL) {
        bufferevent_free(J->part);
        J->part = NULL;
        goto err_out;
    }
    bufferevent_setcb(J->part, part_read_cb, NULL, part_event_cb, J);
    bufferevent_enable(J->part, EV_READ | EV_WRITE);
    if (!part_may_read(J))
        bufferevent_disable(J->part, EV_READ);
    hbd_reply_hold(c);
    hbd_launch_request(d, c, path);
    hbd_reply_close(c); /* refused: its "err" reply is in the pair, then EOF; else a no-op */
    hbd_reply_release(c);
    return;
err_out : {
    char line[128];
    int n = snprintf(line, sizeof(line), "err %d cannot start the job's part on this node",
                     HB_ERR_NOMEM);
    J->part = NULL;
    part_line(J, line, (size_t)n);
    if (J->origin == d->self) {
        node_ended(J, d->self);
    } else {
        out_flush(J);
        (void)member_send(J, HBD_WIRE_JOB_END, 0, NULL, 0);
        job_free(J);
    }
}
}

/* ---- hibar-run's connection (origin) ---- */

static void run_read_cb(struct bufferevent *bev, void *arg)
{
    rl_job_t *J = arg;
    char *line;
    size_t n;
    while ((line = evbuffer_readln(bufferevent_get_input(bev), &n, EVBUFFER_EOL_LF)) != NULL) {
        if (strcmp(line, "kill") == 0)
            relay_kill(J, "hibar-run asked");
        else if (strcmp(line, "ping") == 0)
            run_printf(J, "%" PRIu32 " pong\n", J->d->self);
        else
            run_printf(J, "%" PRIu32 " err %d unknown command\n", J->d->self, HB_ERR_INVAL);
        free(line);
    }
}

/* hibar-run took some lines and at most HBD_RELAY_RUN_LOW bytes wait (watermark). */
static void run_write_cb(struct bufferevent *bev, void *arg)
{
    rl_job_t *J = arg;
    if (J->finishing && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        job_free(J);
        return;
    }
    run_hold(J, 0);
}

static void run_event_cb(struct bufferevent *bev, short what, void *arg)
{
    rl_job_t *J = arg;
    (void)bev;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    bufferevent_free(J->run);
    J->run = NULL;
    if (J->finishing) {
        job_free(J);
        return;
    }
    relay_kill(J, "hibar-run went away");
}

/* Write a job's spec bytes into this daemon's run dir for its launcher: path filled; 0 or IO
 * (nothing left behind). */
static int spec_file(hbd_t *d, uint64_t id, const void *buf, size_t len, char *path, size_t cap)
{
    snprintf(path, cap, "%s/hibar-relay-%" PRIu64 "-%s.spec", d->run_dir, id, d->name);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t off = 0;
    while (fd >= 0 && off < len) {
        ssize_t w = write(fd, (const uint8_t *)buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (fd >= 0)
        close(fd);
    if (fd >= 0 && off == len)
        return 0;
    hb_log_error("job %" PRIu64 ": cannot write %s: %m", id, path);
    unlink(path);
    return HB_ERR_IO;
}

/* Origin: the spec to node i, in chunks. */
static int spec_send(rl_job_t *J, uint32_t i, const char *raw, size_t raw_len)
{
    int rc = 0;
    for (uint64_t off = 0, seq = 0; off < raw_len && rc == 0; off += HBD_WIRE_JOB_MAX_DATA, seq++) {
        uint32_t dl = (uint32_t)(raw_len - off < HBD_WIRE_JOB_MAX_DATA ? raw_len - off
                                                                       : HBD_WIRE_JOB_MAX_DATA);
        hbd_wire_job_t x = {.kind = HBD_WIRE_JOB_SPEC,
                            .src = UINT32_MAX,
                            .dest = i,
                            .seq = (uint32_t)seq,
                            .arg = raw_len,
                            .flags = off + dl == raw_len ? HBD_WIRE_JOB_F_LAST : 0};
        rc = job_send(J->d, J->id, &x, raw + off, dl);
    }
    return rc;
}

/* Origin: a node's first frame came (it has the spec); the spec goes once all did. */
static void spec_heard(rl_job_t *J)
{
    if (J->spec_unheard > 0 && --J->spec_unheard == 0) {
        free(J->spec_out);
        J->spec_out = NULL;
    }
}

/* The job got its slot: add it to the spec, send the spec to the job's other nodes, start this
 * node's part (if it has one). */
static void relay_start(rl_job_t *J, uint32_t jobno, uint32_t base, uint32_t n_sync)
{
    hbd_t *d = J->d;
    uint32_t n = d->topo->n_nodes;
    char line[96], path[400];
    int rc = 0;
    J->jobno = J->job->jobno = jobno;
    J->cnt = calloc(n, sizeof(*J->cnt));
    int ll = snprintf(line, sizeof(line), "slot %" PRIu32 " %" PRIu32 " %" PRIu32 "\n", jobno, base,
                      n_sync);
    char *raw = realloc(J->raw, J->raw_len + (size_t)ll);
    if (raw == NULL) {
        run_printf(J, "%" PRIu32 " err %d %s\n", d->self, HB_ERR_NOMEM,
                   hb_status_str(HB_ERR_NOMEM));
        finish(J);
        return;
    }
    memcpy(raw + J->raw_len, line, (size_t)ll);
    J->raw = NULL;
    size_t raw_len = J->raw_len + (size_t)ll;
    hb_log_info("job %" PRIu64 ": %" PRIu32 " ranks on %" PRIu32 " nodes, job number %" PRIu32
                ", sync %" PRIu32 "+%" PRIu32 ": forwarding its spec (%zu bytes)",
                J->id, J->size, J->job->n_nodes, jobno, base, n_sync, raw_len);
    /* the spec first, to every other node of the job: they start their parts as it arrives */
    for (uint32_t i = 0; i < n; i++) {
        if (i == d->self || !J->job->member[i])
            continue;
        if ((rc = spec_send(J, i, raw, raw_len)) == 0)
            J->spec_unheard++;
        if (rc != 0) {
            run_printf(J, "%" PRIu32 " lost cannot send the job to it: %s\n", i, hb_status_str(rc));
            J->ended[i] = 1;
            J->n_ended++;
            J->killed = 1; /* the rest is stopped below, once our own part exists */
            rc = 0;
        }
    }
    if (J->spec_unheard > 0) { /* kept: a node on the way to them may die (spec_heard) */
        J->spec_out = raw;
        J->spec_out_len = raw_len;
    }
    if (!J->job->member[d->self]) {
        if (J->spec_out != raw)
            free(raw);
        if (J->killed) {
            J->killed = 0;
            relay_kill(J, "a node could not be reached");
        }
        check_done(J);
        return;
    }
    /* this node's part reads the spec with its slot from a file of ours, as the others do */
    uint64_t id = J->id;
    int wrc = spec_file(d, id, raw, raw_len, path, sizeof(path));
    if (J->spec_out != raw)
        free(raw);
    if (wrc != 0) {
        run_printf(J, "%" PRIu32 " err %d cannot write the job spec into the daemon's run dir\n",
                   d->self, HB_ERR_IO);
        J->ended[d->self] = 1;
        J->n_ended++;
        relay_kill(J, "its spec could not be written here");
        check_done(J);
        return;
    }
    part_start(J, path);
    unlink(path);
    if (job_find(d, id, d->self) == J && J->killed && !J->finishing) {
        J->killed = 0;
        relay_kill(J, "a node could not be reached");
    }
}

/* The root's answer to the job's slot request: status 0 and the slot, or why not. */
static void on_slot(rl_job_t *J, int status, uint64_t arg, const char *why, size_t why_len)
{
    if (J->raw == NULL || J->jobno != 0 || J->finishing)
        return; /* answered already */
    if (status != 0) {
        hb_log_warn("job %" PRIu64 ": no slot: %.*s", J->id, (int)why_len, why);
        run_printf(J, "err %d %.*s\n", status, (int)why_len, why); /* the job, not a node */
        finish(J);
        return;
    }
    relay_start(J, (uint32_t)(arg >> 32), (uint32_t)((arg >> 8) & 0xff), (uint32_t)(arg & 0xff));
}

/* A slot for the job (on the root): 0 and *arg_p packed as SLOT's arg, or an error and why. */
static int slot_give(hbd_t *d, uint64_t id, uint32_t origin, uint32_t size, const uint8_t *member,
                     uint64_t *arg_p, char *why, size_t cap)
{
    rl_state_t *R = d->relay;
    uint32_t n = d->topo->n_nodes, nn = 0;
    uint32_t *nodes = malloc(n * sizeof(uint32_t));
    hbd_slot_t *s = NULL;
    if (nodes == NULL) {
        snprintf(why, cap, "%s", hb_status_str(HB_ERR_NOMEM));
        return HB_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        if (member[i])
            nodes[nn++] = i;
    int rc = hbd_slots_alloc(&R->slots, d->topo, nodes, nn, id, origin, size, hb_time_now_ns(), &s,
                             why, cap);
    free(nodes);
    if (rc == 0)
        *arg_p = (uint64_t)s->jobno << 32 | (uint64_t)s->base << 8 | s->n;
    return rc;
}

void hbd_relay_run(hbd_t *d, hbd_reply_t *conn, const char *spec_path)
{
    rl_state_t *R = d->relay;
    char err[512] = "";
    hbd_job_spec_t *spec = NULL;
    char *raw = NULL;
    size_t raw_len = 0;
    uint32_t n = d->topo->n_nodes;
    rl_job_t *J = NULL;
    int rc;
    if (spec_path == NULL) {
        hbd_reply(conn, "err %d usage: run <job spec file>", HB_ERR_INVAL);
        return;
    }
    if ((rc = hbd_job_spec_load(spec_path, &spec, err, sizeof(err))) != 0) {
        hbd_reply(conn, "err %d %s", rc, err[0] ? err : hb_status_str(rc));
        return;
    }
    if ((rc = hbd_job_spec_read(spec_path, &raw, &raw_len)) == 0 && raw_len == 0)
        rc = HB_ERR_PERM; /* what the daemons would be sent: nothing */
    if (rc != 0) {
        hbd_reply(conn, "err %d %s: cannot read the job spec (%s)", rc, spec_path,
                  hb_status_str(rc));
        goto out;
    }
    if (spec->jobno != 0) {
        hbd_reply(conn, "err %d %s: the spec has a slot already (only the origin adds it)",
                  HB_ERR_INVAL, spec_path);
        goto out;
    }
    if (!d->ready && n > 1) {
        hbd_reply(conn, "err %d node %s is not linked to all its neighbours yet: try again",
                  HB_ERR_NOT_INIT, d->name);
        goto out;
    }
    hbd_job_t *old = hbd_job_get(d, spec->id);
    if (old != NULL || hbd_relay_n_jobs(d) >= HBD_RELAY_MAX_JOBS) {
        hbd_reply(conn, "err %d job %" PRIu64 " exists, or this daemon relays %d jobs already",
                  HB_ERR_EXISTS, spec->id, HBD_RELAY_MAX_JOBS);
        goto out;
    }
    J = job_new(d, spec->id, d->self); /* from here on, job_free undoes it */
    if (J == NULL || (J->ended = calloc(n, 1)) == NULL ||
        (J->out_next = calloc(n, sizeof(uint32_t))) == NULL ||
        (J->acked = calloc(n, sizeof(uint32_t))) == NULL ||
        (J->owed = calloc(n, sizeof(uint64_t))) == NULL) {
        hbd_reply(conn, "err %d %s", HB_ERR_NOMEM, hb_status_str(HB_ERR_NOMEM));
        goto out;
    }
    uint32_t bad = 0;
    if ((rc = hbd_job_set_nodes(J->job, spec->map, spec->size, &bad)) != 0) {
        if (rc == HB_ERR_INVAL)
            hbd_reply(conn,
                      "err %d rank %" PRIu32 " placed on node %" PRIu32 ", not in the cluster",
                      HB_ERR_INVAL, bad, spec->map[bad]);
        else
            hbd_reply(conn, "err %d %s", rc, hb_status_str(rc));
        goto out;
    }
    for (uint32_t r = 0; r < spec->size; r++)
        if (hbd_node_lost(d, spec->map[r])) {
            hbd_reply(conn,
                      "err %d node %s of the job is lost (its daemon died or cannot be "
                      "reached)",
                      HB_ERR_PEER_LOST, d->cfg->nodes[spec->map[r]].name);
            goto out;
        }
    J->size = spec->size;
    int fd = hbd_reply_detach(conn);
    if (fd < 0)
        goto out;
    J->run = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (J->run == NULL) {
        close(fd);
        goto out;
    }
    J->raw = raw;
    J->raw_len = raw_len;
    raw = NULL;
    bufferevent_setcb(J->run, run_read_cb, run_write_cb, run_event_cb, J);
    bufferevent_setwatermark(J->run, EV_WRITE, HBD_RELAY_RUN_LOW, 0);
    bufferevent_enable(J->run, EV_READ | EV_WRITE);
    rl_job_t *keep = J;
    J = NULL;
    if (R->is_root) {
        alloc_request(d, keep->id, d->self, keep->size, keep->job->member);
    } else {
        /* ask the root: the member bitmap */
        uint32_t bl = (n + 7) / 8;
        uint8_t *bits = calloc(bl, 1);
        hbd_wire_job_t x = {
            .kind = HBD_WIRE_JOB_ALLOC, .src = UINT32_MAX, .dest = root_node(d), .arg = keep->size};
        for (uint32_t i = 0; bits != NULL && i < n; i++)
            if (keep->job->member[i])
                bits[i / 8] |= (uint8_t)(1u << (i % 8));
        rc = bits == NULL                 ? HB_ERR_NOMEM
             : bl > HBD_WIRE_JOB_MAX_DATA ? HB_ERR_INVAL
                                          : job_send(d, keep->id, &x, bits, bl);
        free(bits);
        if (rc != 0) {
            char why[128];
            snprintf(why, sizeof(why), "cannot ask the cluster's root (node %s) for a job slot: %s",
                     d->cfg->nodes[root_node(d)].name, hb_status_str(rc));
            on_slot(keep, rc, 0, why, strlen(why));
        }
    }
out:
    if (J != NULL)
        job_free(J);
    free(raw);
    hbd_job_spec_free(spec);
}

/* ---- frames from other daemons ---- */

static void drop(hbd_t *d, const char *why, uint64_t id, uint32_t from)
{
    rl_state_t *R = d->relay;
    if (R->drops++ == 0)
        hb_log_warn("dropped a JOB frame of job %" PRIu64 " from node %" PRIu32
                    " (%s); further ones are only counted",
                    id, from, why);
}

/* The job number of a spec's "slot" line (the origin appends it last), or 0. */
static uint32_t spec_jobno(const uint8_t *spec, uint64_t len)
{
    static const char key[] = "\nslot ";
    for (uint64_t i = len; i-- > 0;)
        if (spec[i] == '\n' && len - i > sizeof(key) - 1 &&
            memcmp(spec + i, key, sizeof(key) - 1) == 0)
            return (uint32_t)strtoul((const char *)spec + i + sizeof(key) - 1, NULL, 10);
    return 0;
}

/* A remote part cannot start: tell the origin why, and that it ended. */
static void remote_refuse(rl_job_t *J, int rc, const char *text)
{
    char line[256];
    int n = snprintf(line, sizeof(line), "err %d %s", rc, text);
    part_line(J, line, (size_t)n);
    out_flush(J);
    (void)member_send(J, HBD_WIRE_JOB_END, 0, NULL, 0);
}

/* ... and the record goes. */
static void remote_fail(rl_job_t *J, int rc, const char *text)
{
    remote_refuse(J, rc, text);
    job_free(J);
}

static void on_spec(hbd_t *d, uint64_t id, const hbd_wire_job_t *x, const uint8_t *data,
                    uint32_t dlen)
{
    rl_job_t *J = job_find(d, id, x->src);
    /* the origin sends the spec again after a loss to a node it has not heard from: what came
     * already (a chunk, the whole spec, or a part that ran and whose frames it has not taken
     * yet) is not taken twice */
    if ((J != NULL && (J->spec == NULL || x->seq < J->spec_seq)) ||
        (J == NULL && x->seq == 0 && sent_has(d, id, x->src)))
        return;
    if (x->seq == 0) {
        if (hbd_relay_n_jobs(d) >= HBD_RELAY_MAX_JOBS) {
            drop(d, "too many jobs", id, x->src);
            return;
        }
        if (hbd_job_get(d, id) != NULL) {
            /* from another origin, or launched here: its part would be refused, so the origin
             * hears it now (a record of its own, not the job's) */
            rl_job_t *T = calloc(1, sizeof(*T));
            if (T == NULL) {
                drop(d, "no memory", id, x->src);
                return;
            }
            *T = (rl_job_t){.d = d, .id = id, .origin = x->src};
            remote_refuse(T, HB_ERR_EXISTS, "a job with this id exists on this node");
            free(T);
            return;
        }
        J = job_new(d, id, x->src);
        if (J == NULL || (J->spec = malloc(x->arg)) == NULL) {
            if (J != NULL)
                job_free(J);
            drop(d, "no memory", id, x->src);
            return;
        }
        J->spec_len = x->arg;
    } else if (J == NULL || J->spec == NULL || x->seq != J->spec_seq || x->arg != J->spec_len) {
        drop(d, "spec chunk out of order", id, x->src);
        if (J != NULL && J->spec != NULL)
            remote_fail(J, HB_ERR_PROTO, "the job spec arrived out of order");
        return;
    }
    memcpy(J->spec + (uint64_t)x->seq * HBD_WIRE_JOB_MAX_DATA, data, dlen);
    J->spec_seq++;
    if (!(x->flags & HBD_WIRE_JOB_F_LAST))
        return;
    /* complete: the launcher reads it from a file of ours, as from hibar-run; the origin put
     * the slot line last */
    J->job->jobno = spec_jobno(J->spec, J->spec_len);
    char path[400];
    int wrc = spec_file(d, id, J->spec, J->spec_len, path, sizeof(path));
    free(J->spec);
    J->spec = NULL;
    if (wrc != 0) {
        remote_fail(J, HB_ERR_IO, "cannot write the job spec into the daemon's run dir");
        return;
    }
    part_start(J, path);
    unlink(path);
}

/* A JOB frame (validated by hbd_wire_decode). */
/*
 * The root's census. The slots live on the root daemon only; a node that becomes root (the
 * root was lost and the live tree has another, or the root restarted) does not know the jobs
 * that run. Before its first slot it asks every live node (CENSUS) which jobs' sync numbers it
 * holds (HOLD: its barrier engines), and rebuilds the table from the answers; requests wait
 * (allocq) until every live node answered or lost, or 2 heartbeat timeouts passed.
 */
static void census_finish(hbd_t *d);

static void alloc_answer(hbd_t *d, uint64_t id, uint32_t src, uint32_t size, const uint8_t *member)
{
    char why[256] = "";
    uint64_t arg = 0;
    int rc = !d->relay->is_root ? HB_ERR_INVAL : member == NULL ? HB_ERR_NOMEM : 0;
    if (rc == 0)
        rc = slot_give(d, id, src, size, member, &arg, why, sizeof(why));
    else
        snprintf(why, sizeof(why), "node %s is not the cluster's root (node %s is)", d->name,
                 d->cfg->nodes[root_node(d)].name);
    if (src == d->self) {
        rl_job_t *J = job_find(d, id, d->self);
        if (J != NULL)
            on_slot(J, rc, arg, why, strlen(why));
        else if (rc == 0)
            hbd_slots_free(&d->relay->slots, d->topo, (uint32_t)(arg >> 32));
        return;
    }
    hbd_wire_job_t y = {.kind = HBD_WIRE_JOB_SLOT, .src = UINT32_MAX, .dest = src};
    y.seq = (uint32_t)-rc;
    y.arg = rc == 0 ? arg : 0;
    int src_rc = job_send(d, id, &y, why, rc == 0 ? 0 : (uint32_t)strlen(why));
    if (src_rc != 0)
        hb_log_warn("job %" PRIu64 ": slot answer for node %" PRIu32 " not sent: %s", id, src,
                    hb_status_str(src_rc));
    if (src_rc != 0 && rc == 0)
        hbd_slots_free(&d->relay->slots, d->topo, (uint32_t)(arg >> 32));
}

static void census_start(hbd_t *d)
{
    rl_state_t *R = d->relay;
    uint32_t n = d->topo->n_nodes, asked = 0;
    R->census_wait = calloc(n, 1);
    if (R->census_wait == NULL) {
        R->census_done = 1; /* without memory: go on without it (logged) */
        hb_log_error("root: no memory for the census of running jobs");
        return;
    }
    R->census_until = hb_time_now_ns() + 2ull * d->cfg->heartbeat_timeout_ms * 1000000ull;
    census_answer(d, d->self); /* our own engines */
    for (uint32_t i = 0; i < n; i++) {
        if (i == d->self || hbd_node_lost(d, i))
            continue;
        hbd_wire_job_t x = {.kind = HBD_WIRE_JOB_CENSUS, .src = UINT32_MAX, .dest = i};
        if (job_send(d, 0, &x, NULL, 0) == 0) {
            R->census_wait[i] = 1;
            asked++;
        }
    }
    hb_log_info("root: asking %" PRIu32 " nodes which jobs run (census)", asked);
    if (asked == 0)
        census_finish(d);
    else
        tick_arm(d, 0);
}

static void census_finish(hbd_t *d)
{
    rl_state_t *R = d->relay;
    uint32_t missing = 0;
    for (uint32_t i = 0; R->census_wait != NULL && i < d->topo->n_nodes; i++)
        missing += R->census_wait[i];
    if (missing > 0)
        hb_log_warn("root: %" PRIu32 " nodes did not say which jobs they run: their sync "
                    "numbers may be handed out twice",
                    missing);
    free(R->census_wait);
    R->census_wait = NULL;
    R->census_done = 1;
    hb_log_info("root: %" PRIu32 " running jobs found", R->slots.n);
    while (R->allocq != NULL) {
        rl_alloc_t *q = R->allocq;
        R->allocq = q->next;
        alloc_answer(d, q->id, q->src, q->size, q->member);
        free(q->member);
        free(q);
    }
}

/* A slot request at the root: answered now, or after the census. */
static void alloc_request(hbd_t *d, uint64_t id, uint32_t src, uint32_t size, const uint8_t *member)
{
    rl_state_t *R = d->relay;
    if (!R->is_root || R->census_done || member == NULL) {
        alloc_answer(d, id, src, size, member);
        return;
    }
    rl_alloc_t *q = calloc(1, sizeof(*q)), **pp = &R->allocq;
    if (q == NULL || (q->member = malloc(d->topo->n_nodes)) == NULL) {
        free(q);
        alloc_answer(d, id, src, size, NULL);
        return;
    }
    q->id = id;
    q->src = src;
    q->size = size;
    memcpy(q->member, member, d->topo->n_nodes);
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = q;
    if (R->census_wait == NULL)
        census_start(d);
}

/* CENSUS from the root: the jobs whose sync numbers this node holds. */
static void census_answer(hbd_t *d, uint32_t root)
{
    uint8_t recs[HBD_WIRE_JOB_HOLD_MAX * HBD_WIRE_JOB_HOLD_REC];
    uint32_t jobs[HBD_WIRE_JOB_HOLD_MAX], k = 0;
    /* the barrier engines: a job whose part ended here holds its sync numbers until drained */
    uint32_t nj = hbd_barrier_job_list(d, jobs, HBD_WIRE_JOB_HOLD_MAX);
    for (uint32_t i = 0; i < nj; i++) {
        uint32_t base, n, counts[HB_HWB_NSYNC];
        if (hbd_barrier_job_counts(d, jobs[i], &base, &n, counts) != 0)
            continue;
        const hbd_job_t *j = hbd_job_by_no(d, jobs[i]);
        const rl_job_t *J = j != NULL ? j->relay : NULL;
        uint64_t id = J != NULL ? J->id : 0;
        uint8_t *r = recs + (size_t)k++ * HBD_WIRE_JOB_HOLD_REC;
        hbd_wire_put32(r, jobs[i]);
        r[4] = (uint8_t)base;
        r[5] = (uint8_t)n;
        r[6] = r[7] = 0;
        hbd_wire_put32(r + 8, J != NULL ? J->origin : UINT32_MAX);
        hbd_wire_put32(r + 12, J != NULL ? J->size : 0);
        hbd_wire_put32(r + 16, (uint32_t)id);
        hbd_wire_put32(r + 20, (uint32_t)(id >> 32));
    }
    if (root == d->self) {
        census_hold(d, d->self, k, recs);
        return;
    }
    hbd_wire_job_t x = {.kind = HBD_WIRE_JOB_HOLD, .src = UINT32_MAX, .dest = root, .arg = k};
    int rc = job_send(d, 0, &x, recs, k * HBD_WIRE_JOB_HOLD_REC);
    if (rc != 0)
        hb_log_warn("census: answer to the root (node %" PRIu32 ") not sent: %s", root,
                    hb_status_str(rc));
}

/* HOLD at the root: node src holds these jobs' sync numbers. */
static void census_hold(hbd_t *d, uint32_t src, uint32_t k, const uint8_t *recs)
{
    rl_state_t *R = d->relay;
    if (!R->is_root || src >= d->topo->n_nodes) {
        drop(d, "census answer at a node that is not the root", 0, src);
        return;
    }
    for (uint32_t i = 0; i < k; i++) {
        const uint8_t *r = recs + (size_t)i * HBD_WIRE_JOB_HOLD_REC;
        uint64_t id = hbd_wire_get32(r + 16) | (uint64_t)hbd_wire_get32(r + 20) << 32;
        int rc =
            hbd_slots_claim(&R->slots, d->topo, hbd_wire_get32(r), r[4], r[5], id,
                            hbd_wire_get32(r + 8), hbd_wire_get32(r + 12), src, hb_time_now_ns());
        hbd_slot_t *sl = hbd_slots_find(&R->slots, hbd_wire_get32(r));
        uint32_t origin = hbd_wire_get32(r + 8);
        if (rc != 0)
            drop(d, "census record not taken", id, src);
        else if (sl != NULL && (origin >= d->topo->n_nodes || hbd_node_lost(d, origin)))
            /* its origin is gone, so nobody gives it back: its nodes drain its sync numbers
             * within the barrier timeout; it goes after twice that */
            sl->expire_ns = hb_time_now_ns() + 2ull * d->cfg->barrier_timeout_ms * 1000000ull + 1;
    }
    if (R->census_wait == NULL || src == d->self)
        return;
    R->census_wait[src] = 0;
    for (uint32_t i = 0; i < d->topo->n_nodes; i++)
        if (R->census_wait[i])
            return;
    census_finish(d);
}

/* Whether this node is the cluster's root now (the live tree's): a node that becomes root
 * starts a slot table (filled by the census before its first answer); one that stops being
 * root drops its table (the new root's census finds those jobs). */
static void root_check(hbd_t *d)
{
    rl_state_t *R = d->relay;
    int now = d->self == root_node(d);
    if (now == R->is_root)
        return;
    if (now) {
        if (hbd_slots_init(&R->slots, d->topo, HBD_SYNC_JOB_FIRST, HBD_SYNC_JOB_END,
                           HBD_RELAY_JOB_NSYNC) != 0) {
            hb_log_error("root: no memory for the job slots");
            return;
        }
        hb_log_warn("node %s is the cluster's root now: it gives jobs their slots", d->name);
        R->census_done = 0;
        R->is_root = 1;
        return;
    }
    R->is_root = 0;
    hbd_slots_fini(&R->slots);
    free(R->census_wait);
    R->census_wait = NULL;
    while (R->allocq != NULL) { /* refused, naming the new root (hibar-run reports it) */
        rl_alloc_t *q = R->allocq;
        R->allocq = q->next;
        alloc_answer(d, q->id, q->src, q->size, q->member);
        free(q->member);
        free(q);
    }
}

static void on_join(hbd_t *d, uint32_t node, uint64_t inc)
{
    (void)node;
    (void)inc;
    root_check(d);
}

static void on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    hbd_wire_job_t x; /* kind, nodes, lengths checked by hbd_wire_decode */
    hbd_wire_job_unpack(m->payload, &x);
    const uint8_t *data = m->payload + HBD_WIRE_JOB_HDR;
    uint32_t dlen = m->len - HBD_WIRE_JOB_HDR;
    uint64_t id = m->coll_id;
    if (x.dest != d->self) { /* passing through */
        int rc = job_send(d, id, &x, data, dlen);
        if (rc != 0 && !d->lost)
            hb_log_warn("job %" PRIu64 ": frame for node %" PRIu32 " not forwarded: %s", id, x.dest,
                        hb_status_str(rc));
        return;
    }
    rl_job_t *J;
    switch (x.kind) {
    case HBD_WIRE_JOB_SPEC:
        on_spec(d, id, &x, data, dlen);
        return;
    case HBD_WIRE_JOB_KILL:
        /* a part that ended already (its END crossed the KILL) is no error */
        if ((J = job_find(d, id, x.src)) != NULL && J->part != NULL && !J->killed) {
            J->killed = 1;
            evbuffer_add(bufferevent_get_output(J->part), "kill\n", 5);
        }
        return;
    case HBD_WIRE_JOB_CREDIT:
        J = job_find(d, id, x.src);
        sent_acked(d, id, x.src, x.seq, J);
        if (J != NULL)
            part_reading(J);
        return;
    case HBD_WIRE_JOB_ALLOC: {
        uint8_t *member = calloc(d->topo->n_nodes, 1);
        for (uint32_t i = 0; member != NULL && i < d->topo->n_nodes; i++)
            member[i] = (data[i / 8] >> (i % 8)) & 1;
        alloc_request(d, id, x.src, (uint32_t)x.arg, member);
        free(member);
        return;
    }
    case HBD_WIRE_JOB_CENSUS:
        census_answer(d, x.src);
        return;
    case HBD_WIRE_JOB_HOLD:
        census_hold(d, x.src, (uint32_t)x.arg, data);
        return;
    case HBD_WIRE_JOB_DRAIN:
        if ((J = job_find(d, id, x.src)) != NULL && J->end_wait) {
            hbd_barrier_job_drain(d, J->job->jobno, x.arg); /* once: a repeat does nothing */
            tick_arm(d, 1);
        } else if (J == NULL) {
            /* sent again after a loss: the engine went and CLEAN went out, maybe into the
             * daemon that died */
            send_simple(d, &(rl_job_t){.id = id}, x.src, HBD_WIRE_JOB_CLEAN, 0);
        }
        return;
    case HBD_WIRE_JOB_CLEAN:
        if ((J = job_find(d, id, d->self)) != NULL && J->drain_sent && !J->finishing)
            node_clean(J, x.src);
        else
            drop(d, "clean for no job", id, x.src);
        return;
    case HBD_WIRE_JOB_FREE:
        if (d->relay->is_root)
            hbd_slots_free(&d->relay->slots, d->topo, (uint32_t)x.arg);
        return;
    case HBD_WIRE_JOB_SLOT:
        if ((J = job_find(d, id, d->self)) == NULL) {
            /* the job went meanwhile: its slot goes back */
            if (x.seq == 0)
                send_simple(d, &(rl_job_t){.id = id}, x.src, HBD_WIRE_JOB_FREE, x.arg >> 32);
            drop(d, "slot for no job", id, x.src);
            return;
        }
        on_slot(J, -(int)x.seq, x.arg, (const char *)data, dlen);
        return;
    default:
        break;
    }
    /* OUT, END (from a node still running its part): for a job this node originated, each seq
     * once and in order */
    J = job_find(d, id, d->self);
    if (J != NULL && J->out_next != NULL && x.seq < J->out_next[x.src]) {
        if (J->acked[x.src] > 0) /* sent again after a loss: its CREDIT may have been lost */
            send_credit(d, id, x.src, J->acked[x.src], 0);
        return;
    }
    if (J == NULL || J->ended == NULL || J->finishing || !J->job->member[x.src] ||
        J->ended[x.src]) {
        send_credit(d, id, x.src, UINT32_MAX, 0); /* nothing more is taken: forget them */
        drop(d, "not a running job of this origin", id, x.src);
        return;
    }
    if (x.seq != J->out_next[x.src]) {
        drop(d, "a frame before it is missing (sent again after the loss)", id, x.src);
        return;
    }
    if (J->out_next[x.src]++ == 0)
        spec_heard(J);
    if (x.kind == HBD_WIRE_JOB_OUT) {
        for (const uint8_t *p = data, *end = data + dlen; p < end;) {
            const uint8_t *nl = memchr(p, '\n', (size_t)(end - p)); /* the last byte is one */
            run_line(J, x.src, (const char *)p, (size_t)(nl - p));
            p = nl + 1;
        }
        J->owed[x.src] += dlen;
        if (!J->held)
            credit(J, x.src, 0); /* else once hibar-run has caught up (run_hold) */
    } else if (x.kind == HBD_WIRE_JOB_END) {
        if (J->cnt != NULL) {
            rl_cnt_t *c = &J->cnt[x.src];
            c->base = (uint32_t)(x.arg >> 8) & 0xff;
            c->n = (uint32_t)x.arg & 0xff;
            memcpy(c->c, data, c->n * 4);
        }
        credit(J, x.src, 1); /* its last frame taken: the node forgets them */
        node_ended(J, x.src);
    }
}

/* ---- lost nodes, timers ---- */

/* Is node `node` part of J (a member, or its origin)? The job object knows its members once a
 * part read its spec (the origin's run, a member's launcher); before, its engine (if any). */
static int job_involves(hbd_t *d, const rl_job_t *J, uint32_t node)
{
    if (node >= d->topo->n_nodes || J->origin == node)
        return 1;
    if (J->job->member != NULL)
        return J->job->member[node];
    return hbd_barrier_job_has(d, J->job->jobno, node);
}

/* A lost node: the jobs it is part of stop here; the origin reports it. The others go on: their
 * frames go around the lost node, through the root (hbd_route_next_hop). */
static void on_lost(hbd_t *d, uint32_t node, int status, int first)
{
    rl_state_t *R = d->relay;
    (void)first;
    const char *name = node < d->topo->n_nodes ? d->cfg->nodes[node].name : "?";
    root_check(d); /* the root itself may be the lost one */
    if (R->census_wait != NULL && node < d->topo->n_nodes && R->census_wait[node])
        census_hold(d, node, 0, NULL); /* it will not answer */
    /* what a dead daemon on the way took with it: members send their log again, origins their
     * last CREDITs and, for a job they stopped, KILL to the nodes that did not end yet (a KILL
     * twice is no error) */
    sent_again(d);
    for (rl_job_t *J = job_next(d->jobs.head); J != NULL; J = job_next(J->job->next))
        for (uint32_t n = 0; J->origin == d->self && J->acked != NULL && n < d->topo->n_nodes;
             n++) {
            if (n == d->self || hbd_node_lost(d, n) || J->job->member == NULL || !J->job->member[n])
                continue;
            if (J->acked[n] > 0)
                send_credit(d, J->id, n, J->acked[n], 0);
            if (J->spec_out != NULL && J->out_next[n] == 0 && !J->ended[n] &&
                spec_send(J, n, J->spec_out, J->spec_out_len) != 0)
                hb_log_warn("job %" PRIu64 ": its spec for node %s not sent again", J->id,
                            d->cfg->nodes[n].name);
            if (J->killed && !J->ended[n])
                send_simple(d, J, n, HBD_WIRE_JOB_KILL, 0);
        }
    for (rl_job_t *J = job_next(d->jobs.head); J != NULL; J = job_next(J->job->next))
        if (J->origin == d->self && J->drain_sent && !J->finishing)
            drain_again(J);
    /* the root: the slots of the jobs that lost node started give nobody them back */
    for (hbd_slot_t *sl = R->is_root ? R->slots.list : NULL, *nx; sl != NULL; sl = nx) {
        nx = sl->next;
        if (sl->origin == node) {
            hb_log_info("job %" PRIu64 ": its origin %s is lost: slot %" PRIu32 " given back",
                        sl->id, name, sl->jobno);
            hbd_slots_free(&R->slots, d->topo, sl->jobno);
        }
    }
    for (hbd_job_t *j = d->jobs.head, *nx; j != NULL; j = nx) {
        rl_job_t *J = j->relay;
        nx = j->next; /* j may go with J */
        if (J == NULL || !job_involves(d, J, node))
            continue; /* its frames go around the lost node (hbd_route_next_hop) */
        if (J->origin == node) {
            J->origin_lost = 1;
            if (J->part == NULL) { /* still receiving its spec, or waiting for its verdict */
                job_free(J);
                continue;
            }
        }
        if (J->part != NULL && !J->killed) {
            J->killed = J->origin != d->self; /* the origin's relay_kill below does it */
            if (J->origin != d->self) {
                evbuffer_add(bufferevent_get_output(J->part), "kill\n", 5);
                part_reading(J); /* a lost origin's lines go nowhere: read them to the end */
            }
        }
        if (J->origin != d->self)
            continue;
        if (J->lost_ns == 0) {
            J->lost_ns = hb_time_now_ns();
            J->lost_node = node;
        }
        if (J->n_ended < J->job->n_nodes) /* else it ended everywhere: the drain goes on */
            relay_kill(J, "a node was lost");
        if (node < d->topo->n_nodes && J->job->member[node] && !J->ended[node]) {
            run_printf(J, "%" PRIu32 " lost the daemon of node %s died or cannot be reached (%s)\n",
                       node, name, hb_status_str(status));
            J->ended[node] = 1;
            J->n_ended++;
        }
        if (J->drain_sent && J->cnt != NULL && node < d->topo->n_nodes && J->cnt[node].unclean) {
            J->cnt[node].unclean = 0; /* its engine went with it; its mates' rounds end */
            J->clean_wait -= J->clean_wait > 0; /* 0: the clean limit passed already */
        }
        check_done(J);
    }
    if (job_next(d->jobs.head) != NULL)
        tick_arm(d, 0);
}

static void tick_cb(hbd_t *d, void *arg)
{
    rl_state_t *R = d->relay;
    uint64_t now = hb_time_now_ns();
    (void)arg;
    if (R->census_wait != NULL && now >= R->census_until)
        census_finish(d);
    int orphans = 0;
    for (hbd_slot_t *sl = R->is_root ? R->slots.list : NULL, *nx; sl != NULL; sl = nx) {
        nx = sl->next;
        if (sl->expire_ns != 0 && now >= sl->expire_ns) {
            hb_log_info("root: job %" PRIu32 " (origin gone) gives its slot back", sl->jobno);
            hbd_slots_free(&R->slots, d->topo, sl->jobno);
        } else {
            orphans |= sl->expire_ns != 0;
        }
    }
    /* queued frames, in order per hop; a hop that is not linked yet is (hbd_net_link), one that
     * was lost gives its frames to the live tree's next hop toward their destination */
    uint32_t blocked[16], nb = 0;
    for (rl_out_t **pp = &R->outq; *pp != NULL;) {
        rl_out_t *o = *pp;
        int skip = nb == 16;
        for (uint32_t i = 0; i < nb; i++)
            skip |= blocked[i] == o->to;
        int rc = skip ? HB_ERR_WOULD_BLOCK : hbd_net_peer_up(d, o->to) ? 0 : hbd_net_link(d, o->to);
        if (rc == 0)
            rc = hbd_net_send(d, o->to, HBD_WIRE_JOB, 0, o->job, o->pl, o->len);
        if (rc == HB_ERR_PEER_LOST) {
            hbd_wire_job_t x;
            hbd_wire_job_unpack(o->pl, &x);
            uint32_t to = hbd_route_next_hop(d, x.dest);
            if (to != o->to && to < d->topo->n_nodes && !hbd_node_lost(d, x.dest)) {
                o->to = to;
                rc = HB_ERR_WOULD_BLOCK; /* in its new hop's turn */
                skip = 1;
            }
        }
        if (rc == HB_ERR_WOULD_BLOCK) {
            if (!skip)
                blocked[nb++] = o->to;
            pp = &o->next;
            continue;
        }
        if (rc != 0 && !d->lost)
            hb_log_warn("job %" PRIu64 ": frame for node %" PRIu32 " dropped: %s", o->job, o->to,
                        hb_status_str(rc));
        *pp = o->next;
        R->outq_bytes -= o->len;
        free(o);
    }
    if (R->reading_paused && R->outq_bytes < HBD_RELAY_QUEUE_MAX / 2) {
        R->reading_paused = 0;
        for (rl_job_t *J = job_next(d->jobs.head); J != NULL; J = job_next(J->job->next))
            part_reading(J);
    }
    /* parts whose end waits for the engine's drain */
    int waiting = 0;
    for (hbd_job_t *j = d->jobs.head, *nx; j != NULL; j = nx) {
        rl_job_t *J = j->relay;
        nx = j->next; /* j may go with J */
        if (J == NULL || !J->end_wait)
            continue;
        if (hbd_barrier_job_busy(d, j->jobno))
            waiting = 1;
        else
            part_clean(J); /* may free J */
    }
    /* origins: verdicts that are not answered (the engines give up after the barrier timeout) */
    uint64_t clean_lim = ((uint64_t)d->cfg->barrier_timeout_ms + 5000) * 1000000ull;
    for (hbd_job_t *j = d->jobs.head, *nx; j != NULL; j = nx) {
        rl_job_t *J = j->relay;
        nx = j->next;
        if (J == NULL || J->origin != d->self || !J->drain_sent || J->finishing)
            continue;
        if (now - J->drain_ns > clean_lim) {
            hb_log_warn("job %" PRIu64 ": %" PRIu32 " nodes did not report clean sync numbers",
                        J->id, J->clean_wait);
            J->clean_wait = 0;
            check_done(J);
        } else {
            if (J->redrain_ns != 0 && now >= J->redrain_ns)
                drain_again(J); /* the daemons that learnt of the loss later sent CLEAN into it */
            waiting = 1;
        }
    }
    int fast = waiting;
    /* origins: nodes that never report after a loss */
    for (hbd_job_t *j = d->jobs.head, *nx; j != NULL; j = nx) {
        rl_job_t *J = j->relay;
        nx = j->next;
        if (J == NULL || J->origin != d->self || J->finishing)
            continue;
        if (J->lost_ns != 0 && now - J->lost_ns > HBD_RELAY_LOST_WAIT_MS * 1000000ull) {
            for (uint32_t i = 0; i < d->topo->n_nodes; i++)
                if (J->job->member[i] && !J->ended[i]) {
                    run_printf(J,
                               "%" PRIu32 " lost node %s reported no end within %d s after node "
                               "%s was lost\n",
                               i, d->cfg->nodes[i].name, HBD_RELAY_LOST_WAIT_MS / 1000,
                               d->cfg->nodes[J->lost_node].name);
                    J->ended[i] = 1;
                    J->n_ended++;
                }
            check_done(J); /* may free J */
            continue;
        }
        waiting |= J->lost_ns != 0;
    }
    if (R->outq != NULL || fast)
        tick_arm(d, 1);
    else if (waiting || orphans || R->census_wait != NULL)
        tick_arm(d, 0);
}

static void tick_arm(hbd_t *d, int fast)
{
    rl_state_t *R = d->relay;
    /* queued work: in 1 ms, even if armed for later; else in 100 ms unless armed */
    if (R->tick == NULL && (R->tick = hbd_timer_new(d, tick_cb, NULL)) == NULL)
        return;
    hbd_timer_arm(R->tick, fast ? 1000 : 100000, fast);
}

void hbd_relay_jobs(hbd_t *d, hbd_reply_t *r)
{
    rl_state_t *R = d->relay;
    if (R == NULL || !R->is_root) {
        uint32_t root = root_node(d);
        hbd_reply(r, "err %d the cluster's root daemon (node %s, id %" PRIu32 ") holds the jobs",
                  HB_ERR_NOT_FOUND, d->cfg->nodes[root].name, root);
        return;
    }
    size_t cap = 64 + (size_t)R->slots.n * 96 + (d->lost ? (size_t)d->topo->n_nodes * 8 : 0);
    for (hbd_slot_t *s = R->slots.list; s != NULL; s = s->next)
        cap += (size_t)s->n_nodes * 12;
    char *buf = malloc(cap);
    if (buf == NULL) {
        hbd_reply(r, "err %d %s", HB_ERR_NOMEM, hb_status_str(HB_ERR_NOMEM));
        return;
    }
    uint64_t now = hb_time_now_ns();
    size_t o = (size_t)snprintf(buf, cap, "ok jobs=%" PRIu32, R->slots.n);
    for (hbd_slot_t *s = R->slots.list; s != NULL && o < cap; s = s->next) {
        o += (size_t)snprintf(buf + o, cap - o,
                              " job=%" PRIu32 ":%" PRIu64 ":%" PRIu32 ":%" PRIu32 ":", s->jobno,
                              s->id, s->origin, s->size);
        for (uint32_t i = 0; i < s->n_nodes && o < cap; i++) {
            uint32_t k = i;
            while (k + 1 < s->n_nodes && s->nodes[k + 1] == s->nodes[k] + 1)
                k++;
            if (k > i)
                o += (size_t)snprintf(buf + o, cap - o, "%s%" PRIu32 "-%" PRIu32, i ? "." : "",
                                      s->nodes[i], s->nodes[k]);
            else
                o += (size_t)snprintf(buf + o, cap - o, "%s%" PRIu32, i ? "." : "", s->nodes[i]);
            i = k;
        }
        if (o < cap)
            o += (size_t)snprintf(buf + o, cap - o, ":%" PRIu64 ":%" PRIu32 "+%" PRIu32,
                                  (now - s->t0_ns) / 1000000u, s->base, s->n);
    }
    /* the nodes known lost: no job goes there */
    for (uint32_t i = 0, first = 1; d->lost && i < d->topo->n_nodes && o + 16 < cap; i++)
        if (hbd_node_lost(d, i)) {
            o += (size_t)snprintf(buf + o, cap - o, "%s%" PRIu32, first ? " lost=" : ".", i);
            first = 0;
        }
    hbd_reply(r, "%s", buf);
    free(buf);
}

int hbd_relay_init(hbd_t *d)
{
    d->relay = calloc(1, sizeof(*d->relay));
    if (d->relay == NULL)
        return HB_ERR_NOMEM;
    d->relay->is_root = d->self == root_node(d);
    d->relay->sent_tail = &d->relay->sent;
    if (d->relay->is_root) {
        int rc = hbd_slots_init(&d->relay->slots, d->topo, HBD_SYNC_JOB_FIRST, HBD_SYNC_JOB_END,
                                HBD_RELAY_JOB_NSYNC);
        if (rc != 0)
            return rc;
    }
    hbd_hooks_frame(d, HBD_WIRE_JOB, on_msg, NULL);
    int rc = hbd_hooks_join(d, on_join);
    return rc != 0 ? rc : hbd_hooks_lost(d, on_lost, 40);
}

void hbd_relay_fini(hbd_t *d)
{
    rl_state_t *R = d->relay;
    if (R == NULL)
        return;
    rl_job_t *J;
    while ((J = job_next(d->jobs.head)) != NULL) {
        if (J->run != NULL && !J->finishing) {
            struct evbuffer *out = bufferevent_get_output(J->run);
            evbuffer_add_printf(out, "%" PRIu32 " err %d daemon shutting down\n", d->self,
                                HB_ERR_UNAVAIL);
            evbuffer_write(out, bufferevent_getfd(J->run));
        }
        job_free(J);
    }
    while (R->outq != NULL) {
        rl_out_t *o = R->outq;
        R->outq = o->next;
        free(o);
    }
    R->outq_bytes = 0;
    R->reading_paused = 0;
    while (R->sent != NULL) {
        rl_sent_t *e = R->sent;
        R->sent = e->next;
        free(e);
    }
    R->sent_tail = &R->sent;
    hbd_timer_free(R->tick);
    hbd_slots_fini(&R->slots);
    free(R->census_wait);
    while (R->allocq != NULL) {
        rl_alloc_t *q = R->allocq;
        R->allocq = q->next;
        free(q->member);
        free(q);
    }
    free(R);
    d->relay = NULL;
}
