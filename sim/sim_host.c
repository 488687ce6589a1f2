/* sim_host.c: the host model of hibar-sim: daemons' threads sharing their host's cores. */
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "sim_int.h"

/*
 * Each node has a main thread and an I/O thread, each a "busy until" time; each host has
 * p.cores cores, each a "free at" time. Work is reserved when the event that brings it is
 * processed, so reservations follow simulated time: the cores serve ready work first come,
 * first served, non-preemptively, and a thread does one piece at a time. Work reaching an
 * idle thread pays the wake-up latency first; work reaching a busy one waits for it (the
 * daemon drains what has arrived without sleeping in between).
 */

int sim_host_init(sim_world_t *w, const uint32_t *host_of)
{
    uint32_t i;

    w->n_hosts = 0;
    if (w->p.cores == 0)
        return 0;
    w->host_of = calloc(w->n_nodes, sizeof(uint32_t));
    w->main_free = calloc(w->n_nodes, sizeof(double));
    w->io_free = calloc(w->n_nodes, sizeof(double));
    if (w->host_of == NULL || w->main_free == NULL || w->io_free == NULL)
        return HB_ERR_NOMEM;
    w->n_hosts = 1;
    for (i = 0; i < w->n_nodes && host_of != NULL; i++) {
        if (host_of[i] >= w->n_nodes)
            return HB_ERR_INVAL;
        w->host_of[i] = host_of[i];
        if (host_of[i] + 1 > w->n_hosts)
            w->n_hosts = host_of[i] + 1;
    }
    /* the threads start asleep: their first work pays the wake-up */
    for (i = 0; i < w->n_nodes; i++)
        w->main_free[i] = w->io_free[i] = -1;
    w->core_free = calloc((size_t)w->n_hosts * w->p.cores, sizeof(double));
    return w->core_free != NULL ? 0 : HB_ERR_NOMEM;
}

void sim_host_free(sim_world_t *w)
{
    free(w->core_free);
    free(w->io_free);
    free(w->main_free);
    free(w->host_of);
    w->core_free = w->io_free = w->main_free = NULL;
    w->host_of = NULL;
}

double sim_host_run(sim_world_t *w, uint32_t node, int io, double t, double cost)
{
    double *thr = io ? &w->io_free[node] : &w->main_free[node], start, *core;
    uint32_t c, k = 0;

    if (w->p.cores == 0)
        return t + cost;
    if (t > *thr)
        t += w->p.wake_us; /* it slept */
    else
        t = *thr;
    core = &w->core_free[(size_t)w->host_of[node] * w->p.cores];
    for (c = 1; c < w->p.cores; c++)
        if (core[c] < core[k])
            k = c;
    start = core[k] > t ? core[k] : t;
    w->res.core_wait_us += start - t;
    w->res.cpu_busy_us += cost;
    core[k] = start + cost;
    *thr = start + cost;
    return start + cost;
}

int sim_host_event(sim_world_t *w, const hb_sim_ev_t *ev)
{
    const hb_sim_params_t *p = &w->p;
    double t;
    uint32_t next = SIM_STAGE_PAID;
    int rc;

    if (p->cores == 0 || ev->b == SIM_STAGE_PAID)
        return 0;
    switch (ev->kind) {
    case SIM_EV_ARRIVE:
    case SIM_EV_COLL_START:
        t = sim_host_run(w, ev->node, 0, ev->t, p->cpu_us);
        break;
    case SIM_EV_HWB_DONE:
        t = sim_host_run(w, ev->node, 0, ev->t, p->ib_cpu_us);
        break;
    case SIM_EV_DELIVER:
        if (ev->b == SIM_STAGE_NEW) {
            t = sim_host_run(w, ev->node, 1, ev->t, p->io_cpu_us);
            next = SIM_STAGE_IO;
        } else {
            t = sim_host_run(w, ev->node, 0, ev->t, p->msg_cpu_us);
        }
        break;
    default:
        return 0;
    }
    rc = hb_sim_engine_push(w->eng, t, ev->kind, ev->node, ev->a, next, ev->x);
    return rc != 0 ? rc : 1;
}
