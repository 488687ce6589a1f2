/* hbd_fence.c: PMIx fence with data across nodes: blobs exchanged directly (small clusters),
 * gathered up the chassis tree (whole job) or at the subset's lowest node (subset fences), their
 * concatenation released down. */
#include "hb_config.h"
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_env.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hbd_hooks.h"
#include "hbd_barrier.h"
#include "hbd_cron.h"
#include "hbd_fence.h"
#include "hbd_net.h"
#include "hbd_prof.h"
#include "hb_status.h"

/*
 * Whole-job fences: the data tree is the chassis tree with the chassis opened up: a port's
 * parent is its chassis' Center, a Center's parent is the node of the parent chassis it links
 * to (none for the root chassis' Center, the root). Children: a Center's ports, and the
 * Centers of the chassis a node links down to. Every edge is a link hibard already has
 * (chassis mates and tree links are its neighbours).
 *
 * Subset fences (ids with HBD_FENCE_ID_SUBSET set, see hbd_pmix.h): only the nodes hosting
 * the named ranks take part. They route through the subset's lowest node (the leader): every
 * other participant sends it its blob, it releases the concatenation to each of them. The
 * other nodes of the cluster see nothing of it. Links to the leader are made on demand
 * (hbd_net_link); a star is one hop up and one hop down for every blob, and a subset is
 * usually small (MPI_Comm_spawn/connect, a partial fence of an MPI tool).
 *
 * Up: a node sends its parent the concatenation of its own blob and of its children's, once
 * it has them all. Down: the root has every blob; the concatenation goes down every edge
 * unchanged, or what the fence's trim leaves of it for the nodes below that edge
 * (hbd_fence_start_trimmed: hbd_ranks.c's small collectives). Each blob crosses each edge at most
 * once per direction (the per-link byte counters of the "fence_stats" control command show it).
 * Messages are HBD_WIRE_FENCE frames (job 0, coll_id = the fence's id) whose payload starts with
 * direction (1 up, 2 down), 3 zero bytes, the total length and this chunk's offset (u32 le each),
 * then up to HBD_FENCE_CHUNK (256 KiB) bytes; a link delivers its frames in order, so the chunks of
 * one transfer arrive one after the other. A frame that cannot go yet (link coming up, peer queue
 * full) waits with the rest of its transfer in a send queue retried every millisecond, behind which
 * later transfers to the same node queue up.
 *
 * Direct exchange (off by default; HIBAR_FENCE_DIRECT_MAX=N in every daemon's environment
 * turns it on for whole-job fences on clusters of 2..N nodes): every node sends its blob
 * (empty for a fence without data) straight to every other node (direction 3) and completes
 * once it has the other N - 1 blobs, concatenated in node order. One hop instead of two, and
 * no root sending the whole concatenation down each of its edges, which the profile showed as
 * the tree's critical path (HIBAR_FENCE_PROF, 8 namespace hosts x 4 ranks x 1 KiB, star tree:
 * 5 ms median from the root's release to a node's receipt, 0.3 ms for a blob going up). But
 * it costs N - 1 messages per node instead of 2, and on this loaded 2-core host, measured
 * interleaved with the tree in one run (tests/netns/fence-compare --impls "hibar hibar-tree"),
 * the tree was as fast or faster (1 KiB steady state 11.0 ms tree, 14.1 ms direct), so it is
 * not the default. Links between every two nodes are made when a job registers
 * (hbd_fence_prelink).
 *
 * A fence fails with TIMEOUT after its own timeout (PMIX_TIMEOUT) or, without one, the
 * cluster's barrier_timeout_ms, and with PEER_LOST once the cluster lost a node (heartbeats
 * or a broken link find it; the ABORT flood tells every daemon which one): a whole-job fence
 * always, a subset fence only when the lost node is one of its participants (or unknown).
 */
#define HBD_FENCE_HDR HBD_WIRE_FENCE_HDR
#define HBD_FENCE_CHUNK HBD_WIRE_FENCE_MAX_DATA
#define HBD_FENCE_UP 1
#define HBD_FENCE_DOWN 2
#define HBD_FENCE_DIRECT 3
#define HBD_FENCE_DIRECT_MAX 0 /* off unless HIBAR_FENCE_DIRECT_MAX says */
#define HBD_FENCE_MAX_LEN (256u << 20)

typedef struct xfer {
    uint32_t from;
    uint8_t *buf;
    uint32_t total, got;
    int done;
} xfer_t;

typedef struct hbd_fence {
    uint64_t coll;
    int subset;    /* star through the lowest participant */
    int direct;    /* whole-job fence by direct exchange */
    uint8_t *part; /* subset fence once started: [n_nodes] 1 for the participants */
    int arrived;
    uint8_t *mine;
    size_t n_mine;
    xfer_t *kids; /* [cap_kids], n_kids used */
    uint32_t n_kids, cap_kids, kids_done;
    xfer_t down;
    int sent_up;
    uint64_t t0, timeout_ns;
    hbd_fence_cb_t cb;
    hbd_fence_trim_t trim; /* or NULL: the concatenation goes down unchanged */
    void *arg;
    struct hbd_fence *next;
} hbd_fence_t;

/* The rest of a transfer that could not be sent at once. */
typedef struct out {
    uint32_t to;
    uint64_t coll;
    uint8_t dir;
    uint8_t *data; /* bytes [base, total) of the transfer */
    uint32_t total, off, base;
    uint64_t t0;
    struct out *next;
} out_t;

/* Per-link fence data bytes (chunk payload, headers excluded) and frames. */
typedef struct link_ctr {
    uint64_t tx_up, tx_down, rx_up, rx_down, tx_frames, rx_frames;
} link_ctr_t;

/* The fence engine's state in the daemon context (d->fence). */
struct hbd_fence_state {
    hbd_fence_t *fences;
    out_t *outs, **outs_tail;
    hbd_timer_t *check, *retry;
    link_ctr_t *links;   /* [n_nodes] */
    uint32_t direct_max; /* HIBAR_FENCE_DIRECT_MAX */
    int warned;          /* an unexpected data frame was logged */
};
typedef struct hbd_fence_state fence_state_t;

static void check_arm(hbd_t *d);
static void retry_arm(hbd_t *d);

/* HIBAR_FENCE_PROF=1: one stderr line per step of every fence ("fprof NODE STAGE COLL T_NS", a
 * CLOCK_MONOTONIC time, shared by the namespace hosts of the test bed), for profiling. */
void hbd_fence_prof(const hbd_t *d, const char *stage, uint64_t coll)
{
    hbd_prof(d, HBD_PROF_FENCE, "fprof", stage, coll);
}

static link_ctr_t *link_of(hbd_t *d, uint32_t node)
{
    fence_state_t *S = d->fence;
    if (S->links == NULL)
        S->links = calloc(d->topo->n_nodes, sizeof(*S->links));
    return S->links != NULL && node < d->topo->n_nodes ? &S->links[node] : NULL;
}

static uint32_t data_parent(const hbd_t *d, uint32_t n)
{
    const hb_topo_node_t *tn = &d->topo->nodes[n];
    if (tn->port != 0)
        return d->topo->chassis[tn->chassis].nodes[0];
    return tn->parent; /* HB_TOPO_NONE at the root */
}

/* Children of node n into out (capacity: chassis size + child chassis). */
static uint32_t data_children(const hbd_t *d, uint32_t n, uint32_t *out)
{
    const hb_topo_node_t *tn = &d->topo->nodes[n];
    const hb_topo_chassis_t *c = &d->topo->chassis[tn->chassis];
    uint32_t k = 0;
    if (tn->port == 0)
        for (uint32_t i = 1; i < c->n_nodes; i++)
            out[k++] = c->nodes[i];
    for (uint32_t i = 0; i < tn->n_children; i++)
        out[k++] = d->topo->chassis[tn->children[i]].nodes[0];
    return k;
}

int hbd_fence_under(const hbd_t *d, int star, uint32_t kid, uint32_t node)
{
    if (star || node >= d->topo->n_nodes)
        return node == kid;
    for (uint32_t n = node, hops = 0; n != HB_TOPO_NONE && hops <= d->topo->n_nodes; hops++) {
        if (n == kid)
            return 1;
        n = data_parent(d, n);
    }
    return 0;
}

static void fence_free(hbd_t *d, hbd_fence_t *f)
{
    fence_state_t *S = d->fence;
    for (hbd_fence_t **pp = &S->fences; *pp != NULL; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    for (uint32_t i = 0; i < f->n_kids; i++)
        free(f->kids[i].buf);
    free(f->kids);
    free(f->part);
    free(f->mine);
    free(f->down.buf);
    free(f);
}

static hbd_fence_t *fence_find(hbd_t *d, uint64_t coll)
{
    fence_state_t *S = d->fence;
    for (hbd_fence_t *f = S->fences; f != NULL; f = f->next)
        if (f->coll == coll)
            return f;
    return NULL;
}

/* Whole-job fences of this cluster exchange directly (see above)? */
int hbd_fence_direct(const hbd_t *d)
{
    uint32_t max = d->fence != NULL ? d->fence->direct_max : HBD_FENCE_DIRECT_MAX;
    return d->topo->n_nodes > 1 && d->topo->n_nodes <= max;
}

void hbd_fence_prelink(hbd_t *d)
{
    if (!d->ready || !hbd_fence_direct(d))
        return;
    /* the higher-numbered side connects; WOULD_BLOCK is the normal answer (link coming up) */
    for (uint32_t k = 0; k < d->topo->n_nodes; k++)
        if (k != d->self && !hbd_net_peer_up(d, k))
            (void)hbd_net_link(d, k);
}

static hbd_fence_t *fence_get(hbd_t *d, uint64_t coll)
{
    fence_state_t *S = d->fence;
    hbd_fence_t *f = fence_find(d, coll);
    if (f != NULL)
        return f;
    f = calloc(1, sizeof(*f));
    const hb_topo_node_t *tn = &d->topo->nodes[d->self];
    int subset = (coll & HBD_FENCE_ID_SUBSET) != 0;
    int direct = !subset && hbd_fence_direct(d);
    uint32_t cap = subset || direct ? d->topo->n_nodes
                                    : d->topo->chassis[tn->chassis].n_nodes + tn->n_children;
    uint32_t *ids = calloc(cap ? cap : 1, sizeof(uint32_t));
    if (f == NULL || ids == NULL || (f->kids = calloc(cap ? cap : 1, sizeof(xfer_t))) == NULL) {
        free(f);
        free(ids);
        return NULL;
    }
    f->coll = coll;
    f->subset = subset;
    f->cap_kids = cap;
    if (direct) { /* the other nodes send us their blobs; nobody sends down */
        f->direct = 1;
        for (uint32_t k = 0; k < d->topo->n_nodes; k++)
            if (k != d->self)
                f->kids[f->n_kids++].from = k;
        f->down.from = HB_TOPO_NONE;
    } else if (!subset) {
        f->n_kids = data_children(d, d->self, ids);
        for (uint32_t i = 0; i < f->n_kids; i++)
            f->kids[i].from = ids[i];
        f->down.from = data_parent(d, d->self);
    } else {
        f->down.from = HB_TOPO_NONE; /* known at the start: kids appear as their data comes */
    }
    free(ids);
    f->t0 = hb_time_now_ns();
    f->next = S->fences;
    S->fences = f;
    check_arm(d); /* also for state made by early messages of a fence that never comes */
    return f;
}

/* Send chunks of a transfer from offset *off_p on; WOULD_BLOCK leaves *off_p where to resume. */
static int send_from(hbd_t *d, uint32_t to, uint64_t coll, int dir, const uint8_t *data,
                     uint32_t base, uint32_t len, uint32_t *off_p)
{
    uint8_t pl[HBD_FENCE_HDR];
    link_ctr_t *lc = link_of(d, to);
    do {
        uint32_t off = *off_p;
        uint32_t n = len - off > HBD_FENCE_CHUNK ? HBD_FENCE_CHUNK : len - off;
        memset(pl, 0, HBD_FENCE_HDR);
        pl[0] = (uint8_t)dir;
        hbd_wire_put32(pl + 4, len);
        hbd_wire_put32(pl + 8, off);
        int rc;
        if (!hbd_net_peer_up(d, to) && (rc = hbd_net_link(d, to)) != 0)
            return rc;
        /* header and chunk go straight into ZeroMQ's message: one copy */
        rc = hbd_net_send2(d, to, HBD_WIRE_FENCE, 0, coll, pl, HBD_FENCE_HDR,
                           n > 0 ? data + (off - base) : NULL, n);
        if (rc != 0)
            return rc;
        if (lc != NULL) {
            lc->tx_frames++;
            *(dir != HBD_FENCE_DOWN ? &lc->tx_up : &lc->tx_down) += n;
        }
        *off_p = off + n;
    } while (*off_p < len);
    return 0;
}

/* Send a whole transfer of len bytes to node `to`, now or (the rest) from the send queue. */
static int send_all(hbd_t *d, uint32_t to, uint64_t coll, int dir, const uint8_t *data, size_t len)
{
    fence_state_t *S = d->fence;
    uint32_t off = 0;
    int queued = 0;
    for (out_t *o = S->outs; o != NULL; o = o->next)
        queued |= o->to == to;
    int rc =
        queued ? HB_ERR_WOULD_BLOCK : send_from(d, to, coll, dir, data, 0, (uint32_t)len, &off);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    out_t *o = calloc(1, sizeof(*o));
    uint32_t rest = (uint32_t)len - off;
    if (o == NULL || (o->data = malloc(rest ? rest : 1)) == NULL) {
        free(o);
        return HB_ERR_NOMEM;
    }
    if (rest > 0)
        memcpy(o->data, data + off, rest);
    o->to = to;
    o->coll = coll;
    o->dir = (uint8_t)dir;
    o->total = (uint32_t)len;
    o->off = o->base = off;
    o->t0 = hb_time_now_ns();
    *S->outs_tail = o;
    S->outs_tail = &o->next;
    retry_arm(d);
    return 0;
}

static void finish(hbd_t *d, hbd_fence_t *f, int status)
{
    hbd_fence_cb_t cb = f->cb;
    void *arg = f->arg;
    uint8_t *data = NULL;
    size_t len = 0;
    if (status == 0) {
        data = f->down.buf;
        len = f->down.total;
        f->down.buf = NULL;
    }
    uint64_t coll = f->coll;
    fence_free(d, f);
    hbd_fence_prof(d, "done", coll);
    if (cb != NULL)
        cb(d, status, data, len, arg);
    else
        free(data);
}

static void retry_cb(hbd_t *d, void *arg)
{
    fence_state_t *S = d->fence;
    uint64_t now = hb_time_now_ns(), to = (uint64_t)d->cfg->barrier_timeout_ms * 1000000ull;
    (void)arg;
    /* one pass in queue order; a blocked node keeps its later transfers behind it */
    uint32_t blocked[16];
    uint32_t n_blocked = 0;
    for (out_t **pp = &S->outs; *pp != NULL;) {
        out_t *o = *pp;
        int skip = 0;
        for (uint32_t i = 0; i < n_blocked; i++)
            skip |= blocked[i] == o->to;
        int rc = skip ? HB_ERR_WOULD_BLOCK
                      : send_from(d, o->to, o->coll, o->dir, o->data, o->base, o->total, &o->off);
        if (rc == HB_ERR_WOULD_BLOCK && (to == 0 || now - o->t0 <= to)) {
            if (!skip && n_blocked < 16)
                blocked[n_blocked++] = o->to;
            pp = &o->next;
            continue;
        }
        if (rc != 0) {
            hbd_fence_t *f = fence_find(d, o->coll);
            if (rc == HB_ERR_WOULD_BLOCK)
                rc = d->lost ? HB_ERR_PEER_LOST : HB_ERR_TIMEOUT;
            hb_log_warn("fence %" PRIu64 ": data for node %" PRIu32 " not sent: %s", o->coll, o->to,
                        hb_status_str(rc));
            if (f != NULL)
                finish(d, f, rc);
        }
        *pp = o->next;
        free(o->data);
        free(o);
    }
    S->outs_tail = &S->outs;
    while (*S->outs_tail != NULL)
        S->outs_tail = &(*S->outs_tail)->next;
    if (S->outs != NULL)
        retry_arm(d);
}

/* A link that refused fence data has room again: send on at once (the timer is the fallback). */
static void on_room(hbd_t *d)
{
    if (d->fence->outs != NULL)
        retry_cb(d, NULL);
}

static void retry_arm(hbd_t *d)
{
    fence_state_t *S = d->fence;
    hbd_timer_arm(S->retry, 1000, 0);
}

/* The release to kid i: the concatenation, or what the fence's trim leaves of it for the nodes
 * at and below that kid. */
static int send_down(hbd_t *d, hbd_fence_t *f, uint32_t i)
{
    uint8_t *cut = NULL;
    size_t n_cut = 0;
    int rc = f->trim != NULL ? f->trim(d, f->arg, f->subset, f->kids[i].from, f->down.buf,
                                       f->down.total, &cut, &n_cut)
                             : 0;
    if (rc < 0)
        return rc;
    if (rc == 0)
        return send_all(d, f->kids[i].from, f->coll, HBD_FENCE_DOWN, f->down.buf, f->down.total);
    rc = send_all(d, f->kids[i].from, f->coll, HBD_FENCE_DOWN, cut, n_cut);
    free(cut);
    return rc;
}

/* Everything below and here arrived: go up, or (root) start the release. */
static void progress(hbd_t *d, hbd_fence_t *f)
{
    if (!f->arrived || f->kids_done < f->n_kids || f->sent_up)
        return;
    if (f->n_kids == 0 && f->down.from != HB_TOPO_NONE) { /* a leaf: its own blob, no copy */
        f->sent_up = 1;
        hbd_fence_prof(d, "send_up", f->coll);
        int rc = send_all(d, f->down.from, f->coll, HBD_FENCE_UP, f->mine, f->n_mine);
        free(f->mine);
        f->mine = NULL;
        if (rc != 0)
            finish(d, f, rc);
        return;
    }
    size_t total = f->n_mine;
    for (uint32_t i = 0; i < f->n_kids; i++)
        total += f->kids[i].total;
    if (total > HBD_FENCE_MAX_LEN) {
        finish(d, f, HB_ERR_TRUNCATED);
        return;
    }
    uint8_t *all = malloc(total ? total : 1);
    if (all == NULL) {
        finish(d, f, HB_ERR_NOMEM);
        return;
    }
    /* ours first, then the children's (tree: what goes up; the root's is what every node gets);
     * direct exchange: in node order (the kids are the other nodes, ascending), so every node
     * gets the same concatenation, as with the tree */
    size_t off = 0;
    int mine_done = 0;
    for (uint32_t i = 0; i <= f->n_kids; i++) {
        if (!mine_done && (!f->direct || i == f->n_kids || f->kids[i].from > d->self)) {
            if (f->n_mine > 0)
                memcpy(all + off, f->mine, f->n_mine);
            off += f->n_mine;
            mine_done = 1;
        }
        if (i == f->n_kids)
            break;
        if (f->kids[i].total > 0)
            memcpy(all + off, f->kids[i].buf, f->kids[i].total);
        off += f->kids[i].total;
        free(f->kids[i].buf);
        f->kids[i].buf = NULL;
    }
    f->sent_up = 1;
    free(f->mine);
    f->mine = NULL;
    if (f->direct) { /* every blob is here: done (ours went out at the start) */
        hbd_fence_prof(d, "release", f->coll);
        f->down.buf = all;
        f->down.total = (uint32_t)total;
        finish(d, f, 0);
        return;
    }
    hbd_fence_prof(d, f->down.from != HB_TOPO_NONE ? "send_up" : "release", f->coll);
    if (f->down.from != HB_TOPO_NONE) {
        int rc = send_all(d, f->down.from, f->coll, HBD_FENCE_UP, all, total);
        free(all);
        if (rc != 0)
            finish(d, f, rc);
        return;
    }
    /* root: release */
    f->down.buf = all;
    f->down.total = (uint32_t)total;
    f->down.done = 1;
    for (uint32_t i = 0; i < f->n_kids; i++) {
        int rc = send_down(d, f, i);
        if (rc != 0) {
            finish(d, f, rc);
            return;
        }
    }
    hbd_fence_prof(d, "sent", f->coll);
    finish(d, f, 0);
}

static void check_arm(hbd_t *d)
{
    fence_state_t *S = d->fence;
    hbd_timer_arm(S->check, 100000, 0);
}

/* Does the loss of node `lost` end fence f? */
static int lost_hits(const hbd_t *d, const hbd_fence_t *f)
{
    if (!f->subset)
        return 1; /* a whole-cluster job's fence: every node takes part */
    for (uint32_t n = 0; f->part != NULL && n < d->topo->n_nodes; n++)
        if (f->part[n] && hbd_node_lost(d, n))
            return 1;
    for (uint32_t i = 0; f->part == NULL && i < f->n_kids; i++) /* early: the senders so far */
        if (hbd_node_lost(d, f->kids[i].from))
            return 1;
    return f->part == NULL && f->down.from != UINT32_MAX && hbd_node_lost(d, f->down.from);
}

/* Fences fail when the cluster lost a node they involve, or after their timeout. */
static void check_cb(hbd_t *d, void *arg)
{
    fence_state_t *S = d->fence;
    uint64_t now = hb_time_now_ns(), def = (uint64_t)d->cfg->barrier_timeout_ms * 1000000ull;
    (void)arg;
    for (hbd_fence_t *f = S->fences, *next; f != NULL; f = next) {
        next = f->next;
        uint64_t to = f->timeout_ns ? f->timeout_ns : def;
        if (d->lost && lost_hits(d, f))
            finish(d, f, HB_ERR_PEER_LOST);
        else if (to > 0 && now - f->t0 > to)
            finish(d, f, HB_ERR_TIMEOUT);
    }
    if (S->fences != NULL)
        check_arm(d);
}

/* A subset fence's shape once this node knows the participants (ascending, with self). */
static int subset_setup(hbd_fence_t *f, uint32_t self, const uint32_t *nodes, uint32_t n_nodes)
{
    uint32_t leader = nodes[0];
    for (uint32_t i = 0; i < f->n_kids; i++) {
        int in = 0;
        for (uint32_t k = 0; k < n_nodes; k++)
            in |= nodes[k] == f->kids[i].from;
        if (self != leader || !in) {
            hb_log_warn("fence %" PRIu64 ": node %" PRIu32 " sent data but is no participant "
                        "below this node (fences over different rank sets disagree)",
                        f->coll, f->kids[i].from);
            return HB_ERR_PROTO;
        }
    }
    if (self != leader) {
        f->down.from = leader;
        return 0;
    }
    for (uint32_t k = 1; k < n_nodes; k++) {
        int have = 0;
        for (uint32_t i = 0; i < f->n_kids; i++)
            have |= f->kids[i].from == nodes[k];
        if (!have && f->n_kids < f->cap_kids)
            f->kids[f->n_kids++].from = nodes[k];
    }
    return 0;
}

static int start_checks(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes)
{
    if (d->lost && nodes == NULL)
        return HB_ERR_PEER_LOST;
    for (uint32_t k = 0; d->lost && nodes != NULL && k < n_nodes; k++)
        if (hbd_node_lost(d, nodes[k]))
            return HB_ERR_PEER_LOST;
    if (!d->ready)
        return HB_ERR_NOT_INIT;
    if (((coll & HBD_FENCE_ID_SUBSET) != 0) != (nodes != NULL) ||
        (nodes != NULL && (n_nodes == 0 || n_nodes > d->topo->n_nodes)))
        return HB_ERR_INVAL;
    return 0;
}

int hbd_fence_start(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                    uint32_t timeout_ms, const void *data, size_t len, hbd_fence_cb_t cb, void *arg)
{
    void *copy = NULL;
    if (len > 0 && (copy = malloc(len)) == NULL)
        return HB_ERR_NOMEM;
    if (len > 0)
        memcpy(copy, data, len);
    return hbd_fence_start_owned(d, coll, nodes, n_nodes, timeout_ms, copy, len, cb, arg);
}

int hbd_fence_start_owned(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                          uint32_t timeout_ms, void *data, size_t len, hbd_fence_cb_t cb, void *arg)
{
    return hbd_fence_start_trimmed(d, coll, nodes, n_nodes, timeout_ms, data, len, NULL, cb, arg);
}

int hbd_fence_start_trimmed(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                            uint32_t timeout_ms, void *data, size_t len, hbd_fence_trim_t trim,
                            hbd_fence_cb_t cb, void *arg)
{
    int rc = start_checks(d, coll, nodes, n_nodes);
    hbd_fence_t *f = rc == 0 ? fence_get(d, coll) : NULL;
    if (rc == 0 && f == NULL)
        rc = HB_ERR_NOMEM;
    if (rc == 0 && f->arrived)
        rc = HB_ERR_BUSY;
    if (rc != 0) {
        free(data);
        return rc;
    }
    f->mine = data; /* taken over: the blob goes out from here, no copy */
    f->n_mine = len;
    f->arrived = 1;
    f->cb = cb;
    f->trim = trim;
    f->arg = arg;
    f->t0 = hb_time_now_ns();
    f->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
    check_arm(d);
    if (nodes != NULL) {
        rc = (f->part = calloc(d->topo->n_nodes, 1)) == NULL ? HB_ERR_NOMEM : 0;
        for (uint32_t k = 0; rc == 0 && k < n_nodes; k++)
            if (nodes[k] < d->topo->n_nodes)
                f->part[nodes[k]] = 1;
        if (rc == 0)
            rc = subset_setup(f, d->self, nodes, n_nodes);
        if (rc != 0) {
            finish(d, f, rc);
            return 0;
        }
    }
    for (uint32_t i = 0; f->direct && i < f->n_kids; i++) { /* our blob to every other node */
        rc = send_all(d, f->kids[i].from, f->coll, HBD_FENCE_DIRECT, f->mine, f->n_mine);
        if (rc != 0) {
            finish(d, f, rc);
            return 0;
        }
    }
    if (f->direct)
        hbd_fence_prof(d, "send_up", f->coll);
    progress(d, f);
    return 0;
}

/* A FENCE frame from a neighbour (ZeroMQ link, data plane or fast lane). */
static void on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    hbd_poll_kick(d);
    if (m->len < HBD_FENCE_HDR)
        return;
    int dir = m->payload[0];
    uint32_t total = hbd_wire_get32(m->payload + 4), off = hbd_wire_get32(m->payload + 8);
    uint32_t n = m->len - HBD_FENCE_HDR;
    link_ctr_t *lc = link_of(d, m->src);
    if (lc != NULL) {
        lc->rx_frames++;
        *(dir != HBD_FENCE_DOWN ? &lc->rx_up : &lc->rx_down) += n;
    }
    hbd_fence_t *f = fence_get(d, m->coll_id);
    if (f == NULL)
        return;
    xfer_t *x = NULL;
    if (dir == HBD_FENCE_DOWN && m->src == f->down.from) {
        x = &f->down;
    } else if (dir == HBD_FENCE_UP || (dir == HBD_FENCE_DIRECT && f->direct)) {
        for (uint32_t i = 0; i < f->n_kids; i++)
            if (f->kids[i].from == m->src)
                x = &f->kids[i];
        /* a subset fence's leader learns its participants from their data (until it starts) */
        if (x == NULL && f->subset && !f->arrived && m->src != d->self && f->n_kids < f->cap_kids) {
            x = &f->kids[f->n_kids++];
            x->from = m->src;
        }
    }
    /* checked, never trusted: a wrong sender, size or order is dropped and logged once */
    if (x == NULL || x->done || total > HBD_FENCE_MAX_LEN || off != x->got ||
        (uint64_t)off + n > total || (off == 0) != (x->buf == NULL && x->got == 0)) {
        if (!d->fence->warned++)
            hb_log_warn("fence %" PRIu64 ": unexpected data frame from node %" PRIu32 " dropped",
                        m->coll_id, m->src);
        return;
    }
    if (off == 0) {
        hbd_fence_prof(d, x != &f->down ? "rx_up0" : "rx_down0", f->coll);
        x->total = total;
        x->buf = malloc(total ? total : 1);
        if (x->buf == NULL) {
            finish(d, f, HB_ERR_NOMEM);
            return;
        }
    } else if (total != x->total) {
        return;
    }
    if (n > 0)
        memcpy(x->buf + off, m->payload + HBD_FENCE_HDR, n);
    x->got += n;
    if (x->got < x->total)
        return;
    x->done = 1;
    hbd_fence_prof(d, x != &f->down ? "rx_up" : "rx_down", f->coll);
    if (x != &f->down) {
        f->kids_done++;
        progress(d, f);
        return;
    }
    /* the release: pass it on, then complete here (a node that has not arrived yet cannot
     * receive it: the release needs its contribution) */
    for (uint32_t i = 0; i < f->n_kids; i++) {
        int rc = send_down(d, f, i);
        if (rc != 0) {
            finish(d, f, rc);
            return;
        }
    }
    finish(d, f, 0);
}

void hbd_fence_stats(hbd_t *d, char *buf, size_t cap)
{
    fence_state_t *S = d->fence;
    size_t off = (size_t)snprintf(buf, cap, "ok");
    for (uint32_t i = 0; S->links != NULL && i < d->topo->n_nodes && off < cap; i++) {
        const link_ctr_t *l = &S->links[i];
        if (l->tx_frames == 0 && l->rx_frames == 0)
            continue;
        off += (size_t)snprintf(buf + off, cap - off,
                                " %" PRIu32 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64, i,
                                l->tx_up, l->tx_down, l->rx_up, l->rx_down);
    }
}

int hbd_fence_init(hbd_t *d)
{
    fence_state_t *S = calloc(1, sizeof(*S));
    const char *e = getenv("HIBAR_FENCE_PROF");
    uint64_t v = HBD_FENCE_DIRECT_MAX;
    if (S == NULL)
        return HB_ERR_NOMEM;
    d->fence = S;
    S->outs_tail = &S->outs;
    if (e != NULL && *e != '\0' && *e != '0')
        d->prof |= HBD_PROF_FENCE;
    (void)hb_env_u64("HIBAR_FENCE_DIRECT_MAX", 4096, &v);
    S->direct_max = (uint32_t)v;
    S->check = hbd_timer_new(d, check_cb, NULL);
    S->retry = hbd_timer_new(d, retry_cb, NULL);
    if (S->check == NULL || S->retry == NULL)
        return HB_ERR_NOMEM;
    hbd_hooks_frame(d, HBD_WIRE_FENCE, on_msg, NULL);
    return hbd_hooks_room(d, on_room);
}

void hbd_fence_fini(hbd_t *d)
{
    fence_state_t *S = d->fence;
    if (S == NULL)
        return;
    while (S->fences != NULL)
        finish(d, S->fences, HB_ERR_UNAVAIL);
    while (S->outs != NULL) {
        out_t *o = S->outs;
        S->outs = o->next;
        free(o->data);
        free(o);
    }
    hbd_timer_free(S->check);
    hbd_timer_free(S->retry);
    free(S->links);
    free(S);
    d->fence = NULL;
}
