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
 *               the daemon's median round trip, halved
 *   sr_stall_us, sr_stall_p   the hop's occasional long wait (a loaded host: a few steps in a
 *               hundred wait milliseconds for a core, which a median hides and a chain of
 *               twenty such steps does not): from the round trips' median, p99 and mean
 *               (wall time / N), see stall() in hibar_sim_host.c; the probability per hop
 *   msg_cpu_us  main-thread CPU of those two daemons / (4 N): N pings and N answers, each
 *               paid at the sender and at the receiver
 *   io_cpu_us   the same for their libzmq I/O threads (threads named ZMQbg/IO)
 *   wake_us     (t_sr - 2 msg_cpu - 2 io_cpu) / 3, at least 0: the three wake-ups of a hop
 *               (the sender's I/O thread, the receiver's two threads)
 *   t_ib_us     "tib N" on every node of the root chassis at once: the Center's median
 *   ib_stall_us, ib_stall_p   the round's stall, from its median, p99 and mean (wall / N)
 *   ib_cpu_us   their main-thread CPU / (nodes x N)
 *   cpu_us      "ping" N times on node 0's control socket: its main-thread CPU / (2 N)
 *   cores       CPUs this process may run on (sched_getaffinity)
 */
typedef struct hbs_host {
    double t_sr_us, t_ib_us, t_sr_mean_us, t_ib_mean_us, msg_cpu_us, io_cpu_us, ib_cpu_us, cpu_us,
        wake_us;
    double other_cpu_us; /* per hop: the daemons' other threads (PMIx, reaper) */
    double sr_stall_us, sr_stall_p, ib_stall_us, ib_stall_p;
    uint32_t cores, nodes, iters;
    double load1; /* load average when measured */
} hbs_host_t;

/* Probe the running cluster of cfg (topology t) with iters round trips / rounds / pings.
 * 0, or a status (logged) when a daemon cannot be reached or answers with an error. */
int hbs_host_probe(const hb_cfg_t *cfg, const hb_topo_t *t, unsigned iters, hbs_host_t *h_p);

/* The JSON row of a probe (bench "host", impl the protocol), with a newline. */
void hbs_host_row(FILE *f, const char *impl, const hbs_host_t *h);

#endif
