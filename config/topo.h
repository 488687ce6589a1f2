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
    uint32_t port;       /* index within the chassis (its bit in the mask); 0 is the Center */
    uint32_t member;     /* 1: takes part (always in a full topology; see hb_topo_restrict) */
    uint32_t site;       /* site index */
    uint32_t parent;     /* node above in the tree (a non-root Center's uplink), or HB_TOPO_NONE */
    uint32_t n_children; /* child chassis this node links down to */
    uint32_t *children;  /* [n_children] child chassis indices (peer: that chassis' Center) */
} hb_topo_node_t;

/* One chassis. */
typedef struct hb_topo_chassis {
    uint32_t n_nodes; /* nodes taking part (0: a chassis pruned from a restricted view) */
    uint32_t *nodes;  /* [n_nodes] in port order; nodes[0] is the Center (or stand-in) */
    uint32_t mask;    /* participation mask: bit p = the node at port p takes part */
    uint32_t ports;   /* nodes of the chassis, members or not */
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
    uint32_t root;               /* the root chassis: 0, except in a restricted view */
    uint32_t n_members;          /* nodes taking part: n_nodes, except in a restricted view */
    uint32_t n_active;           /* chassis with members: n_chassis, except in a restricted view */
} hb_topo_t;

/*
 * Derive the topology. Validates the spec (every node in exactly one chassis, chassis sizes
 * 1..HB_TOPO_MAX_CHASSIS_SIZE, sites in range); returns 0 and *topo_p, or a negative
 * HB_ERR_* (HB_ERR_CONFIG for a bad spec, with err filled if non-NULL).
 */
int hb_topo_build(const hb_topo_spec_t *spec, hb_topo_t **topo_p, char *err, unsigned errlen);
void hb_topo_free(hb_topo_t *topo);

/*
 * The view of a job that runs on part of the cluster (doc/design.md, "Jobs on part of the
 * cluster"): the same nodes, chassis indices and ports (so participation masks name the
 * same ports of the same boards), but only the members take part, and the tree is pruned to
 * the chassis that hold members:
 *   - a chassis keeps its member nodes, in port order; its mask has their ports' bits; the
 *     first member is its Center (a stand-in when the real Center, port 0, is not a member);
 *     a chassis without members has n_nodes 0 and no place in the tree;
 *   - the chassis with members form the tree hb_topo_build forms, over them alone: breadth-
 *     first in chassis order, the first one the root, each taking the fanout's number of
 *     children (fanout 0: as many as its ports would take in a full topology), linked to
 *     its down members in turn (every member of the root chassis, the others' members but
 *     the Center, the Center of a chassis with one member); so a job's tree is as shallow
 *     as a whole cluster's of its size, and a view of every node is the full topology;
 *   - non-members have member 0, no parent and no children.
 * Roles, depth and L are those of the pruned tree, so the engines (hier.h) and the cost
 * formulas apply to it unchanged. member[n_nodes]: nonzero for a member. Every node that
 * computes the view of the same member set gets the same one. Errors: INVAL (NULL), CONFIG
 * (no member, with err filled), NOMEM.
 */
int hb_topo_restrict(const hb_topo_t *t, const uint8_t *member, hb_topo_t **sub_p, char *err,
                     unsigned errlen);

/* Convenience queries. */
static inline int hb_topo_is_center(const hb_topo_t *t, uint32_t node)
{
    const hb_topo_chassis_t *ch = &t->chassis[t->nodes[node].chassis];
    return t->nodes[node].member && ch->n_nodes > 0 && ch->nodes[0] == node;
}
static inline uint32_t hb_topo_center_of(const hb_topo_t *t, uint32_t chassis)
{
    return t->chassis[chassis].nodes[0];
}
const char *hb_topo_role_name(hb_topo_role_t role);

/* Barrier cost predictions in the unit of t_ib and t_sr: scmd (4 + 3L)·T_IB + 3(L + 1)·T_SR
 * (the paper's formula), tree (3 + 2L)·T_IB + 2(L + 1)·T_SR (see topo.c). */
double hb_topo_predict_scmd(const hb_topo_t *t, double t_ib, double t_sr);
double hb_topo_predict_tree(const hb_topo_t *t, double t_ib, double t_sr);

#endif
