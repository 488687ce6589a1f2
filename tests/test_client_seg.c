/* test_client_seg.c: segment layout and validation, descriptor rings, barrier tree shape. */
#include "hb_config.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hb_log.h"
#include "hibar.h"
#include "nbar.h"
#include "seg.h"
#include "test_client.h"

static void test_layout_params(void)
{
    hb_seg_layout_t l;

    CU_ASSERT_EQUAL(hb_seg_layout_compute(0, 64, 65536, &l), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(HB_SEG_MAX_RANKS + 1, 64, 65536, &l), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(4, 3, 65536, &l), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(4, 1, 65536, &l), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(4, 1u << 20, 65536, &l), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(4, 64, 4000, &l), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(4, 64, 4096 + 8, &l), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(4, 64, (uint64_t)HB_SEG_MAX_BUF * 2, &l),
                    HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(4, 64, 65536, NULL), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_layout_compute(HB_SEG_MAX_RANKS, HB_SEG_MAX_DEPTH, HB_SEG_MAX_BUF, &l),
                    0);
}

static void test_layout_regions(void)
{
    static const uint32_t ranks[] = {1, 2, 3, 8, 61};
    static const uint32_t depths[] = {2, 64, 1024};
    size_t i, j;

    for (i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
        for (j = 0; j < sizeof(depths) / sizeof(depths[0]); j++) {
            hb_seg_layout_t l;
            uint32_t n = ranks[i];
            CU_ASSERT_EQUAL_FATAL(hb_seg_layout_compute(n, depths[j], 8192, &l), 0);
            /* every region starts on a cache line, in order, without overlap */
            CU_ASSERT_EQUAL(l.off_ctl % HB_SEG_LINE, 0);
            CU_ASSERT_EQUAL(l.off_tree % HB_SEG_LINE, 0);
            CU_ASSERT_EQUAL(l.off_coll % HB_SEG_LINE, 0);
            CU_ASSERT_EQUAL(l.off_rings % HB_SEG_LINE, 0);
            CU_ASSERT_EQUAL(l.off_bufs % HB_SEG_LINE, 0);
            CU_ASSERT(l.off_ctl >= sizeof(hb_seg_hdr_t));
            CU_ASSERT(l.off_tree >= l.off_ctl + n * sizeof(hb_seg_ctl_t));
            CU_ASSERT(l.off_coll >= l.off_tree + n * sizeof(hb_seg_group_t));
            CU_ASSERT(l.off_rings >= l.off_coll + 2 * n * sizeof(uint64_t));
            CU_ASSERT_EQUAL(l.ring_size, 2 * HB_SEG_LINE + depths[j] * 64ull);
            CU_ASSERT(l.off_bufs >= l.off_rings + 2ull * n * l.ring_size);
            CU_ASSERT_EQUAL(l.total_size, l.off_bufs + n * 8192ull);
        }
    }
    /* control words of a rank: five separate lines, in the rank's own block */
    CU_ASSERT_EQUAL(offsetof(hb_seg_ctl_t, coll_seq), HB_SEG_LINE);
    CU_ASSERT_EQUAL(offsetof(hb_seg_ctl_t, bar_arrive), 2 * HB_SEG_LINE);
    CU_ASSERT(offsetof(hb_seg_ctl_t, sub_arrive) < 3 * HB_SEG_LINE);
    CU_ASSERT_EQUAL(offsetof(hb_seg_ctl_t, bar_wake), 4 * HB_SEG_LINE);
    CU_ASSERT_EQUAL(offsetof(hb_seg_ctl_t, sub_go), 3 * HB_SEG_LINE);
    CU_ASSERT_EQUAL(offsetof(hb_seg_hdr_t, release) % HB_SEG_LINE, 0);
    CU_ASSERT(offsetof(hb_seg_hdr_t, release) != offsetof(hb_seg_hdr_t, state));
    CU_ASSERT(offsetof(hb_seg_hdr_t, release_wake) >=
              offsetof(hb_seg_hdr_t, release) + HB_SEG_LINE);
    CU_ASSERT_EQUAL(offsetof(hb_seg_hdr_t, node_arrived) % HB_SEG_LINE, 0);
}

/* A formatted segment in private memory. */
static void *seg_mem(uint32_t n, hb_seg_layout_t *l)
{
    void *p;
    if (hb_seg_layout_compute(n, 16, 4096, l) != 0)
        return NULL;
    p = aligned_alloc(HB_SEG_LINE, l->total_size);
    if (p != NULL)
        hb_seg_format(p, l, 7, 0, 1, 0);
    return p;
}

/* The rejections below are logged; keep them out of the test output. */
static void quiet_sink(hb_log_level_t level, const char *line, void *arg)
{
    (void)level;
    (void)line;
    (void)arg;
}

static void test_validate(void)
{
    hb_seg_layout_t l, got;
    hb_seg_hdr_t *h;
    void *p = seg_mem(3, &l);

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    h = p;
    hb_log_set_sink(quiet_sink, NULL);
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), 0);
    CU_ASSERT_EQUAL(got.nranks, 3);
    CU_ASSERT_EQUAL(got.total_size, l.total_size);
    CU_ASSERT_EQUAL(hb_seg_validate(NULL, l.total_size, &got), HIBAR_ERR_INVAL);
    /* smaller than the segment, smaller than a header */
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size - 1, &got), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(hb_seg_validate(p, 16, &got), HIBAR_ERR_PROTO);

    /* each corruption is rejected; restore afterwards */
    h->d.magic ^= 1;
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.magic ^= 1;
    h->d.version = 99;
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.version = HB_SEG_VERSION;
    h->d.off_bufs += 64; /* checksum now wrong */
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.check = hb_seg_hdr_checksum(&h->d); /* checksum right, offsets disagree */
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.off_bufs -= 64;
    h->d.nranks = 4; /* a bigger job than the mapping holds */
    h->d.check = hb_seg_hdr_checksum(&h->d);
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.nranks = 0;
    h->d.check = hb_seg_hdr_checksum(&h->d);
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.nranks = 3;
    h->d.ring_depth = 17;
    h->d.check = hb_seg_hdr_checksum(&h->d);
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.ring_depth = 16;
    h->d.total_size = (uint64_t)1 << 62;
    h->d.check = hb_seg_hdr_checksum(&h->d);
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.total_size = l.total_size;
    h->d.nnodes = 0;
    h->d.check = hb_seg_hdr_checksum(&h->d);
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), HIBAR_ERR_PROTO);
    h->d.nnodes = 1;
    h->d.check = hb_seg_hdr_checksum(&h->d);
    CU_ASSERT_EQUAL(hb_seg_validate(p, l.total_size, &got), 0);
    hb_log_set_sink(NULL, NULL);
    free(p);
}

static void test_create_map(void)
{
    hb_seg_t seg, m;
    int fd;

    CU_ASSERT_EQUAL_FATAL(hb_seg_create(4, 8, 4096, 42, 1, 2, 8, &seg), 0);
    CU_ASSERT(seg.fd >= 0);
    CU_ASSERT_EQUAL(hb_seg_map(seg.fd, &m), 0);
    CU_ASSERT_EQUAL(m.lay.nranks, 4);
    CU_ASSERT_EQUAL(m.job_id, 42);
    CU_ASSERT_EQUAL(m.node_id, 1);
    CU_ASSERT_EQUAL(m.nnodes, 2);
    /* both mappings see the same memory */
    atomic_store(&hb_seg_hdr(&seg)->node_arrived, 5);
    CU_ASSERT_EQUAL(atomic_load(&hb_seg_hdr(&m)->node_arrived), 5);
    CU_ASSERT_EQUAL(ftruncate(seg.fd, 4096), -1); /* sealed */
    hb_seg_unmap(&m);
    hb_seg_unmap(&seg);
    hb_seg_unmap(&seg); /* twice is harmless */

    /* an unsealed memfd is refused */
    fd = memfd_create("hibar-test-unsealed", MFD_CLOEXEC);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(ftruncate(fd, 1 << 20), 0);
    hb_log_set_sink(quiet_sink, NULL);
    CU_ASSERT_EQUAL(hb_seg_map(fd, &m), HIBAR_ERR_PROTO);
    close(fd);
    /* a sealed memfd of garbage is refused */
    fd = memfd_create("hibar-test-garbage", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(ftruncate(fd, 1 << 20), 0);
    CU_ASSERT_EQUAL(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
    CU_ASSERT_EQUAL(hb_seg_map(fd, &m), HIBAR_ERR_PROTO);
    close(fd);
    hb_log_set_sink(NULL, NULL);
    CU_ASSERT_EQUAL(hb_seg_map(-1, &m), HIBAR_ERR_INVAL);
}

static hb_seg_ring_t *ring_new(uint32_t depth)
{
    size_t sz = sizeof(hb_seg_ring_t) + depth * sizeof(hb_seg_desc_t);
    hb_seg_ring_t *r = aligned_alloc(HB_SEG_LINE, sz);
    if (r != NULL)
        memset(r, 0, sz);
    return r;
}

static void test_ring_basic(void)
{
    hb_seg_ring_t *r = ring_new(4);
    hb_seg_desc_t d, out;
    uint32_t i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    memset(&d, 0, sizeof(d));
    memset(&out, 0, sizeof(out));
    CU_ASSERT_EQUAL(hb_seg_ring_pop(r, 4, &out), HIBAR_ERR_WOULD_BLOCK); /* empty */
    for (i = 0; i < 4; i++) {
        d.op = HB_SEG_OP_NBAR_ARRIVED;
        d.epoch = 100 + i;
        d.len = i;
        CU_ASSERT_EQUAL(hb_seg_ring_push(r, 4, &d), 0);
    }
    CU_ASSERT_EQUAL(hb_seg_ring_count(r, 4), 4);
    CU_ASSERT_EQUAL(hb_seg_ring_push(r, 4, &d), HIBAR_ERR_BUSY); /* full */
    for (i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(hb_seg_ring_pop(r, 4, &out), 0);
        CU_ASSERT_EQUAL(out.epoch, 100 + i);
        CU_ASSERT_EQUAL(out.len, i);
        CU_ASSERT_EQUAL(atomic_load(&out.seq), i + 1); /* sequence number = position + 1 */
    }
    CU_ASSERT_EQUAL(hb_seg_ring_pop(r, 4, &out), HIBAR_ERR_WOULD_BLOCK);
    CU_ASSERT_EQUAL(hb_seg_ring_push(NULL, 4, &d), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_seg_ring_pop(r, 4, NULL), HIBAR_ERR_INVAL);
    free(r);
}

static void test_ring_wrap(void)
{
    hb_seg_ring_t *r = ring_new(8);
    hb_seg_desc_t d, out;
    uint64_t pushed = 0, popped = 0;
    unsigned step;

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    memset(&d, 0, sizeof(d));
    /* uneven bursts: many trips around the ring, order and sequence numbers kept */
    for (step = 0; step < 2000; step++) {
        unsigned burst = (step * 7) % 11, k;
        for (k = 0; k < burst; k++) {
            d.arg = pushed;
            if (hb_seg_ring_push(r, 8, &d) == HIBAR_ERR_BUSY) {
                CU_ASSERT_EQUAL(pushed - popped, 8);
                break;
            }
            pushed++;
        }
        for (k = 0; k < (step * 5) % 9; k++) {
            int rc = hb_seg_ring_pop(r, 8, &out);
            if (rc == HIBAR_ERR_WOULD_BLOCK) {
                CU_ASSERT_EQUAL(pushed, popped);
                break;
            }
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            CU_ASSERT_EQUAL(out.arg, popped);
            CU_ASSERT_EQUAL(atomic_load(&out.seq), popped + 1);
            popped++;
        }
    }
    CU_ASSERT(pushed > 1000);
    CU_ASSERT(atomic_load(&r->head) == pushed);
    free(r);
}

static void test_ring_corrupt(void)
{
    hb_seg_ring_t *r = ring_new(4);
    hb_seg_desc_t d, out;

    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    memset(&d, 0, sizeof(d));
    CU_ASSERT_EQUAL(hb_seg_ring_push(r, 4, &d), 0);
    atomic_store(&r->slot[0].seq, 77); /* a slot whose sequence number is wrong */
    CU_ASSERT_EQUAL(hb_seg_ring_pop(r, 4, &out), HIBAR_ERR_PROTO);
    atomic_store(&r->slot[0].seq, 1);
    CU_ASSERT_EQUAL(hb_seg_ring_pop(r, 4, &out), 0);
    atomic_store(&r->head, 100); /* head impossibly far ahead of tail */
    CU_ASSERT_EQUAL(hb_seg_ring_pop(r, 4, &out), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(hb_seg_ring_push(r, 4, &d), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(hb_seg_ring_count(r, 4), 0);
    free(r);
}

static void test_drain(void)
{
    hb_seg_t seg;
    hb_seg_desc_t d;
    uint64_t epoch = 99;
    unsigned other = 99;

    CU_ASSERT_EQUAL_FATAL(hb_seg_create(3, 4, 4096, 1, 0, 2, 6, &seg), 0);
    CU_ASSERT_EQUAL(hb_seg_drain_arrivals(&seg, &epoch, &other), 0);
    CU_ASSERT_EQUAL(epoch, 0);
    CU_ASSERT_EQUAL(other, 0);
    memset(&d, 0, sizeof(d));
    d.op = HB_SEG_OP_NBAR_ARRIVED;
    d.epoch = 7; /* ahead of node_arrived: not trusted */
    CU_ASSERT_EQUAL(hb_seg_ring_push(hb_seg_ring(&seg, 2, 0), 4, &d), 0);
    d.epoch = 5;
    CU_ASSERT_EQUAL(hb_seg_ring_push(hb_seg_ring(&seg, 1, 0), 4, &d), 0);
    d.epoch = 6;
    CU_ASSERT_EQUAL(hb_seg_ring_push(hb_seg_ring(&seg, 0, 0), 4, &d), 0);
    d.op = HB_SEG_OP_NOP;
    CU_ASSERT_EQUAL(hb_seg_ring_push(hb_seg_ring(&seg, 0, 0), 4, &d), 0);
    atomic_store(&hb_seg_hdr(&seg)->node_arrived, 6);
    CU_ASSERT_EQUAL(hb_seg_drain_arrivals(&seg, &epoch, &other), 0);
    CU_ASSERT_EQUAL(epoch, 6);
    CU_ASSERT_EQUAL(other, 1);
    CU_ASSERT_EQUAL(hb_seg_ring_count(hb_seg_ring(&seg, 0, 0), 4), 0);
    CU_ASSERT_EQUAL(hb_seg_ring_count(hb_seg_ring(&seg, 2, 0), 4), 0);
    /* release: the epoch is published for the waiters */
    hb_seg_release(&seg, epoch);
    CU_ASSERT_EQUAL(atomic_load(&hb_seg_hdr(&seg)->release), 6);
    /* a corrupt ring is reported, the others still drained */
    CU_ASSERT_EQUAL(hb_seg_ring_push(hb_seg_ring(&seg, 1, 0), 4, &d), 0);
    atomic_store(&hb_seg_ring(&seg, 0, 0)->head, 1000);
    hb_log_set_sink(quiet_sink, NULL);
    CU_ASSERT_EQUAL(hb_seg_drain_arrivals(&seg, &epoch, &other), HIBAR_ERR_PROTO);
    hb_log_set_sink(NULL, NULL);
    CU_ASSERT_EQUAL(other, 1);
    CU_ASSERT_EQUAL(hb_seg_ring_count(hb_seg_ring(&seg, 1, 0), 4), 0);
    hb_seg_unmap(&seg);
}

/* While the daemon drains rank 0's ring (a subset barrier's descriptor), rank 1 arrives last at
 * the node's barrier epoch: it stores node_arrived, then pushes its NBAR_ARRIVED. */
static void drain_race_other(const hb_seg_desc_t *d, uint32_t rank, void *arg)
{
    hb_seg_t *seg = arg;
    hb_seg_desc_t a;
    (void)d;
    if (rank != 0)
        return;
    memset(&a, 0, sizeof(a));
    a.op = HB_SEG_OP_NBAR_ARRIVED;
    a.epoch = 5;
    atomic_store(&hb_seg_hdr(seg)->node_arrived, 5);
    CU_ASSERT_EQUAL(hb_seg_ring_push(hb_seg_ring(seg, 1, 0), 4, &a), 0);
}

/* An arrival pushed while a drain runs is taken by that drain (which pops it), not dropped as
 * ahead of the node_arrived it read first: a rank in a subset barrier beside a split-phase
 * barrier of the whole job made the node's epoch never start (the barrier timed out). */
static void test_drain_race(void)
{
    hb_seg_t seg;
    hb_seg_desc_t d;
    uint64_t epoch = 99;

    CU_ASSERT_EQUAL_FATAL(hb_seg_create(2, 4, 4096, 1, 0, 2, 4, &seg), 0);
    atomic_store(&hb_seg_hdr(&seg)->node_arrived, 4);
    memset(&d, 0, sizeof(d));
    d.op = HB_SEG_OP_NOP;
    CU_ASSERT_EQUAL(hb_seg_ring_push(hb_seg_ring(&seg, 0, 0), 4, &d), 0);
    CU_ASSERT_EQUAL(hb_seg_drain(&seg, &epoch, drain_race_other, &seg), 0);
    CU_ASSERT_EQUAL(epoch, 5);
    CU_ASSERT_EQUAL(hb_seg_ring_count(hb_seg_ring(&seg, 1, 0), 4), 0);
    hb_seg_unmap(&seg);
}

/* Every rank reaches one top; each group's size is the number of units pointing to it. */
static void check_tree(const hb_nbar_tree_t *t)
{
    uint32_t *in = calloc(t->ngroups + 1, sizeof(uint32_t)), g, r, tops = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    CU_ASSERT(t->ngroups < t->nranks || t->nranks == 1);
    for (r = 0; r < t->nranks; r++) {
        if (t->nranks > 1) {
            CU_ASSERT_FATAL(t->rank_group[r] < t->ngroups);
            in[t->rank_group[r]]++;
        } else {
            CU_ASSERT_EQUAL(t->rank_group[r], HB_NBAR_NONE);
        }
    }
    for (g = 0; g < t->ngroups; g++) {
        if (t->group_parent[g] == HB_NBAR_NONE)
            tops++;
        else
            in[t->group_parent[g]]++;
    }
    for (g = 0; g < t->ngroups; g++) {
        CU_ASSERT_EQUAL(in[g], t->group_size[g]);
        CU_ASSERT(t->group_size[g] >= 2);
    }
    CU_ASSERT_EQUAL(tops, t->nranks > 1 ? 1u : 0u);
    for (r = 0; r < t->nranks; r++)
        CU_ASSERT(hb_nbar_tree_depth(t, r) <= t->nranks);
    free(in);
}

static void test_tree_shapes(void)
{
    uint32_t keys[64][HB_SEG_NKEYS];
    hb_nbar_tree_t t;
    uint32_t r, n;

    for (r = 0; r < 64; r++)
        memset(keys[r], 0xff, sizeof(keys[r]));
    CU_ASSERT_EQUAL(hb_nbar_tree_build(0, (const uint32_t(*)[HB_SEG_NKEYS])keys, 4, &t),
                    HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_nbar_tree_build(4, (const uint32_t(*)[HB_SEG_NKEYS])keys, 1, &t),
                    HIBAR_ERR_INVAL);
    /* unbound ranks: a radix-4 tree in rank order */
    for (n = 1; n <= 64; n++) {
        CU_ASSERT_EQUAL_FATAL(hb_nbar_tree_build(n, (const uint32_t(*)[HB_SEG_NKEYS])keys, 4, &t),
                              0);
        check_tree(&t);
        hb_nbar_tree_free(&t);
    }
    CU_ASSERT_EQUAL_FATAL(hb_nbar_tree_build(8, (const uint32_t(*)[HB_SEG_NKEYS])keys, 4, &t), 0);
    CU_ASSERT_EQUAL(t.ngroups, 3);
    CU_ASSERT_EQUAL(t.rank_group[0], t.rank_group[3]);
    CU_ASSERT_NOT_EQUAL(t.rank_group[3], t.rank_group[4]);
    CU_ASSERT_EQUAL(hb_nbar_tree_depth(&t, 0), 2);
    hb_nbar_tree_free(&t);

    /* 8 ranks on 2 cores (rank r on core r % 2, one L2 per core): ranks sharing a core
     * meet first, then the two cores */
    for (r = 0; r < 8; r++) {
        keys[r][0] = 0;
        keys[r][1] = 0;
        keys[r][2] = r % 2;
        keys[r][3] = r % 2;
    }
    CU_ASSERT_EQUAL_FATAL(hb_nbar_tree_build(8, (const uint32_t(*)[HB_SEG_NKEYS])keys, 4, &t), 0);
    check_tree(&t);
    CU_ASSERT_EQUAL(t.ngroups, 3);
    for (r = 2; r < 8; r++)
        CU_ASSERT_EQUAL(t.rank_group[r], t.rank_group[r % 2]);
    CU_ASSERT_NOT_EQUAL(t.rank_group[0], t.rank_group[1]);
    CU_ASSERT_EQUAL(t.group_parent[t.rank_group[0]], t.group_parent[t.rank_group[1]]);
    hb_nbar_tree_free(&t);

    /* two NUMA nodes x 2 L2 x 2 cores, 3 ranks per core, radix 2: deep but consistent,
     * and ranks of different NUMA nodes never share a group below the top */
    for (r = 0; r < 24; r++) {
        keys[r][0] = r / 12;
        keys[r][1] = r / 12;
        keys[r][2] = r / 6;
        keys[r][3] = r / 3;
    }
    CU_ASSERT_EQUAL_FATAL(hb_nbar_tree_build(24, (const uint32_t(*)[HB_SEG_NKEYS])keys, 2, &t), 0);
    check_tree(&t);
    for (r = 0; r < 24; r += 3) {
        CU_ASSERT_EQUAL(t.rank_group[r] == t.rank_group[r + 1] ||
                            t.group_parent[t.rank_group[r]] == t.rank_group[r + 1] ||
                            t.group_parent[t.rank_group[r + 1]] == t.rank_group[r],
                        1);
    }
    CU_ASSERT_NOT_EQUAL(t.rank_group[0], t.rank_group[12]);
    hb_nbar_tree_free(&t);

    /* random keys: invariants hold */
    srand(12345);
    for (n = 0; n < 50; n++) {
        uint32_t m = 1 + (uint32_t)rand() % 64;
        for (r = 0; r < m; r++) {
            uint32_t l;
            for (l = 0; l < HB_SEG_NKEYS; l++)
                keys[r][l] = rand() % 3 == 0 ? HB_SEG_KEY_NONE : (uint32_t)rand() % 3;
        }
        CU_ASSERT_EQUAL_FATAL(hb_nbar_tree_build(m, (const uint32_t(*)[HB_SEG_NKEYS])keys,
                                                 2 + (uint32_t)rand() % 6, &t),
                              0);
        check_tree(&t);
        hb_nbar_tree_free(&t);
    }
}

static void test_keys_local(void)
{
    uint32_t keys[HB_SEG_NKEYS];
    int l;
    hb_nbar_keys_local(keys); /* whatever the binding, the call must work */
    for (l = 0; l < HB_SEG_NKEYS; l++)
        CU_ASSERT(keys[l] == HB_SEG_KEY_NONE || keys[l] < 1u << 20);
}

int hb_test_client_seg_register(void)
{
    CU_pSuite s = CU_add_suite("client_seg", NULL, NULL);
    if (s == NULL)
        return -1;
    if (CU_add_test(s, "layout parameters", test_layout_params) == NULL ||
        CU_add_test(s, "layout regions and cache lines", test_layout_regions) == NULL ||
        CU_add_test(s, "validation rejects corrupted headers", test_validate) == NULL ||
        CU_add_test(s, "memfd create, seal, map", test_create_map) == NULL ||
        CU_add_test(s, "ring full, empty, sequence", test_ring_basic) == NULL ||
        CU_add_test(s, "ring wrap-around", test_ring_wrap) == NULL ||
        CU_add_test(s, "ring corruption", test_ring_corrupt) == NULL ||
        CU_add_test(s, "daemon side: drain arrivals, release", test_drain) == NULL ||
        CU_add_test(s, "daemon side: an arrival pushed during a drain", test_drain_race) == NULL ||
        CU_add_test(s, "barrier tree shapes", test_tree_shapes) == NULL ||
        CU_add_test(s, "hwloc keys of this process", test_keys_local) == NULL)
        return -1;
    return 0;
}
