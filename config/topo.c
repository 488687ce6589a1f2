/* topo.c: derive the chassis tree (Center/ports, roles, parents, children, depth, L) from a spec.
 */
#include "hb_config.h"

#include "topo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"

/*
 * The public hb_topo_t plus the one pool every array of it points into, so that the whole
 * topology is two allocations and hb_topo_free cannot leak a part of it.
 */
typedef struct hb_topo_impl {
    hb_topo_t pub;
    uint32_t *pool;
} hb_topo_impl_t;

static void topo_err(char *err, unsigned errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void topo_err(char *err, unsigned errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Check the spec before anything is allocated from it; 0 or HB_ERR_CONFIG/INVAL. */
static int topo_spec_check(const hb_topo_spec_t *spec, char *err, unsigned errlen)
{
    uint32_t c, i;
    uint8_t *seen;

    if (spec->n_nodes == 0) {
        topo_err(err, errlen, "empty node list");
        return HB_ERR_CONFIG;
    }
    if (spec->n_chassis == 0 || spec->n_chassis > spec->n_nodes) {
        topo_err(err, errlen, "%u chassis for %u nodes", spec->n_chassis, spec->n_nodes);
        return HB_ERR_CONFIG;
    }
    if (spec->chassis_start == NULL || spec->chassis_nodes == NULL) {
        topo_err(err, errlen, "chassis lists missing");
        return HB_ERR_INVAL;
    }
    if (spec->chassis_start[0] != 0 || spec->chassis_start[spec->n_chassis] != spec->n_nodes) {
        topo_err(err, errlen, "chassis lists cover %u of %u nodes",
                 spec->chassis_start[spec->n_chassis] - spec->chassis_start[0], spec->n_nodes);
        return HB_ERR_CONFIG;
    }
    for (c = 0; c < spec->n_chassis; c++) {
        uint32_t a = spec->chassis_start[c], b = spec->chassis_start[c + 1];
        if (b <= a) {
            topo_err(err, errlen, "chassis %u is empty", c);
            return HB_ERR_CONFIG;
        }
        if (b - a > HB_TOPO_MAX_CHASSIS_SIZE) {
            topo_err(err, errlen, "chassis %u has %u nodes, more than the barrier mask width %u", c,
                     b - a, HB_TOPO_MAX_CHASSIS_SIZE);
            return HB_ERR_CONFIG;
        }
    }
    seen = calloc(spec->n_nodes, 1);
    if (seen == NULL)
        return HB_ERR_NOMEM;
    for (i = 0; i < spec->n_nodes; i++) {
        uint32_t n = spec->chassis_nodes[i];
        if (n >= spec->n_nodes) {
            topo_err(err, errlen, "node id %u out of range (%u nodes)", n, spec->n_nodes);
            free(seen);
            return HB_ERR_CONFIG;
        }
        if (seen[n]) {
            topo_err(err, errlen, "node %u is in two chassis", n);
            free(seen);
            return HB_ERR_CONFIG;
        }
        seen[n] = 1;
    }
    free(seen);
    if (spec->site_of != NULL) {
        for (i = 0; i < spec->n_nodes; i++) {
            if (spec->site_of[i] >= spec->n_nodes) {
                topo_err(err, errlen, "node %u: site index %u out of range", i, spec->site_of[i]);
                return HB_ERR_CONFIG;
            }
        }
    }
    return 0;
}

/* Roles, depths and L of a tree whose parents precede their children in index order. */
static void topo_levels(hb_topo_t *t, uint32_t *cnt_inter)
{
    t->L = 0;
    t->depth = 0;
    for (uint32_t c = 0; c < t->n_chassis; c++) {
        hb_topo_chassis_t *ch = &t->chassis[c];
        if (ch->n_nodes == 0)
            continue;
        if (c == t->root) {
            ch->role = HB_TOPO_ROOT;
            ch->depth = 0;
            cnt_inter[c] = 0;
        } else {
            ch->role = ch->n_children > 0 ? HB_TOPO_INTER : HB_TOPO_LOW;
            ch->depth = t->chassis[ch->parent].depth + 1;
            cnt_inter[c] = cnt_inter[ch->parent] + (ch->role == HB_TOPO_INTER);
        }
        if (cnt_inter[c] > t->L)
            t->L = cnt_inter[c];
        if (ch->depth > t->depth)
            t->depth = ch->depth;
    }
}

/*
 * The tree over the chassis that have members (all of them in a full topology), breadth-first
 * in chassis order: the first is the root; each takes `fanout` children (fanout 0: the
 * paper's shape, one child per down node of a full chassis) and links them to its down nodes
 * in turn: every node of the root chassis, the ports of the others, the Center of a chassis
 * with one node (so that a tree of one-node chassis still reaches every chassis). Since
 * children are handed out in order while chassis are visited in order, every chassis'
 * children are contiguous and a parent precedes its children in index order. Scratch:
 * order and cnt[n_chassis], fill[n_nodes] (zeroed).
 */
static void topo_tree(hb_topo_t *t, uint32_t *chassis_pool, uint32_t *node_child_pool,
                      uint32_t *order, uint32_t *cnt, uint32_t *fill)
{
    uint32_t c, a, i, n = 0, next = 1, off = 0;

    for (c = 0; c < t->n_chassis; c++)
        if (t->chassis[c].n_nodes > 0)
            order[n++] = c;
    t->root = order[0];
    t->n_active = n;
    for (a = 0; a < n && next < n; a++) {
        hb_topo_chassis_t *ch = &t->chassis[order[a]];
        uint32_t first = (a == 0 || ch->n_nodes == 1) ? 0 : 1;
        uint32_t n_down = ch->n_nodes - first;
        uint32_t want = t->fanout != 0               ? t->fanout
                        : (a == 0 || ch->ports == 1) ? ch->ports
                                                     : ch->ports - 1;
        uint32_t j;

        ch->children = chassis_pool + next;
        for (j = 0; j < want && next < n; j++, next++) {
            hb_topo_chassis_t *kid = &t->chassis[order[next]];
            kid->parent = order[a];
            kid->parent_node = ch->nodes[first + j % n_down];
            ch->children[ch->n_children++] = order[next];
            t->nodes[kid->parent_node].n_children++;
        }
    }
    /* Per node children lists, in child index order. */
    for (i = 0; i < t->n_nodes; i++) {
        t->nodes[i].children = node_child_pool + off;
        off += t->nodes[i].n_children;
    }
    for (a = 1; a < n; a++) {
        uint32_t pn = t->chassis[order[a]].parent_node;
        t->nodes[pn].children[fill[pn]++] = order[a];
        t->nodes[t->chassis[order[a]].nodes[0]].parent = pn;
    }
    topo_levels(t, cnt);
}

int hb_topo_build(const hb_topo_spec_t *spec, hb_topo_t **topo_p, char *err, unsigned errlen)
{
    hb_topo_impl_t *impl;
    hb_topo_t *t;
    uint32_t *pool, *chassis_pool, *node_child_pool, *cnt_inter, *fill, *order;
    uint32_t c, i;
    int rc;

    if (spec == NULL || topo_p == NULL)
        return HB_ERR_INVAL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    rc = topo_spec_check(spec, err, errlen);
    if (rc != 0)
        return rc;

    impl = calloc(1, sizeof(*impl));
    if (impl == NULL)
        return HB_ERR_NOMEM;
    t = &impl->pub;
    t->n_nodes = spec->n_nodes;
    t->n_chassis = spec->n_chassis;
    t->fanout = spec->fanout;
    t->nodes = calloc(spec->n_nodes, sizeof(*t->nodes));
    t->chassis = calloc(spec->n_chassis, sizeof(*t->chassis));
    /* pool: chassis node lists [n_nodes], chassis children [n_chassis], node children
     * [n_chassis], scratch: inter-level count per chassis [n_chassis], fill [n_nodes],
     * order [n_chassis]. */
    pool = calloc((size_t)2 * spec->n_nodes + (size_t)4 * spec->n_chassis, sizeof(uint32_t));
    impl->pool = pool;
    if (t->nodes == NULL || t->chassis == NULL || pool == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    chassis_pool = pool + spec->n_nodes;
    node_child_pool = chassis_pool + spec->n_chassis;
    cnt_inter = node_child_pool + spec->n_chassis;
    fill = cnt_inter + spec->n_chassis;
    order = fill + spec->n_nodes;

    /* Nodes, Centers, ports, sites. */
    memcpy(pool, spec->chassis_nodes, spec->n_nodes * sizeof(uint32_t));
    t->n_sites = 1;
    for (i = 0; i < spec->n_nodes; i++) {
        t->nodes[i].site = spec->site_of != NULL ? spec->site_of[i] : 0;
        t->nodes[i].parent = HB_TOPO_NONE;
        t->nodes[i].member = 1;
        if (t->nodes[i].site + 1 > t->n_sites)
            t->n_sites = t->nodes[i].site + 1;
    }
    for (c = 0; c < spec->n_chassis; c++) {
        hb_topo_chassis_t *ch = &t->chassis[c];
        ch->n_nodes = spec->chassis_start[c + 1] - spec->chassis_start[c];
        ch->nodes = pool + spec->chassis_start[c];
        ch->parent = HB_TOPO_NONE;
        ch->parent_node = HB_TOPO_NONE;
        ch->site = t->nodes[ch->nodes[0]].site;
        ch->mask = ch->n_nodes == 32 ? UINT32_MAX : (1u << ch->n_nodes) - 1u;
        ch->ports = ch->n_nodes;
        for (i = 0; i < ch->n_nodes; i++) {
            t->nodes[ch->nodes[i]].chassis = c;
            t->nodes[ch->nodes[i]].port = i;
        }
    }
    t->n_members = spec->n_nodes;
    topo_tree(t, chassis_pool, node_child_pool, order, cnt_inter, fill);
    *topo_p = t;
    return 0;

err_free:
    free(pool);
    free(t->chassis);
    free(t->nodes);
    free(impl);
    return rc;
}

int hb_topo_restrict(const hb_topo_t *t, const uint8_t *member, hb_topo_t **sub_p, char *err,
                     unsigned errlen)
{
    hb_topo_impl_t *impl;
    hb_topo_t *s;
    uint32_t *pool, *chassis_pool, *node_child_pool, *scratch, *fill, *order;
    uint32_t c, i, off;
    int rc;

    if (t == NULL || member == NULL || sub_p == NULL)
        return HB_ERR_INVAL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    for (i = 0; i < t->n_nodes; i++)
        if (member[i] && !t->nodes[i].member) {
            topo_err(err, errlen, "node %u is not in the view being restricted", i);
            return HB_ERR_CONFIG;
        }
    impl = calloc(1, sizeof(*impl));
    if (impl == NULL)
        return HB_ERR_NOMEM;
    s = &impl->pub;
    *s = *t;
    s->n_members = 0;
    s->nodes = calloc(t->n_nodes, sizeof(*s->nodes));
    s->chassis = calloc(t->n_chassis, sizeof(*s->chassis));
    /* pool: as hb_topo_build's */
    pool = calloc((size_t)2 * t->n_nodes + (size_t)4 * t->n_chassis, sizeof(uint32_t));
    impl->pool = pool;
    if (s->nodes == NULL || s->chassis == NULL || pool == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    chassis_pool = pool + t->n_nodes;
    node_child_pool = chassis_pool + t->n_chassis;
    scratch = node_child_pool + t->n_chassis;
    fill = scratch + t->n_chassis;
    order = fill + t->n_nodes;

    /* Members, masks, (stand-in) Centers. */
    for (i = 0; i < t->n_nodes; i++) {
        s->nodes[i] = t->nodes[i];
        s->nodes[i].member = member[i] != 0;
        s->nodes[i].parent = HB_TOPO_NONE;
        s->nodes[i].n_children = 0;
        s->n_members += s->nodes[i].member;
    }
    if (s->n_members == 0) {
        topo_err(err, errlen, "no member node");
        rc = HB_ERR_CONFIG;
        goto err_free;
    }
    off = 0;
    for (c = 0; c < t->n_chassis; c++) {
        const hb_topo_chassis_t *tc = &t->chassis[c];
        hb_topo_chassis_t *ch = &s->chassis[c];
        ch->nodes = pool + off;
        off += tc->n_nodes;
        ch->site = tc->site;
        ch->ports = tc->ports;
        ch->parent = HB_TOPO_NONE;
        ch->parent_node = HB_TOPO_NONE;
        for (i = 0; i < tc->n_nodes; i++)
            if (member[tc->nodes[i]]) {
                ch->nodes[ch->n_nodes++] = tc->nodes[i];
                ch->mask |= 1u << t->nodes[tc->nodes[i]].port;
            }
    }

    topo_tree(s, chassis_pool, node_child_pool, order, scratch, fill);
    *sub_p = s;
    return 0;

err_free:
    free(pool);
    free(s->chassis);
    free(s->nodes);
    free(impl);
    return rc;
}

void hb_topo_free(hb_topo_t *topo)
{
    hb_topo_impl_t *impl = (hb_topo_impl_t *)topo;

    if (topo == NULL)
        return;
    free(impl->pool);
    free(topo->chassis);
    free(topo->nodes);
    free(impl);
}

const char *hb_topo_role_name(hb_topo_role_t role)
{
    switch (role) {
    case HB_TOPO_ROOT:
        return "root";
    case HB_TOPO_INTER:
        return "inter-level";
    case HB_TOPO_LOW:
        return "low-end";
    }
    return "unknown";
}

/* A lone chassis (at most 3 nodes in the paper; up to the mask width here) is one chassis
 * barrier. */
double hb_topo_predict_scmd(const hb_topo_t *t, double t_ib, double t_sr)
{
    double L = t->L;

    if (t->n_active <= 1)
        return t_ib;
    return (4.0 + 3.0 * L) * t_ib + 3.0 * (L + 1.0) * t_sr;
}

/*
 * The two-wave protocol's critical path: a gather barrier in every chassis on the path
 * (leaf, L inter-level, root: L + 2) and a release barrier in every non-root chassis
 * (L + 1), so (3 + 2L)·T_IB + 2(L + 1)·T_SR (doc/design.md section 1). An earlier estimate
 * wrote (2 + 2L)·T_IB "or less"; with only chassis barriers and tree links the leaf's gather
 * barrier cannot be saved
 * (hier/hier.h, hb_hier_cost, and test_hier check the count).
 */
double hb_topo_predict_tree(const hb_topo_t *t, double t_ib, double t_sr)
{
    double L = t->L;

    if (t->n_active <= 1)
        return t_ib;
    return (3.0 + 2.0 * L) * t_ib + 2.0 * (L + 1.0) * t_sr;
}
