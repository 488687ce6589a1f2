/* hbd_route.c: routing on the chassis data tree of the live nodes (port -> Center -> parent
 * chassis). */
#include "hbd_route.h"

#include <inttypes.h>
#include <stdlib.h>

#include "hb_log.h"

/* The tree routes follow: the cluster's, or after a loss the view of its live nodes. */
static const hb_topo_t *tree(const hbd_t *d)
{
    return d->live != NULL ? d->live : d->topo;
}

/* One step up the data tree: a port to its chassis's (stand-in) Center, a Center to its
 * parent. */
static uint32_t up_of(const hb_topo_t *t, uint32_t n)
{
    const hb_topo_chassis_t *ch = &t->chassis[t->nodes[n].chassis];
    if (ch->n_nodes > 0 && ch->nodes[0] != n)
        return ch->nodes[0];
    return t->nodes[n].parent;
}

uint32_t hbd_route_up(const hbd_t *d, uint32_t n)
{
    const hb_topo_t *t = tree(d);
    return n < t->n_nodes && t->nodes[n].member ? up_of(t, n) : HB_TOPO_NONE;
}

uint32_t hbd_route_root(const hbd_t *d)
{
    const hb_topo_t *t = tree(d);
    return hb_topo_center_of(t, t->root);
}

uint32_t hbd_route_next_hop(const hbd_t *d, uint32_t t)
{
    const hb_topo_t *v = tree(d);
    if (t >= v->n_nodes || !v->nodes[t].member || !v->nodes[d->self].member)
        return t; /* not on the live tree: straight there (it fails as lost) */
    /* walk up from t: if this node is an ancestor, the hop is the node below it on the path */
    for (uint32_t n = t, k = 0; n != HB_TOPO_NONE && k <= v->n_nodes; k++) {
        uint32_t up = up_of(v, n);
        if (up == d->self)
            return n;
        n = up;
    }
    return up_of(v, d->self); /* else up (never NONE at the root: the root is every ancestor) */
}

int hbd_route_update(hbd_t *d)
{
    uint32_t n = d->topo->n_nodes;
    hb_topo_t *live = NULL;
    if (d->lost && d->lost_set != NULL) {
        uint8_t *member = malloc(n);
        if (member == NULL)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            member[i] = !hbd_node_lost(d, i);
        char err[128];
        int rc = hb_topo_restrict(d->topo, member, &live, err, sizeof(err));
        free(member);
        if (rc != 0) {
            hb_log_error("the tree of the live nodes: %s", err);
            return -1;
        }
    }
    uint32_t old_root = hbd_route_root(d);
    hb_topo_free(d->live);
    d->live = live;
    if (hbd_route_root(d) != old_root)
        hb_log_warn("the cluster's root is node %" PRIu32 " now (it was node %" PRIu32 ")",
                    hbd_route_root(d), old_root);
    return 0;
}
