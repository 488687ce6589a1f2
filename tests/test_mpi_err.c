/* test_mpi_err.c: hibar's status codes as MPI error classes (mpi/mpi_err.c): every HIBAR_ERR_*
 * maps to a valid MPI error class, and the ones an application can act on to their own. */
#include <CUnit/Basic.h>
#include <mpi.h>

#include "hb_test.h"
#include "hibar.h"
#include "mpi_err.h"

static void test_classes(void)
{
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_SUCCESS), MPI_SUCCESS);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_NOMEM), MPI_ERR_NO_MEM);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_TRUNCATED), MPI_ERR_TRUNCATE);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_MISMATCH), MPI_ERR_ARG);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_INVAL), MPI_ERR_ARG);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_INTERNAL), MPI_ERR_INTERN);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_TIMEOUT), MPI_ERR_OTHER);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_PEER_LOST), MPI_ERR_OTHER);
    CU_ASSERT_EQUAL(hb_mpi_error_class(HIBAR_ERR_UNAVAIL), MPI_ERR_OTHER);
}

/* Every code, and one past the last: an error class, never MPI_SUCCESS, within MPI's range. */
static void test_every_code(void)
{
    for (int rc = -1; rc >= HIBAR_ERR_LAST - 1; rc--) {
        int c = hb_mpi_error_class(rc);
        CU_ASSERT_NOT_EQUAL(c, MPI_SUCCESS);
        CU_ASSERT_TRUE(c > MPI_SUCCESS && c <= MPI_ERR_LASTCODE);
    }
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("mpi_err", NULL, NULL);
    CU_add_test(s, "classes", test_classes);
    CU_add_test(s, "every code", test_every_code);
    return hb_test_run(CU_BRM_NORMAL);
}
