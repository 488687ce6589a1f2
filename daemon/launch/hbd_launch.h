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
/* Stop the job: SIGTERM to every rank's process group, SIGKILL after a grace period. */
void hbd_launch_kill(hbd_job_t *j, const char *why);
/* Watch SIGCHLD (reaping every rank of ours) and answer the PMIx server's rank events
 * (hbd_job.h). 0 or NOMEM (logged). */
int hbd_launch_start(hbd_t *d);
/* Stop every job (SIGKILL) and free it, the last line to each hibar-run (daemon shutdown). */
void hbd_launch_stop(hbd_t *d);

#endif
