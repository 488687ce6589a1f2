/* client.h: libhibar internals shared with tests and hibar-bench (not installed). */
#ifndef HB_CLIENT_H
#define HB_CLIENT_H

#include "hibar.h"
#include "nbar.h"
#include "ncoll.h"
#include "seg.h"

#include <stdint.h>

/*
 * Join the job of an already created segment as `rank`: what hibar_init does once it has the
 * segment (from hibard, an inherited fd, or a singleton). The fds are duplicated; the caller
 * keeps its own. Collective over the segment's ranks (waits for all to attach), blocking.
 * Used directly by the forked test harness and hibar-bench, which stand in for the daemon.
 */
int hb_client_attach(int seg_fd, int doorbell_fd, uint32_t rank, hibar_t **h_p);
/* The same for a segment that is one node's part of a job: `rank` indexes the segment,
 * `grank` is the rank in the job (HB_CONN_RANK_ANY: rank). */
int hb_client_attach_job(int seg_fd, int doorbell_fd, uint32_t rank, uint32_t grank, hibar_t **h_p);

/* The handle's segment and barrier (tests and benchmarks look inside). */
hb_seg_t *hb_client_seg(hibar_t *h);
hb_nbar_t *hb_client_nbar(hibar_t *h);
/* Non-zero if every rank of the node can use cross-memory attach. */
int hb_client_cma(hibar_t *h);

#endif
