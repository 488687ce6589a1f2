/* hbd_logp.h: PlogP and T_SR probes between daemons (ECHO frames). */
#ifndef HBD_LOGP_H
#define HBD_LOGP_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_reply.h"

/* PlogP probes ("logp TO[,TO...] SIZE COUNT rtt|flood [MIN_REPS]"): m-byte
 * round trips and floods of ECHO frames with a mode word; the reply goes to conn. */
void hbd_logp_request(hbd_t *d, hbd_reply_t *conn, char *args);
/* Control command "tsr": a T_SR probe, n round trips to neighbour `to`; the reply goes to r.
 * 0, or BUSY, NOT_FOUND, INVAL, NOMEM (nothing replied). */
int hbd_logp_tsr_start(hbd_t *d, hbd_reply_t *r, uint32_t to, uint32_t n);
/* Take the ECHO frames and lost-node news (hbd_net). 0 or NOMEM. */
int hbd_logp_init(hbd_t *d);
/* End the probes with an error reply (before the control socket goes). */
void hbd_logp_fini(hbd_t *d);

#endif
