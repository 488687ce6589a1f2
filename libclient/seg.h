/* seg.h: the per-job shared-memory segment (layout, validation, descriptor rings), hb_seg_*. */
#ifndef HB_SEG_H
#define HB_SEG_H

#include "hb_wait.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One segment per job and node. hibard creates it (a sealed memfd) and hands it to each local
 * rank over its UNIX socket (SCM_RIGHTS, SO_PEERCRED checked on both sides); a test or
 * hibar-bench may create it itself. Layout, every offset a multiple of HB_SEG_LINE:
 *
 *   0                 hb_seg_hdr_t: immutable description (magic, version, sizes, offsets,
 *                     checksum), then one cache line each for: job state (broken flag, lost
 *                     rank, attach count), the barrier release word (+ its futex wake word),
 *                     the multi-node hook (node_arrived, written by the node's last
 *                     arriver for the daemon), and the daemon's verdicts (xstatus: how the
 *                     epoch the daemon ran across nodes ended, written before its release).
 *   off_ctl           nranks x hb_seg_ctl_t (6 cache lines per rank): identity (pid,
 *                     state, hwloc keys), collective record (op, root, size, buffers),
 *                     barrier and subset-barrier arrival, subset release + wake word,
 *                     the barrier arrival's wake word, the root's -v tables (addresses in
 *                     its own memory, read by the daemon). Each line has
 *                     exactly one writer (a sleeping waiter also counts itself in the
 *                     wake word next to what it waits for).
 *   off_tree          nranks x one cache line: the fan-in counters of the barrier tree's
 *                     groups (at most nranks - 1 groups).
 *   off_coll          2 x nranks x uint64: counts and displacements published by the root
 *                     of a collective.
 *   off_rings         nranks x 2 rings (sq: rank -> daemon, cq: daemon -> rank), each a
 *                     head line, a tail line and ring_depth 64-byte descriptors.
 *   off_bufs          nranks x buf_size bytes: staging buffers for small messages and for
 *                     chunked copies when cross-memory attach is not permitted.
 *   total_size
 *
 * The layout is a pure function of (nranks, ring_depth, buf_size): hb_seg_layout_compute.
 * A mapped segment is never trusted: hb_seg_validate copies the header, recomputes the layout
 * from its three parameters and rejects any disagreement, a bad magic, version or checksum,
 * or a size larger than the mapping. After validation only the local copy of the layout is
 * used, never offsets re-read from shared memory.
 */

#define HB_SEG_MAGIC 0x4745534241424948ull /* "HIBARSEG" */
#define HB_SEG_VERSION 2u
#define HB_SEG_LINE 64u
#define HB_SEG_MAX_RANKS 4096u
#define HB_SEG_MIN_DEPTH 2u
#define HB_SEG_MAX_DEPTH 65536u
#define HB_SEG_MIN_BUF 4096u
#define HB_SEG_MAX_BUF (64u << 20)
#define HB_SEG_NKEYS 4 /* hwloc keys per rank: NUMA node, L3, L2, core (logical indexes) */
#define HB_SEG_KEY_NONE UINT32_MAX
#define HB_SEG_XSTATUS 8 /* daemon verdict slots: epoch e uses xstatus[e % HB_SEG_XSTATUS] */

/* Defaults used by hibard, tests and hibar-bench. */
#define HB_SEG_DEFAULT_DEPTH 64u
#define HB_SEG_DEFAULT_BUF (64u << 10)

/* Job states in hb_seg_hdr_t.state. */
#define HB_SEG_JOB_OK 0u
#define HB_SEG_JOB_BROKEN 1u /* a rank died or left: every wait returns HIBAR_ERR_PEER_LOST */

/* Rank states in hb_seg_ctl_t.state. */
#define HB_SEG_RANK_EMPTY 0u
#define HB_SEG_RANK_ATTACHING 1u
#define HB_SEG_RANK_ATTACHED 2u
#define HB_SEG_RANK_LEFT 3u

/* Descriptor operations (sq: rank -> daemon; cq: daemon -> rank). */
#define HB_SEG_OP_NOP 0u
#define HB_SEG_OP_NBAR_ARRIVED 1u /* the node's barrier epoch is complete locally */
#define HB_SEG_OP_NBAR_RELEASE 2u /* the daemon released an epoch */
#define HB_SEG_OP_SUBSET                                                                           \
    3u /* subset barrier across nodes: coll_id = hash of the sorted set,                           \
        * epoch = its sequence, addr/len = the sorted job ranks (uint32_t                          \
        * in the rank's memory); answered in the rank's sub_go */
#define HB_SEG_OP_SUBCOLL                                                                          \
    4u /* collective of a rank set across nodes: as SUBSET, but addr/len is the                    \
        * member list in its order (member i = block i), epoch the set's                           \
        * collective count (HB_SEG_SUBCOLL_SALT), and the rank's control block                     \
        * holds its record (op, root as a member index, count, buffers, err,                       \
        * order; coll_seq = epoch = HB_SEG_SUB_TAG(hash, that count)) */

typedef struct hb_seg_layout {
    uint32_t nranks;
    uint32_t ring_depth;
    uint64_t buf_size;
    uint64_t off_ctl;
    uint64_t off_tree;
    uint64_t off_coll;
    uint64_t off_rings;
    uint64_t ring_size; /* bytes of one ring (head line, tail line, descriptors) */
    uint64_t off_bufs;
    uint64_t total_size;
} hb_seg_layout_t;

/* The immutable part of the header: written once by the creator, checksummed. */
typedef struct hb_seg_desc_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t hdr_size;
    uint64_t total_size;
    uint32_t nranks;
    uint32_t ring_depth;
    uint64_t buf_size;
    uint64_t off_ctl, off_tree, off_coll, off_rings, ring_size, off_bufs;
    uint64_t job_id;
    uint32_t node_id;
    uint32_t nnodes; /* > 1: the node's last arriver rings the daemon (multi-node barrier) */
    uint32_t gsize;  /* ranks of the job on every node (nranks when nnodes is 1) */
    uint32_t check;  /* FNV-1a over every field above */
} hb_seg_desc_hdr_t;

typedef struct hb_seg_hdr {
    hb_seg_desc_hdr_t d;
    _Alignas(HB_SEG_LINE) _Atomic uint32_t state; /* HB_SEG_JOB_* */
    _Atomic int32_t lost_rank;                    /* first rank found dead, or -1 */
    _Atomic uint32_t attached;                    /* ranks that finished attaching */
    hb_wait_word_t attach_wake;
    /* Written by the daemon: 1 while its loop yields or sleeps (cores are scarce, doc/design.md
     * section 6.1): a rank waiting for the release of an epoch that the daemon runs across
     * nodes sleeps after its spin stage instead of yielding, leaving the cores to the daemon. */
    _Atomic uint32_t ranks_sleep;
    _Alignas(HB_SEG_LINE) _Atomic uint64_t release; /* last released barrier epoch */
    /* Its own line: bumping it must not steal the release line from the pollers. */
    _Alignas(HB_SEG_LINE) hb_wait_word_t release_wake;
    _Alignas(HB_SEG_LINE) _Atomic uint64_t node_arrived; /* epoch complete on this node */
    /* Written by the daemon only: how epoch e, which it ran across nodes, ended (0 or a
     * HIBAR_ERR_*), stored before e is released. At most one epoch is in flight per rank, so
     * a slot is never reused before every rank has read it. */
    _Alignas(HB_SEG_LINE) _Atomic int32_t xstatus[HB_SEG_XSTATUS];
} hb_seg_hdr_t;

/* A rank's control block: six cache lines, each with one writer. */
typedef struct hb_seg_ctl {
    /* line 0, written by the rank at attach and finalize */
    _Alignas(HB_SEG_LINE) _Atomic uint32_t state; /* HB_SEG_RANK_* */
    _Atomic int32_t pid;
    uint32_t keys[HB_SEG_NKEYS];
    uint32_t cma_ok; /* this rank could read its neighbour by process_vm_readv */
    uint32_t grank;  /* its job rank: the node's index k (hb_seg_format), or what the daemon
                      * of a job on several nodes writes before any rank attaches */
    uint64_t probe_addr; /* address of probe_val's twin in the rank's own memory */
    uint64_t probe_val;
    /* line 1, the rank's collective record, written by the rank */
    _Alignas(HB_SEG_LINE) uint64_t coll_seq;
    uint32_t op;
    int32_t root;
    uint64_t count;
    uint64_t sendbuf;
    uint64_t recvbuf;
    uint64_t epoch; /* the barrier epoch that opens this collective */
    int32_t err;
    uint32_t order; /* a rank set's collective: its member list's order (hb_ncoll_subset), else 0 */
    /* line 2, written by the rank: its last barrier epoch (flat barrier); its subset-barrier
     * arrival (key << 32 | epoch), the leader it waits for and whether it waits; as a
     * leader, the arrival value of a subset barrier it found mismatched */
    _Alignas(HB_SEG_LINE) _Atomic uint64_t bar_arrive;
    _Atomic uint64_t sub_arrive;
    _Atomic uint64_t sub_fail;
    _Atomic uint32_t sub_leader;
    _Atomic uint32_t sub_pending;
    /* line 3, subset release written by the subset's leader; the rank sleeps on sub_wake */
    _Alignas(HB_SEG_LINE) _Atomic uint64_t sub_go;
    hb_wait_word_t sub_wake;
    /* line 4, the wake word of bar_arrive: bumped by the rank, slept on by its waiters (its
     * own line so that the bump does not steal bar_arrive's line from the pollers) */
    _Alignas(HB_SEG_LINE) hb_wait_word_t bar_wake;
    /* line 5, written by the rank with its collective record: at the root of a -v collective
     * across nodes, the addresses of its counts and displacements (size_t[gsize] each) */
    _Alignas(HB_SEG_LINE) uint64_t counts_addr;
    uint64_t displs_addr;
} hb_seg_ctl_t;

/* A fan-in counter of the barrier tree: arrivals since the segment was created. */
typedef struct hb_seg_group {
    _Alignas(HB_SEG_LINE) _Atomic uint64_t count;
} hb_seg_group_t;

/* A VIA-style descriptor: 64 bytes; seq is position + 1, written last by the producer. */
typedef struct hb_seg_desc {
    _Atomic uint64_t seq;
    uint32_t op;
    uint32_t flags;
    uint64_t coll_id;
    uint64_t epoch;
    uint64_t addr;
    uint64_t len;
    uint32_t rank;
    int32_t status;
    uint64_t arg;
} hb_seg_desc_t;

/* A single-producer single-consumer ring; head and tail count from 0 and never wrap back. */
typedef struct hb_seg_ring {
    _Alignas(HB_SEG_LINE) _Atomic uint64_t head; /* written by the producer */
    _Alignas(HB_SEG_LINE) _Atomic uint64_t tail; /* written by the consumer */
    _Alignas(HB_SEG_LINE) hb_seg_desc_t slot[];
} hb_seg_ring_t;

/* A mapped segment. */
typedef struct hb_seg {
    void *base;
    size_t size;
    int fd; /* the memfd (owned), or -1 */
    hb_seg_layout_t lay;
    uint64_t job_id;
    uint32_t node_id, nnodes, gsize;
} hb_seg_t;

/* Pure: compute the layout. HIBAR_ERR_INVAL when nranks is 0 or above HB_SEG_MAX_RANKS,
 * ring_depth is not a power of two in [MIN_DEPTH, MAX_DEPTH], or buf_size is not a
 * multiple of HB_SEG_LINE in [MIN_BUF, MAX_BUF]. */
int hb_seg_layout_compute(uint32_t nranks, uint32_t ring_depth, uint64_t buf_size,
                          hb_seg_layout_t *lay_p);

/* Pure: checksum of a header description (over every field before `check`). */
uint32_t hb_seg_hdr_checksum(const hb_seg_desc_hdr_t *d);

/* Write a fresh header and zero the rest of [base, base + lay->total_size). */
void hb_seg_format(void *base, const hb_seg_layout_t *lay, uint64_t job_id, uint32_t node_id,
                   uint32_t nnodes, uint32_t gsize);

/* Check a mapped segment of `mapped` bytes. HIBAR_ERR_PROTO on any inconsistency (logged
 * once), HIBAR_ERR_INVAL on NULL. Sets *lay_p on success. */
int hb_seg_validate(const void *base, size_t mapped, hb_seg_layout_t *lay_p);

/* Create a sealed memfd "hibar-seg-<job>" holding a formatted segment and map it. For hibard,
 * tests and hibar-bench. gsize: ranks of the job on all nodes (0: nranks). */
int hb_seg_create(uint32_t nranks, uint32_t ring_depth, uint64_t buf_size, uint64_t job_id,
                  uint32_t node_id, uint32_t nnodes, uint32_t gsize, hb_seg_t *seg_p);

/* Map a segment fd received from the daemon (dup'ed: the caller keeps its fd). Requires the
 * memfd to be sealed against shrinking (otherwise a truncate could SIGBUS the client). */
int hb_seg_map(int fd, hb_seg_t *seg_p);

/* Unmap and close. Safe on a zeroed or already unmapped segment. */
void hb_seg_unmap(hb_seg_t *seg);

static inline hb_seg_hdr_t *hb_seg_hdr(const hb_seg_t *seg)
{
    return (hb_seg_hdr_t *)seg->base;
}
static inline hb_seg_ctl_t *hb_seg_ctl(const hb_seg_t *seg, uint32_t rank)
{
    return (hb_seg_ctl_t *)((char *)seg->base + seg->lay.off_ctl + rank * sizeof(hb_seg_ctl_t));
}
static inline hb_seg_group_t *hb_seg_group(const hb_seg_t *seg, uint32_t g)
{
    return (hb_seg_group_t *)((char *)seg->base + seg->lay.off_tree + g * sizeof(hb_seg_group_t));
}
static inline uint64_t *hb_seg_counts(const hb_seg_t *seg)
{
    return (uint64_t *)((char *)seg->base + seg->lay.off_coll);
}
static inline uint64_t *hb_seg_displs(const hb_seg_t *seg)
{
    return hb_seg_counts(seg) + seg->lay.nranks;
}
/* which: 0 = sq (rank -> daemon), 1 = cq (daemon -> rank). */
static inline hb_seg_ring_t *hb_seg_ring(const hb_seg_t *seg, uint32_t rank, int which)
{
    return (hb_seg_ring_t *)((char *)seg->base + seg->lay.off_rings +
                             (2 * (uint64_t)rank + (which ? 1 : 0)) * seg->lay.ring_size);
}
static inline void *hb_seg_buf(const hb_seg_t *seg, uint32_t rank)
{
    return (char *)seg->base + seg->lay.off_bufs + rank * seg->lay.buf_size;
}

/* Producer side: append a copy of *d (its seq is set here). HIBAR_ERR_BUSY when full,
 * HIBAR_ERR_PROTO when the ring's indexes are impossible. Never blocks. */
int hb_seg_ring_push(hb_seg_ring_t *ring, uint32_t depth, const hb_seg_desc_t *d);
/* Consumer side: take the oldest descriptor. HIBAR_ERR_WOULD_BLOCK when empty,
 * HIBAR_ERR_PROTO when indexes or the slot's sequence number are wrong. Never blocks. */
int hb_seg_ring_pop(hb_seg_ring_t *ring, uint32_t depth, hb_seg_desc_t *d_p);
/* Descriptors waiting (0 if the indexes are impossible). */
uint64_t hb_seg_ring_count(hb_seg_ring_t *ring, uint32_t depth);

/* Daemon side of the multi-node barrier: publish `epoch` as released and wake the waiters. */
void hb_seg_release(hb_seg_t *seg, uint64_t epoch);
/* The same, after storing how the epoch ended (0 or a HIBAR_ERR_*) for the ranks to read. */
void hb_seg_release_status(hb_seg_t *seg, uint64_t epoch, int status);
/* Rank side: how a released epoch ended (0 or a HIBAR_ERR_*; PROTO if the daemon wrote
 * something impossible). Only meaningful when nnodes > 1. */
int hb_seg_epoch_status(const hb_seg_t *seg, uint64_t epoch);

/* Daemon side, after its doorbell (eventfd) fired: take every descriptor off every rank's
 * sq ring; *epoch_p = the highest NBAR_ARRIVED epoch that matches node_arrived (the node
 * finished that epoch locally; the daemon now runs the inter-node barrier and then calls
 * hb_seg_release), or 0 if none. Other descriptors are counted in *other_p (may be NULL).
 * HIBAR_ERR_PROTO if a ring is corrupt (the rest are still drained). Never blocks. */
int hb_seg_drain_arrivals(hb_seg_t *seg, uint64_t *epoch_p, unsigned *other_p);
/* The same, handing every other descriptor (and the local rank whose ring held it) to fn. */
typedef void (*hb_seg_desc_fn)(const hb_seg_desc_t *d, uint32_t rank, void *arg);
int hb_seg_drain(hb_seg_t *seg, uint64_t *epoch_p, hb_seg_desc_fn fn, void *arg);
/* A subset barrier's answer in sub_go (written by the daemon on multi-node jobs, cleared by
 * the rank before it asks): 24 bits of the set's hash, 24 bits of its sequence (from 1), the
 * negated status in the low 16 bits. A late answer to an earlier request never matches. */
#define HB_SEG_SUB_GO(hash, seq, status)                                                           \
    ((((uint64_t)(hash)&0xffffffu) << 40) | (((uint64_t)(seq)&0xffffffu) << 16) |                  \
     ((uint64_t)(uint32_t)(-(status)) & 0xffffu))
#define HB_SEG_SUB_GO_KEY(go) ((go) >> 16)
/* A rank set's collectives across nodes are counted apart from its barriers (each has its own
 * sequence from 1: the set's barrier engine numbers only the barriers), under the set's hash
 * with this salt: the count's key in the rank and the key of the daemon's answer in sub_go. */
#define HB_SEG_SUBCOLL_SALT 0x9e3779b97f4a7c15ull
/* The tag of a rank set's collective (hb_ncoll_subset: coll_seq and epoch of every member's
 * record): bit 63 (never a node barrier's epoch: a daemon tells collectives from barriers by
 * it), 31 bits of the set's hash folded, the set's count once the collective is counted. */
#define HB_SEG_SUB_TAG(hash, seq)                                                                  \
    ((1ull << 63) | ((uint64_t)((uint32_t)((hash) ^ ((hash) >> 32)) & 0x7fffffffu) << 32) |        \
     (uint64_t)(uint32_t)(seq))

/* Mark the job broken because `rank` was lost (first caller wins; -1: the daemon was, which
 * the caller logs) and wake every sleeper. */
void hb_seg_mark_broken(hb_seg_t *seg, int32_t rank);

#endif
