/* hbd_route.c: routing on the chassis data tree (port -> Center -> parent chassis). */
#include "hbd_route.h"

static uint32_t up_of(const hbd_t *d, uint32_t n)
{
    const hb_topo_node_t *tn = &d->topo->nodes[n];
    if (tn->port != 0)
        return d->topo->chassis[tn->chassis].nodes[0];
    return tn->parent;
}

uint32_t hbd_route_root(const hbd_t *d)
{
    return hb_topo_center_of(d->topo, d->topo->root);
}

int hbd_route_path_lost(const hbd_t *d, uint32_t a, uint32_t b)
{
    uint32_t n = d->topo->n_nodes;
    if (!d->lost || a >= n || b >= n)
        return 0;
    /* the path: a up to the lowest common ancestor, and down from it to b */
    uint32_t lca = HB_TOPO_NONE;
    for (uint32_t u = a, k = 0; u != HB_TOPO_NONE && k <= n && lca == HB_TOPO_NONE;
         u = up_of(d, u), k++)
        for (uint32_t v = b, m = 0; v != HB_TOPO_NONE && m <= n; v = up_of(d, v), m++)
            if (v == u) {
                lca = u;
                break;
            }
    for (uint32_t u = a, k = 0; u != HB_TOPO_NONE && k <= n; u = up_of(d, u), k++) {
        if (u != a && hbd_node_lost(d, u))
            return 1;
        if (u == lca)
            break;
    }
    for (uint32_t v = b, m = 0; v != HB_TOPO_NONE && v != lca && m <= n; v = up_of(d, v), m++)
        if (v != b && hbd_node_lost(d, v))
            return 1;
    return 0;
}

/* The next hop on the tree path alone. */
static uint32_t tree_hop(const hbd_t *d, uint32_t t)
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

uint32_t hbd_route_next_hop(const hbd_t *d, uint32_t t)
{
    if (!d->lost || !hbd_route_path_lost(d, d->self, t))
        return tree_hop(d, t);
    /* around a lost node: through the root, which links straight to every node cut off from
     * it, and every such node to it (hbd_net's relink on each loss) */
    uint32_t root = hbd_route_root(d);
    if (d->self == root || t == root)
        return t;
    if (hbd_route_path_lost(d, d->self, root))
        return root;
    return tree_hop(d, root);
}
