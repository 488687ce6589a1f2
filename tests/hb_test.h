/* hb_test.h: how every CUnit program of tests/ ends its main(). */
#ifndef HB_TEST_H
#define HB_TEST_H

#include <CUnit/Basic.h>

/* Run the registered suites in `mode` (CU_BRM_VERBOSE or CU_BRM_NORMAL) and clean up. The
 * program's exit status: 0 when every test passed, 1 otherwise. */
static inline int hb_test_run(CU_BasicRunMode mode)
{
    CU_basic_set_mode(mode);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}

#endif
