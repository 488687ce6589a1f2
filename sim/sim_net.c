/* sim_net.c: the simulated network: parameters, message pool, NIC reservations, WAN lanes and
 * processor-shared site links. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "coll_model.h"
#include "sim_int.h"

#define SIM_NONE UINT32_MAX

void hb_sim_params_init(hb_sim_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->t_ib = 4.0;
    p->t_sr = 60.0;
    /* zmq_send of a 48-byte message over loopback TCP costs the sender about 1 us here
     * (200,000 sends on a DEALER socket: 0.98-1.04 us each) */
    p->ctl_gap = 1.0;
    p->hop = HB_SIM_HOP_TSR;
    p->alpha = 50.0;
    p->b_lan = HB_MODEL_MBIT(1000.0);
    p->wan_lat = 5000.0;
    p->b_lane = HB_MODEL_MBIT(250.0);
    p->B_wan = HB_MODEL_MBIT(1000.0);
}

static int bad(char *err, size_t errlen, const char *what, double v)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s must be %s (got %g)", what,
                 strstr(what, "bandwidth") ? "> 0" : ">= 0", v);
    return HB_ERR_INVAL;
}

int hb_sim_params_check(const hb_sim_params_t *p, char *err, size_t errlen)
{
    uint32_t i;

    if (p == NULL)
        return HB_ERR_INVAL;
    if (!(p->t_ib >= 0) || !isfinite(p->t_ib))
        return bad(err, errlen, "T_IB", p->t_ib);
    if (!(p->t_sr >= 0) || !isfinite(p->t_sr))
        return bad(err, errlen, "T_SR", p->t_sr);
    if (!(p->ctl_gap >= 0) || !isfinite(p->ctl_gap))
        return bad(err, errlen, "control gap", p->ctl_gap);
    if (!(p->alpha >= 0) || !isfinite(p->alpha))
        return bad(err, errlen, "alpha", p->alpha);
    if (!(p->lan_lat >= 0) || !isfinite(p->lan_lat))
        return bad(err, errlen, "LAN latency", p->lan_lat);
    if (!(p->cpu_us >= 0) || !isfinite(p->cpu_us))
        return bad(err, errlen, "CPU time per control command", p->cpu_us);
    if (!(p->msg_cpu_us >= 0) || !isfinite(p->msg_cpu_us))
        return bad(err, errlen, "CPU time per message (main thread)", p->msg_cpu_us);
    if (!(p->io_cpu_us >= 0) || !isfinite(p->io_cpu_us))
        return bad(err, errlen, "CPU time per message (I/O thread)", p->io_cpu_us);
    if (!(p->ib_cpu_us >= 0) || !isfinite(p->ib_cpu_us))
        return bad(err, errlen, "CPU time per chassis barrier", p->ib_cpu_us);
    if (!(p->wake_us >= 0) || !isfinite(p->wake_us))
        return bad(err, errlen, "wake-up latency", p->wake_us);
    if (!(p->sr_stall_us >= 0) || !isfinite(p->sr_stall_us) || !(p->ib_stall_us >= 0) ||
        !isfinite(p->ib_stall_us))
        return bad(err, errlen, "stall", p->sr_stall_us + p->ib_stall_us);
    if (!(p->sr_stall_p >= 0 && p->sr_stall_p <= 1) || !(p->ib_stall_p >= 0 && p->ib_stall_p <= 1))
        return bad(err, errlen, "stall probability (at most 1)", p->sr_stall_p + p->ib_stall_p);
    if (p->cores > 4096)
        return bad(err, errlen, "cores (at most 4096)", p->cores);
    if (!(p->wan_lat >= 0) || !isfinite(p->wan_lat))
        return bad(err, errlen, "WAN latency", p->wan_lat);
    if (!(p->b_lan > 0))
        return bad(err, errlen, "LAN bandwidth", p->b_lan);
    if (!(p->b_lane > 0))
        return bad(err, errlen, "WAN lane bandwidth", p->b_lane);
    if (!(p->B_wan > 0))
        return bad(err, errlen, "WAN total bandwidth", p->B_wan);
    if (p->n_b_wan > HB_SIM_MAX_TAB || p->n_logp > HB_SIM_MAX_TAB)
        return bad(err, errlen, "table length", 0);
    for (i = 0; i < p->n_b_wan; i++)
        if (!(p->b_wan[i] > 0))
            return bad(err, errlen, "measured WAN bandwidth", p->b_wan[i]);
    if (p->hop == HB_SIM_HOP_PLOGP && p->n_logp == 0) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "hop plogp needs PlogP tables (logp rows)");
        return HB_ERR_INVAL;
    }
    for (i = 0; i < p->n_logp; i++)
        if (!(p->logp_g[i] >= 0) || (i > 0 && !(p->logp_m[i] > p->logp_m[i - 1])))
            return bad(err, errlen, "PlogP table (sizes ascending, g)", p->logp_g[i]);
    return 0;
}

double hb_sim_bwan(const hb_sim_params_t *p, uint32_t n)
{
    hb_model_lanes_t l;

    memset(&l, 0, sizeof(l));
    l.L = p->wan_lat;
    l.alpha = p->alpha;
    l.b_lan = p->b_lan;
    l.b_lane = p->b_lane;
    l.B_wan = p->B_wan;
    l.b_wan = p->n_b_wan ? p->b_wan : NULL;
    l.n_b_wan = p->n_b_wan;
    return hb_model_bwan(&l, n);
}

/* g(m) of the PlogP tables (pattern pair). */
static double sim_logp_g(const hb_sim_params_t *p, double m)
{
    return hb_model_interp(p->logp_m, p->logp_g, p->n_logp, m);
}

double sim_lan_busy(const sim_world_t *w, double m)
{
    if (w->p.hop == HB_SIM_HOP_PLOGP)
        return sim_logp_g(&w->p, m);
    return w->p.alpha + m / w->p.b_lan;
}

double sim_lan_lat(const sim_world_t *w)
{
    return w->p.hop == HB_SIM_HOP_PLOGP ? w->p.logp_L : w->p.lan_lat;
}

int sim_world_init(sim_world_t *w, const hb_sim_params_t *p, uint32_t n_nodes,
                   const uint32_t *site_of, const uint32_t *host_of)
{
    uint32_t i;
    int rc;

    memset(w, 0, sizeof(*w));
    if (p == NULL || n_nodes == 0)
        return HB_ERR_INVAL;
    w->p = *p;
    w->n_nodes = n_nodes;
    w->free_msg = SIM_NONE;
    w->free_flow = SIM_NONE;
    w->site_of = calloc(n_nodes, sizeof(uint32_t));
    w->out_free = calloc(n_nodes, sizeof(double));
    w->in_free = calloc(n_nodes, sizeof(double));
    if (w->site_of == NULL || w->out_free == NULL || w->in_free == NULL)
        goto err_nomem;
    w->n_sites = 1;
    for (i = 0; i < n_nodes && site_of != NULL; i++) {
        w->site_of[i] = site_of[i];
        if (site_of[i] >= 4096) {
            rc = HB_ERR_INVAL;
            goto err_free;
        }
        if (site_of[i] + 1 > w->n_sites)
            w->n_sites = site_of[i] + 1;
    }
    w->links = calloc((size_t)w->n_sites * w->n_sites, sizeof(*w->links));
    if (w->links == NULL)
        goto err_nomem;
    sim_world_seed(w, 1);
    rc = sim_host_init(w, host_of);
    if (rc != 0)
        goto err_free;
    rc = hb_sim_engine_create(&w->eng);
    if (rc != 0)
        goto err_free;
    return 0;

err_nomem:
    rc = HB_ERR_NOMEM;
err_free:
    sim_world_free(w);
    return rc;
}

void sim_world_free(sim_world_t *w)
{
    size_t i;

    if (w->links != NULL)
        for (i = 0; i < (size_t)w->n_sites * w->n_sites; i++)
            free(w->links[i].act);
    free(w->links);
    free(w->lanes);
    free(w->flows);
    free(w->msgs);
    sim_host_free(w);
    free(w->in_free);
    free(w->out_free);
    free(w->site_of);
    hb_sim_engine_destroy(w->eng);
    memset(w, 0, sizeof(*w));
}

static int sim_msg_new(sim_world_t *w, uint32_t *idx_p)
{
    if (w->free_msg != SIM_NONE) {
        *idx_p = w->free_msg;
        w->free_msg = w->msgs[w->free_msg].next;
    } else {
        if (w->n_msgs == w->cap_msgs) {
            uint32_t ncap = w->cap_msgs ? w->cap_msgs * 2 : 1024;
            sim_msg_t *nm;
            if (ncap <= w->cap_msgs)
                return HB_ERR_NOMEM;
            nm = realloc(w->msgs, (size_t)ncap * sizeof(*nm));
            if (nm == NULL)
                return HB_ERR_NOMEM;
            w->msgs = nm;
            w->cap_msgs = ncap;
        }
        *idx_p = w->n_msgs++;
    }
    memset(&w->msgs[*idx_p], 0, sizeof(sim_msg_t));
    w->msgs[*idx_p].next = SIM_NONE;
    return 0;
}

void sim_msg_release(sim_world_t *w, uint32_t idx)
{
    w->msgs[idx].next = w->free_msg;
    w->free_msg = idx;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* The wire part of a control hop: T_SR, or with the host model what the CPU stages leave of
 * it (sim.h). */
static double ctl_wire(const sim_world_t *w)
{
    const hb_sim_params_t *p = &w->p;
    double lat;

    if (p->cores == 0)
        return p->t_sr;
    lat = p->t_sr - 2 * p->msg_cpu_us - 2 * p->io_cpu_us - 3 * p->wake_us;
    return lat > 0 ? lat : 0;
}

/* A new message of the pool, filled in. */
static int msg_make(sim_world_t *w, uint32_t from, uint32_t to, uint32_t kind, uint32_t *idx_p)
{
    uint32_t idx;
    sim_msg_t *m;
    int rc;

    if (from >= w->n_nodes || to >= w->n_nodes)
        return HB_ERR_INTERNAL;
    rc = sim_msg_new(w, &idx);
    if (rc != 0)
        return rc;
    m = &w->msgs[idx];
    m->from = from;
    m->to = to;
    m->kind = kind;
    w->res.messages++;
    *idx_p = idx;
    return 0;
}

/* The sender's CPU, then the network: with the host model the message leaves after the
 * sender's main thread (msg_cpu_us, after the handler now running) and its I/O thread
 * (SIM_EV_IO_TX); without, at once. */
static int msg_send(sim_world_t *w, uint32_t idx)
{
    double now = hb_sim_engine_now(w->eng), t;

    if (w->p.cores == 0)
        return sim_net_launch(w, idx, now);
    t = sim_host_run(w, w->msgs[idx].from, 0, now, w->p.msg_cpu_us);
    return hb_sim_engine_push(w->eng, t, SIM_EV_IO_TX, w->msgs[idx].from, 0, 0, idx);
}

int sim_send_ctl(sim_world_t *w, uint32_t from, uint32_t to, uint32_t hmsg, uint64_t coll_id)
{
    uint32_t idx;
    int rc;

    rc = msg_make(w, from, to, SIM_MSG_CTL, &idx);
    if (rc != 0)
        return rc;
    w->msgs[idx].hmsg = hmsg;
    w->msgs[idx].coll_id = coll_id;
    return msg_send(w, idx);
}

void sim_world_seed(sim_world_t *w, uint64_t seed)
{
    w->rng = (seed ? seed : 1) * 0x9e3779b97f4a7c15ull;
    if (w->rng == 0)
        w->rng = 1;
}

double sim_stall(sim_world_t *w, double us, double p)
{
    uint64_t x;

    if (!(us > 0) || !(p > 0))
        return 0;
    /* xorshift64* */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    x = w->rng * 0x2545f4914f6cdd1dull;
    return (double)(x >> 11) / 9007199254740992.0 < p ? us : 0;
}

static int launch_ctl(sim_world_t *w, uint32_t idx, double t)
{
    const sim_msg_t *m = &w->msgs[idx];
    double start, gap, lat;

    if (w->p.hop == HB_SIM_HOP_PLOGP) {
        gap = sim_logp_g(&w->p, 0);
        lat = w->p.logp_L;
    } else {
        gap = w->p.cores ? 0 : w->p.ctl_gap;
        lat = ctl_wire(w);
    }
    if (w->site_of[m->from] != w->site_of[m->to])
        lat += w->p.wan_lat;
    lat += sim_stall(w, w->p.sr_stall_us, w->p.sr_stall_p);
    start = dmax(t, w->out_free[m->from]);
    w->out_free[m->from] = start + gap;
    return hb_sim_engine_push(w->eng, start + gap + lat, SIM_EV_DELIVER, m->to, 0, 0, idx);
}

/* ---- WAN lanes (node pair FIFOs) --------------------------------------------------------- */

static uint64_t lane_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static int lane_grow(sim_world_t *w)
{
    size_t ncap = w->cap_lanes ? w->cap_lanes * 2 : 256, i;
    sim_lane_t *nl = calloc(ncap, sizeof(*nl));

    if (nl == NULL)
        return HB_ERR_NOMEM;
    for (i = 0; i < w->cap_lanes; i++) {
        size_t j;
        if (w->lanes[i].key == 0)
            continue;
        j = lane_hash(w->lanes[i].key) & (ncap - 1);
        while (nl[j].key != 0)
            j = (j + 1) & (ncap - 1);
        nl[j] = w->lanes[i];
    }
    free(w->lanes);
    w->lanes = nl;
    w->cap_lanes = ncap;
    return 0;
}

/* The lane of (from, to), created idle if new; its index in *i_p. Indices change when the
 * table grows (only when a lane is created): never keep one across a lane_get. */
static int lane_get(sim_world_t *w, uint32_t from, uint32_t to, size_t *i_p)
{
    uint64_t key = (((uint64_t)from << 32) | to) + 1;
    size_t j = 0;
    int rc;

    if (w->cap_lanes > 0) {
        j = lane_hash(key) & (w->cap_lanes - 1);
        while (w->lanes[j].key != 0 && w->lanes[j].key != key)
            j = (j + 1) & (w->cap_lanes - 1);
        if (w->lanes[j].key == key) {
            *i_p = j;
            return 0;
        }
    }
    if (2 * (w->n_lanes + 1) > w->cap_lanes) {
        rc = lane_grow(w);
        if (rc != 0)
            return rc;
        j = lane_hash(key) & (w->cap_lanes - 1);
        while (w->lanes[j].key != 0)
            j = (j + 1) & (w->cap_lanes - 1);
    }
    w->lanes[j].key = key;
    w->lanes[j].busy = 0;
    w->lanes[j].head = w->lanes[j].tail = SIM_NONE;
    w->n_lanes++;
    *i_p = j;
    return 0;
}

/* ---- site-pair links: processor sharing ------------------------------------------------- */

/* Bring the bytes left of every active flow of link up to now. */
static void link_advance(sim_world_t *w, sim_link_t *l, double now)
{
    uint32_t i;
    double dt = now - l->t_last;

    if (dt > 0)
        for (i = 0; i < l->n_act; i++) {
            sim_flow_t *f = &w->flows[l->act[i]];
            f->rem -= f->rate * dt;
            if (f->rem < 0)
                f->rem = 0;
        }
    l->t_last = now;
}

/*
 * New rates for the active flows of link and the next completion event. The flows share the
 * link equally, so the one with the fewest bytes left ends first (the first of them in act
 * order on a tie, whose event a push per flow would also have run first); every completion or
 * start reschedules the link, so one event per link is enough. (A push per flow left n - 1
 * stale events in the heap at every reschedule: O(n^2) memory for n flows, a 50,000-node flat
 * scatter's WAN did not fit in memory.)
 */
static int link_reschedule(sim_world_t *w, sim_link_t *l, double now)
{
    double rate = hb_sim_bwan(&w->p, l->n_act);
    uint32_t i, first = SIM_NONE;

    if (l->n_act > w->res.max_wan_active)
        w->res.max_wan_active = l->n_act;
    for (i = 0; i < l->n_act; i++) {
        sim_flow_t *f = &w->flows[l->act[i]];
        f->rate = rate;
        f->gen++; /* its pending event, if any, is stale now */
        if (first == SIM_NONE || f->rem < w->flows[first].rem)
            first = l->act[i];
    }
    if (first == SIM_NONE)
        return 0;
    const sim_flow_t *f = &w->flows[first];
    return hb_sim_engine_push(w->eng, now + (rate > 0 ? f->rem / rate : 0), SIM_EV_WAN_DONE,
                              w->msgs[f->msg].to, first, f->gen, 0);
}

/* Put message idx on the wire of its lane now. */
static int flow_start(sim_world_t *w, uint32_t idx, size_t lane)
{
    const sim_msg_t *m = &w->msgs[idx];
    double now = hb_sim_engine_now(w->eng);
    uint32_t li = w->site_of[m->from] * w->n_sites + w->site_of[m->to], fi;
    sim_link_t *l = &w->links[li];
    sim_flow_t *f;

    if (w->free_flow != SIM_NONE) {
        fi = w->free_flow;
        w->free_flow = w->flows[fi].next;
    } else {
        if (w->n_flows == w->cap_flows) {
            uint32_t ncap = w->cap_flows ? w->cap_flows * 2 : 256;
            sim_flow_t *nf = realloc(w->flows, (size_t)ncap * sizeof(*nf));
            if (nf == NULL)
                return HB_ERR_NOMEM;
            w->flows = nf;
            w->cap_flows = ncap;
        }
        fi = w->n_flows++;
        w->flows[fi].gen = 0;
    }
    if (l->n_act == l->cap_act) {
        uint32_t ncap = l->cap_act ? l->cap_act * 2 : 16;
        uint32_t *na = realloc(l->act, (size_t)ncap * sizeof(*na));
        if (na == NULL)
            return HB_ERR_NOMEM;
        l->act = na;
        l->cap_act = ncap;
    }
    f = &w->flows[fi];
    f->msg = idx;
    f->link = li;
    f->lane = (uint32_t)lane;
    f->next = SIM_NONE;
    f->rem = (double)m->len;
    f->rate = 0;
    w->lanes[lane].busy = 1;
    w->res.wan_flows++;
    link_advance(w, l, now);
    l->act[l->n_act++] = fi;
    return link_reschedule(w, l, now);
}

int sim_send_data(sim_world_t *w, uint32_t from, uint32_t to, uint32_t seq, uint64_t off,
                  uint64_t len)
{
    uint32_t idx;
    sim_msg_t *m;
    int rc;

    rc = msg_make(w, from, to, SIM_MSG_DATA, &idx);
    if (rc != 0)
        return rc;
    m = &w->msgs[idx];
    m->seq = seq;
    m->off = off;
    m->len = len;
    w->res.bytes += len;
    return msg_send(w, idx);
}

static int launch_data(sim_world_t *w, uint32_t idx, double t)
{
    const sim_msg_t *m = &w->msgs[idx];
    uint32_t from = m->from, to = m->to;
    double start, busy;

    if (w->site_of[from] == w->site_of[to]) {
        start = dmax(t, dmax(w->out_free[from], w->in_free[to]));
        busy = sim_lan_busy(w, (double)m->len);
        w->out_free[from] = w->in_free[to] = start + busy;
        return hb_sim_engine_push(w->eng, start + busy + sim_lan_lat(w), SIM_EV_DELIVER, to, 0, 0,
                                  idx);
    }
    /* WAN: the sender pays the start-up, then the message joins its lane. Its bytes leave
     * through the sender's NIC and enter through the receiver's, each at b_LAN: both are held
     * len/b_LAN longer, so a root's WAN and LAN messages share its one NIC (issue 25) */
    start = dmax(t, w->out_free[from]);
    busy = (double)m->len / w->p.b_lan;
    w->out_free[from] = start + w->p.alpha + busy;
    w->in_free[to] = dmax(w->in_free[to], start + w->p.alpha) + busy;
    w->msgs[idx].in_done = w->in_free[to];
    return hb_sim_engine_push(w->eng, start + w->p.alpha, SIM_EV_WAN_ENQ, to, 0, 0, idx);
}

int sim_net_launch(sim_world_t *w, uint32_t idx, double t)
{
    return w->msgs[idx].kind == SIM_MSG_CTL ? launch_ctl(w, idx, t) : launch_data(w, idx, t);
}

static int net_enqueue(sim_world_t *w, uint32_t idx)
{
    const sim_msg_t *m = &w->msgs[idx];
    sim_lane_t *ln;
    size_t lane;
    int rc;

    rc = lane_get(w, m->from, m->to, &lane);
    if (rc != 0)
        return rc;
    ln = &w->lanes[lane];
    if (!ln->busy)
        return flow_start(w, idx, lane);
    if (ln->tail == SIM_NONE)
        ln->head = idx;
    else
        w->msgs[ln->tail].next = idx;
    ln->tail = idx;
    return 0;
}

static int net_done(sim_world_t *w, uint32_t fi, uint32_t gen)
{
    double now = hb_sim_engine_now(w->eng);
    sim_flow_t *f;
    sim_link_t *l;
    sim_lane_t *ln;
    uint32_t i, msg, next;
    size_t lane;
    int rc;

    if (fi >= w->n_flows || w->flows[fi].gen != gen)
        return 0; /* stale: the flow was rescheduled */
    f = &w->flows[fi];
    l = &w->links[f->link];
    msg = f->msg;
    rc = lane_get(w, w->msgs[msg].from, w->msgs[msg].to, &lane); /* exists: no growth */
    if (rc != 0)
        return rc;
    ln = &w->lanes[lane];
    link_advance(w, l, now);
    for (i = 0; i < l->n_act && l->act[i] != fi; i++)
        ;
    if (i == l->n_act)
        return HB_ERR_INTERNAL;
    memmove(&l->act[i], &l->act[i + 1], (l->n_act - i - 1) * sizeof(uint32_t));
    l->n_act--;
    f->gen++; /* any other pending event of it is stale now */
    f->next = w->free_flow;
    w->free_flow = fi;
    /* delivered once it has crossed the WAN and the receiver's in-NIC (launch_data) */
    rc = hb_sim_engine_push(w->eng, dmax(now, w->msgs[msg].in_done) + w->p.wan_lat, SIM_EV_DELIVER,
                            w->msgs[msg].to, 0, 0, msg);
    if (rc != 0)
        return rc;
    /* the lane's next message, then the others' new share */
    ln->busy = 0;
    next = ln->head;
    if (next != SIM_NONE) {
        ln->head = w->msgs[next].next;
        if (ln->head == SIM_NONE)
            ln->tail = SIM_NONE;
        w->msgs[next].next = SIM_NONE;
        return flow_start(w, next, lane);
    }
    return link_reschedule(w, l, now);
}

int sim_net_event(sim_world_t *w, const hb_sim_ev_t *ev)
{
    int rc;

    switch (ev->kind) {
    case SIM_EV_WAN_ENQ:
        rc = net_enqueue(w, (uint32_t)ev->x);
        return rc != 0 ? rc : 1;
    case SIM_EV_WAN_DONE:
        rc = net_done(w, ev->a, ev->b);
        return rc != 0 ? rc : 1;
    case SIM_EV_IO_TX: {
        uint32_t idx = (uint32_t)ev->x;
        double t = sim_host_run(w, w->msgs[idx].from, 1, ev->t, w->p.io_cpu_us);
        rc = sim_net_launch(w, idx, t);
        return rc != 0 ? rc : 1;
    }
    default:
        return 0;
    }
}
