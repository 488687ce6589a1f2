/* hier_int.h: internals of hier/: the per-node step programs the protocols compile to. */
#ifndef HB_HIER_INT_H
#define HB_HIER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "hier.h"

/*
 * A protocol is compiled, at hb_hier_create, into a short straight-line program for this
 * node (its chassis' place in the tree, Center or port, children or not). Every collective
 * runs the same program with its own program counter; steps that do not apply to the node
 * (sending down without children, ...) are simply not in its program.
 */
typedef enum hb_hier_op_kind {
    HB_HIER_OP_WAIT_ARRIVE, /* the local ARRIVE */
    HB_HIER_OP_WAIT_UP,     /* message op.msg from the parent node */
    HB_HIER_OP_WAIT_DOWN,   /* message op.msg (DONE) from every child chassis' Center */
    HB_HIER_OP_HWB,         /* chassis barrier number op.phase: arrive, wait for HWB_DONE */
    HB_HIER_OP_SEND_UP,     /* send op.msg to the parent node */
    HB_HIER_OP_SEND_DOWN,   /* send op.msg to every child chassis' Center */
    HB_HIER_OP_COMPLETE     /* the barrier is complete on this node */
} hb_hier_op_kind_t;

typedef struct hb_hier_op {
    uint8_t kind;     /* hb_hier_op_kind_t */
    uint8_t msg;      /* hb_hier_msg_t for WAIT_UP, WAIT_DOWN, SEND_UP, SEND_DOWN */
    uint8_t phase;    /* HWB: 1..3 */
    const char *step; /* the paper's step (or the tree protocol's), e.g. "scmd I6" */
} hb_hier_op_t;

#define HB_HIER_MAX_OPS 16

/* Where a node sits, as the program builders need it. */
typedef struct hb_hier_shape {
    int chassis_root;     /* its chassis is the root chassis */
    int chassis_children; /* some node of its chassis has a child chassis */
    int up;               /* it links up (a non-root chassis' Center) */
    int down;             /* it links down (has child chassis) */
    int center;           /* port 0 */
} hb_hier_shape_t;

typedef struct hb_hier_prog {
    hb_hier_op_t ops[HB_HIER_MAX_OPS];
    size_t n;
    const char *role; /* "scmd root Center", ... */
} hb_hier_prog_t;

/* Builders, one per protocol file; 0 or HB_ERR_INTERNAL (program too long). */
int hb_hier_scmd_build(const hb_hier_shape_t *s, hb_hier_prog_t *prog);
int hb_hier_tree_build(const hb_hier_shape_t *s, hb_hier_prog_t *prog);

/* Shared helper of the builders: append one op (silently refuses past HB_HIER_MAX_OPS,
 * which the builder detects through prog->n). */
void hb_hier_prog_add(hb_hier_prog_t *prog, hb_hier_op_kind_t kind, hb_hier_msg_t msg,
                      unsigned phase, const char *step);

#endif
