/* cfg.c: the cluster configuration: defaults, YAML file (libyaml), HIBAR_<NAME> env, overrides. */
#include "hb_config.h"

#include "cfg.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "hb_hash.h"
#include "hb_log.h"
#include "hb_status.h"

/* ---- raw settings: what the sources said, with where they said it ---- */

#define CFG_MAX_KEYS 64 /* >= the rows of cfg_keys (checked below) */

/* One entry of the node list: a hostlist with optional address and first port. */
typedef struct {
    char *hostlist, *address, *src;
    int has_port;
    uint16_t port;
} cfg_node_ent_t;

/* One explicit chassis list, or one site. */
typedef struct {
    char *name; /* sites only */
    char *hostlist, *src;
} cfg_list_ent_t;

typedef struct {
    cfg_node_ent_t *nodes;
    size_t n_nodes;
    char *nodes_src; /* where the node list was set, NULL: default */

    uint32_t chassis_size; /* 0: explicit lists or default */
    cfg_list_ent_t *chassis;
    size_t n_chassis;
    char *chassis_src;

    cfg_list_ent_t *sites;
    size_t n_sites;
    char *sites_src;

    char *src[CFG_MAX_KEYS];  /* where each scalar key was set, NULL: default */
    char *tval[CFG_MAX_KEYS]; /* the values of CFG_ENV keys, NULL: unset (the reader's default) */

    int finalized;
} cfg_priv_t;

/* ---- the key table ---- */

typedef enum {
    K_STR,
    K_OPTSTR,
    K_NAME,
    K_UINT,
    K_U16,
    K_DOUBLE,
    K_ENUM,
    K_HWB,
    K_SPECIAL,
    K_BOOL, /* CFG_ENV only: on|off (also 1|0, yes|no, true|false) */
    K_LOG   /* CFG_ENV only: error|warn|info|debug or 0..3 */
} cfg_kind_t;

static const char *const proto_names[] = {"tree", "scmd", NULL};
static const char *const boot_names[] = {"local", "static", "pmix", "env", NULL};
static const char *const data_names[] = {"curve", "plain", NULL};
static const char *const hwb_names[] = {"auto", "shm", "scic", NULL};
static const char *const onoff_names[] = {"off", "on", NULL};
static const char *const poll_names[] = {"auto", "spin", "yield", "sleep", NULL};

/* Key flags. CFG_ENV: a tunable of one part of hibar read where it is used (daemon, libhibar,
 * tools) from the environment: no field of hb_cfg_t; a value set in the file or by -o is
 * exported as HIBAR_<KEY> by hb_cfg_finalize, so the process and the ranks it starts see it.
 * CFG_RUNTIME: hb_cfg_reload (hibard's SIGHUP) applies a new value without a restart. */
#define CFG_ENV 1u
#define CFG_RUNTIME 2u

typedef struct {
    const char *path;
    cfg_kind_t kind;
    size_t off;
    uint64_t max;
    const char *const *names;
    unsigned flags;
    const char *dflt; /* CFG_ENV keys: the default their reader applies, as text */
    const char *help;
} cfg_key_t;

_Static_assert(sizeof(hb_cfg_protocol_t) == sizeof(int) &&
                   sizeof(hb_cfg_bootstrap_t) == sizeof(int) &&
                   sizeof(hb_cfg_data_plane_t) == sizeof(int),
               "K_ENUM keys are stored as int");
#define OFF(f) offsetof(hb_cfg_t, f)
#define ENV(path, kind, max, names, flags, dflt, help)                                             \
    {                                                                                              \
        path, kind, 0, max, names, CFG_ENV | (flags), dflt, help                                   \
    }
static const char *const log_to_names[] = {"auto", "stderr", "syslog", NULL};
static const char *const coll_alg_names[] = {"auto",        "flat",       "binomial",
                                             "single-lane", "multi-lane", NULL};
static const cfg_key_t cfg_keys[] = {
    {"cluster", K_NAME, OFF(cluster), 0, NULL, 0, NULL, "cluster name"},
    {"nodes", K_SPECIAL, 0, 0, NULL, 0, NULL, "the nodes, one hibard each"},
    {"chassis", K_SPECIAL, 0, 0, NULL, 0, NULL, "chassis size or lists"},
    {"sites", K_SPECIAL, 0, 0, NULL, 0, NULL, "sites: name=hostlist;..."},
    {"port", K_U16, OFF(port), UINT16_MAX, NULL, 0, NULL, "base TCP port"},
    {"hwbarrier", K_HWB, OFF(hwbarrier), 0, hwb_names, 0, NULL, "chassis barrier backend"},
    {"protocol", K_ENUM, OFF(protocol), 0, proto_names, 0, NULL, "whole-cluster barrier"},
    {"fanout", K_UINT, OFF(fanout), 1024, NULL, 0, NULL, "chassis tree shape (0: paper's)"},
    {"bootstrap", K_ENUM, OFF(bootstrap), 0, boot_names, 0, NULL, "how daemons find each other"},
    {"data_plane", K_ENUM, OFF(data_plane), 0, data_names, 0, NULL, "collective data links"},
    {"fast_lane", K_ENUM, OFF(fast_lane), 0, onoff_names, 0, NULL, "polled TCP token links"},
    {"coll_overlap", K_ENUM, OFF(coll_overlap), 0, onoff_names, 0, NULL,
     "data moves while nodes agree"},
    {"coll_inline_max", K_UINT, OFF(coll_inline_max), 262144, NULL, 0, NULL,
     "collectives up to this many bytes: data inside the agreement"},
    {"coll_bulk_min", K_UINT, OFF(coll_bulk_min), 1u << 30, NULL, 0, NULL,
     "collectives from this many bytes: data through ZeroMQ's I/O threads (0: never)"},
    {"data_threads", K_UINT, OFF(data_threads), 16, NULL, 0, NULL,
     "ZeroMQ I/O threads (0: the node's cores, 1-4)"},
    {"poll", K_ENUM, OFF(poll), 0, poll_names, 0, NULL, "how hibard waits while busy"},
    {"cpu.reserved", K_UINT, OFF(cpu_reserved), 4096, NULL, 0, NULL, "cores set aside for hibard"},
    {"cpu.count", K_UINT, OFF(cpu_count), 65536, NULL, 0, NULL, "cores of the node (0: affinity)"},
    {"heartbeat.interval_ms", K_UINT, OFF(heartbeat_interval_ms), 3600000, NULL, 0, NULL,
     "heartbeat period"},
    {"heartbeat.timeout_ms", K_UINT, OFF(heartbeat_timeout_ms), 3600000, NULL, 0, NULL,
     "silence that declares a peer lost"},
    {"barrier_timeout_ms", K_UINT, OFF(barrier_timeout_ms), 86400000, NULL, 0, NULL,
     "barrier deadline (0: none)"},
    {"key_file", K_OPTSTR, OFF(key_file), 0, NULL, 0, NULL, "CurveZMQ key pair file"},
    {"run_dir", K_OPTSTR, OFF(run_dir), 0, NULL, 0, NULL, "sockets, pid files, generated key"},
    {"links.lan.bandwidth_mbps", K_DOUBLE, OFF(links.lan_bw_mbps), 0, NULL, 0, NULL,
     "model: LAN bandwidth"},
    {"links.lan.latency_us", K_DOUBLE, OFF(links.lan_lat_us), 0, NULL, 0, NULL,
     "model: LAN latency"},
    {"links.wan.lane_bandwidth_mbps", K_DOUBLE, OFF(links.wan_lane_bw_mbps), 0, NULL, 0, NULL,
     "model: WAN bandwidth per node pair"},
    {"links.wan.total_bandwidth_mbps", K_DOUBLE, OFF(links.wan_total_bw_mbps), 0, NULL, 0, NULL,
     "model: WAN total bandwidth"},
    {"links.wan.latency_us", K_DOUBLE, OFF(links.wan_lat_us), 0, NULL, 0, NULL,
     "model: WAN latency"},
    {"scic.vendor", K_U16, OFF(scic_vendor), UINT16_MAX, NULL, 0, NULL, "SCIC PCI vendor id"},
    {"scic.device", K_U16, OFF(scic_device), UINT16_MAX, NULL, 0, NULL, "SCIC PCI device id"},
    {"scic.uio", K_OPTSTR, OFF(scic_uio), 0, NULL, 0, NULL, "SCIC /dev/uioN"},
    /* logging (every program) */
    ENV("log", K_LOG, 0, NULL, CFG_RUNTIME, "warn", "log level"),
    ENV("log_to", K_ENUM, 0, log_to_names, CFG_RUNTIME, "auto",
        "hibard's log: auto (terminal: stderr, else syslog), stderr, syslog"),
    ENV("log_file", K_OPTSTR, 0, NULL, CFG_RUNTIME, "", "hibard: append the log to this file"),
    /* bootstrap pmix / env (daemon/hbd_boot.c) */
    ENV("boot.timeout", K_UINT, 600, NULL, 0, "20", "bootstrap pmix/env: seconds to wait"),
    ENV("boot.address", K_OPTSTR, 0, NULL, 0, "", "bootstrap: this host's IPv4 address"),
    ENV("boot.if", K_OPTSTR, 0, NULL, 0, "", "bootstrap: the interface to take it from"),
    ENV("hostfile", K_OPTSTR, 0, NULL, 0, "", "bootstrap env: host list (with HIBAR_NODE_INDEX)"),
    ENV("rendezvous", K_OPTSTR, 0, NULL, 0, "", "bootstrap env: the first node's IPv4 address"),
    /* the daemons' collectives and fences (daemon/hbd_coll.c, hbd_fence.c) */
    ENV("coll.alg", K_ENUM, 0, coll_alg_names, CFG_RUNTIME, "auto",
        "collective algorithm for 'auto' requests"),
    ENV("coll.lanes", K_UINT, 64, NULL, CFG_RUNTIME, "0", "WAN lanes of the lanes algorithm"),
    ENV("coll.timeout_ms", K_UINT, 86400000, NULL, 0, "60000", "collective deadline"),
    ENV("fence.direct_max", K_UINT, 4096, NULL, 0, "0", "direct fence exchange up to N nodes"),
    ENV("trace_dir", K_OPTSTR, 0, NULL, 0, "", "hibard: write hier traces (hibar-sim replay)"),
    ENV("model_cache", K_OPTSTR, 0, NULL, CFG_RUNTIME, "~/.cache/hibar/CLUSTER.plogp",
        "PlogP cache file (hibar.plogp(5)); none: ignore"),
    /* waiting (common/hb_wait.c hb_wait_policy_dflt: daemon and ranks) */
    ENV("wait.spin_us", K_UINT, UINT32_MAX, NULL, 0, "2", "spin stage of a wait"),
    ENV("wait.spin_max_us", K_UINT, UINT32_MAX, NULL, 0, "50", "adaptive spin bound"),
    ENV("wait.yield_us", K_UINT, UINT32_MAX, NULL, 0, "2000", "yield stage of a wait"),
    ENV("wait.slice_ms", K_UINT, UINT32_MAX, NULL, 0, "100", "sleep slice of a wait"),
    /* libhibar, in the ranks (libclient/) */
    ENV("timeout_ms", K_UINT, UINT32_MAX, NULL, 0, "0", "libhibar: wait deadline (0: none)"),
    ENV("init_timeout_ms", K_UINT, UINT32_MAX, NULL, 0, "60000", "libhibar: ranks join within"),
    /* libclient/nbar.h HB_NBAR_DEFAULT_RADIX, HB_NBAR_DEFAULT_FLAT_MAX */
    ENV("nbar.radix", K_UINT, 1024, NULL, 0, "4", "libhibar: on-node barrier radix"),
    ENV("nbar.flat_max", K_UINT, 1024, NULL, 0, "4", "libhibar: flat barrier up to N ranks"),
    ENV("nbar.hwloc", K_BOOL, 0, NULL, 0, "on", "libhibar: tree by hwloc locality"),
    ENV("cma", K_BOOL, 0, NULL, 0, "on", "libhibar: cross-memory attach copies"),
    /* libclient/ncoll.h HB_NCOLL_PULL_MIN_DEFAULT, _SCARCE */
    ENV("cma_pull_min", K_UINT, UINT32_MAX, NULL, 0, "16384 (32768: more ranks than cores)",
        "libhibar: scatter/bcast receivers pull from N bytes on"),
};
#define N_KEYS (sizeof(cfg_keys) / sizeof(cfg_keys[0]))
_Static_assert(N_KEYS <= CFG_MAX_KEYS, "raise CFG_MAX_KEYS");
/* Mappings that only group keys. */
static const char *const cfg_groups[] = {"heartbeat", "links", "links.lan", "links.wan",
                                         "scic",      "cpu",   "boot",      "coll",
                                         "fence",     "wait",  "nbar"};
#define N_GROUPS (sizeof(cfg_groups) / sizeof(cfg_groups[0]))

static const cfg_key_t *cfg_key_find(const char *path)
{
    size_t i;

    for (i = 0; i < N_KEYS; i++)
        if (strcmp(cfg_keys[i].path, path) == 0)
            return &cfg_keys[i];
    return NULL;
}

static int cfg_is_group(const char *path)
{
    size_t i;

    for (i = 0; i < N_GROUPS; i++)
        if (strcmp(cfg_groups[i], path) == 0)
            return 1;
    return 0;
}

/* ---- errors ---- */

/* "SRC: what 'value'"; returns HB_ERR_CONFIG. */
static int cfg_fail(char *err, size_t errlen, const char *src, const char *what, const char *value)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: %s '%s'", src, what, value != NULL ? value : "");
    return HB_ERR_CONFIG;
}

static char *cfg_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *cfg_strdup_printf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

/* ---- scalar values ---- */

static int cfg_parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    unsigned long long x;
    int base = 10;

    if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16;
    errno = 0;
    x = strtoull(s, &end, base);
    if (errno != 0 || *end != '\0' || end == s || x > max)
        return -1;
    *v = x;
    return 0;
}

static int cfg_valid_name(const char *s)
{
    size_t n = strlen(s), i;

    if (n == 0 || n > 32)
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

static int cfg_replace_str(char **dst, const char *value)
{
    char *s = NULL;

    if (value != NULL) {
        s = strdup(value);
        if (s == NULL)
            return HB_ERR_NOMEM;
    }
    free(*dst);
    *dst = s;
    return 0;
}

/* Set a non-special key of hb_cfg_t from a string; value NULL means "null" in YAML. */
static int cfg_set_field(hb_cfg_t *cfg, const cfg_key_t *k, const char *value, const char *src,
                         char *err, size_t errlen)
{
    char *base = (char *)cfg;
    char what[160];
    uint64_t u;
    size_t i;

    if (value == NULL || *value == '\0') {
        if (k->kind == K_OPTSTR)
            return cfg_replace_str((char **)(base + k->off), NULL);
        snprintf(what, sizeof(what), "%s: missing value", k->path);
        return cfg_fail(err, errlen, src, what, value);
    }
    switch (k->kind) {
    case K_STR:
    case K_OPTSTR:
        return cfg_replace_str((char **)(base + k->off), value);
    case K_NAME:
        if (!cfg_valid_name(value)) {
            snprintf(what, sizeof(what), "%s: expected 1-32 of [A-Za-z0-9_-], got", k->path);
            return cfg_fail(err, errlen, src, what, value);
        }
        return cfg_replace_str((char **)(base + k->off), value);
    case K_UINT:
    case K_U16:
        if (cfg_parse_u64(value, k->max, &u) != 0) {
            snprintf(what, sizeof(what), "%s: expected an unsigned integer <= %llu, got", k->path,
                     (unsigned long long)k->max);
            return cfg_fail(err, errlen, src, what, value);
        }
        if (k->kind == K_U16) {
            uint16_t v16 = (uint16_t)u;
            memcpy(base + k->off, &v16, sizeof(v16));
        } else {
            uint32_t v32 = (uint32_t)u;
            memcpy(base + k->off, &v32, sizeof(v32));
        }
        return 0;
    case K_DOUBLE: {
        char *end;
        double d;
        errno = 0;
        d = strtod(value, &end);
        if (errno != 0 || *end != '\0' || end == value || !isfinite(d) || d < 0) {
            snprintf(what, sizeof(what), "%s: expected a non-negative number, got", k->path);
            return cfg_fail(err, errlen, src, what, value);
        }
        memcpy(base + k->off, &d, sizeof(d));
        return 0;
    }
    case K_ENUM:
    case K_HWB:
        for (i = 0; k->names[i] != NULL; i++) {
            if (strcmp(k->names[i], value) == 0) {
                if (k->kind == K_HWB)
                    return cfg_replace_str((char **)(base + k->off), value);
                /* hb_cfg_protocol_t and hb_cfg_bootstrap_t are int-sized enums */
                int iv = (int)i;
                memcpy(base + k->off, &iv, sizeof(iv));
                return 0;
            }
        }
        snprintf(what, sizeof(what), "%s: expected one of", k->path);
        {
            size_t len = strlen(what);
            for (i = 0; k->names[i] != NULL && len + 12 < sizeof(what); i++)
                len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s", i ? "|" : " ",
                                        k->names[i]);
            snprintf(what + len, sizeof(what) - len, ", got");
        }
        return cfg_fail(err, errlen, src, what, value);
    case K_SPECIAL:
    case K_BOOL:
    case K_LOG:
        break;
    }
    return HB_ERR_INTERNAL;
}

/* on|off and the usual spellings: 1, 0, or -1. */
static int cfg_parse_bool(const char *v)
{
    static const char *const yes[] = {"on", "1", "yes", "true"};
    static const char *const no[] = {"off", "0", "no", "false"};
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(v, yes[i]) == 0)
            return 1;
        if (strcmp(v, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* Set a CFG_ENV key: checked as its kind, kept as the text its reader expects. */
static int cfg_set_env_key(hb_cfg_t *cfg, const cfg_key_t *k, const char *value, const char *src,
                           char *err, size_t errlen)
{
    char **slot = &((cfg_priv_t *)cfg->priv)->tval[k - cfg_keys], what[160];
    uint64_t u;
    int b;

    if (value == NULL || *value == '\0')
        return cfg_replace_str(slot, NULL);
    switch (k->kind) {
    case K_UINT:
        if (cfg_parse_u64(value, k->max, &u) != 0) {
            snprintf(what, sizeof(what), "%s: expected an unsigned integer <= %llu, got", k->path,
                     (unsigned long long)k->max);
            return cfg_fail(err, errlen, src, what, value);
        }
        return cfg_replace_str(slot, value);
    case K_BOOL:
        if ((b = cfg_parse_bool(value)) < 0) {
            snprintf(what, sizeof(what), "%s: expected on|off, got", k->path);
            return cfg_fail(err, errlen, src, what, value);
        }
        return cfg_replace_str(slot, b ? "1" : "0"); /* what libhibar reads */
    case K_LOG:
        if (hb_log_parse_level(value) < 0) {
            snprintf(what, sizeof(what), "%s: expected error|warn|info|debug, got", k->path);
            return cfg_fail(err, errlen, src, what, value);
        }
        return cfg_replace_str(slot, value);
    case K_ENUM:
        for (size_t i = 0; k->names[i] != NULL; i++)
            if (strcmp(k->names[i], value) == 0)
                return cfg_replace_str(slot, value);
        snprintf(what, sizeof(what), "%s: expected one of", k->path);
        for (size_t i = 0, len = strlen(what); k->names[i] != NULL && len + 16 < sizeof(what); i++)
            len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s", i ? "|" : " ",
                                    k->names[i]);
        snprintf(what + strlen(what), sizeof(what) - strlen(what), ", got");
        return cfg_fail(err, errlen, src, what, value);
    default:
        return cfg_replace_str(slot, value);
    }
}

/* Set a non-special key and remember where it was set. */
static int cfg_set_scalar(hb_cfg_t *cfg, const cfg_key_t *k, const char *value, const char *src,
                          char *err, size_t errlen)
{
    cfg_priv_t *p = cfg->priv;
    int rc = k->flags & CFG_ENV ? cfg_set_env_key(cfg, k, value, src, err, errlen)
                                : cfg_set_field(cfg, k, value, src, err, errlen);

    if (rc == 0)
        rc = cfg_replace_str(&p->src[k - cfg_keys], src);
    return rc;
}

/* ---- the raw lists ---- */

static void cfg_node_ents_free(cfg_node_ent_t *e, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(e[i].hostlist);
        free(e[i].address);
        free(e[i].src);
    }
    free(e);
}

static void cfg_list_ents_free(cfg_list_ent_t *e, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(e[i].name);
        free(e[i].hostlist);
        free(e[i].src);
    }
    free(e);
}

/* Replace the node list of p by ents (taken over) set at src. */
static int cfg_take_nodes(cfg_priv_t *p, cfg_node_ent_t *ents, size_t n, const char *src)
{
    char *s = strdup(src);

    if (s == NULL) {
        cfg_node_ents_free(ents, n);
        return HB_ERR_NOMEM;
    }
    cfg_node_ents_free(p->nodes, p->n_nodes);
    free(p->nodes_src);
    p->nodes = ents;
    p->n_nodes = n;
    p->nodes_src = s;
    return 0;
}

/* Replace a list (*list_p, *n_p, set at *src_p) by ents (taken over) set at src. */
static int cfg_take_list(cfg_list_ent_t **list_p, size_t *n_p, char **src_p, cfg_list_ent_t *ents,
                         size_t n, const char *src)
{
    char *s = strdup(src);

    if (s == NULL) {
        cfg_list_ents_free(ents, n);
        return HB_ERR_NOMEM;
    }
    cfg_list_ents_free(*list_p, *n_p);
    free(*src_p);
    *list_p = ents;
    *n_p = n;
    *src_p = s;
    return 0;
}

static int cfg_take_chassis(cfg_priv_t *p, uint32_t size, cfg_list_ent_t *ents, size_t n,
                            const char *src)
{
    int rc = cfg_take_list(&p->chassis, &p->n_chassis, &p->chassis_src, ents, n, src);

    if (rc == 0)
        p->chassis_size = size;
    return rc;
}

static int cfg_take_sites(cfg_priv_t *p, cfg_list_ent_t *ents, size_t n, const char *src)
{
    return cfg_take_list(&p->sites, &p->n_sites, &p->sites_src, ents, n, src);
}

/* Check that a hostlist expands (so errors point at where it was written). */
static int cfg_check_hostlist(const char *hl, const char *src, char *err, size_t errlen)
{
    char **names = NULL;
    uint32_t n = 0;
    char msg[HB_CFG_ERRLEN];
    int rc = hb_cfg_hostlist_expand(hl, &names, &n, msg, sizeof(msg));

    if (rc == HB_ERR_CONFIG) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: %s", src, msg);
        return rc;
    }
    hb_cfg_hostlist_free(names, n);
    return rc;
}

/* ---- life cycle ---- */

int hb_cfg_create(hb_cfg_t **cfg_p)
{
    hb_cfg_t *cfg = calloc(1, sizeof(*cfg));
    cfg_priv_t *p = calloc(1, sizeof(*p));

    if (cfg == NULL || p == NULL)
        goto err_free;
    cfg->priv = p;
    cfg->cluster = strdup("hibar");
    cfg->hwbarrier = strdup("auto");
    if (cfg->cluster == NULL || cfg->hwbarrier == NULL)
        goto err_free;
    cfg->protocol = HB_CFG_PROTO_SCMD;
    cfg->bootstrap = HB_CFG_BOOT_LOCAL;
    cfg->data_plane = HB_CFG_DATA_PLAIN; /* like MPI's own traffic; curve for untrusted fabrics */
    cfg->fast_lane = 1;
    cfg->coll_overlap = 1;
    cfg->coll_inline_max = 131072; /* doc/design.md 7.4: measured on the 2-core bed */
    cfg->coll_bulk_min = 4u << 20;
    cfg->heartbeat_interval_ms = 500;
    cfg->heartbeat_timeout_ms = 2000;
    cfg->barrier_timeout_ms = 30000;
    cfg->links.lan_bw_mbps = 1000;
    cfg->links.lan_lat_us = 50;
    cfg->links.wan_lane_bw_mbps = 250;
    cfg->links.wan_total_bw_mbps = 1000;
    cfg->links.wan_lat_us = 5000;
    /* scic_vendor, scic_device: 0 = the driver's ids (hwbarrier/hwb.h, doc/scic-registers.md) */
    *cfg_p = cfg;
    return 0;

err_free:
    if (cfg != NULL) {
        free(cfg->cluster);
        free(cfg->hwbarrier);
    }
    free(cfg);
    free(p);
    return HB_ERR_NOMEM;
}

/* Drop what finalize derived (so a configuration can be changed and finalized again). */
static void cfg_clear_derived(hb_cfg_t *cfg)
{
    uint32_t i;

    for (i = 0; i < cfg->n_nodes; i++) {
        free(cfg->nodes[i].name);
        free(cfg->nodes[i].address);
    }
    free(cfg->nodes);
    cfg->nodes = NULL;
    cfg->n_nodes = 0;
    free(cfg->chassis_start);
    free(cfg->chassis_nodes);
    free(cfg->site_of);
    cfg->chassis_start = cfg->chassis_nodes = cfg->site_of = NULL;
    cfg->n_chassis = 0;
    for (i = 0; i < cfg->n_sites; i++)
        free(cfg->site_names[i]);
    free(cfg->site_names);
    cfg->site_names = NULL;
    cfg->n_sites = 0;
    ((cfg_priv_t *)cfg->priv)->finalized = 0;
}

void hb_cfg_free(hb_cfg_t *cfg)
{
    cfg_priv_t *p;

    if (cfg == NULL)
        return;
    p = cfg->priv;
    cfg_clear_derived(cfg);
    cfg_node_ents_free(p->nodes, p->n_nodes);
    free(p->nodes_src);
    cfg_list_ents_free(p->chassis, p->n_chassis);
    free(p->chassis_src);
    cfg_list_ents_free(p->sites, p->n_sites);
    free(p->sites_src);
    for (size_t i = 0; i < CFG_MAX_KEYS; i++) {
        free(p->src[i]);
        free(p->tval[i]);
    }
    free(p);
    free(cfg->file);
    free(cfg->cluster);
    free(cfg->hwbarrier);
    free(cfg->key_file);
    free(cfg->run_dir);
    free(cfg->scic_uio);
    free(cfg);
}

/* ---- string overrides (environment, command line) ---- */

/* Split s at ';' into a malloc'd array of malloc'd trimmed parts. */
static int cfg_split(const char *s, char ***parts_p, size_t *n_p)
{
    char **parts = NULL;
    size_t n = 0;
    const char *a = s;

    for (;;) {
        const char *b = strchr(a, ';');
        size_t len = b != NULL ? (size_t)(b - a) : strlen(a);
        char **np = realloc(parts, (n + 1) * sizeof(*parts));
        if (np == NULL)
            goto err_free;
        parts = np;
        while (len > 0 && (*a == ' ' || *a == '\t'))
            a++, len--;
        while (len > 0 && (a[len - 1] == ' ' || a[len - 1] == '\t'))
            len--;
        parts[n] = strndup(a, len);
        if (parts[n] == NULL)
            goto err_free;
        n++;
        if (b == NULL)
            break;
        a = b + 1;
    }
    *parts_p = parts;
    *n_p = n;
    return 0;

err_free:
    while (n > 0)
        free(parts[--n]);
    free(parts);
    return HB_ERR_NOMEM;
}

static int cfg_set_special(hb_cfg_t *cfg, const char *key, const char *value, const char *src,
                           char *err, size_t errlen)
{
    cfg_priv_t *p = cfg->priv;
    char **parts = NULL;
    size_t n = 0, i;
    int rc;

    if (strcmp(key, "chassis") == 0) {
        uint64_t size;
        if (cfg_parse_u64(value, UINT32_MAX, &size) == 0) {
            if (size == 0)
                return cfg_fail(err, errlen, src, "chassis: size must be at least 1, got", value);
            return cfg_take_chassis(p, (uint32_t)size, NULL, 0, src);
        }
    }
    if (strcmp(key, "nodes") == 0) {
        cfg_node_ent_t *e;
        rc = cfg_check_hostlist(value, src, err, errlen);
        if (rc != 0)
            return rc;
        e = calloc(1, sizeof(*e));
        if (e == NULL)
            return HB_ERR_NOMEM;
        e->hostlist = strdup(value);
        e->src = strdup(src);
        if (e->hostlist == NULL || e->src == NULL) {
            cfg_node_ents_free(e, 1);
            return HB_ERR_NOMEM;
        }
        return cfg_take_nodes(p, e, 1, src);
    }
    /* chassis lists "n[0-2];n[3-5]" or sites "a=n[0-7];b=n[8-15]" */
    rc = cfg_split(value, &parts, &n);
    if (rc != 0)
        return rc;
    {
        cfg_list_ent_t *e = calloc(n, sizeof(*e));
        int is_sites = strcmp(key, "sites") == 0;
        if (e == NULL) {
            rc = HB_ERR_NOMEM;
            goto out;
        }
        for (i = 0; i < n; i++) {
            char *hl = parts[i];
            if (is_sites) {
                char *eq = strchr(parts[i], '=');
                if (eq == NULL) {
                    rc = cfg_fail(err, errlen, src, "sites: expected NAME=HOSTLIST, got", parts[i]);
                    break;
                }
                *eq = '\0';
                hl = eq + 1;
                if (!cfg_valid_name(parts[i])) {
                    rc = cfg_fail(err, errlen, src, "sites: bad site name", parts[i]);
                    break;
                }
                e[i].name = strdup(parts[i]);
            }
            rc = cfg_check_hostlist(hl, src, err, errlen);
            if (rc != 0)
                break;
            e[i].hostlist = strdup(hl);
            e[i].src = strdup(src);
            if (e[i].hostlist == NULL || e[i].src == NULL || (is_sites && e[i].name == NULL)) {
                rc = HB_ERR_NOMEM;
                break;
            }
        }
        if (rc != 0)
            cfg_list_ents_free(e, n);
        else if (is_sites)
            rc = cfg_take_sites(p, e, n, src);
        else
            rc = cfg_take_chassis(p, 0, e, n, src);
    }
out:
    for (i = 0; i < n; i++)
        free(parts[i]);
    free(parts);
    return rc;
}

static int cfg_set_src(hb_cfg_t *cfg, const char *key, const char *value, const char *src,
                       char *err, size_t errlen)
{
    const cfg_key_t *k = cfg_key_find(key);

    if (k == NULL)
        return cfg_fail(err, errlen, src, "unknown key", key);
    ((cfg_priv_t *)cfg->priv)->finalized = 0;
    if (k->kind == K_SPECIAL) {
        if (value == NULL || *value == '\0')
            return cfg_fail(err, errlen, src, "missing value for", key);
        return cfg_set_special(cfg, key, value, src, err, errlen);
    }
    return cfg_set_scalar(cfg, k, value, src, err, errlen);
}

int hb_cfg_set(hb_cfg_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    char *src;
    int rc;

    if (cfg == NULL || key == NULL)
        return HB_ERR_INVAL;
    src = cfg_strdup_printf("override %s=%s", key, value != NULL ? value : "");
    if (src == NULL)
        return HB_ERR_NOMEM;
    rc = cfg_set_src(cfg, key, value, src, err, errlen);
    free(src);
    return rc;
}

int hb_cfg_set_kv(hb_cfg_t *cfg, const char *kv, char *err, size_t errlen)
{
    const char *eq;
    char *key;
    int rc;

    if (cfg == NULL || kv == NULL)
        return HB_ERR_INVAL;
    eq = strchr(kv, '=');
    if (eq == NULL || eq == kv)
        return cfg_fail(err, errlen, "override", "expected KEY=VALUE, got", kv);
    key = strndup(kv, (size_t)(eq - kv));
    if (key == NULL)
        return HB_ERR_NOMEM;
    rc = hb_cfg_set(cfg, key, eq + 1, err, errlen);
    free(key);
    return rc;
}

/* HIBAR_<KEY> of a key path, into name[80]. */
static void cfg_env_name(const char *path, char *name, size_t cap)
{
    size_t j = (size_t)snprintf(name, cap, "HIBAR_");

    for (const char *s = path; *s != '\0' && j + 1 < cap; s++)
        name[j++] = *s == '.' ? '_' : (char)(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s);
    name[j] = '\0';
}

/* CFG_ENV keys whose variable this process set itself from a file or -o (hb_cfg_finalize): a
 * later load must not take them for the user's environment. */
static unsigned char cfg_exported[CFG_MAX_KEYS];

/*
 * HIBAR_ variables that are no key, and why they exist (doc/hibar.yaml.5, ENVIRONMENT); a name
 * ending in '*' is a prefix.
 */
static const char *const cfg_env_other[] = {
    "HIBAR_CONFIG", /* the file itself */
    /* set by hibard or the launcher for one process: a rank's or a daemon's identity */
    "HIBAR_SOCKET", "HIBAR_JOB", "HIBAR_RANK", "HIBAR_SEG_FD", "HIBAR_DOORBELL_FD",
    "HIBAR_NODE_INDEX",
    /* helper programs (tests, development trees) and debugging */
    "HIBAR_BOOT", "HIBAR_RUN", "HIBAR_BENCH", "HIBAR_FENCE_CLIENT", "HIBAR_SRCDIR",
    "HIBAR_FENCE_PROF", "HIBAR_COLL_PROF", "HIBAR_BENCH_PROF",
    /* the PMIx step: read hibard's messages on its main thread (hibard(8)) */
    "HIBAR_STEP_READER",
    /* hibar-run: where mca_coll_hibar.so is (a build tree; hibar-run(1)) */
    "HIBAR_OMPI_COMPONENT_DIR",
    /* the test suite and its network-namespace test bed */
    "HIBAR_TEST_*", "HIBAR_TESTBED_*", "HIBAR_FUZZ_SECONDS", "HIBAR_CC_LOGS"};

int hb_cfg_env_known(const char *name)
{
    char kn[80];

    for (size_t i = 0; i < sizeof(cfg_env_other) / sizeof(cfg_env_other[0]); i++) {
        size_t l = strlen(cfg_env_other[i]);
        if (cfg_env_other[i][l - 1] == '*' ? strncmp(name, cfg_env_other[i], l - 1) == 0
                                           : strcmp(name, cfg_env_other[i]) == 0)
            return 1;
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        cfg_env_name(cfg_keys[i].path, kn, sizeof(kn));
        if (strcmp(kn, name) == 0)
            return 1;
    }
    return 0;
}

/* Edit distance of two short strings, capped at 3 (for "did you mean"). */
static size_t cfg_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[81], i, j;

    if (la > 80 || lb > 80 || (la > lb ? la - lb : lb - la) > 2)
        return 3;
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb] < 3 ? row[lb] : 3;
}

void hb_cfg_env_warn_unknown(void)
{
    static int done;
    extern char **environ;

    if (done)
        return;
    done = 1;
    for (char **e = environ; *e != NULL; e++) {
        char name[80], kn[80], near[80] = "";
        size_t l = strcspn(*e, "=");
        if (strncmp(*e, "HIBAR_", 6) != 0 || l >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)l, *e);
        if (hb_cfg_env_known(name))
            continue;
        for (size_t i = 0; i < N_KEYS && near[0] == '\0'; i++) {
            cfg_env_name(cfg_keys[i].path, kn, sizeof(kn));
            if (cfg_distance(name, kn) <= 2)
                snprintf(near, sizeof(near), "%s", kn);
        }
        hb_log_warn("environment %s: no such setting, ignored (keys: hibar.yaml(5), hibar-info "
                    "--all)%s%s",
                    name, near[0] ? "; did you mean " : "", near);
    }
}

int hb_cfg_apply_env(hb_cfg_t *cfg, char *err, size_t errlen)
{
    size_t i;

    if (cfg == NULL)
        return HB_ERR_INVAL;
    hb_cfg_env_warn_unknown();
    for (i = 0; i < N_KEYS; i++) {
        char name[80], src[96];
        const char *v;
        int rc;

        cfg_env_name(cfg_keys[i].path, name, sizeof(name));
        v = getenv(name);
        if (v == NULL || cfg_exported[i])
            continue;
        snprintf(src, sizeof(src), "environment %s", name);
        rc = cfg_set_src(cfg, cfg_keys[i].path, v, src, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- the YAML file ---- */

typedef struct {
    hb_cfg_t *cfg;
    yaml_document_t *doc;
    const char *file;
    char *err;
    size_t errlen;
} cfg_yaml_t;

/* "FILE:LINE:COL" of a node, into buf. */
static const char *cfg_mark(const cfg_yaml_t *y, const yaml_node_t *n, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%lu:%lu", y->file, (unsigned long)n->start_mark.line + 1,
             (unsigned long)n->start_mark.column + 1);
    return buf;
}

static const char *cfg_scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* YAML null: an empty plain scalar, "~", "null". */
static int cfg_is_null(const yaml_node_t *n)
{
    const char *s;

    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    s = cfg_scalar(n);
    return *s == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

static int cfg_yaml_fail(cfg_yaml_t *y, const yaml_node_t *n, const char *what, const char *value)
{
    char m[PATH_MAX + 48];

    return cfg_fail(y->err, y->errlen, cfg_mark(y, n, m, sizeof(m)), what, value);
}

/* Duplicate keys in a mapping are an error (libyaml accepts them). */
static int cfg_yaml_dup_keys(cfg_yaml_t *y, const yaml_node_t *map)
{
    yaml_node_pair_t *a, *b;

    for (a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
        yaml_node_t *ka = yaml_document_get_node(y->doc, a->key);
        if (ka->type != YAML_SCALAR_NODE)
            return cfg_yaml_fail(y, ka, "key is not a scalar", "");
        for (b = map->data.mapping.pairs.start; b < a; b++) {
            yaml_node_t *kb = yaml_document_get_node(y->doc, b->key);
            if (strcmp(cfg_scalar(ka), cfg_scalar(kb)) == 0)
                return cfg_yaml_fail(y, ka, "duplicate key", cfg_scalar(ka));
        }
    }
    return 0;
}

static int cfg_yaml_hostlist(cfg_yaml_t *y, const yaml_node_t *n, const char *key, char **hl_p,
                             char **src_p)
{
    char m[PATH_MAX + 48], what[96];
    int rc;

    if (n->type != YAML_SCALAR_NODE || cfg_is_null(n)) {
        snprintf(what, sizeof(what), "wrong type for %s: expected a hostlist string", key);
        return cfg_yaml_fail(y, n, what, n->type == YAML_SCALAR_NODE ? cfg_scalar(n) : key);
    }
    cfg_mark(y, n, m, sizeof(m));
    rc = cfg_check_hostlist(cfg_scalar(n), m, y->err, y->errlen);
    if (rc != 0)
        return rc;
    *hl_p = strdup(cfg_scalar(n));
    *src_p = strdup(m);
    if (*hl_p == NULL || *src_p == NULL)
        return HB_ERR_NOMEM;
    return 0;
}

/* nodes: HOSTLIST | [ HOSTLIST | {name: HOSTLIST, address: A, port: P}, ... ] */
static int cfg_yaml_nodes(cfg_yaml_t *y, const yaml_node_t *key, const yaml_node_t *v)
{
    cfg_node_ent_t *e = NULL;
    size_t n = 0, i;
    yaml_node_item_t *it;
    char m[PATH_MAX + 48];
    int rc = 0;

    cfg_mark(y, key, m, sizeof(m));
    if (cfg_is_null(v))
        return cfg_take_nodes(y->cfg->priv, NULL, 0, m);
    if (v->type == YAML_SCALAR_NODE) {
        e = calloc(1, sizeof(*e));
        if (e == NULL)
            return HB_ERR_NOMEM;
        n = 1;
        rc = cfg_yaml_hostlist(y, v, "nodes", &e->hostlist, &e->src);
        goto out;
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return cfg_yaml_fail(y, v, "wrong type for nodes: expected a hostlist or a list", "nodes");
    n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    e = calloc(n ? n : 1, sizeof(*e));
    if (e == NULL)
        return HB_ERR_NOMEM;
    for (i = 0, it = v->data.sequence.items.start; i < n && rc == 0; i++, it++) {
        yaml_node_t *item = yaml_document_get_node(y->doc, *it);
        yaml_node_pair_t *pr;

        if (item->type == YAML_SCALAR_NODE) {
            rc = cfg_yaml_hostlist(y, item, "nodes", &e[i].hostlist, &e[i].src);
            continue;
        }
        if (item->type != YAML_MAPPING_NODE) {
            rc = cfg_yaml_fail(y, item, "wrong type for a node: expected a hostlist or a mapping",
                               "nodes");
            break;
        }
        rc = cfg_yaml_dup_keys(y, item);
        for (pr = item->data.mapping.pairs.start; rc == 0 && pr < item->data.mapping.pairs.top;
             pr++) {
            yaml_node_t *k = yaml_document_get_node(y->doc, pr->key);
            yaml_node_t *val = yaml_document_get_node(y->doc, pr->value);
            const char *ks = cfg_scalar(k);
            if (strcmp(ks, "name") == 0) {
                rc = cfg_yaml_hostlist(y, val, "name", &e[i].hostlist, &e[i].src);
            } else if (strcmp(ks, "address") == 0) {
                if (val->type != YAML_SCALAR_NODE || cfg_is_null(val))
                    rc = cfg_yaml_fail(y, val, "wrong type for address: expected a string",
                                       "address");
                else if ((e[i].address = strdup(cfg_scalar(val))) == NULL)
                    rc = HB_ERR_NOMEM;
            } else if (strcmp(ks, "port") == 0) {
                uint64_t port;
                if (val->type != YAML_SCALAR_NODE || cfg_parse_u64(cfg_scalar(val), 65535, &port))
                    rc = cfg_yaml_fail(y, val, "wrong type for port: expected 0..65535, got",
                                       val->type == YAML_SCALAR_NODE ? cfg_scalar(val) : "port");
                else {
                    e[i].has_port = 1;
                    e[i].port = (uint16_t)port;
                }
            } else {
                rc = cfg_yaml_fail(y, k, "unknown key", ks);
            }
        }
        if (rc == 0 && e[i].hostlist == NULL)
            rc = cfg_yaml_fail(y, item, "node without a name", "name");
    }
out:
    if (rc != 0) {
        cfg_node_ents_free(e, n);
        return rc;
    }
    return cfg_take_nodes(y->cfg->priv, e, n, m);
}

/* chassis: SIZE | [ HOSTLIST, ... ] */
static int cfg_yaml_chassis(cfg_yaml_t *y, const yaml_node_t *key, const yaml_node_t *v)
{
    cfg_list_ent_t *e;
    size_t n, i;
    yaml_node_item_t *it;
    char m[PATH_MAX + 48];
    int rc = 0;

    cfg_mark(y, v, m, sizeof(m));
    if (v->type == YAML_SCALAR_NODE && !cfg_is_null(v)) {
        uint64_t size;
        if (cfg_parse_u64(cfg_scalar(v), UINT32_MAX, &size) != 0 || size == 0)
            return cfg_yaml_fail(
                y, v, "wrong type for chassis: expected a size >= 1 or a list, got", cfg_scalar(v));
        return cfg_take_chassis(y->cfg->priv, (uint32_t)size, NULL, 0, m);
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return cfg_yaml_fail(y, v, "wrong type for chassis: expected a size or a list", "chassis");
    n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n == 0)
        return cfg_yaml_fail(y, key, "empty chassis list", "chassis");
    e = calloc(n, sizeof(*e));
    if (e == NULL)
        return HB_ERR_NOMEM;
    for (i = 0, it = v->data.sequence.items.start; i < n && rc == 0; i++, it++)
        rc = cfg_yaml_hostlist(y, yaml_document_get_node(y->doc, *it), "chassis", &e[i].hostlist,
                               &e[i].src);
    if (rc != 0) {
        cfg_list_ents_free(e, n);
        return rc;
    }
    return cfg_take_chassis(y->cfg->priv, 0, e, n, m);
}

/* sites: [ {name: NAME, nodes: HOSTLIST}, ... ] */
static int cfg_yaml_sites(cfg_yaml_t *y, const yaml_node_t *key, const yaml_node_t *v)
{
    cfg_list_ent_t *e;
    size_t n, i;
    yaml_node_item_t *it;
    char m[PATH_MAX + 48];
    int rc = 0;

    cfg_mark(y, key, m, sizeof(m));
    if (v->type != YAML_SEQUENCE_NODE)
        return cfg_yaml_fail(y, v, "wrong type for sites: expected a list of {name, nodes}",
                             "sites");
    n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n == 0)
        return cfg_yaml_fail(y, key, "empty site list", "sites");
    e = calloc(n, sizeof(*e));
    if (e == NULL)
        return HB_ERR_NOMEM;
    for (i = 0, it = v->data.sequence.items.start; i < n && rc == 0; i++, it++) {
        yaml_node_t *item = yaml_document_get_node(y->doc, *it);
        yaml_node_pair_t *pr;

        if (item->type != YAML_MAPPING_NODE) {
            rc = cfg_yaml_fail(y, item, "wrong type for a site: expected {name, nodes}", "sites");
            break;
        }
        rc = cfg_yaml_dup_keys(y, item);
        for (pr = item->data.mapping.pairs.start; rc == 0 && pr < item->data.mapping.pairs.top;
             pr++) {
            yaml_node_t *k = yaml_document_get_node(y->doc, pr->key);
            yaml_node_t *val = yaml_document_get_node(y->doc, pr->value);
            const char *ks = cfg_scalar(k);
            if (strcmp(ks, "name") == 0) {
                if (val->type != YAML_SCALAR_NODE || !cfg_valid_name(cfg_scalar(val)))
                    rc = cfg_yaml_fail(y, val, "site name: expected 1-32 of [A-Za-z0-9_-], got",
                                       val->type == YAML_SCALAR_NODE ? cfg_scalar(val) : "name");
                else if ((e[i].name = strdup(cfg_scalar(val))) == NULL)
                    rc = HB_ERR_NOMEM;
            } else if (strcmp(ks, "nodes") == 0) {
                rc = cfg_yaml_hostlist(y, val, "nodes", &e[i].hostlist, &e[i].src);
            } else {
                rc = cfg_yaml_fail(y, k, "unknown key", ks);
            }
        }
        if (rc == 0 && e[i].name == NULL)
            rc = cfg_yaml_fail(y, item, "site without a name", "name");
        if (rc == 0 && e[i].hostlist == NULL)
            rc = cfg_yaml_fail(y, item, "site without nodes", "nodes");
    }
    if (rc != 0) {
        cfg_list_ents_free(e, n);
        return rc;
    }
    return cfg_take_sites(y->cfg->priv, e, n, m);
}

/* One mapping of the file; prefix is its dotted path ("" for the top level). */
static int cfg_yaml_mapping(cfg_yaml_t *y, const yaml_node_t *map, const char *prefix)
{
    yaml_node_pair_t *pr;
    int rc = cfg_yaml_dup_keys(y, map);

    for (pr = map->data.mapping.pairs.start; rc == 0 && pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(y->doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(y->doc, pr->value);
        const cfg_key_t *key;
        char path[128], m[PATH_MAX + 48], what[256];

        snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", cfg_scalar(k));
        if (cfg_is_group(path)) {
            if (v->type != YAML_MAPPING_NODE) {
                snprintf(what, sizeof(what), "wrong type for %s: expected a mapping, got", path);
                rc = cfg_yaml_fail(y, v, what, v->type == YAML_SCALAR_NODE ? cfg_scalar(v) : path);
            } else {
                rc = cfg_yaml_mapping(y, v, path);
            }
            continue;
        }
        key = cfg_key_find(path);
        if (key == NULL) {
            rc = cfg_yaml_fail(y, k, "unknown key", path);
        } else if (strcmp(path, "nodes") == 0) {
            rc = cfg_yaml_nodes(y, k, v);
        } else if (strcmp(path, "chassis") == 0) {
            rc = cfg_yaml_chassis(y, k, v);
        } else if (strcmp(path, "sites") == 0) {
            rc = cfg_yaml_sites(y, k, v);
        } else if (v->type != YAML_SCALAR_NODE) {
            snprintf(what, sizeof(what), "wrong type for %s: expected a scalar, got a %s", path,
                     v->type == YAML_MAPPING_NODE ? "mapping" : "list");
            rc = cfg_yaml_fail(y, v, what, path);
        } else {
            rc = cfg_set_scalar(y->cfg, key, cfg_is_null(v) ? NULL : cfg_scalar(v),
                                cfg_mark(y, v, m, sizeof(m)), y->err, y->errlen);
        }
    }
    return rc;
}

int hb_cfg_read_file(hb_cfg_t *cfg, const char *path, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *root;
    cfg_yaml_t y = {.cfg = cfg, .doc = &doc, .file = path, .err = err, .errlen = errlen};
    FILE *f;
    int rc;

    if (cfg == NULL || path == NULL)
        return HB_ERR_INVAL;
    f = fopen(path, "r");
    if (f != NULL) {
        struct stat st;
        if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
            fclose(f);
            if (err != NULL && errlen > 0)
                snprintf(err, errlen, "%s:0:0: cannot read file (not a regular file) '%s'", path,
                         path);
            return HB_ERR_IO;
        }
    } else {
        int e = errno;
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s:0:0: cannot read file (%s%s) '%s'", path, strerror(e),
                     e == ENOENT ? "; write it: hibar.yaml(5)" : "", path);
        return HB_ERR_IO;
    }
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return HB_ERR_NOMEM;
    }
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s:%lu:%lu: YAML syntax error: %s '%s'", path,
                     (unsigned long)parser.problem_mark.line + 1,
                     (unsigned long)parser.problem_mark.column + 1,
                     parser.problem != NULL ? parser.problem : "unknown",
                     parser.context != NULL ? parser.context : "");
        yaml_parser_delete(&parser);
        fclose(f);
        return HB_ERR_CONFIG;
    }
    ((cfg_priv_t *)cfg->priv)->finalized = 0;
    root = yaml_document_get_root_node(&doc);
    if (root == NULL || cfg_is_null(root)) /* nothing, or comments only: a mistake, say so */
    {
        char m[PATH_MAX + 8];
        snprintf(m, sizeof(m), "%s:1:1", path);
        rc = cfg_fail(err, errlen, m, "empty file (no keys; '{}' for the defaults; hibar.yaml(5))",
                      path);
    } else if (root->type != YAML_MAPPING_NODE)
        rc = cfg_yaml_fail(&y, root, "the top level must be a mapping of keys, not",
                           root->type == YAML_SEQUENCE_NODE ? "a list" : cfg_scalar(root));
    else
        rc = cfg_yaml_mapping(&y, root, "");
    if (rc == 0 && cfg_replace_str(&cfg->file, path) != 0)
        rc = HB_ERR_NOMEM;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

/* ---- finalize: expand, form chassis and sites, validate ---- */

/* The CFG_ENV keys set by the file or -o go to the environment (their readers, the ranks);
 * the log level applies unless the command line chose one. */
static void cfg_export(const hb_cfg_t *cfg)
{
    const cfg_priv_t *p = cfg->priv;

    for (size_t i = 0; i < N_KEYS; i++) {
        char name[80];
        const char *src = p->src[i];
        if (!(cfg_keys[i].flags & CFG_ENV))
            continue;
        cfg_env_name(cfg_keys[i].path, name, sizeof(name));
        if (p->tval[i] != NULL && src != NULL && strncmp(src, "environment ", 12) != 0) {
            setenv(name, p->tval[i], 1);
            cfg_exported[i] = 1;
        } else if (p->tval[i] == NULL && cfg_exported[i]) {
            unsetenv(name); /* no longer set (a reload) */
            cfg_exported[i] = 0;
        }
        if (strcmp(cfg_keys[i].path, "log") == 0 && p->tval[i] != NULL)
            hb_log_set_level_default((hb_log_level_t)hb_log_parse_level(p->tval[i]));
    }
}

/* Open-addressing name -> node id table. */
typedef struct {
    uint32_t *slot; /* node id + 1, 0 = empty */
    uint32_t mask;
} cfg_names_t;

static uint32_t cfg_hash(const char *s)
{
    return hb_fnv32_str(s);
}

static int cfg_names_init(cfg_names_t *t, uint32_t n)
{
    uint32_t cap = 16;

    while (cap < 2 * n)
        cap *= 2;
    t->slot = calloc(cap, sizeof(uint32_t));
    t->mask = cap - 1;
    return t->slot == NULL ? HB_ERR_NOMEM : 0;
}

/* Find name; if absent and id != HB_TOPO_NONE, insert it. Returns the id found or NONE. */
static uint32_t cfg_names_get(cfg_names_t *t, const hb_cfg_t *cfg, const char *name, uint32_t id)
{
    uint32_t i = cfg_hash(name) & t->mask;

    while (t->slot[i] != 0) {
        if (strcmp(cfg->nodes[t->slot[i] - 1].name, name) == 0)
            return t->slot[i] - 1;
        i = (i + 1) & t->mask;
    }
    if (id != HB_TOPO_NONE)
        t->slot[i] = id + 1;
    return HB_TOPO_NONE;
}

static int cfg_fin_nodes(hb_cfg_t *cfg, cfg_names_t *names, char *err, size_t errlen)
{
    cfg_priv_t *p = cfg->priv;
    char ***lists = NULL;
    uint32_t *counts = NULL, total = 0, id = 0, k;
    size_t i;
    int rc = 0;

    if (p->nodes_src == NULL) {
        /* No node list anywhere: this host alone. */
        char host[256] = "localhost";
        if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        cfg->nodes = calloc(1, sizeof(*cfg->nodes));
        if (cfg->nodes == NULL || cfg_names_init(names, 1) != 0)
            return HB_ERR_NOMEM;
        cfg->n_nodes = 1;
        cfg->nodes[0].name = strdup(host);
        cfg->nodes[0].address = strdup("127.0.0.1");
        cfg->nodes[0].port = cfg->port;
        if (cfg->nodes[0].name == NULL || cfg->nodes[0].address == NULL)
            return HB_ERR_NOMEM;
        cfg_names_get(names, cfg, cfg->nodes[0].name, 0);
        return 0;
    }
    if (p->n_nodes == 0)
        return cfg_fail(err, errlen, p->nodes_src, "empty node list", "nodes");
    lists = calloc(p->n_nodes, sizeof(*lists));
    counts = calloc(p->n_nodes, sizeof(*counts));
    if (lists == NULL || counts == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    for (i = 0; i < p->n_nodes; i++) {
        char msg[HB_CFG_ERRLEN];
        rc = hb_cfg_hostlist_expand(p->nodes[i].hostlist, &lists[i], &counts[i], msg, sizeof(msg));
        if (rc != 0) {
            if (rc == HB_ERR_CONFIG && err != NULL && errlen > 0)
                snprintf(err, errlen, "%s: %s", p->nodes[i].src, msg);
            goto out;
        }
        if (total + counts[i] > HB_CFG_HOSTLIST_MAX) {
            rc = cfg_fail(err, errlen, p->nodes[i].src, "too many nodes", p->nodes[i].hostlist);
            goto out;
        }
        total += counts[i];
    }
    cfg->nodes = calloc(total, sizeof(*cfg->nodes));
    if (cfg->nodes == NULL || cfg_names_init(names, total) != 0) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    for (i = 0; i < p->n_nodes; i++) {
        for (k = 0; k < counts[i]; k++, id++) {
            hb_cfg_node_t *nd = &cfg->nodes[id];
            nd->name = lists[i][k];
            lists[i][k] = NULL;
            cfg->n_nodes = id + 1;
            if (cfg_names_get(names, cfg, nd->name, id) != HB_TOPO_NONE) {
                rc = cfg_fail(err, errlen, p->nodes[i].src, "duplicate node", nd->name);
                goto out;
            }
            nd->address = strdup(p->nodes[i].address != NULL ? p->nodes[i].address : "127.0.0.1");
            if (nd->address == NULL) {
                rc = HB_ERR_NOMEM;
                goto out;
            }
            if (p->nodes[i].has_port)
                nd->port = p->nodes[i].port == 0 ? 0 : (uint16_t)(p->nodes[i].port + k);
            else
                nd->port = cfg->port == 0 ? 0 : (uint16_t)(cfg->port + id);
            if ((p->nodes[i].has_port && p->nodes[i].port != 0 && p->nodes[i].port + k > 65535) ||
                (!p->nodes[i].has_port && cfg->port != 0 && cfg->port + id > 65535)) {
                rc = cfg_fail(err, errlen, p->nodes[i].src, "port number past 65535 for node",
                              nd->name);
                goto out;
            }
        }
    }
out:
    if (lists != NULL)
        for (i = 0; i < p->n_nodes; i++)
            hb_cfg_hostlist_free(lists[i], counts[i]);
    free(lists);
    free(counts);
    return rc;
}

/*
 * Assign each node of every list to the list's index in owner[] (HB_TOPO_NONE = unassigned).
 * what2: the message for a node found in two lists.
 */
static int cfg_fin_lists(hb_cfg_t *cfg, cfg_names_t *names, const cfg_list_ent_t *e, size_t n,
                         uint32_t *owner, uint32_t *order, uint32_t *start, const char *what2,
                         char *err, size_t errlen)
{
    size_t i;
    uint32_t k, pos = 0;
    int rc = 0;

    for (i = 0; i < n && rc == 0; i++) {
        char **list = NULL;
        uint32_t cnt = 0;
        char msg[HB_CFG_ERRLEN];

        rc = hb_cfg_hostlist_expand(e[i].hostlist, &list, &cnt, msg, sizeof(msg));
        if (rc != 0) {
            if (rc == HB_ERR_CONFIG && err != NULL && errlen > 0)
                snprintf(err, errlen, "%s: %s", e[i].src, msg);
            break;
        }
        if (start != NULL) {
            start[i] = pos;
            if (cnt > HB_TOPO_MAX_CHASSIS_SIZE) {
                char what[128];
                snprintf(what, sizeof(what),
                         "chassis of %u nodes, larger than the barrier mask width (%u)", cnt,
                         (unsigned)HB_TOPO_MAX_CHASSIS_SIZE);
                rc = cfg_fail(err, errlen, e[i].src, what, e[i].hostlist);
            }
        }
        for (k = 0; k < cnt && rc == 0; k++) {
            uint32_t id = cfg_names_get(names, cfg, list[k], HB_TOPO_NONE);
            if (id == HB_TOPO_NONE)
                rc = cfg_fail(err, errlen, e[i].src, "unknown node (not in nodes)", list[k]);
            else if (owner[id] != HB_TOPO_NONE)
                rc = cfg_fail(err, errlen, e[i].src, what2, list[k]);
            else {
                owner[id] = (uint32_t)i;
                if (order != NULL)
                    order[pos++] = id;
            }
        }
        hb_cfg_hostlist_free(list, cnt);
    }
    if (rc == 0 && start != NULL)
        start[n] = pos;
    return rc;
}

static int cfg_fin_sites(hb_cfg_t *cfg, cfg_names_t *names, char *err, size_t errlen)
{
    cfg_priv_t *p = cfg->priv;
    uint32_t *owner, i;
    size_t s, t;
    int rc;

    if (p->n_sites == 0) {
        cfg->site_names = calloc(1, sizeof(char *));
        if (cfg->site_names == NULL || (cfg->site_names[0] = strdup("site0")) == NULL)
            return HB_ERR_NOMEM;
        cfg->n_sites = 1;
        return 0;
    }
    for (s = 0; s < p->n_sites; s++)
        for (t = 0; t < s; t++)
            if (strcmp(p->sites[s].name, p->sites[t].name) == 0)
                return cfg_fail(err, errlen, p->sites[s].src, "duplicate site", p->sites[s].name);
    owner = malloc(cfg->n_nodes * sizeof(*owner));
    cfg->site_names = calloc(p->n_sites, sizeof(char *));
    if (owner == NULL || cfg->site_names == NULL) {
        free(owner);
        return HB_ERR_NOMEM;
    }
    cfg->n_sites = (uint32_t)p->n_sites;
    for (s = 0; s < p->n_sites; s++)
        if ((cfg->site_names[s] = strdup(p->sites[s].name)) == NULL) {
            free(owner);
            return HB_ERR_NOMEM;
        }
    memset(owner, 0xff, cfg->n_nodes * sizeof(*owner));
    rc = cfg_fin_lists(cfg, names, p->sites, p->n_sites, owner, NULL, NULL, "node in two sites",
                       err, errlen);
    for (i = 0; rc == 0 && i < cfg->n_nodes; i++) {
        if (owner[i] == HB_TOPO_NONE)
            rc = cfg_fail(err, errlen, p->sites_src, "node in no site", cfg->nodes[i].name);
        else
            cfg->nodes[i].site = owner[i];
    }
    free(owner);
    return rc;
}

static int cfg_fin_chassis(hb_cfg_t *cfg, cfg_names_t *names, char *err, size_t errlen)
{
    cfg_priv_t *p = cfg->priv;
    uint32_t n = cfg->n_nodes, i, c, *owner = NULL;
    int rc = 0;

    cfg->chassis_nodes = malloc(n * sizeof(uint32_t));
    cfg->chassis_start = malloc(((p->n_chassis > n ? p->n_chassis : n) + 1) * sizeof(uint32_t));
    owner = malloc(n * sizeof(uint32_t));
    if (cfg->chassis_nodes == NULL || cfg->chassis_start == NULL || owner == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    memset(owner, 0xff, n * sizeof(uint32_t));
    if (p->n_chassis > 0) {
        /* Explicit lists, in the order given; the first node of each is its Center. */
        rc = cfg_fin_lists(cfg, names, p->chassis, p->n_chassis, owner, cfg->chassis_nodes,
                           cfg->chassis_start, "node in two chassis", err, errlen);
        for (i = 0; rc == 0 && i < n; i++)
            if (owner[i] == HB_TOPO_NONE)
                rc =
                    cfg_fail(err, errlen, p->chassis_src, "node in no chassis", cfg->nodes[i].name);
        cfg->n_chassis = (uint32_t)p->n_chassis;
    } else if (p->chassis_size > 0) {
        /* A size applied in node order. */
        if (p->chassis_size > HB_TOPO_MAX_CHASSIS_SIZE) {
            char what[128], v[16];
            snprintf(what, sizeof(what), "chassis larger than the barrier mask width (%u)",
                     (unsigned)HB_TOPO_MAX_CHASSIS_SIZE);
            snprintf(v, sizeof(v), "%u", p->chassis_size);
            rc = cfg_fail(err, errlen, p->chassis_src, what, v);
            goto out;
        }
        for (i = 0, c = 0; i < n; i++) {
            if (i % p->chassis_size == 0)
                cfg->chassis_start[c++] = i;
            cfg->chassis_nodes[i] = i;
            owner[i] = c - 1;
        }
        cfg->chassis_start[c] = n;
        cfg->n_chassis = c;
    } else {
        /* Default: the nodes that share an address form a chassis (cut at the mask width),
         * chassis in the order of their first node. */
        uint32_t pos = 0;
        c = 0;
        for (i = 0; i < n; i++) {
            uint32_t j, cnt = 0;
            if (owner[i] != HB_TOPO_NONE)
                continue;
            for (j = i; j < n; j++) {
                if (owner[j] != HB_TOPO_NONE ||
                    strcmp(cfg->nodes[j].address, cfg->nodes[i].address) != 0)
                    continue;
                if (cnt % HB_TOPO_MAX_CHASSIS_SIZE == 0)
                    cfg->chassis_start[c++] = pos;
                owner[j] = c - 1;
                cfg->chassis_nodes[pos++] = j;
                cnt++;
            }
        }
        cfg->chassis_start[c] = n;
        cfg->n_chassis = c;
    }
    for (i = 0; rc == 0 && i < n; i++)
        cfg->nodes[i].chassis = owner[i];
    if (rc == 0) {
        cfg->site_of = malloc(n * sizeof(uint32_t));
        if (cfg->site_of == NULL)
            rc = HB_ERR_NOMEM;
        for (i = 0; rc == 0 && i < n; i++)
            cfg->site_of[i] = cfg->nodes[i].site;
    }
    /* A chassis sits in one site. */
    for (c = 0; rc == 0 && c < cfg->n_chassis; c++) {
        uint32_t center = cfg->chassis_nodes[cfg->chassis_start[c]];
        for (i = cfg->chassis_start[c] + 1; rc == 0 && i < cfg->chassis_start[c + 1]; i++) {
            const hb_cfg_node_t *nd = &cfg->nodes[cfg->chassis_nodes[i]];
            if (nd->site != cfg->nodes[center].site) {
                const char *src = p->chassis_src != NULL ? p->chassis_src : p->sites_src;
                char what[160];
                snprintf(what, sizeof(what), "chassis of %s spans two sites (%s, %s) at node",
                         cfg->nodes[center].name, cfg->site_names[cfg->nodes[center].site],
                         cfg->site_names[nd->site]);
                rc = cfg_fail(err, errlen, src != NULL ? src : "config", what, nd->name);
            }
        }
    }
out:
    free(owner);
    return rc;
}

int hb_cfg_finalize(hb_cfg_t *cfg, char *err, size_t errlen)
{
    cfg_names_t names = {0};
    hb_topo_spec_t spec;
    hb_topo_t *topo = NULL;
    char terr[256];
    int rc;

    if (cfg == NULL)
        return HB_ERR_INVAL;
    cfg_clear_derived(cfg);
    rc = cfg_fin_nodes(cfg, &names, err, errlen);
    if (rc == 0)
        rc = cfg_fin_sites(cfg, &names, err, errlen);
    if (rc == 0)
        rc = cfg_fin_chassis(cfg, &names, err, errlen);
    free(names.slot);
    if (rc == 0 && cfg->run_dir == NULL) {
        cfg->run_dir = cfg_strdup_printf("/tmp/hibar-%u-%s", (unsigned)getuid(), cfg->cluster);
        if (cfg->run_dir == NULL)
            rc = HB_ERR_NOMEM;
    }
    if (rc == 0) {
        /* The tree must derive (it always does once the checks above pass). */
        ((cfg_priv_t *)cfg->priv)->finalized = 1;
        hb_cfg_topo_spec(cfg, &spec);
        rc = hb_topo_build(&spec, &topo, terr, sizeof(terr));
        if (rc == HB_ERR_CONFIG)
            cfg_fail(err, errlen, cfg->file != NULL ? cfg->file : "config", "bad topology", terr);
        hb_topo_free(topo);
    }
    if (rc != 0) {
        cfg_clear_derived(cfg);
        return rc;
    }
    cfg_export(cfg);
    return 0;
}

int hb_cfg_load(const char *path, const char *const *over, size_t n_over, hb_cfg_t **cfg_p,
                char *err, size_t errlen)
{
    hb_cfg_t *cfg = NULL;
    size_t i;
    int rc;

    if (cfg_p == NULL || (n_over > 0 && over == NULL))
        return HB_ERR_INVAL;
    if (path == NULL) {
        path = getenv("HIBAR_CONFIG");
        if (path != NULL && *path == '\0')
            path = NULL;
    }
    rc = hb_cfg_create(&cfg);
    if (rc != 0)
        return rc;
    if (path != NULL)
        rc = hb_cfg_read_file(cfg, path, err, errlen);
    if (rc == 0)
        rc = hb_cfg_apply_env(cfg, err, errlen);
    for (i = 0; rc == 0 && i < n_over; i++)
        rc = hb_cfg_set_kv(cfg, over[i], err, errlen);
    if (rc == 0)
        rc = hb_cfg_finalize(cfg, err, errlen);
    if (rc != 0) {
        hb_cfg_free(cfg);
        return rc;
    }
    *cfg_p = cfg;
    return 0;
}

int hb_cfg_topo_spec(const hb_cfg_t *cfg, hb_topo_spec_t *spec_p)
{
    if (cfg == NULL || spec_p == NULL)
        return HB_ERR_INVAL;
    if (!((const cfg_priv_t *)cfg->priv)->finalized)
        return HB_ERR_NOT_INIT;
    memset(spec_p, 0, sizeof(*spec_p));
    spec_p->n_nodes = cfg->n_nodes;
    spec_p->n_chassis = cfg->n_chassis;
    spec_p->chassis_start = cfg->chassis_start;
    spec_p->chassis_nodes = cfg->chassis_nodes;
    spec_p->fanout = cfg->fanout;
    spec_p->site_of = cfg->site_of;
    return 0;
}

int hb_cfg_node_find(const hb_cfg_t *cfg, const char *name, uint32_t *id_p)
{
    uint32_t i;

    if (cfg == NULL || name == NULL || id_p == NULL)
        return HB_ERR_INVAL;
    for (i = 0; i < cfg->n_nodes; i++) {
        if (strcmp(cfg->nodes[i].name, name) == 0) {
            *id_p = i;
            return 0;
        }
    }
    return HB_ERR_NOT_FOUND;
}

const char *hb_cfg_data_plane_name(hb_cfg_data_plane_t p)
{
    return (unsigned)p < 2 ? data_names[p] : "unknown";
}

const char *hb_cfg_protocol_name(hb_cfg_protocol_t p)
{
    return (unsigned)p < 2 ? proto_names[p] : "unknown";
}

const char *hb_cfg_bootstrap_name(hb_cfg_bootstrap_t b)
{
    return (unsigned)b < 4 ? boot_names[b] : "unknown";
}

/* ---- the schema, key by key (hibar-info --all) ---- */

size_t hb_cfg_nkeys(void)
{
    return N_KEYS;
}

/* "FILE:LINE:COL" -> "FILE:LINE"; "environment HIBAR_X" -> "env HIBAR_X"; "override ..." -> "-o".
 */
static void cfg_src_short(const char *src, char *out, size_t cap)
{
    const char *c;

    if (src == NULL)
        snprintf(out, cap, "default");
    else if (strncmp(src, "environment ", 12) == 0)
        snprintf(out, cap, "env %s", src + 12);
    else if (strncmp(src, "override", 8) == 0)
        snprintf(out, cap, "-o");
    else if ((c = strrchr(src, ':')) != NULL && c > src)
        snprintf(out, cap, "%.*s", (int)(c - src), src);
    else
        snprintf(out, cap, "%s", src);
}

/* The value of a K_SPECIAL key of a finalized configuration, as text. */
static void cfg_special_value(const hb_cfg_t *cfg, const char *key, char *out, size_t cap)
{
    size_t o = 0;

    out[0] = '\0';
    if (strcmp(key, "nodes") == 0) {
        for (uint32_t i = 0; i < cfg->n_nodes && o + 1 < cap; i++)
            o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", cfg->nodes[i].name);
    } else if (strcmp(key, "chassis") == 0) {
        for (uint32_t c = 0; c < cfg->n_chassis && o + 1 < cap; c++)
            o += (size_t)snprintf(out + o, cap - o, "%s%u", c ? "," : "",
                                  cfg->chassis_start[c + 1] - cfg->chassis_start[c]);
        if (o + 16 < cap)
            snprintf(out + o, cap - o, " (nodes each)");
    } else {
        for (uint32_t i = 0; i < cfg->n_sites && o + 1 < cap; i++)
            o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", cfg->site_names[i]);
    }
    if (o + 1 >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

int hb_cfg_entry(const hb_cfg_t *cfg, size_t i, hb_cfg_entry_t *e)
{
    const cfg_priv_t *p;
    const cfg_key_t *k;
    const char *base = (const char *)cfg, *src;

    if (cfg == NULL || e == NULL || i >= N_KEYS)
        return HB_ERR_INVAL;
    p = cfg->priv;
    k = &cfg_keys[i];
    memset(e, 0, sizeof(*e));
    e->key = k->path;
    e->help = k->help;
    e->runtime = (k->flags & CFG_RUNTIME) != 0;
    e->is_default = 0;
    cfg_env_name(k->path, e->env, sizeof(e->env));
    src = p->src[i];
    if (k->kind == K_SPECIAL)
        src = strcmp(k->path, "nodes") == 0     ? p->nodes_src
              : strcmp(k->path, "chassis") == 0 ? p->chassis_src
                                                : p->sites_src;
    e->is_default = src == NULL;
    cfg_src_short(src, e->source, sizeof(e->source));
    if (k->flags & CFG_ENV) {
        const char *v = p->tval[i] != NULL ? p->tval[i] : k->dflt;
        if (k->kind == K_BOOL)
            v = strcmp(v, "0") == 0 ? "off" : strcmp(v, "1") == 0 ? "on" : v;
        snprintf(e->value, sizeof(e->value), "%s", v);
        return 0;
    }
    switch (k->kind) {
    case K_STR:
    case K_OPTSTR:
    case K_NAME:
    case K_HWB: {
        const char *v;
        memcpy(&v, base + k->off, sizeof(v));
        snprintf(e->value, sizeof(e->value), "%s", v != NULL ? v : "");
        break;
    }
    case K_UINT: {
        uint32_t v;
        memcpy(&v, base + k->off, sizeof(v));
        snprintf(e->value, sizeof(e->value), "%" PRIu32, v);
        break;
    }
    case K_U16: {
        uint16_t v;
        memcpy(&v, base + k->off, sizeof(v));
        snprintf(e->value, sizeof(e->value), "%u", (unsigned)v);
        break;
    }
    case K_DOUBLE: {
        double v;
        memcpy(&v, base + k->off, sizeof(v));
        snprintf(e->value, sizeof(e->value), "%g", v);
        break;
    }
    case K_ENUM: {
        int v;
        memcpy(&v, base + k->off, sizeof(v));
        snprintf(e->value, sizeof(e->value), "%s", v >= 0 ? k->names[v] : "?");
        break;
    }
    case K_SPECIAL:
        cfg_special_value(cfg, k->path, e->value, sizeof(e->value));
        break;
    case K_BOOL:
    case K_LOG:
        break;
    }
    return 0;
}

/* ---- where a daemon finds its file; SIGHUP ---- */

const char *hb_cfg_find(const char *given, const char **how_p)
{
    static char sys[PATH_MAX];
    const char *how = "--config", *path = given;

    if (path == NULL || *path == '\0') {
        how = "HIBAR_CONFIG";
        path = getenv("HIBAR_CONFIG");
    }
    if (path == NULL || *path == '\0') {
        how = "default";
        snprintf(sys, sizeof(sys), "%s/hibar/hibar.yaml", HB_SYSCONFDIR);
        path = access(sys, F_OK) == 0 ? sys : NULL;
    }
    if (how_p != NULL)
        *how_p = path != NULL ? how : "none";
    return path;
}

const char *hb_cfg_default_file(void)
{
    return HB_SYSCONFDIR "/hibar/hibar.yaml";
}

int hb_cfg_node_self(const hb_cfg_t *cfg, char *host, size_t cap, uint32_t *id_p)
{
    char h[256];

    if (cfg == NULL || host == NULL || id_p == NULL || gethostname(h, sizeof(h) - 1) != 0)
        return HB_ERR_INVAL;
    h[sizeof(h) - 1] = '\0';
    snprintf(host, cap, "%s", h);
    if (hb_cfg_node_find(cfg, h, id_p) == 0)
        return 0;
    h[strcspn(h, ".")] = '\0'; /* the short name */
    return hb_cfg_node_find(cfg, h, id_p);
}

int hb_cfg_reload(hb_cfg_t *cfg, const char *path, const char *const *over, size_t n_over,
                  char *err, size_t errlen)
{
    hb_cfg_t *now = NULL;
    char applied[512] = "", restart[512] = "";
    int rc;

    if (cfg == NULL)
        return HB_ERR_INVAL;
    rc = hb_cfg_load(path, over, n_over, &now, err, errlen); /* exports the CFG_ENV keys */
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < N_KEYS; i++) {
        hb_cfg_entry_t a, b;
        char *list = cfg_keys[i].flags & CFG_RUNTIME ? applied : restart;
        size_t l = strlen(list);
        if (cfg_keys[i].kind == K_SPECIAL)
            continue; /* bootstrap pmix/env learn the nodes: not in the file */
        hb_cfg_entry(cfg, i, &a);
        hb_cfg_entry(now, i, &b);
        if (strcmp(a.value, b.value) == 0)
            continue;
        if (l + strlen(a.key) + 3 < sizeof(applied))
            snprintf(list + l, sizeof(applied) - l, "%s%s", l ? ", " : "", a.key);
        if (cfg_keys[i].flags & CFG_RUNTIME) {
            cfg_priv_t *p = cfg->priv, *q = now->priv;
            char *t = p->tval[i], *s = p->src[i];
            p->tval[i] = q->tval[i];
            p->src[i] = q->src[i];
            q->tval[i] = t;
            q->src[i] = s;
        }
    }
    if (hb_cfg_log_open(cfg, -1) != 0 || hb_log_reopen() != 0) /* first: logrotate moved it */
        hb_log_error("cannot re-open the log: %m");
    hb_log_info("configuration %s re-read: %s%s%s%s", path != NULL ? path : "(none)",
                applied[0] ? "applied " : "nothing changed that applies at run time", applied,
                restart[0] ? "; changed, taking effect at the next start: " : "", restart);
    if (restart[0])
        hb_log_warn("configuration %s: %s changed: restart hibard for it", path ? path : "",
                    restart);
    hb_cfg_free(now);
    return 0;
}

int hb_cfg_log_open(const hb_cfg_t *cfg, int detached)
{
    const cfg_priv_t *p;
    const char *to = NULL, *file = NULL;

    if (cfg == NULL)
        return HB_ERR_INVAL;
    p = cfg->priv;
    for (size_t i = 0; i < N_KEYS; i++) {
        if (strcmp(cfg_keys[i].path, "log_to") == 0)
            to = p->tval[i];
        else if (strcmp(cfg_keys[i].path, "log_file") == 0)
            file = p->tval[i];
    }
    return hb_log_open(to, file, detached) == 0 ? 0 : HB_ERR_IO;
}
