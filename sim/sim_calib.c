/* sim_calib.c: the model calibrated from hibar-bench rows (JSON lines, read with jansson). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hb_status.h"
#include "coll_model.h"
#include "sim.h"

/* ---- calibration ------------------------------------------------------------------------- */

typedef struct cal_row {
    json_t *obj; /* one row: a JSON object */
} cal_row_t;

/* Number at key (>= 0 and finite), or -1 when absent; -2 when present but not usable. */
static double row_num(const cal_row_t *r, const char *key)
{
    json_t *e = json_object_get(r->obj, key);

    if (e == NULL)
        return -1;
    if (!json_is_number(e) || !(json_number_value(e) >= 0))
        return -2;
    return json_number_value(e);
}

static const char *row_str(const cal_row_t *r, const char *key)
{
    return json_string_value(json_object_get(r->obj, key)); /* NULL: absent or not a string */
}

/* Calibration state beyond the parameters themselves. */
typedef struct cal_state {
    double hwb_nodes;    /* nodes of the hwbarrier row used, -1: none */
    int from_cluster;    /* T_IB/T_SR came from cluster-barrier rows */
    double cb_ib, cb_sr; /* their sums (the mean is used) */
    uint32_t n_logp;
    double logp_L_sum;
} cal_state_t;

static int cal_bad(char *err, size_t errlen, const char *path, unsigned line, const char *what,
                   const char *key)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s:%u: %s%s%s%s", path, line, what, key ? " '" : "", key ? key : "",
                 key ? "'" : "");
    return HB_ERR_CONFIG;
}

/* Insert a PlogP point (sizes kept ascending; the same size replaces). */
static int cal_logp(hb_sim_params_t *p, double m, double os, double orv, double g)
{
    uint32_t i = 0, k;

    while (i < p->n_logp && p->logp_m[i] < m)
        i++;
    if (i < p->n_logp && p->logp_m[i] == m) {
        p->logp_os[i] = os;
        p->logp_or[i] = orv;
        p->logp_g[i] = g;
        return 0;
    }
    if (p->n_logp >= HB_SIM_MAX_TAB)
        return -1;
    for (k = p->n_logp; k > i; k--) {
        p->logp_m[k] = p->logp_m[k - 1];
        p->logp_os[k] = p->logp_os[k - 1];
        p->logp_or[k] = p->logp_or[k - 1];
        p->logp_g[k] = p->logp_g[k - 1];
    }
    p->logp_m[i] = m;
    p->logp_os[i] = os;
    p->logp_or[i] = orv;
    p->logp_g[i] = g;
    p->n_logp++;
    return 0;
}

static int cal_row(const cal_row_t *r, hb_sim_params_t *p, hb_sim_calib_t *c, cal_state_t *st,
                   const char *path, unsigned line, char *err, size_t errlen)
{
    const char *bench = row_str(r, "bench"), *impl = row_str(r, "impl");
    double med = row_num(r, "median_us"), nodes = row_num(r, "nodes");

    if (bench == NULL)
        return cal_bad(err, errlen, path, line, "row without a string key", "bench");
    if (med == -2)
        return cal_bad(err, errlen, path, line, "not a number >= 0:", "median_us");
    if (strcmp(bench, "hwbarrier") == 0) {
        if (med < 0)
            return cal_bad(err, errlen, path, line, "hwbarrier row without", "median_us");
        if (!st->from_cluster && nodes >= st->hwb_nodes) {
            p->t_ib = med;
            st->hwb_nodes = nodes;
            c->set |= HB_SIM_SET_TIB;
        }
        c->used++;
    } else if (strcmp(bench, "tsr") == 0) {
        if (med < 0)
            return cal_bad(err, errlen, path, line, "tsr row without", "median_us");
        if (!st->from_cluster) {
            p->t_sr = med;
            c->set |= HB_SIM_SET_TSR;
        }
        c->used++;
    } else if (strcmp(bench, "cluster-barrier") == 0) {
        double tib = row_num(r, "t_ib_us"), tsr = row_num(r, "t_sr_us");
        if (tib == -2 || tsr == -2)
            return cal_bad(err, errlen, path, line,
                           "not a number >= 0:", tib == -2 ? "t_ib_us" : "t_sr_us");
        if (tib >= 0 && tsr >= 0) {
            st->cb_ib += tib;
            st->cb_sr += tsr;
            st->from_cluster++;
            p->t_ib = st->cb_ib / st->from_cluster;
            p->t_sr = st->cb_sr / st->from_cluster;
            c->set |= HB_SIM_SET_TIB | HB_SIM_SET_TSR;
        }
        if (med >= 0 && impl != NULL && nodes > 0 && c->n_meas < HB_SIM_MAX_MEAS) {
            hb_sim_meas_t *m = &c->meas[c->n_meas++];
            snprintf(m->impl, sizeof(m->impl), "%s", impl);
            m->nodes = (uint32_t)nodes;
            m->median_us = med;
            m->t_ib_us = tib;
            m->t_sr_us = tsr;
            m->protocol_median_us = row_num(r, "protocol_median_us");
            m->cpu_per_barrier_us = row_num(r, "cpu_per_barrier_us");
            m->cpu_per_ping_us = row_num(r, "cpu_per_ping_us");
            m->arrive_spread_us = row_num(r, "arrive_spread_us");
        }
        c->used++;
    } else if (strcmp(bench, "lanes") == 0) {
        double mbit = row_num(r, "mbit"), lat = row_num(r, "latency_us");
        if (mbit < 0)
            mbit = row_num(r, "bw_mbps");
        if (mbit == -2 || lat == -2)
            return cal_bad(err, errlen, path, line,
                           "not a number >= 0:", mbit == -2 ? "mbit" : "latency_us");
        if (impl == NULL || mbit <= 0)
            return cal_bad(err, errlen, path, line, "lanes row needs impl and a bandwidth > 0",
                           "mbit");
        if (strcmp(impl, "lan") == 0) {
            p->b_lan = HB_MODEL_MBIT(mbit);
            if (lat >= 0)
                p->alpha = lat;
            c->set |= HB_SIM_SET_LAN;
        } else if (strcmp(impl, "wan") == 0) {
            double P = row_num(r, "lanes"), tot = row_num(r, "total_mbit");
            if (P < 1 || P > HB_SIM_MAX_TAB || P != floor(P))
                return cal_bad(err, errlen, path, line, "wan row needs lanes 1..64", "lanes");
            while (p->n_b_wan < (uint32_t)P) {
                /* fill holes with the last known value until the row's P */
                p->b_wan[p->n_b_wan] = p->n_b_wan ? p->b_wan[p->n_b_wan - 1] : HB_MODEL_MBIT(mbit);
                p->n_b_wan++;
            }
            p->b_wan[(uint32_t)P - 1] = HB_MODEL_MBIT(mbit);
            if (P == 1)
                p->b_lane = HB_MODEL_MBIT(mbit);
            if (tot > 0)
                p->B_wan = HB_MODEL_MBIT(tot);
            if (lat >= 0)
                p->wan_lat = lat;
            c->set |= HB_SIM_SET_WAN;
        } else {
            return cal_bad(err, errlen, path, line, "lanes row with impl not lan/wan:", impl);
        }
        c->used++;
    } else if (strcmp(bench, "host") == 0) {
        static const char *const keys[] = {"cores",     "t_sr_us",   "t_ib_us",    "msg_cpu_us",
                                           "io_cpu_us", "ib_cpu_us", "ctl_cpu_us", "wake_us"};
        double v[8];
        hb_sim_host_row_t *h;
        size_t k;
        for (k = 0; k < 8; k++) {
            v[k] = row_num(r, keys[k]);
            if (v[k] < 0)
                return cal_bad(err, errlen, path, line, "host row needs a number >= 0:", keys[k]);
        }
        if (impl == NULL || v[0] < 1 || v[0] > 4096 || v[0] != floor(v[0]))
            return cal_bad(err, errlen, path, line, "host row needs impl and cores 1..4096",
                           "cores");
        if (c->n_host >= HB_SIM_MAX_MEAS)
            return cal_bad(err, errlen, path, line, "too many host rows", NULL);
        h = &c->host[c->n_host++];
        snprintf(h->impl, sizeof(h->impl), "%s", impl);
        h->cores = (uint32_t)v[0];
        h->t_sr_us = v[1];
        h->t_ib_us = v[2];
        h->msg_cpu_us = v[3];
        h->io_cpu_us = v[4];
        h->ib_cpu_us = v[5];
        h->ctl_cpu_us = v[6];
        h->wake_us = v[7];
        h->load1 = row_num(r, "load1");
        h->t_sr_mean_us = row_num(r, "t_sr_mean_us");
        h->t_ib_mean_us = row_num(r, "t_ib_mean_us");
        h->sr_stall_us = row_num(r, "sr_stall_us") > 0 ? row_num(r, "sr_stall_us") : 0;
        h->sr_stall_p = row_num(r, "sr_stall_p") > 0 ? row_num(r, "sr_stall_p") : 0;
        h->ib_stall_us = row_num(r, "ib_stall_us") > 0 ? row_num(r, "ib_stall_us") : 0;
        h->ib_stall_p = row_num(r, "ib_stall_p") > 0 ? row_num(r, "ib_stall_p") : 0;
        if (h->sr_stall_p > 1 || h->ib_stall_p > 1)
            return cal_bad(err, errlen, path, line, "stall probability above 1", NULL);
        c->set |= HB_SIM_SET_HOST;
        c->used++;
    } else if (strcmp(bench, "logp") == 0) {
        double m = row_num(r, "size"), L = row_num(r, "L_us"), os = row_num(r, "os_us"),
               orv = row_num(r, "or_us"), g = row_num(r, "g_us");
        if (m < 0 || L < 0 || g < 0)
            return cal_bad(err, errlen, path, line, "logp row needs size, L_us, g_us >= 0",
                           m < 0   ? "size"
                           : L < 0 ? "L_us"
                                   : "g_us");
        if (cal_logp(p, m, os > 0 ? os : 0, orv > 0 ? orv : 0, g) != 0)
            return cal_bad(err, errlen, path, line, "too many logp sizes (64 at most)", NULL);
        st->logp_L_sum += L;
        st->n_logp++;
        p->logp_L = st->logp_L_sum / st->n_logp;
        c->set |= HB_SIM_SET_LOGP;
        c->used++;
    }
    return 0;
}

int hb_sim_calibrate(const char *path, hb_sim_params_t *p, hb_sim_calib_t *c_p, char *err,
                     size_t errlen)
{
    hb_sim_params_t np;
    hb_sim_calib_t c;
    cal_state_t st = {.hwb_nodes = -1};
    char line[8192], buf[8192];
    cal_row_t row = {NULL};
    unsigned lineno = 0;
    FILE *f;
    int rc = 0;

    if (path == NULL || p == NULL)
        return HB_ERR_INVAL;
    f = fopen(path, "r");
    if (f == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HB_ERR_IO;
    }
    memset(&c, 0, sizeof(c));
    np = *p;
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *s = line;
        json_error_t je;
        size_t len = strlen(line);
        lineno++;
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            rc = cal_bad(err, errlen, path, lineno, "line too long", NULL);
            break;
        }
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\n' || *s == '\r' || *s == '\0' || *s == '#')
            continue;
        row.obj = json_loads(s, JSON_DECODE_INT_AS_REAL, &je);
        if (row.obj == NULL || !json_is_object(row.obj)) {
            if (row.obj != NULL)
                snprintf(buf, sizeof(buf), "malformed JSON: not an object");
            else
                snprintf(buf, sizeof(buf), "malformed JSON at column %d: %s", je.column, je.text);
            json_decref(row.obj);
            rc = cal_bad(err, errlen, path, lineno, buf, NULL);
            break;
        }
        c.rows++;
        rc = cal_row(&row, &np, &c, &st, path, lineno, err, errlen);
        json_decref(row.obj);
        if (rc != 0)
            break;
    }
    if (rc == 0 && ferror(f)) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: read error", path);
        rc = HB_ERR_IO;
    }
    fclose(f);
    if (rc == 0 && (c.set & HB_SIM_SET_LOGP))
        np.ctl_gap = hb_model_interp(np.logp_m, np.logp_g, np.n_logp, 0);
    if (rc == 0 && hb_sim_params_check(&np, buf, sizeof(buf)) != 0)
        rc = cal_bad(err, errlen, path, lineno, buf, NULL);
    if (rc != 0)
        return rc;
    *p = np;
    if (c_p != NULL)
        *c_p = c;
    return 0;
}

static int cal_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n > 0; the mean of the middle two when n is even); sorts v. */
static double cal_median(double *v, uint32_t n)
{
    qsort(v, n, sizeof(double), cal_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int hb_sim_calib_host(const hb_sim_calib_t *c, const char *impl, hb_sim_step_t step,
                      hb_sim_params_t *p)
{
    /* per figure, its values over the rows: sr, ib, msg, io, ibcpu, ctl, wake */
    double v[7][HB_SIM_MAX_MEAS], ssr = 0, psr = 0, sib = 0, pib = 0;
    int mean = step == HB_SIM_STEP_MEAN;
    uint32_t i, k, n = 0, cores = 0;

    for (i = 0; c != NULL && i < c->n_host; i++) {
        const hb_sim_host_row_t *h = &c->host[i];
        if (impl != NULL && strcmp(h->impl, impl) != 0)
            continue;
        if (h->cores > cores)
            cores = h->cores;
        v[0][n] = mean && h->t_sr_mean_us >= 0 ? h->t_sr_mean_us : h->t_sr_us;
        v[1][n] = mean && h->t_ib_mean_us >= 0 ? h->t_ib_mean_us : h->t_ib_us;
        v[2][n] = h->msg_cpu_us;
        v[3][n] = h->io_cpu_us;
        v[4][n] = h->ib_cpu_us;
        v[5][n] = h->ctl_cpu_us;
        v[6][n] = h->wake_us;
        ssr += h->sr_stall_us * h->sr_stall_p; /* expected stall per hop */
        psr += h->sr_stall_p;
        sib += h->ib_stall_us * h->ib_stall_p;
        pib += h->ib_stall_p;
        n++;
    }
    if (n == 0)
        return HB_ERR_NOT_FOUND;
    /* the median over the rows (the probes of --measure's blocks): one probe that met a
     * burst of other programs' load does not set the figure */
    for (k = 0; k < 7; k++)
        v[k][0] = cal_median(v[k], n);
    p->cores = cores;
    p->t_sr = v[0][0];
    p->t_ib = v[1][0];
    p->msg_cpu_us = v[2][0];
    p->io_cpu_us = v[3][0];
    p->ib_cpu_us = v[4][0];
    p->cpu_us = v[5][0];
    p->wake_us = v[6][0];
    if (mean) {
        /* the wake-ups: what the CPU leaves of the hop */
        p->wake_us = (p->t_sr - 2 * p->msg_cpu_us - 2 * p->io_cpu_us) / 3;
        if (p->wake_us < 0)
            p->wake_us = 0;
        p->sr_stall_p = p->ib_stall_p = p->sr_stall_us = p->ib_stall_us = 0;
        return 0;
    }
    /* the stalls: mean probability, and the size that keeps the mean expected stall */
    p->sr_stall_p = psr / n;
    p->sr_stall_us = p->sr_stall_p > 0 ? ssr / n / p->sr_stall_p : 0;
    p->ib_stall_p = pib / n;
    p->ib_stall_us = p->ib_stall_p > 0 ? sib / n / p->ib_stall_p : 0;
    return 0;
}
