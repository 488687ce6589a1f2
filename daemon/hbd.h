/* hbd.h: hibard's internal state shared by its parts (net, control socket, barriers, main). */
#ifndef HBD_H
#define HBD_H

#include <event2/util.h>
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
struct hbd_barrier_state;
struct hbd_coll_state;

/* How the loop waits while barriers are busy (hbd_barrier.c's poll stage). */
enum { HBD_POLL_OFF = 0, HBD_POLL_YIELD = 1, HBD_POLL_SPIN = 2 };
#define HBD_ID_MAX 16 /* routing id buffer: "n<id>" / "o<id>" */

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
    uint64_t last_rx_ns;
    uint64_t probe_ns;      /* first unanswered heartbeat probe (accepted links), or 0 */
    uint64_t probe_last_ns; /* last probe sent */
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
    uint64_t data_denied;      /* data-socket connections refused (wrong or no token) */
    uint64_t data_bad;         /* frames refused on the data socket (not COLL, wrong sender) */
    uint64_t fast_rx, fast_tx; /* frames on the fast lane (tokens; data with a plain plane) */
    uint64_t fast_bad;         /* frames that closed a fast link (malformed, or a type it
                                * must not carry) */
    uint64_t fast_denied;      /* fast-lane connections refused (no neighbour, wrong token) */
    uint64_t rx_from_lost;     /* frames from a node already taken for lost (dropped) */
    uint64_t barriers_done, barriers_failed;
    uint64_t peers_lost;
    uint64_t hwb_rounds;
} hbd_stats_t;

typedef struct hbd {
    /* configuration */
    hb_cfg_t *cfg;
    hb_topo_t *topo;
    uint32_t self;
    const char *name;
    char run_dir[256];
    char sock_path[320], pid_path[320], port_path[320], key_path[320];
    int pid_written, port_written;
    uint32_t epoch;
    uint32_t tag; /* hash of the cluster name, in HELLO */

    /* event loop */
    struct event_base *base;
    struct event *ev_router, *ev_zap, *ev_mon, *ev_hwb, *ev_ctl, *ev_tick;
    struct event *ev_sig[3];
    int stopping;
    int ready;
    uint64_t start_ns;

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
    int lost;          /* some node of the cluster is gone: barriers fail with lost_status */
    uint32_t lost_node;

    /* chassis barrier */
    struct hb_hwb *hwb;
    int hwb_fd;

    /* control socket */
    int ctl_fd;
    struct hbd_ctl_conn *conns;

    /* barriers */
    struct hbd_barrier_state *bar;
    struct hbd_coll_state *coll; /* collectives in flight (hbd_coll.c) */

    hbd_stats_t st;
} hbd_t;

/* hbd_key.c: the per-cluster CurveZMQ key pair file (two Z85 lines: public, secret; mode 0600). */
int hbd_key_generate(const char *path);
int hbd_key_load(const char *path, uint8_t pub[32], uint8_t sec[32], char pub_z85[41]);

/* hbd_net.c: the ROUTER socket, ZAP handler, monitor, peers, HELLO, failure flood. */
int hbd_net_start(hbd_t *d);
void hbd_net_stop(hbd_t *d);
/* End the probes (logp, T_SR) with an error reply: before hbd_ctl_stop frees their replies'
 * connections. */
void hbd_net_probes_stop(hbd_t *d);
/* Send one frame to neighbour node `to`. 0, HIBAR_ERR_NOT_FOUND (no such neighbour),
 * HIBAR_ERR_PEER_LOST (unreachable), HIBAR_ERR_INVAL. Logged once where it fails. */
int hbd_net_send(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                 const void *payload, uint32_t len);
/* The same with the payload in two parts (e.g. a header and the data it describes), copied
 * once, straight into the message ZeroMQ sends. */
int hbd_net_send2(hbd_t *d, uint32_t to, uint8_t type, uint16_t flags, uint64_t coll_id,
                  const void *p1, uint32_t l1, const void *p2, uint32_t l2);
/*
 * A buffer lent to ZeroMQ without a copy: freed (free(buf)) when its last reference goes,
 * whether that is the run that owns it or the last message ZeroMQ sent from it (its I/O
 * thread drops those). hbd_zc_new takes the first reference; NULL without memory.
 */
typedef struct hbd_zc {
    _Atomic int refs;
    void *buf;
} hbd_zc_t;
hbd_zc_t *hbd_zc_new(void *buf);
void hbd_zc_put(hbd_zc_t *z);
/* A COLL frame: the 40-byte collective header and dlen bytes of data. On the plain data plane
 * with `hold` (which must own the memory data points into) the data goes as a second
 * ZeroMQ frame without being copied; otherwise as hbd_net_send2. Same results. */
int hbd_net_send_coll(hbd_t *d, uint32_t to, uint64_t coll_id, const uint8_t *hdr, const void *data,
                      uint32_t dlen, hbd_zc_t *hold);
/* Link to any node on demand (collectives): 0 once linked both ways, HIBAR_ERR_WOULD_BLOCK
 * while the link comes up (call again: it resends HELLO), HIBAR_ERR_PEER_LOST, HIBAR_ERR_IO.
 * hbd_net_send returns HIBAR_ERR_WOULD_BLOCK (nothing sent, nothing logged) when the link is
 * not up yet or the peer's queue is full. */
int hbd_net_link(hbd_t *d, uint32_t node);
int hbd_net_peer_up(hbd_t *d, uint32_t node);
/* The neighbour record of `node`, or NULL (not linked). */
hbd_peer_t *hbd_net_peer(hbd_t *d, uint32_t node);
/* A neighbour's host address for a new connection ("10.0.0.2", "::1"): from its endpoint, or
 * where its connection to us came from. 0, or HIBAR_ERR_WOULD_BLOCK when not known yet. */
int hbd_net_peer_host(hbd_t *d, hbd_peer_t *p, char *host, size_t len);
/* Something arrived from `node` outside the ZeroMQ link (the fast lane): it is alive. */
void hbd_net_peer_heard(hbd_t *d, uint32_t node);
/* Report ready once every neighbour's link (and fast lane) is up or settled. */
void hbd_net_check_ready(hbd_t *d);
/* hbd_launch.c: ranks of the jobs running on this node (the waiting rule counts them). */
uint32_t hbd_launch_local_ranks(void);
/* hbd_fast.c: the fast lane, barrier tokens on a polled TCP connection per neighbour. */
int hbd_fast_start(hbd_t *d, const char *address); /* 0 when off (fast_lane: off) */
void hbd_fast_stop(hbd_t *d);
uint32_t hbd_fast_port(const hbd_t *d); /* 0 when off */
/* A HELLO from p announced its fast lane at `port` (0: none): connect (higher id) or wait. */
void hbd_fast_on_hello(hbd_t *d, hbd_peer_t *p, uint32_t port);
/* 1 when p's fast link is up, or will not come up (tokens then go through ZeroMQ). */
int hbd_fast_settled(const hbd_t *d, const hbd_peer_t *p);
/* Send a frame on the fast lane: HIER always, COLL and FENCE with data_plane plain; its encoded
 * header, then the payload in two parts, not copied unless the socket is full. 0;
 * HIBAR_ERR_UNAVAIL when that
 * neighbour has no fast link for it (use ZeroMQ, then call hbd_fast_note_zmq);
 * HIBAR_ERR_WOULD_BLOCK (data only: much unsent, retry later); HIBAR_ERR_PEER_LOST when the
 * link failed. */
int hbd_fast_send(hbd_t *d, uint32_t to, uint8_t type, const uint8_t hdr[HBD_WIRE_HDR_LEN],
                  const void *p1, uint32_t l1, const void *p2, uint32_t l2);
/* A frame of type's class (barrier tokens, or data) to `to` went through ZeroMQ: from now on
 * all of that class do (order). */
void hbd_fast_note_zmq(hbd_t *d, uint32_t to, uint8_t type);
void hbd_fast_peer_down(hbd_t *d, hbd_peer_t *p);
/* A neighbour is gone (or an ABORT arrived): fail everything, flood ABORT to the others. */
void hbd_net_peer_lost(hbd_t *d, uint32_t node, int status);
/* Make sure the periodic check (barrier timeouts) runs: call when a barrier starts. */
void hbd_net_tick_arm(hbd_t *d);
/* Arm a timer to fire tv from now, unless it is armed already (reset: armed again from now).
 * *ev_p is created on first use on d->base, calling cb with d (cb NULL: only an existing
 * timer); without memory for it the timer stays off (the next call tries again). */
void hbd_net_timer_arm(hbd_t *d, struct event **ev_p, void (*cb)(evutil_socket_t, short, void *),
                       struct timeval tv, int reset);
/* Start a T_SR probe: n round trips to neighbour `to`; the reply goes to conn. */
int hbd_net_echo_start(hbd_t *d, struct hbd_ctl_conn *conn, uint32_t to, uint32_t n);

/* hbd_logp.c: PlogP probes ("logp TO[,TO...] SIZE COUNT rtt|flood [MIN_REPS]"): m-byte
 * round trips and floods of ECHO frames with a mode word; the reply goes to conn. */
void hbd_logp_request(hbd_t *d, struct hbd_ctl_conn *conn, char *args);
/* An ECHO request with a non-zero mode (rx_t0: when the frame was taken off the socket). */
void hbd_logp_on_echo(hbd_t *d, const hbd_wire_msg_t *m, uint64_t rx_t0);
/* A 12-byte ECHO reply. */
void hbd_logp_on_reply(hbd_t *d, const hbd_wire_msg_t *m);
void hbd_logp_stop(hbd_t *d);
/* A node was lost: a probe waiting on its answers ends with `status`. */
void hbd_logp_peer_lost(hbd_t *d, uint32_t node, int status);

/* hbd_model.c: the measured parameters of this cluster (hibar-bench logp's and lanes' file):
 * a measured b_WAN(P) table goes into *ml (its configuration values kept otherwise); returns
 * the PlogP(-BR) parameters, or NULL when there are none; *src_p names where the chooser's
 * parameters come from. */
struct hb_model_plogp;
struct hb_model_lanes;
const struct hb_model_plogp *hbd_model_params(hbd_t *d, struct hb_model_lanes *ml,
                                              const char **src_p);

/* hbd_ctl.c: the UNIX control socket. */
int hbd_ctl_start(hbd_t *d);
void hbd_ctl_stop(hbd_t *d);
/* accept4 (non-blocking, close-on-exec) on a listening socket, again after EINTR or
 * ECONNABORTED: the new fd, or -1 when none is waiting (other errors are logged, naming what). */
int hbd_accept(int lfd, const char *what);
/* Reply one line to a control connection (adds the newline). conn may have gone: NULL ok. */
void hbd_ctl_reply(struct hbd_ctl_conn *conn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Control connections are reference-tracked so late replies to closed ones are dropped. */
struct hbd_ctl_conn *hbd_ctl_hold(struct hbd_ctl_conn *conn);
void hbd_ctl_release(struct hbd_ctl_conn *conn);
/* Take a connection's socket away from the control service (a command that streams, such
 * as launch): the service stops reading and replying on it and the caller owns the fd
 * (blocking mode unchanged, close it when done). -1 if the connection is already closed. */
int hbd_ctl_detach(struct hbd_ctl_conn *conn);

/* hbd_barrier.c: the barrier engine (hier state machine + hwbarrier + wire). */
int hbd_barrier_init(hbd_t *d);
void hbd_barrier_fini(hbd_t *d);
/* Control command "barrier <coll_id>": reply to conn when the barrier completes. */
void hbd_barrier_request(hbd_t *d, struct hbd_ctl_conn *conn, uint64_t coll_id);
/* Barrier coll_id for a daemon-internal user (PMIx fence): cb(d, coll_id, status, arg) is
 * called exactly once when it completes or fails (possibly before this returns), unless this
 * returns an error (PEER_LOST, NOT_INIT, BUSY: id already in flight, NOMEM). */
typedef void (*hbd_barrier_cb_t)(hbd_t *d, uint64_t coll_id, int status, void *arg);
int hbd_barrier_start(hbd_t *d, uint64_t coll_id, hbd_barrier_cb_t cb, void *arg);
/* A HIER frame from neighbour `from`. */
void hbd_barrier_on_msg(hbd_t *d, const hbd_wire_msg_t *m);
/* Fail every barrier in flight with status (a peer was lost). */
void hbd_barrier_fail_all(hbd_t *d, int status, uint32_t lost);
/* Control command "tib <n>": n chassis barriers through the hwbarrier, reply the median, and
 * the last round's arrival and completion on CLOCK_MONOTONIC (arrived=NS done=NS). */
void hbd_barrier_tib(hbd_t *d, struct hbd_ctl_conn *conn, uint32_t n);
/* The hwbarrier fd is readable. */
void hbd_barrier_on_hwb(hbd_t *d);
/* Something of a collective happened (a frame, a doorbell): the loop polls for the policy's
 * yield time from now on (the poll stage, doc/design.md section 6.1) instead of sleeping. */
void hbd_poll_kick(hbd_t *d);
/* Periodic check (barrier timeouts). */
void hbd_barrier_tick(hbd_t *d);
/* Barriers in flight (for stats). */
uint32_t hbd_barrier_in_flight(const hbd_t *d);
/* Messages the barrier engine dropped (wrong job/epoch, role, duplicate, order, stale,
 * window) and events for collectives that had already failed. */
void hbd_barrier_drops(const hbd_t *d, uint64_t *dropped_p, uint64_t *late_p);
/* The next collective id this node expects (ids are consecutive from 0). */
uint64_t hbd_barrier_next_coll(const hbd_t *d);

/* hbd_coll.c: collectives across nodes (coll/ schedules executed over COLL frames). */
struct hb_coll_sched;
struct hb_coll_exec;
typedef struct hbd_coll_run hbd_coll_run_t;
/* Ids of a job's collectives (libhibar ranks) have this bit; the control command's count from 0. */
#define HBD_COLL_ID_JOB (1ull << 63)
/* A job's collective, as every node agreed on it (identical on every node). */
typedef struct hbd_coll_job_args {
    int op;                   /* hb_coll_op_t */
    int vform;                /* counts give each node's bytes */
    uint32_t root;            /* root node */
    uint64_t size;            /* bytes per rank (bcast: in total) */
    const uint32_t *ranks_of; /* [n_nodes] ranks of the job on each node */
    const uint64_t *counts;   /* [n_nodes] bytes per node (-v) */
    /* NULL: `in` holds the input. Else `in` is still to be filled: the run calls
     * read(read_arg, off, in + off, len) before it first uses bytes [off, off + len), so that
     * reading the input overlaps sending it; 0 or an error, which fails the run. */
    int (*read)(void *read_arg, uint64_t off, uint8_t *dst, uint64_t len);
    void *read_arg;
} hbd_coll_job_args_t;
/* Called once when this node's part is over: status 0 and the executor, whose output blocks
 * hb_coll_exec_block() gives (valid during the call), or an error and NULL. */
typedef void (*hbd_coll_cb_t)(hbd_t *d, int status, const struct hb_coll_sched *s,
                              const struct hb_coll_exec *x, void *arg);
/* Build the schedule (algorithm from HIBAR_COLL_ALG / HIBAR_COLL_LANES or the model). `in`
 * (malloc'd, taken over, also on error) is the node's input in node order: scatter and bcast
 * root all blocks / the buffer, gather and allgather the node's block, others NULL; in_len
 * must be what the schedule expects (INTERNAL otherwise). Then hbd_coll_job_start calls cb
 * exactly once (maybe before it returns). Errors (nothing to start or free): INVAL, EXISTS,
 * PEER_LOST, NOMEM, NOT_INIT, INTERNAL. */
int hbd_coll_job_create(hbd_t *d, uint64_t id, const hbd_coll_job_args_t *a, uint8_t *in,
                        uint64_t in_len, hbd_coll_run_t **r_p);
void hbd_coll_job_start(hbd_t *d, hbd_coll_run_t *r, hbd_coll_cb_t cb, void *arg);
/* Fail a started run that has not called back yet: its callback comes before this returns,
 * with `status` (a run whose part is already over here calls back with its own outcome). */
void hbd_coll_job_cancel(hbd_t *d, hbd_coll_run_t *r, int status);
int hbd_coll_init(hbd_t *d);
void hbd_coll_fini(hbd_t *d);
/* Control command "coll OP ALG ROOT SIZE [LANES [SEG]]" (see hbd_coll.c). */
void hbd_coll_request(hbd_t *d, struct hbd_ctl_conn *conn, char *args);
void hbd_coll_on_msg(hbd_t *d, const hbd_wire_msg_t *m);
/* The same with the segment's data elsewhere than after the collective header (the plain data
 * plane's two-part frames). */
void hbd_coll_on_segment(hbd_t *d, const hbd_wire_msg_t *m, const uint8_t *data);
void hbd_coll_fail_all(hbd_t *d, int status, uint32_t lost);
/* Build the file paths in the run dir for a node name. */
void hbd_paths(const char *run_dir, const char *name, char *sock, size_t ls, char *pid, size_t lp,
               char *port, size_t lpo);

#endif
