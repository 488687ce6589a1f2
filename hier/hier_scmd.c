/* hier_scmd.c: the paper's three-wave whole-cluster barrier (scmd), compiled per node. */
#include "hier_int.h"

#include "hb_status.h"

/*
 * The paper's procedure (doc/design.md section 1) and where each step is in the program below.
 * "down" nodes are those with child chassis (every node of the root chassis in the paper's
 * shape, the ports elsewhere; with fanout k also a one-node chassis' Center); "up" is a
 * non-root chassis' Center. A step whose node has no such link is left out of that node's
 * program (a port without a child skips R2/R3/R5, I3/I4/I9).
 *
 *  chassis      paper step                                 op (who)                  label
 *  -----------  -----------------------------------------  ------------------------  -------
 *  root         (1) chassis barrier                        HWB 1 (all)               scmd R1
 *               (2) every node notifies its child Center   SEND_DOWN NOTIFY (down)   scmd R2
 *               (3) every node waits "all below done"      WAIT_DOWN DONE (down)     scmd R3
 *               (4) chassis barrier                        HWB 2 (all)               scmd R4
 *               (5) send "released" down                   SEND_DOWN RELEASE (down)  scmd R5
 *  inter-level  (1) Center receives from above             WAIT_UP NOTIFY (up)       scmd I1
 *               (2) chassis barrier                        HWB 1 (all)               scmd I2
 *               (3) Left/Right send down                   SEND_DOWN NOTIFY (down)   scmd I3
 *               (4) Left/Right receive from below          WAIT_DOWN DONE (down)     scmd I4
 *               (5) chassis barrier                        HWB 2 (all)               scmd I5
 *               (6) Center sends up                        SEND_UP DONE (up)         scmd I6
 *               (7) Center receives from above             WAIT_UP RELEASE (up)      scmd I7
 *               (8) chassis barrier                        HWB 3 (all)               scmd I8
 *               (9) Left/Right send down                   SEND_DOWN RELEASE (down)  scmd I9
 *  low-end      (1) Center receives from above             WAIT_UP NOTIFY (up)       scmd L1
 *               (2) chassis barrier                        HWB 1 (all)               scmd L2
 *               (3) Center sends up                        SEND_UP DONE (up)         scmd L3
 *               (4) Center receives from above             WAIT_UP RELEASE (up)      scmd L4
 *               (5) chassis barrier                        HWB 2 (all)               scmd L5
 *  lone         the chassis barrier alone (T_EB = T_IB)    HWB 1 (all)               scmd X1
 *
 * Every program starts with WAIT_ARRIVE (a node enters its first chassis barrier only once
 * its own ranks arrived) and ends with COMPLETE, right after its chassis' last barrier (and
 * the sends down that follow it). Critical path: R1, then per level down I2 (+ send) and L2,
 * up L3, per level I5 + I6, R4, then R5, per level I8 + I9, L5: (4 + 3L) chassis barriers
 * and 3(L + 1) sends, the paper's T_EB.
 */

static const char *scmd_role(const hb_hier_shape_t *s)
{
    if (s->chassis_root && !s->chassis_children)
        return s->center ? "scmd lone-chassis Center" : "scmd lone-chassis port";
    if (s->chassis_root)
        return s->center ? "scmd root Center" : "scmd root port";
    if (s->chassis_children)
        return s->center ? "scmd inter-level Center" : "scmd inter-level port";
    return s->center ? "scmd low-end Center" : "scmd low-end port";
}

int hb_hier_scmd_build(const hb_hier_shape_t *s, hb_hier_prog_t *prog)
{
    prog->n = 0;
    prog->role = scmd_role(s);
    hb_hier_prog_add(prog, HB_HIER_OP_WAIT_ARRIVE, 0, 0, "scmd arrive");
    if (s->chassis_root && !s->chassis_children) {
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 1, "scmd X1");
    } else if (s->chassis_root) {
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 1, "scmd R1");
        if (s->down) {
            hb_hier_prog_add(prog, HB_HIER_OP_SEND_DOWN, HB_HIER_MSG_NOTIFY, 0, "scmd R2");
            hb_hier_prog_add(prog, HB_HIER_OP_WAIT_DOWN, HB_HIER_MSG_DONE, 0, "scmd R3");
        }
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 2, "scmd R4");
        if (s->down)
            hb_hier_prog_add(prog, HB_HIER_OP_SEND_DOWN, HB_HIER_MSG_RELEASE, 0, "scmd R5");
    } else if (s->chassis_children) {
        if (s->up)
            hb_hier_prog_add(prog, HB_HIER_OP_WAIT_UP, HB_HIER_MSG_NOTIFY, 0, "scmd I1");
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 1, "scmd I2");
        if (s->down) {
            hb_hier_prog_add(prog, HB_HIER_OP_SEND_DOWN, HB_HIER_MSG_NOTIFY, 0, "scmd I3");
            hb_hier_prog_add(prog, HB_HIER_OP_WAIT_DOWN, HB_HIER_MSG_DONE, 0, "scmd I4");
        }
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 2, "scmd I5");
        if (s->up) {
            hb_hier_prog_add(prog, HB_HIER_OP_SEND_UP, HB_HIER_MSG_DONE, 0, "scmd I6");
            hb_hier_prog_add(prog, HB_HIER_OP_WAIT_UP, HB_HIER_MSG_RELEASE, 0, "scmd I7");
        }
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 3, "scmd I8");
        if (s->down)
            hb_hier_prog_add(prog, HB_HIER_OP_SEND_DOWN, HB_HIER_MSG_RELEASE, 0, "scmd I9");
    } else {
        if (s->up)
            hb_hier_prog_add(prog, HB_HIER_OP_WAIT_UP, HB_HIER_MSG_NOTIFY, 0, "scmd L1");
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 1, "scmd L2");
        if (s->up) {
            hb_hier_prog_add(prog, HB_HIER_OP_SEND_UP, HB_HIER_MSG_DONE, 0, "scmd L3");
            hb_hier_prog_add(prog, HB_HIER_OP_WAIT_UP, HB_HIER_MSG_RELEASE, 0, "scmd L4");
        }
        hb_hier_prog_add(prog, HB_HIER_OP_HWB, 0, 2, "scmd L5");
    }
    hb_hier_prog_add(prog, HB_HIER_OP_COMPLETE, 0, 0, "scmd complete");
    return prog->n < HB_HIER_MAX_OPS ? 0 : HB_ERR_INTERNAL;
}
