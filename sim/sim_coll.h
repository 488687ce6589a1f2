/* sim_coll.h: hibar-sim's drivers of the production coll/ executors: a collective, and the PMIx
 * fence (tree barrier + allgather). */
#ifndef HB_SIM_COLL_H
#define HB_SIM_COLL_H

#include "coll_sched.h"
#include "sim.h"

/*
 * Simulate one collective: the schedule hb_coll_sched_build(nodes, args) gives, one
 * hb_coll_exec_t per node (HB_COLL_EXEC_NODATA: sizes only), every node starting at 0 (or at
 * o->start_us[node]), on the network model of sim.h. r_p->latency_us is the last node's
 * COMPLETE. o may be NULL (its progress, host_of and start_us are used). INVAL (bad input, the
 * schedule refused), NOMEM, INTERNAL (an executor refused a message, failed, or the run stalled).
 */
int hb_sim_coll(const hb_coll_nodes_t *nodes, const hb_coll_args_t *args, const hb_sim_params_t *p,
                const hb_sim_opts_t *o, hb_sim_result_t *r_p);

/*
 * The PMIx fence as hibar runs it: the barrier of o->proto over topo (hb_hier engines), then,
 * on each node as soon as its barrier completes, an allgather (algorithm alg, coll schedule)
 * of ppn * blob bytes per node, so every node ends with every rank's blob. r_p->latency_us is
 * the last allgather COMPLETE (all nodes arrive at 0), r_p->barrier_us the barrier's part.
 */
int hb_sim_fence(const hb_topo_t *topo, uint32_t ppn, uint64_t blob, hb_coll_alg_t alg,
                 const hb_sim_params_t *p, const hb_sim_opts_t *o, hb_sim_result_t *r_p);

#endif
