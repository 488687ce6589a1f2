/* coll_model.c: cost models of the collectives and the algorithm chooser (pure arithmetic, no I/O).
 */
#include <math.h>
#include <stdlib.h>

#include "hb_status.h"
#include "coll_model.h"

double hb_model_hockney(double alpha, double beta, double m)
{
    return alpha + m / beta;
}

hb_model_lanes_t hb_model_lanes_links(double wan_lat_us, double lan_lat_us, double lan_mbps,
                                      double lane_mbps, double total_mbps, double seg)
{
    return (hb_model_lanes_t){.L = wan_lat_us,
                              .alpha = lan_lat_us,
                              .b_lan = HB_MODEL_MBIT(lan_mbps),
                              .b_lane = HB_MODEL_MBIT(lane_mbps),
                              .B_wan = HB_MODEL_MBIT(total_mbps),
                              .lan_startup = 1,
                              .pipeline = 1,
                              .seg = seg,
                              .queue = HB_MODEL_QUEUE_FRAMES * seg,
                              .relay = lan_lat_us};
}

double hb_model_bwan(const hb_model_lanes_t *p, uint32_t P)
{
    if (p == NULL || P == 0)
        return 0.0;
    if (p->b_wan != NULL && p->n_b_wan > 0) {
        if (P <= p->n_b_wan)
            return p->b_wan[P - 1];
        double last = p->b_wan[p->n_b_wan - 1];
        double shared = last * (double)p->n_b_wan / (double)P;
        return shared < last ? shared : last;
    }
    if (p->b_lane <= 0.0 || p->B_wan <= 0.0)
        return 0.0;
    double share = p->B_wan / (double)P;
    return share < p->b_lane ? share : p->b_lane;
}

uint32_t hb_model_x(uint32_t n1, uint32_t P)
{
    if (P == 0)
        return 0;
    return (n1 + P - 1) / P;
}

uint32_t hb_model_y(uint32_t n0, uint32_t n1, uint32_t P)
{
    if (n0 >= n1)
        return n0 + n1 - 1 - hb_model_x(n1, P);
    return n1 + P - 2;
}

static int lanes_ok(const hb_model_lanes_t *p)
{
    return p != NULL && p->b_lan > 0.0 && p->L >= 0.0 && p->alpha >= 0.0;
}

int hb_model_single_lane(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double M, double *t_p)
{
    if (!lanes_ok(p) || n0 == 0 || n1 == 0 || M < 0.0 || t_p == NULL)
        return HB_ERR_INVAL;
    double bw = hb_model_bwan(p, 1);
    if (bw <= 0.0)
        return HB_ERR_INVAL;
    uint32_t n_alt = n0 > n1 ? n0 : n1;
    *t_p = p->L + (double)n1 * M / bw + (double)(n_alt - 1) * (p->alpha + M / p->b_lan);
    return 0;
}

int hb_model_multi_lane(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double M, uint32_t P,
                        double *t_p)
{
    if (!lanes_ok(p) || n0 == 0 || n1 == 0 || M < 0.0 || t_p == NULL)
        return HB_ERR_INVAL;
    if (P < 1 || P > n0 || P > n1)
        return HB_ERR_INVAL;
    double bw = hb_model_bwan(p, P);
    if (bw <= 0.0)
        return HB_ERR_INVAL;
    double X = hb_model_x(n1, P), Y = hb_model_y(n0, n1, P);
    double t = p->L + X * M / bw + Y * M / p->b_lan + p->alpha;
    if (p->lan_startup)
        t += Y * p->alpha;
    *t_p = t;
    return 0;
}

/* Blocks of group g of P over n1 nodes (coll_sched.c's grp_lo): X or X - 1. */
static uint32_t grp_blocks(uint32_t n1, uint32_t P, uint32_t g)
{
    return (uint32_t)(((uint64_t)(g + 1) * n1) / P - ((uint64_t)g * n1) / P);
}

/*
 * The root's one NIC (rate b) shared max-min fairly by TCP flows, a fluid run to the end.
 * Class i: k[i] flows of bytes[i] each. Class 0: the root's own site (only the NIC limits
 * them). Classes 1, 2: the shares (X and X - 1 blocks). Class 3: the root's own lane. A lane
 * runs at b_WAN(the lanes still running). Gather: a share is fed by its lane, so it is capped
 * at that rate on the NIC like the root's own lane. Scatter: a share crosses the NIC at its
 * fair share into its Dep_send, whose lane forwards it as it arrives (a queue: at the lane's
 * rate while anything waits, else at the arrival rate) and is through at lane_end[i].
 * A class takes part from start[i] on (gather: a lane's first bytes reach the root site L
 * after the start). Returns when the last byte of the last class is through (NIC and lanes), or
 * INFINITY.
 */
#define NIC_CLASSES 4

typedef struct nic_fluid {
    double k[NIC_CLASSES], bytes[NIC_CLASSES], start[NIC_CLASSES];
    double end[NIC_CLASSES];      /* through the NIC at */
    double lane_end[NIC_CLASSES]; /* scatter shares: through their lane at */
} nic_fluid_t;

static double nic_fluid(const hb_model_lanes_t *p, double b, int gather, nic_fluid_t *f)
{
    double sent[NIC_CLASSES] = {0}, fwd[NIC_CLASSES] = {0}, t = 0.0;
    for (int i = 0; i < NIC_CLASSES; i++) {
        int none = !(f->k[i] > 0.0 && f->bytes[i] > 0.0);
        f->end[i] = none ? 0.0 : -1.0;
        f->lane_end[i] = none || gather || i == 0 || i == 3 ? 0.0 : -1.0;
    }
    for (int guard = 0; guard < 64; guard++) {
        /* the lanes running now: the root's own, and every share not yet through its lane */
        double lanes = (f->end[3] < 0.0 ? 1.0 : 0.0);
        for (int i = 1; i < 3; i++)
            if ((gather ? f->end[i] : f->lane_end[i]) < 0.0)
                lanes += f->k[i];
        double c = lanes > 0.0 ? hb_model_bwan(p, (uint32_t)lanes) : 0.0;
        /* NIC rates by water-filling: capped classes (lanes) below the fair share keep c */
        double rate[NIC_CLASSES] = {0}, left = b, nleft = 0.0, dt = INFINITY;
        int act = 0, on[NIC_CLASSES];
        for (int i = 0; i < NIC_CLASSES; i++) {
            on[i] = f->end[i] < 0.0 && f->start[i] <= t;
            if (f->end[i] < 0.0) {
                act = 1;
                if (!on[i] && f->start[i] - t < dt)
                    dt = f->start[i] - t; /* a class joins */
            }
            if (on[i])
                nleft += f->k[i];
        }
        int capped[NIC_CLASSES] = {0};
        for (int i = 0; i < NIC_CLASSES; i++)
            capped[i] = on[i] && (i == 3 || (gather && i > 0));
        double ncap = 0.0;
        for (int i = 0; i < NIC_CLASSES; i++)
            ncap += capped[i] ? f->k[i] : 0.0;
        if (ncap > 0.0 && nleft > 0.0 && c <= left / nleft) {
            for (int i = 0; i < NIC_CLASSES; i++)
                if (capped[i])
                    rate[i] = c;
            left -= c * ncap;
            nleft -= ncap;
        } else {
            for (int i = 0; i < NIC_CLASSES; i++)
                capped[i] = 0;
        }
        for (int i = 0; i < NIC_CLASSES; i++)
            if (on[i] && !capped[i])
                rate[i] = nleft > 0.0 ? left / nleft : 0.0;
        /* scatter's share lanes: at c while a backlog waits, else at the arrival rate */
        double lrate[NIC_CLASSES] = {0};
        int lanes_left = 0;
        for (int i = 1; i < 3; i++) {
            if (gather || f->lane_end[i] >= 0.0)
                continue;
            lanes_left = 1;
            double back = sent[i] - fwd[i], arr = on[i] ? rate[i] : 0.0;
            lrate[i] = back > 1e-9 * f->bytes[i] ? c : (arr < c ? arr : c);
            if (back > 1e-9 * f->bytes[i] && c > arr && (back / (c - arr)) < dt)
                dt = back / (c - arr); /* the backlog is gone */
            if (lrate[i] > 0.0 && (f->bytes[i] - fwd[i]) / lrate[i] < dt)
                dt = (f->bytes[i] - fwd[i]) / lrate[i];
        }
        if (!act && !lanes_left)
            return t;
        for (int i = 0; i < NIC_CLASSES; i++)
            if (on[i] && rate[i] > 0.0 && (f->bytes[i] - sent[i]) / rate[i] < dt)
                dt = (f->bytes[i] - sent[i]) / rate[i];
        if (!isfinite(dt))
            return INFINITY;
        t += dt;
        for (int i = 0; i < NIC_CLASSES; i++) {
            if (on[i]) {
                sent[i] += rate[i] * dt;
                if (f->bytes[i] - sent[i] <= 1e-9 * f->bytes[i]) {
                    sent[i] = f->bytes[i];
                    f->end[i] = t;
                }
            }
            if (f->lane_end[i] < 0.0) {
                fwd[i] += lrate[i] * dt;
                if (fwd[i] > sent[i])
                    fwd[i] = sent[i];
                if (f->bytes[i] - fwd[i] <= 1e-9 * f->bytes[i]) {
                    fwd[i] = f->bytes[i];
                    f->lane_end[i] = t;
                }
            }
        }
    }
    return INFINITY;
}

int hb_model_multi_lane_pipe(const hb_model_lanes_t *p, hb_coll_op_t op, uint32_t n0, uint32_t n1,
                             double M, uint32_t P, double *t_p)
{
    if (!lanes_ok(p) || n0 == 0 || n1 == 0 || M < 0.0 || t_p == NULL || !(p->seg >= 0.0) ||
        !(p->queue >= 0.0))
        return HB_ERR_INVAL;
    if ((op != HB_COLL_SCATTER && op != HB_COLL_GATHER) || P < 1 || P > n0 || P > n1)
        return HB_ERR_INVAL;
    double bP = hb_model_bwan(p, P), b1 = hb_model_bwan(p, 1);
    uint32_t X = hb_model_x(n1, P), a = n1 - P * (X - 1);
    double ba = hb_model_bwan(p, a);
    if (bP <= 0.0 || b1 <= 0.0 || ba <= 0.0)
        return HB_ERR_INVAL;
    /* the WAN: every lane at b_WAN(P) until the (X-1)-lanes are done, then the a X-lanes */
    double W = a == P ? (double)X * M / bP : (double)(X - 1) * M / bP + M / ba;
    double seg = p->seg > 0.0 && p->seg < M ? p->seg : M;
    /* The root's one NIC carries every block but its own: the shares, its own site and the
     * blocks of its own lane alike (doc/reproduction.md, section 2). */
    double B = (double)(n1 + n0 - 1) * M;
    double d = p->alpha, tail = 0.0, lower;
    if (op == HB_COLL_SCATTER) {
        double first = p->seg > 0.0 && p->seg < (double)X * M ? p->seg : (double)X * M;
        if (P > 1)
            d += first * (double)(P + n0 - 2) / p->b_lan;
        if (X > 1)
            tail = p->alpha + seg / p->b_lan;
        lower = p->alpha + B / p->b_lan + p->L + seg / b1;
        if (p->queue > 0.0) { /* shares handed out in order: lanes 1 .. P-1, then lane 0 */
            double held = 0.0;
            for (uint32_t j = 1; j <= P; j++) {
                uint32_t g = j < P ? j : 0; /* the lane: its group's blocks */
                double xg = (double)(grp_blocks(n1, P, g)) * M;
                double end = p->alpha + held / p->b_lan + xg / b1 + p->L;
                if (end > lower)
                    lower = end;
                if (j < P && xg > p->queue)
                    held += xg - p->queue;
            }
        }
    } else {
        if (P > 1)
            tail = p->alpha + seg / p->b_lan;
        lower = p->alpha + B / p->b_lan;
    }
    /* The root's NIC shared fairly (nic_fluid): while many flows share it, the root's own
     * lane and the shares run below their lanes' rate (doc/reproduction.md, section 2). */
    uint32_t kX = 0;
    for (uint32_t g = 1; g < P; g++)
        kX += grp_blocks(n1, P, g) == X;
    double l1 = op == HB_COLL_GATHER ? p->L : 0.0;
    nic_fluid_t f = {
        .k = {n0 - 1, kX, (double)(P - 1 - kX), 1},
        .bytes = {M, (double)X * M, (double)(X - 1) * M, (double)grp_blocks(n1, P, 0) * M},
        .start = {0.0, l1, l1, l1}};
    double fl = nic_fluid(p, p->b_lan, op == HB_COLL_GATHER, &f);
    if (op == HB_COLL_SCATTER) {
        fl = f.end[0];
        for (int i = 1; i < NIC_CLASSES; i++) {
            double e = (i < 3 ? f.lane_end[i] : f.end[i]) + p->L + tail;
            if (f.k[i] > 0.0 && f.bytes[i] > 0.0 && e > fl)
                fl = e;
        }
    }
    fl += p->alpha;
    if (fl > lower)
        lower = fl;
    double t = p->L + d + W + tail;
    *t_p = t > lower ? t : lower;
    return 0;
}

int hb_model_popt(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double M, uint32_t p_max,
                  uint32_t *P_p, double *t_p)
{
    return hb_model_popt_op(p, HB_COLL_SCATTER, n0, n1, M, p_max, P_p, t_p);
}

int hb_model_popt_op(const hb_model_lanes_t *p, hb_coll_op_t op, uint32_t n0, uint32_t n1, double M,
                     uint32_t p_max, uint32_t *P_p, double *t_p)
{
    if (P_p == NULL || t_p == NULL)
        return HB_ERR_INVAL;
    uint32_t hi = n0 < n1 ? n0 : n1;
    if (p_max > 0 && p_max < hi)
        hi = p_max;
    uint32_t best_P = 0;
    double best = 0.0;
    for (uint32_t P = 1; P <= hi; P++) {
        double t;
        int rc = p != NULL && p->pipeline ? hb_model_multi_lane_pipe(p, op, n0, n1, M, P, &t)
                                          : hb_model_multi_lane(p, n0, n1, M, P, &t);
        if (rc != 0)
            return rc;
        if (best_P == 0 || t < best) {
            best = t;
            best_P = P;
        }
    }
    if (best_P == 0)
        return HB_ERR_INVAL;
    *P_p = best_P;
    *t_p = best;
    return 0;
}

/* Largest power of two <= x (x >= 1). */
static uint32_t pow2_floor(uint32_t x)
{
    uint32_t k = 1;
    while (k <= x / 2)
        k <<= 1;
    return k;
}

/* Cost of one message of b bytes: sender occupancy, and latency until it has arrived. */
typedef void (*msg_cost_fn)(const void *ctx, double b, int wan, double *occ, double *lat);

/*
 * Root-rotated binomial tree over ranks 0..n0-1 (root's site) and n0..n0+n1-1, larger subtree
 * first; a node sends once it has its data, and a node that forwards (has children) relay µs
 * after that. Returns the last arrival, or < 0 without memory.
 */
static double binomial_walk(uint32_t n0, uint32_t n1, double M, int per_node, double relay,
                            msg_cost_fn cost, const void *ctx)
{
    uint32_t n = n0 + n1;
    double *ready = calloc(n, sizeof(*ready));
    if (ready == NULL)
        return -1.0;
    double end = 0.0;
    for (uint32_t r = 0; r < n; r++) {
        double t = ready[r];
        if (t > end)
            end = t;
        /* children of r: r + k for powers of two k below r's lowest set bit (all for r = 0) */
        uint32_t lim = r == 0 ? n : (r & (~r + 1u));
        for (uint32_t k = pow2_floor(n); k >= 1; k >>= 1) {
            if (k >= lim || (uint64_t)r + k >= n)
                continue;
            uint32_t c = r + k;
            uint32_t sub = n - c < k ? n - c : k;
            double occ, lat;
            cost(ctx, per_node ? (double)sub * M : M, (r < n0) != (c < n0), &occ, &lat);
            t += occ;
            ready[c] = t + lat + (sub > 1 ? relay : 0.0);
        }
    }
    free(ready);
    return end;
}

static void hockney_cost(const void *ctx, double b, int wan, double *occ, double *lat)
{
    const hb_model_lanes_t *p = ctx;
    *occ = p->alpha + b / (wan ? hb_model_bwan(p, 1) : p->b_lan);
    *lat = wan ? p->L : 0.0;
}

int hb_model_tree(const hb_model_lanes_t *p, hb_coll_op_t op, hb_coll_alg_t alg, uint32_t n0,
                  uint32_t n1, double M, double *t_p)
{
    if (!lanes_ok(p) || n0 == 0 || M < 0.0 || t_p == NULL || op >= HB_COLL_OP_COUNT)
        return HB_ERR_INVAL;
    if (op == HB_COLL_ALLTOALL && hb_coll_alg_valid(op, alg) && n1 == 0) {
        /* every node sends n - 1 messages and receives as many (full duplex), one after the
         * other (pairwise) or posted at once (flat): the same start-ups and bytes */
        *t_p = (double)(n0 - 1) * (p->alpha + M / p->b_lan);
        return 0;
    }
    if (op == HB_COLL_ALLGATHER || op == HB_COLL_ALLTOALL ||
        (alg != HB_COLL_ALG_FLAT && alg != HB_COLL_ALG_BINOMIAL))
        return HB_ERR_INVAL;
    double bw = n1 > 0 ? hb_model_bwan(p, 1) : 1.0;
    if (bw <= 0.0)
        return HB_ERR_INVAL;
    int per_node = op != HB_COLL_BCAST;
    if (alg == HB_COLL_ALG_FLAT) {
        /*
         * The root posts its n1 WAN messages first (alpha each); they go to distinct remote
         * nodes, so they run at once as n1 node pairs, each capped at b_WAN and together under
         * B_WAN: all of them are through after M / b_WAN(n1). Then its own site, one message
         * after the other.
         */
        double posted = (double)n1 * p->alpha, end = 0.0;
        if (n1 > 0) {
            double bw_n1 = hb_model_bwan(p, n1);
            if (bw_n1 <= 0.0)
                return HB_ERR_INVAL;
            end = posted + p->L + M / bw_n1;
        }
        double local = posted + (double)(n0 - 1) * (p->alpha + M / p->b_lan);
        /* The root's NIC (b_LAN) carries all n0 + n1 - 1 messages, the WAN ones too. Shared
         * by all of them, in scatter and bcast the WAN ones end last and then cross the WAN;
         * in gather they arrive from L on, while the local ones use the NIC. */
        double all = (double)(n0 + n1 - 1) * M / p->b_lan, nic;
        if (op == HB_COLL_GATHER)
            nic = p->alpha + (n1 > 0 && p->L + (double)n1 * M / p->b_lan > all
                                  ? p->L + (double)n1 * M / p->b_lan
                                  : all);
        else
            nic = p->alpha + all + (n1 > 0 ? p->L : 0.0);
        if (nic > end)
            end = nic;
        *t_p = local > end ? local : end;
        return 0;
    }
    double end = binomial_walk(n0, n1, M, per_node, p->relay, hockney_cost, p);
    if (end < 0.0)
        return HB_ERR_NOMEM;
    *t_p = end;
    return 0;
}

/* Single-lane bcast of S bytes: L + S/b_WAN(1) + (n_alt - 1)(alpha + S/b_LAN). */
static double bcast_single_lane(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double S)
{
    uint32_t n_alt = n0 > n1 ? n0 : n1;
    return p->L + S / hb_model_bwan(p, 1) + (double)(n_alt - 1) * (p->alpha + S / p->b_lan);
}

/*
 * Multi-lane bcast of S bytes on P lanes (coll/coll_sched.c's algorithm): root sends part j
 * (S/P) to Dep_send j over the LAN, lanes cross the WAN in parallel, each Dep_recv sends its
 * part to the n1 - 1 other remote nodes; root serves its own site after the shares.
 */
static double bcast_multi_lane(const hb_model_lanes_t *p, uint32_t n0, uint32_t n1, double S,
                               uint32_t P)
{
    double part = S / (double)P;
    double share = (double)(P - 1) * (p->alpha + part / p->b_lan);
    double remote =
        share + p->L + part / hb_model_bwan(p, P) + (double)(n1 - 1) * (p->alpha + part / p->b_lan);
    double local = share + (double)(n0 - 1) * (p->alpha + S / p->b_lan);
    return remote > local ? remote : local;
}

/* Two-site (or one-site) Hockney/lane prediction of one algorithm; < 0 if not applicable. */
static int predict_lanes(const hb_model_params_t *pr, hb_coll_op_t op, hb_coll_alg_t alg, double M,
                         uint32_t P, double *t_p)
{
    const hb_model_lanes_t *p = pr->lanes;
    uint32_t n0 = pr->n0, n1 = pr->n1;
    if (op == HB_COLL_ALLGATHER) {
        double tg, tb;
        int rc = predict_lanes(pr, HB_COLL_GATHER, alg, M, P, &tg);
        if (rc == 0)
            rc = predict_lanes(pr, HB_COLL_BCAST, alg, (double)(n0 + n1) * M, P, &tb);
        if (rc == 0)
            *t_p = tg + tb;
        return rc;
    }
    switch (alg) {
    case HB_COLL_ALG_FLAT:
    case HB_COLL_ALG_BINOMIAL:
        return hb_model_tree(p, op, alg, n0, n1, M, t_p);
    case HB_COLL_ALG_SINGLE_LANE:
        if (n1 == 0)
            return HB_ERR_INVAL;
        if (op == HB_COLL_BCAST) {
            if (hb_model_bwan(p, 1) <= 0.0)
                return HB_ERR_INVAL;
            *t_p = bcast_single_lane(p, n0, n1, M);
            return 0;
        }
        return hb_model_single_lane(p, n0, n1, M, t_p);
    case HB_COLL_ALG_MULTI_LANE:
        if (n1 == 0 || P < 1 || P > n0 || P > n1)
            return HB_ERR_INVAL;
        if (op == HB_COLL_BCAST) {
            if (hb_model_bwan(p, P) <= 0.0)
                return HB_ERR_INVAL;
            *t_p = bcast_multi_lane(p, n0, n1, M, P);
            return 0;
        }
        if (p->pipeline)
            return hb_model_multi_lane_pipe(p, op, n0, n1, M, P, t_p);
        return hb_model_multi_lane(p, n0, n1, M, P, t_p);
    default:
        return HB_ERR_INVAL;
    }
}

double hb_model_interp(const double *ms, const double *v, uint32_t n, double m)
{
    if (ms == NULL || v == NULL || n == 0)
        return 0.0;
    if (n == 1 || m <= ms[0])
        return v[0];
    uint32_t i = 1;
    while (i < n - 1 && ms[i] < m)
        i++;
    double x0 = ms[i - 1], x1 = ms[i], y0 = v[i - 1], y1 = v[i];
    if (x1 <= x0)
        return y1;
    double y = y0 + (y1 - y0) * (m - x0) / (x1 - x0);
    if (m > ms[n - 1] && y < v[n - 1])
        return v[n - 1];
    return y;
}

double hb_model_plogp_g(const hb_model_plogp_t *p, hb_model_pat_t pat, double m)
{
    if (p == NULL)
        return 0.0;
    const double *g = (pat < HB_MODEL_PAT_COUNT && p->g_pat[pat] != NULL) ? p->g_pat[pat] : p->g;
    return hb_model_interp(p->m, g, p->n, m);
}

double hb_model_plogp_os(const hb_model_plogp_t *p, double m)
{
    return p == NULL ? 0.0 : hb_model_interp(p->m, p->os, p->n, m);
}

double hb_model_plogp_or(const hb_model_plogp_t *p, double m)
{
    return p == NULL ? 0.0 : hb_model_interp(p->m, p->orv, p->n, m);
}

int hb_model_plogp_eq(const hb_model_plogp_t *p, double m, uint32_t n)
{
    if (p == NULL || p->flow_control || n < 2)
        return 0;
    if (p->burst > 0.0 && m > p->burst)
        m = p->burst;
    return p->q < (double)(n - 1) * m ? 1 : 0;
}

static uint32_t ceil_log2(uint32_t n)
{
    uint32_t d = 0;
    while (d < 32 && (UINT64_C(1) << d) < n)
        d++;
    return d;
}

int hb_model_plogp_predict(const hb_model_plogp_t *p, hb_coll_op_t op, hb_coll_alg_t alg,
                           uint32_t n, double m, double *t_p)
{
    if (p == NULL || p->n == 0 || p->m == NULL || p->g == NULL || n == 0 || m < 0.0 || t_p == NULL)
        return HB_ERR_INVAL;
    if (!hb_coll_alg_valid(op, alg) ||
        (alg != HB_COLL_ALG_FLAT && alg != HB_COLL_ALG_BINOMIAL && alg != HB_COLL_ALG_PAIRWISE))
        return HB_ERR_INVAL;
    if (n == 1) {
        *t_p = 0.0;
        return 0;
    }
    uint32_t d = ceil_log2(n);
    double t = 0.0;
    switch (op) {
    case HB_COLL_ALLTOALL:
        if (alg == HB_COLL_ALG_PAIRWISE) {
            t = (double)(n - 1) * (hb_model_plogp_g(p, HB_MODEL_PAT_PAIR, m) + p->L);
        } else {
            double g1 = hb_model_plogp_g(p, HB_MODEL_PAT_ONE_TO_MANY, m),
                   gn = hb_model_plogp_g(p, HB_MODEL_PAT_MANY_TO_ONE, m);
            t = (double)(n - 1) * (g1 > gn ? g1 : gn) + p->L;
            if (n >= 3)
                t += (double)hb_model_plogp_eq(p, m, n) * p->t_rto;
        }
        break;
    case HB_COLL_SCATTER:
    case HB_COLL_GATHER:
        if (alg == HB_COLL_ALG_FLAT && op == HB_COLL_SCATTER) {
            t = (double)(n - 1) * hb_model_plogp_g(p, HB_MODEL_PAT_ONE_TO_MANY, m) + p->L;
        } else if (alg == HB_COLL_ALG_FLAT) {
            t = (double)(n - 1) * hb_model_plogp_g(p, HB_MODEL_PAT_MANY_TO_ONE, m) + p->L;
            if (n >= 3)
                t += (double)hb_model_plogp_eq(p, m, n) * p->t_rto;
        } else {
            for (uint32_t k = 0; k < d; k++)
                t += hb_model_plogp_g(p, HB_MODEL_PAT_PAIR, ldexp(m, (int)k)) + p->L;
        }
        break;
    case HB_COLL_BCAST:
        if (alg == HB_COLL_ALG_FLAT)
            t = (double)(n - 1) * hb_model_plogp_g(p, HB_MODEL_PAT_ONE_TO_MANY, m) + p->L;
        else
            t = (double)d * (hb_model_plogp_g(p, HB_MODEL_PAT_PAIR, m) + p->L);
        break;
    case HB_COLL_ALLGATHER: {
        double tg, tb;
        int rc = hb_model_plogp_predict(p, HB_COLL_GATHER, alg, n, m, &tg);
        if (rc == 0)
            rc = hb_model_plogp_predict(p, HB_COLL_BCAST, alg, n, (double)n * m, &tb);
        if (rc != 0)
            return rc;
        t = tg + tb;
        break;
    }
    default:
        return HB_ERR_INVAL;
    }
    *t_p = t;
    return 0;
}

/* Context of the two-site PlogP message costs. */
typedef struct sites_ctx {
    const hb_model_plogp_t *lan;
    const hb_model_lanes_t *wan;
} sites_ctx_t;

/* w(b, P): a WAN message's sender occupancy. */
static double wan_occ(const sites_ctx_t *c, double b, uint32_t P)
{
    double g = hb_model_plogp_g(c->lan, HB_MODEL_PAT_PAIR, b), t = b / hb_model_bwan(c->wan, P);
    return g > t ? g : t;
}

static void sites_cost(const void *ctx, double b, int wan, double *occ, double *lat)
{
    const sites_ctx_t *c = ctx;
    *occ = wan ? wan_occ(c, b, 1) : hb_model_plogp_g(c->lan, HB_MODEL_PAT_PAIR, b);
    *lat = wan ? c->wan->L : c->lan->L;
}

/* RTO penalty of a many-to-one phase: `senders` senders with `bytes` in flight. */
static double incast(const hb_model_plogp_t *p, uint32_t senders, double bytes)
{
    if (p->burst > 0.0 && bytes > (double)senders * p->burst)
        bytes = (double)senders * p->burst; /* each sender's first window only */
    if (senders < 2 || p->flow_control || !(p->q < bytes))
        return 0.0;
    return p->t_rto;
}

/* (k)·g(b, pattern) + L if k > 0, else 0: one LAN phase of k messages. */
static double lan_phase(const hb_model_plogp_t *p, uint32_t k, double b, hb_model_pat_t pat)
{
    return k == 0 ? 0.0 : (double)k * hb_model_plogp_g(p, pat, b) + p->L;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

int hb_model_plogp_sites(const hb_model_plogp_t *lan, const hb_model_lanes_t *wan, hb_coll_op_t op,
                         hb_coll_alg_t alg, uint32_t n0, uint32_t n1, double m, uint32_t P,
                         double *t_p)
{
    if (lan == NULL || lan->n == 0 || lan->m == NULL || lan->g == NULL || wan == NULL || n0 == 0 ||
        n1 == 0 || m < 0.0 || t_p == NULL)
        return HB_ERR_INVAL;
    if (op != HB_COLL_SCATTER && op != HB_COLL_GATHER)
        return HB_ERR_INVAL;
    if (alg == HB_COLL_ALG_MULTI_LANE && (P < 1 || P > n0 || P > n1))
        return HB_ERR_INVAL;
    if (alg != HB_COLL_ALG_MULTI_LANE)
        P = 1;
    if (hb_model_bwan(wan, P) <= 0.0)
        return HB_ERR_INVAL;
    sites_ctx_t c = {.lan = lan, .wan = wan};
    const hb_model_pat_t out = HB_MODEL_PAT_ONE_TO_MANY, in = HB_MODEL_PAT_MANY_TO_ONE;
    double Lw = wan->L, t;
    uint32_t X = hb_model_x(n1, P);
    int sc = op == HB_COLL_SCATTER;
    switch (alg) {
    case HB_COLL_ALG_FLAT: {
        /* the n1 WAN messages go to (scatter) or come from (gather) distinct remote nodes: they
         * run at once as n1 node pairs, together at n1·b_WAN(n1) */
        double Wn = m / hb_model_bwan(wan, n1);
        if (sc) {
            double G = (double)n1 * hb_model_plogp_g(lan, out, m);
            t = dmax(G + Wn + Lw, G + lan_phase(lan, n0 - 1, m, out));
        } else {
            t = dmax((double)(n0 + n1 - 1) * hb_model_plogp_g(lan, in, m), Wn) +
                dmax(n0 > 1 ? lan->L : 0.0, Lw) +
                incast(lan, n0 + n1 - 1, (double)(n0 + n1 - 1) * m);
        }
        break;
    }
    case HB_COLL_ALG_BINOMIAL:
        t = binomial_walk(n0, n1, m, 1, 0.0, sites_cost, &c);
        if (t < 0.0)
            return HB_ERR_NOMEM;
        break;
    case HB_COLL_ALG_SINGLE_LANE: {
        double W = wan_occ(&c, (double)n1 * m, 1);
        if (sc) {
            t = dmax(W + Lw + lan_phase(lan, n1 - 1, m, out), W + lan_phase(lan, n0 - 1, m, out));
        } else {
            double R = lan_phase(lan, n1 - 1, m, in) + incast(lan, n1 - 1, (double)(n1 - 1) * m);
            t = dmax(R + W + Lw,
                     lan_phase(lan, n0 - 1, m, in) + incast(lan, n0 - 1, (double)(n0 - 1) * m));
        }
        break;
    }
    case HB_COLL_ALG_MULTI_LANE: {
        double Xm = (double)X * m, V = wan_occ(&c, Xm, P);
        if (sc) {
            double S = (double)(P - 1) * hb_model_plogp_g(lan, out, Xm);
            t = dmax(S + (P > 1 ? lan->L : 0.0) + V + Lw + lan_phase(lan, X - 1, m, out),
                     S + V + lan_phase(lan, n0 - 1, m, out));
        } else {
            double R =
                lan_phase(lan, X - 1, m, in) + incast(lan, X - 1, (double)(X - 1) * m) + V + Lw;
            double F = lan_phase(lan, P - 1, Xm, in) + incast(lan, P - 1, (double)(P - 1) * Xm);
            t = dmax(R + F,
                     lan_phase(lan, n0 - 1, m, in) + incast(lan, n0 - 1, (double)(n0 - 1) * m));
        }
        break;
    }
    default:
        return HB_ERR_INVAL;
    }
    *t_p = t;
    return 0;
}

#define HB_MODEL_TREE_MARGIN 0.01

int hb_model_choose(hb_coll_op_t op, double size, const hb_model_params_t *params,
                    hb_model_choice_t *choice_p)
{
    if (params == NULL || choice_p == NULL || params->n0 == 0 || op >= HB_COLL_OP_COUNT ||
        size < 0.0)
        return HB_ERR_INVAL;
    if (params->lanes == NULL && (params->n1 > 0 || params->plogp == NULL))
        return HB_ERR_INVAL;
    hb_model_choice_t c = {.alg = HB_COLL_ALG_FLAT, .lanes = 0, .predicted_us = -1.0};
    for (int a = 0; a < HB_COLL_ALG_COUNT; a++)
        c.alg_us[a] = -1.0;
    uint32_t best_P[HB_COLL_ALG_COUNT] = {0, 0, 1, 0};
    int use_sites =
        params->plogp != NULL && params->n1 > 0 && (op == HB_COLL_SCATTER || op == HB_COLL_GATHER);
    for (int a = 0; a < HB_COLL_ALG_COUNT; a++) {
        hb_coll_alg_t alg = (hb_coll_alg_t)a;
        double t = -1.0;
        int rc;
        if (!hb_coll_alg_valid(op, alg))
            continue;
        if (op == HB_COLL_ALLTOALL) { /* site-blind: one site of n0 + n1 */
            uint32_t n = params->n0 + params->n1;
            rc = params->plogp != NULL ? hb_model_plogp_predict(params->plogp, op, alg, n, size, &t)
                                       : hb_model_tree(params->lanes, op, alg, n, 0, size, &t);
        } else if (params->n1 == 0) {
            if (alg != HB_COLL_ALG_FLAT && alg != HB_COLL_ALG_BINOMIAL)
                continue;
            if (params->plogp != NULL)
                rc = hb_model_plogp_predict(params->plogp, op, alg, params->n0, size, &t);
            else
                rc = predict_lanes(params, op, alg, size, 0, &t);
        } else if (alg == HB_COLL_ALG_MULTI_LANE) {
            uint32_t hi = params->n0 < params->n1 ? params->n0 : params->n1;
            if (params->p_max > 0 && params->p_max < hi)
                hi = params->p_max;
            rc = HB_ERR_INVAL;
            for (uint32_t P = 1; P <= hi; P++) {
                double tp;
                int r2 = use_sites ? hb_model_plogp_sites(params->plogp, params->lanes, op, alg,
                                                          params->n0, params->n1, size, P, &tp)
                                   : predict_lanes(params, op, alg, size, P, &tp);
                if (r2 == HB_ERR_NOMEM)
                    return r2;
                if (r2 == 0 && (rc != 0 || tp < t)) {
                    t = tp;
                    best_P[a] = P;
                    rc = 0;
                }
            }
        } else if (use_sites) {
            rc = hb_model_plogp_sites(params->plogp, params->lanes, op, alg, params->n0, params->n1,
                                      size, 1, &t);
        } else {
            rc = predict_lanes(params, op, alg, size, 1, &t);
        }
        if (rc == HB_ERR_NOMEM)
            return rc;
        if (rc != 0)
            continue;
        c.alg_us[a] = t;
        /*
         * Scatter and gather by binomial tree move more bytes in all than flat (every block
         * crosses each edge on its way down or up), which the Hockney terms do not charge: on
         * hosts whose CPUs also serve the ranks that traffic costs time. So binomial replaces
         * flat only when it wins by more than HB_MODEL_TREE_MARGIN (one latency in a
         * bandwidth-bound 4 MiB scatter is 0.05%: a tie, not a win).
         */
        double need = c.predicted_us;
        if (alg == HB_COLL_ALG_BINOMIAL && c.alg == HB_COLL_ALG_FLAT && op != HB_COLL_BCAST &&
            need > 0.0)
            need *= 1.0 - HB_MODEL_TREE_MARGIN;
        if (c.predicted_us < 0.0 || t < need) {
            c.predicted_us = t;
            c.alg = alg;
            c.lanes = best_P[a];
        }
    }
    if (c.predicted_us < 0.0)
        return HB_ERR_INVAL;
    *choice_p = c;
    return 0;
}
