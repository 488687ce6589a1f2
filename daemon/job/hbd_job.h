/* hbd_job.h: a job as this daemon sees it (spec, ranks, namespace, fences) and its spec file. */
#ifndef HBD_JOB_H
#define HBD_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hbd.h"

struct event;
struct hbd_timer;
struct bufferevent;
struct rl_job;

#define HBD_JOB_NSLEN 256 /* namespace buffer: PMIx's pmix_nspace_t ("hibar.<id>") */
#define HBD_JOB_LINE 1800 /* longest forwarded output chunk, before escaping */
#define HBD_JOB_SPEC_MAX (16u << 20)
/* Texts of the launcher's "x" line (launch/hbd_launch.c) that hibar-run tells apart: a rank
 * that failed only because the job had failed does not decide hibar-run's exit status. */
#define HBD_JOB_WHY_AFTER "exited with a non-zero status after the job failed"
#define HBD_JOB_WHY_STOPPED "stopped (job aborted)"

/*
 * A job spec is the file hibar-run writes into the run dir and names in "launch PATH".
 * Text records, one per line, strings carry their length so they may hold anything:
 *   hibar-job 1
 *   id <u64>            job id (unique in the cluster; hibar-run uses its pid and time)
 *   size <n>            ranks in the job
 *   slot <j> <b> <n>    added by the origin daemon once the cluster's root gave the job its
 *                       number j (> 0, the wire's job id) and chassis-barrier sync numbers
 *                       b..b+n-1 (hbd_slot.h); the job's barrier ids count from 0
 *   tag <0|1>           prefix forwarded output with the rank (done by hibar-run; kept here)
 *   map <node> x size   cluster node id of every rank, in rank order
 *   cwd <len>:<bytes>
 *   arg <len>:<bytes>   argv[0] (an absolute path), argv[1], ...
 *   env <len>:<bytes>   NAME=VALUE, the ranks' whole environment (PMIx adds its own)
 */
typedef struct hbd_job_spec {
    uint64_t id;
    uint32_t size;
    uint32_t jobno; /* 0 until the slot line is there */
    uint32_t sync_base, n_sync;
    int tag;
    uint32_t *map; /* [size] node of each rank */
    char *cwd;
    char **argv; /* NULL-terminated */
    char **env;  /* NULL-terminated */
    uint32_t n_argv, n_env;
} hbd_job_spec_t;

/* Parse a spec (file:line in err on failure). 0, INVAL, IO, NOMEM. */
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

/*
 * A job as this daemon sees it: the job object. It exists from the first part that makes the
 * job known here until the last part lets it go, and each part is a pointer (or flag) here that
 * its module sets and clears:
 *   relay     the relay's record (launch/hbd_relay.c): at the origin from hibar-run's "run" to
 *             the job's last CLEAN (also for a job with no rank on this node); elsewhere from
 *             the first JOB SPEC chunk to the part's CLEAN
 *   launched  the launcher's part (launch/hbd_launch.c): the spec, the local ranks,
 *             hibar-run's (or the relay's) connection, the kill timer, the barrier engine
 *             (closed with the part; the relay holds the job until the engine drained);
 *             within it ranks (launch/hbd_ranks.c) and step (pmix/hbd_pmix.c)
 * Teardown is the reverse of setup: each part clears its pointer, then hbd_job_release.
 */
typedef struct hbd_job {
    hbd_t *d;
    uint64_t id;    /* the spec's id (unique in the cluster) */
    uint32_t jobno; /* the wire's job number (its slot, hbd_slot.h), 0 until known here */
    char nspace[HBD_JOB_NSLEN];
    uint32_t *nodes;  /* cluster node ids hosting ranks, ascending (hbd_job_set_nodes), or NULL */
    uint32_t n_nodes; /* job nodes */
    uint8_t *member;  /* [cluster nodes] 1 for the job's nodes, or NULL while not known here */
    struct rl_job *relay; /* the relay's record, or NULL */
    int launched;         /* the launcher's part runs here (the fields below until next) */
    hbd_job_spec_t *spec;
    hbd_rank_t *local;
    uint32_t n_local;
    uint32_t counted;    /* of n_local, counted in the registry's n_local_ranks */
    uint32_t n_running;  /* spawned and not reaped or with open pipes */
    uint32_t fence_seq;  /* fences without data started so far (barrier engine ids) */
    uint32_t dfence_seq; /* fences with data started so far (hbd_fence ids) */
    int registered;      /* nspace registered with the PMIx server */
    int engine;          /* its barrier engine is open here (hbd_barrier_job_open) */
    int killing;         /* the job is being stopped (2: SIGTERM sent, SIGKILL next) */
    int failed;          /* some rank failed (or the job was killed) */
    int done_sent;       /* the last line is queued: free the job once it is out */
    int out_paused;      /* the ranks' pipes are not read: too much output queued (bev) */
    int fd;              /* hibar-run's connection (detached control connection) */
    struct bufferevent *bev;
    struct hbd_timer *kill_timer; /* SIGTERM (deferred), then SIGKILL escalation */
    uint64_t kill_ns;            /* when the job was asked to stop */
    struct hbd_ranks_job *ranks; /* the libhibar segment and epochs (hbd_ranks.c), or NULL */
    struct px_step *step;        /* its PMIx step process while it runs (hbd_pmix.c) */
    struct hbd_job *next;
} hbd_job_t;

/*
 * The job object and the registry (d->jobs). Launch, ranks, relay, PMIx, fences and dmodex reach
 * a job's state through these, not through each other. Loop only.
 */
/* What the launcher does when the PMIx server reports a rank event. */
typedef struct hbd_job_ops {
    /* The rank called PMIx_Abort: the job stops. */
    void (*rank_abort)(hbd_rank_t *r, int status, const char *msg);
    /* The job cannot go on here (why: a sentence, e.g. its PMIx step died): it stops. */
    void (*fail)(struct hbd_job *j, const char *why);
} hbd_job_ops_t;
void hbd_jobs_set_ops(hbd_t *d, const hbd_job_ops_t *ops);
/* The job `id` here (whatever parts it has), or NULL. */
hbd_job_t *hbd_job_get(const hbd_t *d, uint64_t id);
/* The job `id`: found, or made with no part and entered into the registry. The caller sets its
 * part, or calls hbd_job_release if it takes none. 0 or NOMEM. */
int hbd_job_open(hbd_t *d, uint64_t id, hbd_job_t **j_p);
/* The job's nodes and member set from its rank map (node of each of size ranks), set by the
 * first part that reads the job's spec; a later part's map must give the same set. 0, INVAL (a
 * rank on a node not in the cluster: *bad_p is the rank; UINT32_MAX: another set than the one
 * known), NOMEM. */
int hbd_job_set_nodes(hbd_job_t *j, const uint32_t *map, uint32_t size, uint32_t *bad_p);
/* A part let go of j (it cleared its pointer or flag): j is taken out and freed once no part
 * holds it (relay, launched, ranks, step); its launcher fields must be released already. */
void hbd_job_release(hbd_job_t *j);
/* The launcher's part started: its n_local ranks count for the waiting rule until done. */
void hbd_job_count(hbd_job_t *j);
/* The job's last line is queued: its ranks no longer count as this node's. */
void hbd_job_done(hbd_job_t *j);
/* The job of a namespace with ranks here (the launcher's part), or NULL. */
hbd_job_t *hbd_job_find(const hbd_t *d, const char *nspace);
/* The job of wire job number `jobno` (> 0) here, or NULL. */
hbd_job_t *hbd_job_by_no(const hbd_t *d, uint32_t jobno);
/* Its local rank of global rank `rank`, or NULL. */
hbd_rank_t *hbd_job_rank(hbd_job_t *j, uint32_t rank);
/* A rank called PMIx_Abort (the launcher's rank_abort; ignored without one). */
void hbd_job_rank_abort(hbd_rank_t *r, int status, const char *msg);
/* The job cannot go on here (the launcher's fail; ignored without one). */
void hbd_job_fail(hbd_job_t *j, const char *why);

#endif
