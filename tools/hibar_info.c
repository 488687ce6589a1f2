/* hibar_info.c: hibar-info, prints version, dependencies, the configuration and derived topology.
 */
#include "hb_config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cfg.h"
#include "hb_cli.h"
#include "hb_log.h"
#include "hb_status.h"
#include "mpi_xover.h"
#include "coll_model.h"
#include "coll_params.h"
#include "hb_params.h"
#include "hwb.h"
#include "topo.h"

#define INFO_EXIT_CONFIG 2 /* bad configuration or bad usage */
/* The pipelining segment of the daemons' control-command collectives (hbd_coll.c
 * HBD_COLL_SEG_DEFAULT), which the model's multi-lane prediction takes (hb_model_lanes_t.seg). */
#define INFO_SEG 32768.0

typedef struct {
    const char *config;
    int json;
    int have_ib, have_sr;
    double t_ib, t_sr;
    const char **over;
    size_t n_over;
    int model;        /* --model: the cached PlogP(-BR) parameters and the choices */
    int all;          /* --all: every key, its value and its source */
    double sizes[32]; /* --size LIST */
    int n_sizes;
    const char *members; /* --members HOSTLIST: the view of a job on these nodes */
    int mpi;             /* --mpi: mca_coll_hibar's crossover table */
} info_opts_t;

static void info_usage(FILE *f)
{
    fprintf(f,
            "usage: hibar-info [--config FILE] [--json] [--t-ib US --t-sr US] [-o KEY=VALUE ...]\n"
            "  -c, --config FILE  cluster description (default $HIBAR_CONFIG, else this host "
            "alone)\n"
            "  -j, --json         one JSON document instead of text\n"
            "      --t-ib US      chassis barrier time T_IB (us), for the predictions\n"
            "      --t-sr US      one send/receive between chassis T_SR (us)\n"
            "      --model        the cached PlogP(-BR) parameters (hibar-bench logp), b_WAN(P)\n"
            "                     (hibar-bench lanes, or the configuration's), and the\n"
            "                     algorithm the daemons choose per operation and size\n"
            "      --size LIST    sizes for --model, e.g. 1K,64K,1M (default 1K,16K,64K,256K,1M)\n"
            "      --mpi          the crossover table of Open MPI's coll component on hibar\n"
            "                     (mca_coll_hibar): which calls hibar takes, by size, with\n"
            "                     the OMPI_MCA_coll_hibar_* settings of the environment\n"
            "      --members LIST the tree and predictions of a job on these nodes only\n"
            "                     (hostlist, e.g. n[03-05,08]): pruned chassis, stand-in Centers\n"
            "  -o KEY=VALUE       override a configuration key (see hibar.yaml(5))\n"
            "  -a, --all          every key: its value and where it came from (default,\n"
            "                     FILE:LINE, env HIBAR_<KEY>, -o); with --json as JSON\n"
            "  -v, --verbose      more log output (repeat for debug)\n"
            "  -V, --version      print the version and exit\n"
            "  -h, --help         this text\n"
            "Exit status: 0 ok, 2 bad configuration or usage, 1 other errors.\n");
}

/* ---- JSON output (jansson) ---- */

/* A string ("" for NULL; bytes that are not UTF-8 as they are, as before). */
static json_t *jstr(const char *s)
{
    json_t *v = json_string(s != NULL ? s : "");
    return v != NULL ? v : json_string_nocheck(s);
}

static json_t *jstr_or_null(const char *s)
{
    return s != NULL ? jstr(s) : json_null();
}

/* A number; null when not finite; a whole number without ".0" (as "%.17g" printed it). */
static json_t *jnum(double v)
{
    if (!isfinite(v))
        return json_null();
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* A number printed with 3 decimals before (rounded to them). */
static json_t *jnum3(double v)
{
    return jnum(round(v * 1000.0) / 1000.0);
}

static json_t *jint(double v)
{
    return json_integer((json_int_t)llround(v));
}

/* The document at f, one line; JSON_REAL_PRECISION(15): a value rounded to decimals prints
 * as those decimals. */
static void jdump(FILE *f, json_t *doc)
{
    json_dumpf(doc, f, JSON_REAL_PRECISION(15));
    fputc('\n', f);
    json_decref(doc);
}

/*
 * HB_DEP_VERSIONS is "libzmq 4.3.4, libevent 2.1.12, ...": print it as a JSON object, or as
 * text lines.
 */
static json_t *info_deps(FILE *f, int json)
{
    char buf[512], *save = NULL, *tok;
    json_t *o = json ? json_object() : NULL;

    snprintf(buf, sizeof(buf), "%s", HB_DEP_VERSIONS);
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *sp;
        while (*tok == ' ')
            tok++;
        sp = strchr(tok, ' ');
        if (sp != NULL)
            *sp++ = '\0';
        if (json)
            json_object_set_new(o, tok, jstr(sp));
        else
            fprintf(f, "  %-10s %s\n", tok, sp != NULL ? sp : "");
    }
    return o;
}

static unsigned info_scic_vendor(const hb_cfg_t *cfg)
{
    return cfg->scic_vendor != 0 ? cfg->scic_vendor : HB_HWB_SCIC_VENDOR;
}

static unsigned info_scic_device(const hb_cfg_t *cfg)
{
    return cfg->scic_device != 0 ? cfg->scic_device : HB_HWB_SCIC_DEVICE;
}

/*
 * The hwbarrier backends of this build, highest priority first, each with whether it is usable
 * on this host and why (or why not): each backend's own query, with the config's scic settings.
 */
static json_t *info_backends(FILE *f, const hb_cfg_t *cfg, int json)
{
    hb_hwb_info_t info[8];
    hb_hwb_params_t p = {
        .cluster = cfg->cluster,
        .nodes = 1,
        .uio_path = cfg->scic_uio,
        .pci_vendor = cfg->scic_vendor,
        .pci_device = cfg->scic_device,
    };
    size_t n = 0, i;

    json_t *a = json ? json_array() : NULL;

    if (hb_hwb_list(&p, info, sizeof(info) / sizeof(info[0]), &n) < 0)
        n = 0;
    for (i = 0; i < n; i++) {
        if (json) {
            json_array_append_new(a, json_pack("{s:o, s:i, s:b, s:o}", "name", jstr(info[i].name),
                                               "priority", info[i].priority, "available",
                                               info[i].available, "why", jstr(info[i].why)));
        } else {
            fprintf(f, "  %-5s priority %-3d %-13s %s\n", info[i].name, info[i].priority,
                    info[i].available ? "available" : "not available", info[i].why);
        }
    }
    return a;
}

/* ---- text output ---- */

static void info_text(FILE *f, const hb_cfg_t *cfg, const hb_topo_t *t, const info_opts_t *o)
{
    uint32_t c, i, k, s;

    fprintf(f, "hibar-info %s\n", PACKAGE_VERSION);
    fputs("dependencies (built against):\n", f);
    info_deps(f, 0);
    fprintf(f, "config:     %s\n", cfg->file != NULL ? cfg->file : "(none: defaults)");
    fprintf(f, "cluster:    %s\n", cfg->cluster);
    fprintf(f, "nodes:      %u in %u chassis, %u site%s\n", cfg->n_nodes, cfg->n_chassis,
            cfg->n_sites, cfg->n_sites == 1 ? "" : "s");
    fprintf(f, "protocol:   %s, fanout %u%s\n", hb_cfg_protocol_name(cfg->protocol), cfg->fanout,
            cfg->fanout == 0 ? " (the paper's shape)" : "-ary");
    fprintf(f, "hwbarrier:  %s\n", cfg->hwbarrier);
    fprintf(f, "bootstrap:  %s\n", hb_cfg_bootstrap_name(cfg->bootstrap));
    fprintf(f, "data plane: %s\n", hb_cfg_data_plane_name(cfg->data_plane));
    fprintf(f, "heartbeat:  every %u ms, peer lost after %u ms; barrier timeout %u ms\n",
            cfg->heartbeat_interval_ms, cfg->heartbeat_timeout_ms, cfg->barrier_timeout_ms);
    fprintf(f, "run dir:    %s\n", cfg->run_dir);
    fprintf(f, "key file:   %s\n",
            cfg->key_file != NULL ? cfg->key_file : "(generated in run dir)");
    fprintf(f, "links:      LAN %g Mbit/s %g us; WAN %g Mbit/s per lane, %g Mbit/s total, %g us\n",
            cfg->links.lan_bw_mbps, cfg->links.lan_lat_us, cfg->links.wan_lane_bw_mbps,
            cfg->links.wan_total_bw_mbps, cfg->links.wan_lat_us);
    fprintf(f, "scic:       PCI %04x:%04x, uio %s\n", info_scic_vendor(cfg), info_scic_device(cfg),
            cfg->scic_uio != NULL ? cfg->scic_uio : "(search /sys/class/uio)");
    fputs("hwbarrier backends:\n", f);
    info_backends(f, cfg, 0);
    fputs("sites:\n", f);
    for (s = 0; s < cfg->n_sites; s++) {
        uint32_t cnt = 0;
        for (i = 0; i < cfg->n_nodes; i++)
            cnt += cfg->nodes[i].site == s;
        fprintf(f, "  %u %s: %u nodes\n", s, cfg->site_names[s], cnt);
    }
    fprintf(f, "topology:   %u chassis, depth %u, L %u\n", t->n_chassis, t->depth, t->L);
    if (o->members != NULL)
        fprintf(f,
                "members:    %s: %u of %u nodes, %u of %u chassis, root chassis %u "
                "(C*: a stand-in Center)\n",
                o->members, t->n_members, t->n_nodes, t->n_active, t->n_chassis, t->root);
    for (c = 0; c < t->n_chassis; c++) {
        const hb_topo_chassis_t *ch = &t->chassis[c];
        if (ch->n_nodes == 0)
            continue; /* no member: pruned from the job's tree */
        fprintf(f, "  chassis %u: %s, depth %u, site %s, Center %s", c, hb_topo_role_name(ch->role),
                ch->depth, cfg->site_names[ch->site], cfg->nodes[ch->nodes[0]].name);
        if (ch->parent != HB_TOPO_NONE)
            fprintf(f, ", parent chassis %u via %s", ch->parent, cfg->nodes[ch->parent_node].name);
        fputc('\n', f);
        for (i = 0; i < ch->n_nodes; i++) {
            const hb_topo_node_t *nd = &t->nodes[ch->nodes[i]];
            fprintf(f, "    %-4s %s",
                    i > 0           ? "port"
                    : nd->port == 0 ? "C"
                                    : "C*",
                    cfg->nodes[ch->nodes[i]].name);
            if (nd->n_children > 0) {
                fputs("  -> chassis", f);
                for (k = 0; k < nd->n_children; k++)
                    fprintf(f, " %u (%s)", nd->children[k],
                            cfg->nodes[hb_topo_center_of(t, nd->children[k])].name);
            }
            fputc('\n', f);
        }
    }
    if (o->have_ib && o->have_sr) {
        fprintf(f, "prediction: T_IB %g us, T_SR %g us, L %u\n", o->t_ib, o->t_sr, t->L);
        fprintf(f, "  scmd (4 + 3L)·T_IB + 3(L + 1)·T_SR = %.3f us\n",
                hb_topo_predict_scmd(t, o->t_ib, o->t_sr));
        fprintf(f, "  tree (3 + 2L)·T_IB + 2(L + 1)·T_SR = %.3f us\n",
                hb_topo_predict_tree(t, o->t_ib, o->t_sr));
        if (t->n_active <= 1)
            fputs("  (one chassis: a barrier is one chassis barrier, T_IB)\n", f);
    }
}

/* ---- JSON output ---- */

static json_t *ju32_or_null(uint32_t v)
{
    return v == HB_TOPO_NONE ? json_null() : json_integer(v);
}

/* The name of node i, null for HB_TOPO_NONE. */
static json_t *jnode(const hb_cfg_t *cfg, uint32_t i)
{
    return i == HB_TOPO_NONE ? json_null() : jstr(cfg->nodes[i].name);
}

static void info_json(FILE *f, const hb_cfg_t *cfg, const hb_topo_t *t, const info_opts_t *o)
{
    uint32_t c, i, k, s;
    char vendor[16], device[16];
    json_t *d = json_object(), *a;

    json_object_set_new(d, "version", jstr(PACKAGE_VERSION));
    json_object_set_new(d, "dependencies", info_deps(f, 1));
    json_object_set_new(d, "config", jstr_or_null(cfg->file));
    json_object_set_new(d, "cluster", jstr(cfg->cluster));
    json_object_set_new(d, "protocol", jstr(hb_cfg_protocol_name(cfg->protocol)));
    json_object_set_new(d, "fanout", json_integer(cfg->fanout));
    json_object_set_new(d, "hwbarrier", jstr(cfg->hwbarrier));
    json_object_set_new(d, "bootstrap", jstr(hb_cfg_bootstrap_name(cfg->bootstrap)));
    json_object_set_new(d, "data_plane", jstr(hb_cfg_data_plane_name(cfg->data_plane)));
    json_object_set_new(d, "heartbeat_interval_ms", json_integer(cfg->heartbeat_interval_ms));
    json_object_set_new(d, "heartbeat_timeout_ms", json_integer(cfg->heartbeat_timeout_ms));
    json_object_set_new(d, "barrier_timeout_ms", json_integer(cfg->barrier_timeout_ms));
    json_object_set_new(d, "run_dir", jstr(cfg->run_dir));
    json_object_set_new(d, "key_file", jstr_or_null(cfg->key_file));
    json_object_set_new(
        d, "links",
        json_pack("{s:{s:o, s:o}, s:{s:o, s:o, s:o}}", "lan", "bandwidth_mbps",
                  jnum(cfg->links.lan_bw_mbps), "latency_us", jnum(cfg->links.lan_lat_us), "wan",
                  "lane_bandwidth_mbps", jnum(cfg->links.wan_lane_bw_mbps), "total_bandwidth_mbps",
                  jnum(cfg->links.wan_total_bw_mbps), "latency_us", jnum(cfg->links.wan_lat_us)));
    snprintf(vendor, sizeof(vendor), "0x%04x", info_scic_vendor(cfg));
    snprintf(device, sizeof(device), "0x%04x", info_scic_device(cfg));
    json_object_set_new(d, "scic",
                        json_pack("{s:s, s:s, s:o}", "vendor", vendor, "device", device, "uio",
                                  jstr_or_null(cfg->scic_uio)));
    json_object_set_new(d, "backends", info_backends(f, cfg, 1));
    json_object_set_new(d, "n_nodes", json_integer(t->n_nodes));
    json_object_set_new(d, "n_chassis", json_integer(t->n_chassis));
    json_object_set_new(d, "n_sites", json_integer(t->n_sites));
    json_object_set_new(d, "depth", json_integer(t->depth));
    json_object_set_new(d, "L", json_integer(t->L));
    json_object_set_new(d, "members", jstr_or_null(o->members));
    json_object_set_new(d, "n_members", json_integer(t->n_members));
    json_object_set_new(d, "n_active_chassis", json_integer(t->n_active));
    json_object_set_new(d, "root_chassis", json_integer(t->root));

    a = json_array();
    for (s = 0; s < cfg->n_sites; s++) {
        json_t *nodes = json_array();
        for (i = 0; i < cfg->n_nodes; i++)
            if (cfg->nodes[i].site == s)
                json_array_append_new(nodes, jstr(cfg->nodes[i].name));
        json_array_append_new(a, json_pack("{s:i, s:o, s:o}", "index", (int)s, "name",
                                           jstr(cfg->site_names[s]), "nodes", nodes));
    }
    json_object_set_new(d, "sites", a);
    a = json_array();
    for (c = 0; c < t->n_chassis; c++) {
        const hb_topo_chassis_t *ch = &t->chassis[c];
        json_t *nodes = json_array(), *children = json_array();
        for (i = 0; i < ch->n_nodes; i++)
            json_array_append_new(nodes, jstr(cfg->nodes[ch->nodes[i]].name));
        for (k = 0; k < ch->n_children; k++)
            json_array_append_new(children, json_integer(ch->children[k]));
        json_array_append_new(
            a, json_pack("{s:I, s:o, s:o, s:I, s:o, s:I, s:I, s:o, s:o, s:o}", "index",
                         (json_int_t)c, "role", jstr(hb_topo_role_name(ch->role)), "center",
                         ch->n_nodes > 0 ? jnode(cfg, ch->nodes[0]) : json_null(), "mask",
                         (json_int_t)ch->mask, "nodes", nodes, "site", (json_int_t)ch->site,
                         "depth", (json_int_t)ch->depth, "parent", ju32_or_null(ch->parent),
                         "parent_node", jnode(cfg, ch->parent_node), "children", children));
    }
    json_object_set_new(d, "chassis", a);
    a = json_array();
    for (i = 0; i < t->n_nodes; i++) {
        const hb_topo_node_t *nd = &t->nodes[i];
        const hb_cfg_node_t *cn = &cfg->nodes[i];
        json_t *children = json_array();
        for (k = 0; k < nd->n_children; k++)
            json_array_append_new(children, json_integer(nd->children[k]));
        json_array_append_new(
            a, json_pack("{s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:b, s:b, s:o, s:o}", "id",
                         (json_int_t)i, "name", jstr(cn->name), "address", jstr(cn->address),
                         "port", (json_int_t)cn->port, "site", (json_int_t)nd->site, "chassis",
                         (json_int_t)nd->chassis, "port_index", (json_int_t)nd->port, "center",
                         hb_topo_is_center(t, i), "member", (int)nd->member, "parent",
                         jnode(cfg, nd->parent), "children", children));
    }
    json_object_set_new(d, "nodes", a);
    if (o->have_ib && o->have_sr)
        json_object_set_new(d, "predictions",
                            json_pack("{s:o, s:o, s:o, s:o}", "t_ib_us", jnum(o->t_ib), "t_sr_us",
                                      jnum(o->t_sr), "scmd_us",
                                      jnum(hb_topo_predict_scmd(t, o->t_ib, o->t_sr)), "tree_us",
                                      jnum(hb_topo_predict_tree(t, o->t_ib, o->t_sr))));
    jdump(f, d);
}

/* ---- --model: the cached parameters and the chooser's answers ---- */

static int info_sizes(const char *arg, info_opts_t *o)
{
    char *l = strdup(arg), *save = NULL, *t;
    o->n_sizes = 0;
    for (t = l ? strtok_r(l, ",", &save) : NULL; t != NULL; t = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(t, &end);
        if (*end == 'K' || *end == 'k')
            v *= 1024, end++;
        else if (*end == 'M' || *end == 'm')
            v *= 1048576, end++;
        if (end == t || *end != '\0' || !(v >= 0) || o->n_sizes == 32) {
            fprintf(stderr, "hibar-info: --size: bad size '%s'\n", t);
            free(l);
            return -1;
        }
        o->sizes[o->n_sizes++] = v;
    }
    free(l);
    return o->n_sizes > 0 ? 0 : -1;
}

/* T(P) of multi-lane op (scatter or gather) at P lanes exactly (the chooser reports only the
 * best P): PlogP-BR across two sites when parameters are cached, else the pipelined lane model
 * (hb_model_multi_lane_pipe, what the chooser uses). < 0: n/a. */
static double info_tp(const hb_model_params_t *mp, hb_coll_op_t op, double size, uint32_t P)
{
    double t = -1.0;
    int rc = mp->plogp != NULL
                 ? hb_model_plogp_sites(mp->plogp, mp->lanes, op, HB_COLL_ALG_MULTI_LANE, mp->n0,
                                        mp->n1, size, P, &t)
                 : hb_model_multi_lane_pipe(mp->lanes, op, mp->n0, mp->n1, size, P, &t);
    return rc == 0 ? t : -1.0;
}

/* What hibard's model_choose (daemon/hbd_coll.c) sees for root 0, and its answers. */
static void info_model(FILE *f, const hb_cfg_t *cfg, const info_opts_t *o)
{
    char path[4096], err[512] = "";
    hb_params_t p;
    hb_model_plogp_t v = {0};
    int have = 0, rc;
    uint32_t n0 = 0, n1 = 0, rs = cfg->site_of[0], other = UINT32_MAX;
    static const double dflt[] = {1024, 16384, 65536, 262144, 1048576};
    const double *sz = o->n_sizes ? o->sizes : dflt;
    int nsz = o->n_sizes ? o->n_sizes : 5;

    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        if (cfg->site_of[i] == rs) {
            n0++;
        } else if (other == UINT32_MAX || cfg->site_of[i] == other) {
            other = cfg->site_of[i];
            n1++;
        }
    }
    rc = hb_params_load(cfg->cluster, &p, path, sizeof(path), err, sizeof(err));
    if (rc == 0 && p.n > 0) {
        have = 1;
        hb_model_plogp_view(&p, &v);
    }
    const hb_cfg_links_t *l = &cfg->links;
    hb_model_lanes_t ml = hb_model_lanes_links(l->wan_lat_us, l->lan_lat_us, l->lan_bw_mbps,
                                               l->wan_lane_bw_mbps, l->wan_total_bw_mbps, INFO_SEG);
    int measured = rc == 0 && hb_model_lanes_view(&p, &ml);
    uint32_t pmax = n1 > 0 ? (n0 < n1 ? n0 : n1) : 0, ptab = pmax;
    if (measured && p.n_bwan > ptab)
        ptab = p.n_bwan;
    json_t *jm = NULL, *choices = NULL;
    if (o->json) {
        json_t *bw = json_array();
        jm = json_object();
        json_object_set_new(jm, "file", jstr(path));
        json_object_set_new(jm, "cached", json_boolean(have));
        json_object_set_new(jm, "bwan_source", jstr(measured ? "measured" : "config"));
        for (uint32_t P = 1; P <= ptab; P++) /* b_WAN(P) per lane, P = 1 .. */
            json_array_append_new(bw, jnum3(hb_model_bwan(&ml, P) * 8.0));
        json_object_set_new(jm, "bwan_mbit", bw);
        if (measured)
            json_object_set_new(jm, "bwan_measured", jint(p.bwan_measured));
        if (have) {
            json_t *pts = json_array();
            json_object_set_new(jm, "L_us", jnum(p.L));
            json_object_set_new(jm, "q_bytes", jnum(p.q));
            json_object_set_new(jm, "t_rto_us", jnum(p.t_rto));
            json_object_set_new(jm, "burst_bytes", jint(p.burst));
            json_object_set_new(jm, "flow_control", json_integer(p.flow_control));
            json_object_set_new(jm, "nodes", json_integer(p.nodes));
            for (uint32_t i = 0; i < p.n; i++)
                json_array_append_new(pts, json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "size",
                                                     jint(p.m[i]), "os_us", jnum3(p.os[i]), "or_us",
                                                     jnum3(p.orv[i]), "g_us", jnum3(p.g[i]),
                                                     "g_pair_us", jnum3(p.g_pair[i]),
                                                     "g_one_to_many_us", jnum3(p.g_o2m[i]),
                                                     "g_many_to_one_us", jnum3(p.g_m2o[i])));
            json_object_set_new(jm, "points", pts);
        }
        json_object_set_new(jm, "n0", json_integer(n0));
        json_object_set_new(jm, "n1", json_integer(n1));
        choices = json_array();
        json_object_set_new(jm, "choices", choices);
    } else {
        if (have) {
            fprintf(f, "model parameters: %s (cluster %s, %u nodes)\n", path, p.cluster,
                    (unsigned)p.nodes);
            fprintf(f, "  L %.2f us, switch queue q %.0f B%s, T_RTO %.0f us, burst %.0f B\n", p.L,
                    p.q, p.flow_control ? " (flow control: no RTO penalty)" : "", p.t_rto, p.burst);
            fprintf(f, "  %10s %9s %9s %10s %12s %12s %12s\n", "size", "o_s(us)", "o_r(us)",
                    "g(us)", "g 1->1(us)", "g 1->n(us)", "g n->1(us)");
            for (uint32_t i = 0; i < p.n; i++)
                fprintf(f, "  %10.0f %9.2f %9.2f %10.2f %12.2f %12.2f %12.2f\n", p.m[i], p.os[i],
                        p.orv[i], p.g[i], p.g_pair[i], p.g_o2m[i], p.g_m2o[i]);
        } else {
            fprintf(f,
                    "model parameters: no PlogP(-BR) cached at %s%s%s\n  (hibar-bench logp "
                    "--config FILE measures and writes them); the configuration's links are used\n",
                    path, err[0] ? ": " : "", err[0] && rc != HB_ERR_NOT_FOUND ? err : "");
        }
        if (ptab > 0) {
            fprintf(f, "b_WAN(P): %s\n",
                    measured ? "measured (hibar-bench lanes)"
                             : "configuration (min(wan lane, wan total / P))");
            if (measured) {
                char when[32] = "?";
                time_t tw = (time_t)p.bwan_measured;
                struct tm tm;
                if (gmtime_r(&tw, &tm) != NULL)
                    strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
                fprintf(f, "  from %s, cluster %s, measured %s, P = 1..%u%s\n", path, p.cluster,
                        when, (unsigned)p.n_bwan,
                        ptab > p.n_bwan ? " (beyond: the last aggregate shared)" : "");
            }
            fprintf(f, "  %6s %18s %18s\n", "P", "per lane(Mbit/s)", "aggregate(Mbit/s)");
            for (uint32_t P = 1; P <= ptab; P++)
                fprintf(f, "  %6u %18.1f %18.1f\n", (unsigned)P, hb_model_bwan(&ml, P) * 8.0,
                        hb_model_bwan(&ml, P) * 8.0 * P);
        }
        fprintf(f, "choice for root 0 (%u nodes in its site, %u in the other), %s%s:\n",
                (unsigned)n0, (unsigned)n1, have ? "PlogP(-BR)" : "configuration links",
                measured ? ", measured b_WAN(P)" : "");
        fprintf(f, "  %-10s %10s %12s %12s %12s %16s   %s\n", "op", "size", "flat", "binomial",
                "single-lane", "multi-lane (P)", "choice");
    }
    hb_model_params_t mp = {.n0 = n0, .n1 = n1, .lanes = &ml, .plogp = have ? &v : NULL};
    for (int op = 0; op < HB_COLL_OP_COUNT; op++)
        for (int s = 0; s < nsz; s++) {
            hb_model_choice_t c;
            if (hb_model_choose((hb_coll_op_t)op, sz[s], &mp, &c) != 0)
                continue;
            if (o->json) {
                char key[48];
                json_t *jc =
                    json_pack("{s:s, s:o, s:s, s:I, s:o}", "op", hb_coll_op_name((hb_coll_op_t)op),
                              "size", jint(sz[s]), "choice", hb_coll_alg_name(c.alg), "lanes",
                              (json_int_t)c.lanes, "predicted_us", jnum(c.predicted_us));
                for (int a = 0; a < HB_COLL_ALG_COUNT; a++) {
                    snprintf(key, sizeof(key), "%s_us", hb_coll_alg_name((hb_coll_alg_t)a));
                    json_object_set_new(jc, key,
                                        c.alg_us[a] >= 0 ? jnum(c.alg_us[a]) : json_null());
                }
                if ((op == HB_COLL_SCATTER || op == HB_COLL_GATHER) && pmax > 0) {
                    json_t *tp = json_array(); /* T(P) for P = 1 .. min(n0, n1) */
                    for (uint32_t P = 1; P <= pmax; P++)
                        json_array_append_new(tp, jnum(info_tp(&mp, (hb_coll_op_t)op, sz[s], P)));
                    json_object_set_new(jc, "t_p_us", tp);
                }
                json_array_append_new(choices, jc);
                continue;
            }
            char cell[HB_COLL_ALG_COUNT][32];
            for (int a = 0; a < HB_COLL_ALG_COUNT; a++)
                if (c.alg_us[a] < 0)
                    snprintf(cell[a], sizeof(cell[a]), "-");
                else
                    snprintf(cell[a], sizeof(cell[a]), "%.1f", c.alg_us[a]);
            if (c.alg == HB_COLL_ALG_MULTI_LANE || c.alg_us[HB_COLL_ALG_MULTI_LANE] >= 0)
                snprintf(cell[3] + strlen(cell[3]), sizeof(cell[3]) - strlen(cell[3]), " (%u)",
                         (unsigned)(c.alg == HB_COLL_ALG_MULTI_LANE ? c.lanes : 0));
            fprintf(f, "  %-10s %10.0f %12s %12s %12s %16s   %s%s (%.1f us)\n",
                    hb_coll_op_name((hb_coll_op_t)op), sz[s], cell[0], cell[1], cell[2], cell[3],
                    hb_coll_alg_name(c.alg), "", c.predicted_us);
        }
    if (o->json) {
        jdump(f, json_pack("{s:o}", "model", jm));
        return;
    }
    if (pmax == 0)
        return;
    /* the paper's figure as numbers: multi-lane T(P) for every P (doc/design.md section 1) */
    fprintf(f, "multi-lane T(P) (us), P = 1 .. %u, %s%s:\n", (unsigned)pmax,
            have ? "PlogP-BR on the LAN, lanes on the WAN"
                 : "the pipelined lane model, 32 KiB segments (doc/model.md)",
            measured ? " (measured b_WAN(P))" : "");
    for (int op = HB_COLL_SCATTER; op <= HB_COLL_GATHER; op++)
        for (int s = 0; s < nsz; s++) {
            uint32_t best = 0;
            double tb = -1.0;
            fprintf(f, "  %-10s %10.0f ", hb_coll_op_name((hb_coll_op_t)op), sz[s]);
            for (uint32_t P = 1; P <= pmax; P++) {
                double t = info_tp(&mp, (hb_coll_op_t)op, sz[s], P);
                fprintf(f, " %11.1f", t);
                if (t >= 0 && (tb < 0 || t < tb)) {
                    tb = t;
                    best = P;
                }
            }
            fprintf(f, "   P_opt %u\n", (unsigned)best);
        }
}

/* ---- --all: every key of the schema, its value and where it came from ---- */

static void info_all(FILE *f, const hb_cfg_t *cfg, int json)
{
    hb_cfg_entry_t e;
    size_t n = hb_cfg_nkeys();

    if (json) {
        /* one setting a line (the layout before jansson) */
        json_t *file = jstr_or_null(cfg->file);
        fprintf(f, "{\"file\": ");
        json_dumpf(file, f, JSON_ENCODE_ANY);
        json_decref(file);
        fprintf(f, ", \"settings\": [");
    } else {
        fprintf(f,
                "# hibar %s settings; file: %s\n# KEY = VALUE (SOURCE: default, FILE:LINE, "
                "env HIBAR_<KEY>, -o); * = re-read on SIGHUP\n",
                PACKAGE_VERSION, cfg->file != NULL ? cfg->file : "(none)");
    }
    for (size_t i = 0; i < n; i++) {
        if (hb_cfg_entry(cfg, i, &e) != 0)
            continue;
        if (json) {
            json_t *je = json_pack("{s:o, s:o, s:o, s:o, s:b, s:o}", "key", jstr(e.key), "value",
                                   jstr(e.value), "source", jstr(e.source), "env", jstr(e.env),
                                   "runtime", e.runtime, "help", jstr(e.help));
            fprintf(f, "%s\n  ", i ? "," : "");
            json_dumpf(je, f, 0);
            json_decref(je);
        } else {
            fprintf(f, "%-30s = %-24s (%s)%s  # %s\n", e.key, e.value, e.source,
                    e.runtime ? " *" : "", e.help);
        }
    }
    if (json)
        fprintf(f, "\n]}\n");
}

/* ---- main ---- */

static int info_parse_us(const char *opt, const char *s, double *v)
{
    char *end;
    double d = strtod(s, &end);

    if (end == s || *end != '\0' || !isfinite(d) || d < 0) {
        fprintf(stderr, "hibar-info: %s: expected a non-negative number of microseconds '%s'\n",
                opt, s);
        return -1;
    }
    *v = d;
    return 0;
}

/* Replace *topo_p by the view of a job on the nodes of hostlist (hb_topo_restrict). */
static int info_view(const hb_cfg_t *cfg, const char *hostlist, hb_topo_t **topo_p, char *err,
                     size_t errlen)
{
    uint8_t *member = calloc(cfg->n_nodes, 1);
    hb_topo_t *v = NULL;
    int rc;

    if (member == NULL)
        return HB_ERR_NOMEM;
    rc = hb_cfg_members(cfg, hostlist, member, NULL, err, errlen);
    if (rc == 0)
        rc = hb_topo_restrict(*topo_p, member, &v, err, (unsigned)errlen);
    free(member);
    if (rc != 0)
        return rc;
    hb_topo_free(*topo_p);
    *topo_p = v;
    return 0;
}

/* --mpi: which calls mca_coll_hibar gives hibar, per operation, size and regime: the table a
 * job started now gets, as Open MPI reads its MCA parameters (mpi/mpi_xover.h:
 * hb_mpi_xover_load: the built-in table, the files of MCA parameters -- where hibar-bench mpi
 * --crossover writes measured crossovers --, the environment), and where each entry comes
 * from. */
static int info_mpi(FILE *f, int json)
{
    hb_mpi_xover_t x;
    hb_mpi_xover_src_t src;
    char a[32], b[32], c[32], err[512];
    int others = 0;

    if (hb_mpi_xover_load(&x, &src, HB_OMPI_SYSCONFDIR, err, sizeof(err)) != 0) {
        fprintf(stderr, "hibar-info: %s\n", err);
        return INFO_EXIT_CONFIG;
    }
    if (json) {
        json_t *root = json_object(), *ops = json_object(), *files = json_array();
        json_object_set_new(root, "force", json_string(hb_mpi_force_name(x.force)));
        json_object_set_new(root, "force_source", json_string(src.name[src.force]));
        for (int op = 0; op < HB_MPI_N_OPS; op++) {
            json_t *e = json_object();
            for (int r = 0; r < HB_MPI_N_REGIMES; r++)
                json_object_set_new(e, hb_mpi_regime_name(r),
                                    json_pack("{s:I,s:I,s:s,s:s}", "min", (json_int_t)x.min[op][r],
                                              "max", (json_int_t)x.max[op][r], "min_source",
                                              src.name[src.of[op][r][0]], "max_source",
                                              src.name[src.of[op][r][1]]));
            json_object_set_new(ops, hb_mpi_op_name(op), e);
        }
        json_object_set_new(root, "bytes", ops);
        for (int i = 2; i < src.n; i++)
            json_array_append_new(files, json_string(src.name[i]));
        json_object_set_new(root, "files", files);
        json_dumpf(root, f, JSON_INDENT(2));
        fputc('\n', f);
        json_decref(root);
        return 0;
    }
    fprintf(f,
            "Open MPI coll component mca_coll_hibar: hibar takes a call of these sizes "
            "(bytes per rank;\nbcast: the buffer), the component below it takes the others. "
            "A communicator\nof one node's ranks follows the \"one node\" column; one "
            "of several nodes' ranks that is not\nthe whole job in its order gets the barrier "
            "only (and with force=hibar the collectives\nof a rank set through the daemons). "
            "force=%s%s%s%s\n",
            hb_mpi_force_name(x.force),
            x.force == HB_MPI_FORCE_HIBAR  ? " (every call hibar can take)"
            : x.force == HB_MPI_FORCE_OMPI ? " (every call to Open MPI)"
                                           : "",
            src.force != HB_MPI_XOVER_SRC_BUILTIN ? ", from " : "",
            src.force != HB_MPI_XOVER_SRC_BUILTIN ? src.name[src.force] : "");
    const char *coll = getenv("OMPI_MCA_coll");
    if (coll != NULL && coll[0] == '^' && strstr(coll, "hibar") != NULL)
        fprintf(f, "OMPI_MCA_coll=%s: the component is off\n", coll);
#ifndef HB_HAVE_OMPI_COLL
    fprintf(f, "(this build has no component: configure found no Open MPI coll headers)\n");
#endif
    fprintf(f, "%-10s %-14s %-14s %-14s %s\n", "operation", "one node", "several nodes",
            "one rank each", "MCA parameters");
    for (int op = 0; op < HB_MPI_N_OPS; op++)
        fprintf(f, "%-10s %-14s %-14s %-14s coll_hibar_%s_%s_node, _nodes, _nodes1\n",
                hb_mpi_op_name(op), hb_mpi_xover_fmt(op, x.min[op][0], x.max[op][0], a, sizeof(a)),
                hb_mpi_xover_fmt(op, x.min[op][1], x.max[op][1], b, sizeof(b)),
                hb_mpi_xover_fmt(op, x.min[op][2], x.max[op][2], c, sizeof(c)), hb_mpi_op_name(op),
                op == HB_MPI_BARRIER ? "max" : "{min,max}");
    /* where each entry comes from */
    for (int op = 0; op < HB_MPI_N_OPS; op++)
        for (int r = 0; r < HB_MPI_N_REGIMES; r++)
            for (int bd = 0; bd < 2; bd++) {
                int i = src.of[op][r][bd];
                if (i == HB_MPI_XOVER_SRC_BUILTIN || (op == HB_MPI_BARRIER && bd == 0))
                    continue;
                if (!others)
                    fprintf(f, "Not from the built-in table:\n");
                others = 1;
                fprintf(f, "  coll_hibar_%s_%s_%s = %ld  (%s%s)\n", hb_mpi_op_name(op),
                        bd ? "max" : "min", hb_mpi_regime_name(r), bd ? x.max[op][r] : x.min[op][r],
                        i == HB_MPI_XOVER_SRC_ENV ? "" : "file ", src.name[i]);
            }
    fprintf(f,
            "%s the built-in table (mpi/mpi_xover.c, measured on hibar's test beds: the "
            "2-core development machine, a 16-core one).\n",
            others ? "The others:" : "Every entry:");
    fprintf(f, "Files of MCA parameters read:");
    for (int i = 2; i < src.n; i++)
        fprintf(f, " %s", src.name[i]);
    fprintf(f,
            "%s\n(measure this machine's: hibar-bench mpi --crossover FILE; "
            "ompi_info --param coll hibar --level 9 shows what Open MPI reads)\n",
            src.n > 2 ? "" : " none");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"t-ib", required_argument, NULL, 'I'},
                                             {"t-sr", required_argument, NULL, 'S'},
                                             {"model", no_argument, NULL, 'M'},
                                             {"size", required_argument, NULL, 'z'},
                                             {"members", required_argument, NULL, 'm'},
                                             {"verbose", no_argument, NULL, 'v'},
                                             {"version", no_argument, NULL, 'V'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"all", no_argument, NULL, 'a'},
                                             {"mpi", no_argument, NULL, 'P'},
                                             {NULL, 0, NULL, 0}};
    info_opts_t o = {0};
    hb_cfg_t *cfg = NULL;
    hb_topo_t *topo = NULL;
    hb_topo_spec_t spec;
    char err[HB_CFG_ERRLEN] = "";
    int ch, verbose = 0, rc;

    hb_log_init_from_env();
    hb_log_set_ident("hibar-info");
    o.over = calloc((size_t)argc, sizeof(*o.over));
    if (o.over == NULL) {
        fprintf(stderr, "hibar-info: out of memory\n");
        return 1;
    }
    while ((ch = getopt_long(argc, argv, "ac:jo:vVh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o.config = optarg;
            break;
        case 'j':
            o.json = 1;
            break;
        case 'o':
            o.over[o.n_over++] = optarg;
            break;
        case 'I':
            if (info_parse_us("--t-ib", optarg, &o.t_ib) != 0)
                goto out_usage;
            o.have_ib = 1;
            break;
        case 'S':
            if (info_parse_us("--t-sr", optarg, &o.t_sr) != 0)
                goto out_usage;
            o.have_sr = 1;
            break;
        case 'M':
            o.model = 1;
            break;
        case 'a':
            o.all = 1;
            break;
        case 'P':
            o.mpi = 1;
            break;
        case 'z':
            if (info_sizes(optarg, &o) != 0)
                goto out_usage;
            break;
        case 'm':
            o.members = optarg;
            break;
        case 'v':
            verbose++;
            break;
        case 'V':
            free(o.over);
            return hb_cli_version("hibar-info");
        case 'h':
            info_usage(stdout);
            free(o.over);
            return 0;
        default:
            info_usage(stderr);
            goto out_usage;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hibar-info: unexpected argument '%s'\n", argv[optind]);
        goto out_usage;
    }
    if (o.have_ib != o.have_sr) {
        fprintf(stderr, "hibar-info: --t-ib and --t-sr go together\n");
        goto out_usage;
    }
    if (verbose > 0)
        hb_log_set_level(verbose > 1 ? HB_LOG_DEBUG : HB_LOG_INFO);
    if (o.mpi) { /* no cluster needed */
        free(o.over);
        return info_mpi(stdout, o.json);
    }

    rc = hb_cfg_load(o.config, o.over, o.n_over, &cfg, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "hibar-info: %s\n", err[0] != '\0' ? err : hb_status_str(rc));
        free(o.over);
        return rc == HB_ERR_CONFIG || rc == HB_ERR_IO ? INFO_EXIT_CONFIG : 1;
    }
    rc = hb_cfg_topo_spec(cfg, &spec);
    if (rc == 0)
        rc = hb_topo_build(&spec, &topo, err, sizeof(err));
    if (rc == 0 && o.members != NULL)
        rc = info_view(cfg, o.members, &topo, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "hibar-info: topology: %s\n", err[0] != '\0' ? err : hb_status_str(rc));
        hb_topo_free(topo);
        hb_cfg_free(cfg);
        free(o.over);
        return rc == HB_ERR_CONFIG ? INFO_EXIT_CONFIG : 1;
    }
    if (o.all)
        info_all(stdout, cfg, o.json);
    else if (o.model)
        info_model(stdout, cfg, &o);
    else if (o.json)
        info_json(stdout, cfg, topo, &o);
    else
        info_text(stdout, cfg, topo, &o);
    hb_topo_free(topo);
    hb_cfg_free(cfg);
    free(o.over);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        hb_log_error("writing the output failed: %m");
        return 1;
    }
    return 0;

out_usage:
    free(o.over);
    return INFO_EXIT_CONFIG;
}
