/* hibar.h: the public interface of libhibar, hierarchical barriers and site-aware collectives. */
#ifndef HIBAR_H
#define HIBAR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Status codes. Every hibar call returns 0 on success or one of these negative values;
 * hibar_strerror() gives a one-line description. The same codes are used inside hibard.
 */
#define HIBAR_SUCCESS 0
#define HIBAR_ERR_INVAL (-1)      /* an argument is invalid (NULL buffer, bad rank, bad mask) */
#define HIBAR_ERR_NOMEM (-2)      /* out of memory */
#define HIBAR_ERR_TIMEOUT (-3)    /* the operation did not complete within its timeout */
#define HIBAR_ERR_PEER_LOST (-4)  /* a participant (process, node or daemon) died or left */
#define HIBAR_ERR_UNAVAIL (-5)    /* the requested backend, device or service is not available */
#define HIBAR_ERR_IO (-6)         /* a system call failed (details in the log) */
#define HIBAR_ERR_PROTO (-7)      /* a malformed or unexpected message was received */
#define HIBAR_ERR_BUSY (-8)       /* the resource is in use (sync number in flight, call pending) */
#define HIBAR_ERR_MISMATCH (-9)   /* participants disagree (mask, size, root, operation) */
#define HIBAR_ERR_CONFIG (-10)    /* the configuration is invalid */
#define HIBAR_ERR_NOT_INIT (-11)  /* the library or object is not initialized */
#define HIBAR_ERR_EXISTS (-12)    /* the object already exists */
#define HIBAR_ERR_NOT_FOUND (-13) /* no such object (node, rank, key, file) */
#define HIBAR_ERR_PERM (-14)      /* permission denied (uid mismatch, file mode) */
#define HIBAR_ERR_TRUNCATED (-15) /* a buffer was too small for the data */
#define HIBAR_ERR_THREAD (-16)    /* concurrent calls from two threads on one handle */
#define HIBAR_ERR_INTERNAL (-17)  /* a bug in hibar; please report it with the log */
#define HIBAR_ERR_WOULD_BLOCK (-18) /* a non-blocking test found the operation not yet complete */
#define HIBAR_ERR_LAST (-18)

/* Describe a status code. Never NULL; the string is static. Thread-safe. */
const char *hibar_strerror(int status);

/*
 * The library. A process joins its job with hibar_init and leaves with hibar_finalize; in
 * between, the handle names this process's membership of the job. The ranks of one node
 * meet in a shared-memory segment that hibard creates for the job (a single-node job never
 * involves the daemon after start-up).
 *
 * Rules common to every call below:
 * - Each returns HIBAR_SUCCESS (0) or a negative HIBAR_ERR_* code.
 * - A NULL handle gives HIBAR_ERR_NOT_INIT (calls before init or after finalize).
 * - Collective calls (barrier, collectives, finalize) must be made by every rank of the job
 *   in the same order. They block until complete. Misuse is reported, never a hang: ranks
 *   that disagree on the operation, the root or the sizes all get HIBAR_ERR_MISMATCH; an
 *   argument error on one rank (NULL buffer, root out of range) is returned by every rank
 *   of that collective as HIBAR_ERR_INVAL. A rank that dies (or finalizes) while others
 *   wait for it makes their calls return HIBAR_ERR_PEER_LOST, and so does the death of the
 *   hibard that launched the job (waits watch its pid and start time); after that every
 *   call on the handle returns HIBAR_ERR_PEER_LOST. A plain barrier on some ranks where the others
 *   call a collective: the collective ranks get HIBAR_ERR_MISMATCH, the barrier ranks'
 *   barrier succeeds and their next collective gets HIBAR_ERR_MISMATCH; the ranks stay
 *   one barrier apart from then on (treat it as fatal for the job).
 * - A handle is not thread-safe; it may be used from any thread, one call at a time. Two
 *   threads calling on one handle at the same time is detected: the second call returns
 *   HIBAR_ERR_THREAD without doing anything.
 * - By default a wait lasts as long as the peers are alive; HIBAR_TIMEOUT_MS (environment)
 *   or hibar_set_timeout bounds each wait (HIBAR_ERR_TIMEOUT). A barrier that timed out is
 *   completed first by the next barrier call; a collective that timed out may leave the
 *   ranks out of step: treat it as fatal for the job.
 * - Across nodes (a job that hibar-run placed on several daemons) every call works the same:
 *   a node's last rank to arrive hands the epoch to its hibard, which runs the barrier over the
 *   chassis tree, or the collective (arguments agreed by every node first, data moved between
 *   the daemons and read from / written into the ranks' buffers by the daemon). Misuse gets
 *   the same status on every rank of the job. Nodes that disagree on the kind of call (a plain
 *   barrier on one node, a collective on another) cannot meet: their calls end with
 *   HIBAR_ERR_TIMEOUT after the cluster's barrier_timeout_ms.
 */
typedef struct hibar hibar_t;

/* Split-phase barrier ticket returned by hibar_barrier_arrive. */
typedef unsigned long long hibar_epoch_t;

/* Join the job. Collective over the job's ranks; blocking. Where the job comes from:
 * - HIBAR_SOCKET (set by hibard's launcher): the daemon's UNIX socket; the daemon hands
 *   over the node's segment and doorbell (uid checked on both sides);
 * - HIBAR_SEG_FD + HIBAR_RANK (+ HIBAR_DOORBELL_FD): an inherited segment;
 * - neither: a singleton job of one rank.
 * Errors: HIBAR_ERR_EXISTS (this rank already joined), HIBAR_ERR_UNAVAIL (daemon
 * unreachable), HIBAR_ERR_PERM (uid mismatch), HIBAR_ERR_PROTO (invalid segment),
 * HIBAR_ERR_TIMEOUT (other ranks did not join within HIBAR_INIT_TIMEOUT_MS, default
 * 60000), HIBAR_ERR_NOMEM, HIBAR_ERR_INVAL (h_p NULL). Thread-safe with other handles. */
int hibar_init(hibar_t **h_p);

/* Leave the job: a barrier with every rank, then the handle is freed and *h_p set to
 * NULL (also on error). Collective; blocking. */
int hibar_finalize(hibar_t **h_p);

/* This process's rank (0 .. size - 1) and the number of ranks. Non-blocking; thread-safe. */
int hibar_rank(hibar_t *h, int *rank_p);
int hibar_size(hibar_t *h, int *size_p);

/* Block until every rank has called hibar_barrier. */
int hibar_barrier(hibar_t *h);

/* Split-phase (fuzzy) barrier. arrive announces this rank and returns at once with a
 * ticket; wait blocks until every rank has arrived at that epoch; test does not block
 * (HIBAR_ERR_WOULD_BLOCK while others have not arrived). One split-phase barrier may be
 * outstanding per handle: any other call on the whole job (barrier, collective, another
 * arrive) before its wait gives HIBAR_ERR_BUSY; the calls of rank sets (the _subset ones)
 * run meanwhile, in any order against it on different ranks. Testing or waiting again on the ticket
 * that completed last gives the same answer again; any other ticket gives HIBAR_ERR_INVAL. */
int hibar_barrier_arrive(hibar_t *h, hibar_epoch_t *epoch_p);
int hibar_barrier_test(hibar_t *h, hibar_epoch_t epoch);
int hibar_barrier_wait(hibar_t *h, hibar_epoch_t epoch);

/* Barrier among the n ranks listed (distinct, any order, the caller among them). Every
 * listed rank must call it with the same set; other ranks do not take part. Members that
 * disagree on the set (with the same lowest rank on one node) get HIBAR_ERR_MISMATCH;
 * across nodes, sets that differ never meet and end with HIBAR_ERR_TIMEOUT. HIBAR_ERR_INVAL
 * for a bad set. */
int hibar_barrier_subset(hibar_t *h, const int *ranks, int n);

/* Collectives. Sizes are in bytes; a rank never reads or writes outside the bytes named.
 * Send and receive buffers must not overlap. */

/* root's sendbuf holds size * bytes; rank i receives bytes [i*bytes, (i+1)*bytes) in
 * recvbuf. sendbuf is ignored on other ranks. */
int hibar_scatter(hibar_t *h, const void *sendbuf, void *recvbuf, size_t bytes, int root);
/* Each rank sends `bytes`; root receives rank i's bytes at recvbuf + i*bytes. */
int hibar_gather(hibar_t *h, const void *sendbuf, void *recvbuf, size_t bytes, int root);
/* root sends counts[i] bytes from sendbuf + displs[i] to rank i, which receives recvbytes
 * (must equal counts[i], else HIBAR_ERR_MISMATCH everywhere). counts, displs and sendbuf
 * are read on the root only. */
int hibar_scatterv(hibar_t *h, const void *sendbuf, const size_t *counts, const size_t *displs,
                   void *recvbuf, size_t recvbytes, int root);
/* Rank i sends sendbytes (must equal the root's counts[i]); root stores them at
 * recvbuf + displs[i]. counts, displs and recvbuf are read on the root only. */
int hibar_gatherv(hibar_t *h, const void *sendbuf, size_t sendbytes, void *recvbuf,
                  const size_t *counts, const size_t *displs, int root);
/* root's buf (bytes long) is copied into every other rank's buf. */
int hibar_bcast(hibar_t *h, void *buf, size_t bytes, int root);
/* Each rank sends `bytes`; every rank receives rank i's bytes at recvbuf + i*bytes. */
int hibar_allgather(hibar_t *h, const void *sendbuf, void *recvbuf, size_t bytes);

/* Collectives of a rank set that runs on one node (an MPI communicator of one node's ranks):
 * the n job ranks listed (distinct, the caller among them, every member with the same list in
 * the same order) take part, member i's block being block i and root an index into the list;
 * other ranks do not take part. The data moves between the members' buffers by cross-memory
 * attach, with two subset barriers around it. HIBAR_ERR_UNAVAIL on every member where the
 * members do not all run on this node or the node's ranks cannot attach to each other's
 * memory (then nothing happened: run the collective some other way); hibar_subset_on_node
 * tells beforehand. HIBAR_ERR_INVAL for a bad list; otherwise as the calls above. */
int hibar_bcast_subset(hibar_t *h, const int *ranks, int n, void *buf, size_t bytes, int root);
int hibar_scatter_subset(hibar_t *h, const int *ranks, int n, const void *sendbuf, void *recvbuf,
                         size_t bytes, int root);
int hibar_gather_subset(hibar_t *h, const int *ranks, int n, const void *sendbuf, void *recvbuf,
                        size_t bytes, int root);
int hibar_allgather_subset(hibar_t *h, const int *ranks, int n, const void *sendbuf, void *recvbuf,
                           size_t bytes);
/* 1 when the subset calls above can run this set (every member on this node, cross-memory
 * attach available), 0 when not (the same answer on every member), or a negative error
 * (HIBAR_ERR_INVAL for a bad list). Non-blocking. */
int hibar_subset_on_node(hibar_t *h, const int *ranks, int n);

/* Bound every later wait of this handle to ms milliseconds (0: no bound). Non-blocking. */
int hibar_set_timeout(hibar_t *h, unsigned ms);

/* Called while a call of the handle waits for other ranks or the daemon: what must keep
 * running meanwhile in this process (an MPI library's progress engine: the point-to-point
 * messages of another communicator's collective, that ranks waiting here must send on).
 * Returns anything (ignored). */
typedef int (*hibar_progress_fn)(void *arg);
/* While a call of this handle waits, call fn(arg) about every HIBAR_PROGRESS_US microseconds
 * (and never sleep longer than that between calls); NULL: none (the default). The function
 * must not call into this handle. Non-blocking. */
#define HIBAR_PROGRESS_US 1000
int hibar_set_progress(hibar_t *h, hibar_progress_fn fn, void *arg);

/* Log levels passed to the callback. */
#define HIBAR_LOG_ERROR 0
#define HIBAR_LOG_WARN 1
#define HIBAR_LOG_INFO 2
#define HIBAR_LOG_DEBUG 3
typedef void (*hibar_log_fn)(int level, const char *msg, void *arg);
/* Send the library's log lines (one line, no newline) to fn instead of stderr; NULL
 * restores stderr. The level is HIBAR_LOG (error|warn|info|debug, default warn). Set it
 * before hibar_init; not thread-safe with concurrent hibar calls. */
int hibar_set_log_callback(hibar_log_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* HIBAR_H */
