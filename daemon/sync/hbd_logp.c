/* hbd_logp.c: PlogP probes between daemons: m-byte round trips and floods (hibar-bench logp). */
#include "hb_config.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_meas.h"
#include "hb_time.h"
#include "hbd.h"
#include "hibar.h"
#include "wire.h"

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

typedef struct hbd_logp {
    struct hbd_ctl_conn *conn;
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
    struct event *ev;
} hbd_logp_t;

static hbd_logp_t lp;

static void logp_end(void)
{
    if (lp.conn != NULL)
        hbd_ctl_release(lp.conn);
    if (lp.have_ad)
        hb_meas_adapt_free(&lp.ad);
    if (lp.ev != NULL)
        event_free(lp.ev);
    free(lp.buf);
    memset(&lp, 0, sizeof(lp));
}

static void logp_fail(int rc)
{
    hbd_ctl_reply(lp.conn, "err %d %s", rc, hibar_strerror(rc));
    logp_end();
}

static void logp_arm(uint32_t usec)
{
    struct timeval tv = {0, usec};
    evtimer_add(lp.ev, &tv);
}

/* Send one frame; WOULD_BLOCK (queue full, link not up) is retried by the caller. */
static int logp_send(uint32_t to, uint32_t mode)
{
    uint64_t t;
    int rc;
    hbd_wire_put32(lp.buf, lp.seq);
    hbd_wire_put32(lp.buf + 4, mode);
    t = hb_time_now_ns();
    rc = hbd_net_send(lp.d, to, HBD_WIRE_ECHO, 0, 0, lp.buf, 8 + lp.size);
    if (rc == 0) {
        uint64_t e = hb_time_now_ns();
        lp.os_sum += (double)(e - t) / 1e3;
        lp.os_n++;
        if (lp.t0 == 0 || !lp.flood)
            lp.t0 = t;
    }
    return rc;
}

static void logp_step(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    if (lp.conn == NULL)
        return;
    for (uint32_t i = 0; i < lp.nto; i++)
        if (!hbd_net_peer_up(lp.d, lp.to[i])) {
            if (hb_time_now_ns() - lp.t_start > 10000000000ull) {
                logp_fail(HIBAR_ERR_TIMEOUT);
                return;
            }
            (void)hbd_net_link(lp.d, lp.to[i]);
            logp_arm(1000);
            return;
        }
    if (!lp.flood) {
        int rc = logp_send(lp.to[0], LOGP_RTT);
        if (rc == HIBAR_ERR_WOULD_BLOCK)
            logp_arm(100);
        else if (rc != 0)
            logp_fail(rc);
        return;
    }
    uint32_t total = lp.count * lp.nto;
    while (lp.sent < total) {
        uint32_t to = lp.to[lp.sent % lp.nto];
        int rc = logp_send(to, lp.sent >= total - lp.nto ? LOGP_LAST : LOGP_FLOOD);
        if (rc == HIBAR_ERR_WOULD_BLOCK) {
            logp_arm(100);
            return;
        }
        if (rc != 0) {
            logp_fail(rc);
            return;
        }
        lp.sent++;
    }
}

/* "TO[,TO...] SIZE COUNT rtt|flood [MIN_REPS]" */
void hbd_logp_request(hbd_t *d, struct hbd_ctl_conn *conn, char *args)
{
    char *tok[6] = {0}, *save = NULL, *end;
    int nt = 0;
    unsigned long size, count, minr = 10;
    hb_meas_opts_t mo;
    int rc;

    for (char *t = strtok_r(args, " \t", &save); t != NULL && nt < 6;
         t = strtok_r(NULL, " \t", &save))
        tok[nt++] = t;
    if (lp.conn != NULL) {
        hbd_ctl_reply(conn, "err %d %s", HIBAR_ERR_BUSY, hibar_strerror(HIBAR_ERR_BUSY));
        return;
    }
    if (!d->ready) {
        hbd_ctl_reply(conn, "err %d %s", HIBAR_ERR_NOT_INIT, hibar_strerror(HIBAR_ERR_NOT_INIT));
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
    memset(&lp, 0, sizeof(lp));
    {
        char *s2 = NULL;
        for (char *t = strtok_r(tok[0], ",", &s2); t != NULL; t = strtok_r(NULL, ",", &s2)) {
            uint32_t id;
            unsigned long v = strtoul(t, &end, 10);
            if (*end == '\0' && t[0] != '-')
                id = v < d->topo->n_nodes ? (uint32_t)v : UINT32_MAX;
            else if (hb_cfg_node_find(d->cfg, t, &id) != 0)
                id = UINT32_MAX;
            if (id == UINT32_MAX || id == d->self || lp.nto == LOGP_MAX_TO) {
                hbd_ctl_reply(conn, "err %d unknown node or this node '%.40s'", HIBAR_ERR_INVAL, t);
                memset(&lp, 0, sizeof(lp));
                return;
            }
            lp.to[lp.nto++] = id;
        }
    }
    if (lp.nto == 0)
        goto usage;
    lp.d = d;
    lp.flood = tok[3][0] == 'f';
    lp.size = (uint32_t)size;
    lp.count = (uint32_t)count;
    lp.buf = calloc(1, 8 + size);
    lp.ev = evtimer_new(d->base, logp_step, NULL);
    hb_meas_opts_default(&mo);
    mo.min_reps = (uint32_t)(count < 2 ? 2 : minr);
    mo.max_reps = (uint32_t)(count < 2 ? 2 : count);
    mo.rel_err = 0.02;
    rc = lp.buf == NULL || lp.ev == NULL ? HIBAR_ERR_NOMEM : 0;
    if (rc == 0 && !lp.flood) {
        rc = hb_meas_adapt_init(&lp.ad, &mo);
        lp.have_ad = rc == 0;
    }
    if (rc != 0) {
        lp.conn = hbd_ctl_hold(conn);
        logp_fail(rc);
        return;
    }
    lp.conn = hbd_ctl_hold(conn);
    lp.t_start = hb_time_now_ns();
    for (uint32_t i = 0; i < lp.nto; i++)
        if (!hbd_net_peer_up(d, lp.to[i])) {
            rc = hbd_net_link(d, lp.to[i]);
            if (rc != 0 && rc != HIBAR_ERR_WOULD_BLOCK) {
                logp_fail(rc);
                return;
            }
        }
    logp_step(-1, 0, NULL);
    return;
usage:
    hbd_ctl_reply(conn,
                  "err %d usage: logp TO[,TO...] SIZE(0..%d) COUNT(1..100000) rtt|flood [MIN_REPS]",
                  HIBAR_ERR_INVAL, HBD_WIRE_COLL_MAX_DATA);
}

/* An ECHO with a PlogP mode arrived: answer it if it asks (rx_t0: when it was taken off the
 * socket). */
void hbd_logp_on_echo(hbd_t *d, const hbd_wire_msg_t *m, uint64_t rx_t0)
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
void hbd_logp_on_reply(hbd_t *d, const hbd_wire_msg_t *m)
{
    uint64_t now = hb_time_now_ns();
    uint32_t seq = hbd_wire_get32(m->payload), mode = hbd_wire_get32(m->payload + 4);
    int found = 0;
    (void)d;
    if (lp.conn == NULL || m->len != LOGP_REPLY_LEN)
        return;
    for (uint32_t i = 0; i < lp.nto; i++)
        found |= lp.to[i] == m->src;
    if (!found || seq != lp.seq)
        return; /* late: an abandoned probe's */
    lp.or_sum += hbd_wire_get32(m->payload + 8) / 1e3;
    lp.or_n++;
    if (!lp.flood && mode == LOGP_RTT) {
        int r = hb_meas_adapt_add(&lp.ad, (double)(now - lp.t0) / 1e3);
        hb_stats_t st;
        if (r < 0) {
            logp_fail(r);
            return;
        }
        if (r == 0) {
            lp.seq++;
            logp_step(-1, 0, NULL);
            return;
        }
        if (hb_meas_adapt_stats(&lp.ad, &st) != 0) {
            logp_fail(HIBAR_ERR_INTERNAL);
            return;
        }
        hbd_ctl_reply(lp.conn,
                      "ok logp mode=rtt size=%" PRIu32 " to=%" PRIu32 " reps=%zu mean_us=%.3f "
                      "median_us=%.3f min_us=%.3f max_us=%.3f p99_us=%.3f ci_us=%.3f os_us=%.3f "
                      "or_us=%.3f converged=%d",
                      lp.size, lp.to[0], st.n, st.mean, st.median, st.min, st.max, st.p99, st.ci,
                      lp.os_sum / (lp.os_n ? lp.os_n : 1), lp.or_sum / (lp.or_n ? lp.or_n : 1),
                      st.ci <= 0.02 * st.mean);
        logp_end();
        return;
    }
    if (lp.flood && mode == LOGP_LAST && ++lp.replies == lp.nto) {
        hbd_ctl_reply(lp.conn,
                      "ok logp mode=flood size=%" PRIu32 " frames=%" PRIu32 " us=%.3f os_us=%.3f "
                      "or_us=%.3f",
                      lp.size, lp.sent, (double)(now - lp.t0) / 1e3,
                      lp.os_sum / (lp.os_n ? lp.os_n : 1), lp.or_sum / (lp.or_n ? lp.or_n : 1));
        logp_end();
    }
}

void hbd_logp_peer_lost(hbd_t *d, uint32_t node, int status)
{
    (void)d;
    for (uint32_t i = 0; lp.conn != NULL && i < lp.nto; i++)
        if (lp.to[i] == node) {
            /* a connection that closed under a flood is often a heartbeat timeout: TCP stalled
             * in retransmission back-off longer than heartbeat.timeout_ms (tiny switch queues) */
            hbd_ctl_reply(lp.conn, "err %d node %" PRIu32 " lost during the %s probe (%s)", status,
                          node, lp.flood ? "flood" : "rtt", hibar_strerror(status));
            logp_end();
            return;
        }
}

void hbd_logp_stop(hbd_t *d)
{
    (void)d;
    if (lp.conn != NULL)
        hbd_ctl_reply(lp.conn, "err %d daemon stopping", HIBAR_ERR_PEER_LOST);
    logp_end();
}
