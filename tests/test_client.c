/* test_client.c: CUnit tests of libclient: main of test_client. */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "test_client.h"

int main(void)
{
    unsigned failures;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    if (hb_test_client_seg_register() != 0 || hb_test_client_ranks_register() != 0) {
        CU_cleanup_registry();
        return 99;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    failures = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failures == 0 ? 0 : 1;
}
