/* hbd_net.c: hibard's transport: one CurveZMQ ROUTER per daemon, ZAP, monitor, HELLO, failure
 * flood, and the optional plain data plane for collective segments and fence data (data_plane:
 * plain). */
#include "hb_config.h"
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "hb_log.h"
#include "hb_rundir.h"
#include "hb_time.h"
#include "hbd_fast.h"
#include "hbd_hooks.h"
#include "hbd_net.h"
#include "hbd_route.h"
#include "hbd_timer.h"
#include "hb_status.h"

/*
 * Wiring. Every daemon binds one ROUTER (routing id "n<self>"). Each link is one TCP
 * connection: of two neighbours, the one with the higher node id connects its ROUTER to the
 * other's, naming the connection "n<peer>" (ZMQ_CONNECT_ROUTING_ID), so both address each
 * other as "n<id>". Heartbeats (ZMQ_HEARTBEAT_IVL/TIMEOUT/TTL) are set on the connecting side
 * only: its PINGs carry the TTL that makes the accepting side drop a silent connection, and
 * one pinger per link halves the idle traffic. A dead neighbour shows up as a DISCONNECTED
 * event of the socket monitor, named by endpoint (connections we made) or by file descriptor
 * (connections we accepted: the fd of the peer's HELLO, ZMQ_SRCFD).
 * ZMQ_FD is edge-triggered: after every send or recv, ZMQ_EVENTS is read again and if input
 * is pending the read event is activated, so no edge is lost.
 */

#define HBD_HELLO_RESEND_NS (200ull * 1000000ull)
/* A peer that is lost or not linked: HELLO tried again this often (it may come back). */
#define HBD_REJOIN_NS (500ull * 1000000ull)
#define HBD_MON_ENDPOINT_FMT "inproc://hibar-monitor-%u"

static void idstr(char *buf, char kind, uint32_t node)
{
    snprintf(buf, HBD_ID_MAX, "%c%" PRIu32, kind, node);
}

/*
 * The routing id under which this daemon addresses p on the ROUTER (data: on data_out). A peer
 * that connected to us is "n<node>", as it named itself. A connection we made carries the name
 * we gave it (ZMQ_CONNECT_ROUTING_ID): "n<node>" too, until we disconnect it from an old
 * endpoint (the node came back at another port); the next one is "n<node>.<generation>",
 * because libzmq asserts on a connect under a routing id whose old pipe has not gone yet.
 */
static void peer_id(const hbd_peer_t *p, int data, char buf[HBD_ID_MAX])
{
    uint32_t gen = data ? p->dgen : p->outgoing ? p->zgen : 0;
    if (gen == 0)
        idstr(buf, 'n', p->node);
    else
        snprintf(buf, HBD_ID_MAX, "n%" PRIu32 ".%" PRIu32, p->node, gen);
}

/* Parse a routing id "n<digits>" (or "n<digits>.<generation>": a connection we made anew,
 * peer_id) into a node id; UINT32_MAX if it is not one. */
static uint32_t id_parse(const void *data, size_t len)
{
    const char *s = data;
    uint64_t v = 0;
    size_t i = 1, digits = 0;
    if (len < 2 || len >= HBD_ID_MAX || s[0] != 'n')
        return UINT32_MAX;
    for (; i < len && s[i] >= '0' && s[i] <= '9' && digits < 10; i++, digits++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    if (digits == 0 || v >= UINT32_MAX)
        return UINT32_MAX;
    if (i < len) { /* ".<generation>" */
        size_t g = 0;
        if (s[i++] != '.')
            return UINT32_MAX;
        for (; i < len && s[i] >= '0' && s[i] <= '9' && g < 10; i++, g++)
            ;
        if (g == 0 || i != len)
            return UINT32_MAX;
    }
    return (uint32_t)v;
}

static hbd_peer_t *peer_get(hbd_t *d, uint32_t node)
{
    return hbd_peer_of(d, node);
}

static int add_peer(hbd_t *d, uint32_t node);
static int peer_resolve(hbd_t *d, hbd_peer_t *p);

/*
 * ZeroMQ calls, retried when a signal interrupts them. Even with ZMQ_DONTWAIT they process the
 * socket's pending commands first and then fail with EINTR if a signal (a rank's SIGCHLD)
 * arrives meanwhile: nothing was sent or received, and the call is simply made again. Taken as
 * a failure it made a live neighbour "lost" (send), split a multi-part message (receive), or
 * lost the edge the socket's fd signals (ZMQ_EVENTS).
 */
static int z_send(void *sock, const void *buf, size_t len, int flags)
{
    int rc;
    do
        rc = zmq_send(sock, buf, len, flags);
    while (rc < 0 && errno == EINTR);
    return rc;
}

static int z_msg_send(zmq_msg_t *m, void *sock, int flags)
{
    int rc;
    do
        rc = zmq_msg_send(m, sock, flags);
    while (rc < 0 && errno == EINTR);
    return rc;
}

static int z_msg_recv(zmq_msg_t *m, void *sock, int flags)
{
    int rc;
    do
        rc = zmq_msg_recv(m, sock, flags);
    while (rc < 0 && errno == EINTR);
    return rc;
}

/* 1 if a ZeroMQ socket has a message waiting (its fd only signals edges: ask it). */
static int sock_readable(void *sock)
{
    uint32_t events = 0;
    size_t sz = sizeof(events);
    int rc;
    do
        rc = zmq_getsockopt(sock, ZMQ_EVENTS, &events, &sz);
    while (rc != 0 && errno == EINTR);
    return rc == 0 && (events & ZMQ_POLLIN);
}

static void rearm(hbd_t *d, void *sock, struct event *ev)
{
    if (sock != NULL && sock_readable(sock))
        event_active(ev, EV_READ, 0);
    (void)d;
}

/* Disconnect the data plane from p (its endpoint is forgotten: connected again on demand). */
static void data_unlink(hbd_t *d, hbd_peer_t *p)
{
    if (p->data_ep[0] != '\0' && d->data_out != NULL) {
        zmq_disconnect(d->data_out, p->data_ep);
        p->dgen++; /* the next connection goes by another name (peer_id) */
    }
    p->data_ep[0] = '\0';
}

/* Hex of a token: what ZeroMQ PLAIN carries as the password. */
static void token_hex(const uint8_t tok[HBD_WIRE_TOKEN_LEN], char out[2 * HBD_WIRE_TOKEN_LEN + 1])
{
    for (int i = 0; i < HBD_WIRE_TOKEN_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", tok[i]);
}

int hbd_net_peer_host(hbd_t *d, hbd_peer_t *p, char *host, size_t len)
{
    if (peer_resolve(d, p)) {
        /* "tcp://HOST:PORT" or "tcp://[HOST]:PORT" */
        const char *h = p->endpoint + 6, *colon = strrchr(p->endpoint, ':');
        if (strncmp(p->endpoint, "tcp://", 6) != 0 || colon == NULL || colon <= h)
            return HB_ERR_WOULD_BLOCK;
        size_t n = (size_t)(colon - h);
        if (*h == '[' && n >= 2 && h[n - 1] == ']') {
            h++;
            n -= 2;
        }
        if (n + 1 > len)
            return HB_ERR_WOULD_BLOCK;
        memcpy(host, h, n);
        host[n] = '\0';
        return 0;
    }
    /* its endpoint is not known here (it connected to us): the address it came from */
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);
    if (p->fd < 0 || getpeername(p->fd, (struct sockaddr *)&sa, &sl) != 0 ||
        getnameinfo((struct sockaddr *)&sa, sl, host, (socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0)
        return HB_ERR_WOULD_BLOCK;
    return 0;
}

/*
 * The plain data plane's sending side: data_out connects to the peer's data socket (its
 * address as on the encrypted link, the port from its HELLO) with the token it gave us.
 * 0 when connected (the handshake may still run: ROUTER_MANDATORY then says EHOSTUNREACH and
 * the caller retries), HB_ERR_WOULD_BLOCK when the peer has not said where yet.
 */
static int data_link(hbd_t *d, hbd_peer_t *p)
{
    char ep[160], id[HBD_ID_MAX], pw[2 * HBD_WIRE_TOKEN_LEN + 1], host[INET6_ADDRSTRLEN + 2];
    if (p->data_ep[0] != '\0')
        return 0;
    if (p->data_port == 0)
        return HB_ERR_WOULD_BLOCK;
    if (hbd_net_peer_host(d, p, host, sizeof(host)) != 0)
        return HB_ERR_WOULD_BLOCK;
    snprintf(ep, sizeof(ep),
             strchr(host, ':') != NULL ? "tcp://[%s]:%" PRIu32 : "tcp://%s:%" PRIu32, host,
             p->data_port);
    peer_id(p, 1, id);
    token_hex(p->data_token, pw);
    if (zmq_setsockopt(d->data_out, ZMQ_PLAIN_PASSWORD, pw, strlen(pw)) != 0 ||
        zmq_setsockopt(d->data_out, ZMQ_CONNECT_ROUTING_ID, id, strlen(id)) != 0 ||
        zmq_connect(d->data_out, ep) != 0) {
        hb_log_error("data plane: connect to node %" PRIu32 " at %s: %s", p->node, ep,
                     zmq_strerror(errno));
        return HB_ERR_IO;
    }
    snprintf(p->data_ep, sizeof(p->data_ep), "%s", ep);
    hb_log_debug("data plane: node %" PRIu32 " at %s", p->node, ep);
    return 0;
}

/* The fast lane first for what it carries (barrier tokens; data with a plain data plane):
 * its answer, or HB_ERR_UNAVAIL after pinning that class of frame to ZeroMQ for `to`. */
static int fast_first(hbd_t *d, uint32_t to, uint8_t type, const uint8_t hdr[HBD_WIRE_HDR_LEN],
                      const void *p1, uint32_t l1, const void *p2, uint32_t l2)
{
    int rc = hbd_fast_send(d, to, type, hdr, p1, l1, p2, l2);
    if (rc == HB_ERR_UNAVAIL)
        hbd_fast_note_zmq(d, to, type);
    return rc;
}

int hbd_net_send2(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                  const void *p1, uint32_t l1, const void *p2, uint32_t l2)
{
    return hbd_net_send_job(d, to, type, flags, 0, coll_id, p1, l1, p2, l2);
}

/* One frame to p, lost or not (HELLO goes to lost neighbours too: they may come back). */
static int send_frame(hbd_t *d, hbd_peer_t *p, uint8_t type, uint16_t flags, uint32_t job,
                      uint64_t coll_id, const void *p1, uint32_t l1, const void *p2, uint32_t l2)
{
    uint8_t hdr[HBD_WIRE_HDR_LEN];
    char id[HBD_ID_MAX];
    uint32_t to = p->node;
    hbd_wire_msg_t m = {.type = type,
                        .flags = flags,
                        .job = job,
                        .coll_id = coll_id,
                        .inc = hbd_wire_inc32(d->inc),
                        .src = d->self,
                        .len = l1 + l2,
                        .payload = NULL};
    zmq_msg_t body;
    if (l1 > UINT32_MAX - l2 || (l1 > 0 && p1 == NULL) || (l2 > 0 && p2 == NULL) ||
        hbd_wire_encode_hdr(&m, hdr) != 0) {
        hb_log_error("cannot encode a %s frame of %" PRIu32 " + %" PRIu32 " bytes",
                     hbd_wire_type_name(type), l1, l2);
        return HB_ERR_INVAL;
    }
    /* collective and fence data go on the plain data plane when the cluster has one; they and
     * the barrier tokens on the fast lane when it is up */
    int data = (type == HBD_WIRE_COLL || type == HBD_WIRE_FENCE) && d->data_out != NULL;
    if (data || type == HBD_WIRE_HIER) {
        int frc = fast_first(d, to, type, hdr, p1, l1, p2, l2);
        if (frc != HB_ERR_UNAVAIL)
            return frc;
    }
    if (data) {
        int lrc = data_link(d, p);
        if (lrc != 0)
            return lrc;
    }
    /* one copy: header and payload straight into the message ZeroMQ sends */
    if (zmq_msg_init_size(&body, HBD_WIRE_HDR_LEN + (size_t)l1 + l2) != 0)
        return HB_ERR_NOMEM;
    uint8_t *out = zmq_msg_data(&body);
    memcpy(out, hdr, HBD_WIRE_HDR_LEN);
    if (l1 > 0)
        memcpy(out + HBD_WIRE_HDR_LEN, p1, l1);
    if (l2 > 0)
        memcpy(out + HBD_WIRE_HDR_LEN + l1, p2, l2);
    void *sock = data ? d->data_out : d->router;
    peer_id(p, data, id);
    int rc = z_send(sock, id, strlen(id), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (rc >= 0)
        rc = z_msg_send(&body, sock, ZMQ_DONTWAIT);
    int err = errno;
    if (rc < 0)
        zmq_msg_close(&body); /* not sent: still ours */
    rearm(d, d->router, d->ev_router);
    if (rc < 0 && data && (err == EAGAIN || err == EHOSTUNREACH))
        return HB_ERR_WOULD_BLOCK; /* the data connection's handshake, or its queue is full:
                                    * a lost peer is found on the encrypted link */
    if (rc < 0 && (err == EAGAIN || (err == EHOSTUNREACH && !p->hello_ack)))
        return HB_ERR_WOULD_BLOCK; /* queue full, or an on-demand link not up yet */
    if (rc < 0 && type == HBD_WIRE_HELLO)
        return HB_ERR_WOULD_BLOCK; /* to a node that is not there (yet, or again) */
    if (rc < 0) {
        d->st.tx_fail++;
        /* before the link is up, EHOSTUNREACH only means "not connected yet" */
        if (d->ready)
            hb_log_warn("send %s to node %" PRIu32 ": %s", hbd_wire_type_name(type), to,
                        zmq_strerror(err));
        return HB_ERR_PEER_LOST;
    }
    d->st.tx_frames++;
    d->st.data_tx += data;
    return 0;
}

int hbd_net_send_job(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint32_t job,
                     uint64_t coll_id, const void *p1, uint32_t l1, const void *p2, uint32_t l2)
{
    hbd_peer_t *p = peer_get(d, to);
    if (p == NULL) {
        hb_log_error("node %" PRIu32 " is not a neighbour of node %" PRIu32, to, d->self);
        return HB_ERR_NOT_FOUND;
    }
    if (p->lost)
        return HB_ERR_PEER_LOST;
    return send_frame(d, p, type, flags, job, coll_id, p1, l1, p2, l2);
}

hbd_zc_t *hbd_zc_new(void *buf)
{
    hbd_zc_t *z = malloc(sizeof(*z));
    if (z == NULL)
        return NULL;
    atomic_init(&z->refs, 1);
    z->buf = buf;
    return z;
}

void hbd_zc_put(hbd_zc_t *z)
{
    if (z != NULL && atomic_fetch_sub(&z->refs, 1) == 1) {
        free(z->buf);
        free(z);
    }
}

/* ZeroMQ is done with a message sent from a lent buffer (called on its I/O thread). */
static void zc_done(void *data, void *hint)
{
    (void)data;
    hbd_zc_put(hint);
}

int hbd_net_send_coll(hbd_t *d, uint32_t to, uint64_t coll_id, const uint8_t *hdr, const void *data,
                      uint32_t dlen, hbd_zc_t *hold, int bulk)
{
    hbd_peer_t *p = peer_get(d, to);
    if (d->data_out == NULL || p == NULL || p->lost || (!bulk && (hold == NULL || dlen == 0)))
        return hbd_net_send2(d, to, HBD_WIRE_COLL, 0, coll_id, hdr, HBD_WIRE_COLL_HDR, data, dlen);
    uint8_t head[HBD_WIRE_HDR_LEN + HBD_WIRE_COLL_HDR];
    hbd_wire_msg_t m = {.type = HBD_WIRE_COLL,
                        .coll_id = coll_id,
                        .inc = hbd_wire_inc32(d->inc),
                        .src = d->self,
                        .len = HBD_WIRE_COLL_HDR + dlen};
    if (hbd_wire_encode_hdr(&m, head) != 0)
        return HB_ERR_INVAL;
    int rc;
    if (!bulk) {
        rc = fast_first(d, to, HBD_WIRE_COLL, head, hdr, HBD_WIRE_COLL_HDR, data, dlen);
        if (rc != HB_ERR_UNAVAIL)
            return rc;
    }
    rc = data_link(d, p);
    if (rc != 0)
        return rc;
    memcpy(head + HBD_WIRE_HDR_LEN, hdr, HBD_WIRE_COLL_HDR);
    char id[HBD_ID_MAX];
    peer_id(p, 1, id);
    zmq_msg_t body;
    int two = hold != NULL && dlen > 0; /* the data as a second frame, not copied */
    if (two) {
        atomic_fetch_add(&hold->refs, 1); /* the message's, dropped by zc_done */
        if (zmq_msg_init_data(&body, (void *)data, dlen, zc_done, hold) != 0) {
            hbd_zc_put(hold);
            return HB_ERR_NOMEM;
        }
    } else {
        if (zmq_msg_init_size(&body, sizeof(head) + (size_t)dlen) != 0)
            return HB_ERR_NOMEM;
        memcpy(zmq_msg_data(&body), head, sizeof(head));
        if (dlen > 0)
            memcpy((uint8_t *)zmq_msg_data(&body) + sizeof(head), data, dlen);
    }
    rc = z_send(d->data_out, id, strlen(id), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (rc >= 0 && two)
        rc = z_send(d->data_out, head, sizeof(head), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (rc >= 0)
        rc = z_msg_send(&body, d->data_out, ZMQ_DONTWAIT);
    int err = errno;
    if (rc < 0)
        zmq_msg_close(&body); /* not handed over: its reference goes now */
    if (rc < 0 && (err == EAGAIN || err == EHOSTUNREACH))
        return HB_ERR_WOULD_BLOCK;
    if (rc < 0) {
        d->st.tx_fail++;
        return HB_ERR_PEER_LOST;
    }
    d->st.tx_frames++;
    d->st.data_tx++;
    d->st.bulk_tx += bulk != 0;
    return 0;
}

int hbd_net_send(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                 const void *payload, uint32_t len)
{
    return hbd_net_send2(d, to, type, flags, coll_id, payload, len, NULL, 0);
}

/* An incarnation: the wall clock in ns (a later start of a node has a larger one). */
static uint64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t v = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return v != 0 ? v : 1;
}

static uint32_t n_lost_here(const hbd_t *d)
{
    uint32_t k = 0;
    for (uint32_t i = 0; d->lost && d->lost_set != NULL && i < d->topo->n_nodes; i++)
        k += d->lost_set[i];
    return k;
}

/* HELLO: who we are (incarnation), where we take data, and whether we hold p lost. */
static void send_hello(hbd_t *d, hbd_peer_t *p, uint16_t flags)
{
    uint8_t pl[HBD_WIRE_HELLO_LEN];
    hbd_wire_hello_t h = {.n_nodes = d->topo->n_nodes,
                          .cluster_tag = d->tag,
                          .fast_port = hbd_fast_port(d),
                          .inc = d->inc,
                          .n_lost = n_lost_here(d),
                          .you_lost = p->lost ? p->inc : 0};
    if (d->data_in != NULL)
        h.data_port = d->data_port;
    /* the token authenticates the plain data plane and the fast lane alike */
    memcpy(h.data_token, p->given_token, HBD_WIRE_TOKEN_LEN);
    hbd_wire_hello_pack(&h, pl);
    (void)send_frame(d, p, HBD_WIRE_HELLO, flags, 0, 0, pl, sizeof(pl), NULL, 0);
}

static void check_ready(hbd_t *d)
{
    if (d->ready)
        return;
    for (uint32_t i = 0; i < d->n_peers; i++)
        if (!d->peers[i].lost &&
            (!d->peers[i].hello_rx || !d->peers[i].hello_ack || !hbd_fast_settled(d, &d->peers[i])))
            return;
    d->ready = 1;
    hb_log_info("node %s ready: %" PRIu32 " neighbours linked in %.1f ms", d->name, d->n_peers,
                (double)(hb_time_now_ns() - d->start_ns) / 1e6);
}

void hbd_net_check_ready(hbd_t *d)
{
    check_ready(d);
}

/* Tell peer p that `node` is lost (ABORT) or up (MEMBER), at the incarnation known here (never
 * a node about itself). */
static void tell(hbd_t *d, hbd_peer_t *p, uint8_t type, uint32_t node, int status)
{
    uint8_t pl[16];
    uint64_t inc = node < d->topo->n_nodes ? d->node_inc[node] : 0;
    if (type == HBD_WIRE_ABORT) {
        hbd_wire_abort_t a = {.status = status, .lost = node, .inc = inc};
        hbd_wire_abort_pack(&a, pl);
    } else {
        hbd_wire_member_t x = {.node = node, .inc = inc};
        hbd_wire_member_pack(&x, pl);
    }
    if (p->node != node)
        (void)hbd_net_send(d, p->node, type, 0, 0, pl, 16);
}

/* Tell every linked, live peer (the flood: each passes on what is news to it, once). */
static void flood(hbd_t *d, uint8_t type, uint32_t node, int status)
{
    for (uint32_t i = 0; i < d->n_peers; i++)
        if (!d->peers[i].lost && d->peers[i].hello_ack)
            tell(d, &d->peers[i], type, node, status);
}

/* A new incarnation (or a larger one) for node n: its incarnation as known here. */
static void inc_learn(hbd_t *d, uint32_t n, uint64_t inc)
{
    if (n < d->topo->n_nodes && inc > d->node_inc[n])
        d->node_inc[n] = inc;
}

/* A link starts over (a new incarnation at either end): HELLO again, the data plane and fast
 * lane again from what the next HELLO says. */
static void peer_restart(hbd_t *d, hbd_peer_t *p)
{
    p->lost = 0;
    p->hello_rx = p->hello_ack = 0;
    p->probe_ns = p->probe_last_ns = p->hello_try_ns = p->suspect_ns = 0;
    p->warned = 0;
    p->last_rx_ns = hb_time_now_ns();
    data_unlink(d, p);
    p->data_port = 0;
    hbd_fast_peer_reset(d, p);
}

/*
 * This node was taken for lost by its neighbours (stopped, or cut off, for longer than the
 * heartbeat timeout): they ended its jobs. It ends them here too, forgets every loss it judged
 * itself (its judgement is the suspect one; its neighbours tell it what is really lost), and
 * comes back as a new incarnation: HELLO to every neighbour.
 */
static void self_rejoin(hbd_t *d, uint32_t by)
{
    hb_log_warn("node %s was taken for lost (told by node %" PRIu32 "): its jobs end, it rejoins "
                "as a new incarnation",
                d->name, by);
    d->st.self_rejoins++;
    d->rejoin_ns = hb_time_now_ns();
    (void)hbd_hooks_lost_run(d, d->self, HB_ERR_PEER_LOST);
    hbd_hooks_lost_forget(d);
    uint64_t now = real_ns();
    d->inc = now > d->inc ? now : d->inc + 1;
    (void)hbd_hooks_join_run(d, d->self, d->inc); /* its own engines start over */
    for (uint32_t i = 0; i < d->n_peers; i++) {
        peer_restart(d, &d->peers[i]);
        send_hello(d, &d->peers[i], 0);
    }
    if (d->tick != NULL)
        hbd_timer_arm(d->tick, HBD_REJOIN_NS / 1000, 0);
}

/* The peer's HELLO (q) says both hold each other lost: which of the two gives way. The one
 * holding more nodes lost is the one cut off (ties: the higher node id). */
static int we_yield(const hbd_t *d, const hbd_peer_t *p, const hbd_wire_hello_t *q)
{
    uint32_t mine = n_lost_here(d);
    return mine > q->n_lost || (mine == q->n_lost && d->self > p->node);
}

/* After a loss the live nodes form another tree (hbd_route_update): link to this node's new
 * neighbours on it, up and down, so routed frames (hbd_route_next_hop) find their links. */
static void relink(hbd_t *d)
{
    uint32_t up = hbd_route_up(d, d->self);
    if (up != HB_TOPO_NONE && !hbd_node_lost(d, up))
        (void)hbd_net_link(d, up);
    for (uint32_t n = 0; n < d->topo->n_nodes; n++)
        if (n != d->self && !hbd_node_lost(d, n) && hbd_route_up(d, n) == d->self)
            (void)hbd_net_link(d, n);
}

void hbd_net_peer_lost(hbd_t *d, uint32_t node, int status)
{
    hbd_peer_t *p = peer_get(d, node);
    if (p != NULL && !p->lost) {
        p->lost = 1;
        d->st.peers_lost++;
        hbd_fast_peer_down(d, p);
    }
    /* every loss ends what involves that node (the jobs on it), each loss once */
    if (!hbd_node_lost(d, node) || d->lost_set == NULL)
        hb_log_warn("node %" PRIu32 " lost: failing what involves it with %s", node,
                    hb_status_str(status));
    if (!hbd_hooks_lost_run(d, node, status))
        return;
    relink(d);
    /* flood: every live neighbour learns it once, and passes it on once */
    flood(d, HBD_WIRE_ABORT, node, status);
    if (d->tick != NULL) /* the cron tries the lost neighbour's HELLO again (hbd_net_retry) */
        hbd_timer_arm(d->tick, HBD_REJOIN_NS / 1000, 0);
}

/*
 * This node's own judgement that `node` is gone (its connection closed, its heartbeats
 * unanswered, an engine's timeout): a loss, except for one heartbeat timeout after this node
 * rejoined by itself. It was stopped or cut off then: its connections and timers are stale
 * (a neighbour closed the connection while it slept, a probe sent before the stop is "late"),
 * and what is really lost its neighbours tell it (ABORT). Meanwhile the link starts over; a
 * node whose link is not back one heartbeat timeout later is lost after all (hbd_net_retry).
 */
void hbd_net_peer_suspect(hbd_t *d, uint32_t node)
{
    uint64_t grace = (uint64_t)d->cfg->heartbeat_timeout_ms * 1000000ull;
    hbd_peer_t *p = peer_get(d, node);
    if (d->rejoin_ns != 0 && hb_time_now_ns() - d->rejoin_ns < grace && p != NULL) {
        hb_log_info("node %" PRIu32 " looks lost, right after this node rejoined: its link "
                    "starts over instead (the cluster says what is lost)",
                    node);
        d->st.suspects_held++;
        peer_restart(d, p);
        p->suspect_ns = hb_time_now_ns();
        send_hello(d, p, 0);
        return;
    }
    hbd_net_peer_lost(d, node, HB_ERR_PEER_LOST);
}

/* ---- receive ---- */

/*
 * A HELLO from p (decoded). Incarnations: an older one than known is stale (BAD_INC); a new
 * one is the node restarted or rejoined: the old one is lost (if it was not yet) and the link
 * starts over (peer_restart), the node is up again everywhere (MEMBER flood) and it learns
 * what is lost. A node held lost here at the very incarnation that was lost was stopped or cut
 * off: whichever of the two holds the other lost gives way (self_rejoin), the other tells it.
 */
static hbd_wire_reason_t hello_in(hbd_t *d, hbd_peer_t *p, const hbd_wire_msg_t *m, int fd)
{
    hbd_wire_hello_t h;
    uint32_t from = p->node;
    hbd_wire_hello_unpack(m->payload, &h);
    if (h.cluster_tag != d->tag || h.data_port > 65535 || h.fast_port > 65535)
        return HBD_WIRE_BAD_PAYLOAD;
    if (h.inc < d->node_inc[from] || h.inc < p->inc || m->inc != hbd_wire_inc32(h.inc))
        return HBD_WIRE_BAD_INC; /* an older incarnation than one already seen */
    int revived = 0;
    if (p->lost && h.inc == p->inc) {
        /* lost here at this incarnation, and it still speaks: stopped or cut off */
        d->st.rx_from_lost++;
        if (h.you_lost == d->inc && we_yield(d, p, &h)) {
            self_rejoin(d, from);
        } else if (h.you_lost != d->inc &&
                   hb_time_now_ns() - p->hello_try_ns >= HBD_HELLO_RESEND_NS) {
            p->hello_try_ns = hb_time_now_ns();
            send_hello(d, p, HBD_WIRE_F_REPLY); /* you_lost: it gives way */
        }
        return HBD_WIRE_OK;
    }
    if (h.you_lost == d->inc) {
        /* it holds us lost (it learned so from the cluster): we give way */
        self_rejoin(d, from);
        return HBD_WIRE_OK;
    }
    if (p->inc != 0 && h.inc != p->inc) {
        /* a new incarnation: restarted (or rejoined) */
        if (!p->lost && p->inc >= d->node_inc[from])
            /* the old one went without our noticing: what it was in ends (unless the cluster
             * told us of a newer one already: then the old one was lost and replaced) */
            hbd_net_peer_lost(d, from, HB_ERR_PEER_LOST);
        hb_log_info("node %" PRIu32 " (%s) is back as a new incarnation", from,
                    d->cfg->nodes[from].name);
        peer_restart(d, p);
        revived = 1;
    } else if (p->lost) {
        /* an on-demand link lost before its first HELLO came */
        peer_restart(d, p);
        revived = 1;
    }
    p->inc = h.inc;
    if (!revived)
        inc_learn(d, from, h.inc); /* a revived one's goes with its join (below) */
    hbd_peer_heard(p, hb_time_now_ns());
    /* where it takes collective data now (a restarted peer has a new port and token) */
    if (h.data_port != p->data_port ||
        memcmp(h.data_token, p->data_token, HBD_WIRE_TOKEN_LEN) != 0) {
        data_unlink(d, p);
        p->data_port = h.data_port;
        memcpy(p->data_token, h.data_token, HBD_WIRE_TOKEN_LEN);
    }
    if (d->data_out != NULL && h.data_port == 0 && !p->warned) {
        p->warned = 1;
        hb_log_warn("node %" PRIu32 " has no plain data plane (data_plane differs): "
                    "collectives with it wait until they time out",
                    from);
    }
    /* the accepting side links on HELLO, the connecting side on its answer */
    p->hello_rx = p->hello_ack = 1;
    p->suspect_ns = 0;
    if (!(m->flags & HBD_WIRE_F_REPLY)) {
        hb_log_debug("HELLO from node %" PRIu32 " on fd %d", from, fd);
        p->fd = fd;
        send_hello(d, p, HBD_WIRE_F_REPLY);
    }
    /* connect the data plane now: the first collective or fence with this peer then
     * finds it up instead of waiting out its handshake (a failure is retried then) */
    if (d->data_out != NULL && h.data_port != 0)
        (void)data_link(d, p);
    char host[INET6_ADDRSTRLEN + 2];
    hbd_fast_on_hello(
        d, p, h.fast_port,
        p->outgoing && h.fast_port != 0 && hbd_net_peer_host(d, p, host, sizeof(host)) == 0 ? host
                                                                                            : NULL);
    if (revived) {
        /* every node learns it is back; it learns what is lost */
        d->st.rejoins++;
        if (hbd_hooks_join_run(d, from, h.inc))
            flood(d, HBD_WIRE_MEMBER, from, 0);
        for (uint32_t n = 0; d->lost && n < d->topo->n_nodes; n++)
            if (hbd_node_lost(d, n))
                tell(d, p, HBD_WIRE_ABORT, n, HB_ERR_PEER_LOST);
    }
    check_ready(d);
    return HBD_WIRE_OK;
}

/* ABORT: node a.lost is gone. About ourselves (at our incarnation): we were taken for lost. */
static void abort_in(hbd_t *d, uint32_t from, const hbd_wire_abort_t *a)
{
    if (a->lost == d->self) {
        if (a->inc == d->inc)
            self_rejoin(d, from);
        return;
    }
    if (a->lost < d->topo->n_nodes && a->inc != 0 && a->inc < d->node_inc[a->lost])
        return; /* about an incarnation that has come back since */
    if (a->lost < d->topo->n_nodes)
        inc_learn(d, a->lost, a->inc);
    hbd_net_peer_lost(d, a->lost, a->status);
}

/* MEMBER: node x.node is up at incarnation x.inc. */
static void member_in(hbd_t *d, const hbd_wire_member_t *x)
{
    if (x->node == d->self || x->inc <= d->node_inc[x->node])
        return; /* known, or older than one known (a loss of an incarnation is final) */
    hbd_peer_t *q = peer_get(d, x->node);
    if (hbd_hooks_join_run(d, x->node, x->inc))
        flood(d, HBD_WIRE_MEMBER, x->node, 0);
    if (q != NULL && q->lost && q->inc != x->inc) {
        q->hello_try_ns = 0; /* our own link to it: HELLO now */
        send_hello(d, q, 0);
    }
}

static void frame_in(hbd_t *d, uint32_t from, const void *data, size_t len, int fd)
{
    hbd_wire_ctx_t ctx = {.n_nodes = d->topo->n_nodes, .job_max = UINT32_MAX, .peer = from};
    hbd_wire_msg_t m;
    hbd_wire_reason_t why = HBD_WIRE_OK;
    hbd_peer_t *p = peer_get(d, from);
    if (p == NULL && from < d->topo->n_nodes && from != d->self &&
        hbd_wire_decode(data, len, &ctx, &m, &why) == 0 &&
        ((m.type == HBD_WIRE_HELLO && !(m.flags & HBD_WIRE_F_REPLY)) || m.type == HBD_WIRE_COLL)) {
        /* a cluster member (CurveZMQ-authenticated) linking on demand for a collective */
        add_peer(d, from);
        p = peer_get(d, from);
    }
    if (p == NULL) {
        /* not a neighbour (or not a routing id of ours): never trusted, but decoded so the
         * counters say what was wrong with it */
        d->st.rx_unknown_peer++;
        ctx.peer = UINT32_MAX;
        if (hbd_wire_decode(data, len, &ctx, &m, &why) == 0)
            why = HBD_WIRE_BAD_NODE;
    } else if (hbd_wire_decode(data, len, &ctx, &m, &why) == 0) {
        if (m.type == HBD_WIRE_HELLO) {
            why = hello_in(d, p, &m, fd);
            if (why == HBD_WIRE_OK)
                return;
        } else if (p->lost) {
            /* a node this daemon took for lost: what it says now is stale until it says HELLO
             * again (then it rejoins, hello_in) */
            if (d->st.rx_from_lost++ == 0)
                hb_log_warn("node %" PRIu32 " was lost but still sends: its frames are "
                            "dropped and counted (stats from_lost) until it rejoins",
                            from);
            return;
        } else if (p->inc != 0 && m.inc != hbd_wire_inc32(p->inc)) {
            why = HBD_WIRE_BAD_INC; /* from another incarnation of that node than the linked one */
        } else {
            hbd_peer_heard(p, hb_time_now_ns());
            d->st.rx_frames++;
            switch (m.type) {
            case HBD_WIRE_HEARTBEAT:
                /* a probe (see hbd_net_heartbeat) is answered at once; any frame ends a probe */
                if (!(m.flags & HBD_WIRE_F_REPLY))
                    (void)hbd_net_send(d, from, HBD_WIRE_HEARTBEAT, HBD_WIRE_F_REPLY, 0, NULL, 0);
                return;
            case HBD_WIRE_ABORT: {
                hbd_wire_abort_t a;
                hbd_wire_abort_unpack(m.payload, &a);
                abort_in(d, from, &a);
                return;
            }
            case HBD_WIRE_MEMBER: {
                hbd_wire_member_t x;
                hbd_wire_member_unpack(m.payload, &x);
                member_in(d, &x);
                return;
            }
            default:
                if (hbd_deliver(d, &m) == 0)
                    return;
                why = HBD_WIRE_BAD_TYPE;
            }
        }
    }
    d->st.rx_bad[why]++;
    d->st.rx_bad_total++;
    int *warned = p != NULL ? &p->warned : &d->warned_unknown;
    if (!*warned) {
        *warned = 1;
        hb_log_warn("dropped a malformed frame (%s, %zu bytes) from %s %" PRIu32
                    "; further ones from it are only counted",
                    hbd_wire_reason_name(why), len, p != NULL ? "node" : "unknown peer", from);
    }
}

/* One message off a ROUTER socket (nonblocking): its routing id in *id and its last part in
 * *body; returns how many parts followed the id (open messages: the caller closes both), or -1
 * when none is waiting (nothing left open). t0_p (or NULL): when it was taken off the socket. */
/* Receive [routing id][part]...: the first `max` parts are kept in part[] (always initialized:
 * close them), the rest are drained. The number of parts after the id, or -1 (none waiting). */
static int sock_recv(void *sock, zmq_msg_t *id, zmq_msg_t *part, int max, uint64_t *t0_p)
{
    if (!sock_readable(sock))
        return -1;
    if (t0_p != NULL)
        *t0_p = hb_time_now_ns();
    zmq_msg_init(id);
    if (z_msg_recv(id, sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(id);
        return -1;
    }
    for (int i = 0; i < max; i++)
        zmq_msg_init(&part[i]);
    int parts = 0, more = zmq_msg_more(id);
    while (more) {
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        zmq_msg_t *m = parts < max ? &part[parts] : &extra;
        int got = z_msg_recv(m, sock, ZMQ_DONTWAIT) >= 0;
        more = got && zmq_msg_more(m);
        parts += got;
        zmq_msg_close(&extra); /* beyond max: drained */
    }
    return parts;
}

/* What the ROUTER holds, up to a bounded batch (so control clients are not starved);
 * 1 when more may be waiting. */
static int router_batch(hbd_t *d)
{
    for (int batch = 0; batch < 256; batch++) {
        zmq_msg_t id, body;
        int parts = sock_recv(d->router, &id, &body, 1, &d->rx_t0_ns);
        if (parts < 0)
            return 0;
        uint32_t from = id_parse(zmq_msg_data(&id), zmq_msg_size(&id));
        if (parts == 1) {
            frame_in(d, from, zmq_msg_data(&body), zmq_msg_size(&body),
                     zmq_msg_get(&body, ZMQ_SRCFD));
        } else {
            d->st.rx_bad_parts++;
            d->st.rx_bad_total++;
        }
        zmq_msg_close(&body);
        zmq_msg_close(&id);
        if (d->stopping)
            return 0;
    }
    return 1;
}

static void router_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)fd;
    (void)what;
    if (router_batch(d))
        event_active(d->ev_router, EV_READ, 0); /* the rest on the next turn */
}

/* What the ROUTER holds now (the heartbeat check: answers waiting behind a stall), at most 64
 * batches: peers that keep sending cannot hold the check; the rest goes by router_cb. */
static void router_drain(hbd_t *d)
{
    for (int i = 0; i < 64 && d->router != NULL && !d->stopping; i++)
        if (!router_batch(d))
            return;
    if (d->router != NULL && !d->stopping)
        event_active(d->ev_router, EV_READ, 0); /* more waiting: the next turn takes it */
}

/* A frame on the plain data socket (whole, or a COLL header and its data): collective segments
 * and fence data from a peer we said HELLO to, only. */
static void data_in(hbd_t *d, uint32_t from, zmq_msg_t *head, zmq_msg_t *tail)
{
    hbd_wire_ctx_t ctx = {.n_nodes = d->topo->n_nodes, .job_max = UINT32_MAX, .peer = from};
    hbd_wire_msg_t m;
    hbd_wire_reason_t why = HBD_WIRE_OK;
    hbd_peer_t *p = peer_get(d, from);
    const uint8_t *data = NULL;
    int rc = tail == NULL ? hbd_wire_decode(zmq_msg_data(head), zmq_msg_size(head), &ctx, &m, &why)
                          : hbd_wire_decode_coll_split(zmq_msg_data(head), zmq_msg_size(head),
                                                       zmq_msg_size(tail), &ctx, &m, &why);
    if (p != NULL && (p->lost || (rc == 0 && p->inc != 0 && m.inc != hbd_wire_inc32(p->inc)))) {
        d->st.rx_from_lost += p->lost;
        d->st.rx_bad[HBD_WIRE_BAD_INC] += !p->lost; /* another incarnation's */
        return;
    }
    /* the ZAP handler let it in only with the token our HELLO gave it: a peer we know, even if
     * its own HELLO on the encrypted link has not arrived yet (an on-demand link's data may
     * come first; dropping it lost a segment and timed the collective out) */
    if (p == NULL || rc != 0 ||
        !(m.type == HBD_WIRE_COLL || (m.type == HBD_WIRE_FENCE && tail == NULL))) {
        if (d->st.data_bad++ == 0)
            hb_log_warn("data plane: dropped a frame from %" PRIu32
                        " (%s, %zu bytes); further ones are only counted",
                        from,
                        why != HBD_WIRE_OK ? hbd_wire_reason_name(why)
                        : p == NULL        ? "no neighbour"
                                           : "not COLL or FENCE",
                        zmq_msg_size(head));
        return;
    }
    p->last_rx_ns = hb_time_now_ns();
    d->st.rx_frames++;
    d->st.data_rx++;
    if (m.type == HBD_WIRE_FENCE) {
        (void)hbd_deliver(d, &m);
        return;
    }
    data = tail != NULL ? zmq_msg_data(tail) : m.payload + HBD_WIRE_COLL_HDR;
    if (d->rx[HBD_WIRE_COLL].on_seg != NULL)
        d->rx[HBD_WIRE_COLL].on_seg(d, &m, data);
}

/* The plain data socket: [routing id][frame] or [routing id][COLL header][data], the id bound
 * to the token by the ZAP handler. */
static void data_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)fd;
    (void)what;
    for (int batch = 0; batch < 256; batch++) {
        zmq_msg_t id, part[2];
        int parts = sock_recv(d->data_in, &id, part, 2, NULL);
        if (parts < 0)
            return;
        uint32_t from = id_parse(zmq_msg_data(&id), zmq_msg_size(&id));
        const char *uid = parts >= 1 ? zmq_msg_gets(&part[0], "User-Id") : NULL;
        char want[HBD_ID_MAX];
        idstr(want, 'n', from);
        if ((parts == 1 || parts == 2) && from != UINT32_MAX && uid != NULL &&
            strcmp(uid, want) == 0) {
            /* one frame, or a COLL header and its data sent without a copy (hbd_net_send_coll) */
            data_in(d, from, &part[0], parts == 2 ? &part[1] : NULL);
        } else if (d->st.data_bad++ == 0) {
            hb_log_warn("data plane: dropped a message (%d parts, sender %s); further ones are "
                        "only counted",
                        parts, uid != NULL ? uid : "unknown");
        }
        zmq_msg_close(&part[0]);
        zmq_msg_close(&part[1]);
        zmq_msg_close(&id);
        if (d->stopping)
            return;
    }
    event_active(d->ev_data, EV_READ, 0);
}

/* A PLAIN client of the data socket: "n<id>" of a peer, with the token we gave that peer. */
static int zap_plain_ok(hbd_t *d, zmq_msg_t *user, zmq_msg_t *pass)
{
    char pw[2 * HBD_WIRE_TOKEN_LEN + 1];
    uint32_t from = id_parse(zmq_msg_data(user), zmq_msg_size(user));
    hbd_peer_t *p = peer_get(d, from);
    if (p == NULL || d->data_in == NULL)
        return 0;
    token_hex(p->given_token, pw);
    return zmq_msg_size(pass) == strlen(pw) && memcmp(zmq_msg_data(pass), pw, strlen(pw)) == 0;
}

/* ZAP (RFC 27): admit only CurveZMQ clients that prove they hold the cluster key, and on the
 * data socket PLAIN clients with their token. */
static void zap_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)fd;
    (void)what;
    for (;;) {
        if (!sock_readable(d->zap))
            return;
        zmq_msg_t part[8];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t tmp;
            zmq_msg_init(&tmp);
            if (z_msg_recv(&tmp, d->zap, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&tmp);
                break;
            }
            more = zmq_msg_more(&tmp);
            if (n < 8)
                part[n++] = tmp;
            else
                zmq_msg_close(&tmp);
        }
        /* version, request id, domain, address, identity, mechanism, credentials... */
        int plain = n == 8 && zmq_msg_size(&part[2]) == 10 &&
                    memcmp(zmq_msg_data(&part[2]), "hibar-data", 10) == 0 &&
                    zmq_msg_size(&part[5]) == 5 && memcmp(zmq_msg_data(&part[5]), "PLAIN", 5) == 0;
        int ok = plain ? zap_plain_ok(d, &part[6], &part[7])
                       : n >= 7 && zmq_msg_size(&part[5]) == 5 &&
                             memcmp(zmq_msg_data(&part[5]), "CURVE", 5) == 0 &&
                             zmq_msg_size(&part[6]) == 32 &&
                             memcmp(zmq_msg_data(&part[6]), d->pub, 32) == 0;
        if (!ok && plain) {
            if (d->st.data_denied++ == 0)
                hb_log_warn("data plane: refused a connection without a valid token (further "
                            "refusals are only counted)");
        } else if (!ok) {
            if (d->st.auth_denied++ == 0)
                hb_log_warn("refused a connection without the cluster key (further refusals "
                            "are only counted)");
        }
        if (n >= 2) {
            const char *code = ok ? "200" : "400", *text = ok ? "OK" : "not a cluster member";
            z_send(d->zap, "1.0", 3, ZMQ_SNDMORE | ZMQ_DONTWAIT);
            z_send(d->zap, zmq_msg_data(&part[1]), zmq_msg_size(&part[1]),
                   ZMQ_SNDMORE | ZMQ_DONTWAIT);
            z_send(d->zap, code, 3, ZMQ_SNDMORE | ZMQ_DONTWAIT);
            z_send(d->zap, text, strlen(text), ZMQ_SNDMORE | ZMQ_DONTWAIT);
            /* the user id: "hibar", or on the data socket the node the token belongs to */
            const void *uid = plain ? zmq_msg_data(&part[6]) : "hibar";
            size_t uidl = plain ? zmq_msg_size(&part[6]) : 5;
            z_send(d->zap, ok ? uid : "", ok ? uidl : 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
            z_send(d->zap, "", 0, ZMQ_DONTWAIT);
        }
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
    }
}

/* Socket monitor: a DISCONNECTED on an outgoing connection names the neighbour behind it. */
static void mon_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)fd;
    (void)what;
    for (;;) {
        if (!sock_readable(d->mon))
            return;
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        zmq_msg_init(&addr);
        if (z_msg_recv(&ev, d->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            zmq_msg_close(&addr);
            return;
        }
        if (zmq_msg_more(&ev) && z_msg_recv(&addr, d->mon, ZMQ_DONTWAIT) >= 0 &&
            zmq_msg_size(&ev) >= 2) {
            const uint8_t *e = zmq_msg_data(&ev);
            uint16_t id = (uint16_t)(e[0] | e[1] << 8);
            int efd = zmq_msg_size(&ev) >= 6 ? (int)hbd_wire_get32(e + 2) : -1;
            size_t al = zmq_msg_size(&addr);
            hb_log_debug("monitor: event %#x value %d endpoint %.*s", id, efd, (int)al,
                         (const char *)zmq_msg_data(&addr));
            if (id == ZMQ_EVENT_DISCONNECTED) {
                for (uint32_t i = 0; i < d->n_peers; i++) {
                    hbd_peer_t *p = &d->peers[i];
                    int match = p->outgoing ? strlen(p->endpoint) == al &&
                                                  memcmp(p->endpoint, zmq_msg_data(&addr), al) == 0
                                            : p->fd >= 0 && p->fd == efd;
                    if (p->hello_ack && !p->lost && match) {
                        hb_log_info("connection to node %" PRIu32 " (%s) closed", p->node,
                                    p->endpoint);
                        if (!d->stopping)
                            hbd_net_peer_suspect(d, p->node);
                    }
                }
            }
        }
        zmq_msg_close(&ev);
        zmq_msg_close(&addr);
    }
}

/* The endpoint of a neighbour: from the file (static) or the run dir (local). 1 when known. */
static int peer_resolve(hbd_t *d, hbd_peer_t *p)
{
    const hb_cfg_node_t *n = &d->cfg->nodes[p->node];
    if (p->endpoint[0] != '\0')
        return 1;
    if (n->port != 0) {
        snprintf(p->endpoint, sizeof(p->endpoint), "tcp://%s:%u", n->address, n->port);
        return 1;
    }
    char path[400], buf[128];
    snprintf(path, sizeof(path), "%s/%s.port", d->run_dir, n->name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 6)
        return 0;
    buf[r] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (strncmp(buf, "tcp://", 6) != 0)
        return 0;
    snprintf(p->endpoint, sizeof(p->endpoint), "%s", buf);
    return 1;
}

/* Connect the ROUTER to a resolved outgoing peer under its routing id: 0, or IO (logged; the
 * endpoint is forgotten, so it is resolved again next time). */
static int peer_connect(hbd_t *d, hbd_peer_t *p)
{
    char id[HBD_ID_MAX];
    peer_id(p, 0, id);
    if (zmq_setsockopt(d->router, ZMQ_CONNECT_ROUTING_ID, id, strlen(id)) != 0 ||
        zmq_connect(d->router, p->endpoint) != 0) {
        hb_log_error("connect to node %" PRIu32 " at %s: %s", p->node, p->endpoint,
                     zmq_strerror(errno));
        p->endpoint[0] = '\0';
        return HB_ERR_IO;
    }
    p->connected = 1;
    return 0;
}

/*
 * ZeroMQ's heartbeats run on the connections this daemon opened; on the ones it accepted it
 * relies on the TTL the peer's PINGs carry. But libzmq disarms that TTL timer on every data
 * frame and re-arms it only on the next PING, so a peer that hangs between a data frame and
 * its next PING is never timed out. While barriers are in flight (the only time a hung peer
 * matters), the daemon therefore probes those peers itself: a HEARTBEAT every interval, and
 * a peer that answers nothing for the heartbeat timeout is lost. Idle daemons send nothing.
 *
 * A probe unanswered is judged only by a daemon that was itself running. When this check
 * comes late (`stalled_ns`, hbd_cron.c: more than a quarter of the timeout past its tick; the
 * daemon was not scheduled on a loaded host, or its loop was held) the answers may still be on
 * their way through its own I/O thread: it takes what its socket holds and starts the probes'
 * clocks over (stat hb_stalls), at most once per timeout, so a dead peer is still found within
 * twice the timeout by a daemon that is always late. Before any verdict it reads what its
 * socket holds (design.md 5.1).
 */
static int probe_overdue(const hbd_peer_t *p, uint64_t now, uint64_t to)
{
    return !p->outgoing && p->hello_ack && !p->lost && p->probe_ns != 0 && now - p->probe_ns > to;
}

void hbd_net_heartbeat(hbd_t *d, uint64_t now, uint64_t stalled_ns)
{
    uint64_t ivl = (uint64_t)d->cfg->heartbeat_interval_ms * 1000000ull;
    uint64_t to = (uint64_t)d->cfg->heartbeat_timeout_ms * 1000000ull;
    if (stalled_ns != 0 && now - d->hb_reset_ns >= to) {
        hb_log_warn("this daemon ran %" PRIu64 " ms late (not scheduled, or its loop held): "
                    "its heartbeat probes start over",
                    stalled_ns / 1000000u);
        d->hb_reset_ns = now;
        d->st.hb_stalls++;
        router_drain(d);
        if (d->stopping)
            return;
        for (uint32_t i = 0; i < d->n_peers; i++)
            if (d->peers[i].probe_ns != 0)
                d->peers[i].probe_ns = now;
    }
    for (uint32_t i = 0; i < d->n_peers; i++) {
        if (probe_overdue(&d->peers[i], now, to)) {
            router_drain(d); /* its answer may be waiting here: the verdict on what is read */
            if (d->stopping)
                return;
            break;
        }
    }
    for (uint32_t i = 0; i < d->n_peers; i++) {
        hbd_peer_t *p = &d->peers[i];
        if (p->outgoing || !p->hello_ack || p->lost)
            continue;
        if (probe_overdue(p, now, to)) {
            hb_log_warn("node %" PRIu32 " answered no heartbeat for %" PRIu32 " ms", p->node,
                        d->cfg->heartbeat_timeout_ms);
            hbd_net_peer_suspect(d, p->node);
            return;
        }
        if (now - p->last_rx_ns >= ivl && now - p->probe_last_ns >= ivl) {
            if (p->probe_ns == 0)
                p->probe_ns = now;
            p->probe_last_ns = now;
            (void)hbd_net_send(d, p->node, HBD_WIRE_HEARTBEAT, 0, 0, NULL, 0);
        }
    }
}

/* Local bootstrap: a lost neighbour may have come back at another port (its port file says);
 * connect there instead. */
static void endpoint_refresh(hbd_t *d, hbd_peer_t *p)
{
    char old[sizeof(p->endpoint)];
    if (d->cfg->nodes[p->node].port != 0 || !p->outgoing)
        return;
    snprintf(old, sizeof(old), "%s", p->endpoint);
    p->endpoint[0] = '\0';
    if (!peer_resolve(d, p) || strcmp(old, p->endpoint) == 0) {
        snprintf(p->endpoint, sizeof(p->endpoint), "%s", old);
        return;
    }
    if (p->connected && old[0] != '\0') {
        zmq_disconnect(d->router, old);
        p->zgen++; /* the next connection goes by another name (peer_id) */
    }
    p->connected = 0;
    (void)peer_connect(d, p);
}

int hbd_net_retry(hbd_t *d, uint64_t now)
{
    if (d->ready) {
        /* a peer lost or not linked (it went, we rejoined, or an on-demand link's first HELLO
         * found no connection yet): HELLO now and then, so a restarted node, or one that was
         * stopped or cut off, comes back */
        int pending = 0;
        uint64_t to = (uint64_t)d->cfg->heartbeat_timeout_ms * 1000000ull;
        for (uint32_t i = 0; i < d->n_peers; i++) {
            hbd_peer_t *p = &d->peers[i];
            if (p->suspect_ns != 0 && !p->lost && now - p->suspect_ns >= to) {
                /* held back after our rejoin, and its link did not come back: lost */
                p->suspect_ns = 0;
                hbd_net_peer_lost(d, p->node, HB_ERR_PEER_LOST);
                return 1;
            }
            if (!p->lost && p->hello_rx && p->hello_ack)
                continue;
            pending = 1;
            if (now - p->hello_try_ns < HBD_REJOIN_NS)
                continue;
            p->hello_try_ns = now;
            endpoint_refresh(d, p);
            if (p->outgoing && !p->connected && peer_resolve(d, p))
                (void)peer_connect(d, p);
            send_hello(d, p, 0);
        }
        return pending;
    }
    int resend = now - d->last_hello_ns >= HBD_HELLO_RESEND_NS;
    for (uint32_t i = 0; i < d->n_peers; i++) {
        hbd_peer_t *p = &d->peers[i];
        if (p->outgoing && !p->connected && peer_resolve(d, p)) {
            if (peer_connect(d, p) != 0)
                continue;
            resend = 1;
        }
    }
    if (resend) {
        d->last_hello_ns = now;
        for (uint32_t i = 0; i < d->n_peers; i++)
            if (d->peers[i].outgoing && d->peers[i].connected && !d->peers[i].hello_ack)
                send_hello(d, &d->peers[i], 0);
    }
    return 1;
}

void hbd_net_heartbeat_idle(hbd_t *d)
{
    for (uint32_t i = 0; i < d->n_peers; i++)
        d->peers[i].probe_ns = 0;
}

/*
 * High-water marks, set on purpose (libzmq's default is 1000 messages a peer): the encrypted
 * link carries small frames (barrier tokens, JOB and dmodex frames of at most 32 KiB, fence
 * and collective data where there is no plain data plane), the plain data plane frames of up to
 * 256 KiB. A peer's queue that reaches its mark makes the send return HB_ERR_WOULD_BLOCK
 * (ROUTER_MANDATORY: EAGAIN), and every sender queues and retries (hbd_barrier.c, hbd_coll.c,
 * hbd_fence.c, hbd_relay.c): backpressure, never a lost peer. Worst case held by ZeroMQ per
 * peer: 4096 x 32 KiB = 128 MiB on the link, 256 x 256 KiB = 64 MiB on the data plane.
 */
#define HBD_NET_HWM 4096
#define HBD_NET_DATA_HWM 256

static int sockopt_int(void *s, int opt, int v, const char *name)
{
    if (zmq_setsockopt(s, opt, &v, sizeof(v)) != 0) {
        hb_log_error("zmq_setsockopt(%s): %s", name, zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }
    return 0;
}

static int add_peer(hbd_t *d, uint32_t node)
{
    if (node == d->self || node >= d->topo->n_nodes || d->peer_of[node] != UINT32_MAX)
        return 0;
    d->peer_of[node] = d->n_peers;
    hbd_peer_t *p = &d->peers[d->n_peers++];
    memset(p, 0, sizeof(*p));
    p->node = node;
    p->fd = -1;
    p->outgoing = node < d->self; /* the higher id connects */
    /* the token it must present at our data socket: fresh per start (HELLO carries it on
     * the encrypted link) */
    if (getrandom(p->given_token, sizeof(p->given_token), 0) != (ssize_t)sizeof(p->given_token))
        return HB_ERR_INTERNAL;
    return 0;
}

int hbd_net_link(hbd_t *d, uint32_t node)
{
    hbd_peer_t *p;
    if (node == d->self || node >= d->topo->n_nodes)
        return HB_ERR_INVAL;
    add_peer(d, node);
    p = peer_get(d, node);
    if (p->lost && hbd_node_lost(d, node))
        return HB_ERR_PEER_LOST;
    if (p->lost) { /* lost once, and back since (MEMBER): link to its new incarnation */
        peer_restart(d, p);
        p->inc = 0; /* whichever its HELLO says (hello_in) */
        endpoint_refresh(d, p);
    }
    if (p->hello_rx && p->hello_ack)
        return 0;
    if (p->outgoing && !p->connected && peer_resolve(d, p)) {
        int crc = peer_connect(d, p);
        if (crc != 0)
            return crc;
    }
    if (p->outgoing && p->connected)
        send_hello(d, p, 0);
    return HB_ERR_WOULD_BLOCK;
}

int hbd_net_peer_up(hbd_t *d, uint32_t node)
{
    hbd_peer_t *p = peer_get(d, node);
    return p != NULL && !p->lost && p->hello_rx && p->hello_ack;
}

static int write_port_file(hbd_t *d)
{
    char tmp[400], err[768];
    snprintf(tmp, sizeof(tmp), "%s.tmp", d->port_path);
    int fd = hb_file_create(tmp, O_WRONLY, 0600, err, sizeof(err)); /* O_EXCL, O_NOFOLLOW */
    if (fd < 0) {
        hb_log_error("port file: %s", err);
        return HB_ERR_IO;
    }
    /* line 1: the encrypted link's endpoint (peers read only this line); then, for tools and
     * tests, "data PORT" with a plain data plane and "fast PORT" with a fast lane */
    char line2[64] = "";
    if (d->data_port != 0)
        snprintf(line2, sizeof(line2), "data %" PRIu32 "\n", d->data_port);
    if (hbd_fast_port(d) != 0)
        snprintf(line2 + strlen(line2), sizeof(line2) - strlen(line2), "fast %" PRIu32 "\n",
                 hbd_fast_port(d));
    size_t len = strlen(d->endpoint), l2 = strlen(line2);
    if (write(fd, d->endpoint, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
        write(fd, line2, l2) != (ssize_t)l2) {
        hb_log_error("cannot write %s: %m", tmp);
        close(fd);
        unlink(tmp);
        return HB_ERR_IO;
    }
    close(fd);
    if (rename(tmp, d->port_path) != 0) {
        hb_log_error("cannot rename %s: %m", tmp);
        unlink(tmp);
        return HB_ERR_IO;
    }
    d->port_written = 1;
    return 0;
}

/*
 * data_plane plain: data_in (ROUTER, PLAIN server, ZAP domain "hibar-data") bound on the
 * node's address at a system-chosen port, announced in HELLO; data_out (ROUTER, PLAIN client
 * as "n<self>") connects to a peer when its HELLO comes, else on the first send (data_link).
 * Neither carries anything but COLL and FENCE frames (collective segments, PMIx fence data).
 */
static int data_start(hbd_t *d, const hb_cfg_node_t *cn)
{
    char id[HBD_ID_MAX], ep[160];
    int64_t maxmsg = HBD_WIRE_COLL_MAX_FRAME + 1024;
    idstr(id, 'n', d->self);
    d->data_in = zmq_socket(d->zctx, ZMQ_ROUTER);
    d->data_out = zmq_socket(d->zctx, ZMQ_ROUTER);
    if (d->data_in == NULL || d->data_out == NULL ||
        sockopt_int(d->data_in, ZMQ_LINGER, 0, "LINGER") ||
        sockopt_int(d->data_in, ZMQ_PLAIN_SERVER, 1, "PLAIN_SERVER") ||
        sockopt_int(d->data_in, ZMQ_ROUTER_HANDOVER, 1, "ROUTER_HANDOVER") ||
        zmq_setsockopt(d->data_in, ZMQ_ZAP_DOMAIN, "hibar-data", 10) != 0 ||
        zmq_setsockopt(d->data_in, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg)) != 0 ||
        zmq_setsockopt(d->data_out, ZMQ_ROUTING_ID, id, strlen(id)) != 0 ||
        sockopt_int(d->data_out, ZMQ_ROUTER_MANDATORY, 1, "ROUTER_MANDATORY") ||
        sockopt_int(d->data_out, ZMQ_SNDHWM, HBD_NET_DATA_HWM, "SNDHWM") ||
        sockopt_int(d->data_in, ZMQ_RCVHWM, HBD_NET_DATA_HWM, "RCVHWM") ||
        sockopt_int(d->data_out, ZMQ_LINGER, 0, "LINGER") ||
        sockopt_int(d->data_out, ZMQ_RECONNECT_IVL, 100, "RECONNECT_IVL") ||
        zmq_setsockopt(d->data_out, ZMQ_PLAIN_USERNAME, id, strlen(id)) != 0) {
        hb_log_error("data plane sockets: %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }
    snprintf(ep, sizeof(ep), "tcp://%s:*", cn->address);
    size_t el = sizeof(ep);
    if (zmq_bind(d->data_in, ep) != 0 || zmq_getsockopt(d->data_in, ZMQ_LAST_ENDPOINT, ep, &el)) {
        hb_log_error("data plane: bind tcp://%s:*: %s", cn->address, zmq_strerror(errno));
        return HB_ERR_IO;
    }
    const char *colon = strrchr(ep, ':');
    d->data_port = colon != NULL ? (uint32_t)strtoul(colon + 1, NULL, 10) : 0;
    if (d->data_port == 0 || d->data_port > 65535) {
        hb_log_error("data plane: cannot tell the port of %s", ep);
        return HB_ERR_IO;
    }
    hb_log_info("data plane (plain) on %s", ep);
    return 0;
}

/* ZeroMQ's I/O threads: data_threads, or one per core of the node up to 4 (an emulated
 * cluster's daemons share this host's cores: its share). Each connection is served by one of
 * them, so a large collective's links to several nodes (coll_bulk_min) are written and read at
 * once where the cores allow; idle, they sleep in epoll. */
static uint32_t io_threads(const hbd_t *d)
{
    uint32_t n = d->cfg->data_threads;
    if (n > 0)
        return n;
    n = hbd_node_cores(d);
    if (d->cfg->bootstrap == HB_CFG_BOOT_LOCAL && d->topo->n_nodes > 0)
        n /= d->topo->n_nodes;
    return n < 1 ? 1 : n > 4 ? 4 : n;
}

int hbd_net_start(hbd_t *d)
{
    const hb_topo_t *t = d->topo;
    const hb_topo_node_t *me = &t->nodes[d->self];
    const hb_topo_chassis_t *ch = &t->chassis[me->chassis];
    const hb_cfg_node_t *cn = &d->cfg->nodes[d->self];
    char id[HBD_ID_MAX], mon_ep[64], bind_ep[160];
    int rc = HB_ERR_INTERNAL;

    d->peer_of = malloc(sizeof(uint32_t) * t->n_nodes);
    /* room for every node: collectives link to any node on demand (hbd_net_link) */
    d->peers = calloc(t->n_nodes, sizeof(hbd_peer_t));
    d->node_inc = calloc(t->n_nodes, sizeof(uint64_t));
    if (d->peer_of == NULL || d->peers == NULL || d->node_inc == NULL)
        return HB_ERR_NOMEM;
    if (d->inc == 0)
        d->inc = real_ns(); /* this start's incarnation */
    d->node_inc[d->self] = d->inc;
    for (uint32_t i = 0; i < t->n_nodes; i++)
        d->peer_of[i] = UINT32_MAX;
    /* neighbours: the tree links and the chassis mates (the failure flood needs them) */
    if (me->parent != HB_TOPO_NONE)
        add_peer(d, me->parent);
    for (uint32_t i = 0; i < me->n_children; i++)
        add_peer(d, hb_topo_center_of(t, me->children[i]));
    for (uint32_t i = 0; i < ch->n_nodes; i++)
        add_peer(d, ch->nodes[i]);

    d->zctx = zmq_ctx_new();
    if (d->zctx == NULL) {
        hb_log_error("zmq_ctx_new: %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }
    zmq_ctx_set(d->zctx, ZMQ_IO_THREADS, (int)io_threads(d));
    zmq_ctx_set(d->zctx, ZMQ_BLOCKY, 0);

    /* the ZAP handler must exist before the first connection is accepted */
    d->zap = zmq_socket(d->zctx, ZMQ_REP);
    if (d->zap == NULL || zmq_bind(d->zap, "inproc://zeromq.zap.01") != 0) {
        hb_log_error("ZAP handler: %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }

    d->router = zmq_socket(d->zctx, ZMQ_ROUTER);
    if (d->router == NULL) {
        hb_log_error("zmq_socket(ROUTER): %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }
    idstr(id, 'n', d->self);
    uint32_t hb_ivl = d->cfg->heartbeat_interval_ms, hb_to = d->cfg->heartbeat_timeout_ms;
    if (zmq_setsockopt(d->router, ZMQ_ROUTING_ID, id, strlen(id)) != 0 ||
        sockopt_int(d->router, ZMQ_ROUTER_MANDATORY, 1, "ROUTER_MANDATORY") ||
        /* a restarted peer's new connection takes its routing id over from the old one */
        sockopt_int(d->router, ZMQ_ROUTER_HANDOVER, 1, "ROUTER_HANDOVER") ||

        sockopt_int(d->router, ZMQ_SNDHWM, HBD_NET_HWM, "SNDHWM") ||
        sockopt_int(d->router, ZMQ_RCVHWM, HBD_NET_HWM, "RCVHWM") ||
        sockopt_int(d->router, ZMQ_LINGER, 0, "LINGER") ||
        sockopt_int(d->router, ZMQ_RECONNECT_IVL, 100, "RECONNECT_IVL") ||
        sockopt_int(d->router, ZMQ_CURVE_SERVER, 1, "CURVE_SERVER") ||
        zmq_setsockopt(d->router, ZMQ_CURVE_SECRETKEY, d->sec, 32) != 0 ||
        zmq_setsockopt(d->router, ZMQ_ZAP_DOMAIN, "hibar", 5) != 0) {
        hb_log_error("configuring the ROUTER socket: %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }
    /* frames above 64 KiB close the connection; smaller bad ones are decoded and counted */
    int64_t maxmsg = HBD_WIRE_COLL_MAX_FRAME + 1024;
    zmq_setsockopt(d->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));

    if (cn->port != 0)
        snprintf(bind_ep, sizeof(bind_ep), "tcp://%s:%u", cn->address, cn->port);
    else
        snprintf(bind_ep, sizeof(bind_ep), "tcp://%s:*", cn->address);
    if (zmq_bind(d->router, bind_ep) != 0) {
        hb_log_error("bind %s: %s", bind_ep, zmq_strerror(errno));
        return HB_ERR_IO;
    }
    size_t el = sizeof(d->endpoint);
    zmq_getsockopt(d->router, ZMQ_LAST_ENDPOINT, d->endpoint, &el);
    /* from here on the socket connects as a CurveZMQ client with the same cluster key, and
     * the connections it makes carry the heartbeats (the TTL covers the accepting side) */
    if (sockopt_int(d->router, ZMQ_HEARTBEAT_IVL, (int)hb_ivl, "HEARTBEAT_IVL") ||
        sockopt_int(d->router, ZMQ_HEARTBEAT_TIMEOUT, (int)hb_to, "HEARTBEAT_TIMEOUT") ||
        sockopt_int(d->router, ZMQ_HEARTBEAT_TTL, (int)hb_to, "HEARTBEAT_TTL") ||
        zmq_setsockopt(d->router, ZMQ_CURVE_SERVERKEY, d->pub, 32) != 0 ||
        zmq_setsockopt(d->router, ZMQ_CURVE_PUBLICKEY, d->pub, 32) != 0 ||
        zmq_setsockopt(d->router, ZMQ_CURVE_SECRETKEY, d->sec, 32) != 0) {
        hb_log_error("CurveZMQ client keys: %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }

    if (d->cfg->data_plane == HB_CFG_DATA_PLAIN && (rc = data_start(d, cn)) != 0)
        return rc;
    if ((rc = hbd_fast_start(d, cn->address, check_ready)) != 0)
        return rc;

    snprintf(mon_ep, sizeof(mon_ep), HBD_MON_ENDPOINT_FMT, (unsigned)getpid());
    d->mon = zmq_socket(d->zctx, ZMQ_PAIR);
    if (zmq_socket_monitor(d->router, mon_ep, ZMQ_EVENT_DISCONNECTED) != 0 || d->mon == NULL ||
        zmq_connect(d->mon, mon_ep) != 0) {
        hb_log_error("socket monitor: %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }

    struct {
        void *sock;
        struct event **ev;
        event_callback_fn cb;
    } socks[] = {{d->router, &d->ev_router, router_cb},
                 {d->zap, &d->ev_zap, zap_cb},
                 {d->mon, &d->ev_mon, mon_cb},
                 {d->data_in, &d->ev_data, data_cb}};
    for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++) {
        if (socks[i].sock == NULL)
            continue; /* no data plane */
        int zfd;
        size_t sz = sizeof(zfd);
        if (zmq_getsockopt(socks[i].sock, ZMQ_FD, &zfd, &sz) != 0) {
            hb_log_error("ZMQ_FD: %s", zmq_strerror(errno));
            return HB_ERR_INTERNAL;
        }
        *socks[i].ev = event_new(d->base, zfd, EV_READ | EV_PERSIST | EV_ET, socks[i].cb, d);
        if (*socks[i].ev == NULL || event_add(*socks[i].ev, NULL) != 0)
            return HB_ERR_NOMEM;
        event_active(*socks[i].ev, EV_READ, 0); /* pick up anything queued before */
    }

    if (d->cfg->bootstrap == HB_CFG_BOOT_LOCAL && (rc = write_port_file(d)) != 0)
        return rc;
    if (d->n_peers == 0)
        check_ready(d);
    hb_log_info("node %s (%" PRIu32 ") listening on %s, %" PRIu32 " neighbours", d->name, d->self,
                d->endpoint, d->n_peers);
    return 0;
}

void hbd_net_stop(hbd_t *d)
{
    struct event **evs[] = {&d->ev_router, &d->ev_zap, &d->ev_mon, &d->ev_data};
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
        if (*evs[i] != NULL) {
            event_free(*evs[i]);
            *evs[i] = NULL;
        }
    if (d->router != NULL) {
        zmq_socket_monitor(d->router, NULL, 0);
        zmq_close(d->router);
    }
    if (d->mon != NULL)
        zmq_close(d->mon);
    if (d->zap != NULL)
        zmq_close(d->zap);
    if (d->data_in != NULL)
        zmq_close(d->data_in);
    if (d->data_out != NULL)
        zmq_close(d->data_out);
    d->router = d->mon = d->zap = d->data_in = d->data_out = NULL;
    if (d->zctx != NULL)
        zmq_ctx_term(d->zctx);
    d->zctx = NULL;
    if (d->port_written)
        unlink(d->port_path);
    d->port_written = 0;
    hbd_fast_stop(d);
    free(d->peers);
    free(d->peer_of);
    free(d->lost_set);
    free(d->node_inc);
    hb_topo_free(d->live);
    d->lost_set = NULL;
    d->node_inc = NULL;
    d->live = NULL;
    d->peers = NULL;
    d->peer_of = NULL;
}
