/* hbd_reply.h: where a command's answer goes: lines on a connected stream socket, reference-held.
 */
#ifndef HBD_REPLY_H
#define HBD_REPLY_H

/*
 * A service that answers a command (a control connection's, or the relay's own launcher pipe)
 * gets a reply handle, never the control socket: it writes lines, holds the handle while an
 * answer is pending, and may take the socket over (a command that streams, such as launch).
 * Late replies to a handle whose socket went are dropped. Not thread-safe: the loop only.
 */
typedef struct hbd_reply hbd_reply_t;
typedef struct hbd_reply_ops {
    /* The socket goes (closed or detached): stop watching it. NULL: nothing to do. */
    void (*closing)(hbd_reply_t *r);
    /* The last reference went: free the handle. */
    void (*free)(hbd_reply_t *r);
} hbd_reply_ops_t;
struct hbd_reply {
    const hbd_reply_ops_t *ops;
    int fd;   /* the socket (nonblocking), -1 once closed or detached */
    int refs; /* the socket's owner + each pending reply */
};

/* A handle on fd (a connected, nonblocking stream socket; closed on failure): one reference,
 * dropped when the socket is closed or detached. NULL without memory (fd then closed). */
hbd_reply_t *hbd_reply_fd_new(int fd);
/* Reply one line (adds the newline; at most HBD_REPLY_MAX bytes, longer is cut). r may have
 * gone: NULL ok. A peer that does not read its replies is dropped (the socket closes). */
#define HBD_REPLY_MAX (64u << 10)
void hbd_reply(hbd_reply_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Keep the handle while an answer is pending (r may be NULL: NULL back). */
hbd_reply_t *hbd_reply_hold(hbd_reply_t *r);
void hbd_reply_release(hbd_reply_t *r);
/* Take the socket over (blocking mode unchanged; close it when done): the handle stops
 * reading and replying on it. -1 if it is already closed. */
int hbd_reply_detach(hbd_reply_t *r);
/* Close the socket unless it was detached or closed already (NULL ok). */
void hbd_reply_close(hbd_reply_t *r);

#endif
