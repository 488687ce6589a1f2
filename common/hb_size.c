/* hb_size.c: byte sizes as command lines give them ("64K", "1K,64K..8M", "0..100K:1K"). */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_size.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"

int hb_size_parse(const char *s, uint64_t max, uint64_t *v_p)
{
    char *end;
    unsigned shift = 0;
    if (s == NULL || *s < '0' || *s > '9')
        return HB_ERR_INVAL; /* also no sign or space, which strtoull would take */
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return HB_ERR_INVAL;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    default:
        break;
    }
    if (shift != 0) {
        if (v > (UINT64_MAX >> shift))
            return HB_ERR_INVAL;
        v <<= shift;
        end++;
    }
    if (*end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || v > max)
        return HB_ERR_INVAL;
    *v_p = (uint64_t)v;
    return 0;
}

/* One list element (A, A..B or A..B:STEP, cut out of the list) appended to sizes[*n_p]. */
static int hb_size_elem(char *t, uint64_t min, uint64_t max, size_t *sizes, size_t cap, size_t *n_p)
{
    uint64_t a, b, step = 0;
    char *dots = strstr(t, ".."), *colon = NULL;
    if (dots != NULL) {
        *dots = '\0';
        colon = strchr(dots + 2, ':');
        if (colon != NULL)
            *colon = '\0';
    }
    if (hb_size_parse(t, max, &a) != 0 || a < min)
        return HB_ERR_INVAL;
    b = a;
    if (dots != NULL && (hb_size_parse(dots + 2, max, &b) != 0 || b < a))
        return HB_ERR_INVAL;
    if (colon != NULL && (hb_size_parse(colon + 1, max, &step) != 0 || step == 0))
        return HB_ERR_INVAL;
    for (uint64_t v = a;;) {
        if (*n_p == cap)
            return HB_ERR_INVAL;
        sizes[(*n_p)++] = (size_t)v;
        uint64_t inc = step != 0 ? step : (v != 0 ? v : 1);
        if (b - v < inc)
            return 0; /* the next one would pass B (or wrap) */
        v += inc;
    }
}

int hb_size_list_parse(const char *spec, uint64_t min, uint64_t max, size_t *sizes, size_t cap,
                       size_t *n_p)
{
    size_t n = 0;
    int rc = 0;
    if (spec == NULL || max > SIZE_MAX)
        return HB_ERR_INVAL;
    char *l = strdup(spec), *save = NULL;
    if (l == NULL)
        return HB_ERR_NOMEM;
    for (char *t = strtok_r(l, ",", &save); t != NULL && rc == 0; t = strtok_r(NULL, ",", &save))
        rc = hb_size_elem(t, min, max, sizes, cap, &n);
    free(l);
    if (rc != 0 || n == 0)
        return HB_ERR_INVAL;
    *n_p = n;
    return 0;
}
