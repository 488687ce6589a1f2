/* hier_local.c: every node's hier engine in memory, with a message queue and a chassis-barrier
 * model. */
#include "hier_local.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_status.h"

/* Where a causal chain stands: chassis barriers and sends on it, and its modeled time. */
typedef struct local_clock {
    uint32_t n_ib, n_sr;
    double t;
} local_clock_t;

/* A message or barrier completion on its way to a node. */
typedef struct local_item {
    uint32_t to;
    hb_hier_ev_t ev;
    local_clock_t clk; /* when it reaches the node */
} local_item_t;

/* One round of one chassis barrier sync number. */
typedef struct local_round {
    int active;
    uint64_t coll_id;
    uint32_t phase, mask, reach;
    local_clock_t clk; /* latest arrival */
} local_round_t;

/* Causal stamp of one collective on one node. */
typedef struct local_stamp {
    int used;
    uint64_t coll_id;
    local_clock_t clk;
} local_stamp_t;

struct hb_hier_local {
    const hb_topo_t *topo;
    hb_hier_cfg_t cfg;
    hb_hier_t **eng;       /* [n_nodes] */
    uint8_t *dead;         /* [n_nodes] */
    local_stamp_t *stamps; /* [n_nodes * n_stamps] */
    size_t n_stamps;
    local_round_t *rounds; /* [n_chassis * n_sync] */
    local_item_t *items;   /* ring: n_items from items[head], cap_items a power of two */
    size_t head, n_items, cap_items;
    hb_hier_rec_t *trace;
    size_t n_trace, cap_trace;
    hb_hier_act_t *acts;
    size_t max_acts;
    uint64_t rng;
    double t_ib, t_sr; /* modeled cost of a chassis barrier and of a send */
    int oom;           /* a trace record or queue item could not be stored */
    hb_hier_local_stats_t stats;
};

static int local_grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *p;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    p = realloc(*buf, ncap * elem);
    if (p == NULL)
        return HB_ERR_NOMEM;
    *buf = p;
    *cap = ncap;
    return 0;
}

int hb_hier_local_create(const hb_topo_t *topo, const hb_hier_cfg_t *cfg, hb_hier_local_t **l_p)
{
    hb_hier_local_t *l;
    uint32_t i;
    size_t m;
    int rc;

    if (topo == NULL || cfg == NULL || l_p == NULL || topo->n_nodes == 0 || cfg->n_sync == 0)
        return HB_ERR_INVAL;
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return HB_ERR_NOMEM;
    l->topo = topo;
    l->cfg = *cfg;
    l->rng = 0x9e3779b97f4a7c15ull;
    l->t_ib = 1.0;
    l->t_sr = 1.0;
    l->n_stamps = (size_t)2 * cfg->n_sync;
    l->eng = calloc(topo->n_nodes, sizeof(*l->eng));
    l->dead = calloc(topo->n_nodes, 1);
    l->stamps = calloc((size_t)topo->n_nodes * l->n_stamps, sizeof(*l->stamps));
    l->rounds = calloc((size_t)topo->n_chassis * cfg->n_sync, sizeof(*l->rounds));
    if (l->eng == NULL || l->dead == NULL || l->stamps == NULL || l->rounds == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    for (i = 0; i < topo->n_nodes; i++) {
        if (!topo->nodes[i].member)
            continue; /* a restricted view: no engine, never addressed */
        rc = hb_hier_create(topo, i, cfg, &l->eng[i]);
        if (rc != 0)
            goto err_free;
        m = hb_hier_max_actions(l->eng[i]);
        if (m > l->max_acts)
            l->max_acts = m;
    }
    l->acts = calloc(l->max_acts, sizeof(*l->acts));
    if (l->acts == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    *l_p = l;
    return 0;

err_free:
    hb_hier_local_destroy(l);
    return rc;
}

void hb_hier_local_destroy(hb_hier_local_t *l)
{
    uint32_t i;

    if (l == NULL)
        return;
    if (l->eng != NULL)
        for (i = 0; i < l->topo->n_nodes; i++)
            hb_hier_destroy(l->eng[i]);
    free(l->acts);
    free(l->trace);
    free(l->items);
    free(l->rounds);
    free(l->stamps);
    free(l->dead);
    free(l->eng);
    free(l);
}

hb_hier_t *hb_hier_local_engine(hb_hier_local_t *l, uint32_t node)
{
    return node < l->topo->n_nodes ? l->eng[node] : NULL;
}

void hb_hier_local_seed(hb_hier_local_t *l, uint64_t seed)
{
    l->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

/* xorshift64*: deterministic for a seed, good enough to shuffle deliveries. */
static uint64_t local_rand(hb_hier_local_t *l)
{
    l->rng ^= l->rng >> 12;
    l->rng ^= l->rng << 25;
    l->rng ^= l->rng >> 27;
    return l->rng * 0x2545f4914f6cdd1dull;
}

static local_stamp_t *local_stamp(hb_hier_local_t *l, uint32_t node, uint64_t coll_id)
{
    local_stamp_t *s = &l->stamps[(size_t)node * l->n_stamps + coll_id % l->n_stamps];

    if (!s->used || s->coll_id != coll_id) {
        s->used = 1;
        s->coll_id = coll_id;
        memset(&s->clk, 0, sizeof(s->clk));
    }
    return s;
}

static void local_clock_max(local_clock_t *dst, const local_clock_t *src)
{
    if (src->n_ib > dst->n_ib)
        dst->n_ib = src->n_ib;
    if (src->n_sr > dst->n_sr)
        dst->n_sr = src->n_sr;
    if (src->t > dst->t)
        dst->t = src->t;
}

void hb_hier_local_costs(hb_hier_local_t *l, double t_ib, double t_sr)
{
    l->t_ib = t_ib;
    l->t_sr = t_sr;
}

static hb_hier_rec_t *local_rec(hb_hier_local_t *l, hb_hier_rec_kind_t kind, uint32_t node,
                                uint64_t coll_id, const local_stamp_t *st)
{
    hb_hier_rec_t *r;

    if (local_grow((void **)&l->trace, &l->cap_trace, l->n_trace + 1, sizeof(*l->trace)) != 0) {
        l->oom = 1;
        return NULL;
    }
    r = &l->trace[l->n_trace++];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->node = node;
    r->coll_id = coll_id;
    if (st != NULL) {
        r->n_ib = st->clk.n_ib;
        r->n_sr = st->clk.n_sr;
        r->t = st->clk.t;
    }
    return r;
}

/* Pending item i, 0 = oldest. */
static local_item_t *local_item(const hb_hier_local_t *l, size_t i)
{
    return &l->items[(l->head + i) & (l->cap_items - 1)];
}

static int local_push(hb_hier_local_t *l, uint32_t to, const hb_hier_ev_t *ev,
                      const local_clock_t *clk)
{
    local_item_t *it;

    if (l->dead[to]) {
        l->stats.dead_drops++;
        return 0;
    }
    if (l->n_items == l->cap_items) {
        size_t ncap = l->cap_items ? 2 * l->cap_items : 64, k;
        local_item_t *p = malloc(ncap * sizeof(*p));
        if (p == NULL) {
            l->oom = 1;
            return HB_ERR_NOMEM;
        }
        for (k = 0; k < l->n_items; k++)
            p[k] = *local_item(l, k);
        free(l->items);
        l->items = p;
        l->head = 0;
        l->cap_items = ncap;
    }
    it = local_item(l, l->n_items++);
    it->to = to;
    it->ev = *ev;
    it->clk = *clk;
    return 0;
}

/* The chassis barrier model: a round completes when every node of its mask arrived. */
static int local_hwb_arrive(hb_hier_local_t *l, uint32_t node, const hb_hier_act_t *a,
                            const local_stamp_t *st)
{
    const hb_topo_node_t *tn = &l->topo->nodes[node];
    const hb_topo_chassis_t *tc = &l->topo->chassis[tn->chassis];
    local_round_t *r;
    uint32_t idx = a->sync_no - l->cfg.sync_base, bit = 1u << tn->port, p;
    local_clock_t done;
    hb_hier_ev_t ev;
    int rc;

    if (a->sync_no < l->cfg.sync_base || idx >= l->cfg.n_sync || !(a->mask & bit)) {
        l->stats.hwb_mismatch++;
        return 0;
    }
    r = &l->rounds[(size_t)tn->chassis * l->cfg.n_sync + idx];
    if (!r->active) {
        memset(r, 0, sizeof(*r));
        r->active = 1;
        r->coll_id = a->coll_id;
        r->phase = a->phase;
        r->mask = a->mask;
    } else if (r->coll_id != a->coll_id || r->phase != a->phase || r->mask != a->mask ||
               (r->reach & bit)) {
        l->stats.hwb_mismatch++;
    }
    r->reach |= bit;
    local_clock_max(&r->clk, &st->clk);
    if ((r->reach & r->mask) != r->mask)
        return 0;
    l->stats.hwb_rounds++;
    done = r->clk;
    done.n_ib++;
    done.t += l->t_ib;
    memset(&ev, 0, sizeof(ev));
    ev.kind = HB_HIER_EV_HWB_DONE;
    ev.coll_id = r->coll_id;
    ev.sync_no = a->sync_no;
    r->active = 0;
    for (p = 0; p < tc->n_nodes; p++) {
        if (!(r->mask & (1u << l->topo->nodes[tc->nodes[p]].port)))
            continue;
        rc = local_push(l, tc->nodes[p], &ev, &done);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Step node with ev (reaching it at clk) and carry out what it asks for. */
static int local_step(hb_hier_local_t *l, uint32_t node, const hb_hier_ev_t *ev, int injected,
                      const local_clock_t *clk)
{
    local_stamp_t *st = NULL;
    local_clock_t sent;
    hb_hier_rec_t *r;
    hb_hier_ev_t out;
    size_t n, i;
    int rc, rc2;

    rc = hb_hier_step(l->eng[node], ev, l->acts, l->max_acts, &n);
    if (rc != 0) {
        if (injected)
            l->stats.inject_refused++;
        else
            l->stats.refused++;
        r = local_rec(l, HB_HIER_REC_REFUSED, node, ev->coll_id, NULL);
        if (r != NULL) {
            r->status = rc;
            r->peer = ev->from;
            r->msg = ev->msg;
        }
        return rc;
    }
    if (ev->kind != HB_HIER_EV_PEER_LOST) {
        st = local_stamp(l, node, ev->coll_id);
        local_clock_max(&st->clk, clk);
        if (ev->kind == HB_HIER_EV_ARRIVE)
            local_rec(l, HB_HIER_REC_ARRIVE, node, ev->coll_id, st);
        else if (ev->kind == HB_HIER_EV_HWB_DONE &&
                 (r = local_rec(l, HB_HIER_REC_HWB_DONE, node, ev->coll_id, st)) != NULL)
            r->sync_no = ev->sync_no;
        else if (ev->kind == HB_HIER_EV_MSG &&
                 (r = local_rec(l, HB_HIER_REC_MSG, node, ev->coll_id, st)) != NULL) {
            r->peer = ev->from;
            r->msg = ev->msg;
        }
    }
    rc = 0;
    for (i = 0; i < n; i++) {
        const hb_hier_act_t *a = &l->acts[i];
        local_stamp_t *ast = local_stamp(l, node, a->coll_id);
        switch (a->kind) {
        case HB_HIER_ACT_SEND:
            r = local_rec(l, HB_HIER_REC_SEND, node, a->coll_id, ast);
            if (r != NULL) {
                r->peer = a->to;
                r->msg = a->msg;
                r->step = a->step;
            }
            memset(&out, 0, sizeof(out));
            out.kind = HB_HIER_EV_MSG;
            out.job = a->job;
            out.coll_id = a->coll_id;
            out.epoch = a->epoch;
            out.from = node;
            out.msg = a->msg;
            sent = ast->clk;
            sent.n_sr++;
            sent.t += l->t_sr;
            rc2 = a->to < l->topo->n_nodes && l->eng[a->to] != NULL
                      ? local_push(l, a->to, &out, &sent)
                      : HB_ERR_INTERNAL;
            break;
        case HB_HIER_ACT_HWB_ARRIVE:
            r = local_rec(l, HB_HIER_REC_HWB_ARRIVE, node, a->coll_id, ast);
            if (r != NULL) {
                r->sync_no = a->sync_no;
                r->phase = a->phase;
                r->step = a->step;
            }
            rc2 = local_hwb_arrive(l, node, a, ast);
            break;
        case HB_HIER_ACT_COMPLETE:
            r = local_rec(l, HB_HIER_REC_COMPLETE, node, a->coll_id, ast);
            if (r != NULL)
                r->step = a->step;
            rc2 = 0;
            break;
        case HB_HIER_ACT_FAIL:
        default:
            r = local_rec(l, HB_HIER_REC_FAIL, node, a->coll_id, ast);
            if (r != NULL)
                r->status = a->status;
            rc2 = 0;
            break;
        }
        if (rc2 != 0 && rc == 0)
            rc = rc2;
    }
    if (rc == 0 && l->oom)
        rc = HB_ERR_NOMEM;
    if (rc != 0)
        hb_log_error("hier_local: node %u: %s", node, hb_status_str(rc));
    return rc;
}

int hb_hier_local_inject_at(hb_hier_local_t *l, uint32_t node, const hb_hier_ev_t *ev, double t)
{
    local_clock_t clk = {0, 0, t};

    if (l == NULL || ev == NULL || node >= l->topo->n_nodes || l->eng[node] == NULL)
        return HB_ERR_INVAL;
    if (l->dead[node])
        return HB_ERR_UNAVAIL;
    return local_step(l, node, ev, 1, &clk);
}

int hb_hier_local_inject(hb_hier_local_t *l, uint32_t node, const hb_hier_ev_t *ev)
{
    return hb_hier_local_inject_at(l, node, ev, 0.0);
}

int hb_hier_local_arrive(hb_hier_local_t *l, uint32_t node, uint64_t coll_id)
{
    return hb_hier_local_arrive_at(l, node, coll_id, 0.0);
}

int hb_hier_local_arrive_at(hb_hier_local_t *l, uint32_t node, uint64_t coll_id, double t)
{
    hb_hier_ev_t ev;

    memset(&ev, 0, sizeof(ev));
    ev.kind = HB_HIER_EV_ARRIVE;
    ev.job = l->cfg.job;
    ev.epoch = l->cfg.epoch;
    ev.coll_id = coll_id;
    return hb_hier_local_inject_at(l, node, &ev, t);
}

size_t hb_hier_local_pending(const hb_hier_local_t *l)
{
    return l->n_items;
}

int hb_hier_local_peek(const hb_hier_local_t *l, size_t i, hb_hier_ev_t *ev_p, uint32_t *to_p)
{
    if (i >= l->n_items)
        return HB_ERR_INVAL;
    if (ev_p != NULL)
        *ev_p = local_item(l, i)->ev;
    if (to_p != NULL)
        *to_p = local_item(l, i)->to;
    return 0;
}

int hb_hier_local_deliver(hb_hier_local_t *l, size_t i)
{
    local_item_t it;
    size_t k;

    if (i >= l->n_items)
        return HB_ERR_INVAL;
    it = *local_item(l, i);
    /* close the gap from the nearer end: FIFO and LIFO delivery cost O(1) */
    if (i < l->n_items / 2) {
        for (k = i; k > 0; k--)
            *local_item(l, k) = *local_item(l, k - 1);
        l->head = (l->head + 1) & (l->cap_items - 1);
    } else {
        for (k = i; k + 1 < l->n_items; k++)
            *local_item(l, k) = *local_item(l, k + 1);
    }
    l->n_items--;
    l->stats.delivered++;
    if (l->dead[it.to]) {
        l->stats.dead_drops++;
        return 0;
    }
    return local_step(l, it.to, &it.ev, 0, &it.clk);
}

size_t hb_hier_local_run(hb_hier_local_t *l, hb_hier_local_order_t order, size_t max)
{
    size_t done = 0, i;

    while (l->n_items > 0 && done < max) {
        if (order == HB_HIER_LOCAL_FIFO)
            i = 0;
        else if (order == HB_HIER_LOCAL_LIFO)
            i = l->n_items - 1;
        else
            i = (size_t)(local_rand(l) % l->n_items);
        (void)hb_hier_local_deliver(l, i); /* refusals are in the trace and the stats */
        done++;
    }
    return done;
}

void hb_hier_local_kill(hb_hier_local_t *l, uint32_t node)
{
    size_t i, j = 0;

    if (node >= l->topo->n_nodes)
        return;
    l->dead[node] = 1;
    for (i = 0; i < l->n_items; i++) {
        if (local_item(l, i)->to == node)
            l->stats.dead_drops++;
        else
            *local_item(l, j++) = *local_item(l, i);
    }
    l->n_items = j;
}

const hb_hier_rec_t *hb_hier_local_trace(const hb_hier_local_t *l, size_t *n_p)
{
    *n_p = l->n_trace;
    return l->trace;
}

void hb_hier_local_stats(const hb_hier_local_t *l, hb_hier_local_stats_t *stats_p)
{
    *stats_p = l->stats;
}

int hb_hier_local_critical(const hb_hier_local_t *l, uint64_t coll_id, uint32_t *n_ib_p,
                           uint32_t *n_sr_p, double *t_p)
{
    uint32_t ib = 0, sr = 0;
    double t = 0.0;
    size_t i;
    int found = 0;

    for (i = 0; i < l->n_trace; i++) {
        const hb_hier_rec_t *r = &l->trace[i];
        if (r->kind != HB_HIER_REC_COMPLETE || r->coll_id != coll_id)
            continue;
        found = 1;
        if (r->n_ib > ib)
            ib = r->n_ib;
        if (r->n_sr > sr)
            sr = r->n_sr;
        if (r->t > t)
            t = r->t;
    }
    if (!found)
        return HB_ERR_NOT_FOUND;
    if (n_ib_p != NULL)
        *n_ib_p = ib;
    if (n_sr_p != NULL)
        *n_sr_p = sr;
    if (t_p != NULL)
        *t_p = t;
    return 0;
}

int hb_hier_rec_format(const hb_hier_rec_t *r, char *buf, size_t len)
{
    static const char *const kind[] = {"ARRIVE",   "SEND", "HWB_ARRIVE", "HWB_DONE",
                                       "COMPLETE", "FAIL", "REFUSED",    "MSG"};
    char what[64] = "";
    int w;

    if (r == NULL || buf == NULL || len == 0)
        return HB_ERR_INVAL;
    switch (r->kind) {
    case HB_HIER_REC_SEND:
        snprintf(what, sizeof(what), " %s to n%u", hb_hier_msg_name(r->msg), r->peer);
        break;
    case HB_HIER_REC_MSG:
        snprintf(what, sizeof(what), " %s from n%u", hb_hier_msg_name(r->msg), r->peer);
        break;
    case HB_HIER_REC_HWB_ARRIVE:
        snprintf(what, sizeof(what), " sync %u phase %u", r->sync_no, r->phase);
        break;
    case HB_HIER_REC_HWB_DONE:
        snprintf(what, sizeof(what), " sync %u", r->sync_no);
        break;
    case HB_HIER_REC_FAIL:
    case HB_HIER_REC_REFUSED:
        snprintf(what, sizeof(what), " %d (%s)", r->status, hb_status_str(r->status));
        break;
    default:
        break;
    }
    w = snprintf(buf, len, "n%u coll %llu %s%s%s%s%s ib=%u sr=%u t=%.9g", r->node,
                 (unsigned long long)r->coll_id,
                 (unsigned)r->kind < sizeof(kind) / sizeof(kind[0]) ? kind[r->kind] : "?", what,
                 r->step ? " [" : "", r->step ? r->step : "", r->step ? "]" : "", r->n_ib, r->n_sr,
                 r->t);
    return (w >= 0 && (size_t)w < len) ? 0 : HB_ERR_TRUNCATED;
}
