/* sim.h: hibar-sim's discrete-event engine, cost model and drivers of the production hier/ and
 * coll/ state machines. */
#ifndef HB_SIM_H
#define HB_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "hier.h"
#include "hier_local.h"
#include "topo.h"

/*
 * Sans-I/O like hier/ and coll/: no socket, thread or clock; time is the simulation's own
 * (microseconds, double). Everything is deterministic: the same input and seed give the same
 * result, bit for bit (events at the same time run in the order they were scheduled).
 *
 * ---- The cost model (what hibar-sim(1) documents) ----------------------------------------
 * Control messages (hier SEND, no payload): the sender's NIC is busy ctl_gap, the message
 * arrives ctl_gap + T_SR after it could leave (hop TSR), or g(0) + L (hop PLOGP, from the
 * PlogP tables); a hop between two sites adds the WAN latency.
 * Chassis barrier: completes T_IB after the last node of its mask arrived, on every node.
 * Data messages (coll SEND of m bytes):
 *   LAN (same site): FIFO reservation of the sender's out-NIC AND the receiver's in-NIC:
 *     start = max(ready, out_free[src], in_free[dst]); both are busy c(m) = alpha + m/b_LAN
 *     (PLOGP: g(m)); it arrives at start + c(m) + lan_lat (PLOGP: + L). Several senders to
 *     one receiver (incast) and several messages from one sender are thus serialized.
 *   WAN (other site): the sender is busy alpha (start-up); the message then queues on its
 *     lane (one FIFO per node pair: a lane is one connection) and, at the head, becomes a
 *     flow on the directed site-pair WAN. Flows share the WAN by processor sharing: with n
 *     flows active each runs at b_WAN(n) (hb_model_bwan: the measured per-lane table, else
 *     min(b_lane, B_WAN / n)), recomputed whenever a flow starts or ends. It arrives the WAN
 *     latency L after its last byte left. The message also holds the sender's out-NIC for
 *     alpha + m/b_LAN from its start and the receiver's in-NIC for m/b_LAN (its bytes cross
 *     both NICs at b_LAN while the lane carries them): a root whose WAN flows add up to its
 *     NIC's rate (the multi-lane paper's grid: B_WAN = b_LAN) is bound by its NIC; with
 *     b_WAN << b_LAN it serves its own site while its lane runs, as before.
 * Not modelled: TCP slow start, PlogP-BR's retransmission-timeout penalty, switch-internal
 * contention inside a site (only NICs are resources).
 *
 * Hosts (cores > 0; sim_host.c): what dominates when many daemons share few cores (an
 * emulated cluster: all nodes on one host; a namespace test bed: one host per namespace).
 * Every node is a daemon with two threads, its main thread (event loop, hier/coll engines)
 * and libzmq's I/O thread; every piece of work below runs on one of them, one piece at a
 * time per thread, and needs one of its host's cores (FIFO over the cores: the first free
 * core takes it, so concurrent handlers of the daemons of one host serialise). A thread that
 * has nothing to do sleeps: work that reaches an idle thread starts wake_us later.
 *   control command (ARRIVE, collective start; and the reply at COMPLETE): cpu_us on main
 *   message (control or data), sender: msg_cpu_us on main (after the handler that sends it),
 *     then io_cpu_us on its I/O thread; then the wire; receiver: io_cpu_us on its I/O
 *     thread, then msg_cpu_us on main, then the engine handles it
 *   chassis barrier round: each node handles the completion with ib_cpu_us on main
 * T_SR and T_IB stay the uncontended figures (a hop alone, a chassis alone): the wire part of
 * a control hop is T_SR - 2 msg_cpu - 2 io_cpu - 3 wake (clamped at 0; a LAN data message
 * keeps alpha + m/b_LAN), a chassis round completes T_IB - ib_cpu - wake after its last
 * arrival; so a hop or round with nothing else running takes exactly T_SR or T_IB, and
 * contention comes only from the cores. ctl_gap is not used (msg_cpu_us replaces it).
 * Every figure is measured (hibar-sim validate --measure: a ping-pong, chassis rounds and
 * control commands on the running cluster, with the CPU time of the daemons' threads from
 * /proc/PID/task/TID/schedstat), never fitted to the result being validated.
 */

/* ---- the event engine ------------------------------------------------------------------ */

/* One event: a time, a kind and a few words for the driver; seq is the tie-break. */
typedef struct hb_sim_ev {
    double t;
    uint64_t seq;  /* order of scheduling: equal times run in this order */
    uint32_t kind; /* the driver's */
    uint32_t node;
    uint32_t a, b;
    uint64_t x;
} hb_sim_ev_t;

typedef struct hb_sim_engine hb_sim_engine_t;

/* An empty engine at time 0. 0 or NOMEM. */
int hb_sim_engine_create(hb_sim_engine_t **e_p);
void hb_sim_engine_destroy(hb_sim_engine_t *e);
/* Schedule an event at t (>= now; an earlier t is clamped to now). 0 or NOMEM. */
int hb_sim_engine_push(hb_sim_engine_t *e, double t, uint32_t kind, uint32_t node, uint32_t a,
                       uint32_t b, uint64_t x);
/* Take the earliest event (ties: the one scheduled first) and advance now to its time.
 * 0, or NOT_FOUND when no event is left. */
int hb_sim_engine_pop(hb_sim_engine_t *e, hb_sim_ev_t *ev_p);
double hb_sim_engine_now(const hb_sim_engine_t *e);
size_t hb_sim_engine_pending(const hb_sim_engine_t *e);
uint64_t hb_sim_engine_count(const hb_sim_engine_t *e); /* events popped so far */

/* ---- parameters -------------------------------------------------------------------------- */

#define HB_SIM_MAX_TAB 64 /* entries of the measured tables (lanes, PlogP sizes) */

typedef enum hb_sim_hop {
    HB_SIM_HOP_TSR = 0,  /* control hop T_SR, data Hockney alpha + m/b_LAN */
    HB_SIM_HOP_PLOGP = 1 /* control hop g(0) + L, data g(m) + L from the PlogP tables */
} hb_sim_hop_t;

/* Every cost the model uses. Units: µs, bytes, bytes/µs (1 byte/µs = 8 Mbit/s). Plain data
 * (no pointers): copy it freely. */
typedef struct hb_sim_params {
    double t_ib;    /* chassis barrier */
    double t_sr;    /* one inter-chassis send/receive (control message) */
    double ctl_gap; /* sender time per control message: sends to k children leave one gap
                     * apart (0: all at once, as the paper's formula assumes) */
    hb_sim_hop_t hop;
    double alpha;                 /* per-message start-up of a data message */
    double b_lan;                 /* LAN point-to-point bandwidth */
    double lan_lat;               /* LAN latency on top of alpha (default 0) */
    double wan_lat;               /* WAN one-way latency L */
    double b_lane;                /* WAN cap of one node pair (b_WAN) */
    double B_wan;                 /* WAN total cap per direction between two sites */
    uint32_t n_b_wan;             /* measured b_WAN(P), P = 1..n_b_wan; 0: none */
    double b_wan[HB_SIM_MAX_TAB]; /* per-lane bandwidth with P lanes active */
    /* PlogP (hop PLOGP): values at n_logp sizes, ascending */
    double logp_L;
    uint32_t n_logp;
    double logp_m[HB_SIM_MAX_TAB], logp_os[HB_SIM_MAX_TAB], logp_or[HB_SIM_MAX_TAB];
    double logp_g[HB_SIM_MAX_TAB];
    /* Hosts (see above): cores per host, 0 = off (a real cluster: the measured hop and
     * chassis figures include the daemons' own work). */
    uint32_t cores;
    double cpu_us;     /* a control command (request or reply) on the main thread */
    double msg_cpu_us; /* a message on the main thread, at each end */
    double io_cpu_us;  /* a message on libzmq's I/O thread, at each end */
    double ib_cpu_us;  /* a chassis barrier completion on the main thread */
    double wake_us;    /* a sleeping thread's wake-up latency */
    /* Stalls (any model): a control hop is late by sr_stall_us with probability sr_stall_p,
     * a chassis round by ib_stall_us with probability ib_stall_p, drawn per hop / round from
     * the run's seed: a loaded host's occasional long wait for a core, as the probes' mean
     * and p99 show it (T_SR, T_IB: the medians then). Default 0: none. */
    double sr_stall_us, sr_stall_p, ib_stall_us, ib_stall_p;
} hb_sim_params_t;

/* Defaults: T_IB 4 µs, T_SR 60 µs, gap 1 µs (a zmq_send measured here), hop TSR, alpha 50 µs, LAN 1
 * Gbit/s, WAN L 5000 µs, 250 Mbit/s per lane, 1 Gbit/s total (the multi-lane paper's test bed). */
void hb_sim_params_init(hb_sim_params_t *p);
/* INVAL with a reason in err when a value is unusable (negative time, zero bandwidth...). */
int hb_sim_params_check(const hb_sim_params_t *p, char *err, size_t errlen);
/* b_WAN(n) in bytes/µs per flow with n flows active (coll/coll_model.h's hb_model_bwan). */
double hb_sim_bwan(const hb_sim_params_t *p, uint32_t n);

/* ---- calibration from hibar-bench JSON rows (doc/design.md section 6) ------------------ */

/*
 * Rows read (one JSON object per line; blank lines and lines starting with '#' skipped):
 *   bench "hwbarrier"        median_us -> T_IB (the row with most nodes; ties: the last)
 *   bench "cluster-barrier"  t_ib_us, t_sr_us -> T_IB, T_SR (their mean over such rows;
 *                            override hwbarrier/tsr);
 *                            the row itself is kept for validation (protocol impl, nodes,
 *                            median_us, protocol_median_us, cpu_per_barrier_us,
 *                            cpu_per_ping_us, arrive_spread_us)
 *   bench "tsr"              median_us -> T_SR (one-way)
 *   bench "lanes"            impl "lan": mbit (or bw_mbps) -> b_LAN, latency_us -> alpha;
 *                            impl "wan": lanes = P and mbit per lane -> b_WAN(P),
 *                            total_mbit -> B_WAN, latency_us -> L
 *   bench "logp"             size, L_us, os_us, or_us, g_us -> PlogP tables (hop PLOGP)
 *   bench "host"             cores, t_sr_us, t_ib_us, msg_cpu_us, io_cpu_us, ib_cpu_us,
 *                            ctl_cpu_us, wake_us (and optional sr_stall_us, sr_stall_p,
 *                            ib_stall_us, ib_stall_p) -> kept (hb_sim_calib_host), for
 *                            validate
 * Other rows are counted and ignored. A malformed line fails the whole file with
 * "FILE:LINE: what" in err (HB_ERR_CONFIG); unreadable file: HB_ERR_IO.
 */
typedef struct hb_sim_meas {
    char impl[16];
    uint32_t nodes;
    double median_us, t_ib_us, t_sr_us;
    double protocol_median_us; /* daemon-stamped arrival -> completion, or -1 */
    double cpu_per_barrier_us; /* the daemons' CPU per barrier, all together, or -1 */
    double cpu_per_ping_us;    /* ... per round of control commands (the driver's), or -1 */
    double arrive_spread_us;   /* first -> last arrival at the daemons (median), or -1 */
} hb_sim_meas_t;

#define HB_SIM_MAX_MEAS 32

/* A "host" row (hibar-sim validate --measure's probe of the running cluster: the host model's
 * figures, see sim.h's model and hibar_sim_host.h); kept for validation, per impl (the
 * protocol the cluster ran), not applied to the parameters. */
typedef struct hb_sim_host_row {
    char impl[16];
    uint32_t cores;
    double t_sr_us, t_ib_us, msg_cpu_us, io_cpu_us, ib_cpu_us, ctl_cpu_us, wake_us, load1;
    double sr_stall_us, sr_stall_p, ib_stall_us, ib_stall_p; /* 0 when the row has none */
    double t_sr_mean_us, t_ib_mean_us;                       /* -1 when the row has none */
} hb_sim_host_row_t;

typedef struct hb_sim_calib {
    uint32_t rows, used; /* rows read, rows that set a parameter */
    unsigned set;        /* HB_SIM_SET_* bits: what the file gave */
    uint32_t n_meas;     /* cluster-barrier measurements kept for validation */
    hb_sim_meas_t meas[HB_SIM_MAX_MEAS];
    uint32_t n_host; /* host rows */
    hb_sim_host_row_t host[HB_SIM_MAX_MEAS];
} hb_sim_calib_t;

/* How hb_sim_calib_host takes a hop and a chassis round from the host rows. */
typedef enum {
    HB_SIM_STEP_MEAN = 0,  /* their means (t_sr_mean_us, t_ib_mean_us; the medians if absent),
                            * no stalls: a barrier is a chain of steps and means add up */
    HB_SIM_STEP_STALLS = 1 /* their medians (t_sr_us, t_ib_us) plus the rows' random stalls */
} hb_sim_step_t;

/* The host rows of impl (every host row if impl is NULL) applied to p (cores: the largest;
 * T_SR, T_IB and the CPU figures: each the median over the rows; stalls: their mean; the host
 * model on). 0, or NOT_FOUND if there is none. */
int hb_sim_calib_host(const hb_sim_calib_t *c, const char *impl, hb_sim_step_t step,
                      hb_sim_params_t *p);

#define HB_SIM_SET_TIB 1u
#define HB_SIM_SET_TSR 2u
#define HB_SIM_SET_LAN 4u
#define HB_SIM_SET_WAN 8u
#define HB_SIM_SET_LOGP 16u
#define HB_SIM_SET_HOST 32u

int hb_sim_calibrate(const char *path, hb_sim_params_t *p, hb_sim_calib_t *c_p, char *err,
                     size_t errlen);

/* ---- topologies ------------------------------------------------------------------------ */

/* n_nodes in chassis of chassis_size (the last may be smaller), sites contiguous blocks of
 * whole chassis (chassis c in site c * sites / n_chassis), fanout as in topo.h. */
int hb_sim_topo_gen(uint32_t n_nodes, uint32_t chassis_size, uint32_t fanout, uint32_t sites,
                    hb_topo_t **topo_p, char *err, size_t errlen);

/* ---- runs -------------------------------------------------------------------------------- */

/*
 * Traces use hier_local.h's record (hb_hier_rec_t: ARRIVE, MSG, HWB_DONE for events fed;
 * SEND, HWB_ARRIVE, COMPLETE, FAIL for actions produced; t = simulated time, n_ib/n_sr 0) and
 * its line format (hb_hier_rec_format), so the traces of hier_local, hibar-sim and the daemon's
 * driver compare line by line: per node, the action records come in program order whatever
 * the delivery order.
 */
typedef void (*hb_sim_trace_fn)(void *arg, const hb_hier_rec_t *r);

/* The trace record of an event fed to node's engine (ARRIVE, MSG, HWB_DONE; PEER_LOST and
 * TIMEOUT become REFUSED records with status 0) and of an action it produced, at time t: what
 * any driver (the daemon's drain loop included) needs to print the common trace with
 * hb_hier_rec_format. */
void hb_sim_rec_ev(uint32_t node, const hb_hier_ev_t *ev, double t, hb_hier_rec_t *r_p);
void hb_sim_rec_act(uint32_t node, const hb_hier_act_t *a, double t, hb_hier_rec_t *r_p);
typedef void (*hb_sim_progress_fn)(void *arg, uint64_t events, double t_us);

typedef struct hb_sim_opts {
    hb_hier_proto_t proto; /* barrier protocol (fence: the barrier before the allgather) */
    uint32_t barriers;     /* consecutive barriers (default 1); latency is their mean */
    double skew_us;        /* arrivals uniform in [0, skew) (default 0: all at 0) */
    uint64_t seed;         /* for the skew and the stalls */
    hb_sim_trace_fn trace; /* or NULL */
    void *trace_arg;
    hb_sim_progress_fn progress; /* or NULL: called every 2^20 events */
    void *progress_arg;
    uint32_t epoch;  /* the engines' epoch (0: 1) */
    uint32_t n_sync; /* the engines' sync numbers (0: 2, one barrier in flight) */
    /* host of each node ([n_nodes], values < n_nodes) when the params have cores > 0; NULL:
     * every node on host 0 (an emulated cluster) */
    const uint32_t *host_of;
    /* collectives (hb_sim_coll): when each node starts ([n_nodes] µs, >= 0), e.g. the
     * measured spread of the daemons' commands; NULL: all at 0 */
    const double *start_us;
} hb_sim_opts_t;

typedef struct hb_sim_result {
    double latency_us;       /* barrier: mean over barriers of (last COMPLETE - last ARRIVE);
                              * collective: last COMPLETE - start */
    double t_end;            /* time of the last event */
    double barrier_us;       /* fence: its barrier part (last COMPLETE of the barrier) */
    uint64_t events;         /* events processed */
    uint64_t messages;       /* messages sent (control + data) */
    uint64_t bytes;          /* data bytes sent */
    uint64_t hwb_rounds;     /* chassis barrier rounds */
    uint64_t refused;        /* events a state machine refused (must be 0) */
    uint64_t wan_flows;      /* WAN flows */
    uint32_t max_wan_active; /* largest number of concurrent WAN flows on one site pair */
    double cpu_busy_us;      /* host model: CPU time of all threads together */
    double core_wait_us;     /* host model: time ready work waited for a core */
} hb_sim_result_t;

void hb_sim_opts_init(hb_sim_opts_t *o);

/*
 * Replay (sim_replay.c). A daemon trace (hibard with HIBAR_TRACE_DIR: a '#' header naming
 * the node and its engine's protocol, epoch, sync numbers; then every event fed to hier, each
 * followed by the actions it gave or a REFUSED line) is fed, event by event in its order,
 * through the simulator's barrier driver (sim_hier.c: the same engines and feed path as
 * hb_sim_barrier, with the actions recorded instead of carried out). The actions are
 * formatted with hb_hier_rec_format and compared line by line with the recorded ones (up to
 * " ib=": stamps differ). 0 when every line matches (*n_ev_p events, *n_act_p action lines
 * compared; either may be NULL); MISMATCH at the first difference, CONFIG for a trace that
 * does not fit topo, PROTO for a line that cannot be parsed, IO if the file cannot be read;
 * err then says which file and line, and what was expected and got.
 */
int hb_sim_replay_file(const hb_topo_t *topo, const char *path, uint64_t *n_ev_p, uint64_t *n_act_p,
                       char *err, size_t errlen);

/* Simulate o->barriers barriers of o->proto on topo with the real hb_hier engines (one per
 * node). 0, or INVAL / NOMEM / INTERNAL (an engine refused an event or the run stalled). */
int hb_sim_barrier(const hb_topo_t *topo, const hb_sim_params_t *p, const hb_sim_opts_t *o,
                   hb_sim_result_t *r_p);

#endif
