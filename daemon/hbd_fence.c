/* hbd_fence.c: PMIx fence with data across nodes: blobs gathered up the chassis tree, their
 * concatenation released down. */
#include "hb_config.h"
#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_time.h"
#include "hbd_pmix.h"
#include "hibar.h"

/*
 * The data tree is the chassis tree with the chassis opened up: a port's parent is its
 * chassis' Center, a Center's parent is the node of the parent chassis it links to (none for
 * the root chassis' Center, the root). Children: a Center's ports, and the Centers of the
 * chassis a node links down to. Every edge is a link hibard already has (chassis mates and
 * tree links are its neighbours).
 *
 * Up: a node sends its parent the concatenation of its own blob and of its children's, once
 * it has them all. Down: the root has every blob; the concatenation goes down every edge
 * unchanged. Each blob crosses each edge at most once per direction. Messages are
 * HBD_WIRE_FENCE frames (job 0, coll_id = the fence's id) whose payload starts with
 * direction (1 up, 2 down), 3 zero bytes, the total length and this chunk's offset (u32 le
 * each), then up to HBD_FENCE_CHUNK bytes; a link delivers its frames in order, so the
 * chunks of one transfer arrive one after the other. A fence that collects data uses this
 * path on every node (the PMIX_COLLECT_DATA flag is the same on all of them), a fence
 * without data the barrier engine.
 */
#define HBD_FENCE_HDR 12
#define HBD_FENCE_CHUNK (HBD_WIRE_MAX_PAYLOAD - HBD_FENCE_HDR)
#define HBD_FENCE_UP 1
#define HBD_FENCE_DOWN 2
#define HBD_FENCE_MAX_LEN (256u << 20)

typedef struct xfer {
    uint32_t from;
    uint8_t *buf;
    uint32_t total, got;
    int done;
} xfer_t;

typedef struct hbd_fence {
    uint64_t coll;
    int arrived;
    uint8_t *mine;
    size_t n_mine;
    xfer_t *kids; /* [n_kids] */
    uint32_t n_kids, kids_done;
    xfer_t down;
    int sent_up;
    uint64_t t0;
    hbd_fence_cb_t cb;
    void *arg;
    struct hbd_fence *next;
} hbd_fence_t;

static hbd_fence_t *fences;
static struct event *ev_check;

static void check_arm(hbd_t *d);

static uint32_t data_parent(const hbd_t *d, uint32_t n)
{
    const hb_topo_node_t *tn = &d->topo->nodes[n];
    if (tn->port != 0)
        return d->topo->chassis[tn->chassis].nodes[0];
    return tn->parent; /* HB_TOPO_NONE at the root */
}

/* Children of node n into out (capacity: chassis size + child chassis). */
static uint32_t data_children(const hbd_t *d, uint32_t n, uint32_t *out)
{
    const hb_topo_node_t *tn = &d->topo->nodes[n];
    const hb_topo_chassis_t *c = &d->topo->chassis[tn->chassis];
    uint32_t k = 0;
    if (tn->port == 0)
        for (uint32_t i = 1; i < c->n_nodes; i++)
            out[k++] = c->nodes[i];
    for (uint32_t i = 0; i < tn->n_children; i++)
        out[k++] = d->topo->chassis[tn->children[i]].nodes[0];
    return k;
}

static void fence_free(hbd_fence_t *f)
{
    for (hbd_fence_t **pp = &fences; *pp != NULL; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    for (uint32_t i = 0; i < f->n_kids; i++)
        free(f->kids[i].buf);
    free(f->kids);
    free(f->mine);
    free(f->down.buf);
    free(f);
}

static hbd_fence_t *fence_get(hbd_t *d, uint64_t coll)
{
    for (hbd_fence_t *f = fences; f != NULL; f = f->next)
        if (f->coll == coll)
            return f;
    hbd_fence_t *f = calloc(1, sizeof(*f));
    const hb_topo_node_t *tn = &d->topo->nodes[d->self];
    uint32_t cap = d->topo->chassis[tn->chassis].n_nodes + tn->n_children;
    uint32_t *ids = calloc(cap, sizeof(uint32_t));
    if (f == NULL || ids == NULL || (f->kids = calloc(cap ? cap : 1, sizeof(xfer_t))) == NULL) {
        free(f);
        free(ids);
        return NULL;
    }
    f->coll = coll;
    f->n_kids = data_children(d, d->self, ids);
    for (uint32_t i = 0; i < f->n_kids; i++)
        f->kids[i].from = ids[i];
    free(ids);
    f->down.from = data_parent(d, d->self);
    f->t0 = hb_time_now_ns();
    f->next = fences;
    fences = f;
    check_arm(d); /* also for state made by early messages of a fence that never comes */
    return f;
}

/* Send len bytes to node `to` as chunks. */
static int send_all(hbd_t *d, uint32_t to, uint64_t coll, int dir, const uint8_t *data, size_t len)
{
    uint8_t pl[HBD_WIRE_MAX_PAYLOAD];
    size_t off = 0;
    do {
        size_t n = len - off > HBD_FENCE_CHUNK ? HBD_FENCE_CHUNK : len - off;
        memset(pl, 0, HBD_FENCE_HDR);
        pl[0] = (uint8_t)dir;
        hbd_wire_put32(pl + 4, (uint32_t)len);
        hbd_wire_put32(pl + 8, (uint32_t)off);
        if (n > 0)
            memcpy(pl + HBD_FENCE_HDR, data + off, n);
        int rc = hbd_net_send(d, to, HBD_WIRE_FENCE, 0, coll, pl, (uint32_t)(HBD_FENCE_HDR + n));
        if (rc != 0)
            return rc;
        off += n;
    } while (off < len);
    return 0;
}

static void finish(hbd_t *d, hbd_fence_t *f, int status)
{
    hbd_fence_cb_t cb = f->cb;
    void *arg = f->arg;
    uint8_t *data = NULL;
    size_t len = 0;
    if (status == 0) {
        data = f->down.buf;
        len = f->down.total;
        f->down.buf = NULL;
    }
    fence_free(f);
    if (cb != NULL)
        cb(d, status, data, len, arg);
    else
        free(data);
}

/* Everything below and here arrived: go up, or (root) start the release. */
static void progress(hbd_t *d, hbd_fence_t *f)
{
    if (!f->arrived || f->kids_done < f->n_kids || f->sent_up)
        return;
    size_t total = f->n_mine;
    for (uint32_t i = 0; i < f->n_kids; i++)
        total += f->kids[i].total;
    if (total > HBD_FENCE_MAX_LEN) {
        finish(d, f, HIBAR_ERR_TRUNCATED);
        return;
    }
    uint8_t *all = malloc(total ? total : 1);
    if (all == NULL) {
        finish(d, f, HIBAR_ERR_NOMEM);
        return;
    }
    size_t off = 0;
    if (f->n_mine > 0)
        memcpy(all, f->mine, f->n_mine);
    off = f->n_mine;
    for (uint32_t i = 0; i < f->n_kids; i++) {
        if (f->kids[i].total > 0)
            memcpy(all + off, f->kids[i].buf, f->kids[i].total);
        off += f->kids[i].total;
        free(f->kids[i].buf);
        f->kids[i].buf = NULL;
    }
    f->sent_up = 1;
    if (f->down.from != HB_TOPO_NONE) {
        int rc = send_all(d, f->down.from, f->coll, HBD_FENCE_UP, all, total);
        free(all);
        if (rc != 0)
            finish(d, f, rc);
        return;
    }
    /* root: release */
    f->down.buf = all;
    f->down.total = (uint32_t)total;
    f->down.done = 1;
    for (uint32_t i = 0; i < f->n_kids; i++) {
        int rc = send_all(d, f->kids[i].from, f->coll, HBD_FENCE_DOWN, all, total);
        if (rc != 0) {
            finish(d, f, rc);
            return;
        }
    }
    finish(d, f, 0);
}

static void check_cb(evutil_socket_t fd, short what, void *arg);

static void check_arm(hbd_t *d)
{
    static const struct timeval every = {0, 200000};
    if (ev_check == NULL)
        ev_check = evtimer_new(d->base, check_cb, d);
    if (ev_check != NULL && !evtimer_pending(ev_check, NULL))
        evtimer_add(ev_check, &every);
}

/* Fences fail when the cluster lost a node, or after the barrier timeout. */
static void check_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    uint64_t now = hb_time_now_ns(), to = (uint64_t)d->cfg->barrier_timeout_ms * 1000000ull;
    (void)fd;
    (void)what;
    for (hbd_fence_t *f = fences, *next; f != NULL; f = next) {
        next = f->next;
        if (d->lost)
            finish(d, f, HIBAR_ERR_PEER_LOST);
        else if (to > 0 && now - f->t0 > to)
            finish(d, f, HIBAR_ERR_TIMEOUT);
    }
    if (fences != NULL)
        check_arm(d);
}

int hbd_fence_start(hbd_t *d, uint64_t coll, const void *data, size_t len, hbd_fence_cb_t cb,
                    void *arg)
{
    if (d->lost)
        return HIBAR_ERR_PEER_LOST;
    if (!d->ready)
        return HIBAR_ERR_NOT_INIT;
    hbd_fence_t *f = fence_get(d, coll);
    if (f == NULL)
        return HIBAR_ERR_NOMEM;
    if (f->arrived)
        return HIBAR_ERR_BUSY;
    if (len > 0 && (f->mine = malloc(len)) == NULL)
        return HIBAR_ERR_NOMEM;
    if (len > 0)
        memcpy(f->mine, data, len);
    f->n_mine = len;
    f->arrived = 1;
    f->cb = cb;
    f->arg = arg;
    f->t0 = hb_time_now_ns();
    check_arm(d);
    progress(d, f);
    return 0;
}

void hbd_fence_on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    if (m->len < HBD_FENCE_HDR)
        return;
    int dir = m->payload[0];
    uint32_t total = hbd_wire_get32(m->payload + 4), off = hbd_wire_get32(m->payload + 8);
    uint32_t n = m->len - HBD_FENCE_HDR;
    hbd_fence_t *f = fence_get(d, m->coll_id);
    if (f == NULL)
        return;
    xfer_t *x = NULL;
    if (dir == HBD_FENCE_DOWN && m->src == f->down.from) {
        x = &f->down;
    } else if (dir == HBD_FENCE_UP) {
        for (uint32_t i = 0; i < f->n_kids; i++)
            if (f->kids[i].from == m->src)
                x = &f->kids[i];
    }
    /* checked, never trusted: a wrong sender, size or order is dropped and logged once */
    if (x == NULL || x->done || total > HBD_FENCE_MAX_LEN || off != x->got ||
        (uint64_t)off + n > total || (off == 0) != (x->buf == NULL && x->got == 0)) {
        static int warned;
        if (!warned++)
            hb_log_warn("fence %" PRIu64 ": unexpected data frame from node %" PRIu32 " dropped",
                        m->coll_id, m->src);
        return;
    }
    if (off == 0) {
        x->total = total;
        x->buf = malloc(total ? total : 1);
        if (x->buf == NULL) {
            finish(d, f, HIBAR_ERR_NOMEM);
            return;
        }
    } else if (total != x->total) {
        return;
    }
    if (n > 0)
        memcpy(x->buf + off, m->payload + HBD_FENCE_HDR, n);
    x->got += n;
    if (x->got < x->total)
        return;
    x->done = 1;
    if (x != &f->down) {
        f->kids_done++;
        progress(d, f);
        return;
    }
    /* the release: pass it on, then complete here (a node that has not arrived yet cannot
     * receive it: the release needs its contribution) */
    for (uint32_t i = 0; i < f->n_kids; i++) {
        int rc = send_all(d, f->kids[i].from, f->coll, HBD_FENCE_DOWN, f->down.buf, f->down.total);
        if (rc != 0) {
            finish(d, f, rc);
            return;
        }
    }
    finish(d, f, 0);
}

void hbd_fence_fini(hbd_t *d)
{
    while (fences != NULL)
        finish(d, fences, HIBAR_ERR_UNAVAIL);
    if (ev_check != NULL)
        event_free(ev_check);
    ev_check = NULL;
}
