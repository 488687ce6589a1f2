/* hbd_dmodex.h: direct modex across daemons (the PMIx direct_modex upcall served remotely). */
#ifndef HBD_DMODEX_H
#define HBD_DMODEX_H

#include <stdint.h>

#include "hbd.h"
#include "hbd_pmix.h"

/* The direct_modex upcall, on the loop: ask the daemon hosting proc (DMODEX frame) to serve it
 * through PMIx_server_dmodex_request, answer cbfunc exactly once (PMIX_ERR_NOT_FOUND for an
 * unknown process, PMIX_ERR_TIMEOUT after timeout_ms or the cluster's barrier timeout,
 * PMIX_ERR_COMM_FAILURE if that node is lost). key: PMIX_REQUIRED_KEY or NULL; with a key the
 * hosting daemon answers only once the process has committed that key (or the timeout ends
 * the request). proc: a pmix_proc_t; cbfunc: a pmix_modex_cbfunc_t (cast). */
void hbd_dmodex_request(hbd_t *d, const void *proc, const char *key, uint32_t timeout_ms,
                        hbd_fn_t cbfunc, void *cbdata);
/* Take the DMODEX frames (hbd_net) and the PMIx server's direct_modex upcalls. */
int hbd_dmodex_init(hbd_t *d);
/* Answer every request in flight (shutdown). */
void hbd_dmodex_fini(hbd_t *d);

#endif
