/* test_client.h: suites of test_client (libclient) and the forked-ranks harness. */
#ifndef TEST_CLIENT_H
#define TEST_CLIENT_H

int hb_test_client_seg_register(void);
int hb_test_client_ranks_register(void);

#endif
