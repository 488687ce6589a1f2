/* hbd_client.h: talking to hibard daemons over their control sockets (hibar-cluster, hibar-bench,
 * tests). */
#ifndef HBD_CLIENT_H
#define HBD_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfg.h"

/* Connect to a control socket. 0, NOT_FOUND (no socket file), UNAVAIL (nobody listening), IO. */
int hbd_client_connect(const char *path, int *fd_p);
/* Send one command line (newline added). 0 or IO. */
int hbd_client_send(int fd, const char *line);
/* Read one reply line (newline stripped) within timeout_ms (< 0: forever). 0, TIMEOUT, IO
 * (connection closed), TRUNCATED. Bytes after the line are kept for the next call in a small
 * per-fd buffer, so use it for one fd at a time or only with request/reply pairs. */
int hbd_client_recv(int fd, char *buf, size_t cap, int timeout_ms);
/* Connect, send cmd, read one reply, close. */
int hbd_client_cmd(const char *path, const char *cmd, char *reply, size_t cap, int timeout_ms);
/* Value of "key=" in a reply line into out; 0 or NOT_FOUND. */
int hbd_client_field(const char *reply, const char *key, char *out, size_t cap);

/* The control socket and pid file paths of node i of cfg. */
void hbd_client_sock_path(const hb_cfg_t *cfg, uint32_t node, char *buf, size_t cap);
void hbd_client_pid_path(const hb_cfg_t *cfg, uint32_t node, char *buf, size_t cap);
/* Pid from the pid file of node i, or -1. */
pid_t hbd_client_pid(const hb_cfg_t *cfg, uint32_t node);

/* One control connection to every daemon of a cluster. */
typedef struct hbd_cluster {
    const hb_cfg_t *cfg;
    uint32_t n;
    int *fd; /* [n], -1 if that daemon could not be reached */
} hbd_cluster_t;

/* Connect to every daemon (waits up to timeout_ms for each to be ready). 0 or the first error
 * (with the failing node logged). With allow_missing, a daemon that is not running (no socket
 * or nobody listening) is left out (fd -1) instead. */
int hbd_cluster_open(const hb_cfg_t *cfg, int timeout_ms, int allow_missing, hbd_cluster_t **cl_p);
void hbd_cluster_close(hbd_cluster_t *cl);
/* The next collective id the cluster expects (the largest of every reachable daemon's). */
int hbd_cluster_next_coll(hbd_cluster_t *cl, uint64_t *coll_p);
/* The running jobs, from the cluster's root daemon (its control command "jobs"), when its
 * socket is on this host: *reply_p (malloc'd) "ok jobs=N job=..." and, where not NULL,
 * busy[n_nodes] set for every node a job runs on, lost[n_nodes] for every node known lost. 0,
 * NOT_FOUND (the root's socket is not here), IO, TIMEOUT, PROTO, NOMEM. */
int hbd_cluster_jobs(const hb_cfg_t *cfg, char **reply_p, uint8_t *busy, uint8_t *lost);

/* How to drive one round of barriers. */
typedef struct hbd_drive_opts {
    uint32_t late_node; /* UINT32_MAX: none; else this node is asked late_ms later */
    uint32_t late_ms;
    uint32_t kill_node; /* UINT32_MAX: none; else never asked, and sent kill_sig after kill_ms */
    uint32_t kill_ms;
    int kill_sig;   /* default SIGKILL; SIGSTOP makes a hung daemon */
    int timeout_ms; /* per barrier, waiting for replies; default 60000 */
} hbd_drive_opts_t;

/* What one barrier did. */
typedef struct hbd_drive_result {
    double total_us;      /* first request sent -> last reply */
    double first_us;      /* first request sent -> first reply */
    double after_late_us; /* late request sent -> first reply (late_node only) */
    double after_kill_us; /* kill -> last reply (kill_node only) */
    double proto_us;      /* last arrival at a daemon -> last completion, from the daemons'
                           * CLOCK_MONOTONIC stamps (one host only); 0 if not all reported */
    double spread_us;     /* first arrival -> last arrival, the same stamps; 0 likewise */
    uint32_t n_ok, n_err, n_missing;
    int first_err;    /* first non-zero status seen */
    int all_err_same; /* every reply carried first_err */
} hbd_drive_result_t;

void hbd_drive_opts_init(hbd_drive_opts_t *o);
/* One barrier with id coll across the cluster: every daemon is asked at once (except as the
 * options say) and every reply collected. Returns 0 when the round was driven (look at r for
 * the statuses), or IO/TIMEOUT when the daemons could not be talked to. */
int hbd_cluster_barrier(hbd_cluster_t *cl, uint64_t coll, const hbd_drive_opts_t *o,
                        hbd_drive_result_t *r);
/* Send the same command to the given nodes at once and collect each node's reply line into
 * replies[i] (cap bytes each). 0 or the first error. */
int hbd_cluster_all(hbd_cluster_t *cl, const uint32_t *nodes, uint32_t n, const char *cmd,
                    char (*replies)[512], int timeout_ms);

#endif
