/* test_mpi_xover.c: the crossover table of Open MPI's coll component (mpi/mpi_xover.c): which
 * calls hibar takes, per operation, size and regime, and the forced sides. */
#include <CUnit/Basic.h>
#include <string.h>

#include "hb_test.h"
#include "mpi_xover.h"

static void test_defaults(void)
{
    hb_mpi_xover_t x;

    hb_mpi_xover_defaults(&x);
    CU_ASSERT_EQUAL(x.force, HB_MPI_FORCE_AUTO);
    /* the barrier, but not with one rank per node; no data collective across nodes */
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_ONE_NODE, 0));
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES, 0));
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES1, 0));
    for (int op = HB_MPI_BCAST; op < HB_MPI_N_OPS; op++)
        for (size_t b = 1; b <= (64u << 20); b *= 4) {
            CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, op, HB_MPI_NODES, b));
            CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, op, HB_MPI_NODES1, b));
        }
    /* one node: from the measured crossovers on */
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_BCAST, HB_MPI_ONE_NODE, 8));
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BCAST, HB_MPI_ONE_NODE, 4 << 20));
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_GATHER, HB_MPI_ONE_NODE, 1024));
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_GATHER, HB_MPI_ONE_NODE, 16 << 10));
}

static void test_ranges(void)
{
    hb_mpi_xover_t x;

    hb_mpi_xover_defaults(&x);
    x.min[HB_MPI_SCATTER][HB_MPI_ONE_NODE] = 1000;
    x.max[HB_MPI_SCATTER][HB_MPI_ONE_NODE] = 2000;
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_SCATTER, HB_MPI_ONE_NODE, 999));
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_SCATTER, HB_MPI_ONE_NODE, 1000));
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_SCATTER, HB_MPI_ONE_NODE, 2000));
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_SCATTER, HB_MPI_ONE_NODE, 2001));
    x.max[HB_MPI_SCATTER][HB_MPI_ONE_NODE] = 0; /* none */
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_SCATTER, HB_MPI_ONE_NODE, 1500));
    x.max[HB_MPI_BARRIER][HB_MPI_NODES1] = HB_MPI_XOVER_ALL;
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES1, 0));
    x.max[HB_MPI_BARRIER][HB_MPI_NODES] = 0;
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES, 0));
    /* forced: every call to hibar, or none */
    x.force = HB_MPI_FORCE_HIBAR;
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_SCATTER, HB_MPI_ONE_NODE, 1500));
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES, 0));
    x.force = HB_MPI_FORCE_OMPI;
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_ONE_NODE, 0));
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_GATHER, HB_MPI_ONE_NODE, 1 << 20));
}

static void test_names(void)
{
    char b[32];

    CU_ASSERT_STRING_EQUAL(hb_mpi_op_name(HB_MPI_ALLGATHER), "allgather");
    CU_ASSERT_STRING_EQUAL(hb_mpi_regime_name(HB_MPI_NODES), "nodes");
    CU_ASSERT_STRING_EQUAL(hb_mpi_regime_name(HB_MPI_NODES1), "nodes1");
    CU_ASSERT_STRING_EQUAL(hb_mpi_regime_desc(HB_MPI_NODES1), "several nodes, one rank each");
    CU_ASSERT_STRING_EQUAL(hb_mpi_force_name(HB_MPI_FORCE_OMPI), "ompi");
    CU_ASSERT_STRING_EQUAL(hb_mpi_force_name(7), "?");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_BARRIER, 0, -1, b, sizeof b), "yes");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_BARRIER, 0, 0, b, sizeof b), "no");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_BCAST, 0, -1, b, sizeof b), "every size");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_BCAST, 1 << 20, -1, b, sizeof b), ">= 1M");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_GATHER, 16 << 10, 256 << 10, b, sizeof b),
                           "16K..256K");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_GATHER, 0, 1000, b, sizeof b), "0..1000");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_GATHER, 5000, 1000, b, sizeof b), "none");
    CU_ASSERT_STRING_EQUAL(hb_mpi_xover_fmt(HB_MPI_GATHER, 0, 0, b, sizeof b), "none");
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("mpi_xover", NULL, NULL);
    CU_add_test(s, "defaults", test_defaults);
    CU_add_test(s, "size ranges, forced sides", test_ranges);
    CU_add_test(s, "names and text", test_names);
    return hb_test_run(CU_BRM_NORMAL);
}
