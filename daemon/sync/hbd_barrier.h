/* hbd_barrier.h: the barrier engine (hier state machine + hwbarrier + wire). */
#ifndef HBD_BARRIER_H
#define HBD_BARRIER_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_reply.h"

int hbd_barrier_init(hbd_t *d);
void hbd_barrier_fini(hbd_t *d);
/* Control command "barrier <coll_id>": reply to conn when the barrier completes. */
void hbd_barrier_request(hbd_t *d, hbd_reply_t *conn, uint64_t coll_id);
/* Barrier coll_id of job `job` (0: the cluster's engine) for a daemon-internal user (PMIx fence,
 * libhibar ranks): cb(d, coll_id, status, arg) is called exactly once when it completes or fails
 * (possibly before this returns), unless this returns an error (PEER_LOST, NOT_INIT, NOT_FOUND:
 * no engine for the job here, BUSY: id already in flight, NOMEM). A job's ids count from 0. */
typedef void (*hbd_barrier_cb_t)(hbd_t *d, uint64_t coll_id, int status, void *arg);
int hbd_barrier_start(hbd_t *d, uint32_t job, uint64_t coll_id, hbd_barrier_cb_t cb, void *arg);

/* Chassis-barrier sync numbers: the cluster engine's, the range jobs get theirs from (the
 * cluster's root daemon hands them out per chassis, hbd_slot.h), and the T_IB probe's (15). */
#define HBD_CLUSTER_NSYNC 4
#define HBD_SYNC_JOB_FIRST HBD_CLUSTER_NSYNC
#define HBD_SYNC_JOB_END 15
/* Open job `job`'s engine on this node (a member: member[self] != 0) over the job's view
 * (hb_topo_restrict of member[n_nodes]), with chassis-barrier sync numbers sync_base ..
 * sync_base + n_sync - 1, the same on every node of the job. Messages that came for it before
 * are delivered now. 0, or INVAL, EXISTS, CONFIG, NOMEM with err filled. */
int hbd_barrier_job_open(hbd_t *d, uint32_t job, const uint8_t *member, uint32_t sync_base,
                         uint32_t n_sync, char *err, size_t cap);
/* Close it: barriers still in flight fail with UNAVAIL; later messages for it are dropped. The
 * engine stays (hbd_barrier_job_busy) until its sync numbers are clean: a failed job may have
 * left a chassis round open. The relay reads every member's round counts once the job stopped
 * everywhere, and gives each its verdict: the sync numbers (bit s) where it must arrive once
 * more; the engine goes once those rounds and its own pending ones ended (or after the
 * barrier timeout, logged). */
void hbd_barrier_job_close(hbd_t *d, uint32_t job);
int hbd_barrier_job_busy(const hbd_t *d, uint32_t job);
/* Is node `node` a member of job `job` (1 when the job has no engine here: unknown)? */
int hbd_barrier_job_has(const hbd_t *d, uint32_t job, uint32_t node);
/* The jobs whose engines are open here (closing ones too: their sync numbers are held until
 * drained): up to max job numbers into jobs[], their count. */
uint32_t hbd_barrier_job_list(const hbd_t *d, uint32_t *jobs, uint32_t max);
/* Its sync numbers and the chassis rounds this node arrived at on each. 0 or NOT_FOUND. */
int hbd_barrier_job_counts(const hbd_t *d, uint32_t job, uint32_t *base_p, uint32_t *n_p,
                           uint32_t counts[16]);
void hbd_barrier_job_drain(hbd_t *d, uint32_t job, uint64_t syncs);
/*
 * Subset barriers across nodes (libhibar's hibar_barrier_subset, doc/design.md section 7.3):
 * one engine per rank set of a job, opened on first use on each of the set's nodes, over the
 * nodes member[n_nodes] (this node among them) as a tree of one-node chassis (no chassis-barrier
 * sync number: every member node can run any number of them beside the job's own engine, in
 * any order). The set is named by `key` (its hash; every node computes the same from the set),
 * on the wire by its 32-bit fold (hbd_barrier_sub_tag_of), and its barriers by seq = 1, 2, ...
 * in the order its ranks call them; the engine's collective ids are hbd_barrier_sub_id(tag,
 * seq), so every member node agrees on engine and ids without a message. cb as
 * hbd_barrier_start. Errors: INVAL (seq 0 or beyond HBD_BARRIER_SUB_SEQ_MAX, not a member),
 * NOT_FOUND (no engine for the job here), PEER_LOST (a node of the job is lost), MISMATCH
 * (another rank set or node set of the job has the same tag here), BUSY (seq in flight or
 * past), NOMEM. The engines close with the job's (hbd_barrier_job_close).
 */
#define HBD_BARRIER_SUB_BIT (1ull << 63)
#define HBD_BARRIER_SUB_SEQ_MAX 0x7fffffffu
static inline uint64_t hbd_barrier_sub_id(uint32_t tag, uint32_t seq)
{
    return HBD_BARRIER_SUB_BIT | (uint64_t)tag << 31 | (seq & HBD_BARRIER_SUB_SEQ_MAX);
}
static inline uint32_t hbd_barrier_sub_tag(uint64_t coll)
{
    return (uint32_t)(coll >> 31);
}
static inline uint32_t hbd_barrier_sub_tag_of(uint64_t key)
{
    return (uint32_t)(key ^ (key >> 32));
}
int hbd_barrier_sub_start(hbd_t *d, uint32_t job, uint64_t key, const uint8_t *member, uint32_t seq,
                          hbd_barrier_cb_t cb, void *arg);
/* Job engines open here. */
uint32_t hbd_barrier_n_jobs(const hbd_t *d);
/* Control command "tib <n>": n chassis barriers through the hwbarrier, reply the median, and
 * the last round's arrival and completion on CLOCK_MONOTONIC (arrived=NS done=NS). */
void hbd_barrier_tib(hbd_t *d, hbd_reply_t *conn, uint32_t n);
/* The hwbarrier fd is readable. */
void hbd_barrier_on_hwb(hbd_t *d);
/* Something of a collective happened (a frame, a doorbell): the loop polls for the policy's
 * yield time from now on (the poll stage, doc/design.md section 6.1) instead of sleeping. */
void hbd_poll_kick(hbd_t *d);
/* Whether the ranks should sleep (not yield) while this daemon runs their epochs: its loop does
 * not spin, and `poll` says so or the node has at least two busy processes to a core
 * (doc/design.md section 6.1). */
int hbd_barrier_ranks_sleep(hbd_t *d);
/* Barriers in flight (for stats). */
uint32_t hbd_barrier_in_flight(const hbd_t *d);
/* Messages the barrier engine dropped (wrong job/epoch, role, duplicate, order, stale,
 * window) and events for collectives that had already failed. */
void hbd_barrier_drops(const hbd_t *d, uint64_t *dropped_p, uint64_t *late_p);
/* The next collective id the cluster engine expects here (ids are consecutive from 0). */
uint64_t hbd_barrier_next_coll(const hbd_t *d);

#endif
