/* hbd_coll.h: collectives across nodes (coll/ schedules executed over COLL frames). */
#ifndef HBD_COLL_H
#define HBD_COLL_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_reply.h"

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
    /* NULL, or called for every segment this node receives, once the executor took it:
     * bytes [lo, lo + len) of the layout (node blocks in node order, s->loff) are final and
     * are `data` (valid during the call), so that the caller can write them out while the
     * run goes on; 0 or an error, which fails the run. */
    int (*on_seg)(void *seg_arg, const struct hb_coll_sched *s, uint64_t lo, uint64_t len,
                  const uint8_t *data);
    void *seg_arg;
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
 * with `status` (a run whose part is already over here calls back with its own outcome). A run
 * created but not started yet is only marked: hbd_coll_job_start then calls back at once. */
void hbd_coll_job_cancel(hbd_t *d, hbd_coll_run_t *r, int status);
int hbd_coll_init(hbd_t *d);
void hbd_coll_fini(hbd_t *d);
/* Control command "coll OP ALG ROOT SIZE [LANES [SEG]]" (see hbd_coll.c). */
void hbd_coll_request(hbd_t *d, hbd_reply_t *conn, char *args);

#endif
