/* sim_coll.c: drives one production hb_coll_exec per node through the discrete-event world
 * (collectives, the fence). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hb_log.h"
#include "hb_status.h"
#include "sim_coll.h"
#include "sim_hier.h"

#define SIM_COLL_ACTS 256

typedef struct sim_coll {
    sim_world_t *w;
    hb_coll_sched_t *s;
    hb_coll_exec_t **x; /* [n_nodes] */
    hb_coll_act_t acts[SIM_COLL_ACTS];
    uint32_t n_complete;
    double last_complete;
} sim_coll_t;

static void sim_coll_free(sim_coll_t *c)
{
    uint32_t i;

    if (c->x != NULL && c->s != NULL)
        for (i = 0; i < c->s->n_nodes; i++)
            hb_coll_exec_free(c->x[i]);
    free(c->x);
    hb_coll_sched_free(c->s);
    c->x = NULL;
    c->s = NULL;
}

static int sim_coll_init(sim_coll_t *c, sim_world_t *w, const hb_coll_nodes_t *nodes,
                         const hb_coll_args_t *args)
{
    uint32_t i;
    int rc;

    memset(c, 0, sizeof(*c));
    c->w = w;
    rc = hb_coll_sched_build(nodes, args, &c->s);
    if (rc != 0) {
        hb_log_error("sim: the %s %s schedule was refused: %s", hb_coll_alg_name(args->alg),
                     hb_coll_op_name(args->op), hb_status_str(rc));
        return rc;
    }
    c->x = calloc(c->s->n_nodes, sizeof(*c->x));
    if (c->x == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    for (i = 0; i < c->s->n_nodes; i++) {
        rc = hb_coll_exec_create(c->s, i, NULL, NULL, HB_COLL_EXEC_NODATA, &c->x[i]);
        if (rc != 0)
            goto err_free;
    }
    return 0;

err_free:
    sim_coll_free(c);
    return rc;
}

/* Feed ev to node's executor and carry out its actions (polling while it has more). */
static int sim_coll_feed(sim_coll_t *c, uint32_t node, const hb_coll_ev_t *ev)
{
    double now = hb_sim_engine_now(c->w->eng);
    hb_coll_ev_t poll = {.kind = HB_COLL_EV_POLL};
    size_t n, i;
    int rc;

    do {
        rc = hb_coll_exec_step(c->x[node], ev, c->acts, SIM_COLL_ACTS, &n);
        if (rc != 0) {
            c->w->res.refused++;
            hb_log_error("sim: node %" PRIu32 ": coll executor refused an event: %s", node,
                         hb_status_str(rc));
            return HB_ERR_INTERNAL;
        }
        for (i = 0; i < n; i++) {
            const hb_coll_act_t *a = &c->acts[i];
            switch (a->kind) {
            case HB_COLL_ACT_SEND:
                rc = sim_send_data(c->w, node, a->to, a->seq, a->off, a->len);
                break;
            case HB_COLL_ACT_COMPLETE:
                c->n_complete++;
                if (now > c->last_complete)
                    c->last_complete = now;
                if (c->w->p.cores > 0) /* the daemon's reply to its control client */
                    (void)sim_host_run(c->w, node, 0, now, c->w->p.cpu_us);
                break;
            case HB_COLL_ACT_FAIL:
                hb_log_error("sim: node %" PRIu32 ": collective failed: %s", node,
                             hb_status_str(a->status));
                rc = HB_ERR_INTERNAL;
                break;
            default: /* POST_RECV, DELIVER: nothing to model */
                break;
            }
            if (rc != 0)
                return rc;
        }
        ev = &poll;
    } while (hb_coll_exec_pending(c->x[node]));
    return 0;
}

/* 1 handled, 0 not a collective event, negative status. */
static int sim_coll_event(sim_coll_t *c, const hb_sim_ev_t *ev)
{
    hb_coll_ev_t cev;
    const sim_msg_t *m;
    int rc;

    memset(&cev, 0, sizeof(cev));
    if (ev->kind == SIM_EV_COLL_START) {
        cev.kind = HB_COLL_EV_START;
    } else if (ev->kind == SIM_EV_DELIVER && c->w->msgs[ev->x].kind == SIM_MSG_DATA) {
        m = &c->w->msgs[ev->x];
        cev.kind = HB_COLL_EV_MSG;
        cev.from = m->from;
        cev.seq = m->seq;
        cev.off = m->off;
        cev.len = m->len;
        sim_msg_release(c->w, (uint32_t)ev->x);
    } else {
        return 0;
    }
    rc = sim_coll_feed(c, ev->node, &cev);
    return rc != 0 ? rc : 1;
}

static int sim_coll_check(const sim_coll_t *c)
{
    if (c->n_complete != c->s->n_nodes) {
        hb_log_error("sim: the collective completed on %" PRIu32 " of %" PRIu32
                     " nodes (the run stalled)",
                     c->n_complete, c->s->n_nodes);
        return HB_ERR_INTERNAL;
    }
    return 0;
}

static int coll_handle(void *arg, const hb_sim_ev_t *ev)
{
    return sim_coll_event(arg, ev);
}

int hb_sim_coll(const hb_coll_nodes_t *nodes, const hb_coll_args_t *args, const hb_sim_params_t *p,
                const hb_sim_opts_t *o, hb_sim_result_t *r_p)
{
    sim_world_t w;
    sim_coll_t c;
    uint32_t i;
    int rc;

    if (nodes == NULL || args == NULL || p == NULL || r_p == NULL || nodes->n_nodes == 0)
        return HB_ERR_INVAL;
    if (hb_sim_params_check(p, NULL, 0) != 0)
        return HB_ERR_INVAL;
    rc = sim_world_init(&w, p, nodes->n_nodes, nodes->site_of, o != NULL ? o->host_of : NULL);
    if (rc != 0)
        return rc;
    sim_world_seed(&w, o != NULL ? o->seed : 1);
    rc = sim_coll_init(&c, &w, nodes, args);
    if (rc != 0)
        goto out_world;
    for (i = 0; i < nodes->n_nodes && rc == 0; i++) {
        double t0 = o != NULL && o->start_us != NULL ? o->start_us[i] : 0;
        if (!(t0 >= 0))
            rc = HB_ERR_INVAL;
        else
            rc = hb_sim_engine_push(w.eng, t0, SIM_EV_COLL_START, i, 0, 0, 0);
    }
    if (rc == 0)
        rc = sim_loop(&w, coll_handle, &c, o);
    if (rc == 0)
        rc = sim_coll_check(&c);
    if (rc == 0) {
        w.res.latency_us = c.last_complete;
        *r_p = w.res;
    }
    sim_coll_free(&c);
out_world:
    sim_world_free(&w);
    return rc;
}

/* ---- the fence ------------------------------------------------------------------------- */

typedef struct sim_fence {
    sim_hier_t h;
    sim_coll_t c;
} sim_fence_t;

static int fence_on_complete(void *arg, uint32_t node, double t)
{
    sim_fence_t *f = arg;

    return hb_sim_engine_push(f->c.w->eng, t, SIM_EV_COLL_START, node, 0, 0, 0);
}

static int fence_handle(void *arg, const hb_sim_ev_t *ev)
{
    sim_fence_t *f = arg;
    int rc = sim_hier_event(&f->h, ev);

    return rc != 0 ? rc : sim_coll_event(&f->c, ev);
}

int hb_sim_fence(const hb_topo_t *topo, uint32_t ppn, uint64_t blob, hb_coll_alg_t alg,
                 const hb_sim_params_t *p, const hb_sim_opts_t *o, hb_sim_result_t *r_p)
{
    hb_sim_opts_t so;
    hb_coll_nodes_t nodes;
    hb_coll_args_t args;
    sim_fence_t f;
    sim_world_t w;
    uint32_t *site_of = NULL, *ranks_of = NULL, i;
    int rc;

    if (topo == NULL || p == NULL || r_p == NULL || topo->n_nodes == 0 || ppn == 0)
        return HB_ERR_INVAL;
    if (hb_sim_params_check(p, NULL, 0) != 0)
        return HB_ERR_INVAL;
    if (o == NULL)
        hb_sim_opts_init(&so);
    else
        so = *o;
    so.barriers = 1;
    site_of = malloc(sizeof(uint32_t) * topo->n_nodes);
    ranks_of = malloc(sizeof(uint32_t) * topo->n_nodes);
    if (site_of == NULL || ranks_of == NULL) {
        free(site_of);
        free(ranks_of);
        return HB_ERR_NOMEM;
    }
    for (i = 0; i < topo->n_nodes; i++)
        ranks_of[i] = ppn;
    rc = hb_coll_nodes_from_topo(topo, ranks_of, site_of, &nodes);
    if (rc == 0)
        rc = sim_world_init(&w, p, topo->n_nodes, site_of, so.host_of);
    if (rc != 0)
        goto out_free;
    sim_world_seed(&w, so.seed);
    memset(&args, 0, sizeof(args));
    args.op = HB_COLL_ALLGATHER;
    args.alg = alg;
    args.root = 0;
    args.size = blob;
    rc = sim_coll_init(&f.c, &w, &nodes, &args);
    if (rc != 0)
        goto out_world;
    rc = sim_hier_init(&f.h, &w, topo, &so);
    if (rc != 0)
        goto out_coll;
    f.h.on_complete = fence_on_complete;
    f.h.cb_arg = &f;
    rc = sim_hier_start(&f.h);
    if (rc == 0)
        rc = sim_loop(&w, fence_handle, &f, &so);
    if (rc == 0)
        rc = sim_hier_finish(&f.h, &w.res);
    if (rc == 0)
        rc = sim_coll_check(&f.c);
    if (rc == 0) {
        w.res.latency_us = f.c.last_complete;
        *r_p = w.res;
    }
    sim_hier_free(&f.h);
out_coll:
    sim_coll_free(&f.c);
out_world:
    sim_world_free(&w);
out_free:
    free(site_of);
    free(ranks_of);
    return rc;
}
