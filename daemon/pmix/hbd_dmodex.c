/* hbd_dmodex.c: PMIx direct modex across daemons: a request goes to the daemon hosting the process,
 * which serves it through PMIx_server_dmodex_request. */
#include "hb_config.h"
#include <event2/event.h>
#include <inttypes.h>
#include <pmix.h>
#include <pmix_server.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_time.h"
#include "hbd_hooks.h"
#include "hbd_cron.h"
#include "hbd_dmodex.h"
#include "hbd_route.h"
#include "hbd_job.h"
#include "hbd_net.h"
#include "hbd_pmix.h"
#include "hb_status.h"

/*
 * Requester (the direct_modex upcall, on the loop): the job's map names the node hosting the
 * rank; an unknown namespace or a rank beyond the job is PMIX_ERR_NOT_FOUND at once. The
 * request (HBD_WIRE_DMODEX, kind REQ: id, rank, timeout, origin, destination, namespace) is
 * forwarded hop by hop along the chassis data tree (hbd_fence.c's: every edge is a link the
 * daemons already have; a direct link could only be opened by the higher-numbered side), the
 * reply comes back the same way. Frames that cannot go yet (full queue) wait in a small queue
 * retried every millisecond. The request ends with the reply, with
 * PMIX_ERR_TIMEOUT after its PMIX_TIMEOUT (else the cluster's barrier_timeout_ms), or with
 * PMIX_ERR_COMM_FAILURE once that node is lost.
 *
 * Server: the job's PMIx step asks its libpmix (PMIx_server_dmodex_request, hbd_pmix_fetch),
 * which answers once the process has committed its data, whatever it holds then. The answer
 * comes back to the loop as a message of the step, then is sent on (kind REPLY: id, status,
 * blob). A blob
 * larger than HBD_WIRE_DMODEX_MAX_DATA (32 KiB) is answered PMIX_ERR_NOT_SUPPORTED (logged).
 *
 * PMIX_REQUIRED_KEY (libpmix names the key its client's PMIx_Get asked for): the request
 * carries it (keylen bytes after the namespace). Data committed before the key was put would
 * be answered at once and the requester's PMIx_Get would end in PMIX_ERR_NOT_FOUND, so the
 * server first looks the key up in its own store (hbd_pmix_probe: the step's PMIx_Get_nb with
 * PMIX_OPTIONAL, the server holding what its clients committed; the answer comes back as a
 * message, the loop never waits for the step). If it is not
 * there yet the request waits: libpmix tells the host nothing when a client commits, so the
 * key is looked up again at growing intervals (1, 2, 4 ... 32 ms) until it is there (then
 * served as above), until the request's timeout
 * (PMIX_TIMEOUT, else the cluster's barrier_timeout_ms: PMIX_ERR_TIMEOUT; the requester's own
 * timer ends it at the same time) or until the job is gone (PMIX_ERR_NOT_FOUND), as PRRTE
 * does. Without a key the request is served at once, as before.
 */
#define DM_WAIT_MAX_MS 32
typedef struct dm_req {
    uint32_t id, node;
    uint64_t t0, timeout_ns;
    pmix_modex_cbfunc_t cb;
    void *cbdata;
    struct dm_req *next;
} dm_req_t;

typedef struct dm_out {
    uint32_t to, len;
    uint64_t t0;
    struct dm_out *next;
    uint8_t pl[]; /* payload */
} dm_out_t;

/* A request served here: what to send back once PMIx answered. */
typedef struct dm_srv {
    uint32_t from, id, rank;
    uint8_t nslen;
    char nspace[256];
    char key[HBD_WIRE_DMODEX_MAX_KEY + 1]; /* PMIX_REQUIRED_KEY, "" if none */
    uint64_t deadline_ns;                  /* waiting for the key: give up then (0: never) */
    uint64_t next_ns;                      /* ... look again then */
    uint32_t ivl_ms;
    int probing; /* a look-up of the key is with the job's step (s must live until it ends) */
    int found;   /* ... and it found the key */
    int dead;    /* answered, or dropped, while probing: the probe's end frees s */
    pmix_status_t st;
    char *data;
    size_t len;
    struct dm_srv *next; /* waiting for its key */
} dm_srv_t;

/* The module's state in the daemon context (d->dmodex). */
struct hbd_dmodex {
    dm_req_t *reqs;
    dm_out_t *outs;
    dm_srv_t *waiting;
    uint32_t next_id;
    hbd_timer_t *tick, *wait;
    uint8_t pl[HBD_WIRE_DMODEX_MAX_PAYLOAD]; /* a reply being built (send_reply) */
};

static void tick_arm(hbd_t *d, int fast);

static void release(void *cbdata)
{
    free(cbdata);
}

static void req_end(hbd_t *d, dm_req_t *r, pmix_status_t st, const uint8_t *data, size_t len)
{
    struct hbd_dmodex *D = d->dmodex;
    for (dm_req_t **pp = &D->reqs; *pp != NULL; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    char *copy = NULL;
    if (st == PMIX_SUCCESS && len > 0) {
        copy = malloc(len);
        if (copy == NULL)
            st = PMIX_ERR_NOMEM;
        else
            memcpy(copy, data, len);
    }
    if (r->cb != NULL)
        r->cb(st, copy, copy ? len : 0, r->cbdata, copy ? release : NULL, copy);
    else
        free(copy);
    free(r);
}

/* Send now, or queue (behind what already waits for that node). 0 or an error. */
static int send_pl(hbd_t *d, uint32_t dest, const uint8_t *pl, uint32_t len)
{
    struct hbd_dmodex *D = d->dmodex;
    uint32_t to = hbd_route_next_hop(d, dest);
    if (to == HB_TOPO_NONE)
        return HB_ERR_NOT_FOUND;
    int queued = 0;
    for (dm_out_t *o = D->outs; o != NULL; o = o->next)
        queued |= o->to == to;
    int rc = queued ? HB_ERR_WOULD_BLOCK : hbd_net_send(d, to, HBD_WIRE_DMODEX, 0, 0, pl, len);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    dm_out_t *o = malloc(sizeof(*o) + len), **pp = &D->outs;
    if (o == NULL)
        return HB_ERR_NOMEM;
    o->to = to;
    o->len = len;
    o->t0 = hb_time_now_ns();
    o->next = NULL;
    memcpy(o->pl, pl, len);
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = o;
    tick_arm(d, 1);
    return 0;
}

static void tick_cb(hbd_t *d, void *arg)
{
    struct hbd_dmodex *D = d->dmodex;
    uint64_t now = hb_time_now_ns(), def = (uint64_t)d->cfg->barrier_timeout_ms * 1000000ull;
    (void)arg;
    uint32_t blocked[16], nb = 0;
    for (dm_out_t **pp = &D->outs; *pp != NULL;) {
        dm_out_t *o = *pp;
        int skip = 0;
        for (uint32_t i = 0; i < nb; i++)
            skip |= blocked[i] == o->to;
        int rc = skip ? HB_ERR_WOULD_BLOCK
                      : hbd_net_send(d, o->to, HBD_WIRE_DMODEX, 0, 0, o->pl, o->len);
        if (rc == HB_ERR_WOULD_BLOCK && (def == 0 || now - o->t0 <= def)) {
            if (!skip && nb < 16)
                blocked[nb++] = o->to;
            pp = &o->next;
            continue;
        }
        if (rc != 0)
            hb_log_warn("direct modex: frame for node %" PRIu32 " dropped: %s", o->to,
                        hb_status_str(rc == HB_ERR_WOULD_BLOCK ? HB_ERR_TIMEOUT : rc));
        *pp = o->next;
        free(o);
    }
    for (dm_req_t *r = D->reqs, *next; r != NULL; r = next) {
        next = r->next;
        uint64_t to = r->timeout_ns ? r->timeout_ns : def;
        if (hbd_node_lost(d, r->node))
            req_end(d, r, PMIX_ERR_COMM_FAILURE, NULL, 0);
        else if (to > 0 && now - r->t0 > to)
            req_end(d, r, PMIX_ERR_TIMEOUT, NULL, 0);
    }
    if (D->outs != NULL)
        tick_arm(d, 1);
    else if (D->reqs != NULL)
        tick_arm(d, 0);
}

static void tick_arm(hbd_t *d, int fast)
{
    struct hbd_dmodex *D = d->dmodex;
    /* queued work: in 1 ms, even if armed for later; else in 100 ms unless armed */
    hbd_timer_arm(D->tick, fast ? 1000 : 100000, fast);
}

static void on_reply(hbd_t *d, uint32_t from, const hbd_wire_dmodex_t *x, const uint8_t *data,
                     size_t len)
{
    struct hbd_dmodex *D = d->dmodex;
    for (dm_req_t *r = D->reqs; r != NULL; r = r->next)
        if (r->id == x->id && r->node == from) {
            req_end(d, r, x->arg, data, len);
            return;
        }
    /* late (timed out) or not ours: dropped */
}

static void send_reply(hbd_t *d, const dm_srv_t *s)
{
    struct hbd_dmodex *D = d->dmodex;
    uint8_t *pl = D->pl;
    pmix_status_t st = s->st;
    size_t len = st == PMIX_SUCCESS ? s->len : 0;
    if (len > HBD_WIRE_DMODEX_MAX_DATA) {
        hb_log_warn("direct modex of %s rank %" PRIu32 ": %zu bytes, more than a reply carries",
                    s->nspace, s->rank, len);
        st = PMIX_ERR_NOT_SUPPORTED;
        len = 0;
    }
    if (st > 0)
        st = PMIX_ERROR;
    hbd_wire_dmodex_t x = {.kind = HBD_WIRE_DMODEX_REPLY,
                           .nslen = s->nslen,
                           .id = s->id,
                           .rank = s->rank,
                           .arg = st,
                           .origin = d->self,
                           .dest = s->from};
    hbd_wire_dmodex_pack(&x, pl);
    memcpy(pl + HBD_WIRE_DMODEX_HDR, s->nspace, s->nslen);
    if (len > 0)
        memcpy(pl + HBD_WIRE_DMODEX_HDR + s->nslen, s->data, len);
    if (s->from == d->self) {
        on_reply(d, d->self, &x, (const uint8_t *)s->data, len);
        return;
    }
    int rc = send_pl(d, s->from, pl, (uint32_t)(HBD_WIRE_DMODEX_HDR + s->nslen + len));
    if (rc != 0)
        hb_log_warn("direct modex: reply to node %" PRIu32 " not sent: %s", s->from,
                    hb_status_str(rc));
}

static void served_on_loop(hbd_t *d, void *arg)
{
    dm_srv_t *s = arg;
    send_reply(d, s);
    free(s->data);
    free(s);
}

/* The step's answer: the process' data. */
static void served(hbd_t *d, void *arg, int status, const char *data, size_t sz)
{
    dm_srv_t *s = arg;
    s->st = status;
    if (status == PMIX_SUCCESS && sz > 0) {
        s->data = malloc(sz);
        if (s->data == NULL)
            s->st = PMIX_ERR_NOMEM;
        else
            memcpy(s->data, data, sz);
        s->len = sz;
    }
    served_on_loop(d, s);
}

/* Is s's process (hosted here) still a rank of a job of this node? */
static int srv_known(const hbd_t *d, const dm_srv_t *s)
{
    hbd_job_t *j = strlen(s->nspace) == s->nslen ? hbd_job_find(d, s->nspace) : NULL;
    return j != NULL && s->rank < j->spec->size && j->spec->map[s->rank] == d->self;
}

static void probe_done(hbd_t *d, void *arg, int found);
static void wait_arm(hbd_t *d);

/* Has s's process committed its required key? Asked of its job's PMIx step (its server's own
 * store, PMIX_OPTIONAL: never the host). The answer comes to probe_done. */
static void probe(hbd_t *d, dm_srv_t *s)
{
    hbd_job_t *j = hbd_job_find(d, s->nspace);
    s->probing = 1;
    s->found = 0;
    if (j == NULL || hbd_pmix_probe(j, s->rank, s->key, probe_done, s) != 0)
        s->probing = 0; /* refused: no answer comes; a miss, looked at again later */
}

/* Ask the job's PMIx step for the process' data; the answer comes through served(). */
static void srv_fetch(hbd_t *d, dm_srv_t *s)
{
    hbd_job_t *j = hbd_job_find(d, s->nspace);
    int rc = j != NULL ? hbd_pmix_fetch(j, s->rank, served, s) : HB_ERR_NOT_FOUND;
    if (rc != 0) {
        s->st = rc == HB_ERR_NOMEM ? PMIX_ERR_NOMEM : PMIX_ERR_NOT_FOUND;
        served_on_loop(d, s);
    }
}

/* Leave the waiting list. */
static void unwait(hbd_t *d, dm_srv_t *s)
{
    struct hbd_dmodex *D = d->dmodex;
    for (dm_srv_t **pp = &D->waiting; *pp != NULL; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    s->next = NULL;
}

/* Answer s with an error; while its look-up is on PMIx's thread, s lives on until it ends. */
static void srv_fail(hbd_t *d, dm_srv_t *s, pmix_status_t st)
{
    s->st = st;
    if (!s->probing) {
        served_on_loop(d, s);
        return;
    }
    send_reply(d, s);
    s->dead = 1;
}

/* A look-up of s's key ended: serve s if its key is there; else it waits on. */
static void probe_done(hbd_t *d, void *arg, int found)
{
    dm_srv_t *s = arg;
    s->probing = 0;
    s->found = found;
    if (s->dead) {
        free(s->data);
        free(s);
        return;
    }
    if (s->found) {
        unwait(d, s);
        hb_log_debug("direct modex of %s rank %" PRIu32 ": key %s is there", s->nspace, s->rank,
                     s->key);
        srv_fetch(d, s);
        return;
    }
    wait_arm(d);
}

/* The requests waiting for their key: look it up for those due (probe_done serves them),
 * end those past their deadline or whose job is gone, look again later at the others. */
static void wait_cb(hbd_t *d, void *arg)
{
    struct hbd_dmodex *D = d->dmodex;
    uint64_t now = hb_time_now_ns();
    (void)arg;
    for (dm_srv_t **pp = &D->waiting; *pp != NULL;) {
        dm_srv_t *s = *pp;
        int known = srv_known(d, s);
        if (known && (s->deadline_ns == 0 || now < s->deadline_ns)) {
            if (now >= s->next_ns && !s->probing) {
                s->ivl_ms = s->ivl_ms * 2 > DM_WAIT_MAX_MS ? DM_WAIT_MAX_MS : s->ivl_ms * 2;
                s->next_ns = now + (uint64_t)s->ivl_ms * 1000000ull;
                probe(d, s); /* may answer (probe_done) only from the loop: s stays listed */
            }
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        s->next = NULL;
        srv_fail(d, s, known ? PMIX_ERR_TIMEOUT : PMIX_ERR_NOT_FOUND);
    }
    wait_arm(d);
}

static void wait_arm(hbd_t *d)
{
    struct hbd_dmodex *D = d->dmodex;
    if (D->waiting == NULL)
        return;
    uint64_t now = hb_time_now_ns(), first = UINT64_MAX;
    for (dm_srv_t *s = D->waiting; s != NULL; s = s->next) {
        first = s->next_ns < first ? s->next_ns : first;
        if (s->deadline_ns != 0 && s->deadline_ns < first)
            first = s->deadline_ns;
    }
    uint64_t dt = first > now ? first - now : 0;
    hbd_timer_arm(D->wait, dt / 1000, 1);
}

static void serve(hbd_t *d, uint32_t from, const hbd_wire_dmodex_t *x, const uint8_t *ns)
{
    struct hbd_dmodex *D = d->dmodex;
    dm_srv_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return;
    s->from = from;
    s->id = x->id;
    s->rank = x->rank;
    s->nslen = x->nslen;
    memcpy(s->nspace, ns, x->nslen);
    s->nspace[x->nslen] = '\0';
    if (x->keylen > 0) /* checked by hbd_wire_decode (or ours): <= HBD_WIRE_DMODEX_MAX_KEY */
        memcpy(s->key, ns + x->nslen, x->keylen);
    s->key[x->keylen] = '\0';
    if (!srv_known(d, s)) {
        s->st = PMIX_ERR_NOT_FOUND;
        served_on_loop(d, s);
        return;
    }
    if (s->key[0] == '\0' || strlen(s->key) != x->keylen) {
        srv_fetch(d, s);
        return;
    }
    /* look the key up now; while it is not there the request waits (wait_cb) */
    uint64_t now = hb_time_now_ns();
    uint64_t to_ms = x->arg > 0 ? (uint64_t)x->arg : d->cfg->barrier_timeout_ms;
    s->deadline_ns = to_ms > 0 ? now + to_ms * 1000000ull : 0;
    s->ivl_ms = 1;
    s->next_ns = now + 1000000ull;
    s->next = D->waiting;
    D->waiting = s;
    hb_log_debug("direct modex of %s rank %" PRIu32 " for node %" PRIu32 ": looking for key %s",
                 s->nspace, s->rank, from, s->key);
    probe(d, s);
    wait_arm(d);
}

void hbd_dmodex_request(hbd_t *d, const void *procv, const char *key, uint32_t timeout_ms,
                        hbd_fn_t cbfunc, void *cbdata)
{
    struct hbd_dmodex *D = d->dmodex;
    const pmix_proc_t *proc = procv;
    pmix_modex_cbfunc_t cb = (pmix_modex_cbfunc_t)cbfunc;
    hbd_job_t *j = hbd_job_find(d, proc->nspace);
    size_t nslen = strnlen(proc->nspace, sizeof(proc->nspace));
    size_t keylen = key != NULL ? strnlen(key, HBD_WIRE_DMODEX_MAX_KEY) : 0;
    if (j == NULL || proc->rank >= j->spec->size || nslen == 0 || nslen > 255) {
        if (cb != NULL)
            cb(PMIX_ERR_NOT_FOUND, NULL, 0, cbdata, NULL, NULL);
        return;
    }
    dm_req_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        if (cb != NULL)
            cb(PMIX_ERR_NOMEM, NULL, 0, cbdata, NULL, NULL);
        return;
    }
    r->id = D->next_id++;
    r->node = j->spec->map[proc->rank];
    r->t0 = hb_time_now_ns();
    r->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
    r->cb = cb;
    r->cbdata = cbdata;
    r->next = D->reqs;
    D->reqs = r;
    hbd_wire_dmodex_t x = {.kind = HBD_WIRE_DMODEX_REQ,
                           .nslen = (uint8_t)nslen,
                           .keylen = (uint16_t)keylen,
                           .id = r->id,
                           .rank = proc->rank,
                           .origin = d->self,
                           .dest = r->node,
                           .arg = (int32_t)(timeout_ms > INT32_MAX ? INT32_MAX : timeout_ms)};
    uint8_t pl[HBD_WIRE_DMODEX_HDR + 255 + HBD_WIRE_DMODEX_MAX_KEY];
    hbd_wire_dmodex_pack(&x, pl);
    memcpy(pl + HBD_WIRE_DMODEX_HDR, proc->nspace, nslen);
    if (keylen > 0)
        memcpy(pl + HBD_WIRE_DMODEX_HDR + nslen, key, keylen);
    if (r->node == d->self) { /* served here: the same path as for a frame */
        serve(d, d->self, &x, pl + HBD_WIRE_DMODEX_HDR);
        tick_arm(d, 0);
        return;
    }
    int rc = hbd_node_lost(d, r->node)
                 ? HB_ERR_PEER_LOST
                 : send_pl(d, r->node, pl, (uint32_t)(HBD_WIRE_DMODEX_HDR + nslen + keylen));
    if (rc != 0) {
        hb_log_warn("direct modex of %s rank %" PRIu32 ": request to node %" PRIu32 " not sent: %s",
                    proc->nspace, proc->rank, r->node, hb_status_str(rc));
        req_end(d, r, PMIX_ERR_COMM_FAILURE, NULL, 0);
        return;
    }
    tick_arm(d, 0);
}

/* A DMODEX frame. */
static void on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    hbd_wire_dmodex_t x; /* kind, lengths and status were checked by hbd_wire_decode */
    hbd_wire_dmodex_unpack(m->payload, &x);
    const uint8_t *ns = m->payload + HBD_WIRE_DMODEX_HDR;
    if (x.dest != d->self) { /* passing through */
        int rc = send_pl(d, x.dest, m->payload, m->len);
        if (rc != 0)
            hb_log_warn("direct modex: frame for node %" PRIu32 " not forwarded: %s", x.dest,
                        hb_status_str(rc));
        return;
    }
    if (x.kind == HBD_WIRE_DMODEX_REQ)
        serve(d, x.origin, &x, ns);
    else
        on_reply(d, x.origin, &x, ns + x.nslen, m->len - HBD_WIRE_DMODEX_HDR - x.nslen);
}

int hbd_dmodex_init(hbd_t *d)
{
    struct hbd_dmodex *D = calloc(1, sizeof(*D));
    if (D == NULL)
        return HB_ERR_NOMEM;
    d->dmodex = D;
    D->next_id = 1;
    D->tick = hbd_timer_new(d, tick_cb, NULL);
    D->wait = hbd_timer_new(d, wait_cb, NULL);
    if (D->tick == NULL || D->wait == NULL)
        return HB_ERR_NOMEM;
    hbd_hooks_frame(d, HBD_WIRE_DMODEX, on_msg, NULL);
    hbd_pmix_on_dmodex(d, hbd_dmodex_request);
    return 0;
}

void hbd_dmodex_fini(hbd_t *d)
{
    struct hbd_dmodex *D = d->dmodex;
    if (D == NULL)
        return;
    while (D->reqs != NULL)
        req_end(d, D->reqs, PMIX_ERR_COMM_FAILURE, NULL, 0);
    while (D->outs != NULL) {
        dm_out_t *o = D->outs;
        D->outs = o->next;
        free(o);
    }
    while (D->waiting != NULL) { /* nobody to answer: the requesters end on their own */
        dm_srv_t *s = D->waiting;
        D->waiting = s->next;
        if (s->probing)
            s->dead = 1; /* the step may still answer into it: left to probe_done */
        else
            free(s);
    }
    hbd_pmix_on_dmodex(d, NULL);
    hbd_timer_free(D->tick);
    hbd_timer_free(D->wait);
    free(D);
    d->dmodex = NULL;
}
