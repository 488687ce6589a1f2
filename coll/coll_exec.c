/* coll_exec.c: the per-node executor of a collective schedule: a sans-I/O event -> actions machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hb_log.h"
#include "coll_sched.h"

/* One expected receive segment. */
typedef struct rseg {
    uint64_t off, len;
    uint32_t peer, step, seg;
    uint8_t phase;
} rseg_t;

/* Layout bytes [lo, hi) the node holds, at work + at. */
typedef struct wrange {
    uint64_t lo, hi, at;
} wrange_t;

/* Per-peer table: receive segments from (or sequence numbers to) one peer. */
typedef struct ptab {
    uint32_t peer;
    uint32_t base;  /* receive: first index in rbypeer */
    uint32_t count; /* receive: segments from this peer */
    uint32_t next;  /* send: next sequence number to this peer */
} ptab_t;

struct hb_coll_exec {
    const hb_coll_sched_t *s;
    uint32_t node;
    unsigned flags;
    const hb_coll_step_t *st;
    uint32_t nst;
    const uint8_t *send_buf;
    uint8_t *recv_buf;
    uint8_t *work; /* the layout ranges wr, packed */
    wrange_t *wr;  /* [nwr] sorted, disjoint: one span, or (alltoall) the steps' ranges merged */
    uint32_t nwr;
    uint64_t wlen; /* bytes of work */
    /* HB_COLL_EXEC_IN_PLACE: the input is read where it is (no COPY_IN) when direct_in */
    int direct_in;
    uint64_t in_lo, in_hi; /* the COPY_IN step's layout range */
    uint32_t *lord;        /* [nlord] nodes with bytes, in layout order */
    uint32_t nlord;
    /* receives */
    rseg_t *rs;     /* [nrs] in step order */
    uint8_t *rdone; /* [nrs] */
    uint32_t nrs, n_rdone;
    uint32_t rprefix;  /* rs[0 .. rprefix) all arrived */
    uint32_t *rsorted; /* [nrs] indices sorted by offset */
    uint32_t sprefix;  /* rsorted[0 .. sprefix) all arrived */
    uint32_t *rbypeer; /* [nrs] indices grouped by peer, step order within a peer */
    ptab_t *rpeers;    /* sorted by peer */
    uint32_t nrpeers;
    ptab_t *speers; /* sorted by peer */
    uint32_t nspeers;
    /* progress */
    uint32_t post_step;         /* next step to consider for POST_RECV */
    uint32_t cur_step, cur_seg; /* send cursor */
    int started, delivered, completed, failed, fail_emitted, more;
    int status;
};

static int ptab_cmp(const void *a, const void *b)
{
    const ptab_t *x = a, *y = b;
    return x->peer < y->peer ? -1 : x->peer > y->peer ? 1 : 0;
}

static ptab_t *ptab_find(ptab_t *t, uint32_t n, uint32_t peer)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t[mid].peer == peer)
            return &t[mid];
        if (t[mid].peer < peer)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Byte range of segment k of a step. */
static void seg_range(const hb_coll_sched_t *s, const hb_coll_step_t *st, uint32_t k, uint64_t *c,
                      uint64_t *d)
{
    uint64_t sz = s->seg_size ? s->seg_size : st->len;
    uint64_t lo = st->off + (uint64_t)k * sz;
    uint64_t hi = st->len - (uint64_t)k * sz < sz ? st->off + st->len : lo + sz;
    if (st->len == 0)
        lo = hi = st->off;
    *c = lo;
    *d = hi;
}

/* Sort key of a receive segment: by offset, then length, then index. */
typedef struct rkey {
    uint64_t off, len;
    uint32_t idx;
} rkey_t;

static int rkey_cmp(const void *a, const void *b)
{
    const rkey_t *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx ? 1 : 0;
}

/* Build the peer tables of one kind; out: sorted unique peers with counts. */
static int build_ptab(const hb_coll_step_t *st, uint32_t nst, hb_coll_step_kind_t kind,
                      ptab_t **t_p, uint32_t *n_p)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < nst; i++)
        m += st[i].kind == kind;
    ptab_t *t = calloc(m ? m : 1, sizeof(*t));
    if (t == NULL)
        return HB_ERR_NOMEM;
    m = 0;
    for (uint32_t i = 0; i < nst; i++)
        if (st[i].kind == kind)
            t[m++] = (ptab_t){.peer = st[i].peer, .count = st[i].nseg};
    qsort(t, m, sizeof(*t), ptab_cmp);
    uint32_t u = 0;
    for (uint32_t i = 0; i < m; i++) {
        if (u > 0 && t[u - 1].peer == t[i].peer)
            t[u - 1].count += t[i].count;
        else
            t[u++] = t[i];
    }
    uint32_t base = 0;
    for (uint32_t i = 0; i < u; i++) {
        t[i].base = base;
        base += t[i].count;
        t[i].next = 0;
    }
    *t_p = t;
    *n_p = u;
    return 0;
}

void hb_coll_exec_free(hb_coll_exec_t *x)
{
    if (x == NULL)
        return;
    free(x->work);
    free(x->wr);
    free(x->lord);
    free(x->rs);
    free(x->rdone);
    free(x->rsorted);
    free(x->rbypeer);
    free(x->rpeers);
    free(x->speers);
    free(x);
}

static int lkey_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; /* lkey_t starts with off */
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Where the executor holds layout bytes [c, d): in work, or NULL when no range holds them all. */
static uint8_t *wptr(const hb_coll_exec_t *x, uint64_t c, uint64_t d)
{
    uint32_t lo = 0, hi = x->nwr;
    if (x->work == NULL)
        return NULL;
    while (hi - lo > 1) { /* the last range starting at or before c */
        uint32_t mid = lo + (hi - lo) / 2;
        if (x->wr[mid].lo <= c)
            lo = mid;
        else
            hi = mid;
    }
    const wrange_t *r = &x->wr[lo];
    if (hi == 0 || c < r->lo || d > r->hi || c > d)
        return NULL;
    return x->work + r->at + (c - r->lo);
}

static int wrange_cmp(const void *a, const void *b)
{
    const wrange_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

/*
 * The layout ranges the node holds: every step's, but those it reads in place. One span from
 * the lowest to the highest byte, or for alltoall, whose rows would make that span the whole
 * n x n layout, the steps' ranges merged.
 */
static int work_ranges(hb_coll_exec_t *x)
{
    x->wr = calloc(x->nst ? x->nst : 1, sizeof(*x->wr));
    if (x->wr == NULL)
        return HB_ERR_NOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < x->nst; i++) {
        const hb_coll_step_t *st = &x->st[i];
        if (x->direct_in && st->off >= x->in_lo && st->off + st->len <= x->in_hi &&
            st->kind != HB_COLL_STEP_RECV)
            continue;
        if (st->len > 0)
            x->wr[k++] = (wrange_t){.lo = st->off, .hi = st->off + st->len};
    }
    qsort(x->wr, k, sizeof(*x->wr), wrange_cmp);
    uint32_t m = 0;
    for (uint32_t i = 0; i < k; i++) {
        if (m > 0 && (x->s->op != HB_COLL_ALLTOALL || x->wr[i].lo <= x->wr[m - 1].hi)) {
            if (x->wr[i].hi > x->wr[m - 1].hi)
                x->wr[m - 1].hi = x->wr[i].hi;
        } else {
            x->wr[m++] = x->wr[i];
        }
    }
    x->nwr = m;
    x->wlen = 0;
    for (uint32_t i = 0; i < m; i++) {
        x->wr[i].at = x->wlen;
        if (x->wr[i].hi - x->wr[i].lo > SIZE_MAX / 2 - x->wlen)
            return HB_ERR_NOMEM;
        x->wlen += x->wr[i].hi - x->wr[i].lo;
    }
    return 0;
}

/*
 * Where layout bytes [c, d) of the input are in the caller's node-order send buffer, or NULL
 * when they are not there in one piece (the blocks they cover are not adjacent in node order).
 */
static const uint8_t *in_map(const hb_coll_exec_t *x, uint64_t c, uint64_t d)
{
    const hb_coll_sched_t *s = x->s;
    if (x->send_buf == NULL || c < x->in_lo || d > x->in_hi || c > d)
        return NULL;
    if (s->op == HB_COLL_BCAST)
        return x->send_buf + (c - x->in_lo);
    uint64_t base = s->op == HB_COLL_SCATTER ? 0 : s->noff[x->node];
    uint32_t lo = 0, hi = x->nlord;
    if (hi == 0)
        return c == d ? x->send_buf : NULL;
    while (hi - lo > 1) { /* the last block starting at or before c */
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->loff[x->lord[mid]] <= c)
            lo = mid;
        else
            hi = mid;
    }
    uint32_t v0 = x->lord[lo];
    if (c == d)
        return x->send_buf;
    if (c < s->loff[v0] || c >= s->loff[v0] + s->bytes[v0])
        return NULL;
    uint64_t end = s->loff[v0] + s->bytes[v0];
    for (uint32_t i = lo; end < d; i++) {
        uint32_t v = x->lord[i];
        if (i + 1 >= x->nlord)
            return NULL;
        uint32_t w = x->lord[i + 1];
        if (s->loff[w] != end || s->noff[w] != s->noff[v] + s->bytes[v])
            return NULL;
        end += s->bytes[w];
    }
    return x->send_buf + (s->noff[v0] - base) + (c - s->loff[v0]);
}

/*
 * May this node send its input from where it is? Only when nothing is received into the
 * input's range and every segment sent from it maps to the send buffer in one piece.
 */
static int direct_in_ok(const hb_coll_exec_t *x)
{
    const hb_coll_sched_t *s = x->s;
    uint32_t n_in = 0;
    for (uint32_t i = 0; i < x->nst; i++)
        n_in += x->st[i].kind == HB_COLL_STEP_COPY_IN;
    if (n_in != 1 || x->send_buf == NULL)
        return 0;
    for (uint32_t i = 0; i < x->nst; i++) {
        const hb_coll_step_t *st = &x->st[i];
        uint64_t a = st->off, b = st->off + st->len;
        int overlaps = st->len > 0 && a < x->in_hi && b > x->in_lo;
        if (!overlaps || st->kind == HB_COLL_STEP_COPY_IN)
            continue;
        if (st->kind == HB_COLL_STEP_RECV)
            return 0;
        if (st->kind == HB_COLL_STEP_COPY_OUT) {
            if (a < x->in_lo || b > x->in_hi)
                return 0;
            continue;
        }
        for (uint32_t g = 0; g < st->nseg; g++) {
            uint64_t c, d;
            seg_range(s, st, g, &c, &d);
            if (in_map(x, c, d) == NULL)
                return 0;
        }
    }
    return 1;
}

/* Layout range of node v's output block (bcast: the buffer). */
static void out_range(const hb_coll_exec_t *x, uint32_t v, uint64_t *lo, uint64_t *hi)
{
    const hb_coll_sched_t *s = x->s;
    if (s->op == HB_COLL_BCAST) {
        *lo = 0;
        *hi = s->total;
    } else if (s->op == HB_COLL_ALLTOALL) {
        *lo = hb_coll_pair_loff(s, v, x->node);
        *hi = *lo + hb_coll_pair_len(s, v, x->node);
    } else {
        *lo = s->loff[v];
        *hi = s->loff[v] + s->bytes[v];
    }
}

const uint8_t *hb_coll_exec_block(const hb_coll_exec_t *x, uint32_t v, uint64_t *len_p)
{
    uint64_t lo = 0, hi = 0;
    const uint8_t *p = NULL;
    if (x != NULL && v < x->s->n_nodes) {
        out_range(x, v, &lo, &hi);
        if (x->direct_in && lo >= x->in_lo && hi <= x->in_hi)
            p = in_map(x, lo, hi);
        else
            p = wptr(x, lo, hi);
    }
    if (len_p != NULL)
        *len_p = p != NULL ? hi - lo : 0;
    return p;
}

int hb_coll_exec_input_in_place(const hb_coll_exec_t *x)
{
    return x != NULL && x->direct_in;
}

const uint8_t *hb_coll_exec_work(const hb_coll_exec_t *x, uint64_t *len_p)
{
    if (len_p != NULL)
        *len_p = x != NULL && x->work != NULL ? x->wlen : 0;
    return x != NULL ? x->work : NULL;
}

void *hb_coll_exec_detach_work(hb_coll_exec_t *x)
{
    void *w = x != NULL ? x->work : NULL;
    if (x != NULL)
        x->work = NULL;
    return w;
}

int hb_coll_exec_create(const hb_coll_sched_t *s, uint32_t node, const void *send_buf,
                        void *recv_buf, unsigned flags, hb_coll_exec_t **x_p)
{
    if (s == NULL || x_p == NULL || node >= s->n_nodes)
        return HB_ERR_INVAL;
    hb_coll_exec_t *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return HB_ERR_NOMEM;
    int rc = HB_ERR_NOMEM;
    x->s = s;
    x->node = node;
    x->flags = flags;
    x->st = hb_coll_sched_steps(s, node, &x->nst);
    x->send_buf = send_buf;
    x->recv_buf = recv_buf;
    int nodata = (flags & HB_COLL_EXEC_NODATA) != 0;
    int in_place = !nodata && (flags & HB_COLL_EXEC_IN_PLACE) != 0;
    for (uint32_t i = 0; i < x->nst; i++) {
        const hb_coll_step_t *st = &x->st[i];
        if (st->kind == HB_COLL_STEP_RECV)
            x->nrs += st->nseg;
        if (st->kind == HB_COLL_STEP_COPY_IN) {
            x->in_lo = st->off;
            x->in_hi = st->off + st->len;
        }
        if (!nodata && st->len > 0 &&
            ((st->kind == HB_COLL_STEP_COPY_IN && send_buf == NULL) ||
             (st->kind == HB_COLL_STEP_COPY_OUT && recv_buf == NULL && !in_place))) {
            hb_log_error("coll: node %u needs a %s buffer", node,
                         st->kind == HB_COLL_STEP_COPY_IN ? "send" : "receive");
            rc = HB_ERR_INVAL;
            goto err_;
        }
    }
    if (in_place && s->op != HB_COLL_ALLTOALL) {
        /* nodes with bytes in layout order (blocks are disjoint) */
        typedef struct {
            uint64_t off;
            uint32_t v;
        } lkey_t;
        lkey_t *k = calloc(s->n_nodes, sizeof(*k));
        x->lord = calloc(s->n_nodes, sizeof(*x->lord));
        if (k == NULL || x->lord == NULL) {
            free(k);
            goto err_;
        }
        for (uint32_t v = 0; v < s->n_nodes; v++)
            if (s->bytes[v] > 0)
                k[x->nlord++] = (lkey_t){.off = s->loff[v], .v = v};
        qsort(k, x->nlord, sizeof(*k), lkey_cmp);
        for (uint32_t i = 0; i < x->nlord; i++)
            x->lord[i] = k[i].v;
        free(k);
        x->direct_in = direct_in_ok(x);
    }
    /* the layout bytes this node holds: all its steps' but those read in place */
    if (work_ranges(x) != 0)
        goto err_;
    if (!nodata && x->wlen > 0) {
        x->work = malloc((size_t)x->wlen);
        if (x->work == NULL)
            goto err_;
    }
    x->rs = calloc(x->nrs ? x->nrs : 1, sizeof(*x->rs));
    x->rdone = calloc(x->nrs ? x->nrs : 1, 1);
    x->rsorted = calloc(x->nrs ? x->nrs : 1, sizeof(*x->rsorted));
    x->rbypeer = calloc(x->nrs ? x->nrs : 1, sizeof(*x->rbypeer));
    if (x->rs == NULL || x->rdone == NULL || x->rsorted == NULL || x->rbypeer == NULL)
        goto err_;
    uint32_t k = 0;
    for (uint32_t i = 0; i < x->nst; i++) {
        const hb_coll_step_t *st = &x->st[i];
        if (st->kind != HB_COLL_STEP_RECV)
            continue;
        for (uint32_t g = 0; g < st->nseg; g++, k++) {
            uint64_t c, d;
            seg_range(s, st, g, &c, &d);
            x->rs[k] = (rseg_t){
                .off = c, .len = d - c, .peer = st->peer, .step = i, .seg = g, .phase = st->phase};
        }
    }
    rkey_t *keys = calloc(x->nrs ? x->nrs : 1, sizeof(*keys));
    if (keys == NULL)
        goto err_;
    for (uint32_t i = 0; i < x->nrs; i++)
        keys[i] = (rkey_t){.off = x->rs[i].off, .len = x->rs[i].len, .idx = i};
    qsort(keys, x->nrs, sizeof(*keys), rkey_cmp);
    for (uint32_t i = 0; i < x->nrs; i++)
        x->rsorted[i] = keys[i].idx;
    free(keys);
    rc = build_ptab(x->st, x->nst, HB_COLL_STEP_RECV, &x->rpeers, &x->nrpeers);
    if (rc == 0)
        rc = build_ptab(x->st, x->nst, HB_COLL_STEP_SEND, &x->speers, &x->nspeers);
    if (rc != 0)
        goto err_;
    /* group receive segments by peer, in step order (the order the peer sends them) */
    for (uint32_t i = 0; i < x->nrs; i++) {
        ptab_t *p = ptab_find(x->rpeers, x->nrpeers, x->rs[i].peer);
        x->rbypeer[p->base + p->next++] = i;
    }
    for (uint32_t i = 0; i < x->nrpeers; i++)
        x->rpeers[i].next = 0;
    *x_p = x;
    return 0;
err_:
    hb_coll_exec_free(x);
    return rc;
}

/* Receive segment e carries bytes of send segment [c, d) (a first phase never waits for the
 * second). */
static int related(const rseg_t *e, uint64_t c, uint64_t d, uint8_t phase)
{
    return e->phase <= phase && e->len > 0 && e->off < d && e->off + e->len > c;
}

/* May the node send [c, d) now? */
static int ready(hb_coll_exec_t *x, uint64_t c, uint64_t d, uint8_t phase)
{
    while (x->sprefix < x->nrs && x->rdone[x->rsorted[x->sprefix]])
        x->sprefix++;
    for (uint32_t i = x->sprefix; i < x->nrs; i++) {
        const rseg_t *e = &x->rs[x->rsorted[i]];
        if (e->off >= d)
            break;
        if (!x->rdone[x->rsorted[i]] && related(e, c, d, phase))
            return 0;
    }
    return 1;
}

/* Copy between the node-order user buffer and the layout for the range of a copy step. */
static void copy_io(hb_coll_exec_t *x, const hb_coll_step_t *st, int out)
{
    const hb_coll_sched_t *s = x->s;
    if (x->work == NULL || st->len == 0)
        return;
    uint8_t *w = wptr(x, st->off, st->off + st->len);
    if (s->op == HB_COLL_BCAST || (s->op == HB_COLL_ALLTOALL && !out)) {
        if (out)
            memcpy(x->recv_buf, w, st->len);
        else
            memcpy(w, x->send_buf, st->len); /* alltoall: the node's row, in node order */
        return;
    }
    if (s->op == HB_COLL_ALLTOALL) { /* a copy-out step per source: the last row starting at or
                                        before it (nodes without ranks have empty rows) */
        uint32_t lo = 0, hi = s->n_nodes;
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (s->loff[mid] <= st->off)
                lo = mid;
            else
                hi = mid;
        }
        memcpy(x->recv_buf + hb_coll_pair_noff(s, x->node, lo), w, st->len);
        return;
    }
    /* input: scatter's root holds every block; output: gather's root and allgather get all */
    int whole = out ? s->op != HB_COLL_SCATTER : s->op == HB_COLL_SCATTER;
    uint64_t base = whole ? 0 : s->noff[x->node];
    for (uint32_t v = 0; v < s->n_nodes; v++) {
        if (!whole && v != x->node)
            continue;
        if (s->bytes[v] == 0)
            continue;
        w = wptr(x, s->loff[v], s->loff[v] + s->bytes[v]);
        if (out)
            memcpy(x->recv_buf + (s->noff[v] - base), w, s->bytes[v]);
        else
            memcpy(w, x->send_buf + (s->noff[v] - base), s->bytes[v]);
        if (!whole)
            break;
    }
}

static int push(hb_coll_exec_t *x, hb_coll_act_t *acts, size_t max, size_t *n,
                const hb_coll_act_t *a)
{
    if (*n >= max) {
        x->more = 1;
        return 0;
    }
    acts[(*n)++] = *a;
    return 1;
}

/* Emit every action that is due, up to max. */
static void drain(hb_coll_exec_t *x, hb_coll_act_t *acts, size_t max, size_t *n)
{
    const hb_coll_sched_t *s = x->s;
    x->more = 0;
    if (x->failed) {
        if (!x->fail_emitted) {
            hb_coll_act_t a = {.kind = HB_COLL_ACT_FAIL, .status = x->status, .to = HB_COLL_NONE};
            if (push(x, acts, max, n, &a))
                x->fail_emitted = 1;
        }
        return;
    }
    if (x->completed)
        return;
    for (; x->post_step < x->nst; x->post_step++) {
        const hb_coll_step_t *st = &x->st[x->post_step];
        if (st->kind != HB_COLL_STEP_RECV)
            continue;
        hb_coll_act_t a = {.kind = HB_COLL_ACT_POST_RECV,
                           .to = st->peer,
                           .step = x->post_step,
                           .nseg = st->nseg,
                           .off = st->off,
                           .len = st->len,
                           .wan = st->wan};
        if (!push(x, acts, max, n, &a))
            return;
    }
    while (x->cur_step < x->nst) {
        const hb_coll_step_t *st = &x->st[x->cur_step];
        if (st->kind != HB_COLL_STEP_SEND) {
            x->cur_step++;
            x->cur_seg = 0;
            continue;
        }
        if (x->cur_seg >= st->nseg) {
            x->cur_step++;
            x->cur_seg = 0;
            continue;
        }
        uint64_t c, d;
        seg_range(s, st, x->cur_seg, &c, &d);
        if (x->rprefix < st->gate || (x->cur_seg + 1 == st->nseg && x->rprefix < st->gate_last) ||
            !ready(x, c, d, st->phase))
            break;
        ptab_t *p = ptab_find(x->speers, x->nspeers, st->peer);
        hb_coll_act_t a = {.kind = HB_COLL_ACT_SEND,
                           .to = st->peer,
                           .seq = p->next,
                           .step = x->cur_step,
                           .seg = x->cur_seg,
                           .nseg = st->nseg,
                           .off = c,
                           .len = d - c,
                           .wan = st->wan,
                           .data = x->direct_in && c >= x->in_lo && d <= x->in_hi ? in_map(x, c, d)
                                                                                  : wptr(x, c, d)};
        if (!push(x, acts, max, n, &a))
            return;
        p->next++;
        x->cur_seg++;
    }
    if (x->n_rdone < x->nrs)
        return;
    if (!x->delivered) {
        int has_out = 0;
        for (uint32_t i = 0; i < x->nst; i++) {
            if (x->st[i].kind == HB_COLL_STEP_COPY_OUT) {
                if (!(x->flags & HB_COLL_EXEC_IN_PLACE))
                    copy_io(x, &x->st[i], 1);
                has_out = 1;
            }
        }
        x->delivered = 1;
        if (has_out) {
            hb_coll_act_t a = {.kind = HB_COLL_ACT_DELIVER, .to = HB_COLL_NONE};
            if (!push(x, acts, max, n, &a)) {
                x->delivered = 2; /* DELIVER still owed */
                return;
            }
        }
    } else if (x->delivered == 2) {
        hb_coll_act_t a = {.kind = HB_COLL_ACT_DELIVER, .to = HB_COLL_NONE};
        if (!push(x, acts, max, n, &a))
            return;
        x->delivered = 1;
    }
    if (x->cur_step < x->nst)
        return;
    hb_coll_act_t a = {.kind = HB_COLL_ACT_COMPLETE, .to = HB_COLL_NONE};
    if (push(x, acts, max, n, &a))
        x->completed = 1;
}

/* HB_COLL_EXEC_OUT_BY_CALLER: are layout bytes [lo, hi), just received, the caller's alone
 * (no SEND step of this node reads them)? */
static int out_by_caller(const hb_coll_exec_t *x, uint64_t lo, uint64_t hi)
{
    if (!(x->flags & HB_COLL_EXEC_OUT_BY_CALLER) || !(x->flags & HB_COLL_EXEC_IN_PLACE) ||
        x->s->op == HB_COLL_ALLTOALL)
        return 0;
    for (uint32_t i = 0; i < x->nst; i++)
        if (x->st[i].kind == HB_COLL_STEP_SEND && x->st[i].off < hi &&
            lo < x->st[i].off + x->st[i].len)
            return 0;
    return 1;
}

/* Handle one arriving segment; state unchanged on error. */
static int on_msg(hb_coll_exec_t *x, const hb_coll_ev_t *ev)
{
    ptab_t *p = ptab_find(x->rpeers, x->nrpeers, ev->from);
    if (p == NULL || ev->seq >= p->count) {
        hb_log_debug("coll: node %u: unexpected segment %u from node %u", x->node, ev->seq,
                     ev->from);
        return HB_ERR_PROTO;
    }
    uint32_t i = x->rbypeer[p->base + ev->seq];
    rseg_t *e = &x->rs[i];
    if (x->rdone[i] || e->off != ev->off || e->len != ev->len) {
        hb_log_debug("coll: node %u: segment %u from node %u duplicate or misplaced", x->node,
                     ev->seq, ev->from);
        return HB_ERR_PROTO;
    }
    if (x->work != NULL && e->len > 0) {
        if (ev->data == NULL)
            return HB_ERR_INVAL;
        if (!out_by_caller(x, e->off, e->off + e->len))
            memcpy(wptr(x, e->off, e->off + e->len), ev->data, e->len);
    }
    x->rdone[i] = 1;
    x->n_rdone++;
    while (x->rprefix < x->nrs && x->rdone[x->rprefix])
        x->rprefix++;
    return 0;
}

/* Does this node still need anything to or from peer? */
static int needs_peer(const hb_coll_exec_t *x, uint32_t peer)
{
    for (uint32_t i = 0; i < x->nrs; i++)
        if (!x->rdone[i] && x->rs[i].peer == peer)
            return 1;
    for (uint32_t i = x->cur_step; i < x->nst; i++)
        if (x->st[i].kind == HB_COLL_STEP_SEND && x->st[i].peer == peer)
            return 1;
    return 0;
}

int hb_coll_exec_step(hb_coll_exec_t *x, const hb_coll_ev_t *ev, hb_coll_act_t *acts, size_t max,
                      size_t *n_p)
{
    if (x == NULL || n_p == NULL || (acts == NULL && max > 0))
        return HB_ERR_INVAL;
    *n_p = 0;
    int rc = 0;
    hb_coll_ev_kind_t kind = ev ? ev->kind : HB_COLL_EV_POLL;
    switch (kind) {
    case HB_COLL_EV_START:
        if (x->started)
            return HB_ERR_INVAL;
        x->started = 1;
        for (uint32_t i = 0; i < x->nst && !x->direct_in; i++)
            if (x->st[i].kind == HB_COLL_STEP_COPY_IN)
                copy_io(x, &x->st[i], 0);
        break;
    case HB_COLL_EV_MSG:
        /* a peer may be ahead of this node: segments are accepted before START */
        if (x->completed || x->failed)
            return HB_ERR_PROTO;
        rc = on_msg(x, ev);
        if (rc != 0)
            return rc;
        break;
    case HB_COLL_EV_PEER_LOST:
        if (!x->completed && !x->failed && needs_peer(x, ev->from)) {
            x->failed = 1;
            x->status = HB_ERR_PEER_LOST;
        }
        break;
    case HB_COLL_EV_POLL:
        break;
    default:
        return HB_ERR_INVAL;
    }
    if (x->started || x->failed)
        drain(x, acts, max, n_p);
    return 0;
}

int hb_coll_exec_pending(const hb_coll_exec_t *x)
{
    return x != NULL && x->more;
}

int hb_coll_exec_describe(const hb_coll_exec_t *x, char *buf, size_t len)
{
    if (x == NULL || buf == NULL || len == 0)
        return HB_ERR_INVAL;
    const char *state = x->failed      ? "failed"
                        : x->completed ? "complete"
                        : x->delivered ? "delivered"
                        : x->started   ? "running"
                                       : "not started";
    int k =
        snprintf(buf, len, "node %u %s %s: %s, received %u/%u segments, send step %u/%u segment %u",
                 x->node, hb_coll_op_name(x->s->op), hb_coll_alg_name(x->s->alg), state, x->n_rdone,
                 x->nrs, x->cur_step, x->nst, x->cur_seg);
    return k < 0 || (size_t)k >= len ? HB_ERR_TRUNCATED : 0;
}

int hb_coll_exec_done(const hb_coll_exec_t *x)
{
    return x != NULL && (x->completed || x->fail_emitted);
}
