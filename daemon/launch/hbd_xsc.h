/* hbd_xsc.h: the blobs of a collective of a rank set across nodes (doc/design.md 7.3). */
#ifndef HBD_XSC_H
#define HBD_XSC_H

#include <stddef.h>
#include <stdint.h>

/*
 * A collective of a rank set whose members run on several nodes (libhibar's hb_ncoll_subset,
 * HB_SEG_OP_SUBCOLL; hbd_ranks.c drives it). Each member node's daemon sends one blob into a
 * fence among the member nodes (a star through the lowest of them); every member node gets
 * every blob and reaches the same verdict from them: the first failed node's error in the
 * blobs' order, else MISMATCH where the blobs' arguments or member orders differ, else PROTO
 * for a malformed blob or a member missing. Blob, host order as the agreement's:
 *   hbd_xsc_hdr_t, n_here x u32 member index (padded to 8 bytes), data_len bytes: bcast and
 *   scatter the root's buffer (on the root's node), gather and allgather the blocks of the
 *   node's members in the order of the indexes.
 * The fence's leader sends each other member node a release trimmed for it (hbd_xsc_cut): a
 * scatter's root blob with only that node's members' blocks (ascending member index), a
 * gather's blobs without data unless the root's member runs there; every blob then says cut.
 * Mode 1 (more data in all than coll_inline_max, decided alike by every node from the same
 * arguments, compared in the verdict): the blobs carry no data; a data run over the member
 * nodes follows the fence.
 */
#define HBD_XSC_MAGIC 0x43534248u /* "HBSC" */
/* The most bytes of a node's input (as hbd_coll's limit per node): count * members above it
 * is refused where the blob is made and where it is read */
#define HBD_XSC_MAX_INPUT (1ull << 30)

typedef struct hbd_xsc_hdr {
    uint32_t magic, node, op, n_here; /* op: HB_NCOLL_* */
    int32_t root, verdict;            /* root: a member index */
    uint64_t count, order, data_len;  /* count: bytes per member; order: the list's hash */
    uint32_t cut;                     /* hbd_xsc_cut kept only what the receiving node writes out */
    uint32_t mode; /* 0: the data inside the blobs; 1: a data run after the fence */
} hbd_xsc_hdr_t;

/* The set as the blobs are read against it: n members, list[k] member k's job rank, map[r]
 * job rank r's cluster node. */
typedef struct hbd_xsc_set {
    uint32_t n;
    const uint32_t *list;
    const uint32_t *map;
} hbd_xsc_set_t;

/* bcast and scatter: the data comes from a root. */
int hbd_xsc_rooted(uint32_t op);
/* The bytes a node's blob carries: the root's (bcast, scatter) or its members' (gather,
 * allgather); 0 for a root elsewhere. */
uint64_t hbd_xsc_data_len(uint32_t op, uint64_t count, uint32_t n, uint32_t n_here, int root_here);
/* Is member k on cluster node `node`? */
int hbd_xsc_on(const hbd_xsc_set_t *x, uint32_t k, uint32_t node);
/* The blob at data[*off, len): its header into *h, its member indexes at *mp, its data at *dp,
 * and *off past it; -1 (nothing moved) where it is not one or does not fit. */
int hbd_xsc_next(const hbd_xsc_set_t *x, const uint8_t *data, size_t len, size_t *off,
                 hbd_xsc_hdr_t *h, const uint8_t **mp, const uint8_t **dp);
/* Every member node's blob, as node `self` got them: the verdict (the same on all of them)
 * and, with 0, *first (the agreed arguments) and where each member's data is: gather and
 * allgather every member's block (dat[k], [x->n]), scatter the blocks of self's members
 * (dat[k]), bcast the root's buffer (*rootd). Every pointer lies inside data. */
int hbd_xsc_parse(const hbd_xsc_set_t *x, uint32_t self, const uint8_t *data, size_t len,
                  hbd_xsc_hdr_t *first, const uint8_t **dat, const uint8_t **rootd);
/* The release all[len) trimmed for member node `kid` into *out (malloc'd, *out_len): 1; 0
 * (send the whole release) for the others, for a release this does not know how to cut, and
 * without memory. */
int hbd_xsc_cut(const hbd_xsc_set_t *x, uint32_t kid, const uint8_t *all, size_t len, uint8_t **out,
                size_t *out_len);

#endif
