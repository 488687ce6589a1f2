/* conn.h: the client <-> hibard handshake on the daemon's UNIX socket (segment hand-over),
 * hb_conn_*. */
#ifndef HB_CONN_H
#define HB_CONN_H

#include <stdint.h>
#include <sys/types.h>

/*
 * AF_UNIX, SOCK_SEQPACKET (one message per record). Little-endian host order (same host).
 *   client -> daemon: hb_conn_hello_t
 *   daemon -> client: hb_conn_welcome_t, with SCM_RIGHTS carrying [segment memfd,
 *                     doorbell eventfd] when status is 0 (the doorbell may be absent: a
 *                     single-node job)
 * Both sides check the peer's uid with SO_PEERCRED before anything else (same uid, or root
 * on the daemon side) and every field of what they receive.
 */
#define HB_CONN_MAGIC 0x48424331u /* "HBC1" */
#define HB_CONN_VERSION 2u
#define HB_CONN_HELLO 1u
#define HB_CONN_WELCOME 2u
#define HB_CONN_RANK_ANY UINT32_MAX /* the daemon picks the rank (by pid) */

typedef struct hb_conn_hello {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t rank; /* wanted rank in the job (HIBAR_RANK), or HB_CONN_RANK_ANY */
    int32_t pid;
    uint64_t job_id; /* 0 = the daemon's only job */
} hb_conn_hello_t;

typedef struct hb_conn_welcome {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    int32_t status;  /* 0 or a HIBAR_ERR_* */
    uint32_t rank;   /* the rank's index in the node's segment */
    uint32_t nranks; /* ranks of the job on this node (the segment's) */
    uint32_t grank;  /* the rank in the job */
    uint32_t gsize;  /* ranks in the job, on every node */
    uint64_t job_id;
} hb_conn_welcome_t;

/* Client: connect to `path`, check the daemon's uid, say hello, receive the welcome and the
 * fds. *seg_fd_p and *doorbell_fd_p (-1 if none) and *daemon_pid_p (the daemon's pid, from
 * SO_PEERCRED) are set on success. Blocking (the daemon answers at once).
 * HIBAR_ERR_UNAVAIL (no daemon), HIBAR_ERR_PERM, HIBAR_ERR_PROTO, or the daemon's status. */
int hb_conn_client(const char *path, uint32_t rank, uint64_t job_id, int *seg_fd_p,
                   int *doorbell_fd_p, hb_conn_welcome_t *w_p, int *daemon_pid_p);

/* Daemon: on an accepted connection, check the peer (uid must be `uid` or 0), read its hello
 * into *hello_p and set *pid_p from SO_PEERCRED (the hello's pid must agree). */
int hb_conn_accept_hello(int fd, uid_t uid, hb_conn_hello_t *hello_p, pid_t *pid_p);
/* Daemon: send the welcome (status 0 with the fds, or an error without). */
int hb_conn_send_welcome(int fd, const hb_conn_welcome_t *w, int seg_fd, int doorbell_fd);

#endif
