/* hbd_coll.c: collectives across nodes: every daemon builds the same coll/ schedule and runs its
 * node's hb_coll_exec over COLL frames. */
#include "hbd_hooks.h"
#include "hbd_coll.h"
#include "hbd_cron.h"

#include "coll_model.h"
#include "coll_sched.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hbd_barrier.h"
#include "hbd_model.h"
#include "hbd_net.h"
#include "hbd_prof.h"
#include "hb_status.h"

#include <event2/event.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(HBD_WIRE_COLL_OPS == HB_COLL_OP_COUNT && HBD_WIRE_COLL_ALGS == HB_COLL_ALG_COUNT &&
                   HBD_WIRE_COLL_ALLTOALL == HB_COLL_ALLTOALL,
               "the wire's collective ops and algorithms are coll/'s");

/*
 * A collective is named by its id: the daemons' "coll" commands are numbered from 0 in the
 * order each daemon receives them, so every daemon must be asked the same sequence (as with
 * "barrier"). Every COLL frame carries the collective's arguments, so a daemon that gets a
 * frame before its own command builds the schedule from the frame (the executor accepts
 * messages before START); when the command comes, arguments that differ fail it with
 * HB_ERR_MISMATCH, and so does a frame whose arguments differ from the daemon's.
 *
 * Data. A control command's collective moves a pattern derived from (collective id, node,
 * byte), and every daemon checks its output against the pattern: the reply says whether the
 * data arrived intact. A job's collective (hbd_coll_job_create, ids with HBD_COLL_ID_JOB, from
 * libhibar ranks through hbd_ranks.c) moves the ranks' data: the caller fills the input and
 * gets the output in its callback. Its arguments (per-node ranks and -v counts) were agreed
 * by every node before it starts, but a fast peer's segments can arrive before this node's
 * agreement finished: they are kept (copied, bounded by HBD_COLL_STASH_MAX bytes) and fed
 * to the run when it is created.
 *
 * Sends go through a FIFO per collective: a frame waits while the on-demand link to its
 * peer comes up (hbd_net_link) or the peer's ZeroMQ queue is full, retried from a 1 ms
 * timer. A collective that has not finished after HIBAR_COLL_TIMEOUT_MS (default 60000)
 * fails with HB_ERR_TIMEOUT; a lost node fails every collective in flight.
 */

#define HBD_COLL_ACTS 64
#define HBD_COLL_MAX_TOTAL (1ull << 30)   /* layout bytes one collective may hold on a node */
#define HBD_COLL_LINK_NS 50000000ull      /* HELLO resend while a link comes up */
#define HBD_COLL_STASH_MAX (256ull << 20) /* early segments of job collectives kept */
/* Pipelining segment: control commands (benchmarks, the model's figures) default to 32 KiB;
 * the ranks' collectives use the largest frame, which costs a quarter of the CPU per byte on
 * the plain data plane (fewer messages, wake-ups and system calls). */
#define HBD_COLL_SEG_DEFAULT 32768u
#define HBD_COLL_SEG_JOB HBD_WIRE_COLL_MAX_DATA
#define HBD_COLL_RD_CHUNK 4096ull      /* input read on demand: bookkeeping granule */
#define HBD_COLL_RD_AHEAD (1ull << 20) /* read ahead per stall of the links */

/* A FAIL frame for node `to` that could not go yet (its link coming up, or full). */
typedef struct hbd_coll_tell {
    struct hbd_coll_tell *next;
    uint32_t to;
    uint64_t id, t0;
    uint8_t pl[HBD_WIRE_COLL_HDR], st[HBD_WIRE_COLL_FAIL_LEN];
} hbd_coll_tell_t;

/* A segment of a job collective that arrived before the run existed here. */
typedef struct hbd_coll_early {
    struct hbd_coll_early *next;
    uint64_t id, t_rx;
    uint32_t from;
    hbd_wire_coll_t key;
    uint64_t len;
    uint8_t data[];
} hbd_coll_early_t;

struct hbd_coll_run {
    struct hbd_coll_run *next;
    uint64_t id;
    hbd_wire_coll_t key; /* op, alg, root, size, lanes, seg_size (seq, off unused) */
    hb_coll_sched_t *s;
    hb_coll_exec_t *x;
    uint8_t *in;       /* the node's input, node order (the executor reads it in place) */
    hbd_zc_t *work_zc; /* owns the executor's layout buffer once it lent ZeroMQ a segment */
    hbd_zc_t *in_zc;   /* owns `in` once it lent ZeroMQ a segment */
    uint64_t in_len;
    hb_coll_act_t *q; /* pending sends: FIFO per destination (run_flush) */
    uint8_t *qsent;   /* [qcap] q[i] went out (behind the head: another link was full) */
    size_t qhead, nq, qcap;
    hbd_reply_t *conn;
    int started, complete, failed, status, delivered, warned;
    int told; /* its failure went to the nodes it sends to (run_fail_tell) */
    int bulk; /* every frame on the data plane's ZeroMQ link (coll_bulk_min) */
    double predicted_us;
    uint64_t t_created, t_start, t_done, last_link_ns;
    uint64_t frames_tx, frames_rx;
    /* a job's collective: the caller's callback instead of a reply, its own node table */
    hbd_coll_cb_t cb;
    void *cb_arg;
    uint32_t *ranks_of;
    /* a job on part of the cluster: the schedule runs over its nodes only, node index i being
     * cluster node map[i] (ascending); NULL: index = cluster node */
    uint32_t *map, n_map, *site_of;
    uint32_t me; /* this node's index */
    /* input still to be read (hbd_coll_job_args_t.read): a flag per HBD_COLL_RD_CHUNK of `in` */
    int (*read)(void *read_arg, uint64_t off, uint8_t *dst, uint64_t len);
    void *read_arg;
    uint8_t *rd_done;
    uint64_t rd_next; /* read-ahead cursor, in chunks */
    /* every segment received, once the executor took it (hbd_coll_job_args_t.on_seg) */
    int (*on_seg)(void *seg_arg, const hb_coll_sched_t *s, uint64_t lo, uint64_t len,
                  const uint8_t *data);
    void *seg_arg;
};

typedef struct hbd_coll_state {
    hbd_coll_run_t *runs;
    uint64_t next_id; /* id of the next local command */
    hbd_timer_t *timer;
    uint32_t *site_of;
    hb_coll_nodes_t nodes;
    uint64_t timeout_ns;
    uint64_t done, failed, late, bad;
    hbd_coll_early_t *early; /* job segments that came before their run */
    uint64_t early_bytes;
    struct hbd_coll_tell *tells; /* FAIL frames not sent yet (run_fail_tell) */
    /* HIBAR_COLL_ALG and HIBAR_COLL_LANES, read once at start: the algorithm for auto (none:
     * the model's), the lanes where a call gives none (0: the schedule's) */
    int env_auto;
    hb_coll_alg_t env_alg;
    uint32_t env_lanes;
} hbd_coll_state_t;

static uint8_t pat(uint64_t id, uint32_t node, uint64_t i)
{
    return (uint8_t)(node * 131u + (uint32_t)i * 7u + (uint32_t)(i >> 8) * 13u +
                     (uint32_t)id * 17u + 1u);
}

/*
 * pat(id, node, i) for i = 0 .. len-1, 256 bytes at a time: within a run of 256 bytes starting
 * at k·256 the byte is pat(id, node, k·256) + (i mod 256)·7 (mod 256). The root of a 4 MiB
 * scatter on 8 nodes fills 32 MiB before it stamps t0: byte by byte that took 30-250 ms on
 * this loaded machine (the root started that much after the others and the bench counted it
 * as the collective's time); a vectorisable add over a ramp takes a few ms.
 */
static void pat_ramp(uint8_t ramp[256])
{
    for (uint32_t j = 0; j < 256; j++)
        ramp[j] = (uint8_t)(j * 7u);
}

static void pat_fill(uint8_t *buf, uint64_t id, uint32_t node, uint64_t len)
{
    uint8_t ramp[256];
    pat_ramp(ramp);
    for (uint64_t k = 0; k * 256 < len; k++) {
        uint8_t c = pat(id, node, k * 256), *b = buf + k * 256;
        uint64_t n = len - k * 256 < 256 ? len - k * 256 : 256;
        for (uint64_t j = 0; j < n; j++)
            b[j] = (uint8_t)(c + ramp[j]);
    }
}

/* Does buf hold pat(id, node, 0 .. len-1)? */
static int pat_check(const uint8_t *buf, uint64_t id, uint32_t node, uint64_t len)
{
    uint8_t ramp[256];
    pat_ramp(ramp);
    for (uint64_t k = 0; k * 256 < len; k++) {
        uint8_t c = pat(id, node, k * 256), bad = 0;
        const uint8_t *b = buf + k * 256;
        uint64_t n = len - k * 256 < 256 ? len - k * 256 : 256;
        for (uint64_t j = 0; j < n; j++)
            bad |= (uint8_t)(b[j] ^ (uint8_t)(c + ramp[j]));
        if (bad)
            return 0;
    }
    return 1;
}

static void on_msg(hbd_t *d, const hbd_wire_msg_t *m);
static void on_segment(hbd_t *d, const hbd_wire_msg_t *m, const uint8_t *data);
static void on_lost(hbd_t *d, uint32_t lost, int status, int first);
static void on_room(hbd_t *d);

int hbd_coll_init(hbd_t *d)
{
    hbd_coll_state_t *st = calloc(1, sizeof(*st));
    const char *to = getenv("HIBAR_COLL_TIMEOUT_MS"), *prof = getenv("HIBAR_COLL_PROF");
    if (st == NULL)
        return HB_ERR_NOMEM;
    if (prof != NULL && *prof != '\0' && *prof != '0')
        d->prof |= HBD_PROF_COLL;
    st->site_of = calloc(d->topo->n_nodes, sizeof(uint32_t));
    if (st->site_of == NULL ||
        hb_coll_nodes_from_topo(d->topo, NULL, st->site_of, &st->nodes) != 0) {
        free(st->site_of);
        free(st);
        return HB_ERR_NOMEM;
    }
    /*
     * A collective's buffers (up to 1 GiB on a node) are malloc'd and freed per collective.
     * Keep them in the heap rather than in fresh mmaps: first-touch page faults and munmap's
     * TLB shootdowns cost more than the transfer on a virtual machine (measured on the test
     * bed, 4 MiB flat scatter on 8 daemons: 1100 -> 400 ms of the daemons' CPU, 2.0 -> 0.5 s).
     * Up to 256 MiB of freed heap stay mapped between collectives.
     */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    st->timeout_ns = 60000ull * 1000000ull;
    if (to != NULL && atol(to) > 0)
        st->timeout_ns = (uint64_t)atol(to) * 1000000ull;
    const char *ea = getenv("HIBAR_COLL_ALG"), *el = getenv("HIBAR_COLL_LANES");
    st->env_auto = ea == NULL || *ea == '\0' || strcmp(ea, "auto") == 0;
    if (!st->env_auto && hb_coll_alg_parse(ea, &st->env_alg) != 0) {
        hb_log_warn("HIBAR_COLL_ALG='%s' is no algorithm; the model chooses", ea);
        st->env_auto = 1;
    }
    if (el != NULL && *el != '\0') {
        char *end;
        unsigned long lanes = strtoul(el, &end, 10);
        if (*end != '\0' || el[0] == '-' || lanes > UINT32_MAX)
            hb_log_warn("HIBAR_COLL_LANES='%s' is no lane count; ignored", el);
        else
            st->env_lanes = (uint32_t)lanes;
    }
    d->coll = st;
    hbd_hooks_frame(d, HBD_WIRE_COLL, on_msg, on_segment);
    int rc = hbd_hooks_room(d, on_room);
    return rc != 0 ? rc : hbd_hooks_lost(d, on_lost, 30);
}

static void run_free(hbd_coll_run_t *r)
{
    if (r->conn != NULL)
        hbd_reply_release(r->conn);
    free(r->ranks_of);
    free(r->map);
    free(r->site_of);
    free(r->rd_done);
    if (r->work_zc != NULL) {
        /* the layout buffer goes when ZeroMQ has sent the last of it */
        (void)hb_coll_exec_detach_work(r->x);
        hbd_zc_put(r->work_zc);
    }
    hb_coll_exec_free(r->x);
    hb_coll_sched_free(r->s);
    if (r->in_zc != NULL)
        hbd_zc_put(r->in_zc); /* `in` goes when ZeroMQ has sent the last of it */
    else
        free(r->in);
    free(r->q);
    free(r->qsent);
    free(r);
}

void hbd_coll_fini(hbd_t *d)
{
    hbd_coll_state_t *st = d->coll;
    if (st == NULL)
        return;
    while (st->runs != NULL) {
        hbd_coll_run_t *r = st->runs;
        st->runs = r->next;
        if (r->conn != NULL)
            hbd_reply(r->conn, "err %d %s id=%" PRIu64, HB_ERR_PEER_LOST, "daemon stopping", r->id);
        run_free(r);
    }
    while (st->early != NULL) {
        hbd_coll_early_t *e = st->early;
        st->early = e->next;
        free(e);
    }
    while (st->tells != NULL) {
        hbd_coll_tell_t *t = st->tells;
        st->tells = t->next;
        free(t);
    }
    hbd_timer_free(st->timer);
    free(st->site_of);
    free(st);
    d->coll = NULL;
}

static hbd_coll_run_t *run_find(hbd_coll_state_t *st, uint64_t id)
{
    for (hbd_coll_run_t *r = st->runs; r != NULL; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

/* The cluster node of schedule index i, and the index of cluster node `node` (HB_COLL_NONE: not
 * in the run). */
static uint32_t run_node(const hbd_coll_run_t *r, uint32_t i)
{
    return r->map != NULL ? r->map[i] : i;
}

static uint32_t run_index(const hbd_coll_run_t *r, uint32_t node)
{
    if (r->map == NULL)
        return node < r->s->n_nodes ? node : HB_COLL_NONE;
    uint32_t lo = 0, hi = r->n_map;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->map[mid] < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n_map && r->map[lo] == node ? lo : HB_COLL_NONE;
}

/* Has the run lost one of its nodes? */
static int run_broken(const hbd_t *d, const hbd_coll_run_t *r)
{
    if (!d->lost)
        return 0;
    if (r->map == NULL)
        return 1;
    for (uint32_t i = 0; i < r->n_map; i++)
        if (hbd_node_lost(d, r->map[i]))
            return 1;
    return 0;
}

static void run_unlink(hbd_coll_state_t *st, hbd_coll_run_t *r)
{
    for (hbd_coll_run_t **pp = &st->runs; *pp != NULL; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

static int key_equal(const hbd_wire_coll_t *a, const hbd_wire_coll_t *b)
{
    return a->op == b->op && a->flags == b->flags && a->alg == b->alg && a->root == b->root &&
           a->size == b->size && a->lanes == b->lanes && a->seg_size == b->seg_size;
}

/* -v forms: node i's bytes, in 0 .. max, the same on every daemon (some nodes get 0). */
static uint64_t vcount(uint64_t max, uint32_t i)
{
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    if (i % 5 == 3)
        return 0;
    return max == 0 ? 0 : h % (max + 1);
}

/* Build the schedule (per-node ranks and -v counts as given, NULL: the control command's
 * one rank per node and vcount) and allocate the buffers; no executor yet. */
static int run_build(hbd_t *d, uint64_t id, const hbd_wire_coll_t *key, const uint32_t *ranks_of,
                     const uint64_t *vcounts, hbd_coll_run_t **r_p)
{
    hbd_coll_state_t *st = d->coll;
    hb_coll_args_t a = {.op = (hb_coll_op_t)key->op,
                        .alg = (hb_coll_alg_t)key->alg,
                        .root = key->root,
                        .size = key->size,
                        .seg_size = key->seg_size,
                        .lanes = key->lanes};
    hb_coll_nodes_t nodes = st->nodes;
    hbd_coll_run_t *r = calloc(1, sizeof(*r));
    uint64_t *counts = NULL;
    int rc;
    if (r == NULL)
        return HB_ERR_NOMEM;
    r->me = d->self;
    if (ranks_of != NULL) {
        /* a job: its nodes are the ones with ranks; on part of the cluster, only they */
        uint32_t n = st->nodes.n_nodes, k = 0;
        for (uint32_t i = 0; i < n; i++)
            k += ranks_of[i] > 0;
        if (k < n) {
            r->map = malloc((k ? k : 1) * sizeof(uint32_t));
            r->site_of = malloc((k ? k : 1) * sizeof(uint32_t));
            r->n_map = k;
            if (r->map == NULL || r->site_of == NULL) {
                run_free(r);
                return HB_ERR_NOMEM;
            }
            for (uint32_t i = 0, j = 0; i < n; i++)
                if (ranks_of[i] > 0) {
                    r->site_of[j] = st->nodes.site_of[i];
                    r->map[j++] = i;
                }
            nodes.n_nodes = k;
            nodes.site_of = r->site_of;
        }
        r->ranks_of = malloc(nodes.n_nodes * sizeof(uint32_t));
        if (r->ranks_of == NULL) {
            run_free(r);
            return HB_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < nodes.n_nodes; i++)
            r->ranks_of[i] = ranks_of[r->map != NULL ? r->map[i] : i];
        nodes.ranks_of = r->ranks_of;
        /* node ids on the wire (root), schedule indices here */
        if (r->map != NULL) {
            a.root = run_index(r, key->root);
            r->me = run_index(r, d->self);
            if (a.root == HB_COLL_NONE || r->me == HB_COLL_NONE) {
                run_free(r);
                return HB_ERR_INVAL; /* the root, or this node, is not in the job */
            }
        }
    }
    uint32_t v = r->me;
    if ((key->flags & HBD_WIRE_COLL_F_V) && vcounts != NULL) {
        if (r->map != NULL) {
            counts = malloc(r->n_map * sizeof(uint64_t));
            if (counts == NULL) {
                run_free(r);
                return HB_ERR_NOMEM;
            }
            for (uint32_t i = 0; i < r->n_map; i++)
                counts[i] = vcounts[r->map[i]];
            a.counts = counts;
        } else {
            a.counts = vcounts;
        }
    } else if (key->flags & HBD_WIRE_COLL_F_V) {
        counts = calloc(st->nodes.n_nodes, sizeof(uint64_t));
        if (counts == NULL) {
            run_free(r);
            return HB_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < st->nodes.n_nodes; i++)
            counts[i] = vcount(key->size, i);
        a.counts = counts;
    }
    r->id = id;
    r->key = *key;
    r->t_created = hb_time_now_ns();
    rc = key->size > HBD_COLL_MAX_TOTAL ? HB_ERR_INVAL : hb_coll_sched_build(&nodes, &a, &r->s);
    free(counts);
    if (rc != 0)
        goto err_free;
    const hb_coll_sched_t *s = r->s;
    if (s->total > HBD_COLL_MAX_TOTAL) {
        hb_log_error("collective %" PRIu64 ": %" PRIu64 " bytes exceed the daemon's limit of %llu",
                     id, s->total, HBD_COLL_MAX_TOTAL);
        rc = HB_ERR_INVAL;
        goto err_free;
    }
    /* large ones: the data through ZeroMQ's I/O thread, which writes while the loop reads on */
    r->bulk = d->data_out != NULL && d->cfg->coll_bulk_min > 0 && s->total >= d->cfg->coll_bulk_min;
    if ((s->op == HB_COLL_SCATTER || s->op == HB_COLL_BCAST) && v == s->root)
        r->in_len = s->total;
    else if (s->op == HB_COLL_GATHER || s->op == HB_COLL_ALLGATHER || s->op == HB_COLL_ALLTOALL)
        r->in_len = s->bytes[v];
    r->in = malloc(r->in_len + 1);
    if (r->in == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    *r_p = r;
    return 0;
err_free:
    run_free(r);
    return rc;
}

/* Create the executor and put the run on the list. */
static int run_arm(hbd_t *d, hbd_coll_run_t *r)
{
    hbd_coll_state_t *st = d->coll;
    /* segments go out of `in` and the output stays in the layout where they can (a job's
     * received output is the caller's, on_seg: not copied into the layout at all): the fewer
     * copies, the more of the shared CPU is left to the transfer */
    unsigned flags = HB_COLL_EXEC_IN_PLACE | (r->on_seg != NULL ? HB_COLL_EXEC_OUT_BY_CALLER : 0);
    int rc = hb_coll_exec_create(r->s, r->me, r->in, NULL, flags, &r->x);
    if (rc != 0)
        return rc;
    r->next = st->runs;
    st->runs = r;
    return 0;
}

/* A control command's collective: schedule, executor and its pattern input. */
static int run_create(hbd_t *d, uint64_t id, const hbd_wire_coll_t *key, hbd_coll_run_t **r_p)
{
    hbd_coll_run_t *r;
    uint32_t v = d->self;
    int rc = run_build(d, id, key, NULL, NULL, &r);
    if (rc != 0)
        return rc;
    const hb_coll_sched_t *s = r->s;
    if (s->op == HB_COLL_SCATTER && v == s->root) {
        for (uint32_t w = 0; w < s->n_nodes; w++)
            pat_fill(r->in + s->noff[w], id, w, s->bytes[w]);
    } else if (s->op == HB_COLL_ALLTOALL) { /* the block for w: pattern v·n + w */
        for (uint32_t w = 0; w < s->n_nodes; w++)
            pat_fill(r->in + hb_coll_pair_noff(s, v, w), id, v * s->n_nodes + w,
                     hb_coll_pair_len(s, v, w));
    } else {
        pat_fill(r->in, id, s->op == HB_COLL_BCAST ? 0 : v, r->in_len);
    }
    rc = run_arm(d, r);
    if (rc != 0) {
        run_free(r);
        return rc;
    }
    *r_p = r;
    return 0;
}

/* Does node w's block of this node's output hold the pattern node `who` made? */
static int block_check(const hbd_coll_run_t *r, uint32_t w, uint32_t who)
{
    const hb_coll_sched_t *s = r->s;
    uint64_t len = 0, want = s->op == HB_COLL_BCAST      ? s->total
                             : s->op == HB_COLL_ALLTOALL ? hb_coll_pair_len(s, w, r->me)
                                                         : s->bytes[w];
    const uint8_t *b = hb_coll_exec_block(r->x, w, &len);
    if (want > 0 && (b == NULL || len != want))
        return 0;
    return want == 0 || pat_check(b, r->id, who, want);
}

/* Does the output hold the pattern? */
static int run_check(const hbd_coll_run_t *r, uint32_t v)
{
    const hb_coll_sched_t *s = r->s;
    switch (s->op) {
    case HB_COLL_SCATTER:
        if (!block_check(r, v, v))
            return 0;
        break;
    case HB_COLL_BCAST:
        if (!block_check(r, 0, 0))
            return 0;
        break;
    case HB_COLL_GATHER:
        if (v != s->root)
            break;
        /* fall through */
    case HB_COLL_ALLGATHER:
        for (uint32_t w = 0; w < s->n_nodes; w++)
            if (!block_check(r, w, w))
                return 0;
        break;
    case HB_COLL_ALLTOALL:
        for (uint32_t w = 0; w < s->n_nodes; w++)
            if (!block_check(r, w, w * s->n_nodes + v))
                return 0;
        break;
    default:
        return 0;
    }
    return r->delivered == (s->op != HB_COLL_GATHER || v == s->root);
}

static void timer_arm(hbd_t *d);
static void tell_flush(hbd_t *d);
static int run_read(hbd_coll_run_t *r, uint64_t off, uint64_t len);

/* Reply and free a run that is over here (complete with its queue flushed, or failed) and
 * whose command arrived. */
static void run_maybe_finish(hbd_t *d, hbd_coll_run_t *r)
{
    hbd_coll_state_t *st = d->coll;
    if (!r->started || !(r->failed || (r->complete && r->qhead == r->nq)))
        return;
    r->t_done = hb_time_now_ns();
    hbd_prof(d, HBD_PROF_COLL, "cprof", r->failed ? "failed" : "done", r->id);
    if (r->cb != NULL) {
        if (!r->failed && r->read != NULL) {
            int rc = run_read(r, 0, r->in_len); /* what was not sent: this node's own block */
            if (rc != 0) {
                r->failed = 1; /* run_fail leaves a complete run alone */
                r->status = rc;
            }
        }
        if (r->failed)
            st->failed++;
        else
            st->done++;
        run_unlink(st, r);
        r->cb(d, r->failed ? r->status : 0, r->s, r->failed ? NULL : r->x, r->cb_arg);
        run_free(r);
        return;
    }
    if (!r->failed && !run_check(r, d->self)) {
        hb_log_error("collective %" PRIu64 " (%s %s): wrong data in node %" PRIu32 "'s output",
                     r->id, hb_coll_op_name(r->s->op), hb_coll_alg_name(r->s->alg), d->self);
        r->failed = 1;
        r->status = HB_ERR_INTERNAL;
    }
    if (r->failed) {
        st->failed++;
        hbd_reply(r->conn, "err %d %s id=%" PRIu64, r->status, hb_status_str(r->status), r->id);
    } else {
        st->done++;
        hbd_reply(r->conn,
                  "ok coll id=%" PRIu64 " op=%s%s alg=%s lanes=%" PRIu32 " size=%" PRIu64
                  " total=%" PRIu64 " us=%.1f predicted_us=%.1f frames_tx=%" PRIu64
                  " frames_rx=%" PRIu64 " t0_ns=%" PRIu64 " t1_ns=%" PRIu64 " check=ok",
                  r->id, hb_coll_op_name(r->s->op), (r->key.flags & HBD_WIRE_COLL_F_V) ? "v" : "",
                  hb_coll_alg_name(r->s->alg), r->s->lanes, r->key.size, r->s->total,
                  (double)(r->t_done - r->t_start) / 1e3, r->predicted_us, r->frames_tx,
                  r->frames_rx, r->t_start, r->t_done);
    }
    run_unlink(st, r);
    run_free(r);
}

static void run_fail(hbd_coll_run_t *r, int status)
{
    if (r->failed || (r->complete && r->qhead == r->nq))
        return;
    r->failed = 1;
    r->status = status;
    r->qhead = r->nq = 0;
}

/*
 * A run that fails here for a reason of its own (an input it cannot read, an output it cannot
 * write, no memory, a frame it cannot send) or that a peer's failure reached: the nodes this
 * node sends to in the schedule would otherwise wait for its segments until the collective
 * timeout (and the job's next epoch behind them), so each gets a FAIL frame with the status
 * and fails too, telling the nodes it sends to in turn: every node whose data depends on this
 * one ends the collective at once with that status. Nodes that got all their data end it as
 * they would have. The frame goes as a small segment does (hbd_net_send_coll: the fast lane
 * where it is up); where the link is still coming up or full it waits in a queue of its own,
 * retried every millisecond up to the collective timeout (tell_flush), since the run is freed
 * at once. A timeout, a lost node and a failed agreement need no telling: every node sees
 * them itself.
 */
static void run_fail_tell(hbd_t *d, hbd_coll_run_t *r, int status)
{
    if (r->failed || (r->complete && r->qhead == r->nq))
        return;
    run_fail(r, status);
    if (r->told || r->s == NULL || r->me >= r->s->n_nodes)
        return;
    r->told = 1;
    uint8_t pl[HBD_WIRE_COLL_HDR], st[HBD_WIRE_COLL_FAIL_LEN];
    hbd_wire_coll_t c = r->key;
    c.flags |= HBD_WIRE_COLL_F_FAIL;
    c.seq = 0;
    c.off = 0;
    hbd_wire_coll_pack(&c, pl);
    hbd_wire_put32(st, (uint32_t)status);
    const hb_coll_sched_t *s = r->s;
    for (uint32_t k = s->step_start[r->me]; k < s->step_start[r->me + 1]; k++) {
        const hb_coll_step_t *sp = &s->steps[k];
        int dup = 0;
        for (uint32_t q = s->step_start[r->me]; q < k && !dup; q++)
            dup = s->steps[q].kind == HB_COLL_STEP_SEND && s->steps[q].peer == sp->peer;
        if (sp->kind != HB_COLL_STEP_SEND || dup)
            continue;
        hbd_coll_tell_t *t = calloc(1, sizeof(*t));
        if (t == NULL) {
            hb_log_warn("collective %" PRIu64 ": no memory to tell node %" PRIu32 " of its failure",
                        r->id, run_node(r, sp->peer));
            continue;
        }
        t->to = run_node(r, sp->peer);
        t->id = r->id;
        t->t0 = hb_time_now_ns();
        memcpy(t->pl, pl, sizeof(pl));
        memcpy(t->st, st, sizeof(st));
        t->next = d->coll->tells;
        d->coll->tells = t;
    }
    tell_flush(d);
    if (d->coll->tells != NULL)
        timer_arm(d);
}

/* Send the FAIL frames that can go now; the others wait for their link (the timer retries
 * every millisecond) up to the collective timeout. */
static void tell_flush(hbd_t *d)
{
    hbd_coll_state_t *st = d->coll;
    uint64_t now = hb_time_now_ns();
    for (hbd_coll_tell_t **pp = &st->tells; *pp != NULL;) {
        hbd_coll_tell_t *t = *pp;
        int rc = hbd_net_peer_up(d, t->to) ? 0 : hbd_net_link(d, t->to);
        if (rc == 0 && !hbd_net_peer_up(d, t->to))
            rc = HB_ERR_WOULD_BLOCK;
        if (rc == 0)
            rc = hbd_net_send_coll(d, t->to, t->id, t->pl, t->st, sizeof(t->st), NULL, 0);
        if (rc == HB_ERR_WOULD_BLOCK && now - t->t0 <= st->timeout_ns) {
            pp = &t->next;
            continue;
        }
        if (rc != 0 && !hbd_node_lost(d, t->to))
            hb_log_warn("collective %" PRIu64 ": its failure not told to node %" PRIu32 ": %s",
                        t->id, t->to, hb_status_str(rc));
        *pp = t->next;
        free(t);
    }
}

/* A FAIL frame from node `from` (its 4 data bytes at st): this run fails with that status and
 * tells on. A status out of range is counted and dropped; so is one from outside the run. */
static void run_fail_told(hbd_t *d, hbd_coll_run_t *r, uint32_t from, const uint8_t *st)
{
    int32_t status = (int32_t)hbd_wire_get32(st);
    if (status >= 0 || status < HB_ERR_LAST || run_index(r, from) == HB_COLL_NONE) {
        d->coll->bad++;
        return;
    }
    if (!r->failed)
        hb_log_warn("collective %" PRIu64 " fails: node %" PRIu32 " failed it (%s)", r->id, from,
                    hb_status_str(status));
    run_fail_tell(d, r, status);
}

static int inside(const uint8_t *p, uint64_t len, const uint8_t *buf, uint64_t buf_len)
{
    return buf != NULL && p >= buf && len <= buf_len && (uint64_t)(p - buf) <= buf_len - len;
}

/* Make bytes [off, off + len) of `in` valid: read the chunks around them not read yet. */
static int run_read(hbd_coll_run_t *r, uint64_t off, uint64_t len)
{
    if (r->rd_done == NULL || len == 0)
        return 0;
    uint64_t c = off / HBD_COLL_RD_CHUNK, end = (off + len - 1) / HBD_COLL_RD_CHUNK + 1;
    while (c < end) {
        if (r->rd_done[c]) {
            c++;
            continue;
        }
        uint64_t e = c;
        while (e < end && !r->rd_done[e])
            e++;
        uint64_t lo = c * HBD_COLL_RD_CHUNK, hi = e * HBD_COLL_RD_CHUNK;
        if (hi > r->in_len)
            hi = r->in_len;
        int rc = r->read(r->read_arg, lo, r->in + lo, hi - lo);
        if (rc != 0)
            return rc;
        memset(r->rd_done + c, 1, e - c);
        c = e;
    }
    return 0;
}

/* While the links are full: read on ahead (about HBD_COLL_RD_AHEAD bytes at a time). */
static int run_read_ahead(hbd_coll_run_t *r)
{
    uint64_t n = (r->in_len + HBD_COLL_RD_CHUNK - 1) / HBD_COLL_RD_CHUNK, got = 0;
    while (r->rd_done != NULL && r->rd_next < n && got < HBD_COLL_RD_AHEAD) {
        if (!r->rd_done[r->rd_next]) {
            int rc = run_read(r, r->rd_next * HBD_COLL_RD_CHUNK, HBD_COLL_RD_CHUNK);
            if (rc != 0)
                return rc;
            got += HBD_COLL_RD_CHUNK;
        }
        r->rd_next++;
    }
    return 0;
}

/* On the plain data plane segments leave the executor's layout buffer, or the input it reads
 * in place, without a copy: that buffer is then owned by a holder that ZeroMQ's messages keep
 * alive (every byte of it is written before it is sent). NULL: send a copy. */
static hbd_zc_t *run_holder(hbd_t *d, hbd_coll_run_t *r, const uint8_t *p, uint64_t len)
{
    uint64_t wl = 0;
    const uint8_t *w = hb_coll_exec_work(r->x, &wl);
    if (d->data_out == NULL || p == NULL)
        return NULL;
    if (inside(p, len, w, wl)) {
        if (r->work_zc == NULL)
            r->work_zc = hbd_zc_new((void *)w);
        return r->work_zc;
    }
    if (inside(p, len, r->in, r->in_len)) {
        if (r->in_zc == NULL)
            r->in_zc = hbd_zc_new(r->in);
        return r->in_zc;
    }
    return NULL;
}

#define HBD_COLL_BLOCKED_MAX 32 /* destinations set aside in one pass of run_flush */

/* Send what the links allow: in queue order for each destination, but a full link (or one
 * not up yet) does not hold the frames for the others (a flat scatter's root queues node 1's
 * segments, then node 2's, ...: every link is kept busy, not one at a time). */
static void run_flush(hbd_t *d, hbd_coll_run_t *r)
{
    uint8_t pl[HBD_WIRE_COLL_HDR];
    uint64_t now = hb_time_now_ns();
    uint32_t blocked[HBD_COLL_BLOCKED_MAX], n_blocked = 0;
    int stalled = 0;
    for (size_t i = r->qhead; !r->failed && i < r->nq; i++) {
        const hb_coll_act_t *a = &r->q[i];
        uint32_t to = run_node(r, a->to), b = 0;
        while (b < n_blocked && blocked[b] != to)
            b++;
        if (r->qsent[i] || b < n_blocked)
            continue;
        int rc = 0;
        if (!hbd_net_peer_up(d, to)) {
            rc = HB_ERR_WOULD_BLOCK;
            if (now - r->last_link_ns >= HBD_COLL_LINK_NS) {
                r->last_link_ns = now;
                rc = hbd_net_link(d, to);
                if (rc != 0 && rc != HB_ERR_WOULD_BLOCK) {
                    run_fail_tell(d, r, rc);
                    return;
                }
                if (rc == 0 && !hbd_net_peer_up(d, to))
                    rc = HB_ERR_WOULD_BLOCK;
            }
        }
        if (rc == 0) {
            hbd_wire_coll_t c = r->key;
            c.seq = a->seq;
            c.off = a->off;
            hbd_wire_coll_pack(&c, pl);
            if (inside(a->data, a->len, r->in, r->in_len)) {
                int rr = run_read(r, (uint64_t)((const uint8_t *)a->data - r->in), a->len);
                if (rr != 0) {
                    run_fail_tell(d, r, rr);
                    return;
                }
            }
            rc = hbd_net_send_coll(d, to, r->id, pl, a->data, (uint32_t)a->len,
                                   run_holder(d, r, a->data, a->len), r->bulk);
        }
        if (rc == HB_ERR_WOULD_BLOCK) {
            stalled = 1;
            if (n_blocked == HBD_COLL_BLOCKED_MAX)
                break;
            blocked[n_blocked++] = to;
            continue;
        }
        if (rc != 0) {
            run_fail_tell(d, r, rc);
            return;
        }
        hbd_prof(d, HBD_PROF_COLL, "cprof", "tx", r->id);
        r->frames_tx++;
        r->qsent[i] = 1;
    }
    while (r->qhead < r->nq && r->qsent[r->qhead])
        r->qhead++;
    if (r->qhead == r->nq)
        r->qhead = r->nq = 0;
    if (stalled && !r->failed) {
        int rc = run_read_ahead(r); /* while the links are full */
        if (rc != 0)
            run_fail_tell(d, r, rc);
    }
}

static int run_queue(hbd_coll_run_t *r, const hb_coll_act_t *a)
{
    if (a->len > HBD_WIRE_COLL_MAX_DATA) {
        hb_log_error("collective %" PRIu64 ": segment of %" PRIu64 " bytes exceeds a frame", r->id,
                     a->len);
        return HB_ERR_INTERNAL;
    }
    if (r->nq == r->qcap) {
        size_t cap = r->qcap ? r->qcap * 2 : 64;
        hb_coll_act_t *q = realloc(r->q, cap * sizeof(*q));
        if (q != NULL)
            r->q = q;
        uint8_t *sent = q != NULL ? realloc(r->qsent, cap) : NULL;
        if (sent == NULL)
            return HB_ERR_NOMEM;
        r->qsent = sent;
        r->qcap = cap;
    }
    r->qsent[r->nq] = 0;
    r->q[r->nq++] = *a;
    return 0;
}

/* Feed one event and act on what the executor says. */
static void run_feed(hbd_t *d, hbd_coll_run_t *r, const hb_coll_ev_t *ev)
{
    hb_coll_act_t acts[HBD_COLL_ACTS];
    hb_coll_ev_t poll = {.kind = HB_COLL_EV_POLL};
    for (;;) {
        size_t n = 0;
        int rc = hb_coll_exec_step(r->x, ev, acts, HBD_COLL_ACTS, &n);
        if (rc == HB_ERR_PROTO) {
            d->coll->bad++;
            if (!r->warned) {
                char buf[160];
                r->warned = 1;
                hb_coll_exec_describe(r->x, buf, sizeof(buf));
                hb_log_warn("collective %" PRIu64
                            ": dropped an unexpected segment from node %" PRIu32 " (%s)",
                            r->id, ev->from, buf);
            }
            return;
        }
        if (rc == 0 && ev->kind == HB_COLL_EV_MSG && r->on_seg != NULL && ev->len > 0)
            rc = r->on_seg(r->seg_arg, r->s, ev->off, ev->len, ev->data);
        if (rc != 0) {
            run_fail_tell(d, r, rc);
            return;
        }
        for (size_t i = 0; i < n && !r->failed; i++) {
            switch (acts[i].kind) {
            case HB_COLL_ACT_SEND:
                rc = run_queue(r, &acts[i]);
                if (rc != 0)
                    run_fail_tell(d, r, rc);
                break;
            case HB_COLL_ACT_POST_RECV:
                break;
            case HB_COLL_ACT_DELIVER:
                r->delivered = 1;
                break;
            case HB_COLL_ACT_COMPLETE:
                r->complete = 1;
                break;
            case HB_COLL_ACT_FAIL:
                run_fail_tell(d, r, acts[i].status);
                break;
            }
        }
        if (r->failed || !hb_coll_exec_pending(r->x))
            break;
        ev = &poll;
    }
    run_flush(d, r);
}

static void timer_cb(hbd_t *d, void *arg)
{
    hbd_coll_state_t *st = d->coll;
    uint64_t now = hb_time_now_ns();
    (void)arg;
    tell_flush(d);
    hbd_coll_run_t *r = st->runs, *next;
    for (; r != NULL; r = next) {
        next = r->next;
        run_flush(d, r);
        if (!r->failed && now - r->t_created > st->timeout_ns) {
            char buf[160];
            hb_coll_exec_describe(r->x, buf, sizeof(buf));
            hb_log_error("collective %" PRIu64 " timed out on node %" PRIu32 ": %s", r->id, d->self,
                         buf);
            run_fail(r, HB_ERR_TIMEOUT);
        }
        run_maybe_finish(d, r);
    }
    /* runs that failed before their command came stay until it comes (or forever: bounded
     * by the commands the ranks send) */
    for (hbd_coll_early_t **pp = &st->early; *pp != NULL;) {
        hbd_coll_early_t *e = *pp;
        if (now - e->t_rx <= st->timeout_ns) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        st->early_bytes -= e->len;
        st->late++;
        free(e);
    }
    timer_arm(d);
}

/* A link that refused a segment has room again: send on at once (the timer is the fallback). */
static void on_room(hbd_t *d)
{
    tell_flush(d);
    hbd_coll_run_t *r = d->coll->runs, *next;
    for (; r != NULL; r = next) {
        next = r->next;
        if (r->failed || r->qhead == r->nq)
            continue;
        run_flush(d, r);
        run_maybe_finish(d, r);
    }
}

static void timer_arm(hbd_t *d)
{
    hbd_coll_state_t *st = d->coll;
    int busy = st->tells != NULL, any = busy;
    for (hbd_coll_run_t *r = st->runs; r != NULL; r = r->next) {
        if (r->failed)
            continue;
        any = 1;
        busy |= r->qhead < r->nq;
    }
    if (!any && st->early == NULL)
        return;
    if (st->timer == NULL && (st->timer = hbd_timer_new(d, timer_cb, NULL)) == NULL)
        return;
    hbd_timer_arm(st->timer, busy ? 1000 : 50000, busy);
}

/* The model's choice (or the prediction for a forced algorithm), over the nodes with ranks
 * (ranks_of NULL: every node). */
static void model_choose(hbd_t *d, hbd_wire_coll_t *key, const uint32_t *ranks_of, int auto_alg,
                         double *pred_p)
{
    const hb_cfg_links_t *l = &d->cfg->links;
    hbd_coll_state_t *st = d->coll;
    uint32_t n = d->topo->n_nodes, rs = st->site_of[key->root], other = UINT32_MAX;
    uint32_t n0 = 0, n1 = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ranks_of != NULL && ranks_of[i] == 0)
            continue;
        if (st->site_of[i] == rs) {
            n0++;
        } else if (other == UINT32_MAX || st->site_of[i] == other) {
            other = st->site_of[i];
            n1++;
        }
    }
    hb_model_lanes_t ml =
        hb_model_lanes_links(l->wan_lat_us, l->lan_lat_us, l->lan_bw_mbps, l->wan_lane_bw_mbps,
                             l->wan_total_bw_mbps, (double)key->seg_size);
    const char *src;
    hb_model_params_t p = {.n0 = n0,
                           .n1 = n1,
                           .p_max = key->lanes,
                           .lanes = &ml,
                           .plogp = hbd_model_params(d, &ml, &src)};
    hb_model_choice_t c;
    *pred_p = -1;
    if (hb_model_choose((hb_coll_op_t)key->op, (double)key->size, &p, &c) != 0)
        return;
    hb_log_debug(
        "model (%s%s): %s %" PRIu64 " B, sites %" PRIu32 "+%" PRIu32
        ": flat %.1f binomial %.1f single-lane %.1f multi-lane %.1f (P %" PRIu32 ") us -> %s%s",
        src, ml.n_b_wan ? ", measured b_WAN(P)" : "", hb_coll_op_name((hb_coll_op_t)key->op),
        key->size, n0, n1, c.alg_us[HB_COLL_ALG_FLAT], c.alg_us[HB_COLL_ALG_BINOMIAL],
        c.alg_us[HB_COLL_ALG_SINGLE_LANE], c.alg_us[HB_COLL_ALG_MULTI_LANE], c.lanes,
        hb_coll_alg_name(c.alg), auto_alg ? "" : " (not used: algorithm forced)");
    if (auto_alg) {
        key->alg = (uint8_t)c.alg;
        if (c.alg == HB_COLL_ALG_MULTI_LANE)
            key->lanes = c.lanes;
        *pred_p = c.predicted_us;
    } else {
        *pred_p = c.alg_us[key->alg];
    }
}

static void run_start(hbd_t *d, hbd_coll_run_t *r);

/* "coll OP ALG ROOT SIZE [LANES [SEG]]": ALG auto|flat|binomial|single-lane|multi-lane
 * (HIBAR_COLL_ALG in the daemon's environment forces one for auto; HIBAR_COLL_LANES the
 * lanes when LANES is 0); OP scatterv, gatherv, allgatherv: node i's bytes are vcount(SIZE, i)
 * in 0 .. SIZE; SIZE bytes per node (bcast: in total); SEG the pipelining
 * segment (default HBD_COLL_SEG_DEFAULT, at most HBD_WIRE_COLL_MAX_DATA). */
void hbd_coll_request(hbd_t *d, hbd_reply_t *conn, char *args)
{
    hbd_coll_state_t *st = d->coll;
    char *save = NULL, *tok[6] = {0};
    unsigned long long v[4] = {0, 0, 0, 0};
    hb_coll_op_t op;
    hb_coll_alg_t alg = HB_COLL_ALG_FLAT;
    int ntok = 0, auto_alg = 0, vform = 0;
    for (char *t = strtok_r(args, " \t", &save); t != NULL && ntok < 6;
         t = strtok_r(NULL, " \t", &save))
        tok[ntok++] = t;
    for (int i = 2; i < ntok; i++) {
        char *end;
        v[i - 2] = strtoull(tok[i], &end, 0);
        if (*end != '\0' || tok[i][0] == '-')
            ntok = -1;
    }
    if (ntok >= 2 && strcmp(tok[1], "auto") == 0 && !st->env_auto)
        tok[1] = (char *)hb_coll_alg_name(st->env_alg);
    if (ntok >= 2 && strcmp(tok[1], "auto") == 0)
        auto_alg = 1;
    if (ntok >= 1 && strcmp(tok[0], "bcast") != 0 && strlen(tok[0]) > 1 &&
        tok[0][strlen(tok[0]) - 1] == 'v') {
        tok[0][strlen(tok[0]) - 1] = '\0'; /* scatterv, gatherv, allgatherv */
        vform = 1;
    }
    if (ntok < 4 || hb_coll_op_parse(tok[0], &op) != 0 ||
        (!auto_alg && hb_coll_alg_parse(tok[1], &alg) != 0) || v[0] >= d->topo->n_nodes ||
        v[1] > (1ull << 32) || v[3] > HBD_WIRE_COLL_MAX_DATA) {
        hbd_reply(conn,
                  "err %d usage: coll scatter[v]|gather[v]|bcast|allgather[v]|alltoall "
                  "auto|flat|binomial|single-lane|multi-lane|pairwise ROOT SIZE [LANES [SEG]]",
                  HB_ERR_INVAL);
        return;
    }
    if (v[2] == 0)
        v[2] = st->env_lanes;
    hbd_wire_coll_t key = {.op = (uint8_t)op,
                           .flags = vform ? HBD_WIRE_COLL_F_V : 0,
                           .alg = (uint8_t)alg,
                           .root = (uint32_t)v[0],
                           .size = v[1],
                           .lanes = (uint32_t)v[2],
                           .seg_size = v[3] ? v[3] : HBD_COLL_SEG_DEFAULT};
    double pred;
    model_choose(d, &key, NULL, auto_alg, &pred);
    uint64_t id = st->next_id++;
    if (d->lost) {
        hbd_reply(conn, "err %d %s id=%" PRIu64, HB_ERR_PEER_LOST, hb_status_str(HB_ERR_PEER_LOST),
                  id);
        return;
    }
    hbd_coll_run_t *r = run_find(st, id);
    if (r == NULL) {
        int rc = run_create(d, id, &key, &r);
        if (rc != 0) {
            hbd_reply(conn, "err %d %s id=%" PRIu64, rc, hb_status_str(rc), id);
            return;
        }
    } else if (!key_equal(&key, &r->key)) {
        hb_log_error("collective %" PRIu64 ": this node asked for %s %s root %" PRIu32
                     " size %" PRIu64 ", a peer for %s %s root %" PRIu32 " size %" PRIu64,
                     id, hb_coll_op_name(op), hb_coll_alg_name((hb_coll_alg_t)key.alg), key.root,
                     key.size, hb_coll_op_name((hb_coll_op_t)r->key.op),
                     hb_coll_alg_name((hb_coll_alg_t)r->key.alg), r->key.root, r->key.size);
        run_fail(r, HB_ERR_MISMATCH);
    }
    r->conn = hbd_reply_hold(conn);
    r->predicted_us = pred;
    run_start(d, r);
}

/* This node's side begins: links up, START, and the reply once it is over. */
static void run_start(hbd_t *d, hbd_coll_run_t *r)
{
    r->started = 1;
    r->t_start = hb_time_now_ns();
    hbd_prof(d, HBD_PROF_COLL, "cprof", "start", r->id);
    /* bring up the links this node's steps need before the first send */
    uint32_t ns;
    const hb_coll_step_t *steps = hb_coll_sched_steps(r->s, r->me, &ns);
    for (uint32_t i = 0; i < ns && !r->failed; i++)
        if (steps[i].peer != HB_COLL_NONE && !hbd_net_peer_up(d, run_node(r, steps[i].peer))) {
            int rc = hbd_net_link(d, run_node(r, steps[i].peer));
            if (rc != 0 && rc != HB_ERR_WOULD_BLOCK)
                run_fail_tell(d, r, rc);
        }
    r->last_link_ns = hb_time_now_ns();
    if (!r->failed && r->read != NULL && !hb_coll_exec_input_in_place(r->x)) {
        int rc = run_read(r, 0, r->in_len); /* START copies all of it */
        if (rc != 0)
            run_fail_tell(d, r, rc);
    }
    if (!r->failed) {
        hb_coll_ev_t ev = {.kind = HB_COLL_EV_START};
        run_feed(d, r, &ev);
    }
    run_maybe_finish(d, r);
    timer_arm(d);
}

int hbd_coll_job_create(hbd_t *d, uint64_t id, const hbd_coll_job_args_t *a, uint8_t *in,
                        uint64_t in_len, hbd_coll_run_t **r_p)
{
    hbd_coll_state_t *st = d->coll;
    int rc = 0;
    if (st == NULL)
        rc = HB_ERR_NOT_INIT;
    else if (!(id & HBD_COLL_ID_JOB) || a->op < 0 ||
             a->op >= HB_COLL_ALLTOALL || /* ranks' alltoall: not in libhibar yet */
             a->root >= d->topo->n_nodes ||
             (a->vform && (a->counts == NULL || a->op == HB_COLL_BCAST)))
        rc = HB_ERR_INVAL;
    else if (d->lost) {
        for (uint32_t i = 0; i < d->topo->n_nodes && rc == 0; i++)
            if (a->ranks_of[i] > 0 && hbd_node_lost(d, i))
                rc = HB_ERR_PEER_LOST;
    }
    if (rc == 0 && run_find(st, id) != NULL)
        rc = HB_ERR_EXISTS;
    if (rc != 0) {
        free(in);
        return rc;
    }
    hb_coll_alg_t alg = st->env_auto ? HB_COLL_ALG_FLAT : st->env_alg;
    int auto_alg = st->env_auto;
    /* The model reasons per process; a node carries its ranks' blocks at once. */
    uint32_t per_node = 1;
    for (uint32_t i = 0; i < d->topo->n_nodes; i++)
        per_node = a->ranks_of[i] > per_node ? a->ranks_of[i] : per_node;
    hbd_wire_coll_t key = {.op = (uint8_t)a->op,
                           .flags = a->vform ? HBD_WIRE_COLL_F_V : 0,
                           .alg = (uint8_t)alg,
                           .root = a->root,
                           .size = a->op == HB_COLL_BCAST ? a->size : a->size * per_node,
                           .lanes = st->env_lanes,
                           .seg_size = HBD_COLL_SEG_JOB};
    double pred;
    model_choose(d, &key, a->ranks_of, auto_alg, &pred);
    key.size = a->size; /* the schedule's bytes per rank */
    hbd_coll_run_t *r;
    rc = run_build(d, id, &key, a->ranks_of, a->vform ? a->counts : NULL, &r);
    if (rc != 0) {
        free(in);
        return rc;
    }
    if (in_len != r->in_len || (in == NULL && in_len > 0)) {
        hb_log_error("collective %#" PRIx64 ": input of %" PRIu64
                     " bytes, the schedule needs %" PRIu64,
                     id, in_len, r->in_len);
        free(in);
        run_free(r);
        return HB_ERR_INTERNAL;
    }
    if (in != NULL) {
        free(r->in);
        r->in = in;
    }
    if (a->read != NULL && r->in_len > 0) {
        r->rd_done = calloc((r->in_len + HBD_COLL_RD_CHUNK - 1) / HBD_COLL_RD_CHUNK, 1);
        if (r->rd_done == NULL) {
            run_free(r);
            return HB_ERR_NOMEM;
        }
        r->read = a->read;
        r->read_arg = a->read_arg;
    }
    r->on_seg = a->on_seg;
    r->seg_arg = a->seg_arg;
    r->predicted_us = pred;
    if (hb_log_get_level() >= HB_LOG_DEBUG) {
        char buf[200];
        hb_coll_sched_describe(r->s, buf, sizeof(buf));
        hb_log_debug("collective %#" PRIx64 ": %s (model: %.1f us)", id, buf, pred);
    }
    *r_p = r;
    return 0;
}

void hbd_coll_job_start(hbd_t *d, hbd_coll_run_t *r, hbd_coll_cb_t cb, void *arg)
{
    hbd_coll_state_t *st = d->coll;
    r->cb = cb;
    r->cb_arg = arg;
    int rc = run_arm(d, r);
    if (rc != 0) {
        r->cb = NULL;
        cb(d, rc, r->s, NULL, arg);
        run_free(r);
        return;
    }
    /* segments that came first, in the order they came */
    hbd_coll_early_t **pp = &st->early, *mine = NULL, **tail = &mine;
    while (*pp != NULL) {
        hbd_coll_early_t *e = *pp;
        if (e->id != r->id) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        e->next = NULL;
        *tail = e;
        tail = &e->next;
    }
    if (run_broken(d, r))
        run_fail(r, HB_ERR_PEER_LOST);
    while (mine != NULL) {
        hbd_coll_early_t *e = mine;
        mine = e->next;
        st->early_bytes -= e->len;
        if (e->key.flags & HBD_WIRE_COLL_F_FAIL) {
            run_fail_told(d, r, e->from, e->data);
        } else if (!r->failed && !key_equal(&e->key, &r->key)) {
            hb_log_error("collective %#" PRIx64 ": node %" PRIu32 " runs other arguments", r->id,
                         e->from);
            run_fail(r, HB_ERR_MISMATCH);
        } else if (!r->failed) {
            hb_coll_ev_t ev = {.kind = HB_COLL_EV_MSG,
                               .from = run_index(r, e->from),
                               .seq = e->key.seq,
                               .off = e->key.off,
                               .len = e->len,
                               .data = e->data};
            r->frames_rx++;
            run_feed(d, r, &ev);
        }
        free(e);
    }
    run_start(d, r);
}

void hbd_coll_job_cancel(hbd_t *d, hbd_coll_run_t *r, int status)
{
    run_fail(r, status);
    run_maybe_finish(d, r);
}

/* A job collective's segment before its run: keep a copy. */
static void early_keep(hbd_t *d, const hbd_wire_msg_t *m, const hbd_wire_coll_t *c,
                       const uint8_t *data)
{
    hbd_coll_state_t *st = d->coll;
    uint64_t len = m->len - HBD_WIRE_COLL_HDR;
    if (st->early_bytes + len > HBD_COLL_STASH_MAX) {
        st->bad++;
        hb_log_warn("collective %#" PRIx64 ": too many early segments held; one from node %" PRIu32
                    " dropped",
                    m->coll_id, m->src);
        return;
    }
    hbd_coll_early_t *e = malloc(sizeof(*e) + len);
    if (e == NULL) {
        st->bad++;
        return;
    }
    e->id = m->coll_id;
    e->t_rx = hb_time_now_ns();
    e->from = m->src;
    e->key = *c;
    e->len = len;
    memcpy(e->data, data, len);
    hbd_coll_early_t **pp = &st->early;
    while (*pp != NULL)
        pp = &(*pp)->next;
    e->next = NULL;
    *pp = e;
    st->early_bytes += len;
    timer_arm(d);
}

/* A COLL frame's segment, its data elsewhere than after the collective header (the plain data
 * plane's two-part frames) or right after it (on_msg). */
static void on_segment(hbd_t *d, const hbd_wire_msg_t *m, const uint8_t *data)
{
    hbd_coll_state_t *st = d->coll;
    hbd_wire_coll_t c;
    hbd_poll_kick(d);
    if (st == NULL)
        return;
    hbd_prof(d, HBD_PROF_COLL, "cprof", "rx", m->coll_id);
    hbd_wire_coll_unpack(m->payload, &c);
    hbd_coll_run_t *r = run_find(st, m->coll_id);
    if (r == NULL && (m->coll_id & HBD_COLL_ID_JOB)) {
        early_keep(d, m, &c, data);
        return;
    }
    if (c.flags & HBD_WIRE_COLL_F_FAIL) { /* a peer's run failed (its length checked) */
        if (r == NULL) {
            st->late++;
            return;
        }
        run_fail_told(d, r, m->src, data);
        run_maybe_finish(d, r);
        timer_arm(d);
        return;
    }
    if (r == NULL) {
        if (m->coll_id < st->next_id) {
            st->late++; /* for a collective already over (or failed) here */
            return;
        }
        if (m->coll_id > st->next_id + 1024) {
            st->bad++;
            return;
        }
        int rc = run_create(d, m->coll_id, &c, &r);
        if (rc != 0) {
            hb_log_warn("collective %" PRIu64 " announced by node %" PRIu32 ": %s", m->coll_id,
                        m->src, hb_status_str(rc));
            st->bad++;
            return;
        }
    }
    if (r->failed)
        return;
    if (!key_equal(&c, &r->key)) {
        hb_log_error("collective %" PRIu64 ": node %" PRIu32 " runs other arguments than this node",
                     r->id, m->src);
        run_fail(r, HB_ERR_MISMATCH);
    } else if (run_index(r, m->src) == HB_COLL_NONE) {
        st->bad++; /* from a node outside the job */
    } else {
        hb_coll_ev_t ev = {.kind = HB_COLL_EV_MSG,
                           .from = run_index(r, m->src),
                           .seq = c.seq,
                           .off = c.off,
                           .len = m->len - HBD_WIRE_COLL_HDR,
                           .data = data};
        r->frames_rx++;
        run_feed(d, r, &ev);
    }
    run_maybe_finish(d, r);
    timer_arm(d);
}

static void on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    on_segment(d, m, m->payload + HBD_WIRE_COLL_HDR);
}

/* A lost node: every collective in flight that involves it fails. */
static void on_lost(hbd_t *d, uint32_t lost, int status, int first)
{
    hbd_coll_state_t *st = d->coll;
    (void)first;
    if (st == NULL)
        return;
    hbd_coll_run_t *r = st->runs, *next;
    for (; r != NULL; r = next) {
        next = r->next;
        if (r->map != NULL && lost < d->topo->n_nodes && run_index(r, lost) == HB_COLL_NONE)
            continue; /* another job's */
        if (!r->failed)
            hb_log_warn("collective %" PRIu64 " fails: node %" PRIu32 " lost", r->id, lost);
        run_fail(r, status);
        run_maybe_finish(d, r);
    }
}
