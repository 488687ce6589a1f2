/* sim_topo.c: generated topologies for hibar-sim (--nodes N --chassis-size C --fanout K --sites S).
 */
#include <stdio.h>
#include <stdlib.h>

#include "hb_status.h"
#include "sim.h"

int hb_sim_topo_gen(uint32_t n_nodes, uint32_t chassis_size, uint32_t fanout, uint32_t sites,
                    hb_topo_t **topo_p, char *err, size_t errlen)
{
    uint32_t *start = NULL, *nodes = NULL, *site_of = NULL, n_chassis, c, i;
    hb_topo_spec_t spec;
    int rc;

    if (topo_p == NULL)
        return HB_ERR_INVAL;
    if (n_nodes == 0 || chassis_size == 0 || chassis_size > HB_TOPO_MAX_CHASSIS_SIZE ||
        sites == 0) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "need nodes >= 1, chassis size 1..%u, sites >= 1",
                     (unsigned)HB_TOPO_MAX_CHASSIS_SIZE);
        return HB_ERR_CONFIG;
    }
    n_chassis = (n_nodes + chassis_size - 1) / chassis_size;
    if (sites > n_chassis) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%u sites need at least %u chassis (have %u)", sites, sites,
                     n_chassis);
        return HB_ERR_CONFIG;
    }
    start = malloc(sizeof(uint32_t) * ((size_t)n_chassis + 1));
    nodes = malloc(sizeof(uint32_t) * n_nodes);
    site_of = malloc(sizeof(uint32_t) * n_nodes);
    if (start == NULL || nodes == NULL || site_of == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    for (c = 0; c < n_chassis; c++)
        start[c] = c * chassis_size;
    start[n_chassis] = n_nodes;
    for (i = 0; i < n_nodes; i++) {
        nodes[i] = i;
        site_of[i] = (uint32_t)((uint64_t)(i / chassis_size) * sites / n_chassis);
    }
    spec.n_nodes = n_nodes;
    spec.n_chassis = n_chassis;
    spec.chassis_start = start;
    spec.chassis_nodes = nodes;
    spec.site_of = sites > 1 ? site_of : NULL;
    spec.fanout = fanout;
    rc = hb_topo_build(&spec, topo_p, err, (unsigned)errlen);
out:
    free(start);
    free(nodes);
    free(site_of);
    return rc;
}
