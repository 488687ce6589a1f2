/* test_client.c: CUnit tests of libclient: main of test_client. */
#include <CUnit/Basic.h>
#include <stdlib.h>

#include "test_client.h"
#include "hb_test.h"

int main(void)
{

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    if (hb_test_client_seg_register() != 0 || hb_test_client_ranks_register() != 0) {
        CU_cleanup_registry();
        return 99;
    }
    return hb_test_run(CU_BRM_VERBOSE);
}
