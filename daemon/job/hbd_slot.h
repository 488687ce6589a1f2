/* hbd_slot.h: the cluster's job slots: a number and chassis-barrier sync numbers per job. */
#ifndef HBD_SLOT_H
#define HBD_SLOT_H

#include <stddef.h>
#include <stdint.h>

#include "topo.h"

/*
 * The cluster's root daemon (the Center of the root chassis) hands every job started through
 * "run" (hibar-run) a slot before any node starts it: a job number, unique in the cluster while
 * the root runs (the wire's job id, > 0), and a range of chassis-barrier sync numbers
 * [base, base + n) inside [first, end) that no other running job uses in any chassis the job
 * has a node in (jobs on disjoint chassis share numbers; a chassis barrier's sync number is
 * per chassis). A job asks for `want` sync numbers (collectives in flight per node) and gets
 * fewer, down to 1, when a chassis is crowded; when even one is not free, or the cluster holds
 * HBD_SLOT_MAX jobs, it is refused with a message naming the chassis. Pure bookkeeping (no
 * I/O): the relay (hbd_relay.c) runs it on the root and the tests drive it directly.
 */
#define HBD_SLOT_MAX 256

typedef struct hbd_slot {
    uint32_t jobno, base, n;
    uint64_t id;     /* the spec's job id */
    uint32_t origin; /* the node whose daemon started it */
    uint32_t size;   /* ranks */
    uint32_t n_nodes;
    uint32_t *nodes; /* [n_nodes] ascending */
    uint64_t t0_ns;  /* when it was given */
    uint64_t expire_ns; /* 0, or (a census found it, its origin gone) when it is given back */
    struct hbd_slot *next;
} hbd_slot_t;

typedef struct hbd_slots {
    uint32_t n_chassis, first, end, want;
    uint32_t *used; /* [n_chassis] bit s: sync number s taken */
    uint32_t next_jobno;
    hbd_slot_t *list; /* newest first */
    uint32_t n;
} hbd_slots_t;

/* Sync numbers [first, end) of at most 32, `want` per job. 0, INVAL, NOMEM. */
int hbd_slots_init(hbd_slots_t *S, const hb_topo_t *t, uint32_t first, uint32_t end, uint32_t want);
void hbd_slots_fini(hbd_slots_t *S);
/* A slot for a job on nodes[n_nodes] (cluster node ids, ascending, no repeats). 0 and *slot_p
 * (owned by S), or INVAL (bad node list), BUSY (no sync number free, or too many jobs; err says
 * which chassis), NOMEM. */
int hbd_slots_alloc(hbd_slots_t *S, const hb_topo_t *t, const uint32_t *nodes, uint32_t n_nodes,
                    uint64_t id, uint32_t origin, uint32_t size, uint64_t now_ns,
                    hbd_slot_t **slot_p, char *err, size_t cap);
/* A census record (a new root learns the running jobs from the nodes, hbd_relay.c): node `node`
 * holds job `jobno`'s sync numbers [base, base + n). The slot is made (with the other fields)
 * or the node added to it; job numbers are given above every one claimed. 0, INVAL, NOMEM. */
int hbd_slots_claim(hbd_slots_t *S, const hb_topo_t *t, uint32_t jobno, uint32_t base, uint32_t n,
                    uint64_t id, uint32_t origin, uint32_t size, uint32_t node, uint64_t now_ns);
/* Give job `jobno`'s slot back (no-op for an unknown one). */
void hbd_slots_free(hbd_slots_t *S, const hb_topo_t *t, uint32_t jobno);
hbd_slot_t *hbd_slots_find(const hbd_slots_t *S, uint32_t jobno);

#endif
