/* hbd_route.c: routing on the chassis data tree (port -> Center -> parent chassis). */
#include "hbd_route.h"

static uint32_t up_of(const hbd_t *d, uint32_t n)
{
    const hb_topo_node_t *tn = &d->topo->nodes[n];
    if (tn->port != 0)
        return d->topo->chassis[tn->chassis].nodes[0];
    return tn->parent;
}

uint32_t hbd_route_next_hop(const hbd_t *d, uint32_t t)
{
    /* walk up from t: if this node is an ancestor, the hop is the node below it on the path */
    for (uint32_t n = t, k = 0; n != HB_TOPO_NONE && k <= d->topo->n_nodes; k++) {
        uint32_t up = up_of(d, n);
        if (up == d->self)
            return n;
        n = up;
    }
    return up_of(d, d->self); /* else up (never NONE at the root: the root is every ancestor) */
}
