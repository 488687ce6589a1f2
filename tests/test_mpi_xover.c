/* test_mpi_xover.c: the crossover table of Open MPI's coll component (mpi/mpi_xover.c): which
 * calls hibar takes, per operation, size and regime, and the forced sides. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hb_test.h"
#include "mpi_xover.h"

static void test_defaults(void)
{
    hb_mpi_xover_t x;

    hb_mpi_xover_defaults(&x);
    CU_ASSERT_EQUAL(x.force, HB_MPI_FORCE_AUTO);
    /* the barrier, but not with one rank per node; across nodes the gather from 1 MiB where a
     * node has several ranks, no other data collective */
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_ONE_NODE, 0));
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES, 0));
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES1, 0));
    for (int op = HB_MPI_BCAST; op < HB_MPI_N_OPS; op++)
        for (size_t b = 1; b <= (64u << 20); b *= 4) {
            CU_ASSERT_EQUAL(hb_mpi_xover_takes(&x, op, HB_MPI_NODES, b),
                            op == HB_MPI_GATHER && b >= (1u << 20));
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

/* One MCA parameter by name: the table's, with or without OMPI_MCA_, bad values refused. */
static void test_set(void)
{
    hb_mpi_xover_t x;
    hb_mpi_xover_src_t src;

    hb_mpi_xover_defaults(&x);
    memset(&src, 0, sizeof src);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "coll_hibar_gather_min_nodes", "4096", &src, 3), 1);
    CU_ASSERT_EQUAL(x.min[HB_MPI_GATHER][HB_MPI_NODES], 4096);
    CU_ASSERT_EQUAL(src.of[HB_MPI_GATHER][HB_MPI_NODES][0], 3);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "OMPI_MCA_coll_hibar_barrier_max_nodes1", "-1", &src, 1),
                    1);
    CU_ASSERT_EQUAL(x.max[HB_MPI_BARRIER][HB_MPI_NODES1], HB_MPI_XOVER_ALL);
    CU_ASSERT_EQUAL(src.of[HB_MPI_BARRIER][HB_MPI_NODES1][1], 1);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "coll_hibar_force", "ompi", &src, 2), 1);
    CU_ASSERT_EQUAL(x.force, HB_MPI_FORCE_OMPI);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "coll_hibar_force", "1", NULL, 0), 1);
    CU_ASSERT_EQUAL(x.force, HB_MPI_FORCE_HIBAR);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "coll_hibar_priority", "50", &src, 2), 0);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "coll_hibar_gather_min_node", "4k", &src, 2), -1);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "coll_hibar_gather_min_node", "-2", &src, 2), -1);
    CU_ASSERT_EQUAL(hb_mpi_xover_set(&x, "coll_hibar_force", "maybe", &src, 2), -1);
}

/* Files of MCA parameters and the environment, in Open MPI's order: an earlier file over a
 * later one, the environment over both; each entry's source. */
static void test_load(void)
{
    char dir[] = "/tmp/hibar-test-xover-XXXXXX", a[128], b[128], list[300], err[256];
    hb_mpi_xover_t x;
    hb_mpi_xover_src_t src;
    FILE *f;

    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/a.conf", dir);
    snprintf(b, sizeof b, "%s/b.conf", dir);
    f = fopen(a, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "# measured\ncoll_hibar_bcast_min_node = 65536 # a comment\n"
               "  coll_hibar_bcast_max_node=-1\nbtl = ^openib\n");
    fclose(f);
    f = fopen(b, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "coll_hibar_bcast_min_node = 8\ncoll_hibar_scatter_min_node = 1024\n");
    fclose(f);
    snprintf(list, sizeof list, "%s,%s/missing.conf,%s", a, dir, b);
    setenv("OMPI_MCA_mca_base_param_files", list, 1);
    setenv("OMPI_MCA_coll_hibar_gather_max_node", "0", 1);
    CU_ASSERT_EQUAL_FATAL(hb_mpi_xover_load(&x, &src, "", err, sizeof err), 0);
    CU_ASSERT_EQUAL(x.min[HB_MPI_BCAST][HB_MPI_ONE_NODE], 65536); /* a.conf over b.conf */
    CU_ASSERT_STRING_EQUAL(src.name[src.of[HB_MPI_BCAST][HB_MPI_ONE_NODE][0]], a);
    CU_ASSERT_EQUAL(x.min[HB_MPI_SCATTER][HB_MPI_ONE_NODE], 1024);
    CU_ASSERT_STRING_EQUAL(src.name[src.of[HB_MPI_SCATTER][HB_MPI_ONE_NODE][0]], b);
    CU_ASSERT_EQUAL(x.max[HB_MPI_GATHER][HB_MPI_ONE_NODE], 0);
    CU_ASSERT_EQUAL(src.of[HB_MPI_GATHER][HB_MPI_ONE_NODE][1], HB_MPI_XOVER_SRC_ENV);
    CU_ASSERT_EQUAL(src.of[HB_MPI_ALLGATHER][HB_MPI_ONE_NODE][1], HB_MPI_XOVER_SRC_BUILTIN);
    CU_ASSERT_STRING_EQUAL(src.name[HB_MPI_XOVER_SRC_BUILTIN], "built-in table");
    /* a bad value: its file and line */
    f = fopen(b, "a");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "coll_hibar_gather_min_nodes = lots\n");
    fclose(f);
    CU_ASSERT_EQUAL(hb_mpi_xover_load(&x, &src, "", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "b.conf:3"));
    unsetenv("OMPI_MCA_mca_base_param_files");
    unsetenv("OMPI_MCA_coll_hibar_gather_max_node");
    unlink(a);
    unlink(b);
    rmdir(dir);
}

/* Crossovers from medians: the longest run of sizes where hibar wins. */
static void test_from_medians(void)
{
    static const size_t sz[] = {8, 1024, 65536, 1 << 20, 4 << 20};
    static const double below[] = {10, 10, 10, 10, 10};
    static const double late[] = {20, 20, 5, 5, 5}, mid[] = {20, 5, 5, 20, 5},
                        all[] = {1, 1, 1, 1, 1}, none[] = {20, 20, 20, 20, 20};
    hb_mpi_xover_t x;

    hb_mpi_xover_defaults(&x);
    hb_mpi_xover_from_medians(&x, HB_MPI_GATHER, HB_MPI_NODES, sz, late, below, 5);
    CU_ASSERT_EQUAL(x.min[HB_MPI_GATHER][HB_MPI_NODES], 65536);
    CU_ASSERT_EQUAL(x.max[HB_MPI_GATHER][HB_MPI_NODES], HB_MPI_XOVER_ALL);
    hb_mpi_xover_from_medians(&x, HB_MPI_GATHER, HB_MPI_NODES, sz, mid, below, 5);
    CU_ASSERT_EQUAL(x.min[HB_MPI_GATHER][HB_MPI_NODES], 1024);
    CU_ASSERT_EQUAL(x.max[HB_MPI_GATHER][HB_MPI_NODES], 65536);
    hb_mpi_xover_from_medians(&x, HB_MPI_BCAST, HB_MPI_ONE_NODE, sz, all, below, 5);
    CU_ASSERT_EQUAL(x.min[HB_MPI_BCAST][HB_MPI_ONE_NODE], 0);
    CU_ASSERT_EQUAL(x.max[HB_MPI_BCAST][HB_MPI_ONE_NODE], HB_MPI_XOVER_ALL);
    hb_mpi_xover_from_medians(&x, HB_MPI_BCAST, HB_MPI_ONE_NODE, sz, none, below, 5);
    CU_ASSERT_EQUAL(x.max[HB_MPI_BCAST][HB_MPI_ONE_NODE], 0);
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_BCAST, HB_MPI_ONE_NODE, 8));
    hb_mpi_xover_from_medians(&x, HB_MPI_BARRIER, HB_MPI_NODES1, sz, all, below, 1);
    CU_ASSERT_TRUE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES1, 0));
    hb_mpi_xover_from_medians(&x, HB_MPI_BARRIER, HB_MPI_NODES1, sz, none, below, 1);
    CU_ASSERT_FALSE(hb_mpi_xover_takes(&x, HB_MPI_BARRIER, HB_MPI_NODES1, 0));
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("mpi_xover", NULL, NULL);
    CU_add_test(s, "defaults", test_defaults);
    CU_add_test(s, "size ranges, forced sides", test_ranges);
    CU_add_test(s, "names and text", test_names);
    CU_add_test(s, "MCA parameters by name", test_set);
    CU_add_test(s, "files of MCA parameters, environment", test_load);
    CU_add_test(s, "crossovers from medians", test_from_medians);
    return hb_test_run(CU_BRM_NORMAL);
}
