/* hbd_boot.h: hibard's start-up under a resource manager (bootstrap pmix and env). */
#ifndef HBD_BOOT_H
#define HBD_BOOT_H

#include <stddef.h>

#include "cfg.h"

/*
 * Load the configuration as hb_cfg_load() does (config path, "key=value" overrides). With
 * `bootstrap: static` or `local` that is all: *node_p is left as it is.
 *
 * With `bootstrap: pmix` (hibard started by `srun --mpi=pmix` or `mpirun`) this daemon's
 * address and port are chosen (HIBAR_BOOT_ADDRESS, else the IPv4 address of HIBAR_BOOT_IF,
 * else the first non-loopback IPv4 address that is up; the config's `port` + PMIx local rank
 * when free, else one the system picks) and the helper `hibar-boot` (found through
 * $HIBAR_BOOT, next to hibard, ../tools/, ../bin/, then $PATH) exchanges every daemon's name,
 * address and port through PMIx Put / Fence / Get. Afterwards the PMIX_* variables (but
 * PMIX_MCA_*) are removed from the environment, so hibard can be a PMIx server itself.
 *
 * With `bootstrap: env` the node list and this node's index come from SLURM_JOB_NODELIST /
 * SLURM_NODEID, or HIBAR_HOSTFILE (one "NAME [ADDRESS]" per line) / HIBAR_NODE_INDEX; every
 * daemon reports to a rendezvous that the first node serves on `port` (its address from the
 * hostfile, else HIBAR_RENDEZVOUS, else its name resolved); daemons listen on `port` + 1.
 *
 * Either way the nodes are then set in the configuration (chassis and sites from its
 * hostlists, or the daemons sharing an address form a chassis), the cluster key pair is
 * agreed (unless `key_file` is set) and written to RUN_DIR/cluster.key, RUN_DIR/cluster.yaml
 * gets the resulting static configuration (for hibar-run inside the allocation), hibard
 * stays in the foreground (*foreground_p = 1) and gets SIGTERM when its launcher dies.
 * HIBAR_BOOT_TIMEOUT (seconds, default 20) bounds the exchange: a daemon that cannot reach
 * its PMIx server or the rendezvous, or a node missing from it, fails every daemon within
 * about that time with the same message.
 *
 * Returns 0 (cfg in *cfg_p, this daemon's name in *node_p, owned by the cfg), or
 * HB_ERR_CONFIG with the one-line message in err (as hb_cfg_load), or another negative
 * HB_ERR_* with the message in err (what was tried). Blocking; call before any thread.
 */
int hbd_boot_load(const char *config, const char *const *over, size_t n_over, const char **node_p,
                  int *foreground_p, hb_cfg_t **cfg_p, char *err, size_t errlen);

/* The helper's side of the pipe protocol (tools/hibar_boot.c and hbd_boot.c agree on it):
 *   helper -> hibard: "RANK <rank> <size> <local_rank> <hostname>\n"
 *   hibard -> helper: "EP <address> <port> <key-or-->\n"   (key: "pubZ85:secZ85", rank 0)
 *   helper -> hibard: "NODE <rank> <hostname> <local_rank> <address> <port>\n" x size,
 *                     "KEY <pubZ85:secZ85>\n", "END\n"   or at any point "ERR <message>\n" */
#define HBD_BOOT_LINE_MAX 512

#endif
