/* hbd_pmix.h: hibard as its node's PMIx server: namespaces, clients, upcalls. */
#ifndef HBD_PMIX_H
#define HBD_PMIX_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_job.h"

/* PMIx_server_init with PMIX_SERVER_TMPDIR = RUN_DIR/NAME.pmix and PMIX_HOSTNAME = NAME;
 * the upcall queue and SIGCHLD watcher on d's loop. 0 or IO / INTERNAL (logged). */
int hbd_pmix_start(hbd_t *d);
/* Stop every job (SIGKILL), PMIx_server_finalize, remove the tmp dir. Safe if never started. */
void hbd_pmix_stop(hbd_t *d);
/* Register the job's namespace (job info, per-rank info) and its local clients, without
 * blocking: PMIx's thread does it (a few ms) and done(j, rc) follows on the loop, rc 0,
 * INTERNAL, NOMEM, or UNAVAIL when PMIx's thread did not answer within HBD_PMIX_CALL_MS (it
 * is wedged: hbd_pmix_wedged). Returns 0 when started (done comes unless the job is freed
 * first: hbd_pmix_job_register_cancel), else the error (NOMEM, or UNAVAIL once wedged) and
 * done never comes. */
int hbd_pmix_job_register(hbd_job_t *j, void (*done)(hbd_job_t *j, int rc));
/* The job goes away while its registration runs: done will not come. */
void hbd_pmix_job_register_cancel(hbd_job_t *j);
/* 1 once libpmix's server thread stopped answering (no job can run here until a restart). */
int hbd_pmix_wedged(void);
void hbd_pmix_job_deregister(hbd_job_t *j);
/* Answer the job's fences in flight with an error (before its ranks are stopped). */
void hbd_pmix_job_cancel_fences(hbd_job_t *j);
/* Add PMIx's variables for local rank lr to the malloc'd NULL-terminated *env. */
int hbd_pmix_setup_fork(hbd_job_t *j, uint32_t lr, char ***env);

/* The direct_modex upcall, on the loop: proc is a pmix_proc_t, cbfunc a pmix_modex_cbfunc_t
 * (cast), answered exactly once (hbd_dmodex.h). The handler registers at its init; without one
 * the upcall is answered PMIX_ERR_NOT_SUPPORTED. */
typedef void (*hbd_fn_t)(void);
typedef void (*hbd_pmix_dmodex_fn)(hbd_t *d, const void *proc, const char *key, uint32_t timeout_ms,
                                   hbd_fn_t cbfunc, void *cbdata);
void hbd_pmix_on_dmodex(hbd_pmix_dmodex_fn fn);
/* Run fn(d, arg) on the loop (from any thread, e.g. a PMIx callback). 0 or NOMEM. */
int hbd_pmix_call_on_loop(void (*fn)(hbd_t *d, void *arg), void *arg);

#endif
