/* hbd_fake.c: a fake transport, clock, cron, timers and chassis barrier for hibard's engines. */
#include "hb_config.h"
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <inttypes.h>
#include <pmix_server.h>
#include <stdio.h>

#include "hbd_barrier.h"
#include "hbd_coll.h"
#include "hbd_dmodex.h"
#include "hbd_job.h"
#include "hbd_pmix.h"
#include "hbd_model.h"
#include "hbd_cron.h"
#include "hbd_fake.h"
#include "hbd_fence.h"
#include "hbd_hooks.h"
#include "hbd_net.h"
#include "hibar.h"
#include "hwb.h"

uint64_t fk_now = 1000000000ull;
static fk_cluster_t *fk; /* the cluster the fakes below serve (one at a time) */
static hbd_t *fk_cur;    /* the node whose engine runs (the fake PMIx answers to its loop) */
static int calls_run(void);
static void jobs_free(fk_cluster_t *c);
static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

/* ---- the clock: the engines' hb_time_now_ns() ---- */

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
    if (id != CLOCK_MONOTONIC)
        return __real_clock_gettime(id, ts);
    ts->tv_sec = (time_t)(fk_now / 1000000000ull);
    ts->tv_nsec = (long)(fk_now % 1000000000ull);
    return 0;
}

/* ---- the chassis barrier: a round ends when every node of the chassis arrived ---- */

typedef struct fk_chassis {
    uint32_t arrived[HB_HWB_NSYNC]; /* ports arrived in the current round */
    uint64_t gen[HB_HWB_NSYNC];     /* rounds ended */
} fk_chassis_t;

typedef struct fk_hwb {
    hb_hwb_t base; /* first: the engines hold a hb_hwb_t * */
    fk_chassis_t *ch;
    uint32_t port, mask;
    uint64_t my_gen[HB_HWB_NSYNC]; /* the round this node arrived at, +1; 0: none */
    int fd;
} fk_hwb_t;

static fk_chassis_t fk_ch[FK_MAX];
static fk_hwb_t fk_hwb[FK_MAX];

const char *hb_hwb_name(const hb_hwb_t *h)
{
    (void)h;
    return "fake";
}

int hb_hwb_arrive(hb_hwb_t *hb, uint32_t sync_no, uint32_t mask)
{
    fk_hwb_t *h = (fk_hwb_t *)hb;
    if (sync_no >= HB_HWB_NSYNC)
        return HIBAR_ERR_INVAL;
    h->mask = mask;
    h->my_gen[sync_no] = h->ch->gen[sync_no] + 1;
    h->ch->arrived[sync_no] |= 1u << h->port;
    if ((h->ch->arrived[sync_no] & mask) == mask) {
        h->ch->arrived[sync_no] = 0;
        h->ch->gen[sync_no]++;
    }
    return 0;
}

int hb_hwb_test(hb_hwb_t *hb, uint32_t sync_no)
{
    fk_hwb_t *h = (fk_hwb_t *)hb;
    if (sync_no >= HB_HWB_NSYNC || h->my_gen[sync_no] == 0)
        return HIBAR_ERR_INVAL;
    if (h->ch->gen[sync_no] < h->my_gen[sync_no])
        return HIBAR_ERR_WOULD_BLOCK;
    h->my_gen[sync_no] = 0;
    return 0;
}

int hb_hwb_fd(hb_hwb_t *hb, int *fd_p)
{
    *fd_p = ((fk_hwb_t *)hb)->fd;
    return 0;
}

int hb_hwb_fd_arm(hb_hwb_t *h, int armed)
{
    (void)h;
    (void)armed;
    return 0;
}

int hb_hwb_abandon(hb_hwb_t *h)
{
    (void)h;
    return HIBAR_ERR_UNAVAIL; /* as the scic backend: rounds end by their timeout */
}

/* ---- the transport ---- */

void hbd_net_peer_lost(hbd_t *d, uint32_t node, int status)
{
    (void)hbd_hooks_lost_run(d, node, status);
}

/* The fake daemons never rejoin by themselves: their own judgement is a loss. */
void hbd_net_peer_suspect(hbd_t *d, uint32_t node)
{
    hbd_net_peer_lost(d, node, HIBAR_ERR_PEER_LOST);
}

int hbd_net_send2(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                  const void *p1, uint32_t l1, const void *p2, uint32_t l2)
{
    return hbd_net_send_job(d, to, type, flags, 0, coll_id, p1, l1, p2, l2);
}

int hbd_net_send_job(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint32_t job,
                     uint64_t coll_id, const void *p1, uint32_t l1, const void *p2, uint32_t l2)
{
    hbd_wire_msg_t m = {.type = type,
                        .flags = flags,
                        .job = job,
                        .coll_id = coll_id,
                        .inc = hbd_wire_inc32(d->inc),
                        .src = d->self,
                        .len = l1 + l2};
    if (to >= fk->n || to == d->self)
        return HIBAR_ERR_NOT_FOUND;
    if (fk->links_down && job != 0)
        return HIBAR_ERR_WOULD_BLOCK;
    fk_frame_t *f = calloc(1, sizeof(*f));
    uint8_t *buf = malloc(HBD_WIRE_HDR_LEN + (size_t)l1 + l2);
    if (f == NULL || buf == NULL || hbd_wire_encode_hdr(&m, buf) != 0) {
        free(f);
        free(buf);
        return HIBAR_ERR_NOMEM;
    }
    if (l1 > 0)
        memcpy(buf + HBD_WIRE_HDR_LEN, p1, l1);
    if (l2 > 0)
        memcpy(buf + HBD_WIRE_HDR_LEN + l1, p2, l2);
    f->from = d->self;
    f->to = to;
    f->buf = buf;
    f->len = HBD_WIRE_HDR_LEN + (size_t)l1 + l2;
    *fk->q_tail = f;
    fk->q_tail = &f->next;
    fk->q_len++;
    fk->sent++;
    d->st.tx_frames++;
    return 0;
}

int hbd_net_send(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                 const void *payload, uint32_t len)
{
    return hbd_net_send2(d, to, type, flags, coll_id, payload, len, NULL, 0);
}

int hbd_net_send_coll(hbd_t *d, uint32_t to, uint64_t coll_id, const uint8_t *hdr, const void *data,
                      uint32_t dlen, hbd_zc_t *hold, int bulk)
{
    (void)hold; /* copied: the queue owns its frames */
    (void)bulk; /* one path: the fake transport keeps every sender's order */
    return hbd_net_send2(d, to, HBD_WIRE_COLL, 0, coll_id, hdr, HBD_WIRE_COLL_HDR, data, dlen);
}

hbd_zc_t *hbd_zc_new(void *buf)
{
    hbd_zc_t *z = calloc(1, sizeof(*z));
    if (z != NULL) {
        z->refs = 1;
        z->buf = buf;
    }
    return z;
}

void hbd_zc_put(hbd_zc_t *z)
{
    if (z != NULL && --z->refs == 0) {
        free(z->buf);
        free(z);
    }
}

const struct hb_model_plogp *hbd_model_params(hbd_t *d, struct hb_model_lanes *ml,
                                              const char **src_p)
{
    (void)d;
    (void)ml;
    *src_p = "none (fake)";
    return NULL;
}

int hbd_net_link(hbd_t *d, uint32_t node)
{
    (void)d;
    return node < fk->n ? 0 : HIBAR_ERR_NOT_FOUND;
}

int hbd_net_peer_up(hbd_t *d, uint32_t node)
{
    (void)d;
    return node < fk->n;
}

/* ---- the cron and timers ---- */

void hbd_cron_arm(hbd_t *d)
{
    (void)d; /* fk_advance runs every node's cron */
}

struct hbd_timer {
    hbd_t *d;
    hbd_timer_fn fn;
    void *arg;
    uint64_t due; /* 0: not armed */
    struct hbd_timer *next;
};
static hbd_timer_t *fk_timers;

hbd_timer_t *hbd_timer_new(hbd_t *d, hbd_timer_fn fn, void *arg)
{
    hbd_timer_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->d = d;
    t->fn = fn;
    t->arg = arg;
    t->next = fk_timers;
    fk_timers = t;
    return t;
}

void hbd_timer_arm(hbd_timer_t *t, uint64_t usec, int reset)
{
    if (t == NULL || (t->due != 0 && !reset))
        return;
    t->due = fk_now + usec * 1000 + 1;
}

void hbd_timer_cancel(hbd_timer_t *t)
{
    if (t != NULL)
        t->due = 0;
}

int hbd_timer_pending(const hbd_timer_t *t)
{
    return t != NULL && t->due != 0;
}

void hbd_timer_free(hbd_timer_t *t)
{
    for (hbd_timer_t **pp = &fk_timers; *pp != NULL; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            free(t);
            return;
        }
}

/* ---- the cluster ---- */

static void frame_free(fk_frame_t *f)
{
    free(f->buf);
    free(f);
}

int fk_cluster_init(fk_cluster_t *c, uint32_t n_chassis, uint32_t size, uint32_t fanout,
                    uint32_t barrier_timeout_ms, uint64_t seed)
{
    uint32_t n = n_chassis * size, start[FK_MAX + 1], nodes[FK_MAX];
    char err[256];
    memset(c, 0, sizeof(*c));
    memset(fk_ch, 0, sizeof(fk_ch));
    memset(fk_hwb, 0, sizeof(fk_hwb));
    if (n == 0 || n > FK_MAX || size > 32)
        return -1;
    fk = c;
    rng = seed ? seed : 1;
    c->q_tail = &c->q;
    c->n = n;
    for (uint32_t i = 0; i <= n_chassis; i++)
        start[i] = i * size;
    for (uint32_t i = 0; i < n; i++)
        nodes[i] = i;
    hb_topo_spec_t spec = {.n_nodes = n,
                           .n_chassis = n_chassis,
                           .chassis_start = start,
                           .chassis_nodes = nodes,
                           .fanout = fanout};
    if (hb_topo_build(&spec, &c->topo, err, sizeof(err)) != 0)
        return -1;
    c->cfg.protocol = HB_CFG_PROTO_SCMD;
    c->cfg.poll = HB_CFG_POLL_SLEEP;
    c->cfg.cpu_count = 1;
    c->cfg.barrier_timeout_ms = barrier_timeout_ms;
    c->cfg.heartbeat_interval_ms = 100;
    c->cfg.heartbeat_timeout_ms = 1000;
    c->cfg.n_nodes = n;
    for (uint32_t i = 0; i < n; i++) {
        hbd_t *d = &c->d[i];
        const hb_topo_node_t *tn = &c->topo->nodes[i];
        d->cfg = &c->cfg;
        d->topo = c->topo;
        d->self = i;
        d->epoch = 1;
        d->inc = 1000 + i;
        d->ready = 1;
        d->ctl_fd = d->ranks_lfd = d->hwb_fd = -1;
        d->base = event_base_new();
        fk_hwb[i].ch = &fk_ch[tn->chassis];
        fk_hwb[i].port = tn->port;
        fk_hwb[i].fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        d->hwb = &fk_hwb[i].base;
        if (d->base == NULL || fk_hwb[i].fd < 0 || hbd_fence_init(d) != 0 ||
            hbd_dmodex_init(d) != 0 || hbd_coll_init(d) != 0 || hbd_barrier_init(d) != 0)
            return -1;
    }
    return 0;
}

void fk_cluster_fini(fk_cluster_t *c)
{
    for (uint32_t i = 0; i < c->n; i++) {
        hbd_barrier_fini(&c->d[i]);
        hbd_coll_fini(&c->d[i]);
        hbd_fence_fini(&c->d[i]);
        hbd_dmodex_fini(&c->d[i]);
        if (c->d[i].base != NULL)
            event_base_free(c->d[i].base);
        free(c->d[i].lost_set);
        hb_topo_free(c->d[i].live); /* the tree of the live nodes (hbd_route_update) */
        if (fk_hwb[i].fd >= 0)
            close(fk_hwb[i].fd);
    }
    while (c->q != NULL) {
        fk_frame_t *f = c->q;
        c->q = f->next;
        frame_free(f);
    }
    jobs_free(c);
    hb_topo_free(c->topo);
    fk = NULL;
}

/* The chassis barrier's doorbell: every live node tests its rounds. */
static void doorbells(fk_cluster_t *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (!c->dead[i])
            hbd_barrier_on_hwb(&c->d[i]);
}

/* Hand one encoded frame to node `to`, as hbd_net.c's receive path does. */
static void deliver(fk_cluster_t *c, const fk_frame_t *f)
{
    hbd_t *d = &c->d[f->to];
    hbd_wire_ctx_t ctx = {.n_nodes = c->n, .job_max = UINT32_MAX, .peer = f->from};
    hbd_wire_msg_t m;
    hbd_wire_reason_t why = HBD_WIRE_OK;
    if (hbd_wire_decode(f->buf, f->len, &ctx, &m, &why) != 0) {
        d->st.rx_bad[why]++;
        d->st.rx_bad_total++;
        return;
    }
    d->st.rx_frames++;
    fk_cur = d;
    (void)hbd_deliver(d, &m);
    doorbells(c);
}

int fk_step(fk_cluster_t *c)
{
    if (c->q == NULL)
        return 0;
    /* a random link's oldest frame (ZeroMQ keeps each link's order) */
    uint64_t k = rnd() % c->q_len;
    fk_frame_t **pp = &c->q, *pick = c->q;
    for (uint64_t i = 0; i < k; i++)
        pick = pick->next;
    while ((*pp)->from != pick->from || (*pp)->to != pick->to)
        pp = &(*pp)->next;
    fk_frame_t *f = *pp;
    *pp = f->next;
    if (*pp == NULL) {
        c->q_tail = &c->q;
        for (fk_frame_t *x = c->q; x != NULL; x = x->next)
            c->q_tail = &x->next;
    }
    c->q_len--;
    if (c->dead[f->to] || c->dead[f->from]) {
        c->dropped++;
    } else {
        c->delivered++;
        deliver(c, f);
        if (c->dup_every > 0 && c->delivered % (uint64_t)c->dup_every == 0)
            deliver(c, f);
    }
    frame_free(f);
    return 1;
}

uint32_t fk_run(fk_cluster_t *c, uint32_t max)
{
    uint32_t n = 0;
    for (;;) {
        while (n < max && fk_step(c))
            n++;
        doorbells(c); /* rounds that ended without a frame (one chassis) */
        int ran = calls_run();
        if (n >= max || (c->q == NULL && !ran))
            return n;
    }
}

void fk_kill(fk_cluster_t *c, uint32_t node)
{
    c->dead[node] = 1;
}

void fk_lose(fk_cluster_t *c, uint32_t node)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (!c->dead[i] && i != node)
            hbd_net_peer_lost(&c->d[i], node, HIBAR_ERR_PEER_LOST);
}

void fk_advance(fk_cluster_t *c, uint64_t ns)
{
    fk_now += ns;
    for (int again = 1; again;) {
        again = 0;
        for (hbd_timer_t *t = fk_timers; t != NULL; t = t->next)
            if (t->due != 0 && t->due <= fk_now && !c->dead[t->d->self]) {
                t->due = 0;
                t->fn(t->d, t->arg);
                again = 1; /* the list may have changed */
                break;
            }
    }
    for (uint32_t i = 0; i < c->n; i++)
        for (uint32_t k = 0; !c->dead[i] && k < c->d[i].n_cron; k++)
            (void)c->d[i].cron_fns[k](&c->d[i], fk_now);
}

/* ---- a fake PMIx step: answers queued for the loop of their node ---- */

typedef struct fk_call {
    hbd_t *d;
    hbd_pmix_fetch_fn fetched; /* a hbd_pmix_fetch's answer, or NULL */
    hbd_pmix_probe_fn probed;  /* a hbd_pmix_probe's answer */
    uint32_t rank;
    void *arg;
    struct fk_call *next;
} fk_call_t;

static fk_call_t *fk_calls, **fk_calls_tail = &fk_calls;
static uint8_t fk_committed[FK_MAX * 4];
static hbd_job_t *fk_jobs[FK_MAX];

static void call_push(fk_call_t *x)
{
    x->d = fk_cur;
    *fk_calls_tail = x;
    fk_calls_tail = &x->next;
}

/* Run what is queued (the steps answering, on the loop): 1 if anything ran. */
static int calls_run(void)
{
    int ran = 0;
    while (fk_calls != NULL) {
        fk_call_t *x = fk_calls;
        fk_calls = x->next;
        if (fk_calls == NULL)
            fk_calls_tail = &fk_calls;
        fk_cur = x->d;
        if (fk->dead[x->d->self]) {
            /* a dead daemon answers nothing */
        } else if (x->fetched != NULL) {
            char blob[64];
            size_t n = fk_blob(x->rank, blob, sizeof(blob));
            x->fetched(x->d, x->arg, PMIX_SUCCESS, blob, n);
        } else {
            x->probed(x->d, x->arg, x->rank < sizeof(fk_committed) && fk_committed[x->rank]);
        }
        free(x);
        ran = 1;
    }
    return ran;
}

size_t fk_blob(uint32_t rank, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "blob %" PRIu32, rank);
    return n > 0 ? (size_t)n : 0;
}

void fk_on(fk_cluster_t *c, uint32_t node)
{
    fk_cur = &c->d[node];
}

void fk_key_commit(uint32_t rank)
{
    if (rank < sizeof(fk_committed))
        fk_committed[rank] = 1;
}

void fk_job_add(fk_cluster_t *c, uint32_t n_ranks)
{
    for (uint32_t i = 0; i < c->n; i++) {
        hbd_job_t *j = NULL;
        hbd_job_spec_t *sp = calloc(1, sizeof(*sp));
        if (sp == NULL || (sp->map = calloc(n_ranks, sizeof(uint32_t))) == NULL ||
            hbd_job_open(&c->d[i], 1, &j) != 0) /* its namespace: FK_NSPACE */
            abort();
        sp->id = 1;
        sp->size = n_ranks;
        for (uint32_t r = 0; r < n_ranks; r++)
            sp->map[r] = r % c->n;
        j->spec = sp;
        j->launched = 1; /* as the launcher's part */
        fk_jobs[i] = j;
    }
}

static void jobs_free(fk_cluster_t *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (fk_jobs[i] != NULL) {
            free(fk_jobs[i]->spec->map);
            free(fk_jobs[i]->spec);
            fk_jobs[i]->spec = NULL;
            fk_jobs[i]->launched = 0;
            hbd_job_release(fk_jobs[i]);
            fk_jobs[i] = NULL;
        }
    while (fk_calls != NULL) {
        fk_call_t *x = fk_calls;
        fk_calls = x->next;
        free(x);
    }
    fk_calls_tail = &fk_calls;
    memset(fk_committed, 0, sizeof(fk_committed));
}

int hbd_pmix_fetch(hbd_job_t *j, uint32_t rank, hbd_pmix_fetch_fn fn, void *arg)
{
    (void)j;
    fk_call_t *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return HIBAR_ERR_NOMEM;
    x->fetched = fn;
    x->rank = rank;
    x->arg = arg;
    call_push(x);
    return 0;
}

int hbd_pmix_probe(hbd_job_t *j, uint32_t rank, const char *key, hbd_pmix_probe_fn fn, void *arg)
{
    (void)j;
    (void)key;
    fk_call_t *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return HIBAR_ERR_NOMEM;
    x->probed = fn;
    x->rank = rank;
    x->arg = arg;
    call_push(x);
    return 0;
}

void hbd_pmix_on_dmodex(hbd_t *d, hbd_pmix_dmodex_fn fn)
{
    (void)d;
    (void)fn; /* the tests call hbd_dmodex_request themselves */
}
