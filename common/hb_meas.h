/* hb_meas.h: the measurement core (MPIBlib): timing methods over abstract communication. */
#ifndef HB_MEAS_H
#define HB_MEAS_H

#include "hb_stats.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Benchmarking as a library (Lastovetsky, Rychkov, O'Flynn: MPIBlib). The same core times
 * libhibar ranks, the daemons' collectives and the Open MPI peer: whoever uses it supplies
 * the communication it needs as callbacks (hb_meas_comm_t) and calls hb_meas_run() on every
 * participant (SPMD). Three timing methods:
 *   global   clocks synchronised by ping-pongs between the root and every rank (offset of the
 *            round trip with the smallest RTT), re-synchronised every resync_reps
 *            repetitions and at every call; a repetition's time is the latest end, in the
 *            root's clock, minus the root's start (ranks leaving the isolating barrier
 *            before the root only wait for it: that spread is the barrier's, not the
 *            operation's);
 *   maximum  every rank times the operation with its own clock; the maximum over ranks;
 *   root     the root alone times the operation, followed by a confirmation from every rank
 *            when the root may finish first (scatter, bcast: confirm callback), minus what
 *            the confirmation adds (one way of a ping-pong, measured beforehand).
 * Every repetition is isolated by a barrier (without it, the next repetition overlaps the
 * tail of this one: the pipeline effect). Repetitions continue from min_reps until the
 * two-sided Student-t confidence interval of the mean at `confidence` is within rel_err of
 * the mean, or max_reps. Times are microseconds.
 */

typedef enum {
    HB_MEAS_GLOBAL = 0,
    HB_MEAS_MAXIMUM = 1,
    HB_MEAS_ROOT = 2,
    HB_MEAS_NMETHODS = 3
} hb_meas_method_t;

/* "global", "maximum", "root"; "?" for anything else. */
const char *hb_meas_method_name(hb_meas_method_t m);
/* Name -> method; 0 or HB_ERR_INVAL. */
int hb_meas_method_parse(const char *s, hb_meas_method_t *m_p);

typedef struct hb_meas_opts {
    uint32_t min_reps;     /* default 5; at least 2 (a CI needs two samples) */
    uint32_t max_reps;     /* default 200 */
    double confidence;     /* default 0.95 */
    double rel_err;        /* default 0.025: stop when ci <= rel_err * mean */
    uint32_t sync_pings;   /* global: ping-pongs per rank and synchronisation, default 20 */
    uint32_t resync_reps;  /* global: re-synchronise every N repetitions; 0: once per call */
    uint32_t confirm_reps; /* root: repetitions measuring the confirmation, default 20 */
} hb_meas_opts_t;

void hb_meas_opts_default(hb_meas_opts_t *o);

/* Stopping rule (pure): 1 when n >= max_reps, or n >= min_reps and ci <= rel_err * |mean|. */
int hb_meas_enough(size_t n, double mean, double ci, const hb_meas_opts_t *o);

/*
 * Adaptive repetitions without communication: add samples one by one until it says enough.
 * Usable from an event loop (the daemon's probes) as well as from hb_meas_run. Not
 * thread-safe (one per measurement).
 */
typedef struct hb_meas_adapt {
    hb_meas_opts_t o;
    double *x;
    size_t n, cap;
    double sum, sumsq;
} hb_meas_adapt_t;

/* 0, HB_ERR_INVAL (bad options: min_reps < 2, max_reps < min_reps, confidence or rel_err
 * out of range), HB_ERR_NOMEM. */
int hb_meas_adapt_init(hb_meas_adapt_t *a, const hb_meas_opts_t *o);
/* Add one sample: 1 when the stopping rule holds now, 0 for more, HB_ERR_NOMEM. */
int hb_meas_adapt_add(hb_meas_adapt_t *a, double x);
/* Summary of the samples so far (they are not reordered). 0 or HB_ERR_INVAL (none). */
int hb_meas_adapt_stats(const hb_meas_adapt_t *a, hb_stats_t *s_p);
void hb_meas_adapt_free(hb_meas_adapt_t *a);

/* Offset of a remote clock from one ping-pong: the remote reading minus the midpoint of the
 * local send and receive times (remote = local + offset). */
double hb_meas_offset(double t_send, double t_remote, double t_recv);

/*
 * The communication the core needs. Every callback returns 0 or a negative HB_ERR_*
 * (the measurement then stops with it). Rank 0 is the root. Callbacks may be NULL when
 * size == 1 (nothing to synchronise), except run.
 */
typedef struct hb_meas_comm {
    void *arg;
    uint32_t rank, size;
    /* This participant's clock in µs; NULL: CLOCK_MONOTONIC. */
    double (*now)(void *arg);
    int (*barrier)(void *arg);
    /* The operation once. If it knows its own duration better than the caller's clock (e.g.
     * stamps taken where it really runs) it stores it in *self_us, else leaves -1. */
    int (*run)(void *arg, double *self_us);
    /* Ping-pong for the global method. At the root: ping `peer`, wait for the answer and
     * store the peer's clock reading (its `now`, taken when the ping arrived) in *t_remote.
     * At rank `peer`: wait for one ping from the root and answer it (peer == own rank,
     * t_remote unused). */
    int (*pingpong)(void *arg, uint32_t peer, double *t_remote);
    /* Gather n doubles from every rank to the root: out[rank * n + i] (out used at the root). */
    int (*gather)(void *arg, const double *in, size_t n, double *out);
    /* Broadcast n doubles from the root. */
    int (*bcast)(void *arg, double *v, size_t n);
    /* Root method: every rank lets the root know it is done (e.g. a barrier). NULL when the
     * root provably finishes last (e.g. a gather whose other ranks return once their data is
     * sent): no confirmation, nothing subtracted. */
    int (*confirm)(void *arg);
} hb_meas_comm_t;

/* What one measurement found (complete at the root; other ranks get reps and method). */
typedef struct hb_meas_result {
    hb_meas_method_t method;
    hb_stats_t st;        /* over the repetitions, µs; st.ci at opts.confidence */
    uint64_t reps;        /* repetitions measured */
    double cost_us;       /* wall time of the whole call at the root (sync, gathers, ...) */
    double overhead_us;   /* global: clock synchronisation; root: measuring the confirmation */
    double confirm_us;    /* root: the confirmation time subtracted from every repetition */
    double max_offset_us; /* global: largest |clock offset| found */
    int converged;        /* 1: the CI reached rel_err; 0: stopped at max_reps */
} hb_meas_result_t;

/*
 * Measure c->run with method m. Collective: every rank of c calls it with the same method
 * and options. Blocking. 0, HB_ERR_INVAL (bad options or callbacks), HB_ERR_NOMEM, or a
 * callback's error.
 */
int hb_meas_run(const hb_meas_comm_t *c, hb_meas_method_t m, const hb_meas_opts_t *o,
                hb_meas_result_t *r_p);

#endif
