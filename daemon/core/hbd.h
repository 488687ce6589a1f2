/* hbd.h: the daemon context: hibard's state, passed to every part (net, services, main). */
/*
 * Every module keeps its state here (or behind a pointer here that its init allocates), so a
 * test can run several daemons' engines in one process. hibard has no file-scope state. The
 * PMIx server of a job runs in a process of its own (pmix/hbd_step.c, hibard run again as the
 * job's "PMIx step"), whose file-scope g_st and st_module are that process' only state:
 * libpmix is one server per process and its upcalls get no context pointer.
 *
 * The one periodic place: every deadline is an hbd_timer_t (core/hbd_timer.h), the cron's tick
 * (net/hbd_cron.h) included. What stays a libevent event of its own, and why:
 *   fd readiness       sockets, pipes, eventfds and signals wait for the kernel, not for a
 *                      time: ZeroMQ and data sockets, the fast lane's links and listener, the
 *                      control and ranks sockets, the PMIx steps' sockets, the doorbells, the
 *                      ranks' output pipes, SIGCHLD / SIGTERM / SIGHUP
 *   sync/hbd_barrier.c the yield stage's zero timer (ev_yield): a device of the poll loop,
 *                      run once per loop iteration after the ready events, not a deadline
 */
#ifndef HBD_H
#define HBD_H

#include <event2/util.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfg.h"
#include "topo.h"
#include "wire.h"

struct event_base;
struct event;
struct timeval;
struct hb_hwb;
struct hbd_ctl_conn;
struct hbd_logp;
struct hbd_job;
struct hbd_job_ops;
struct hbd_barrier_state;
struct hbd_coll_state;
struct hbd_model;

/* How the loop waits while barriers are busy (hbd_barrier.c's poll stage). */
enum { HBD_POLL_OFF = 0, HBD_POLL_YIELD = 1, HBD_POLL_SPIN = 2 };
#define HBD_ID_MAX 24 /* routing id buffer: "n<id>", "n<id>.<generation>" */

typedef struct hbd_fast_link hbd_fast_link_t;
/* One neighbour: a tree link (parent, child Center) or a chassis mate. */
typedef struct hbd_peer {
    uint32_t node;
    char endpoint[128]; /* where its ROUTER listens, "" until known */
    int outgoing;       /* we connect to it (its id is lower), else it connects to us */
    int connected;      /* zmq_connect done */
    int fd;             /* accepted connection's fd (from its HELLO), or -1 */
    int hello_rx;       /* it said HELLO to us (its link to us works) */
    int hello_ack;      /* it answered our HELLO (our link to it works) */
    int lost;           /* found dead */
    int warned;         /* a malformed frame from it was logged */
    uint64_t inc;       /* its incarnation, from its HELLO (0: none yet) */
    uint64_t hello_try_ns; /* lost: when HELLO was last tried (hbd_net_rejoin) */
    uint32_t zgen, dgen;   /* connections we made to it anew (hbd_net.c, peer_id) */
    uint64_t last_rx_ns;
    uint64_t probe_ns;      /* first unanswered heartbeat probe (accepted links), or 0 */
    uint64_t probe_last_ns; /* last probe sent */
    uint64_t suspect_ns;    /* its loss held back (hbd_net_peer_suspect): taken for lost if its
                             * link is not back one heartbeat timeout later; 0: none */
    /* plain data plane (data_plane: plain): what it told us in HELLO, what we told it */
    uint32_t data_port;                      /* its data socket's port, 0: none */
    uint8_t data_token[HBD_WIRE_TOKEN_LEN];  /* to present there */
    uint8_t given_token[HBD_WIRE_TOKEN_LEN]; /* it must present at ours (random, per start) */
    char data_ep[160];                       /* data_out is connected there, "" if not */
    /* fast lane (hbd_fast.c) */
    uint32_t fast_port;    /* its fast lane's port (from HELLO), 0: none or not known */
    hbd_fast_link_t *fast; /* the link, or NULL */
} hbd_peer_t;

/* Counters shown by the control command "stats". */
typedef struct hbd_stats {
    uint64_t rx_frames, tx_frames, tx_fail;
    uint64_t rx_bad[HBD_WIRE_N_REASONS]; /* refused frames by reason ([0] unused) */
    uint64_t rx_bad_total;
    uint64_t rx_bad_parts;     /* messages with a wrong number of parts */
    uint64_t rx_unknown_peer;  /* frames from a routing id that is no neighbour */
    uint64_t auth_denied;      /* CurveZMQ clients refused by the ZAP handler */
    uint64_t data_rx, data_tx; /* collective frames on the plain data plane */
    uint64_t bulk_tx;          /* of data_tx: large collectives' frames through ZeroMQ */
    uint64_t data_denied;      /* data-socket connections refused (wrong or no token) */
    uint64_t data_bad;         /* frames refused on the data socket (not COLL, wrong sender) */
    uint64_t fast_rx, fast_tx; /* frames on the fast lane (tokens; data with a plain plane) */
    uint64_t fast_full;        /* data frames a full fast lane refused (sent once it drained) */
    uint64_t fast_bad;         /* frames that closed a fast link (malformed, or a type it
                                * must not carry) */
    uint64_t fast_denied;      /* fast-lane connections refused (no neighbour, wrong token) */
    uint64_t rx_from_lost;     /* frames from a node already taken for lost (dropped) */
    uint64_t rejoins;          /* nodes that came back (a new incarnation, or rejoined) */
    uint64_t self_rejoins;     /* this daemon found itself taken for lost and rejoined */
    uint64_t suspects_held;    /* its own loss judgements held back after a self-rejoin */
    uint64_t hb_stalls;        /* probes' clocks started over: this daemon itself was late */
    uint64_t barriers_done, barriers_failed;
    uint64_t peers_lost;
    uint64_t hwb_rounds;
} hbd_stats_t;

typedef struct hbd hbd_t;

/* The jobs this daemon knows (job/hbd_job.c: the registry; job/hbd_job.h: the job object): the
 * ones with ranks here, and the ones it relays (an origin's job may have no rank here). */
typedef struct hbd_jobs {
    struct hbd_job *head;
    uint32_t n_jobs;
    uint32_t n_local_ranks;        /* ranks here of the jobs not done (the waiting rule) */
    uint32_t n_local_jobs;         /* those jobs: a PMIx step each (the waiting rule) */
    const struct hbd_job_ops *ops; /* the launcher's answers to rank events, or NULL */
} hbd_jobs_t;
/* A frame of a wire type a service registered (hbd_hooks_frame), validated by
 * hbd_wire_decode; from a live neighbour. */
typedef void (*hbd_net_rx_fn)(hbd_t *d, const hbd_wire_msg_t *m);
/* A COLL frame whose data lies elsewhere than after its header (the data plane's two parts). */
typedef void (*hbd_net_seg_fn)(hbd_t *d, const hbd_wire_msg_t *m, const uint8_t *data);
/* Node `node` is lost (status: why). first: 1 for the cluster's first loss, the one that fails
 * everything in flight; 0 for later ones (only what waits on that very node ends). */
typedef void (*hbd_net_lost_fn)(hbd_t *d, uint32_t node, int status, int first);
/* Node `node` is up again, a new incarnation `inc` of it (restarted, or rejoined). */
typedef void (*hbd_net_join_fn)(hbd_t *d, uint32_t node, uint64_t inc);
/* The receive table: one slot per wire type. */
typedef struct hbd_net_rx {
    hbd_net_rx_fn on_msg;
    hbd_net_seg_fn on_seg; /* COLL only, NULL elsewhere */
} hbd_net_rx_t;
#define HBD_NET_LOST_MAX 8
/* Periodic work (hbd_hooks_cron): timeouts of what is in flight; 1 while something is. */
typedef int (*hbd_cron_fn)(hbd_t *d, uint64_t now);
#define HBD_CRON_MAX 8
/* A link that refused data frames (WOULD_BLOCK) has room again: resend what waits
 * (hbd_hooks_room). */
typedef void (*hbd_room_fn)(hbd_t *d);
#define HBD_ROOM_MAX 4

struct hbd {
    /* configuration */
    hb_cfg_t *cfg;
    hb_topo_t *topo;
    uint32_t self;
    const char *name;
    char run_dir[256];
    char sock_path[320], pid_path[320], port_path[320], key_path[320];
    int pid_written, port_written;
    int pid_fd;     /* the pid file, locked for our life (hb_pidfile_lock) */
    uint32_t epoch; /* the barrier engines' epoch (hier.h): 1 */
    uint64_t inc;   /* this daemon's incarnation: when it started (ns), larger at every start and
                     * at every rejoin; frames carry hbd_wire_inc32 of it */
    uint64_t rejoin_ns; /* its last self-rejoin (monotonic ns; hbd_net_peer_suspect), or 0 */
    uint32_t tag; /* hash of the cluster name, in HELLO */
    /* what SIGHUP reads again (hb_cfg_reload): main's arguments, alive as long as the daemon */
    const char *hup_config;
    const char *const *hup_over;
    size_t hup_n_over;

    /* event loop */
    struct event_base *base;
    struct event *ev_router, *ev_zap, *ev_mon, *ev_hwb, *ev_ctl;
    struct event *ev_sig[3];
    struct event *ev_chld; /* SIGCHLD: the launcher reaps its ranks (hbd_launch.c) */
    int stopping;
    int ready;
    uint64_t start_ns;

    /* the transport's consumers, registered by the services at init (hbd_net.h) */
    hbd_net_rx_t rx[HBD_WIRE_TYPE_MAX + 1];
    hbd_net_lost_fn lost_subs[HBD_NET_LOST_MAX]; /* by ascending lost_order */
    int lost_order[HBD_NET_LOST_MAX];
    uint32_t n_lost_subs;
    hbd_net_join_fn join_subs[HBD_NET_LOST_MAX];
    uint32_t n_join_subs;
    uint64_t rx_t0_ns; /* when the frame being handled was taken off its socket (PlogP's o_r) */
    uint64_t last_hello_ns; /* HELLO last sent to the links not up yet */
    int warned_unknown;     /* a malformed frame from a non-neighbour was logged */

    /* the one periodic place (hbd_cron.c): its tick and the work it runs */
    struct hbd_timer *tick;
    hbd_cron_fn cron_fns[HBD_CRON_MAX];
    uint32_t n_cron;
    hbd_room_fn room_fns[HBD_ROOM_MAX]; /* senders of data frames (hbd_hooks_room) */
    uint32_t n_room;
    uint64_t cron_hb_ns;  /* the last heartbeat check while busy, or 0 (its own stalls) */
    uint64_t hb_reset_ns; /* when a stall last started the probes' clocks over */

    /* ZeroMQ */
    void *zctx, *router, *zap, *mon;
    void *data_in, *data_out; /* data_plane plain: bound (receives) and connecting (sends) */
    struct event *ev_data;
    uint32_t data_port;
    char endpoint[128];
    uint8_t pub[32], sec[32]; /* cluster key pair (binary) */
    struct hbd_fast *fast;    /* the fast lane's listener (hbd_fast.c), NULL when off */
    char pub_z85[41];

    /* neighbours */
    hbd_peer_t *peers;
    uint32_t n_peers;
    uint32_t *peer_of; /* [n_nodes]: index into peers, or UINT32_MAX */
    int lost;          /* some node of the cluster is gone (the first: lost_node) */
    uint32_t lost_node;
    uint8_t *lost_set; /* [n_nodes] every node known lost (hbd_hooks_lost_run), or NULL */
    uint64_t *node_inc; /* [n_nodes] each node's latest incarnation known here (0: none yet) */
    hb_topo_t *live;    /* the tree of the live nodes while some are lost, else NULL (hbd_route) */

    /* chassis barrier */
    struct hb_hwb *hwb;
    int hwb_fd;
    int spare_fd; /* kept for an accept when out of descriptors (hbd_sock.h), or -1 */
    int fd_short; /* out of descriptors: logged (until an accept succeeds) */

    /* the libhibar ranks' socket (hbd_ranks.c) */
    int ranks_lfd;
    struct event *ev_ranks;
    char ranks_path[320];

    /* control socket (hbd_ctl.c) */
    int ctl_fd;
    struct hbd_ctl_conn *conns;
    unsigned n_conns;
    const struct hbd_ctl_cmd *ctl_cmds;
    size_t n_ctl_cmds;

    /* barriers */
    struct hbd_barrier_state *bar;
    struct hbd_coll_state *coll;   /* collectives in flight (hbd_coll.c) */
    struct hbd_model *model;       /* the cached model file (hbd_model.c) */
    struct hbd_logp *logp;         /* the PlogP and T_SR probes (hbd_logp.c) */
    struct hbd_relay *relay;       /* launch forwarding (hbd_relay.c) */
    struct hbd_fence_state *fence; /* fences in flight (hbd_fence.c) */
    struct hbd_dmodex *dmodex;     /* direct modex requests (hbd_dmodex.c) */
    struct hbd_px *px;             /* the jobs' PMIx steps, their fences (hbd_pmix.c) */

    hbd_jobs_t jobs; /* the job registry (hbd_job.h) */

    hbd_stats_t st;
    unsigned prof; /* HBD_PROF_* bits: profiling lines on stderr (core/hbd_prof.h) */
};

/* Hand a validated frame to the service registered for its type (the transport's receive
 * table, hbd_net.h): 0, or -1 when none takes it. The one lookup on the per-frame path. */
static inline int hbd_deliver(hbd_t *d, const hbd_wire_msg_t *m)
{
    hbd_net_rx_fn fn = m->type <= HBD_WIRE_TYPE_MAX ? d->rx[m->type].on_msg : NULL;
    if (fn == NULL)
        return -1;
    fn(d, m);
    return 0;
}

/* The neighbour record of `node`, or NULL (not linked). */
static inline hbd_peer_t *hbd_peer_of(const hbd_t *d, uint32_t node)
{
    if (node >= d->topo->n_nodes || d->peer_of == NULL || d->peer_of[node] == UINT32_MAX)
        return NULL;
    return &d->peers[d->peer_of[node]];
}

/* Something arrived from p at time now: it is alive (any frame ends a heartbeat probe). */
static inline void hbd_peer_heard(hbd_peer_t *p, uint64_t now)
{
    p->last_rx_ns = now;
    p->probe_ns = 0;
}

/* The node's cores for the waiting rule (doc/design.md 6.1): cpu.count, else the daemon's
 * CPU affinity (hbd_hooks.c). */
uint32_t hbd_node_cores(const hbd_t *d);

/* Is node `node` known lost? An unknown node (a loss nobody could name) counts as every node. */
static inline int hbd_node_lost(const hbd_t *d, uint32_t node)
{
    if (!d->lost)
        return 0;
    if (d->lost_node >= d->topo->n_nodes || node >= d->topo->n_nodes || d->lost_set == NULL)
        return 1;
    return d->lost_set[node];
}

#endif
