/* seg.c: the per-job shared-memory segment: layout, validation, memfd, descriptor rings. */
#include "hb_config.h"

#include "seg.h"

#include "hb_hash.h"
#include "hb_log.h"
#include "hibar.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(hb_seg_ctl_t) == 6 * HB_SEG_LINE, "ctl is six cache lines");
_Static_assert(sizeof(hb_seg_group_t) == HB_SEG_LINE, "a group counter is one cache line");
_Static_assert(sizeof(hb_seg_desc_t) == 64, "a descriptor is 64 bytes");
_Static_assert(sizeof(hb_seg_ring_t) == 2 * HB_SEG_LINE, "ring header: head and tail lines");
_Static_assert(sizeof(hb_seg_hdr_t) % HB_SEG_LINE == 0, "header is whole lines");

static uint64_t hb_seg_round(uint64_t x)
{
    return (x + HB_SEG_LINE - 1) & ~(uint64_t)(HB_SEG_LINE - 1);
}

int hb_seg_layout_compute(uint32_t nranks, uint32_t ring_depth, uint64_t buf_size,
                          hb_seg_layout_t *lay_p)
{
    hb_seg_layout_t l;
    uint64_t off;

    if (lay_p == NULL || nranks == 0 || nranks > HB_SEG_MAX_RANKS ||
        ring_depth < HB_SEG_MIN_DEPTH || ring_depth > HB_SEG_MAX_DEPTH ||
        (ring_depth & (ring_depth - 1)) != 0 || buf_size < HB_SEG_MIN_BUF ||
        buf_size > HB_SEG_MAX_BUF || buf_size % HB_SEG_LINE != 0)
        return HIBAR_ERR_INVAL;
    /* With these bounds nothing below can overflow 64 bits (at most ~2^38 bytes). */
    memset(&l, 0, sizeof(l));
    l.nranks = nranks;
    l.ring_depth = ring_depth;
    l.buf_size = buf_size;
    off = hb_seg_round(sizeof(hb_seg_hdr_t));
    l.off_ctl = off;
    off += (uint64_t)nranks * sizeof(hb_seg_ctl_t);
    l.off_tree = off;
    off += (uint64_t)nranks * sizeof(hb_seg_group_t);
    l.off_coll = off;
    off += hb_seg_round(2 * (uint64_t)nranks * sizeof(uint64_t));
    l.off_rings = off;
    l.ring_size = sizeof(hb_seg_ring_t) + (uint64_t)ring_depth * sizeof(hb_seg_desc_t);
    off += 2 * (uint64_t)nranks * l.ring_size;
    l.off_bufs = off;
    off += (uint64_t)nranks * buf_size;
    l.total_size = off;
    *lay_p = l;
    return 0;
}

uint32_t hb_seg_hdr_checksum(const hb_seg_desc_hdr_t *d)
{
    return hb_fnv32(HB_FNV32_BASIS, d, offsetof(hb_seg_desc_hdr_t, check));
}

void hb_seg_format(void *base, const hb_seg_layout_t *lay, uint64_t job_id, uint32_t node_id,
                   uint32_t nnodes, uint32_t gsize)
{
    hb_seg_hdr_t *h = base;
    hb_seg_desc_hdr_t d;

    memset(base, 0, lay->total_size);
    memset(&d, 0, sizeof(d));
    d.magic = HB_SEG_MAGIC;
    d.version = HB_SEG_VERSION;
    d.hdr_size = (uint32_t)hb_seg_round(sizeof(hb_seg_hdr_t));
    d.total_size = lay->total_size;
    d.nranks = lay->nranks;
    d.ring_depth = lay->ring_depth;
    d.buf_size = lay->buf_size;
    d.off_ctl = lay->off_ctl;
    d.off_tree = lay->off_tree;
    d.off_coll = lay->off_coll;
    d.off_rings = lay->off_rings;
    d.ring_size = lay->ring_size;
    d.off_bufs = lay->off_bufs;
    d.job_id = job_id;
    d.node_id = node_id;
    d.nnodes = nnodes == 0 ? 1 : nnodes;
    d.gsize = gsize < lay->nranks ? lay->nranks : gsize;
    d.check = hb_seg_hdr_checksum(&d);
    h->d = d;
    atomic_init(&h->state, HB_SEG_JOB_OK);
    atomic_init(&h->lost_rank, -1);
    atomic_init(&h->attached, 0);
    hb_wait_word_init(&h->attach_wake);
    atomic_init(&h->release, 0);
    hb_wait_word_init(&h->release_wake);
    atomic_init(&h->node_arrived, 0);
    /* The rest (control blocks, counters, rings) is zero, which is their initial state, but
     * for each rank's job rank: its index on a job of one node. */
    for (uint32_t k = 0; k < lay->nranks; k++)
        ((hb_seg_ctl_t *)((char *)base + lay->off_ctl + (size_t)k * sizeof(hb_seg_ctl_t)))->grank =
            k;
}

int hb_seg_validate(const void *base, size_t mapped, hb_seg_layout_t *lay_p)
{
    hb_seg_desc_hdr_t d;
    hb_seg_layout_t l;
    const char *why = NULL;

    if (base == NULL || lay_p == NULL)
        return HIBAR_ERR_INVAL;
    if (mapped < sizeof(hb_seg_hdr_t)) {
        hb_log_error("segment: %zu bytes mapped, smaller than a header", mapped);
        return HIBAR_ERR_PROTO;
    }
    memcpy(&d, base, sizeof(d)); /* from now on only the private copy is read */
    if (d.magic != HB_SEG_MAGIC)
        why = "bad magic";
    else if (d.version != HB_SEG_VERSION)
        why = "unknown version";
    else if (d.check != hb_seg_hdr_checksum(&d))
        why = "header checksum mismatch";
    else if (d.hdr_size != hb_seg_round(sizeof(hb_seg_hdr_t)))
        why = "header size";
    else if (hb_seg_layout_compute(d.nranks, d.ring_depth, d.buf_size, &l) != 0)
        why = "impossible ranks, ring depth or buffer size";
    else if (l.off_ctl != d.off_ctl || l.off_tree != d.off_tree || l.off_coll != d.off_coll ||
             l.off_rings != d.off_rings || l.ring_size != d.ring_size || l.off_bufs != d.off_bufs ||
             l.total_size != d.total_size)
        why = "offsets disagree with the layout";
    else if (d.total_size > mapped)
        why = "segment larger than the mapping";
    else if (d.nnodes == 0)
        why = "zero nodes";
    else if (d.gsize < d.nranks || (d.nnodes == 1 && d.gsize != d.nranks))
        why = "job size smaller than the node's ranks";
    if (why != NULL) {
        hb_log_error("segment rejected: %s", why);
        return HIBAR_ERR_PROTO;
    }
    *lay_p = l;
    return 0;
}

int hb_seg_create(uint32_t nranks, uint32_t ring_depth, uint64_t buf_size, uint64_t job_id,
                  uint32_t node_id, uint32_t nnodes, uint32_t gsize, hb_seg_t *seg_p)
{
    hb_seg_layout_t lay;
    char name[64];
    void *base;
    int fd, rc;

    if (seg_p == NULL)
        return HIBAR_ERR_INVAL;
    rc = hb_seg_layout_compute(nranks, ring_depth, buf_size, &lay);
    if (rc != 0)
        return rc;
    snprintf(name, sizeof(name), "hibar-seg-%" PRIu64, job_id);
    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        hb_log_error("memfd_create %s: %m", name);
        return HIBAR_ERR_IO;
    }
    if (ftruncate(fd, (off_t)lay.total_size) != 0) {
        hb_log_error("ftruncate segment to %" PRIu64 " bytes: %m", lay.total_size);
        rc = HIBAR_ERR_NOMEM;
        goto err_close;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        hb_log_error("sealing segment: %m");
        rc = HIBAR_ERR_IO;
        goto err_close;
    }
    base = mmap(NULL, lay.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        hb_log_error("mmap segment: %m");
        rc = HIBAR_ERR_NOMEM;
        goto err_close;
    }
    hb_seg_format(base, &lay, job_id, node_id, nnodes, gsize);
    seg_p->base = base;
    seg_p->size = lay.total_size;
    seg_p->fd = fd;
    seg_p->lay = lay;
    seg_p->job_id = job_id;
    seg_p->node_id = node_id;
    seg_p->nnodes = nnodes == 0 ? 1 : nnodes;
    seg_p->gsize = gsize < nranks ? nranks : gsize;
    return 0;

err_close:
    close(fd);
    return rc;
}

int hb_seg_map(int fd, hb_seg_t *seg_p)
{
    struct stat st;
    hb_seg_layout_t lay;
    const hb_seg_hdr_t *h;
    void *base;
    int seals, dfd, rc;

    if (fd < 0 || seg_p == NULL)
        return HIBAR_ERR_INVAL;
    if (fstat(fd, &st) != 0) {
        hb_log_error("fstat segment fd %d: %m", fd);
        return HIBAR_ERR_IO;
    }
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        hb_log_error("segment fd %d is not sealed against shrinking", fd);
        return HIBAR_ERR_PROTO;
    }
    if (st.st_size < (off_t)sizeof(hb_seg_hdr_t)) {
        hb_log_error("segment of %lld bytes is too small", (long long)st.st_size);
        return HIBAR_ERR_PROTO;
    }
    base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        hb_log_error("mmap segment: %m");
        return HIBAR_ERR_NOMEM;
    }
    rc = hb_seg_validate(base, (size_t)st.st_size, &lay);
    if (rc != 0)
        goto err_unmap;
    dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dfd < 0) {
        hb_log_error("dup segment fd: %m");
        rc = HIBAR_ERR_IO;
        goto err_unmap;
    }
    h = base;
    seg_p->base = base;
    seg_p->size = (size_t)st.st_size;
    seg_p->fd = dfd;
    seg_p->lay = lay;
    seg_p->job_id = h->d.job_id;
    seg_p->node_id = h->d.node_id;
    seg_p->nnodes = h->d.nnodes;
    seg_p->gsize = h->d.gsize;
    return 0;

err_unmap:
    munmap(base, (size_t)st.st_size);
    return rc;
}

void hb_seg_unmap(hb_seg_t *seg)
{
    if (seg == NULL)
        return;
    if (seg->base != NULL)
        munmap(seg->base, seg->size);
    if (seg->fd >= 0)
        close(seg->fd);
    seg->base = NULL;
    seg->size = 0;
    seg->fd = -1;
}

int hb_seg_ring_push(hb_seg_ring_t *ring, uint32_t depth, const hb_seg_desc_t *d)
{
    uint64_t head, tail;
    hb_seg_desc_t *s;

    if (ring == NULL || d == NULL || depth == 0)
        return HIBAR_ERR_INVAL;
    head = atomic_load_explicit(&ring->head, memory_order_relaxed);
    tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
    if (head - tail > depth)
        return HIBAR_ERR_PROTO;
    if (head - tail == depth)
        return HIBAR_ERR_BUSY;
    s = &ring->slot[head & (depth - 1)];
    s->op = d->op;
    s->flags = d->flags;
    s->coll_id = d->coll_id;
    s->epoch = d->epoch;
    s->addr = d->addr;
    s->len = d->len;
    s->rank = d->rank;
    s->status = d->status;
    s->arg = d->arg;
    atomic_store_explicit(&s->seq, head + 1, memory_order_release);
    atomic_store_explicit(&ring->head, head + 1, memory_order_release);
    return 0;
}

int hb_seg_ring_pop(hb_seg_ring_t *ring, uint32_t depth, hb_seg_desc_t *d_p)
{
    uint64_t head, tail;
    hb_seg_desc_t *s;

    if (ring == NULL || d_p == NULL || depth == 0)
        return HIBAR_ERR_INVAL;
    tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    head = atomic_load_explicit(&ring->head, memory_order_acquire);
    if (head - tail > depth)
        return HIBAR_ERR_PROTO;
    if (head == tail)
        return HIBAR_ERR_WOULD_BLOCK;
    s = &ring->slot[tail & (depth - 1)];
    if (atomic_load_explicit(&s->seq, memory_order_acquire) != tail + 1)
        return HIBAR_ERR_PROTO;
    d_p->op = s->op;
    d_p->flags = s->flags;
    d_p->coll_id = s->coll_id;
    d_p->epoch = s->epoch;
    d_p->addr = s->addr;
    d_p->len = s->len;
    d_p->rank = s->rank;
    d_p->status = s->status;
    d_p->arg = s->arg;
    atomic_store_explicit(&d_p->seq, tail + 1, memory_order_relaxed);
    atomic_store_explicit(&ring->tail, tail + 1, memory_order_release);
    return 0;
}

uint64_t hb_seg_ring_count(hb_seg_ring_t *ring, uint32_t depth)
{
    uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
    return head - tail > depth ? 0 : head - tail;
}

int hb_seg_drain(hb_seg_t *seg, uint64_t *epoch_p, hb_seg_desc_fn on_other, void *arg)
{
    uint64_t node = atomic_load_explicit(&hb_seg_hdr(seg)->node_arrived, memory_order_acquire);
    uint64_t best = 0;
    uint32_t r;
    int rc = 0, prc;

    for (r = 0; r < seg->lay.nranks; r++) {
        hb_seg_desc_t d;
        while ((prc = hb_seg_ring_pop(hb_seg_ring(seg, r, 0), seg->lay.ring_depth, &d)) == 0) {
            if (d.op != HB_SEG_OP_NBAR_ARRIVED) {
                if (on_other != NULL)
                    on_other(&d, r, arg);
                continue;
            }
            /* a node's last arriver stores node_arrived before it pushes: an arrival pushed
             * since the load above (another rank's descriptor started this drain) is seen by a
             * fresh load, never dropped */
            if (d.epoch > node)
                node = atomic_load_explicit(&hb_seg_hdr(seg)->node_arrived, memory_order_acquire);
            if (d.epoch <= node && d.epoch > best)
                best = d.epoch;
        }
        if (prc == HIBAR_ERR_PROTO) {
            hb_log_error("segment: descriptor ring of rank %u is corrupt", (unsigned)r);
            rc = HIBAR_ERR_PROTO;
        }
    }
    *epoch_p = best;
    return rc;
}

static void seg_count_other(const hb_seg_desc_t *d, uint32_t rank, void *arg)
{
    (void)d;
    (void)rank;
    ++*(unsigned *)arg;
}

int hb_seg_drain_arrivals(hb_seg_t *seg, uint64_t *epoch_p, unsigned *other_p)
{
    unsigned other = 0;
    int rc = hb_seg_drain(seg, epoch_p, seg_count_other, &other);
    if (other_p != NULL)
        *other_p = other;
    return rc;
}

void hb_seg_release(hb_seg_t *seg, uint64_t epoch)
{
    hb_seg_hdr_t *h = hb_seg_hdr(seg);
    atomic_store_explicit(&h->release, epoch, memory_order_release);
    hb_wait_word_wake(&h->release_wake);
}

void hb_seg_release_status(hb_seg_t *seg, uint64_t epoch, int status)
{
    atomic_store_explicit(&hb_seg_hdr(seg)->xstatus[epoch % HB_SEG_XSTATUS], (int32_t)status,
                          memory_order_relaxed);
    hb_seg_release(seg, epoch); /* the release store orders the status before it */
}

int hb_seg_epoch_status(const hb_seg_t *seg, uint64_t epoch)
{
    int32_t s = atomic_load_explicit(&hb_seg_hdr(seg)->xstatus[epoch % HB_SEG_XSTATUS],
                                     memory_order_relaxed);
    return s > 0 || s < HIBAR_ERR_LAST ? HIBAR_ERR_PROTO : (int)s;
}

void hb_seg_mark_broken(hb_seg_t *seg, int32_t rank)
{
    hb_seg_hdr_t *h = hb_seg_hdr(seg);
    int32_t none = -1;
    uint32_t r;

    if (rank >= 0 && atomic_compare_exchange_strong(&h->lost_rank, &none, rank))
        hb_log_error("rank %d of this node was lost: the job is broken", (int)rank);
    atomic_store(&h->state, HB_SEG_JOB_BROKEN);
    hb_wait_word_wake(&h->release_wake);
    hb_wait_word_wake(&h->attach_wake);
    for (r = 0; r < seg->lay.nranks; r++) {
        hb_wait_word_wake(&hb_seg_ctl(seg, r)->sub_wake);
        hb_wait_word_wake(&hb_seg_ctl(seg, r)->bar_wake);
    }
}
