/* test_cfg.h: the suites of the test_cfg binary (one CUnit binary for the config module). */
#ifndef HB_TEST_CFG_H
#define HB_TEST_CFG_H

/* Each adds its suite to the CUnit registry; 0 or a CUnit error code. */
int hb_test_topo_register(void);
int hb_test_cfg_register(void);
int hb_test_place_register(void);

#endif
