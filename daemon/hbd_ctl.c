/* hbd_ctl.c: hibard's UNIX control socket (0600, same uid only): one command per line, one reply
 * line; the commands are a table (hbd_ctl_cmds.c), the replies go through hbd_reply. */
#include "hb_config.h"
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hb_log.h"
#include "hbd_ctl.h"
#include "hbd_sock.h"
#include "hb_status.h"

#define HBD_CTL_LINE 512
#define HBD_CTL_MAX_CONNS 256

/* A control connection: a reply handle on the accepted socket, and the line being read. */
typedef struct hbd_ctl_conn {
    hbd_reply_t r; /* first: the handle services get */
    hbd_t *d;
    struct event *ev;
    char in[HBD_CTL_LINE];
    size_t in_len;
    struct hbd_ctl_conn *next;
} hbd_ctl_conn_t;

static void conn_closing(hbd_reply_t *r)
{
    hbd_ctl_conn_t *c = (hbd_ctl_conn_t *)r;
    if (c->ev != NULL)
        event_free(c->ev);
    c->ev = NULL;
    c->d->n_conns--;
}

static void conn_free(hbd_reply_t *r)
{
    hbd_ctl_conn_t *c = (hbd_ctl_conn_t *)r;
    for (hbd_ctl_conn_t **pp = &c->d->conns; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    free(c);
}

static const hbd_reply_ops_t conn_ops = {.closing = conn_closing, .free = conn_free};

/* One line: the command's name, then its arguments, through the table. */
static void dispatch(hbd_t *d, hbd_ctl_conn_t *c, char *line)
{
    line += strspn(line, " \t");
    size_t len = strcspn(line, " \t");
    if (len == 0)
        return;
    char *args = line + len;
    if (*args != '\0') {
        *args++ = '\0';
        args += strspn(args, " \t");
    }
    for (size_t i = 0; i < d->n_ctl_cmds; i++)
        if (strcmp(line, d->ctl_cmds[i].name) == 0) {
            d->ctl_cmds[i].run(d, &c->r, args);
            return;
        }
    char names[256];
    size_t off = 0;
    for (size_t i = 0; i < d->n_ctl_cmds && off < sizeof(names); i++)
        off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", i ? " " : "",
                                d->ctl_cmds[i].name);
    hbd_reply(&c->r, "err %d unknown command '%.40s' (%s)", HB_ERR_INVAL, line, names);
}

static void conn_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_ctl_conn_t *c = arg;
    hbd_t *d = c->d;
    (void)what;
    hbd_reply_hold(&c->r);
    for (;;) {
        ssize_t r = recv(fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            hbd_reply_close(&c->r);
            break;
        }
        if (r < 0)
            break;
        c->in_len += (size_t)r;
        char *nl;
        while (c->r.fd >= 0 && (nl = memchr(c->in, '\n', c->in_len)) != NULL) {
            *nl = '\0';
            size_t used = (size_t)(nl - c->in) + 1;
            if (nl > c->in && nl[-1] == '\r')
                nl[-1] = '\0';
            dispatch(d, c, c->in);
            memmove(c->in, c->in + used, c->in_len - used);
            c->in_len -= used;
        }
        if (c->r.fd < 0)
            break;
        if (c->in_len == sizeof(c->in) - 1) {
            hbd_reply(&c->r, "err %d line too long", HB_ERR_INVAL);
            hbd_reply_close(&c->r);
            break;
        }
    }
    hbd_reply_release(&c->r);
}

/* A connected stream socket (nonblocking) served as a control connection; NULL on failure (fd
 * closed). */
static hbd_ctl_conn_t *conn_new(hbd_t *d, int fd)
{
    hbd_ctl_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return NULL;
    }
    c->r.ops = &conn_ops;
    c->r.fd = fd;
    c->r.refs = 1;
    c->d = d;
    c->ev = event_new(d->base, fd, EV_READ | EV_PERSIST, conn_cb, c);
    if (c->ev == NULL || event_add(c->ev, NULL) != 0) {
        if (c->ev)
            event_free(c->ev);
        free(c);
        close(fd);
        return NULL;
    }
    c->next = d->conns;
    d->conns = c;
    d->n_conns++;
    return c;
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)what;
    for (;;) {
        int fd = hbd_accept(d, lfd, "control socket");
        if (fd < 0)
            return;
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
            (cr.uid != geteuid() && cr.uid != 0)) {
            hb_log_warn("control socket: refused a client of uid %d (pid %d)", (int)cr.uid,
                        (int)cr.pid);
            close(fd);
            continue;
        }
        if (d->n_conns >= HBD_CTL_MAX_CONNS) {
            hb_log_warn("control socket: too many clients");
            close(fd);
            continue;
        }
        (void)conn_new(d, fd);
    }
}

int hbd_ctl_start(hbd_t *d, const hbd_ctl_cmd_t *cmds, size_t n)
{
    d->ctl_cmds = cmds;
    d->n_ctl_cmds = n;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(d->sock_path) >= sizeof(sa.sun_path)) {
        hb_log_error("control socket path too long: %s", d->sock_path);
        return HB_ERR_CONFIG;
    }
    strcpy(sa.sun_path, d->sock_path);
    d->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->ctl_fd < 0) {
        hb_log_error("socket(AF_UNIX): %m");
        return HB_ERR_IO;
    }
    unlink(d->sock_path); /* stale: main checked that no live daemon owns it */
    mode_t old = umask(077);
    int rc = bind(d->ctl_fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc != 0 || chmod(d->sock_path, 0600) != 0 || listen(d->ctl_fd, 64) != 0) {
        hb_log_error("control socket %s: %m", d->sock_path);
        close(d->ctl_fd);
        d->ctl_fd = -1;
        return HB_ERR_IO;
    }
    d->ev_ctl = event_new(d->base, d->ctl_fd, EV_READ | EV_PERSIST, accept_cb, d);
    if (d->ev_ctl == NULL || event_add(d->ev_ctl, NULL) != 0)
        return HB_ERR_NOMEM;
    return 0;
}

void hbd_ctl_stop(hbd_t *d)
{
    if (d->ev_ctl != NULL)
        event_free(d->ev_ctl);
    d->ev_ctl = NULL;
    while (d->conns != NULL) {
        hbd_ctl_conn_t *c = d->conns;
        c->r.refs = 1; /* pending replies were dropped by the engines' fini */
        if (c->r.fd >= 0) {
            if (c->ev)
                event_free(c->ev);
            close(c->r.fd);
            c->r.fd = -1;
            d->n_conns--;
        }
        d->conns = c->next;
        free(c);
    }
    if (d->ctl_fd >= 0) {
        close(d->ctl_fd);
        unlink(d->sock_path);
    }
    d->ctl_fd = -1;
}
