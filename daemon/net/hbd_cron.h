/* hbd_cron.h: the one periodic place: heartbeats, timeouts and retries, on an hbd_timer_t. */
#ifndef HBD_CRON_H
#define HBD_CRON_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_timer.h" /* the modules' one-shot timers: the same mechanism as the tick */

/*
 * The tick runs while something needs it: until the daemon is ready (every 20 ms: the
 * transport's retries), and while some registered work says it has something in flight or a
 * peer is lost or not linked (every heartbeat interval, 10 ms to 1 s: its timeouts, the HELLO
 * a peer may come back through, then the transport's heartbeats). An idle daemon whose peers
 * are all linked has no timer at all; hbd_cron_arm starts the tick again. The work is
 * registered with hbd_hooks_cron (hbd_hooks.h): fn(d, now) checks its deadlines against now and
 * returns 1 while it has something in flight.
 */
/* Work with a deadline started: make sure the tick runs (first look one period from now). */
void hbd_cron_arm(hbd_t *d);
/* One tick at time now: retries, the registered work, heartbeats. 1 while it must come back. */
int hbd_cron_run(hbd_t *d, uint64_t now);
/* The tick (an hbd_timer_t), first at the loop's start. 0 or NOMEM. */
int hbd_cron_start(hbd_t *d);
void hbd_cron_stop(hbd_t *d);

#endif
