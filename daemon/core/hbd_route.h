/* hbd_route.h: routing on the chassis data tree of the live nodes (port -> Center -> parent
 * chassis). */
#ifndef HBD_ROUTE_H
#define HBD_ROUTE_H

#include <stdint.h>

#include "hbd.h"

/*
 * The tree: the cluster's chassis tree while every node is up; after a loss, the tree of the
 * live nodes (hb_topo_restrict over them: a chassis whose Center is lost has its first live
 * node as a stand-in, a chassis with no live node is pruned and the chassis below it hang
 * where hb_topo_restrict puts them). Every daemon that knows the same nodes lost computes the
 * same tree (d->live, kept by hbd_route_update on every loss and rejoin).
 */
/* Next hop from this node toward node t: JOB and DMODEX frames travel hop by hop on the tree's
 * links (the transport links to a node's new neighbours when the tree changes). A node off the
 * tree (lost) is returned as its own hop. */
uint32_t hbd_route_next_hop(const hbd_t *d, uint32_t t);
/* The cluster's root: the Center of the tree's root chassis (the root daemon, which gives jobs
 * their slots: the first live node of the first chassis with one). */
uint32_t hbd_route_root(const hbd_t *d);
/* Node n's next node up the tree, HB_TOPO_NONE at the root or off the tree. */
uint32_t hbd_route_up(const hbd_t *d, uint32_t n);
/* The lost set changed: the tree again. 0, or -1 (logged; the last tree stays). */
int hbd_route_update(hbd_t *d);

#endif
