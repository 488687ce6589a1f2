/* hbd_fast.c: the fast lane: barrier tokens (HIER frames) between neighbours on one plain,
 * polled TCP connection per link, beside the ZeroMQ links (doc/design.md section 5). */
#include "hb_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hb_log.h"
#include "hb_time.h"
#include "hbd_fast.h"
#include "hbd_hooks.h"
#include "hbd_sock.h"
#include "hbd_timer.h"
#include "hb_status.h"

/*
 * Why. A HIER frame through ZeroMQ crosses libzmq's I/O thread twice (sender and receiver):
 * two thread wake-ups per hop, 48-88 us one way between two hosts of the test bed where a
 * polled TCP socket costs 8 us. The barrier tokens are 36-byte frames on the critical path of
 * every barrier, so they travel here instead, written and read by the loop itself; the loop's
 * poll stage (hbd_barrier.c) reads them without a wake-up while barriers are busy.
 *
 * Set-up. Every daemon listens on its node's address at a system-chosen port and announces it
 * in HELLO on the CurveZMQ link, with the per-peer token it expects (hbd_peer_t.given_token,
 * as the plain data plane does). Of two neighbours the one with the higher id connects and
 * first sends an authentication record:
 *
 *   off size field
 *     0    4 magic        HBD_FAST_MAGIC ("HBFL")
 *     4    4 node         the connecting node's id
 *     8    4 cluster tag  as in HELLO
 *    12   16 token        what the accepting side gave this node in its HELLO
 *
 * The accepting side takes the connection as that node's fast link only if the token matches
 * (else it is closed and counted: fast_denied). From then on both directions carry nothing but
 * wire frames (wire.h), each decoded with the same checks as on the ZeroMQ link, the peer
 * being the authenticated node; only HIER frames are accepted. A malformed frame closes the
 * link (a byte stream cannot be resynchronised) and is counted (fast_bad); that neighbour's
 * tokens then go through ZeroMQ again.
 *
 * Order. hier needs a sender's tokens in order. A daemon sends a neighbour's tokens either all
 * through ZeroMQ or, once the fast link is up, all through it: the link comes up during the
 * HELLO exchange and hibard reports ready (accepts barriers) only when every neighbour's fast
 * link is up or has failed to come up (hbd_fast_settled), so no token is in flight on the
 * ZeroMQ link when the lane changes. A link that closes later (the peer died) falls back to
 * ZeroMQ for whatever is left; the loss itself is found by the heartbeats as before.
 */

#define HBD_FAST_MAGIC 0x4c464248u /* 'H' 'B' 'F' 'L' in memory order */
#define HBD_FAST_AUTH_LEN 28
#define HBD_FAST_AUTH_MS 5000   /* an accepted link must authenticate within this */
#define HBD_FAST_MAX_PENDING 64 /* accepted links still to authenticate; more are refused */
/* The largest frame a link takes: a barrier token, or a collective or fence data chunk */
#define HBD_FAST_IBUF_HIER (HBD_WIRE_HDR_LEN + HBD_WIRE_MAX_PAYLOAD)
#define HBD_FAST_IBUF_DATA (HBD_WIRE_HDR_LEN + HBD_WIRE_COLL_MAX_PAYLOAD + 64u)
/* Unsent bytes kept per link. The kernel's send buffer is the queue: a data frame goes only
 * when nothing is kept (else WOULD_BLOCK, and the sender hears of the room through
 * hbd_hooks_room), so what is kept is at most the tail of one data frame that the socket did
 * not take whole, plus barrier tokens behind it up to the hard limit (then the link fails). */
#define HBD_FAST_OBUF_MAX (HBD_FAST_IBUF_DATA + 65536u)
enum { CL_HIER = 0, CL_DATA = 1 };

/* An accepted connection still to authenticate. */
typedef struct hbd_fast_pending {
    struct hbd_fast_pending *next;
    hbd_t *d;
    int fd;
    struct event *ev;
    hbd_timer_t *timer; /* HBD_FAST_AUTH_MS without a byte from it: closed */
    uint8_t buf[HBD_FAST_AUTH_LEN];
    size_t have;
} hbd_fast_pending_t;

/* One neighbour's link (hbd_peer_t.fast). */
struct hbd_fast_link {
    hbd_t *d;
    uint32_t node;
    int fd;            /* -1: none */
    int up;            /* authenticated (accepting side) or connected and introduced (other side) */
    int connecting;    /* non-blocking connect in progress */
    int failed;        /* did not come up: tokens go through ZeroMQ */
    int zmq_used[2];   /* a frame of that class (CL_*) to this peer went through ZeroMQ: all
                        * later ones do too */
    uint64_t hello_ns; /* its first HELLO with a port (the accepting side waits from there) */
    struct event *ev_rd, *ev_wr;
    uint8_t *ibuf;
    size_t ihave, icap;
    uint8_t *obuf;
    size_t ooff, ohave, ocap; /* unsent: obuf[ooff, ooff + ohave) */
    int refused;              /* a data frame got WOULD_BLOCK: call the room hooks once drained */
};

struct hbd_fast {
    int lfd;
    uint32_t port;
    struct event *ev_listen;
    hbd_fast_pending_t *pending;
    uint32_t n_pending;
    void (*settled)(hbd_t *d); /* a link came up or failed (the transport checks readiness) */
};

static void link_close(hbd_fast_link_t *l, const char *why)
{
    if (l->fd < 0)
        return;
    if (l->ev_rd != NULL)
        event_free(l->ev_rd);
    if (l->ev_wr != NULL)
        event_free(l->ev_wr);
    l->ev_rd = l->ev_wr = NULL;
    close(l->fd);
    l->fd = -1;
    if (l->up || l->connecting)
        hb_log_info("fast lane to node %" PRIu32 " closed (%s): its barrier tokens go through "
                    "ZeroMQ",
                    l->node, why);
    l->up = l->connecting = 0;
    l->failed = 1;
    l->ihave = l->ooff = l->ohave = 0;
}

static int set_nodelay(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- receiving ---- */

/* Whole frames in ibuf: decode and hand them on. 0, or -1 when the link was closed. */
static int link_parse(hbd_fast_link_t *l)
{
    hbd_t *d = l->d;
    size_t off = 0;
    while (l->ihave - off >= HBD_WIRE_HDR_LEN) {
        uint32_t len = hbd_wire_get32(l->ibuf + off + 28);
        if (HBD_WIRE_HDR_LEN + (size_t)len > l->icap) {
            d->st.fast_bad++;
            link_close(l, "a frame too long for it");
            return -1;
        }
        if (l->ihave - off < HBD_WIRE_HDR_LEN + (size_t)len)
            break;
        hbd_wire_ctx_t ctx = {.n_nodes = d->topo->n_nodes, .job_max = UINT32_MAX, .peer = l->node};
        hbd_wire_msg_t m;
        hbd_wire_reason_t why = HBD_WIRE_OK;
        int fd = l->fd;
        int data_ok = d->data_out != NULL; /* data_plane plain: data may travel unencrypted */
        if (hbd_wire_decode(l->ibuf + off, HBD_WIRE_HDR_LEN + len, &ctx, &m, &why) != 0 ||
            !(m.type == HBD_WIRE_HIER ||
              (data_ok && (m.type == HBD_WIRE_COLL || m.type == HBD_WIRE_FENCE)))) {
            d->st.fast_bad++;
            if (why != HBD_WIRE_OK) {
                d->st.rx_bad[why]++;
                d->st.rx_bad_total++;
            }
            hb_log_warn("fast lane from node %" PRIu32 ": dropped a %s frame (%s)", l->node,
                        why == HBD_WIRE_OK ? hbd_wire_type_name(m.type) : "malformed",
                        why == HBD_WIRE_OK ? "only barrier tokens and plain data travel here"
                                           : hbd_wire_reason_name(why));
            link_close(l, "a frame it must not carry");
            return -1;
        }
        off += HBD_WIRE_HDR_LEN + (size_t)len;
        d->st.fast_rx++;
        hbd_peer_t *hp = hbd_peer_of(d, l->node);
        if (hp != NULL)
            hbd_peer_heard(hp, hb_time_now_ns());
        d->st.data_rx += m.type != HBD_WIRE_HIER;
        (void)hbd_deliver(d, &m);
        if (l->fd != fd) /* closed meanwhile (the message failed the cluster) */
            return -1;
    }
    if (off > 0) {
        memmove(l->ibuf, l->ibuf + off, l->ihave - off);
        l->ihave -= off;
    }
    return 0;
}

static void link_read_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_fast_link_t *l = arg;
    (void)what;
    for (;;) {
        ssize_t n = recv(fd, l->ibuf + l->ihave, l->icap - l->ihave, MSG_DONTWAIT);
        if (n > 0) {
            l->ihave += (size_t)n;
            if (link_parse(l) != 0)
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        link_close(l, n == 0 ? "the peer closed it" : strerror(errno));
        return;
    }
}

/* ---- sending ---- */

static int link_flush(hbd_fast_link_t *l)
{
    while (l->ohave > 0) {
        ssize_t n = send(l->fd, l->obuf + l->ooff, l->ohave, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0)
            return -1;
        l->ooff += (size_t)n;
        l->ohave -= (size_t)n;
    }
    l->ooff = 0;
    return 0;
}

static void link_write_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_fast_link_t *l = arg;
    (void)fd;
    (void)what;
    if (link_flush(l) != 0) {
        link_close(l, strerror(errno));
        return;
    }
    if (l->ohave > 0)
        return;
    event_del(l->ev_wr);
    if (l->refused) {
        l->refused = 0;
        hbd_hooks_room_run(l->d); /* may write to this link again */
    }
}

/* Keep bytes for later, behind what is kept. 0, or -1 (beyond the hard limit: the peer reads
 * nothing). */
static int link_keep(hbd_fast_link_t *l, const uint8_t *buf, size_t len)
{
    if (HBD_FAST_OBUF_MAX - l->ohave < len)
        return -1;
    if (l->ocap - l->ooff - l->ohave < len && l->ooff > 0) {
        memmove(l->obuf, l->obuf + l->ooff, l->ohave); /* rare: tokens behind a data tail */
        l->ooff = 0;
    }
    if (l->ocap - l->ohave < len) {
        size_t cap = l->ocap ? l->ocap : 65536;
        while (cap - l->ohave < len)
            cap *= 2;
        uint8_t *b = realloc(l->obuf, cap);
        if (b == NULL)
            return -1;
        l->obuf = b;
        l->ocap = cap;
    }
    memcpy(l->obuf + l->ooff + l->ohave, buf, len);
    l->ohave += len;
    return 0;
}

/* Send the parts now (one writev) behind nothing unsent, or keep what does not go out.
 * 0, or -1 (too much unsent, or the connection failed). */
static int link_write(hbd_fast_link_t *l, struct iovec *iov, int n_iov)
{
    size_t sent = 0;
    if (l->ohave == 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
        ssize_t n;
        do
            n = sendmsg(l->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        sent = n > 0 ? (size_t)n : 0;
    }
    for (int i = 0; i < n_iov; i++) {
        size_t len = iov[i].iov_len;
        if (sent >= len) {
            sent -= len;
            continue;
        }
        if (link_keep(l, (const uint8_t *)iov[i].iov_base + sent, len - sent) != 0)
            return -1;
        sent = 0;
    }
    if (l->ohave > 0 && l->ev_wr != NULL)
        event_add(l->ev_wr, NULL);
    return 0;
}

static int frame_class(uint8_t type)
{
    return type == HBD_WIRE_HIER ? CL_HIER : CL_DATA;
}

int hbd_fast_send(hbd_t *d, uint32_t to, uint8_t type, const uint8_t hdr[HBD_WIRE_HDR_LEN],
                  const void *p1, uint32_t l1, const void *p2, uint32_t l2)
{
    hbd_peer_t *p = hbd_peer_of(d, to);
    int cl = frame_class(type);
    if (p == NULL || p->fast == NULL || !p->fast->up || p->fast->zmq_used[cl] ||
        (cl == CL_DATA && d->data_out == NULL) ||
        (type != HBD_WIRE_HIER && type != HBD_WIRE_COLL && type != HBD_WIRE_FENCE))
        return HB_ERR_UNAVAIL;
    hbd_fast_link_t *l = p->fast;
    if (cl == CL_DATA && l->ohave > 0) {
        l->refused = 1; /* the sender retries when the room hooks or its timer come */
        d->st.fast_full++;
        return HB_ERR_WOULD_BLOCK;
    }
    if (l1 > UINT32_MAX - l2 || l1 + l2 > HBD_FAST_IBUF_DATA - HBD_WIRE_HDR_LEN)
        return HB_ERR_INVAL;
    struct iovec iov[3] = {{(void *)hdr, HBD_WIRE_HDR_LEN}, {(void *)p1, l1}, {(void *)p2, l2}};
    if (link_write(l, iov, 3) != 0) {
        d->st.tx_fail++;
        hb_log_warn("fast lane to node %" PRIu32 ": %s", to,
                    l->ohave > 0 ? "too much unsent: the peer reads nothing" : strerror(errno));
        link_close(l, "send failed");
        return HB_ERR_PEER_LOST;
    }
    d->st.fast_tx++;
    d->st.data_tx += cl == CL_DATA;
    return 0;
}

/* ---- link set-up ---- */

static int link_events(hbd_fast_link_t *l)
{
    hbd_t *d = l->d;
    size_t cap = d->data_out != NULL ? HBD_FAST_IBUF_DATA : HBD_FAST_IBUF_HIER;
    if (l->icap < cap) {
        free(l->ibuf);
        l->icap = 0;
        if ((l->ibuf = malloc(cap)) == NULL)
            return HB_ERR_NOMEM;
        l->icap = cap;
    }
    l->ev_rd = event_new(d->base, l->fd, EV_READ | EV_PERSIST, link_read_cb, l);
    l->ev_wr = event_new(d->base, l->fd, EV_WRITE | EV_PERSIST, link_write_cb, l);
    if (l->ev_rd == NULL || l->ev_wr == NULL || event_add(l->ev_rd, NULL) != 0)
        return HB_ERR_NOMEM;
    return 0;
}

static hbd_fast_link_t *link_get(hbd_t *d, hbd_peer_t *p)
{
    if (p->fast == NULL) {
        p->fast = calloc(1, sizeof(*p->fast));
        if (p->fast == NULL)
            return NULL;
        p->fast->d = d;
        p->fast->node = p->node;
        p->fast->fd = -1;
    }
    return p->fast;
}

/* The connecting side: the connect finished (or failed); introduce ourselves. */
static void connect_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_fast_link_t *l = arg;
    hbd_t *d = l->d;
    int err = 0;
    socklen_t el = sizeof(err);
    (void)what;
    event_free(l->ev_wr);
    l->ev_wr = NULL;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
        err = errno;
    hbd_peer_t *p = hbd_peer_of(d, l->node);
    uint8_t a[HBD_FAST_AUTH_LEN];
    hbd_wire_put32(a, HBD_FAST_MAGIC);
    hbd_wire_put32(a + 4, d->self);
    hbd_wire_put32(a + 8, d->tag);
    memcpy(a + 12, p->data_token, HBD_WIRE_TOKEN_LEN);
    l->connecting = 0;
    if (err != 0 || set_nodelay(fd) != 0 ||
        send(fd, a, sizeof(a), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(a) ||
        link_events(l) != 0) {
        hb_log_warn("fast lane to node %" PRIu32 ": %s", l->node, strerror(err ? err : errno));
        link_close(l, "connect failed");
        d->fast->settled(d);
        return;
    }
    l->up = 1;
    hb_log_debug("fast lane to node %" PRIu32 " up (connected)", l->node);
    d->fast->settled(d);
}

void hbd_fast_on_hello(hbd_t *d, hbd_peer_t *p, uint32_t port, const char *host)
{
    if (d->fast == NULL)
        return;
    hbd_fast_link_t *l = link_get(d, p);
    if (l == NULL)
        return;
    if (l->hello_ns == 0)
        l->hello_ns = hb_time_now_ns();
    if (port == 0) { /* the peer has none (fast_lane: off there) */
        link_close(l, "the peer has no fast lane");
        l->failed = 1;
        return;
    }
    if (!p->outgoing || l->fd >= 0 || l->up)
        return;
    if (l->failed && p->fast_port == port)
        return; /* tried this one already */
    p->fast_port = port;
    l->failed = 0;
    char svc[16];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai = NULL;
    snprintf(svc, sizeof(svc), "%" PRIu32, port);
    if (host == NULL || getaddrinfo(host, svc, &hints, &ai) != 0) {
        hb_log_warn("fast lane to node %" PRIu32 ": its address is not known", p->node);
        l->failed = 1;
        return;
    }
    l->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = l->fd < 0 ? -1 : connect(l->fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (l->fd < 0 || (rc != 0 && errno != EINPROGRESS)) {
        hb_log_warn("fast lane to node %" PRIu32 " at %s:%s: %m", p->node, host, svc);
        if (l->fd >= 0)
            close(l->fd);
        l->fd = -1;
        l->failed = 1;
        return;
    }
    l->connecting = 1;
    l->ev_wr = event_new(d->base, l->fd, EV_WRITE, connect_cb, l);
    if (l->ev_wr == NULL || event_add(l->ev_wr, NULL) != 0)
        link_close(l, "no memory");
}

static void pending_free(hbd_fast_pending_t *pd, int close_fd)
{
    struct hbd_fast *f = pd->d->fast;
    for (hbd_fast_pending_t **pp = &f->pending; *pp != NULL; pp = &(*pp)->next)
        if (*pp == pd) {
            *pp = pd->next;
            f->n_pending--;
            break;
        }
    if (pd->ev != NULL)
        event_free(pd->ev);
    hbd_timer_free(pd->timer);
    if (close_fd)
        close(pd->fd);
    free(pd);
}

static void pending_timeout(hbd_t *d, void *arg)
{
    hbd_fast_pending_t *pd = arg;
    d->st.fast_denied++;
    hb_log_warn("fast lane: a connection said nothing for %d s; closed", HBD_FAST_AUTH_MS / 1000);
    pending_free(pd, 1);
}

static void pending_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_fast_pending_t *pd = arg;
    hbd_t *d = pd->d;
    (void)what;
    hbd_timer_arm(pd->timer, HBD_FAST_AUTH_MS * 1000ull, 1); /* it said something */
    ssize_t n = recv(fd, pd->buf + pd->have, sizeof(pd->buf) - pd->have, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        pending_free(pd, 1);
        return;
    }
    pd->have += (size_t)n;
    if (pd->have < sizeof(pd->buf))
        return;
    uint32_t node = hbd_wire_get32(pd->buf + 4);
    hbd_peer_t *p = hbd_peer_of(d, node);
    if (hbd_wire_get32(pd->buf) != HBD_FAST_MAGIC || hbd_wire_get32(pd->buf + 8) != d->tag ||
        p == NULL || p->outgoing || memcmp(pd->buf + 12, p->given_token, HBD_WIRE_TOKEN_LEN) != 0) {
        if (d->st.fast_denied++ == 0)
            hb_log_warn("fast lane: refused a connection that is no neighbour of ours (bad "
                        "magic, cluster or token); further ones are only counted");
        pending_free(pd, 1);
        return;
    }
    hbd_fast_link_t *l = link_get(d, p);
    if (l == NULL) {
        pending_free(pd, 1);
        return;
    }
    link_close(l, "replaced by a new connection");
    l->fd = pd->fd;
    l->failed = 0;
    pending_free(pd, 0);
    if (set_nodelay(l->fd) != 0 || link_events(l) != 0) {
        link_close(l, "cannot watch it");
        d->fast->settled(d);
        return;
    }
    l->up = 1;
    hb_log_debug("fast lane from node %" PRIu32 " up (accepted)", node);
    d->fast->settled(d);
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)what;
    for (;;) {
        int fd = hbd_accept(d, lfd, "fast lane");
        if (fd < 0)
            return;
        if (d->fast->n_pending >= HBD_FAST_MAX_PENDING) {
            if (d->st.fast_denied++ == 0)
                hb_log_warn("fast lane: %d connections have not introduced themselves; further "
                            "ones are refused and only counted",
                            HBD_FAST_MAX_PENDING);
            close(fd);
            continue;
        }
        hbd_fast_pending_t *pd = calloc(1, sizeof(*pd));
        if (pd == NULL) {
            close(fd);
            continue;
        }
        pd->d = d;
        pd->fd = fd;
        pd->next = d->fast->pending;
        d->fast->pending = pd;
        d->fast->n_pending++;
        pd->ev = event_new(d->base, fd, EV_READ | EV_PERSIST, pending_cb, pd);
        pd->timer = hbd_timer_new(d, pending_timeout, pd);
        if (pd->ev == NULL || pd->timer == NULL || event_add(pd->ev, NULL) != 0)
            pending_free(pd, 1);
        else
            hbd_timer_arm(pd->timer, HBD_FAST_AUTH_MS * 1000ull, 1);
    }
}

/* ---- life ---- */

int hbd_fast_start(hbd_t *d, const char *address, void (*settled)(hbd_t *d))
{
    if (!d->cfg->fast_lane)
        return 0;
    struct hbd_fast *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return HB_ERR_NOMEM;
    f->lfd = -1;
    f->settled = settled;
    d->fast = f;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE},
                    *ai = NULL;
    int one = 1;
    if (getaddrinfo(address, "0", &hints, &ai) != 0) {
        hb_log_error("fast lane: cannot use the address %s", address);
        return HB_ERR_IO;
    }
    f->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (f->lfd < 0 || setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(f->lfd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(f->lfd, 64) != 0) {
        hb_log_error("fast lane: listen on %s: %m", address);
        freeaddrinfo(ai);
        return HB_ERR_IO;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);
    if (getsockname(f->lfd, (struct sockaddr *)&sa, &sl) != 0)
        return HB_ERR_IO;
    f->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                             : ((struct sockaddr_in *)&sa)->sin_port);
    f->ev_listen = event_new(d->base, f->lfd, EV_READ | EV_PERSIST, accept_cb, d);
    if (f->ev_listen == NULL || event_add(f->ev_listen, NULL) != 0)
        return HB_ERR_NOMEM;
    hb_log_info("fast lane (barrier tokens, plain TCP) on %s port %" PRIu32, address, f->port);
    return 0;
}

uint32_t hbd_fast_port(const hbd_t *d)
{
    return d->fast != NULL ? d->fast->port : 0;
}

int hbd_fast_settled(const hbd_t *d, const hbd_peer_t *p)
{
    if (d->fast == NULL)
        return 1;
    if (p->fast == NULL) /* no HELLO yet */
        return 0;
    const hbd_fast_link_t *l = p->fast;
    /* the accepting side waits for the other's connection, but not for ever */
    return l->up || l->failed ||
           (!p->outgoing && l->hello_ns != 0 &&
            hb_time_now_ns() - l->hello_ns > HBD_FAST_AUTH_MS * 1000000ull);
}

void hbd_fast_note_zmq(hbd_t *d, uint32_t to, uint8_t type)
{
    hbd_peer_t *p = hbd_peer_of(d, to);
    int cl = frame_class(type);
    if (d->fast == NULL || p == NULL || (cl == CL_DATA && d->data_out == NULL))
        return;
    hbd_fast_link_t *l = link_get(d, p);
    if (l != NULL && !l->zmq_used[cl]) {
        l->zmq_used[cl] = 1;
        if (d->ready)
            hb_log_info("%s to node %" PRIu32 " go through ZeroMQ (its fast lane was not up "
                        "when the first was sent)",
                        cl == CL_HIER ? "barrier tokens" : "collective data", to);
    }
}

void hbd_fast_peer_down(hbd_t *d, hbd_peer_t *p)
{
    (void)d;
    if (p->fast != NULL)
        link_close(p->fast, "the peer is lost");
}

void hbd_fast_peer_reset(hbd_t *d, hbd_peer_t *p)
{
    (void)d;
    hbd_fast_link_t *l = p->fast;
    if (l == NULL)
        return;
    link_close(l, "the link starts over");
    l->failed = 0;
    l->zmq_used[CL_HIER] = l->zmq_used[CL_DATA] = 0;
    l->hello_ns = 0;
}

void hbd_fast_stop(hbd_t *d)
{
    struct hbd_fast *f = d->fast;
    if (f == NULL)
        return;
    for (uint32_t i = 0; d->peers != NULL && i < d->topo->n_nodes; i++) {
        hbd_fast_link_t *l = d->peers[i].fast;
        if (l == NULL)
            continue;
        l->up = l->connecting = 0; /* quietly */
        link_close(l, "stopping");
        free(l->obuf);
        free(l->ibuf);
        free(l);
        d->peers[i].fast = NULL;
    }
    while (f->pending != NULL)
        pending_free(f->pending, 1);
    if (f->ev_listen != NULL)
        event_free(f->ev_listen);
    if (f->lfd >= 0)
        close(f->lfd);
    free(f);
    d->fast = NULL;
}
