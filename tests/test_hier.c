/* test_hier.c: CUnit tests of hier/: scmd and tree driven in memory over many topologies. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hier.h"
#include "hier_local.h"
#include "topo.h"
#include "hb_test.h"

/* ---- topologies ---------------------------------------------------------------------- */

/* n_chassis chassis of `size` nodes (size 0: mixed sizes 1..4), numbered in order. */
static hb_topo_t *mk_topo(uint32_t n_chassis, uint32_t size, uint32_t fanout)
{
    uint32_t *start = calloc(n_chassis + 1, sizeof(uint32_t));
    uint32_t *nodes, c, i, n = 0;
    hb_topo_spec_t spec;
    hb_topo_t *t = NULL;
    char err[256];

    for (c = 0; c < n_chassis; c++) {
        start[c] = n;
        n += size ? size : 1 + (c * 7 + 2) % 4;
    }
    start[n_chassis] = n;
    nodes = calloc(n, sizeof(uint32_t));
    for (i = 0; i < n; i++)
        nodes[i] = i;
    memset(&spec, 0, sizeof(spec));
    spec.n_nodes = n;
    spec.n_chassis = n_chassis;
    spec.chassis_start = start;
    spec.chassis_nodes = nodes;
    spec.fanout = fanout;
    if (hb_topo_build(&spec, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "topo: %s\n", err);
        t = NULL;
    }
    free(start);
    free(nodes);
    return t;
}

/* The formulas, computed here independently of hier: (IB, SR) terms. */
static void formula(const hb_topo_t *t, hb_hier_proto_t p, uint32_t *ib, uint32_t *sr)
{
    if (t->n_active == 1) {
        *ib = 1;
        *sr = 0;
    } else if (p == HB_HIER_SCMD) {
        *ib = 4 + 3 * t->L;
        *sr = 3 * (t->L + 1);
    } else {
        *ib = 3 + 2 * t->L;
        *sr = 2 * (t->L + 1);
    }
}

/* ---- a seeded driver of arrivals and deliveries -------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/*
 * Every node arrives at collectives first..first+n-1 in order, nodes interleaved at random
 * with deliveries in `order` (pct: chance in percent of an arrival rather than a delivery
 * at each step). A node whose ARRIVE is BUSY (window full) retries later. Returns 0 when all
 * arrived and nothing is pending, -1 if stuck.
 */
static int drive(hb_hier_local_t *l, const hb_topo_t *t, uint64_t first, uint64_t n,
                 hb_hier_local_order_t order, unsigned pct)
{
    uint64_t *next = calloc(t->n_nodes, sizeof(uint64_t));
    uint32_t i, left = t->n_members;
    int rc = 0;

    for (i = 0; i < t->n_nodes; i++)
        next[i] = t->nodes[i].member ? first : first + n; /* non-members: nothing to do */
    if (n == 0)
        left = 0;
    for (;;) {
        int arrived = 0;
        if (left > 0 && (hb_hier_local_pending(l) == 0 || rnd() % 100 < pct)) {
            uint32_t tries, node = (uint32_t)(rnd() % t->n_nodes);
            for (tries = 0; tries < t->n_nodes && !arrived;
                 tries++, node = (node + 1) % t->n_nodes) {
                int s;
                if (next[node] == first + n)
                    continue;
                s = hb_hier_local_arrive(l, node, next[node]);
                if (s == 0) {
                    arrived = 1;
                    if (++next[node] == first + n)
                        left--;
                } else if (s != HB_ERR_BUSY) {
                    rc = -1;
                    goto out;
                }
            }
        }
        if (arrived)
            continue;
        if (hb_hier_local_pending(l) == 0) {
            rc = left == 0 ? 0 : -1;
            break;
        }
        hb_hier_local_run(l, order, 1);
    }
out:
    free(next);
    return rc;
}

/*
 * Check the trace for collectives first..first+n-1: every member COMPLETEs each exactly once,
 * none FAILs, no COMPLETE precedes any member's ARRIVE of that collective, nothing refused,
 * no chassis barrier mismatch, nothing at all happens on a non-member, and the critical path
 * equals the formula.
 */
static void check_ok(hb_hier_local_t *l, const hb_topo_t *t, hb_hier_proto_t p, uint64_t first,
                     uint64_t n)
{
    size_t nt, i;
    const hb_hier_rec_t *tr = hb_hier_local_trace(l, &nt);
    uint32_t *done = calloc((size_t)t->n_nodes * n, sizeof(uint32_t));
    uint32_t *arr = calloc(n, sizeof(uint32_t));
    hb_hier_local_stats_t st;
    uint32_t ib, sr, fib, fsr;
    double tm;
    uint64_t k;
    int bad_order = 0, fails = 0, outsiders = 0;

    hb_hier_local_stats(l, &st);
    CU_ASSERT_EQUAL(st.refused, 0);
    CU_ASSERT_EQUAL(st.hwb_mismatch, 0);
    CU_ASSERT_EQUAL(hb_hier_local_pending(l), 0);
    for (i = 0; i < nt; i++) {
        const hb_hier_rec_t *r = &tr[i];
        if (r->coll_id < first || r->coll_id >= first + n)
            continue;
        k = r->coll_id - first;
        if (!t->nodes[r->node].member || (r->kind == HB_HIER_REC_SEND && !t->nodes[r->peer].member))
            outsiders++;
        if (r->kind == HB_HIER_REC_ARRIVE)
            arr[k]++;
        else if (r->kind == HB_HIER_REC_COMPLETE) {
            done[(size_t)r->node * n + k]++;
            if (arr[k] != t->n_members)
                bad_order++;
        } else if (r->kind == HB_HIER_REC_FAIL)
            fails++;
    }
    CU_ASSERT_EQUAL(bad_order, 0);
    CU_ASSERT_EQUAL(fails, 0);
    CU_ASSERT_EQUAL(outsiders, 0);
    for (i = 0; i < (size_t)t->n_nodes * n; i++)
        if (done[i] != (uint32_t)t->nodes[i / n].member) {
            CU_FAIL("a member did not complete a barrier exactly once, or a non-member did");
            break;
        }
    formula(t, p, &fib, &fsr);
    for (k = 0; k < n; k++) {
        CU_ASSERT_EQUAL_FATAL(hb_hier_local_critical(l, first + k, &ib, &sr, &tm), 0);
        CU_ASSERT_EQUAL(ib, fib);
        CU_ASSERT_EQUAL(sr, fsr);
        /* every ARRIVE at time 0, T_IB 3, T_SR 100: the prediction exactly */
        CU_ASSERT_DOUBLE_EQUAL(tm, hb_hier_predict(t, p, 3.0, 100.0), 1e-9);
    }
    CU_ASSERT_EQUAL(hb_hier_cost(t, p, &ib, &sr), 0);
    CU_ASSERT_EQUAL(ib, fib);
    CU_ASSERT_EQUAL(sr, fsr);
    free(arr);
    free(done);
}

static hb_hier_local_t *mk_local(const hb_topo_t *t, hb_hier_proto_t p, uint32_t n_sync)
{
    hb_hier_cfg_t cfg;
    hb_hier_local_t *l = NULL;

    hb_hier_cfg_init(&cfg);
    cfg.protocol = p;
    cfg.job = 7;
    cfg.epoch = 3;
    cfg.sync_base = 2;
    if (n_sync)
        cfg.n_sync = n_sync;
    CU_ASSERT_EQUAL(hb_hier_local_create(t, &cfg, &l), 0);
    if (l != NULL)
        hb_hier_local_costs(l, 3.0, 100.0);
    return l;
}

/* ---- correctness over shapes ------------------------------------------------------------ */

static const uint32_t shapes_chassis[] = {1, 2, 4, 10, 40};
static const uint32_t shapes_fanout[] = {0, 2, 4};

static void run_shapes(uint32_t size, uint64_t n_coll)
{
    size_t a, b;
    int p, o, seed;

    for (a = 0; a < sizeof(shapes_chassis) / sizeof(shapes_chassis[0]); a++) {
        for (b = 0; b < sizeof(shapes_fanout) / sizeof(shapes_fanout[0]); b++) {
            hb_topo_t *t = mk_topo(shapes_chassis[a], size, shapes_fanout[b]);
            CU_ASSERT_PTR_NOT_NULL_FATAL(t);
            for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
                for (o = HB_HIER_LOCAL_FIFO; o <= HB_HIER_LOCAL_RANDOM; o++) {
                    for (seed = 1; seed <= (o == HB_HIER_LOCAL_RANDOM ? 3 : 1); seed++) {
                        hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
                        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
                        rng_state = 0x1234567ull * (uint64_t)seed + a * 131 + b;
                        hb_hier_local_seed(l, rng_state * 3 + 1);
                        CU_ASSERT_EQUAL(drive(l, t, 0, n_coll, (hb_hier_local_order_t)o, 30), 0);
                        check_ok(l, t, (hb_hier_proto_t)p, 0, n_coll);
                        hb_hier_local_destroy(l);
                    }
                }
            }
            hb_topo_free(t);
        }
    }
}

/* 1, 2, 4, 10 (the paper's) and 40 chassis of 3 nodes, fanout 0/2/4, one barrier. */
static void test_shapes_one(void)
{
    run_shapes(3, 1);
}

/* The same with 12 barriers, several in flight at once (window 8). */
static void test_shapes_many(void)
{
    run_shapes(3, 12);
}

/* Chassis of 1 to 4 nodes (one-node chassis link both up and down with fanout k). */
static void test_shapes_mixed(void)
{
    run_shapes(0, 5);
}

/* ---- jobs on part of the cluster: restricted views ---------------------------------- */

/* The invariants of the view v of the full topology t for the member set m. */
static void check_view(const hb_topo_t *t, const hb_topo_t *v, const uint8_t *m)
{
    uint32_t c, i, kept = 0, n_members = 0;

    for (i = 0; i < t->n_nodes; i++) {
        CU_ASSERT_EQUAL(v->nodes[i].member, m[i] != 0);
        CU_ASSERT_EQUAL(v->nodes[i].chassis, t->nodes[i].chassis);
        CU_ASSERT_EQUAL(v->nodes[i].port, t->nodes[i].port);
        n_members += m[i] != 0;
        if (!m[i]) {
            CU_ASSERT_EQUAL(v->nodes[i].n_children, 0);
            CU_ASSERT_EQUAL(v->nodes[i].parent, HB_TOPO_NONE);
            CU_ASSERT_FALSE(hb_topo_is_center(v, i));
        }
    }
    CU_ASSERT_EQUAL(v->n_members, n_members);
    for (c = 0; c < t->n_chassis; c++) {
        const hb_topo_chassis_t *ch = &v->chassis[c];
        uint32_t mask = 0, n = 0, a;
        for (i = 0; i < t->chassis[c].n_nodes; i++)
            if (m[t->chassis[c].nodes[i]]) {
                mask |= 1u << i; /* port i of a full topology */
                n++;
            }
        CU_ASSERT_EQUAL(ch->mask, mask);
        CU_ASSERT_EQUAL(ch->n_nodes, n);
        if (n == 0) {
            CU_ASSERT_EQUAL(ch->n_children, 0);
            continue;
        }
        kept++;
        for (i = 1; i < ch->n_nodes; i++)
            CU_ASSERT(v->nodes[ch->nodes[i - 1]].port < v->nodes[ch->nodes[i]].port);
        CU_ASSERT(hb_topo_is_center(v, ch->nodes[0]));
        if (c == v->root) {
            CU_ASSERT_EQUAL(ch->parent, HB_TOPO_NONE);
            CU_ASSERT_EQUAL(ch->role, HB_TOPO_ROOT);
            continue;
        }
        a = ch->parent;
        CU_ASSERT_FATAL(a < c && v->chassis[a].n_nodes > 0);
        CU_ASSERT(v->nodes[ch->parent_node].member);
        CU_ASSERT_EQUAL(v->nodes[ch->parent_node].chassis, ch->parent);
        CU_ASSERT_EQUAL(v->nodes[ch->nodes[0]].parent, ch->parent_node);
        CU_ASSERT_EQUAL(ch->role, ch->n_children > 0 ? HB_TOPO_INTER : HB_TOPO_LOW);
        CU_ASSERT_EQUAL(ch->depth, v->chassis[a].depth + 1);
    }
    for (c = 0; c < t->n_chassis; c++) /* as many children as a full chassis would take */
        CU_ASSERT(v->chassis[c].n_children <= (t->fanout ? t->fanout : t->chassis[c].n_nodes));
    CU_ASSERT_EQUAL(v->n_active, kept);
    CU_ASSERT(v->root < t->n_chassis && v->chassis[v->root].n_nodes > 0);
}

/* Member patterns: 0 random (about half), 1 every node but the Centers, 2 every chassis but
 * the root one, 3 one node, 4 every other chassis, 5 a random tenth, 6 every node. Returns
 * the number of members. */
static uint32_t subset_pattern(const hb_topo_t *t, int pat, uint8_t *m)
{
    uint32_t i, n = 0;

    for (i = 0; i < t->n_nodes; i++) {
        const hb_topo_node_t *tn = &t->nodes[i];
        switch (pat) {
        case 0:
            m[i] = rnd() % 2;
            break;
        case 1:
            m[i] = tn->port != 0;
            break;
        case 2:
            m[i] = tn->chassis != 0;
            break;
        case 3:
            m[i] = 0;
            break;
        case 4:
            m[i] = tn->chassis % 2 == 1;
            break;
        case 5:
            m[i] = rnd() % 10 == 0;
            break;
        default:
            m[i] = 1;
            break;
        }
        n += m[i];
    }
    if (pat == 3) {
        m[rnd() % t->n_nodes] = 1;
        n = 1;
    }
    return n;
}

/* Barriers of jobs on part of the cluster: every shape, six kinds of member sets, both
 * protocols, three delivery orders; the formula holds on each pruned tree. */
static void test_subsets(void)
{
    static const uint32_t sizes[] = {3, 0};
    size_t a, b, z;
    int p, o, pat;

    rng_state = 0xfeedull;
    for (z = 0; z < 2; z++)
        for (a = 0; a < sizeof(shapes_chassis) / sizeof(shapes_chassis[0]); a++)
            for (b = 0; b < sizeof(shapes_fanout) / sizeof(shapes_fanout[0]); b++) {
                hb_topo_t *t = mk_topo(shapes_chassis[a], sizes[z], shapes_fanout[b]);
                uint8_t *m;
                CU_ASSERT_PTR_NOT_NULL_FATAL(t);
                m = calloc(t->n_nodes, 1);
                for (pat = 0; pat < 7; pat++) {
                    hb_topo_t *v = NULL;
                    char err[128];
                    uint32_t c;
                    if (subset_pattern(t, pat, m) == 0)
                        continue;
                    CU_ASSERT_EQUAL_FATAL(hb_topo_restrict(t, m, &v, err, sizeof(err)), 0);
                    check_view(t, v, m);
                    CU_ASSERT(v->L <= t->L); /* never deeper than the whole cluster's */
                    for (c = 0; pat == 6 && c < t->n_chassis; c++) { /* all: the same tree */
                        CU_ASSERT_EQUAL(v->chassis[c].parent, t->chassis[c].parent);
                        CU_ASSERT_EQUAL(v->chassis[c].parent_node, t->chassis[c].parent_node);
                        CU_ASSERT_EQUAL(v->chassis[c].n_children, t->chassis[c].n_children);
                        CU_ASSERT_EQUAL(v->chassis[c].role, t->chassis[c].role);
                    }
                    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++)
                        for (o = HB_HIER_LOCAL_FIFO; o <= HB_HIER_LOCAL_RANDOM; o++) {
                            hb_hier_local_t *l = mk_local(v, (hb_hier_proto_t)p, 0);
                            CU_ASSERT_PTR_NOT_NULL_FATAL(l);
                            hb_hier_local_seed(l, rnd() | 1);
                            CU_ASSERT_EQUAL(drive(l, v, 0, 10, (hb_hier_local_order_t)o, 30), 0);
                            check_ok(l, v, (hb_hier_proto_t)p, 0, 10);
                            hb_hier_local_destroy(l);
                        }
                    hb_topo_free(v);
                }
                free(m);
                hb_topo_free(t);
            }
}

/* The paper's cluster without its Centers: stand-ins, links, masks; the cost is unchanged. */
static void test_subset_paper(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0), *v = NULL;
    uint8_t m[30];
    hb_hier_cfg_t cfg;
    hb_hier_t *h = NULL;
    uint32_t i, ib, sr;
    char err[128];

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (i = 0; i < 30; i++)
        m[i] = i % 3 != 0;
    CU_ASSERT_EQUAL_FATAL(hb_topo_restrict(t, m, &v, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(v->root, 0);
    CU_ASSERT_EQUAL(v->n_members, 20);
    CU_ASSERT_EQUAL(v->chassis[0].nodes[0], 1); /* stand-in Center: port 1 */
    CU_ASSERT_EQUAL(v->chassis[0].mask, 6);
    /* chassis 1, 2, 3 hung below nodes 0, 1, 2; 0 is not a member: the root's members in turn */
    CU_ASSERT_EQUAL(t->chassis[1].parent_node, 0);
    CU_ASSERT_EQUAL(v->chassis[1].parent_node, 1);
    CU_ASSERT_EQUAL(v->chassis[2].parent_node, 2);
    CU_ASSERT_EQUAL(v->chassis[3].parent_node, 1);
    /* chassis 1's children 4, 5 hung below its ports 4, 5; 3 is out, 4 the stand-in: 5 links
     * both */
    CU_ASSERT_EQUAL(v->chassis[4].parent_node, 5);
    CU_ASSERT_EQUAL(v->chassis[5].parent_node, 5);
    CU_ASSERT_EQUAL(v->nodes[4].parent, 1); /* chassis 1's stand-in Center links up */
    CU_ASSERT_EQUAL(v->L, t->L);
    CU_ASSERT_EQUAL(hb_hier_cost(v, HB_HIER_SCMD, &ib, &sr), 0);
    CU_ASSERT_EQUAL(ib, 7);
    CU_ASSERT_EQUAL(sr, 6);
    hb_hier_cfg_init(&cfg);
    CU_ASSERT_EQUAL(hb_hier_create(v, 0, &cfg, &h), HB_ERR_INVAL); /* not a member */
    CU_ASSERT_EQUAL(hb_hier_create(v, 1, &cfg, &h), 0);
    CU_ASSERT_STRING_EQUAL(hb_hier_role(h), "scmd root Center");
    hb_hier_destroy(h);
    /* only chassis 4 and 7 (below 1 and 2): 4 is the root, 7 below its first member */
    memset(m, 0, sizeof(m));
    m[13] = m[14] = m[22] = 1;
    hb_topo_free(v);
    CU_ASSERT_EQUAL_FATAL(hb_topo_restrict(t, m, &v, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(v->root, 4);
    CU_ASSERT_EQUAL(v->n_active, 2);
    CU_ASSERT_EQUAL(v->chassis[7].parent, 4);
    CU_ASSERT_EQUAL(v->chassis[7].parent_node, 13);
    CU_ASSERT_EQUAL(v->L, 0);
    CU_ASSERT_DOUBLE_EQUAL(hb_hier_predict(v, HB_HIER_TREE, 3.0, 100.0), 3 * 3.0 + 2 * 100.0, 1e-9);
    /* errors: no member; a member the view does not have; NULL */
    {
        hb_topo_t *w = NULL;
        memset(m, 0, sizeof(m));
        CU_ASSERT_EQUAL(hb_topo_restrict(t, m, &w, err, sizeof(err)), HB_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "no member"));
        m[0] = 1;
        CU_ASSERT_EQUAL(hb_topo_restrict(v, m, &w, err, sizeof(err)), HB_ERR_CONFIG);
        CU_ASSERT_EQUAL(hb_topo_restrict(NULL, m, &w, err, sizeof(err)), HB_ERR_INVAL);
        CU_ASSERT_PTR_NULL(w);
    }
    hb_topo_free(v);
    hb_topo_free(t);
}

/* The paper's cluster: L = 1, scmd 7 chassis barriers + 6 sends, tree 5 + 4; roles. */
static void test_paper_cluster(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    hb_hier_cfg_t cfg;
    hb_hier_t *h;
    uint32_t ib, sr;
    char buf[1024];

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->L, 1);
    CU_ASSERT_EQUAL(hb_hier_cost(t, HB_HIER_SCMD, &ib, &sr), 0);
    CU_ASSERT_EQUAL(ib, 7);
    CU_ASSERT_EQUAL(sr, 6);
    CU_ASSERT_EQUAL(hb_hier_cost(t, HB_HIER_TREE, &ib, &sr), 0);
    CU_ASSERT_EQUAL(ib, 5);
    CU_ASSERT_EQUAL(sr, 4);
    CU_ASSERT_DOUBLE_EQUAL(hb_hier_predict(t, HB_HIER_SCMD, 5.0, 100.0),
                           hb_topo_predict_scmd(t, 5.0, 100.0), 1e-9);
    CU_ASSERT(hb_hier_predict(t, HB_HIER_TREE, 5.0, 100.0) <
              0.7 * hb_hier_predict(t, HB_HIER_SCMD, 5.0, 100.0));

    hb_hier_cfg_init(&cfg);
    CU_ASSERT_EQUAL(hb_hier_create(t, 0, &cfg, &h), 0);
    CU_ASSERT_STRING_EQUAL(hb_hier_role(h), "scmd root Center");
    CU_ASSERT_EQUAL(hb_hier_describe(h, buf, sizeof(buf)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "scmd R5"));
    CU_ASSERT_EQUAL(hb_hier_describe(h, buf, 10), HB_ERR_TRUNCATED);
    hb_hier_destroy(h);
    CU_ASSERT_EQUAL(hb_hier_create(t, 3, &cfg, &h), 0); /* chassis 1's Center */
    CU_ASSERT_STRING_EQUAL(hb_hier_role(h), "scmd inter-level Center");
    CU_ASSERT_EQUAL(hb_hier_describe(h, buf, sizeof(buf)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "scmd I7"));
    CU_ASSERT_PTR_NULL(strstr(buf, "scmd I3")); /* the Center has no child */
    hb_hier_destroy(h);
    CU_ASSERT_EQUAL(hb_hier_create(t, 4, &cfg, &h), 0);
    CU_ASSERT_STRING_EQUAL(hb_hier_role(h), "scmd inter-level port");
    hb_hier_destroy(h);
    CU_ASSERT_EQUAL(hb_hier_create(t, 29, &cfg, &h), 0);
    CU_ASSERT_STRING_EQUAL(hb_hier_role(h), "scmd low-end port");
    hb_hier_destroy(h);
    cfg.protocol = HB_HIER_TREE;
    CU_ASSERT_EQUAL(hb_hier_create(t, 27, &cfg, &h), 0);
    CU_ASSERT_STRING_EQUAL(hb_hier_role(h), "tree low-end Center");
    hb_hier_destroy(h);
    hb_topo_free(t);
}

/* The steps each node of the paper's cluster takes, in order, for both protocols: the
 * paper's table (hier_scmd.c) as observed in a run with random delivery. */
static void test_paper_steps(void)
{
    static const char *const scmd[] = {
        /* root: every node has a child */
        "R1 R2 R4 R5 complete", "R1 R2 R4 R5 complete", "R1 R2 R4 R5 complete",
        /* inter-level: Center, Left, Right */
        "I2 I5 I6 I8 complete", "I2 I3 I5 I8 I9 complete", "I2 I3 I5 I8 I9 complete",
        /* low-end */
        "L2 L3 L5 complete", "L2 L5 complete", "L2 L5 complete"};
    static const char *const tree[] = {
        "G2 D3 complete",    "G2 D3 complete",    "G2 D3 complete",
        "G2 G3 D2 complete", "G2 D2 D3 complete", "G2 D2 D3 complete",
        "G2 G3 D2 complete", "G2 D2 complete",    "G2 D2 complete"};
    hb_topo_t *t = mk_topo(10, 3, 0);
    int p;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
        const hb_hier_rec_t *tr;
        size_t nt, i;
        uint32_t nd;

        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        rng_state = 31 + p;
        CU_ASSERT_EQUAL(drive(l, t, 0, 1, HB_HIER_LOCAL_RANDOM, 20), 0);
        tr = hb_hier_local_trace(l, &nt);
        for (nd = 0; nd < t->n_nodes; nd++) {
            hb_topo_role_t role = t->chassis[t->nodes[nd].chassis].role;
            uint32_t row = (role == HB_TOPO_ROOT    ? 0
                            : role == HB_TOPO_INTER ? 3
                                                    : 6) +
                           (t->nodes[nd].port == 0 ? 0 : 1);
            char seq[128] = "";
            for (i = 0; i < nt; i++) {
                if (tr[i].node != nd || tr[i].step == NULL)
                    continue;
                if (seq[0] != '\0')
                    strcat(seq, " ");
                strcat(seq, tr[i].step + 5); /* after "scmd " / "tree " */
            }
            CU_ASSERT_STRING_EQUAL(seq, p == HB_HIER_SCMD ? scmd[row] : tree[row]);
        }
        hb_hier_local_destroy(l);
    }
    hb_topo_free(t);
}

/* Chassis barriers per collective per chassis, sync numbers and masks. */
static void test_sync_numbers(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    int p;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 3);
        uint32_t per_node[30][4];
        const hb_hier_rec_t *tr;
        size_t nt, i;
        uint32_t nd;

        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        memset(per_node, 0, sizeof(per_node));
        rng_state = 99;
        CU_ASSERT_EQUAL(drive(l, t, 0, 4, HB_HIER_LOCAL_RANDOM, 50), 0);
        check_ok(l, t, (hb_hier_proto_t)p, 0, 4);
        tr = hb_hier_local_trace(l, &nt);
        for (i = 0; i < nt; i++) {
            if (tr[i].kind != HB_HIER_REC_HWB_ARRIVE)
                continue;
            CU_ASSERT_EQUAL(tr[i].sync_no, 2 + tr[i].coll_id % 3);
            if (tr[i].coll_id < 4)
                per_node[tr[i].node][tr[i].coll_id]++;
        }
        for (nd = 0; nd < 30; nd++) {
            uint32_t want;
            hb_topo_role_t role = t->chassis[t->nodes[nd].chassis].role;
            if (p == HB_HIER_SCMD)
                want = role == HB_TOPO_INTER ? 3 : 2;
            else
                want = role == HB_TOPO_ROOT ? 1 : 2;
            CU_ASSERT_EQUAL(per_node[nd][0], want);
            CU_ASSERT_EQUAL(per_node[nd][3], want);
        }
        hb_hier_local_destroy(l);
    }
    hb_topo_free(t);
}

/* ---- the last arrival holds everyone ---------------------------------------------------- */

static void test_last_holds(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    uint32_t last, nd;
    int p;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        for (last = 0; last < t->n_nodes; last++) {
            hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
            hb_hier_stats_t hs;
            uint64_t completed = 0;

            CU_ASSERT_PTR_NOT_NULL_FATAL(l);
            hb_hier_local_seed(l, last + 1);
            for (nd = 0; nd < t->n_nodes; nd++)
                if (nd != last)
                    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 0), 0);
            hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 100000);
            CU_ASSERT_EQUAL(hb_hier_local_pending(l), 0);
            for (nd = 0; nd < t->n_nodes; nd++) {
                hb_hier_stats(hb_hier_local_engine(l, nd), &hs);
                completed += hs.completed;
            }
            CU_ASSERT_EQUAL(completed, 0);
            CU_ASSERT_EQUAL(hb_hier_local_arrive(l, last, 0), 0);
            hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 100000);
            check_ok(l, t, (hb_hier_proto_t)p, 0, 1);
            hb_hier_local_destroy(l);
        }
    }
    hb_topo_free(t);
}

/* Early messages: a whole subtree (or the root chassis) arrives and runs before the rest. */
static void test_early(void)
{
    hb_topo_t *t = mk_topo(40, 3, 2);
    int p, half;
    uint32_t nd;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        for (half = 0; half < 2; half++) {
            hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
            CU_ASSERT_PTR_NOT_NULL_FATAL(l);
            /* first the deepest half of the nodes (or the shallowest), LIFO */
            for (nd = 0; nd < t->n_nodes; nd++)
                if ((nd >= t->n_nodes / 2) == (half == 0))
                    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 0), 0);
            hb_hier_local_run(l, HB_HIER_LOCAL_LIFO, 100000);
            for (nd = 0; nd < t->n_nodes; nd++)
                if ((nd >= t->n_nodes / 2) != (half == 0))
                    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 0), 0);
            hb_hier_local_run(l, HB_HIER_LOCAL_FIFO, 100000);
            check_ok(l, t, (hb_hier_proto_t)p, 0, 1);
            hb_hier_local_destroy(l);
        }
    }
    hb_topo_free(t);
}

/* hb_hier_idle: nothing in flight and nothing kept (one-node chassis, the tree protocol: a
 * subset barrier's engine in hibard). A message kept for a collective not arrived at yet, and
 * one arrived at and not finished, keep an engine busy; finished ones do not. */
static void test_idle(void)
{
    hb_topo_t *t = mk_topo(4, 1, 2);
    hb_hier_cfg_t cfg;
    hb_hier_local_t *l = NULL;
    uint32_t nd;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    hb_hier_cfg_init(&cfg);
    cfg.protocol = HB_HIER_TREE;
    cfg.first_coll = 5;
    CU_ASSERT_EQUAL_FATAL(hb_hier_local_create(t, &cfg, &l), 0);
    CU_ASSERT(!hb_hier_idle(NULL));
    for (nd = 0; nd < t->n_nodes; nd++)
        CU_ASSERT(hb_hier_idle(hb_hier_local_engine(l, nd)));
    /* every node but the root (node 0) arrives: their DONEs wait at the root, kept */
    for (nd = 1; nd < t->n_nodes; nd++)
        CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 5), 0);
    hb_hier_local_run(l, HB_HIER_LOCAL_FIFO, 100000);
    for (nd = 0; nd < t->n_nodes; nd++)
        CU_ASSERT(!hb_hier_idle(hb_hier_local_engine(l, nd)));
    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, 0, 5), 0);
    hb_hier_local_run(l, HB_HIER_LOCAL_FIFO, 100000);
    for (nd = 0; nd < t->n_nodes; nd++)
        CU_ASSERT(hb_hier_idle(hb_hier_local_engine(l, nd)));
    hb_hier_local_destroy(l);
    hb_topo_free(t);
}

/* Modeled time: one node arriving at t = 1000 holds everyone until then. */
static void test_late_time(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    const hb_hier_rec_t *tr;
    size_t nt, i;
    uint32_t nd;
    double tm;
    int p;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        for (nd = 0; nd < t->n_nodes; nd++)
            CU_ASSERT_EQUAL(hb_hier_local_arrive_at(l, nd, 0, nd == 29 ? 1000.0 : 0.0), 0);
        hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 1000000);
        tr = hb_hier_local_trace(l, &nt);
        for (i = 0; i < nt; i++)
            if (tr[i].kind == HB_HIER_REC_COMPLETE)
                CU_ASSERT(tr[i].t > 1000.0);
        for (i = 0; i < nt; i++) {
            char line[160];
            if (tr[i].kind != HB_HIER_REC_SEND || tr[i].msg != HB_HIER_MSG_RELEASE)
                continue;
            CU_ASSERT_EQUAL(hb_hier_rec_format(&tr[i], line, sizeof(line)), 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(line, " SEND RELEASE to n"));
            CU_ASSERT_PTR_NOT_NULL(strstr(line, p == HB_HIER_SCMD ? "[scmd " : "[tree D3]"));
            CU_ASSERT_EQUAL(hb_hier_rec_format(&tr[i], line, 8), HB_ERR_TRUNCATED);
            break;
        }
        CU_ASSERT_EQUAL(hb_hier_local_critical(l, 0, NULL, NULL, &tm), 0);
        CU_ASSERT(tm > 1000.0 && tm <= 1000.0 + hb_hier_predict(t, (hb_hier_proto_t)p, 3, 100));
        hb_hier_local_destroy(l);
    }
    hb_topo_free(t);
}

/* Every message duplicated (the copy overtakes the original), then every message replayed
 * after the end: all extra copies are refused, the barriers complete once. */
static void test_duplicates(void)
{
    hb_topo_t *t = mk_topo(10, 3, 2);
    int p;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
        hb_hier_local_stats_t st;
        const hb_hier_rec_t *tr;
        uint64_t dups = 0, replays = 0, refused;
        size_t nt, i;
        uint32_t nd, c;

        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        for (nd = 0; nd < t->n_nodes; nd++)
            for (c = 0; c < 3; c++)
                CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, c), 0);
        rng_state = 5 + p;
        while (hb_hier_local_pending(l) > 0) {
            size_t k = (size_t)(rnd() % hb_hier_local_pending(l));
            hb_hier_ev_t ev;
            uint32_t to;
            CU_ASSERT_EQUAL(hb_hier_local_peek(l, k, &ev, &to), 0);
            if (ev.kind == HB_HIER_EV_MSG) {
                CU_ASSERT_EQUAL(hb_hier_local_inject(l, to, &ev), 0);
                dups++;
            }
            CU_ASSERT_EQUAL(hb_hier_local_deliver(l, k),
                            ev.kind == HB_HIER_EV_MSG ? HB_ERR_PROTO : 0);
        }
        hb_hier_local_stats(l, &st);
        CU_ASSERT(dups > 50);
        CU_ASSERT_EQUAL(st.refused, dups);
        CU_ASSERT_EQUAL(st.hwb_mismatch, 0);
        /* replay every message of the run: stale now */
        tr = hb_hier_local_trace(l, &nt);
        for (i = 0; i < nt; i++) {
            hb_hier_ev_t ev;
            if (tr[i].kind != HB_HIER_REC_SEND)
                continue;
            memset(&ev, 0, sizeof(ev));
            ev.kind = HB_HIER_EV_MSG;
            ev.job = 7;
            ev.epoch = 3;
            ev.coll_id = tr[i].coll_id;
            ev.from = tr[i].node;
            ev.msg = tr[i].msg;
            CU_ASSERT_EQUAL(hb_hier_local_inject(l, tr[i].peer, &ev), HB_ERR_PROTO);
            replays++;
            tr = hb_hier_local_trace(l, &nt); /* the refusal was recorded: may have moved */
        }
        hb_hier_local_stats(l, &st);
        CU_ASSERT_EQUAL(st.inject_refused, replays);
        refused = 0;
        for (nd = 0; nd < t->n_nodes; nd++) {
            hb_hier_stats_t hs;
            hb_hier_stats(hb_hier_local_engine(l, nd), &hs);
            CU_ASSERT_EQUAL(hs.completed, 3);
            refused += hs.drop_dup + hs.drop_stale;
        }
        CU_ASSERT_EQUAL(refused, dups + replays);
        hb_hier_local_destroy(l);
    }
    hb_topo_free(t);
}

/* ---- window ------------------------------------------------------------------------------ */

static void test_window(void)
{
    hb_topo_t *t = mk_topo(4, 3, 0);
    hb_hier_local_t *l;
    uint32_t nd;
    uint64_t c;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    l = mk_local(t, HB_HIER_TREE, 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    for (nd = 0; nd < t->n_nodes; nd++) {
        for (c = 0; c < 4; c++)
            CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, c), 0);
        CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 4), HB_ERR_BUSY);
        CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 6), HB_ERR_INVAL);
    }
    hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 1000000);
    check_ok(l, t, HB_HIER_TREE, 0, 4);
    hb_hier_local_destroy(l);
    hb_topo_free(t);
}

/* ---- failures ---------------------------------------------------------------------------- */

/* Results (COMPLETE/FAIL) per node for coll; status of the last FAIL. */
static void results(hb_hier_local_t *l, uint32_t node, uint64_t coll, int *n_done, int *n_fail,
                    int *status)
{
    size_t nt, i;
    const hb_hier_rec_t *tr = hb_hier_local_trace(l, &nt);

    *n_done = *n_fail = 0;
    *status = 0;
    for (i = 0; i < nt; i++) {
        if (tr[i].node != node || tr[i].coll_id != coll)
            continue;
        if (tr[i].kind == HB_HIER_REC_COMPLETE)
            (*n_done)++;
        if (tr[i].kind == HB_HIER_REC_FAIL) {
            (*n_fail)++;
            *status = tr[i].status;
        }
    }
}

static void test_timeout(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    uint32_t nd, victim;
    int p, d, f, s;
    uint64_t c;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        for (victim = 0; victim < t->n_nodes; victim += 7) {
            hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 8);
            hb_hier_ev_t ev;

            CU_ASSERT_PTR_NOT_NULL_FATAL(l);
            for (nd = 0; nd < t->n_nodes; nd++)
                for (c = 0; c < 3; c++)
                    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, c), 0);
            memset(&ev, 0, sizeof(ev));
            ev.kind = HB_HIER_EV_TIMEOUT;
            ev.coll_id = 1;
            CU_ASSERT_EQUAL(hb_hier_local_inject(l, victim, &ev), 0);
            CU_ASSERT_EQUAL(hb_hier_local_inject(l, victim, &ev), 0); /* late: ignored */
            hb_hier_local_seed(l, victim + 5);
            hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 1000000);
            results(l, victim, 1, &d, &f, &s);
            CU_ASSERT_EQUAL(d, 0);
            CU_ASSERT_EQUAL(f, 1);
            CU_ASSERT_EQUAL(s, HB_ERR_TIMEOUT);
            /* the others time out too, unless the barrier reached them */
            for (nd = 0; nd < t->n_nodes; nd++) {
                if (nd == victim)
                    continue;
                results(l, nd, 1, &d, &f, &s);
                CU_ASSERT_EQUAL(f, 0);
                CU_ASSERT(d <= 1);
                CU_ASSERT_EQUAL(hb_hier_local_inject(l, nd, &ev), d ? HB_ERR_NOT_FOUND : 0);
                results(l, nd, 1, &d, &f, &s);
                CU_ASSERT_EQUAL(d + f, 1);
            }
            /* 0 and 2 are unaffected */
            for (nd = 0; nd < t->n_nodes; nd++) {
                for (c = 0; c < 3; c += 2) {
                    results(l, nd, c, &d, &f, &s);
                    CU_ASSERT_EQUAL(d, 1);
                    CU_ASSERT_EQUAL(f, 0);
                }
            }
            /* later collectives still work, until the window wraps to the failed one */
            for (nd = 0; nd < t->n_nodes; nd++) {
                for (c = 3; c < 9; c++)
                    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, c), 0);
                results(l, nd, 1, &d, &f, &s);
                CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 9), f ? HB_ERR_BUSY : 0);
            }
            hb_hier_local_run(l, HB_HIER_LOCAL_FIFO, 1000000);
            for (nd = 0; nd < t->n_nodes; nd++) {
                for (c = 3; c < 9; c++) {
                    results(l, nd, c, &d, &f, &s);
                    CU_ASSERT_EQUAL(d, 1);
                }
            }
            hb_hier_local_destroy(l);
        }
    }
    hb_topo_free(t);
}

static void test_peer_lost(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    uint32_t nd, victim;
    int p, d, f, s;
    uint64_t c;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        for (victim = 1; victim < t->n_nodes; victim += 5) {
            hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
            hb_hier_ev_t ev;

            CU_ASSERT_PTR_NOT_NULL_FATAL(l);
            rng_state = victim + 11;
            CU_ASSERT_EQUAL(drive(l, t, 0, 2, HB_HIER_LOCAL_RANDOM, 40), 0);
            for (nd = 0; nd < t->n_nodes; nd++)
                if (nd != victim)
                    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 2), 0);
            hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 1000000);
            hb_hier_local_kill(l, victim);
            memset(&ev, 0, sizeof(ev));
            ev.kind = HB_HIER_EV_PEER_LOST;
            ev.from = victim;
            for (nd = 0; nd < t->n_nodes; nd++)
                if (nd != victim)
                    CU_ASSERT_EQUAL(hb_hier_local_inject(l, nd, &ev), 0);
            hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 1000000);
            for (nd = 0; nd < t->n_nodes; nd++) {
                if (nd == victim)
                    continue;
                for (c = 0; c < 2; c++) {
                    results(l, nd, c, &d, &f, &s);
                    CU_ASSERT_EQUAL(d, 1);
                    CU_ASSERT_EQUAL(f, 0);
                }
                results(l, nd, 2, &d, &f, &s);
                CU_ASSERT_EQUAL(d, 0);
                CU_ASSERT_EQUAL(f, 1);
                CU_ASSERT_EQUAL(s, HB_ERR_PEER_LOST);
                /* new collectives fail at once, and never run out of window */
                for (c = 3; c < 20; c++) {
                    CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, c), 0);
                    results(l, nd, c, &d, &f, &s);
                    CU_ASSERT_EQUAL(f, 1);
                    CU_ASSERT_EQUAL(s, HB_ERR_PEER_LOST);
                }
            }
            hb_hier_local_destroy(l);
        }
    }
    hb_topo_free(t);
}

/* A failed chassis barrier (hwbarrier error) fails that collective only. */
static void test_hwb_error(void)
{
    hb_topo_t *t = mk_topo(2, 3, 0);
    hb_hier_cfg_t cfg;
    hb_hier_t *h;
    hb_hier_act_t acts[32];
    hb_hier_ev_t ev;
    size_t n;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    hb_hier_cfg_init(&cfg);
    CU_ASSERT_EQUAL(hb_hier_create(t, 1, &cfg, &h), 0); /* root port, no child */
    memset(&ev, 0, sizeof(ev));
    ev.kind = HB_HIER_EV_ARRIVE;
    ev.epoch = 1;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 32, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(acts[0].kind, HB_HIER_ACT_HWB_ARRIVE);
    CU_ASSERT_EQUAL(acts[0].mask, 7);
    CU_ASSERT_EQUAL(acts[0].phase, 1);
    ev.kind = HB_HIER_EV_HWB_DONE;
    ev.sync_no = acts[0].sync_no + 1;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 32, &n), HB_ERR_INVAL);
    ev.sync_no = 0;
    ev.status = HB_ERR_PEER_LOST;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 32, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(acts[0].kind, HB_HIER_ACT_FAIL);
    CU_ASSERT_EQUAL(acts[0].status, HB_ERR_PEER_LOST);
    ev.kind = HB_HIER_EV_ARRIVE;
    ev.coll_id = 1;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 32, &n), 0);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(acts[0].kind, HB_HIER_ACT_HWB_ARRIVE);
    CU_ASSERT_EQUAL(acts[0].sync_no, 1);
    hb_hier_destroy(h);
    hb_topo_free(t);
}

/* ---- garbage ----------------------------------------------------------------------------- */

static int msg(hb_hier_t *h, uint32_t job, uint32_t epoch, uint64_t coll, uint32_t from,
               uint32_t kind, size_t len, hb_hier_act_t *acts, size_t *n)
{
    hb_hier_ev_t ev;

    memset(&ev, 0, sizeof(ev));
    ev.kind = HB_HIER_EV_MSG;
    ev.job = job;
    ev.epoch = epoch;
    ev.coll_id = coll;
    ev.from = from;
    ev.msg = kind;
    ev.len = len;
    ev.data = len ? "x" : NULL;
    return hb_hier_step(h, &ev, acts, 64, n);
}

static void test_garbage(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    hb_hier_cfg_t cfg;
    hb_hier_t *h;
    hb_hier_act_t acts[64];
    hb_hier_stats_t st;
    hb_hier_ev_t ev;
    size_t n;
    uint32_t parent, child;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    /* node 4: chassis 1's Left port (inter-level), one child chassis */
    CU_ASSERT_EQUAL_FATAL(t->nodes[4].n_children, 1);
    child = hb_topo_center_of(t, t->nodes[4].children[0]);
    parent = t->nodes[3].parent;
    hb_hier_cfg_init(&cfg);
    cfg.job = 5;
    cfg.epoch = 2;
    CU_ASSERT_EQUAL_FATAL(hb_hier_create(t, 4, &cfg, &h), 0);
    memset(&ev, 0, sizeof(ev));
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, hb_hier_max_actions(h) - 1, &n), HB_ERR_TRUNCATED);
    CU_ASSERT_EQUAL(msg(h, 6, 2, 0, child, HB_HIER_MSG_DONE, 0, acts, &n), HB_ERR_MISMATCH);
    CU_ASSERT_EQUAL(msg(h, 5, 1, 0, child, HB_HIER_MSG_DONE, 0, acts, &n), HB_ERR_MISMATCH);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, parent, HB_HIER_MSG_NOTIFY, 0, acts, &n), HB_ERR_PROTO);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, child, 0, 0, acts, &n), HB_ERR_PROTO);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, child, 99, 0, acts, &n), HB_ERR_PROTO);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, 100000, HB_HIER_MSG_DONE, 0, acts, &n), HB_ERR_PROTO);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, child, HB_HIER_MSG_NOTIFY, 0, acts, &n), HB_ERR_PROTO);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, child, HB_HIER_MSG_DONE, 4, acts, &n), HB_ERR_PROTO);
    /* DONE before this node sent NOTIFY down */
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, child, HB_HIER_MSG_DONE, 0, acts, &n), HB_ERR_PROTO);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 100, child, HB_HIER_MSG_DONE, 0, acts, &n), HB_ERR_PROTO);
    hb_hier_stats(h, &st);
    CU_ASSERT_EQUAL(st.drop_mismatch, 2);
    CU_ASSERT_EQUAL(st.drop_role, 6);
    CU_ASSERT_EQUAL(st.drop_order, 1);
    CU_ASSERT_EQUAL(st.drop_window, 1);
    /* local events */
    memset(&ev, 0, sizeof(ev));
    ev.kind = HB_HIER_EV_ARRIVE;
    ev.job = 5;
    ev.epoch = 2;
    ev.coll_id = 1;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), HB_ERR_INVAL);
    ev.coll_id = 0;
    ev.epoch = 3;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), HB_ERR_INVAL);
    ev.kind = HB_HIER_EV_TIMEOUT;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), HB_ERR_NOT_FOUND);
    ev.kind = HB_HIER_EV_PEER_LOST;
    ev.from = 1000;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), HB_ERR_INVAL);
    ev.kind = (hb_hier_ev_kind_t)42;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), HB_ERR_INVAL);
    ev.kind = HB_HIER_EV_HWB_DONE;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), HB_ERR_INVAL);
    /* the real barrier: ARRIVE, phase 1, NOTIFY down; now DONE is legal, once */
    ev.kind = HB_HIER_EV_ARRIVE;
    ev.epoch = 2;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    ev.kind = HB_HIER_EV_HWB_DONE;
    ev.sync_no = acts[0].sync_no;
    CU_ASSERT_EQUAL(hb_hier_step(h, &ev, acts, 64, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(acts[0].kind, HB_HIER_ACT_SEND);
    CU_ASSERT_EQUAL(acts[0].msg, HB_HIER_MSG_NOTIFY);
    CU_ASSERT_EQUAL(acts[0].to, child);
    CU_ASSERT_EQUAL(acts[0].job, 5);
    CU_ASSERT_EQUAL(acts[0].epoch, 2);
    CU_ASSERT_STRING_EQUAL(acts[0].step, "scmd I3");
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, child, HB_HIER_MSG_DONE, 0, acts, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(acts[0].kind, HB_HIER_ACT_HWB_ARRIVE);
    CU_ASSERT_EQUAL(acts[0].phase, 2);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, child, HB_HIER_MSG_DONE, 0, acts, &n), HB_ERR_PROTO);
    hb_hier_stats(h, &st);
    CU_ASSERT_EQUAL(st.drop_dup, 1);
    CU_ASSERT(st.bad_hwb >= 1);
    hb_hier_destroy(h);

    /* tree: NOTIFY is never legal; RELEASE before DONE went up is not either */
    cfg.protocol = HB_HIER_TREE;
    CU_ASSERT_EQUAL(hb_hier_create(t, 3, &cfg, &h), 0);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, parent, HB_HIER_MSG_NOTIFY, 0, acts, &n), HB_ERR_PROTO);
    CU_ASSERT_EQUAL(msg(h, 5, 2, 0, parent, HB_HIER_MSG_RELEASE, 0, acts, &n), HB_ERR_PROTO);
    hb_hier_stats(h, &st);
    CU_ASSERT_EQUAL(st.drop_role, 1);
    CU_ASSERT_EQUAL(st.drop_order, 1);
    hb_hier_destroy(h);

    /* bad creations */
    CU_ASSERT_EQUAL(hb_hier_create(t, 30, &cfg, &h), HB_ERR_INVAL);
    cfg.n_sync = 0;
    CU_ASSERT_EQUAL(hb_hier_create(t, 0, &cfg, &h), HB_ERR_INVAL);
    cfg.n_sync = 8;
    cfg.protocol = (hb_hier_proto_t)7;
    CU_ASSERT_EQUAL(hb_hier_create(t, 0, &cfg, &h), HB_ERR_INVAL);
    hb_topo_free(t);
}

/* Garbage injected into a running cluster: refused, and the barriers still complete. */
static void test_garbage_midrun(void)
{
    hb_topo_t *t = mk_topo(10, 3, 0);
    int p;
    uint32_t nd;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        hb_hier_local_t *l = mk_local(t, (hb_hier_proto_t)p, 0);
        hb_hier_local_stats_t st;
        hb_hier_ev_t ev;
        uint64_t refused = 0;
        int i;

        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        for (nd = 0; nd < t->n_nodes; nd++)
            CU_ASSERT_EQUAL(hb_hier_local_arrive(l, nd, 0), 0);
        rng_state = 4242 + p;
        for (i = 0; i < 2000; i++) {
            hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 1);
            memset(&ev, 0, sizeof(ev));
            ev.kind = HB_HIER_EV_MSG;
            ev.job = 7;
            ev.epoch = (rnd() % 4) ? 3 : (uint32_t)rnd();
            ev.coll_id = 20 + rnd() % 40; /* never a real collective of this run */
            ev.from = (uint32_t)(rnd() % 40);
            ev.msg = (uint32_t)(rnd() % 5);
            nd = (uint32_t)(rnd() % t->n_nodes);
            if (hb_hier_local_inject(l, nd, &ev) != 0)
                refused++;
        }
        hb_hier_local_run(l, HB_HIER_LOCAL_RANDOM, 1000000);
        hb_hier_local_stats(l, &st);
        CU_ASSERT_EQUAL(st.inject_refused, refused);
        CU_ASSERT_EQUAL(st.refused, 0);
        CU_ASSERT(refused > 1000);
        CU_ASSERT_EQUAL(st.hwb_mismatch, 0);
        /* every node completed coll 0 once */
        for (nd = 0; nd < t->n_nodes; nd++) {
            hb_hier_stats_t hs;
            hb_hier_stats(hb_hier_local_engine(l, nd), &hs);
            CU_ASSERT_EQUAL(hs.completed, 1);
            CU_ASSERT_EQUAL(hs.failed, 0);
        }
        hb_hier_local_destroy(l);
    }
    hb_topo_free(t);
}

/* Random events of every kind into one engine: statuses, never a crash (run under ASan). */
static void test_fuzz_engine(void)
{
    hb_topo_t *t = mk_topo(10, 3, 2);
    hb_hier_act_t acts[64];
    hb_hier_cfg_t cfg;
    uint32_t nd;
    int p, i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    rng_state = 77;
    for (p = HB_HIER_SCMD; p <= HB_HIER_TREE; p++) {
        for (nd = 0; nd < t->n_nodes; nd++) {
            hb_hier_t *h;
            hb_hier_stats_t st;
            uint64_t results = 0;
            hb_hier_cfg_init(&cfg);
            cfg.protocol = (hb_hier_proto_t)p;
            cfg.n_sync = 1 + nd % 4;
            CU_ASSERT_EQUAL_FATAL(hb_hier_create(t, nd, &cfg, &h), 0);
            for (i = 0; i < 3000; i++) {
                hb_hier_ev_t ev;
                size_t n, k;
                memset(&ev, 0, sizeof(ev));
                ev.kind = (hb_hier_ev_kind_t)(rnd() % 6);
                ev.epoch = 1;
                ev.coll_id = rnd() % 12;
                ev.from = (uint32_t)(rnd() % 32);
                ev.msg = (uint32_t)(rnd() % 4);
                ev.sync_no = (uint32_t)(rnd() % 5);
                ev.status = (rnd() % 8) ? 0 : HB_ERR_MISMATCH;
                if (ev.kind == HB_HIER_EV_PEER_LOST && rnd() % 50)
                    continue;
                if (hb_hier_step(h, &ev, acts, 64, &n) != 0)
                    CU_ASSERT_EQUAL(n, 0);
                CU_ASSERT(n <= hb_hier_max_actions(h));
                for (k = 0; k < n; k++)
                    if (acts[k].kind == HB_HIER_ACT_COMPLETE || acts[k].kind == HB_HIER_ACT_FAIL)
                        results++;
            }
            hb_hier_stats(h, &st);
            CU_ASSERT_EQUAL(results, st.completed + st.failed);
            hb_hier_destroy(h);
        }
    }
    hb_topo_free(t);
}

static void test_names(void)
{
    hb_hier_proto_t p;

    CU_ASSERT_EQUAL(hb_hier_proto_parse("tree", &p), 0);
    CU_ASSERT_EQUAL(p, HB_HIER_TREE);
    CU_ASSERT_EQUAL(hb_hier_proto_parse("scmd", &p), 0);
    CU_ASSERT_EQUAL(p, HB_HIER_SCMD);
    CU_ASSERT_EQUAL(hb_hier_proto_parse("ring", &p), HB_ERR_INVAL);
    CU_ASSERT_STRING_EQUAL(hb_hier_proto_name(HB_HIER_TREE), "tree");
    CU_ASSERT_STRING_EQUAL(hb_hier_msg_name(HB_HIER_MSG_RELEASE), "RELEASE");
    CU_ASSERT_STRING_EQUAL(hb_hier_msg_name(77), "unknown");
    CU_ASSERT_STRING_EQUAL(hb_hier_act_name(HB_HIER_ACT_HWB_ARRIVE), "HWB_ARRIVE");
}

int main(void)
{
    CU_pSuite s;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    s = CU_add_suite("hier", NULL, NULL);
    if (s == NULL || !CU_add_test(s, "names", test_names) ||
        !CU_add_test(s, "paper cluster: roles, programs, cost", test_paper_cluster) ||
        !CU_add_test(s, "shapes 1/2/4/10/40 chassis x fanout 0/2/4, one barrier",
                     test_shapes_one) ||
        !CU_add_test(s, "shapes, 12 barriers in flight", test_shapes_many) ||
        !CU_add_test(s, "mixed chassis sizes 1..4", test_shapes_mixed) ||
        !CU_add_test(s, "jobs on part of the cluster: pruned trees", test_subsets) ||
        !CU_add_test(s, "the paper's cluster without its Centers", test_subset_paper) ||
        !CU_add_test(s, "the paper's steps, node by node", test_paper_steps) ||
        !CU_add_test(s, "sync numbers and barriers per chassis", test_sync_numbers) ||
        !CU_add_test(s, "the last arrival holds everyone", test_last_holds) ||
        !CU_add_test(s, "early messages", test_early) ||
        !CU_add_test(s, "idle: nothing in flight or kept", test_idle) ||
        !CU_add_test(s, "window of collectives in flight", test_window) ||
        !CU_add_test(s, "modeled time: a late node holds everyone", test_late_time) ||
        !CU_add_test(s, "duplicated and replayed messages", test_duplicates) ||
        !CU_add_test(s, "timeout fails that collective only", test_timeout) ||
        !CU_add_test(s, "peer lost", test_peer_lost) ||
        !CU_add_test(s, "hwbarrier error", test_hwb_error) ||
        !CU_add_test(s, "garbage messages", test_garbage) ||
        !CU_add_test(s, "garbage into a running cluster", test_garbage_midrun) ||
        !CU_add_test(s, "random events into one engine", test_fuzz_engine)) {
        CU_cleanup_registry();
        return 99;
    }
    return hb_test_run(CU_BRM_NORMAL);
}
