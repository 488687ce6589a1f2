/* topo.h: the derived cluster shape: chassis, Center and ports, the chassis tree, roles, sites. */
#ifndef HB_TOPO_H
#define HB_TOPO_H

#include <stdint.h>

#define HB_TOPO_NONE UINT32_MAX
#define HB_TOPO_MAX_CHASSIS_SIZE 32 /* width of the barrier participation mask */

/* Role of a chassis in the tree (doc/design.md section 1). A lone chassis is the root. */
typedef enum { HB_TOPO_ROOT = 0, HB_TOPO_INTER = 1, HB_TOPO_LOW = 2 } hb_topo_role_t;

/*
 * What the topology is derived from. Pure data; the config module fills it.
 * Chassis are listed in order; chassis 0 is the root, the tree is filled breadth-first
 * in chassis order. Within a chassis the first listed node is its Center.
 */
typedef struct hb_topo_spec {
    uint32_t n_nodes;
    uint32_t n_chassis;
    const uint32_t *chassis_start; /* [n_chassis + 1]: offsets into chassis_nodes */
    const uint32_t *chassis_nodes; /* node ids (0..n_nodes-1), each node exactly once */
    const uint32_t *site_of;       /* [n_nodes] site index of each node, or NULL: one site */
    uint32_t fanout;               /* 0: the paper's shape; k > 0: a k-ary tree of chassis */
} hb_topo_spec_t;

/* One node's place. */
typedef struct hb_topo_node {
    uint32_t chassis;    /* chassis index */
    uint32_t port;       /* index within the chassis; 0 is the Center */
    uint32_t site;       /* site index */
    uint32_t parent;     /* node above in the tree (a non-root Center's uplink), or HB_TOPO_NONE */
    uint32_t n_children; /* child chassis this node links down to */
    uint32_t *children;  /* [n_children] child chassis indices (peer: that chassis' Center) */
} hb_topo_node_t;

/* One chassis. */
typedef struct hb_topo_chassis {
    uint32_t n_nodes;
    uint32_t *nodes;        /* [n_nodes], nodes[0] is the Center */
    hb_topo_role_t role;
    uint32_t parent;        /* parent chassis, or HB_TOPO_NONE for the root */
    uint32_t parent_node;   /* node of the parent chassis this chassis' Center links to */
    uint32_t depth;         /* 0 for the root */
    uint32_t site;          /* site of its Center */
    uint32_t n_children;
    uint32_t *children;     /* [n_children] child chassis indices */
} hb_topo_chassis_t;

typedef struct hb_topo {
    uint32_t n_nodes, n_chassis, n_sites, fanout;
    hb_topo_node_t *nodes;       /* [n_nodes] */
    hb_topo_chassis_t *chassis;  /* [n_chassis] */
    uint32_t depth;              /* largest chassis depth */
    uint32_t L;                  /* inter-level chassis on the longest root-to-leaf path */
} hb_topo_t;

/*
 * Derive the topology. Validates the spec (every node in exactly one chassis, chassis sizes
 * 1..HB_TOPO_MAX_CHASSIS_SIZE, sites in range); returns 0 and *topo_p, or a negative
 * HB_ERR_* (HB_ERR_CONFIG for a bad spec, with err filled if non-NULL).
 */
int hb_topo_build(const hb_topo_spec_t *spec, hb_topo_t **topo_p, char *err, unsigned errlen);
void hb_topo_free(hb_topo_t *topo);

/* Convenience queries. */
static inline int hb_topo_is_center(const hb_topo_t *t, uint32_t node) { return t->nodes[node].port == 0; }
static inline uint32_t hb_topo_center_of(const hb_topo_t *t, uint32_t chassis) { return t->chassis[chassis].nodes[0]; }
const char *hb_topo_role_name(hb_topo_role_t role);

/* Barrier cost predictions in the unit of t_ib and t_sr: scmd (4 + 3L)·T_IB + 3(L + 1)·T_SR
 * (the paper's formula), tree (3 + 2L)·T_IB + 2(L + 1)·T_SR (see topo.c). */
double hb_topo_predict_scmd(const hb_topo_t *t, double t_ib, double t_sr);
double hb_topo_predict_tree(const hb_topo_t *t, double t_ib, double t_sr);

#endif
