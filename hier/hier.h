/* hier.h: one node's view of the chassis-tree barrier (protocols scmd and tree), sans-I/O. */
#ifndef HB_HIER_H
#define HB_HIER_H

#include <stddef.h>
#include <stdint.h>

#include "topo.h"

/*
 * A hb_hier_t is one node's barrier engine for one job and one epoch. It owns no socket,
 * thread or clock: the driver (hibard, hibar-sim, the unit tests, hier_local.h) feeds it
 * events with hb_hier_step() and executes the actions it returns, in order:
 *
 *   events   ARRIVE      the local ranks entered collective coll_id (the client called it)
 *            MSG         a hier message from another node (kind in msg, sender in from)
 *            HWB_DONE    the chassis barrier this node arrived at (sync_no) completed/failed
 *            PEER_LOST   node `from` is dead: every collective in flight fails
 *            TIMEOUT     the driver's timer for coll_id fired: that collective fails
 *   actions  SEND        send message `msg` for (job, coll_id, epoch) to node `to`
 *            HWB_ARRIVE  arrive at this node's chassis barrier with sync_no and mask
 *            COMPLETE    collective coll_id is complete on this node: release the ranks
 *            FAIL        collective coll_id failed on this node with `status`
 *
 * Every member node of the topology takes part in every collective. A job on part of the
 * cluster passes its view (hb_topo_restrict: the member set, the pruned tree, stand-in
 * Centers, the members' ports in each chassis' mask); an engine exists only on members
 * (INVAL for a non-member), and non-members never hear of the job. Collectives are told
 * apart by (job, coll_id, epoch); job and epoch are fixed per engine (create a new engine for
 * a new epoch, e.g. after a failure; several jobs at once: one engine per job, each with its
 * own range of sync numbers).
 *
 * Failures. TIMEOUT fails that collective only; the others in flight go on. HWB_DONE with a
 * negative status fails its collective. PEER_LOST fails every collective this node arrived
 * at and has not finished, and from then on every ARRIVE fails at once (the daemon floods
 * the loss; a new epoch needs a new engine). Messages and completions for a failed
 * collective are ignored (counted as late). hier sends no failure message itself.
 *
 * Collective ids. Within one engine the local ARRIVEs carry consecutive ids starting at
 * cfg.first_coll, in the same order on every node (the order the job calls its collectives).
 * At most cfg.n_sync collectives are in flight on a node: ARRIVE of coll c returns
 * HB_ERR_BUSY (nothing changed, retry after a COMPLETE/FAIL) while collective
 * c - n_sync is still in flight here or failed in this engine.
 *
 * Chassis barriers. Collective c uses sync number cfg.sync_base + c % cfg.n_sync for all of
 * its chassis barriers (phases 1..3 run one after the other on one node, and a sync number is
 * reusable once this node has seen its completion: hwb.h), with the chassis' participation
 * mask (bit i = port i; every port of a full topology, the members' in a restricted view). Every
 * node of a chassis therefore arrives at the same sync number with the same mask for the same
 * (collective, phase), without talking to the others. A failed collective keeps its sync number
 * reserved for the rest of the engine's life, since the chassis mates may still be using it.
 *
 * Messages. Barriers carry no payload (ev.data/len and act.data/len stay NULL/0; a fence will
 * use them). A message that cannot be right is dropped, counted in hb_hier_stats_t and
 * reported by hb_hier_step's return value; it never changes state: wrong job or epoch
 * (HB_ERR_MISMATCH), a kind or sender impossible for this node's role, a duplicate, a
 * message before what provokes it was sent, for a collective already complete or beyond the
 * window of collectives that can exist (HB_ERR_PROTO). Messages that arrive before the
 * local ARRIVE (from a faster parent or child) are kept and used when the node gets there.
 *
 * Thread safety: none; one engine is used by one thread at a time.
 */

/* The two protocols of doc/design.md section 1. */
typedef enum hb_hier_proto {
    HB_HIER_SCMD = 0, /* the paper's three waves: notify down, done up, release down */
    HB_HIER_TREE = 1  /* two waves: gather (done) up, release down */
} hb_hier_proto_t;

/* Message kinds between nodes (values are stable: they travel in the wire payload). */
typedef enum hb_hier_msg {
    HB_HIER_MSG_NOTIFY = 1,  /* scmd: parent -> child Center, "the barrier started above" */
    HB_HIER_MSG_DONE = 2,    /* child Center -> parent: "everything below me arrived" */
    HB_HIER_MSG_RELEASE = 3, /* parent -> child Center: "everyone arrived, go" */
    HB_HIER_MSG_MAX = 3
} hb_hier_msg_t;

typedef enum hb_hier_ev_kind {
    HB_HIER_EV_ARRIVE = 0,
    HB_HIER_EV_MSG = 1,
    HB_HIER_EV_HWB_DONE = 2,
    HB_HIER_EV_PEER_LOST = 3,
    HB_HIER_EV_TIMEOUT = 4
} hb_hier_ev_kind_t;

typedef enum hb_hier_act_kind {
    HB_HIER_ACT_SEND = 0,
    HB_HIER_ACT_HWB_ARRIVE = 1,
    HB_HIER_ACT_COMPLETE = 2,
    HB_HIER_ACT_FAIL = 3
} hb_hier_act_kind_t;

/* One input. Fields not used by the kind are ignored. */
typedef struct hb_hier_ev {
    hb_hier_ev_kind_t kind;
    uint32_t job;     /* ARRIVE, MSG: must equal the engine's job */
    uint64_t coll_id; /* ARRIVE, MSG, HWB_DONE, TIMEOUT */
    uint32_t epoch;   /* ARRIVE, MSG: must equal the engine's epoch */
    uint32_t from;    /* MSG: source node; PEER_LOST: the lost node */
    uint32_t msg;     /* MSG: hb_hier_msg_t (as received: checked) */
    uint32_t sync_no; /* HWB_DONE: the sync number of the HWB_ARRIVE it answers */
    int status;       /* HWB_DONE: 0, or the hwbarrier's error (fails the collective) */
    const void *data; /* MSG payload: must be NULL/0 for barriers */
    size_t len;
} hb_hier_ev_t;

/* One output. */
typedef struct hb_hier_act {
    hb_hier_act_kind_t kind;
    uint32_t job;
    uint64_t coll_id;
    uint32_t epoch;
    uint32_t to;       /* SEND: destination node */
    hb_hier_msg_t msg; /* SEND: message kind */
    uint32_t sync_no;  /* HWB_ARRIVE */
    uint32_t mask;     /* HWB_ARRIVE: bit i = port i of this node's chassis */
    uint32_t phase;    /* HWB_ARRIVE: 1..3, which chassis barrier of the collective */
    int status;        /* FAIL: negative HB_ERR_* */
    const char *step;  /* the protocol step that produced it ("scmd I6", ...): static, for traces */
    const void *data;  /* SEND payload: NULL/0 for barriers */
    size_t len;
} hb_hier_act_t;

typedef struct hb_hier_cfg {
    hb_hier_proto_t protocol;
    uint32_t job;
    uint32_t epoch;
    uint64_t first_coll; /* id of the first collective (default 0) */
    uint32_t sync_base;  /* first chassis-barrier sync number hier may use (default 0) */
    uint32_t n_sync;     /* sync numbers it may use = collectives in flight (default 8, 1..64) */
} hb_hier_cfg_t;

/* Drop and event counters of one engine. */
typedef struct hb_hier_stats {
    uint64_t completed;     /* COMPLETE actions */
    uint64_t failed;        /* FAIL actions */
    uint64_t drop_mismatch; /* message for another job or epoch */
    uint64_t drop_role;     /* kind or sender impossible for this node (or payload on a barrier) */
    uint64_t drop_dup;      /* the same message twice */
    uint64_t drop_order;    /* before what provokes it was sent (e.g. DONE before NOTIFY) */
    uint64_t drop_stale;    /* for a collective already complete here */
    uint64_t drop_window;   /* for a collective that cannot exist yet */
    uint64_t bad_hwb;       /* HWB_DONE not matching an outstanding arrival */
    uint64_t late;          /* event for a collective that already failed (expected, ignored) */
} hb_hier_stats_t;

typedef struct hb_hier hb_hier_t;

/* Defaults: SCMD, job 0, epoch 1, first_coll 0, sync_base 0, n_sync 8. */
void hb_hier_cfg_init(hb_hier_cfg_t *cfg);

/*
 * Create node `node`'s engine over topo (topo may be freed afterwards: what is needed is
 * copied). Errors: INVAL (NULL, node out of range, bad protocol, n_sync 0 or > 64), NOMEM.
 */
int hb_hier_create(const hb_topo_t *topo, uint32_t node, const hb_hier_cfg_t *cfg, hb_hier_t **h_p);
void hb_hier_destroy(hb_hier_t *h);

/* Actions one hb_hier_step() can append at most; acts must have room for that many. */
size_t hb_hier_max_actions(const hb_hier_t *h);

/*
 * Feed one event; appends the resulting actions to acts[0..*n_p) (max >= hb_hier_max_actions,
 * else HB_ERR_TRUNCATED and nothing happens). Returns 0, or a negative status telling why
 * the event was refused (then *n_p is 0 and nothing changed): INVAL (bad event, ARRIVE out of
 * order, node out of range), BUSY (ARRIVE beyond the window, see above), NOT_FOUND (TIMEOUT of
 * a collective not in flight), MISMATCH / PROTO (dropped message, see above). Late events
 * for a failed collective are counted and return 0 with no action. Never blocks.
 */
int hb_hier_step(hb_hier_t *h, const hb_hier_ev_t *ev, hb_hier_act_t *acts, size_t max,
                 size_t *n_p);

void hb_hier_stats(const hb_hier_t *h, hb_hier_stats_t *stats_p);

/* 1 when nothing is in flight here: no collective arrived at and not finished, none failed
 * (holding its sync number), no message kept for one not arrived at yet; then an engine can be
 * replaced by a new one with first_coll = the next id without losing anything. 0 otherwise. */
int hb_hier_idle(const hb_hier_t *h);

/* This node's role in words, e.g. "scmd inter-level Center" (static string). */
const char *hb_hier_role(const hb_hier_t *h);
/* Its role and program, one step per line ("  scmd I1  wait NOTIFY from n4"), into buf;
 * 0, or TRUNCATED (buf then holds what fitted), or INVAL. */
int hb_hier_describe(const hb_hier_t *h, char *buf, size_t len);

/* Names for logs; never NULL. */
const char *hb_hier_proto_name(hb_hier_proto_t p);
const char *hb_hier_msg_name(uint32_t msg);
const char *hb_hier_act_name(hb_hier_act_kind_t kind);
/* "scmd" or "tree" -> *p_p; INVAL otherwise. */
int hb_hier_proto_parse(const char *s, hb_hier_proto_t *p_p);

/*
 * Critical path of one barrier of the protocol on topo, counted as the formulas count it:
 * chassis barriers (T_IB) and inter-chassis sends (T_SR) on the longest causal chain from the
 * last ARRIVE to the last COMPLETE, with every node arriving at once. L is the number of
 * inter-level chassis on the longest root-to-leaf path (of the pruned tree in a restricted
 * view, so the formula holds per member set). scmd: lone chassis 1 + 0, else
 * (4 + 3L) + 3(L + 1), exactly the paper's T_EB. tree: lone chassis 1 + 0, else
 * (3 + 2L) + 2(L + 1): the gather up costs a barrier per chassis on the path (L + 2), the
 * release one per non-root chassis (L + 1). (An earlier "(2 + 2L)·T_IB" is one T_IB short: the
 * root chassis' gather barrier cannot be skipped, since its nodes learn each other's
 * subtrees only through it.) Returns 0, or INVAL.
 */
int hb_hier_cost(const hb_topo_t *topo, hb_hier_proto_t p, uint32_t *n_ib_p, uint32_t *n_sr_p);
/* n_ib * t_ib + n_sr * t_sr for the above; a negative value if topo or p is invalid. */
double hb_hier_predict(const hb_topo_t *topo, hb_hier_proto_t p, double t_ib, double t_sr);

#endif
