/* coll.h: names shared by the coll/ schedules and cost models (operations, algorithms, units). */
#ifndef HB_COLL_H
#define HB_COLL_H

#include <stdint.h>

/*
 * Units used everywhere in coll/: sizes in bytes, times in microseconds (µs), bandwidths in
 * bytes per microsecond (1 byte/µs = 1 MB/s = 8 Mbit/s; HB_MODEL_MBIT converts).
 */

#define HB_COLL_NONE UINT32_MAX

/* A collective operation. Participants are nodes (one daemon each). */
typedef enum {
    HB_COLL_SCATTER = 0,   /* root's block i goes to node i (-v: per-node byte counts) */
    HB_COLL_GATHER = 1,    /* node i's block goes to root, concatenated in node order */
    HB_COLL_BCAST = 2,     /* root's buffer goes to every node */
    HB_COLL_ALLGATHER = 3, /* every node's block goes to every node */
    HB_COLL_ALLTOALL = 4,  /* node i's block j goes to node j (no root; PlogP-BR's experiment) */
    HB_COLL_OP_COUNT = 5
} hb_coll_op_t;

/* An algorithm (doc/design.md sections 1 and 4). */
typedef enum {
    HB_COLL_ALG_FLAT = 0,        /* root exchanges with every node directly */
    HB_COLL_ALG_BINOMIAL = 1,    /* binomial tree over nodes, root-rotated, site-blind */
    HB_COLL_ALG_SINGLE_LANE = 2, /* MagPIe: one WAN crossing per remote site, between leaders */
    HB_COLL_ALG_MULTI_LANE = 3,  /* Chiba et al.: P Dep_send/Dep_recv pairs per remote site */
    HB_COLL_ALG_PAIRWISE = 4,    /* alltoall only: n - 1 rounds of pair exchanges */
    HB_COLL_ALG_COUNT = 5
} hb_coll_alg_t;

/* "scatter", "gather", "bcast", "allgather", "alltoall"; "?" when out of range. */
const char *hb_coll_op_name(hb_coll_op_t op);
/* "flat", "binomial", "single-lane", "multi-lane", "pairwise" (the `impl` names of hibar-bench).
 */
const char *hb_coll_alg_name(hb_coll_alg_t alg);
/* Parse the names above; 0 and *alg_p, or HB_ERR_INVAL. */
int hb_coll_alg_parse(const char *name, hb_coll_alg_t *alg_p);
int hb_coll_op_parse(const char *name, hb_coll_op_t *op_p);
/* Is alg an algorithm of op? alltoall: flat and pairwise; the others: all but pairwise. */
int hb_coll_alg_valid(hb_coll_op_t op, hb_coll_alg_t alg);

#endif
