/* hbd_cron.h: the one periodic place: heartbeats, timeouts and retries, and the loop's timers. */
#ifndef HBD_CRON_H
#define HBD_CRON_H

#include <stdint.h>

#include "hbd.h"

/*
 * The tick runs while something needs it: until the daemon is ready (every 20 ms: the
 * transport's retries), and while some registered work says it has something in flight
 * (every heartbeat interval, 10 ms to 1 s: its timeouts, then the transport's heartbeats). An
 * idle, linked daemon has no timer at all; hbd_cron_arm starts the tick again. The work is
 * registered with hbd_hooks_cron (hbd_hooks.h): fn(d, now) checks its deadlines against now and
 * returns 1 while it has something in flight.
 */
/* Work with a deadline started: make sure the tick runs (first look one period from now). */
void hbd_cron_arm(hbd_t *d);
/* One tick at time now: retries, the registered work, heartbeats. 1 while it must come back. */
int hbd_cron_run(hbd_t *d, uint64_t now);
/* The tick on d->base, first at the loop's start. 0 or NOMEM. */
int hbd_cron_start(hbd_t *d);
void hbd_cron_stop(hbd_t *d);

/* A one-shot timer of a module, on the loop: fn(d, arg) once it expires. */
typedef struct hbd_timer hbd_timer_t;
typedef void (*hbd_timer_fn)(hbd_t *d, void *arg);
/* NULL without memory. */
hbd_timer_t *hbd_timer_new(hbd_t *d, hbd_timer_fn fn, void *arg);
/* Expire usec from now, unless armed already (reset: armed again from now). NULL: no-op. */
void hbd_timer_arm(hbd_timer_t *t, uint64_t usec, int reset);
int hbd_timer_pending(const hbd_timer_t *t);
/* Disarm and free (NULL ok). */
void hbd_timer_free(hbd_timer_t *t);

#endif
