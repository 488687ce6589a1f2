/* ncoll.h: intra-node collectives over the segment (staging buffers or cross-memory attach). */
#ifndef HB_NCOLL_H
#define HB_NCOLL_H

#include "nbar.h"
#include "seg.h"

#include <stddef.h>
#include <stdint.h>

typedef enum hb_ncoll_op {
    HB_NCOLL_BCAST = 1,
    HB_NCOLL_SCATTER,
    HB_NCOLL_GATHER,
    HB_NCOLL_SCATTERV,
    HB_NCOLL_GATHERV,
    HB_NCOLL_ALLGATHER,
} hb_ncoll_op_t;

/* One rank's view of a collective (byte counts). */
typedef struct hb_ncoll_args {
    hb_ncoll_op_t op;
    int root;            /* ignored by allgather */
    const void *sendbuf; /* bcast: the buffer (root sends it, the others receive into it) */
    void *recvbuf;
    size_t count;         /* bytes per rank; v-forms: this rank's own receive / send count */
    const size_t *counts; /* v-forms, at the root: bytes per rank */
    const size_t *displs; /* v-forms, at the root: byte offsets per rank */
} hb_ncoll_args_t;

typedef struct hb_ncoll {
    hb_seg_t *seg;
    hb_nbar_t *bar;
    uint32_t rank, nranks;
    uint32_t grank, gsize; /* the rank and size in the job (nodes > 1; else rank, nranks) */
    uint64_t seq;          /* collectives this rank entered */
    int cma_all;           /* every rank can reach its peers by process_vm_readv/writev */
    uint64_t pull_min;     /* scatter, bcast: receivers pull from this size on (cma.pull_min) */
    uint64_t probe_val;
} hb_ncoll_t;

/*
 * Protocol of one collective, the same for every operation:
 *   1. each rank checks its own arguments, publishes its record (sequence number, op, root,
 *      count, buffer addresses, its own error) in its control block; the root publishes the
 *      counts and displacements; writers copy the first chunk into the staging buffers;
 *   2. barrier;
 *   3. every rank reads every record and reaches the same verdict: the first error
 *      published, HIBAR_ERR_MISMATCH if op, root, sequence or sizes disagree, else go;
 *   4. data: if every rank can use cross-memory attach and the largest piece exceeds a
 *      staging buffer, receivers pull (process_vm_readv) and gather senders push
 *      (process_vm_writev); scatter and bcast pull from pull_min bytes on (the root then
 *      copies nothing: every receiver takes its block from the root's buffer at once, as
 *      MPI's single-copy transports do, instead of the root staging them one after the
 *      other); otherwise chunks of buf_size bytes go through the staging buffers, one
 *      barrier per chunk;
 *   5. barrier (nobody reuses a record or buffer before all are done).
 */

/* Copy len bytes between this process and process `pid` by cross-memory attach (write:
 * local -> remote; partial transfers continued). 0, PEER_LOST (no such process), INVAL (bad
 * address), PERM, IO; logged once. Used by the ranks and by hibard. */
int hb_ncoll_cma(int pid, void *local, uint64_t remote, size_t len, int write);

/* A run of pieces between this process and process `pid`: piece i is len[i] bytes at local[i]
 * here and at remote[i] there, one system call per 64 pieces (a call per piece costs a system
 * call and a lock of the other's memory map apiece); a partial transfer is continued piece by
 * piece. Same results as hb_ncoll_cma. */
int hb_ncoll_cmav(int pid, void *const *local, const uint64_t *remote, const size_t *len, size_t n,
                  int write);

/* Publish this process's CMA probe (before the init barrier). */
void hb_ncoll_probe_publish(hb_seg_t *seg, uint32_t rank);
/* Check that this rank can read its neighbour (after the init barrier) and publish it. */
void hb_ncoll_probe_run(hb_seg_t *seg, uint32_t rank);

/* Defaults of cma_pull_min (HIBAR_CMA_PULL_MIN, bytes), by the waiting rule (doc/design.md
 * 6.1): 16 KiB where every rank of the node has a core (the receivers pull at once), 32 KiB
 * where ranks outnumber the cores (pulling receivers then wait for each other's turn, and
 * staging by the root is cheaper up to there). */
#define HB_NCOLL_PULL_MIN_DEFAULT (16u << 10)
#define HB_NCOLL_PULL_MIN_SCARCE (32u << 10)

/* After every rank ran the probe and a barrier: set up. */
int hb_ncoll_init(hb_ncoll_t *c, hb_seg_t *seg, hb_nbar_t *bar);

/*
 * Across nodes (segment nnodes > 1) the ranks only publish their records (with the epoch that
 * opens the collective, and at the root of a -v form the addresses of its tables) and arrive
 * at the node barrier. The daemon, rung by the node's last arriver, finds every record at
 * that epoch, agrees on the arguments with the other nodes' daemons, moves the data between
 * the ranks' buffers (process_vm_readv/writev: the ranks are its children) and the other
 * nodes, and releases the epoch with one verdict for every rank of the job
 * (daemon/hbd_ranks.c). Root, ranks and counts are job ranks (grank, gsize).
 */

/* Run one collective. Blocking; same status on every rank for argument errors and
 * mismatches (HIBAR_ERR_INVAL, HIBAR_ERR_MISMATCH), HIBAR_ERR_PEER_LOST, HIBAR_ERR_TIMEOUT. */
int hb_ncoll_run(hb_ncoll_t *c, const hb_ncoll_args_t *a);

/* One collective (bcast, scatter, gather, allgather) of the n job ranks listed, member i being
 * block i and root an index into the list. Where every member runs on this node and the node's
 * ranks reach each other by cross-memory attach, on the node; in a job on several nodes
 * otherwise through the daemons (ncoll_sub_nodes); HIBAR_ERR_UNAVAIL on a one-node job whose
 * ranks cannot attach, the same on every member (the caller then runs the collective some
 * other way). HIBAR_ERR_INVAL for a bad list or a -v form; otherwise as hb_ncoll_run. */
int hb_ncoll_subset(hb_ncoll_t *c, const uint32_t *ranks, size_t n, const hb_ncoll_args_t *a);
/* Would hb_ncoll_subset run this set on this node (without the daemons)? 1, 0, or
 * HIBAR_ERR_INVAL. */
int hb_ncoll_subset_on_node(const hb_ncoll_t *c, const uint32_t *ranks, size_t n);

#endif
