/* test_cfg.c: CUnit tests of the config module: main of test_cfg. */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "test_cfg.h"

int main(void)
{
    unsigned failures;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    if (hb_test_topo_register() != 0 || hb_test_cfg_register() != 0) {
        CU_cleanup_registry();
        return 99;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    failures = CU_get_number_of_failures();
    CU_cleanup_registry();
    return failures == 0 ? 0 : 1;
}
