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

/*
 * The nodes of chassis c that link down to child chassis ("down nodes"), in port order:
 * every node of the root chassis, the ports of the others; a chassis of one node uses its
 * Center so that a tree of one-node chassis still reaches every chassis.
 */
static uint32_t topo_down_first(const hb_topo_t *t, uint32_t c)
{
    return (c == 0 || t->chassis[c].n_nodes == 1) ? 0 : 1;
}

int hb_topo_build(const hb_topo_spec_t *spec, hb_topo_t **topo_p, char *err, unsigned errlen)
{
    hb_topo_impl_t *impl;
    hb_topo_t *t;
    uint32_t *pool, *chassis_pool, *node_child_pool, *cnt_inter, *fill;
    uint32_t c, i, next, off;
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
     * [n_chassis], scratch: inter-level count per chassis [n_chassis], fill [n_nodes]. */
    pool = calloc((size_t)2 * spec->n_nodes + (size_t)3 * spec->n_chassis, sizeof(uint32_t));
    impl->pool = pool;
    if (t->nodes == NULL || t->chassis == NULL || pool == NULL) {
        rc = HB_ERR_NOMEM;
        goto err_free;
    }
    chassis_pool = pool + spec->n_nodes;
    node_child_pool = chassis_pool + spec->n_chassis;
    cnt_inter = node_child_pool + spec->n_chassis;
    fill = cnt_inter + spec->n_chassis;

    /* Nodes, Centers, ports, sites. */
    memcpy(pool, spec->chassis_nodes, spec->n_nodes * sizeof(uint32_t));
    t->n_sites = 1;
    for (i = 0; i < spec->n_nodes; i++) {
        t->nodes[i].site = spec->site_of != NULL ? spec->site_of[i] : 0;
        t->nodes[i].parent = HB_TOPO_NONE;
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
        for (i = 0; i < ch->n_nodes; i++) {
            t->nodes[ch->nodes[i]].chassis = c;
            t->nodes[ch->nodes[i]].port = i;
        }
    }

    /*
     * The tree, breadth-first in chassis order. Since children are handed out in index order
     * while chassis are visited in index order, every chassis' children are a contiguous
     * index range and the parent of chassis k always precedes k.
     */
    next = 1;
    for (c = 0; c < spec->n_chassis && next < spec->n_chassis; c++) {
        hb_topo_chassis_t *ch = &t->chassis[c];
        uint32_t first = topo_down_first(t, c);
        uint32_t n_down = ch->n_nodes - first;
        uint32_t want = spec->fanout == 0 ? n_down : spec->fanout;
        uint32_t j;

        ch->children = chassis_pool + next;
        for (j = 0; j < want && next < spec->n_chassis; j++, next++) {
            hb_topo_chassis_t *kid = &t->chassis[next];
            kid->parent = c;
            kid->parent_node = ch->nodes[first + j % n_down];
            kid->depth = ch->depth + 1;
            ch->children[ch->n_children++] = next;
            t->nodes[kid->parent_node].n_children++;
        }
    }
    /* Per node children lists, in child index order. */
    off = 0;
    for (i = 0; i < spec->n_nodes; i++) {
        t->nodes[i].children = node_child_pool + off;
        off += t->nodes[i].n_children;
    }
    for (c = 1; c < spec->n_chassis; c++) {
        uint32_t pn = t->chassis[c].parent_node;
        t->nodes[pn].children[fill[pn]++] = c;
        t->nodes[t->chassis[c].nodes[0]].parent = pn;
    }

    /* Roles, depth, L. */
    for (c = 0; c < spec->n_chassis; c++) {
        hb_topo_chassis_t *ch = &t->chassis[c];
        if (c == 0)
            ch->role = HB_TOPO_ROOT;
        else
            ch->role = ch->n_children > 0 ? HB_TOPO_INTER : HB_TOPO_LOW;
        cnt_inter[c] = (c == 0 ? 0 : cnt_inter[ch->parent]) + (ch->role == HB_TOPO_INTER);
        if (cnt_inter[c] > t->L)
            t->L = cnt_inter[c];
        if (ch->depth > t->depth)
            t->depth = ch->depth;
    }
    *topo_p = t;
    return 0;

err_free:
    free(pool);
    free(t->chassis);
    free(t->nodes);
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

    if (t->n_chassis <= 1)
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

    if (t->n_chassis <= 1)
        return t_ib;
    return (3.0 + 2.0 * L) * t_ib + 2.0 * (L + 1.0) * t_sr;
}
