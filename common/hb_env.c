/* hb_env.c: numbers from the environment, checked. */
#include "hb_env.h"

#include <errno.h>
#include <stdlib.h>

#include "hb_log.h"
#include "hb_status.h"

int hb_env_u64(const char *name, uint64_t max, uint64_t *v_p)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;

    if (s == NULL || *s == '\0')
        return HB_ERR_NOT_FOUND;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || *s == '-' || v > max) {
        hb_log_error("%s=%s is not a number in 0..%llu", name, s, (unsigned long long)max);
        return HB_ERR_CONFIG;
    }
    *v_p = (uint64_t)v;
    return 0;
}
