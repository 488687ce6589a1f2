/* hbd_pmix.c: hibard as its node's PMIx server: init, namespace registration, upcalls handed to the
 * loop. */
#include "hb_config.h"
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <pmix.h>
#include <pmix_server.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hb_hash.h"
#include "hb_log.h"
#include "hbd_barrier.h"
#include "hbd_fence.h"
#include "hbd_pmix.h"
#include "hbd_timer.h"
#include "hb_status.h"

/*
 * PMIx calls the server module on its own progress thread. Each upcall copies what it needs
 * into an op, appends it to a locked queue and rings an eventfd that the daemon's libevent
 * loop watches; the loop runs the op (it owns all job state) and calls PMIx's callback from
 * there (PMIx's callbacks may be called from any thread: they shift to PMIx's own). The
 * module has no context pointer, so the server state is this process' single g_px.
 */
typedef enum { OP_CONNECTED, OP_FINALIZED, OP_ABORT, OP_FENCE, OP_DMODEX, OP_CALL } op_kind_t;

typedef struct px_op {
    op_kind_t kind;
    pmix_proc_t proc;
    int status;
    char *msg;
    char *data; /* fence: this node's contribution (libpmix's buffer, ours) */
    size_t ndata;
    int collect;
    int all;            /* fence: the procs array covers the whole namespace */
    pmix_proc_t *procs; /* fence: the procs array (copy) */
    size_t nprocs;
    uint32_t timeout_s;                /* fence: PMIX_TIMEOUT, 0 if none */
    hbd_timer_t *timeout;              /* fence in the barrier engine with a timeout */
    void (*call)(hbd_t *d, void *arg); /* OP_CALL: run on the loop */
    void *call_arg;
    pmix_op_cbfunc_t opcb;
    pmix_modex_cbfunc_t mcb;
    void *cbdata;
    hbd_job_t *job;      /* fence in flight: its job (NULL once answered early) */
    struct px_op *next;  /* queue */
    struct px_op *fnext; /* fences in flight */
} px_op_t;

typedef struct hbd_px {
    hbd_t *d;
    int up;
    pthread_mutex_t mu;
    px_op_t *head, *tail;
    int efd;
    struct event *ev_q;
    px_op_t *fences;        /* in flight in the barrier engine (loop thread only) */
    struct fence_sig *sigs; /* subset fences: sequence per (job, rank set) */
    uint32_t n_sigs, cap_sigs;
    char tmpdir[400];
    int wedged;                /* PMIx's thread did not answer a call within HBD_PMIX_CALL_MS */
    unsigned reserve_n;        /* px_reserve calls (PMIx's thread only) */
    hbd_pmix_dmodex_fn dmodex; /* the direct_modex upcall's handler (hbd_dmodex.c) */
} hbd_px_t;

static hbd_px_t g_px = {.mu = PTHREAD_MUTEX_INITIALIZER, .efd = -1};

/* ---- upcalls: PMIx's thread ---- */

static pmix_status_t op_queue(px_op_t *op)
{
    uint64_t one = 1;
    pthread_mutex_lock(&g_px.mu);
    if (g_px.tail != NULL)
        g_px.tail->next = op;
    else
        g_px.head = op;
    g_px.tail = op;
    pthread_mutex_unlock(&g_px.mu);
    if (write(g_px.efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        hb_log_warn("PMIx upcall queue: eventfd write: %m");
    return PMIX_SUCCESS;
}

static px_op_t *op_new(op_kind_t kind, const pmix_proc_t *proc)
{
    px_op_t *op = calloc(1, sizeof(*op));
    if (op == NULL)
        return NULL;
    op->kind = kind;
    if (proc != NULL)
        memcpy(&op->proc, proc, sizeof(op->proc));
    return op;
}

/* An operation that needs nothing but its process and a pmix_op_cbfunc_t, queued. */
static pmix_status_t op_submit(op_kind_t kind, const pmix_proc_t *proc, pmix_op_cbfunc_t cbfunc,
                               void *cbdata)
{
    px_op_t *op = op_new(kind, proc);
    if (op == NULL)
        return PMIX_ERR_NOMEM;
    op->opcb = cbfunc;
    op->cbdata = cbdata;
    return op_queue(op);
}

static pmix_status_t up_connected(const pmix_proc_t *proc, void *obj, pmix_info_t info[],
                                  size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)obj;
    (void)info;
    (void)ninfo;
    return op_submit(OP_CONNECTED, proc, cbfunc, cbdata);
}

static pmix_status_t up_finalized(const pmix_proc_t *proc, void *obj, pmix_op_cbfunc_t cbfunc,
                                  void *cbdata)
{
    (void)obj;
    return op_submit(OP_FINALIZED, proc, cbfunc, cbdata);
}

static pmix_status_t up_abort(const pmix_proc_t *proc, void *obj, int status, const char msg[],
                              pmix_proc_t procs[], size_t nprocs, pmix_op_cbfunc_t cbfunc,
                              void *cbdata)
{
    (void)obj;
    (void)procs;
    (void)nprocs; /* any subset: hibar aborts the whole job */
    px_op_t *op = op_new(OP_ABORT, proc);
    if (op == NULL)
        return PMIX_ERR_NOMEM;
    op->status = status;
    op->msg = strdup(msg != NULL ? msg : "");
    op->opcb = cbfunc;
    op->cbdata = cbdata;
    return op_queue(op);
}

/*
 * libpmix 4.2.2's server leaks about one copy of a fence's collected data on every fence with
 * data (pmix_gds_base_store_modex: heaptrack on hibard, 32 ranks x 1 KiB: 44 KB per fence and
 * daemon, all allocated on PMIx's thread). Every leaked page is a fresh one, so each fence
 * page-faulted its way through new heap on the release's critical path (sysmalloc and its
 * faults: a quarter of the daemons' CPU in perf). PMIx's thread keeps a reserve instead: every
 * HBD_PX_RESERVE_EVERY fences it takes HBD_PX_RESERVE bytes at the top of its arena,
 * pre-faults them in one madvise(MADV_POPULATE_WRITE) and gives them back; the arena keeps
 * them (hbd_coll_init's trim threshold), and the leak eats into pages already there.
 *
 * That saves the guest's page faults, not the whole cost on a VM with shadow page tables (the
 * test machine): the kernel fills the pages through its own mapping, so the thread's first
 * write to each still exits to the hypervisor, unseen by any guest counter (perf: 10 % of a
 * daemon's samples on one store of _int_malloc, the header of the new top chunk). Writing the
 * pages from this thread instead, right after the fence is handed to the loop, was slower:
 * steady ratio to Open MPI 0.66 against 0.51 (doc/fence.md).
 */
#define HBD_PX_RESERVE (1u << 20)
#define HBD_PX_RESERVE_EVERY 8

static void px_reserve(void) /* PMIx's thread */
{
    if (g_px.reserve_n++ % HBD_PX_RESERVE_EVERY != 0)
        return;
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *p = malloc(HBD_PX_RESERVE);
    if (p == NULL || pg <= 0)
        goto out;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t e = ((uintptr_t)p + HBD_PX_RESERVE) & ~((uintptr_t)pg - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE); /* best effort (Linux >= 5.14) */
out:
    free(p);
}

static pmix_status_t up_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
                              void *cbdata)
{
    if (nprocs == 0 || procs == NULL)
        return PMIX_ERR_BAD_PARAM;
    if (g_px.d != NULL)
        hbd_fence_prof(g_px.d, "upcall", 0);
    if (ndata > 0)
        px_reserve();
    px_op_t *op = op_new(OP_FENCE, &procs[0]);
    if (op == NULL)
        return PMIX_ERR_NOMEM;
    op->all = nprocs == 1 && procs[0].rank == PMIX_RANK_WILDCARD;
    op->procs = malloc(nprocs * sizeof(pmix_proc_t));
    if (op->procs == NULL) {
        free(op);
        return PMIX_ERR_NOMEM;
    }
    memcpy(op->procs, procs, nprocs * sizeof(pmix_proc_t));
    op->nprocs = nprocs;
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_COLLECT_DATA))
            op->collect = PMIX_INFO_TRUE(&info[i]);
        else if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && info[i].value.type == PMIX_INT &&
                 info[i].value.data.integer > 0)
            op->timeout_s = (uint32_t)info[i].value.data.integer;
        else if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && info[i].value.type == PMIX_UINT32)
            op->timeout_s = info[i].value.data.uint32;
    }
    if (op->timeout_s > 1000000)
        op->timeout_s = 1000000;
    op->mcb = cbfunc;
    op->cbdata = cbdata;
    /*
     * The node's blob is ours from a successful return on: libpmix unloads its buffer into
     * this bare pointer and never frees it (heaptrack on hibard: 5 KB lost per fence with 4
     * ranks x 1 KiB when it was copied here; openpmix's server code says so too). Taken, not
     * copied; freed with the op, or handed on to hbd_fence.c. Error returns above leave it to
     * libpmix.
     */
    op->data = data;
    op->ndata = data != NULL ? ndata : 0;
    return op_queue(op);
}

static pmix_status_t up_dmodex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                               pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    px_op_t *op = op_new(OP_DMODEX, proc);
    if (op == NULL)
        return PMIX_ERR_NOMEM;
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && info[i].value.type == PMIX_INT &&
            info[i].value.data.integer > 0)
            op->timeout_s = (uint32_t)info[i].value.data.integer;
        else if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && info[i].value.type == PMIX_UINT32)
            op->timeout_s = info[i].value.data.uint32;
        else if (PMIX_CHECK_KEY(&info[i], PMIX_REQUIRED_KEY) && info[i].value.type == PMIX_STRING &&
                 info[i].value.data.string != NULL && op->msg == NULL) {
            /* the key the requester waits for: the hosting daemon answers once it is there */
            op->msg = strndup(info[i].value.data.string, PMIX_MAX_KEYLEN);
            if (op->msg == NULL) {
                free(op);
                return PMIX_ERR_NOMEM;
            }
        }
    }
    if (op->timeout_s > 1000000)
        op->timeout_s = 1000000;
    op->mcb = cbfunc;
    op->cbdata = cbdata;
    return op_queue(op);
}

static pmix_server_module_t px_module = {
    .client_connected2 = up_connected,
    .client_finalized = up_finalized,
    .abort = up_abort,
    .fence_nb = up_fence,
    .direct_modex = up_dmodex,
};

void hbd_pmix_on_dmodex(hbd_pmix_dmodex_fn fn)
{
    g_px.dmodex = fn;
}

int hbd_pmix_call_on_loop(void (*fn)(hbd_t *d, void *arg), void *arg)
{
    px_op_t *op = op_new(OP_CALL, NULL);
    if (op == NULL)
        return HB_ERR_NOMEM;
    op->call = fn;
    op->call_arg = arg;
    op_queue(op);
    return 0;
}

/* ---- the loop side ---- */

static void op_free(px_op_t *op)
{
    hbd_timer_free(op->timeout);
    free(op->procs);
    free(op->msg);
    free(op->data);
    free(op);
}

typedef struct fence_sig {
    uint64_t job, sig;
    uint32_t seq;
} fence_sig_t;

static void fence_release(void *cbdata)
{
    free(cbdata);
}

/* Hand the fence's result to PMIx; the op's data goes with it (freed by fence_release). */
static void fence_finish(px_op_t *op, pmix_status_t st)
{
    for (px_op_t **pp = &g_px.fences; *pp != NULL; pp = &(*pp)->fnext)
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
    hbd_fence_prof(g_px.d, "mcb", 0);
    if (op->mcb != NULL)
        op->mcb(st, data, n, op->cbdata, data ? fence_release : NULL, data);
    else
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
    if (op->mcb == NULL)
        return;
    hb_log_warn("fence of job %s: no release within its PMIX_TIMEOUT of %" PRIu32 " s",
                op->proc.nspace, op->timeout_s);
    op->mcb(PMIX_ERR_TIMEOUT, NULL, 0, op->cbdata, NULL, NULL);
    op->mcb = NULL;
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
    op->fnext = g_px.fences;
    g_px.fences = op;
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
    uint32_t *ranks = malloc(op->nprocs * sizeof(uint32_t)), *nodes = NULL, n = 0, nn = 0;
    uint8_t *on = calloc(d->topo->n_nodes, 1);
    pmix_status_t st = PMIX_ERR_NOMEM;
    if (ranks == NULL || on == NULL)
        goto out_fail;
    for (size_t i = 0; i < op->nprocs; i++) {
        const pmix_proc_t *p = &op->procs[i];
        if (!PMIX_CHECK_NSPACE(p->nspace, j->nspace)) {
            hb_log_warn("job %s: a fence across namespaces (%s) is not supported", j->nspace,
                        p->nspace);
            st = PMIX_ERR_NOT_SUPPORTED;
            goto out_fail;
        }
        if (p->rank == PMIX_RANK_WILDCARD) { /* with other entries: still the whole job */
            free(ranks);
            free(on);
            op->all = 1;
            fence_run(d, op);
            return;
        }
        if (p->rank >= s->size) {
            st = PMIX_ERR_BAD_PARAM;
            goto out_fail;
        }
        ranks[n++] = p->rank;
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
    for (uint32_t i = 0; i < g_px.n_sigs; i++)
        if (g_px.sigs[i].job == s->id && g_px.sigs[i].sig == h)
            sg = &g_px.sigs[i];
    if (sg == NULL) {
        if (g_px.n_sigs == g_px.cap_sigs) {
            uint32_t nc = g_px.cap_sigs ? 2 * g_px.cap_sigs : 8;
            fence_sig_t *ns = realloc(g_px.sigs, nc * sizeof(*ns));
            if (ns == NULL)
                goto out_fail;
            g_px.sigs = ns;
            g_px.cap_sigs = nc;
        }
        sg = &g_px.sigs[g_px.n_sigs++];
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
    hbd_job_t *j = hbd_job_find(d, op->proc.nspace);
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
    op->fnext = g_px.fences;
    g_px.fences = op;
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

static void op_run(hbd_t *d, px_op_t *op)
{
    hbd_job_t *j = hbd_job_find(d, op->proc.nspace);
    hbd_rank_t *r = j ? hbd_job_rank(j, op->proc.rank) : NULL;
    switch (op->kind) {
    case OP_CONNECTED:
        if (r != NULL)
            r->connected = 1;
        break;
    case OP_FINALIZED:
        if (r != NULL)
            r->finalized = 1;
        break;
    case OP_ABORT:
        if (r != NULL)
            hbd_job_rank_abort(r, op->status, op->msg);
        break;
    case OP_FENCE:
        fence_run(d, op);
        return;
    case OP_DMODEX:
        if (g_px.dmodex != NULL)
            g_px.dmodex(d, &op->proc, op->msg, op->timeout_s * 1000u, (hbd_fn_t)op->mcb,
                        op->cbdata);
        else
            op->mcb(PMIX_ERR_NOT_SUPPORTED, NULL, 0, op->cbdata, NULL, NULL);
        op_free(op);
        return;
    case OP_CALL:
        op->call(d, op->call_arg);
        op_free(op);
        return;
    }
    if (op->opcb != NULL)
        op->opcb(r != NULL ? PMIX_SUCCESS : PMIX_ERR_NOT_FOUND, op->cbdata);
    op_free(op);
}

static void queue_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    uint64_t v;
    (void)what;
    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        hb_log_warn("PMIx upcall queue: eventfd read: %m");
    for (;;) {
        pthread_mutex_lock(&g_px.mu);
        px_op_t *op = g_px.head;
        if (op != NULL) {
            g_px.head = op->next;
            if (g_px.head == NULL)
                g_px.tail = NULL;
        }
        pthread_mutex_unlock(&g_px.mu);
        if (op == NULL)
            break;
        op->next = NULL;
        op_run(d, op);
    }
}

/* Remove what PMIx left in its tmp dir (its rendezvous files), then the dir. */
static void tmpdir_remove(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp != NULL) {
        struct dirent *e;
        char p[700];
        while ((e = readdir(dp)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            if (unlink(p) != 0 && errno == EISDIR) {
                tmpdir_remove(p);
            } else if (errno == EISDIR) {
                tmpdir_remove(p);
            }
        }
        closedir(dp);
    }
    if (rmdir(dir) != 0 && errno != ENOENT)
        hb_log_warn("cannot remove %s: %m", dir);
}

int hbd_pmix_start(hbd_t *d)
{
    char nspace[PMIX_MAX_NSLEN + 1];
    pmix_info_t *info;
    pmix_rank_t myrank = d->self;
    int rc;

    g_px.d = d;
    if (snprintf(g_px.tmpdir, sizeof(g_px.tmpdir), "%s/%s.pmix", d->run_dir, d->name) >=
        (int)sizeof(g_px.tmpdir)) {
        hb_log_error("PMIx tmp dir path too long");
        return HB_ERR_CONFIG;
    }
    tmpdir_remove(g_px.tmpdir); /* a crashed daemon's leftovers */
    if (mkdir(g_px.tmpdir, 0700) != 0) {
        hb_log_error("cannot create %s: %m", g_px.tmpdir);
        return HB_ERR_IO;
    }
    g_px.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g_px.efd < 0) {
        hb_log_error("eventfd: %m");
        goto err_dir;
    }
    g_px.ev_q = event_new(d->base, g_px.efd, EV_READ | EV_PERSIST, queue_cb, d);
    if (g_px.ev_q == NULL || event_add(g_px.ev_q, NULL) != 0) {
        hb_log_error("cannot watch the PMIx upcall queue");
        goto err_ev;
    }
    /*
     * PMIx's shared-memory data store (gds ds12/ds21) keeps process-shared mutexes in a
     * segment the clients map; a client killed while it holds one (a rank stopped because
     * its job failed) leaves it locked and the server hangs on it for ever (openpmix issue
     * 1233; seen here in PMIx_server_finalize). The hash store has no such lock; job info is
     * small. The user can still choose with PMIX_MCA_gds.
     */
    setenv("PMIX_MCA_gds", "hash", 0);
    snprintf(nspace, sizeof(nspace), "hibard.%s.%s", d->cfg->cluster, d->name);
    PMIX_INFO_CREATE(info, 6);
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, g_px.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, g_px.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_HOSTNAME, d->name, PMIX_STRING);
    PMIX_INFO_LOAD(&info[3], PMIX_SERVER_NSPACE, nspace, PMIX_STRING);
    PMIX_INFO_LOAD(&info[4], PMIX_SERVER_RANK, &myrank, PMIX_PROC_RANK);
    bool no = false;
    PMIX_INFO_LOAD(&info[5], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    rc = PMIx_server_init(&px_module, info, 6);
    PMIX_INFO_FREE(info, 6);
    if (rc != PMIX_SUCCESS) {
        hb_log_error("PMIx_server_init: %s", PMIx_Error_string(rc));
        goto err_ev;
    }
    g_px.up = 1;
    hb_log_info("PMIx server up (libpmix %s), tmp dir %s, hostname %s", PMIx_Get_version(),
                g_px.tmpdir, d->name);
    return 0;
err_ev:
    if (g_px.ev_q != NULL)
        event_free(g_px.ev_q);
    g_px.ev_q = NULL;
    close(g_px.efd);
    g_px.efd = -1;
err_dir:
    tmpdir_remove(g_px.tmpdir);
    return HB_ERR_INTERNAL;
}

static void *finalize_main(void *arg)
{
    (void)arg;
    PMIx_server_finalize();
    return NULL;
}

/*
 * PMIx_server_finalize, but never a daemon that does not stop: after clients were killed
 * mid-job, libpmix 4.2.2 sometimes blocks in it for ever on one of its own mutexes (left
 * locked, or freed, by its handling of the lost clients). It runs on a helper thread; if it
 * has not returned after HBD_PMIX_FINI_MS the daemon goes on exiting without it.
 */
#define HBD_PMIX_FINI_MS 2000
static void finalize_bounded(void)
{
    pthread_t t;
    struct timespec ts;
    if (pthread_create(&t, NULL, finalize_main, NULL) != 0) {
        PMIx_server_finalize();
        return;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += HBD_PMIX_FINI_MS / 1000;
    ts.tv_nsec += (HBD_PMIX_FINI_MS % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(t, NULL, &ts) != 0) {
        hb_log_warn("PMIx_server_finalize did not return within %d ms (a libpmix lock left "
                    "by a killed client); exiting without it",
                    HBD_PMIX_FINI_MS);
        pthread_detach(t);
    }
}

void hbd_pmix_stop(hbd_t *d)
{
    if (g_px.d == NULL)
        return;
    /* the fences and dmodex requests were answered, the jobs stopped, before (hbd_main.c) */
    /* first: should PMIx hang in finalize (see hbd_pmix_start) and the daemon be killed,
     * nothing of it is left in the run dir */
    tmpdir_remove(g_px.tmpdir);
    if (g_px.up)
        finalize_bounded();
    g_px.up = 0;
    /* PMIx's thread is gone: ops it queued since are answered by nobody */
    while (g_px.head != NULL) {
        px_op_t *op = g_px.head;
        g_px.head = op->next;
        op_free(op);
    }
    g_px.tail = NULL;
    free(g_px.sigs);
    g_px.sigs = NULL;
    g_px.n_sigs = g_px.cap_sigs = 0;
    if (g_px.ev_q != NULL)
        event_free(g_px.ev_q);
    g_px.ev_q = NULL;
    if (g_px.efd >= 0)
        close(g_px.efd);
    g_px.efd = -1;
    tmpdir_remove(g_px.tmpdir);
    g_px.d = NULL;
}

/* ---- namespace registration ---- */

static void info_u32(pmix_info_t *i, const char *key, uint32_t v)
{
    PMIX_INFO_LOAD(i, key, &v, PMIX_UINT32);
}

static void info_u16(pmix_info_t *i, const char *key, uint16_t v)
{
    PMIX_INFO_LOAD(i, key, &v, PMIX_UINT16);
}

static void info_rank(pmix_info_t *i, const char *key, pmix_rank_t v)
{
    PMIX_INFO_LOAD(i, key, &v, PMIX_PROC_RANK);
}

/* Append s to a growing string. */
static int sb_add(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        size_t nc = (*cap + n + 1) * 2;
        char *nb = realloc(*buf, nc);
        if (nb == NULL)
            return HB_ERR_NOMEM;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
    return 0;
}

/*
 * Registration of a job with the PMIx server runs on PMIx's thread; the loop does not wait for
 * it. libpmix 4.2.2 can wedge that thread for good (a lock its error path leaves held when a
 * client dies inside the connection handshake, see hbd_launch.c): its blocking calls then
 * never return, and a loop blocked in one stopped answering the other daemons (they took the
 * node for lost). So the namespace and then each client are registered in the callback form;
 * every answer comes back to the loop as an OP_CALL (px_reg_ans_t), and the job's start goes
 * on from there (px_reg_t.done). Without all answers within HBD_PMIX_CALL_MS the PMIx server
 * is wedged (hbd_pmix_wedged): the job fails with that reason and later jobs are refused at
 * once. A px_reg_t lives until its job is done with it and every call was answered; one whose
 * calls are never answered is left (with the info array PMIx may still read).
 */
#define HBD_PMIX_CALL_MS 10000

typedef struct px_reg {
    hbd_job_t *j; /* NULL once the job is done with it (done called, or the job freed) */
    void (*done)(hbd_job_t *j, int rc);
    char nspace[PMIX_MAX_NSLEN + 1];
    pmix_info_t *info; /* the namespace's: PMIx reads it until it answers */
    size_t ninfo;
    uint32_t pending; /* calls PMIx has not answered */
    int ns_done;      /* the namespace is registered; the clients' turn */
    int rc;           /* first failure */
    hbd_timer_t *timeout;
} px_reg_t;

typedef struct px_reg_ans {
    px_reg_t *reg;
    px_op_t *op; /* queued with the answer: runs reg_answer on the loop */
    pmix_status_t st;
    int ns; /* the namespace's answer (else a client's) */
} px_reg_ans_t;

static void reg_answer(hbd_t *d, void *arg);
static void dereg_done(pmix_status_t st, void *cbdata);

static void reg_free_if_unused(px_reg_t *g)
{
    if (g->j != NULL || g->pending > 0)
        return;
    hbd_timer_free(g->timeout);
    if (g->info != NULL)
        PMIX_INFO_FREE(g->info, g->ninfo);
    free(g);
}

/* The job is done with g: its start goes on with rc. */
static void reg_end(px_reg_t *g, int rc)
{
    hbd_job_t *j = g->j;
    g->j = NULL;
    j->reg = NULL;
    hbd_timer_cancel(g->timeout);
    g->done(j, rc);
    reg_free_if_unused(g);
}

/* PMIx's thread: an answer, to the loop. */
static void reg_cb(pmix_status_t st, void *cbdata)
{
    px_reg_ans_t *a = cbdata;
    a->st = st;
    op_queue(a->op);
}

/* A call made with reg_cb and a: what it returned. Every call gets exactly one answer on the
 * loop: PMIx's callback, or (it answered at once, or refused) queued here. */
static void reg_called(px_reg_ans_t *a, pmix_status_t st)
{
    if (st == PMIX_SUCCESS)
        return;
    a->st = st == PMIX_OPERATION_SUCCEEDED ? PMIX_SUCCESS : st;
    op_queue(a->op);
}

static px_reg_ans_t *reg_ans_new(px_reg_t *g, int ns)
{
    px_reg_ans_t *a = calloc(1, sizeof(*a));
    if (a == NULL || (a->op = op_new(OP_CALL, NULL)) == NULL) {
        free(a);
        return NULL;
    }
    a->reg = g;
    a->ns = ns;
    a->op->call = reg_answer;
    a->op->call_arg = a;
    g->pending++;
    return a;
}

static void reg_clients(px_reg_t *g)
{
    hbd_job_t *j = g->j;
    g->ns_done = 1;
    for (uint32_t k = 0; k < j->n_local; k++) {
        pmix_proc_t p;
        px_reg_ans_t *a = reg_ans_new(g, 0);
        if (a == NULL) {
            g->rc = HB_ERR_NOMEM;
            break;
        }
        PMIX_LOAD_PROCID(&p, j->nspace, j->local[k].rank);
        reg_called(a,
                   PMIx_server_register_client(&p, geteuid(), getegid(), &j->local[k], reg_cb, a));
    }
}

static void reg_answer(hbd_t *d, void *arg)
{
    px_reg_ans_t *a = arg;
    px_reg_t *g = a->reg;
    (void)d;
    g->pending--;
    if (a->st != PMIX_SUCCESS) {
        hb_log_error("job %s: %s: %s", g->nspace,
                     a->ns ? "PMIx_server_register_nspace" : "PMIx_server_register_client",
                     PMIx_Error_string(a->st));
        if (g->rc == 0)
            g->rc = HB_ERR_INTERNAL;
    }
    if (a->ns) {
        PMIX_INFO_FREE(g->info, g->ninfo);
        g->info = NULL;
        if (a->st == PMIX_SUCCESS && g->j != NULL)
            g->j->registered = 1;
        else if (a->st == PMIX_SUCCESS) /* the job went meanwhile */
            PMIx_server_deregister_nspace(g->nspace, dereg_done, NULL);
    }
    int ns = a->ns;
    free(a);
    if (g->j != NULL && ns && g->rc == 0)
        reg_clients(g);
    if (g->j != NULL && g->pending == 0)
        reg_end(g, g->rc);
    else
        reg_free_if_unused(g);
}

static void reg_timeout(hbd_t *d, void *arg)
{
    px_reg_t *g = arg;
    (void)d;
    if (!g_px.wedged)
        hb_log_error("job %s: libpmix's server thread did not answer the %s registration within "
                     "%d ms: it is wedged (libpmix 4.2.2 does this after a client died during "
                     "its connection handshake); no job can run on this node until hibard is "
                     "restarted",
                     g->nspace, g->ns_done ? "clients'" : "namespace's", HBD_PMIX_CALL_MS);
    g_px.wedged = 1;
    reg_end(g, HB_ERR_UNAVAIL);
}

void hbd_pmix_job_register_cancel(hbd_job_t *j)
{
    px_reg_t *g = j->reg;
    if (g == NULL)
        return;
    g->j = NULL;
    j->reg = NULL;
    hbd_timer_cancel(g->timeout);
    reg_free_if_unused(g);
}

int hbd_pmix_wedged(void)
{
    return g_px.wedged;
}

int hbd_pmix_job_register(hbd_job_t *j, void (*done)(hbd_job_t *j, int rc))
{
    hbd_t *d = j->d;
    const hbd_job_spec_t *s = j->spec;
    char *hosts = NULL, *ppn = NULL, *peers = NULL, *regex = NULL, *pregex = NULL, num[32];
    size_t hl = 0, hc = 0, pl = 0, pc = 0, el = 0, ec = 0;
    uint32_t *node_idx = NULL, *lrank = NULL, *nrank = NULL, *count = NULL;
    pmix_info_t *info = NULL;
    size_t ninfo = 0;
    int rc = HB_ERR_NOMEM;
    if (g_px.wedged)
        return HB_ERR_UNAVAIL; /* nothing would answer */

    /* index of each cluster node among the job's nodes, ranks' local/node ranks */
    node_idx = calloc(d->topo->n_nodes, sizeof(uint32_t));
    lrank = calloc(s->size, sizeof(uint32_t));
    count = calloc(j->n_nodes, sizeof(uint32_t));
    nrank = lrank;
    if (node_idx == NULL || lrank == NULL || count == NULL)
        goto out;
    for (uint32_t k = 0; k < j->n_nodes; k++)
        node_idx[j->nodes[k]] = k;
    for (uint32_t r = 0; r < s->size; r++)
        lrank[r] = count[node_idx[s->map[r]]]++;
    /* "n0,n1,..." and "0,1;2,3" */
    for (uint32_t k = 0; k < j->n_nodes; k++) {
        if ((k > 0 && sb_add(&hosts, &hl, &hc, ",")) ||
            sb_add(&hosts, &hl, &hc, d->cfg->nodes[j->nodes[k]].name))
            goto out;
        if (k > 0 && sb_add(&ppn, &pl, &pc, ";"))
            goto out;
        int first = 1;
        for (uint32_t r = 0; r < s->size; r++) {
            if (s->map[r] != j->nodes[k])
                continue;
            snprintf(num, sizeof(num), "%s%" PRIu32, first ? "" : ",", r);
            first = 0;
            if (sb_add(&ppn, &pl, &pc, num))
                goto out;
            if (j->nodes[k] == d->self && sb_add(&peers, &el, &ec, num))
                goto out;
        }
    }
    if (PMIx_generate_regex(hosts, &regex) != PMIX_SUCCESS ||
        PMIx_generate_ppn(ppn, &pregex) != PMIX_SUCCESS) {
        hb_log_error("job %s: cannot generate the node/proc maps", j->nspace);
        rc = HB_ERR_INTERNAL;
        goto out;
    }
    size_t njob = 12;
    PMIX_INFO_CREATE(info, njob + s->size);
    if (info == NULL)
        goto out;
    ninfo = njob + s->size;
    uint32_t i = 0;
    PMIX_INFO_LOAD(&info[i++], PMIX_JOBID, j->nspace, PMIX_STRING);
    info_u32(&info[i++], PMIX_UNIV_SIZE, s->size);
    info_u32(&info[i++], PMIX_JOB_SIZE, s->size);
    info_u32(&info[i++], PMIX_MAX_PROCS, s->size);
    info_u32(&info[i++], PMIX_NUM_NODES, j->n_nodes);
    info_u32(&info[i++], PMIX_JOB_NUM_APPS, 1);
    info_u32(&info[i++], PMIX_LOCAL_SIZE, j->n_local);
    PMIX_INFO_LOAD(&info[i++], PMIX_LOCAL_PEERS, peers ? peers : "", PMIX_STRING);
    info_rank(&info[i++], PMIX_LOCALLDR, j->n_local ? j->local[0].rank : PMIX_RANK_UNDEF);
    PMIX_INFO_LOAD(&info[i++], PMIX_NODE_MAP, regex, PMIX_REGEX);
    PMIX_INFO_LOAD(&info[i++], PMIX_PROC_MAP, pregex, PMIX_REGEX);
    info_u32(&info[i++], PMIX_APPNUM, 0);
    for (uint32_t r = 0; r < s->size; r++, i++) {
        pmix_data_array_t *da;
        PMIX_DATA_ARRAY_CREATE(da, 8, PMIX_INFO);
        if (da == NULL)
            goto out;
        pmix_info_t *pi = da->array;
        info_rank(&pi[0], PMIX_RANK, r);
        info_u16(&pi[1], PMIX_LOCAL_RANK, (uint16_t)lrank[r]);
        info_u16(&pi[2], PMIX_NODE_RANK, (uint16_t)nrank[r]);
        info_u32(&pi[3], PMIX_APPNUM, 0);
        PMIX_INFO_LOAD(&pi[4], PMIX_HOSTNAME, d->cfg->nodes[s->map[r]].name, PMIX_STRING);
        info_u32(&pi[5], PMIX_NODEID, node_idx[s->map[r]]);
        info_rank(&pi[6], PMIX_GLOBAL_RANK, r);
        info_rank(&pi[7], PMIX_APP_RANK, r);
        snprintf(info[i].key, sizeof(info[i].key), "%s", PMIX_PROC_DATA);
        info[i].value.type = PMIX_DATA_ARRAY;
        info[i].value.data.darray = da;
    }
    px_reg_t *g = calloc(1, sizeof(*g));
    px_reg_ans_t *a = g != NULL ? reg_ans_new(g, 1) : NULL;
    if (a == NULL || (g->timeout = hbd_timer_new(d, reg_timeout, g)) == NULL) {
        if (a != NULL) {
            op_free(a->op);
            free(a);
        }
        free(g);
        goto out;
    }
    g->j = j;
    g->done = done;
    snprintf(g->nspace, sizeof(g->nspace), "%s", j->nspace);
    g->info = info; /* PMIx's until it answers */
    g->ninfo = ninfo;
    info = NULL;
    j->reg = g;
    hbd_timer_arm(g->timeout, HBD_PMIX_CALL_MS * 1000ull, 1);
    hbd_fence_prelink(d); /* links the job's first fence will use, made while it starts */
    reg_called(
        a, PMIx_server_register_nspace(j->nspace, (int)j->n_local, g->info, g->ninfo, reg_cb, a));
    rc = 0;
out:
    if (info != NULL)
        PMIX_INFO_FREE(info, ninfo);
    free(regex);
    free(pregex);
    free(hosts);
    free(ppn);
    free(peers);
    free(node_idx);
    free(lrank);
    free(count);
    return rc;
}

static void dereg_done(pmix_status_t st, void *cbdata)
{
    (void)st;
    (void)cbdata;
}

void hbd_pmix_job_cancel_fences(hbd_job_t *j)
{
    /*
     * A fence still in flight (the job is being stopped while some nodes were in it) is
     * answered now with an error, while its clients live and PMIx still knows the
     * namespace: answering after PMIx dropped its tracker (namespace gone) would touch freed
     * memory, and libpmix 4.2.2 was seen to deadlock when clients die inside a fence the
     * host has not answered. The barrier's own completion, whenever it comes, only frees
     * the op.
     */
    for (px_op_t *op = g_px.fences; op != NULL; op = op->fnext)
        if (op->job == j && op->mcb != NULL) {
            op->mcb(PMIX_ERR_COMM_FAILURE, NULL, 0, op->cbdata, NULL, NULL);
            op->mcb = NULL;
            op->job = NULL;
        }
}

void hbd_pmix_job_deregister(hbd_job_t *j)
{
    if (!j->registered || !g_px.up)
        return;
    hbd_pmix_job_cancel_fences(j);
    for (uint32_t i = 0; i < g_px.n_sigs;)
        if (g_px.sigs[i].job == j->spec->id)
            g_px.sigs[i] = g_px.sigs[--g_px.n_sigs];
        else
            i++;
    /*
     * Not the blocking form (NULL callback): with libpmix 4.2.2 a blocking
     * PMIx_server_deregister_client after a client was killed mid-fence sometimes never
     * returns (PMIx's thread waits on one of its own locks). Dropping the namespace drops its
     * clients too, and nothing here needs to wait for it.
     */
    PMIx_server_deregister_nspace(j->nspace, dereg_done, NULL);
    j->registered = 0;
}

int hbd_pmix_setup_fork(hbd_job_t *j, uint32_t lr, char ***env)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, j->nspace, j->local[lr].rank);
    pmix_status_t st = PMIx_server_setup_fork(&p, env);
    if (st != PMIX_SUCCESS) {
        hb_log_error("job %s: PMIx_server_setup_fork(%" PRIu32 "): %s", j->nspace,
                     j->local[lr].rank, PMIx_Error_string(st));
        return HB_ERR_INTERNAL;
    }
    return 0;
}
