/* test_topo.c: CUnit tests of hb_topo_build: the paper's cluster, k-ary trees, sites, bad specs. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "test_cfg.h"
#include "topo.h"

#define MAXN 256

/* A spec of n nodes in chassis of size csz (the last one may be smaller), nodes in order. */
typedef struct {
    uint32_t start[MAXN + 1], nodes[MAXN], site[MAXN];
    hb_topo_spec_t spec;
} spec_buf_t;

static void spec_uniform(spec_buf_t *b, uint32_t n, uint32_t csz, uint32_t fanout)
{
    uint32_t i, c = 0;

    memset(b, 0, sizeof(*b));
    for (i = 0; i < n; i++) {
        b->nodes[i] = i;
        if (i % csz == 0)
            b->start[c++] = i;
    }
    b->start[c] = n;
    b->spec.n_nodes = n;
    b->spec.n_chassis = c;
    b->spec.chassis_start = b->start;
    b->spec.chassis_nodes = b->nodes;
    b->spec.fanout = fanout;
}

/* Invariants that hold for every derived tree. */
static void check_tree(const hb_topo_t *t)
{
    uint32_t c, i, k, sum_children = 0, sum_node_children = 0, L = 0;

    CU_ASSERT_EQUAL(t->chassis[0].role, HB_TOPO_ROOT);
    CU_ASSERT_EQUAL(t->chassis[0].parent, HB_TOPO_NONE);
    CU_ASSERT_EQUAL(t->chassis[0].depth, 0);
    for (c = 0; c < t->n_chassis; c++) {
        const hb_topo_chassis_t *ch = &t->chassis[c];
        uint32_t inter = 0, p;
        sum_children += ch->n_children;
        for (i = 0; i < ch->n_nodes; i++) {
            CU_ASSERT_EQUAL(t->nodes[ch->nodes[i]].chassis, c);
            CU_ASSERT_EQUAL(t->nodes[ch->nodes[i]].port, i);
        }
        CU_ASSERT_EQUAL(hb_topo_center_of(t, c), ch->nodes[0]);
        CU_ASSERT_EQUAL(ch->site, t->nodes[ch->nodes[0]].site);
        for (k = 0; k < ch->n_children; k++) {
            const hb_topo_chassis_t *kid = &t->chassis[ch->children[k]];
            CU_ASSERT_EQUAL(kid->parent, c);
            CU_ASSERT_EQUAL(kid->depth, ch->depth + 1);
            CU_ASSERT_EQUAL(t->nodes[kid->parent_node].chassis, c);
        }
        if (c > 0) {
            CU_ASSERT(ch->parent < c);
            CU_ASSERT_EQUAL(ch->role, ch->n_children > 0 ? HB_TOPO_INTER : HB_TOPO_LOW);
            CU_ASSERT_EQUAL(t->nodes[ch->nodes[0]].parent, ch->parent_node);
        }
        for (p = c; p != 0 && p != HB_TOPO_NONE; p = t->chassis[p].parent)
            inter += t->chassis[p].role == HB_TOPO_INTER;
        if (inter > L)
            L = inter;
        if (ch->depth > 0)
            CU_ASSERT(ch->depth <= t->depth);
    }
    CU_ASSERT_EQUAL(sum_children, t->n_chassis - 1);
    CU_ASSERT_EQUAL(t->L, L);
    for (i = 0; i < t->n_nodes; i++) {
        const hb_topo_node_t *nd = &t->nodes[i];
        sum_node_children += nd->n_children;
        if (nd->port != 0)
            CU_ASSERT_EQUAL(nd->parent, HB_TOPO_NONE);
        CU_ASSERT_EQUAL(hb_topo_is_center(t, i), nd->port == 0);
        for (k = 0; k < nd->n_children; k++) {
            CU_ASSERT_EQUAL(t->chassis[nd->children[k]].parent_node, i);
            if (k > 0)
                CU_ASSERT(nd->children[k] > nd->children[k - 1]);
        }
    }
    CU_ASSERT_EQUAL(sum_node_children, t->n_chassis - 1);
}

static void test_one_chassis(void)
{
    spec_buf_t b;
    hb_topo_t *t = NULL;

    spec_uniform(&b, 3, 3, 0);
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&b.spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->n_chassis, 1);
    CU_ASSERT_EQUAL(t->n_sites, 1);
    CU_ASSERT_EQUAL(t->chassis[0].role, HB_TOPO_ROOT);
    CU_ASSERT_EQUAL(t->chassis[0].n_children, 0);
    CU_ASSERT_EQUAL(t->L, 0);
    CU_ASSERT_EQUAL(t->depth, 0);
    CU_ASSERT(hb_topo_is_center(t, 0));
    CU_ASSERT(!hb_topo_is_center(t, 1));
    CU_ASSERT_EQUAL(t->nodes[2].port, 2);
    CU_ASSERT_EQUAL(t->nodes[0].parent, HB_TOPO_NONE);
    CU_ASSERT_EQUAL(t->nodes[0].n_children, 0);
    CU_ASSERT_DOUBLE_EQUAL(hb_topo_predict_scmd(t, 2.0, 100.0), 2.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(hb_topo_predict_tree(t, 2.0, 100.0), 2.0, 1e-9);
    check_tree(t);
    hb_topo_free(t);
}

/* The paper's cluster: 10 chassis of 3 nodes, fanout 0. */
static void test_paper_cluster(void)
{
    spec_buf_t b;
    hb_topo_t *t = NULL;
    uint32_t c;

    spec_uniform(&b, 30, 3, 0);
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&b.spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->n_chassis, 10);
    CU_ASSERT_EQUAL(t->chassis[0].n_children, 3);
    /* Every node of the root chassis, Center included, has one child. */
    CU_ASSERT_EQUAL(t->chassis[1].parent_node, 0);
    CU_ASSERT_EQUAL(t->chassis[2].parent_node, 1);
    CU_ASSERT_EQUAL(t->chassis[3].parent_node, 2);
    for (c = 1; c <= 3; c++) {
        CU_ASSERT_EQUAL(t->chassis[c].role, HB_TOPO_INTER);
        CU_ASSERT_EQUAL(t->chassis[c].n_children, 2);
        CU_ASSERT_EQUAL(t->chassis[c].depth, 1);
        /* Left and Right link down, the Center links up. */
        CU_ASSERT_EQUAL(t->nodes[t->chassis[c].nodes[0]].n_children, 0);
        CU_ASSERT_EQUAL(t->nodes[t->chassis[c].nodes[1]].n_children, 1);
        CU_ASSERT_EQUAL(t->nodes[t->chassis[c].nodes[2]].n_children, 1);
    }
    CU_ASSERT_EQUAL(t->chassis[1].children[0], 4);
    CU_ASSERT_EQUAL(t->chassis[1].children[1], 5);
    CU_ASSERT_EQUAL(t->chassis[4].parent_node, 4);
    CU_ASSERT_EQUAL(t->chassis[5].parent_node, 5);
    CU_ASSERT_EQUAL(t->chassis[9].parent, 3);
    CU_ASSERT_EQUAL(t->chassis[9].parent_node, 11);
    for (c = 4; c < 10; c++) {
        CU_ASSERT_EQUAL(t->chassis[c].role, HB_TOPO_LOW);
        CU_ASSERT_EQUAL(t->chassis[c].depth, 2);
    }
    CU_ASSERT_EQUAL(t->nodes[12].parent, 4);
    CU_ASSERT_EQUAL(t->nodes[0].parent, HB_TOPO_NONE);
    CU_ASSERT_EQUAL(t->L, 1);
    CU_ASSERT_EQUAL(t->depth, 2);
    /* (4 + 3L) T_IB + 3 (L + 1) T_SR and (3 + 2L) T_IB + 2 (L + 1) T_SR with L = 1. */
    CU_ASSERT_DOUBLE_EQUAL(hb_topo_predict_scmd(t, 2.0, 100.0), 7 * 2.0 + 6 * 100.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(hb_topo_predict_tree(t, 2.0, 100.0), 5 * 2.0 + 4 * 100.0, 1e-9);
    check_tree(t);
    hb_topo_free(t);
}

/* A 4-ary tree of 40 chassis of 3 nodes: children round-robin over the down nodes. */
static void test_kary_40(void)
{
    spec_buf_t b;
    hb_topo_t *t = NULL;
    uint32_t c;

    spec_uniform(&b, 120, 3, 4);
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&b.spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->n_chassis, 40);
    CU_ASSERT_EQUAL(t->fanout, 4);
    for (c = 0; c <= 8; c++)
        CU_ASSERT_EQUAL(t->chassis[c].n_children, 4);
    CU_ASSERT_EQUAL(t->chassis[9].n_children, 3);
    for (c = 10; c < 40; c++) {
        CU_ASSERT_EQUAL(t->chassis[c].n_children, 0);
        CU_ASSERT_EQUAL(t->chassis[c].role, HB_TOPO_LOW);
    }
    /* Root: all three nodes are down nodes; child 4 wraps to the Center. */
    CU_ASSERT_EQUAL(t->chassis[1].parent_node, 0);
    CU_ASSERT_EQUAL(t->chassis[2].parent_node, 1);
    CU_ASSERT_EQUAL(t->chassis[3].parent_node, 2);
    CU_ASSERT_EQUAL(t->chassis[4].parent_node, 0);
    CU_ASSERT_EQUAL(t->nodes[0].n_children, 2);
    /* Chassis 1 (nodes 3,4,5): its ports 4 and 5 take children 5..8 alternately. */
    CU_ASSERT_EQUAL(t->chassis[5].parent_node, 4);
    CU_ASSERT_EQUAL(t->chassis[6].parent_node, 5);
    CU_ASSERT_EQUAL(t->chassis[7].parent_node, 4);
    CU_ASSERT_EQUAL(t->chassis[8].parent_node, 5);
    CU_ASSERT_EQUAL(t->nodes[4].n_children, 2);
    CU_ASSERT_EQUAL(t->nodes[4].children[0], 5);
    CU_ASSERT_EQUAL(t->nodes[4].children[1], 7);
    CU_ASSERT_EQUAL(t->nodes[3].n_children, 0);
    CU_ASSERT_EQUAL(t->chassis[39].parent, 9);
    CU_ASSERT_EQUAL(t->chassis[39].depth, 3);
    CU_ASSERT_EQUAL(t->chassis[20].depth, 2);
    CU_ASSERT_EQUAL(t->chassis[21].depth, 3);
    CU_ASSERT_EQUAL(t->depth, 3);
    CU_ASSERT_EQUAL(t->L, 2);
    check_tree(t);
    hb_topo_free(t);
}

/* Two sites of 8 nodes, chassis of 4. */
static void test_two_sites(void)
{
    spec_buf_t b;
    hb_topo_t *t = NULL;
    uint32_t i;

    spec_uniform(&b, 16, 4, 0);
    for (i = 0; i < 16; i++)
        b.site[i] = i < 8 ? 0 : 1;
    b.spec.site_of = b.site;
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&b.spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->n_sites, 2);
    CU_ASSERT_EQUAL(t->n_chassis, 4);
    CU_ASSERT_EQUAL(t->chassis[0].site, 0);
    CU_ASSERT_EQUAL(t->chassis[1].site, 0);
    CU_ASSERT_EQUAL(t->chassis[2].site, 1);
    CU_ASSERT_EQUAL(t->chassis[3].site, 1);
    CU_ASSERT_EQUAL(t->nodes[9].site, 1);
    CU_ASSERT_EQUAL(t->chassis[0].n_children, 3);
    CU_ASSERT_EQUAL(t->chassis[3].parent_node, 2);
    CU_ASSERT_EQUAL(t->chassis[3].role, HB_TOPO_LOW);
    CU_ASSERT_EQUAL(t->L, 0);
    CU_ASSERT_EQUAL(t->depth, 1);
    check_tree(t);
    hb_topo_free(t);
}

/* Explicit chassis lists in any node order; a short last chassis; one-node chassis chain. */
static void test_explicit_and_chain(void)
{
    static const uint32_t start[] = {0, 2, 5};
    static const uint32_t nodes[] = {4, 0, 3, 1, 2};
    hb_topo_spec_t s = {
        .n_nodes = 5, .n_chassis = 2, .chassis_start = start, .chassis_nodes = nodes};
    spec_buf_t b;
    hb_topo_t *t = NULL;

    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&s, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->nodes[4].port, 0);
    CU_ASSERT_EQUAL(t->nodes[0].port, 1);
    CU_ASSERT_EQUAL(t->nodes[3].chassis, 1);
    CU_ASSERT_EQUAL(t->nodes[3].port, 0);
    CU_ASSERT_EQUAL(t->nodes[3].parent, 4);
    CU_ASSERT_EQUAL(hb_topo_center_of(t, 1), 3);
    check_tree(t);
    hb_topo_free(t);

    /* 4 chassis of 1 node: a chain, the two middle ones inter-level. */
    spec_uniform(&b, 4, 1, 0);
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&b.spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->depth, 3);
    CU_ASSERT_EQUAL(t->L, 2);
    CU_ASSERT_EQUAL(t->chassis[3].parent_node, 2);
    check_tree(t);
    hb_topo_free(t);

    /* 7 nodes in chassis of 3: the last chassis has one node. */
    spec_uniform(&b, 7, 3, 2);
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&b.spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->n_chassis, 3);
    CU_ASSERT_EQUAL(t->chassis[2].n_nodes, 1);
    CU_ASSERT_EQUAL(t->chassis[2].parent_node, 1);
    check_tree(t);
    hb_topo_free(t);
}

static void test_bad_specs(void)
{
    spec_buf_t b;
    hb_topo_t *t = NULL;
    char err[128];

    spec_uniform(&b, 6, 3, 0);
    b.nodes[4] = 1; /* node 1 twice, node 4 never */
    CU_ASSERT_EQUAL(hb_topo_build(&b.spec, &t, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "two chassis"));
    CU_ASSERT_PTR_NULL(t);

    spec_uniform(&b, 33, 33, 0);
    CU_ASSERT_EQUAL(hb_topo_build(&b.spec, &t, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "mask width"));

    spec_uniform(&b, 32, 32, 0);
    CU_ASSERT_EQUAL(hb_topo_build(&b.spec, &t, err, sizeof(err)), 0);
    hb_topo_free(t);
    t = NULL;

    spec_uniform(&b, 0, 3, 0);
    b.spec.n_chassis = 0;
    CU_ASSERT_EQUAL(hb_topo_build(&b.spec, &t, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "empty"));

    spec_uniform(&b, 6, 3, 0);
    b.nodes[5] = 6; /* out of range */
    CU_ASSERT_EQUAL(hb_topo_build(&b.spec, &t, err, sizeof(err)), HB_ERR_CONFIG);

    spec_uniform(&b, 6, 3, 0);
    b.start[1] = 0; /* empty chassis */
    CU_ASSERT_EQUAL(hb_topo_build(&b.spec, &t, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "empty"));

    spec_uniform(&b, 6, 3, 0);
    b.site[2] = 99;
    b.spec.site_of = b.site;
    CU_ASSERT_EQUAL(hb_topo_build(&b.spec, &t, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_EQUAL(hb_topo_build(NULL, &t, err, sizeof(err)), HB_ERR_INVAL);
}

static void test_role_names(void)
{
    CU_ASSERT_STRING_EQUAL(hb_topo_role_name(HB_TOPO_ROOT), "root");
    CU_ASSERT_STRING_EQUAL(hb_topo_role_name(HB_TOPO_INTER), "inter-level");
    CU_ASSERT_STRING_EQUAL(hb_topo_role_name(HB_TOPO_LOW), "low-end");
}

int hb_test_topo_register(void)
{
    CU_pSuite s = CU_add_suite("topo", NULL, NULL);

    if (s == NULL)
        return CU_get_error();
    if (CU_add_test(s, "one chassis", test_one_chassis) == NULL ||
        CU_add_test(s, "paper cluster 10x3 fanout 0", test_paper_cluster) == NULL ||
        CU_add_test(s, "4-ary tree of 40 chassis", test_kary_40) == NULL ||
        CU_add_test(s, "two sites", test_two_sites) == NULL ||
        CU_add_test(s, "explicit lists and chains", test_explicit_and_chain) == NULL ||
        CU_add_test(s, "bad specs", test_bad_specs) == NULL ||
        CU_add_test(s, "role names", test_role_names) == NULL)
        return CU_get_error();
    return 0;
}
