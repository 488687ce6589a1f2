/* ncoll.c: scatter, gather, scatterv, gatherv, bcast, allgather among the ranks of one node. */
#include "hb_config.h"

#include "ncoll.h"

#include "hb_env.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hibar.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static uint64_t hb_ncoll_probe_word; /* read by the neighbour to check cross-memory attach */

void hb_ncoll_probe_publish(hb_seg_t *seg, uint32_t rank)
{
    hb_seg_ctl_t *c = hb_seg_ctl(seg, rank);
    hb_ncoll_probe_word = hb_time_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x5a5a5a5aull;
    c->probe_val = hb_ncoll_probe_word;
    c->probe_addr = (uint64_t)(uintptr_t)&hb_ncoll_probe_word;
}

static int ncoll_env_off(const char *name)
{
    const char *s = getenv(name);
    return s != NULL && (strcmp(s, "0") == 0 || strcmp(s, "no") == 0 || strcmp(s, "off") == 0);
}

void hb_ncoll_probe_run(hb_seg_t *seg, uint32_t rank)
{
    hb_seg_ctl_t *me = hb_seg_ctl(seg, rank), *peer;
    uint32_t n = seg->lay.nranks;
    uint64_t got = 0;
    struct iovec l = {&got, sizeof(got)}, r;

    if (ncoll_env_off("HIBAR_CMA")) {
        me->cma_ok = 0;
        return;
    }
    if (n == 1) {
        me->cma_ok = 1;
        return;
    }
    peer = hb_seg_ctl(seg, (rank + 1) % n);
    r.iov_base = (void *)(uintptr_t)peer->probe_addr;
    r.iov_len = sizeof(got);
    if (process_vm_readv((pid_t)atomic_load(&peer->pid), &l, 1, &r, 1, 0) != (ssize_t)sizeof(got) ||
        got != peer->probe_val) {
        hb_log_info("process_vm_readv from rank %u: %m; large messages will go through the "
                    "segment in chunks",
                    (unsigned)((rank + 1) % n));
        me->cma_ok = 0;
        return;
    }
    me->cma_ok = 1;
}

int hb_ncoll_init(hb_ncoll_t *c, hb_seg_t *seg, hb_nbar_t *bar)
{
    uint32_t r;

    memset(c, 0, sizeof(*c));
    c->seg = seg;
    c->bar = bar;
    c->rank = bar->rank;
    c->nranks = seg->lay.nranks;
    c->grank = c->rank;
    c->gsize = c->nranks;
    c->cma_all = 1;
    if (hb_env_u64("HIBAR_CMA_PULL_MIN", UINT64_MAX, &c->pull_min) != 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN); /* the node's: every rank decides alike */
        c->pull_min = ncpu > 0 && c->nranks > (uint64_t)ncpu ? HB_NCOLL_PULL_MIN_SCARCE
                                                             : HB_NCOLL_PULL_MIN_DEFAULT;
    }
    for (r = 0; r < c->nranks; r++)
        c->cma_all &= hb_seg_ctl(seg, r)->cma_ok == 1;
    if (!c->cma_all && c->rank == 0 && !ncoll_env_off("HIBAR_CMA"))
        hb_log_warn("cross-memory attach (process_vm_readv) is not usable on this node; large "
                    "messages go through the segment in %llu-byte chunks",
                    (unsigned long long)seg->lay.buf_size);
    return 0;
}

int hb_ncoll_cma(int pid, void *local, uint64_t remote, size_t len, int write)
{
    char *lp = local;
    while (len > 0) {
        struct iovec l = {lp, len}, r = {(void *)(uintptr_t)remote, len};
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = errno;
            hb_log_error("process_vm_%sv pid %d, %zu bytes: %m", write ? "write" : "read", pid,
                         len);
            return n == 0        ? HIBAR_ERR_IO
                   : e == ESRCH  ? HIBAR_ERR_PEER_LOST
                   : e == EFAULT ? HIBAR_ERR_INVAL
                   : e == EPERM  ? HIBAR_ERR_PERM
                                 : HIBAR_ERR_IO;
        }
        lp += n;
        remote += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

int hb_ncoll_cmav(int pid, void *const *local, const uint64_t *remote, const size_t *len, size_t n,
                  int write)
{
    struct iovec l[64], r[64];
    while (n > 0) {
        size_t k = n < 64 ? n : 64, total = 0;
        for (size_t i = 0; i < k; i++) {
            l[i] = (struct iovec){local[i], len[i]};
            r[i] = (struct iovec){(void *)(uintptr_t)remote[i], len[i]};
            total += len[i];
        }
        ssize_t got =
            write ? process_vm_writev(pid, l, k, r, k, 0) : process_vm_readv(pid, l, k, r, k, 0);
        if (got < 0)
            got = 0; /* hb_ncoll_cma below finds and reports the error */
        /* what did not go (a partial transfer, or an error): piece by piece from there */
        for (size_t i = 0; i < k && (size_t)got < total; i++) {
            if ((size_t)got >= len[i]) {
                got -= (ssize_t)len[i];
                total -= len[i];
                continue;
            }
            int rc = hb_ncoll_cma(pid, (char *)local[i] + got, remote[i] + (uint64_t)got,
                                  len[i] - (size_t)got, write);
            if (rc != 0)
                return rc;
            total -= len[i];
            got = 0;
        }
        local += k;
        remote += k;
        len += k;
        n -= k;
    }
    return 0;
}

/* A private copy of everyone's record, taken after the first barrier. */
typedef struct ncoll_rec {
    uint64_t seq, count, sendbuf, recvbuf, epoch;
    uint32_t op, order;
    int32_t root, err, pid;
} ncoll_rec_t;

/* A private copy of the record in control block r. */
static ncoll_rec_t ncoll_rec_of(const hb_seg_ctl_t *r)
{
    return (ncoll_rec_t){.seq = r->coll_seq,
                         .count = r->count,
                         .sendbuf = r->sendbuf,
                         .recvbuf = r->recvbuf,
                         .epoch = r->epoch,
                         .op = r->op,
                         .order = r->order,
                         .root = r->root,
                         .err = r->err,
                         .pid = atomic_load(&r->pid)};
}

/* The first error the n records published (an unknown code as PROTO), or 0. */
static int ncoll_first_err(const ncoll_rec_t *rec, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (rec[i].err != 0)
            return rec[i].err < 0 && rec[i].err >= HIBAR_ERR_LAST ? rec[i].err : HIBAR_ERR_PROTO;
    return 0;
}

typedef struct ncoll_run {
    hb_ncoll_t *c;
    const hb_ncoll_args_t *a;
    ncoll_rec_t *rec;
    uint64_t *cnt; /* counts per rank (bytes), agreed */
    uint64_t *dsp; /* displacements per rank at the root (scatter/gather forms) */
    uint64_t B;    /* staging buffer size */
} ncoll_run_t;

static int ncoll_has_root(hb_ncoll_op_t op)
{
    return op != HB_NCOLL_ALLGATHER;
}
/* Cross-memory attach for a collective whose largest piece is maxlen: every rank decides
 * alike (maxlen, cma_all and pull_min are the same on all of them). */
static int ncoll_use_cma(const hb_ncoll_t *c, hb_ncoll_op_t op, uint64_t maxlen, uint64_t B)
{
    int pull = op == HB_NCOLL_SCATTER || op == HB_NCOLL_SCATTERV || op == HB_NCOLL_BCAST;
    return c->cma_all && (maxlen > B || (pull && maxlen >= c->pull_min));
}

static int ncoll_is_v(hb_ncoll_op_t op)
{
    return op == HB_NCOLL_SCATTERV || op == HB_NCOLL_GATHERV;
}

/* Check this rank's own arguments: it is rank `me` of `n` (node or job ranks). */
static int ncoll_check_local(uint32_t me, uint32_t n, const hb_ncoll_args_t *a)
{
    int root = ncoll_has_root(a->op);
    int am_root = root && a->root == (int)me;
    uint32_t i;

    if (root && (a->root < 0 || a->root >= (int)n))
        return HIBAR_ERR_INVAL;
    if (a->count > SIZE_MAX / n)
        return HIBAR_ERR_INVAL;
    switch (a->op) {
    case HB_NCOLL_BCAST:
        return a->count > 0 && a->sendbuf == NULL ? HIBAR_ERR_INVAL : 0;
    case HB_NCOLL_SCATTER:
        if (a->count > 0 && (a->recvbuf == NULL || (am_root && a->sendbuf == NULL)))
            return HIBAR_ERR_INVAL;
        return 0;
    case HB_NCOLL_GATHER:
        if (a->count > 0 && (a->sendbuf == NULL || (am_root && a->recvbuf == NULL)))
            return HIBAR_ERR_INVAL;
        return 0;
    case HB_NCOLL_ALLGATHER:
        if (a->count > 0 && (a->sendbuf == NULL || a->recvbuf == NULL))
            return HIBAR_ERR_INVAL;
        return 0;
    case HB_NCOLL_SCATTERV:
    case HB_NCOLL_GATHERV:
        if (a->count > 0 && (a->op == HB_NCOLL_SCATTERV ? a->recvbuf == NULL : a->sendbuf == NULL))
            return HIBAR_ERR_INVAL;
        if (!am_root)
            return 0;
        if (a->counts == NULL || a->displs == NULL)
            return HIBAR_ERR_INVAL;
        for (i = 0; i < n; i++) {
            if (a->counts[i] > 0 &&
                (a->op == HB_NCOLL_SCATTERV ? a->sendbuf == NULL : a->recvbuf == NULL))
                return HIBAR_ERR_INVAL;
            if (a->displs[i] > SIZE_MAX - a->counts[i])
                return HIBAR_ERR_INVAL;
        }
        return 0;
    }
    return HIBAR_ERR_INVAL;
}

/* Copy from a region of length len, chunk k, into a staging buffer at its start. */
static void ncoll_stage_in(void *stage, const void *src, uint64_t len, uint64_t k, uint64_t B)
{
    uint64_t off = k * B;
    if (len > off)
        memcpy(stage, (const char *)src + off, len - off < B ? len - off : B);
}

static void ncoll_stage_out(void *dst, const void *stage, uint64_t len, uint64_t k, uint64_t B)
{
    uint64_t off = k * B;
    if (len > off)
        memcpy((char *)dst + off, stage, len - off < B ? len - off : B);
}

/* Writers: put chunk k of what this rank sends into the staging buffers. `cnt`/`dsp` are
 * this rank's view (before the verdict only the root's table or its own count). */
static void ncoll_write(ncoll_run_t *x, uint64_t k)
{
    hb_ncoll_t *c = x->c;
    const hb_ncoll_args_t *a = x->a;
    uint32_t me = c->rank, d;

    switch (a->op) {
    case HB_NCOLL_SCATTER:
    case HB_NCOLL_SCATTERV:
        if ((int)me != a->root)
            return;
        for (d = 0; d < c->nranks; d++) {
            if (d != me)
                ncoll_stage_in(hb_seg_buf(c->seg, d), (const char *)a->sendbuf + x->dsp[d],
                               x->cnt[d], k, x->B);
        }
        return;
    case HB_NCOLL_GATHER:
    case HB_NCOLL_GATHERV:
        if ((int)me != a->root)
            ncoll_stage_in(hb_seg_buf(c->seg, me), a->sendbuf, a->count, k, x->B);
        return;
    case HB_NCOLL_BCAST:
        if ((int)me == a->root)
            ncoll_stage_in(hb_seg_buf(c->seg, me), a->sendbuf, a->count, k, x->B);
        return;
    case HB_NCOLL_ALLGATHER:
        ncoll_stage_in(hb_seg_buf(c->seg, me), a->sendbuf, a->count, k, x->B);
        return;
    }
}

static void ncoll_read(ncoll_run_t *x, uint64_t k)
{
    hb_ncoll_t *c = x->c;
    const hb_ncoll_args_t *a = x->a;
    uint32_t me = c->rank, s;

    switch (a->op) {
    case HB_NCOLL_SCATTER:
    case HB_NCOLL_SCATTERV:
        if ((int)me != a->root)
            ncoll_stage_out(a->recvbuf, hb_seg_buf(c->seg, me), x->cnt[me], k, x->B);
        return;
    case HB_NCOLL_GATHER:
    case HB_NCOLL_GATHERV:
        if ((int)me != a->root)
            return;
        for (s = 0; s < c->nranks; s++) {
            if (s != me)
                ncoll_stage_out((char *)a->recvbuf + x->dsp[s], hb_seg_buf(c->seg, s), x->cnt[s], k,
                                x->B);
        }
        return;
    case HB_NCOLL_BCAST:
        if ((int)me != a->root)
            ncoll_stage_out((void *)(uintptr_t)a->sendbuf, hb_seg_buf(c->seg, (uint32_t)a->root),
                            a->count, k, x->B);
        return;
    case HB_NCOLL_ALLGATHER:
        for (s = 0; s < c->nranks; s++) {
            if (s != me)
                ncoll_stage_out((char *)a->recvbuf + (uint64_t)s * a->count, hb_seg_buf(c->seg, s),
                                a->count, k, x->B);
        }
        return;
    }
}

/* Cross-memory attach: receivers pull, gather senders push. */
static int ncoll_cma_move(ncoll_run_t *x)
{
    hb_ncoll_t *c = x->c;
    const hb_ncoll_args_t *a = x->a;
    uint32_t me = c->rank, s;
    const ncoll_rec_t *root = ncoll_has_root(a->op) ? &x->rec[a->root] : NULL;
    int rc = 0;

    switch (a->op) {
    case HB_NCOLL_SCATTER:
    case HB_NCOLL_SCATTERV:
        if ((int)me != a->root && x->cnt[me] > 0)
            rc = hb_ncoll_cma(root->pid, a->recvbuf, root->sendbuf + x->dsp[me], x->cnt[me], 0);
        break;
    case HB_NCOLL_GATHER:
    case HB_NCOLL_GATHERV:
        if ((int)me != a->root && x->cnt[me] > 0)
            rc = hb_ncoll_cma(root->pid, (void *)(uintptr_t)a->sendbuf, root->recvbuf + x->dsp[me],
                              x->cnt[me], 1);
        break;
    case HB_NCOLL_BCAST:
        if ((int)me != a->root && a->count > 0)
            rc = hb_ncoll_cma(root->pid, (void *)(uintptr_t)a->sendbuf, root->sendbuf, a->count, 0);
        break;
    case HB_NCOLL_ALLGATHER:
        for (s = 0; s < c->nranks && rc == 0 && a->count > 0; s++) {
            if (s != me)
                rc = hb_ncoll_cma(x->rec[s].pid, (char *)a->recvbuf + (uint64_t)s * a->count,
                                  x->rec[s].sendbuf, a->count, 0);
        }
        break;
    }
    return rc;
}

/* The root's (or, for allgather, this rank's) own piece, copied locally. */
static void ncoll_self(ncoll_run_t *x)
{
    const hb_ncoll_args_t *a = x->a;
    uint32_t me = x->c->rank;

    switch (a->op) {
    case HB_NCOLL_SCATTER:
    case HB_NCOLL_SCATTERV:
        if ((int)me == a->root && x->cnt[me] > 0)
            memmove(a->recvbuf, (const char *)a->sendbuf + x->dsp[me], x->cnt[me]);
        break;
    case HB_NCOLL_GATHER:
    case HB_NCOLL_GATHERV:
        if ((int)me == a->root && x->cnt[me] > 0)
            memmove((char *)a->recvbuf + x->dsp[me], a->sendbuf, x->cnt[me]);
        break;
    case HB_NCOLL_BCAST:
        break;
    case HB_NCOLL_ALLGATHER:
        if (a->count > 0)
            memmove((char *)a->recvbuf + (uint64_t)me * a->count, a->sendbuf, a->count);
        break;
    }
}

/* Same on every rank: the records and the root's table are identical for all readers. */
static int ncoll_verdict(ncoll_run_t *x, uint64_t seq)
{
    hb_ncoll_t *c = x->c;
    const hb_ncoll_args_t *a = x->a;
    uint32_t i;
    int rc = ncoll_first_err(x->rec, c->nranks);

    if (rc != 0)
        return rc;
    for (i = 0; i < c->nranks; i++) {
        const ncoll_rec_t *r = &x->rec[i];
        if (r->seq != seq || r->epoch != x->rec[x->c->rank].epoch || r->op != (uint32_t)a->op ||
            (ncoll_has_root(a->op) && r->root != a->root))
            return HIBAR_ERR_MISMATCH;
        if (ncoll_is_v(a->op) ? r->count != x->cnt[i] : r->count != a->count)
            return HIBAR_ERR_MISMATCH;
    }
    return 0;
}

/*
 * May this rank leave the collective's last epoch without waiting for its release
 * (hb_nbar_arrive_nowait)? Once the data moved, only where nobody else still reads or writes
 * its own buffers: with cross-memory attach the others pull from a scatter's or bcast's root,
 * push into a gather's root and pull from every allgather rank, so those wait; everyone else
 * has its data. Staged through the segment, nobody touches a rank's buffers but itself, and
 * the staging buffers and records are rewritten only after the next operation's settle. So
 * the release wakes one rank or none instead of all (measured in doc/results.md).
 */
static int ncoll_may_leave(const ncoll_run_t *x, int cma)
{
    const hb_ncoll_args_t *a = x->a;
    int am_root = ncoll_has_root(a->op) && a->root == (int)x->c->rank;
    if (!cma)
        return 1;
    return a->op != HB_NCOLL_ALLGATHER && !am_root;
}

/* Publish this rank's record of a collective in its control block: its sequence (or tag), the
 * arguments, its own error and the epoch (or tag) that opens it. */
static void ncoll_publish(hb_seg_ctl_t *mine, uint64_t seq, const hb_ncoll_args_t *a, int err,
                          uint64_t epoch)
{
    mine->coll_seq = seq;
    mine->op = (uint32_t)a->op;
    mine->root = a->root;
    mine->count = a->count;
    mine->sendbuf = (uint64_t)(uintptr_t)a->sendbuf;
    mine->recvbuf = (uint64_t)(uintptr_t)a->recvbuf;
    mine->err = err;
    mine->order = 0;
    mine->epoch = epoch;
}

/* The order of a rank set's member list (the record's `order`): members that list the same
 * set in two orders disagree on every block. Never 0. */
static uint32_t ncoll_order(const uint32_t *ranks, size_t n)
{
    uint64_t h = hb_nbar_set_hash(ranks, n); /* FNV-1a over the list as it is, not sorted */
    return (uint32_t)(h ^ (h >> 32)) | 1u;
}

/* Across nodes: publish the record and let the daemon run the collective at the epoch. */
static int ncoll_run_nodes(hb_ncoll_t *c, const hb_ncoll_args_t *a)
{
    hb_seg_ctl_t *mine = hb_seg_ctl(c->seg, c->rank);
    int am_root = ncoll_has_root(a->op) && a->root == (int)c->grank;

    mine->counts_addr = am_root && ncoll_is_v(a->op) ? (uint64_t)(uintptr_t)a->counts : 0;
    mine->displs_addr = am_root && ncoll_is_v(a->op) ? (uint64_t)(uintptr_t)a->displs : 0;
    ncoll_publish(mine, ++c->seq, a, ncoll_check_local(c->grank, c->gsize, a), c->bar->seq + 1);
    return hb_nbar_barrier(c->bar);
}

int hb_ncoll_run(hb_ncoll_t *c, const hb_ncoll_args_t *a)
{
    hb_seg_ctl_t *mine = hb_seg_ctl(c->seg, c->rank);
    uint64_t *tcnt = hb_seg_counts(c->seg), *tdsp = hb_seg_displs(c->seg);
    ncoll_run_t x;
    uint64_t seq, maxlen = 0, own_max, rounds, k;
    uint32_t i, n = c->nranks;
    int lerr, rc, rc2, am_root, cma = 0;

    /* a last epoch left without waiting (ncoll_may_leave): its readers are done first */
    if ((rc = hb_nbar_settle(c->bar)) != 0)
        return rc;
    if (c->seg->nnodes > 1)
        return ncoll_run_nodes(c, a);
    memset(&x, 0, sizeof(x));
    x.c = c;
    x.a = a;
    x.B = c->seg->lay.buf_size;
    x.rec = calloc(n, sizeof(*x.rec));
    x.cnt = calloc(n, sizeof(*x.cnt));
    x.dsp = calloc(n, sizeof(*x.dsp));
    if (x.rec == NULL || x.cnt == NULL || x.dsp == NULL) {
        /* Out of memory before publishing: the peers would wait for us; still take part. */
        lerr = HIBAR_ERR_NOMEM;
    } else {
        lerr = ncoll_check_local(c->rank, c->nranks, a);
    }
    seq = ++c->seq;
    am_root = ncoll_has_root(a->op) && a->root == (int)c->rank;

    /* 1. publish. Ranks in step open the collective with the same barrier epoch; a rank that
     * called a plain barrier where the others called this collective does not. */
    ncoll_publish(mine, seq, a, lerr, c->bar->seq + 1);
    own_max = a->count;
    if (lerr == 0 && am_root && a->op != HB_NCOLL_BCAST) {
        for (i = 0; i < n; i++) {
            x.cnt[i] = ncoll_is_v(a->op) ? a->counts[i] : a->count;
            x.dsp[i] = ncoll_is_v(a->op) ? a->displs[i] : (uint64_t)i * a->count;
            tcnt[i] = x.cnt[i];
            tdsp[i] = x.dsp[i];
            if (x.cnt[i] > own_max)
                own_max = x.cnt[i];
        }
    } else if (lerr == 0 && (a->op == HB_NCOLL_GATHER || a->op == HB_NCOLL_GATHERV)) {
        x.cnt[c->rank] = a->count;
    }
    /* Writers stage the first chunk now unless cross-memory attach will surely be used. */
    if (lerr == 0 && !ncoll_use_cma(c, a->op, own_max, x.B))
        ncoll_write(&x, 0);

    /* 2. */
    rc = hb_nbar_barrier(c->bar);
    if (rc != 0)
        goto out;

    /* 3. verdict */
    if (x.rec == NULL || x.cnt == NULL || x.dsp == NULL) {
        rc = lerr;
        goto out_barrier;
    }
    for (i = 0; i < n; i++) {
        const hb_seg_ctl_t *r = hb_seg_ctl(c->seg, i);
        x.rec[i] = ncoll_rec_of(r);
    }
    if (ncoll_has_root(a->op) && a->op != HB_NCOLL_BCAST && a->root >= 0 && a->root < (int)n) {
        for (i = 0; i < n; i++) {
            x.cnt[i] = tcnt[i];
            x.dsp[i] = tdsp[i];
        }
    } else {
        for (i = 0; i < n; i++)
            x.cnt[i] = a->count;
    }
    rc = ncoll_verdict(&x, seq);
    if (rc != 0) {
        if (rc != lerr)
            hb_log_debug("collective %llu: %s", (unsigned long long)seq, hibar_strerror(rc));
        /*
         * Leave the verdict in our record. Every rank reached the same one, so a rank still
         * reading finds nothing new; but a rank that is one barrier out of step (it called
         * hibar_barrier while we entered this collective) reads our record after our last
         * barrier, and must not take it for a good one.
         */
        if (mine->err == 0)
            mine->err = rc;
        goto out_barrier;
    }
    for (i = 0; i < n; i++)
        maxlen = x.cnt[i] > maxlen ? x.cnt[i] : maxlen;

    /* 4. data */
    ncoll_self(&x);
    cma = ncoll_use_cma(c, a->op, maxlen, x.B);
    if (cma) {
        rc = ncoll_cma_move(&x);
        goto out_last;
    }
    rounds = (maxlen + x.B - 1) / x.B;
    for (k = 0; k < rounds; k++) {
        if (k > 0) {
            ncoll_write(&x, k);
            rc = hb_nbar_barrier(c->bar);
            if (rc != 0)
                goto out;
        }
        ncoll_read(&x, k);
        if (k + 1 < rounds) {
            rc = hb_nbar_barrier(c->bar);
            if (rc != 0)
                goto out;
        }
    }

    /* 5. */
out_last:
    if (rc == 0 && ncoll_may_leave(&x, cma)) {
        rc = hb_nbar_arrive_nowait(c->bar);
        goto out;
    }
out_barrier:
    rc2 = hb_nbar_barrier(c->bar);
    if (rc == 0)
        rc = rc2;
out:
    free(x.rec);
    free(x.cnt);
    free(x.dsp);
    return rc;
}

/*
 * A collective of a rank set whose members all run on this node (hb_ncoll_subset): member i of
 * the list is block i of the layout. The subset barrier syncs (hb_nbar_subset: the node's own
 * barrier for such a set), the data moves by cross-memory attach between the members, and
 * the verdict comes from the records as in hb_ncoll_run:
 *   1. publish the record, its epoch the set's next barrier (bit 63 | hash fold << 32 |
 *      number: every member in step has the same; one that called another barrier of the set
 *      does not);
 *   2. subset barrier; 3. every member reads every member's record, the same verdict;
 *   4. receivers pull (scatter, bcast, allgather), gather senders push into the root;
 *   5. subset barrier (nobody reuses a buffer or record before all are done).
 */
static int ncoll_sub_move(const hb_ncoll_args_t *a, const ncoll_rec_t *rec, uint32_t n, uint32_t mi)
{
    const ncoll_rec_t *root = a->op != HB_NCOLL_ALLGATHER ? &rec[a->root] : NULL;
    uint64_t b = a->count;
    int am_root = root != NULL && (uint32_t)a->root == mi, rc = 0;
    if (b == 0)
        return 0;
    switch (a->op) {
    case HB_NCOLL_BCAST:
        return am_root
                   ? 0
                   : hb_ncoll_cma(root->pid, (void *)(uintptr_t)a->sendbuf, root->sendbuf, b, 0);
    case HB_NCOLL_SCATTER:
        if (am_root) {
            memmove(a->recvbuf, (const char *)a->sendbuf + (uint64_t)mi * b, b);
            return 0;
        }
        return hb_ncoll_cma(root->pid, a->recvbuf, root->sendbuf + (uint64_t)mi * b, b, 0);
    case HB_NCOLL_GATHER:
        if (am_root) {
            memmove((char *)a->recvbuf + (uint64_t)mi * b, a->sendbuf, b);
            return 0;
        }
        return hb_ncoll_cma(root->pid, (void *)(uintptr_t)a->sendbuf,
                            root->recvbuf + (uint64_t)mi * b, b, 1);
    case HB_NCOLL_ALLGATHER:
        memmove((char *)a->recvbuf + (uint64_t)mi * b, a->sendbuf, b);
        for (uint32_t s = 0; s < n && rc == 0; s++)
            if (s != mi)
                rc = hb_ncoll_cma(rec[s].pid, (char *)a->recvbuf + (uint64_t)s * b, rec[s].sendbuf,
                                  b, 0);
        return rc;
    default:
        return HIBAR_ERR_INVAL;
    }
}

/* Can hb_ncoll_subset run the set on this node (sorted[] and at[]: n each, filled)? 1, 0 (not
 * here: the same on every member, from where the members run and the node's attach), or
 * INVAL. */
static int ncoll_subset_here(const hb_ncoll_t *c, const uint32_t *ranks, size_t n, uint32_t *sorted,
                             uint32_t *at)
{
    int rc = hb_nbar_set_check(c->bar, ranks, n, sorted);
    if (rc != 0)
        return rc;
    return c->cma_all && hb_nbar_places(c->bar, ranks, n, at) == 1;
}

int hb_ncoll_subset_on_node(const hb_ncoll_t *c, const uint32_t *ranks, size_t n)
{
    uint32_t *sorted = malloc(n * sizeof(*sorted)), *at = malloc(n * sizeof(*at));
    int rc = ranks == NULL || n == 0        ? HIBAR_ERR_INVAL
             : sorted == NULL || at == NULL ? HIBAR_ERR_NOMEM
                                            : ncoll_subset_here(c, ranks, n, sorted, at);
    free(sorted);
    free(at);
    return rc;
}

/*
 * A rank set whose members run on several nodes: the daemons run it (hbd_ranks.c, "subset
 * collectives across nodes"). Each member publishes its record and hands the member list to
 * its daemon; the member nodes' daemons read their members' records and input, exchange them
 * in one fence among those nodes, reach the same verdict and write the outputs into the
 * members' buffers before they answer. Counted apart from the set's barriers
 * (HB_SEG_SUBCOLL_SALT).
 */
static int ncoll_sub_nodes(hb_ncoll_t *c, const uint32_t *ranks, size_t n, const uint32_t *sorted,
                           uint32_t mi, const hb_ncoll_args_t *a)
{
    hb_seg_ctl_t *mine = hb_seg_ctl(c->seg, c->rank);
    uint64_t hash = hb_nbar_set_hash(sorted, n);
    uint64_t tag = HB_SEG_SUB_TAG(hash, hb_nbar_set_count(c->bar, hash ^ HB_SEG_SUBCOLL_SALT) + 1);
    ncoll_publish(mine, tag, a, ncoll_check_local(mi, (uint32_t)n, a), tag);
    mine->order = ncoll_order(ranks, n);
    int rc = hb_nbar_subset_daemon(c->bar, HB_SEG_OP_SUBCOLL, ranks, n, hash);
    if (rc == HIBAR_ERR_TIMEOUT)
        mine->coll_seq = 0; /* a daemon that finishes later finds no record to write for */
    return rc;
}

int hb_ncoll_subset(hb_ncoll_t *c, const uint32_t *ranks, size_t n, const hb_ncoll_args_t *a)
{
    uint32_t self = c->seg->nnodes > 1 ? c->grank : c->rank, mi = 0;
    hb_seg_ctl_t *mine = hb_seg_ctl(c->seg, c->rank);
    uint32_t *at = NULL, *sorted = NULL;
    ncoll_rec_t *rec = NULL;
    int rc, lerr, rc2;

    if (a->op == HB_NCOLL_SCATTERV || a->op == HB_NCOLL_GATHERV || ranks == NULL || n == 0)
        return HIBAR_ERR_INVAL;
    at = malloc(n * sizeof(*at));
    sorted = malloc(n * sizeof(*sorted));
    rec = calloc(n, sizeof(*rec));
    if (at == NULL || sorted == NULL || rec == NULL) {
        rc = HIBAR_ERR_NOMEM;
        goto out;
    }
    if ((rc = ncoll_subset_here(c, ranks, n, sorted, at)) < 0)
        goto out;
    if (rc == 0 && c->seg->nnodes == 1) { /* one node without attach */
        rc = HIBAR_ERR_UNAVAIL;
        goto out;
    }
    while (ranks[mi] != self)
        mi++;
    if ((rc2 = hb_nbar_settle(c->bar)) != 0) {
        rc = rc2;
        goto out;
    }
    if (rc == 0) {
        rc = ncoll_sub_nodes(c, ranks, n, sorted, mi, a);
        goto out;
    }
    lerr = ncoll_check_local(mi, (uint32_t)n, a);
    uint64_t hash = hb_nbar_set_hash(sorted, n);
    uint64_t tag = HB_SEG_SUB_TAG(hash, hb_nbar_set_count(c->bar, hash) + 1);

    /* 1. publish */
    ncoll_publish(mine, tag, a, lerr, tag);
    mine->order = ncoll_order(ranks, n);
    /* 2. */
    if ((rc = hb_nbar_subset(c->bar, ranks, n)) != 0)
        goto out;
    /* 3. verdict: the first error published, else MISMATCH where the records differ */
    for (uint32_t i = 0; i < n; i++)
        rec[i] = ncoll_rec_of(hb_seg_ctl(c->seg, at[i]));
    rc = ncoll_first_err(rec, (uint32_t)n);
    for (uint32_t i = 0; i < n && rc == 0; i++)
        if (rec[i].seq != tag || rec[i].epoch != tag || rec[i].op != (uint32_t)a->op ||
            rec[i].count != a->count || rec[i].order != mine->order ||
            (a->op != HB_NCOLL_ALLGATHER && rec[i].root != a->root))
            rc = HIBAR_ERR_MISMATCH;
    /* 4. data */
    if (rc == 0)
        rc = ncoll_sub_move(a, rec, (uint32_t)n, mi);
    else if (mine->err == 0)
        mine->err = rc; /* a member one barrier behind must not take our record for good */
    /* 5. */
    rc2 = hb_nbar_subset(c->bar, ranks, n);
    if (rc == 0)
        rc = rc2;
out:
    free(at);
    free(sorted);
    free(rec);
    return rc;
}
