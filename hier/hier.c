/* hier.c: the hier engine: per-collective state, event validation, the step-program interpreter. */
#include "hier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_status.h"
#include "hier_int.h"

#define HIER_MAX_SYNC 64

enum { HWB_IDLE = 0, HWB_WAITING = 1, HWB_DONE = 2 };

/* One collective this node knows about: in flight, failed, or only heard of (early). */
typedef struct hier_coll {
    uint64_t id;
    uint8_t used;
    uint8_t arrived; /* the local ARRIVE came */
    uint8_t failed;  /* FAIL was given: the entry stays, holding its sync number */
    uint8_t hwb;     /* HWB_IDLE / HWB_WAITING / HWB_DONE for the HWB op at pc */
    uint8_t got_up;  /* bit (1 << msg) per message received from the parent */
    uint32_t pc;
    uint32_t n_down;    /* children whose DONE came */
    uint64_t *down_bit; /* [words] which children's DONE came */
} hier_coll_t;

struct hb_hier {
    hb_hier_cfg_t cfg;
    uint32_t node, n_nodes, chassis, mask;
    uint32_t parent; /* node above, or HB_TOPO_NONE */
    uint32_t n_children;
    uint32_t *child_center; /* [n_children] Center of each child chassis */
    hb_hier_prog_t prog;
    uint8_t accept_up;   /* bit (1 << msg): kinds the program waits for from the parent */
    uint8_t accept_down; /* ... from the children */
    uint32_t gate[HB_HIER_MSG_MAX + 1]; /* pc a message kind needs (its provoking send done) */
    uint64_t next;                      /* coll id the next ARRIVE must carry */
    int broken;     /* 0, or the status every collective fails with (PEER_LOST) */
    size_t n_slots; /* 2 * n_sync: the window of collectives that can exist here */
    hier_coll_t *slots;
    uint64_t *bits;
    size_t words;
    size_t max_acts;
    hb_hier_stats_t stats;
};

void hb_hier_cfg_init(hb_hier_cfg_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->protocol = HB_HIER_SCMD;
    cfg->epoch = 1;
    cfg->n_sync = 8;
}

void hb_hier_prog_add(hb_hier_prog_t *prog, hb_hier_op_kind_t kind, hb_hier_msg_t msg,
                      unsigned phase, const char *step)
{
    hb_hier_op_t *op;

    if (prog->n >= HB_HIER_MAX_OPS)
        return;
    op = &prog->ops[prog->n++];
    op->kind = (uint8_t)kind;
    op->msg = (uint8_t)msg;
    op->phase = (uint8_t)phase;
    op->step = step;
}

/* Which messages the program takes, and from what pc on each may legitimately arrive: a
 * message is provoked by the last send in the same direction before its WAIT (DONE from a
 * child by our NOTIFY in scmd, RELEASE from the parent by our DONE); none before it. */
static void hier_gates(hb_hier_t *h)
{
    uint32_t last_up = 0, last_down = 0;
    size_t i;

    for (i = 0; i < h->prog.n; i++) {
        const hb_hier_op_t *op = &h->prog.ops[i];
        switch (op->kind) {
        case HB_HIER_OP_SEND_UP:
            last_up = (uint32_t)i + 1;
            break;
        case HB_HIER_OP_SEND_DOWN:
            last_down = (uint32_t)i + 1;
            break;
        case HB_HIER_OP_WAIT_UP:
            h->accept_up |= (uint8_t)(1u << op->msg);
            h->gate[op->msg] = last_up;
            break;
        case HB_HIER_OP_WAIT_DOWN:
            h->accept_down |= (uint8_t)(1u << op->msg);
            h->gate[op->msg] = last_down;
            break;
        default:
            break;
        }
    }
}

static size_t hier_count_acts(const hb_hier_t *h)
{
    size_t i, n = 0;

    for (i = 0; i < h->prog.n; i++) {
        switch (h->prog.ops[i].kind) {
        case HB_HIER_OP_SEND_DOWN:
            n += h->n_children;
            break;
        case HB_HIER_OP_SEND_UP:
        case HB_HIER_OP_HWB:
        case HB_HIER_OP_COMPLETE:
            n++;
            break;
        default:
            break;
        }
    }
    /* PEER_LOST fails at most n_sync collectives in flight at once. */
    return n > h->cfg.n_sync ? n : h->cfg.n_sync;
}

int hb_hier_create(const hb_topo_t *topo, uint32_t node, const hb_hier_cfg_t *cfg, hb_hier_t **h_p)
{
    const hb_topo_node_t *tn;
    const hb_topo_chassis_t *tc;
    hb_hier_shape_t shape;
    hb_hier_t *h;
    uint32_t i;
    size_t s;
    int rc;

    if (topo == NULL || cfg == NULL || h_p == NULL || node >= topo->n_nodes)
        return HB_ERR_INVAL;
    if (cfg->protocol != HB_HIER_SCMD && cfg->protocol != HB_HIER_TREE)
        return HB_ERR_INVAL;
    if (cfg->n_sync == 0 || cfg->n_sync > HIER_MAX_SYNC)
        return HB_ERR_INVAL;
    tn = &topo->nodes[node];
    tc = &topo->chassis[tn->chassis];
    if (!tn->member || tc->n_nodes == 0 || tc->n_nodes > HB_TOPO_MAX_CHASSIS_SIZE)
        return HB_ERR_INVAL;

    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return HB_ERR_NOMEM;
    h->cfg = *cfg;
    h->node = node;
    h->n_nodes = topo->n_nodes;
    h->chassis = tn->chassis;
    h->mask = tc->mask;
    h->parent = tn->parent;
    h->n_children = tn->n_children;
    h->next = cfg->first_coll;
    h->child_center = calloc(tn->n_children ? tn->n_children : 1, sizeof(uint32_t));
    h->n_slots = (size_t)2 * cfg->n_sync;
    h->words = (tn->n_children + 63) / 64;
    h->slots = calloc(h->n_slots, sizeof(*h->slots));
    h->bits = calloc(h->n_slots * (h->words ? h->words : 1), sizeof(uint64_t));
    if (h->child_center == NULL || h->slots == NULL || h->bits == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    for (i = 0; i < tn->n_children; i++)
        h->child_center[i] = topo->chassis[tn->children[i]].nodes[0];
    for (s = 0; s < h->n_slots; s++)
        h->slots[s].down_bit = h->bits + s * h->words;

    shape.chassis_root = tc->parent == HB_TOPO_NONE;
    shape.chassis_children = tc->n_children > 0;
    shape.up = tn->parent != HB_TOPO_NONE;
    shape.down = tn->n_children > 0;
    shape.center = tc->nodes[0] == node;
    if (cfg->protocol == HB_HIER_SCMD)
        rc = hb_hier_scmd_build(&shape, &h->prog);
    else
        rc = hb_hier_tree_build(&shape, &h->prog);
    if (rc != 0) {
        hb_log_error("hier: node %u: step program too long", node);
        goto err_free;
    }
    hier_gates(h);
    h->max_acts = hier_count_acts(h);
    *h_p = h;
    return 0;

err_free:
    free(h->bits);
    free(h->slots);
    free(h->child_center);
    free(h);
    return rc;
}

void hb_hier_destroy(hb_hier_t *h)
{
    if (h == NULL)
        return;
    free(h->bits);
    free(h->slots);
    free(h->child_center);
    free(h);
}

size_t hb_hier_max_actions(const hb_hier_t *h)
{
    return h->max_acts;
}

void hb_hier_stats(const hb_hier_t *h, hb_hier_stats_t *stats_p)
{
    *stats_p = h->stats;
}

const char *hb_hier_role(const hb_hier_t *h)
{
    return h->prog.role;
}

static hier_coll_t *hier_find(hb_hier_t *h, uint64_t id)
{
    hier_coll_t *c = &h->slots[id % h->n_slots];

    return (c->used && c->id == id) ? c : NULL;
}

static void hier_free(hb_hier_t *h, hier_coll_t *c)
{
    uint64_t *bits = c->down_bit;

    memset(bits, 0, h->words * sizeof(uint64_t));
    memset(c, 0, sizeof(*c));
    c->down_bit = bits;
}

/* The action every emitter starts from. */
static hb_hier_act_t *hier_act(hb_hier_t *h, const hier_coll_t *c, hb_hier_act_kind_t kind,
                               const char *step, hb_hier_act_t *acts, size_t *n)
{
    hb_hier_act_t *a = &acts[(*n)++];

    memset(a, 0, sizeof(*a));
    a->kind = kind;
    a->job = h->cfg.job;
    a->coll_id = c->id;
    a->epoch = h->cfg.epoch;
    a->step = step;
    return a;
}

static void hier_fail(hb_hier_t *h, hier_coll_t *c, int status, hb_hier_act_t *acts, size_t *n)
{
    hb_hier_act_t *a = hier_act(h, c, HB_HIER_ACT_FAIL, "fail", acts, n);

    a->status = status;
    c->failed = 1;
    h->stats.failed++;
}

/* Run collective c's program from its pc until it must wait for an event. */
static void hier_advance(hb_hier_t *h, hier_coll_t *c, hb_hier_act_t *acts, size_t *n)
{
    hb_hier_act_t *a;
    uint32_t i;

    for (;;) {
        const hb_hier_op_t *op = &h->prog.ops[c->pc];
        switch (op->kind) {
        case HB_HIER_OP_WAIT_ARRIVE:
            if (!c->arrived)
                return;
            break;
        case HB_HIER_OP_WAIT_UP:
            if (!(c->got_up & (1u << op->msg)))
                return;
            break;
        case HB_HIER_OP_WAIT_DOWN:
            if (c->n_down < h->n_children)
                return;
            break;
        case HB_HIER_OP_HWB:
            if (c->hwb == HWB_IDLE) {
                a = hier_act(h, c, HB_HIER_ACT_HWB_ARRIVE, op->step, acts, n);
                a->sync_no = h->cfg.sync_base + (uint32_t)(c->id % h->cfg.n_sync);
                a->mask = h->mask;
                a->phase = op->phase;
                c->hwb = HWB_WAITING;
                return;
            }
            if (c->hwb == HWB_WAITING)
                return;
            c->hwb = HWB_IDLE;
            break;
        case HB_HIER_OP_SEND_UP:
            a = hier_act(h, c, HB_HIER_ACT_SEND, op->step, acts, n);
            a->to = h->parent;
            a->msg = (hb_hier_msg_t)op->msg;
            break;
        case HB_HIER_OP_SEND_DOWN:
            for (i = 0; i < h->n_children; i++) {
                a = hier_act(h, c, HB_HIER_ACT_SEND, op->step, acts, n);
                a->to = h->child_center[i];
                a->msg = (hb_hier_msg_t)op->msg;
            }
            break;
        case HB_HIER_OP_COMPLETE:
        default:
            hier_act(h, c, HB_HIER_ACT_COMPLETE, op->step, acts, n);
            h->stats.completed++;
            hier_free(h, c);
            return;
        }
        c->pc++;
    }
}

int hb_hier_idle(const hb_hier_t *h)
{
    for (size_t s = 0; h != NULL && s < h->n_slots; s++)
        if (h->slots[s].used)
            return 0;
    return h != NULL;
}

/* Oldest collective still holding its sync number here (in flight or failed), or next. */
static uint64_t hier_low(const hb_hier_t *h)
{
    uint64_t low = h->next;
    size_t s;

    for (s = 0; s < h->n_slots; s++) {
        const hier_coll_t *c = &h->slots[s];
        if (c->used && c->id < h->next && c->id < low)
            low = c->id;
    }
    return low;
}

static hier_coll_t *hier_claim(hb_hier_t *h, uint64_t id)
{
    hier_coll_t *c = &h->slots[id % h->n_slots];

    if (c->used)
        return NULL;
    c->used = 1;
    c->id = id;
    return c;
}

static int hier_on_arrive(hb_hier_t *h, const hb_hier_ev_t *ev, hb_hier_act_t *acts, size_t *n)
{
    hier_coll_t *c;

    if (ev->job != h->cfg.job || ev->epoch != h->cfg.epoch || ev->coll_id != h->next)
        return HB_ERR_INVAL;
    if (h->broken) {
        /* fails at once and holds no sync number: nothing of it reaches the hwbarrier */
        hier_coll_t tmp = {.id = ev->coll_id};
        h->next++;
        hier_fail(h, &tmp, h->broken, acts, n);
        return 0;
    }
    if (ev->coll_id - hier_low(h) >= h->cfg.n_sync)
        return HB_ERR_BUSY;
    c = hier_find(h, ev->coll_id);
    if (c == NULL)
        c = hier_claim(h, ev->coll_id);
    if (c == NULL)
        return HB_ERR_INTERNAL; /* the window arithmetic says this cannot happen */
    h->next++;
    c->arrived = 1;
    hier_advance(h, c, acts, n);
    return 0;
}

static int hier_on_msg(hb_hier_t *h, const hb_hier_ev_t *ev, hb_hier_act_t *acts, size_t *n)
{
    hier_coll_t *c;
    uint32_t child = UINT32_MAX, i, pc;
    int from_up;

    if (ev->job != h->cfg.job || ev->epoch != h->cfg.epoch) {
        h->stats.drop_mismatch++;
        return HB_ERR_MISMATCH;
    }
    if (ev->msg == 0 || ev->msg > HB_HIER_MSG_MAX || ev->len != 0 || ev->from >= h->n_nodes)
        goto drop_role;
    from_up = h->parent != HB_TOPO_NONE && ev->from == h->parent;
    if (from_up) {
        if (!(h->accept_up & (1u << ev->msg)))
            goto drop_role;
    } else {
        for (i = 0; i < h->n_children && child == UINT32_MAX; i++)
            if (h->child_center[i] == ev->from)
                child = i;
        if (child == UINT32_MAX || !(h->accept_down & (1u << ev->msg)))
            goto drop_role;
    }
    if (h->broken) {
        h->stats.late++;
        return 0;
    }
    c = hier_find(h, ev->coll_id);
    if (c != NULL && c->failed) {
        h->stats.late++;
        return 0;
    }
    if (c == NULL && ev->coll_id < h->next) {
        h->stats.drop_stale++;
        return HB_ERR_PROTO;
    }
    if (c == NULL && ev->coll_id - h->next >= h->cfg.n_sync) {
        h->stats.drop_window++;
        return HB_ERR_PROTO;
    }
    pc = c != NULL ? c->pc : 0;
    if (pc < h->gate[ev->msg]) {
        h->stats.drop_order++;
        return HB_ERR_PROTO;
    }
    if (c != NULL && (from_up ? (c->got_up & (1u << ev->msg)) != 0
                              : (c->down_bit[child / 64] >> (child % 64)) & 1u)) {
        h->stats.drop_dup++;
        return HB_ERR_PROTO;
    }
    if (c == NULL) {
        c = hier_claim(h, ev->coll_id);
        if (c == NULL) {
            h->stats.drop_window++;
            return HB_ERR_PROTO;
        }
    }
    if (from_up) {
        c->got_up |= (uint8_t)(1u << ev->msg);
    } else {
        c->down_bit[child / 64] |= (uint64_t)1 << (child % 64);
        c->n_down++;
    }
    hier_advance(h, c, acts, n);
    return 0;

drop_role:
    h->stats.drop_role++;
    return HB_ERR_PROTO;
}

static int hier_on_hwb(hb_hier_t *h, const hb_hier_ev_t *ev, hb_hier_act_t *acts, size_t *n)
{
    hier_coll_t *c = hier_find(h, ev->coll_id);

    if (c != NULL && c->failed) {
        h->stats.late++;
        return 0;
    }
    if (c == NULL || !c->arrived || c->hwb != HWB_WAITING ||
        ev->sync_no != h->cfg.sync_base + (uint32_t)(c->id % h->cfg.n_sync)) {
        h->stats.bad_hwb++;
        return HB_ERR_INVAL;
    }
    if (ev->status < 0) {
        hier_fail(h, c, ev->status, acts, n);
        return 0;
    }
    c->hwb = HWB_DONE;
    hier_advance(h, c, acts, n);
    return 0;
}

static int hier_on_timeout(hb_hier_t *h, const hb_hier_ev_t *ev, hb_hier_act_t *acts, size_t *n)
{
    hier_coll_t *c = hier_find(h, ev->coll_id);

    if (c != NULL && c->failed) {
        h->stats.late++;
        return 0;
    }
    if (c == NULL || !c->arrived)
        return HB_ERR_NOT_FOUND;
    hier_fail(h, c, HB_ERR_TIMEOUT, acts, n);
    return 0;
}

static int hier_on_lost(hb_hier_t *h, const hb_hier_ev_t *ev, hb_hier_act_t *acts, size_t *n)
{
    size_t s;

    if (ev->from >= h->n_nodes)
        return HB_ERR_INVAL;
    if (h->broken) {
        h->stats.late++;
        return 0;
    }
    h->broken = HB_ERR_PEER_LOST;
    for (s = 0; s < h->n_slots; s++) {
        hier_coll_t *c = &h->slots[s];
        if (!c->used || c->failed)
            continue;
        if (c->arrived)
            hier_fail(h, c, HB_ERR_PEER_LOST, acts, n);
        else
            hier_free(h, c); /* heard of only: its ARRIVE will fail at once */
    }
    return 0;
}

int hb_hier_step(hb_hier_t *h, const hb_hier_ev_t *ev, hb_hier_act_t *acts, size_t max, size_t *n_p)
{
    size_t n = 0;
    int rc;

    if (n_p != NULL)
        *n_p = 0;
    if (h == NULL || ev == NULL || acts == NULL || n_p == NULL)
        return HB_ERR_INVAL;
    if (max < h->max_acts)
        return HB_ERR_TRUNCATED;
    switch (ev->kind) {
    case HB_HIER_EV_ARRIVE:
        rc = hier_on_arrive(h, ev, acts, &n);
        break;
    case HB_HIER_EV_MSG:
        rc = hier_on_msg(h, ev, acts, &n);
        break;
    case HB_HIER_EV_HWB_DONE:
        rc = hier_on_hwb(h, ev, acts, &n);
        break;
    case HB_HIER_EV_PEER_LOST:
        rc = hier_on_lost(h, ev, acts, &n);
        break;
    case HB_HIER_EV_TIMEOUT:
        rc = hier_on_timeout(h, ev, acts, &n);
        break;
    default:
        rc = HB_ERR_INVAL;
        break;
    }
    if (rc != 0) {
        hb_log_debug("hier: node %u: %s event for coll %llu from %u refused: %s", h->node,
                     ev->kind == HB_HIER_EV_MSG ? hb_hier_msg_name(ev->msg) : "local",
                     (unsigned long long)ev->coll_id, ev->from, hb_status_str(rc));
        return rc;
    }
    *n_p = n;
    return 0;
}

int hb_hier_describe(const hb_hier_t *h, char *buf, size_t len)
{
    size_t i, off = 0;
    int w;

    if (h == NULL || buf == NULL || len == 0)
        return HB_ERR_INVAL;
    buf[0] = '\0';
    w = snprintf(buf, len, "node %u: %s\n", h->node, h->prog.role);
    for (i = 0; w >= 0 && (size_t)w < len - off && i < h->prog.n; i++) {
        const hb_hier_op_t *op = &h->prog.ops[i];
        char to[32] = "";
        off += (size_t)w;
        if (op->kind == HB_HIER_OP_WAIT_UP || op->kind == HB_HIER_OP_SEND_UP)
            snprintf(to, sizeof(to), " n%u", h->parent);
        else if (op->kind == HB_HIER_OP_WAIT_DOWN || op->kind == HB_HIER_OP_SEND_DOWN)
            snprintf(to, sizeof(to), " %u child Center(s)", h->n_children);
        switch (op->kind) {
        case HB_HIER_OP_WAIT_ARRIVE:
            w = snprintf(buf + off, len - off, "  %-14s wait local arrival\n", op->step);
            break;
        case HB_HIER_OP_WAIT_UP:
        case HB_HIER_OP_WAIT_DOWN:
            w = snprintf(buf + off, len - off, "  %-14s wait %s from%s\n", op->step,
                         hb_hier_msg_name(op->msg), to);
            break;
        case HB_HIER_OP_HWB:
            w = snprintf(buf + off, len - off, "  %-14s chassis barrier %u\n", op->step, op->phase);
            break;
        case HB_HIER_OP_SEND_UP:
        case HB_HIER_OP_SEND_DOWN:
            w = snprintf(buf + off, len - off, "  %-14s send %s to%s\n", op->step,
                         hb_hier_msg_name(op->msg), to);
            break;
        default:
            w = snprintf(buf + off, len - off, "  %-14s complete\n", op->step);
            break;
        }
    }
    return (w >= 0 && (size_t)w < len - off) ? 0 : HB_ERR_TRUNCATED;
}

const char *hb_hier_proto_name(hb_hier_proto_t p)
{
    return p == HB_HIER_SCMD ? "scmd" : p == HB_HIER_TREE ? "tree" : "unknown";
}

int hb_hier_proto_parse(const char *s, hb_hier_proto_t *p_p)
{
    if (s == NULL || p_p == NULL)
        return HB_ERR_INVAL;
    if (strcmp(s, "scmd") == 0)
        *p_p = HB_HIER_SCMD;
    else if (strcmp(s, "tree") == 0)
        *p_p = HB_HIER_TREE;
    else
        return HB_ERR_INVAL;
    return 0;
}

const char *hb_hier_msg_name(uint32_t msg)
{
    switch (msg) {
    case HB_HIER_MSG_NOTIFY:
        return "NOTIFY";
    case HB_HIER_MSG_DONE:
        return "DONE";
    case HB_HIER_MSG_RELEASE:
        return "RELEASE";
    default:
        return "unknown";
    }
}

const char *hb_hier_act_name(hb_hier_act_kind_t kind)
{
    switch (kind) {
    case HB_HIER_ACT_SEND:
        return "SEND";
    case HB_HIER_ACT_HWB_ARRIVE:
        return "HWB_ARRIVE";
    case HB_HIER_ACT_COMPLETE:
        return "COMPLETE";
    case HB_HIER_ACT_FAIL:
        return "FAIL";
    }
    return "unknown";
}

/* Inter-level chassis on the path from chassis c up to the root (c included). */
static uint32_t hier_inter_above(const hb_topo_t *t, uint32_t c)
{
    uint32_t n = 0, hops = 0;

    while (c != HB_TOPO_NONE && c < t->n_chassis && hops++ <= t->n_chassis) {
        if (t->chassis[c].parent != HB_TOPO_NONE && t->chassis[c].n_children > 0)
            n++;
        c = t->chassis[c].parent;
    }
    return n;
}

int hb_hier_cost(const hb_topo_t *topo, hb_hier_proto_t p, uint32_t *n_ib_p, uint32_t *n_sr_p)
{
    uint32_t c, L = 0, l;

    if (topo == NULL || topo->n_chassis == 0 || n_ib_p == NULL || n_sr_p == NULL ||
        (p != HB_HIER_SCMD && p != HB_HIER_TREE))
        return HB_ERR_INVAL;
    if (topo->root >= topo->n_chassis || topo->chassis[topo->root].n_children == 0) {
        *n_ib_p = 1;
        *n_sr_p = 0;
        return 0;
    }
    for (c = 0; c < topo->n_chassis; c++) {
        l = hier_inter_above(topo, c);
        if (l > L)
            L = l;
    }
    if (p == HB_HIER_SCMD) {
        *n_ib_p = 4 + 3 * L;
        *n_sr_p = 3 * (L + 1);
    } else {
        *n_ib_p = 3 + 2 * L;
        *n_sr_p = 2 * (L + 1);
    }
    return 0;
}

double hb_hier_predict(const hb_topo_t *topo, hb_hier_proto_t p, double t_ib, double t_sr)
{
    uint32_t n_ib, n_sr;

    if (hb_hier_cost(topo, p, &n_ib, &n_sr) != 0)
        return -1.0;
    return n_ib * t_ib + n_sr * t_sr;
}
