/* hbd_launch.h: the local launcher: spawns this node's ranks of a job, streams their output. */
#ifndef HBD_LAUNCH_H
#define HBD_LAUNCH_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_job.h"
#include "hbd_reply.h"

/* Control command "launch SPEC": takes the connection over (hbd_reply_detach), spawns this
 * node's ranks and streams to it (see hbd_launch.c for the lines). */
void hbd_launch_request(hbd_t *d, hbd_reply_t *conn, const char *spec_path);
/* A child may have exited (SIGCHLD): reap every one of ours. */
void hbd_launch_reap(hbd_t *d);
/* Stop the job: SIGTERM to every rank's process group, SIGKILL after a grace period. */
void hbd_launch_kill(hbd_job_t *j, const char *why);
/* Rank events from the PMIx server (on the loop). */
hbd_job_t *hbd_launch_job_find(const char *nspace);
hbd_rank_t *hbd_launch_rank_find(hbd_job_t *j, uint32_t rank);
void hbd_launch_on_abort(hbd_rank_t *r, int status, const char *msg);
/* Stop every job and free it (daemon shutdown). */
void hbd_launch_stop_all(hbd_t *d);
/* The job list (for the PMIx upcalls). */
extern hbd_job_t *hbd_launch_jobs;

/* Ranks of the jobs running on this node (the waiting rule counts them). */
uint32_t hbd_launch_local_ranks(void);

#endif
