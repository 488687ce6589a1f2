/* hbd_logp.c: PlogP probes between daemons: m-byte round trips and floods (hibar-bench logp). */
#include "hb_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_meas.h"
#include "hb_time.h"
#include "hbd_hooks.h"
#include "hbd_logp.h"
#include "hbd_net.h"
#include "hbd_timer.h"
#include "hb_status.h"

/*
 * Control command (one probe at a time per daemon):
 *   logp TO[,TO...] SIZE COUNT rtt|flood [MIN_REPS]
 * rtt    round trips to TO (the first): SIZE bytes out, a 12-byte answer back; repetitions
 *        from MIN_REPS (default 10) to COUNT until the 95% Student-t CI of the mean is
 *        within 2% of it (common/hb_meas). Reply:
 *          ok logp mode=rtt size=M to=N reps=R mean_us= median_us= min_us= max_us= p99_us=
 *             ci_us= os_us= or_us= converged=0|1
 *        os_us: time of this daemon's send call for the SIZE-byte frame (encode + hand to
 *        ZeroMQ), o_s(m); or_us: the peer's receive overhead for it, from taking the frame
 *        off its socket to handling it, o_r(m), as the peer reports in each answer.
 * flood  COUNT frames of SIZE bytes to every TO, round robin, back to back; only the last to
 *        each is answered. Reply: ok logp mode=flood size=M frames=F us=T os_us= or_us=
 *        (T: first send to the last answer).
 * The ECHO frames carry [seq u32][mode u32][SIZE bytes]; a mode-0 ECHO is the T_SR probe's
 * (echoed whole). Links to non-neighbours come up on demand.
 */

#define LOGP_RTT 1   /* answer with a short reply */
#define LOGP_FLOOD 2 /* no answer */
#define LOGP_LAST 3  /* the last of a flood to one peer: short reply */
#define LOGP_REPLY_LEN 12
#define LOGP_MAX_TO 256

typedef struct logp_probe {
    hbd_reply_t *conn;
    hbd_t *d;
    int flood;
    uint32_t to[LOGP_MAX_TO], nto;
    uint32_t size, count;
    uint32_t seq, sent, replies;
    uint64_t t0, t_start;
    double os_sum, or_sum;
    uint32_t os_n, or_n;
    hb_meas_adapt_t ad;
    int have_ad;
    uint8_t *buf;
    hbd_timer_t *timer; /* the next step: a link not up yet, a send queue full */
} logp_probe_t;

/* The T_SR probe: ping-pong with one neighbour (mode-0 ECHO frames, echoed whole). */
typedef struct logp_echo {
    hbd_reply_t *conn;
    uint32_t to, n, done;
    uint64_t t0;
    double *rtt;
} logp_echo_t;

/* The module's state in the daemon context (d->logp). */
struct hbd_logp {
    logp_probe_t lp;
    logp_echo_t echo;
};

static void logp_end(logp_probe_t *P)
{
    if (P->conn != NULL)
        hbd_reply_release(P->conn);
    if (P->have_ad)
        hb_meas_adapt_free(&P->ad);
    hbd_timer_free(P->timer);
    free(P->buf);
    memset(P, 0, sizeof(*P));
}

static void logp_fail(logp_probe_t *P, int rc)
{
    hbd_reply(P->conn, "err %d %s", rc, hb_status_str(rc));
    logp_end(P);
}

static void logp_arm(logp_probe_t *P, uint32_t usec)
{
    hbd_timer_arm(P->timer, usec, 1);
}

/* Send one frame; WOULD_BLOCK (queue full, link not up) is retried by the caller. */
static int logp_send(logp_probe_t *P, uint32_t to, uint32_t mode)
{
    uint64_t t;
    int rc;
    hbd_wire_put32(P->buf, P->seq);
    hbd_wire_put32(P->buf + 4, mode);
    t = hb_time_now_ns();
    rc = hbd_net_send(P->d, to, HBD_WIRE_ECHO, 0, 0, P->buf, 8 + P->size);
    if (rc == 0) {
        uint64_t e = hb_time_now_ns();
        P->os_sum += (double)(e - t) / 1e3;
        P->os_n++;
        if (P->t0 == 0 || !P->flood)
            P->t0 = t;
    }
    return rc;
}

static void logp_step(logp_probe_t *P)
{
    if (P->conn == NULL)
        return;
    for (uint32_t i = 0; i < P->nto; i++)
        if (!hbd_net_peer_up(P->d, P->to[i])) {
            if (hb_time_now_ns() - P->t_start > 10000000000ull) {
                logp_fail(P, HB_ERR_TIMEOUT);
                return;
            }
            (void)hbd_net_link(P->d, P->to[i]);
            logp_arm(P, 1000);
            return;
        }
    if (!P->flood) {
        int rc = logp_send(P, P->to[0], LOGP_RTT);
        if (rc == HB_ERR_WOULD_BLOCK)
            logp_arm(P, 100);
        else if (rc != 0)
            logp_fail(P, rc);
        return;
    }
    uint32_t total = P->count * P->nto;
    while (P->sent < total) {
        uint32_t to = P->to[P->sent % P->nto];
        int rc = logp_send(P, to, P->sent >= total - P->nto ? LOGP_LAST : LOGP_FLOOD);
        if (rc == HB_ERR_WOULD_BLOCK) {
            logp_arm(P, 100);
            return;
        }
        if (rc != 0) {
            logp_fail(P, rc);
            return;
        }
        P->sent++;
    }
}

static void logp_timer_cb(hbd_t *d, void *arg)
{
    (void)d;
    logp_step(arg);
}

/* "TO[,TO...] SIZE COUNT rtt|flood [MIN_REPS]" */
void hbd_logp_request(hbd_t *d, hbd_reply_t *conn, char *args)
{
    logp_probe_t *P = &d->logp->lp;
    char *tok[6] = {0}, *save = NULL, *end;
    int nt = 0;
    unsigned long size, count, minr = 10;
    hb_meas_opts_t mo;
    int rc;

    for (char *t = strtok_r(args, " \t", &save); t != NULL && nt < 6;
         t = strtok_r(NULL, " \t", &save))
        tok[nt++] = t;
    if (P->conn != NULL) {
        hbd_reply(conn, "err %d %s", HB_ERR_BUSY, hb_status_str(HB_ERR_BUSY));
        return;
    }
    if (!d->ready) {
        hbd_reply(conn, "err %d %s", HB_ERR_NOT_INIT, hb_status_str(HB_ERR_NOT_INIT));
        return;
    }
    if (nt < 4 || (strcmp(tok[3], "rtt") != 0 && strcmp(tok[3], "flood") != 0))
        goto usage;
    size = strtoul(tok[1], &end, 10);
    if (*end != '\0' || tok[1][0] == '-' || size > HBD_WIRE_COLL_MAX_DATA)
        goto usage;
    count = strtoul(tok[2], &end, 10);
    if (*end != '\0' || tok[2][0] == '-' || count < 1 || count > 100000)
        goto usage;
    if (nt >= 5) {
        minr = strtoul(tok[4], &end, 10);
        if (*end != '\0' || minr < 2 || minr > count)
            goto usage;
    }
    memset(P, 0, sizeof(*P));
    {
        char *s2 = NULL;
        for (char *t = strtok_r(tok[0], ",", &s2); t != NULL; t = strtok_r(NULL, ",", &s2)) {
            uint32_t id;
            unsigned long v = strtoul(t, &end, 10);
            if (*end == '\0' && t[0] != '-')
                id = v < d->topo->n_nodes ? (uint32_t)v : UINT32_MAX;
            else if (hb_cfg_node_find(d->cfg, t, &id) != 0)
                id = UINT32_MAX;
            if (id == UINT32_MAX || id == d->self || P->nto == LOGP_MAX_TO) {
                hbd_reply(conn, "err %d unknown node or this node '%.40s'", HB_ERR_INVAL, t);
                memset(P, 0, sizeof(*P));
                return;
            }
            P->to[P->nto++] = id;
        }
    }
    if (P->nto == 0)
        goto usage;
    P->d = d;
    P->flood = tok[3][0] == 'f';
    P->size = (uint32_t)size;
    P->count = (uint32_t)count;
    P->buf = calloc(1, 8 + size);
    P->timer = hbd_timer_new(d, logp_timer_cb, P);
    hb_meas_opts_default(&mo);
    mo.min_reps = (uint32_t)(count < 2 ? 2 : minr);
    mo.max_reps = (uint32_t)(count < 2 ? 2 : count);
    mo.rel_err = 0.02;
    rc = P->buf == NULL || P->timer == NULL ? HB_ERR_NOMEM : 0;
    if (rc == 0 && !P->flood) {
        rc = hb_meas_adapt_init(&P->ad, &mo);
        P->have_ad = rc == 0;
    }
    if (rc != 0) {
        P->conn = hbd_reply_hold(conn);
        logp_fail(P, rc);
        return;
    }
    P->conn = hbd_reply_hold(conn);
    P->t_start = hb_time_now_ns();
    for (uint32_t i = 0; i < P->nto; i++)
        if (!hbd_net_peer_up(d, P->to[i])) {
            rc = hbd_net_link(d, P->to[i]);
            if (rc != 0 && rc != HB_ERR_WOULD_BLOCK) {
                logp_fail(P, rc);
                return;
            }
        }
    logp_step(P);
    return;
usage:
    hbd_reply(conn,
              "err %d usage: logp TO[,TO...] SIZE(0..%d) COUNT(1..100000) rtt|flood [MIN_REPS]",
              HB_ERR_INVAL, HBD_WIRE_COLL_MAX_DATA);
}

/* An ECHO with a PlogP mode arrived: answer it if it asks (rx_t0: when it was taken off the
 * socket). */
static void on_echo(hbd_t *d, const hbd_wire_msg_t *m, uint64_t rx_t0)
{
    uint32_t mode = hbd_wire_get32(m->payload + 4);
    uint8_t pl[LOGP_REPLY_LEN];
    uint64_t or_ns = hb_time_now_ns() - rx_t0;
    if (mode != LOGP_RTT && mode != LOGP_LAST)
        return; /* flood: counted by nobody, answered by the last one */
    memcpy(pl, m->payload, 8);
    hbd_wire_put32(pl + 8, (uint32_t)(or_ns > UINT32_MAX ? UINT32_MAX : or_ns));
    (void)hbd_net_send(d, m->src, HBD_WIRE_ECHO, HBD_WIRE_F_REPLY, m->coll_id, pl, sizeof(pl));
}

/* The 12-byte answer to a PlogP ECHO. */
static void on_reply(hbd_t *d, const hbd_wire_msg_t *m)
{
    logp_probe_t *P = &d->logp->lp;
    uint64_t now = hb_time_now_ns();
    uint32_t seq = hbd_wire_get32(m->payload), mode = hbd_wire_get32(m->payload + 4);
    int found = 0;
    if (P->conn == NULL || m->len != LOGP_REPLY_LEN)
        return;
    for (uint32_t i = 0; i < P->nto; i++)
        found |= P->to[i] == m->src;
    if (!found || seq != P->seq)
        return; /* late: an abandoned probe's */
    P->or_sum += hbd_wire_get32(m->payload + 8) / 1e3;
    P->or_n++;
    if (!P->flood && mode == LOGP_RTT) {
        int r = hb_meas_adapt_add(&P->ad, (double)(now - P->t0) / 1e3);
        hb_stats_t st;
        if (r < 0) {
            logp_fail(P, r);
            return;
        }
        if (r == 0) {
            P->seq++;
            logp_step(P);
            return;
        }
        if (hb_meas_adapt_stats(&P->ad, &st) != 0) {
            logp_fail(P, HB_ERR_INTERNAL);
            return;
        }
        hbd_reply(P->conn,
                  "ok logp mode=rtt size=%" PRIu32 " to=%" PRIu32 " reps=%zu mean_us=%.3f "
                  "median_us=%.3f min_us=%.3f max_us=%.3f p99_us=%.3f ci_us=%.3f os_us=%.3f "
                  "or_us=%.3f converged=%d",
                  P->size, P->to[0], st.n, st.mean, st.median, st.min, st.max, st.p99, st.ci,
                  P->os_sum / (P->os_n ? P->os_n : 1), P->or_sum / (P->or_n ? P->or_n : 1),
                  st.ci <= 0.02 * st.mean);
        logp_end(P);
        return;
    }
    if (P->flood && mode == LOGP_LAST && ++P->replies == P->nto) {
        hbd_reply(P->conn,
                  "ok logp mode=flood size=%" PRIu32 " frames=%" PRIu32 " us=%.3f os_us=%.3f "
                  "or_us=%.3f",
                  P->size, P->sent, (double)(now - P->t0) / 1e3,
                  P->os_sum / (P->os_n ? P->os_n : 1), P->or_sum / (P->or_n ? P->or_n : 1));
        logp_end(P);
    }
}

/* ---- T_SR probe: ping-pong with one neighbour ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* End the T_SR probe with an error (its answer cannot come); why: NULL for rc's text. */
static void echo_fail(logp_echo_t *e, int rc, const char *why)
{
    if (e->conn == NULL)
        return;
    hbd_reply(e->conn, "err tsr %d %s", rc, why != NULL ? why : hb_status_str(rc));
    hbd_reply_release(e->conn);
    free(e->rtt);
    memset(e, 0, sizeof(*e));
}

static void echo_next(hbd_t *d, logp_echo_t *e)
{
    uint8_t pl[8];
    hbd_wire_put32(pl, e->done);
    hbd_wire_put32(pl + 4, 0);
    e->t0 = hb_time_now_ns();
    if (hbd_net_send(d, e->to, HBD_WIRE_ECHO, 0, 0, pl, sizeof(pl)) != 0)
        echo_fail(e, HB_ERR_PEER_LOST, NULL);
}

int hbd_logp_tsr_start(hbd_t *d, hbd_reply_t *r, uint32_t to, uint32_t n)
{
    logp_echo_t *e = &d->logp->echo;
    if (e->conn != NULL)
        return HB_ERR_BUSY;
    if (hbd_peer_of(d, to) == NULL)
        return HB_ERR_NOT_FOUND;
    if (n == 0 || n > 1000000)
        return HB_ERR_INVAL;
    e->rtt = calloc(n, sizeof(double));
    if (e->rtt == NULL)
        return HB_ERR_NOMEM;
    e->conn = hbd_reply_hold(r);
    e->to = to;
    e->n = n;
    e->done = 0;
    echo_next(d, e);
    return 0;
}

static void echo_reply(hbd_t *d, const hbd_wire_msg_t *m)
{
    logp_echo_t *e = &d->logp->echo;
    if (e->conn == NULL || m->src != e->to || m->len != 8 || hbd_wire_get32(m->payload) != e->done)
        return; /* a late answer to an abandoned probe */
    e->rtt[e->done++] = (double)(hb_time_now_ns() - e->t0) / 1e3;
    if (e->done < e->n) {
        echo_next(d, e);
        return;
    }
    qsort(e->rtt, e->n, sizeof(double), cmp_double);
    double med = e->rtt[e->n / 2], p99 = e->rtt[(size_t)((e->n - 1) * 0.99)];
    hbd_reply(e->conn, "ok tsr %.3f rtt_median=%.3f rtt_p99=%.3f min=%.3f n=%" PRIu32, med / 2, med,
              p99, e->rtt[0], e->n);
    hbd_reply_release(e->conn);
    free(e->rtt);
    memset(e, 0, sizeof(*e));
}

/* ---- the ECHO frames and lost nodes (registered with hbd_net) ---- */

static void on_msg(hbd_t *d, const hbd_wire_msg_t *m)
{
    if ((m->flags & HBD_WIRE_F_REPLY) && m->len == LOGP_REPLY_LEN)
        on_reply(d, m);
    else if (m->flags & HBD_WIRE_F_REPLY)
        echo_reply(d, m);
    else if (m->len >= 8 && hbd_wire_get32(m->payload + 4) != 0)
        on_echo(d, m, d->rx_t0_ns);
    else
        (void)hbd_net_send(d, m->src, HBD_WIRE_ECHO, HBD_WIRE_F_REPLY, m->coll_id, m->payload,
                           m->len);
}

/* Any lost node: a probe waiting on its answers ends with `status`. */
static void on_lost(hbd_t *d, uint32_t node, int status, int first)
{
    logp_probe_t *P = &d->logp->lp;
    (void)first;
    if (d->logp->echo.conn != NULL && d->logp->echo.to == node)
        echo_fail(&d->logp->echo, status, NULL);
    for (uint32_t i = 0; P->conn != NULL && i < P->nto; i++)
        if (P->to[i] == node) {
            /* a connection that closed under a flood is often a heartbeat timeout: TCP stalled
             * in retransmission back-off longer than heartbeat.timeout_ms (tiny switch queues) */
            hbd_reply(P->conn, "err %d node %" PRIu32 " lost during the %s probe (%s)", status,
                      node, P->flood ? "flood" : "rtt", hb_status_str(status));
            logp_end(P);
            return;
        }
}

int hbd_logp_init(hbd_t *d)
{
    d->logp = calloc(1, sizeof(*d->logp));
    if (d->logp == NULL)
        return HB_ERR_NOMEM;
    hbd_hooks_frame(d, HBD_WIRE_ECHO, on_msg, NULL);
    return hbd_hooks_lost(d, on_lost, 10);
}

void hbd_logp_fini(hbd_t *d)
{
    if (d->logp == NULL)
        return;
    logp_probe_t *P = &d->logp->lp;
    if (P->conn != NULL)
        hbd_reply(P->conn, "err %d daemon stopping", HB_ERR_PEER_LOST);
    logp_end(P);
    echo_fail(&d->logp->echo, HB_ERR_PEER_LOST, "daemon stopping"); /* as the PlogP one */
    free(d->logp);
    d->logp = NULL;
}
