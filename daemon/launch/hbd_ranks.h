/* hbd_ranks.h: the libhibar ranks' segment, socket (RUN_DIR/NODE.ranks) and epochs. */
#ifndef HBD_RANKS_H
#define HBD_RANKS_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_job.h"

/* The libhibar ranks' segment, socket (RUN_DIR/NODE.ranks) and epochs. */
int hbd_ranks_start(hbd_t *d);
void hbd_ranks_stop(hbd_t *d);
/* Create the job's segment and doorbell (before its ranks are spawned). 0, NOMEM, IO. */
int hbd_ranks_job_open(hbd_job_t *j);
/* Release them; epochs in flight end without telling the (gone) ranks. */
void hbd_ranks_job_close(hbd_job_t *j);
/* Add HIBAR_SOCKET, HIBAR_RANK and HIBAR_JOB for local rank lr to a malloc'd environment. */
int hbd_ranks_env(hbd_job_t *j, uint32_t lr, char ***env);
/* Local rank lr died or failed: the node's other ranks get HB_ERR_PEER_LOST. */
void hbd_ranks_rank_lost(hbd_job_t *j, uint32_t lr);
/* The job here was broken (a rank died or left, or an epoch failed elsewhere) by something
 * other than local rank lr: lr's failure, seen now, followed the job's. */
int hbd_ranks_broken_before(const hbd_job_t *j, uint32_t lr);

#endif
