/* hbd_timer.h: the daemon's one timer: a one-shot timer on the loop (the cron's tick is one). */
#ifndef HBD_TIMER_H
#define HBD_TIMER_H

#include <stdint.h>

#include "hbd.h"

/*
 * Every deadline of the daemon is an hbd_timer_t: the cron's tick (hbd_cron.c: heartbeats,
 * retries, the registered timeouts) and the modules' own (fence retries and checks, collective
 * and relay queues, dmodex waits, PMIx PMIX_TIMEOUT and registration timeouts, the launcher's
 * SIGTERM / SIGKILL escalation, the probes' pacing, the fast lane's authentication wait, a
 * rank's HELLO wait on the ranks socket). It is here, at the bottom, so that every layer may
 * use it (the fast lane is below the cron); the tests' fake (tests/hbd_fake.c) implements it
 * on the fake clock.
 *
 * What stays a libevent event of its own (fd readiness, the barrier's yield stage) is listed,
 * with the reason, in hbd.h.
 */
typedef struct hbd_timer hbd_timer_t;
typedef void (*hbd_timer_fn)(hbd_t *d, void *arg);
/* A timer calling fn(d, arg) once it expires (it may arm or free itself there). NULL without
 * memory. */
hbd_timer_t *hbd_timer_new(hbd_t *d, hbd_timer_fn fn, void *arg);
/* Expire usec from now, unless armed already (reset: armed again from now). NULL: no-op. */
void hbd_timer_arm(hbd_timer_t *t, uint64_t usec, int reset);
/* Disarm: it does not expire until armed again. NULL: no-op. */
void hbd_timer_cancel(hbd_timer_t *t);
int hbd_timer_pending(const hbd_timer_t *t);
/* Disarm and free (NULL ok). */
void hbd_timer_free(hbd_timer_t *t);

#endif
