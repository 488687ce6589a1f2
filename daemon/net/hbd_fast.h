/* hbd_fast.h: the fast lane, barrier tokens (and plain data) on a polled TCP connection per
 * neighbour. */
#ifndef HBD_FAST_H
#define HBD_FAST_H

#include <stdint.h>

#include "hbd.h"

/* Listen on address (0 when off, fast_lane: off); settled(d) is called whenever a link came up
 * or failed for good (the transport then checks whether it is ready). */
int hbd_fast_start(hbd_t *d, const char *address, void (*settled)(hbd_t *d));
void hbd_fast_stop(hbd_t *d);
uint32_t hbd_fast_port(const hbd_t *d); /* 0 when off */
/* A HELLO from p announced its fast lane at `port` (0: none): connect (higher id: to host, its
 * address, NULL when not known) or wait. */
void hbd_fast_on_hello(hbd_t *d, hbd_peer_t *p, uint32_t port, const char *host);
/* 1 when p's fast link is up, or will not come up (tokens then go through ZeroMQ). */
int hbd_fast_settled(const hbd_t *d, const hbd_peer_t *p);
/* Send a frame on the fast lane: HIER always, COLL and FENCE with data_plane plain; its encoded
 * header, then the payload in two parts, not copied unless the socket is full. 0;
 * HB_ERR_UNAVAIL when that
 * neighbour has no fast link for it (use ZeroMQ, then call hbd_fast_note_zmq);
 * HB_ERR_WOULD_BLOCK (data only: much unsent, retry later); HB_ERR_PEER_LOST when the
 * link failed. */
int hbd_fast_send(hbd_t *d, uint32_t to, uint8_t type, const uint8_t hdr[HBD_WIRE_HDR_LEN],
                  const void *p1, uint32_t l1, const void *p2, uint32_t l2);
/* A frame of type's class (barrier tokens, or data) to `to` went through ZeroMQ: from now on
 * all of that class do (order). */
void hbd_fast_note_zmq(hbd_t *d, uint32_t to, uint8_t type);
/* The link starts over (a new incarnation at either end): closed, and set up again from the
 * next HELLO. */
void hbd_fast_peer_reset(hbd_t *d, hbd_peer_t *p);
void hbd_fast_peer_down(hbd_t *d, hbd_peer_t *p);

#endif
