/* coll_sched.c: builds collective schedules (flat, binomial, single/multi-lane) as node step
 * lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hb_log.h"
#include "coll_sched.h"
#include "../config/topo.h"

/* One transfer between two nodes, before it is split into the two nodes' step lists. */
typedef struct xfer {
    uint32_t from, to;
    uint64_t off, len;
    uint8_t phase;
} xfer_t;

/* Builder state. */
typedef struct bld {
    hb_coll_sched_t *s;
    xfer_t *x;
    size_t n, cap;
    int err;
    /* sites: members of each site in node order, the root's site first, root first in it */
    uint32_t n_sites;     /* non-empty sites */
    uint32_t *site_start; /* [n_sites + 1] into site_nodes */
    uint32_t *site_nodes; /* [n_nodes] */
    uint32_t *ord;        /* [n_nodes] layout position -> node */
    uint64_t *pos_off;    /* [n_nodes + 1] layout offset of each position */
} bld_t;

static void add(bld_t *b, uint32_t from, uint32_t to, uint64_t off, uint64_t len, uint8_t phase)
{
    if (b->err != 0)
        return;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        xfer_t *nx = realloc(b->x, cap * sizeof(*nx));
        if (nx == NULL) {
            b->err = HB_ERR_NOMEM;
            return;
        }
        b->x = nx;
        b->cap = cap;
    }
    b->x[b->n++] = (xfer_t){.from = from, .to = to, .off = off, .len = len, .phase = phase};
}

/*
 * Send [a, e) minus [hlo, hhi) (what the receiver already holds) as up to two transfers; if
 * nothing is left, one empty transfer at a, so that every edge still carries a message.
 */
static void add_minus(bld_t *b, uint32_t from, uint32_t to, uint64_t a, uint64_t e, uint64_t hlo,
                      uint64_t hhi, uint8_t phase)
{
    int added = 0;
    if (hlo > a && a < e) {
        uint64_t hi = hlo < e ? hlo : e;
        add(b, from, to, a, hi - a, phase);
        added = 1;
    }
    if (hhi < e) {
        uint64_t lo = hhi > a ? hhi : a;
        add(b, from, to, lo, e - lo, phase);
        added = 1;
    }
    if (!added)
        add(b, from, to, a, 0, phase);
}

/* Layout range of node v's block. */
static uint64_t blk_lo(const bld_t *b, uint32_t v)
{
    return b->s->loff[v];
}
static uint64_t blk_hi(const bld_t *b, uint32_t v)
{
    return b->s->loff[v] + b->s->bytes[v];
}

/* Site k's members (k in the builder's order: 0 is the root's site). */
static uint32_t site_n(const bld_t *b, uint32_t k)
{
    return b->site_start[k + 1] - b->site_start[k];
}
static uint32_t site_node(const bld_t *b, uint32_t k, uint32_t i)
{
    return b->site_nodes[b->site_start[k] + i];
}
/* Layout range of site k (layouts that keep sites contiguous). */
static uint64_t site_lo(const bld_t *b, uint32_t k)
{
    return blk_lo(b, site_node(b, k, 0));
}
static uint64_t site_hi(const bld_t *b, uint32_t k)
{
    return blk_hi(b, site_node(b, k, site_n(b, k) - 1));
}

/* floor(x * j / P) without overflow (j <= P). */
static uint64_t frac(uint64_t x, uint32_t j, uint32_t P)
{
    return (x / P) * j + ((x % P) * j) / P;
}

/* Group j of P of a site of n members: [grp_lo, grp_lo(j+1)) in member indices (balanced). */
static uint32_t grp_lo(uint32_t n, uint32_t P, uint32_t j)
{
    return (uint32_t)(((uint64_t)j * n) / P);
}

/* Set the layout from b->ord: loff of each node and pos_off. */
static void set_layout(bld_t *b)
{
    hb_coll_sched_t *s = b->s;
    uint64_t off = 0;
    for (uint32_t p = 0; p < s->n_nodes; p++) {
        uint32_t v = b->ord[p];
        b->pos_off[p] = off;
        s->loff[v] = off;
        off += s->bytes[v];
    }
    b->pos_off[s->n_nodes] = off;
}

/* Sites in the builder's order: the root's site first (root first), the others by index. */
static int build_sites(bld_t *b)
{
    hb_coll_sched_t *s = b->s;
    uint32_t n = s->n_nodes, max_site = 0;
    for (uint32_t v = 0; v < n; v++)
        if (s->site_of[v] > max_site)
            max_site = s->site_of[v];
    uint32_t *cnt = calloc((size_t)max_site + 1, sizeof(*cnt));
    uint32_t *rank = calloc((size_t)max_site + 1, sizeof(*rank));
    b->site_start = calloc((size_t)max_site + 2, sizeof(*b->site_start));
    b->site_nodes = calloc(n, sizeof(*b->site_nodes));
    if (cnt == NULL || rank == NULL || b->site_start == NULL || b->site_nodes == NULL) {
        free(cnt);
        free(rank);
        return HB_ERR_NOMEM;
    }
    for (uint32_t v = 0; v < n; v++)
        cnt[s->site_of[v]]++;
    uint32_t rs = s->site_of[s->root], k = 0;
    rank[rs] = k++;
    for (uint32_t site = 0; site <= max_site; site++)
        if (site != rs && cnt[site] > 0)
            rank[site] = k++;
    b->n_sites = k;
    uint32_t *fill = calloc((size_t)k + 1, sizeof(*fill));
    if (fill == NULL) {
        free(cnt);
        free(rank);
        return HB_ERR_NOMEM;
    }
    for (uint32_t site = 0; site <= max_site; site++)
        if (cnt[site] > 0)
            b->site_start[rank[site] + 1] = cnt[site];
    for (uint32_t i = 0; i < k; i++)
        b->site_start[i + 1] += b->site_start[i];
    b->site_nodes[0] = s->root;
    fill[0] = 1;
    for (uint32_t v = 0; v < n; v++) {
        if (v == s->root)
            continue;
        uint32_t r = rank[s->site_of[v]];
        b->site_nodes[b->site_start[r] + fill[r]++] = v;
    }
    free(fill);
    free(cnt);
    free(rank);
    return 0;
}

/* ---- flat ---- */

static void build_alltoall(bld_t *b);

static void build_flat(bld_t *b)
{
    hb_coll_sched_t *s = b->s;
    if (s->op == HB_COLL_ALLTOALL) {
        build_alltoall(b);
        return;
    }
    uint32_t n = s->n_nodes, root = s->root, rsite = s->site_of[root];
    for (uint32_t p = 0; p < n; p++)
        b->ord[p] = p;
    set_layout(b);
    uint64_t T = s->total;
    /* root's sends: nodes of other sites first (their latency overlaps the rest), then its own */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t v = 0; v < n; v++) {
            if (v == root || (s->site_of[v] == rsite) != (pass == 1))
                continue;
            if (s->op == HB_COLL_SCATTER)
                add(b, root, v, blk_lo(b, v), s->bytes[v], 0);
            else if (s->op == HB_COLL_BCAST)
                add(b, root, v, 0, T, 0);
        }
    }
    if (s->op == HB_COLL_GATHER || s->op == HB_COLL_ALLGATHER)
        for (uint32_t v = 0; v < n; v++)
            if (v != root)
                add(b, v, root, blk_lo(b, v), s->bytes[v], 0);
    if (s->op == HB_COLL_ALLGATHER)
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t v = 0; v < n; v++)
                if (v != root && (s->site_of[v] == rsite) == (pass == 1))
                    add_minus(b, root, v, 0, T, blk_lo(b, v), blk_hi(b, v), 1);
}

/* ---- binomial ---- */

static uint32_t pow2_floor(uint32_t x)
{
    uint32_t k = 1;
    while (k <= x / 2)
        k <<= 1;
    return k;
}

/*
 * Children of position r in the binomial tree over n positions, largest subtree first:
 * r + k for powers of two k below r's lowest set bit (every power of two for r = 0).
 * c[i] the child, end[i] one past its subtree. Returns the count (<= 32).
 */
static uint32_t children(uint32_t r, uint32_t n, uint32_t c[32], uint32_t end[32])
{
    uint32_t lim = r == 0 ? n : (r & (~r + 1u)), m = 0;
    for (uint32_t k = pow2_floor(n); k >= 1; k >>= 1) {
        if (k >= lim || (uint64_t)r + k >= n)
            continue;
        c[m] = r + k;
        end[m] = n - c[m] < k ? n : c[m] + k;
        m++;
    }
    return m;
}

static void build_binomial(bld_t *b)
{
    hb_coll_sched_t *s = b->s;
    uint32_t n = s->n_nodes;
    for (uint32_t p = 0; p < n; p++)
        b->ord[p] = (uint32_t)(((uint64_t)s->root + p) % n);
    set_layout(b);
    uint64_t T = s->total;
    uint32_t c[32], end[32];
    for (uint32_t r = 0; r < n; r++) {
        uint32_t m = children(r, n, c, end);
        for (uint32_t i = 0; i < m; i++) {
            uint64_t lo = b->pos_off[c[i]], hi = b->pos_off[end[i]];
            if (s->op == HB_COLL_SCATTER)
                add(b, b->ord[r], b->ord[c[i]], lo, hi - lo, 0);
            else if (s->op == HB_COLL_BCAST)
                add(b, b->ord[r], b->ord[c[i]], 0, T, 0);
            else
                add(b, b->ord[c[i]], b->ord[r], lo, hi - lo, 0);
        }
    }
    if (s->op != HB_COLL_ALLGATHER)
        return;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t m = children(r, n, c, end);
        for (uint32_t i = 0; i < m; i++)
            add_minus(b, b->ord[r], b->ord[c[i]], 0, T, b->pos_off[c[i]], b->pos_off[end[i]], 1);
    }
}

/* Layout with sites contiguous, the root's site first (root first), leaders first. */
static void site_layout(bld_t *b)
{
    for (uint32_t p = 0; p < b->s->n_nodes; p++)
        b->ord[p] = b->site_nodes[p];
    set_layout(b);
}

/* ---- single-lane hierarchical (MagPIe) ---- */

static void build_single_lane(bld_t *b)
{
    hb_coll_sched_t *s = b->s;
    uint32_t root = s->root;
    uint64_t T = s->total;
    site_layout(b);
    if (s->op == HB_COLL_SCATTER || s->op == HB_COLL_BCAST) {
        int sc = s->op == HB_COLL_SCATTER;
        for (uint32_t k = 1; k < b->n_sites; k++)
            add(b, root, site_node(b, k, 0), sc ? site_lo(b, k) : 0,
                sc ? site_hi(b, k) - site_lo(b, k) : T, 0);
        for (uint32_t k = 0; k < b->n_sites; k++) {
            uint32_t leader = site_node(b, k, 0);
            for (uint32_t i = 1; i < site_n(b, k); i++) {
                uint32_t v = site_node(b, k, i);
                add(b, leader, v, sc ? blk_lo(b, v) : 0, sc ? s->bytes[v] : T, 0);
            }
        }
        return;
    }
    /* gather, and the first phase of allgather */
    for (uint32_t k = 0; k < b->n_sites; k++) {
        uint32_t leader = site_node(b, k, 0);
        for (uint32_t i = 1; i < site_n(b, k); i++) {
            uint32_t v = site_node(b, k, i);
            add(b, v, leader, blk_lo(b, v), s->bytes[v], 0);
        }
    }
    for (uint32_t k = 1; k < b->n_sites; k++)
        add(b, site_node(b, k, 0), root, site_lo(b, k), site_hi(b, k) - site_lo(b, k), 0);
    if (s->op != HB_COLL_ALLGATHER)
        return;
    for (uint32_t k = 1; k < b->n_sites; k++)
        add_minus(b, root, site_node(b, k, 0), 0, T, site_lo(b, k), site_hi(b, k), 1);
    for (uint32_t k = 0; k < b->n_sites; k++) {
        uint32_t leader = site_node(b, k, 0);
        for (uint32_t i = 1; i < site_n(b, k); i++) {
            uint32_t v = site_node(b, k, i);
            add_minus(b, leader, v, 0, T, blk_lo(b, v), blk_hi(b, v), 1);
        }
    }
}

/* ---- multi-lane (Chiba, Endo, Matsuoka; doc/design.md section 1) ---- */

/* P for remote site k: min(requested, n0, n_k). */
static uint32_t lanes_for(const bld_t *b, uint32_t k, uint32_t req)
{
    uint32_t P = req == 0 ? UINT32_MAX : req;
    if (P > site_n(b, 0))
        P = site_n(b, 0);
    if (P > site_n(b, k))
        P = site_n(b, k);
    return P;
}

/* Dep_send of lane j: the root for lane 0, else the j-th member of the root's site. */
static uint32_t dep_send(const bld_t *b, uint32_t j)
{
    return site_node(b, 0, j);
}
/* Dep_recv of lane j in site k with P lanes: the first member of group j. */
static uint32_t dep_recv(const bld_t *b, uint32_t k, uint32_t P, uint32_t j)
{
    return site_node(b, k, grp_lo(site_n(b, k), P, j));
}
/* Layout range of group j of site k. */
static void grp_range(const bld_t *b, uint32_t k, uint32_t P, uint32_t j, uint64_t *lo,
                      uint64_t *hi)
{
    uint32_t n = site_n(b, k), i0 = grp_lo(n, P, j), i1 = grp_lo(n, P, j + 1);
    *lo = blk_lo(b, site_node(b, k, i0));
    *hi = blk_hi(b, site_node(b, k, i1 - 1));
}

/*
 * Send the virtual range [vlo, vhi) of "everything but site k" ([0, slo) then [shi, T)) as
 * one or two transfers (one empty transfer if the range is empty).
 */
static void add_outside(bld_t *b, uint32_t from, uint32_t to, uint64_t slo, uint64_t shi,
                        uint64_t vlo, uint64_t vhi, uint8_t phase)
{
    uint64_t w = shi - slo;
    int added = 0;
    if (vlo < slo && vlo < vhi) {
        uint64_t e = vhi < slo ? vhi : slo;
        add(b, from, to, vlo, e - vlo, phase);
        added = 1;
    }
    if (vhi > slo) {
        uint64_t a = (vlo > slo ? vlo : slo) + w, e = vhi + w;
        if (a < e) {
            add(b, from, to, a, e - a, phase);
            added = 1;
        }
    }
    if (!added)
        add(b, from, to, vlo < slo ? vlo : vlo + w, 0, phase);
}

static void build_multi_lane(bld_t *b, uint32_t req)
{
    hb_coll_sched_t *s = b->s;
    uint32_t root = s->root, S = b->n_sites;
    uint64_t T = s->total;
    site_layout(b);
    s->lanes = 0;
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req);
        if (P > s->lanes)
            s->lanes = P;
    }
    uint64_t lo, hi;
    if (s->op == HB_COLL_SCATTER) {
        /* 1. root -> Dep_send j over the LAN: the share lane j carries, for every remote site */
        for (uint32_t k = 1; k < S; k++)
            for (uint32_t j = 1; j < lanes_for(b, k, req); j++) {
                grp_range(b, k, lanes_for(b, k, req), j, &lo, &hi);
                add(b, root, dep_send(b, j), lo, hi - lo, 0);
            }
        /* 2. root's own lane over the WAN */
        for (uint32_t k = 1; k < S; k++) {
            grp_range(b, k, lanes_for(b, k, req), 0, &lo, &hi);
            add(b, root, dep_recv(b, k, lanes_for(b, k, req), 0), lo, hi - lo, 0);
        }
        /* 3. root serves its own site */
        for (uint32_t i = 1; i < site_n(b, 0); i++) {
            uint32_t v = site_node(b, 0, i);
            add(b, root, v, blk_lo(b, v), s->bytes[v], 0);
        }
        /* 4. Dep_send j -> Dep_recv j over the WAN, segment by segment as the share arrives */
        for (uint32_t k = 1; k < S; k++) {
            uint32_t P = lanes_for(b, k, req);
            for (uint32_t j = 1; j < P; j++) {
                grp_range(b, k, P, j, &lo, &hi);
                add(b, dep_send(b, j), dep_recv(b, k, P, j), lo, hi - lo, 0);
            }
        }
        /* 5. each Dep_recv scatters to its group */
        for (uint32_t k = 1; k < S; k++) {
            uint32_t P = lanes_for(b, k, req), n = site_n(b, k);
            for (uint32_t j = 0; j < P; j++)
                for (uint32_t i = grp_lo(n, P, j) + 1; i < grp_lo(n, P, j + 1); i++) {
                    uint32_t v = site_node(b, k, i);
                    add(b, dep_recv(b, k, P, j), v, blk_lo(b, v), s->bytes[v], 0);
                }
        }
        return;
    }
    if (s->op == HB_COLL_BCAST) {
        uint32_t P = UINT32_MAX;
        for (uint32_t k = 1; k < S; k++)
            if (lanes_for(b, k, req) < P)
                P = lanes_for(b, k, req);
        if (S == 1)
            P = 1;
        s->lanes = S > 1 ? P : 0;
#define PART_LO(j) frac(T, (j), P)
        for (uint32_t j = 1; j < P && S > 1; j++)
            add(b, root, dep_send(b, j), PART_LO(j), PART_LO(j + 1) - PART_LO(j), 0);
        for (uint32_t k = 1; k < S; k++)
            add(b, root, dep_recv(b, k, P, 0), 0, PART_LO(1), 0);
        for (uint32_t i = 1; i < site_n(b, 0); i++) {
            if (S > 1 && i < P)
                add_minus(b, root, site_node(b, 0, i), 0, T, PART_LO(i), PART_LO(i + 1), 0);
            else
                add(b, root, site_node(b, 0, i), 0, T, 0);
        }
        for (uint32_t k = 1; k < S; k++)
            for (uint32_t j = 1; j < P; j++)
                add(b, dep_send(b, j), dep_recv(b, k, P, j), PART_LO(j),
                    PART_LO(j + 1) - PART_LO(j), 0);
        for (uint32_t k = 1; k < S; k++)
            for (uint32_t j = 0; j < P; j++) {
                uint32_t from = dep_recv(b, k, P, j);
                for (uint32_t i = 0; i < site_n(b, k); i++)
                    if (site_node(b, k, i) != from)
                        add(b, from, site_node(b, k, i), PART_LO(j), PART_LO(j + 1) - PART_LO(j),
                            0);
            }
#undef PART_LO
        return;
    }
    /* gather, and the first phase of allgather: the scatter's steps reversed */
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req), n = site_n(b, k);
        for (uint32_t j = 0; j < P; j++)
            for (uint32_t i = grp_lo(n, P, j) + 1; i < grp_lo(n, P, j + 1); i++) {
                uint32_t v = site_node(b, k, i);
                add(b, v, dep_recv(b, k, P, j), blk_lo(b, v), s->bytes[v], 0);
            }
    }
    for (uint32_t i = 1; i < site_n(b, 0); i++) {
        uint32_t v = site_node(b, 0, i);
        add(b, v, root, blk_lo(b, v), s->bytes[v], 0);
    }
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req);
        for (uint32_t j = 0; j < P; j++) {
            grp_range(b, k, P, j, &lo, &hi);
            add(b, dep_recv(b, k, P, j), dep_send(b, j), lo, hi - lo, 0);
        }
    }
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req);
        for (uint32_t j = 1; j < P; j++) {
            grp_range(b, k, P, j, &lo, &hi);
            add(b, dep_send(b, j), root, lo, hi - lo, 0);
        }
    }
    if (s->op != HB_COLL_ALLGATHER)
        return;
    /*
     * Second phase: each remote site k lacks everything outside it (length T - w_k), split
     * into P_k parts that travel root -> Dep_send j -> Dep_recv j -> the site; the members of
     * site k get the other groups' blocks from their Dep_recvs.
     */
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req);
        uint64_t slo = site_lo(b, k), shi = site_hi(b, k), V = T - (shi - slo);
        for (uint32_t j = 1; j < P; j++)
            add_outside(b, root, dep_send(b, j), slo, shi, frac(V, j, P), frac(V, j + 1, P), 1);
    }
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req);
        uint64_t slo = site_lo(b, k), shi = site_hi(b, k), V = T - (shi - slo);
        add_outside(b, root, dep_recv(b, k, P, 0), slo, shi, 0, frac(V, 1, P), 1);
    }
    for (uint32_t i = 1; i < site_n(b, 0); i++) {
        uint32_t v = site_node(b, 0, i);
        add_minus(b, root, v, 0, T, blk_lo(b, v), blk_hi(b, v), 1);
    }
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req);
        uint64_t slo = site_lo(b, k), shi = site_hi(b, k), V = T - (shi - slo);
        for (uint32_t j = 1; j < P; j++)
            add_outside(b, dep_send(b, j), dep_recv(b, k, P, j), slo, shi, frac(V, j, P),
                        frac(V, j + 1, P), 1);
    }
    for (uint32_t k = 1; k < S; k++) {
        uint32_t P = lanes_for(b, k, req), n = site_n(b, k);
        uint64_t slo = site_lo(b, k), shi = site_hi(b, k), V = T - (shi - slo);
        /* each Dep_recv first sends its group (held since the first phase), then its part */
        for (uint32_t j = 0; j < P; j++) {
            uint32_t from = dep_recv(b, k, P, j);
            grp_range(b, k, P, j, &lo, &hi);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t v = site_node(b, k, i);
                if (v == from)
                    continue;
                if (i >= grp_lo(n, P, j) && i < grp_lo(n, P, j + 1))
                    add_minus(b, from, v, lo, hi, blk_lo(b, v), blk_hi(b, v), 1);
                else
                    add(b, from, v, lo, hi - lo, 1);
            }
            for (uint32_t i = 0; i < n; i++)
                if (site_node(b, k, i) != from)
                    add_outside(b, from, site_node(b, k, i), slo, shi, frac(V, j, P),
                                frac(V, j + 1, P), 1);
        }
    }
}

/* ---- alltoall ---- */

/* Round k = 1..n-1: node v sends its block for v + k (transfers added round by round, so every
 * node's steps are in round order; pairwise gates them in assemble). */
static void build_alltoall(bld_t *b)
{
    const hb_coll_sched_t *s = b->s;
    uint32_t n = s->n_nodes;
    for (uint32_t k = 1; k < n; k++)
        for (uint32_t v = 0; v < n; v++) {
            uint32_t w = (uint32_t)(((uint64_t)v + k) % n);
            add(b, v, w, hb_coll_pair_loff(s, v, w), hb_coll_pair_len(s, v, w), 0);
        }
}

/* Node v's copy-out steps for alltoall: the block from each node (its own from its input). */
static void alltoall_outputs(hb_coll_sched_t *s, uint32_t v, hb_coll_step_t *st)
{
    for (uint32_t a = 0; a < s->n_nodes; a++)
        st[a] = (hb_coll_step_t){.kind = HB_COLL_STEP_COPY_OUT,
                                 .peer = HB_COLL_NONE,
                                 .off = hb_coll_pair_loff(s, a, v),
                                 .len = hb_coll_pair_len(s, a, v),
                                 .nseg = 1};
}

/* pairwise: the send of round k waits for the receive segments of rounds 1..k-1. Steps are in
 * round order, one send and one receive a round, but within a round the receive may come first:
 * the k-th send's gate is the segments of the first k - 1 receives. */
static void pairwise_gates(hb_coll_sched_t *s, uint32_t v)
{
    uint32_t lo = s->step_start[v], hi = s->step_start[v + 1], r = lo, gate = 0;
    int first = 1;
    for (uint32_t i = lo; i < hi; i++) {
        hb_coll_step_t *st = &s->steps[i];
        if (st->kind != HB_COLL_STEP_SEND)
            continue;
        while (!first && r < hi && s->steps[r].kind != HB_COLL_STEP_RECV)
            r++;
        if (!first && r < hi)
            gate += s->steps[r++].nseg; /* the previous round's receive */
        st->gate = gate;
        first = 0;
    }
}

/* ---- assembly ---- */

static int has_input(const hb_coll_sched_t *s, uint32_t v)
{
    return (s->op == HB_COLL_SCATTER || s->op == HB_COLL_BCAST) ? v == s->root : 1;
}

/* Copy-out steps of node v (alltoall: one per source node). */
static uint32_t has_output(const hb_coll_sched_t *s, uint32_t v)
{
    if (s->op == HB_COLL_ALLTOALL)
        return s->n_nodes;
    return s->op == HB_COLL_GATHER ? v == s->root : 1;
}

/* Layout range of node v's input or output. */
static void io_range(const hb_coll_sched_t *s, uint32_t v, int out, uint64_t *lo, uint64_t *hi)
{
    int whole =
        out ? (s->op != HB_COLL_SCATTER) : (s->op == HB_COLL_SCATTER || s->op == HB_COLL_BCAST);
    if (whole) {
        *lo = 0;
        *hi = s->total;
    } else {
        *lo = s->loff[v];
        *hi = s->loff[v] + s->bytes[v];
    }
}

static uint32_t nseg_of(const hb_coll_sched_t *s, uint64_t len)
{
    if (len == 0 || s->seg_size == 0)
        return 1;
    uint64_t n = (len + s->seg_size - 1) / s->seg_size;
    return n > UINT32_MAX ? 0 : (uint32_t)n;
}

/* Turn the transfer list into per-node step lists; set the allgather gates. */
static int assemble(bld_t *b)
{
    hb_coll_sched_t *s = b->s;
    uint32_t n = s->n_nodes;
    uint32_t *cnt = calloc((size_t)n + 1, sizeof(*cnt));
    uint32_t *fill = calloc(n, sizeof(*fill));
    uint32_t *p1segs = calloc(n, sizeof(*p1segs));
    int rc = HB_ERR_NOMEM;
    if (cnt == NULL || fill == NULL || p1segs == NULL)
        goto out_;
    for (uint32_t v = 0; v < n; v++)
        cnt[v] = (uint32_t)has_input(s, v) + has_output(s, v);
    for (size_t i = 0; i < b->n; i++) {
        cnt[b->x[i].from]++;
        cnt[b->x[i].to]++;
    }
    s->step_start = calloc((size_t)n + 1, sizeof(*s->step_start));
    if (s->step_start == NULL)
        goto out_;
    for (uint32_t v = 0; v < n; v++)
        s->step_start[v + 1] = s->step_start[v] + cnt[v];
    s->steps = calloc(s->step_start[n] ? s->step_start[n] : 1, sizeof(*s->steps));
    if (s->steps == NULL)
        goto out_;
    for (uint32_t v = 0; v < n; v++) {
        if (has_input(s, v)) {
            hb_coll_step_t *st = &s->steps[s->step_start[v] + fill[v]++];
            st->kind = HB_COLL_STEP_COPY_IN;
            st->peer = HB_COLL_NONE;
            uint64_t lo, hi;
            io_range(s, v, 0, &lo, &hi);
            st->off = lo;
            st->len = hi - lo;
            st->nseg = 1;
        }
    }
    rc = HB_ERR_INVAL;
    for (size_t i = 0; i < b->n; i++) {
        const xfer_t *x = &b->x[i];
        uint32_t nseg = nseg_of(s, x->len);
        if (nseg == 0) {
            hb_log_error("coll: %llu bytes in segments of %llu: too many segments",
                         (unsigned long long)x->len, (unsigned long long)s->seg_size);
            goto out_;
        }
        uint8_t wan = s->site_of[x->from] != s->site_of[x->to];
        hb_coll_step_t *snd = &s->steps[s->step_start[x->from] + fill[x->from]++];
        hb_coll_step_t *rcv = &s->steps[s->step_start[x->to] + fill[x->to]++];
        *snd = (hb_coll_step_t){.kind = HB_COLL_STEP_SEND,
                                .peer = x->to,
                                .off = x->off,
                                .len = x->len,
                                .nseg = nseg,
                                .wan = wan,
                                .phase = x->phase};
        *rcv = *snd;
        rcv->kind = HB_COLL_STEP_RECV;
        rcv->peer = x->from;
        if (x->phase == 0)
            p1segs[x->to] += nseg;
    }
    for (uint32_t v = 0; v < n; v++) {
        if (s->op == HB_COLL_ALLTOALL) {
            alltoall_outputs(s, v, &s->steps[s->step_start[v] + fill[v]]);
            fill[v] += n;
            if (s->alg == HB_COLL_ALG_PAIRWISE)
                pairwise_gates(s, v);
            continue;
        }
        if (has_output(s, v)) {
            hb_coll_step_t *st = &s->steps[s->step_start[v] + fill[v]++];
            st->kind = HB_COLL_STEP_COPY_OUT;
            st->peer = HB_COLL_NONE;
            uint64_t lo, hi;
            io_range(s, v, 1, &lo, &hi);
            st->off = lo;
            st->len = hi - lo;
            st->nseg = 1;
        }
        for (uint32_t i = s->step_start[v]; i < s->step_start[v + 1]; i++) {
            hb_coll_step_t *st = &s->steps[i];
            if (st->kind != HB_COLL_STEP_SEND)
                continue;
            if (st->phase == 1)
                st->gate = p1segs[v] + (v == s->root ? 0 : 1);
            else if (s->op == HB_COLL_GATHER || s->op == HB_COLL_ALLGATHER)
                st->gate_last = p1segs[v];
        }
    }
    rc = 0;
out_:
    free(cnt);
    free(fill);
    free(p1segs);
    return rc;
}

void hb_coll_sched_free(hb_coll_sched_t *s)
{
    if (s == NULL)
        return;
    free(s->bytes);
    free(s->noff);
    free(s->loff);
    free(s->site_of);
    free(s->rpre);
    free(s->step_start);
    free(s->steps);
    free(s);
}

/* alltoall: node v's row (its input: ranks_v·R·size bytes, R the ranks in all) in layout and
 * node order, rpre, unit and the total R·R·size. */
static int alltoall_rows(hb_coll_sched_t *s, const hb_coll_nodes_t *nodes, uint64_t size)
{
    uint32_t n = s->n_nodes;
    s->rpre = calloc((size_t)n + 1, sizeof(*s->rpre));
    if (s->rpre == NULL)
        return HB_ERR_NOMEM;
    for (uint32_t v = 0; v < n; v++)
        s->rpre[v + 1] = s->rpre[v] + (nodes->ranks_of ? nodes->ranks_of[v] : 1u);
    uint64_t R = s->rpre[n], row;
    s->unit = size;
    if (__builtin_mul_overflow(R, size, &row) || __builtin_mul_overflow(R, row, &s->total) ||
        s->total > UINT64_MAX / 2) {
        hb_log_error("coll: collective size overflows");
        return HB_ERR_INVAL;
    }
    for (uint32_t v = 0; v < n; v++) {
        s->bytes[v] = (s->rpre[v + 1] - s->rpre[v]) * row;
        s->noff[v] = s->loff[v] = s->rpre[v] * row;
    }
    return 0;
}

int hb_coll_sched_build(const hb_coll_nodes_t *nodes, const hb_coll_args_t *args,
                        hb_coll_sched_t **sched_p)
{
    if (nodes == NULL || args == NULL || sched_p == NULL || nodes->n_nodes == 0 ||
        args->root >= nodes->n_nodes || (unsigned)args->op >= HB_COLL_OP_COUNT ||
        !hb_coll_alg_valid(args->op, args->alg) ||
        ((args->op == HB_COLL_BCAST || args->op == HB_COLL_ALLTOALL) && args->counts)) {
        hb_log_error("coll: invalid schedule request");
        return HB_ERR_INVAL;
    }
    uint32_t n = nodes->n_nodes;
    bld_t b = {0};
    int rc = HB_ERR_NOMEM;
    hb_coll_sched_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return HB_ERR_NOMEM;
    b.s = s;
    s->op = args->op;
    s->alg = args->alg;
    s->n_nodes = n;
    s->root = args->root;
    s->seg_size = args->seg_size;
    s->bytes = calloc(n, sizeof(*s->bytes));
    s->noff = calloc(n, sizeof(*s->noff));
    s->loff = calloc(n, sizeof(*s->loff));
    s->site_of = calloc(n, sizeof(*s->site_of));
    b.ord = calloc(n, sizeof(*b.ord));
    b.pos_off = calloc((size_t)n + 1, sizeof(*b.pos_off));
    if (s->bytes == NULL || s->noff == NULL || s->loff == NULL || s->site_of == NULL ||
        b.ord == NULL || b.pos_off == NULL)
        goto err_;
    uint64_t off = 0;
    for (uint32_t v = 0; v < n; v++) {
        s->site_of[v] = nodes->site_of ? nodes->site_of[v] : 0;
        int ovf = 0;
        if (args->op != HB_COLL_BCAST && args->counts != NULL)
            s->bytes[v] = args->counts[v];
        else if (args->op != HB_COLL_BCAST)
            ovf = __builtin_mul_overflow((uint64_t)(nodes->ranks_of ? nodes->ranks_of[v] : 1u),
                                         args->size, &s->bytes[v]);
        s->noff[v] = off;
        if (ovf || s->bytes[v] > UINT64_MAX / 2 - off) {
            rc = HB_ERR_INVAL;
            hb_log_error("coll: collective size overflows");
            goto err_;
        }
        off += s->bytes[v];
    }
    s->total = args->op == HB_COLL_BCAST ? args->size : off;
    if (args->op == HB_COLL_ALLTOALL) {
        rc = alltoall_rows(s, nodes, args->size);
        if (rc != 0)
            goto err_;
    }
    rc = build_sites(&b);
    if (rc != 0)
        goto err_;
    s->n_sites = b.n_sites;
    switch (args->alg) {
    case HB_COLL_ALG_FLAT:
        build_flat(&b);
        break;
    case HB_COLL_ALG_BINOMIAL:
        build_binomial(&b);
        break;
    case HB_COLL_ALG_SINGLE_LANE:
        build_single_lane(&b);
        s->lanes = b.n_sites > 1 ? 1 : 0;
        break;
    case HB_COLL_ALG_MULTI_LANE:
        build_multi_lane(&b, args->lanes);
        break;
    case HB_COLL_ALG_PAIRWISE:
        build_alltoall(&b);
        break;
    default:
        break;
    }
    rc = b.err;
    if (rc == 0)
        rc = assemble(&b);
    if (rc != 0)
        goto err_;
    free(b.x);
    free(b.ord);
    free(b.pos_off);
    free(b.site_start);
    free(b.site_nodes);
    *sched_p = s;
    return 0;
err_:
    free(b.x);
    free(b.ord);
    free(b.pos_off);
    free(b.site_start);
    free(b.site_nodes);
    hb_coll_sched_free(s);
    return rc;
}

/* ---- consistency check ---- */

typedef struct iv {
    uint64_t lo, hi;
} iv_t;

static int iv_cmp(const void *a, const void *b)
{
    const iv_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

/* Is [lo, hi) inside the union of the sorted, merged (disjoint) intervals? */
static int iv_covered(const iv_t *m, size_t n, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return 1;
    size_t a = 0, b = n; /* the last interval starting at or before lo */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (m[mid].lo <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a > 0 && hi <= m[a - 1].hi;
}

typedef struct pm {
    uint32_t from, to, k;
    uint64_t off, len;
} pm_t;

static int pm_cmp(const void *a, const void *b)
{
    const pm_t *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k ? 1 : 0;
}

int hb_coll_sched_check(const hb_coll_sched_t *s, char *msg, size_t msglen)
{
    char dummy[8];
    if (msg == NULL) {
        msg = dummy;
        msglen = sizeof(dummy);
    }
    msg[0] = '\0';
    uint32_t n = s->n_nodes, nst = s->step_start[n];
    pm_t *snd = calloc(nst ? nst : 1, sizeof(*snd)), *rcv = calloc(nst ? nst : 1, sizeof(*rcv));
    iv_t *iv = calloc(nst ? nst : 1, sizeof(*iv));
    size_t ns = 0, nr = 0;
    int rc = HB_ERR_NOMEM;
    if (snd == NULL || rcv == NULL || iv == NULL)
        goto out_;
    rc = HB_ERR_INTERNAL;
    for (uint32_t v = 0; v < n; v++) {
        size_t ni = 0;
        for (uint32_t i = s->step_start[v]; i < s->step_start[v + 1]; i++) {
            const hb_coll_step_t *st = &s->steps[i];
            if (st->kind == HB_COLL_STEP_SEND)
                snd[ns++] = (pm_t){v, st->peer, i, st->off, st->len};
            else if (st->kind == HB_COLL_STEP_RECV)
                rcv[nr++] = (pm_t){st->peer, v, i, st->off, st->len};
            if ((st->kind == HB_COLL_STEP_RECV || st->kind == HB_COLL_STEP_COPY_IN) && st->len > 0)
                iv[ni++] = (iv_t){st->off, st->off + st->len};
            if (st->off + st->len > s->total) {
                snprintf(msg, msglen, "node %u step %u beyond the layout", v, i - s->step_start[v]);
                goto out_;
            }
        }
        qsort(iv, ni, sizeof(*iv), iv_cmp);
        size_t nm = 0;
        for (size_t i = 0; i < ni; i++) {
            if (nm > 0 && iv[i].lo <= iv[nm - 1].hi) {
                if (iv[i].hi > iv[nm - 1].hi)
                    iv[nm - 1].hi = iv[i].hi;
            } else {
                iv[nm++] = iv[i];
            }
        }
        for (uint32_t i = s->step_start[v]; i < s->step_start[v + 1]; i++) {
            const hb_coll_step_t *st = &s->steps[i];
            if ((st->kind == HB_COLL_STEP_SEND || st->kind == HB_COLL_STEP_COPY_OUT) &&
                !iv_covered(iv, nm, st->off, st->off + st->len)) {
                snprintf(msg, msglen, "node %u step %u uses bytes [%llu, %llu) it never holds", v,
                         i - s->step_start[v], (unsigned long long)st->off,
                         (unsigned long long)(st->off + st->len));
                goto out_;
            }
        }
    }
    /* matching: the k-th send from a to b is the k-th receive of b from a */
    qsort(snd, ns, sizeof(*snd), pm_cmp);
    qsort(rcv, nr, sizeof(*rcv), pm_cmp);
    if (ns != nr) {
        snprintf(msg, msglen, "%zu sends but %zu receives", ns, nr);
        goto out_;
    }
    for (size_t i = 0; i < ns; i++) {
        if (snd[i].from != rcv[i].from || snd[i].to != rcv[i].to || snd[i].off != rcv[i].off ||
            snd[i].len != rcv[i].len) {
            snprintf(msg, msglen, "send %u->%u [%llu +%llu) does not match its receive",
                     snd[i].from, snd[i].to, (unsigned long long)snd[i].off,
                     (unsigned long long)snd[i].len);
            goto out_;
        }
    }
    rc = 0;
out_:
    free(snd);
    free(rcv);
    free(iv);
    return rc;
}

int hb_coll_sched_describe(const hb_coll_sched_t *s, char *buf, size_t len)
{
    if (s == NULL || buf == NULL || len == 0)
        return HB_ERR_INVAL;
    int k = snprintf(
        buf, len, "%s %s root %u nodes %u sites %u lanes %u segment %llu bytes %llu steps %u",
        hb_coll_op_name(s->op), hb_coll_alg_name(s->alg), s->root, s->n_nodes, s->n_sites, s->lanes,
        (unsigned long long)s->seg_size, (unsigned long long)s->total, s->step_start[s->n_nodes]);
    return k < 0 || (size_t)k >= len ? HB_ERR_TRUNCATED : 0;
}

int hb_coll_nodes_from_topo(const struct hb_topo *topo, const uint32_t *ranks_of,
                            uint32_t *site_buf, hb_coll_nodes_t *nodes_p)
{
    if (topo == NULL || site_buf == NULL || nodes_p == NULL || topo->n_nodes == 0)
        return HB_ERR_INVAL;
    for (uint32_t v = 0; v < topo->n_nodes; v++)
        site_buf[v] = topo->nodes[v].site;
    nodes_p->n_nodes = topo->n_nodes;
    nodes_p->site_of = site_buf;
    nodes_p->ranks_of = ranks_of;
    return 0;
}
