/* hbd_reply.c: reply handles: lines on a connected stream socket, reference-held. */
#include "hbd_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

hbd_reply_t *hbd_reply_hold(hbd_reply_t *r)
{
    if (r != NULL)
        r->refs++;
    return r;
}

void hbd_reply_release(hbd_reply_t *r)
{
    if (r == NULL || --r->refs > 0)
        return;
    r->ops->free(r);
}

/* The socket goes: the owner's reference with it. */
static int fd_drop(hbd_reply_t *r)
{
    int fd = r->fd;
    if (r->ops->closing != NULL)
        r->ops->closing(r);
    r->fd = -1;
    hbd_reply_release(r);
    return fd;
}

void hbd_reply_close(hbd_reply_t *r)
{
    if (r == NULL || r->fd < 0)
        return;
    close(fd_drop(r));
}

int hbd_reply_detach(hbd_reply_t *r)
{
    if (r == NULL || r->fd < 0)
        return -1;
    return fd_drop(r);
}

void hbd_reply(hbd_reply_t *r, const char *fmt, ...)
{
    char line[2048], *big = NULL, *p = line;
    va_list ap;
    if (r == NULL || r->fd < 0)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2) {
        /* a long list ("jobs"): up to HBD_REPLY_MAX bytes */
        size_t cap = (size_t)n + 2 < HBD_REPLY_MAX ? (size_t)n + 2 : HBD_REPLY_MAX;
        big = malloc(cap);
        if (big != NULL) {
            va_start(ap, fmt);
            n = vsnprintf(big, cap - 1, fmt, ap);
            va_end(ap);
            p = big;
            if (n < 0 || (size_t)n > cap - 2)
                n = n < 0 ? 0 : (int)cap - 2;
        } else {
            n = (int)sizeof(line) - 2;
        }
    }
    p[n++] = '\n';
    /* replies are short and the client reads them; a client that does not is dropped */
    ssize_t w = send(r->fd, p, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    free(big);
    if (w != n)
        hbd_reply_close(r);
}

static void fd_free(hbd_reply_t *r)
{
    free(r);
}

static const hbd_reply_ops_t fd_ops = {.closing = NULL, .free = fd_free};

hbd_reply_t *hbd_reply_fd_new(int fd)
{
    hbd_reply_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        close(fd);
        return NULL;
    }
    r->ops = &fd_ops;
    r->fd = fd;
    r->refs = 1;
    return r;
}
