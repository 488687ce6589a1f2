/* hbd_route.h: routing on the chassis data tree (port -> Center -> parent chassis). */
#ifndef HBD_ROUTE_H
#define HBD_ROUTE_H

#include <stdint.h>

#include "hbd.h"

/* Next hop from this node toward node t on the chassis data tree: JOB and DMODEX frames travel
 * hop by hop on links the daemons keep anyway. */
uint32_t hbd_route_next_hop(const hbd_t *d, uint32_t t);

#endif
