/* hbd_sock.h: socket helpers of every layer (the listening sockets of the control socket, the
 * fast lane and the ranks). */
#ifndef HBD_SOCK_H
#define HBD_SOCK_H

#include "hbd.h"

/* accept4 (non-blocking, close-on-exec) on a listening socket, again after EINTR or
 * ECONNABORTED: the new fd, or -1 when none is waiting (other errors are logged, naming what).
 * Out of file descriptors (EMFILE, ENFILE) the waiting connection is accepted on the spare fd
 * the daemon keeps for this and closed at once, so the client sees its end and the listening
 * socket does not stay readable (the loop never spins on it); logged once until an accept
 * succeeds again. */
int hbd_accept(hbd_t *d, int lfd, const char *what);
/* The spare fd (opened at start, closed at stop). 0 or IO. */
int hbd_sock_spare_open(hbd_t *d);
void hbd_sock_spare_close(hbd_t *d);

#endif
