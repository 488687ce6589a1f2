/* test_slot.c: the root daemon's job slots (daemon/job/hbd_slot.c): numbers, sync numbers per
 * chassis, and the census a new root rebuilds them from. */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hb_test.h"
#include "hbd_slot.h"
#include "topo.h"

/* 3 chassis of 2 nodes: {0,1} {2,3} {4,5}; sync numbers 4..14 for jobs, as the daemon has them */
static hb_topo_t *topo(void)
{
    static const uint32_t start[] = {0, 2, 4, 6}, nodes[] = {0, 1, 2, 3, 4, 5};
    hb_topo_spec_t spec = {
        .n_nodes = 6, .n_chassis = 3, .chassis_start = start, .chassis_nodes = nodes};
    hb_topo_t *t = NULL;
    char err[128];
    CU_ASSERT_FATAL(hb_topo_build(&spec, &t, err, sizeof(err)) == 0);
    return t;
}

static hbd_slot_t *alloc(hbd_slots_t *S, hb_topo_t *t, const uint32_t *nodes, uint32_t n, int want)
{
    hbd_slot_t *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL(hbd_slots_alloc(S, t, nodes, n, 42, nodes[0], n, 1, &s, err, sizeof(err)),
                    want);
    return s;
}

static void test_alloc(void)
{
    hb_topo_t *t = topo();
    hbd_slots_t S;
    CU_ASSERT_EQUAL_FATAL(hbd_slots_init(&S, t, 4, 15, 1), 0);
    const uint32_t a[] = {0, 2}, b[] = {1}, c[] = {4, 5}, d[] = {0};
    hbd_slot_t *sa = alloc(&S, t, a, 2, 0), *sb = alloc(&S, t, b, 1, 0),
               *sc = alloc(&S, t, c, 2, 0);
    CU_ASSERT_FATAL(sa != NULL && sb != NULL && sc != NULL);
    CU_ASSERT_EQUAL(sa->jobno, 1);
    CU_ASSERT_EQUAL(sb->jobno, 2);
    CU_ASSERT_EQUAL(sa->base, 4);
    CU_ASSERT_EQUAL(sb->base, 5); /* 4 is taken in chassis 0 */
    CU_ASSERT_EQUAL(sc->base, 4); /* chassis 2 is another: the numbers are shared */
    hbd_slots_free(&S, t, 1);
    hbd_slot_t *sd = alloc(&S, t, d, 1, 0);
    CU_ASSERT_FATAL(sd != NULL);
    CU_ASSERT_EQUAL(sd->base, 4);
    CU_ASSERT_EQUAL(sd->jobno, 4);
    /* chassis 0 full: 11 numbers, 2 given; 9 more, then none */
    for (int i = 0; i < 9; i++)
        CU_ASSERT_PTR_NOT_NULL(alloc(&S, t, d, 1, 0));
    CU_ASSERT_PTR_NULL(alloc(&S, t, d, 1, HB_ERR_BUSY));
    CU_ASSERT_PTR_NOT_NULL(alloc(&S, t, (const uint32_t[]){2}, 1, 0)); /* chassis 1 has room */
    const uint32_t bad[] = {3, 2};
    CU_ASSERT_PTR_NULL(alloc(&S, t, bad, 2, HB_ERR_INVAL)); /* not ascending */
    hbd_slots_fini(&S);
    hb_topo_free(t);
}

/* The census: a new root learns the running jobs node by node. */
static void test_claim(void)
{
    hb_topo_t *t = topo();
    hbd_slots_t S;
    CU_ASSERT_EQUAL_FATAL(hbd_slots_init(&S, t, 4, 15, 1), 0);
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 7, 6, 1, 99, 2, 4, 3, 1), 0);
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 7, 6, 1, 99, 2, 4, 2, 1), 0);
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 7, 6, 1, 99, 2, 4, 3, 1), 0); /* again: no change */
    hbd_slot_t *s = hbd_slots_find(&S, 7);
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT_EQUAL(s->n_nodes, 2);
    CU_ASSERT_EQUAL(s->nodes[0], 2);
    CU_ASSERT_EQUAL(s->nodes[1], 3);
    CU_ASSERT_EQUAL(s->origin, 2);
    CU_ASSERT_EQUAL(S.n, 1);
    /* a new job on chassis 1 avoids 6, and its number is above every one claimed */
    const uint32_t n2[] = {2};
    hbd_slot_t *a = NULL;
    for (int i = 0; i < 3; i++)
        a = alloc(&S, t, n2, 1, 0);
    CU_ASSERT_FATAL(a != NULL);
    CU_ASSERT_EQUAL(a->jobno, 10);
    CU_ASSERT_EQUAL(a->base, 7); /* 4, 5, then 7: 6 is held */
    /* chassis 0 did not get 6 taken */
    a = alloc(&S, t, (const uint32_t[]){0}, 1, 0);
    CU_ASSERT_EQUAL(a != NULL ? a->base : 0, 4);
    /* freed: the numbers go back on both of its chassis' nodes */
    hbd_slots_free(&S, t, 7);
    CU_ASSERT_PTR_NULL(hbd_slots_find(&S, 7));
    a = alloc(&S, t, (const uint32_t[]){3}, 1, 0);
    CU_ASSERT_EQUAL(a != NULL ? a->base : 0, 6);
    /* refused: outside the job range, job 0, no such node, no number */
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 8, 2, 1, 1, 0, 1, 0, 1), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 8, 14, 2, 1, 0, 1, 0, 1), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 0, 6, 1, 1, 0, 1, 0, 1), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 8, 6, 1, 1, 0, 1, 6, 1), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hbd_slots_claim(&S, t, 8, 6, 0, 1, 0, 1, 0, 1), HB_ERR_INVAL);
    hbd_slots_fini(&S);
    hb_topo_free(t);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("slot", NULL, NULL);
    CU_add_test(s, "numbers and sync numbers per chassis", test_alloc);
    CU_add_test(s, "census", test_claim);
    return hb_test_run(CU_BRM_NORMAL);
}
