/* test_cfg.c: CUnit tests of the config module: main of test_cfg. */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "test_cfg.h"
#include "hb_test.h"

int main(void)
{

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    if (hb_test_topo_register() != 0 || hb_test_cfg_register() != 0 ||
        hb_test_place_register() != 0) {
        CU_cleanup_registry();
        return 99;
    }
    return hb_test_run(CU_BRM_VERBOSE);
}
