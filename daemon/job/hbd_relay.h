/* hbd_relay.h: launch forwarding: a job handed to one daemon runs on every node of the cluster. */
#ifndef HBD_RELAY_H
#define HBD_RELAY_H

#include <stdint.h>

#include "hbd.h"

/* Control command "run SPEC": this daemon becomes the job's origin. It takes the connection
 * over (hbd_ctl_detach), forwards the spec to every other node over the daemons' links, starts
 * its own ranks, and streams every node's launcher lines to the connection, each prefixed with
 * the node id (see hbd_relay.c). Errors before the job starts: one "err" reply. */
void hbd_relay_run(hbd_t *d, struct hbd_ctl_conn *conn, const char *spec_path);
/* A HBD_WIRE_JOB frame (validated by hbd_wire_decode). */
void hbd_relay_on_msg(hbd_t *d, const hbd_wire_msg_t *m);
/* A node is lost (hbd_net_peer_lost): stop every relayed job here; the origin reports it. */
void hbd_relay_peer_lost(hbd_t *d, uint32_t node, int status);
/* JOB frames that were well formed but did not fit the relay's state (unknown job, chunk out of
 * order, not for a job this node originated): dropped and counted. */
uint64_t hbd_relay_drops(void);
/* Relayed jobs this daemon takes part in (status). */
uint32_t hbd_relay_n_jobs(void);
/* Daemon shutdown: tell hibar-run, free everything (before the launcher stops its jobs). */
void hbd_relay_fini(hbd_t *d);

/* hbd_ctl.c: a connected stream socket (nonblocking) served as a control connection, as if
 * accepted (the relay hands the launcher its end of a socketpair this way); NULL on failure
 * (fd closed). hbd_ctl_close: close a connection unless it was detached or closed already. */
struct hbd_ctl_conn *hbd_ctl_adopt(hbd_t *d, int fd);
void hbd_ctl_close(struct hbd_ctl_conn *conn);

/* hbd_dmodex.c: next hop from this node toward node t on the chassis data tree. */
uint32_t hbd_dmodex_next_hop(const hbd_t *d, uint32_t t);

#endif
