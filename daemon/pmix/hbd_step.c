/* hbd_step.c: a job's PMIx step process: the PMIx server of the job's local ranks (hbd_step.h). */
#include "hb_config.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <malloc.h>
#include <pmix.h>
#include <pmix_server.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "hb_log.h"
#include "hbd_step.h"

/* ---- the message format, both ends ---- */

int hbd_pxm_str(const uint8_t *p, size_t len, size_t off, size_t *next)
{
    if (p == NULL || off >= len)
        return -1;
    const uint8_t *z = memchr(p + off, '\0', len - off);
    if (z == NULL)
        return -1;
    *next = (size_t)(z - p) + 1;
    return 0;
}

uint8_t *hbd_step_job_pack(const hbd_step_job_t *jb, size_t *len_p)
{
    size_t len = (3 + (size_t)jb->size) * 4 + strlen(jb->nspace) + 1;
    for (uint32_t k = 0; k < jb->n_nodes; k++)
        len += strlen(jb->names[k]) + 1;
    uint8_t *p = malloc(len), *q = p;
    if (p == NULL)
        return NULL;
    uint32_t h[3] = {jb->size, jb->n_nodes, jb->self};
    memcpy(q, h, sizeof(h));
    q += sizeof(h);
    memcpy(q, jb->map, (size_t)jb->size * 4);
    q += (size_t)jb->size * 4;
    q = (uint8_t *)stpcpy((char *)q, jb->nspace) + 1;
    for (uint32_t k = 0; k < jb->n_nodes; k++)
        q = (uint8_t *)stpcpy((char *)q, jb->names[k]) + 1;
    *len_p = len;
    return p;
}

int hbd_step_job_unpack(const uint8_t *p, size_t len, hbd_step_job_t *jb)
{
    uint32_t h[3];
    size_t off, next;
    memset(jb, 0, sizeof(*jb));
    if (len < sizeof(h))
        return -1;
    memcpy(h, p, sizeof(h));
    if (h[0] == 0 || h[1] == 0 || h[2] >= h[1] || h[0] > (len - sizeof(h)) / 4)
        return -1;
    uint32_t *map = malloc((size_t)h[0] * 4);
    const char **names = calloc(h[1], sizeof(char *));
    if (map == NULL || names == NULL)
        goto bad;
    memcpy(map, p + sizeof(h), (size_t)h[0] * 4);
    for (uint32_t r = 0; r < h[0]; r++)
        if (map[r] >= h[1])
            goto bad;
    off = sizeof(h) + (size_t)h[0] * 4;
    if (hbd_pxm_str(p, len, off, &next) != 0 || next - off > PMIX_MAX_NSLEN + 1 || next == off + 1)
        goto bad;
    jb->nspace = (const char *)p + off;
    for (uint32_t k = 0; k < h[1]; k++) {
        off = next;
        if (hbd_pxm_str(p, len, off, &next) != 0)
            goto bad;
        names[k] = (const char *)p + off;
    }
    jb->size = h[0];
    jb->n_nodes = h[1];
    jb->self = h[2];
    jb->map = map;
    jb->names = names;
    return 0;
bad:
    free(map);
    free(names);
    memset(jb, 0, sizeof(*jb));
    return -1;
}

void hbd_step_job_free(hbd_step_job_t *jb)
{
    free((void *)jb->map);
    free((void *)jb->names);
    jb->map = NULL;
    jb->names = NULL;
}

/* ---- the step process ---- */

/*
 * libpmix's server module gets no context pointer (PMIx_server_init takes none), and there is
 * one PMIx server per process: the step's state is this file's g_st, in the step process only
 * (hibard never touches it). PMIx's progress thread runs the upcalls, which send their message
 * to hibard and remember how to answer. hibard's messages are read by the main thread until
 * the job is registered (registering blocks on PMIx's callbacks), then by PMIx's progress
 * thread itself: the socket is an event of libpmix's own event base (st_attach), so an answer
 * wakes one thread, the one that hands it to the ranks (libpmix's modex callback shifts its
 * work onto that thread: there it runs in the same turn of its loop). Without that base (a
 * libpmix that does not export it, or HIBAR_STEP_READER=main) the main thread reads on,
 * blocking, and answers PMIx from there. Sends are whole messages under a lock.
 */
typedef enum { PD_OP, PD_FENCE, PD_DMODEX } pd_kind_t;
typedef struct st_pend {
    uint32_t id;
    pd_kind_t kind;
    pmix_op_cbfunc_t opcb;
    pmix_modex_cbfunc_t mcb;
    void *cbdata;
    struct st_pend *next;
} st_pend_t;

typedef struct st_state {
    int fd;
    pthread_mutex_t wmu; /* one message at a time on fd */
    pthread_mutex_t mu;  /* pend, next_id */
    st_pend_t *pend;
    uint32_t next_id;
    char nspace[PMIX_MAX_NSLEN + 1];
    char tmpdir[400];
    int job_seen; /* a JOB message came: another one is refused (PMIx's thread must not block) */
    int broken;         /* hibard is gone: nothing more is sent */
    unsigned reserve_n; /* st_reserve calls (PMIx's thread only) */
    unsigned bad;       /* messages dropped */
    int prof;           /* HIBAR_FENCE_PROF: stderr lines as hbd_fence_prof's */
    const char *node;   /* this node's index (the profile's lines) */
    struct event *ev;   /* the socket on PMIx's event base (st_attach), or NULL */
    pthread_cond_t end_cv; /* the reader on PMIx's thread saw the end (under mu) */
    int ended;
} st_state_t;

static st_state_t g_st = {.fd = -1,
                          .wmu = PTHREAD_MUTEX_INITIALIZER,
                          .mu = PTHREAD_MUTEX_INITIALIZER,
                          .end_cv = PTHREAD_COND_INITIALIZER,
                          .next_id = 1,
                          .reserve_n = 1};

/* HIBAR_FENCE_PROF: "fprof NODE STAGE 0 T_NS" on stderr (hibard's log), as hbd_fence_prof. */
static void st_prof(const char *stage)
{
    struct timespec ts;
    if (!g_st.prof)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    fprintf(stderr, "fprof %s %s 0 %" PRIu64 "\n", g_st.node, stage,
            (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec);
}

/* One message to hibard: 0, or -1 once hibard is gone. */
static int st_send(uint16_t type, uint16_t flags, uint32_t id, uint32_t rank, uint32_t arg,
                   int32_t st, const void *a, size_t na, const void *b, size_t nb)
{
    hbd_pxmsg_t h = {.magic = HBD_PXMSG_MAGIC,
                     .type = type,
                     .flags = flags,
                     .id = id,
                     .rank = rank,
                     .arg = arg,
                     .st = st,
                     .len = na + nb};
    struct iovec v[3] = {{&h, sizeof(h)}, {(void *)a, na}, {(void *)b, nb}};
    int iv = 0, rc = 0;
    pthread_mutex_lock(&g_st.wmu);
    while (iv < 3 && !g_st.broken) {
        if (v[iv].iov_len == 0) {
            iv++;
            continue;
        }
        ssize_t n = writev(g_st.fd, &v[iv], 3 - iv);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            g_st.broken = 1;
            break;
        }
        while (iv < 3 && (size_t)n >= v[iv].iov_len)
            n -= (ssize_t)v[iv++].iov_len;
        if (iv < 3) {
            v[iv].iov_base = (uint8_t *)v[iv].iov_base + n;
            v[iv].iov_len -= (size_t)n;
        }
    }
    rc = g_st.broken ? -1 : 0;
    pthread_mutex_unlock(&g_st.wmu);
    return rc;
}

/* The step's log lines go to hibard's log (hibard prefixes the job). */
static void st_log_sink(hb_log_level_t level, const char *line, void *arg)
{
    (void)arg;
    (void)st_send(HBD_PXM_LOG, 0, 0, 0, (uint32_t)level, 0, line, strlen(line), NULL, 0);
}

/* A pending upcall, whole before the list shows it, and not touched after: the main thread
 * takes and frees it with hibard's answer, which may come as soon as the lock is released
 * (ThreadSanitizer saw the callbacks set, and the id read, after it). One of opcb and mcb.
 * Its id into *id_p; -1 without memory. */
static int pend_add(pd_kind_t kind, pmix_op_cbfunc_t opcb, pmix_modex_cbfunc_t mcb, void *cbdata,
                    uint32_t *id_p)
{
    st_pend_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -1;
    p->kind = kind;
    p->opcb = opcb;
    p->mcb = mcb;
    p->cbdata = cbdata;
    pthread_mutex_lock(&g_st.mu);
    p->id = *id_p = g_st.next_id++;
    p->next = g_st.pend;
    g_st.pend = p;
    pthread_mutex_unlock(&g_st.mu);
    return 0;
}

/* Take the pending call id of kind out (NULL: none such). */
static st_pend_t *pend_take(uint32_t id, pd_kind_t kind)
{
    st_pend_t *p = NULL;
    pthread_mutex_lock(&g_st.mu);
    for (st_pend_t **pp = &g_st.pend; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->id == id && (*pp)->kind == kind) {
            p = *pp;
            *pp = p->next;
            break;
        }
    pthread_mutex_unlock(&g_st.mu);
    return p;
}

/* ---- upcalls: PMIx's thread ---- */

/* An upcall answered by hibard's OPDONE. */
static pmix_status_t up_op(uint16_t type, const pmix_proc_t *proc, int status, const char *msg,
                           pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    uint32_t id;
    if (pend_add(PD_OP, cbfunc, NULL, cbdata, &id) != 0)
        return PMIX_ERR_NOMEM;
    if (st_send(type, 0, id, proc->rank, 0, status, msg, msg ? strlen(msg) : 0, NULL, 0) != 0) {
        free(pend_take(id, PD_OP));
        return PMIX_ERR_COMM_FAILURE;
    }
    return PMIX_SUCCESS;
}

static pmix_status_t up_connected(const pmix_proc_t *proc, void *obj, pmix_info_t info[],
                                  size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)obj;
    (void)info;
    (void)ninfo;
    return up_op(HBD_PXM_CONNECTED, proc, 0, NULL, cbfunc, cbdata);
}

static pmix_status_t up_finalized(const pmix_proc_t *proc, void *obj, pmix_op_cbfunc_t cbfunc,
                                  void *cbdata)
{
    (void)obj;
    return up_op(HBD_PXM_FINALIZED, proc, 0, NULL, cbfunc, cbdata);
}

static pmix_status_t up_abort(const pmix_proc_t *proc, void *obj, int status, const char msg[],
                              pmix_proc_t procs[], size_t nprocs, pmix_op_cbfunc_t cbfunc,
                              void *cbdata)
{
    (void)obj;
    (void)procs;
    (void)nprocs; /* any subset: hibar aborts the whole job */
    return up_op(HBD_PXM_ABORT, proc, status, msg != NULL ? msg : "", cbfunc, cbdata);
}

/*
 * libpmix 4.2.2's server leaks about one copy of a fence's collected data on every fence with
 * data (pmix_gds_base_store_modex: heaptrack, 32 ranks x 1 KiB: 44 KB per fence and node, all
 * allocated on PMIx's thread): that is why this process ends with its job. Every leaked page
 * is a fresh one, so each fence page-faulted its way through new heap on the release's
 * critical path. PMIx's thread keeps a reserve instead: every ST_RESERVE_EVERY fences it takes
 * ST_RESERVE bytes at the top of its arena, pre-faults them in one madvise
 * (MADV_POPULATE_WRITE) and gives them back; the arena keeps them (the trim threshold set in
 * hbd_step_main), and the leak eats into pages already there (doc/fence.md).
 */
#define ST_RESERVE (1u << 20)
#define ST_RESERVE_EVERY 8
/*
 * A step is a fresh process: its heap has no page yet, and its first fences with data faulted
 * their way through libpmix's first allocations (8 hosts x 1 rank, 1 KiB: the first fence 3.4
 * times hibard's in-daemon server's). One arena for both threads (M_ARENA_MAX 1: PMIx's thread
 * allocates from the main arena), pre-faulted by ST_WARM bytes once the job is registered, while
 * its ranks start; and the first fence skips st_reserve (reserve_n starts at 1).
 */
#define ST_WARM (4u << 20)

/* Take n bytes at the top of the arena, fault them in, give them back (the arena keeps them). */
static void st_prefault(size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *p = malloc(n);
    if (p == NULL || pg <= 0)
        goto out;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t e = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE); /* best effort (Linux >= 5.14) */
out:
    free(p);
}

static void st_reserve(void)
{
    if (g_st.reserve_n++ % ST_RESERVE_EVERY == 0)
        st_prefault(ST_RESERVE);
}

/* PMIX_TIMEOUT among info, in seconds (0: none). */
static uint32_t info_timeout(const pmix_info_t info[], size_t ninfo)
{
    uint32_t t = 0;
    for (size_t i = 0; i < ninfo; i++) {
        if (!PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT))
            continue;
        if (info[i].value.type == PMIX_INT && info[i].value.data.integer > 0)
            t = (uint32_t)info[i].value.data.integer;
        else if (info[i].value.type == PMIX_UINT32)
            t = info[i].value.data.uint32;
    }
    return t > 1000000 ? 1000000 : t;
}

static pmix_status_t up_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
                              void *cbdata)
{
    uint16_t flags = 0;
    st_prof("st_up");
    if (nprocs == 0 || procs == NULL || nprocs > UINT32_MAX / 4 - 1)
        return PMIX_ERR_BAD_PARAM;
    for (size_t i = 0; i < nprocs; i++) {
        if (!PMIX_CHECK_NSPACE(procs[i].nspace, g_st.nspace)) {
            hb_log_warn("a fence across namespaces (%s) is not supported", procs[i].nspace);
            return PMIX_ERR_NOT_SUPPORTED;
        }
        if (procs[i].rank == PMIX_RANK_WILDCARD) /* with other entries: still the whole job */
            flags |= HBD_PXM_ALL;
    }
    for (size_t i = 0; i < ninfo; i++)
        if (PMIX_CHECK_KEY(&info[i], PMIX_COLLECT_DATA) && PMIX_INFO_TRUE(&info[i]))
            flags |= HBD_PXM_COLLECT;
    if (ndata > 0)
        st_reserve();
    uint32_t n = flags & HBD_PXM_ALL ? 0 : (uint32_t)nprocs;
    uint32_t *head = malloc((1 + (size_t)n) * 4);
    uint32_t id;
    if (head == NULL || pend_add(PD_FENCE, NULL, cbfunc, cbdata, &id) != 0) {
        free(head);
        return PMIX_ERR_NOMEM;
    }
    head[0] = n;
    for (uint32_t i = 0; i < n; i++)
        head[1 + i] = procs[i].rank;
    int rc = st_send(HBD_PXM_FENCE, flags, id, 0, info_timeout(info, ninfo), 0, head,
                     (1 + (size_t)n) * 4, data, data != NULL ? ndata : 0);
    free(head);
    if (rc != 0) {
        free(pend_take(id, PD_FENCE));
        return PMIX_ERR_COMM_FAILURE; /* the data stays libpmix's */
    }
    /* the node's blob is ours from a successful return on: libpmix never frees it */
    free(data);
    return PMIX_SUCCESS;
}

static pmix_status_t up_dmodex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                               pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    const char *key = "";
    for (size_t i = 0; i < ninfo; i++)
        if (PMIX_CHECK_KEY(&info[i], PMIX_REQUIRED_KEY) && info[i].value.type == PMIX_STRING &&
            info[i].value.data.string != NULL && key[0] == '\0')
            key = info[i].value.data.string; /* the key the requester waits for */
    size_t nl = strnlen(proc->nspace, PMIX_MAX_NSLEN), kl = strnlen(key, PMIX_MAX_KEYLEN);
    char buf[PMIX_MAX_NSLEN + PMIX_MAX_KEYLEN + 2];
    memcpy(buf, proc->nspace, nl);
    buf[nl] = '\0';
    memcpy(buf + nl + 1, key, kl);
    buf[nl + 1 + kl] = '\0';
    uint32_t id;
    if (pend_add(PD_DMODEX, NULL, cbfunc, cbdata, &id) != 0)
        return PMIX_ERR_NOMEM;
    if (st_send(HBD_PXM_DMODEX, 0, id, proc->rank, info_timeout(info, ninfo), 0, buf, nl + kl + 2,
                NULL, 0) != 0) {
        free(pend_take(id, PD_DMODEX));
        return PMIX_ERR_COMM_FAILURE;
    }
    return PMIX_SUCCESS;
}

/*
 * Job control: hibar does none for its clients (hibar-run and hibard stop jobs). But libpmix
 * takes a client's cleanup registrations (PMIX_REGISTER_CLEANUP, PMIX_REGISTER_CLEANUP_DIR:
 * Open MPI registers each rank's job session directory, /tmp/ompi.HOST.UID/jf.N/M, and its
 * shared-memory files so) only from a server whose module has this upcall: it keeps them
 * itself, removes them when the client goes, and calls here only for what is left. Without it
 * every Open MPI job left its session directory behind (Open MPI leaves the empty jf.N).
 */
static pmix_status_t up_job_control(const pmix_proc_t *requestor, const pmix_proc_t targets[],
                                    size_t ntargets, const pmix_info_t directives[], size_t ndirs,
                                    pmix_info_cbfunc_t cbfunc, void *cbdata)
{
    (void)requestor, (void)targets, (void)ntargets, (void)directives, (void)ndirs;
    (void)cbfunc, (void)cbdata;
    return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_server_module_t st_module = {
    .client_connected2 = up_connected,
    .client_finalized = up_finalized,
    .abort = up_abort,
    .fence_nb = up_fence,
    .direct_modex = up_dmodex,
    .job_control = up_job_control,
};

/* ---- blocking calls of the main thread ---- */

typedef struct st_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    pmix_status_t st;
} st_wait_t;

static void wait_cb(pmix_status_t st, void *cbdata)
{
    st_wait_t *w = cbdata;
    pthread_mutex_lock(&w->mu);
    w->st = st;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* A call made with wait_cb and w: its status once answered. A wedged libpmix never answers:
 * hibard then ends this process (HBD_PMIX_CALL_MS). */
static pmix_status_t wait_for(st_wait_t *w, pmix_status_t st)
{
    if (st != PMIX_SUCCESS)
        return st == PMIX_OPERATION_SUCCEEDED ? PMIX_SUCCESS : st;
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return w->st;
}

#define ST_WAIT_INIT                                                                               \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0                                  \
    }

/* ---- the job's registration ---- */

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
static int sb_add(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = (*cap + n + 1) * 2;
        char *nb = realloc(*buf, nc);
        if (nb == NULL)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 0;
}

/* The job's namespace info (job level, then each rank's): malloc'd, *n_p entries, or NULL. */
static pmix_info_t *job_info(const hbd_step_job_t *jb, size_t *n_p)
{
    char *hosts = NULL, *ppn = NULL, *peers = NULL, *regex = NULL, *pregex = NULL, num[32];
    size_t hl = 0, hc = 0, pl = 0, pc = 0, el = 0, ec = 0;
    uint32_t *lrank = calloc(jb->size, sizeof(uint32_t)), *count = calloc(jb->n_nodes, 4);
    uint32_t n_local = 0, leader = PMIX_RANK_UNDEF;
    pmix_info_t *info = NULL, *ret = NULL;
    size_t ninfo = 0;
    int bad = lrank == NULL || count == NULL;
    for (uint32_t r = 0; r < jb->size && !bad; r++)
        lrank[r] = count[jb->map[r]]++;
    for (uint32_t k = 0; k < jb->n_nodes && !bad; k++) { /* "n0,n1,..." and "0,1;2,3" */
        bad |= (k > 0 && sb_add(&hosts, &hl, &hc, ",", 1)) ||
               sb_add(&hosts, &hl, &hc, jb->names[k], strlen(jb->names[k])) ||
               (k > 0 && sb_add(&ppn, &pl, &pc, ";", 1));
        int first = 1;
        for (uint32_t r = 0; r < jb->size && !bad; r++) {
            if (jb->map[r] != k)
                continue;
            int n = snprintf(num, sizeof(num), "%s%" PRIu32, first ? "" : ",", r);
            first = 0;
            bad |= sb_add(&ppn, &pl, &pc, num, (size_t)n) != 0;
            if (k == jb->self) { /* this node's part of ppn: no ',' before its first */
                bad |= sb_add(&peers, &el, &ec, num, (size_t)n) != 0;
                leader = n_local++ == 0 ? r : leader;
            }
        }
    }
    if (bad)
        goto out;
    if (PMIx_generate_regex(hosts, &regex) != PMIX_SUCCESS ||
        PMIx_generate_ppn(ppn, &pregex) != PMIX_SUCCESS) {
        hb_log_error("job %s: cannot generate the node/proc maps", jb->nspace);
        goto out;
    }
    size_t njob = 12;
    ninfo = njob + jb->size;
    PMIX_INFO_CREATE(info, ninfo);
    if (info == NULL)
        goto out;
    uint32_t i = 0;
    PMIX_INFO_LOAD(&info[i++], PMIX_JOBID, jb->nspace, PMIX_STRING);
    info_u32(&info[i++], PMIX_UNIV_SIZE, jb->size);
    info_u32(&info[i++], PMIX_JOB_SIZE, jb->size);
    info_u32(&info[i++], PMIX_MAX_PROCS, jb->size);
    info_u32(&info[i++], PMIX_NUM_NODES, jb->n_nodes);
    info_u32(&info[i++], PMIX_JOB_NUM_APPS, 1);
    info_u32(&info[i++], PMIX_LOCAL_SIZE, n_local);
    PMIX_INFO_LOAD(&info[i++], PMIX_LOCAL_PEERS, peers ? peers : "", PMIX_STRING);
    info_rank(&info[i++], PMIX_LOCALLDR, leader);
    PMIX_INFO_LOAD(&info[i++], PMIX_NODE_MAP, regex, PMIX_REGEX);
    PMIX_INFO_LOAD(&info[i++], PMIX_PROC_MAP, pregex, PMIX_REGEX);
    info_u32(&info[i++], PMIX_APPNUM, 0);
    for (uint32_t r = 0; r < jb->size; r++, i++) {
        pmix_data_array_t *da;
        PMIX_DATA_ARRAY_CREATE(da, 8, PMIX_INFO);
        if (da == NULL)
            goto out;
        pmix_info_t *pi = da->array;
        info_rank(&pi[0], PMIX_RANK, r);
        info_u16(&pi[1], PMIX_LOCAL_RANK, (uint16_t)lrank[r]);
        info_u16(&pi[2], PMIX_NODE_RANK, (uint16_t)lrank[r]);
        info_u32(&pi[3], PMIX_APPNUM, 0);
        PMIX_INFO_LOAD(&pi[4], PMIX_HOSTNAME, jb->names[jb->map[r]], PMIX_STRING);
        info_u32(&pi[5], PMIX_NODEID, jb->map[r]);
        info_rank(&pi[6], PMIX_GLOBAL_RANK, r);
        info_rank(&pi[7], PMIX_APP_RANK, r);
        snprintf(info[i].key, sizeof(info[i].key), "%s", PMIX_PROC_DATA);
        info[i].value.type = PMIX_DATA_ARRAY;
        info[i].value.data.darray = da;
    }
    ret = info;
    info = NULL;
    *n_p = ninfo;
out:
    if (info != NULL)
        PMIX_INFO_FREE(info, ninfo);
    free(regex);
    free(pregex);
    free(hosts);
    free(ppn);
    free(peers);
    free(lrank);
    free(count);
    return ret;
}

/* Register the job and its local clients; answer REGISTERED with each rank's environment. */
static void st_register(const uint8_t *pl, size_t len)
{
    hbd_step_job_t jb;
    pmix_status_t st = PMIX_ERR_BAD_PARAM;
    char *env = NULL;
    size_t el = 0, ec = 0;
    uint32_t n_local = 0;
    pmix_info_t *info = NULL;
    size_t ninfo = 0;
    if (g_st.job_seen++ > 0 || hbd_step_job_unpack(pl, len, &jb) != 0) {
        hb_log_error("a JOB message that does not parse (or a second one): refused");
        (void)st_send(HBD_PXM_REGISTERED, 0, 0, 0, 0, PMIX_ERR_BAD_PARAM, NULL, 0, NULL, 0);
        return;
    }
    snprintf(g_st.nspace, sizeof(g_st.nspace), "%s", jb.nspace);
    for (uint32_t r = 0; r < jb.size; r++)
        n_local += jb.map[r] == jb.self;
    st = PMIX_ERR_NOMEM;
    if ((info = job_info(&jb, &ninfo)) == NULL)
        goto out;
    st_wait_t w = ST_WAIT_INIT;
    st = wait_for(&w,
                  PMIx_server_register_nspace(jb.nspace, (int)n_local, info, ninfo, wait_cb, &w));
    if (st != PMIX_SUCCESS) {
        hb_log_error("job %s: PMIx_server_register_nspace: %s", jb.nspace, PMIx_Error_string(st));
        goto out;
    }
    for (uint32_t r = 0; r < jb.size && st == PMIX_SUCCESS; r++) {
        if (jb.map[r] != jb.self)
            continue;
        pmix_proc_t p;
        st_wait_t wc = ST_WAIT_INIT;
        char **e = NULL;
        PMIX_LOAD_PROCID(&p, jb.nspace, r);
        st = wait_for(&wc,
                      PMIx_server_register_client(&p, geteuid(), getegid(), NULL, wait_cb, &wc));
        if (st != PMIX_SUCCESS) {
            hb_log_error("job %s: PMIx_server_register_client(%" PRIu32 "): %s", jb.nspace, r,
                         PMIx_Error_string(st));
            break;
        }
        st = PMIx_server_setup_fork(&p, &e);
        if (st != PMIX_SUCCESS)
            hb_log_error("job %s: PMIx_server_setup_fork(%" PRIu32 "): %s", jb.nspace, r,
                         PMIx_Error_string(st));
        for (size_t k = 0; e != NULL && e[k] != NULL; k++) {
            if (st == PMIX_SUCCESS && sb_add(&env, &el, &ec, e[k], strlen(e[k]) + 1) != 0)
                st = PMIX_ERR_NOMEM;
            free(e[k]);
        }
        free(e);
        if (st == PMIX_SUCCESS && sb_add(&env, &el, &ec, "", 1) != 0) /* the rank's end */
            st = PMIX_ERR_NOMEM;
    }
out:
    if (info != NULL)
        PMIX_INFO_FREE(info, ninfo);
    (void)st_send(HBD_PXM_REGISTERED, 0, 0, 0, n_local, st, env, st == PMIX_SUCCESS ? el : 0, NULL,
                  0);
    free(env);
    hbd_step_job_free(&jb);
    if (st == PMIX_SUCCESS)
        st_prefault(ST_WARM); /* while the ranks start */
}

/* ---- hibard's answers and requests: the main thread ---- */

static void release(void *cbdata)
{
    free(cbdata);
}

/* The answer to a fence or direct modex of ours. */
/* The call an answer of hibard's is for; NULL (dropped, counted, logged once) if none. */
static st_pend_t *answered(const hbd_pxmsg_t *h, pd_kind_t kind)
{
    st_pend_t *p = pend_take(h->id, kind);
    if (p == NULL && g_st.bad++ == 0)
        hb_log_warn("an answer from hibard to no call of ours (id %" PRIu32 "): dropped", h->id);
    return p;
}

/* pl (malloc'd, the message's payload) goes to libpmix as it is: no copy; it frees it. */
static void st_answer(const hbd_pxmsg_t *h, uint8_t *pl, pd_kind_t kind)
{
    st_pend_t *p = answered(h, kind);
    if (p == NULL || p->mcb == NULL || h->st != PMIX_SUCCESS || h->len == 0) {
        free(pl);
        pl = NULL;
    }
    if (p == NULL)
        return;
    if (kind == PD_FENCE)
        st_prof("st_rx");
    if (p->mcb != NULL)
        p->mcb(h->st, (char *)pl, pl ? h->len : 0, p->cbdata, pl ? release : NULL, pl);
    free(p);
}

static void st_opdone(const hbd_pxmsg_t *h)
{
    st_pend_t *p = answered(h, PD_OP);
    if (p == NULL)
        return;
    if (p->opcb != NULL)
        p->opcb(h->st, p->cbdata);
    free(p);
}

/* Answer every fence in flight with st (hibard ends the job). */
static void st_cancel(pmix_status_t st)
{
    pthread_mutex_lock(&g_st.mu);
    st_pend_t *keep = NULL, *gone = NULL;
    while (g_st.pend != NULL) {
        st_pend_t *p = g_st.pend;
        g_st.pend = p->next;
        if (p->kind == PD_FENCE) {
            p->next = gone;
            gone = p;
        } else {
            p->next = keep;
            keep = p;
        }
    }
    g_st.pend = keep;
    pthread_mutex_unlock(&g_st.mu);
    while (gone != NULL) {
        st_pend_t *p = gone;
        gone = p->next;
        p->mcb(st, NULL, 0, p->cbdata, NULL, NULL);
        free(p);
    }
}

typedef struct st_req {
    uint32_t id;
    pmix_info_t opt; /* PMIX_OPTIONAL, read by PMIx until the probe's answer */
    /* the key looked up: PMIx_Get_nb keeps the caller's pointer (libpmix 4.2's
     * pmix_client_get.c: cb->key) and reads it on its thread after the call returned, when
     * the message that carried it is freed (found by AddressSanitizer in
     * tests/fence_pmix.sh's direct modex) */
    char key[PMIX_MAX_KEYLEN + 1];
} st_req_t;

/* PMIx's thread: the answer of a look-up of a key. */
static void probed(pmix_status_t st, pmix_value_t *v, void *cbdata)
{
    st_req_t *q = cbdata;
    if (v != NULL)
        PMIX_VALUE_RELEASE(v); /* the callback's to release (libpmix 4.2 pmix_client_get.c) */
    (void)st_send(HBD_PXM_PROBED, 0, q->id, 0, 0, st == PMIX_SUCCESS ? 0 : -1, NULL, 0, NULL, 0);
    PMIX_INFO_DESTRUCT(&q->opt);
    free(q);
}

/* PMIx's thread: a process' committed data. */
static void served(pmix_status_t status, char *data, size_t sz, void *cbdata)
{
    st_req_t *q = cbdata;
    (void)st_send(HBD_PXM_FETCHED, 0, q->id, 0, 0, status, data,
                  status == PMIX_SUCCESS && data != NULL ? sz : 0, NULL, 0);
    free(q);
}

/* PROBE (key given) or FETCH: the process' nspace and key from the payload. */
static void st_request(const hbd_pxmsg_t *h, const uint8_t *pl)
{
    size_t k0, end;
    pmix_proc_t p;
    st_req_t *q = NULL;
    if (hbd_pxm_str(pl, h->len, 0, &k0) != 0 || k0 > PMIX_MAX_NSLEN + 1 ||
        (h->type == HBD_PXM_PROBE &&
         (hbd_pxm_str(pl, h->len, k0, &end) != 0 || end - k0 > PMIX_MAX_KEYLEN + 1))) {
        if (g_st.bad++ == 0)
            hb_log_warn("a request from hibard that does not parse: dropped");
        return;
    }
    PMIX_LOAD_PROCID(&p, (const char *)pl, h->rank);
    pmix_status_t st = PMIX_ERR_NOMEM;
    if ((q = calloc(1, sizeof(*q))) != NULL) {
        q->id = h->id;
        if (h->type == HBD_PXM_PROBE) {
            bool yes = true;
            PMIX_INFO_LOAD(&q->opt, PMIX_OPTIONAL, &yes, PMIX_BOOL);
            memcpy(q->key, pl + k0, end - k0); /* with its NUL: end - k0 <= PMIX_MAX_KEYLEN + 1 */
            st = PMIx_Get_nb(&p, q->key, &q->opt, 1, probed, q);
        } else {
            st = PMIx_server_dmodex_request(&p, served, q);
        }
    }
    if (st == PMIX_SUCCESS)
        return;
    free(q); /* refused: no answer comes from PMIx; answered here */
    (void)st_send(h->type == HBD_PXM_PROBE ? HBD_PXM_PROBED : HBD_PXM_FETCHED, 0, h->id, 0, 0,
                  h->type == HBD_PXM_PROBE ? -1 : st, NULL, 0, NULL, 0);
}

/* A message from hibard being read: its header, then its payload (malloc'd). */
typedef struct st_rx {
    hbd_pxmsg_t h;
    size_t hgot;
    uint8_t *pl;
    size_t pgot;
} st_rx_t;

/*
 * Read on into rx (flags: 0 blocks, MSG_DONTWAIT does not). 1: a whole message, rx->h and
 * rx->pl (the caller's now; NULL when len is 0); 0: not yet (MSG_DONTWAIT); -1: the socket
 * closed or failed, or the stream is broken (logged).
 */
static int st_recv(st_rx_t *rx, int flags)
{
    while (rx->hgot < sizeof(rx->h) || rx->pgot < rx->h.len) {
        uint8_t *at;
        size_t want;
        if (rx->hgot < sizeof(rx->h)) {
            at = (uint8_t *)&rx->h + rx->hgot;
            want = sizeof(rx->h) - rx->hgot;
        } else {
            at = rx->pl + rx->pgot;
            want = rx->h.len - rx->pgot;
        }
        ssize_t n = recv(g_st.fd, at, want, flags);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && flags != 0)
            return 0;
        if (n <= 0)
            return -1;
        if (rx->hgot < sizeof(rx->h)) {
            rx->hgot += (size_t)n;
            if (rx->hgot < sizeof(rx->h))
                continue;
            if (rx->h.magic != HBD_PXMSG_MAGIC || rx->h.len > HBD_PXMSG_MAX_LEN) {
                hb_log_error("a message from hibard with a bad header: the stream is lost");
                return -1;
            }
            if (rx->h.len > 0 && (rx->pl = malloc(rx->h.len)) == NULL) {
                hb_log_error("no memory for a message of %" PRIu64 " bytes", rx->h.len);
                return -1;
            }
        } else {
            rx->pgot += (size_t)n;
        }
    }
    rx->hgot = 0;
    rx->pgot = 0;
    return 1;
}

/* One message of hibard's; pl (malloc'd or NULL) is taken over. */
static void st_msg(const hbd_pxmsg_t *h, uint8_t *pl)
{
    switch (h->type) {
    case HBD_PXM_JOB:
        st_register(pl, h->len);
        break;
    case HBD_PXM_OPDONE:
        st_opdone(h);
        break;
    case HBD_PXM_FENCE_DONE:
        st_answer(h, pl, PD_FENCE);
        return;
    case HBD_PXM_DMODEX_DONE:
        st_answer(h, pl, PD_DMODEX);
        return;
    case HBD_PXM_PROBE:
    case HBD_PXM_FETCH:
        st_request(h, pl);
        break;
    case HBD_PXM_CANCEL:
        st_cancel(PMIX_ERR_COMM_FAILURE);
        break;
    default:
        if (g_st.bad++ == 0)
            hb_log_warn("a message of unknown type %u from hibard: dropped", h->type);
    }
    free(pl);
}

/* Read and handle hibard's messages, blocking, until it closes the socket (or breaks the
 * stream: 0), or, with until_job, until the JOB message was handled (1). */
static int st_loop(st_rx_t *rx, int until_job)
{
    while (st_recv(rx, 0) == 1) {
        uint16_t type = rx->h.type;
        st_msg(&rx->h, rx->pl);
        rx->pl = NULL;
        if (until_job && type == HBD_PXM_JOB)
            return 1;
    }
    return 0;
}

/* PMIx's progress thread: the socket is readable. */
static void st_readable(evutil_socket_t fd, short what, void *arg)
{
    st_rx_t *rx = arg;
    int rc;
    (void)fd;
    (void)what;
    while ((rc = st_recv(rx, MSG_DONTWAIT)) == 1) {
        st_msg(&rx->h, rx->pl);
        rx->pl = NULL;
    }
    if (rc == 0)
        return;
    event_del(g_st.ev); /* the end: the main thread goes on (st_detach) */
    (void)shutdown(g_st.fd, SHUT_RDWR); /* a broken stream: its poll sees it too */
    pthread_mutex_lock(&g_st.mu);
    g_st.ended = 1;
    pthread_cond_signal(&g_st.end_cv);
    pthread_mutex_unlock(&g_st.mu);
}

/*
 * Hand the socket to PMIx's progress thread: an event on libpmix's own event base, which
 * libpmix 4 exports as pmix_progress_thread_init (NULL: the shared thread's base, a reference
 * taken, given back at once by pmix_progress_thread_stop: the thread ends with
 * PMIx_server_finalize as before). hibard links libevent itself, the library libpmix's base
 * lives in (one copy per process), made thread-safe by libpmix (evthread_use_pthreads). 0, or
 * -1 when that base is not there (the main thread reads on).
 */
static int st_attach(st_rx_t *rx)
{
    typedef struct event_base *(*init_fn)(const char *);
    typedef int (*stop_fn)(const char *);
    init_fn init;
    stop_fn stop;
    const char *e = getenv("HIBAR_STEP_READER");
    if (e != NULL && strcmp(e, "main") == 0)
        return -1;
#if PMIX_VERSION_MAJOR != 4
    return -1; /* not libpmix's public API: its reference counting is known from 4.x (4.2.2) */
#endif
    *(void **)&init = dlsym(RTLD_DEFAULT, "pmix_progress_thread_init");
    *(void **)&stop = dlsym(RTLD_DEFAULT, "pmix_progress_thread_stop");
    if (init == NULL || stop == NULL)
        return -1;
    struct event_base *base = init(NULL);
    if (base == NULL)
        return -1;
    (void)stop(NULL); /* the reference init took: the thread still runs, PMIx's own holds */
    g_st.ev = event_new(base, g_st.fd, EV_READ | EV_PERSIST, st_readable, rx);
    if (g_st.ev == NULL || event_add(g_st.ev, NULL) != 0) {
        hb_log_warn("cannot read hibard's messages on PMIx's thread: on the main thread");
        if (g_st.ev != NULL)
            event_free(g_st.ev);
        g_st.ev = NULL;
        return -1;
    }
    hb_log_debug("hibard's messages are read on PMIx's progress thread");
    return 0;
}

/*
 * Wait for the end: hibard closed the socket (or the reader shut it down on a broken stream),
 * seen here without reading (POLLRDHUP), then the reader on PMIx's thread seeing it too, for
 * at most ST_END_MS; its event goes before finalize. libpmix 4.2.2 sometimes wedges its thread
 * (a client dying inside its handshake; tests/run_wedge.sh): then nobody reads, and the step
 * ends without it, leaving the event alone.
 */
#define ST_END_MS 2000
static void st_detach(void)
{
    struct pollfd pf = {.fd = g_st.fd, .events = POLLRDHUP};
    struct timespec ts;
    while (poll(&pf, 1, -1) < 0 && errno == EINTR)
        ;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ST_END_MS / 1000;
    pthread_mutex_lock(&g_st.mu);
    while (!g_st.ended && pthread_cond_timedwait(&g_st.end_cv, &g_st.mu, &ts) == 0)
        ;
    int ended = g_st.ended;
    pthread_mutex_unlock(&g_st.mu);
    if (!ended) {
        hb_log_warn("libpmix's thread did not read hibard's last messages within %d ms (wedged?): "
                    "ending without it",
                    ST_END_MS);
        return;
    }
    event_free(g_st.ev); /* waits for st_readable, should it still run on PMIx's thread */
    g_st.ev = NULL;
}

void hbd_step_rmdir(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp != NULL) {
        struct dirent *e;
        char p[700];
        while ((e = readdir(dp)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            if (unlink(p) != 0 && errno == EISDIR)
                hbd_step_rmdir(p);
        }
        closedir(dp);
    }
    if (rmdir(dir) != 0 && errno != ENOENT)
        hb_log_warn("cannot remove %s: %m", dir);
}

static void *finalize_main(void *arg)
{
    (void)arg;
    PMIx_server_finalize();
    return NULL;
}

/*
 * PMIx_server_finalize, bounded: after clients were killed mid-job libpmix 4.2.2 sometimes
 * blocks in it for ever on one of its own mutexes. It runs on a helper thread; the step exits
 * without it after ST_FINI_MS.
 */
#define ST_FINI_MS 2000
static void finalize_bounded(void)
{
    pthread_t t;
    struct timespec ts;
    if (pthread_create(&t, NULL, finalize_main, NULL) != 0)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ST_FINI_MS / 1000;
    if (pthread_timedjoin_np(t, NULL, &ts) != 0)
        hb_log_warn("PMIx_server_finalize did not return within %d ms; exiting without it",
                    ST_FINI_MS);
}

int hbd_step_main(int argc, char **argv)
{
    char *end = NULL;
    if (argc != 8) {
        fprintf(stderr, "usage: hibard %s FD TMPDIR HOSTNAME SERVER_NSPACE RANK PPID\n",
                HBD_STEP_ARG);
        return 2;
    }
    long fd = strtol(argv[2], &end, 10);
    long ppid = strtol(argv[7], NULL, 10);
    if (*end != '\0' || fd < 0 || fd > 1 << 20)
        return 2;
    /* a step never outlives its daemon, even a SIGKILLed one */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)ppid)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    mallopt(M_TRIM_THRESHOLD, 256 << 20); /* keeps st_reserve's pages (as hbd_coll_init) */
    mallopt(M_ARENA_MAX, 1);              /* before PMIx's thread: one arena, pre-faulted */
    g_st.fd = (int)fd;
    g_st.node = argv[6];
    const char *prof = getenv("HIBAR_FENCE_PROF");
    g_st.prof = prof != NULL && *prof != '\0' && *prof != '0';
    hb_log_set_ident("hibard-step");
    hb_log_set_sink(st_log_sink, NULL);
    snprintf(g_st.tmpdir, sizeof(g_st.tmpdir), "%s", argv[3]);
    if (mkdir(g_st.tmpdir, 0700) != 0 && errno != EEXIST) {
        hb_log_error("cannot create %s: %m", g_st.tmpdir);
        return 1;
    }
    /* PMIx's shared-memory data store (gds ds12/ds21) keeps process-shared mutexes that a
     * killed client leaves locked (openpmix issue 1233); the hash store has none. */
    setenv("PMIX_MCA_gds", "hash", 0);
    pmix_rank_t myrank = (pmix_rank_t)strtoul(argv[6], NULL, 10);
    pmix_info_t *info;
    bool no = false;
    PMIX_INFO_CREATE(info, 6);
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, g_st.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, g_st.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_HOSTNAME, argv[4], PMIX_STRING);
    PMIX_INFO_LOAD(&info[3], PMIX_SERVER_NSPACE, argv[5], PMIX_STRING);
    PMIX_INFO_LOAD(&info[4], PMIX_SERVER_RANK, &myrank, PMIX_PROC_RANK);
    PMIX_INFO_LOAD(&info[5], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    pmix_status_t rc = PMIx_server_init(&st_module, info, 6);
    PMIX_INFO_FREE(info, 6);
    if (rc != PMIX_SUCCESS) {
        hb_log_error("PMIx_server_init: %s", PMIx_Error_string(rc));
        (void)st_send(HBD_PXM_REGISTERED, 0, 0, 0, 0, rc, NULL, 0, NULL, 0);
        hbd_step_rmdir(g_st.tmpdir);
        return 1;
    }
    hb_log_debug("PMIx server up (libpmix %s), tmp dir %s", PMIx_Get_version(), g_st.tmpdir);
    st_rx_t rx = {.hgot = 0};
    if (st_loop(&rx, 1) == 1) { /* registered (or refused): the rest never blocks */
        if (st_attach(&rx) == 0)
            st_detach();
        else
            st_loop(&rx, 0);
    }
    if (g_st.ev == NULL) /* else a wedged reader still holds rx: left to the exit */
        free(rx.pl);
    /* the job is over (or hibard gone): whatever waits is answered, then PMIx goes */
    g_st.broken = 1;
    st_cancel(PMIX_ERR_COMM_FAILURE);
    hbd_step_rmdir(g_st.tmpdir); /* first: should finalize hang and the step be killed */
    finalize_bounded();
    hbd_step_rmdir(g_st.tmpdir);
    _exit(0);
}
