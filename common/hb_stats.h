/* hb_stats.h: summary statistics for benchmarks (pure functions, no I/O, no global state). */
#ifndef HB_STATS_H
#define HB_STATS_H

#include <stddef.h>

/* Summary of n samples (same unit as the samples). */
typedef struct hb_stats {
    size_t n;
    double mean, stddev; /* stddev: sample standard deviation (n - 1), 0 if n < 2 */
    double min, max, median, p99;
    double ci;         /* half-width of the Student-t confidence interval of the mean */
    double confidence; /* the level ci was computed for, e.g. 0.95 */
} hb_stats_t;

/* Mean of x[0..n-1]; 0 for n == 0. */
double hb_stats_mean(const double *x, size_t n);
/* Sample standard deviation (divides by n - 1); 0 for n < 2. */
double hb_stats_stddev(const double *x, size_t n);
double hb_stats_min(const double *x, size_t n);
double hb_stats_max(const double *x, size_t n);
/* Quantile q in [0, 1] of ascending-sorted data, linear interpolation between order
 * statistics (type 7, as R and numpy's default); 0 for n == 0. */
double hb_stats_quantile_sorted(const double *sorted, size_t n, double q);
/* Sort in place, ascending. */
void hb_stats_sort(double *x, size_t n);
/* Two-sided Student-t critical value: P(|T| <= t) = confidence with df degrees of freedom
 * (df >= 1, 0 < confidence < 1). E.g. df = 9, 0.95 -> 2.262. */
double hb_stats_t_critical(double confidence, size_t df);
/* Half-width of the confidence interval of the mean: t * s / sqrt(n); 0 for n < 2. */
double hb_stats_ci(const double *x, size_t n, double confidence);

/*
 * Everything at once. Sorts x in place (pass a copy to keep the order). Returns 0, or
 * HB_ERR_INVAL for n == 0, a NULL pointer or a confidence outside (0, 1).
 */
int hb_stats_summarize(double *x, size_t n, double confidence, hb_stats_t *s_p);

#endif
