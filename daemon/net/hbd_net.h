/* hbd_net.h: hibard's transport: the ROUTER socket, ZAP handler, monitor, peers, HELLO, failure
 * flood, and the table through which frames reach the services. */
#ifndef HBD_NET_H
#define HBD_NET_H

#include <event2/util.h>
#include <stdint.h>

#include "hbd.h"

/*
 * The transport knows no service: each registers, at its start, a handler per wire type it
 * consumes and a subscriber for lost nodes (hbd_hooks.h); the ZeroMQ link, the data plane and
 * the fast lane all deliver through that table (hbd_deliver, hbd.h). HELLO, HEARTBEAT and
 * ABORT are the transport's own.
 */
int hbd_net_start(hbd_t *d);
void hbd_net_stop(hbd_t *d);
/* Send one frame to neighbour node `to`. 0, HB_ERR_NOT_FOUND (no such neighbour),
 * HB_ERR_PEER_LOST (unreachable), HB_ERR_INVAL. Logged once where it fails. */
int hbd_net_send(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                 const void *payload, uint32_t len);
/* The same with the payload in two parts (e.g. a header and the data it describes), copied
 * once, straight into the message ZeroMQ sends. */
int hbd_net_send2(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                  const void *p1, uint32_t l1, const void *p2, uint32_t l2);
/* The same for a frame of job `job` (the header's job field: a job's barrier engine,
 * hbd_barrier.h); the others carry job 0. */
int hbd_net_send_job(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint32_t job,
                     uint64_t coll_id, const void *p1, uint32_t l1, const void *p2, uint32_t l2);
/*
 * A buffer lent to ZeroMQ without a copy: freed (free(buf)) when its last reference goes,
 * whether that is the run that owns it or the last message ZeroMQ sent from it (its I/O
 * thread drops those). hbd_zc_new takes the first reference; NULL without memory.
 */
typedef struct hbd_zc {
    _Atomic int refs;
    void *buf;
} hbd_zc_t;
hbd_zc_t *hbd_zc_new(void *buf);
void hbd_zc_put(hbd_zc_t *z);
/* A COLL frame: the 40-byte collective header and dlen bytes of data. On the plain data plane
 * with `hold` (which must own the memory data points into) the data goes as a second
 * ZeroMQ frame without being copied; otherwise as hbd_net_send2. Same results. `bulk` (plain
 * data plane only): on the data plane's ZeroMQ link even where the fast lane is up, so that
 * ZeroMQ's I/O thread writes it while the loop goes on (doc/design.md 7.4); a caller sends
 * all of one collective's frames to a node the same way (each path keeps its order). */
int hbd_net_send_coll(hbd_t *d, uint32_t to, uint64_t coll_id, const uint8_t *hdr, const void *data,
                      uint32_t dlen, hbd_zc_t *hold, int bulk);
/* Link to any node on demand (collectives): 0 once linked both ways, HB_ERR_WOULD_BLOCK
 * while the link comes up (call again: it resends HELLO), HB_ERR_PEER_LOST, HB_ERR_IO.
 * hbd_net_send returns HB_ERR_WOULD_BLOCK (nothing sent, nothing logged) when the link is
 * not up yet or the peer's queue is full. */
int hbd_net_link(hbd_t *d, uint32_t node);
int hbd_net_peer_up(hbd_t *d, uint32_t node);
/* A neighbour's host address for a new connection ("10.0.0.2", "::1"): from its endpoint, or
 * where its connection to us came from. 0, or HB_ERR_WOULD_BLOCK when not known yet. */
int hbd_net_peer_host(hbd_t *d, hbd_peer_t *p, char *host, size_t len);
/* Report ready once every neighbour's link (and fast lane) is up or settled. */
void hbd_net_check_ready(hbd_t *d);
/* A node is gone (its link closed, it answered no heartbeat, or an ABORT said so): what involves
 * it ends (the lost subscribers), every node learns it once (ABORT flood, with its
 * incarnation). It comes back when a new incarnation of it (or the same one, after it gave way:
 * doc/design.md section 5.1) says HELLO. */
void hbd_net_peer_lost(hbd_t *d, uint32_t node, int status);
/* This node judges `node` gone (connection closed, heartbeats unanswered, an engine's timeout):
 * hbd_net_peer_lost, except within one heartbeat timeout of this node's own rejoin, when its
 * judgement is stale: the link starts over instead (doc/design.md 5.1). */
void hbd_net_peer_suspect(hbd_t *d, uint32_t node);
/* The cron's calls (hbd_cron.c, the one periodic place). Until the daemon is ready: connect
 * the links that are not up yet, resend HELLO every 200 ms (retries). Once ready: HELLO every
 * 500 ms to each peer that is lost or not linked (a restarted, stopped or cut-off node comes
 * back through it). 1 while there is such a peer (the cron keeps ticking). */
int hbd_net_retry(hbd_t *d, uint64_t now);
/* While collectives are in flight: a HEARTBEAT to each accepted link quiet for the interval; a
 * peer that answers nothing for the heartbeat timeout is lost. stalled_ns: how long since the
 * last check, when this daemon itself ran late (else 0): the probes start over (hbd_net.c). */
void hbd_net_heartbeat(hbd_t *d, uint64_t now, uint64_t stalled_ns);
/* Nothing in flight: no probe is pending. */
void hbd_net_heartbeat_idle(hbd_t *d);

#endif
