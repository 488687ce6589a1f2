/* sim_int.h: internals of sim/: the simulated world (network resources, message pool) shared by the
 * drivers. */
#ifndef HB_SIM_INT_H
#define HB_SIM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

/* Event kinds of the drivers (hb_sim_ev_t.kind). */
enum {
    SIM_EV_ARRIVE = 1,     /* node: local ARRIVE of collective x */
    SIM_EV_DELIVER = 2,    /* node: message x (pool index) arrives */
    SIM_EV_HWB_DONE = 3,   /* node: chassis barrier sync a of collective x completed */
    SIM_EV_WAN_ENQ = 4,    /* message x joins its WAN lane */
    SIM_EV_WAN_DONE = 5,   /* flow a finished (if its generation is still b) */
    SIM_EV_COLL_START = 6, /* node: the collective starts here */
    SIM_EV_IO_TX = 7       /* host model: message x reaches its sender's I/O thread */
};

/* Host model stages of a handler event (hb_sim_ev_t.b of ARRIVE, DELIVER, HWB_DONE,
 * COLL_START): 0 just happened, 1 (DELIVER) past the receiver's I/O thread, 2 paid: the
 * engine handles it now. Without the host model every such event is handled at stage 0. */
enum { SIM_STAGE_NEW = 0, SIM_STAGE_IO = 1, SIM_STAGE_PAID = 2 };

enum { SIM_MSG_CTL = 0, SIM_MSG_DATA = 1 };

/* A message in flight. */
typedef struct sim_msg {
    uint32_t from, to;
    uint32_t kind; /* SIM_MSG_CTL / SIM_MSG_DATA */
    uint32_t hmsg; /* CTL: hb_hier_msg_t */
    uint32_t seq;  /* DATA: executor sequence number */
    uint32_t next; /* free list / lane queue link */
    uint64_t coll_id;
    uint64_t off, len;
    double in_done; /* WAN DATA: its bytes are through the receiver's in-NIC at (time) */
} sim_msg_t;

/* A WAN flow (one per WAN data message, while it is on the wire). */
typedef struct sim_flow {
    uint32_t msg, link, lane; /* lane: index when it started (stale after the table grows) */
    uint32_t gen;             /* bumped at each reschedule: older WAN_DONE events are stale */
    uint32_t next;            /* free list */
    double rem;               /* bytes left */
    double rate;              /* bytes/µs now */
} sim_flow_t;

/* A directed site pair's WAN: the flows on it. */
typedef struct sim_link {
    uint32_t *act;
    uint32_t n_act, cap_act;
    double t_last; /* when rem of the active flows was last brought up to date */
} sim_link_t;

/* A node pair's lane: a FIFO of WAN messages, one on the wire at a time. */
typedef struct sim_lane {
    uint64_t key; /* (from << 32 | to) + 1; 0: empty slot */
    uint32_t busy;
    uint32_t head, tail; /* queued messages (UINT32_MAX: none) */
} sim_lane_t;

typedef struct sim_world {
    hb_sim_engine_t *eng;
    hb_sim_params_t p;
    uint32_t n_nodes, n_sites;
    uint32_t *site_of; /* [n_nodes] (owned copy) */
    double *out_free;  /* [n_nodes] sender NIC free at */
    double *in_free;   /* [n_nodes] receiver NIC free at */
    /* host model (p.cores > 0) */
    uint32_t n_hosts;
    uint32_t *host_of; /* [n_nodes] */
    double *main_free; /* [n_nodes] the main thread is busy until */
    double *io_free;   /* [n_nodes] the I/O thread is busy until */
    double *core_free; /* [n_hosts * cores] */
    sim_msg_t *msgs;
    uint32_t n_msgs, cap_msgs, free_msg;
    sim_flow_t *flows;
    uint32_t n_flows, cap_flows, free_flow;
    sim_link_t *links; /* [n_sites * n_sites] */
    sim_lane_t *lanes;
    size_t cap_lanes, n_lanes;
    hb_sim_result_t res;
    uint64_t rng; /* the stalls' generator (seeded by the run) */
} sim_world_t;

/* site_of may be NULL (one site), host_of too (host model: one host). 0 or NOMEM / INVAL. */
int sim_world_init(sim_world_t *w, const hb_sim_params_t *p, uint32_t n_nodes,
                   const uint32_t *site_of, const uint32_t *host_of);
void sim_world_free(sim_world_t *w);
/* A control message from -> to, leaving now. */
int sim_send_ctl(sim_world_t *w, uint32_t from, uint32_t to, uint32_t hmsg, uint64_t coll_id);
/* A data message of len bytes, leaving now. */
int sim_send_data(sim_world_t *w, uint32_t from, uint32_t to, uint32_t seq, uint64_t off,
                  uint64_t len);
/* Handle the network's own events (WAN_ENQ, WAN_DONE): 1 handled, 0 not a network event,
 * negative status on error. */
int sim_net_event(sim_world_t *w, const hb_sim_ev_t *ev);
/* Host model (sim_host.c). 0 or NOMEM / INVAL. */
int sim_host_init(sim_world_t *w, const uint32_t *host_of);
void sim_host_free(sim_world_t *w);
/* Work of cost us on node's main (io 0) or I/O thread (io 1), ready at t: when it is done. */
double sim_host_run(sim_world_t *w, uint32_t node, int io, double t, double cost);
/* The host stages of a handler event: 1 if ev was staged (pushed again later), 0 if the
 * engine handles it now, negative status. */
int sim_host_event(sim_world_t *w, const hb_sim_ev_t *ev);
/* Launch message idx on the network at time t (>= now): after the sender's CPU. */
int sim_net_launch(sim_world_t *w, uint32_t idx, double t);
/* A stall of us with probability p (0 otherwise), from the world's generator. */
double sim_stall(sim_world_t *w, double us, double p);
/* Seed the world's generator. */
void sim_world_seed(sim_world_t *w, uint64_t seed);
/* Give a delivered message back to the pool. */
void sim_msg_release(sim_world_t *w, uint32_t idx);
/* Cost of a LAN data message of m bytes on the sender (alpha + m/b_LAN, or PlogP g(m)) and the
 * latency after it. */
double sim_lan_busy(const sim_world_t *w, double m);
double sim_lan_lat(const sim_world_t *w);

#endif
