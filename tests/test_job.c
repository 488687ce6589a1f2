/* test_job.c: the job object's lifetime (daemon/job/hbd_job.c): made by the first part that makes
 * a job known (the relay, the launcher), freed when the last one lets go, in either order. */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hb_test.h"
#include "hbd_job.h"
#include "topo.h"

/*
 * The parts as their modules set them: the relay (launch/hbd_relay.c) points j->relay at its
 * record, the launcher (launch/hbd_launch.c) sets launched with its local ranks and counts them
 * for the waiting rule; each clears its part, then calls hbd_job_release. The relay and the
 * launcher themselves need a loop, sockets and processes: run_relay.sh, jobs_lost.sh (an origin
 * with no rank of the job) and the run_*.sh scripts drive them.
 */
static struct rl_job *const RELAY = (struct rl_job *)&RELAY; /* any non-NULL record */

static void relay_on(hbd_job_t *j)
{
    j->relay = RELAY;
}

static void relay_off(hbd_job_t *j)
{
    j->relay = NULL;
    hbd_job_release(j);
}

static void launch_on(hbd_job_t *j, uint32_t n_local)
{
    j->launched = 1;
    j->n_local = n_local;
    hbd_job_count(j);
}

static void launch_off(hbd_job_t *j)
{
    hbd_job_done(j);
    j->n_local = 0;
    j->done_sent = 0;
    j->launched = 0;
    hbd_job_release(j);
}

static hbd_job_t *open_job(hbd_t *d, uint64_t id)
{
    hbd_job_t *j = NULL;
    CU_ASSERT_EQUAL_FATAL(hbd_job_open(d, id, &j), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

static void test_relay_alone(void)
{
    hbd_t d;
    memset(&d, 0, sizeof(d));
    hbd_job_t *j = open_job(&d, 7);
    relay_on(j); /* the origin of a job placed elsewhere */
    CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 7), j);
    CU_ASSERT_STRING_EQUAL(j->nspace, "hibar.7");
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 1);
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 0);        /* the waiting rule counts no rank of it */
    CU_ASSERT_PTR_NULL(hbd_job_find(&d, "hibar.7")); /* PMIx and dmodex: no ranks here */
    j->jobno = 3;
    CU_ASSERT_PTR_EQUAL(hbd_job_by_no(&d, 3), j);
    CU_ASSERT_PTR_NULL(hbd_job_by_no(&d, 0));
    relay_off(j);
    CU_ASSERT_PTR_NULL(hbd_job_get(&d, 7));
    CU_ASSERT_PTR_NULL(hbd_job_by_no(&d, 3));
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 0);
    CU_ASSERT_PTR_NULL(d.jobs.head);
}

static void test_launch_alone(void)
{
    hbd_t d;
    memset(&d, 0, sizeof(d));
    hbd_job_t *j = open_job(&d, 8);
    launch_on(j, 3); /* "launch SPEC" of a one-node job */
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 3);
    CU_ASSERT_PTR_EQUAL(hbd_job_find(&d, "hibar.8"), j);
    hbd_job_done(j); /* its last line is queued */
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 0);
    CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 8), j);
    launch_off(j);
    CU_ASSERT_PTR_NULL(hbd_job_get(&d, 8));
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 0);
    /* a part refused before it took the job: the job made for it goes at once */
    j = open_job(&d, 9);
    hbd_job_release(j);
    CU_ASSERT_PTR_NULL(hbd_job_get(&d, 9));
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 0);
}

/* Both parts, the relay first (as on every node of a relayed job); released in either order. */
static void both(int relay_last)
{
    hbd_t d;
    memset(&d, 0, sizeof(d));
    hbd_job_t *j = open_job(&d, 10);
    relay_on(j);
    hbd_job_t *k = open_job(&d, 10); /* the launcher finds the relay's job */
    CU_ASSERT_PTR_EQUAL_FATAL(k, j);
    launch_on(j, 2);
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 1);
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 2);
    if (relay_last) { /* the part ended; the relay waits for the engine's drain, then CLEAN */
        launch_off(j);
        CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 10), j);
        CU_ASSERT_PTR_NULL(hbd_job_find(&d, "hibar.10"));
        CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 0);
        relay_off(j);
    } else { /* the relay went first (its origin lost): the ranks are still reaped */
        relay_off(j);
        CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 10), j);
        CU_ASSERT_PTR_EQUAL(hbd_job_find(&d, "hibar.10"), j);
        CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 2);
        launch_off(j);
    }
    CU_ASSERT_PTR_NULL(hbd_job_get(&d, 10));
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 0);
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 0);
}

static void test_both_relay_last(void)
{
    both(1);
}

static void test_both_launch_last(void)
{
    both(0);
}

/* The launcher first, then the relay (a local "launch" before a relayed spec of the same id is
 * refused by the relay, but the object allows either order); the ranks' and step's parts hold
 * the job too while they are open. */
static void test_launch_first_and_subparts(void)
{
    hbd_t d;
    memset(&d, 0, sizeof(d));
    hbd_job_t *j = open_job(&d, 11);
    launch_on(j, 1);
    relay_on(j);
    j->ranks = (struct hbd_ranks_job *)&d; /* its segment (hbd_ranks.c) still open */
    launch_off(j);
    relay_off(j);
    CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 11), j);
    j->ranks = NULL; /* hbd_ranks_job_close */
    hbd_job_release(j);
    CU_ASSERT_PTR_NULL(hbd_job_get(&d, 11));
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 0);
}

/* The nodes and member set: from the first part that reads the spec, checked by a later one, and
 * freed with the job. */
static void test_nodes(void)
{
    hbd_t d;
    hb_topo_t t;
    memset(&d, 0, sizeof(d));
    memset(&t, 0, sizeof(t));
    t.n_nodes = 6;
    d.topo = &t;
    const uint32_t map[] = {4, 1, 4, 2}, other[] = {4, 1, 4, 3}, outside[] = {1, 6};
    uint32_t bad = 0;
    hbd_job_t *j = open_job(&d, 12);
    relay_on(j); /* the origin's run */
    CU_ASSERT_EQUAL(hbd_job_set_nodes(j, outside, 2, &bad), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(bad, 1); /* rank 1 is on no node of the cluster */
    CU_ASSERT_PTR_NULL(j->member);
    CU_ASSERT_EQUAL_FATAL(hbd_job_set_nodes(j, map, 4, &bad), 0);
    CU_ASSERT_EQUAL_FATAL(j->n_nodes, 3);
    CU_ASSERT(j->nodes[0] == 1 && j->nodes[1] == 2 && j->nodes[2] == 4);
    CU_ASSERT(j->member[1] && j->member[2] && j->member[4] && !j->member[0] && !j->member[3]);
    CU_ASSERT_EQUAL(hbd_job_set_nodes(j, map, 4, &bad), 0); /* the launcher, the same spec */
    CU_ASSERT_EQUAL(hbd_job_set_nodes(j, other, 4, &bad), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(bad, UINT32_MAX);
    CU_ASSERT_EQUAL(j->n_nodes, 3);
    launch_on(j, 1);
    relay_off(j);
    CU_ASSERT_EQUAL(j->n_nodes, 3); /* the job's, not the relay's: still there */
    launch_off(j);
    CU_ASSERT_PTR_NULL(hbd_job_get(&d, 12));
}

/* Several jobs: one going leaves the others where they are. */
static void test_several(void)
{
    hbd_t d;
    memset(&d, 0, sizeof(d));
    hbd_job_t *a = open_job(&d, 1), *b = open_job(&d, 2), *c = open_job(&d, 3);
    CU_ASSERT(a != b && b != c && a != c);
    relay_on(a);
    launch_on(b, 4);
    relay_on(c);
    launch_on(c, 1);
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 3);
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 5);
    CU_ASSERT_EQUAL(d.jobs.n_local_jobs, 2);
    launch_off(b);
    CU_ASSERT_PTR_NULL(hbd_job_get(&d, 2));
    CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 1), a);
    CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 3), c);
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 1);
    CU_ASSERT_EQUAL(d.jobs.n_local_jobs, 1);
    relay_off(a);
    relay_off(c);
    CU_ASSERT_PTR_EQUAL(hbd_job_get(&d, 3), c);
    launch_off(c);
    CU_ASSERT_EQUAL(d.jobs.n_jobs, 0);
    CU_ASSERT_PTR_NULL(d.jobs.head);
    CU_ASSERT_EQUAL(d.jobs.n_local_ranks, 0);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("job", NULL, NULL);
    CU_add_test(s, "made and freed by the relay alone", test_relay_alone);
    CU_add_test(s, "made and freed by the launcher alone", test_launch_alone);
    CU_add_test(s, "relay and launcher, the relay last", test_both_relay_last);
    CU_add_test(s, "relay and launcher, the launcher last", test_both_launch_last);
    CU_add_test(s, "launcher first; ranks hold it too", test_launch_first_and_subparts);
    CU_add_test(s, "nodes and member set", test_nodes);
    CU_add_test(s, "several jobs", test_several);
    return hb_test_run(CU_BRM_NORMAL);
}
