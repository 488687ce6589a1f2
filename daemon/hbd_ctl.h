/* hbd_ctl.h: hibard's UNIX control socket: lines in, dispatched through a command table. */
#ifndef HBD_CTL_H
#define HBD_CTL_H

#include <stddef.h>

#include "hbd.h"
#include "hbd_reply.h"

/* One control command. run gets the rest of the line (blanks before it skipped; it may modify
 * it) and answers through r (holding r while the answer is pending, or taking its socket over:
 * hbd_reply.h). The socket knows no command but through a table of these. */
typedef struct hbd_ctl_cmd {
    const char *name;
    const char *args; /* synopsis of the arguments, "" for none */
    const char *help; /* what it answers, one line */
    void (*run)(hbd_t *d, hbd_reply_t *r, char *args);
} hbd_ctl_cmd_t;

/* Listen on d->sock_path (0600, same uid or root only) and serve cmds[0..n) (kept, not
 * copied). 0, CONFIG (path too long), IO, NOMEM; logged. */
int hbd_ctl_start(hbd_t *d, const hbd_ctl_cmd_t *cmds, size_t n);
/* Close every connection (pending replies are dropped) and the socket. */
void hbd_ctl_stop(hbd_t *d);

#endif
