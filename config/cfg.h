/* cfg.h: the parsed cluster configuration (YAML file, defaults, HIBAR_<NAME> env, flag overrides).
 */
#ifndef HB_CFG_H
#define HB_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "topo.h"

/*
 * How a configuration is put together (every tool and the daemon use the same path):
 *   defaults  <  the YAML file  <  HIBAR_<NAME> environment  <  command-line overrides
 * then hb_cfg_finalize() expands hostlists, forms chassis and sites and validates everything.
 * hb_cfg_load() does all of it in one call.
 *
 * Errors: every function that can fail on user input fills err (if non-NULL) with ONE line
 *   FILE:LINE:COLUMN: <what> '<key or value>'
 * (or "environment HIBAR_X: ..." / "override KEY=VALUE: ..." for the other sources) and
 * returns a negative HB_ERR_* (HB_ERR_CONFIG for bad input, HB_ERR_IO for an
 * unreadable file). The module does not log config errors itself: the caller prints err once
 * (tools then exit with status 2). Not thread-safe; one hb_cfg_t per thread.
 *
 * Keys (doc/hibar.yaml.5 documents each, with its default); dotted paths are nested mappings
 * in the file, env names are HIBAR_ + the path uppercased with '.' -> '_':
 *   cluster, nodes, chassis, sites, port, hwbarrier, protocol, fanout, bootstrap, data_plane,
 *   fast_lane, coll_overlap, coll_inline_max, coll_bulk_min, data_threads, poll, cpu.reserved,
 *   cpu.count,
 *   heartbeat.interval_ms, heartbeat.timeout_ms, barrier_timeout_ms, key_file, run_dir,
 *   links.lan.bandwidth_mbps, links.lan.latency_us, links.wan.lane_bandwidth_mbps,
 *   links.wan.total_bandwidth_mbps, links.wan.latency_us, scic.vendor, scic.device, scic.uio
 */

#define HB_CFG_ERRLEN 512 /* a good size for err buffers */

typedef enum { HB_CFG_PROTO_TREE = 0, HB_CFG_PROTO_SCMD = 1 } hb_cfg_protocol_t;

typedef enum {
    HB_CFG_BOOT_LOCAL = 0,  /* emulated cluster on this host, ports chosen by the system */
    HB_CFG_BOOT_STATIC = 1, /* addresses and ports from the file */
    HB_CFG_BOOT_PMIX = 2,   /* under a PMIx-enabled resource manager */
    HB_CFG_BOOT_ENV = 3     /* endpoints from the environment */
} hb_cfg_bootstrap_t;

/* How collective data travels between daemons: on the CurveZMQ links (encrypted), or on a
 * second, unencrypted ZeroMQ socket per daemon (hbd_net.c) for trusted fabrics. */
typedef enum { HB_CFG_DATA_CURVE = 0, HB_CFG_DATA_PLAIN = 1 } hb_cfg_data_plane_t;

/* How hibard waits while a barrier is busy (doc/design.md section 6.1): auto by the waiting
 * rule, or forced: spin (poll without pause), yield (poll, sched_yield between turns), sleep
 * (in epoll until woken). */
typedef enum {
    HB_CFG_POLL_AUTO = 0,
    HB_CFG_POLL_SPIN = 1,
    HB_CFG_POLL_YIELD = 2,
    HB_CFG_POLL_SLEEP = 3
} hb_cfg_poll_t;

/* One node (daemon) of the cluster. Node ids are indices into hb_cfg_t.nodes. */
typedef struct hb_cfg_node {
    char *name;       /* host name, unique */
    char *address;    /* address the daemon binds / is reached at; default 127.0.0.1 */
    uint16_t port;    /* TCP port; 0 = chosen by the system (bootstrap local) */
    uint32_t site;    /* site index */
    uint32_t chassis; /* chassis index; chassis_nodes[chassis_start[c]] is its Center */
} hb_cfg_node_t;

/* Link parameters for the cost models. Bandwidth in Mbit/s, latency in microseconds. */
typedef struct hb_cfg_links {
    double lan_bw_mbps, lan_lat_us;
    double wan_lane_bw_mbps;  /* what one node pair gets over the WAN (b_WAN) */
    double wan_total_bw_mbps; /* the WAN's total (B_WAN) */
    double wan_lat_us;
} hb_cfg_links_t;

typedef struct hb_cfg {
    char *file;    /* the file read, or NULL */
    char *cluster; /* cluster name, default "hibar"; [A-Za-z0-9_-]{1,32} */

    uint32_t n_nodes;
    hb_cfg_node_t *nodes; /* [n_nodes], in the order the file lists them */

    uint32_t n_chassis;
    uint32_t *chassis_start; /* [n_chassis + 1] offsets into chassis_nodes */
    uint32_t *chassis_nodes; /* [n_nodes] node ids chassis by chassis, Center first */

    uint32_t n_sites;
    char **site_names; /* [n_sites] */
    uint32_t *site_of; /* [n_nodes] site of each node (= nodes[i].site), for hb_topo_spec_t */

    uint16_t port;                  /* base port (node i gets port + i) unless set per node */
    char *hwbarrier;                /* "auto" (default), "shm", "scic" */
    hb_cfg_protocol_t protocol;     /* default scmd */
    uint32_t fanout;                /* 0 (default): the paper's shape; k: k-ary tree */
    hb_cfg_bootstrap_t bootstrap;   /* default local */
    hb_cfg_data_plane_t data_plane; /* default plain */
    int fast_lane;         /* tokens, plain data: on a polled TCP link (hbd_fast.c); default 1 */
    int coll_overlap;      /* ranks' collectives: data moves while the agreement runs; default 1 */
    uint32_t coll_inline_max; /* ranks' collectives up to this many bytes in all: the data
                               * inside the agreement, no data run; default 131072 */
    uint32_t coll_bulk_min;   /* collectives of at least this many bytes in all send their data
                               * through ZeroMQ's I/O threads, not the fast lane; 0: never */
    uint32_t data_threads;    /* ZeroMQ I/O threads; 0 (default): the node's cores, 1-4 */
    int poll;              /* hb_cfg_poll_t: how hibard waits while barriers are busy */
    uint32_t cpu_reserved; /* cores set aside for hibard (CoreSpecCount); default 0 */
    uint32_t cpu_count;    /* cores of the node; 0 (default): hibard's CPU affinity */
    uint32_t heartbeat_interval_ms; /* default 500 */
    uint32_t heartbeat_timeout_ms;  /* default 2000 */
    uint32_t barrier_timeout_ms;    /* default 30000; 0 = none */
    char *key_file;                 /* CurveZMQ key pair file, or NULL: generated in run_dir */
    char *run_dir;                  /* default /tmp/hibar-<uid>-<cluster> */
    hb_cfg_links_t links;
    uint16_t scic_vendor, scic_device; /* PCI ids of the SCIC board; 0 = the driver's */
    char *scic_uio;                    /* /dev/uioN override, or NULL: search /sys/class/uio */

    void *priv; /* parse state (raw hostlists and their positions); do not touch */
} hb_cfg_t;

/* A configuration holding the defaults only. 0, HB_ERR_NOMEM. */
int hb_cfg_create(hb_cfg_t **cfg_p);

/* Read a YAML file over the current values. HB_ERR_IO (unreadable), HB_ERR_CONFIG. */
int hb_cfg_read_file(hb_cfg_t *cfg, const char *path, char *err, size_t errlen);

/* Apply every HIBAR_<NAME> variable that names a key (others, e.g. HIBAR_LOG, are ignored). */
int hb_cfg_apply_env(hb_cfg_t *cfg, char *err, size_t errlen);

/*
 * Set one key from a string, as a command-line flag does ("fanout", "4"; "links.wan.latency_us",
 * "5000"; "nodes", "n[0-5]"; "chassis", "3"). Same checks as the file. HB_ERR_CONFIG.
 */
int hb_cfg_set(hb_cfg_t *cfg, const char *key, const char *value, char *err, size_t errlen);
/* Same with "key=value". */
int hb_cfg_set_kv(hb_cfg_t *cfg, const char *kv, char *err, size_t errlen);

/* Expand nodes, form chassis and sites, validate. After it the arrays above are filled. */
int hb_cfg_finalize(hb_cfg_t *cfg, char *err, size_t errlen);

/*
 * All of the above: defaults, the file (path, or $HIBAR_CONFIG if path is NULL, or none),
 * environment, the n_over "key=value" overrides, finalize. On error nothing is returned.
 */
int hb_cfg_load(const char *path, const char *const *over, size_t n_over, hb_cfg_t **cfg_p,
                char *err, size_t errlen);

void hb_cfg_free(hb_cfg_t *cfg);

/*
 * The file a daemon reads, found as other daemons find theirs: `given` (--config), else
 * $HIBAR_CONFIG, else hb_cfg_default_file() when it exists; NULL when none is found. *how_p
 * (if non-NULL) says which: "--config", "HIBAR_CONFIG", "default" or "none".
 */
const char *hb_cfg_find(const char *given, const char **how_p);
/* SYSCONFDIR/hibar/hibar.yaml (/etc/hibar/hibar.yaml for the Debian package). */
const char *hb_cfg_default_file(void);

/* This host's node (gethostname(), then its short name) in a finalized configuration: 0 and
 * *id_p, or HB_ERR_NOT_FOUND; host[cap] gets the name looked for. */
int hb_cfg_node_self(const hb_cfg_t *cfg, char *host, size_t cap, uint32_t *id_p);

/*
 * hibard's SIGHUP: load path (the file found at start, or NULL) with the environment and the
 * overrides again. Keys marked runtime (log, log_to, log_file, coll.alg, coll.lanes,
 * model_cache) take their new values, the log is re-opened (logrotate); the others keep their
 * running values and one warning names those that changed (a restart applies them). 0, or the
 * error of the new file (err, as hb_cfg_load; cfg unchanged).
 */
int hb_cfg_reload(hb_cfg_t *cfg, const char *path, const char *const *over, size_t n_over,
                  char *err, size_t errlen);

/* Open the log as the keys log_to and log_file say (hb_log_open); detached: the daemon has no
 * terminal (-1: as before). 0 or HB_ERR_IO (errno set). */
int hb_cfg_log_open(const hb_cfg_t *cfg, int detached);

/*
 * The schema, key by key, as hibar-info --all lists it (i < hb_cfg_nkeys()): dotted key, its
 * environment variable, the value now (for nodes, chassis and sites, of a finalized
 * configuration) and where it came from: "default", "FILE:LINE", "env HIBAR_X" or "-o".
 */
typedef struct hb_cfg_entry {
    const char *key, *help;
    char env[80];
    char value[256];
    char source[4200];
    int is_default; /* the value is the default */
    int runtime;    /* hibard's SIGHUP applies a new value */
} hb_cfg_entry_t;
size_t hb_cfg_nkeys(void);
int hb_cfg_entry(const hb_cfg_t *cfg, size_t i, hb_cfg_entry_t *e);

/* Is name (HIBAR_...) a key's variable or one of the few others hibar reads (the file, a rank's
 * launch variables, helper paths, test hooks: doc/hibar.yaml.5 ENVIRONMENT)? */
int hb_cfg_env_known(const char *name);
/* Warn once per process about each HIBAR_ variable of the environment that hibar does not
 * know (hb_cfg_apply_env calls it). */
void hb_cfg_env_warn_unknown(void);

/*
 * The topology spec of a finalized configuration. The spec points into cfg (valid while cfg
 * lives and is not changed). Build the topology with hb_topo_build(). HB_ERR_NOT_INIT if
 * not finalized.
 */
int hb_cfg_topo_spec(const hb_cfg_t *cfg, hb_topo_spec_t *spec_p);

/* Node id by name, or HB_ERR_NOT_FOUND. */
int hb_cfg_node_find(const hb_cfg_t *cfg, const char *name, uint32_t *id_p);

/* Names for the enums ("tree", "scmd"; "local", "static", "pmix", "env"). */
const char *hb_cfg_protocol_name(hb_cfg_protocol_t p);
const char *hb_cfg_data_plane_name(hb_cfg_data_plane_t p);
const char *hb_cfg_bootstrap_name(hb_cfg_bootstrap_t b);

/*
 * Expand a hostlist: comma-separated items, each a name with bracketed ranges
 * ("n[000-029]", "n[1-3,7]", "a[1-2]b[0-1]", "x,y[3-4]-eth"). Zero padding of the lower bound
 * is kept. At most HB_CFG_HOSTLIST_MAX names. Returns 0 with a malloc'd array of malloc'd
 * names (free with hb_cfg_hostlist_free), or HB_ERR_CONFIG with err "<what> '<expr>'".
 */
#define HB_CFG_HOSTLIST_MAX 1000000u
int hb_cfg_hostlist_expand(const char *expr, char ***names_p, uint32_t *n_p, char *err,
                           size_t errlen);
void hb_cfg_hostlist_free(char **names, uint32_t n);

/*
 * The nodes a hostlist names, as member flags (member[n_nodes], set to 0 or 1) for
 * hb_topo_restrict: 0 and *n_p the number named, or HB_ERR_CONFIG with err naming the
 * first unknown node ("unknown node 'x9' in 'x[1-9]'"), a bad expression, or a node named
 * twice.
 */
int hb_cfg_members(const hb_cfg_t *cfg, const char *hostlist, uint8_t *member, uint32_t *n_p,
                   char *err, size_t errlen);

#endif
