/* hier_local.h: run one hier engine per node of a topology in memory (tests, traces, the
 * simulator). */
#ifndef HB_HIER_LOCAL_H
#define HB_HIER_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "hier.h"

/*
 * A whole cluster of engines and a model of what connects them, with no I/O and no clock.
 * Messages (SEND) and chassis-barrier completions (HWB_DONE) become "pending items"; the
 * caller decides which pending item is delivered next (by index, or FIFO/LIFO/seeded random
 * runs), so any interleaving can be scripted. The chassis barrier model completes a round
 * when every node of the mask arrived at the same sync number; nodes that disagree on the
 * collective, phase or mask of a round are counted in hwb_mismatch (and the round continues
 * with the first arrival's view).
 *
 * Every step is recorded in a trace (arrivals, sends, chassis arrivals and completions,
 * COMPLETE, FAIL, refused events), each record stamped with the number of chassis barriers
 * and sends on the longest causal chain leading to it (an ARRIVE starts a chain), so the
 * critical path of a barrier is the largest stamp of its COMPLETE records. Each record also
 * carries a modeled time: the chain's start (the ARRIVE's time, 0 unless given) plus t_ib per
 * chassis barrier and t_sr per send, maximized over chains (hb_hier_local_costs). Since the
 * protocols send the same messages whatever the delivery order, this max-plus time is what a
 * discrete-event run with those fixed latencies and zero processing time would give, for any
 * delivery order.
 *
 * The topology must outlive the driver. Not thread-safe.
 */

typedef enum hb_hier_local_order {
    HB_HIER_LOCAL_FIFO = 0,  /* oldest pending item first */
    HB_HIER_LOCAL_LIFO = 1,  /* newest first */
    HB_HIER_LOCAL_RANDOM = 2 /* uniform among the pending items, seeded (hb_hier_local_seed) */
} hb_hier_local_order_t;

typedef enum hb_hier_rec_kind {
    HB_HIER_REC_ARRIVE = 0,     /* local ARRIVE accepted */
    HB_HIER_REC_SEND = 1,       /* SEND action (peer, msg) */
    HB_HIER_REC_HWB_ARRIVE = 2, /* HWB_ARRIVE action (sync_no, phase) */
    HB_HIER_REC_HWB_DONE = 3,   /* the node was told its chassis barrier completed */
    HB_HIER_REC_COMPLETE = 4,
    HB_HIER_REC_FAIL = 5,    /* status */
    HB_HIER_REC_REFUSED = 6, /* hb_hier_step refused an event (status; msg/peer if a MSG) */
    HB_HIER_REC_MSG = 7      /* a message was delivered and accepted (peer = sender) */
} hb_hier_rec_kind_t;

typedef struct hb_hier_rec {
    hb_hier_rec_kind_t kind;
    uint32_t node; /* where it happened */
    uint64_t coll_id;
    uint32_t peer;       /* SEND: destination; MSG, REFUSED message: sender */
    uint32_t msg;        /* SEND, MSG: message kind */
    uint32_t sync_no;    /* HWB_ARRIVE, HWB_DONE */
    uint32_t phase;      /* HWB_ARRIVE */
    int status;          /* FAIL, REFUSED */
    uint32_t n_ib, n_sr; /* chassis barriers and sends on the longest chain leading here */
    double t;            /* modeled time (see above) */
    const char *step;    /* protocol step of an action, else NULL */
} hb_hier_rec_t;

typedef struct hb_hier_local_stats {
    uint64_t delivered;      /* pending items delivered */
    uint64_t refused;        /* delivered items (messages, completions) an engine refused: a
                              * protocol bug when the cluster is healthy (must stay 0) */
    uint64_t inject_refused; /* injected events refused (BUSY arrivals, garbage, ...) */
    uint64_t hwb_rounds;     /* chassis barrier rounds completed */
    uint64_t hwb_mismatch;   /* arrivals disagreeing with their round (must stay 0) */
    uint64_t dead_drops;     /* items for a killed node, discarded */
} hb_hier_local_stats_t;

typedef struct hb_hier_local hb_hier_local_t;

/* One engine per member node of topo (every node of a full topology), all with cfg. INVAL,
 * NOMEM, or hb_hier_create's error. */
int hb_hier_local_create(const hb_topo_t *topo, const hb_hier_cfg_t *cfg, hb_hier_local_t **l_p);
void hb_hier_local_destroy(hb_hier_local_t *l);
hb_hier_t *hb_hier_local_engine(hb_hier_local_t *l, uint32_t node);
void hb_hier_local_seed(hb_hier_local_t *l, uint64_t seed);
/* Modeled cost of one chassis barrier and one send (default 1 and 1). */
void hb_hier_local_costs(hb_hier_local_t *l, double t_ib, double t_sr);

/* Feed ev to node at once and execute the actions. Returns hb_hier_step's status (a refused
 * event is also recorded). INVAL if node is out of range, UNAVAIL if it was killed. */
int hb_hier_local_inject(hb_hier_local_t *l, uint32_t node, const hb_hier_ev_t *ev);
int hb_hier_local_inject_at(hb_hier_local_t *l, uint32_t node, const hb_hier_ev_t *ev, double t);
/* The local ARRIVE of coll_id at node (job and epoch of the cfg), at modeled time 0 or t. */
int hb_hier_local_arrive(hb_hier_local_t *l, uint32_t node, uint64_t coll_id);
int hb_hier_local_arrive_at(hb_hier_local_t *l, uint32_t node, uint64_t coll_id, double t);

/* Pending items, oldest first: what item i is (an event for node *to_p). */
size_t hb_hier_local_pending(const hb_hier_local_t *l);
int hb_hier_local_peek(const hb_hier_local_t *l, size_t i, hb_hier_ev_t *ev_p, uint32_t *to_p);
/* Deliver item i (removing it). Returns the step's status, INVAL if no such item. */
int hb_hier_local_deliver(hb_hier_local_t *l, size_t i);
/* Deliver items in order until none is pending or max were delivered; returns how many. */
size_t hb_hier_local_run(hb_hier_local_t *l, hb_hier_local_order_t order, size_t max);

/* The node dies: its pending items are discarded, nothing is delivered to it any more, and
 * its chassis' barriers never complete. The others learn it only by PEER_LOST (inject). */
void hb_hier_local_kill(hb_hier_local_t *l, uint32_t node);

/* The trace, oldest first. Per node and collective, the SEND / HWB_ARRIVE / COMPLETE records
 * come in program order whatever the delivery order: a trace to compare a daemon's with. */
const hb_hier_rec_t *hb_hier_local_trace(const hb_hier_local_t *l, size_t *n_p);
/* One record as a line without newline, e.g.
 * "n4 coll 0 SEND RELEASE to n13 [scmd I9] ib=6 sr=5 t=518"; 0 or TRUNCATED. */
int hb_hier_rec_format(const hb_hier_rec_t *r, char *buf, size_t len);
void hb_hier_local_stats(const hb_hier_local_t *l, hb_hier_local_stats_t *stats_p);
/* Largest (n_ib, n_sr) stamps and modeled time over the COMPLETE records of coll_id (each
 * out-parameter may be NULL); NOT_FOUND if none. */
int hb_hier_local_critical(const hb_hier_local_t *l, uint64_t coll_id, uint32_t *n_ib_p,
                           uint32_t *n_sr_p, double *t_p);

#endif
