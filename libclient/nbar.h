/* nbar.h: the intra-node barrier (hwloc-shaped combining tree, split-phase, subsets), hb_nbar_*. */
#ifndef HB_NBAR_H
#define HB_NBAR_H

#include "seg.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Fan-in: a combining tree. Ranks that share a core, then an L2, an L3, a NUMA node (the
 * hwloc keys each rank publishes in the segment) form the lowest groups; groups are cut to at
 * most `radix` members and combined upwards the same way; ranks without binding fall back to
 * a radix-ary tree in rank order. Each group has a counter in the segment that only grows:
 * epoch s is complete at group g when its counter reaches s * size(g). The unit whose
 * increment completes a group carries the arrival one level up, so arriving never waits
 * (that is what makes the split-phase barrier possible).
 *
 * Fan-out: the unit that completes the top group publishes the epoch in the segment's
 * release word and wakes sleepers (one futex wake for all). A tree fan-out would put one
 * wake-up per level on the critical path, which is what costs most when ranks outnumber
 * cores. With nnodes > 1 the top instead posts an NBAR_ARRIVED descriptor on its ring,
 * writes node_arrived and rings the daemon's doorbell; the daemon runs the inter-node
 * barrier and publishes the release (hb_seg_release).
 *
 * Small single-node jobs (nranks <= flat_max, default 4) skip the tree: each rank publishes
 * its epoch in its own control line and waits until every rank's epoch has reached its own,
 * sleeping (when it must) on the wake word of the first rank still missing. Nothing is
 * written by anyone but the arriving rank, so the critical path is one cache-line transfer.
 *
 * Epochs (sequence numbers) only grow; nothing is reset between barriers.
 *
 * Waiting follows hb_wait (spin, yield, futex). When the node has more ranks than CPUs the
 * spin stage is skipped (unless HIBAR_WAIT_SPIN_US says otherwise): spinning then only keeps
 * the rank we wait for off the CPU.
 */

#define HB_NBAR_NONE UINT32_MAX
#define HB_NBAR_DEFAULT_RADIX 4u

typedef struct hb_nbar_tree {
    uint32_t nranks;
    uint32_t ngroups;
    uint32_t *rank_group;   /* group rank r arrives at; HB_NBAR_NONE if nranks == 1 */
    uint32_t *group_parent; /* parent of group g; HB_NBAR_NONE for the top */
    uint32_t *group_size;   /* units (ranks or groups) arriving at group g */
} hb_nbar_tree_t;

/* Pure: build the tree from each rank's keys (keys[r][0..HB_SEG_NKEYS-1], coarse to fine,
 * HB_SEG_KEY_NONE = unknown) and the radix (>= 2). HIBAR_ERR_INVAL, HIBAR_ERR_NOMEM. */
int hb_nbar_tree_build(uint32_t nranks, const uint32_t (*keys)[HB_SEG_NKEYS], uint32_t radix,
                       hb_nbar_tree_t *t_p);
void hb_nbar_tree_free(hb_nbar_tree_t *t);
/* Levels from rank r to the top (0 when nranks == 1). */
uint32_t hb_nbar_tree_depth(const hb_nbar_tree_t *t, uint32_t r);

/* This process's hwloc keys (NUMA, L3, L2, core of its CPU binding); HB_SEG_KEY_NONE for a
 * level the binding does not fit in (e.g. an unbound process gets only NONE). */
void hb_nbar_keys_local(uint32_t keys[HB_SEG_NKEYS]);

typedef struct hb_nbar_sub {
    uint64_t hash;
    uint32_t epoch;
} hb_nbar_sub_t;

/* One rank's barrier state. Not thread-safe (the public API guards it). */
typedef struct hb_nbar {
    hb_seg_t *seg;
    uint32_t rank, nranks;
    uint32_t grank;  /* the rank in the job (subset barriers across nodes) */
    int doorbell_fd; /* the daemon's eventfd, or -1 (single-node job) */
    hb_nbar_tree_t tree;
    uint64_t seq;        /* last epoch this rank arrived at */
    uint64_t done;       /* last epoch this rank saw released */
    uint64_t split;      /* the epoch of an outstanding split-phase barrier (0: none): its
                          * caller waits for it, hb_nbar_settle does not */
    uint64_t timeout_ns; /* per wait; 0 = wait as long as the peers live */
    uint64_t last_check_ns;
    int flat;         /* every rank polls every rank (small single-node jobs) */
    int wake_pending; /* flat: bar_wake still to be bumped for our last arrival */
    hb_wait_policy_t pol;
    int yield_set; /* the user set HIBAR_WAIT_YIELD_US: ranks_sleep does not apply */
    int (*progress)(void *arg); /* hibar_set_progress: called while a wait lasts, or NULL */
    void *progress_arg;
    hb_nbar_sub_t *subs; /* subset barriers seen: hash of the rank set -> epoch */
    size_t nsubs, cap;
    uint64_t *places; /* [nranks] job rank << 32 | place on this node, ascending (hb_nbar_places) */
    int daemon_pid;                  /* the hibard that launched us (0: none to watch) */
    unsigned long long daemon_start; /* its start time (/proc/PID/stat), against pid reuse */
} hb_nbar_t;

/* Build the tree from the keys every rank published (all ranks must be attached). */
int hb_nbar_init(hb_nbar_t *b, hb_seg_t *seg, uint32_t rank, int doorbell_fd, uint32_t radix,
                 uint32_t flat_max, uint64_t timeout_ns);
#define HB_NBAR_DEFAULT_FLAT_MAX 4u
void hb_nbar_fini(hb_nbar_t *b);

/* Arrive at the next epoch; *epoch_p = that epoch. Does not wait, except for the previous
 * epoch if a wait for it ended early (timeout): arriving twice before a release would
 * corrupt the counters. HIBAR_ERR_PEER_LOST if the job is broken, HIBAR_ERR_IO if the
 * doorbell cannot be rung. */
int hb_nbar_arrive(hb_nbar_t *b, uint64_t *epoch_p);
/* 0 if `epoch` is released, HIBAR_ERR_WOULD_BLOCK if not yet, HIBAR_ERR_PEER_LOST. */
int hb_nbar_test(hb_nbar_t *b, uint64_t epoch);
/* Wait (spin, yield, sleep) until `epoch` is released. HIBAR_ERR_PEER_LOST when a rank of
 * the node died or left; HIBAR_ERR_TIMEOUT after timeout_ns if set. */
int hb_nbar_wait(hb_nbar_t *b, uint64_t epoch);
/* arrive + wait. */
int hb_nbar_barrier(hb_nbar_t *b);
/* Arrive and return at once, for a rank whose part of an operation is over and whose buffers
 * nobody else reads or writes any more (a collective's receiver that has its data): it is not
 * woken by the release, which costs most where ranks outnumber cores. The epoch is left
 * pending: the next arrival waits for its release first, and so must (hb_nbar_settle) anything
 * that touches what the others may still be reading (the segment's records and staging
 * buffers). */
int hb_nbar_arrive_nowait(hb_nbar_t *b);
/* Wait for the release of this rank's last epoch if it has not seen it (0 if it has), unless
 * that is the outstanding split-phase barrier's (split): its wait is its caller's, and the
 * epochs before it were waited out when it arrived. */
int hb_nbar_settle(hb_nbar_t *b);
/* Barrier among `n` distinct local ranks (this rank among them, any order); the lowest
 * rank leads. HIBAR_ERR_INVAL for a bad set. On a job across nodes (segment nnodes > 1) the
 * ranks are job ranks: each member posts an HB_SEG_OP_SUBSET descriptor and rings the
 * daemon, which answers when every member on every node has arrived (HIBAR_ERR_MISMATCH
 * when members of one node disagree on the set). */
int hb_nbar_subset(hb_nbar_t *b, const uint32_t *ranks, size_t n);
/* The places on this node (control blocks) of the job ranks listed, in at[] in the same order:
 * 1 when every one runs on this node, else 0 (at[] then partly written). */
int hb_nbar_places(const hb_nbar_t *b, const uint32_t *ranks, size_t n, uint32_t *at);
/* A rank set's check: distinct job ranks of the job, this rank among them; sorted[] (n) gets
 * them ascending. 0 or HIBAR_ERR_INVAL. */
int hb_nbar_set_check(const hb_nbar_t *b, const uint32_t *ranks, size_t n, uint32_t *sorted);
/* FNV-1a 64 of n job ranks as given: a rank set's hash (its ranks sorted ascending; also the
 * order of a member list as listed), and how many subset barriers this rank made over the set
 * with that hash (every member counts alike). */
uint64_t hb_nbar_set_hash(const uint32_t *ranks, size_t n);
/* qsort's comparison of two uint32_t (rank sets are sorted with it). */
int hb_nbar_u32_cmp(const void *a, const void *b);
uint32_t hb_nbar_set_count(const hb_nbar_t *b, uint64_t hash);
/* A rank set across nodes, through the daemon: push a descriptor (op HB_SEG_OP_SUBSET: ranks
 * is the sorted set; HB_SEG_OP_SUBCOLL: the member list in its order, the collective's record
 * published first), ring the doorbell and wait for the answer in sub_go. The set's count of
 * barriers (hb_nbar_set_count(b, hash)) or of collectives (hb_nbar_set_count(b, hash ^
 * HB_SEG_SUBCOLL_SALT)) goes up by one. */
int hb_nbar_subset_daemon(hb_nbar_t *b, uint32_t op, const uint32_t *ranks, size_t n,
                          uint64_t hash);

/* A rank of the node (not this one) that is dead or has left, or -1. Marks nothing. */
int hb_nbar_find_lost(hb_nbar_t *b);
/* Is process `pid` gone (no such process, or a zombie)? */
int hb_nbar_pid_dead(int pid);
/* Watch the daemon `pid` (the peer of the ranks socket) from now on: every wait's liveness
 * check (about every 10 ms once it stops spinning) also looks at it, and once it is gone (or
 * its pid belongs to a newer process) the wait returns HIBAR_ERR_PEER_LOST and the node's
 * segment is marked broken. */
void hb_nbar_watch_daemon(hb_nbar_t *b, int pid);

#endif
