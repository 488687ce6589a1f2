/* hbd_relay.h: launch forwarding: a job handed to one daemon runs on every node of the cluster. */
#ifndef HBD_RELAY_H
#define HBD_RELAY_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_reply.h"

/* Control command "run SPEC": this daemon becomes the job's origin. It takes the connection
 * over (hbd_reply_detach), forwards the spec to every other node over the daemons' links, starts
 * its own ranks, and streams every node's launcher lines to the connection, each prefixed with
 * the node id (see hbd_relay.c). Errors before the job starts: one "err" reply. */
void hbd_relay_run(hbd_t *d, hbd_reply_t *conn, const char *spec_path);
/* Take the JOB frames and lost-node news (hbd_net): a lost node stops every relayed job
 * here; the origin reports it. 0 or NOMEM. */
int hbd_relay_init(hbd_t *d);
/* JOB frames that were well formed but did not fit the relay's state (unknown job, chunk out of
 * order, not for a job this node originated): dropped and counted. */
uint64_t hbd_relay_drops(const hbd_t *d);
/* Frames sent again after losses (a member's OUT and END, an origin's DRAIN): a dead daemon on
 * the way may have taken them. */
uint64_t hbd_relay_resent(const hbd_t *d);
/* A member's OUT and END frames the origin has not acknowledged yet (the send log). */
uint32_t hbd_relay_unacked(const hbd_t *d);
/* Relayed jobs this daemon takes part in (status). */
uint32_t hbd_relay_n_jobs(const hbd_t *d);
/* Of those, the ones whose part here ended and whose sync numbers wait for the origin's verdict
 * (DRAIN) and their drain. */
uint32_t hbd_relay_draining(const hbd_t *d);
/* Control command "jobs" (the cluster's root daemon only: it holds every job's slot): "ok jobs=N"
 * then, per running job, " job=NUM:ID:ORIGIN:RANKS:NODES:AGE_MS:BASE+COUNT" with NODES the
 * node ids as ranges "a-b.c" (newest first), then " lost=a.b" when nodes are known lost;
 * elsewhere an err naming the root. */
void hbd_relay_jobs(hbd_t *d, hbd_reply_t *r);
/* Daemon shutdown: tell hibar-run, free everything (before the launcher stops its jobs). */
void hbd_relay_fini(hbd_t *d);

#endif
