/* hb_params.c: model parameter files (PlogP(-BR), b_WAN(P)): parse, format, read, write, where they
 * live. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_params.h"

#include "hb_log.h"
#include "hb_status.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hb_params_path(const char *cluster, char *buf, size_t cap)
{
    const char *env = getenv("HIBAR_MODEL_CACHE"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    int n;
    if (env != NULL && *env != '\0')
        n = snprintf(buf, cap, "%s", env);
    else if (xdg != NULL && *xdg == '/')
        n = snprintf(buf, cap, "%s/hibar/%s.plogp", xdg, cluster);
    else
        n = snprintf(buf, cap, "%s/.cache/hibar/%s.plogp",
                     home != NULL && *home == '/' ? home : "/tmp", cluster);
    return n < 0 || (size_t)n >= cap ? HB_ERR_TRUNCATED : 0;
}

static void perr(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void perr(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || len == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

static int num(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return errno == 0 && end != s && *end == '\0' && isfinite(*v) && *v >= 0.0 ? 0 : -1;
}

int hb_params_parse(const char *text, hb_params_t *p, char *err, size_t errlen)
{
    hb_params_t r;
    char *copy, *line;
    int ln = 0, rc = 0, have_L = 0;
    if (text == NULL || p == NULL)
        return HB_ERR_INVAL;
    memset(&r, 0, sizeof(r));
    r.t_rto = 200000.0;
    r.flow_control = 1;
    copy = strdup(text);
    if (copy == NULL)
        return HB_ERR_NOMEM;
    for (char *next = copy; rc == 0 && next != NULL;) {
        char *tok[9], *ts = NULL; /* one more than a line may have: extra tokens are refused */
        int nt = 0;
        line = next;
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        ln++;
        if (strchr(line, '#') != NULL)
            *strchr(line, '#') = '\0';
        for (char *t = strtok_r(line, " \t\r", &ts); t != NULL && nt < 9;
             t = strtok_r(NULL, " \t\r", &ts))
            tok[nt++] = t;
        if (nt == 0)
            continue;
        double v[7] = {0};
        if (strcmp(tok[0], "cluster") == 0 && nt == 2 && strlen(tok[1]) < sizeof(r.cluster)) {
            snprintf(r.cluster, sizeof(r.cluster), "%s", tok[1]);
        } else if (strcmp(tok[0], "point") == 0 && (nt == 7 || nt == 8)) {
            for (int i = 0; i < nt - 1 && rc == 0; i++)
                if (num(tok[i + 1], &v[i]) != 0) {
                    perr(err, errlen, "line %d: bad number '%s'", ln, tok[i + 1]);
                    rc = HB_ERR_CONFIG;
                }
            if (rc != 0)
                break;
            if (r.n == HB_PARAMS_MAXPTS || (r.n > 0 && v[0] <= r.m[r.n - 1])) {
                perr(err, errlen, "line %d: sizes must ascend, at most %d points", ln,
                     HB_PARAMS_MAXPTS);
                rc = HB_ERR_CONFIG;
                break;
            }
            r.m[r.n] = v[0];
            r.os[r.n] = v[1];
            r.orv[r.n] = v[2];
            r.g[r.n] = v[3];
            r.g_o2m[r.n] = v[4];
            r.g_m2o[r.n] = v[5];
            r.g_pair[r.n] = nt == 8 ? v[6] : v[3];
            r.n++;
        } else if (strcmp(tok[0], "bwan") == 0 && nt == 3) {
            if (num(tok[1], &v[0]) != 0 || num(tok[2], &v[1]) != 0 || !(v[1] > 0.0) ||
                v[0] != (double)(r.n_bwan + 1) || r.n_bwan == HB_PARAMS_MAXLANES) {
                perr(err, errlen,
                     "line %d: want 'bwan P MBIT', P = 1, 2, ... (at most %d), MBIT > 0", ln,
                     HB_PARAMS_MAXLANES);
                rc = HB_ERR_CONFIG;
                break;
            }
            r.bwan[r.n_bwan++] = v[1] / 8.0; /* Mbit/s -> bytes/µs */
        } else if (nt == 2 && num(tok[1], &v[0]) == 0) {
            if (strcmp(tok[0], "L") == 0)
                r.L = v[0], have_L = 1;
            else if (strcmp(tok[0], "q") == 0)
                r.q = v[0];
            else if (strcmp(tok[0], "t_rto") == 0)
                r.t_rto = v[0];
            else if (strcmp(tok[0], "burst") == 0)
                r.burst = v[0];
            else if (strcmp(tok[0], "flow_control") == 0 && (v[0] == 0 || v[0] == 1))
                r.flow_control = (int)v[0];
            else if (strcmp(tok[0], "nodes") == 0 && v[0] < 1e9)
                r.nodes = (uint32_t)v[0];
            else if (strcmp(tok[0], "measured") == 0)
                r.measured = v[0];
            else if (strcmp(tok[0], "bwan_measured") == 0)
                r.bwan_measured = v[0];
            else {
                perr(err, errlen, "line %d: unknown key or bad value '%s'", ln, tok[0]);
                rc = HB_ERR_CONFIG;
            }
        } else {
            perr(err, errlen, "line %d: cannot read '%s'", ln, tok[0]);
            rc = HB_ERR_CONFIG;
        }
    }
    free(copy);
    if (rc == 0 && (have_L != (r.n > 0) || (r.n == 0 && r.n_bwan == 0))) {
        perr(err, errlen, "line %d: no L or no point, and no bwan", ln);
        rc = HB_ERR_CONFIG;
    }
    if (rc == 0)
        *p = r;
    return rc;
}

int hb_params_format(const hb_params_t *p, char *buf, size_t cap)
{
    size_t off = 0;
    int n;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        n = snprintf(buf + off, cap - off, __VA_ARGS__);                                           \
        if (n < 0 || (size_t)n >= cap - off)                                                       \
            return HB_ERR_TRUNCATED;                                                               \
        off += (size_t)n;                                                                          \
    } while (0)
    PUT("# hibar model parameters, written by hibar-bench logp and lanes (times us, sizes "
        "bytes)\n");
    PUT("cluster %s\nnodes %u\nmeasured %.0f\n", p->cluster[0] ? p->cluster : "-",
        (unsigned)p->nodes, p->measured);
    if (p->n > 0) {
        PUT("L %.3f\nq %.0f\nt_rto %.0f\nflow_control %d\nburst %.0f\n", p->L, p->q, p->t_rto,
            p->flow_control, p->burst);
        PUT("# point M o_s(M) o_r(M) g(M) g(M,one-to-many) g(M,many-to-one) g(M,pair)\n");
    }
    for (uint32_t i = 0; i < p->n; i++)
        PUT("point %.0f %.3f %.3f %.3f %.3f %.3f %.3f\n", p->m[i], p->os[i], p->orv[i],
            p->g[i], p->g_o2m[i], p->g_m2o[i], p->g_pair[i]);
    if (p->n_bwan > 0)
        PUT("bwan_measured %.0f\n# bwan P b_WAN(P): Mbit/s per lane with P lanes at once "
            "(hibar-bench lanes)\n",
            p->bwan_measured);
    for (uint32_t i = 0; i < p->n_bwan; i++)
        PUT("bwan %u %.3f\n", (unsigned)(i + 1), p->bwan[i] * 8.0);
#undef PUT
    return 0;
}

int hb_params_read(const char *path, hb_params_t *p, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *text;
    size_t len;
    int rc;
    if (f == NULL) {
        perr(err, errlen, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? HB_ERR_NOT_FOUND : HB_ERR_IO;
    }
    text = calloc(1, 65536);
    if (text == NULL) {
        fclose(f);
        return HB_ERR_NOMEM;
    }
    len = fread(text, 1, 65535, f);
    fclose(f);
    text[len] = '\0';
    {
        char e[256] = "";
        rc = hb_params_parse(text, p, e, sizeof(e));
        if (rc != 0)
            perr(err, errlen, "%s: %s", path, e);
    }
    free(text);
    return rc;
}

static int mkdirs(const char *path)
{
    char d[4096];
    snprintf(d, sizeof(d), "%s", path);
    for (char *s = d + 1; *s != '\0'; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(d, 0777) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return 0;
}

int hb_params_write(const char *path, const hb_params_t *p)
{
    char tmp[4200], *text = malloc(16384);
    FILE *f;
    int rc = text == NULL ? HB_ERR_NOMEM : hb_params_format(p, text, 16384);
    if (rc != 0) {
        free(text);
        return rc;
    }
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    if (mkdirs(path) != 0 || (f = fopen(tmp, "w")) == NULL) {
        hb_log_error("cannot write %s: %m", path);
        free(text);
        return HB_ERR_IO;
    }
    fputs(text, f);
    free(text);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        hb_log_error("cannot write %s: %m", path);
        unlink(tmp);
        return HB_ERR_IO;
    }
    return 0;
}

int hb_params_update(const char *path, const hb_params_t *p, unsigned what)
{
    hb_params_t *m = malloc(sizeof(*m));
    int rc;
    if (m == NULL)
        return HB_ERR_NOMEM;
    if (hb_params_read(path, m, NULL, 0) != 0 || strcmp(m->cluster, p->cluster) != 0)
        memset(m, 0, sizeof(*m));
    if (what & HB_PARAMS_PLOGP) {
        hb_params_t keep = *m;
        *m = *p;
        m->n_bwan = keep.n_bwan; /* the b_WAN(P) part as the file had it */
        m->bwan_measured = keep.bwan_measured;
        memcpy(m->bwan, keep.bwan, sizeof(m->bwan));
    }
    if (what & HB_PARAMS_BWAN) {
        snprintf(m->cluster, sizeof(m->cluster), "%s", p->cluster);
        if (m->nodes == 0)
            m->nodes = p->nodes;
        m->n_bwan = p->n_bwan;
        m->bwan_measured = p->bwan_measured;
        memcpy(m->bwan, p->bwan, sizeof(m->bwan));
    }
    rc = hb_params_write(path, m);
    free(m);
    return rc;
}

int hb_params_load(const char *cluster, hb_params_t *p, char *path, size_t cap, char *err,
                   size_t errlen)
{
    const char *env = getenv("HIBAR_MODEL_CACHE");
    int rc;
    if (env != NULL && strcmp(env, "none") == 0) {
        snprintf(path, cap, "(HIBAR_MODEL_CACHE=none)");
        return HB_ERR_NOT_FOUND;
    }
    rc = hb_params_path(cluster, path, cap);
    if (rc == 0)
        rc = hb_params_read(path, p, err, errlen);
    if (rc == 0 && p->cluster[0] != '\0' && strcmp(p->cluster, "-") != 0 &&
        strcmp(p->cluster, cluster) != 0) {
        perr(err, errlen, "%s: measured on cluster %s, not %s", path, p->cluster, cluster);
        rc = HB_ERR_CONFIG;
    }
    return rc;
}
