/* hbd_pmix.h: hibard as its node's PMIx server and local launcher: jobs, ranks, fences. */
#ifndef HBD_PMIX_H
#define HBD_PMIX_H

#include <stdint.h>
#include <sys/types.h>

#include "hbd.h"

struct event;
struct bufferevent;

#define HBD_JOB_NSLEN 256 /* namespace buffer: PMIx's pmix_nspace_t ("hibar.<id>") */
#define HBD_JOB_LINE 1800 /* longest forwarded output chunk, before escaping */
#define HBD_JOB_SPEC_MAX (16u << 20)

/*
 * A job spec is the file hibar-run writes into the run dir and names in "launch PATH".
 * Text records, one per line, strings carry their length so they may hold anything:
 *   hibar-job 1
 *   id <u64>            job id (unique in the cluster; hibar-run uses its pid and time)
 *   size <n>            ranks in the job
 *   coll_base <u64>     collective id of the job's first fence (from the cluster's next_coll)
 *   tag <0|1>           prefix forwarded output with the rank (done by hibar-run; kept here)
 *   map <node> x size   cluster node id of every rank, in rank order
 *   cwd <len>:<bytes>
 *   arg <len>:<bytes>   argv[0] (an absolute path), argv[1], ...
 *   env <len>:<bytes>   NAME=VALUE, the ranks' whole environment (PMIx adds its own)
 */
typedef struct hbd_job_spec {
    uint64_t id;
    uint32_t size;
    uint64_t coll_base;
    int tag;
    uint32_t *map; /* [size] node of each rank */
    char *cwd;
    char **argv; /* NULL-terminated */
    char **env;  /* NULL-terminated */
    uint32_t n_argv, n_env;
} hbd_job_spec_t;

/* hbd_job.c: parse a spec (file:line in err on failure). 0, INVAL, IO, NOMEM. */
int hbd_job_spec_load(const char *path, hbd_job_spec_t **spec_p, char *err, size_t cap);
void hbd_job_spec_free(hbd_job_spec_t *s);
/* A spec file's bytes (malloc'd, NUL-terminated, *len_p without the NUL) if the file is ours,
 * regular and at most HBD_JOB_SPEC_MAX bytes: 0, PERM (it is not), IO, NOMEM. */
int hbd_job_spec_read(const char *path, char **buf_p, size_t *len_p);
/* Write a spec (hibar-run). 0 or IO. */
int hbd_job_spec_write(const char *path, const hbd_job_spec_t *s);

/* One rank of a job placed on this node. */
typedef struct hbd_rank {
    struct hbd_job *job;
    uint32_t rank, local_rank;
    pid_t pid;     /* 0 before the spawn, -1 once reaped */
    int wstatus;   /* waitpid status once reaped */
    int out_fd[2]; /* read ends of stdout, stderr pipes, or -1 at EOF */
    struct event *ev_out[2];
    char part[2][HBD_JOB_LINE]; /* output not yet ended by a newline */
    size_t part_len[2];
    int connected, finalized, aborted;
    int termed; /* SIGTERM sent (hbd_launch_kill) */
} hbd_rank_t;

/* A job as this daemon sees it. */
typedef struct hbd_job {
    hbd_t *d;
    hbd_job_spec_t *spec;
    char nspace[HBD_JOB_NSLEN];
    uint32_t *nodes;  /* cluster node ids hosting ranks, ascending */
    uint32_t n_nodes; /* job nodes */
    hbd_rank_t *local;
    uint32_t n_local;
    uint32_t n_running;  /* spawned and not reaped or with open pipes */
    uint32_t fence_seq;  /* fences without data started so far (barrier engine ids) */
    uint32_t dfence_seq; /* fences with data started so far (hbd_fence ids) */
    int registered;      /* nspace registered with the PMIx server */
    int killing;         /* the job is being stopped */
    int failed;          /* some rank failed (or the job was killed) */
    int done_sent;       /* the last line is queued: free the job once it is out */
    int fd;              /* hibar-run's connection (detached control connection) */
    struct bufferevent *bev;
    struct event *ev_kill;       /* SIGTERM (deferred), then SIGKILL escalation */
    uint64_t kill_ns;            /* when the job was asked to stop */
    struct hbd_ranks_job *ranks; /* the libhibar segment and epochs (hbd_ranks.c), or NULL */
    struct px_reg *reg;          /* its registration with PMIx while it runs (hbd_pmix.c) */
    struct hbd_job *next;
} hbd_job_t;

/* hbd_pmix.c: PMIx server. */
/* PMIx_server_init with PMIX_SERVER_TMPDIR = RUN_DIR/NAME.pmix and PMIX_HOSTNAME = NAME;
 * the upcall queue and SIGCHLD watcher on d's loop. 0 or IO / INTERNAL (logged). */
int hbd_pmix_start(hbd_t *d);
/* Stop every job (SIGKILL), PMIx_server_finalize, remove the tmp dir. Safe if never started. */
void hbd_pmix_stop(hbd_t *d);
/* Register the job's namespace (job info, per-rank info) and its local clients, without
 * blocking: PMIx's thread does it (a few ms) and done(j, rc) follows on the loop, rc 0,
 * INTERNAL, NOMEM, or UNAVAIL when PMIx's thread did not answer within HBD_PMIX_CALL_MS (it
 * is wedged: hbd_pmix_wedged). Returns 0 when started (done comes unless the job is freed
 * first: hbd_pmix_job_register_cancel), else the error (NOMEM, or UNAVAIL once wedged) and
 * done never comes. */
int hbd_pmix_job_register(hbd_job_t *j, void (*done)(hbd_job_t *j, int rc));
/* The job goes away while its registration runs: done will not come. */
void hbd_pmix_job_register_cancel(hbd_job_t *j);
/* 1 once libpmix's server thread stopped answering (no job can run here until a restart). */
int hbd_pmix_wedged(void);
void hbd_pmix_job_deregister(hbd_job_t *j);
/* Answer the job's fences in flight with an error (before its ranks are stopped). */
void hbd_pmix_job_cancel_fences(hbd_job_t *j);
/* Add PMIx's variables for local rank lr to the malloc'd NULL-terminated *env. */
int hbd_pmix_setup_fork(hbd_job_t *j, uint32_t lr, char ***env);
/* Number of jobs this daemon runs (status). */
uint32_t hbd_pmix_n_jobs(void);

/* hbd_fence.c: fence with data across nodes (gather up the chassis tree, release down). */
/* Completion: status 0 and the concatenation of every node's blob (malloc'd, the callee
 * frees it), or a negative status and NULL. */
typedef void (*hbd_fence_cb_t)(hbd_t *d, int status, uint8_t *data, size_t len, void *arg);
/* Fence ids with this bit are subset fences (star through the lowest participant node). */
#define HBD_FENCE_ID_SUBSET (1ull << 62)
/* This node's contribution to fence coll (copied). nodes: NULL for a whole-job fence (every
 * node of the cluster: direct exchange up to HIBAR_FENCE_DIRECT_MAX nodes, else the chassis
 * tree), else the participating nodes of a subset fence, ascending, this node among them
 * (coll must have HBD_FENCE_ID_SUBSET). timeout_ms: 0 for the cluster's barrier_timeout_ms.
 * cb is called exactly once, possibly before this returns, unless it returns an error
 * (PEER_LOST, NOT_INIT, BUSY, NOMEM, INVAL). Every node gets the same concatenation. */
int hbd_fence_start(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                    uint32_t timeout_ms, const void *data, size_t len, hbd_fence_cb_t cb,
                    void *arg);
/* The same without the copy: data (malloc'd, or NULL when len is 0) is taken over in every
 * case, also when this returns an error. */
int hbd_fence_start_owned(hbd_t *d, uint64_t coll, const uint32_t *nodes, uint32_t n_nodes,
                          uint32_t timeout_ms, void *data, size_t len, hbd_fence_cb_t cb,
                          void *arg);
/* Do whole-job fences of this cluster exchange directly (2..HIBAR_FENCE_DIRECT_MAX nodes)? */
int hbd_fence_direct(const hbd_t *d);
/* Links to every node that a direct-exchange fence needs, made now (a job is being set up) so
 * its first fence does not wait for them. No-op for clusters that use the tree. */
void hbd_fence_prelink(hbd_t *d);
/* Control command "fence_stats": "ok" then per link "NODE:TX_UP:TX_DOWN:RX_UP:RX_DOWN" (fence
 * data bytes sent to / received from that node since the daemon started). */
void hbd_fence_stats(hbd_t *d, char *buf, size_t cap);
/* A HBD_WIRE_FENCE frame from a neighbour. */
void hbd_fence_on_msg(hbd_t *d, const hbd_wire_msg_t *m);
/* HIBAR_FENCE_PROF set: a stderr line "fprof NODE STAGE COLL T_NS" (profiling the fence path). */
void hbd_fence_prof(const hbd_t *d, const char *stage, uint64_t coll);
/* Fail every fence in flight with UNAVAIL (shutdown). */
void hbd_fence_fini(hbd_t *d);

/* hbd_pmix.c: run fn(d, arg) on the loop (from any thread, e.g. a PMIx callback). 0 or NOMEM. */
int hbd_pmix_call_on_loop(void (*fn)(hbd_t *d, void *arg), void *arg);

/* hbd_dmodex.c: direct modex across daemons. */
/* The direct_modex upcall, on the loop: ask the daemon hosting proc (DMODEX frame) to serve it
 * through PMIx_server_dmodex_request, answer cbfunc exactly once (PMIX_ERR_NOT_FOUND for an
 * unknown process, PMIX_ERR_TIMEOUT after timeout_ms or the cluster's barrier timeout,
 * PMIX_ERR_COMM_FAILURE if that node is lost). key: PMIX_REQUIRED_KEY or NULL; with a key the
 * hosting daemon answers only once the process has committed that key (or the timeout ends
 * the request). proc: a pmix_proc_t; cbfunc: a pmix_modex_cbfunc_t (cast). */
typedef void (*hbd_fn_t)(void);
void hbd_dmodex_request(hbd_t *d, const void *proc, const char *key, uint32_t timeout_ms,
                        hbd_fn_t cbfunc, void *cbdata);
/* A HBD_WIRE_DMODEX frame. */
void hbd_dmodex_on_msg(hbd_t *d, const hbd_wire_msg_t *m);
/* Answer every request in flight (shutdown). */
void hbd_dmodex_fini(hbd_t *d);

/* hbd_ranks.c: the libhibar ranks' segment, socket (RUN_DIR/NODE.ranks) and epochs. */
int hbd_ranks_start(hbd_t *d);
void hbd_ranks_stop(hbd_t *d);
/* Create the job's segment and doorbell (before its ranks are spawned). 0, NOMEM, IO. */
int hbd_ranks_job_open(hbd_job_t *j);
/* Release them; epochs in flight end without telling the (gone) ranks. */
void hbd_ranks_job_close(hbd_job_t *j);
/* Add HIBAR_SOCKET, HIBAR_RANK and HIBAR_JOB for local rank lr to a malloc'd environment. */
int hbd_ranks_env(hbd_job_t *j, uint32_t lr, char ***env);
/* Local rank lr died or failed: the node's other ranks get HIBAR_ERR_PEER_LOST. */
void hbd_ranks_rank_lost(hbd_job_t *j, uint32_t lr);

/* hbd_launch.c: the local launcher. */
/* Control command "launch SPEC": takes the connection over (hbd_ctl_detach), spawns this
 * node's ranks and streams to it (see hbd_launch.c for the lines). */
void hbd_launch_request(hbd_t *d, struct hbd_ctl_conn *conn, const char *spec_path);
/* A child may have exited (SIGCHLD): reap every one of ours. */
void hbd_launch_reap(hbd_t *d);
/* Stop the job: SIGTERM to every rank's process group, SIGKILL after a grace period. */
void hbd_launch_kill(hbd_job_t *j, const char *why);
/* Rank events from the PMIx server (on the loop). */
hbd_job_t *hbd_launch_job_find(const char *nspace);
hbd_rank_t *hbd_launch_rank_find(hbd_job_t *j, uint32_t rank);
void hbd_launch_on_abort(hbd_rank_t *r, int status, const char *msg);
/* Stop every job and free it (daemon shutdown). */
void hbd_launch_stop_all(hbd_t *d);
/* The job list (for the PMIx upcalls). */
extern hbd_job_t *hbd_launch_jobs;

#endif
