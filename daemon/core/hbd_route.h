/* hbd_route.h: routing on the chassis data tree (port -> Center -> parent chassis). */
#ifndef HBD_ROUTE_H
#define HBD_ROUTE_H

#include <stdint.h>

#include "hbd.h"

/* Next hop from this node toward node t on the chassis data tree: JOB and DMODEX frames travel
 * hop by hop on links the daemons keep anyway. Where the tree path crosses a lost node they go
 * through the cluster's root instead: a node cut off from the root sends to it directly, the
 * root directly to a node cut off from it (both ends link on each loss: hbd_net). */
uint32_t hbd_route_next_hop(const hbd_t *d, uint32_t t);
/* The cluster's root: the Center of the root chassis. */
uint32_t hbd_route_root(const hbd_t *d);
/* Does the tree path between live nodes a and b cross a lost node? */
int hbd_route_path_lost(const hbd_t *d, uint32_t a, uint32_t b);

#endif
