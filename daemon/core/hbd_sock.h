/* hbd_sock.h: socket helpers of every layer (the listening sockets of the control socket, the
 * fast lane and the ranks). */
#ifndef HBD_SOCK_H
#define HBD_SOCK_H

/* accept4 (non-blocking, close-on-exec) on a listening socket, again after EINTR or
 * ECONNABORTED: the new fd, or -1 when none is waiting (other errors are logged, naming what). */
int hbd_accept(int lfd, const char *what);

#endif
