/* hbd_pmix.c: the PMIx side of hibard: each job's PMIx step process (hbd_step.h) started,
 * watched and answered; fences across daemons run here for it. */
#include "hb_config.h"
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pmix.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hb_hash.h"
#include "hb_log.h"
#include "hbd_barrier.h"
#include "hbd_fence.h"
#include "hbd_pmix.h"
#include "hbd_step.h"
#include "hbd_timer.h"
#include "hb_status.h"

/*
 * libpmix 4.2.2's server leaks about one copy of every fence's data (doc/fence.md), so hibard
 * holds no PMIx server: each job with ranks here gets its own, a "PMIx step" (hibard run again
 * with HBD_STEP_ARG, hbd_step.c) that ends with the job, as Slurm's slurmstepd does. The step
 * hands every upcall to this loop over a socket pair (one message each way per fence); this
 * file runs them as hibard ran PMIx's upcalls before (fences across daemons, direct modex) and
 * sends the answers back. Its state is d->px; the step's one per process.
 */
typedef struct px_step px_step_t;

/* A fence of a step, in the barrier engine or hbd_fence.c. */
typedef struct px_op {
    hbd_t *d;
    px_step_t *step; /* answer to (NULL once answered) */
    uint32_t sid;    /* the step's id of the fence */
    int collect;
    int all;         /* the whole namespace */
    uint32_t *ranks; /* else these ranks */
    uint32_t nranks;
    uint32_t timeout_s;   /* PMIX_TIMEOUT, 0 if none */
    hbd_timer_t *timeout; /* fence in the barrier engine with a timeout */
    char *data;           /* this node's contribution, then the result */
    size_t ndata;
    hbd_job_t *job;      /* fence in flight: its job (NULL once answered early) */
    struct px_op *fnext; /* fences in flight */
} px_op_t;

/* A call of ours to a step (PROBE, FETCH), answered by PROBED / FETCHED. */
typedef struct px_call {
    uint32_t id;
    uint16_t answer; /* the message type that answers it */
    hbd_pmix_probe_fn probed;
    hbd_pmix_fetch_fn fetched;
    void *arg;
    struct px_call *next;
} px_call_t;

struct px_step {
    hbd_t *d;
    hbd_job_t *j; /* NULL once the job is done with it */
    uint64_t serial;
    pid_t pid; /* -1 once reaped */
    int fd;    /* -1 once closed */
    struct event *ev_rd, *ev_wr;
    struct evbuffer *in, *out;
    void (*done)(hbd_job_t *j, int rc); /* registration in progress */
    hbd_timer_t *timeout;
    char *env; /* REGISTERED's payload: each local rank's NAME=VALUE\0 ... \0 */
    size_t env_len;
    char **env_of; /* [n_env] each rank's first string in env */
    uint32_t n_env;
    px_call_t *calls;
    uint32_t next_id;
    int warned;    /* a bad message was logged */
    int cancelled; /* CANCEL sent: the step answered every fence it had sent */
    char nspace[HBD_JOB_NSLEN];
    char tmpdir[420];
    struct px_step *next;
};

typedef struct fence_sig fence_sig_t;

/* The module's state in the daemon context (d->px). */
struct hbd_px {
    px_op_t *fences;   /* in flight in the barrier engine */
    fence_sig_t *sigs; /* subset fences: sequence per (job, rank set) */
    uint32_t n_sigs, cap_sigs;
    px_step_t *steps; /* running or not reaped yet */
    uint64_t next_serial;
    uint64_t bad; /* messages from steps dropped */
    uint32_t n_steps;
    int wedged;                /* the last registration got no answer within HBD_PMIX_CALL_MS */
    hbd_pmix_dmodex_fn dmodex; /* the direct_modex upcall's handler (hbd_dmodex.c) */
    char tmpdir[400];          /* RUN_DIR/NAME.pmix: the steps' tmp dirs are under it */
};

/*
 * A step that does not answer its registration within HBD_PMIX_CALL_MS is wedged (libpmix
 * 4.2.2 wedges its server thread when a client dies inside the connection handshake): the job
 * fails with that reason and its step is killed; the next job gets a new one.
 */
#define HBD_PMIX_CALL_MS 10000

static void op_free(px_op_t *op)
{
    hbd_timer_free(op->timeout);
    free(op->ranks);
    free(op->data);
    free(op);
}

/* ---- the socket to a step ---- */

static void step_write_cb(evutil_socket_t fd, short what, void *arg);

/* Queue one message for the step and write what the socket takes now. */
static void step_send(px_step_t *s, uint16_t type, uint32_t id, uint32_t rank, int32_t st,
                      const void *a, size_t na, const void *b, size_t nb)
{
    if (s->fd < 0)
        return;
    hbd_pxmsg_t h = {
        .magic = HBD_PXMSG_MAGIC, .type = type, .id = id, .rank = rank, .st = st, .len = na + nb};
    if (evbuffer_add(s->out, &h, sizeof(h)) != 0 || (na > 0 && evbuffer_add(s->out, a, na)) ||
        (nb > 0 && evbuffer_add(s->out, b, nb))) {
        hb_log_error("job step %d: no memory for a message", (int)s->pid);
        return;
    }
    step_write_cb(s->fd, EV_WRITE, s);
}

static void step_write_cb(evutil_socket_t fd, short what, void *arg)
{
    px_step_t *s = arg;
    (void)what;
    while (evbuffer_get_length(s->out) > 0) {
        int n = evbuffer_write(s->out, fd);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) { /* the step is gone: its EOF or SIGCHLD tells */
            evbuffer_drain(s->out, evbuffer_get_length(s->out));
            break;
        }
    }
    if (evbuffer_get_length(s->out) > 0)
        event_add(s->ev_wr, NULL);
    else
        event_del(s->ev_wr);
}

/* Answer a fence to its step (once). */
static void op_answer(px_op_t *op, pmix_status_t st, const char *data, size_t n)
{
    if (op->step != NULL)
        step_send(op->step, HBD_PXM_FENCE_DONE, op->sid, 0, st, data, n, NULL, 0);
    op->step = NULL;
}

typedef struct fence_sig {
    uint64_t job, sig;
    uint32_t seq;
} fence_sig_t;

/* Hand the fence's result to the step (its PMIx answers the participants). */
static void fence_finish(px_op_t *op, pmix_status_t st)
{
    for (px_op_t **pp = &op->d->px->fences; *pp != NULL; pp = &(*pp)->fnext)
        if (*pp == op) {
            *pp = op->fnext;
            break;
        }
    char *data = NULL;
    size_t n = 0;
    if (st == PMIX_SUCCESS && op->collect) {
        data = op->data; /* this node's blob: the whole job's when the job has one node */
        n = op->ndata;
        op->data = NULL;
    }
    hbd_fence_prof(op->d, "mcb", 0);
    op_answer(op, st, data, n);
    free(data);
    op_free(op);
}

/* A fence's hibar status as the PMIx status its participants get. */
static pmix_status_t fence_status(int status)
{
    switch (status) {
    case 0:
        return PMIX_SUCCESS;
    case HB_ERR_TIMEOUT:
        return PMIX_ERR_TIMEOUT;
    case HB_ERR_NOMEM:
        return PMIX_ERR_NOMEM;
    case HB_ERR_TRUNCATED: /* more than HBD_FENCE_MAX_LEN of data in one fence */
        return PMIX_ERR_NOT_SUPPORTED;
    default: /* a lost node, a broken link, a protocol error between the daemons */
        return PMIX_ERR_COMM_FAILURE;
    }
}

static void fence_done(hbd_t *d, uint64_t coll, int status, void *arg)
{
    (void)d;
    if (status != 0)
        hb_log_warn("fence (collective %" PRIu64 ") failed: %s", coll, hb_status_str(status));
    fence_finish(arg, fence_status(status));
}

static void dfence_done(hbd_t *d, int status, uint8_t *data, size_t len, void *arg)
{
    px_op_t *op = arg;
    (void)d;
    if (status != 0)
        hb_log_warn("fence with data failed: %s", hb_status_str(status));
    free(op->data);
    op->data = (char *)data; /* every node's blob, handed to PMIx by fence_finish */
    op->ndata = len;
    fence_finish(op, fence_status(status));
}

static void fence_run(hbd_t *d, px_op_t *op);

static void fence_timeout_cb(hbd_t *d, void *arg)
{
    px_op_t *op = arg;
    (void)d;
    if (op->step == NULL)
        return;
    hb_log_warn("fence of job %s: no release within its PMIX_TIMEOUT of %" PRIu32 " s",
                op->job != NULL ? op->job->nspace : "?", op->timeout_s);
    op_answer(op, PMIX_ERR_TIMEOUT, NULL, 0);
    op->job = NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Run op as the daemons' fence id over nodes (NULL: all), its data taken over (no copy); one
 * that cannot start is finished with its status at once. what names it in the log. */
static void dfence_start(hbd_t *d, hbd_job_t *j, px_op_t *op, uint64_t id, const uint32_t *nodes,
                         uint32_t nn, const char *what)
{
    op->job = j;
    op->fnext = d->px->fences;
    d->px->fences = op;
    void *mine = op->data;
    size_t n_mine = op->ndata;
    op->data = NULL;
    op->ndata = 0;
    int rc = hbd_fence_start_owned(d, id, nodes, nn, op->timeout_s * 1000u, mine, n_mine,
                                   dfence_done, op);
    if (rc != 0) {
        hb_log_error("job %s: %s cannot start: %s", j->nspace, what, hb_status_str(rc));
        fence_finish(op, fence_status(rc));
    }
}

/*
 * A fence over some ranks of the job: the nodes hosting them take part (hbd_fence.c, star
 * through the lowest of them). Its id: the subset and top bits, 37 bits of a hash of the job
 * id and the sorted rank set (the signature), then the signature's own sequence number, so
 * fences in flight over different rank sets never mix (37 bits: bit 61 marks a whole job's fence
 * on part of the cluster). Every participant's daemon sees the
 * fences of one rank set in the same order (each is collective over the same ranks).
 */
static void subset_run(hbd_t *d, hbd_job_t *j, px_op_t *op)
{
    const hbd_job_spec_t *s = j->spec;
    struct hbd_px *P = d->px;
    uint32_t *ranks = malloc(op->nranks * sizeof(uint32_t) + 1), *nodes = NULL, n = 0, nn = 0;
    uint8_t *on = calloc(d->topo->n_nodes, 1);
    pmix_status_t st = PMIX_ERR_NOMEM;
    if (ranks == NULL || on == NULL)
        goto out_fail;
    for (uint32_t i = 0; i < op->nranks; i++) { /* nspace and wildcard: the step's */
        if (op->ranks[i] >= s->size) {
            st = PMIX_ERR_BAD_PARAM;
            goto out_fail;
        }
        ranks[n++] = op->ranks[i];
    }
    qsort(ranks, n, sizeof(uint32_t), cmp_u32);
    uint64_t h = HB_FNV64_BASIS ^ s->id;
    uint32_t prev = UINT32_MAX, u = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ranks[i] == prev)
            continue;
        prev = ranks[i];
        u++;
        h = hb_fnv64_u32(h, ranks[i]);
        on[s->map[ranks[i]]] = 1;
    }
    if (!on[d->self]) {
        st = PMIX_ERR_BAD_PARAM;
        goto out_fail;
    }
    nodes = malloc(d->topo->n_nodes * sizeof(uint32_t));
    if (nodes == NULL)
        goto out_fail;
    for (uint32_t k = 0; k < d->topo->n_nodes; k++)
        if (on[k])
            nodes[nn++] = k;
    if (!op->collect) { /* a barrier over the nodes: no data to carry */
        free(op->data);
        op->data = NULL;
        op->ndata = 0;
    }
    if (nn == 1) { /* every participant is local and has arrived */
        fence_finish(op, PMIX_SUCCESS);
        goto out;
    }
    fence_sig_t *sg = NULL;
    for (uint32_t i = 0; i < P->n_sigs; i++)
        if (P->sigs[i].job == s->id && P->sigs[i].sig == h)
            sg = &P->sigs[i];
    if (sg == NULL) {
        if (P->n_sigs == P->cap_sigs) {
            uint32_t nc = P->cap_sigs ? 2 * P->cap_sigs : 8;
            fence_sig_t *ns = realloc(P->sigs, nc * sizeof(*ns));
            if (ns == NULL)
                goto out_fail;
            P->sigs = ns;
            P->cap_sigs = nc;
        }
        sg = &P->sigs[P->n_sigs++];
        sg->job = s->id;
        sg->sig = h;
        sg->seq = 0;
    }
    uint64_t id = (1ull << 63) | HBD_FENCE_ID_SUBSET | ((h & 0x1fffffffffull) << 24) |
                  (sg->seq++ & 0xffffffu);
    hb_log_debug("job %s: fence over %" PRIu32 " ranks on %" PRIu32 " nodes, id %" PRIx64,
                 j->nspace, u, nn, id);
    dfence_start(d, j, op, id, nodes, nn, "subset fence");
    goto out;
out_fail:
    fence_finish(op, st);
out:
    free(ranks);
    free(on);
    free(nodes);
}

static void fence_run(hbd_t *d, px_op_t *op)
{
    hbd_fence_prof(d, "loop", 0);
    hbd_job_t *j = op->job;
    op->job = NULL;
    if (j == NULL) {
        fence_finish(op, PMIX_ERR_NOT_FOUND);
        return;
    }
    if (j->n_nodes == 1) {
        fence_finish(op, PMIX_SUCCESS); /* every participant is local and has arrived */
        return;
    }
    /*
     * Across nodes. A fence that collects data goes through hbd_fence.c: for a job on every
     * node of the cluster exchanged directly between the nodes of a small cluster, else
     * gathered up the chassis tree and released down; for a job on part of the cluster
     * through the lowest of its nodes (as a subset fence). A fence without data is a barrier:
     * on a small cluster the same direct exchange with empty blobs (one hop), else the job's
     * barrier engine (hbd_barrier.h, over the job's view of the chassis tree), where the k-th
     * one of the job is collective k. PMIX_COLLECT_DATA and the job's nodes are the same on
     * every node, so all take the same path. Fences over some ranks: subset_run.
     */
    if (!op->all) {
        subset_run(d, j, op);
        return;
    }
    int whole = j->n_nodes == d->topo->n_nodes;
    if (op->collect && !whole) {
        uint64_t id = hbd_fence_job_id(j->spec->id, j->dfence_seq++, 0);
        dfence_start(d, j, op, id, j->nodes, j->n_nodes, "fence");
        return;
    }
    if (op->collect || (whole && hbd_fence_direct(d))) {
        if (!op->collect) { /* nothing to carry */
            free(op->data);
            op->data = NULL;
            op->ndata = 0;
        }
        uint64_t id = hbd_fence_job_id(j->spec->id, j->dfence_seq++, 1);
        dfence_start(d, j, op, id, NULL, 0, "fence");
        return;
    }
    uint64_t coll = j->fence_seq++;
    op->job = j;
    op->fnext = d->px->fences;
    d->px->fences = op;
    /* PMIX_TIMEOUT: the participants are answered then; the barrier itself goes on and ends
     * (or fails on the cluster's barrier timeout) on its own, only freeing the op. Armed
     * first: the barrier may complete, and the op be freed, before hbd_barrier_start returns. */
    if (op->timeout_s > 0) {
        op->timeout = hbd_timer_new(d, fence_timeout_cb, op);
        hbd_timer_arm(op->timeout, op->timeout_s * 1000000ull, 1);
    }
    int rc = hbd_barrier_start(d, j->spec->jobno, coll, fence_done, op);
    if (rc != 0) {
        hb_log_error("job %s: fence %" PRIu64 " cannot start: %s", j->nspace, coll,
                     hb_status_str(rc));
        fence_finish(op, PMIX_ERR_COMM_FAILURE);
    }
}

/* ---- a step's messages ---- */

/* A message that does not fit: dropped, counted, logged once per step. */
static void step_bad(px_step_t *s, const hbd_pxmsg_t *h, const char *why)
{
    s->d->px->bad++;
    if (s->warned++ == 0)
        hb_log_warn("job %s: a message from its PMIx step (type %u) dropped: %s", s->nspace,
                    h->type, why);
}

static void on_registered(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl);

/* CONNECTED, FINALIZED, ABORT: the rank's state; OPDONE answers. */
static void on_rank_event(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl)
{
    hbd_rank_t *r = hbd_job_rank(s->j, h->rank);
    char msg[256];
    step_send(s, HBD_PXM_OPDONE, h->id, h->rank, r != NULL ? PMIX_SUCCESS : PMIX_ERR_NOT_FOUND,
              NULL, 0, NULL, 0);
    if (r == NULL)
        return;
    if (h->type == HBD_PXM_CONNECTED) {
        r->connected = 1;
    } else if (h->type == HBD_PXM_FINALIZED) {
        r->finalized = 1;
    } else {
        size_t n = h->len < sizeof(msg) - 1 ? (size_t)h->len : sizeof(msg) - 1;
        if (n > 0)
            memcpy(msg, pl, n);
        msg[n] = '\0';
        hbd_job_rank_abort(r, h->st, msg);
    }
}

static void on_fence(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl)
{
    uint32_t n;
    if (s->cancelled) /* the job is stopping: the step answered it (CANCEL, or at its end) */
        return;
    if (h->len < 4 || (memcpy(&n, pl, 4), n > (h->len - 4) / 4) ||
        (n == 0 && !(h->flags & HBD_PXM_ALL))) {
        step_bad(s, h, "a fence that does not parse");
        return;
    }
    px_op_t *op = calloc(1, sizeof(*op));
    size_t nd = h->len - 4 - (size_t)n * 4;
    if (op == NULL || (n > 0 && (op->ranks = malloc((size_t)n * 4)) == NULL) ||
        (nd > 0 && (op->data = malloc(nd)) == NULL)) {
        if (op != NULL)
            op_free(op);
        step_send(s, HBD_PXM_FENCE_DONE, h->id, 0, PMIX_ERR_NOMEM, NULL, 0, NULL, 0);
        return;
    }
    op->d = s->d;
    op->step = s;
    op->sid = h->id;
    op->collect = (h->flags & HBD_PXM_COLLECT) != 0;
    op->all = (h->flags & HBD_PXM_ALL) != 0;
    op->nranks = n;
    if (n > 0)
        memcpy(op->ranks, pl + 4, (size_t)n * 4);
    if (nd > 0)
        memcpy(op->data, pl + 4 + (size_t)n * 4, nd);
    op->ndata = nd;
    op->timeout_s = h->arg > 1000000 ? 1000000 : h->arg;
    op->job = s->j;
    fence_run(s->d, op);
}

/* A direct modex request's answer (hbd_dmodex.c calls it exactly once), to its step if that is
 * still there. */
typedef struct px_dm {
    hbd_t *d;
    uint64_t serial;
    uint32_t id;
} px_dm_t;

static void dm_answer(pmix_status_t st, const char *data, size_t n, void *cbdata,
                      pmix_release_cbfunc_t rel, void *relarg)
{
    px_dm_t *m = cbdata;
    for (px_step_t *s = m->d->px->steps; s != NULL; s = s->next)
        if (s->serial == m->serial)
            step_send(s, HBD_PXM_DMODEX_DONE, m->id, 0, st, data, data ? n : 0, NULL, 0);
    if (rel != NULL)
        rel(relarg);
    free(m);
}

static void on_dmodex(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl)
{
    size_t k0, end;
    pmix_proc_t p;
    if (hbd_pxm_str(pl, h->len, 0, &k0) != 0 || k0 > PMIX_MAX_NSLEN + 1 ||
        hbd_pxm_str(pl, h->len, k0, &end) != 0 || end - k0 > PMIX_MAX_KEYLEN + 1) {
        step_bad(s, h, "a direct modex request that does not parse");
        return;
    }
    px_dm_t *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        step_send(s, HBD_PXM_DMODEX_DONE, h->id, 0, PMIX_ERR_NOMEM, NULL, 0, NULL, 0);
        return;
    }
    m->d = s->d;
    m->serial = s->serial;
    m->id = h->id;
    PMIX_LOAD_PROCID(&p, (const char *)pl, h->rank);
    const char *key = (const char *)pl + k0;
    uint32_t to_s = h->arg > 1000000 ? 1000000 : h->arg;
    if (s->d->px->dmodex != NULL)
        s->d->px->dmodex(s->d, &p, key[0] ? key : NULL, to_s * 1000u, (hbd_fn_t)dm_answer, m);
    else
        dm_answer(PMIX_ERR_NOT_SUPPORTED, NULL, 0, m, NULL, NULL);
}

/* PROBED, FETCHED: the answer to a call of ours. */
static void on_call_answer(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl)
{
    px_call_t *c = NULL;
    for (px_call_t **pp = &s->calls; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->id == h->id && (*pp)->answer == h->type) {
            c = *pp;
            *pp = c->next;
            break;
        }
    if (c == NULL) {
        step_bad(s, h, "an answer to no call");
        return;
    }
    if (c->probed != NULL)
        c->probed(s->d, c->arg, h->st == 0);
    else
        c->fetched(s->d, c->arg, h->st, (const char *)pl, h->len);
    free(c);
}

static void on_log(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl)
{
    int n = h->len > 1000 ? 1000 : (int)h->len;
    hb_log_level_t lv = h->arg <= HB_LOG_DEBUG ? (hb_log_level_t)h->arg : HB_LOG_WARN;
    hb_log_msg(lv, "job %s: PMIx step: %.*s", s->nspace, n, pl != NULL ? (const char *)pl : "");
}

/* One whole message from the step. */
static void step_msg(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl)
{
    if (h->type == HBD_PXM_LOG) {
        on_log(s, h, pl);
        return;
    }
    if (s->j == NULL) /* the job is over: nothing to answer */
        return;
    switch (h->type) {
    case HBD_PXM_REGISTERED:
        on_registered(s, h, pl);
        return;
    case HBD_PXM_CONNECTED:
    case HBD_PXM_FINALIZED:
    case HBD_PXM_ABORT:
        on_rank_event(s, h, pl);
        return;
    case HBD_PXM_FENCE:
        hbd_fence_prof(s->d, "upcall", 0);
        on_fence(s, h, pl);
        return;
    case HBD_PXM_DMODEX:
        on_dmodex(s, h, pl);
        return;
    case HBD_PXM_PROBED:
    case HBD_PXM_FETCHED:
        on_call_answer(s, h, pl);
        return;
    default:
        step_bad(s, h, "a type a step does not send");
    }
}

static void step_lost(px_step_t *s, const char *why);

/* SIGKILL to the step while it is not reaped (never kill(-1)). */
static void step_kill(px_step_t *s)
{
    if (s->pid > 0)
        kill(s->pid, SIGKILL);
}

static void step_read_cb(evutil_socket_t fd, short what, void *arg)
{
    px_step_t *s = arg;
    (void)what;
    int eof = 0;
    for (;;) {
        int n = evbuffer_read(s->in, fd, 1 << 20);
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
    }
    hbd_pxmsg_t h;
    while (s->fd >= 0 && evbuffer_copyout(s->in, &h, sizeof(h)) == (ev_ssize_t)sizeof(h)) {
        if (h.magic != HBD_PXMSG_MAGIC || h.len > HBD_PXMSG_MAX_LEN) {
            s->d->px->bad++;
            hb_log_error("job %s: its PMIx step sent a broken message stream: stopping it",
                         s->nspace);
            step_kill(s);
            step_lost(s, "its PMIx server process broke its message stream");
            return;
        }
        if (evbuffer_get_length(s->in) < sizeof(h) + h.len)
            break;
        evbuffer_drain(s->in, sizeof(h));
        uint8_t *pl = h.len > 0 ? evbuffer_pullup(s->in, (ev_ssize_t)h.len) : NULL;
        if (h.len > 0 && pl == NULL) {
            hb_log_error("job %s: no memory for a PMIx step's message", s->nspace);
            step_kill(s);
            step_lost(s, "no memory for its PMIx server's messages");
            return;
        }
        step_msg(s, &h, pl);
        if (s->fd >= 0) /* else the buffer went with the step's close */
            evbuffer_drain(s->in, h.len);
    }
    if (eof && s->fd >= 0)
        step_lost(s, "its PMIx server process (hibard --pmix-step) ended");
}

/* ---- a step's life ---- */

/* The job is done with its step: the socket closes (the step's EOF: it finalizes and exits);
 * the record stays until the step is reaped. What waits on it is answered. */
static void step_close(px_step_t *s)
{
    hbd_job_t *j = s->j;
    if (j != NULL) {
        j->step = NULL;
        j->registered = 0;
    }
    s->j = NULL;
    s->done = NULL;
    hbd_timer_cancel(s->timeout);
    if (s->fd >= 0) {
        event_del(s->ev_rd);
        event_del(s->ev_wr);
        close(s->fd);
        s->fd = -1;
    }
    while (s->calls != NULL) { /* their handler is gone once hibard stops (hbd_dmodex_fini) */
        px_call_t *c = s->calls;
        s->calls = c->next;
        if (s->d->px->dmodex == NULL)
            ;
        else if (c->probed != NULL)
            c->probed(s->d, c->arg, 0);
        else
            c->fetched(s->d, c->arg, PMIX_ERR_NOT_FOUND, NULL, 0);
        free(c);
    }
}

/* The registration is over: the job's start goes on with rc. */
static void reg_end(px_step_t *s, int rc)
{
    void (*done)(hbd_job_t * j, int rc) = s->done;
    hbd_job_t *j = s->j;
    s->done = NULL;
    hbd_timer_cancel(s->timeout);
    if (done != NULL && j != NULL)
        done(j, rc);
}

/* The step died or broke while its job runs: the job ends with why. */
static void step_lost(px_step_t *s, const char *why)
{
    hbd_job_t *j = s->j;
    if (j == NULL) {
        step_close(s);
        return;
    }
    hb_log_error("job %s: %s", j->nspace, why);
    hbd_pmix_job_cancel_fences(j);
    if (s->done != NULL) {
        reg_end(s, HB_ERR_INTERNAL); /* may free j (and close s) */
    } else {
        char b[300];
        snprintf(b, sizeof(b), "%s on node %s", why, s->d->name);
        hbd_job_fail(j, b);
    }
    step_close(s);
}

static void step_free(px_step_t *s)
{
    struct hbd_px *P = s->d->px;
    step_close(s);
    for (px_step_t **pp = &P->steps; *pp != NULL; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    P->n_steps--;
    if (s->ev_rd != NULL)
        event_free(s->ev_rd);
    if (s->ev_wr != NULL)
        event_free(s->ev_wr);
    if (s->in != NULL)
        evbuffer_free(s->in);
    if (s->out != NULL)
        evbuffer_free(s->out);
    hbd_timer_free(s->timeout);
    hbd_step_rmdir(s->tmpdir); /* the step's own removal is missing when it was killed */
    free(s->env);
    free(s->env_of);
    free(s);
}

int hbd_pmix_reaped(hbd_t *d, pid_t pid, int status)
{
    if (d->px == NULL)
        return 0;
    for (px_step_t *s = d->px->steps; s != NULL; s = s->next) {
        if (s->pid != pid)
            continue;
        s->pid = -1;
        char b[160];
        if (WIFSIGNALED(status))
            snprintf(b, sizeof(b), "its PMIx server process died (signal %d)", WTERMSIG(status));
        else
            snprintf(b, sizeof(b), "its PMIx server process exited (status %d)",
                     WEXITSTATUS(status));
        if (s->j != NULL)
            step_lost(s, b);
        else if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0)
            hb_log_warn("job %s: %s", s->nspace, b); /* after its job, or with it */
        hb_log_debug("PMIx step %d ended (status %#x)", (int)pid, status);
        step_free(s);
        return 1;
    }
    return 0;
}

static void reg_timeout(hbd_t *d, void *arg)
{
    px_step_t *s = arg;
    hb_log_error("job %s: its PMIx step did not answer the registration within %d ms: it is "
                 "wedged (libpmix 4.2.2 does this after a client died during its connection "
                 "handshake); the job fails, the next one gets a new step",
                 s->nspace, HBD_PMIX_CALL_MS);
    d->px->wedged = 1;
    step_kill(s);
    reg_end(s, HB_ERR_UNAVAIL);
}

static void on_registered(px_step_t *s, const hbd_pxmsg_t *h, const uint8_t *pl)
{
    if (s->done == NULL) {
        step_bad(s, h, "a second registration answer");
        return;
    }
    int rc = h->st == PMIX_SUCCESS ? 0 : HB_ERR_INTERNAL;
    if (rc == 0 && h->arg == s->j->n_local) {
        /* each local rank's environment: strings, an empty one ends the rank's */
        s->env = malloc(h->len + 1);
        s->env_of = calloc(h->arg + 1, sizeof(char *));
        if (s->env == NULL || s->env_of == NULL) {
            rc = HB_ERR_NOMEM;
        } else {
            if (h->len > 0)
                memcpy(s->env, pl, h->len);
            s->env[h->len] = '\0';
            s->env_len = h->len;
            size_t off = 0, next;
            for (uint32_t k = 0; k < h->arg && rc == 0; k++) {
                s->env_of[k] = s->env + off;
                while (rc == 0 && off < h->len && pl[off] != '\0')
                    if (hbd_pxm_str(pl, h->len, off, &next) != 0 ||
                        strchr(s->env + off, '=') == NULL)
                        rc = HB_ERR_PROTO;
                    else
                        off = next;
                if (off >= h->len)
                    rc = HB_ERR_PROTO;
                off++;
            }
            s->n_env = h->arg;
        }
        if (rc != 0)
            step_bad(s, h, "a registration answer that does not parse");
    } else if (rc == 0) {
        step_bad(s, h, "a registration answer for another number of ranks");
        rc = HB_ERR_PROTO;
    }
    if (rc == 0) {
        s->j->registered = 1;
        s->d->px->wedged = 0;
    } else {
        hb_log_error("job %s: its PMIx step could not register it: %s", s->j->nspace,
                     h->st != PMIX_SUCCESS ? PMIx_Error_string(h->st) : hb_status_str(rc));
    }
    reg_end(s, rc);
}

/* Start the job's step: hibard itself again (/proc/self/exe) with HBD_STEP_ARG, the socket pair's
 * other end as its descriptor 3. 0 or an error (logged). */
static int step_spawn(hbd_t *d, px_step_t *s)
{
    int sv[2], cfd = -1, rc = HB_ERR_IO;
    char fd_s[16], rank_s[16], ppid_s[24], nspace[PMIX_MAX_NSLEN + 1];
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        hb_log_error("PMIx step: socketpair: %m");
        return HB_ERR_IO;
    }
    cfd = fcntl(sv[1], F_DUPFD_CLOEXEC, 10); /* never 3 itself: dup2 onto 3 clears CLOEXEC */
    close(sv[1]);
    if (cfd < 0 || fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
        hb_log_error("PMIx step: descriptors: %m");
        goto out;
    }
    snprintf(fd_s, sizeof(fd_s), "3");
    snprintf(rank_s, sizeof(rank_s), "%" PRIu32, d->self);
    snprintf(ppid_s, sizeof(ppid_s), "%d", (int)getpid());
    snprintf(nspace, sizeof(nspace), "hibard.%s.%s", d->cfg->cluster, d->name);
    char *argv[] = {"hibard", HBD_STEP_ARG, fd_s,   s->tmpdir, (char *)d->name,
                    nspace,   rank_s,       ppid_s, NULL};
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, cfd, 3);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    extern char **environ;
    int e = posix_spawn(&s->pid, "/proc/self/exe", &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e != 0) {
        hb_log_error("PMIx step: cannot start hibard again (/proc/self/exe): %s", strerror(e));
        goto out;
    }
    s->fd = sv[0];
    sv[0] = -1;
    rc = 0;
out:
    if (sv[0] >= 0)
        close(sv[0]);
    if (cfd >= 0)
        close(cfd);
    return rc;
}

int hbd_pmix_job_register(hbd_job_t *j, void (*done)(hbd_job_t *j, int rc))
{
    hbd_t *d = j->d;
    struct hbd_px *P = d->px;
    const hbd_job_spec_t *sp = j->spec;
    int rc = HB_ERR_NOMEM;
    uint32_t *node_idx = calloc(d->topo->n_nodes, sizeof(uint32_t));
    uint32_t *map = calloc(sp->size, sizeof(uint32_t));
    const char **names = calloc(j->n_nodes, sizeof(char *));
    px_step_t *s = calloc(1, sizeof(*s));
    uint8_t *pl = NULL;
    size_t len = 0;
    if (node_idx == NULL || map == NULL || names == NULL || s == NULL)
        goto out;
    hbd_step_job_t jb = {.size = sp->size, .n_nodes = j->n_nodes, .nspace = j->nspace};
    for (uint32_t k = 0; k < j->n_nodes; k++) {
        node_idx[j->nodes[k]] = k;
        names[k] = d->cfg->nodes[j->nodes[k]].name;
        if (j->nodes[k] == d->self)
            jb.self = k;
    }
    for (uint32_t r = 0; r < sp->size; r++)
        map[r] = node_idx[sp->map[r]];
    jb.map = map;
    jb.names = names;
    if ((pl = hbd_step_job_pack(&jb, &len)) == NULL)
        goto out;
    s->d = d;
    s->fd = -1;
    s->pid = -1;
    s->serial = ++P->next_serial;
    snprintf(s->nspace, sizeof(s->nspace), "%s", j->nspace);
    s->next_id = 1;
    if (snprintf(s->tmpdir, sizeof(s->tmpdir), "%s/%" PRIx64, P->tmpdir, sp->id) >=
        (int)sizeof(s->tmpdir)) {
        rc = HB_ERR_CONFIG;
        goto out;
    }
    if ((s->in = evbuffer_new()) == NULL || (s->out = evbuffer_new()) == NULL ||
        (s->timeout = hbd_timer_new(d, reg_timeout, s)) == NULL)
        goto out_s;
    if ((rc = step_spawn(d, s)) != 0)
        goto out_s;
    s->ev_rd = event_new(d->base, s->fd, EV_READ | EV_PERSIST, step_read_cb, s);
    s->ev_wr = event_new(d->base, s->fd, EV_WRITE, step_write_cb, s);
    s->next = P->steps;
    P->steps = s;
    P->n_steps++;
    s->j = j;
    j->step = s;
    if (s->ev_rd == NULL || s->ev_wr == NULL || event_add(s->ev_rd, NULL) != 0) {
        step_kill(s);
        step_close(s); /* freed once reaped */
        s = NULL;
        rc = HB_ERR_NOMEM;
        goto out;
    }
    s->done = done;
    hbd_timer_arm(s->timeout, HBD_PMIX_CALL_MS * 1000ull, 1);
    hbd_fence_prelink(d); /* links the job's first fence will use, made while it starts */
    step_send(s, HBD_PXM_JOB, 0, 0, 0, pl, len, NULL, 0);
    s = NULL;
    rc = 0;
    goto out;
out_s:
    if (s->in != NULL)
        evbuffer_free(s->in);
    if (s->out != NULL)
        evbuffer_free(s->out);
    hbd_timer_free(s->timeout);
out:
    free(s);
    free(pl);
    free(node_idx);
    free(map);
    free(names);
    return rc;
}

void hbd_pmix_job_register_cancel(hbd_job_t *j)
{
    px_step_t *s = j->step;
    if (s == NULL)
        return;
    s->done = NULL;
    hbd_timer_cancel(s->timeout);
}

int hbd_pmix_wedged(const hbd_t *d)
{
    return d->px != NULL && d->px->wedged;
}

uint32_t hbd_pmix_steps(const hbd_t *d)
{
    return d->px != NULL ? d->px->n_steps : 0;
}

uint64_t hbd_pmix_bad(const hbd_t *d)
{
    return d->px != NULL ? d->px->bad : 0;
}

void hbd_pmix_job_cancel_fences(hbd_job_t *j)
{
    /*
     * A fence still in flight (the job is being stopped while some nodes were in it) is
     * answered now with an error, while its clients live: libpmix 4.2.2 was seen to deadlock
     * when clients die inside a fence the host has not answered. The step answers those it
     * sent and this loop has not read yet (CANCEL). The barrier's own completion, whenever it
     * comes, only frees the op.
     */
    for (px_op_t *op = j->d->px->fences; op != NULL; op = op->fnext)
        if (op->job == j) {
            op_answer(op, PMIX_ERR_COMM_FAILURE, NULL, 0);
            op->job = NULL;
        }
    if (j->step != NULL) {
        step_send(j->step, HBD_PXM_CANCEL, 0, 0, 0, NULL, 0, NULL, 0);
        j->step->cancelled = 1;
    }
}

void hbd_pmix_job_deregister(hbd_job_t *j)
{
    struct hbd_px *P = j->d->px;
    if (j->step == NULL)
        return;
    hbd_pmix_job_cancel_fences(j);
    for (uint32_t i = 0; i < P->n_sigs;)
        if (P->sigs[i].job == j->spec->id)
            P->sigs[i] = P->sigs[--P->n_sigs];
        else
            i++;
    step_close(j->step); /* the step drops the namespace, finalizes and exits */
}

/* NAME=VALUE into a malloc'd NULL-terminated environment, replacing NAME's entry if any. */
static int env_put(char ***env, const char *kv)
{
    size_t nl = (size_t)(strchr(kv, '=') - kv), n = 0;
    char *c = strdup(kv);
    if (c == NULL)
        return HB_ERR_NOMEM;
    for (; (*env)[n] != NULL; n++)
        if (strncmp((*env)[n], kv, nl + 1) == 0) {
            free((*env)[n]);
            (*env)[n] = c;
            return 0;
        }
    char **ne = realloc(*env, (n + 2) * sizeof(char *));
    if (ne == NULL) {
        free(c);
        return HB_ERR_NOMEM;
    }
    ne[n] = c;
    ne[n + 1] = NULL;
    *env = ne;
    return 0;
}

int hbd_pmix_setup_fork(hbd_job_t *j, uint32_t lr, char ***env)
{
    px_step_t *s = j->step;
    uint32_t k = 0; /* the step answers in rank order */
    for (uint32_t i = 0; i < j->n_local; i++)
        k += j->local[i].rank < j->local[lr].rank;
    if (s == NULL || k >= s->n_env) {
        hb_log_error("job %s: no PMIx environment for rank %" PRIu32, j->nspace, j->local[lr].rank);
        return HB_ERR_INTERNAL;
    }
    for (const char *e = s->env_of[k]; *e != '\0'; e += strlen(e) + 1) {
        int rc = env_put(env, e);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* A call to the job's step; its answer comes to fn (or a failure once the step goes). */
static int step_call(hbd_job_t *j, uint16_t type, uint16_t answer, uint32_t rank, const char *key,
                     hbd_pmix_probe_fn probed, hbd_pmix_fetch_fn fetched, void *arg)
{
    px_step_t *s = j->step;
    if (s == NULL || s->fd < 0)
        return HB_ERR_NOT_FOUND;
    px_call_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return HB_ERR_NOMEM;
    c->id = s->next_id++;
    c->answer = answer;
    c->probed = probed;
    c->fetched = fetched;
    c->arg = arg;
    c->next = s->calls;
    s->calls = c;
    step_send(s, type, c->id, rank, 0, j->nspace, strlen(j->nspace) + 1, key,
              key != NULL ? strlen(key) + 1 : 0);
    return 0;
}

int hbd_pmix_probe(hbd_job_t *j, uint32_t rank, const char *key, hbd_pmix_probe_fn fn, void *arg)
{
    return step_call(j, HBD_PXM_PROBE, HBD_PXM_PROBED, rank, key, fn, NULL, arg);
}

int hbd_pmix_fetch(hbd_job_t *j, uint32_t rank, hbd_pmix_fetch_fn fn, void *arg)
{
    return step_call(j, HBD_PXM_FETCH, HBD_PXM_FETCHED, rank, NULL, NULL, fn, arg);
}

void hbd_pmix_on_dmodex(hbd_t *d, hbd_pmix_dmodex_fn fn)
{
    if (d->px != NULL)
        d->px->dmodex = fn;
}

/* ---- the module ---- */

int hbd_pmix_start(hbd_t *d)
{
    struct hbd_px *P = calloc(1, sizeof(*P));
    if (P == NULL)
        return HB_ERR_NOMEM;
    d->px = P;
    if (snprintf(P->tmpdir, sizeof(P->tmpdir), "%s/%s.pmix", d->run_dir, d->name) >=
        (int)sizeof(P->tmpdir)) {
        hb_log_error("PMIx tmp dir path too long");
        return HB_ERR_CONFIG;
    }
    hbd_step_rmdir(P->tmpdir); /* a crashed daemon's leftovers, its steps' included */
    if (mkdir(P->tmpdir, 0700) != 0) {
        hb_log_error("cannot create %s: %m", P->tmpdir);
        return HB_ERR_IO;
    }
    hb_log_info("PMIx: a step process per job (libpmix %s), tmp dirs under %s", PMIx_Get_version(),
                P->tmpdir);
    return 0;
}

void hbd_pmix_stop(hbd_t *d)
{
    struct hbd_px *P = d->px;
    if (P == NULL)
        return;
    /* the jobs were stopped before (hbd_main.c): their steps are ending; none outlives this */
    while (P->steps != NULL) {
        px_step_t *s = P->steps;
        if (s->pid > 0) {
            step_kill(s);
            while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
        step_free(s);
    }
    hbd_step_rmdir(P->tmpdir);
    free(P->sigs);
    free(P);
    d->px = NULL;
}
