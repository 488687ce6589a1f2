/* hostlist.c: expansion of hostlist expressions such as "n[000-029]", "n[1-3,7]", "a,b[1-2]". */
#include "hb_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "hb_status.h"

#define HL_NAME_MAX 255 /* longest expanded name (a host name's limit) */

typedef struct {
    char **names;
    uint32_t n, cap;
    const char *expr; /* the whole expression, for messages */
    char *err;
    size_t errlen;
} hl_out_t;

static int hl_fail(hl_out_t *o, const char *what)
{
    if (o->err != NULL && o->errlen > 0)
        snprintf(o->err, o->errlen, "%s '%s'", what, o->expr);
    return HB_ERR_CONFIG;
}

static int hl_push(hl_out_t *o, const char *name, size_t len)
{
    char *s;

    if (len == 0)
        return hl_fail(o, "malformed hostlist (empty name)");
    if (o->n >= HB_CFG_HOSTLIST_MAX)
        return hl_fail(o, "hostlist expands to too many names");
    if (o->n == o->cap) {
        uint32_t cap = o->cap ? o->cap * 2 : 16;
        char **p = realloc(o->names, cap * sizeof(*p));
        if (p == NULL)
            return HB_ERR_NOMEM;
        o->names = p;
        o->cap = cap;
    }
    s = malloc(len + 1);
    if (s == NULL)
        return HB_ERR_NOMEM;
    memcpy(s, name, len);
    s[len] = '\0';
    o->names[o->n++] = s;
    return 0;
}

/* Characters allowed in a name outside brackets. */
static int hl_name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '_' || ch == '.';
}

/* Parse an unsigned decimal of 1..9 digits at *s; sets *width to the digit count. */
static int hl_number(const char **s, const char *end, unsigned long *v, int *width)
{
    const char *p = *s;
    unsigned long x = 0;

    while (p < end && *p >= '0' && *p <= '9' && p - *s < 9)
        x = x * 10 + (unsigned long)(*p++ - '0');
    if (p == *s || (p < end && *p >= '0' && *p <= '9'))
        return -1;
    *width = (int)(p - *s);
    *v = x;
    *s = p;
    return 0;
}

/*
 * Expand item[pos..end) with prefix buf[0..blen) already produced: copy name characters to
 * buf until a '[', expand each number of the bracket and recurse on the rest.
 */
static int hl_expand(hl_out_t *o, const char *p, const char *end, char *buf, size_t blen)
{
    while (p < end && *p != '[') {
        if (!hl_name_char(*p))
            return hl_fail(o, "malformed hostlist (bad character)");
        if (blen >= HL_NAME_MAX)
            return hl_fail(o, "malformed hostlist (name too long)");
        buf[blen++] = *p++;
    }
    if (p == end)
        return hl_push(o, buf, blen);

    /* A bracket: "[" range ("," range)* "]", range = number ["-" number]. */
    {
        const char *close = memchr(p, ']', (size_t)(end - p));
        const char *q = p + 1;
        int rc;

        if (close == NULL)
            return hl_fail(o, "malformed hostlist (unclosed '[')");
        if (q == close)
            return hl_fail(o, "malformed hostlist (empty range)");
        while (q < close) {
            unsigned long lo, hi, v;
            int wlo, whi;

            if (hl_number(&q, close, &lo, &wlo) != 0)
                return hl_fail(o, "malformed hostlist (bad number in range)");
            hi = lo;
            if (q < close && *q == '-') {
                q++;
                if (hl_number(&q, close, &hi, &whi) != 0)
                    return hl_fail(o, "malformed hostlist (bad number in range)");
                if (hi < lo)
                    return hl_fail(o, "malformed hostlist (range upper bound below lower)");
            }
            if (q < close) {
                if (*q != ',' || q + 1 == close)
                    return hl_fail(o, "malformed hostlist (bad range separator)");
                q++;
            }
            if (hi - lo >= HB_CFG_HOSTLIST_MAX)
                return hl_fail(o, "hostlist expands to too many names");
            for (v = lo; v <= hi; v++) {
                char num[32];
                int len = snprintf(num, sizeof(num), "%0*lu", wlo, v);
                if (blen + (size_t)len >= HL_NAME_MAX)
                    return hl_fail(o, "malformed hostlist (name too long)");
                memcpy(buf + blen, num, (size_t)len);
                rc = hl_expand(o, close + 1, end, buf, blen + (size_t)len);
                if (rc != 0)
                    return rc;
            }
        }
    }
    return 0;
}

int hb_cfg_hostlist_expand(const char *expr, char ***names_p, uint32_t *n_p, char *err,
                           size_t errlen)
{
    hl_out_t o = {.expr = expr, .err = err, .errlen = errlen};
    char buf[HL_NAME_MAX + 1];
    const char *p, *item;
    int depth = 0, rc = 0;

    if (expr == NULL || names_p == NULL || n_p == NULL)
        return HB_ERR_INVAL;
    /* Split at top-level commas (commas inside brackets separate ranges). */
    for (p = item = expr;; p++) {
        if (*p == '[') {
            if (depth++ > 0) {
                rc = hl_fail(&o, "malformed hostlist (nested '[')");
                break;
            }
        } else if (*p == ']') {
            if (depth-- == 0) {
                rc = hl_fail(&o, "malformed hostlist (unbalanced ']')");
                break;
            }
        } else if ((*p == ',' && depth == 0) || *p == '\0') {
            const char *a = item, *b = p;
            if (*p == '\0' && depth != 0) {
                rc = hl_fail(&o, "malformed hostlist (unclosed '[')");
                break;
            }
            while (a < b && (*a == ' ' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
                b--;
            if (a == b) {
                rc = hl_fail(&o, "malformed hostlist (empty item)");
                break;
            }
            rc = hl_expand(&o, a, b, buf, 0);
            if (rc != 0 || *p == '\0')
                break;
            item = p + 1;
        }
    }
    if (rc != 0) {
        hb_cfg_hostlist_free(o.names, o.n);
        return rc;
    }
    *names_p = o.names;
    *n_p = o.n;
    return 0;
}

void hb_cfg_hostlist_free(char **names, uint32_t n)
{
    uint32_t i;

    if (names == NULL)
        return;
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int hb_cfg_members(const hb_cfg_t *cfg, const char *hostlist, uint8_t *member, uint32_t *n_p,
                   char *err, size_t errlen)
{
    char **names = NULL;
    uint32_t n = 0, i, id;
    int rc;

    if (cfg == NULL || hostlist == NULL || member == NULL)
        return HB_ERR_INVAL;
    rc = hb_cfg_hostlist_expand(hostlist, &names, &n, err, errlen);
    if (rc != 0)
        return rc;
    memset(member, 0, cfg->n_nodes);
    for (i = 0; i < n && rc == 0; i++) {
        if (hb_cfg_node_find(cfg, names[i], &id) != 0) {
            snprintf(err, errlen, "unknown node '%s' in '%s'", names[i], hostlist);
            rc = HB_ERR_CONFIG;
        } else if (member[id]) {
            snprintf(err, errlen, "node '%s' named twice in '%s'", names[i], hostlist);
            rc = HB_ERR_CONFIG;
        } else {
            member[id] = 1;
        }
    }
    hb_cfg_hostlist_free(names, n);
    if (rc == 0 && n_p != NULL)
        *n_p = n;
    return rc;
}
