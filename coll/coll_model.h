/* coll_model.h: collective cost models (Hockney, lane T(P), PlogP, PlogP-BR) and the chooser. */
#ifndef HB_MODEL_H
#define HB_MODEL_H

#include <stdint.h>
#include "coll.h"

/*
 * Units: bytes, microseconds, bytes per microsecond (see coll.h). Pure functions: no I/O, no
 * clock, no global state; thread-safe. Every int-returning function gives 0 or
 * HB_ERR_INVAL (bad parameter: zero or negative bandwidth, P out of range, NULL) and sets
 * its out-parameters only on success.
 */

/* Frames hibard queues for one peer before its sends wait (ZeroMQ's default ZMQ_SNDHWM, which
 * hibard keeps): hb_model_lanes_t.queue is this times the segment. */
#define HB_MODEL_QUEUE_FRAMES 1000.0

/* Mbit/s -> bytes/µs. */
#define HB_MODEL_MBIT(mbit_s) ((mbit_s) / 8.0)

/* Hockney: time of one m-byte message, alpha + m / beta (alpha µs, beta bytes/µs). */
double hb_model_hockney(double alpha, double beta, double m);

/*
 * Parameters of the two-site lane model (doc/design.md section 1).
 * b_WAN(P), the per-lane bandwidth when P lanes are active, is b_wan[P-1] when a measured
 * table covers P; past the end of the table the aggregate of the last entry is shared:
 * min(b_wan[n-1], b_wan[n-1] * n / P). Without a table: min(b_lane, B_wan / P).
 */
typedef struct hb_model_lanes {
    double L;            /* WAN one-way latency, µs */
    double alpha;        /* per-message start-up, µs */
    double b_lan;        /* LAN point-to-point bandwidth, bytes/µs */
    double b_lane;       /* WAN cap of one node pair, bytes/µs (default model) */
    double B_wan;        /* WAN total cap, bytes/µs (default model) */
    const double *b_wan; /* [n_b_wan] measured per-lane bandwidth with P = 1.. lanes, or NULL */
    uint32_t n_b_wan;
    /*
     * 0: T(P) exactly as doc/design.md section 1 (one alpha in total).
     * 1: T(P) + Y(P)·alpha, a start-up per LAN message as the single-lane formula charges;
     *    without it T(P) at small M is L + alpha for every P and always beats single-lane.
     */
    int lan_startup;
    /*
     * 0: multi-lane scatter and gather are predicted by T(P) (hb_model_multi_lane, the paper's
     * formula). 1: by hb_model_multi_lane_pipe, the schedule hibar runs (pipelined segments of
     * seg bytes, lanes sharing the WAN); the chooser and P_opt then use it.
     */
    int pipeline;
    double seg; /* pipelining segment, bytes; 0: whole messages (forwarded once complete) */
    /*
     * Bytes the root hands to one peer before its sends, issued in schedule order, wait for
     * that peer (hibard: ZeroMQ's 1000-message send queue x the segment); 0: no limit. A
     * scatter share larger than this holds back the shares and the root's own lane behind it.
     */
    double queue;
    /*
     * µs a relay of a tree (binomial) spends between a message's arrival and its own first send
     * (LogP's receive overhead plus the wake-up of a node that forwards: a daemon's turn); 0:
     * none, Hockney's tree as the literature states it. hibard charges alpha: on the 4-host bed
     * a binomial level cost about a hop more than the models said, and flat won at 4-64 KiB.
     */
    double relay;
} hb_model_lanes_t;

/* The lanes model hibard's chooser uses (and the tools that show or predict its choice), from a
 * cluster's configured links (latencies in µs, bandwidths in Mbit/s) and the pipelining segment
 * (bytes): a start-up per LAN message, pipelined lanes, a peer queue of HB_MODEL_QUEUE_FRAMES
 * segments, a tree's relay charged alpha. No measured b_WAN(P). */
hb_model_lanes_t hb_model_lanes_links(double wan_lat_us, double lan_lat_us, double lan_mbps,
                                      double lane_mbps, double total_mbps, double seg);

/* b_WAN(P) in bytes/µs; 0 if P == 0 or the parameters give no bandwidth. */
double hb_model_bwan(const hb_model_lanes_t *p, uint32_t P);

/* X(P) = ceil(n1 / P): processes each lane carries. 0 if P == 0. */
uint32_t hb_model_x(uint32_t n1, uint32_t P);
/* Y(P) = n0 + n1 - 1 - X(P) when n0 >= n1, else n1 + P - 2: LAN messages on the critical path. */
uint32_t hb_model_y(uint32_t n0, uint32_t n1, uint32_t P);

/*
 * Single-lane (MagPIe) scatter: T = L + n1·M/b_WAN(1) + (n_alt - 1)(alpha + M/b_LAN),
 * n_alt = max(n0, n1). n0, n1: processes in the root's and the remote site; M bytes each.
 * Gather is the same with directions reversed (same value).
 */
int hb_model_single_lane(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double M,
                         double *t_p);

/*
 * Multi-lane scatter: T(P) = L + X(P)·M/b_WAN(P) + Y(P)·M/b_LAN + alpha (+ Y(P)·alpha when
 * p->lan_startup), 1 <= P <= min(n0, n1). Gather: the same with directions reversed.
 */
int hb_model_multi_lane(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double M, uint32_t P,
                        double *t_p);

/*
 * Multi-lane scatter or gather as coll/coll_sched.c's schedule runs it, which T(P) does not
 * describe on three counts (doc/model.md, "The pipelined lane model"):
 *  - the lanes are uneven when P does not divide n1: lane j carries its group's x_j blocks,
 *    x_j = floor((j+1)·n1/P) - floor(j·n1/P), X or X - 1 of them. While all P lanes run each
 *    gets b_WAN(P); once the (X-1)-lanes are done the a = n1 - P·(X-1) others get b_WAN(a):
 *      W = (X-1)·M/b_WAN(P) + M/b_WAN(a)    (= X·M/b_WAN(P) when P divides n1);
 *  - segments are pipelined (p->seg, 0: whole messages): a Dep_send forwards its share as it
 *    arrives and a Dep_recv its children's blocks, so the LAN legs overlap the WAN instead of
 *    adding Y(P)·M/b_LAN. What is left of them: before the last lane starts (scatter) the
 *    first segment s = min(seg, X·M) of each share crosses the root's LAN link, which the
 *    root's P - 1 shares and n0 - 1 blocks share: d = alpha + s·(P + n0 - 2)/b_LAN (gather:
 *    every Dep_recv holds its own block, d = alpha); after the WAN the last segment
 *    min(seg, M) makes one LAN hop, alpha + min(seg, M)/b_LAN, if the last lane ends at a
 *    relay (scatter: X > 1, a Dep_recv forwards to a child; gather: P > 1, a Dep_send
 *    forwards to the root);
 *  - the root's one NIC, at b_LAN, carries B = (n1 + n0 - 1)·M in all (the shares, its own
 *    site and its own lane's blocks: WAN traffic leaves through the same NIC), which bounds
 *    the time from below; in scatter every share must have crossed it before its lane's last
 *    segment can leave;
 *  - the root's NIC is shared max-min fairly by its flows (TCP through one bottleneck), a
 *    fluid run to the end: its own site's n0 - 1 blocks, the shares and its own lane (at most
 *    b_WAN(the lanes still running)); in gather a share is fed by its lane (capped the same)
 *    and the lanes' flows join L after the start; in scatter a Dep_send forwards its share as
 *    it arrives. While many flows share the NIC the root's own lane runs below its cap, which
 *    makes small and uneven P slower (the multi-lane paper's grid: P 3 626 ms, P 4 535 ms);
 *    the bound is when the last of them is through, + L + the relay hop for a lane, + alpha;
 *  - scatter with p->queue > 0: the root issues its sends in schedule order (shares 1 ..
 *    P-1, then its own lane 0), and a share beyond the queue holds back the ones behind it
 *    until its excess has crossed the root's link: lane j starts at
 *    s_j = alpha + sum_{0<i<j} max(0, x_i·M - queue)/b_LAN (lane 0 after all shares), and ends
 *    no earlier than s_j + x_j·M/b_WAN(1) + L.
 *   scatter: max(L + d + W + tail, alpha + B/b_LAN + L + min(seg, M)/b_WAN(1), max_j lane j,
 *                the NIC's fluid)
 *   gather:  max(L + d + W + tail, alpha + B/b_LAN, the NIC's fluid)
 * with seg 0 read as M (whole blocks; shares as X·M). 1 <= P <= min(n0, n1); op scatter or
 * gather, else HB_ERR_INVAL.
 */
int hb_model_multi_lane_pipe(const hb_model_lanes_t *p, hb_coll_op_t op, uint32_t n0, uint32_t n1,
                             double M, uint32_t P, double *t_p);

/* P_opt: the P in 1..min(n0, n1, p_max) (p_max 0: no cap) minimizing T(P); ties go to the smaller
 * P. */
int hb_model_popt(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double M, uint32_t p_max,
                  uint32_t *P_p, double *t_p);
/* The same for op (scatter or gather): by hb_model_multi_lane_pipe when p->pipeline, else by
 * T(P) (then op does not matter; hb_model_popt is this with scatter). */
int hb_model_popt_op(const hb_model_lanes_t *p, hb_coll_op_t op, uint32_t n0, uint32_t n1, double M,
                     uint32_t p_max, uint32_t *P_p, double *t_p);

/*
 * Hockney predictions of the site-blind algorithms on two sites (n1 may be 0: one site), for
 * scatter (gather: same value) with M bytes per node, or bcast with M bytes in total:
 * flat: root posts its n1 WAN messages first (alpha each); they go to distinct remote nodes, so
 * they run at once as n1 node pairs, each capped at b_WAN and together under B_WAN, and are all
 * through after M / b_WAN(n1) + L; the root's NIC carries all n0 + n1 - 1 messages at b_LAN:
 * max(n1·alpha + L + M/b_WAN(n1), n1·alpha + (n0-1)(alpha + M/b_LAN), alpha +
 * (n0+n1-1)·M/b_LAN + L [n1 > 0]); gather the same reversed (n1 remote senders at once, into
 * the root's NIC, whose bound is alpha + max((n0+n1-1)·M, L·b_LAN + n1·M)/b_LAN: the remote
 * blocks arrive from L on). binomial: root-rotated
 * binomial tree over ranks 0..n0-1 (root site) and n0..n0+n1-1 (remote), larger subtree first;
 * every message costs its sender alpha + bytes/b (b_WAN(1) across the WAN), a WAN message
 * arrives L later. alltoall (one site, n1 = 0; flat or pairwise; M bytes per pair):
 * (n0 - 1)(alpha + M/b_LAN) for both: Hockney cannot tell them apart.
 * HB_ERR_NOMEM possible for binomial (O(n) scratch).
 */
int hb_model_tree(const hb_model_lanes_t *p, hb_coll_op_t op, hb_coll_alg_t alg, uint32_t n0,
                  uint32_t n1, double M, double *t_p);

/* PlogP-BR communication patterns C (which link is the bottleneck). */
typedef enum {
    HB_MODEL_PAT_PAIR = 0,        /* one sender, one receiver */
    HB_MODEL_PAT_ONE_TO_MANY = 1, /* one sender to many receivers (its out-link) */
    HB_MODEL_PAT_MANY_TO_ONE = 2, /* many senders to one receiver (incast on its switch port) */
    HB_MODEL_PAT_COUNT = 3
} hb_model_pat_t;

/*
 * PlogP parameters (Kielmann et al.) with the PlogP-BR extension (Nomura, Ishikawa).
 * Tables hold values at n message sizes m[0] < m[1] < ...; between points the value is
 * interpolated linearly, below m[0] it is the first value, above the last point it is
 * extrapolated along the last segment (never below the last value).
 */
typedef struct hb_model_plogp {
    double L;                                /* end-to-end latency, µs */
    uint32_t n;                              /* points in the tables, >= 1 */
    const double *m;                         /* [n] message sizes, bytes, strictly ascending */
    const double *os;                        /* [n] send overhead o_s(m), µs */
    const double *orv;                       /* [n] receive overhead o_r(m), µs */
    const double *g;                         /* [n] gap g(m), µs */
    const double *g_pat[HB_MODEL_PAT_COUNT]; /* [n] g(m, C) per pattern; NULL: g(m) */
    double q;                                /* switch queue, bytes */
    double t_rto;                            /* retransmission timeout, µs */
    int flow_control; /* 1: link-level flow control (no loss, no RTO penalty) */
    /* Bytes one sender has in flight before its first acknowledgement (TCP's initial window),
     * 0: unlimited (the paper's E_q). A many-to-one phase then overflows the queue only if
     * q < (n - 1)·min(m, burst): a large message arrives window by window, not at once. */
    double burst;
} hb_model_plogp_t;

/* Interpolated table value at size m (see above). */
double hb_model_interp(const double *ms, const double *v, uint32_t n, double m);
double hb_model_plogp_g(const hb_model_plogp_t *p, hb_model_pat_t pat, double m);
double hb_model_plogp_os(const hb_model_plogp_t *p, double m);
double hb_model_plogp_or(const hb_model_plogp_t *p, double m);
/* E_q(m, n) = 1 if no flow control and q < (n - 1)·m, else 0 (n nodes in a many-to-one phase);
 * with p->burst > 0, m is capped at burst. */
int hb_model_plogp_eq(const hb_model_plogp_t *p, double m, uint32_t n);

/*
 * PlogP(-BR) prediction on one site of n nodes, m bytes per node (bcast: m in total):
 *   scatter flat      (n-1)·g(m, 1→n) + L
 *   scatter binomial  Σ_{k<d} (g(2^k·m, pair) + L), d = ceil(log2 n)
 *   gather flat       (n-1)·g(m, n→1) + L + E_q(m, n)·T_RTO     (all children send at once;
 *                     E only for a many-to-one phase: 2 senders or more)
 *   gather binomial   Σ_{k<d} (g(2^k·m, pair) + L)              (pairwise: no incast)
 *   bcast flat        (n-1)·g(m, 1→n) + L;   bcast binomial d·(g(m, pair) + L)
 *   allgather         gather(m) + bcast(n·m) of the same algorithm
 *   alltoall flat     (n-1)·max(g(m, 1→n), g(m, n→1)) + L + E_q(m, n)·T_RTO
 *                     (every node sends to all and is the target of a many-to-one phase, all
 *                     at once)
 *   alltoall pairwise (n-1)·(g(m, pair) + L)    (n - 1 rounds of pair exchanges: no incast)
 * (m bytes per pair for alltoall). Single- and multi-lane need sites: HB_ERR_INVAL.
 */
int hb_model_plogp_predict(const hb_model_plogp_t *p, hb_coll_op_t op, hb_coll_alg_t alg,
                           uint32_t n, double m, double *t_p);

/*
 * Two sites, PlogP(-BR) on the LAN (lan) and the lane model on the WAN (wan->L, b_WAN(P)):
 * a WAN message of b bytes occupies its sender w(b, P) = max(g(b, pair), b / b_WAN(P)) and
 * arrives wan->L later, except in flat, whose n1 WAN messages have distinct remote peers and
 * run at once: Wn = m / b_WAN(n1) for all of them. E(B) = T_RTO if no flow control and q < B (the
 * bytes the senders of a many-to-one phase, 2 or more, have in flight), else 0. X = ceil(n1 / P).
 * Scatter: flat         G = n1·g(m,1→n);  max(G + Wn + L_w, G + (n0-1)·g(m,1→n) + L) single-lane  W
 * = w(n1·m,1);  max(W + L_w + (n1-1)·g(m,1→n) + L, W + (n0-1)·g(m,1→n) + L) multi-lane   S =
 * (P-1)·g(X·m,1→n) (the shares), V = w(X·m,P); max(S + L + V + L_w + (X-1)·g(m,1→n) + L, S + V +
 * (n0-1)·g(m,1→n) + L) Gather (the same phases reversed, with incast where several send to one):
 *   flat         max((n0+n1-1)·g(m,n→1), Wn) + max(L, L_w) + E((n0+n1-1)·m)
 *   single-lane  max(R + w(n1·m,1) + L_w, (n0-1)·g(m,n→1) + L + E((n0-1)·m)),
 *                R = (n1-1)·g(m,n→1) + L + E((n1-1)·m)
 *   multi-lane   max(R + F, (n0-1)·g(m,n→1) + L + E((n0-1)·m)),
 *                R = (X-1)·g(m,n→1) + L + E((X-1)·m) + V + L_w,
 *                F = (P-1)·g(X·m,n→1) + L + E((P-1)·X·m)   (Dep_sends -> root)
 * binomial: the tree of hb_model_tree with these message costs (pairwise: no E). A phase with
 * no message (n0 = 1, X = 1, P = 1) costs nothing, its L included. bcast and allgather:
 * HB_ERR_INVAL (the chooser uses the lane model for them).
 */
int hb_model_plogp_sites(const hb_model_plogp_t *lan, const hb_model_lanes_t *wan, hb_coll_op_t op,
                         hb_coll_alg_t alg, uint32_t n0, uint32_t n1, double m, uint32_t P,
                         double *t_p);

/* What the chooser knows about the cluster. */
typedef struct hb_model_params {
    uint32_t n0;                   /* nodes in the root's site (>= 1) */
    uint32_t n1;                   /* nodes in the remote site; 0: one site */
    uint32_t p_max;                /* cap on lanes; 0: none */
    const hb_model_lanes_t *lanes; /* required; alpha/b_lan used for one site without PlogP */
    const hb_model_plogp_t *plogp; /* optional; when set, one-site choices use PlogP(-BR) */
} hb_model_params_t;

/* The chooser's answer. */
typedef struct hb_model_choice {
    hb_coll_alg_t alg;
    uint32_t lanes;                   /* P for multi-lane, 1 for single-lane, 0 otherwise */
    double predicted_us;              /* the model's time for this choice */
    double alg_us[HB_COLL_ALG_COUNT]; /* every candidate's prediction; < 0: not applicable */
} hb_model_choice_t;

/*
 * Pick the algorithm (and P) predicted fastest for op with size bytes per node (bcast: in
 * total). One site: flat or binomial (PlogP(-BR) if params->plogp, else Hockney). Two sites:
 * flat, binomial, single-lane and multi-lane at P_opt, from hb_model_plogp_sites for scatter
 * and gather when params->plogp is set, else from the lane model; allgather is gather + bcast.
 * alltoall: flat or pairwise on one site of n0 + n1 nodes (PlogP-BR if params->plogp, else
 * Hockney, which ties them: flat).
 * Ties go to the simpler algorithm (enum order).
 */
int hb_model_choose(hb_coll_op_t op, double size, const hb_model_params_t *params,
                    hb_model_choice_t *choice_p);

#endif
