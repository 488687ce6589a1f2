/* hbd_emu.h: the emulated cluster: one hibard per node of a configuration, all on this host. */
#ifndef HBD_EMU_H
#define HBD_EMU_H

#include <stddef.h>

#include "cfg.h"
#include "hbd_client.h"

typedef struct hbd_emu_opts {
    const char *config;      /* the configuration file passed on to every daemon */
    const char *const *over; /* "key=value" overrides passed on as --set */
    size_t n_over;
    const char *log_level; /* passed on as --log-level, or NULL */
    int timeout_ms;        /* how long up waits for every daemon to be linked */
    int keep_logs;         /* down leaves RUN_DIR/NAME.log in place */
    const char *hostexec;  /* run each daemon as `hostexec NODE hibard ...` (the hosts of
                            * tests/netns/testbed), or NULL: on this host */
} hbd_emu_opts_t;

/* Where hibard is: $HIBARD, else next to this program (build tree: ../daemon/hibard,
 * installed: ../sbin/hibard), else "hibard" on PATH. */
const char *hbd_emu_hibard_path(void);

/* How many daemons of cfg are running (live pid file owner). */
unsigned hbd_emu_running(const hb_cfg_t *cfg);

/*
 * Start one detached hibard per node (run dir 0700, cluster key generated there unless the
 * configuration names one), wait until every daemon reports ready. If anything fails, what
 * was started is stopped again and the error returned (logged with the failing node and the
 * tail of its log). EXISTS if some daemon of this cluster is already running.
 */
int hbd_emu_up(const hb_cfg_t *cfg, const hbd_emu_opts_t *o);

/*
 * Stop every daemon (shutdown command, then SIGTERM, then SIGKILL after a grace period) and
 * remove what they leave: socket, pid and port files, logs, the generated key, the chassis
 * barrier segments (/dev/shm/hibar-<uid>-<cluster>-c*), the run dir if it is then empty.
 * Works after crashes. Returns 0, or IO if something could not be removed (logged).
 */
int hbd_emu_down(const hb_cfg_t *cfg, const hbd_emu_opts_t *o);

/*
 * Start node's daemon again (stopped first if it runs: SIGTERM, SIGKILL after 5 s) with the
 * options of up, and wait (o->timeout_ms, default 30 s) until it is ready and every other
 * running daemon holds it up at its new incarnation (the control command "members"). 0, INVAL
 * (no such node), TIMEOUT (printed with the tail of its log), or spawn's error.
 */
int hbd_emu_restart(const hb_cfg_t *cfg, const hbd_emu_opts_t *o, uint32_t node);

/*
 * The daemons of cfg for one tool run: the cluster's daemons if some are running, else an
 * emulated cluster started here with o (hbd_emu_up; *started_p set to 1, else 0); then
 * connected to every daemon (hbd_cluster_open, timeout_ms). Errors are printed to stderr after
 * "prog: " and returned; a started cluster stays up until hbd_emu_release (call it after an
 * error too).
 */
int hbd_emu_acquire(const hb_cfg_t *cfg, const hbd_emu_opts_t *o, int timeout_ms, const char *prog,
                    int *started_p, hbd_cluster_t **cl_p);
/* Close cl (NULL: nothing to close); stop the daemons (hbd_emu_down) if this run started them
 * and keep is 0. */
void hbd_emu_release(const hb_cfg_t *cfg, const hbd_emu_opts_t *o, hbd_cluster_t *cl, int started,
                     int keep);

#endif
