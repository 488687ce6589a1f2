/* hb_env.h: numbers from the environment, checked (one parser for every HIBAR_* number). */
#ifndef HB_ENV_H
#define HB_ENV_H

#include <stdint.h>

/*
 * Read variable `name` as a decimal number in 0..max. 0 and *v_p on success;
 * HB_ERR_NOT_FOUND if unset or empty (nothing logged); HB_ERR_CONFIG if it is not such a
 * number (logged once here, naming the variable and its value). *v_p is set only on success.
 */
int hb_env_u64(const char *name, uint64_t max, uint64_t *v_p);

#endif
