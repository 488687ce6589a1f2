/* test_hbd_engines.c: CUnit tests of hibard's barrier, fence, collective and dmodex engines, many
 * daemons in one process over a fake transport and a fake clock (tests/hbd_fake.c). */
#include <CUnit/Basic.h>
#include <pmix_server.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_test.h"
#include "coll.h"
#include "coll_sched.h"
#include "hbd_barrier.h"
#include "hbd_coll.h"
#include "hbd_dmodex.h"
#include "hbd_fake.h"
#include "hbd_fence.h"
#include "hb_log.h"
#include "hibar.h"

/* Let time pass: n steps of ms milliseconds, the frames they cause delivered after each. */
static void idle(fk_cluster_t *c, int n, uint64_t ms)
{
    for (int k = 0; k < n; k++) {
        fk_advance(c, ms * 1000000);
        fk_run(c, 1000000);
    }
}

/* ---- barrier ---------------------------------------------------------------------------- */

#define NB 8 /* collectives per run */

typedef struct bar_res {
    int calls[FK_MAX][NB];
    int status[FK_MAX][NB];
} bar_res_t;

static void bar_cb(hbd_t *d, uint64_t coll, int status, void *arg)
{
    bar_res_t *r = arg;
    if (coll < NB) {
        r->calls[d->self][coll]++;
        r->status[d->self][coll] = status;
    }
}

/* Every live node arrives at collectives 0..nb-1, interleaved with deliveries. */
static void bar_arrive_all(fk_cluster_t *c, bar_res_t *r, uint32_t nb, uint32_t skip_node)
{
    for (uint32_t k = 0; k < nb; k++) {
        for (uint32_t i = 0; i < c->n; i++) {
            if (c->dead[i] || i == skip_node)
                continue;
            CU_ASSERT_EQUAL(hbd_barrier_start(&c->d[i], 0, k, bar_cb, r), 0);
            fk_step(c);
        }
        fk_run(c, 4); /* some, not all: the next collective's arrivals overlap this one */
    }
}

/* Cluster shapes the barrier tests run on: chassis, nodes per chassis, fanout. */
static const uint32_t bar_shapes[][3] = {{1, 2, 2}, {4, 1, 2}, {3, 3, 2},
                                         {5, 2, 3}, {2, 4, 0}, {1, 5, 2}};
#define N_SHAPES (sizeof(bar_shapes) / sizeof(bar_shapes[0]))

/* Barriers complete exactly once everywhere, whatever the delivery order and topology. */
static void test_barrier_complete(void)
{
    for (size_t s = 0; s < N_SHAPES; s++)
        for (uint64_t seed = 1; seed <= 5; seed++) {
            fk_cluster_t c;
            bar_res_t *r = calloc(1, sizeof(*r));
            CU_ASSERT_FATAL(r != NULL);
            CU_ASSERT_FATAL(fk_cluster_init(&c, bar_shapes[s][0], bar_shapes[s][1],
                                            bar_shapes[s][2], 30000, seed) == 0);
            bar_arrive_all(&c, r, NB, UINT32_MAX);
            fk_run(&c, 100000);
            for (uint32_t i = 0; i < c.n; i++)
                for (uint32_t k = 0; k < NB; k++) {
                    CU_ASSERT_EQUAL(r->calls[i][k], 1);
                    CU_ASSERT_EQUAL(r->status[i][k], 0);
                }
            for (uint32_t i = 0; i < c.n; i++) {
                CU_ASSERT_EQUAL(hbd_barrier_in_flight(&c.d[i]), 0);
                CU_ASSERT_EQUAL(hbd_barrier_next_coll(&c.d[i]), NB);
            }
            fk_cluster_fini(&c);
            free(r);
        }
}

/* ---- jobs on part of the cluster: an engine per job, its own sync numbers ---- */

static int job_member(const uint32_t *nodes, uint32_t n, uint32_t node)
{
    for (uint32_t i = 0; i < n; i++)
        if (nodes[i] == node)
            return 1;
    return 0;
}

static void job_open(fk_cluster_t *c, uint32_t job, const uint32_t *nodes, uint32_t n,
                     uint32_t node, uint32_t sync)
{
    uint8_t member[FK_MAX] = {0};
    char err[256] = "";
    for (uint32_t i = 0; i < n; i++)
        member[nodes[i]] = 1;
    CU_ASSERT_EQUAL(hbd_barrier_job_open(&c->d[node], job, member, sync, 1, err, sizeof(err)), 0);
}

/* Two jobs on disjoint node sets of 3 chassis of 3 (neither holds every Center) run their
 * barriers at once, one opening late on some nodes (its messages wait there); the other
 * nodes never hear of them. Then a job whose round stays open (a member never arrives) is
 * closed: the counts give the member behind its drain, every engine goes, and the next job on
 * that sync number runs. */
static void test_barrier_jobs(void)
{
    static const uint32_t a[] = {1, 2, 4, 7}, b[] = {0, 3, 5, 8}, cj[] = {0, 1, 2};
    fk_cluster_t c;
    bar_res_t *ra = calloc(1, sizeof(*ra)), *rb = calloc(1, sizeof(*rb));
    CU_ASSERT_FATAL(ra != NULL && rb != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 3, 2, 30000, 11) == 0);
    for (uint32_t i = 0; i < 4; i++)
        job_open(&c, 2, b, 4, b[i], HBD_SYNC_JOB_FIRST + 1);
    job_open(&c, 1, a, 4, a[0], HBD_SYNC_JOB_FIRST); /* job 1 on its first node only, yet */
    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[a[0]], 1, 0, bar_cb, ra), 0);
    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[6], 1, 0, bar_cb, ra), HIBAR_ERR_NOT_FOUND);
    fk_run(&c, 100000);
    for (uint32_t i = 1; i < 4; i++)
        job_open(&c, 1, a, 4, a[i], HBD_SYNC_JOB_FIRST);
    for (uint32_t k = 0; k < NB; k++) {
        for (uint32_t i = 0; i < 4; i++) {
            if (k > 0 || i > 0)
                CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[a[i]], 1, k, bar_cb, ra), 0);
            CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[b[i]], 2, k, bar_cb, rb), 0);
            fk_step(&c);
        }
        fk_run(&c, 3);
    }
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < c.n; i++)
        for (uint32_t k = 0; k < NB; k++) {
            CU_ASSERT_EQUAL(ra->calls[i][k], job_member(a, 4, i));
            CU_ASSERT_EQUAL(rb->calls[i][k], job_member(b, 4, i));
            CU_ASSERT_EQUAL(ra->status[i][k], 0);
            CU_ASSERT_EQUAL(rb->status[i][k], 0);
        }
    CU_ASSERT_EQUAL(hbd_barrier_n_jobs(&c.d[6]), 0);
    for (uint32_t i = 0; i < 4; i++) {
        hbd_barrier_job_close(&c.d[a[i]], 1);
        hbd_barrier_job_close(&c.d[b[i]], 2);
        hbd_barrier_job_drain(&c.d[a[i]], 1, 0); /* clean: nobody behind */
        hbd_barrier_job_drain(&c.d[b[i]], 2, 0);
        CU_ASSERT(!hbd_barrier_job_busy(&c.d[a[i]], 1));
        CU_ASSERT(!hbd_barrier_job_busy(&c.d[b[i]], 2));
    }
    /* job 3 in chassis 0: node 2 never arrives at its barrier */
    uint32_t sync = HBD_SYNC_JOB_FIRST + 2;
    memset(ra, 0, sizeof(*ra));
    for (uint32_t i = 0; i < 3; i++)
        job_open(&c, 3, cj, 3, cj[i], sync);
    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[0], 3, 0, bar_cb, ra), 0);
    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[1], 3, 0, bar_cb, ra), 0);
    fk_run(&c, 100000);
    CU_ASSERT_EQUAL(ra->calls[0][0] + ra->calls[1][0], 0);
    uint32_t cnt[3][16], most = 0;
    for (uint32_t i = 0; i < 3; i++) {
        uint32_t base, n;
        hbd_barrier_job_close(&c.d[i], 3);
        CU_ASSERT_EQUAL(ra->status[i][0], i < 2 ? HIBAR_ERR_UNAVAIL : 0);
        CU_ASSERT_EQUAL(hbd_barrier_job_counts(&c.d[i], 3, &base, &n, cnt[i]), 0);
        CU_ASSERT_EQUAL(base, sync);
        CU_ASSERT_EQUAL(n, 1);
        most = cnt[i][0] > most ? cnt[i][0] : most;
    }
    CU_ASSERT_EQUAL(cnt[0][0], 1);
    CU_ASSERT_EQUAL(cnt[2][0], 0);
    for (uint32_t i = 0; i < 3; i++)
        hbd_barrier_job_drain(&c.d[i], 3, cnt[i][0] < most ? 1ull << sync : 0);
    fk_advance(&c, 1000000);
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < 3; i++)
        CU_ASSERT(!hbd_barrier_job_busy(&c.d[i], 3));
    /* the sync number is clean: job 4 on it completes */
    memset(ra, 0, sizeof(*ra));
    for (uint32_t i = 0; i < 3; i++)
        job_open(&c, 4, cj, 3, cj[i], sync);
    for (uint32_t i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[i], 4, 0, bar_cb, ra), 0);
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(ra->calls[i][0], 1);
        CU_ASSERT_EQUAL(ra->status[i][0], 0);
    }
    fk_cluster_fini(&c);
    free(ra);
    free(rb);
}

/* A job's links come up late (one engine opened late, so a message was kept for it first and
 * the kept messages' 60 s expiry is armed): its messages wait in the engine's queue, retried
 * every millisecond, in order, and go once the links are up; nothing is taken for a lost peer.
 * (With one timer for both, the expiry held the queue back: a barrier timed out under load.) */
static void test_barrier_job_links(void)
{
    static const uint32_t a[] = {1, 4, 7};
    fk_cluster_t c;
    bar_res_t *r = calloc(1, sizeof(*r));
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 3, 2, 30000, 5) == 0);
    job_open(&c, 5, a, 3, a[0], HBD_SYNC_JOB_FIRST);
    job_open(&c, 5, a, 3, a[1], HBD_SYNC_JOB_FIRST);
    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[a[0]], 5, 0, bar_cb, r), 0);
    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[a[1]], 5, 0, bar_cb, r), 0);
    fk_run(&c, 100000); /* a[2] keeps what came for it: its expiry is armed */
    job_open(&c, 5, a, 3, a[2], HBD_SYNC_JOB_FIRST);
    c.links_down = 1;
    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[a[2]], 5, 0, bar_cb, r), 0);
    for (uint32_t k = 1; k < 4; k++)
        for (uint32_t i = 0; i < 3; i++)
            CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[a[i]], 5, k, bar_cb, r), 0);
    idle(&c, 5, 1);
    CU_ASSERT_EQUAL(r->calls[a[0]][3] + r->calls[a[1]][3] + r->calls[a[2]][3], 0);
    c.links_down = 0;
    idle(&c, 20, 2); /* 40 ms: far less than the kept messages' 60 s */
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t k = 0; k < 4; k++) {
            CU_ASSERT_EQUAL(r->calls[a[i]][k], 1);
            CU_ASSERT_EQUAL(r->status[a[i]][k], 0);
        }
    fk_cluster_fini(&c);
    free(r);
}

/* A frame delivered twice is dropped by the engine (and counted), never completes twice. */
static void test_barrier_duplicates(void)
{
    fk_cluster_t c;
    bar_res_t *r = calloc(1, sizeof(*r));
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 4, 2, 2, 30000, 7) == 0);
    c.dup_every = 3;
    bar_arrive_all(&c, r, NB, UINT32_MAX);
    fk_run(&c, 100000);
    uint64_t drops = 0;
    for (uint32_t i = 0; i < c.n; i++) {
        uint64_t dropped, late;
        hbd_barrier_drops(&c.d[i], &dropped, &late);
        drops += dropped + late;
        for (uint32_t k = 0; k < NB; k++) {
            CU_ASSERT_EQUAL(r->calls[i][k], 1);
            CU_ASSERT_EQUAL(r->status[i][k], 0);
        }
    }
    CU_ASSERT(drops > 0);
    fk_cluster_fini(&c);
    free(r);
}

/* A node that never arrives: the others' barrier times out (fake clock), once. */
static void test_barrier_timeout(void)
{
    fk_cluster_t c;
    bar_res_t *r = calloc(1, sizeof(*r));
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 500, 3) == 0);
    bar_arrive_all(&c, r, 1, 5);
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < c.n; i++)
        CU_ASSERT_EQUAL(r->calls[i][0], 0);
    fk_advance(&c, 400ull * 1000000);
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(r->calls[i][0], 0); /* not yet */
    fk_advance(&c, 200ull * 1000000);
    fk_run(&c, 100000);
    fk_advance(&c, 1000ull * 1000000);
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(r->calls[i][0], 1);
        CU_ASSERT_NOT_EQUAL(r->status[i][0], 0);
    }
    CU_ASSERT_EQUAL(r->calls[5][0], 0);
    fk_cluster_fini(&c);
    free(r);
}

/* A node crashes mid-barrier: once it is found lost, every live node's barrier fails with
 * PEER_LOST, once, and new barriers are refused. */
static void test_barrier_peer_lost(void)
{
    for (uint32_t victim = 0; victim < 6; victim += 5) {
        fk_cluster_t c;
        bar_res_t *r = calloc(1, sizeof(*r));
        CU_ASSERT_FATAL(r != NULL);
        CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 30000, 11 + victim) == 0);
        bar_arrive_all(&c, r, 1, UINT32_MAX);
        fk_kill(&c, victim);
        fk_run(&c, 100000);
        fk_lose(&c, victim);
        fk_run(&c, 100000);
        for (uint32_t i = 0; i < c.n; i++) {
            if (i == victim)
                continue;
            /* it may have completed before the crash; else it failed */
            CU_ASSERT_EQUAL(r->calls[i][0], 1);
            if (r->status[i][0] != 0)
                CU_ASSERT_EQUAL(r->status[i][0], HIBAR_ERR_PEER_LOST);
            CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[i], 0, 1, bar_cb, r), HIBAR_ERR_PEER_LOST);
        }
        fk_cluster_fini(&c);
        free(r);
    }
}

/* ---- subset barriers across nodes: an engine per rank set (hbd_barrier_sub_start) ---- */

#define NS 4 /* rank sets per run */

typedef struct sub_res {
    int calls[NS][FK_MAX][NB];
    int status[NS][FK_MAX][NB];
    uint32_t tag[NS];
} sub_res_t;

static void sub_cb(hbd_t *d, uint64_t coll, int status, void *arg)
{
    sub_res_t *r = arg;
    uint32_t seq = (uint32_t)(coll & HBD_BARRIER_SUB_SEQ_MAX);
    for (uint32_t s = 0; s < NS; s++)
        if (hbd_barrier_sub_tag(coll) == r->tag[s] && seq >= 1 && seq <= NB) {
            r->calls[s][d->self][seq - 1]++;
            r->status[s][d->self][seq - 1] = status;
        }
}

/* Node set s of a run: a seeded pick of 2..n nodes (set 0: every other node). */
static void sub_pick(uint32_t n, uint32_t s, uint64_t seed, uint8_t member[FK_MAX])
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + s * 0xBF58476D1CE4E5B9ull + 1;
    uint32_t k = 0;
    memset(member, 0, FK_MAX);
    for (uint32_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        member[i] = s == 0 ? i % 2 == 0 : (x >> 11) % 3 != 0;
        k += member[i];
    }
    for (uint32_t i = 0; k < 2 && i < n; i++)
        if (!member[i]) {
            member[i] = 1;
            k++;
        }
}

/* Subset barriers over several topologies: NS overlapping node sets of one job on every node,
 * NB barriers each, interleaved with the job's whole barriers and one another, delivered in a
 * seeded random order: each completes once on its members only, never before the last member
 * arrived. */
static void test_barrier_subsets(void)
{
    for (size_t sh = 0; sh < N_SHAPES; sh++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            fk_cluster_t c;
            sub_res_t *r = calloc(1, sizeof(*r));
            bar_res_t *w = calloc(1, sizeof(*w));
            uint8_t member[NS][FK_MAX], all[FK_MAX];
            char err[256] = "";
            CU_ASSERT_FATAL(r != NULL && w != NULL);
            CU_ASSERT_FATAL(fk_cluster_init(&c, bar_shapes[sh][0], bar_shapes[sh][1],
                                            bar_shapes[sh][2], 30000, seed) == 0);
            memset(all, 1, sizeof(all));
            for (uint32_t i = 0; i < c.n; i++)
                CU_ASSERT_EQUAL(
                    hbd_barrier_job_open(&c.d[i], 1, all, HBD_SYNC_JOB_FIRST, 1, err, sizeof(err)),
                    0);
            for (uint32_t s = 0; s < NS; s++) {
                sub_pick(c.n, s, seed, member[s]);
                r->tag[s] = 0x5ab0000u + s;
            }
            /* set 0's first barrier: every member but the last arrives, nothing completes */
            uint32_t last = 0;
            for (uint32_t i = 0; i < c.n; i++)
                last = member[0][i] ? i : last;
            for (uint32_t i = 0; i < last; i++)
                if (member[0][i])
                    CU_ASSERT_EQUAL(
                        hbd_barrier_sub_start(&c.d[i], 1, r->tag[0], member[0], 1, sub_cb, r), 0);
            fk_run(&c, 100000);
            for (uint32_t i = 0; i < c.n; i++)
                CU_ASSERT_EQUAL(r->calls[0][i][0], 0);
            CU_ASSERT_EQUAL(
                hbd_barrier_sub_start(&c.d[last], 1, r->tag[0], member[0], 1, sub_cb, r), 0);
            for (uint32_t k = 0; k < NB; k++) {
                for (uint32_t i = 0; i < c.n; i++) {
                    CU_ASSERT_EQUAL(hbd_barrier_start(&c.d[i], 1, k, bar_cb, w), 0);
                    /* the sets in another order on every node */
                    for (uint32_t t = 0; t < NS; t++) {
                        uint32_t s = (t + i) % NS;
                        if (member[s][i] && (s != 0 || k > 0))
                            CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[i], 1, r->tag[s], member[s],
                                                                  k + 1, sub_cb, r),
                                            0);
                    }
                    fk_step(&c);
                }
                fk_run(&c, 5);
            }
            fk_run(&c, 1000000);
            for (uint32_t i = 0; i < c.n; i++) {
                for (uint32_t k = 0; k < NB; k++) {
                    CU_ASSERT_EQUAL(w->calls[i][k], 1);
                    CU_ASSERT_EQUAL(w->status[i][k], 0);
                    for (uint32_t s = 0; s < NS; s++) {
                        CU_ASSERT_EQUAL(r->calls[s][i][k], member[s][i]);
                        CU_ASSERT_EQUAL(r->status[s][i][k], 0);
                    }
                }
                CU_ASSERT_EQUAL(hbd_barrier_in_flight(&c.d[i]), 0);
            }
            /* a tag already naming another node set or rank set here is refused; so is a seq
             * gone by */
            uint64_t other = r->tag[1] ^ 0x100000001ull; /* another key, the same tag */
            for (uint32_t i = 0; i < c.n; i++)
                if (member[1][i] && memcmp(member[1], member[2], c.n) != 0 && member[2][i]) {
                    CU_ASSERT_EQUAL(
                        hbd_barrier_sub_start(&c.d[i], 1, r->tag[1], member[2], NB + 1, sub_cb, r),
                        HIBAR_ERR_MISMATCH);
                    CU_ASSERT_EQUAL(
                        hbd_barrier_sub_start(&c.d[i], 1, other, member[1], NB + 1, sub_cb, r),
                        HIBAR_ERR_MISMATCH);
                    CU_ASSERT_EQUAL(
                        hbd_barrier_sub_start(&c.d[i], 1, r->tag[1], member[1], 1, sub_cb, r),
                        HIBAR_ERR_BUSY);
                }
            for (uint32_t i = 0; i < c.n; i++) {
                hbd_barrier_job_close(&c.d[i], 1);
                hbd_barrier_job_drain(&c.d[i], 1, 0);
            }
            fk_cluster_fini(&c);
            free(r);
            free(w);
        }
}

/* A member node crashes in the middle of a subset barrier: once it is found lost, the other
 * members' barrier fails with PEER_LOST, once; a subset engine without it goes on; the job's
 * new subset barriers are refused. Without an engine for the job, NOT_FOUND. */
static void test_barrier_subset_lost(void)
{
    fk_cluster_t c;
    sub_res_t *r = calloc(1, sizeof(*r));
    uint8_t all[FK_MAX], with[FK_MAX] = {0}, without[FK_MAX] = {0};
    char err[256] = "";
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 3, 2, 30000, 21) == 0);
    memset(all, 1, sizeof(all));
    CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[0], 1, 7, all, 1, sub_cb, r), HIBAR_ERR_NOT_FOUND);
    for (uint32_t i = 0; i < c.n; i++)
        CU_ASSERT_EQUAL(
            hbd_barrier_job_open(&c.d[i], 1, all, HBD_SYNC_JOB_FIRST, 1, err, sizeof(err)), 0);
    static const uint32_t a[] = {1, 4, 5, 7}, b[] = {0, 2, 3};
    for (uint32_t i = 0; i < 4; i++)
        with[a[i]] = 1;
    for (uint32_t i = 0; i < 3; i++)
        without[b[i]] = 1;
    r->tag[0] = 11;
    r->tag[1] = 12;
    /* the subset without the victim (node 5) opens first and stays open */
    for (uint32_t i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[b[i]], 1, 12, without, 1, sub_cb, r), 0);
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < 4; i++)
        if (a[i] != 5)
            CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[a[i]], 1, 11, with, 1, sub_cb, r), 0);
    for (uint32_t i = 0; i < 2; i++) /* the other subset's second barrier in flight */
        CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[b[i]], 1, 12, without, 2, sub_cb, r), 0);
    fk_run(&c, 100000);
    fk_kill(&c, 5);
    fk_lose(&c, 5);
    fk_run(&c, 100000);
    for (uint32_t i = 0; i < 4; i++) {
        if (a[i] == 5)
            continue;
        CU_ASSERT_EQUAL(r->calls[0][a[i]][0], 1);
        CU_ASSERT_EQUAL(r->status[0][a[i]][0], HIBAR_ERR_PEER_LOST);
        CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[a[i]], 1, 11, with, 2, sub_cb, r),
                        HIBAR_ERR_PEER_LOST);
    }
    CU_ASSERT_EQUAL(r->calls[1][b[0]][0], 1);
    CU_ASSERT_EQUAL(r->status[1][b[0]][0], 0);
    /* the engine without the lost node finishes what it has in flight */
    CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[b[2]], 1, 12, without, 2, sub_cb, r),
                    HIBAR_ERR_PEER_LOST); /* a new one: the job has lost a node */
    CU_ASSERT_EQUAL(r->calls[1][b[0]][1], 0);
    for (uint32_t i = 0; i < 3; i++)
        hbd_barrier_job_close(&c.d[b[i]], 1);
    for (uint32_t i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(r->calls[1][b[i]][1], 1);
        CU_ASSERT_EQUAL(r->status[1][b[i]][1], HIBAR_ERR_UNAVAIL);
    }
    fk_cluster_fini(&c);
    free(r);
}

/* Many rank sets, more than a job keeps engines of (node 0 is in all 80): the idle ones go and
 * open again where their count stood; every barrier of every set completes once on its
 * members. */
#define NMANY 80
typedef int many_res_t[NMANY][FK_MAX][3];

static void many_cb(hbd_t *d, uint64_t coll, int status, void *arg)
{
    int(*ok)[FK_MAX][3] = arg;
    uint32_t s = hbd_barrier_sub_tag(coll) - 100, seq = (uint32_t)(coll & HBD_BARRIER_SUB_SEQ_MAX);
    if (s < NMANY && seq >= 1 && seq <= 3)
        ok[s][d->self][seq - 1] += status == 0 ? 1 : 100;
}

static void test_barrier_subset_many(void)
{
    fk_cluster_t c;
    uint8_t all[FK_MAX], member[NMANY][FK_MAX];
    char err[256] = "";
    int(*many_ok)[FK_MAX][3] = calloc(1, sizeof(many_res_t));
    CU_ASSERT_FATAL(many_ok != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 3, 2, 30000, 31) == 0);
    memset(all, 1, sizeof(all));
    for (uint32_t i = 0; i < c.n; i++)
        CU_ASSERT_EQUAL(
            hbd_barrier_job_open(&c.d[i], 1, all, HBD_SYNC_JOB_FIRST, 1, err, sizeof(err)), 0);
    for (uint32_t s = 0; s < NMANY; s++)
        for (uint32_t i = 0; i < c.n; i++)
            member[s][i] = i == 0 || i == 1 + s % (c.n - 1) || i == 1 + (s * 7) % (c.n - 1);
    for (uint32_t seq = 1; seq <= 3; seq++)
        for (uint32_t s = 0; s < NMANY; s++) {
            if (seq == 3 && s % 8 != 0)
                continue; /* the third round: a few, long after their engines went idle */
            for (uint32_t i = 0; i < c.n; i++)
                if (member[s][i])
                    CU_ASSERT_EQUAL(hbd_barrier_sub_start(&c.d[i], 1, 100 + s, member[s], seq,
                                                          many_cb, many_ok),
                                    0);
            fk_run(&c, 100000);
        }
    for (uint32_t s = 0; s < NMANY; s++)
        for (uint32_t i = 0; i < c.n; i++)
            for (uint32_t seq = 1; seq <= 3; seq++)
                CU_ASSERT_EQUAL(many_ok[s][i][seq - 1],
                                member[s][i] && (seq < 3 || s % 8 == 0) ? 1 : 0);
    for (uint32_t i = 0; i < c.n; i++)
        hbd_barrier_job_close(&c.d[i], 1);
    fk_cluster_fini(&c);
    free(many_ok);
}

/* ---- fence ------------------------------------------------------------------------------ */

typedef struct fence_res {
    int calls[FK_MAX];
    int status[FK_MAX];
    uint8_t *data[FK_MAX];
    size_t len[FK_MAX];
} fence_res_t;

static void fence_cb(hbd_t *d, int status, uint8_t *data, size_t len, void *arg)
{
    fence_res_t *r = arg;
    r->calls[d->self]++;
    r->status[d->self] = status;
    r->data[d->self] = data;
    r->len[d->self] = len;
}

static void fence_res_free(fence_res_t *r)
{
    for (uint32_t i = 0; i < FK_MAX; i++)
        free(r->data[i]);
    memset(r, 0, sizeof(*r));
}

/* Node i's blob: i + 1 bytes of value i (node 0 a bigger one, several chunks). */
static size_t blob(uint32_t i, uint8_t *buf, size_t cap)
{
    size_t n = i == 0 ? cap : i + 1;
    memset(buf, (int)i, n);
    return n;
}

/* The trim of the release for fence_start_all's fences, or NULL. */
static hbd_fence_trim_t fence_trim_fn;

/* Start fence coll on the listed nodes (NULL: every node), with deliveries in between. */
static void fence_start_all(fk_cluster_t *c, fence_res_t *r, uint64_t coll, const uint32_t *nodes,
                            uint32_t n_nodes, uint32_t skip)
{
    static uint8_t buf[600000];
    uint32_t n = nodes != NULL ? n_nodes : c->n;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = nodes != NULL ? nodes[k] : k;
        if (i == skip || c->dead[i])
            continue;
        size_t len = blob(i, buf, sizeof(buf));
        uint8_t *copy = malloc(len);
        CU_ASSERT_FATAL(copy != NULL);
        memcpy(copy, buf, len);
        CU_ASSERT_EQUAL(hbd_fence_start_trimmed(&c->d[i], coll, nodes, n_nodes, 0, copy, len,
                                                fence_trim_fn, fence_cb, r),
                        0);
        fk_step(c);
    }
}

/* A trim that keeps the blobs (runs of one value, see blob) of the nodes at and below kid. */
static int trim_below(hbd_t *d, void *arg, int star, uint32_t kid, const uint8_t *all, size_t len,
                      uint8_t **out, size_t *out_len)
{
    (void)arg;
    uint8_t *o = malloc(len ? len : 1);
    size_t w = 0;
    if (o == NULL)
        return HIBAR_ERR_NOMEM;
    for (size_t off = 0; off < len;) {
        size_t run = 0;
        while (off + run < len && all[off + run] == all[off])
            run++;
        if (hbd_fence_under(d, star, kid, all[off])) {
            memcpy(o + w, all + off, run);
            w += run;
        }
        off += run;
    }
    *out = o;
    *out_len = w;
    return 1;
}

/* With trim_below: every participant gets exactly the blobs of the nodes at and below it (the
 * tree's root, or a subset's leader: all). */
static void test_fence_trim(void)
{
    static const uint32_t sub[] = {1, 2, 4, 7};
    static uint8_t buf[600000];
    fence_trim_fn = trim_below;
    for (int subset = 0; subset <= 1; subset++) {
        fk_cluster_t c;
        fence_res_t *r = calloc(1, sizeof(*r));
        CU_ASSERT_FATAL(r != NULL);
        CU_ASSERT_FATAL(fk_cluster_init(&c, 4, 2, 2, 30000, 3) == 0);
        fence_start_all(&c, r, subset ? HBD_FENCE_ID_SUBSET | 1 : 1, subset ? sub : NULL,
                        subset ? 4 : 0, UINT32_MAX);
        fk_run(&c, 1000000);
        /* the tree's root is node 0: every node is below it; a subset's leader is its first */
        uint32_t n = subset ? 4 : c.n, top = subset ? sub[0] : 0;
        for (uint32_t q = 0; q < c.n; q++)
            CU_ASSERT(hbd_fence_under(&c.d[0], 0, 0, q));
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = subset ? sub[k] : k;
            CU_ASSERT_EQUAL(r->calls[i], 1);
            CU_ASSERT_EQUAL(r->status[i], 0);
            size_t want = 0;
            for (uint32_t kq = 0; kq < n; kq++) {
                uint32_t q = subset ? sub[kq] : kq;
                if (i == top || hbd_fence_under(&c.d[i], subset, i, q))
                    want += blob(q, buf, sizeof(buf));
            }
            CU_ASSERT_EQUAL(r->len[i], want);
            if (i != top)
                CU_ASSERT(r->len[i] < r->len[top]);
            for (size_t off = 0; r->data[i] != NULL && i != top && off < r->len[i]; off++)
                if (!hbd_fence_under(&c.d[i], subset, i, r->data[i][off])) {
                    CU_FAIL("a blob from outside the node's subtree");
                    break;
                }
        }
        fence_res_free(r);
        fk_cluster_fini(&c);
        free(r);
    }
    fence_trim_fn = NULL;
}

/* Every participant gets every participant's blob exactly once, whole, and the same bytes as
 * every other participant (the order is the engine's: PMIx blobs describe themselves). */
static void fence_check(const fk_cluster_t *c, const fence_res_t *r, const uint32_t *nodes,
                        uint32_t n_nodes)
{
    static uint8_t buf[600000];
    uint32_t n = nodes != NULL ? n_nodes : c->n, first = nodes != NULL ? nodes[0] : 0;
    size_t wl = 0;
    for (uint32_t k = 0; k < n; k++)
        wl += blob(nodes != NULL ? nodes[k] : k, buf, sizeof(buf));
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = nodes != NULL ? nodes[k] : k;
        CU_ASSERT_EQUAL(r->calls[i], 1);
        CU_ASSERT_EQUAL(r->status[i], 0);
        CU_ASSERT_EQUAL(r->len[i], wl);
        CU_ASSERT(r->data[i] != NULL && r->len[i] == r->len[first] &&
                  memcmp(r->data[i], r->data[first], wl) == 0);
    }
    /* runs of one value each: node v's blob */
    int seen[FK_MAX] = {0};
    const uint8_t *p = r->data[first];
    for (size_t off = 0; p != NULL && off < r->len[first];) {
        uint8_t v = p[off];
        size_t run = 0;
        while (off + run < r->len[first] && p[off + run] == v)
            run++;
        CU_ASSERT(v < FK_MAX && !seen[v] && run == blob(v, buf, sizeof(buf)));
        if (v < FK_MAX)
            seen[v] = 1;
        off += run;
    }
    for (uint32_t k = 0; k < n; k++)
        CU_ASSERT(seen[nodes != NULL ? nodes[k] : k]);
}

static void test_fence_tree(void)
{
    static const uint32_t shapes[][3] = {{1, 3, 2}, {4, 1, 2}, {3, 3, 2}, {5, 2, 3}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            fk_cluster_t c;
            fence_res_t *r = calloc(1, sizeof(*r));
            CU_ASSERT_FATAL(r != NULL);
            CU_ASSERT_FATAL(
                fk_cluster_init(&c, shapes[s][0], shapes[s][1], shapes[s][2], 30000, seed) == 0);
            fence_start_all(&c, r, 1, NULL, 0, UINT32_MAX);
            fk_run(&c, 1000000);
            fence_check(&c, r, NULL, 0);
            fence_res_free(r);
            /* the next fence on the same daemons, with duplicated frames */
            c.dup_every = 2;
            fence_start_all(&c, r, 2, NULL, 0, UINT32_MAX);
            fk_run(&c, 1000000);
            fence_check(&c, r, NULL, 0);
            fence_res_free(r);
            fk_cluster_fini(&c);
            free(r);
        }
}

static void test_fence_subset(void)
{
    static const uint32_t sub[] = {1, 2, 4, 7};
    fk_cluster_t c;
    fence_res_t *r = calloc(1, sizeof(*r));
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 4, 2, 2, 30000, 5) == 0);
    fence_start_all(&c, r, HBD_FENCE_ID_SUBSET | 1, sub, 4, UINT32_MAX);
    fk_run(&c, 1000000);
    fence_check(&c, r, sub, 4);
    CU_ASSERT_EQUAL(r->calls[0], 0);
    CU_ASSERT_EQUAL(r->calls[3], 0);
    fence_res_free(r);
    fk_cluster_fini(&c);
    free(r);
}

/* A node that never contributes: everyone else's fence times out (fake clock), once. */
static void test_fence_timeout(void)
{
    fk_cluster_t c;
    fence_res_t *r = calloc(1, sizeof(*r));
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 500, 9) == 0);
    fence_start_all(&c, r, 1, NULL, 0, 4);
    fk_run(&c, 1000000);
    fk_advance(&c, 300ull * 1000000);
    for (uint32_t i = 0; i < c.n; i++)
        CU_ASSERT_EQUAL(r->calls[i], 0);
    fk_advance(&c, 400ull * 1000000);
    fk_run(&c, 1000000);
    for (uint32_t i = 0; i < c.n; i++) {
        CU_ASSERT_EQUAL(r->calls[i], i == 4 ? 0 : 1);
        if (i != 4)
            CU_ASSERT_EQUAL(r->status[i], HIBAR_ERR_TIMEOUT);
    }
    fence_res_free(r);
    fk_cluster_fini(&c);
    free(r);
}

/* A node crashes before it contributes: once it is lost, the fences fail with PEER_LOST and
 * new ones are refused. */
static void test_fence_peer_lost(void)
{
    fk_cluster_t c;
    fence_res_t *r = calloc(1, sizeof(*r));
    uint8_t one = 1;
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 30000, 13) == 0);
    fk_kill(&c, 3);
    fence_start_all(&c, r, 1, NULL, 0, 3);
    fk_run(&c, 1000000);
    fk_lose(&c, 3);
    fk_advance(&c, 200ull * 1000000); /* the fences' check */
    fk_run(&c, 1000000);
    for (uint32_t i = 0; i < c.n; i++) {
        if (i == 3)
            continue;
        CU_ASSERT_EQUAL(r->calls[i], 1);
        CU_ASSERT_EQUAL(r->status[i], HIBAR_ERR_PEER_LOST);
        CU_ASSERT_EQUAL(hbd_fence_start(&c.d[i], 2, NULL, 0, 0, &one, 1, fence_cb, r),
                        HIBAR_ERR_PEER_LOST);
    }
    fence_res_free(r);
    fk_cluster_fini(&c);
    free(r);
}

/* ---- collectives ------------------------------------------------------------------------ */

#define CSIZE 3000 /* bytes per rank: several segments */

typedef struct coll_res {
    int calls[FK_MAX];
    int status[FK_MAX];
    int ok[FK_MAX]; /* the output was right */
    uint32_t n;
    int op;
    uint32_t root;
} coll_res_t;

static const uint32_t ranks_of[FK_MAX] = {1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

static void coll_cb(hbd_t *d, int status, const struct hb_coll_sched *s,
                    const struct hb_coll_exec *x, void *arg)
{
    coll_res_t *r = arg;
    uint32_t me = d->self;
    (void)s;
    r->calls[me]++;
    r->status[me] = status;
    if (status != 0 || x == NULL)
        return;
    int ok = 1;
    for (uint32_t v = 0; v < r->n; v++) {
        uint64_t len = 0;
        if (r->op == HB_COLL_BCAST && v != 0)
            break;
        const uint8_t *b = hb_coll_exec_block(x, v, &len);
        uint64_t want = r->op == HB_COLL_BCAST ? CSIZE : (uint64_t)CSIZE * ranks_of[v];
        uint8_t val = (uint8_t)(r->op == HB_COLL_BCAST ? r->root + 1 : v + 1);
        ok &= b != NULL && len == want;
        for (uint64_t k = 0; ok && k < len; k++)
            ok &= b[k] == val;
    }
    r->ok[me] = ok;
}

/* Every live node but `skip` starts collective id (op, root). */
static void coll_start_all(fk_cluster_t *c, coll_res_t *r, uint64_t id, int op, uint32_t root,
                           uint32_t skip)
{
    hbd_coll_job_args_t a = {.op = op, .root = root, .size = CSIZE, .ranks_of = ranks_of};
    r->n = c->n;
    r->op = op;
    r->root = root;
    for (uint32_t i = 0; i < c->n; i++) {
        if (i == skip || c->dead[i])
            continue;
        uint64_t len = 0;
        uint8_t *in = NULL;
        if (op == HB_COLL_ALLGATHER) {
            len = (uint64_t)CSIZE * ranks_of[i];
            in = malloc(len);
            memset(in, (int)i + 1, len);
        } else if (i == root) {
            len = CSIZE;
            in = malloc(len);
            memset(in, (int)root + 1, len);
        }
        hbd_coll_run_t *run = NULL;
        CU_ASSERT_EQUAL_FATAL(hbd_coll_job_create(&c->d[i], id, &a, in, len, &run), 0);
        hbd_coll_job_start(&c->d[i], run, coll_cb, r);
        fk_step(c);
    }
}

/* One collective on every node (n_ch chassis of 2), every k-th frame delivered twice: each
 * node's part ends once, with the right output. */
static void coll_case(const char *alg, int op, uint32_t root, uint32_t n_ch, int dup_every,
                      uint64_t seed)
{
    fk_cluster_t c;
    coll_res_t r;
    memset(&r, 0, sizeof(r));
    setenv("HIBAR_COLL_ALG", alg, 1);
    CU_ASSERT_FATAL(fk_cluster_init(&c, n_ch, 2, 2, 30000, seed) == 0);
    c.dup_every = dup_every;
    coll_start_all(&c, &r, HBD_COLL_ID_JOB | 1, op, root % c.n, UINT32_MAX);
    fk_run(&c, 1000000);
    for (uint32_t i = 0; i < c.n; i++) {
        CU_ASSERT_EQUAL(r.calls[i], 1);
        CU_ASSERT_EQUAL(r.status[i], 0);
        CU_ASSERT(r.ok[i]);
    }
    fk_cluster_fini(&c);
    unsetenv("HIBAR_COLL_ALG");
}

static void test_coll_complete(void)
{
    static const char *const algs[] = {"flat", "binomial"};
    static const int ops[] = {HB_COLL_ALLGATHER, HB_COLL_BCAST};
    for (size_t a = 0; a < 2; a++)
        for (size_t o = 0; o < 2; o++)
            for (uint64_t seed = 1; seed <= 3; seed++)
                coll_case(algs[a], ops[o], (uint32_t)seed, 3, 0, seed);
}

/* Segments delivered twice do not complete a collective twice nor spoil its output. */
static void test_coll_duplicates(void)
{
    coll_case("binomial", HB_COLL_ALLGATHER, 0, 4, 3, 21);
    coll_case("flat", HB_COLL_BCAST, 2, 3, 2, 22);
}

/* A node that never starts: the others time out (HIBAR_COLL_TIMEOUT_MS, fake clock). */
static void test_coll_timeout(void)
{
    fk_cluster_t c;
    coll_res_t r;
    memset(&r, 0, sizeof(r));
    setenv("HIBAR_COLL_ALG", "flat", 1);
    setenv("HIBAR_COLL_TIMEOUT_MS", "500", 1);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 30000, 23) == 0);
    coll_start_all(&c, &r, HBD_COLL_ID_JOB | 1, HB_COLL_ALLGATHER, 0, 4);
    fk_run(&c, 1000000);
    for (uint32_t i = 0; i < c.n; i++)
        CU_ASSERT_EQUAL(r.calls[i], 0);
    idle(&c, 20, 50);
    for (uint32_t i = 0; i < c.n; i++) {
        if (i == 4)
            continue;
        CU_ASSERT_EQUAL(r.calls[i], 1);
        CU_ASSERT_EQUAL(r.status[i], HIBAR_ERR_TIMEOUT);
    }
    fk_cluster_fini(&c);
    unsetenv("HIBAR_COLL_TIMEOUT_MS");
    unsetenv("HIBAR_COLL_ALG");
}

/* A node crashes: once it is lost every live node's collective fails with PEER_LOST. */
static void test_coll_peer_lost(void)
{
    fk_cluster_t c;
    coll_res_t r;
    memset(&r, 0, sizeof(r));
    setenv("HIBAR_COLL_ALG", "binomial", 1);
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 30000, 29) == 0);
    fk_kill(&c, 2);
    coll_start_all(&c, &r, HBD_COLL_ID_JOB | 1, HB_COLL_ALLGATHER, 0, 2);
    fk_run(&c, 1000000);
    fk_lose(&c, 2);
    fk_run(&c, 1000000);
    fk_advance(&c, 100ull * 1000000);
    for (uint32_t i = 0; i < c.n; i++) {
        if (i == 2)
            continue;
        CU_ASSERT_EQUAL(r.calls[i], 1);
        CU_ASSERT_EQUAL(r.status[i], HIBAR_ERR_PEER_LOST);
    }
    fk_cluster_fini(&c);
    unsetenv("HIBAR_COLL_ALG");
}

/* ---- direct modex ------------------------------------------------------------------------ */

typedef struct dm_res {
    int calls;
    pmix_status_t status;
    char data[64];
    size_t len;
} dm_res_t;

static void dm_cb(pmix_status_t status, const char *data, size_t ndata, void *cbdata,
                  pmix_release_cbfunc_t release_fn, void *release_cbdata)
{
    dm_res_t *r = cbdata;
    r->calls++;
    r->status = status;
    r->len = ndata < sizeof(r->data) ? ndata : sizeof(r->data);
    if (data != NULL)
        memcpy(r->data, data, r->len);
    if (release_fn != NULL)
        release_fn(release_cbdata);
}

/* Node `from` asks for rank's data (required key: key, or NULL). */
static void dm_ask(fk_cluster_t *c, uint32_t from, const char *nspace, uint32_t rank,
                   const char *key, uint32_t timeout_ms, dm_res_t *r)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, nspace, rank);
    fk_on(c, from);
    hbd_dmodex_request(&c->d[from], &p, key, timeout_ms, (hbd_fn_t)dm_cb, r);
}

static int dm_is(const dm_res_t *r, uint32_t rank)
{
    char want[64];
    size_t n = fk_blob(rank, want, sizeof(want));
    return r->calls == 1 && r->status == PMIX_SUCCESS && r->len == n &&
           memcmp(r->data, want, n) == 0;
}

/* Every node asks for every rank (hop by hop on the chassis data tree), also its own. */
static void test_dmodex_fetch(void)
{
    static dm_res_t r[FK_MAX][2 * FK_MAX];
    for (uint64_t seed = 1; seed <= 3; seed++) {
        fk_cluster_t c;
        memset(r, 0, sizeof(r));
        CU_ASSERT_FATAL(fk_cluster_init(&c, 4, 2, 2, 30000, seed) == 0);
        c.dup_every = seed == 3 ? 2 : 0; /* duplicated requests and replies */
        fk_job_add(&c, 2 * c.n);
        for (uint32_t i = 0; i < c.n; i++)
            for (uint32_t k = 0; k < 2 * c.n; k++) {
                dm_ask(&c, i, FK_NSPACE, k, NULL, 0, &r[i][k]);
                fk_step(&c);
            }
        fk_run(&c, 1000000);
        for (uint32_t i = 0; i < c.n; i++)
            for (uint32_t k = 0; k < 2 * c.n; k++)
                CU_ASSERT(dm_is(&r[i][k], k));
        fk_cluster_fini(&c);
    }
}

/* An unknown namespace or rank: NOT_FOUND at once. */
static void test_dmodex_unknown(void)
{
    fk_cluster_t c;
    dm_res_t a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    CU_ASSERT_FATAL(fk_cluster_init(&c, 2, 2, 2, 30000, 1) == 0);
    fk_job_add(&c, 4);
    dm_ask(&c, 0, "hibar.2", 1, NULL, 0, &a);
    dm_ask(&c, 0, FK_NSPACE, 4, NULL, 0, &b);
    CU_ASSERT(a.calls == 1 && a.status == PMIX_ERR_NOT_FOUND);
    CU_ASSERT(b.calls == 1 && b.status == PMIX_ERR_NOT_FOUND);
    fk_cluster_fini(&c);
}

/* A required key: the host waits until the rank commits it (looked up again and again), then
 * serves; a key never committed ends in TIMEOUT, answered once. */
static void test_dmodex_key_wait(void)
{
    fk_cluster_t c;
    dm_res_t a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 30000, 4) == 0);
    fk_job_add(&c, 6);
    dm_ask(&c, 0, FK_NSPACE, 5, "my.key", 2000, &a);
    dm_ask(&c, 1, FK_NSPACE, 4, "my.key", 500, &b);
    idle(&c, 10, 20);
    CU_ASSERT_EQUAL(a.calls, 0);
    CU_ASSERT_EQUAL(b.calls, 0);
    fk_key_commit(5);
    idle(&c, 10, 40);
    CU_ASSERT(dm_is(&a, 5));
    idle(&c, 20, 100);
    CU_ASSERT_EQUAL(b.calls, 1);
    CU_ASSERT_EQUAL(b.status, PMIX_ERR_TIMEOUT);
    CU_ASSERT_EQUAL(a.calls, 1);
    fk_cluster_fini(&c);
}

/* The hosting node crashes: once it is lost the request ends in COMM_FAILURE. */
static void test_dmodex_peer_lost(void)
{
    fk_cluster_t c;
    dm_res_t a;
    memset(&a, 0, sizeof(a));
    CU_ASSERT_FATAL(fk_cluster_init(&c, 3, 2, 2, 30000, 6) == 0);
    fk_job_add(&c, 6);
    fk_kill(&c, 3);
    dm_ask(&c, 0, FK_NSPACE, 3, NULL, 0, &a);
    fk_run(&c, 1000000);
    CU_ASSERT_EQUAL(a.calls, 0);
    fk_lose(&c, 3);
    fk_advance(&c, 200ull * 1000000);
    fk_run(&c, 1000000);
    CU_ASSERT_EQUAL(a.calls, 1);
    CU_ASSERT_EQUAL(a.status, PMIX_ERR_COMM_FAILURE);
    fk_cluster_fini(&c);
}

int main(void)
{
    hb_log_init_from_env();
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite b = CU_add_suite("barrier engine", NULL, NULL);
    CU_pSuite f = CU_add_suite("fence engine", NULL, NULL);
    CU_pSuite k = CU_add_suite("collective engine", NULL, NULL);
    CU_pSuite x = CU_add_suite("dmodex engine", NULL, NULL);
    if (b == NULL || f == NULL || k == NULL || x == NULL ||
        !CU_add_test(b, "jobs on part of the cluster", test_barrier_jobs) ||
        !CU_add_test(b, "a job's links come up late", test_barrier_job_links) ||
        !CU_add_test(x, "fetch", test_dmodex_fetch) ||
        !CU_add_test(x, "unknown", test_dmodex_unknown) ||
        !CU_add_test(x, "key wait", test_dmodex_key_wait) ||
        !CU_add_test(x, "peer lost", test_dmodex_peer_lost) ||
        !CU_add_test(k, "complete", test_coll_complete) ||
        !CU_add_test(k, "duplicates", test_coll_duplicates) ||
        !CU_add_test(k, "timeout", test_coll_timeout) ||
        !CU_add_test(k, "peer lost", test_coll_peer_lost) ||
        !CU_add_test(b, "complete", test_barrier_complete) ||
        !CU_add_test(b, "duplicates", test_barrier_duplicates) ||
        !CU_add_test(b, "timeout", test_barrier_timeout) ||
        !CU_add_test(b, "peer lost", test_barrier_peer_lost) ||
        !CU_add_test(b, "subsets", test_barrier_subsets) ||
        !CU_add_test(b, "subset member lost", test_barrier_subset_lost) ||
        !CU_add_test(b, "many subsets", test_barrier_subset_many) ||
        !CU_add_test(f, "tree", test_fence_tree) || !CU_add_test(f, "subset", test_fence_subset) ||
        !CU_add_test(f, "trim", test_fence_trim) ||
        !CU_add_test(f, "timeout", test_fence_timeout) ||
        !CU_add_test(f, "peer lost", test_fence_peer_lost))
        return 99;
    return hb_test_run(CU_BRM_VERBOSE);
}
