/* hb_stats.c: mean, deviation, quantiles and Student-t confidence intervals for benchmarks. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_stats.h"

#include "hb_status.h"

#include <math.h>
#include <stdlib.h>

double hb_stats_mean(const double *x, size_t n)
{
    double sum = 0.0;
    if (n == 0)
        return 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return sum / (double)n;
}

double hb_stats_stddev(const double *x, size_t n)
{
    double m, ss = 0.0;
    if (n < 2)
        return 0.0;
    m = hb_stats_mean(x, n);
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    return sqrt(ss / (double)(n - 1));
}

double hb_stats_min(const double *x, size_t n)
{
    double v = n ? x[0] : 0.0;
    for (size_t i = 1; i < n; i++)
        if (x[i] < v)
            v = x[i];
    return v;
}

double hb_stats_max(const double *x, size_t n)
{
    double v = n ? x[0] : 0.0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > v)
            v = x[i];
    return v;
}

double hb_stats_quantile_sorted(const double *sorted, size_t n, double q)
{
    double h, frac;
    size_t lo;
    if (n == 0)
        return 0.0;
    if (q <= 0.0)
        return sorted[0];
    if (q >= 1.0)
        return sorted[n - 1];
    h = q * (double)(n - 1);
    lo = (size_t)h;
    frac = h - (double)lo;
    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

static int hb_stats_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void hb_stats_sort(double *x, size_t n)
{
    if (n > 1)
        qsort(x, n, sizeof(*x), hb_stats_cmp);
}

/* Continued fraction of the regularized incomplete beta function (modified Lentz). */
static double hb_stats_betacf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0), h;
    if (fabs(d) < tiny)
        d = tiny;
    d = 1.0 / d;
    h = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m, aa, del;
        aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + aa * d;
        d = fabs(d) < tiny ? tiny : d;
        c = 1.0 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + aa * d;
        d = fabs(d) < tiny ? tiny : d;
        c = 1.0 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d;
        del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-15)
            break;
    }
    return h;
}

/* I_x(a, b), the regularized incomplete beta function. */
static double hb_stats_ibeta(double a, double b, double x)
{
    int sg;
    double lbt;
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    lbt = lgamma_r(a + b, &sg) - lgamma_r(a, &sg) - lgamma_r(b, &sg) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0))
        return exp(lbt) * hb_stats_betacf(a, b, x) / a;
    return 1.0 - exp(lbt) * hb_stats_betacf(b, a, 1.0 - x) / b;
}

double hb_stats_t_critical(double confidence, size_t df)
{
    double nu = (double)df, lo = 0.0, hi = 1.0, alpha = 1.0 - confidence;
    if (df == 0 || !(confidence > 0.0 && confidence < 1.0))
        return NAN;
    /* Two-sided tail mass P(|T| > t) = I_{nu/(nu+t^2)}(nu/2, 1/2), decreasing in t. */
    while (hb_stats_ibeta(nu / 2.0, 0.5, nu / (nu + hi * hi)) > alpha && hi < 1e12)
        hi *= 2.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (hb_stats_ibeta(nu / 2.0, 0.5, nu / (nu + mid * mid)) > alpha)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double hb_stats_ci(const double *x, size_t n, double confidence)
{
    if (n < 2)
        return 0.0;
    return hb_stats_t_critical(confidence, n - 1) * hb_stats_stddev(x, n) / sqrt((double)n);
}

int hb_stats_summarize(double *x, size_t n, double confidence, hb_stats_t *s_p)
{
    hb_stats_t s;
    if (x == NULL || s_p == NULL || n == 0 || !(confidence > 0.0 && confidence < 1.0))
        return HB_ERR_INVAL;
    s.n = n;
    s.confidence = confidence;
    s.mean = hb_stats_mean(x, n);
    s.stddev = hb_stats_stddev(x, n);
    s.ci = hb_stats_ci(x, n, confidence);
    hb_stats_sort(x, n);
    s.min = x[0];
    s.max = x[n - 1];
    s.median = hb_stats_quantile_sorted(x, n, 0.5);
    s.p99 = hb_stats_quantile_sorted(x, n, 0.99);
    *s_p = s;
    return 0;
}
