/* test_model.c: CUnit tests of coll/coll_model.c against hand-computed values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <CUnit/Basic.h>

#include "hb_status.h"
#include "coll_model.h"
#include "coll_params.h"
#include "hb_test.h"

#define EPS 1e-6
#define NEAR(a, b) CU_ASSERT_DOUBLE_EQUAL((a), (b), EPS)

/* L 1000 µs, alpha 10 µs, b_LAN 100 B/µs, per-lane 10 B/µs under a 40 B/µs total. */
static hb_model_lanes_t base(void)
{
    hb_model_lanes_t p = {
        .L = 1000.0, .alpha = 10.0, .b_lan = 100.0, .b_lane = 10.0, .B_wan = 40.0};
    return p;
}

static void test_basics(void)
{
    hb_model_lanes_t p = base();
    NEAR(hb_model_hockney(10.0, 100.0, 1000.0), 20.0);
    NEAR(HB_MODEL_MBIT(100.0), 12.5);
    NEAR(hb_model_bwan(&p, 1), 10.0);
    NEAR(hb_model_bwan(&p, 4), 10.0);
    NEAR(hb_model_bwan(&p, 5), 8.0);
    NEAR(hb_model_bwan(&p, 8), 5.0);
    NEAR(hb_model_bwan(&p, 0), 0.0);
    CU_ASSERT_EQUAL(hb_model_x(8, 4), 2);
    CU_ASSERT_EQUAL(hb_model_x(7, 3), 3);
    CU_ASSERT_EQUAL(hb_model_x(8, 5), 2);
    CU_ASSERT_EQUAL(hb_model_x(1, 1), 1);
    CU_ASSERT_EQUAL(hb_model_y(8, 8, 4), 13); /* n0 >= n1: 8 + 8 - 1 - 2 */
    CU_ASSERT_EQUAL(hb_model_y(8, 7, 3), 11); /* 8 + 7 - 1 - 3 */
    CU_ASSERT_EQUAL(hb_model_y(4, 8, 4), 10); /* n0 < n1: 8 + 4 - 2 */
    CU_ASSERT_EQUAL(hb_model_y(1, 4, 1), 3);
}

static void test_measured_table(void)
{
    static const double tab[] = {12.0, 11.0, 9.0, 7.0};
    hb_model_lanes_t p = base();
    p.b_wan = tab;
    p.n_b_wan = 4;
    NEAR(hb_model_bwan(&p, 1), 12.0);
    NEAR(hb_model_bwan(&p, 3), 9.0);
    NEAR(hb_model_bwan(&p, 6), 7.0 * 4.0 / 6.0); /* past the table: the aggregate is shared */
    double t;
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 8, 1000.0, 6, &t), 0);
    /* X = 2, Y = 13: 1000 + 2000 / 4.666.. + 130 + 10 */
    NEAR(t, 1000.0 + 2000.0 / (28.0 / 6.0) + 130.0 + 10.0);
    CU_ASSERT_EQUAL(hb_model_single_lane(&p, 8, 8, 1000.0, &t), 0);
    NEAR(t, 1000.0 + 8000.0 / 12.0 + 7.0 * 20.0);
}

/* A b_WAN(P) table measured by hibar-bench lanes, read from its file, drives the model. */
static void test_measured_file(void)
{
    hb_params_t f;
    char err[128];
    hb_model_lanes_t p = base(), q = base();
    /* the file has no table: the configuration's lanes stay */
    CU_ASSERT_EQUAL(hb_params_parse("L 1\npoint 0 1 1 1 1 1\n", &f, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_model_lanes_view(&f, &p), 0);
    CU_ASSERT_PTR_NULL(p.b_wan);
    /* the PlogP view: each pattern's gap from its own column, the pair's from g(m, pair) */
    {
        hb_model_plogp_t v;
        CU_ASSERT_EQUAL(
            hb_params_parse("L 7\npoint 0 1 1 2 3 4 5\npoint 1000 1 1 20 30 40 50\n", &f, err,
                            sizeof(err)),
            0);
        hb_model_plogp_view(&f, &v);
        NEAR(v.L, 7.0);
        NEAR(hb_model_plogp_g(&v, HB_MODEL_PAT_PAIR, 500.0), 27.5);
        NEAR(hb_model_plogp_g(&v, HB_MODEL_PAT_ONE_TO_MANY, 500.0), 16.5);
        NEAR(hb_model_plogp_g(&v, HB_MODEL_PAT_MANY_TO_ONE, 1000.0), 40.0);
        NEAR(hb_model_plogp_g(&v, HB_MODEL_PAT_COUNT, 1000.0), 20.0); /* no pattern: g(m) */
        CU_ASSERT_EQUAL(hb_params_parse("L 1\npoint 0 1 1 1 1 1\n", &f, err, sizeof(err)), 0);
    }
    NEAR(hb_model_bwan(&p, 5), 8.0);
    /* 96, 80 Mbit/s per lane with 1, 2 lanes (12, 10 B/µs): beyond P = 2 the 20 B/µs are shared */
    CU_ASSERT_EQUAL(hb_params_parse("cluster ln-m\nbwan 1 96\nbwan 2 80\n", &f, err, sizeof(err)),
                    0);
    CU_ASSERT_EQUAL(hb_model_lanes_view(&f, &p), 1);
    CU_ASSERT_EQUAL(p.n_b_wan, 2);
    NEAR(p.L, q.L);
    NEAR(p.b_lane, q.b_lane);
    NEAR(hb_model_bwan(&p, 1), 12.0);
    NEAR(hb_model_bwan(&p, 2), 10.0);
    NEAR(hb_model_bwan(&p, 3), 20.0 / 3.0);
    NEAR(hb_model_bwan(&p, 4), 5.0);
    /* T(P) at 4+4, 1000 B: P 1: 1000 + 4000/12 + 3*10 + 10; P 2: X 2, Y 5: 1000 + 200 + 50 + 10;
     * P 4: X 1, Y 6: 1000 + 200 + 60 + 10. P_opt 2 (the configuration's lanes: 4). */
    double t;
    uint32_t P;
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 4, 4, 1000.0, 1, &t), 0);
    NEAR(t, 1040.0 + 4000.0 / 12.0);
    CU_ASSERT_EQUAL(hb_model_popt(&p, 4, 4, 1000.0, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 2);
    NEAR(t, 1260.0);
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 4, 4, 1000.0, 4, &t), 0);
    NEAR(t, 1270.0);
    CU_ASSERT_EQUAL(hb_model_popt(&q, 4, 4, 1000.0, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 4);
    NEAR(t, 1000.0 + 100.0 + 60.0 + 10.0);
    /* flat's 4 pairs at once share the 20 B/µs: 40 + 1000 + 1000/5 */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 4, 4, 1000.0, &t), 0);
    NEAR(t, 1240.0);
}

static void test_single_lane(void)
{
    hb_model_lanes_t p = base();
    double t = -1.0;
    CU_ASSERT_EQUAL(hb_model_single_lane(&p, 8, 8, 1000.0, &t), 0);
    NEAR(t, 1940.0); /* 1000 + 8*1000/10 + 7*(10 + 10) */
    CU_ASSERT_EQUAL(hb_model_single_lane(&p, 4, 8, 1000.0, &t), 0);
    NEAR(t, 1940.0); /* n_alt = 8 */
    CU_ASSERT_EQUAL(hb_model_single_lane(&p, 8, 2, 1000.0, &t), 0);
    NEAR(t, 1340.0); /* 1000 + 200 + 7*20 */
    CU_ASSERT_EQUAL(hb_model_single_lane(&p, 0, 2, 1000.0, &t), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_model_single_lane(NULL, 2, 2, 1000.0, &t), HB_ERR_INVAL);
}

static void test_multi_lane(void)
{
    hb_model_lanes_t p = base();
    double t = -1.0;
    /* n0 >= n1 */
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 8, 1000.0, 4, &t), 0);
    NEAR(t, 1340.0); /* 1000 + 2*100 + 13*10 + 10 */
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 8, 1000.0, 1, &t), 0);
    NEAR(t, 1880.0); /* X 8, Y 7 */
    /* n0 < n1 */
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 4, 8, 1000.0, 4, &t), 0);
    NEAR(t, 1310.0); /* X 2, Y 10 */
    /* n1 not a multiple of P */
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 7, 1000.0, 3, &t), 0);
    NEAR(t, 1420.0); /* X 3, Y 11, b 10 */
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 8, 1000.0, 5, &t), 0);
    NEAR(t, 1390.0); /* X 2, b 8: 1000 + 250 + 130 + 10 */
    /* the start-up variant adds Y(P)*alpha */
    p.lan_startup = 1;
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 8, 1000.0, 4, &t), 0);
    NEAR(t, 1470.0);
    p.lan_startup = 0;
    /* range of P */
    t = -1.0;
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 4, 1000.0, 5, &t), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 3, 8, 1000.0, 4, &t), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_model_multi_lane(&p, 8, 8, 1000.0, 0, &t), HB_ERR_INVAL);
    NEAR(t, -1.0); /* untouched on error */
}

/* The pipelined schedule model (hb_model_multi_lane_pipe), hand values with base(). */
static void test_multi_lane_pipe(void)
{
    static const double tab[] = {12.0, 11.0, 9.0, 7.0};
    hb_model_lanes_t p = base();
    double t = -1.0;
    /* whole messages: X 2, W 2000/10, d 10 + 2000*(4+8-2)/100, tail 10 + 1000/100 */
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 4, &t), 0);
    NEAR(t, 1000.0 + 210.0 + 200.0 + 20.0);
    /* 100-byte segments: d 10 + 100*10/100, tail 10 + 1; the bound 10 + 13000/100 + 1000 + 10 */
    p.seg = 100.0;
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 4, &t), 0);
    NEAR(t, 1000.0 + 20.0 + 200.0 + 11.0);
    /* uneven lanes, P 5: three lanes carry 2 blocks, two carry 1; b(5) 8, then b(3) 10:
     * W = 1000/8 + 1000/10 = 225 (T(P): 2000/8 = 250) */
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 5, &t), 0);
    NEAR(t, 1000.0 + 21.0 + 225.0 + 11.0);
    /* gather: every lane starts at alpha, the Dep_sends forward to the root (tail) */
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_GATHER, 8, 8, 1000.0, 5, &t), 0);
    NEAR(t, 1000.0 + 10.0 + 225.0 + 11.0);
    /* one lane: no share, no relay in gather (the root receives it) */
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_GATHER, 8, 8, 1000.0, 1, &t), 0);
    NEAR(t, 1000.0 + 10.0 + 800.0);
    /* one block per lane: no relay after the WAN in scatter */
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 8, &t), 0);
    NEAR(t, 1000.0 + 24.0 + 1000.0 / 5.0);
    /* a slow LAN: the root's NIC bounds gather. It takes in every block but the root's own,
     * 5000 B at 1 B/us: the shares, its own site and its own lane's block (that lane's WAN
     * traffic enters through the same NIC; before issue 25 the model left it out: 4000) */
    hb_model_lanes_t q = base();
    q.b_lan = 1.0;
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&q, HB_COLL_GATHER, 4, 2, 1000.0, 2, &t), 0);
    NEAR(t, 10.0 + 5000.0);
    /* a measured table: P 3 on 8: lanes 3, 3, 2 blocks; b(3) 9 for 2 blocks, then b(2) 11 */
    p.b_wan = tab;
    p.n_b_wan = 4;
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_GATHER, 8, 8, 1000.0, 3, &t), 0);
    NEAR(t, 1000.0 + 10.0 + 2000.0 / 9.0 + 1000.0 / 11.0 + 11.0);
    /* scatter's shares handed out in order behind a 500-byte queue: P 2 on 8, share 1 carries
     * 4000 B, 3500 of them hold lane 0 back: 10 + 3500/100 + 4000/10 + 1000 (else 1429) */
    hb_model_lanes_t r = base();
    r.seg = 100.0;
    r.queue = 500.0;
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&r, HB_COLL_SCATTER, 8, 8, 1000.0, 2, &t), 0);
    NEAR(t, 1445.0);
    r.queue = 4000.0; /* the share fits: nothing held */
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&r, HB_COLL_SCATTER, 8, 8, 1000.0, 2, &t), 0);
    NEAR(t, 1429.0);
    r.queue = 500.0; /* gather: no share is handed out */
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&r, HB_COLL_GATHER, 8, 8, 1000.0, 2, &t), 0);
    NEAR(t, 1000.0 + 10.0 + 400.0 + 11.0);
    /* refused: bcast, P out of range, a negative segment */
    t = -1.0;
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_BCAST, 8, 8, 1000.0, 3, &t), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 8, 4, 1000.0, 5, &t),
                    HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 0, &t),
                    HB_ERR_INVAL);
    p.seg = -1.0;
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 2, &t),
                    HB_ERR_INVAL);
    NEAR(t, -1.0);
}

/* P_opt by the pipelined model; the paper's T(P) is kept when pipeline is 0. */
static void test_popt_pipe(void)
{
    hb_model_lanes_t p = base();
    uint32_t P = 0;
    double t = 0.0;
    p.seg = 100.0;
    p.pipeline = 1;
    /* scatter, P = 1..8: 1821 1429 1330 1231 1257 1283 1309 1224 (T(P) chose 4) */
    CU_ASSERT_EQUAL(hb_model_popt_op(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 8);
    NEAR(t, 1224.0);
    CU_ASSERT_EQUAL(hb_model_popt_op(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 7, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 4);
    NEAR(t, 1231.0);
    /* the chooser's multi-lane candidate is the same */
    hb_model_params_t pr = {.n0 = 8, .n1 = 8, .lanes = &p};
    hb_model_choice_t c;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1000.0, &pr, &c), 0);
    NEAR(c.alg_us[HB_COLL_ALG_MULTI_LANE], 1224.0);
    p.pipeline = 0;
    CU_ASSERT_EQUAL(hb_model_popt_op(&p, HB_COLL_SCATTER, 8, 8, 1000.0, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 4);
    NEAR(t, 1340.0);
}

/*
 * The multi-lane paper's grid (issue 25): 2 x 32 nodes, 1 Gbit/s NICs (125 B/us), 250 Mbit/s
 * per lane under a 1 Gbit/s WAN total, 1 MiB per node, 32 KiB segments. The root's NIC must
 * carry 63 MiB whatever the algorithm: 50 + 63 MiB / 125 B/us = 528532 us for gather (the NIC
 * is the last thing), for scatter L and one segment's WAN time more. Every P that divides 32
 * from 4 on reaches that bound: the lanes (8 MiB at 250 Mbit/s: 268 ms) are faster than the
 * NIC. Below 4, and at uneven P, the root's own lane gets only its fair share of the NIC while
 * the 31 local blocks cross it, and ends later (P 3: 626 ms). P_opt is 4, the smallest P on
 * that plateau; the paper's 16-32 are on it too, and flat, one segment ahead, is a tie.
 */
static void test_paper_grid(void)
{
    hb_model_lanes_t p = {.L = 5000.0,
                          .alpha = 50.0,
                          .b_lan = HB_MODEL_MBIT(1000.0),
                          .b_lane = HB_MODEL_MBIT(250.0),
                          .B_wan = HB_MODEL_MBIT(1000.0),
                          .pipeline = 1,
                          .seg = 32768.0};
    const double M = 1048576.0, nic = 50.0 + 63.0 * M / 125.0;
    double t = 0.0;
    uint32_t P = 0;
    for (uint32_t k = 4; k <= 32; k *= 2) {
        CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 32, 32, M, k, &t), 0);
        NEAR(t, nic + 5000.0 + 32768.0 / 31.25);
        CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_GATHER, 32, 32, M, k, &t), 0);
        NEAR(t, nic);
    }
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 32, 32, M, 3, &t), 0);
    CU_ASSERT(t > nic + 90000.0);
    CU_ASSERT_EQUAL(hb_model_popt_op(&p, HB_COLL_SCATTER, 32, 32, M, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 4);
    /* flat gather: the remote blocks arrive from L on while the local ones use the NIC: the
     * same bound as multi-lane's, a tie */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_GATHER, HB_COLL_ALG_FLAT, 32, 32, M, &t), 0);
    NEAR(t, nic);
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 32, 32, M, &t), 0);
    NEAR(t, nic + 5000.0);
    /* the gain over one lane is bounded by the NIC: 32 MiB on one lane, which shares the NIC
     * with the 31 local blocks at first (1314 ms), against 63 MiB on the NIC: 2.46x (the old
     * model, without the root's own lane on its NIC, said 3x; the paper's store-and-forward
     * T(P) says 1.7-1.8x, and it measured 1.5-2x) */
    double t1 = 0.0;
    CU_ASSERT_EQUAL(hb_model_multi_lane_pipe(&p, HB_COLL_SCATTER, 32, 32, M, 1, &t1), 0);
    CU_ASSERT(t1 / t > 2.4 && t1 / t < 2.5);
}

static void test_popt(void)
{
    hb_model_lanes_t p = base();
    uint32_t P = 0;
    double t = 0.0;
    /* T(P) for P = 1..8: 1880 1520 1430 1340 1390 1440 1490 1350 */
    CU_ASSERT_EQUAL(hb_model_popt(&p, 8, 8, 1000.0, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 4);
    NEAR(t, 1340.0);
    CU_ASSERT_EQUAL(hb_model_popt(&p, 8, 8, 1000.0, 3, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 3);
    NEAR(t, 1430.0);
    /* no total cap: more lanes always help, P_opt = min(n0, n1) */
    p.B_wan = 1e9;
    CU_ASSERT_EQUAL(hb_model_popt(&p, 8, 5, 1000.0, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 5);
    NEAR(t, 1000.0 + 100.0 + 11.0 * 10.0 + 10.0); /* X 1, Y 8+5-1-1 = 11 */
    /* zero-byte messages: all equal, the smallest P wins the tie */
    CU_ASSERT_EQUAL(hb_model_popt(&p, 8, 8, 0.0, 0, &P, &t), 0);
    CU_ASSERT_EQUAL(P, 1);
    NEAR(t, 1010.0);
    CU_ASSERT_EQUAL(hb_model_popt(&p, 0, 8, 0.0, 0, &P, &t), HB_ERR_INVAL);
}

static void test_tree(void)
{
    hb_model_lanes_t p = base();
    double t = 0.0;
    /* flat: the 8 WAN messages are posted first (8 alpha) and run at once as 8 pairs sharing
     * B_WAN: b_WAN(8) = 40/8 = 5, 80 + L + 1000/5 = 1280; local ends at 80 + 7*20 = 220 */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 8, 8, 1000.0, &t), 0);
    NEAR(t, 1280.0);
    /* 4 pairs each get their full lane (b_WAN(4) = 10): 40 + 1000 + 100 = 1140 */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_GATHER, HB_COLL_ALG_FLAT, 4, 4, 1000.0, &t), 0);
    NEAR(t, 1140.0);
    /* 3 remote nodes, 5 lanes' worth of total: b_WAN(3) = 10; bcast of 1000 to each */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_BCAST, HB_COLL_ALG_FLAT, 2, 3, 1000.0, &t), 0);
    NEAR(t, 1130.0);
    /* the root's own site dominates: no latency, 16 local nodes, 1 remote:
     * WAN 10 + 0 + 100 = 110, local 10 + 15*20 = 310 */
    p.L = 0.0;
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 16, 1, 1000.0, &t), 0);
    NEAR(t, 310.0);
    p.L = 1000.0;
    /* a measured table where many flows lose throughput: b_WAN(8) = 3 */
    static const double tab[] = {10.0, 10.0, 10.0, 10.0, 6.0, 5.0, 4.0, 3.0};
    p.b_wan = tab;
    p.n_b_wan = 8;
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 8, 8, 1000.0, &t), 0);
    NEAR(t, 80.0 + 1000.0 + 1000.0 / 3.0);
    p.b_wan = NULL;
    p.n_b_wan = 0;
    /* binomial 2+2: root->2 (WAN, 2 blocks) 210 +L = 1210, root->1 230, 2->3 1230 */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_BINOMIAL, 2, 2, 1000.0, &t), 0);
    NEAR(t, 1230.0);
    /* bcast: every message carries M: root->2 110 + L, root->1 130, 2->3 1110 + 20 */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_BCAST, HB_COLL_ALG_BINOMIAL, 2, 2, 1000.0, &t), 0);
    NEAR(t, 1130.0);
    /* one site of 16, zero bytes: flat 15 alpha, binomial 4 alpha */
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 16, 0, 0.0, &t), 0);
    NEAR(t, 150.0);
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_BINOMIAL, 16, 0, 0.0, &t), 0);
    NEAR(t, 40.0);
    /* a relay's turn (alpha) before it forwards: 0 -> 8 -> 12 -> 14 -> 15, three relays */
    p.relay = p.alpha;
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_BINOMIAL, 16, 0, 0.0, &t), 0);
    NEAR(t, 70.0);
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 16, 0, 0.0, &t), 0);
    NEAR(t, 150.0);
    p.relay = 0.0;
    CU_ASSERT_EQUAL(hb_model_tree(&p, HB_COLL_SCATTER, HB_COLL_ALG_MULTI_LANE, 2, 2, 0.0, &t),
                    HB_ERR_INVAL);
}

/* PlogP: L 50; g = 5, 15, 105 at 0, 1000, 10000 bytes. */
static const double pm[] = {0.0, 1000.0, 10000.0};
static const double pg[] = {5.0, 15.0, 105.0};
static const double pos[] = {2.0, 4.0, 20.0};

static hb_model_plogp_t plogp(void)
{
    hb_model_plogp_t p = {.L = 50.0,
                          .n = 3,
                          .m = pm,
                          .os = pos,
                          .orv = pos,
                          .g = pg,
                          .q = 1500.0,
                          .t_rto = 200000.0,
                          .flow_control = 0};
    return p;
}

static void test_plogp(void)
{
    hb_model_plogp_t p = plogp();
    NEAR(hb_model_plogp_g(&p, HB_MODEL_PAT_PAIR, 500.0), 10.0);
    NEAR(hb_model_plogp_g(&p, HB_MODEL_PAT_PAIR, 20000.0), 205.0); /* last slope, extrapolated */
    NEAR(hb_model_plogp_g(&p, HB_MODEL_PAT_PAIR, -1.0), 5.0);
    NEAR(hb_model_plogp_os(&p, 5500.0), 12.0);
    NEAR(hb_model_plogp_or(&p, 1000.0), 4.0);
    CU_ASSERT_EQUAL(hb_model_plogp_eq(&p, 1000.0, 4), 1); /* 1500 < 3000 */
    CU_ASSERT_EQUAL(hb_model_plogp_eq(&p, 500.0, 4), 0);  /* 1500 < 1500 is false */
    p.burst = 400.0; /* each sender's first window only: 3 x 400 = 1200 < 1500 */
    CU_ASSERT_EQUAL(hb_model_plogp_eq(&p, 1000.0, 4), 0);
    p.burst = 600.0; /* 3 x 600 = 1800 */
    CU_ASSERT_EQUAL(hb_model_plogp_eq(&p, 1000.0, 4), 1);
    p.burst = 0.0;
    double t = 0.0;
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 4, 1000.0, &t),
                    0);
    NEAR(t, 95.0); /* 3*15 + 50 */
    CU_ASSERT_EQUAL(
        hb_model_plogp_predict(&p, HB_COLL_SCATTER, HB_COLL_ALG_BINOMIAL, 4, 1000.0, &t), 0);
    NEAR(t, 140.0); /* g(1000) + L + g(2000) + L */
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_GATHER, HB_COLL_ALG_FLAT, 4, 1000.0, &t), 0);
    NEAR(t, 95.0 + 200000.0); /* incast overflows the 1500-byte queue */
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_GATHER, HB_COLL_ALG_FLAT, 4, 500.0, &t), 0);
    NEAR(t, 80.0);
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_BCAST, HB_COLL_ALG_BINOMIAL, 4, 1000.0, &t),
                    0);
    NEAR(t, 130.0);
    /* allgather flat, n 2, m 1000: gather 15 + 50 (q 1500 >= 1000: no penalty) + bcast of 2000 */
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_ALLGATHER, HB_COLL_ALG_FLAT, 2, 1000.0, &t),
                    0);
    NEAR(t, 65.0 + 25.0 + 50.0);
    /* a per-pattern gap replaces g for that pattern */
    static const double g_in[] = {10.0, 30.0, 210.0};
    p.g_pat[HB_MODEL_PAT_MANY_TO_ONE] = g_in;
    p.flow_control = 1;
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_GATHER, HB_COLL_ALG_FLAT, 4, 1000.0, &t), 0);
    NEAR(t, 3 * 30.0 + 50.0);
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_GATHER, HB_COLL_ALG_MULTI_LANE, 4, 1.0, &t),
                    HB_ERR_INVAL);
}

/* Two sites: LAN PlogP above (g(b) = 5 + b/100 µs, L 50), WAN from base() (L 1000, 10 B/µs). */
static void test_plogp_sites(void)
{
    hb_model_plogp_t lan = plogp();
    hb_model_lanes_t wan = base();
    double t = 0.0;
#define SITES(op, alg, P) hb_model_plogp_sites(&lan, &wan, op, alg, 4, 4, 1000.0, P, &t)
    CU_ASSERT_EQUAL(SITES(HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 0), 0);
    /* the 4 WAN messages run at once: G = 4 * 15 = 60, Wn = 1000 / b_WAN(4) = 100;
     * max(60 + 100 + 1000, 60 + 45 + 50) */
    NEAR(t, 1160.0);
    CU_ASSERT_EQUAL(SITES(HB_COLL_SCATTER, HB_COLL_ALG_SINGLE_LANE, 0), 0);
    NEAR(t, 1495.0); /* 400 + 1000 + 3*15 + 50 */
    CU_ASSERT_EQUAL(SITES(HB_COLL_SCATTER, HB_COLL_ALG_MULTI_LANE, 4), 0);
    NEAR(t, 1195.0); /* S 45, + L 50, V 100, + L_w 1000, X - 1 = 0 */
    CU_ASSERT_EQUAL(SITES(HB_COLL_SCATTER, HB_COLL_ALG_MULTI_LANE, 2), 0);
    NEAR(t, 1340.0); /* S 25 + 50 + V 200 + 1000 + (15 + 50) */
    CU_ASSERT_EQUAL(SITES(HB_COLL_SCATTER, HB_COLL_ALG_BINOMIAL, 0), 0);
    NEAR(t, 1540.0);
    /* gather: 7 senders with 7000 bytes into a 1500-byte queue: an RTO */
    CU_ASSERT_EQUAL(SITES(HB_COLL_GATHER, HB_COLL_ALG_FLAT, 0), 0);
    NEAR(t, 105.0 + 1000.0 + 200000.0); /* max(7 * 15, Wn 100) + max(L, L_w) + RTO */
    CU_ASSERT_EQUAL(SITES(HB_COLL_GATHER, HB_COLL_ALG_SINGLE_LANE, 0), 0);
    NEAR(t, 95.0 + 200000.0 + 400.0 + 1000.0);
    CU_ASSERT_EQUAL(SITES(HB_COLL_GATHER, HB_COLL_ALG_MULTI_LANE, 4), 0);
    NEAR(t, 1100.0 + 95.0 + 200000.0); /* R 1100, F: 3 Dep_sends into the root */
    CU_ASSERT_EQUAL(SITES(HB_COLL_GATHER, HB_COLL_ALG_MULTI_LANE, 2), 0);
    NEAR(t, 95.0 + 200000.0); /* the root's own site's incast dominates */
    CU_ASSERT_EQUAL(SITES(HB_COLL_GATHER, HB_COLL_ALG_BINOMIAL, 0), 0);
    NEAR(t, 1540.0); /* pairwise: no incast */
    CU_ASSERT_EQUAL(SITES(HB_COLL_BCAST, HB_COLL_ALG_FLAT, 0), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(SITES(HB_COLL_GATHER, HB_COLL_ALG_MULTI_LANE, 5), HB_ERR_INVAL);
    /* one sender is not an incast */
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&lan, HB_COLL_GATHER, HB_COLL_ALG_FLAT, 2, 2000.0, &t),
                    0);
    NEAR(t, 75.0);

    /* the chooser: binomial gather under incast; scatter: flat (its 4 WAN messages run at once
     * and it has no LAN hop before the WAN); multi-lane P 4 reported beside it */
    hb_model_params_t pr = {.n0 = 4, .n1 = 4, .lanes = &wan, .plogp = &lan};
    hb_model_choice_t c;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_GATHER, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_BINOMIAL);
    NEAR(c.predicted_us, 1540.0);
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    CU_ASSERT_EQUAL(c.lanes, 0);
    NEAR(c.predicted_us, 1160.0);
    NEAR(c.alg_us[HB_COLL_ALG_MULTI_LANE], 1195.0);
    lan.flow_control = 1;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_GATHER, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    NEAR(c.predicted_us, 1105.0);
    NEAR(c.alg_us[HB_COLL_ALG_MULTI_LANE], 1195.0); /* R 1100 + F 95 */
    /* a measured table where 4 concurrent pairs get 8 B/µs in total and 2 get 20: the lanes
     * win: flat Wn = 1000 / b_WAN(4) = 500; multi-lane P 2 (X 2, V = 2000 / 10) 1340 */
    static const double tab[] = {10.0, 10.0, 10.0 / 3.0, 2.0};
    wan.b_wan = tab;
    wan.n_b_wan = 4;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_MULTI_LANE);
    CU_ASSERT_EQUAL(c.lanes, 2);
    NEAR(c.predicted_us, 1340.0); /* S 25 + 50 + V 200 + 1000 + (15 + 50), as above */
    NEAR(c.alg_us[HB_COLL_ALG_FLAT], 60.0 + 500.0 + 1000.0);
    wan.b_wan = NULL;
    wan.n_b_wan = 0;
#undef SITES
}

static void test_choose(void)
{
    hb_model_lanes_t lanes = base();
    hb_model_params_t pr = {.n0 = 8, .n1 = 8, .lanes = &lanes};
    hb_model_choice_t c;

    /* two sites with a total WAN cap above one lane: flat's 8 pairs fill B_WAN as multi-lane's
     * 4 lanes do, without the LAN hops: flat 1280, multi-lane at P_opt 4 1340 */
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    NEAR(c.predicted_us, 1280.0);
    NEAR(c.alg_us[HB_COLL_ALG_MULTI_LANE], 1340.0);
    NEAR(c.alg_us[HB_COLL_ALG_SINGLE_LANE], 1940.0);
    /* measured: 8 concurrent pairs get 3 B/µs each (24 in total), 4 get the full 40: the lanes
     * win (flat 80 + 1000 + 1000/3; multi-lane P 4: 1000 + 2000/10 + 13*10 + 10) */
    static const double tab[] = {10.0, 10.0, 10.0, 10.0, 6.0, 5.0, 4.0, 3.0};
    lanes.b_wan = tab;
    lanes.n_b_wan = 8;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_MULTI_LANE);
    CU_ASSERT_EQUAL(c.lanes, 4);
    NEAR(c.predicted_us, 1340.0);
    NEAR(c.alg_us[HB_COLL_ALG_FLAT], 1080.0 + 1000.0 / 3.0);
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_GATHER, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_MULTI_LANE);
    CU_ASSERT_EQUAL(c.lanes, 4);
    lanes.b_wan = NULL;
    lanes.n_b_wan = 0;

    /* no aggregate WAN gain, small messages, start-up per LAN message: single-lane */
    lanes.B_wan = lanes.b_lane;
    lanes.lan_startup = 1;
    pr.n0 = pr.n1 = 2;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 100.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_SINGLE_LANE);
    CU_ASSERT_EQUAL(c.lanes, 1);
    NEAR(c.predicted_us, 1031.0); /* 1000 + 20 + 1*(10 + 1) */
    NEAR(c.alg_us[HB_COLL_ALG_FLAT], 1040.0);
    NEAR(c.alg_us[HB_COLL_ALG_BINOMIAL], 1041.0);
    NEAR(c.alg_us[HB_COLL_ALG_MULTI_LANE], 1041.0); /* P 1: 1000 + 20 + 1 + 10 + 10 */

    /* one site, PlogP: flat for a small group (g(0) < L) ... */
    hb_model_plogp_t lp = plogp();
    hb_model_params_t one = {.n0 = 4, .n1 = 0, .lanes = &lanes, .plogp = &lp};
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1000.0, &one, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    CU_ASSERT_EQUAL(c.lanes, 0);
    NEAR(c.predicted_us, 95.0);
    CU_ASSERT(c.alg_us[HB_COLL_ALG_SINGLE_LANE] < 0.0);
    /* ... but PlogP-BR moves gather to the pairwise tree when the incast overflows the queue */
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_GATHER, 1000.0, &one, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_BINOMIAL);
    NEAR(c.predicted_us, 140.0);
    lp.flow_control = 1;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_GATHER, 1000.0, &one, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);

    /* one site, Hockney, many nodes, small messages: binomial */
    hb_model_params_t big = {.n0 = 16, .n1 = 0, .lanes = &lanes};
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_BCAST, 0.0, &big, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_BINOMIAL);
    NEAR(c.predicted_us, 40.0);

    /* one site, Hockney, a bandwidth-bound scatter: binomial is one latency ahead of flat, a
     * tie within the model's margin, so flat (less traffic in all); small messages and bcast
     * (no extra traffic): the tree */
    hb_model_params_t four = {.n0 = 4, .n1 = 0, .lanes = &lanes};
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 4194304.0, &four, &c), 0);
    CU_ASSERT(c.alg_us[HB_COLL_ALG_BINOMIAL] < c.alg_us[HB_COLL_ALG_FLAT]);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_GATHER, 4194304.0, &four, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 0.0, &four, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_BINOMIAL);
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_BCAST, 4194304.0, &four, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_BINOMIAL);
    /* with a relay's turn charged (hibard's alpha), 4 nodes' small scatter ties: flat; 16
     * nodes' bcast keeps the tree (70 against 150) */
    lanes.relay = lanes.alpha;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 0.0, &four, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_BCAST, 0.0, &big, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_BINOMIAL);
    NEAR(c.predicted_us, 70.0);
    lanes.relay = 0.0;
    /* hibard's model from the configuration's default links (WAN 5000 us, LAN 50 us and 1000
     * Mbit/s): 4 nodes' 4 KiB and 64 KiB scatter and gather go flat, 16 nodes' 4 KiB bcast by
     * the tree */
    hb_model_lanes_t cl = hb_model_lanes_links(5000.0, 50.0, 1000.0, 250.0, 1000.0, 262144.0);
    NEAR(cl.alpha, 50.0);
    NEAR(cl.relay, 50.0);
    NEAR(cl.b_lan, 125.0);
    NEAR(cl.queue, 1000.0 * 262144.0);
    hb_model_params_t cl4 = {.n0 = 4, .n1 = 0, .lanes = &cl};
    for (int op = HB_COLL_SCATTER; op <= HB_COLL_GATHER; op++) {
        CU_ASSERT_EQUAL(hb_model_choose((hb_coll_op_t)op, 4096.0, &cl4, &c), 0);
        CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
        CU_ASSERT_EQUAL(hb_model_choose((hb_coll_op_t)op, 65536.0, &cl4, &c), 0);
        CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    }
    hb_model_params_t cl16 = {.n0 = 16, .n1 = 0, .lanes = &cl};
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_BCAST, 4096.0, &cl16, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_BINOMIAL);

    /* allgather = gather + bcast; every candidate is reported */
    pr.n0 = pr.n1 = 8;
    lanes = base();
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_ALLGATHER, 1000.0, &pr, &c), 0);
    for (int a = 0; a < HB_COLL_ALG_COUNT; a++)
        CU_ASSERT(hb_coll_alg_valid(HB_COLL_ALLGATHER, a) ? c.alg_us[a] > 0.0 : c.alg_us[a] < 0.0);
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1.0, NULL, &c), HB_ERR_INVAL);
    pr.lanes = NULL;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_SCATTER, 1.0, &pr, &c), HB_ERR_INVAL);
}

/* alltoall: Hockney ties flat and pairwise; PlogP-BR separates them by pattern and incast. */
static void test_alltoall(void)
{
    hb_model_lanes_t lanes = base();
    double t = 0.0;
    /* 5 nodes, 1000 bytes a pair: 4 x (10 + 10) for both */
    CU_ASSERT_EQUAL(hb_model_tree(&lanes, HB_COLL_ALLTOALL, HB_COLL_ALG_FLAT, 5, 0, 1000.0, &t), 0);
    NEAR(t, 80.0);
    CU_ASSERT_EQUAL(hb_model_tree(&lanes, HB_COLL_ALLTOALL, HB_COLL_ALG_PAIRWISE, 5, 0, 1000.0, &t),
                    0);
    NEAR(t, 80.0);
    CU_ASSERT_EQUAL(hb_model_tree(&lanes, HB_COLL_ALLTOALL, HB_COLL_ALG_BINOMIAL, 5, 0, 1000.0, &t),
                    HB_ERR_INVAL);
    hb_model_plogp_t p = plogp();
    static const double g_out[] = {6.0, 20.0, 110.0}, g_in[] = {8.0, 25.0, 120.0};
    p.g_pat[HB_MODEL_PAT_ONE_TO_MANY] = g_out;
    p.g_pat[HB_MODEL_PAT_MANY_TO_ONE] = g_in;
    /* flat: 4 x max(20, 25) + 50, and the incast overflows the 1500-byte queue (4 x 1000) */
    CU_ASSERT_EQUAL(hb_model_plogp_predict(&p, HB_COLL_ALLTOALL, HB_COLL_ALG_FLAT, 5, 1000.0, &t),
                    0);
    NEAR(t, 150.0 + 200000.0);
    /* pairwise: 4 x (15 + 50), pair patterns only */
    CU_ASSERT_EQUAL(
        hb_model_plogp_predict(&p, HB_COLL_ALLTOALL, HB_COLL_ALG_PAIRWISE, 5, 1000.0, &t), 0);
    NEAR(t, 260.0);
    CU_ASSERT_EQUAL(
        hb_model_plogp_predict(&p, HB_COLL_SCATTER, HB_COLL_ALG_PAIRWISE, 5, 1000.0, &t),
        HB_ERR_INVAL);
    /* the chooser: pairwise under incast, flat with flow control (one latency instead of 4) */
    hb_model_params_t pr = {.n0 = 3, .n1 = 2, .lanes = &lanes, .plogp = &p};
    hb_model_choice_t c;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_ALLTOALL, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_PAIRWISE);
    NEAR(c.predicted_us, 260.0);
    CU_ASSERT(c.alg_us[HB_COLL_ALG_BINOMIAL] < 0.0 && c.alg_us[HB_COLL_ALG_MULTI_LANE] < 0.0);
    p.flow_control = 1;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_ALLTOALL, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    NEAR(c.predicted_us, 150.0);
    /* Hockney alone: a tie, the simpler flat */
    pr.plogp = NULL;
    CU_ASSERT_EQUAL(hb_model_choose(HB_COLL_ALLTOALL, 1000.0, &pr, &c), 0);
    CU_ASSERT_EQUAL(c.alg, HB_COLL_ALG_FLAT);
    NEAR(c.alg_us[HB_COLL_ALG_PAIRWISE], 80.0);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("model", NULL, NULL);
    if (s == NULL || CU_add_test(s, "hockney, X, Y, b_WAN", test_basics) == NULL ||
        CU_add_test(s, "measured b_WAN table", test_measured_table) == NULL ||
        CU_add_test(s, "measured b_WAN table from its file", test_measured_file) == NULL ||
        CU_add_test(s, "single-lane", test_single_lane) == NULL ||
        CU_add_test(s, "multi-lane T(P)", test_multi_lane) == NULL ||
        CU_add_test(s, "P_opt search", test_popt) == NULL ||
        CU_add_test(s, "multi-lane pipelined schedule model", test_multi_lane_pipe) == NULL ||
        CU_add_test(s, "P_opt by the pipelined model", test_popt_pipe) == NULL ||
        CU_add_test(s, "the multi-lane paper's 2 x 32 grid", test_paper_grid) == NULL ||
        CU_add_test(s, "flat and binomial trees", test_tree) == NULL ||
        CU_add_test(s, "PlogP and PlogP-BR", test_plogp) == NULL ||
        CU_add_test(s, "PlogP-BR on two sites", test_plogp_sites) == NULL ||
        CU_add_test(s, "chooser", test_choose) == NULL ||
        CU_add_test(s, "alltoall: Hockney and PlogP-BR", test_alltoall) == NULL) {
        CU_cleanup_registry();
        return 99;
    }
    return hb_test_run(CU_BRM_VERBOSE);
}
