/* coll_sched.h: collective schedules as data (node step lists) and the per-node executor. */
#ifndef HB_SCHED_H
#define HB_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"

struct hb_topo;

/*
 * Participants are NODES (one daemon each); the ranks of a node are one destination: a node
 * receives one message per segment for all its ranks, and the daemon splits the node's
 * block among its ranks. The description is independent of config/topo.h so that hibar-sim
 * can generate large ones (hb_coll_nodes_from_topo() builds it from a topology).
 */
typedef struct hb_coll_nodes {
    uint32_t n_nodes;
    const uint32_t *site_of;  /* [n_nodes] site index of each node; NULL: one site */
    const uint32_t *ranks_of; /* [n_nodes] ranks on each node (0 allowed); NULL: 1 each */
} hb_coll_nodes_t;

/*
 * What to build. Data model (doc/design.md section 4): node i's block is ranks_of[i]·size
 * bytes, or counts[i] bytes for the -v forms. User buffers are in NODE ORDER: the
 * concatenation of the blocks of nodes 0..n-1 (scatter's send buffer at root, gather's receive
 * buffer at root, allgather's receive buffer everywhere). bcast moves `size` bytes, counts
 * unused. alltoall: node a's block for node b (the pair (a, b)) is ranks_of[a]·ranks_of[b]·size
 * bytes; node a's send buffer is its blocks for nodes 0..n-1 and its receive buffer the blocks
 * from nodes 0..n-1, each in node order (hb_coll_pair_noff()); root is unused, counts refused.
 */
typedef struct hb_coll_args {
    hb_coll_op_t op;
    hb_coll_alg_t alg;
    uint32_t root;          /* root node (allgather: the node that collects, any node) */
    uint64_t size;          /* bytes per rank; bcast: bytes in total */
    const uint64_t *counts; /* [n_nodes] bytes per node (-v forms), or NULL */
    uint64_t seg_size;      /* pipelining segment, bytes; 0: one segment per message */
    uint32_t lanes; /* multi-lane: P per remote site (clamped to both sites' sizes); 0: max */
} hb_coll_args_t;

/* A step of one node's schedule. */
typedef enum {
    HB_COLL_STEP_SEND = 0,     /* send [off, off+len) to peer, in nseg segments */
    HB_COLL_STEP_RECV = 1,     /* receive [off, off+len) from peer, in nseg segments */
    HB_COLL_STEP_COPY_IN = 2,  /* copy the node's input from the user buffer into the layout */
    HB_COLL_STEP_COPY_OUT = 3, /* copy the node's output from the layout into the user buffer */
} hb_coll_step_kind_t;

/*
 * Offsets are in the schedule's LAYOUT: the node blocks in an algorithm-specific order in
 * which every message is one contiguous range (bcast: the buffer itself).
 * Dependency rule (sends): segment [c, d) of a send goes out once the node holds those bytes
 * (its input, or the received segments overlapping them), so a forwarder sends segment s as
 * soon as segment s arrived. Segments of one node go out in step order. Two gates give the
 * synchronization a barrier-like collective needs even when blocks are empty (receive
 * segments numbered in step order): every segment waits for the first `gate` receive
 * segments (second phase of allgather: the first message of that phase), and the LAST segment
 * waits for the first `gate_last` (gather and allgather's first phase: everything from the
 * children, so a node reports up only after its whole subtree has).
 */
typedef struct hb_coll_step {
    hb_coll_step_kind_t kind;
    uint32_t peer;      /* node; HB_COLL_NONE for copies */
    uint64_t off;       /* layout offset, bytes */
    uint64_t len;       /* bytes */
    uint32_t nseg;      /* segments: max(1, ceil(len / seg_size)) */
    uint32_t gate;      /* receive segments that must have arrived first; 0: none */
    uint32_t gate_last; /* receive segments that must have arrived before the last segment */
    uint8_t wan;        /* 1: the peer is in another site */
    uint8_t phase;      /* 0; 1 for the second phase of allgather */
} hb_coll_step_t;

/* A whole schedule: every node's steps, plus the layout. Immutable once built; shareable. */
typedef struct hb_coll_sched {
    hb_coll_op_t op;
    hb_coll_alg_t alg;
    uint32_t n_nodes, root;
    uint32_t lanes; /* multi-lane: largest P used; 1 single-lane; 0 otherwise */
    uint64_t seg_size;
    uint64_t total;       /* layout bytes (sum of blocks; bcast: size) */
    uint64_t *bytes;      /* [n_nodes] block bytes per node (bcast: 0) */
    uint64_t *noff;       /* [n_nodes] offset of each block in the NODE-ORDER user buffer */
    uint64_t *loff;       /* [n_nodes] offset of each block in the layout */
    uint32_t *site_of;    /* [n_nodes] copy of the input (0s for one site) */
    uint32_t *step_start; /* [n_nodes + 1] node v's steps are steps[step_start[v] .. [v+1]) */
    hb_coll_step_t *steps;
    uint32_t n_sites;
    /* alltoall: rpre[v] ranks on the nodes before v ([n_nodes + 1]), unit the bytes per rank
     * pair; bytes/noff/loff are then each node's row (its input), NULL otherwise */
    uint64_t *rpre;
    uint64_t unit;
} hb_coll_sched_t;

/* alltoall: bytes of the pair (a, b), its offset in the layout (rows by sender, node order) and
 * in node a's node-order send buffer (= in node b's receive buffer, with a and b swapped). */
static inline uint64_t hb_coll_pair_len(const hb_coll_sched_t *s, uint32_t a, uint32_t b)
{
    return (s->rpre[a + 1] - s->rpre[a]) * (s->rpre[b + 1] - s->rpre[b]) * s->unit;
}
static inline uint64_t hb_coll_pair_noff(const hb_coll_sched_t *s, uint32_t a, uint32_t b)
{
    return (s->rpre[a + 1] - s->rpre[a]) * s->rpre[b] * s->unit;
}
static inline uint64_t hb_coll_pair_loff(const hb_coll_sched_t *s, uint32_t a, uint32_t b)
{
    return s->loff[a] + hb_coll_pair_noff(s, a, b);
}

/*
 * Algorithms. A site's leader is its first node (the root in the root's site); for remote
 * site k, P_k = min(lanes, nodes of the root's site, nodes of site k).
 *  flat         root exchanges with every node; it sends to other sites' nodes first.
 *  binomial     root-rotated binomial tree over node indices, larger subtree first, site-blind.
 *  single-lane  root <-> each remote leader over the WAN (the whole site's data), each leader
 *               <-> its site, root <-> its own site (MagPIe).
 *  multi-lane   scatter (doc/design.md section 1 step order): (1) root -> Dep_send j (j-th node of
 *               the root's site, j >= 1) over the LAN: what lane j carries to every remote
 *               site; (2) root -> Dep_recv 0 over the WAN; (3) root -> its own site; (4) Dep_send
 *               j -> Dep_recv j over the WAN, segment by segment as the share arrives; (5) each
 *               Dep_recv -> its group. A remote site's nodes, in node order, form P_k balanced
 *               groups (at most X = ceil(n_k / P_k) nodes); Dep_recv j is group j's first node.
 *               gather: the same reversed. bcast: the buffer in P = min_k P_k parts, part j
 *               via Dep_send j and Dep_recv j, which sends it to every other node of its site.
 *  allgather    (every algorithm) the gather to root, then each node gets what it lacks the
 *               same way down; multi-lane: a remote site's complement in P_k parts over lanes.
 *  alltoall     flat (PlogP-BR's simultaneous exchange): node v sends its n - 1 blocks at once,
 *               to v + 1, v + 2, ... (mod n), while receiving from every node: each node is the
 *               target of a many-to-one phase. pairwise: n - 1 rounds; in round k node v sends
 *               to v + k and receives from v - k (mod n), and starts round k + 1 once round k's
 *               block has arrived: pair patterns only, no incast. The own block is copied.
 *               Copy-out steps: one per source node, in node order.
 */

/*
 * Build the schedule of one collective for every node. Deterministic: every daemon building
 * it from the same input gets the same schedule. Single- and multi-lane on one site are
 * valid and degenerate to flat. Errors: HB_ERR_INVAL (no nodes, root out of range, bad
 * op/alg (hb_coll_alg_valid), counts with bcast or alltoall), HB_ERR_NOMEM.
 */
int hb_coll_sched_build(const hb_coll_nodes_t *nodes, const hb_coll_args_t *args,
                        hb_coll_sched_t **sched_p);
void hb_coll_sched_free(hb_coll_sched_t *sched);

/* Node v's steps. */
static inline const hb_coll_step_t *hb_coll_sched_steps(const hb_coll_sched_t *s, uint32_t v,
                                                        uint32_t *n_p)
{
    *n_p = s->step_start[v + 1] - s->step_start[v];
    return s->steps + s->step_start[v];
}

/*
 * Check that the schedule is consistent: every send has its matching receive (same pair,
 * same range, same order), every byte a node sends is its input or received, every node's
 * output is covered. 0 or HB_ERR_INTERNAL (what is wrong in msg, if non-NULL).
 */
int hb_coll_sched_check(const hb_coll_sched_t *s, char *msg, size_t msglen);

/* One line describing the schedule (for logs and hibar-info); 0 or HB_ERR_TRUNCATED. */
int hb_coll_sched_describe(const hb_coll_sched_t *s, char *buf, size_t len);

/*
 * Fill nodes from a topology: site_of from topo->nodes[i].site (written into site_buf, which
 * holds topo->n_nodes entries), ranks_of as given (NULL: 1 each). Only reads the structure.
 */
int hb_coll_nodes_from_topo(const struct hb_topo *topo, const uint32_t *ranks_of,
                            uint32_t *site_buf, hb_coll_nodes_t *nodes_p);

/* ---- per-node executor: the state machine the daemon, the simulator and the tests drive ---- */

typedef struct hb_coll_exec hb_coll_exec_t;

typedef enum {
    HB_COLL_EV_START = 0,     /* begin: copy the input, post receives, send what is ready */
    HB_COLL_EV_MSG = 1,       /* a segment arrived (from, seq, off, len, data); may precede START */
    HB_COLL_EV_PEER_LOST = 2, /* a peer died: fail unless already complete */
    HB_COLL_EV_POLL = 3       /* no news: emit the actions that did not fit last time */
} hb_coll_ev_kind_t;

typedef struct hb_coll_ev {
    hb_coll_ev_kind_t kind;
    uint32_t from; /* sending node (MSG), or the lost node */
    uint32_t seq;  /* per (sender, receiver) segment number, from the SEND action */
    uint64_t off;  /* layout offset, from the SEND action */
    uint64_t len;
    const void *data; /* len bytes; NULL allowed when the executor runs without data */
} hb_coll_ev_t;

typedef enum {
    HB_COLL_ACT_SEND = 0,      /* send segment: to, seq, off, len, data (valid until free) */
    HB_COLL_ACT_POST_RECV = 1, /* expect step `step` from `to` (len bytes in nseg segments) */
    HB_COLL_ACT_DELIVER = 2,   /* the output is in the user's receive buffer */
    HB_COLL_ACT_COMPLETE = 3,  /* everything sent and received: the collective is over here */
    HB_COLL_ACT_FAIL = 4       /* status says why; no further actions */
} hb_coll_act_kind_t;

typedef struct hb_coll_act {
    hb_coll_act_kind_t kind;
    uint32_t to;   /* SEND: destination; POST_RECV: source */
    uint32_t seq;  /* SEND: carry it in the message header */
    uint32_t step; /* index in this node's step list */
    uint32_t seg;  /* SEND: segment index in the step */
    uint32_t nseg; /* POST_RECV: segments expected */
    uint64_t off, len;
    const void *data; /* SEND: payload (NULL without data) */
    uint8_t wan;
    int status; /* FAIL */
} hb_coll_act_t;

/* Run without data (simulator): buffers NULL, MSG data ignored, SEND data NULL. */
#define HB_COLL_EXEC_NODATA 1u
/*
 * Fewer copies. The input is not copied into the layout when every segment this node sends
 * from it is one piece of the send buffer and nothing is received into its range (the root of
 * a scatter or bcast, any node's own block): SEND data then points into send_buf, which must
 * stay valid and unchanged until the transport is done with it. The output is not copied
 * either: read it with hb_coll_exec_block() after DELIVER (recv_buf may be NULL).
 */
#define HB_COLL_EXEC_IN_PLACE 2u /* alltoall: its input is always copied */
/*
 * With HB_COLL_EXEC_IN_PLACE, not for alltoall: the caller writes out every segment it feeds
 * from the MSG event's data itself (hibard writes it to the ranks as it arrives), so a
 * segment that none of this node's SEND steps reads is not copied into the layout:
 * hb_coll_exec_block() then holds undefined bytes where such segments landed, and the
 * caller's own copy is the output there.
 */
#define HB_COLL_EXEC_OUT_BY_CALLER 4u

/*
 * Create node v's executor for schedule s (which must outlive it). send_buf: the node's input
 * in node order (scatter root: all blocks; gather/allgather: its own block; bcast root: the
 * buffer; alltoall: its blocks for every node; ignored elsewhere). recv_buf: its output
 * (scatter: own block; gather root and allgather: all blocks; bcast: the buffer; alltoall: the
 * blocks from every node). Not thread-safe; one executor per call and node.
 * Errors: HB_ERR_INVAL, HB_ERR_NOMEM.
 */
int hb_coll_exec_create(const hb_coll_sched_t *s, uint32_t node, const void *send_buf,
                        void *recv_buf, unsigned flags, hb_coll_exec_t **x_p);
void hb_coll_exec_free(hb_coll_exec_t *x);
/*
 * The executor's layout buffer, which SEND actions point into: [*len_p bytes at the returned
 * address] (NULL, 0 if it has none); alltoall: only the layout ranges the node holds, packed.
 * hb_coll_exec_detach_work hands it to the caller, who then frees it with free() (e.g. after a
 * transport that sends without copying is done with it); the executor must not be stepped after
 * that.
 */
const uint8_t *hb_coll_exec_work(const hb_coll_exec_t *x, uint64_t *len_p);
void *hb_coll_exec_detach_work(hb_coll_exec_t *x);
/*
 * Node v's block of this node's output (bcast: the buffer, v ignored; alltoall: the block
 * from v), where the executor
 * holds it: in its layout buffer or, read in place, in send_buf. *len_p gets its length. NULL
 * (and 0) when this node holds no such bytes. Valid until the executor is freed or its layout
 * detached; meant for HB_COLL_EXEC_IN_PLACE after DELIVER.
 */
const uint8_t *hb_coll_exec_block(const hb_coll_exec_t *x, uint32_t v, uint64_t *len_p);
/* 1 when the executor reads its input in place (no copy at START; HB_COLL_EXEC_IN_PLACE): the
 * caller may then fill send_buf lazily, each range before a SEND names it and all of it before
 * DELIVER; 0 when START copies all of send_buf. */
int hb_coll_exec_input_in_place(const hb_coll_exec_t *x);

/*
 * Feed one event; up to max actions are written to acts and their number to *n_p. When
 * hb_coll_exec_pending() is true afterwards, call again with HB_COLL_EV_POLL. Returns 0, or
 * HB_ERR_PROTO for a message that matches nothing expected (unknown sender, duplicate,
 * wrong offset or length: the executor's state is unchanged, log it and drop it),
 * HB_ERR_INVAL for a bad call. A PEER_LOST before completion yields FAIL with
 * HB_ERR_PEER_LOST. Never blocks.
 */
int hb_coll_exec_step(hb_coll_exec_t *x, const hb_coll_ev_t *ev, hb_coll_act_t *acts, size_t max,
                      size_t *n_p);
int hb_coll_exec_pending(const hb_coll_exec_t *x);
/* One line on the executor's progress (a stuck collective's log line); 0 or HB_ERR_TRUNCATED. */
int hb_coll_exec_describe(const hb_coll_exec_t *x, char *buf, size_t len);
int hb_coll_exec_done(const hb_coll_exec_t *x); /* 1 after COMPLETE or FAIL */

#endif
