/* hb_prom.h: hibard's counters in Prometheus' text exposition format (version 0.0.4). */
#ifndef HB_PROM_H
#define HB_PROM_H

#include <stdio.h>

/*
 * One node's answer to the control command `stats` ("ok rx=1 tx=2 ... rss_kb=123"), or NULL
 * when the node did not answer.
 */
typedef struct hb_prom_node {
    const char *node;
    const char *stats;
} hb_prom_node_t;

/*
 * Write the metrics of n nodes of a cluster, each family once with # HELP and # TYPE:
 * hibar_up{cluster,node} (1: the daemon answered), every counter of `stats` as
 * hibar_<name>_total, the gauges hibar_in_flight, hibar_relay_jobs and hibar_rss_bytes.
 * Label values are escaped. 0, or -1 when writing failed.
 */
int hb_prom_write(FILE *f, const char *cluster, const hb_prom_node_t *nodes, size_t n);

#endif
