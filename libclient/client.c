/* client.c: the public libhibar API (hibar_*) on top of the segment, the barrier and the
 * collectives. */
#include "hb_config.h"

#include "client.h"

#include "conn.h"
#include "hb_env.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hb_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hibar {
    _Atomic int in_call; /* a call is running on this handle (HIBAR_ERR_THREAD) */
    hb_seg_t seg;
    hb_nbar_t bar;
    hb_ncoll_t coll;
    uint32_t rank, size;   /* in the node's segment */
    uint32_t grank, gsize; /* in the job (the same on a single-node job) */
    int doorbell_fd;
    int split_pending;
    hibar_epoch_t split_epoch; /* the outstanding epoch, or the last completed one */
    int split_status;          /* how the last completed one ended */
    int nbar_ready;
};

/* A HIBAR_* tuning number (ms, radix...); malformed values are logged and ignored. */
static uint64_t client_env_ms(const char *name, uint64_t dflt)
{
    uint64_t v;
    return hb_env_u64(name, UINT64_MAX / 1000000ull, &v) == 0 ? v : dflt;
}

static int client_enter(hibar_t *h)
{
    int idle = 0;
    if (h == NULL)
        return HIBAR_ERR_NOT_INIT;
    if (!atomic_compare_exchange_strong(&h->in_call, &idle, 1)) {
        hb_log_error("two threads called hibar on one handle at the same time");
        return HIBAR_ERR_THREAD;
    }
    return 0;
}

static void client_leave(hibar_t *h)
{
    atomic_store(&h->in_call, 0);
}

/* Enter a collective call: no split-phase barrier may be outstanding. */
static int client_enter_coll(hibar_t *h)
{
    int rc = client_enter(h);
    if (rc != 0)
        return rc;
    if (h->split_pending) {
        client_leave(h);
        return HIBAR_ERR_BUSY;
    }
    return 0;
}

typedef struct client_attach_wait {
    hb_nbar_t probe; /* only seg, rank, nranks, last_check_ns are used */
} client_attach_wait_t;

static int client_attach_poll(void *arg, int slow)
{
    client_attach_wait_t *w = arg;
    hb_seg_hdr_t *hd = hb_seg_hdr(w->probe.seg);
    uint64_t now;

    if (atomic_load_explicit(&hd->attached, memory_order_acquire) >= w->probe.nranks)
        return 0;
    if (atomic_load(&hd->state) != HB_SEG_JOB_OK)
        return HIBAR_ERR_PEER_LOST;
    if (!slow)
        return HIBAR_ERR_WOULD_BLOCK;
    now = hb_time_now_ns();
    if (now - w->probe.last_check_ns < 10000000ull)
        return HIBAR_ERR_WOULD_BLOCK;
    w->probe.last_check_ns = now;
    {
        /* Nobody leaves before all have joined: a departure here is a failure. */
        int lost = hb_nbar_find_lost(&w->probe);
        if (lost < 0)
            return HIBAR_ERR_WOULD_BLOCK;
        hb_seg_mark_broken(w->probe.seg, (int32_t)lost);
        return HIBAR_ERR_PEER_LOST;
    }
}

static void client_free(hibar_t *h)
{
    if (h->nbar_ready)
        hb_nbar_fini(&h->bar);
    hb_seg_unmap(&h->seg);
    if (h->doorbell_fd >= 0)
        close(h->doorbell_fd);
    free(h);
}

int hb_client_attach(int seg_fd, int doorbell_fd, uint32_t rank, hibar_t **h_p)
{
    return hb_client_attach_job(seg_fd, doorbell_fd, rank, HB_CONN_RANK_ANY, h_p);
}

int hb_client_attach_job(int seg_fd, int doorbell_fd, uint32_t rank, uint32_t grank, hibar_t **h_p)
{
    client_attach_wait_t aw;
    hb_seg_ctl_t *me;
    hibar_t *h;
    uint32_t expect = HB_SEG_RANK_EMPTY, radix, flat_max;
    uint64_t init_ms, timeout_ms;
    int rc;

    if (h_p == NULL || seg_fd < 0)
        return HIBAR_ERR_INVAL;
    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return HIBAR_ERR_NOMEM;
    h->doorbell_fd = -1;
    h->seg.fd = -1;
    rc = hb_seg_map(seg_fd, &h->seg);
    if (rc != 0)
        goto err_free;
    if (rank >= h->seg.lay.nranks) {
        hb_log_error("rank %u out of range (%u ranks)", (unsigned)rank,
                     (unsigned)h->seg.lay.nranks);
        rc = HIBAR_ERR_INVAL;
        goto err_free;
    }
    if (doorbell_fd >= 0) {
        h->doorbell_fd = fcntl(doorbell_fd, F_DUPFD_CLOEXEC, 0);
        if (h->doorbell_fd < 0) {
            hb_log_error("dup doorbell fd: %m");
            rc = HIBAR_ERR_IO;
            goto err_free;
        }
    }
    h->rank = rank;
    h->size = h->seg.lay.nranks;
    h->grank = grank == HB_CONN_RANK_ANY ? rank : grank;
    h->gsize = h->seg.gsize;
    if (h->grank >= h->gsize || (h->seg.nnodes == 1 && h->grank != rank)) {
        hb_log_error("job rank %u does not fit the segment (%u ranks in the job, %u here)",
                     (unsigned)h->grank, (unsigned)h->gsize, (unsigned)h->size);
        rc = HIBAR_ERR_PROTO;
        goto err_free;
    }
    me = hb_seg_ctl(&h->seg, rank);
    if (!atomic_compare_exchange_strong(&me->state, &expect, HB_SEG_RANK_ATTACHING)) {
        hb_log_error("rank %u already joined this job", (unsigned)rank);
        rc = HIBAR_ERR_EXISTS;
        goto err_free;
    }
    {
        const char *hw = getenv("HIBAR_NBAR_HWLOC");
        uint32_t k;
        if (hw != NULL && strcmp(hw, "0") == 0) {
            for (k = 0; k < HB_SEG_NKEYS; k++)
                me->keys[k] = HB_SEG_KEY_NONE;
        } else {
            hb_nbar_keys_local(me->keys);
        }
    }
    atomic_store(&me->pid, (int32_t)getpid());
    hb_ncoll_probe_publish(&h->seg, rank);
    atomic_store_explicit(&me->state, HB_SEG_RANK_ATTACHED, memory_order_release);
    atomic_fetch_add(&hb_seg_hdr(&h->seg)->attached, 1);
    hb_wait_word_wake(&hb_seg_hdr(&h->seg)->attach_wake);

    /* Everyone's pid, keys and probe are visible once all have attached. */
    memset(&aw, 0, sizeof(aw));
    aw.probe.seg = &h->seg;
    aw.probe.rank = rank;
    aw.probe.nranks = h->size;
    init_ms = client_env_ms("HIBAR_INIT_TIMEOUT_MS", 60000);
    rc = hb_wait_until(&hb_seg_hdr(&h->seg)->attach_wake, client_attach_poll, &aw, NULL,
                       init_ms == 0 ? UINT64_MAX : hb_time_now_ns() + init_ms * 1000000ull);
    if (rc != 0) {
        if (rc == HIBAR_ERR_TIMEOUT)
            hb_log_error("only %u of %u ranks joined within %llu ms",
                         (unsigned)atomic_load(&hb_seg_hdr(&h->seg)->attached), (unsigned)h->size,
                         (unsigned long long)init_ms);
        goto err_leave;
    }
    radix = (uint32_t)client_env_ms("HIBAR_NBAR_RADIX", HB_NBAR_DEFAULT_RADIX);
    if (radix < 2 || radix > HB_SEG_MAX_RANKS)
        radix = HB_NBAR_DEFAULT_RADIX;
    flat_max = (uint32_t)client_env_ms("HIBAR_NBAR_FLAT_MAX", HB_NBAR_DEFAULT_FLAT_MAX);
    timeout_ms = client_env_ms("HIBAR_TIMEOUT_MS", 0);
    rc = hb_nbar_init(&h->bar, &h->seg, rank, h->doorbell_fd, radix, flat_max,
                      timeout_ms * 1000000ull);
    if (rc != 0)
        goto err_leave;
    h->nbar_ready = 1;
    hb_ncoll_probe_run(&h->seg, rank);
    rc = hb_nbar_barrier(&h->bar);
    if (rc != 0)
        goto err_leave;
    hb_ncoll_init(&h->coll, &h->seg, &h->bar);
    h->coll.grank = h->grank;
    h->bar.grank = h->grank;
    h->coll.gsize = h->gsize;
    *h_p = h;
    return 0;

err_leave:
    atomic_store_explicit(&me->state, HB_SEG_RANK_LEFT, memory_order_release);
    hb_seg_mark_broken(&h->seg, (int32_t)rank);
err_free:
    client_free(h);
    return rc;
}

hb_seg_t *hb_client_seg(hibar_t *h)
{
    return &h->seg;
}
hb_nbar_t *hb_client_nbar(hibar_t *h)
{
    return &h->bar;
}
int hb_client_cma(hibar_t *h)
{
    return h->coll.cma_all;
}

/* A HIBAR_* id (rank, job, fd): 0, NOT_FOUND (unset) or CONFIG (malformed, logged). */
static int client_env_u32(const char *name, uint32_t *v_p)
{
    uint64_t v;
    int rc = hb_env_u64(name, UINT32_MAX - 1, &v);
    if (rc == 0)
        *v_p = (uint32_t)v;
    return rc;
}

int hibar_init(hibar_t **h_p)
{
    const char *sock;
    uint32_t rank = HB_CONN_RANK_ANY, fd32, db32;
    int rc;

    if (h_p == NULL)
        return HIBAR_ERR_INVAL;
    hb_log_init_from_env();
    rc = client_env_u32("HIBAR_RANK", &rank);
    if (rc != 0 && rc != HIBAR_ERR_NOT_FOUND)
        return rc;
    sock = getenv("HIBAR_SOCKET");
    if (sock != NULL && *sock != '\0') {
        hb_conn_welcome_t w;
        int seg_fd, db_fd, daemon_pid;
        uint64_t job = 0;
        if (hb_env_u64("HIBAR_JOB", UINT64_MAX - 1, &job) == HIBAR_ERR_CONFIG)
            return HIBAR_ERR_CONFIG;
        rc = hb_conn_client(sock, rank, job, &seg_fd, &db_fd, &w, &daemon_pid);
        if (rc != 0)
            return rc;
        rc = hb_client_attach_job(seg_fd, db_fd, w.rank, w.grank, h_p);
        close(seg_fd);
        if (db_fd >= 0)
            close(db_fd);
        if (rc == 0) /* our waits notice if it dies (we may not be its child) */
            hb_nbar_watch_daemon(&(*h_p)->bar, daemon_pid);
        return rc;
    }
    rc = client_env_u32("HIBAR_SEG_FD", &fd32);
    if (rc == 0) {
        int db = -1;
        if (rank == HB_CONN_RANK_ANY) {
            hb_log_error("HIBAR_SEG_FD is set but HIBAR_RANK is not");
            return HIBAR_ERR_CONFIG;
        }
        rc = client_env_u32("HIBAR_DOORBELL_FD", &db32);
        if (rc == HIBAR_ERR_CONFIG)
            return rc;
        if (rc == 0)
            db = (int)db32;
        return hb_client_attach((int)fd32, db, rank, h_p);
    }
    if (rc != HIBAR_ERR_NOT_FOUND)
        return rc;
    {
        /* No daemon and no inherited segment: a singleton job, as MPI does. */
        hb_seg_t seg;
        rc = hb_seg_create(1, HB_SEG_MIN_DEPTH, HB_SEG_MIN_BUF, (uint64_t)getpid(), 0, 1, 0, &seg);
        if (rc != 0)
            return rc;
        hb_log_info("no HIBAR_SOCKET or HIBAR_SEG_FD: singleton job of one rank");
        rc = hb_client_attach(seg.fd, -1, 0, h_p);
        hb_seg_unmap(&seg);
        return rc;
    }
}

int hibar_finalize(hibar_t **h_p)
{
    hibar_t *h;
    int rc;

    if (h_p == NULL)
        return HIBAR_ERR_INVAL;
    h = *h_p;
    rc = client_enter(h);
    if (rc != 0)
        return rc;
    if (h->split_pending) {
        rc = hb_nbar_wait(&h->bar, h->split_epoch);
        h->split_pending = 0;
        h->bar.split = 0;
    }
    if (rc == 0)
        rc = hb_nbar_barrier(&h->bar);
    atomic_store_explicit(&hb_seg_ctl(&h->seg, h->rank)->state, HB_SEG_RANK_LEFT,
                          memory_order_release);
    *h_p = NULL;
    client_leave(h);
    client_free(h);
    return rc;
}

int hibar_rank(hibar_t *h, int *rank_p)
{
    if (h == NULL)
        return HIBAR_ERR_NOT_INIT;
    if (rank_p == NULL)
        return HIBAR_ERR_INVAL;
    *rank_p = (int)h->grank;
    return 0;
}

int hibar_size(hibar_t *h, int *size_p)
{
    if (h == NULL)
        return HIBAR_ERR_NOT_INIT;
    if (size_p == NULL)
        return HIBAR_ERR_INVAL;
    *size_p = (int)h->gsize;
    return 0;
}

int hibar_barrier(hibar_t *h)
{
    int rc = client_enter_coll(h);
    if (rc != 0)
        return rc;
    rc = hb_nbar_barrier(&h->bar);
    client_leave(h);
    return rc;
}

int hibar_barrier_arrive(hibar_t *h, hibar_epoch_t *epoch_p)
{
    uint64_t e;
    int rc;

    if (h != NULL && epoch_p == NULL)
        return HIBAR_ERR_INVAL;
    rc = client_enter_coll(h);
    if (rc != 0)
        return rc;
    rc = hb_nbar_arrive(&h->bar, &e);
    if (rc == 0) {
        h->split_pending = 1;
        h->split_epoch = e;
        h->bar.split = e;
        *epoch_p = e;
    }
    client_leave(h);
    return rc;
}

static int client_split(hibar_t *h, hibar_epoch_t epoch, int block)
{
    int rc = client_enter(h);
    if (rc != 0)
        return rc;
    if (!h->split_pending && epoch == h->split_epoch && epoch != 0) {
        rc = h->split_status; /* completed by an earlier test or wait: same answer */
        goto out;
    }
    if (!h->split_pending || epoch != h->split_epoch) {
        rc = HIBAR_ERR_INVAL;
        goto out;
    }
    rc = block ? hb_nbar_wait(&h->bar, epoch) : hb_nbar_test(&h->bar, epoch);
    if (rc != HIBAR_ERR_WOULD_BLOCK) {
        h->split_pending = 0;
        h->bar.split = 0;
        h->split_status = rc;
    }
out:
    client_leave(h);
    return rc;
}

int hibar_barrier_test(hibar_t *h, hibar_epoch_t epoch)
{
    return client_split(h, epoch, 0);
}
int hibar_barrier_wait(hibar_t *h, hibar_epoch_t epoch)
{
    return client_split(h, epoch, 1);
}

/* The rank list of a subset call as job ranks (malloc'd in *r_p): INVAL for a NULL or empty
 * list, more ranks than the job's or a negative one (the rest is checked with the set). */
static int client_set(const hibar_t *h, const int *ranks, int n, uint32_t **r_p)
{
    uint32_t *r;
    if (ranks == NULL || n <= 0 || (uint32_t)n > h->gsize)
        return HIBAR_ERR_INVAL;
    if ((r = malloc((size_t)n * sizeof(*r))) == NULL)
        return HIBAR_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0) {
            free(r);
            return HIBAR_ERR_INVAL;
        }
        r[i] = (uint32_t)ranks[i];
    }
    *r_p = r;
    return 0;
}

/* The arguments of a collective without -v (bcast: the buffer as sendbuf). */
static hb_ncoll_args_t client_args(hb_ncoll_op_t op, int root, const void *sendbuf, void *recvbuf,
                                   size_t bytes)
{
    return (hb_ncoll_args_t){
        .op = op, .root = root, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = bytes};
}

/* A call on a rank set: its barrier (a NULL), a collective (hb_ncoll_subset: on the node or
 * through the daemons), or with on_node whether the set runs on this node alone. A split-phase
 * barrier of the whole job may be outstanding: a rank set's calls have their own numbers and
 * records (an MPI_Ibarrier on MPI_COMM_WORLD in flight while a sub-communicator's collective
 * runs, the ranks calling the two in different orders). */
static int client_subset_coll(hibar_t *h, const int *ranks, int n, const hb_ncoll_args_t *a,
                              int on_node)
{
    uint32_t *r = NULL;
    int rc = client_enter(h);
    if (rc != 0)
        return rc;
    rc = client_set(h, ranks, n, &r);
    if (rc == 0)
        rc = on_node     ? hb_ncoll_subset_on_node(&h->coll, r, (size_t)n)
             : a == NULL ? hb_nbar_subset(&h->bar, r, (size_t)n)
                         : hb_ncoll_subset(&h->coll, r, (size_t)n, a);
    free(r);
    client_leave(h);
    return rc;
}

int hibar_barrier_subset(hibar_t *h, const int *ranks, int n)
{
    return client_subset_coll(h, ranks, n, NULL, 0);
}

int hibar_bcast_subset(hibar_t *h, const int *ranks, int n, void *buf, size_t bytes, int root)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_BCAST, root, buf, buf, bytes);
    return client_subset_coll(h, ranks, n, &a, 0);
}

int hibar_scatter_subset(hibar_t *h, const int *ranks, int n, const void *sendbuf, void *recvbuf,
                         size_t bytes, int root)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_SCATTER, root, sendbuf, recvbuf, bytes);
    return client_subset_coll(h, ranks, n, &a, 0);
}

int hibar_gather_subset(hibar_t *h, const int *ranks, int n, const void *sendbuf, void *recvbuf,
                        size_t bytes, int root)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_GATHER, root, sendbuf, recvbuf, bytes);
    return client_subset_coll(h, ranks, n, &a, 0);
}

int hibar_allgather_subset(hibar_t *h, const int *ranks, int n, const void *sendbuf, void *recvbuf,
                           size_t bytes)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_ALLGATHER, 0, sendbuf, recvbuf, bytes);
    return client_subset_coll(h, ranks, n, &a, 0);
}

int hibar_subset_on_node(hibar_t *h, const int *ranks, int n)
{
    return client_subset_coll(h, ranks, n, NULL, 1);
}

static int client_coll(hibar_t *h, const hb_ncoll_args_t *a)
{
    int rc = client_enter_coll(h);
    if (rc != 0)
        return rc;
    rc = hb_ncoll_run(&h->coll, a);
    client_leave(h);
    return rc;
}

int hibar_scatter(hibar_t *h, const void *sendbuf, void *recvbuf, size_t bytes, int root)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_SCATTER, root, sendbuf, recvbuf, bytes);
    return client_coll(h, &a);
}

int hibar_gather(hibar_t *h, const void *sendbuf, void *recvbuf, size_t bytes, int root)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_GATHER, root, sendbuf, recvbuf, bytes);
    return client_coll(h, &a);
}

int hibar_scatterv(hibar_t *h, const void *sendbuf, const size_t *counts, const size_t *displs,
                   void *recvbuf, size_t recvbytes, int root)
{
    hb_ncoll_args_t a = {.op = HB_NCOLL_SCATTERV,
                         .root = root,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = recvbytes,
                         .counts = counts,
                         .displs = displs};
    return client_coll(h, &a);
}

int hibar_gatherv(hibar_t *h, const void *sendbuf, size_t sendbytes, void *recvbuf,
                  const size_t *counts, const size_t *displs, int root)
{
    hb_ncoll_args_t a = {.op = HB_NCOLL_GATHERV,
                         .root = root,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = sendbytes,
                         .counts = counts,
                         .displs = displs};
    return client_coll(h, &a);
}

int hibar_bcast(hibar_t *h, void *buf, size_t bytes, int root)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_BCAST, root, buf, buf, bytes);
    return client_coll(h, &a);
}

int hibar_allgather(hibar_t *h, const void *sendbuf, void *recvbuf, size_t bytes)
{
    hb_ncoll_args_t a = client_args(HB_NCOLL_ALLGATHER, 0, sendbuf, recvbuf, bytes);
    return client_coll(h, &a);
}

int hibar_set_timeout(hibar_t *h, unsigned ms)
{
    int rc = client_enter(h);
    if (rc != 0)
        return rc;
    h->bar.timeout_ns = (uint64_t)ms * 1000000ull;
    client_leave(h);
    return 0;
}

int hibar_set_progress(hibar_t *h, hibar_progress_fn fn, void *arg)
{
    int rc = client_enter(h);
    if (rc != 0)
        return rc;
    h->bar.progress = fn;
    h->bar.progress_arg = fn != NULL ? arg : NULL;
    client_leave(h);
    return 0;
}

static hibar_log_fn client_log_fn;
static void *client_log_arg;

static void client_log_sink(hb_log_level_t level, const char *line, void *arg)
{
    (void)arg;
    if (client_log_fn != NULL)
        client_log_fn((int)level, line, client_log_arg);
}

int hibar_set_log_callback(hibar_log_fn fn, void *arg)
{
    client_log_fn = fn;
    client_log_arg = arg;
    hb_log_set_sink(fn != NULL ? client_log_sink : NULL, NULL);
    return 0;
}
