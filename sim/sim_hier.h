/* sim_hier.h: internals of sim/: the barrier driver (hb_hier engines on the simulated world),
 * shared with the fence. */
#ifndef HB_SIM_HIER_H
#define HB_SIM_HIER_H

#include "sim_int.h"

/* One chassis barrier round (chassis x sync number). */
typedef struct sim_round {
    uint64_t coll_id;
    uint32_t mask, reach;
    double t_last; /* latest arrival */
} sim_round_t;

typedef struct sim_hier {
    sim_world_t *w;
    const hb_topo_t *topo;
    hb_sim_opts_t o;
    hb_hier_t **eng; /* [n_nodes] the production engines */
    uint32_t n_sync;
    sim_round_t *rounds;                 /* [n_chassis * n_sync] */
    uint64_t *done;                      /* [n_nodes] barriers complete on each node */
    double *last_arrive, *last_complete; /* [barriers] */
    uint32_t *n_complete;                /* [barriers] */
    hb_hier_act_t *acts;
    size_t max_acts;
    /* called at each node's COMPLETE (the fence starts its allgather there), or NULL */
    int (*on_complete)(void *arg, uint32_t node, double t);
    void *cb_arg;
    int replay; /* sim_replay.c: actions are only traced, not carried out */
} sim_hier_t;

int sim_hier_init(sim_hier_t *s, sim_world_t *w, const hb_topo_t *topo, const hb_sim_opts_t *o);
void sim_hier_free(sim_hier_t *s);
/* Schedule every node's first ARRIVE (at 0, or skewed). */
int sim_hier_start(sim_hier_t *s);
/* Feed ev to node's engine, trace it (o.trace) and carry out its actions; a refused event is
 * INTERNAL, or in replay mode traced as a REFUSED record and its status returned. */
int sim_hier_feed(sim_hier_t *s, uint32_t node, const hb_hier_ev_t *ev);
/* 1 handled, 0 not a barrier event, negative status. */
int sim_hier_event(sim_hier_t *s, const hb_sim_ev_t *ev);
/* Check every barrier completed everywhere; set latency_us and barrier_us. */
int sim_hier_finish(sim_hier_t *s, hb_sim_result_t *r);
/* Pop and dispatch until no event is left (network events first, then handle). */
int sim_loop(sim_world_t *w, int (*handle)(void *arg, const hb_sim_ev_t *ev), void *arg,
             const hb_sim_opts_t *o);

#endif
