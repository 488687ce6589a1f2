/* hbd_ranks.c: hibard's service to the libhibar ranks it launches: the per-job segment, the
 * ranks' socket, the doorbell, and each epoch the node's ranks hand over (barrier or
 * collective across nodes). */
#include "hb_config.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "coll_sched.h"
#include "conn.h"
#include "hb_hash.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hbd_barrier.h"
#include "hbd_coll.h"
#include "hbd_fence.h"
#include "hbd_job.h"
#include "hbd_prof.h"
#include "hbd_ranks.h"
#include "hbd_sock.h"
#include "hbd_timer.h"
#include "hbd_xsc.h"
#include "hb_status.h"
#include "ncoll.h"
#include "seg.h"

/*
 * Launch: a job with ranks on this node gets a segment (hb_seg_create: the node's ranks, the
 * job's node count and size) and a doorbell eventfd. Each rank's environment names the
 * daemon's ranks socket (RUN_DIR/NODE.ranks, SOCK_SEQPACKET, 0600), its job rank and the job
 * id; hibar_init says hello there, the daemon checks the peer (SO_PEERCRED: same uid, and the
 * process is the rank it spawned or a descendant of it) and hands over the segment and the
 * doorbell with the rank's place (libclient/conn.h).
 *
 * On a job spanning several nodes the node's last arriver at a barrier epoch rings the
 * doorbell. The daemon reads the ranks' collective records:
 *   - nobody opened a collective at that epoch: a barrier, the job's next id of the chassis
 *     tree engine (shared with PMIx fences without data: the ranks make both kinds of call in
 *     one program order, so every node numbers them alike);
 *   - every rank did: a collective. (1) Agreement: a fence with data (hbd_fence.c) carries
 *     every node's view (op, root, sequence, its ranks' byte counts, its verdict; the root's
 *     -v table), from which every node computes the same verdict and per-node counts.
 *     (2) Data: the coll/ schedule (hbd_coll.c) between the daemons; the input is read from
 *     the ranks' buffers and the output written into them with process_vm_readv/writev
 *     (the ranks are this daemon's children). A node's block holds its ranks' data in
 *     ascending job rank. With coll_overlap (the default) a node whose ranks agree among
 *     themselves on a form without -v starts (2) at once, beside (1): its view gives every
 *     node's bytes, and every agreeing node builds the same schedule. The epoch ends when
 *     both are over, with (1)'s verdict first: a verdict that fails it cancels the data run
 *     (whose peers' late segments expire from hbd_coll's stash), and the ranks' receive
 *     buffers are then undefined, as after an MPI error. The time of the two rounds becomes
 *     the longer of them (measured: doc/design.md section 7.4). A small collective (forms
 *     without -v, at most coll_inline_max bytes of data in all) has no (2): its data rides
 *     (1)'s blobs and every node writes its output from the agreement (xop_inline).
 *   - some ranks did and others did not: the node's verdict is HB_ERR_MISMATCH and it
 *     takes part in the collective's agreement (nodes whose ranks all called a barrier wait
 *     in the barrier until its timeout).
 * The epoch is then released with the verdict (hb_seg_release_status). A lost daemon fails the
 * epoch with HB_ERR_PEER_LOST and marks the segment broken.
 */

#define HBD_RANKS_AGREE_MAGIC 0x41425848u /* "HXBA" */
#define HBD_RANKS_HELLO_MS 5000
#define HBD_RANKS_MAX_INPUT (1ull << 30) /* as hbd_coll's limit per node */
/* A root's input up to this is read before the agreement, not probed and read as it goes out */
#define HBD_RANKS_EAGER_READ (256u << 10)

typedef struct hbd_xop hbd_xop_t;

/* What hbd_ranks keeps per job (hbd_job_t.ranks). */
typedef struct hbd_ranks_job {
    hbd_job_t *j;
    hb_seg_t seg;
    int doorbell;
    struct event *ev_db;
    pid_t *pid;            /* [n_local] the attached process of each local rank, 0 if none */
    uint32_t node_idx;     /* this node's index among the job's nodes */
    uint32_t *ranks_of;    /* [cluster nodes] ranks of the job per node */
    uint32_t *node_off;    /* [cluster nodes + 1] CSR over node_granks */
    uint32_t *node_granks; /* [size] job ranks grouped by node, ascending within a node */
    uint64_t last_epoch;
    hbd_xop_t *ops;        /* epochs in flight */
    struct hbd_xsub *subs; /* subset barriers in flight */
} hbd_ranks_job_t;

/* A subset barrier or collective across nodes, as this node sees it: its local members'
 * arrivals, then a barrier of the set's engine among the nodes hosting members
 * (hbd_barrier_sub_start), or for a collective (coll) a fence among them (xsc_run). */
typedef struct hbd_xsub {
    struct hbd_xsub *next;
    hbd_ranks_job_t *rj; /* NULL once the job is gone */
    uint64_t hash;
    uint32_t seq;
    uint32_t *set;  /* sorted job ranks */
    uint32_t *list; /* a collective's members in their order (member i: block i), else NULL */
    int coll;
    uint32_t n;
    uint8_t *arrived; /* [n_local] */
    uint32_t n_arrived, n_expect;
    int status; /* a member disagreed: HB_ERR_MISMATCH */
    int ready;  /* every local member arrived: runs once the ring is drained (doorbell_cb) */
    /* a collective whose data goes by a data run after the fence (xsc_run_data): the node's
     * input in the schedule's node order, and per member its node's index among the member
     * nodes and its place among that node's members */
    uint8_t *in;
    uint64_t in_len;
    uint32_t *nidx, *pos;
    uint32_t op; /* the agreed arguments, for the run's end */
    int32_t root;
    uint64_t count;
} hbd_xsub_t;

/* One epoch in flight. Outlives its job if need be (rj NULL): the engines call back later. */
struct hbd_xop {
    hbd_xop_t *next;
    hbd_ranks_job_t *rj;
    hbd_t *d;
    uint64_t epoch;
    /* collective */
    uint32_t op;                   /* HB_NCOLL_* */
    int32_t root;                  /* job rank */
    uint64_t size;                 /* bytes per rank (non -v) */
    uint64_t *cnt;                 /* [size] bytes of every job rank */
    uint64_t *dsp;                 /* [size] root's displacements (scatter/gather root node) */
    uint64_t *rec_send, *rec_recv; /* [n_local] the ranks' buffers */
    uint8_t *in;                   /* this node's input (the root's: read on demand) */
    uint64_t in_len;
    struct xop_piece {
        uint64_t off, remote, len; /* `in` bytes [off, off + len) are at remote in in_pid */
    } * pc;                        /* [npc] scatter and bcast root: the root rank's buffer */
    uint32_t npc;
    pid_t in_pid;
    uint64_t t_ns[4]; /* rung, input read, agreed, data in (debug log of the phases) */
    /* overlap (coll_overlap): the data run started with the agreement; the epoch ends when
     * both have called back (refs), with the agreement's verdict first */
    int overlap, refs, agree_status, data_status;
    hbd_coll_run_t *run; /* the data run while it has not called back */
    int inl;             /* the data inside the agreement (coll_inline_max), no data run */
    uint64_t *wdone;     /* [job nodes] bytes of each node's output block written as its
                          * segments arrived (xop_on_seg), or NULL */
};

/* ---- the ranks socket ---- */

typedef struct hbd_hello_wait {
    hbd_t *d;
    int fd;
    struct event *ev;
    hbd_timer_t *timer; /* HBD_RANKS_HELLO_MS without a HELLO: closed */
} hbd_hello_wait_t;

/* Is `pid` the process `anc` or one of its descendants (at most 16 generations)? */
static int pid_descends(pid_t pid, pid_t anc)
{
    for (int i = 0; i < 16 && pid > 1; i++) {
        if (pid == anc)
            return 1;
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
            return 0;
        buf[n] = '\0';
        const char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
        int ppid;
        if (p == NULL || sscanf(p + 1, " %*c %d", &ppid) != 1)
            return 0;
        pid = (pid_t)ppid;
    }
    return 0;
}

static void welcome_refuse(int fd, int status)
{
    hb_conn_welcome_t w;
    memset(&w, 0, sizeof(w));
    w.magic = HB_CONN_MAGIC;
    w.version = HB_CONN_VERSION;
    w.type = HB_CONN_WELCOME;
    w.status = status;
    hb_conn_send_welcome(fd, &w, -1, -1);
}

static void hello_wait_free(hbd_hello_wait_t *hw)
{
    event_free(hw->ev);
    hbd_timer_free(hw->timer);
    close(hw->fd);
    free(hw);
}

static void hello_timeout(hbd_t *d, void *arg)
{
    hb_log_warn("a client connected to %s and said nothing for %d ms", d->ranks_path,
                HBD_RANKS_HELLO_MS);
    hello_wait_free(arg);
}

static void hello_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_hello_wait_t *hw = arg;
    hb_conn_hello_t h;
    pid_t pid;
    int rc;

    (void)what;
    rc = hb_conn_accept_hello(fd, geteuid(), &h, &pid);
    if (rc != 0) {
        welcome_refuse(fd, rc);
        goto out;
    }
    /* the job: by id, or the only one with ranks here */
    hbd_job_t *j = NULL;
    uint32_t n_match = 0;
    for (hbd_job_t *x = hw->d->jobs.head; x != NULL; x = x->next)
        if (x->ranks != NULL && (h.job_id == 0 || x->spec->id == h.job_id)) {
            j = x;
            n_match++;
        }
    if (n_match != 1) {
        hb_log_warn("pid %d asked for job %" PRIu64 ": no such job with ranks here", (int)pid,
                    h.job_id);
        welcome_refuse(fd, HB_ERR_NOT_FOUND);
        goto out;
    }
    hbd_ranks_job_t *rj = j->ranks;
    uint32_t lr = UINT32_MAX;
    for (uint32_t k = 0; k < j->n_local; k++)
        if (h.rank == HB_CONN_RANK_ANY ? pid_descends(pid, j->local[k].pid)
                                       : j->local[k].rank == h.rank) {
            lr = k;
            break;
        }
    if (lr == UINT32_MAX) {
        hb_log_warn("job %s: pid %d asked for rank %" PRIu32 ", not on this node", j->nspace,
                    (int)pid, h.rank);
        welcome_refuse(fd, HB_ERR_NOT_FOUND);
        goto out;
    }
    if (j->local[lr].pid <= 0 || !pid_descends(pid, j->local[lr].pid)) {
        hb_log_warn("job %s: pid %d is not rank %" PRIu32 "'s process: refused", j->nspace,
                    (int)pid, j->local[lr].rank);
        welcome_refuse(fd, HB_ERR_PERM);
        goto out;
    }
    if (rj->pid[lr] != 0) {
        hb_log_warn("job %s: rank %" PRIu32 " joined twice", j->nspace, j->local[lr].rank);
        welcome_refuse(fd, HB_ERR_EXISTS);
        goto out;
    }
    rj->pid[lr] = pid;
    hb_conn_welcome_t w;
    memset(&w, 0, sizeof(w));
    w.magic = HB_CONN_MAGIC;
    w.version = HB_CONN_VERSION;
    w.type = HB_CONN_WELCOME;
    w.rank = lr;
    w.nranks = j->n_local;
    w.grank = j->local[lr].rank;
    w.gsize = j->spec->size;
    w.job_id = j->spec->id;
    if (hb_conn_send_welcome(fd, &w, rj->seg.fd, rj->doorbell) != 0)
        rj->pid[lr] = 0;
    else
        hb_log_debug("job %s: rank %" PRIu32 " (pid %d) joined", j->nspace, w.grank, (int)pid);
out:
    hello_wait_free(hw);
}

static void listen_cb(evutil_socket_t lfd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)what;
    for (int i = 0; i < 16; i++) {
        int fd = hbd_accept(d, lfd, "ranks socket");
        if (fd < 0)
            return;
        hbd_hello_wait_t *hw = calloc(1, sizeof(*hw));
        if (hw == NULL) {
            close(fd);
            continue;
        }
        hw->d = d;
        hw->fd = fd;
        hw->ev = event_new(d->base, fd, EV_READ, hello_cb, hw);
        hw->timer = hbd_timer_new(d, hello_timeout, hw);
        if (hw->ev == NULL || hw->timer == NULL || event_add(hw->ev, NULL) != 0) {
            if (hw->ev != NULL)
                event_free(hw->ev);
            hbd_timer_free(hw->timer);
            close(fd);
            free(hw);
        } else {
            hbd_timer_arm(hw->timer, HBD_RANKS_HELLO_MS * 1000ull, 1);
        }
    }
}

int hbd_ranks_start(hbd_t *d)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(d->ranks_path, sizeof(d->ranks_path), "%s/%s.ranks", d->run_dir, d->name);
    if (strlen(d->ranks_path) >= sizeof(sa.sun_path)) {
        hb_log_error("ranks socket path too long: %s", d->ranks_path);
        return HB_ERR_CONFIG;
    }
    strcpy(sa.sun_path, d->ranks_path);
    d->ranks_lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->ranks_lfd < 0) {
        hb_log_error("socket(AF_UNIX, SOCK_SEQPACKET): %m");
        return HB_ERR_IO;
    }
    unlink(d->ranks_path); /* stale: main checked that no live daemon owns the run dir's files */
    mode_t old = umask(077);
    int rc = bind(d->ranks_lfd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc != 0 || chmod(d->ranks_path, 0600) != 0 || listen(d->ranks_lfd, 128) != 0) {
        hb_log_error("ranks socket %s: %m", d->ranks_path);
        close(d->ranks_lfd);
        d->ranks_lfd = -1;
        return HB_ERR_IO;
    }
    d->ev_ranks = event_new(d->base, d->ranks_lfd, EV_READ | EV_PERSIST, listen_cb, d);
    if (d->ev_ranks == NULL || event_add(d->ev_ranks, NULL) != 0)
        return HB_ERR_NOMEM;
    return 0;
}

void hbd_ranks_stop(hbd_t *d)
{
    (void)d;
    if (d->ev_ranks != NULL)
        event_free(d->ev_ranks);
    d->ev_ranks = NULL;
    if (d->ranks_lfd >= 0) {
        close(d->ranks_lfd);
        unlink(d->ranks_path);
    }
    d->ranks_lfd = -1;
}

/* ---- epochs ---- */

static void xop_free(hbd_xop_t *op)
{
    if (op->rj != NULL)
        for (hbd_xop_t **pp = &op->rj->ops; *pp != NULL; pp = &(*pp)->next)
            if (*pp == op) {
                *pp = op->next;
                break;
            }
    free(op->cnt);
    free(op->dsp);
    free(op->rec_send);
    free(op->rec_recv);
    free(op->in);
    free(op->pc);
    free(op->wdone);
    free(op);
}

/* The epoch is over here: tell the ranks. */
static void xop_finish(hbd_xop_t *op, int status)
{
    hbd_ranks_job_t *rj = op->rj;
    if (rj != NULL) {
        if (status == HB_ERR_PEER_LOST)
            hb_seg_mark_broken(&rj->seg, -1);
        if (status != 0)
            hb_log_debug("job %s: epoch %" PRIu64 " ends with %s", rj->j->nspace, op->epoch,
                         hb_status_str(status));
        else if (op->t_ns[3] != 0) {
            /* overlapped, the data ran from the agreement's start and the epoch ended with
             * whichever of the two came last */
            uint64_t from = op->overlap ? op->t_ns[1] : op->t_ns[2];
            uint64_t last = op->t_ns[3] > op->t_ns[2] ? op->t_ns[3] : op->t_ns[2];
            hb_log_debug(
                "job %s: epoch %" PRIu64 " (%" PRIu64 " bytes in) read %.0f us, agree "
                "%.0f us, data %.0f us%s, write %.0f us",
                rj->j->nspace, op->epoch, op->in_len, (double)(op->t_ns[1] - op->t_ns[0]) / 1e3,
                (double)(op->t_ns[2] - op->t_ns[1]) / 1e3, (double)(op->t_ns[3] - from) / 1e3,
                op->overlap ? " (beside the agreement)" : "",
                (double)(hb_time_now_ns() - last) / 1e3);
        }
        hb_seg_release_status(&rj->seg, op->epoch, status);
        hbd_prof(op->d, HBD_PROF_COLL, "cprof", op->cnt != NULL ? "release" : "release_bar",
                 op->epoch);
    }
    xop_free(op);
}

static void xop_barrier_done(hbd_t *d, uint64_t coll, int status, void *arg)
{
    (void)d;
    (void)coll;
    xop_finish(arg, status);
}

/* Copy between this daemon and a rank: len bytes at `remote` in pid's memory. */
static int xop_cma(pid_t pid, void *local, uint64_t remote, uint64_t len, int write)
{
    if (len > SIZE_MAX)
        return HB_ERR_INVAL;
    return hb_ncoll_cma((int)pid, local, remote, (size_t)len, write);
}

/* Pieces to move between this daemon and one rank, gathered and moved 64 at a time in one
 * system call each (hb_ncoll_cmav): a gather's root takes every node's blocks, a scatter's root
 * gives its blocks, one call for all of them instead of one per block. */
typedef struct xop_batch {
    void *local[64];
    uint64_t remote[64];
    size_t len[64];
    size_t n;
    pid_t pid;
    int write;
} xop_batch_t;

static int xop_batch_flush(xop_batch_t *b)
{
    int rc = b->n > 0 ? hb_ncoll_cmav((int)b->pid, b->local, b->remote, b->len, b->n, b->write) : 0;
    b->n = 0;
    return rc;
}

static int xop_batch_add(xop_batch_t *b, void *local, uint64_t remote, uint64_t len)
{
    if (len > SIZE_MAX)
        return HB_ERR_INVAL;
    if (len == 0)
        return 0;
    if (b->n == sizeof(b->len) / sizeof(b->len[0])) {
        int rc = xop_batch_flush(b);
        if (rc != 0)
            return rc;
    }
    b->local[b->n] = local;
    b->remote[b->n] = remote;
    b->len[b->n++] = (size_t)len;
    return 0;
}

static int op_has_root(uint32_t op)
{
    return op != HB_NCOLL_ALLGATHER;
}
static int op_is_v(uint32_t op)
{
    return op == HB_NCOLL_SCATTERV || op == HB_NCOLL_GATHERV;
}
static hb_coll_op_t op_coll(uint32_t op)
{
    switch (op) {
    case HB_NCOLL_SCATTER:
    case HB_NCOLL_SCATTERV:
        return HB_COLL_SCATTER;
    case HB_NCOLL_GATHER:
    case HB_NCOLL_GATHERV:
        return HB_COLL_GATHER;
    case HB_NCOLL_BCAST:
        return HB_COLL_BCAST;
    default:
        return HB_COLL_ALLGATHER;
    }
}

/* Where rank gr's block starts at the root (scatter's send buffer, gather's receive buffer). */
static uint64_t xop_root_off(const hbd_xop_t *op, uint32_t gr)
{
    return op_is_v(op->op) ? op->dsp[gr] : (uint64_t)gr * op->size;
}

/* Is every byte of the root's pieces in a readable mapping of the root rank? From its
 * /proc/PID/maps: a fraction of the cost of touching every page (4096 one-byte reads of a
 * 16 MiB buffer took about 2 ms here). The file lists mappings in address order and the kernel
 * writes it as it is read, so reading stops at the first mapping past the pieces: an MPI
 * rank's file has hundreds of library mappings above its buffers (Open MPI's components), and
 * reading all of it took 440 us of a 1 MiB scatter's root (against 65 us for a plain libhibar
 * rank; doc/results.md, "The root's maps file"). */
typedef struct xrange {
    uint64_t lo, hi;
} xrange_t;

static int xop_probe(const hbd_xop_t *op)
{
    char path[64], line[512];
    xrange_t *m = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)op->in_pid);
    uint64_t end = 0; /* past the highest piece */
    for (uint32_t i = 0; i < op->npc; i++)
        if (op->pc[i].remote + op->pc[i].len > end)
            end = op->pc[i].remote + op->pc[i].len;
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        hb_log_error("%s: %s", path, strerror(errno));
        return errno == ENOENT ? HB_ERR_PEER_LOST : HB_ERR_PERM;
    }
    int cont = 0; /* the line read last went on past the buffer (a long path) */
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        unsigned long long lo, hi;
        char perm[8];
        int frag = cont;
        cont = strchr(line, '\n') == NULL;
        if (frag || sscanf(line, "%llx-%llx %7s", &lo, &hi, perm) != 3)
            continue; /* the rest of a long line, or not a mapping */
        if (lo >= end)
            break; /* this and every later mapping lie above the pieces */
        if (perm[0] != 'r')
            continue;
        if (n > 0 && m[n - 1].hi == lo) { /* the file lists mappings in address order */
            m[n - 1].hi = hi;
            continue;
        }
        if (n == cap) {
            xrange_t *g = realloc(m, (cap = cap ? 2 * cap : 64) * sizeof(*m));
            if (g == NULL)
                rc = HB_ERR_NOMEM;
            else
                m = g;
        }
        if (rc == 0)
            m[n++] = (xrange_t){lo, hi};
    }
    fclose(f);
    for (uint32_t i = 0; i < op->npc && rc == 0; i++) {
        uint64_t a = op->pc[i].remote, b = a + op->pc[i].len;
        size_t lo = 0, hi = n;
        while (lo < hi) { /* the first readable range ending after a */
            size_t mid = lo + (hi - lo) / 2;
            if (m[mid].hi <= a)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (b < a || lo == n || m[lo].lo > a || m[lo].hi < b) {
            hb_log_error("root's buffer (pid %d): %" PRIu64 " bytes at %#" PRIx64 " not readable",
                         (int)op->in_pid, op->pc[i].len, a);
            rc = HB_ERR_INVAL;
        }
    }
    free(m);
    return rc;
}

/* hbd_coll's reader of the root's input: `in` bytes [off, off + len) from the root rank. */
static int xop_read_range(void *arg, uint64_t off, uint8_t *dst, uint64_t len)
{
    hbd_xop_t *op = arg;
    uint32_t lo = 0, hi = op->npc;
    if (op->rj == NULL)
        return HB_ERR_PEER_LOST;
    while (lo < hi) { /* the first piece ending after off */
        uint32_t mid = lo + (hi - lo) / 2;
        if (op->pc[mid].off + op->pc[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    xop_batch_t bt = {.n = 0, .pid = op->in_pid, .write = 0};
    for (uint32_t i = lo; i < op->npc && op->pc[i].off < off + len; i++) {
        const struct xop_piece *p = &op->pc[i];
        uint64_t a = p->off > off ? p->off : off;
        uint64_t b = p->off + p->len < off + len ? p->off + p->len : off + len;
        int rc = xop_batch_add(&bt, dst + (a - off), p->remote + (a - p->off), b - a);
        if (rc != 0)
            return rc;
    }
    return xop_batch_flush(&bt);
}

/* This node's input for the data phase: the root's whole send buffer regrouped in node order
 * (scatter) or the root's buffer (bcast), mapped and probed now and read while it goes out
 * (xop_read_range); the node's ranks' blocks (gather, allgather), read now. Before the
 * agreement, so a bad buffer is part of the node's verdict. cnt and dsp hold this node's view
 * (the root's table at the root). */
static int xop_read_input(hbd_xop_t *op)
{
    hbd_ranks_job_t *rj = op->rj;
    hbd_job_t *j = rj->j;
    uint32_t n = j->d->topo->n_nodes;
    int rc = 0, rl = -1;
    for (uint32_t k = 0; k < j->n_local; k++)
        if (op_has_root(op->op) && j->local[k].rank == (uint32_t)op->root)
            rl = (int)k;
    uint64_t len = 0;
    switch (op_coll(op->op)) {
    case HB_COLL_SCATTER:
        if (rl < 0)
            return 0;
        for (uint32_t gr = 0; gr < j->spec->size; gr++)
            len += op->cnt[gr];
        break;
    case HB_COLL_BCAST:
        if (rl < 0)
            return 0;
        len = op->size;
        break;
    default:
        for (uint32_t k = 0; k < j->n_local; k++)
            len += op->cnt[j->local[k].rank];
        break;
    }
    if (len > HBD_RANKS_MAX_INPUT)
        return HB_ERR_INVAL;
    op->in = malloc(len + 1);
    op->in_len = len;
    if (op->in == NULL)
        return HB_ERR_NOMEM;
    uint64_t off = 0;
    switch (op_coll(op->op)) {
    case HB_COLL_SCATTER:
    case HB_COLL_BCAST:
        op->pc = calloc(j->spec->size, sizeof(*op->pc));
        if (op->pc == NULL)
            return HB_ERR_NOMEM;
        op->in_pid = rj->pid[rl];
        if (op_coll(op->op) == HB_COLL_BCAST && len > 0)
            op->pc[op->npc++] = (struct xop_piece){0, op->rec_send[rl], len};
        for (uint32_t w = 0; w < n && op_coll(op->op) == HB_COLL_SCATTER; w++)
            for (uint32_t i = rj->node_off[w]; i < rj->node_off[w + 1]; i++) {
                uint32_t gr = rj->node_granks[i];
                if (op->cnt[gr] > 0)
                    op->pc[op->npc++] = (struct xop_piece){
                        off, op->rec_send[rl] + xop_root_off(op, gr), op->cnt[gr]};
                off += op->cnt[gr];
            }
        if (len <= HBD_RANKS_EAGER_READ) {
            /* small: read it all now (a bad buffer fails the read as the probe would: EFAULT
             * -> INVAL); reading 16 KiB costs a few us, the probe's maps file ~50 us */
            int rr = xop_read_range(op, 0, op->in, len);
            free(op->pc);
            op->pc = NULL;
            op->npc = 0;
            return rr;
        }
        return xop_probe(op);
    default:
        for (uint32_t k = 0; k < j->n_local && rc == 0; k++) {
            uint32_t gr = j->local[k].rank;
            if (op->cnt[gr] > 0)
                rc = xop_cma(rj->pid[k], op->in + off, op->rec_send[k], op->cnt[gr], 0);
            off += op->cnt[gr];
        }
        return rc;
    }
}

/* A node's block of a collective's output, by the job's node index w (cluster node
 * j->nodes[w]): where the executor holds it, or inside the agreement (inline). */
typedef struct xop_blk {
    const uint8_t *p;
    uint64_t len;
} xop_blk_t;

/* Intersect [lo, lo + n) with [from, to): its start in *s0 and length, 0 if none. */
static uint64_t xop_clip(uint64_t lo, uint64_t n, uint64_t from, uint64_t to, uint64_t *s0)
{
    uint64_t a = lo > from ? lo : from, e = lo + n < to ? lo + n : to;
    *s0 = a;
    return e > a ? e - a : 0;
}

/* Does this node write node w's block of collective `cop` into its ranks (the root's node of a
 * gather being the job's node root_w)? Scatter: its own; bcast: the one block (w 0); gather at
 * the root's node, allgather: every node's. */
static int xop_outputs(const hbd_xop_t *op, hb_coll_op_t cop, uint32_t w, uint32_t root_w)
{
    uint32_t self = op->rj->node_idx;
    switch (cop) {
    case HB_COLL_SCATTER:
        return w == self;
    case HB_COLL_BCAST:
        return w == 0;
    case HB_COLL_GATHER:
        return self == root_w;
    default:
        return 1;
    }
}

/* Is node w's output block this node's own input (gather, allgather: its block; scatter,
 * bcast: the root's node), not received? */
static int xop_local_block(const hbd_xop_t *op, hb_coll_op_t cop, uint32_t w, uint32_t root_w)
{
    uint32_t self = op->rj->node_idx;
    return cop == HB_COLL_SCATTER || cop == HB_COLL_BCAST ? self == root_w : w == self;
}

/* Write bytes [from, to) of node w's block of the output (src: those bytes) into this node's
 * ranks' buffers, where xop_outputs says it does. The whole block after the data run or
 * inline; a segment's part of it as the segment arrives (xop_on_seg). */
static int xop_write_part(hbd_xop_t *op, hb_coll_op_t cop, uint32_t w, uint32_t root_w,
                          const uint8_t *src, uint64_t from, uint64_t to)
{
    hbd_ranks_job_t *rj = op->rj;
    hbd_job_t *j = rj->j;
    uint64_t s0, n;
    int rc = 0;
    if (from >= to || !xop_outputs(op, cop, w, root_w))
        return 0;
    switch (cop) {
    case HB_COLL_SCATTER: {
        uint64_t off = 0;
        for (uint32_t k = 0; k < j->n_local && rc == 0 && off < to; k++) {
            uint32_t gr = j->local[k].rank;
            if ((n = xop_clip(off, op->cnt[gr], from, to, &s0)) > 0)
                rc = xop_cma(rj->pid[k], (void *)(src + (s0 - from)), op->rec_recv[k] + (s0 - off),
                             n, 1);
            off += op->cnt[gr];
        }
        return rc;
    }
    case HB_COLL_BCAST:
        for (uint32_t k = 0; k < j->n_local && rc == 0; k++)
            if (j->local[k].rank != (uint32_t)op->root)
                rc = xop_cma(rj->pid[k], (void *)src, op->rec_send[k] + from, to - from, 1);
        return rc;
    case HB_COLL_GATHER:
    default: { /* allgather: every block to every local rank, at its job rank's place */
        uint32_t cw = j->nodes[w];
        for (uint32_t k = 0; k < j->n_local && rc == 0; k++) {
            if (cop == HB_COLL_GATHER && j->local[k].rank != (uint32_t)op->root)
                continue;
            xop_batch_t bt = {.n = 0, .pid = rj->pid[k], .write = 1};
            uint64_t off = 0;
            for (uint32_t i = rj->node_off[cw]; i < rj->node_off[cw + 1] && rc == 0 && off < to;
                 i++) {
                uint32_t gr = rj->node_granks[i];
                uint64_t len = cop == HB_COLL_GATHER ? op->cnt[gr] : op->size;
                uint64_t at =
                    cop == HB_COLL_GATHER ? xop_root_off(op, gr) : (uint64_t)gr * op->size;
                if ((n = xop_clip(off, len, from, to, &s0)) > 0)
                    rc = xop_batch_add(&bt, (void *)(src + (s0 - from)),
                                       op->rec_recv[k] + at + (s0 - off), n);
                off += len;
            }
            if (rc == 0)
                rc = xop_batch_flush(&bt);
        }
        return rc;
    }
    }
}

/* The bytes of node w's block that xop_write_part reads for this node's ranks. */
static uint64_t xop_block_need(const hbd_xop_t *op, hb_coll_op_t cop, uint32_t w)
{
    hbd_ranks_job_t *rj = op->rj;
    hbd_job_t *j = rj->j;
    uint64_t need = 0;
    if (cop == HB_COLL_BCAST)
        return op->size;
    if (cop == HB_COLL_SCATTER) {
        for (uint32_t k = 0; k < j->n_local; k++)
            need += op->cnt[j->local[k].rank];
        return need;
    }
    uint32_t cw = j->nodes[w];
    for (uint32_t i = rj->node_off[cw]; i < rj->node_off[cw + 1]; i++)
        need += cop == HB_COLL_GATHER ? op->cnt[rj->node_granks[i]] : op->size;
    return need;
}

/* Write this node's output into the ranks' buffers from the nodes' blocks blk[w] (scatter:
 * this node's; bcast: the data at blk[0]; gather at the root's node, allgather: every node's)
 * of collective `cop` whose root is on the job's node root_w; blocks that arrived whole in
 * segments were written then (op->wdone). */
static int xop_write_blocks(hbd_xop_t *op, hb_coll_op_t cop, const xop_blk_t *blk, uint32_t root_w)
{
    hbd_job_t *j = op->rj->j;
    int rc = 0;
    for (uint32_t w = 0; w < j->n_nodes && rc == 0; w++) {
        if (blk[w].p == NULL || !xop_outputs(op, cop, w, root_w))
            continue;
        if (blk[w].len < xop_block_need(op, cop, w))
            return HB_ERR_INTERNAL;
        /* a block received is in the ranks already: every byte of it came in a segment */
        if (op->wdone != NULL && !xop_local_block(op, cop, w, root_w) && op->wdone[w] >= blk[w].len)
            continue;
        rc = xop_write_part(op, cop, w, root_w, blk[w].p, 0, blk[w].len);
    }
    return rc;
}

/* Write this node's output from where the executor holds it (the schedule runs over the
 * job's nodes: its index w is cluster node j->nodes[w]). */
static int xop_write_output(hbd_xop_t *op, const hb_coll_sched_t *s, const hb_coll_exec_t *x)
{
    xop_blk_t *blk = calloc(s->n_nodes ? s->n_nodes : 1, sizeof(*blk));
    if (blk == NULL)
        return HB_ERR_NOMEM;
    for (uint32_t w = 0; w < s->n_nodes; w++)
        blk[w].p = hb_coll_exec_block(x, w, &blk[w].len);
    int rc = s->n_nodes != op->rj->j->n_nodes ? HB_ERR_INTERNAL
                                              : xop_write_blocks(op, s->op, blk, s->root);
    free(blk);
    return rc;
}

/* A segment of the data run arrived: bytes [lo, lo + len) of the output's layout (node
 * blocks in the job's node order, s->loff) are final, so the parts of them this node outputs
 * go to the ranks now, while the rest of the run is still on the wire, instead of all after
 * it. The executor keeps no copy of what it does not forward (HB_COLL_EXEC_OUT_BY_CALLER), so
 * every received block is written here (some algorithms send a node bytes twice: wdone
 * counts at least the block), and only the node's own blocks at the end. */
static int xop_on_seg(void *arg, const hb_coll_sched_t *s, uint64_t lo, uint64_t len,
                      const uint8_t *data)
{
    hbd_xop_t *op = arg;
    if (op->rj == NULL || op->wdone == NULL || op->agree_status != 0 || len == 0 ||
        s->n_nodes != op->rj->j->n_nodes || s->op == HB_COLL_ALLTOALL)
        return 0;
    for (uint32_t w = 0; w < s->n_nodes; w++) {
        uint64_t blo = s->op == HB_COLL_BCAST ? 0 : s->loff[w];
        uint64_t bn = s->op == HB_COLL_BCAST ? s->total : s->bytes[w], s0;
        uint64_t n = xop_clip(blo, bn, lo, lo + len, &s0);
        if (n == 0 || !xop_outputs(op, s->op, w, s->root) || xop_local_block(op, s->op, w, s->root))
            continue;
        int rc = xop_write_part(op, s->op, w, s->root, data + (s0 - lo), s0 - blo, s0 - blo + n);
        if (rc != 0)
            return rc;
        op->wdone[w] += n;
        if (s->op == HB_COLL_BCAST)
            break;
    }
    return 0;
}

/* One of an overlapped epoch's two parts called back: the epoch ends with the second. */
static void xop_put(hbd_xop_t *op)
{
    if (--op->refs == 0)
        xop_finish(op, op->agree_status != 0 ? op->agree_status : op->data_status);
}

static void xop_data_done(hbd_t *d, int status, const hb_coll_sched_t *s, const hb_coll_exec_t *x,
                          void *arg)
{
    hbd_xop_t *op = arg;
    op->t_ns[3] = hb_time_now_ns();
    hbd_prof(d, HBD_PROF_COLL, "cprof", "data", op->epoch);
    if (status == 0 && op->rj == NULL)
        status = HB_ERR_PEER_LOST;
    /* overlapped: the output goes out before the verdict; a verdict that fails the epoch
     * leaves the ranks' receive buffers undefined (as an MPI error does) */
    if (status == 0 && (!op->overlap || op->agree_status == 0))
        status = xop_write_output(op, s, x);
    if (!op->overlap) {
        xop_finish(op, status);
        return;
    }
    op->run = NULL;
    op->data_status = status;
    xop_put(op);
}

/*
 * The agreement blob of one node, little-endian host order (every daemon runs on the same
 * architecture as its peers; the fields are checked anyway):
 *   u32 magic, u32 node, u32 op, i32 root, u64 seq, u64 size, i32 verdict, u32 n_ranks,
 *   u32 root_table (0 or the job size), u32 mode (0: data run, 1: inline), u64 data_len,
 *   u64 data_off (the carried bytes' place in the node's input: 0 but after xop_trim),
 *   n_ranks x { u32 grank, u32 pad, u64 bytes },
 *   root_table x u64 (the root's counts, from the node hosting the root of a -v form),
 *   data_len bytes (inline: the node's input, see xop_inline)
 */
typedef struct xagree_hdr {
    uint32_t magic, node, op;
    int32_t root;
    uint64_t seq, size;
    int32_t verdict;
    uint32_t n_ranks, root_table, mode;
    uint64_t data_len, data_off;
} xagree_hdr_t;

typedef struct xagree_rank {
    uint32_t grank, pad;
    uint64_t bytes;
} xagree_rank_t;

/*
 * Inline (coll_inline_max): a small collective's data travels inside its agreement, so the
 * epoch is one round of the agreement's tree (two hops) and nothing else: every node's blob
 * carries its input (scatter, bcast: the root's node, the root's buffer in node order;
 * gather, allgather: every node, its ranks' blocks), and the concatenation every node gets
 * holds every node's input. Each node writes its output from it once the verdict is known, as
 * after a data run. Against an agreement beside a data run (coll_overlap): 6 frames instead
 * of 9 for a scatter on 4 nodes, no schedule, executor or early-segment stash, and a verdict
 * that fails the call leaves no data in flight. Chosen for the forms without -v whose data,
 * all nodes' together, is at most coll_inline_max bytes: what every node knows from its own
 * ranks' arguments, so every node whose ranks agree chooses alike; a node with another
 * setting (a cluster whose daemons disagree on coll_inline_max) makes the verdict MISMATCH.
 */
static int xop_inline(const hbd_t *d, uint32_t op, uint64_t size, uint32_t job_size)
{
    uint64_t max = d->cfg->coll_inline_max;
    if (op_is_v(op) || op < HB_NCOLL_BCAST || op > HB_NCOLL_ALLGATHER)
        return 0;
    if (op_coll(op) == HB_COLL_BCAST)
        return size <= max;
    return job_size > 0 && size <= max / job_size;
}

/* The bytes node `node`'s blob carries inline (op's table agreed). */
static uint64_t xop_inline_len(const hbd_xop_t *op, uint32_t node)
{
    const hbd_ranks_job_t *rj = op->rj;
    const hbd_job_t *j = rj->j;
    switch (op_coll(op->op)) {
    case HB_COLL_SCATTER:
        return j->spec->map[op->root] == node ? op->size * j->spec->size : 0;
    case HB_COLL_BCAST:
        return j->spec->map[op->root] == node ? op->size : 0;
    default:
        return op->size * rj->ranks_of[node];
    }
}

/* Parse every node's blob into op's table; same verdict on every node. Inline: dat[node]
 * points at node's data inside `data` (dlen[node] bytes), checked against the table. */
static int xop_agree_parse(hbd_xop_t *op, const uint8_t *data, size_t len, const uint8_t **dat,
                           uint64_t *dlen, uint64_t *doff)
{
    hbd_job_t *j = op->rj->j;
    uint32_t size = j->spec->size, n_nodes = j->d->topo->n_nodes, seen_nodes = 0;
    uint8_t *seen = calloc(size, 1), *node_seen = calloc(n_nodes, 1);
    const uint64_t *root_table = NULL;
    int verdict = 0, verdict_node = INT32_MAX, rc = 0;
    xagree_hdr_t first = {0};
    size_t off = 0;
    if (seen == NULL || node_seen == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    while (off < len) {
        xagree_hdr_t h;
        if (len - off < sizeof(h)) {
            rc = HB_ERR_PROTO;
            goto out;
        }
        memcpy(&h, data + off, sizeof(h));
        off += sizeof(h);
        if (h.magic != HBD_RANKS_AGREE_MAGIC || h.node >= n_nodes || node_seen[h.node] ||
            h.n_ranks > size || (h.root_table != 0 && h.root_table != size) || h.mode > 1 ||
            (len - off) / sizeof(xagree_rank_t) < h.n_ranks) {
            rc = HB_ERR_PROTO;
            goto out;
        }
        node_seen[h.node] = 1;
        seen_nodes++;
        if (seen_nodes == 1)
            first = h;
        if (h.verdict != 0 && (int)h.node < verdict_node) {
            verdict_node = (int)h.node;
            verdict = h.verdict < 0 && h.verdict >= HB_ERR_LAST ? h.verdict : HB_ERR_PROTO;
        }
        if (h.op != first.op || h.root != first.root || h.seq != first.seq ||
            (!op_is_v(h.op) && h.size != first.size)) {
            if (verdict == 0)
                verdict = HB_ERR_MISMATCH;
        } else if (h.mode != first.mode && verdict == 0) {
            hb_log_error("job %s: epoch %" PRIu64 ": nodes %" PRIu32 " and %" PRIu32
                         " disagree on carrying the data inside the agreement (coll_inline_max)",
                         j->nspace, op->epoch, first.node, h.node);
            verdict = HB_ERR_MISMATCH;
        }
        for (uint32_t i = 0; i < h.n_ranks; i++) {
            xagree_rank_t r;
            memcpy(&r, data + off, sizeof(r));
            off += sizeof(r);
            if (r.grank >= size || seen[r.grank] || j->spec->map[r.grank] != h.node) {
                rc = HB_ERR_PROTO;
                goto out;
            }
            seen[r.grank] = 1;
            op->cnt[r.grank] = r.bytes;
        }
        if (h.root_table != 0) {
            if ((len - off) / sizeof(uint64_t) < h.root_table || root_table != NULL) {
                rc = HB_ERR_PROTO;
                goto out;
            }
            root_table = (const uint64_t *)(data + off);
            off += (size_t)h.root_table * sizeof(uint64_t);
        }
        if ((h.mode == 0 && (h.data_len != 0 || h.data_off != 0)) || len - off < h.data_len ||
            h.data_off > UINT64_MAX - h.data_len) {
            rc = HB_ERR_PROTO;
            goto out;
        }
        if (dat != NULL) {
            dat[h.node] = data + off;
            dlen[h.node] = h.data_len;
            doff[h.node] = h.data_off;
        }
        off += (size_t)h.data_len;
    }
    if (seen_nodes != j->n_nodes || memchr(seen, 0, size) != NULL) {
        rc = HB_ERR_PROTO;
        goto out;
    }
    if (verdict != 0) {
        rc = verdict;
        goto out;
    }
    op->op = first.op;
    op->root = first.root;
    op->size = first.size;
    if (first.mode != (uint32_t)op->inl) {
        rc = HB_ERR_PROTO; /* our own blob is among them */
        goto out;
    }
    for (uint32_t w = 0; op->inl && w < j->n_nodes; w++) {
        uint32_t cw = j->nodes[w];
        if ((op_has_root(op->op) && (op->root < 0 || (uint32_t)op->root >= size)) ||
            doff[cw] + dlen[cw] > xop_inline_len(op, cw)) {
            rc = HB_ERR_PROTO;
            goto out;
        }
    }
    if (op_is_v(op->op)) {
        /* the root's table must agree with every rank's own count */
        if (root_table == NULL) {
            rc = HB_ERR_PROTO;
            goto out;
        }
        for (uint32_t gr = 0; gr < size; gr++) {
            uint64_t want;
            memcpy(&want, &root_table[gr], sizeof(want));
            if (want != op->cnt[gr]) {
                rc = HB_ERR_MISMATCH;
                goto out;
            }
        }
    }
out:
    if (rc == HB_ERR_PROTO)
        hb_log_error("job %s: malformed agreement for epoch %" PRIu64, j->nspace, op->epoch);
    free(seen);
    free(node_seen);
    return rc;
}

/* The data run of the collective in op's table (every rank's count, op, root, size): the same
 * schedule on every node. Takes op->in over. */
static int xop_data_create(hbd_xop_t *op, hbd_coll_run_t **run_p)
{
    hbd_ranks_job_t *rj = op->rj;
    hbd_job_t *j = rj->j;
    uint64_t *node_bytes = calloc(j->d->topo->n_nodes, sizeof(uint64_t));
    if (node_bytes == NULL)
        return HB_ERR_NOMEM;
    for (uint32_t gr = 0; gr < j->spec->size; gr++)
        node_bytes[j->spec->map[gr]] += op->cnt[gr];
    hbd_coll_job_args_t a = {.op = op_coll(op->op),
                             .vform = op_is_v(op->op),
                             /* allgather has no root: the schedule's is any node of the
                              * job (node 0 of the cluster need not be one) */
                             .root = op_has_root(op->op) ? j->spec->map[op->root] : j->nodes[0],
                             .size = op->size,
                             .ranks_of = rj->ranks_of,
                             .counts = node_bytes,
                             .read = op->pc != NULL ? xop_read_range : NULL,
                             .read_arg = op,
                             .on_seg = xop_on_seg,
                             .seg_arg = op};
    free(op->wdone);
    op->wdone = calloc(j->n_nodes ? j->n_nodes : 1, sizeof(uint64_t));
    if (op->wdone == NULL) {
        free(node_bytes);
        return HB_ERR_NOMEM;
    }
    uint64_t id =
        HBD_COLL_ID_JOB | ((j->spec->id & 0xffffffffffull) << 20) | (op->epoch & 0xfffffull);
    int rc = hbd_coll_job_create(j->d, id, &a, op->in, op->in_len, run_p);
    op->in = NULL; /* hbd_coll's now */
    free(node_bytes);
    return rc;
}

/* Inline: the agreement holds every node's input; write this node's output from it. */
static int xop_inline_done(hbd_xop_t *op, const uint8_t *data, size_t len)
{
    hbd_job_t *j = op->rj->j;
    uint32_t n = j->d->topo->n_nodes;
    const uint8_t **dat = calloc(n, sizeof(*dat));
    uint64_t *dlen = calloc(n, sizeof(*dlen)), *doff = calloc(n, sizeof(*doff));
    xop_blk_t *blk = calloc(j->n_nodes ? j->n_nodes : 1, sizeof(*blk));
    int rc = dat == NULL || dlen == NULL || doff == NULL || blk == NULL ? HB_ERR_NOMEM : 0;
    if (rc == 0)
        rc = xop_agree_parse(op, data, len, dat, dlen, doff);
    hb_coll_op_t cop = op_coll(op->op);
    uint32_t root_w = 0;
    for (uint32_t w = 0; rc == 0 && w < j->n_nodes; w++)
        if (op_has_root(op->op) && j->spec->map[op->root] == j->nodes[w])
            root_w = w;
    /* what this node writes out must have come (xop_trim leaves out only what it does not) */
    for (uint32_t w = 0; rc == 0 && w < j->n_nodes; w++) {
        uint32_t cw = j->nodes[w];
        if (cop != HB_COLL_GATHER && cop != HB_COLL_ALLGATHER)
            continue;
        if (doff[cw] == 0 && dlen[cw] == xop_inline_len(op, cw))
            blk[w] = (xop_blk_t){dat[cw], dlen[cw]};
        else if (xop_outputs(op, cop, w, root_w))
            rc = HB_ERR_PROTO;
    }
    uint32_t cr = j->nodes[root_w];
    if (rc == 0 && cop == HB_COLL_SCATTER) { /* the root's buffer in node order */
        uint32_t self = op->rj->node_idx, cs = j->d->self;
        uint64_t at = (uint64_t)op->rj->node_off[cs] * op->size;
        uint64_t mine = (uint64_t)op->rj->ranks_of[cs] * op->size;
        if (at < doff[cr] || at + mine > doff[cr] + dlen[cr])
            rc = HB_ERR_PROTO;
        else
            blk[self] = (xop_blk_t){dat[cr] + (at - doff[cr]), mine};
    } else if (rc == 0 && cop == HB_COLL_BCAST) {
        if (doff[cr] != 0 || dlen[cr] != xop_inline_len(op, cr))
            rc = HB_ERR_PROTO;
        blk[0] = (xop_blk_t){dat[cr], dlen[cr]};
    }
    if (rc == HB_ERR_PROTO)
        hb_log_error("job %s: epoch %" PRIu64 ": the agreement lacks this node's data", j->nspace,
                     op->epoch);
    op->t_ns[3] = hb_time_now_ns();
    if (rc == 0)
        rc = xop_write_blocks(op, cop, blk, root_w);
    free(dat);
    free(dlen);
    free(doff);
    free(blk);
    return rc;
}

/* Where each blob's carried data goes in a trimmed release (xop_trim). */
typedef struct xtrim {
    size_t at;       /* the blob's data in the release */
    uint64_t lo, hi; /* the kept bytes of the node's input */
} xtrim_t;

/* The bytes of node `node`'s inline input (header h) that the nodes at and below `kid` of the
 * agreement's tree write out, in [*lo, *hi) (empty: *lo == *hi == 0); 0 when they need all or
 * h is not one this knows to cut. */
static int xop_trim_range(const hbd_xop_t *op, const xagree_hdr_t *h, int star, uint32_t kid,
                          uint64_t *lo, uint64_t *hi)
{
    const hbd_ranks_job_t *rj = op->rj;
    const hbd_job_t *j = rj->j;
    hb_coll_op_t cop = op_coll(h->op);
    *lo = *hi = 0;
    if (h->data_len == 0 || !op_has_root(h->op) || h->root < 0 ||
        (uint32_t)h->root >= j->spec->size)
        return 0;
    uint32_t root_node = j->spec->map[h->root];
    if (cop == HB_COLL_GATHER) /* the root's node, or a node on the way to it, needs it all */
        return !hbd_fence_under(j->d, star, kid, root_node);
    if (cop != HB_COLL_SCATTER || h->node != root_node)
        return 0;
    uint64_t a = UINT64_MAX, e = 0; /* the root's buffer in node order: each node's part */
    for (uint32_t w = 0; w < j->n_nodes; w++) {
        uint32_t cw = j->nodes[w];
        if (rj->ranks_of[cw] == 0 || !hbd_fence_under(j->d, star, kid, cw))
            continue;
        uint64_t from = (uint64_t)rj->node_off[cw] * h->size;
        uint64_t to = (uint64_t)rj->node_off[cw + 1] * h->size;
        a = from < a ? from : a;
        e = to > e ? to : e;
    }
    /* within what came here (a trimmed release covers the nodes below it) */
    uint64_t c0 = h->data_off, c1 = h->data_off + h->data_len;
    a = a > c0 ? a : c0;
    e = e < c1 ? e : c1;
    if (a < e) {
        *lo = a;
        *hi = e;
    }
    return *lo != c0 || *hi != c1;
}

/*
 * Inline (xop_inline): the release that goes down the agreement's tree to `kid`
 * (hbd_fence_trim_t) carries of each blob's data only what the nodes at and below the kid
 * write out: a scatter's leaves their part of the root's buffer, a gather's nodes off the way
 * to the root's node nothing; a bcast and an allgather need all of it. The headers and tables
 * go whole, so every node still decides the verdict from the same views; a blob's data_off and
 * data_len say what it still carries, and xop_inline_done checks that this covers what the node
 * writes. A release that does not parse, or whose blobs disagree on the collective, goes
 * whole: the verdict (PROTO or MISMATCH) needs no data. Against the whole concatenation on
 * every edge: a 4-node scatter of 4 KiB a rank sends each leaf 4 KiB of data instead of 16.
 */
static int xop_trim(hbd_t *d, void *arg, int star, uint32_t kid, const uint8_t *all, size_t len,
                    uint8_t **out, size_t *out_len)
{
    hbd_xop_t *op = arg;
    (void)d;
    if (op->rj == NULL || !op->inl)
        return 0;
    uint32_t cap = op->rj->j->n_nodes;
    xtrim_t *t = calloc(cap ? cap : 1, sizeof(*t));
    size_t off = 0, keep = 0;
    uint32_t nb = 0;
    int cut = 0, ok = t != NULL;
    xagree_hdr_t first = {0};
    while (ok && off < len) {
        xagree_hdr_t h;
        ok = len - off >= sizeof(h) && nb < cap;
        if (!ok)
            break;
        memcpy(&h, all + off, sizeof(h));
        size_t body =
            (size_t)h.n_ranks * sizeof(xagree_rank_t) + (size_t)h.root_table * sizeof(uint64_t);
        if (nb == 0)
            first = h;
        ok = h.magic == HBD_RANKS_AGREE_MAGIC && h.mode == 1 &&
             h.n_ranks <= op->rj->j->spec->size && h.root_table <= op->rj->j->spec->size &&
             h.op == first.op && h.root == first.root && h.size == first.size &&
             (len - off - sizeof(h)) >= body && (len - off - sizeof(h) - body) >= h.data_len &&
             h.data_off <= UINT64_MAX - h.data_len;
        if (!ok)
            break;
        off += sizeof(h) + body;
        t[nb].at = off;
        if (xop_trim_range(op, &h, star, kid, &t[nb].lo, &t[nb].hi)) {
            cut = 1;
        } else {
            t[nb].lo = h.data_off;
            t[nb].hi = h.data_off + h.data_len;
        }
        keep += sizeof(h) + body + (size_t)(t[nb].hi - t[nb].lo);
        off += (size_t)h.data_len;
        nb++;
    }
    if (!ok || !cut) {
        free(t);
        return 0;
    }
    uint8_t *o = malloc(keep ? keep : 1);
    if (o == NULL) {
        free(t);
        return 0; /* no room to cut: the whole release goes */
    }
    size_t in = 0, w = 0;
    for (uint32_t b = 0; b < nb; b++) {
        xagree_hdr_t h;
        memcpy(&h, all + in, sizeof(h));
        size_t hat = w;
        memcpy(o + w, all + in, t[b].at - in); /* header and tables */
        w += t[b].at - in;
        uint64_t n = t[b].hi - t[b].lo;
        if (n > 0)
            memcpy(o + w, all + t[b].at + (t[b].lo - h.data_off), (size_t)n);
        w += (size_t)n;
        xagree_hdr_t nh = h;
        nh.data_off = n > 0 ? t[b].lo : 0;
        nh.data_len = n;
        memcpy(o + hat, &nh, sizeof(nh));
        in = t[b].at + (size_t)h.data_len;
    }
    free(t);
    *out = o;
    *out_len = w;
    return 1;
}

static void xop_agree_done(hbd_t *d, int status, uint8_t *data, size_t len, void *arg)
{
    hbd_xop_t *op = arg;
    op->t_ns[2] = hb_time_now_ns();
    hbd_prof(d, HBD_PROF_COLL, "cprof", "agreed", op->epoch);
    if (op->inl) {
        if (status == 0 && op->rj == NULL)
            status = HB_ERR_PEER_LOST;
        if (status == 0)
            status = xop_inline_done(op, data, len);
        free(data);
        xop_finish(op, status);
        return;
    }
    if (op->overlap) {
        if (status == 0 && op->rj == NULL)
            status = HB_ERR_PEER_LOST;
        if (status == 0)
            status = xop_agree_parse(op, data, len, NULL, NULL, NULL);
        free(data);
        op->agree_status = status;
        if (status != 0 && op->run != NULL)
            hbd_coll_job_cancel(d, op->run, status); /* its callback drops one reference */
        xop_put(op);
        return;
    }
    if (status != 0 || op->rj == NULL) {
        free(data);
        xop_finish(op, status != 0 ? status : HB_ERR_PEER_LOST);
        return;
    }
    status = xop_agree_parse(op, data, len, NULL, NULL, NULL);
    free(data);
    if (status != 0) {
        xop_finish(op, status);
        return;
    }
    hbd_coll_run_t *run = NULL;
    status = xop_data_create(op, &run);
    if (status != 0) {
        xop_finish(op, status);
        return;
    }
    hbd_coll_job_start(d, run, xop_data_done, op);
}

/* Every local rank opened a collective at the epoch (or some did: mismatch). */
static void xop_coll_begin(hbd_xop_t *op, uint32_t n_at)
{
    hbd_ranks_job_t *rj = op->rj;
    hbd_job_t *j = rj->j;
    hbd_t *d = j->d;
    uint32_t size = j->spec->size, nl = j->n_local;
    int verdict = n_at == nl ? 0 : HB_ERR_MISMATCH, am_root_node = 0;
    const hb_seg_ctl_t *c0 = hb_seg_ctl(&rj->seg, 0);
    uint32_t op0 = c0->op;
    int32_t root0 = c0->root;
    uint64_t seq0 = c0->coll_seq, size0 = c0->count;

    op->cnt = calloc(size, sizeof(uint64_t));
    op->dsp = calloc(size, sizeof(uint64_t));
    op->rec_send = calloc(nl, sizeof(uint64_t));
    op->rec_recv = calloc(nl, sizeof(uint64_t));
    size_t blen = sizeof(xagree_hdr_t) + nl * sizeof(xagree_rank_t) + size * sizeof(uint64_t);
    uint8_t *blob = malloc(blen);
    if (op->cnt == NULL || op->dsp == NULL || op->rec_send == NULL || op->rec_recv == NULL ||
        blob == NULL) {
        free(blob);
        verdict = HB_ERR_NOMEM;
        /* still take part (with a header only) so the other nodes are not left waiting */
        blob = malloc(sizeof(xagree_hdr_t));
        if (blob == NULL) {
            xop_finish(op, HB_ERR_NOMEM);
            return;
        }
        nl = 0;
    }
    xagree_hdr_t h = {.magic = HBD_RANKS_AGREE_MAGIC,
                      .node = d->self,
                      .op = op0,
                      .root = root0,
                      .seq = seq0,
                      .size = size0,
                      .n_ranks = nl};
    size_t off = sizeof(h);
    for (uint32_t k = 0; k < nl; k++) {
        const hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, k);
        xagree_rank_t r = {.grank = j->local[k].rank, .bytes = c->count};
        if (verdict == 0 && c->err != 0)
            verdict = c->err < 0 && c->err >= HB_ERR_LAST ? c->err : HB_ERR_PROTO;
        if (verdict == 0 &&
            (c->op != op0 || c->root != root0 || c->coll_seq != seq0 || c->op < HB_NCOLL_BCAST ||
             c->op > HB_NCOLL_ALLGATHER || (!op_is_v(op0) && c->count != size0)))
            verdict = HB_ERR_MISMATCH;
        if (verdict == 0 && rj->pid[k] == 0)
            verdict = HB_ERR_PROTO; /* a rank that never said hello cannot take part */
        if (op_has_root(op0) && root0 >= 0 && (uint32_t)root0 == j->local[k].rank)
            am_root_node = 1;
        op->rec_send[k] = c->sendbuf;
        op->rec_recv[k] = c->recvbuf;
        memcpy(blob + off, &r, sizeof(r));
        off += sizeof(r);
    }
    h.n_ranks = nl;
    op->op = op0;
    op->root = root0;
    op->size = size0;
    for (uint32_t k = 0; k < nl; k++)
        op->cnt[j->local[k].rank] = hb_seg_ctl(&rj->seg, k)->count;
    if (verdict == 0 && am_root_node) {
        /* this node's view of every rank's block: the root's (its -v tables are read from
         * its memory; the counts also go to every node to check against) */
        for (uint32_t gr = 0; gr < size; gr++) {
            op->cnt[gr] = op_is_v(op0) ? 0 : size0;
            op->dsp[gr] = (uint64_t)gr * size0;
        }
        for (uint32_t k = 0; k < nl && verdict == 0 && op_is_v(op0); k++) {
            if (j->local[k].rank != (uint32_t)root0)
                continue;
            const hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, k);
            size_t *tc = malloc((size_t)size * sizeof(size_t));
            size_t *td = malloc((size_t)size * sizeof(size_t));
            verdict = tc == NULL || td == NULL ? HB_ERR_NOMEM
                                               : xop_cma(rj->pid[k], tc, c->counts_addr,
                                                         (uint64_t)size * sizeof(size_t), 0);
            if (verdict == 0)
                verdict =
                    xop_cma(rj->pid[k], td, c->displs_addr, (uint64_t)size * sizeof(size_t), 0);
            for (uint32_t gr = 0; verdict == 0 && gr < size; gr++) {
                uint64_t v = tc[gr];
                op->cnt[gr] = v;
                op->dsp[gr] = td[gr];
                memcpy(blob + off + gr * sizeof(uint64_t), &v, sizeof(v));
            }
            free(tc);
            free(td);
        }
        if (verdict == 0 && op_is_v(op0)) {
            h.root_table = size;
            off += (size_t)size * sizeof(uint64_t);
        }
        if (verdict == 0 && op_coll(op0) == HB_COLL_GATHER)
            for (uint32_t k = 0; k < nl; k++) /* its own ranks: their own counts */
                op->cnt[j->local[k].rank] = hb_seg_ctl(&rj->seg, k)->count;
    }
    if (verdict == 0)
        verdict = xop_read_input(op);
    op->t_ns[1] = hb_time_now_ns();
    hbd_prof(d, HBD_PROF_COLL, "cprof", "read", op->epoch);
    /* Inline (xop_inline): this node's input goes inside its blob (read in full: the limit is
     * below HBD_RANKS_EAGER_READ), and no data run starts. */
    op->inl = xop_inline(d, op0, size0, size);
    h.mode = (uint32_t)op->inl;
    if (verdict == 0 && op->inl && op->in_len > 0) {
        uint8_t *b2 = op->pc == NULL ? realloc(blob, off + op->in_len) : NULL;
        if (b2 == NULL) {
            verdict = op->pc == NULL ? HB_ERR_NOMEM : HB_ERR_INTERNAL;
        } else {
            blob = b2;
            memcpy(blob + off, op->in, op->in_len);
            off += op->in_len;
            h.data_len = op->in_len;
        }
    }
    /* Overlap: where this node's view gives every node's bytes (the forms without -v), the
     * data run starts now, beside the agreement; every node whose ranks agree does the same,
     * so the schedules match. A node that sees a mismatch starts none: the others' runs wait
     * until the agreement's verdict cancels them. */
    hbd_coll_run_t *run = NULL;
    if (verdict == 0 && d->cfg->coll_overlap && !op_is_v(op0) && !op->inl) {
        for (uint32_t gr = 0; gr < size; gr++)
            op->cnt[gr] = size0;
        verdict = xop_data_create(op, &run);
    }
    h.verdict = verdict;
    memcpy(blob, &h, sizeof(h));
    if (run != NULL) {
        op->overlap = 1;
        op->refs = 2;
        op->run = run;
    }
    /* The agreement's blob goes out first: of the two rounds it is the longer (a tree's two
     * hops against the data's one), and ahead of the data on the same link it does not wait
     * behind a node's segments. Its callback may come at once (the other blobs came first); a
     * failure then marks the run failed before it starts, and starting it ends it. */
    int whole = j->n_nodes == d->topo->n_nodes;
    uint64_t id = hbd_fence_job_id(j->spec->id, j->dfence_seq++, whole);
    int rc = hbd_fence_start_trimmed(d, id, whole ? NULL : j->nodes, whole ? 0 : j->n_nodes, 0,
                                     blob, off, op->inl ? xop_trim : NULL, xop_agree_done,
                                     op); /* takes the blob over */
    if (rc != 0 && run != NULL) {
        op->agree_status = rc;
        hbd_coll_job_cancel(d, run, rc);
        xop_put(op); /* the agreement's reference; the run's callback drops the other */
    } else if (rc != 0) {
        xop_finish(op, rc);
    }
    if (run != NULL)
        hbd_coll_job_start(d, run, xop_data_done, op); /* may call back at once */
}

/* Tell the ranks how to wait for the epochs this daemon runs (hb_seg_hdr_t.ranks_sleep): where
 * its loop yields with at least two busy processes to a core, they sleep (the waiting rule,
 * doc/design.md section 6.1). */
static void hbd_ranks_sleep_rule(hbd_ranks_job_t *rj)
{
    uint32_t v = (uint32_t)hbd_barrier_ranks_sleep(rj->j->d);
    atomic_store_explicit(&hb_seg_hdr(&rj->seg)->ranks_sleep, v, memory_order_relaxed);
}

/* The node's ranks completed `epoch` locally: run it across the nodes. */
static void xop_start(hbd_ranks_job_t *rj, uint64_t epoch)
{
    hbd_job_t *j = rj->j;
    hbd_xop_t *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        hb_seg_release_status(&rj->seg, epoch, HB_ERR_NOMEM);
        return;
    }
    op->rj = rj;
    op->d = j->d;
    op->epoch = epoch;
    op->t_ns[0] = hb_time_now_ns();
    op->next = rj->ops;
    rj->ops = op;
    hbd_ranks_sleep_rule(rj);
    uint32_t n_at = 0;
    for (uint32_t k = 0; k < j->n_local; k++)
        n_at += hb_seg_ctl(&rj->seg, k)->epoch == epoch;
    hbd_prof(j->d, HBD_PROF_COLL, "cprof", n_at > 0 ? "ring" : "ring_bar", epoch);
    if (n_at > 0) {
        xop_coll_begin(op, n_at);
        return;
    }
    uint64_t coll = j->fence_seq++;
    int rc = hbd_barrier_start(j->d, j->spec->jobno, coll, xop_barrier_done, op);
    if (rc != 0)
        xop_finish(op, rc);
}

/* ---- subset barriers across nodes ---- */

static void xsub_answer(hbd_ranks_job_t *rj, uint32_t lr, uint64_t hash, uint32_t seq, int status)
{
    hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, lr);
    atomic_store_explicit(&c->sub_go, HB_SEG_SUB_GO(hash, seq, status), memory_order_release);
    hb_wait_word_wake(&c->sub_wake);
}

static void xsub_free(hbd_xsub_t *x)
{
    if (x->rj != NULL)
        for (hbd_xsub_t **pp = &x->rj->subs; *pp != NULL; pp = &(*pp)->next)
            if (*pp == x) {
                *pp = x->next;
                break;
            }
    free(x->set);
    free(x->list);
    free(x->arrived);
    free(x->in);
    free(x->nidx);
    free(x->pos);
    free(x);
}

/* The key of x's answers: the set's hash, salted for a collective (HB_SEG_SUBCOLL_SALT). */
static uint64_t xsub_key(const hbd_xsub_t *x)
{
    return x->coll ? x->hash ^ HB_SEG_SUBCOLL_SALT : x->hash;
}

static void xsub_finish(hbd_xsub_t *x, int status)
{
    if (x->rj != NULL)
        for (uint32_t k = 0; k < x->rj->j->n_local; k++)
            if (x->arrived[k])
                xsub_answer(x->rj, k, xsub_key(x), x->seq, status);
    xsub_free(x);
}

static void xsub_barrier_done(hbd_t *d, uint64_t coll, int status, void *arg)
{
    (void)d;
    (void)coll;
    xsub_finish(arg, status);
}

/* ---- subset collectives across nodes ---- */

/*
 * A collective of a rank set whose members run on several nodes (libhibar's hb_ncoll_subset,
 * HB_SEG_OP_SUBCOLL). Once its local members arrived, each member node's daemon reads their
 * records (their control blocks: op, root as a member index, count, buffers, own error) and
 * input, and sends one blob into a fence among the member nodes (a subset fence: a star
 * through the lowest of them). Every member node gets every blob, so every one reaches the
 * same verdict from them: the first node's error in the blobs' order, else MISMATCH where
 * the blobs' arguments or member orders differ, else it writes its members' outputs by
 * cross-memory attach and answers each member (a member whose buffer cannot be written gets
 * that error, the others success: as an MPI error, the rest is not undone). The blob's layout,
 * its reading (the verdict) and the release the leader trims for each member node: hbd_xsc.h.
 * Mode 1 (xsc_mode): the blobs carry no data; once the verdict is 0, every member node starts
 * a data run of hbd_coll.c over the member nodes (its schedule's
 * node i: the i-th member node, ascending; node i's block: its members' blocks in ascending
 * member index), whose input each node read before the fence (a read that fails is its
 * verdict), and writes the outputs when the run ends.
 */
/* The member index of job rank gr in x's list, or x->n. */
static uint32_t xsc_index(const hbd_xsub_t *x, uint32_t gr)
{
    for (uint32_t i = 0; i < x->n; i++)
        if (x->list[i] == gr)
            return i;
    return x->n;
}

/* A hash of the job and the set: every member node computes the same (the fence's and the
 * data run's ids). */
static uint64_t xsc_hash(const hbd_xsub_t *x)
{
    const hbd_job_t *j = x->rj->j;
    uint64_t h = hb_fnv64_u32(HB_FNV64_BASIS, HBD_XSC_MAGIC);
    h = hb_fnv64_u32(hb_fnv64_u32(h, (uint32_t)j->spec->id), (uint32_t)(j->spec->id >> 32));
    return hb_fnv64_u32(hb_fnv64_u32(h, (uint32_t)x->hash), (uint32_t)(x->hash >> 32));
}

/* Mode 1 (the data by a run after the fence) for a collective of n members of count bytes. */
static int xsc_mode(const hbd_t *d, uint32_t op, uint64_t count, uint32_t n)
{
    uint64_t max = d->cfg->coll_inline_max;
    return op == HB_NCOLL_BCAST ? count > max : count > max / n;
}

/* The run's layout: every member's node index among the member nodes (ascending) and its
 * place among that node's members (ascending member index). */
static int xsc_layout(hbd_xsub_t *x)
{
    const uint32_t *map = x->rj->j->spec->map;
    uint32_t n_nodes = x->rj->j->d->topo->n_nodes;
    uint32_t *idx = calloc(n_nodes, sizeof(uint32_t)), *cnt = calloc(n_nodes, sizeof(uint32_t));
    x->nidx = calloc(x->n, sizeof(uint32_t));
    x->pos = calloc(x->n, sizeof(uint32_t));
    int rc = idx == NULL || cnt == NULL || x->nidx == NULL || x->pos == NULL ? HB_ERR_NOMEM : 0;
    for (uint32_t k = 0; rc == 0 && k < x->n; k++)
        cnt[map[x->list[k]]]++;
    for (uint32_t i = 0, w = 0; rc == 0 && i < n_nodes; i++)
        if (cnt[i] > 0) {
            idx[i] = w++;
            cnt[i] = 0;
        }
    for (uint32_t k = 0; rc == 0 && k < x->n; k++) {
        uint32_t node = map[x->list[k]];
        x->nidx[k] = idx[node];
        x->pos[k] = cnt[node]++;
    }
    free(idx);
    free(cnt);
    return rc;
}

/* The byte offset of each member node's block in the run's layout ([n_nodes + 1], node order:
 * ascending member nodes, each block its members' count bytes). NULL without memory. */
static uint64_t *xsc_node_off(const hbd_xsub_t *x, uint64_t b, uint32_t *n_nodes_p)
{
    uint32_t n_nodes = 0;
    for (uint32_t k = 0; k < x->n; k++)
        n_nodes = x->nidx[k] + 1 > n_nodes ? x->nidx[k] + 1 : n_nodes;
    uint64_t *noff = calloc(n_nodes + 1, sizeof(uint64_t));
    if (noff == NULL)
        return NULL;
    for (uint32_t k = 0; k < x->n; k++)
        noff[x->nidx[k] + 1] += b;
    for (uint32_t w = 0; w < n_nodes; w++)
        noff[w + 1] += noff[w];
    *n_nodes_p = n_nodes;
    return noff;
}

/* Mode 1: read this node's input for the run, in node order (scatter: the root's blocks of
 * every member node; bcast: the root's buffer; gather, allgather: this node's members' blocks).
 * lr_of[k]: the local rank of member k here. */
static int xsc_read_run(hbd_xsub_t *x, const hbd_xsc_hdr_t *h, const uint32_t *lr_of, int root_here)
{
    hbd_ranks_job_t *rj = x->rj;
    uint32_t self = rj->j->d->self, n_self = 0, n_nodes = 0;
    uint64_t b = h->count;
    int rc = xsc_layout(x);
    if (rc != 0)
        return rc;
    for (uint32_t k = 0; k < x->n; k++)
        n_self += rj->j->spec->map[x->list[k]] == self;
    uint64_t *noff = xsc_node_off(x, b, &n_nodes);
    if (noff == NULL)
        return HB_ERR_NOMEM;
    if (h->op == HB_NCOLL_SCATTER)
        x->in_len = root_here ? b * x->n : 0;
    else if (h->op == HB_NCOLL_BCAST)
        x->in_len = root_here ? b : 0;
    else
        x->in_len = b * n_self;
    x->in = malloc(x->in_len ? x->in_len : 1);
    if (x->in == NULL) {
        free(noff);
        return HB_ERR_NOMEM;
    }
    if (x->in_len > 0 && hbd_xsc_rooted(h->op)) {
        uint32_t lr = lr_of[h->root];
        const hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, lr);
        xop_batch_t bt = {.pid = rj->pid[lr], .write = 0};
        if (h->op == HB_NCOLL_BCAST) {
            rc = xop_cma(bt.pid, x->in, c->sendbuf, b, 0);
        } else {
            for (uint32_t k = 0; rc == 0 && k < x->n; k++)
                rc = xop_batch_add(&bt, x->in + noff[x->nidx[k]] + (uint64_t)x->pos[k] * b,
                                   c->sendbuf + (uint64_t)k * b, b);
            if (rc == 0)
                rc = xop_batch_flush(&bt);
        }
    } else if (x->in_len > 0) {
        for (uint32_t k = 0; rc == 0 && k < x->n; k++) {
            if (rj->j->spec->map[x->list[k]] != self)
                continue;
            const hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, lr_of[k]);
            rc = xop_cma(rj->pid[lr_of[k]], x->in + (uint64_t)x->pos[k] * b, c->sendbuf, b, 0);
        }
    }
    free(noff);
    return rc;
}

/* This node's blob: its members' records checked (the local verdict) and their input read. */
static uint8_t *xsc_blob(hbd_xsub_t *x, size_t *len_p)
{
    hbd_ranks_job_t *rj = x->rj;
    hbd_job_t *j = rj->j;
    uint64_t tag = HB_SEG_SUB_TAG(x->hash, x->seq);
    uint32_t nh = 0, *mi = calloc(j->n_local ? j->n_local : 1, sizeof(uint32_t));
    uint32_t *lr_of = calloc(x->n, sizeof(uint32_t));
    hbd_xsc_hdr_t h = {.magic = HBD_XSC_MAGIC, .node = j->d->self};
    /* members of this node that disagreed (xsub_desc) still send their verdict: the other
     * nodes learn it at once instead of waiting out the fence's timeout */
    int verdict = x->status != 0 ? x->status : mi == NULL || lr_of == NULL ? HB_ERR_NOMEM : 0;
    int first = 1, root_here = 0;
    for (uint32_t lr = 0; verdict == 0 && lr < j->n_local; lr++) {
        if (!x->arrived[lr])
            continue;
        uint32_t k = xsc_index(x, j->local[lr].rank);
        const hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, lr);
        if (k == x->n || rj->pid[lr] == 0)
            verdict = HB_ERR_PROTO;
        else if (c->err != 0)
            verdict = c->err < 0 && c->err >= HB_ERR_LAST ? c->err : HB_ERR_PROTO;
        else if (c->coll_seq != tag || c->epoch != tag)
            verdict = HB_ERR_MISMATCH;
        else if (c->op != HB_NCOLL_BCAST && c->op != HB_NCOLL_SCATTER && c->op != HB_NCOLL_GATHER &&
                 c->op != HB_NCOLL_ALLGATHER)
            verdict = HB_ERR_PROTO;
        else if (first) {
            h.op = c->op;
            h.root = c->op == HB_NCOLL_ALLGATHER ? 0 : c->root;
            h.count = c->count;
            first = 0;
        } else if (c->op != h.op || c->count != h.count ||
                   (c->op != HB_NCOLL_ALLGATHER && c->root != h.root))
            verdict = HB_ERR_MISMATCH;
        if (verdict == 0) {
            mi[nh++] = k;
            lr_of[k] = lr;
        }
    }
    if (verdict == 0 && (h.root < 0 || (uint32_t)h.root >= x->n))
        verdict = HB_ERR_INVAL; /* the members checked it: a record written since */
    if (verdict == 0 && (h.count > HBD_XSC_MAX_INPUT / x->n))
        verdict = HB_ERR_INVAL; /* more than a node's input may hold */
    for (uint32_t i = 0; verdict == 0 && i < nh; i++)
        root_here |= mi[i] == (uint32_t)h.root;
    h.mode = verdict == 0 && xsc_mode(j->d, h.op, h.count, x->n);
    if (verdict == 0 && h.mode)
        verdict = xsc_read_run(x, &h, lr_of, root_here);
    uint64_t dlen =
        verdict == 0 && !h.mode ? hbd_xsc_data_len(h.op, h.count, x->n, nh, root_here) : 0;
    size_t off = sizeof(h) + (((size_t)nh * sizeof(uint32_t) + 7) & ~(size_t)7);
    uint8_t *blob = verdict == 0 ? calloc(1, off + dlen) : NULL;
    if (verdict == 0 && blob == NULL)
        verdict = HB_ERR_NOMEM;
    if (verdict == 0) {
        memcpy(blob + sizeof(h), mi, nh * sizeof(uint32_t));
        uint8_t *at = blob + off;
        for (uint32_t i = 0; verdict == 0 && i < nh && dlen > 0; i++) {
            uint32_t lr = lr_of[mi[i]];
            const hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, lr);
            if (hbd_xsc_rooted(h.op) && mi[i] != (uint32_t)h.root)
                continue;
            uint64_t l = hbd_xsc_rooted(h.op) ? dlen : h.count;
            verdict = xop_cma(rj->pid[lr], at, c->sendbuf, l, 0);
            at += l;
        }
    }
    if (verdict != 0) { /* a header alone: the other nodes still get this node's verdict */
        h.mode = 0;
        free(blob);
        blob = calloc(1, sizeof(h));
        off = sizeof(h);
        dlen = nh = 0;
    }
    free(mi);
    free(lr_of);
    if (blob == NULL)
        return NULL;
    h.n_here = nh;
    h.verdict = verdict;
    h.order = hb_nbar_set_hash(x->list, x->n); /* FNV-1a of the list in its order */
    h.data_len = dlen;
    memcpy(blob, &h, sizeof(h));
    *len_p = off + dlen;
    return blob;
}

/* The set of x as its blobs are read. */
static hbd_xsc_set_t xsc_set(const hbd_xsub_t *x)
{
    return (hbd_xsc_set_t){.n = x->n, .list = x->list, .map = x->rj->j->spec->map};
}

/* The fence's release for member node `kid` (hbd_xsc_cut; a star: it passes nothing on). */
static int xsc_trim(hbd_t *d, void *arg, int star, uint32_t kid, const uint8_t *all, size_t len,
                    uint8_t **out, size_t *out_len)
{
    hbd_xsub_t *x = arg;
    (void)d;
    (void)star;
    if (x->rj == NULL)
        return 0;
    hbd_xsc_set_t s = xsc_set(x);
    return hbd_xsc_cut(&s, kid, all, len, out, out_len);
}

/* Write one local member's output (rank lr, member k) from the agreed blobs. */
static int xsc_write(hbd_xsub_t *x, uint32_t lr, uint32_t k, const hbd_xsc_hdr_t *h,
                     const uint8_t **dat, const uint8_t *rootd)
{
    hbd_ranks_job_t *rj = x->rj;
    const hb_seg_ctl_t *c = hb_seg_ctl(&rj->seg, lr);
    uint64_t b = h->count;
    if (c->coll_seq != HB_SEG_SUB_TAG(x->hash, x->seq))
        return HB_ERR_TIMEOUT; /* the member gave up waiting (hb_ncoll_subset) */
    /* what the blobs agreed is what this member's record asks (its buffers' sizes): a release
     * that says otherwise does not get to write past them */
    if (c->op != h->op || c->count != b || (h->op != HB_NCOLL_ALLGATHER && c->root != h->root))
        return HB_ERR_PROTO;
    if (b == 0)
        return 0;
    xop_batch_t bt = {.pid = rj->pid[lr], .write = 1};
    int rc = 0;
    switch (h->op) {
    case HB_NCOLL_BCAST:
        if (k == (uint32_t)h->root)
            return 0;
        return rootd == NULL ? HB_ERR_INTERNAL : xop_cma(bt.pid, (void *)rootd, c->sendbuf, b, 1);
    case HB_NCOLL_SCATTER:
        return dat[k] == NULL ? HB_ERR_INTERNAL : xop_cma(bt.pid, (void *)dat[k], c->recvbuf, b, 1);
    case HB_NCOLL_GATHER:
        if (k != (uint32_t)h->root)
            return 0;
        /* fall through */
    default:
        for (uint32_t s = 0; s < x->n && rc == 0; s++)
            rc = dat[s] == NULL
                     ? HB_ERR_INTERNAL
                     : xop_batch_add(&bt, (void *)dat[s], c->recvbuf + (uint64_t)s * b, b);
        return rc == 0 ? xop_batch_flush(&bt) : rc;
    }
}

/* The end of a subset collective here: every local member's output written (status 0) and
 * its answer; dat (malloc'd) and x are freed. */
static void xsc_finish(hbd_xsub_t *x, int status, const hbd_xsc_hdr_t *h, const uint8_t **dat,
                       const uint8_t *rootd)
{
    hbd_job_t *j = x->rj->j;
    for (uint32_t lr = 0; lr < j->n_local; lr++) {
        if (!x->arrived[lr])
            continue;
        int st = status;
        if (st == 0)
            st = xsc_write(x, lr, xsc_index(x, j->local[lr].rank), h, dat, rootd);
        xsub_answer(x->rj, lr, xsub_key(x), x->seq, st);
    }
    free(dat);
    xsub_free(x);
}

/* Mode 1, the run over: write this node's members' outputs and answer them. */
static void xsc_data_done(hbd_t *d, int status, const hb_coll_sched_t *s, const hb_coll_exec_t *xe,
                          void *arg)
{
    hbd_xsub_t *x = arg;
    (void)d;
    (void)s;
    if (x->rj == NULL) { /* the job is gone: nobody to answer */
        xsub_free(x);
        return;
    }
    /* where each member's block is in the executor's output (its node's block, its place
     * there), as xsc_write takes them after a fence that carried the data */
    hbd_xsc_hdr_t h = {.op = x->op, .root = x->root, .count = x->count};
    const uint8_t **dat = calloc(x->n, sizeof(*dat)), *rootd = NULL;
    uint64_t len = 0;
    if (status == 0 && dat == NULL)
        status = HB_ERR_NOMEM;
    for (uint32_t m = 0; status == 0 && m < x->n; m++) {
        const uint8_t *p = hb_coll_exec_block(xe, x->nidx[m], &len);
        if (p != NULL && len >= ((uint64_t)x->pos[m] + 1) * x->count)
            dat[m] = p + (uint64_t)x->pos[m] * x->count;
    }
    if (status == 0 && x->op == HB_NCOLL_BCAST &&
        ((rootd = hb_coll_exec_block(xe, 0, &len)) == NULL || len < x->count))
        rootd = NULL; /* xsc_write: INTERNAL */
    xsc_finish(x, status, &h, dat, rootd);
}

/* Mode 1, the verdict 0: the data run over the member nodes, its input read before the fence. */
static void xsc_run_data(hbd_xsub_t *x, const hbd_xsc_hdr_t *h)
{
    hbd_job_t *j = x->rj->j;
    hbd_t *d = j->d;
    uint32_t *ranks_of = calloc(d->topo->n_nodes, sizeof(uint32_t));
    uint8_t *in = x->in;
    x->in = NULL; /* hbd_coll's, also on error */
    if (x->in_len == 0) {
        free(in);
        in = NULL;
    }
    if (ranks_of == NULL) {
        free(in);
        xsub_finish(x, HB_ERR_NOMEM);
        return;
    }
    for (uint32_t k = 0; k < x->n; k++)
        ranks_of[j->spec->map[x->list[k]]]++;
    x->op = h->op;
    x->root = h->root;
    x->count = h->count;
    /* allgather has no root: the schedule's is any member node */
    hbd_coll_job_args_t a = {.op = h->op == HB_NCOLL_BCAST     ? HB_COLL_BCAST
                                   : h->op == HB_NCOLL_SCATTER ? HB_COLL_SCATTER
                                   : h->op == HB_NCOLL_GATHER  ? HB_COLL_GATHER
                                                               : HB_COLL_ALLGATHER,
                             .root =
                                 j->spec->map[x->list[h->op == HB_NCOLL_ALLGATHER ? 0 : h->root]],
                             .size = h->count,
                             .ranks_of = ranks_of};
    /* its id: a job collective's with bit 62 set (a whole job's epochs leave bits 60-62
     * clear), the hash of the job and the set, the set's collective number */
    uint64_t id = HBD_COLL_ID_JOB | (1ull << 62) | ((xsc_hash(x) & 0x3ffffffffffull) << 20) |
                  (x->seq & 0xfffffu);
    hbd_coll_run_t *run = NULL;
    int rc = hbd_coll_job_create(d, id, &a, in, x->in_len, &run);
    free(ranks_of);
    if (rc != 0) {
        hb_log_error("job %s: subset collective %#" PRIx64 "/%" PRIu32 ": its data run: %s",
                     j->nspace, x->hash, x->seq, hb_status_str(rc));
        xsub_finish(x, rc);
        return;
    }
    hbd_coll_job_start(d, run, xsc_data_done, x); /* may call back at once */
}

static void xsc_agreed(hbd_t *d, int status, uint8_t *data, size_t len, void *arg)
{
    hbd_xsub_t *x = arg;
    (void)d;
    if (x->rj == NULL) { /* the job is gone: nobody to answer */
        free(data);
        xsub_free(x);
        return;
    }
    hbd_job_t *j = x->rj->j;
    const uint8_t **dat = calloc(x->n, sizeof(*dat)), *rootd = NULL;
    hbd_xsc_hdr_t h = {0};
    if (status == 0) {
        hbd_xsc_set_t s = xsc_set(x);
        status =
            dat == NULL ? HB_ERR_NOMEM : hbd_xsc_parse(&s, d->self, data, len, &h, dat, &rootd);
    }
    if (status == 0 && h.mode) {
        free(dat);
        free(data);
        xsc_run_data(x, &h);
        return;
    }
    if (status == 0 && hbd_xsc_rooted(h.op) && rootd == NULL)
        status = HB_ERR_PROTO;
    hb_log_debug("job %s: subset collective %#" PRIx64 "/%" PRIu32 " agreed: %s", j->nspace,
                 x->hash, x->seq, hb_status_str(status));
    xsc_finish(x, status, &h, dat, rootd);
    free(data);
}

/* Every local member of a subset collective arrived: its blob into the fence among the member
 * nodes (on[node], nn of them), or straight to the verdict where they all run here. */
static void xsc_run(hbd_xsub_t *x, const uint8_t *on, uint32_t nn)
{
    hbd_job_t *j = x->rj->j;
    hbd_t *d = j->d;
    size_t len = 0;
    uint8_t *blob = xsc_blob(x, &len);
    if (blob == NULL) {
        xsub_finish(x, HB_ERR_NOMEM);
        return;
    }
    if (nn == 1) {
        xsc_agreed(d, 0, blob, len, x);
        return;
    }
    uint32_t *nodes = malloc(nn * sizeof(uint32_t)), k = 0;
    if (nodes == NULL) {
        free(blob);
        xsub_finish(x, HB_ERR_NOMEM);
        return;
    }
    for (uint32_t i = 0; i < d->topo->n_nodes; i++)
        if (on[i])
            nodes[k++] = i;
    /* the id: a subset fence's (hbd_pmix.c's form), its hash of the job and the set, its
     * sequence the set's count: every member node computes the same, and no two operations
     * of the set share one */
    uint64_t id = (1ull << 63) | HBD_FENCE_ID_SUBSET | ((xsc_hash(x) & 0x1fffffffffull) << 24) |
                  (x->seq & 0xffffffu);
    hb_log_debug("job %s: subset collective of %" PRIu32 " ranks on %" PRIu32
                 " nodes, set %#" PRIx64 ", fence %#" PRIx64,
                 j->nspace, x->n, nn, x->hash, id);
    int rc = hbd_fence_start_trimmed(d, id, nodes, nn, 0, blob, len, xsc_trim, xsc_agreed, x);
    free(nodes);
    if (rc != 0)
        xsub_finish(x, rc);
}

/* Every local member has arrived: a barrier of the set's engine among the members' nodes
 * (named by the set's hash: every node of the set computes the same). */
static void xsub_run(hbd_xsub_t *x)
{
    hbd_job_t *j = x->rj->j;
    hbd_t *d = j->d;
    if (x->status != 0 && !x->coll) {
        xsub_finish(x, x->status);
        return;
    }
    uint32_t n_nodes = d->topo->n_nodes, nn = 0;
    uint8_t *on = calloc(n_nodes, 1);
    if (on == NULL) {
        xsub_finish(x, HB_ERR_NOMEM);
        return;
    }
    for (uint32_t i = 0; i < x->n; i++) {
        nn += !on[j->spec->map[x->set[i]]];
        on[j->spec->map[x->set[i]]] = 1;
    }
    if (x->coll) {
        xsc_run(x, on, nn);
        free(on);
        return;
    }
    if (nn == 1) { /* every member is here and has arrived */
        free(on);
        xsub_finish(x, 0);
        return;
    }
    hb_log_debug("job %s: subset barrier %" PRIu32 " of %" PRIu32 " ranks on %" PRIu32
                 " nodes, set %#" PRIx64,
                 j->nspace, x->seq, x->n, nn, x->hash);
    int rc = hbd_barrier_sub_start(d, j->spec->jobno, x->hash, on, x->seq, xsub_barrier_done, x);
    free(on);
    if (rc != 0)
        xsub_finish(x, rc);
}

/* A member's SUBSET or SUBCOLL descriptor. */
static void xsub_desc(const hb_seg_desc_t *dsc, uint32_t lr, void *arg)
{
    hbd_ranks_job_t *rj = arg;
    hbd_job_t *j = rj->j;
    uint32_t size = j->spec->size, seq = (uint32_t)dsc->epoch;
    int coll = dsc->op == HB_SEG_OP_SUBCOLL;
    uint64_t akey = coll ? dsc->coll_id ^ HB_SEG_SUBCOLL_SALT : dsc->coll_id; /* answers */
    if ((dsc->op != HB_SEG_OP_SUBSET && !coll) || lr >= j->n_local) {
        hb_log_warn("job %s: unknown descriptor %" PRIu32 " from local rank %" PRIu32, j->nspace,
                    dsc->op, lr);
        return;
    }
    if (dsc->len < 2 || dsc->len > size) {
        xsub_answer(rj, lr, akey, seq, HB_ERR_INVAL);
        return;
    }
    uint32_t n = (uint32_t)dsc->len, *set = malloc(n * sizeof(uint32_t));
    uint32_t *list = coll ? malloc(n * sizeof(uint32_t)) : NULL;
    int rc = set == NULL || (coll && list == NULL)
                 ? HB_ERR_NOMEM
                 : xop_cma(rj->pid[lr], set, dsc->addr, (uint64_t)n * sizeof(uint32_t), 0);
    if (rc == 0 && coll) { /* the members in their order; the set sorted */
        memcpy(list, set, n * sizeof(uint32_t));
        qsort(set, n, sizeof(uint32_t), hb_nbar_u32_cmp);
    }
    uint64_t hash = HB_FNV64_BASIS;
    int me = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (set[i] >= size || (i > 0 && set[i] <= set[i - 1]))
            rc = HB_ERR_INVAL;
        me |= set[i] == j->local[lr].rank;
        hash = hb_fnv64_u32(hash, set[i]);
    }
    if (rc == 0 && (!me || hash != dsc->coll_id))
        rc = HB_ERR_PROTO;
    if (rc != 0) {
        free(set);
        free(list);
        xsub_answer(rj, lr, akey, seq, rc);
        return;
    }
    hbd_xsub_t *x = rj->subs;
    while (x != NULL && !(x->hash == hash && x->seq == seq && x->coll == coll))
        x = x->next;
    if (x == NULL) {
        x = calloc(1, sizeof(*x));
        uint8_t *arr = calloc(j->n_local, 1);
        if (x == NULL || arr == NULL) {
            free(x);
            free(arr);
            free(set);
            free(list);
            xsub_answer(rj, lr, akey, seq, HB_ERR_NOMEM);
            return;
        }
        x->rj = rj;
        x->hash = hash;
        x->seq = seq;
        x->set = set;
        x->list = list;
        x->coll = coll;
        x->n = n;
        x->arrived = arr;
        for (uint32_t i = 0; i < n; i++)
            x->n_expect += j->spec->map[set[i]] == j->d->self;
        x->next = rj->subs;
        rj->subs = x;
        set = list = NULL;
    } else if (x->n != n || memcmp(x->set, set, n * sizeof(uint32_t)) != 0 ||
               (coll && memcmp(x->list, list, n * sizeof(uint32_t)) != 0)) {
        /* same hash, another set; the members in another order: every member is told */
        x->status = HB_ERR_MISMATCH;
    }
    free(set);
    free(list);
    if (x->arrived[lr]) {
        xsub_answer(rj, lr, akey, seq, HB_ERR_PROTO);
        return;
    }
    x->arrived[lr] = 1;
    hb_log_debug("job %s: subset %#" PRIx64 "/%" PRIu32 ": local rank %" PRIu32 " arrived (%" PRIu32
                 " of %" PRIu32 ")",
                 j->nspace, hash, seq, lr, x->n_arrived + 1, x->n_expect);
    x->ready = ++x->n_arrived == x->n_expect;
}

static void doorbell_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_ranks_job_t *rj = arg;
    uint64_t v, epoch = 0;
    (void)what;
    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        hb_log_warn("job %s: reading the doorbell: %m", rj->j->nspace);
    hbd_poll_kick(rj->j->d);
    if (hb_seg_drain(&rj->seg, &epoch, xsub_desc, rj) != 0)
        hb_log_warn("job %s: a rank's descriptor ring is corrupt", rj->j->nspace);
    /* Subset barriers whose local members all arrived run only now: one may complete at once
     * (its other nodes were there first) and release its ranks, whose next barrier arrival
     * must not meet a drain that read node_arrived before it (hb_seg_drain would drop it). */
    for (hbd_xsub_t *x = rj->subs; x != NULL;) {
        if (!x->ready) {
            x = x->next;
            continue;
        }
        x->ready = 0;
        xsub_run(x); /* may free x and others' completions may not: start over */
        x = rj->subs;
    }
    if (epoch > rj->last_epoch) {
        rj->last_epoch = epoch;
        xop_start(rj, epoch);
    }
}

/* ---- jobs ---- */

int hbd_ranks_job_open(hbd_job_t *j)
{
    hbd_t *d = j->d;
    uint32_t n = d->topo->n_nodes, size = j->spec->size;
    if (j->n_local == 0)
        return 0;
    hbd_ranks_job_t *rj = calloc(1, sizeof(*rj));
    if (rj == NULL)
        return HB_ERR_NOMEM;
    rj->j = j;
    rj->doorbell = -1;
    rj->seg.fd = -1;
    rj->pid = calloc(j->n_local, sizeof(pid_t));
    rj->ranks_of = calloc(n, sizeof(uint32_t));
    rj->node_off = calloc(n + 1, sizeof(uint32_t));
    rj->node_granks = calloc(size, sizeof(uint32_t));
    int rc = HB_ERR_NOMEM;
    if (rj->pid == NULL || rj->ranks_of == NULL || rj->node_off == NULL || rj->node_granks == NULL)
        goto err;
    for (uint32_t gr = 0; gr < size; gr++)
        rj->ranks_of[j->spec->map[gr]]++;
    for (uint32_t w = 0; w < n; w++)
        rj->node_off[w + 1] = rj->node_off[w] + rj->ranks_of[w];
    {
        uint32_t *fill = calloc(n, sizeof(uint32_t));
        if (fill == NULL)
            goto err;
        for (uint32_t gr = 0; gr < size; gr++) {
            uint32_t w = j->spec->map[gr];
            rj->node_granks[rj->node_off[w] + fill[w]++] = gr;
        }
        free(fill);
    }
    for (uint32_t i = 0; i < j->n_nodes; i++)
        if (j->nodes[i] == d->self)
            rj->node_idx = i;
    rc = hb_seg_create(j->n_local, HB_SEG_DEFAULT_DEPTH, HB_SEG_DEFAULT_BUF, j->spec->id,
                       rj->node_idx, j->n_nodes, size, &rj->seg);
    if (rc != 0)
        goto err;
    for (uint32_t k = 0; k < j->n_local; k++) /* which ranks share the node (hb_nbar_subset) */
        hb_seg_ctl(&rj->seg, k)->grank = j->local[k].rank;
    hbd_ranks_sleep_rule(rj);
    rj->doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (rj->doorbell < 0) {
        hb_log_error("eventfd: %m");
        rc = HB_ERR_IO;
        goto err;
    }
    rj->ev_db = event_new(d->base, rj->doorbell, EV_READ | EV_PERSIST, doorbell_cb, rj);
    if (rj->ev_db == NULL || event_add(rj->ev_db, NULL) != 0) {
        rc = HB_ERR_NOMEM;
        goto err;
    }
    j->ranks = rj;
    return 0;
err:
    j->ranks = rj;
    hbd_ranks_job_close(j);
    return rc;
}

void hbd_ranks_job_close(hbd_job_t *j)
{
    hbd_ranks_job_t *rj = j->ranks;
    if (rj == NULL)
        return;
    j->ranks = NULL;
    /* epochs in flight finish without it (their engines call back later) */
    for (hbd_xop_t *op = rj->ops; op != NULL; op = op->next)
        op->rj = NULL;
    while (rj->subs != NULL) { /* waiting for members that are gone: drop; in a fence: detach */
        hbd_xsub_t *x = rj->subs;
        rj->subs = x->next;
        x->rj = NULL;
        if (x->n_arrived < x->n_expect)
            xsub_free(x);
    }
    if (rj->ev_db != NULL)
        event_free(rj->ev_db);
    if (rj->doorbell >= 0)
        close(rj->doorbell);
    hb_seg_unmap(&rj->seg);
    free(rj->pid);
    free(rj->ranks_of);
    free(rj->node_off);
    free(rj->node_granks);
    free(rj);
}

void hbd_ranks_rank_lost(hbd_job_t *j, uint32_t lr)
{
    hbd_ranks_job_t *rj = j->ranks;
    if (rj != NULL && rj->seg.base != NULL)
        hb_seg_mark_broken(&rj->seg, (int32_t)lr);
}

int hbd_ranks_broken_before(const hbd_job_t *j, uint32_t lr)
{
    const hbd_ranks_job_t *rj = j->ranks;
    if (rj == NULL || rj->seg.base == NULL)
        return 0;
    hb_seg_hdr_t *h = hb_seg_hdr(&rj->seg);
    return atomic_load(&h->state) == HB_SEG_JOB_BROKEN && atomic_load(&h->lost_rank) != (int32_t)lr;
}

/* NAME=VALUE into a malloc'd NULL-terminated environment, replacing NAME if present. */
static int env_set(char ***env, const char *name, const char *value)
{
    size_t nl = strlen(name), n = 0;
    char *s = malloc(nl + strlen(value) + 2);
    if (s == NULL)
        return HB_ERR_NOMEM;
    sprintf(s, "%s=%s", name, value);
    for (; (*env)[n] != NULL; n++)
        if (strncmp((*env)[n], name, nl) == 0 && (*env)[n][nl] == '=') {
            free((*env)[n]);
            (*env)[n] = s;
            return 0;
        }
    char **ne = realloc(*env, (n + 2) * sizeof(char *));
    if (ne == NULL) {
        free(s);
        return HB_ERR_NOMEM;
    }
    ne[n] = s;
    ne[n + 1] = NULL;
    *env = ne;
    return 0;
}

int hbd_ranks_env(hbd_job_t *j, uint32_t lr, char ***env)
{
    char v[32];
    int rc;
    if (j->ranks == NULL || j->d->ranks_lfd < 0)
        return 0;
    if ((rc = env_set(env, "HIBAR_SOCKET", j->d->ranks_path)) != 0)
        return rc;
    snprintf(v, sizeof(v), "%" PRIu32, j->local[lr].rank);
    if ((rc = env_set(env, "HIBAR_RANK", v)) != 0)
        return rc;
    snprintf(v, sizeof(v), "%" PRIu64, j->spec->id);
    return env_set(env, "HIBAR_JOB", v);
}
