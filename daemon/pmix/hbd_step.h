/* hbd_step.h: a job's PMIx step: the per-job process that holds the PMIx server of the job's
 * local ranks, and the messages it exchanges with hibard over a socket pair. */
#ifndef HBD_STEP_H
#define HBD_STEP_H

#include <stddef.h>
#include <stdint.h>

/*
 * hibard runs itself again as `hibard --pmix-step FD TMPDIR HOSTNAME SERVER_NSPACE RANK PPID`
 * for each job with ranks on its node (hbd_pmix.c). The step calls PMIx_server_init with its own
 * tmp dir, registers the job's namespace and clients, answers setup_fork for every local rank,
 * and hands every upcall to hibard; it ends when hibard closes the socket (the job is over),
 * when hibard dies (EOF, and PR_SET_PDEATHSIG), removing its tmp dir. libpmix 4.2.2's server
 * leaks about one copy of every fence's data; the leak now ends with the job.
 *
 * Messages, both ways: a fixed header (hbd_pxmsg_t, this host's byte order: both ends are the
 * same binary), then len bytes of payload. A header with a wrong magic or a length above
 * HBD_PXMSG_MAX_LEN breaks the stream (hibard ends the job with an error); a message whose
 * type, id or payload does not fit is dropped, counted and logged once.
 *
 *   hibard -> step                               step -> hibard
 *   JOB        the job (hbd_step_job_pack)       REGISTERED st, arg = local ranks; payload per
 *   OPDONE     id st  (CONNECTED ... answered)               rank: NAME=VALUE\0 ... \0
 *   FENCE_DONE id st  payload: the data          CONNECTED, FINALIZED  id rank
 *   DMODEX_DONE id st payload: the data          ABORT      id rank st  payload: text
 *   PROBE      id rank payload: nspace\0 key\0    FENCE  id arg = timeout s, flags COLLECT |
 *   FETCH      id rank payload: nspace\0                ALL; payload: u32 n, u32 rank[n], data
 *   CANCEL     answer the fences in flight       DMODEX id rank arg = timeout s;
 *              PMIX_ERR_COMM_FAILURE                    payload: nspace\0 key\0 ("" none)
 *                                                PROBED  id st (0: the key is there)
 *                                                FETCHED id st payload: the data
 *                                                LOG     arg = level, payload: the line
 */
enum {
    HBD_PXM_JOB = 1,
    HBD_PXM_REGISTERED,
    HBD_PXM_CONNECTED,
    HBD_PXM_FINALIZED,
    HBD_PXM_ABORT,
    HBD_PXM_OPDONE,
    HBD_PXM_FENCE,
    HBD_PXM_FENCE_DONE,
    HBD_PXM_DMODEX,
    HBD_PXM_DMODEX_DONE,
    HBD_PXM_PROBE,
    HBD_PXM_PROBED,
    HBD_PXM_FETCH,
    HBD_PXM_FETCHED,
    HBD_PXM_CANCEL,
    HBD_PXM_LOG,
    HBD_PXM_TYPE_MAX = HBD_PXM_LOG
};
#define HBD_PXM_COLLECT 1u /* FENCE flags */
#define HBD_PXM_ALL 2u

#define HBD_PXMSG_MAGIC 0x58504248u /* "HBPX" */
/* a fence's data (hbd_fence.c's HBD_FENCE_MAX_LEN) and room for its rank list */
#define HBD_PXMSG_MAX_LEN ((256u << 20) + (64u << 20))
typedef struct hbd_pxmsg {
    uint32_t magic;
    uint16_t type;
    uint16_t flags;
    uint32_t id;
    uint32_t rank;
    uint32_t arg;
    int32_t st;
    uint64_t len; /* payload bytes after the header */
} hbd_pxmsg_t;

#define HBD_STEP_ARG "--pmix-step"

/* The step's main: argv[1] is HBD_STEP_ARG. Returns the exit status. */
int hbd_step_main(int argc, char **argv);

/*
 * The JOB message's payload: u32 size, n_nodes, self (index of this node among the job's
 * nodes), node index of each rank [size], then the namespace and the n_nodes node names, each
 * NUL-terminated. hbd_step_job_pack: malloc'd payload or NULL. hbd_step_job_unpack: 0, or -1
 * when the payload does not parse; the pointers point into p.
 */
typedef struct hbd_step_job {
    uint32_t size, n_nodes, self;
    const uint32_t *map; /* [size], unaligned-safe copy made by unpack (malloc'd) */
    const char *nspace;  /* in the payload */
    const char **names;  /* [n_nodes] (malloc'd array into the payload) */
} hbd_step_job_t;
uint8_t *hbd_step_job_pack(const hbd_step_job_t *jb, size_t *len_p);
int hbd_step_job_unpack(const uint8_t *p, size_t len, hbd_step_job_t *jb);
void hbd_step_job_free(hbd_step_job_t *jb);

/* Remove what PMIx left in a tmp dir (its rendezvous files), then the dir (both ends). */
void hbd_step_rmdir(const char *dir);

/* The NUL-terminated strings of a payload: the i-th one's offset, *next after it; -1 when the
 * payload ends before its NUL. */
int hbd_pxm_str(const uint8_t *p, size_t len, size_t off, size_t *next);

#endif
