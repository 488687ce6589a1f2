/* hb_meas.c: MPIBlib timing methods (global, maximum, root) and adaptive repetitions. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_meas.h"

#include "hb_time.h"
#include "hb_status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const hb_meas_names[HB_MEAS_NMETHODS] = {"global", "maximum", "root"};

const char *hb_meas_method_name(hb_meas_method_t m)
{
    return (unsigned)m < HB_MEAS_NMETHODS ? hb_meas_names[m] : "?";
}

int hb_meas_method_parse(const char *s, hb_meas_method_t *m_p)
{
    for (int i = 0; s != NULL && i < HB_MEAS_NMETHODS; i++)
        if (strcmp(s, hb_meas_names[i]) == 0) {
            *m_p = (hb_meas_method_t)i;
            return 0;
        }
    return HB_ERR_INVAL;
}

void hb_meas_opts_default(hb_meas_opts_t *o)
{
    o->min_reps = 5;
    o->max_reps = 200;
    o->confidence = 0.95;
    o->rel_err = 0.025;
    o->sync_pings = 20;
    o->resync_reps = 0;
    o->confirm_reps = 20;
}

static int hb_meas_opts_ok(const hb_meas_opts_t *o)
{
    return o != NULL && o->min_reps >= 2 && o->max_reps >= o->min_reps && o->confidence > 0.0 &&
           o->confidence < 1.0 && o->rel_err > 0.0;
}

int hb_meas_enough(size_t n, double mean, double ci, const hb_meas_opts_t *o)
{
    if (n >= o->max_reps)
        return 1;
    return n >= o->min_reps && n >= 2 && ci <= o->rel_err * fabs(mean);
}

int hb_meas_adapt_init(hb_meas_adapt_t *a, const hb_meas_opts_t *o)
{
    if (a == NULL || !hb_meas_opts_ok(o))
        return HB_ERR_INVAL;
    memset(a, 0, sizeof(*a));
    a->o = *o;
    a->cap = o->max_reps < 64 ? o->max_reps : 64;
    a->x = malloc(a->cap * sizeof(double));
    return a->x == NULL ? HB_ERR_NOMEM : 0;
}

int hb_meas_adapt_add(hb_meas_adapt_t *a, double x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap * 2;
        double *nx = realloc(a->x, cap * sizeof(double));
        if (nx == NULL)
            return HB_ERR_NOMEM;
        a->x = nx;
        a->cap = cap;
    }
    a->x[a->n++] = x;
    if (a->n >= a->o.max_reps)
        return 1;
    if (a->n < a->o.min_reps)
        return 0;
    /* the t quantile only when the rule can hold: it is the expensive part */
    double mean = hb_stats_mean(a->x, a->n);
    return hb_meas_enough(a->n, mean, hb_stats_ci(a->x, a->n, a->o.confidence), &a->o);
}

int hb_meas_adapt_stats(const hb_meas_adapt_t *a, hb_stats_t *s_p)
{
    int rc;
    double *c;
    if (a == NULL || a->n == 0)
        return HB_ERR_INVAL;
    c = malloc(a->n * sizeof(double));
    if (c == NULL)
        return HB_ERR_NOMEM;
    memcpy(c, a->x, a->n * sizeof(double));
    rc = hb_stats_summarize(c, a->n, a->o.confidence, s_p);
    free(c);
    return rc;
}

void hb_meas_adapt_free(hb_meas_adapt_t *a)
{
    if (a == NULL)
        return;
    free(a->x);
    a->x = NULL;
    a->n = a->cap = 0;
}

double hb_meas_offset(double t_send, double t_remote, double t_recv)
{
    return t_remote - 0.5 * (t_send + t_recv);
}

/* ---- the SPMD runner ---- */

static double hb_meas_now(const hb_meas_comm_t *c)
{
    return c->now != NULL ? c->now(c->arg) : hb_time_now_us();
}

static int hb_meas_barrier(const hb_meas_comm_t *c)
{
    return c->size > 1 ? c->barrier(c->arg) : 0;
}

/* Clock offsets of every rank against the root (off[rank], root only): the ping-pong with the
 * smallest round trip of o->sync_pings per rank. */
static int hb_meas_sync(const hb_meas_comm_t *c, const hb_meas_opts_t *o, double *off,
                        double *max_off)
{
    int rc = 0;
    if (c->size < 2)
        return 0;
    if (c->rank == 0) {
        off[0] = 0.0;
        for (uint32_t p = 1; p < c->size && rc == 0; p++) {
            double best = INFINITY;
            for (uint32_t k = 0; k < o->sync_pings && rc == 0; k++) {
                double tr = 0, ts = hb_meas_now(c), te;
                rc = c->pingpong(c->arg, p, &tr);
                te = hb_meas_now(c);
                if (rc == 0 && te - ts < best) {
                    best = te - ts;
                    off[p] = hb_meas_offset(ts, tr, te);
                }
            }
            if (fabs(off[p]) > *max_off)
                *max_off = fabs(off[p]);
        }
    } else {
        for (uint32_t k = 0; k < o->sync_pings && rc == 0; k++)
            rc = c->pingpong(c->arg, c->rank, NULL);
    }
    if (rc == 0)
        rc = hb_meas_barrier(c);
    return rc;
}

/*
 * Root method: what the confirmation adds to the root's time. The root's clock stops when
 * the last rank's "done" reaches it, one notification after that rank finished: one way of
 * a ping-pong (half the round trip, median of confirm_reps, with every rank in turn). Without
 * a pingpong callback: the confirmation alone after a barrier (median), which also counts the
 * spread of the ranks leaving the barrier and so over-corrects. Nothing when the root
 * finishes last anyway (no confirm callback).
 */
static int hb_meas_confirm_time(const hb_meas_comm_t *c, const hb_meas_opts_t *o, double *t_p)
{
    uint32_t n = o->confirm_reps ? o->confirm_reps : 1;
    double *x;
    int rc = 0;
    *t_p = 0.0;
    if (c->size < 2 || c->confirm == NULL)
        return 0;
    x = calloc(n, sizeof(double));
    if (x == NULL)
        return HB_ERR_NOMEM;
    for (uint32_t k = 0; k < n && rc == 0; k++) {
        uint32_t peer = 1 + k % (c->size - 1);
        double t0;
        if (c->pingpong == NULL) {
            rc = hb_meas_barrier(c);
            t0 = hb_meas_now(c);
            if (rc == 0)
                rc = c->confirm(c->arg);
            x[k] = hb_meas_now(c) - t0;
        } else if (c->rank == 0) {
            double tr;
            t0 = hb_meas_now(c);
            rc = c->pingpong(c->arg, peer, &tr);
            x[k] = 0.5 * (hb_meas_now(c) - t0);
        } else if (c->rank == peer) {
            rc = c->pingpong(c->arg, peer, NULL);
        }
    }
    if (rc == 0)
        rc = hb_meas_barrier(c);
    if (rc == 0) {
        hb_stats_sort(x, n);
        *t_p = hb_stats_quantile_sorted(x, n, 0.5);
    }
    free(x);
    return rc;
}

int hb_meas_run(const hb_meas_comm_t *c, hb_meas_method_t m, const hb_meas_opts_t *o,
                hb_meas_result_t *r_p)
{
    hb_meas_result_t r;
    hb_meas_adapt_t ad;
    double *off = NULL, *all = NULL, t_begin;
    int rc, root;
    uint64_t rep = 0;

    if (c == NULL || r_p == NULL || c->run == NULL || c->size == 0 || c->rank >= c->size ||
        (unsigned)m >= HB_MEAS_NMETHODS || !hb_meas_opts_ok(o))
        return HB_ERR_INVAL;
    if (c->size > 1 && (c->barrier == NULL || c->gather == NULL || c->bcast == NULL ||
                        (m == HB_MEAS_GLOBAL && c->pingpong == NULL)))
        return HB_ERR_INVAL;
    root = c->rank == 0;
    memset(&r, 0, sizeof(r));
    r.method = m;
    rc = hb_meas_adapt_init(&ad, o);
    if (rc != 0)
        return rc;
    off = calloc(c->size, sizeof(double));
    all = calloc(2 * (size_t)c->size, sizeof(double));
    if (off == NULL || all == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    rc = hb_meas_barrier(c);
    t_begin = hb_meas_now(c);
    if (rc == 0 && m == HB_MEAS_GLOBAL)
        rc = hb_meas_sync(c, o, off, &r.max_offset_us);
    else if (rc == 0 && m == HB_MEAS_ROOT)
        rc = hb_meas_confirm_time(c, o, &r.confirm_us);
    r.overhead_us = hb_meas_now(c) - t_begin;
    for (int more = 1; rc == 0 && more; rep++) {
        double t0, t1, self = -1.0, v[2], sample = 0.0, flag = 0.0;
        if (m == HB_MEAS_GLOBAL && o->resync_reps > 0 && rep > 0 && rep % o->resync_reps == 0) {
            double ts = hb_meas_now(c);
            rc = hb_meas_sync(c, o, off, &r.max_offset_us);
            r.overhead_us += hb_meas_now(c) - ts;
            if (rc != 0)
                break;
        }
        rc = hb_meas_barrier(c);
        if (rc != 0)
            break;
        t0 = hb_meas_now(c);
        rc = c->run(c->arg, &self);
        if (rc == 0 && m == HB_MEAS_ROOT && c->size > 1 && c->confirm != NULL)
            rc = c->confirm(c->arg);
        t1 = hb_meas_now(c);
        if (rc != 0)
            break;
        if (self >= 0.0 && m != HB_MEAS_ROOT)
            t1 = t0 + self;
        switch (m) {
        case HB_MEAS_GLOBAL:
            v[0] = t0;
            v[1] = t1;
            rc = c->size > 1 ? c->gather(c->arg, v, 2, all) : 0;
            if (c->size == 1)
                all[0] = t0, all[1] = t1;
            if (rc == 0 && root) {
                /* from the root's start (the collective begins when the root calls it; a
                 * rank that left the isolating barrier earlier only waits) to the latest
                 * end; remote = root + off, so a remote stamp is stamp - off in the root's
                 * clock */
                double e = -INFINITY;
                for (uint32_t i = 0; i < c->size; i++)
                    e = fmax(e, all[2 * i + 1] - off[i]);
                sample = e - all[0];
            }
            break;
        case HB_MEAS_MAXIMUM:
            v[0] = t1 - t0;
            rc = c->size > 1 ? c->gather(c->arg, v, 1, all) : 0;
            if (c->size == 1)
                all[0] = v[0];
            if (rc == 0 && root) {
                sample = all[0];
                for (uint32_t i = 1; i < c->size; i++)
                    sample = fmax(sample, all[i]);
            }
            break;
        default: /* root */
            sample = self >= 0.0 ? self : fmax(0.0, t1 - t0 - r.confirm_us);
            break;
        }
        if (rc != 0)
            break;
        if (root) {
            int e = hb_meas_adapt_add(&ad, sample);
            if (e < 0) {
                rc = e;
                flag = -1.0; /* tell the others to stop */
            } else {
                flag = e ? 0.0 : 1.0;
            }
        }
        if (c->size > 1) {
            int brc = c->bcast(c->arg, &flag, 1);
            if (rc == 0)
                rc = brc;
        }
        if (rc == 0 && flag < 0.0)
            rc = HB_ERR_NOMEM; /* the root ran out */
        more = flag > 0.0;
    }
    if (rc == 0) {
        r.reps = rep;
        r.cost_us = hb_meas_now(c) - t_begin;
        if (root) {
            rc = hb_meas_adapt_stats(&ad, &r.st);
            r.converged = r.reps < o->max_reps ||
                          (r.st.ci <= o->rel_err * fabs(r.st.mean) && r.reps >= o->min_reps);
        }
    }
    if (rc == 0)
        *r_p = r;
out:
    hb_meas_adapt_free(&ad);
    free(off);
    free(all);
    return rc;
}
