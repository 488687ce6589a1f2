/* place.h: where a job's ranks go: its nodes (a host list, a hostfile, the Slurm allocation
 * or the cluster), the slots on each, and the node of every rank. Pure: no I/O but the
 * hostfile. */
#ifndef HB_PLACE_H
#define HB_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"

/* What the user (or the resource manager) asked for. Unset fields are 0 / NULL. */
typedef struct hb_place_req {
    uint32_t n;              /* ranks (-n); 0: one per slot, which the nodes must bound */
    uint32_t per_node;       /* --per-node K: at most K ranks on a node; 0: no bound */
    const char *hosts;       /* --host: a hostlist, "n[03-05,08]" */
    const char *hostfile;    /* --hostfile: lines "NAME [slots=N]", # comments */
    const char *slurm_nodes; /* SLURM_JOB_NODELIST, when run inside an allocation */
    const char *slurm_tasks; /* SLURM_TASKS_PER_NODE ("2(x3),1") or SLURM_NTASKS_PER_NODE */
    int by_chassis;          /* deal each chassis' ranks round-robin over its nodes */
    const uint8_t *busy;     /* [n_nodes] nodes running other jobs (the cluster's default
                              * placement takes the free ones first), or NULL */
    const uint8_t *lost;     /* [n_nodes] nodes known lost: the default placement leaves
                              * them out, a host list naming one is refused; or NULL */
} hb_place_req_t;

/* The answer. */
typedef struct hb_place {
    uint32_t n;         /* ranks */
    uint32_t *map;      /* [n] node of each rank */
    uint8_t *member;    /* [cfg->n_nodes] 1 for a node with ranks */
    uint32_t n_members; /* nodes with ranks */
    char source[64];    /* where the nodes came from: "--host", "the Slurm allocation", ... */
    char note[256];     /* a warning for the user, or "" (an allocation the cluster lacks) */
} hb_place_t;

/*
 * Place a job on cfg's nodes:
 *   nodes   --host, else --hostfile, else the Slurm allocation, else the cluster's nodes in
 *           order, free ones (not in busy) first (with -n and --per-node K ceil(n / K) of
 *           them; with -n below the node count, n; in ascending order);
 *   slots   a hostfile's slots= (a bound) or the allocation's tasks per node (a bound only
 *           when -n fits them: more ranks spread evenly, as under `sbatch -N 16` with -n 64),
 *           each capped by --per-node;
 *   ranks   every node bounded: in node order, each filled up to its slots; else spread
 *           evenly (the first n % nodes get one more), a bounded node keeping to its slots
 *           and the unbounded ones taking its excess. Nodes left without a rank are not
 *           members.
 * An allocation naming a node the cluster lacks (hibard's cluster is not the allocation) is
 * set aside for the cluster's nodes, with a note saying so.
 * Errors (nothing allocated, err says what, naming nodes): HB_ERR_CONFIG for bad input
 * (an unknown or repeated node, a malformed hostfile line as FILE:LINE, more ranks than
 * slots, no -n where the slots are unbounded), HB_ERR_IO (hostfile unreadable),
 * HB_ERR_NOMEM, HB_ERR_INVAL (NULL).
 */
int hb_place(const hb_cfg_t *cfg, const hb_place_req_t *req, hb_place_t *out, char *err,
             size_t errlen);
void hb_place_free(hb_place_t *p);

#endif
