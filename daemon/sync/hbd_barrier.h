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
/* Barrier coll_id for a daemon-internal user (PMIx fence): cb(d, coll_id, status, arg) is
 * called exactly once when it completes or fails (possibly before this returns), unless this
 * returns an error (PEER_LOST, NOT_INIT, BUSY: id already in flight, NOMEM). */
typedef void (*hbd_barrier_cb_t)(hbd_t *d, uint64_t coll_id, int status, void *arg);
int hbd_barrier_start(hbd_t *d, uint64_t coll_id, hbd_barrier_cb_t cb, void *arg);
/* Control command "tib <n>": n chassis barriers through the hwbarrier, reply the median, and
 * the last round's arrival and completion on CLOCK_MONOTONIC (arrived=NS done=NS). */
void hbd_barrier_tib(hbd_t *d, hbd_reply_t *conn, uint32_t n);
/* The hwbarrier fd is readable. */
void hbd_barrier_on_hwb(hbd_t *d);
/* Something of a collective happened (a frame, a doorbell): the loop polls for the policy's
 * yield time from now on (the poll stage, doc/design.md section 6.1) instead of sleeping. */
void hbd_poll_kick(hbd_t *d);
/* Barriers in flight (for stats). */
uint32_t hbd_barrier_in_flight(const hbd_t *d);
/* Messages the barrier engine dropped (wrong job/epoch, role, duplicate, order, stale,
 * window) and events for collectives that had already failed. */
void hbd_barrier_drops(const hbd_t *d, uint64_t *dropped_p, uint64_t *late_p);
/* The next collective id this node expects (ids are consecutive from 0). */
uint64_t hbd_barrier_next_coll(const hbd_t *d);

#endif
