/* hbd_fence.h: fence with data across nodes (gather up the chassis tree, release down). */
#ifndef HBD_FENCE_H
#define HBD_FENCE_H

#include <stddef.h>
#include <stdint.h>

#include "hbd.h"

/* Completion: status 0 and the concatenation of every node's blob (malloc'd, the callee
 * frees it), or a negative status and NULL. */
typedef void (*hbd_fence_cb_t)(hbd_t *d, int status, uint8_t *data, size_t len, void *arg);
/* Fence ids with this bit are subset fences (star through the lowest participant node). */
#define HBD_FENCE_ID_SUBSET (1ull << 62)
/* The id of a job's k-th fence with data over all its ranks. A job on part of the cluster
 * (whole 0) fences among its nodes as a subset fence; bit 61 tells those from the rank-subset
 * fences of hbd_pmix.c, whose hash has 37 bits. */
static inline uint64_t hbd_fence_job_id(uint64_t job_id, uint64_t k, int whole)
{
    uint64_t id = (1ull << 63) | ((job_id & 0xffffffffffull) << 20) | (k & 0xfffffu);
    return whole ? id : id | HBD_FENCE_ID_SUBSET | (1ull << 61);
}
/* This node's contribution to fence coll (copied). nodes: NULL for a whole-job fence (every
 * node of the cluster: direct exchange up to HIBAR_FENCE_DIRECT_MAX nodes, else the chassis
 * tree), else the participating nodes of a subset fence, ascending, this node among them
 * (coll must have HBD_FENCE_ID_SUBSET). timeout_ms: 0 for the cluster's barrier_timeout_ms.
 * cb is called exactly once, possibly before this returns, unless it returns an error
 * (PEER_LOST, NOT_INIT, BUSY, NOMEM, INVAL). Every node gets the same concatenation. */
int hbd_fence_start(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                    uint32_t timeout_ms, const void *data, size_t len, hbd_fence_cb_t cb,
                    void *arg);
/* The same without the copy: data (malloc'd, or NULL when len is 0) is taken over in every
 * case, also when this returns an error. */
int hbd_fence_start_owned(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                          uint32_t timeout_ms, void *data, size_t len, hbd_fence_cb_t cb,
                          void *arg);
/* What a node sends one child of the tree when a fence's release goes down: the whole
 * concatenation `all` (return 0), or a part of it for the nodes at and below `kid` (return 1,
 * *out malloc'd, freed by the engine), or fail the fence (a negative status). star: a subset
 * fence, whose kids have no nodes below them. The kid's own release and what it passes on are
 * then made from that part, so a trim must accept its own output as `all`. Nothing is trimmed
 * with the direct exchange (no release goes down). */
typedef int (*hbd_fence_trim_t)(hbd_t *d, void *arg, int star, uint32_t kid, const uint8_t *all,
                                size_t len, uint8_t **out, size_t *out_len);
/* hbd_fence_start_owned with a trim of the release (called with cb's arg), or NULL. */
int hbd_fence_start_trimmed(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                            uint32_t timeout_ms, void *data, size_t len, hbd_fence_trim_t trim,
                            hbd_fence_cb_t cb, void *arg);
/* Is `node` the fence tree's `kid` or below it (star: kid alone)? */
int hbd_fence_under(const hbd_t *d, int star, uint32_t kid, uint32_t node);
/* Do whole-job fences of this cluster exchange directly (2..HIBAR_FENCE_DIRECT_MAX nodes)? */
int hbd_fence_direct(const hbd_t *d);
/* Links to every node that a direct-exchange fence needs, made now (a job is being set up) so
 * its first fence does not wait for them. No-op for clusters that use the tree. */
void hbd_fence_prelink(hbd_t *d);
/* Control command "fence_stats": "ok" then per link "NODE:TX_UP:TX_DOWN:RX_UP:RX_DOWN" (fence
 * data bytes sent to / received from that node since the daemon started). */
void hbd_fence_stats(hbd_t *d, char *buf, size_t cap);
/* HIBAR_FENCE_PROF set: a stderr line "fprof NODE STAGE COLL T_NS" (profiling the fence path). */
void hbd_fence_prof(const hbd_t *d, const char *stage, uint64_t coll);
/* Take the FENCE frames (hbd_net). */
int hbd_fence_init(hbd_t *d);
/* Fail every fence in flight with UNAVAIL (shutdown). */
void hbd_fence_fini(hbd_t *d);

#endif
