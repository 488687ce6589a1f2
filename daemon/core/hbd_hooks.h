/* hbd_hooks.h: the tables through which a lower layer reaches the layers above: frame handlers,
 * lost-node subscribers and the cron's work, registered by the services at their start. */
#ifndef HBD_HOOKS_H
#define HBD_HOOKS_H

#include <stdint.h>

#include "hbd.h"

/* The handler of frames of wire type `type` (on_seg: COLL frames whose data lies apart). */
void hbd_hooks_frame(hbd_t *d, uint8_t type, hbd_net_rx_fn on_msg, hbd_net_seg_fn on_seg);
/* A subscriber for lost nodes, called by ascending order (then as registered). 0, or NOMEM
 * when the table is full. */
int hbd_hooks_lost(hbd_t *d, hbd_net_lost_fn fn, int order);
/* Node `node` is lost: it joins d->lost_set (the first loss also sets d->lost, lost_node) and
 * every subscriber is told, each loss once; a subscriber ends what involves that node (the
 * jobs on it), `first` says whether it is the cluster's first loss. Returns 1 for a loss not
 * known before (the transport floods it), else 0. */
int hbd_hooks_lost_run(hbd_t *d, uint32_t node, int status);
/* A subscriber for nodes that come back (restarted, or rejoined after being taken for lost). */
int hbd_hooks_join(hbd_t *d, hbd_net_join_fn fn);
/* Node `node` is up again at incarnation `inc`, newer than any known of it (a loss of an
 * incarnation is final): it leaves d->lost_set (d->lost clears with the last lost node) and
 * every subscriber is told. Returns 1 when that changed anything (the transport floods it), 0
 * when it was known. */
int hbd_hooks_join_run(hbd_t *d, uint32_t node, uint64_t inc);
/* Forget every loss this node judged (it was itself taken for lost: its judgement is suspect,
 * its neighbours tell it again what is really lost). */
void hbd_hooks_lost_forget(hbd_t *d);
/* Periodic work for the cron (hbd_cron.h). 0, or NOMEM when the table is full. */
int hbd_hooks_cron(hbd_t *d, hbd_cron_fn fn);
/* A sender of data frames (collective segments, fence data) that queues what a link refused
 * with WOULD_BLOCK: told as soon as a link has room again, instead of at its retry timer. 0,
 * or NOMEM when the table is full. */
int hbd_hooks_room(hbd_t *d, hbd_room_fn fn);
/* Some link that refused a data frame has room again (the transport calls it). */
void hbd_hooks_room_run(hbd_t *d);

#endif
