/* hier_tree.c: the two-wave chassis-tree barrier (tree: gather up, release down), per node. */
#include "hier_int.h"

#include "hb_status.h"

/*
 * Gather. A node knows its child subtrees are done when the DONE of every child chassis'
 * Center came in (G1); only then does it enter the chassis' gather barrier (G2), so that the
 * barrier's completion tells every node of the chassis "this chassis and everything below it
 * arrived". The Center of a non-root chassis then reports DONE up (G3). In the root chassis
 * the gather barrier's completion means everyone arrived: its nodes release their children
 * (D3) and complete, no second barrier.
 * Release. A non-root Center waits for RELEASE from above (D1); the chassis' release barrier
 * (D2), which the ports enter right after the gather barrier, passes it to the ports; every
 * node with children sends RELEASE down (D3) and completes.
 *
 *  who                  op                        label
 *  -------------------  ------------------------  -------
 *  nodes with children  WAIT_DOWN DONE            tree G1
 *  all                  HWB 1 (gather)            tree G2
 *  non-root Center      SEND_UP DONE              tree G3
 *  non-root Center      WAIT_UP RELEASE           tree D1
 *  all, non-root        HWB 2 (release)           tree D2
 *  nodes with children  SEND_DOWN RELEASE         tree D3
 *
 * Critical path: G2 + G3 per non-root chassis on the path (L + 1 of each), the root's G2,
 * D3 + D2 per non-root chassis: (3 + 2L) chassis barriers, 2(L + 1) sends. A lone chassis:
 * G2 only.
 */

static const char *tree_role(const hb_hier_shape_t *s)
{
    if (s->chassis_root && !s->chassis_children)
        return s->center ? "tree lone-chassis Center" : "tree lone-chassis port";
    if (s->chassis_root)
        return s->center ? "tree root Center" : "tree root port";
    if (s->chassis_children)
        return s->center ? "tree inter-level Center" : "tree inter-level port";
    return s->center ? "tree low-end Center" : "tree low-end port";
}

int hb_hier_tree_build(const hb_hier_shape_t *s, hb_hier_prog_t *prog)
{
    prog->n = 0;
    prog->role = tree_role(s);
    hb_hier_prog_add(prog, HB_HIER_OP_WAIT_ARRIVE, 0, 0, "tree arrive");
    if (s->down)
        hb_hier_prog_add(prog, HB_HIER_OP_WAIT_DOWN, HB_HIER_MSG_DONE, 0, "tree G1");
    hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 1, "tree G2");
    if (!s->chassis_root) {
        if (s->up) {
            hb_hier_prog_add(prog, HB_HIER_OP_SEND_UP, HB_HIER_MSG_DONE, 0, "tree G3");
            hb_hier_prog_add(prog, HB_HIER_OP_WAIT_UP, HB_HIER_MSG_RELEASE, 0, "tree D1");
        }
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 2, "tree D2");
    }
    if (s->down)
        hb_hier_prog_add(prog, HB_HIER_OP_SEND_DOWN, HB_HIER_MSG_RELEASE, 0, "tree D3");
    hb_hier_prog_add(prog, HB_HIER_OP_COMPLETE, 0, 0, "tree complete");
    return prog->n < HB_HIER_MAX_OPS ? 0 : HB_ERR_INTERNAL;
}
