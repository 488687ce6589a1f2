/* hbd_hooks.c: the tables through which a lower layer reaches the layers above, and the
 * node's cores that the layers' waiting rules share. */
#include "hb_config.h" /* first: _GNU_SOURCE for sched_getaffinity */

#include "hbd_hooks.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hbd_route.h"

void hbd_hooks_frame(hbd_t *d, uint8_t type, hbd_net_rx_fn on_msg, hbd_net_seg_fn on_seg)
{
    if (type <= HBD_WIRE_TYPE_MAX) {
        d->rx[type].on_msg = on_msg;
        d->rx[type].on_seg = on_seg;
    }
}

int hbd_hooks_lost(hbd_t *d, hbd_net_lost_fn fn, int order)
{
    uint32_t i = d->n_lost_subs;
    if (i == HBD_NET_LOST_MAX)
        return HB_ERR_NOMEM;
    for (; i > 0 && d->lost_order[i - 1] > order; i--) {
        d->lost_subs[i] = d->lost_subs[i - 1];
        d->lost_order[i] = d->lost_order[i - 1];
    }
    d->lost_subs[i] = fn;
    d->lost_order[i] = order;
    d->n_lost_subs++;
    return 0;
}

int hbd_hooks_lost_run(hbd_t *d, uint32_t node, int status)
{
    uint32_t n = d->topo->n_nodes;
    if (d->lost_set == NULL)
        d->lost_set = calloc(n, 1); /* without memory: every loss counts as a new one */
    if (node < n && d->lost_set != NULL && d->lost_set[node])
        return 0; /* known */
    int first = !d->lost;
    if (first) {
        d->lost = 1;
        d->lost_node = node;
    }
    if (node < n && d->lost_set != NULL)
        d->lost_set[node] = 1;
    (void)hbd_route_update(d);
    for (uint32_t i = 0; i < d->n_lost_subs; i++)
        d->lost_subs[i](d, node, status, first);
    return 1;
}

int hbd_hooks_join(hbd_t *d, hbd_net_join_fn fn)
{
    if (d->n_join_subs == HBD_NET_LOST_MAX)
        return HB_ERR_NOMEM;
    d->join_subs[d->n_join_subs++] = fn;
    return 0;
}

static void lost_recount(hbd_t *d)
{
    uint32_t n = d->topo->n_nodes, first = UINT32_MAX;
    for (uint32_t i = 0; d->lost_set != NULL && i < n && first == UINT32_MAX; i++)
        if (d->lost_set[i])
            first = i;
    d->lost = first != UINT32_MAX;
    d->lost_node = first;
}

int hbd_hooks_join_run(hbd_t *d, uint32_t node, uint64_t inc)
{
    uint32_t n = d->topo->n_nodes;
    if (node >= n || d->node_inc == NULL)
        return 0;
    int was_lost = d->lost_set != NULL && d->lost_set[node];
    if (inc <= d->node_inc[node])
        return 0; /* known; or that incarnation was lost after it came (a loss is final) */
    d->node_inc[node] = inc;
    if (was_lost) {
        d->lost_set[node] = 0;
        lost_recount(d);
        (void)hbd_route_update(d);
    }
    for (uint32_t i = 0; i < d->n_join_subs; i++)
        d->join_subs[i](d, node, inc);
    return 1;
}

void hbd_hooks_lost_forget(hbd_t *d)
{
    if (d->lost_set != NULL)
        memset(d->lost_set, 0, d->topo->n_nodes);
    lost_recount(d);
    (void)hbd_route_update(d);
}

int hbd_hooks_cron(hbd_t *d, hbd_cron_fn fn)
{
    if (d->n_cron == HBD_CRON_MAX)
        return HB_ERR_NOMEM;
    d->cron_fns[d->n_cron++] = fn;
    return 0;
}

int hbd_hooks_room(hbd_t *d, hbd_room_fn fn)
{
    if (d->n_room == HBD_ROOM_MAX)
        return HB_ERR_NOMEM;
    d->room_fns[d->n_room++] = fn;
    return 0;
}

void hbd_hooks_room_run(hbd_t *d)
{
    for (uint32_t i = 0; i < d->n_room; i++)
        d->room_fns[i](d);
}

uint32_t hbd_node_cores(const hbd_t *d)
{
    cpu_set_t set;
    if (d->cfg->cpu_count > 0)
        return d->cfg->cpu_count;
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? (uint32_t)CPU_COUNT(&set) : 1;
}
