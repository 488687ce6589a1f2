/* hbd_ctl.c: hibard's UNIX control socket (0600, same uid only): one command per line, one reply
 * line. */
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
#include "hb_proc.h"
#include "hb_time.h"
#include "hbd.h"
#include "hbd_pmix.h"
#include "hbd_relay.h"
#include "hibar.h"
#include "hwb.h"

#define HBD_CTL_LINE 512
#define HBD_CTL_MAX_CONNS 256

/*
 * Commands (replies start with "ok" or "err <status> <text>"):
 *   ping                 ok pong node=<name> id=<n> pid=<pid>
 *   status               ok node=.. id=.. ready=0|1 peers=<linked>/<n> lost=0|1 in_flight=..
 *   stats                ok rx=.. tx=.. bad=.. bad_<reason>=.. unknown_peer=.. auth_denied=..
 *                        ... data_rx=.. data_tx=.. data_denied=.. data_bad=.. (data plane)
 *                        ... fast_rx=.. fast_tx=.. fast_bad=.. fast_denied=.. (fast lane)
 *                        ... from_lost=.. (frames from a node taken for lost, dropped)
 *   fence_stats          ok NODE:TX_UP:TX_DOWN:RX_UP:RX_DOWN ... (fence data bytes per link)
 *   barrier <coll_id>    when it completes: ok barrier <id> 0 | err barrier <id> <status> <text>
 *   tib <n>              n chassis barriers (all nodes of the chassis must be asked at once)
 *   tsr <n> [node]       n round trips with a neighbour (default: parent, else first)
 *   launch <spec>        start this node's ranks of a job; the connection then streams the
 *                        job's output and exit statuses (hbd_launch.c)
 *   run <spec>           start a job on every node through this daemon (launch forwarding over
 *                        the daemons' links); the connection then streams every node's lines,
 *                        each prefixed with the node id (hbd_relay.c)
 *   shutdown             ok bye, then the daemon exits cleanly
 */
typedef struct hbd_ctl_conn {
    hbd_t *d;
    int fd;
    int refs;   /* the connection itself + each pending reply */
    int closed; /* fd gone: replies are dropped */
    struct event *ev;
    char in[HBD_CTL_LINE];
    size_t in_len;
    struct hbd_ctl_conn *next;
} hbd_ctl_conn_t;

static unsigned n_conns;

struct hbd_ctl_conn *hbd_ctl_hold(struct hbd_ctl_conn *conn)
{
    if (conn != NULL)
        conn->refs++;
    return conn;
}

void hbd_ctl_release(struct hbd_ctl_conn *conn)
{
    if (conn == NULL || --conn->refs > 0)
        return;
    hbd_t *d = conn->d;
    for (hbd_ctl_conn_t **pp = &d->conns; *pp != NULL; pp = &(*pp)->next)
        if (*pp == conn) {
            *pp = conn->next;
            break;
        }
    free(conn);
}

static void conn_close(hbd_ctl_conn_t *c)
{
    if (c->closed)
        return;
    c->closed = 1;
    if (c->ev != NULL)
        event_free(c->ev);
    c->ev = NULL;
    close(c->fd);
    c->fd = -1;
    n_conns--;
    hbd_ctl_release(c);
}

void hbd_ctl_reply(struct hbd_ctl_conn *conn, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    if (conn == NULL || conn->closed)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    /* replies are short and the client reads them; a client that does not is dropped */
    ssize_t w = send(conn->fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w != n)
        conn_close(conn);
}

void hbd_ctl_close(struct hbd_ctl_conn *conn)
{
    if (conn != NULL)
        conn_close(conn);
}

int hbd_ctl_detach(struct hbd_ctl_conn *conn)
{
    if (conn == NULL || conn->closed)
        return -1;
    int fd = conn->fd;
    conn->closed = 1;
    if (conn->ev != NULL)
        event_free(conn->ev);
    conn->ev = NULL;
    conn->fd = -1;
    n_conns--;
    hbd_ctl_release(conn);
    return fd;
}

static void cmd_stats(hbd_t *d, hbd_ctl_conn_t *c)
{
    char buf[1536];
    size_t off = 0;
    const hbd_stats_t *s = &d->st;
    uint64_t hier_drop, hier_late;
    hbd_barrier_drops(d, &hier_drop, &hier_late);
    off += (size_t)snprintf(buf + off, sizeof(buf) - off,
                            "ok rx=%" PRIu64 " tx=%" PRIu64 " tx_fail=%" PRIu64 " bad=%" PRIu64,
                            s->rx_frames, s->tx_frames, s->tx_fail, s->rx_bad_total);
    for (int r = 1; r < HBD_WIRE_N_REASONS && off < sizeof(buf); r++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, " bad_%s=%" PRIu64,
                                hbd_wire_reason_name((hbd_wire_reason_t)r), s->rx_bad[r]);
    if (off < sizeof(buf))
        snprintf(buf + off, sizeof(buf) - off,
                 " bad_parts=%" PRIu64 " unknown_peer=%" PRIu64 " auth_denied=%" PRIu64
                 " barriers=%" PRIu64 " failed=%" PRIu64 " peers_lost=%" PRIu64
                 " hwb_rounds=%" PRIu64 " in_flight=%" PRIu32 " hier_drop=%" PRIu64
                 " hier_late=%" PRIu64 " relay_jobs=%" PRIu32 " relay_drop=%" PRIu64
                 " data_rx=%" PRIu64 " data_tx=%" PRIu64 " data_denied=%" PRIu64
                 " data_bad=%" PRIu64 " fast_rx=%" PRIu64 " fast_tx=%" PRIu64 " fast_bad=%" PRIu64
                 " fast_denied=%" PRIu64 " from_lost=%" PRIu64 " rss_kb=%ld",
                 s->rx_bad_parts, s->rx_unknown_peer, s->auth_denied, s->barriers_done,
                 s->barriers_failed, s->peers_lost, s->hwb_rounds, hbd_barrier_in_flight(d),
                 hier_drop, hier_late, hbd_relay_n_jobs(), hbd_relay_drops(), s->data_rx,
                 s->data_tx, s->data_denied, s->data_bad, s->fast_rx, s->fast_tx, s->fast_bad,
                 s->fast_denied, s->rx_from_lost, hb_proc_rss_kb(getpid()));
    hbd_ctl_reply(c, "%s", buf);
}

static void cmd_status(hbd_t *d, hbd_ctl_conn_t *c)
{
    uint32_t linked = 0;
    for (uint32_t i = 0; i < d->n_peers; i++)
        linked += d->peers[i].hello_rx && d->peers[i].hello_ack && !d->peers[i].lost;
    hbd_ctl_reply(c,
                  "ok node=%s id=%" PRIu32 " pid=%d ready=%d peers=%" PRIu32 "/%" PRIu32
                  " lost=%d chassis=%" PRIu32 " port=%" PRIu32 " role=%s protocol=%s"
                  " hwbarrier=%s endpoint=%s in_flight=%" PRIu32 " next_coll=%" PRIu64
                  " pmix=%s",
                  d->name, d->self, (int)getpid(), d->ready, linked, d->n_peers, d->lost,
                  d->topo->nodes[d->self].chassis, d->topo->nodes[d->self].port,
                  hb_topo_role_name(d->topo->chassis[d->topo->nodes[d->self].chassis].role),
                  hb_cfg_protocol_name(d->cfg->protocol), d->hwb ? hb_hwb_name(d->hwb) : "none",
                  d->endpoint, hbd_barrier_in_flight(d), hbd_barrier_next_coll(d),
                  hbd_pmix_wedged() ? "wedged" : "ok");
}

static void dispatch(hbd_t *d, hbd_ctl_conn_t *c, char *line)
{
    char *save = NULL, *cmd = strtok_r(line, " \t", &save);
    char *arg = cmd ? strtok_r(NULL, " \t", &save) : NULL;
    char *arg2 = arg ? strtok_r(NULL, " \t", &save) : NULL;
    char *end = NULL;
    if (cmd == NULL)
        return;
    if (strcmp(cmd, "ping") == 0) {
        hbd_ctl_reply(c, "ok pong node=%s id=%" PRIu32 " pid=%d", d->name, d->self, (int)getpid());
    } else if (strcmp(cmd, "status") == 0) {
        cmd_status(d, c);
    } else if (strcmp(cmd, "stats") == 0) {
        cmd_stats(d, c);
    } else if (strcmp(cmd, "fence_stats") == 0) {
        char fs[2000];
        hbd_fence_stats(d, fs, sizeof(fs));
        hbd_ctl_reply(c, "%s", fs);
    } else if (strcmp(cmd, "barrier") == 0) {
        errno = 0;
        unsigned long long id = arg ? strtoull(arg, &end, 0) : 0;
        if (arg == NULL || *end != '\0' || errno != 0 || arg[0] == '-')
            hbd_ctl_reply(c, "err %d usage: barrier <coll_id>", HIBAR_ERR_INVAL);
        else
            hbd_barrier_request(d, c, (uint64_t)id);
    } else if (strcmp(cmd, "tib") == 0 || strcmp(cmd, "tsr") == 0) {
        unsigned long n = arg ? strtoul(arg, &end, 10) : 0;
        if (arg == NULL || *end != '\0' || n == 0 || n > 1000000) {
            hbd_ctl_reply(c, "err %d usage: %s <count 1..1000000>", HIBAR_ERR_INVAL, cmd);
        } else if (cmd[1] == 'i') {
            hbd_barrier_tib(d, c, (uint32_t)n);
        } else {
            uint32_t to = UINT32_MAX;
            if (arg2 != NULL) {
                unsigned long v = strtoul(arg2, &end, 10);
                if (*end == '\0')
                    to = (uint32_t)v;
                else if (hb_cfg_node_find(d->cfg, arg2, &to) != 0)
                    to = UINT32_MAX - 1;
            } else if (d->topo->nodes[d->self].parent != HB_TOPO_NONE) {
                to = d->topo->nodes[d->self].parent;
            } else if (d->n_peers > 0) {
                to = d->peers[0].node;
            }
            int rc = d->ready ? hbd_net_echo_start(d, c, to, (uint32_t)n) : HIBAR_ERR_NOT_INIT;
            if (rc != 0)
                hbd_ctl_reply(c, "err %d %s", rc, hibar_strerror(rc));
        }
    } else if (strcmp(cmd, "logp") == 0) {
        char rest[256];
        snprintf(rest, sizeof(rest), "%s %s %s", arg ? arg : "", arg2 ? arg2 : "",
                 save ? save : "");
        hbd_logp_request(d, c, rest);
    } else if (strcmp(cmd, "coll") == 0) {
        char rest[256];
        snprintf(rest, sizeof(rest), "%s %s %s", arg ? arg : "", arg2 ? arg2 : "",
                 save ? save : "");
        hbd_coll_request(d, c, rest);
    } else if (strcmp(cmd, "launch") == 0) {
        hbd_launch_request(d, c, arg);
    } else if (strcmp(cmd, "run") == 0) {
        hbd_relay_run(d, c, arg);
    } else if (strcmp(cmd, "shutdown") == 0) {
        hbd_ctl_reply(c, "ok bye");
        hb_log_info("shutdown requested on the control socket");
        d->stopping = 1;
        event_base_loopexit(d->base, NULL);
    } else {
        hbd_ctl_reply(c,
                      "err %d unknown command '%.40s' (ping status stats barrier tib tsr "
                      "logp coll launch run shutdown)",
                      HIBAR_ERR_INVAL, cmd);
    }
}

static void conn_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_ctl_conn_t *c = arg;
    hbd_t *d = c->d;
    (void)what;
    hbd_ctl_hold(c);
    for (;;) {
        ssize_t r = recv(fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            conn_close(c);
            break;
        }
        if (r < 0)
            break;
        c->in_len += (size_t)r;
        char *nl;
        while (!c->closed && (nl = memchr(c->in, '\n', c->in_len)) != NULL) {
            *nl = '\0';
            size_t used = (size_t)(nl - c->in) + 1;
            if (nl > c->in && nl[-1] == '\r')
                nl[-1] = '\0';
            dispatch(d, c, c->in);
            memmove(c->in, c->in + used, c->in_len - used);
            c->in_len -= used;
        }
        if (c->closed)
            break;
        if (c->in_len == sizeof(c->in) - 1) {
            hbd_ctl_reply(c, "err %d line too long", HIBAR_ERR_INVAL);
            conn_close(c);
            break;
        }
    }
    hbd_ctl_release(c);
}

int hbd_accept(int lfd, const char *what)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            hb_log_warn("accept on the %s: %m", what);
        return -1;
    }
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)what;
    for (;;) {
        int fd = hbd_accept(lfd, "control socket");
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
        if (n_conns >= HBD_CTL_MAX_CONNS) {
            hb_log_warn("control socket: too many clients");
            close(fd);
            continue;
        }
        (void)hbd_ctl_adopt(d, fd);
    }
}

struct hbd_ctl_conn *hbd_ctl_adopt(hbd_t *d, int fd)
{
    hbd_ctl_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return NULL;
    }
    c->d = d;
    c->fd = fd;
    c->refs = 1;
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
    n_conns++;
    return c;
}

int hbd_ctl_start(hbd_t *d)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(d->sock_path) >= sizeof(sa.sun_path)) {
        hb_log_error("control socket path too long: %s", d->sock_path);
        return HIBAR_ERR_CONFIG;
    }
    strcpy(sa.sun_path, d->sock_path);
    d->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->ctl_fd < 0) {
        hb_log_error("socket(AF_UNIX): %m");
        return HIBAR_ERR_IO;
    }
    unlink(d->sock_path); /* stale: main checked that no live daemon owns it */
    mode_t old = umask(077);
    int rc = bind(d->ctl_fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc != 0 || chmod(d->sock_path, 0600) != 0 || listen(d->ctl_fd, 64) != 0) {
        hb_log_error("control socket %s: %m", d->sock_path);
        close(d->ctl_fd);
        d->ctl_fd = -1;
        return HIBAR_ERR_IO;
    }
    d->ev_ctl = event_new(d->base, d->ctl_fd, EV_READ | EV_PERSIST, accept_cb, d);
    if (d->ev_ctl == NULL || event_add(d->ev_ctl, NULL) != 0)
        return HIBAR_ERR_NOMEM;
    return 0;
}

void hbd_ctl_stop(hbd_t *d)
{
    if (d->ev_ctl != NULL)
        event_free(d->ev_ctl);
    d->ev_ctl = NULL;
    while (d->conns != NULL) {
        hbd_ctl_conn_t *c = d->conns;
        c->refs = 1; /* pending replies were dropped by the barrier engine's fini */
        if (!c->closed) {
            c->closed = 1;
            if (c->ev)
                event_free(c->ev);
            close(c->fd);
            n_conns--;
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
