/* sim_hier.c: drives one production hb_hier engine per node through the discrete-event world
 * (barriers, the fence's first half). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_status.h"
#include "sim_hier.h"

void hb_sim_opts_init(hb_sim_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->proto = HB_HIER_SCMD;
    o->barriers = 1;
    o->seed = 1;
}

int sim_hier_init(sim_hier_t *s, sim_world_t *w, const hb_topo_t *topo, const hb_sim_opts_t *o)
{
    hb_hier_cfg_t cfg;
    uint32_t i;
    size_t m;
    int rc;

    memset(s, 0, sizeof(*s));
    s->w = w;
    s->topo = topo;
    s->o = *o;
    if (s->o.barriers == 0)
        s->o.barriers = 1;
    hb_hier_cfg_init(&cfg);
    cfg.protocol = o->proto;
    cfg.n_sync = o->n_sync ? o->n_sync : 2; /* default: one barrier in flight per node, plus
                                             * early messages for the next */
    cfg.epoch = o->epoch ? o->epoch : 1;
    s->o.epoch = cfg.epoch;
    s->n_sync = cfg.n_sync;
    s->eng = calloc(topo->n_nodes, sizeof(*s->eng));
    s->rounds = calloc((size_t)topo->n_chassis * cfg.n_sync, sizeof(*s->rounds));
    s->done = calloc(topo->n_nodes, sizeof(*s->done));
    s->last_arrive = calloc(s->o.barriers, sizeof(double));
    s->last_complete = calloc(s->o.barriers, sizeof(double));
    s->n_complete = calloc(s->o.barriers, sizeof(uint32_t));
    if (s->eng == NULL || s->rounds == NULL || s->done == NULL || s->last_arrive == NULL ||
        s->last_complete == NULL || s->n_complete == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    for (i = 0; i < topo->n_nodes; i++) {
        if (!topo->nodes[i].member)
            continue; /* a job's view (hb_topo_restrict): no engine, never addressed */
        rc = hb_hier_create(topo, i, &cfg, &s->eng[i]);
        if (rc != 0)
            goto err_free;
        m = hb_hier_max_actions(s->eng[i]);
        if (m > s->max_acts)
            s->max_acts = m;
    }
    s->acts = calloc(s->max_acts, sizeof(*s->acts));
    if (s->acts == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    return 0;

err_free:
    sim_hier_free(s);
    return rc;
}

void sim_hier_free(sim_hier_t *s)
{
    uint32_t i;

    if (s->eng != NULL)
        for (i = 0; i < s->topo->n_nodes; i++)
            hb_hier_destroy(s->eng[i]);
    free(s->eng);
    free(s->rounds);
    free(s->done);
    free(s->last_arrive);
    free(s->last_complete);
    free(s->n_complete);
    free(s->acts);
    memset(s, 0, sizeof(*s));
}

/* xorshift64*: the arrival skew, deterministic for a seed. */
static uint64_t sim_rand(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 0x2545f4914f6cdd1dull;
}

int sim_hier_start(sim_hier_t *s)
{
    uint64_t rng = s->o.seed ? s->o.seed : 0x9e3779b97f4a7c15ull;
    uint32_t i;
    int rc;

    for (i = 0; i < s->topo->n_nodes; i++) {
        double t = 0;
        if (!s->topo->nodes[i].member)
            continue;
        if (s->o.skew_us > 0)
            t = s->o.skew_us * (double)(sim_rand(&rng) >> 11) / 9007199254740992.0;
        rc = hb_sim_engine_push(s->w->eng, t, SIM_EV_ARRIVE, i, 0, 0, 0);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* What a chassis round takes after its last arrival before the nodes handle its completion:
 * T_IB, or with the host model what the completion's wake-up and CPU leave of it (sim.h). */
static double ib_wire(const hb_sim_params_t *p)
{
    double t = p->t_ib;

    if (p->cores > 0)
        t -= p->ib_cpu_us + p->wake_us;
    return t > 0 ? t : 0;
}

/* The chassis barrier model: T_IB after the last node of the mask arrived. */
static int sim_hwb_arrive(sim_hier_t *s, uint32_t node, const hb_hier_act_t *a)
{
    const hb_topo_node_t *tn = &s->topo->nodes[node];
    const hb_topo_chassis_t *tc = &s->topo->chassis[tn->chassis];
    double now = hb_sim_engine_now(s->w->eng);
    uint32_t idx = a->sync_no, bit = 1u << tn->port, p;
    double t_done;
    sim_round_t *r;
    int rc;

    if (idx >= s->n_sync || !(a->mask & bit))
        return HB_ERR_INTERNAL;
    r = &s->rounds[(size_t)tn->chassis * s->n_sync + idx];
    if (r->reach == 0) {
        r->coll_id = a->coll_id;
        r->mask = a->mask;
    } else if (r->coll_id != a->coll_id || r->mask != a->mask || (r->reach & bit)) {
        hb_log_error("sim: chassis %" PRIu32 ": node %" PRIu32 " disagrees on sync %" PRIu32,
                     tn->chassis, node, a->sync_no);
        return HB_ERR_INTERNAL;
    }
    r->reach |= bit;
    if (now > r->t_last)
        r->t_last = now;
    if ((r->reach & r->mask) != r->mask)
        return 0;
    s->w->res.hwb_rounds++;
    t_done =
        r->t_last + ib_wire(&s->w->p) + sim_stall(s->w, s->w->p.ib_stall_us, s->w->p.ib_stall_p);
    for (p = 0; p < tc->n_nodes; p++) {
        if (!(r->mask & (1u << s->topo->nodes[tc->nodes[p]].port)))
            continue;
        rc = hb_sim_engine_push(s->w->eng, t_done, SIM_EV_HWB_DONE, tc->nodes[p], a->sync_no, 0,
                                r->coll_id);
        if (rc != 0)
            return rc;
    }
    memset(r, 0, sizeof(*r));
    return 0;
}

void hb_sim_rec_act(uint32_t node, const hb_hier_act_t *a, double t, hb_hier_rec_t *r_p)
{
    hb_hier_rec_t r;

    memset(&r, 0, sizeof(r));
    r.t = t;
    r.node = node;
    r.coll_id = a->coll_id;
    r.step = a->step;
    switch (a->kind) {
    case HB_HIER_ACT_SEND:
        r.kind = HB_HIER_REC_SEND;
        r.peer = a->to;
        r.msg = a->msg;
        break;
    case HB_HIER_ACT_HWB_ARRIVE:
        r.kind = HB_HIER_REC_HWB_ARRIVE;
        r.sync_no = a->sync_no;
        r.phase = a->phase;
        break;
    case HB_HIER_ACT_COMPLETE:
        r.kind = HB_HIER_REC_COMPLETE;
        break;
    default:
        r.kind = HB_HIER_REC_FAIL;
        r.status = a->status;
        break;
    }
    *r_p = r;
}

void hb_sim_rec_ev(uint32_t node, const hb_hier_ev_t *ev, double t, hb_hier_rec_t *r_p)
{
    hb_hier_rec_t r;

    memset(&r, 0, sizeof(r));
    r.t = t;
    r.node = node;
    r.coll_id = ev->coll_id;
    switch (ev->kind) {
    case HB_HIER_EV_ARRIVE:
        r.kind = HB_HIER_REC_ARRIVE;
        break;
    case HB_HIER_EV_MSG:
        r.kind = HB_HIER_REC_MSG;
        r.peer = ev->from;
        r.msg = ev->msg;
        break;
    case HB_HIER_EV_HWB_DONE:
        r.kind = HB_HIER_REC_HWB_DONE;
        r.sync_no = ev->sync_no;
        break;
    default:
        r.kind = HB_HIER_REC_REFUSED;
        r.peer = ev->from;
        break;
    }
    *r_p = r;
}

static void sim_trace(sim_hier_t *s, uint32_t node, const hb_hier_ev_t *ev, const hb_hier_act_t *a)
{
    hb_hier_rec_t r;
    double t = hb_sim_engine_now(s->w->eng);

    if (a != NULL)
        hb_sim_rec_act(node, a, t, &r);
    else if (ev != NULL)
        hb_sim_rec_ev(node, ev, t, &r);
    else
        return;
    s->o.trace(s->o.trace_arg, &r);
}

/* Feed ev to node's engine and carry out its actions. */
int sim_hier_feed(sim_hier_t *s, uint32_t node, const hb_hier_ev_t *ev)
{
    double now = hb_sim_engine_now(s->w->eng);
    size_t n, i;
    int rc;

    if (s->eng[node] == NULL) {
        hb_log_error("sim: an event for node %" PRIu32 ", not a member of the job", node);
        return HB_ERR_INTERNAL;
    }
    rc = hb_hier_step(s->eng[node], ev, s->acts, s->max_acts, &n);
    if (rc == 0 && s->o.trace != NULL)
        sim_trace(s, node, ev, NULL);
    if (rc != 0 && s->replay) {
        hb_hier_rec_t r;
        memset(&r, 0, sizeof(r));
        r.kind = HB_HIER_REC_REFUSED;
        r.node = node;
        r.coll_id = ev->coll_id;
        r.status = rc;
        r.t = now;
        if (s->o.trace != NULL)
            s->o.trace(s->o.trace_arg, &r);
        return rc;
    }
    if (rc != 0) {
        s->w->res.refused++;
        hb_log_error("sim: node %" PRIu32 " refused a %s event: %s", node,
                     ev->kind == HB_HIER_EV_MSG ? hb_hier_msg_name(ev->msg) : "local",
                     hb_status_str(rc));
        return HB_ERR_INTERNAL;
    }
    for (i = 0; i < n; i++) {
        const hb_hier_act_t *a = &s->acts[i];
        if (s->o.trace != NULL)
            sim_trace(s, node, NULL, a);
        if (s->replay)
            continue;
        switch (a->kind) {
        case HB_HIER_ACT_SEND:
            rc = sim_send_ctl(s->w, node, a->to, a->msg, a->coll_id);
            break;
        case HB_HIER_ACT_HWB_ARRIVE:
            rc = sim_hwb_arrive(s, node, a);
            break;
        case HB_HIER_ACT_COMPLETE:
            if (a->coll_id >= s->o.barriers)
                return HB_ERR_INTERNAL;
            if (now > s->last_complete[a->coll_id])
                s->last_complete[a->coll_id] = now;
            s->n_complete[a->coll_id]++;
            s->done[node] = a->coll_id + 1;
            /* the daemon answers its control client: the main thread's next piece of work */
            if (s->w->p.cores > 0 && !s->replay)
                (void)sim_host_run(s->w, node, 0, now, s->w->p.cpu_us);
            rc = 0;
            if (s->on_complete != NULL)
                rc = s->on_complete(s->cb_arg, node, now);
            if (rc == 0 && a->coll_id + 1 < s->o.barriers)
                rc = hb_sim_engine_push(s->w->eng, now, SIM_EV_ARRIVE, node, 0, 0, a->coll_id + 1);
            break;
        default:
            hb_log_error("sim: node %" PRIu32 ": barrier %" PRIu64 " failed: %s", node, a->coll_id,
                         hb_status_str(a->status));
            rc = HB_ERR_INTERNAL;
            break;
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

int sim_hier_event(sim_hier_t *s, const hb_sim_ev_t *ev)
{
    hb_hier_ev_t hev;
    const sim_msg_t *m;
    int rc;

    memset(&hev, 0, sizeof(hev));
    hev.job = 0;
    hev.epoch = s->o.epoch;
    switch (ev->kind) {
    case SIM_EV_ARRIVE:
        hev.kind = HB_HIER_EV_ARRIVE;
        hev.coll_id = ev->x;
        if (ev->x < s->o.barriers && ev->t > s->last_arrive[ev->x])
            s->last_arrive[ev->x] = ev->t;
        break;
    case SIM_EV_HWB_DONE:
        hev.kind = HB_HIER_EV_HWB_DONE;
        hev.coll_id = ev->x;
        hev.sync_no = ev->a;
        break;
    case SIM_EV_DELIVER:
        m = &s->w->msgs[ev->x];
        if (m->kind != SIM_MSG_CTL)
            return 0;
        hev.kind = HB_HIER_EV_MSG;
        hev.coll_id = m->coll_id;
        hev.from = m->from;
        hev.msg = m->hmsg;
        sim_msg_release(s->w, (uint32_t)ev->x);
        break;
    default:
        return 0;
    }
    rc = sim_hier_feed(s, ev->node, &hev);
    return rc != 0 ? rc : 1;
}

int sim_hier_finish(sim_hier_t *s, hb_sim_result_t *r)
{
    double sum = 0;
    uint32_t b;

    for (b = 0; b < s->o.barriers; b++) {
        if (s->n_complete[b] != s->topo->n_members) {
            hb_log_error("sim: barrier %" PRIu32 " completed on %" PRIu32 " of %" PRIu32
                         " nodes (the run stalled)",
                         b, s->n_complete[b], s->topo->n_members);
            return HB_ERR_INTERNAL;
        }
        sum += s->last_complete[b] - s->last_arrive[b];
    }
    r->latency_us = sum / s->o.barriers;
    r->barrier_us = s->last_complete[s->o.barriers - 1];
    return 0;
}

/* The main loop shared by the runs: pop, dispatch, report progress. */
int sim_loop(sim_world_t *w, int (*handle)(void *arg, const hb_sim_ev_t *ev), void *arg,
             const hb_sim_opts_t *o)
{
    hb_sim_ev_t ev;
    int rc;

    while (hb_sim_engine_pop(w->eng, &ev) == 0) {
        rc = sim_host_event(w, &ev); /* the host model's stages before the engine sees it */
        if (rc < 0)
            return rc;
        if (rc > 0)
            continue;
        rc = sim_net_event(w, &ev);
        if (rc == 0)
            rc = handle(arg, &ev);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            hb_log_error("sim: event of kind %" PRIu32 " nobody handles", ev.kind);
            return HB_ERR_INTERNAL;
        }
        if (o != NULL && o->progress != NULL && (hb_sim_engine_count(w->eng) & 0xfffff) == 0)
            o->progress(o->progress_arg, hb_sim_engine_count(w->eng), ev.t);
    }
    w->res.events = hb_sim_engine_count(w->eng);
    w->res.t_end = hb_sim_engine_now(w->eng);
    return 0;
}

static int barrier_handle(void *arg, const hb_sim_ev_t *ev)
{
    return sim_hier_event(arg, ev);
}

int hb_sim_barrier(const hb_topo_t *topo, const hb_sim_params_t *p, const hb_sim_opts_t *o,
                   hb_sim_result_t *r_p)
{
    hb_sim_opts_t def;
    sim_world_t w;
    sim_hier_t s;
    uint32_t *site_of = NULL, i;
    int rc;

    if (topo == NULL || p == NULL || r_p == NULL || topo->n_nodes == 0)
        return HB_ERR_INVAL;
    if (hb_sim_params_check(p, NULL, 0) != 0)
        return HB_ERR_INVAL;
    if (o == NULL) {
        hb_sim_opts_init(&def);
        o = &def;
    }
    site_of = malloc(sizeof(uint32_t) * topo->n_nodes);
    if (site_of == NULL)
        return HB_ERR_NOMEM;
    for (i = 0; i < topo->n_nodes; i++)
        site_of[i] = topo->nodes[i].site;
    rc = sim_world_init(&w, p, topo->n_nodes, site_of, o->host_of);
    free(site_of);
    if (rc != 0)
        return rc;
    sim_world_seed(&w, o->seed);
    rc = sim_hier_init(&s, &w, topo, o);
    if (rc != 0)
        goto out_world;
    rc = sim_hier_start(&s);
    if (rc == 0)
        rc = sim_loop(&w, barrier_handle, &s, o);
    if (rc == 0)
        rc = sim_hier_finish(&s, &w.res);
    if (rc == 0)
        *r_p = w.res;
    sim_hier_free(&s);
out_world:
    sim_world_free(&w);
    return rc;
}
