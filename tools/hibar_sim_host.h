/* hibar_sim_host.h: hibar-sim's measurement of the host model on a running emulated cluster. */
#ifndef HIBAR_SIM_HOST_H
#define HIBAR_SIM_HOST_H

#include <stdint.h>
#include <stdio.h>

#include "cfg.h"
#include "topo.h"

/*
 * What the host model of sim.h needs, measured on the running cluster of cfg, one link or
 * chassis at a time (nothing else of the cluster busy), with the CPU time of the daemons'
 * threads read from /proc/PID/task/TID/schedstat before and after (their idle rate, measured
 * just before, taken off):
 *   t_sr_us     one-way hop: "tsr N" between the deepest non-root Center and its parent,
 *               the mean: wall time / 2 N (t_sr_median_us: the daemon's median, halved).
 *               The mean, because a barrier is a chain of such steps and means add up: on a
 *               loaded host a few steps in a hundred wait milliseconds for a core, which the
 *               median of one step hides and the median of a chain of twenty does not.
 *   msg_cpu_us  main-thread CPU of those two daemons / (4 N): N pings and N answers, each
 *               paid at the sender and at the receiver
 *   io_cpu_us   the same for their libzmq I/O threads (threads named ZMQbg/IO)
 *   wake_us     (t_sr - 2 msg_cpu - 2 io_cpu) / 3, at least 0: the three wake-ups of a hop
 *               (the sender's I/O thread, the receiver's two threads)
 *   t_ib_us     "tib N" on every node of the root chassis at once: wall time / N (the mean;
 *               t_ib_median_us: the Center's median)
 *   ib_cpu_us   their main-thread CPU / (nodes x N)
 *   cpu_us      "ping" N times on node 0's control socket: its main-thread CPU / (2 N)
 *   cores       CPUs this process may run on (sched_getaffinity)
 */
typedef struct hbs_host {
    double t_sr_us, t_ib_us, t_sr_median_us, t_ib_median_us, msg_cpu_us, io_cpu_us, ib_cpu_us,
        cpu_us, wake_us;
    double other_cpu_us; /* per hop: the daemons' other threads (PMIx, reaper) */
    uint32_t cores, nodes, iters;
    double load1; /* load average when measured */
} hbs_host_t;

/* Probe the running cluster of cfg (topology t) with iters round trips / rounds / pings.
 * 0, or a status (logged) when a daemon cannot be reached or answers with an error. */
int hbs_host_probe(const hb_cfg_t *cfg, const hb_topo_t *t, unsigned iters, hbs_host_t *h_p);

/* The JSON row of a probe (bench "host", impl the protocol), with a newline. */
void hbs_host_row(FILE *f, const char *impl, const hbs_host_t *h);

#endif
