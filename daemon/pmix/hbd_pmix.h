/* hbd_pmix.h: the PMIx side of hibard: each job's PMIx server runs in a step process of its own
 * (hbd_step.h), started, watched and answered here. */
#ifndef HBD_PMIX_H
#define HBD_PMIX_H

#include <stdint.h>
#include <sys/types.h>

#include "hbd.h"
#include "hbd_job.h"

/* d->px, and RUN_DIR/NAME.pmix (what a crashed daemon left there removed): the steps' tmp dirs
 * go under it. 0 or NOMEM / CONFIG / IO (logged). */
int hbd_pmix_start(hbd_t *d);
/* Kill (SIGKILL) and reap the steps still there, remove the tmp dir. Safe if never started. */
void hbd_pmix_stop(hbd_t *d);
/* Start the job's step (hibard --pmix-step, its tmp dir RUN_DIR/NAME.pmix/<job id>), which
 * registers the job's namespace and local clients, without blocking: done(j, rc) follows on the
 * loop, rc 0, INTERNAL, NOMEM, or UNAVAIL when the step did not answer within HBD_PMIX_CALL_MS
 * (it is wedged: killed). Returns 0 when started (done comes unless the job is freed first:
 * hbd_pmix_job_register_cancel), else the error and done never comes. */
int hbd_pmix_job_register(hbd_job_t *j, void (*done)(hbd_job_t *j, int rc));
/* The job goes away while its registration runs: done will not come. */
void hbd_pmix_job_register_cancel(hbd_job_t *j);
/* 1 when the last job's step did not answer its registration (status: pmix=wedged). */
int hbd_pmix_wedged(const hbd_t *d);
/* Steps running or not reaped yet; messages from steps dropped (stats). */
uint32_t hbd_pmix_steps(const hbd_t *d);
uint64_t hbd_pmix_bad(const hbd_t *d);
/* The job is over here: its step closes (drops the namespace, finalizes, exits). */
void hbd_pmix_job_deregister(hbd_job_t *j);
/* Answer the job's fences in flight with an error (before its ranks are stopped). */
void hbd_pmix_job_cancel_fences(hbd_job_t *j);
/* Add PMIx's variables for local rank lr (from its step) to the malloc'd NULL-terminated *env. */
int hbd_pmix_setup_fork(hbd_job_t *j, uint32_t lr, char ***env);
/* A child was reaped (the launcher's SIGCHLD): 1 if it was a step (a job still using it ends
 * with an error), else 0. */
int hbd_pmix_reaped(hbd_t *d, pid_t pid, int status);

/* The direct_modex upcall, on the loop: proc is a pmix_proc_t, cbfunc a pmix_modex_cbfunc_t
 * (cast), answered exactly once (hbd_dmodex.h). The handler registers at its init; without one
 * the upcall is answered PMIX_ERR_NOT_SUPPORTED. */
typedef void (*hbd_fn_t)(void);
typedef void (*hbd_pmix_dmodex_fn)(hbd_t *d, const void *proc, const char *key, uint32_t timeout_ms,
                                   hbd_fn_t cbfunc, void *cbdata);
void hbd_pmix_on_dmodex(hbd_t *d, hbd_pmix_dmodex_fn fn);

/* Ask the job's step, for its rank `rank`: has it committed key (found 1, in the step's own
 * store), or its committed data (status a pmix_status_t; data NULL when none). The answer comes
 * later on the loop, exactly once (not found / PMIX_ERR_NOT_FOUND when the step goes first).
 * 0, or NOT_FOUND (the job has no step) / NOMEM and no answer comes. */
typedef void (*hbd_pmix_probe_fn)(hbd_t *d, void *arg, int found);
typedef void (*hbd_pmix_fetch_fn)(hbd_t *d, void *arg, int status, const char *data, size_t len);
int hbd_pmix_probe(hbd_job_t *j, uint32_t rank, const char *key, hbd_pmix_probe_fn fn, void *arg);
int hbd_pmix_fetch(hbd_job_t *j, uint32_t rank, hbd_pmix_fetch_fn fn, void *arg);

#endif
