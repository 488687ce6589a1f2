/* test_cfg_file.c: CUnit tests of hostlists, the YAML config, env and flag overrides. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "hb_status.h"
#include "test_cfg.h"

static const char *src_path(const char *rel);

/* The entry of key in cfg (fails the test if absent). */
static hb_cfg_entry_t schema_entry(const hb_cfg_t *cfg, const char *key)
{
    hb_cfg_entry_t e;

    for (size_t i = 0; i < hb_cfg_nkeys(); i++)
        if (hb_cfg_entry(cfg, i, &e) == 0 && strcmp(e.key, key) == 0)
            return e;
    CU_FAIL("key not in the schema");
    memset(&e, 0, sizeof(e));
    return e;
}

static void test_schema(void)
{
    const char *over[] = {"coll.alg=binomial", "nbar.hwloc=off"};
    char err[HB_CFG_ERRLEN], want[4200];
    hb_cfg_t *cfg = NULL;
    hb_cfg_entry_t e;

    unsetenv("HIBAR_COLL_ALG");
    unsetenv("HIBAR_NBAR_HWLOC");
    setenv("HIBAR_WAIT_SLICE_MS", "7", 1);
    CU_ASSERT_EQUAL_FATAL(
        hb_cfg_load(src_path("examples/scmd-30.yaml"), over, 2, &cfg, err, sizeof(err)), 0);
    e = schema_entry(cfg, "port");
    CU_ASSERT_STRING_EQUAL(e.env, "HIBAR_PORT");
    CU_ASSERT(e.is_default);
    CU_ASSERT_STRING_EQUAL(e.source, "default");
    e = schema_entry(cfg, "protocol");
    snprintf(want, sizeof(want), "%s:", src_path("examples/scmd-30.yaml"));
    CU_ASSERT_NSTRING_EQUAL(e.source, want, strlen(want)); /* FILE:LINE */
    CU_ASSERT_PTR_NULL(strchr(e.source + strlen(want), ':'));
    e = schema_entry(cfg, "wait.slice_ms");
    CU_ASSERT_STRING_EQUAL(e.value, "7");
    CU_ASSERT_STRING_EQUAL(e.source, "env HIBAR_WAIT_SLICE_MS");
    e = schema_entry(cfg, "coll.alg");
    CU_ASSERT_STRING_EQUAL(e.value, "binomial");
    CU_ASSERT_STRING_EQUAL(e.source, "-o");
    CU_ASSERT(e.runtime);
    /* exported for the code that reads it, as its reader expects it */
    CU_ASSERT_STRING_EQUAL(getenv("HIBAR_COLL_ALG"), "binomial");
    CU_ASSERT_STRING_EQUAL(getenv("HIBAR_NBAR_HWLOC"), "0");
    e = schema_entry(cfg, "nbar.hwloc");
    CU_ASSERT_STRING_EQUAL(e.value, "off");
    e = schema_entry(cfg, "nodes");
    CU_ASSERT_NSTRING_EQUAL(e.value, "n00,n01", 7);
    hb_cfg_free(cfg);
    /* a value the schema refuses, whatever the source */
    CU_ASSERT_EQUAL(hb_cfg_set(cfg = NULL, "x", "y", err, sizeof(err)), HB_ERR_INVAL);
    CU_ASSERT_EQUAL_FATAL(hb_cfg_create(&cfg), 0);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "coll.alg", "fastest", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "coll.alg: expected one of auto|flat"));
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "cma", "maybe", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "log", "loud", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "boot.timeout", "601", err, sizeof(err)), HB_ERR_CONFIG);
    hb_cfg_free(cfg);
    unsetenv("HIBAR_WAIT_SLICE_MS");
    unsetenv("HIBAR_COLL_ALG");
    unsetenv("HIBAR_NBAR_HWLOC");
    /* the variables hibar knows */
    CU_ASSERT(hb_cfg_env_known("HIBAR_FANOUT"));
    CU_ASSERT(hb_cfg_env_known("HIBAR_LINKS_WAN_LATENCY_US"));
    CU_ASSERT(hb_cfg_env_known("HIBAR_SOCKET"));
    CU_ASSERT(hb_cfg_env_known("HIBAR_TESTBED_CONFIG"));
    CU_ASSERT(!hb_cfg_env_known("HIBAR_FANUOT"));
    CU_ASSERT(!hb_cfg_env_known("HIBAR_"));
}

/* SIGHUP: runtime keys take the file's new values, the others keep theirs. */
static void test_reload(void)
{
    char path[] = "/tmp/hibar-test-reload-XXXXXX", err[HB_CFG_ERRLEN];
    hb_cfg_t *cfg = NULL;
    int fd = mkstemp(path);
    FILE *f;

    CU_ASSERT_FATAL(fd >= 0);
    f = fdopen(fd, "w");
    fprintf(f, "fanout: 2\ncoll:\n  alg: flat\n");
    fclose(f);
    unsetenv("HIBAR_COLL_ALG");
    unsetenv("HIBAR_FANOUT");
    CU_ASSERT_EQUAL_FATAL(hb_cfg_load(path, NULL, 0, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(getenv("HIBAR_COLL_ALG"), "flat");
    f = fopen(path, "w");
    fprintf(f, "fanout: 3\ncoll:\n  alg: binomial\n");
    fclose(f);
    CU_ASSERT_EQUAL(hb_cfg_reload(cfg, path, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->fanout, 2);                                         /* at the next start */
    CU_ASSERT_STRING_EQUAL(schema_entry(cfg, "coll.alg").value, "binomial"); /* applied */
    CU_ASSERT_STRING_EQUAL(getenv("HIBAR_COLL_ALG"), "binomial");
    f = fopen(path, "w");
    fprintf(f, "fanout: 2\n");
    fclose(f);
    CU_ASSERT_EQUAL(hb_cfg_reload(cfg, path, NULL, 0, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NULL(getenv("HIBAR_COLL_ALG")); /* back to the reader's default */
    CU_ASSERT_STRING_EQUAL(schema_entry(cfg, "coll.alg").value, "auto");
    f = fopen(path, "w");
    fprintf(f, "fanout: many\n");
    fclose(f);
    CU_ASSERT_EQUAL(hb_cfg_reload(cfg, path, NULL, 0, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    hb_cfg_free(cfg);
    unlink(path);
}

/* Path of a file below the source tree (tests run from the build tree). */
static const char *src_path(const char *rel)
{
    static char buf[4096];
    const char *top = getenv("top_srcdir");

    snprintf(buf, sizeof(buf), "%s/%s", top != NULL ? top : HB_TEST_TOP_SRCDIR, rel);
    return buf;
}

/* Expand expr and compare with the n names of want. */
static void check_hl(const char *expr, const char *const *want, uint32_t n)
{
    char **names = NULL, err[HB_CFG_ERRLEN];
    uint32_t got = 0, i;

    CU_ASSERT_EQUAL_FATAL(hb_cfg_hostlist_expand(expr, &names, &got, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(got, n);
    for (i = 0; i < n && i < got; i++)
        CU_ASSERT_STRING_EQUAL(names[i], want[i]);
    hb_cfg_hostlist_free(names, got);
}

static void test_hostlist(void)
{
    static const char *const a[] = {"n000", "n001", "n002"};
    static const char *const b[] = {"n1", "n2", "n3", "n7"};
    static const char *const c[] = {"x", "y3-eth", "y4-eth", "z"};
    static const char *const d[] = {"a1b0", "a1b1", "a2b0", "a2b1"};
    static const char *const e[] = {"n8", "n9", "n10", "n08", "n09", "n10"};
    static const char *const f[] = {"host.example.org", "h_1"};
    char **names = NULL, err[HB_CFG_ERRLEN];
    uint32_t n = 0, i;

    check_hl("n[000-002]", a, 3);
    check_hl("n[1-3,7]", b, 4);
    check_hl("x, y[3-4]-eth ,z", c, 4);
    check_hl("a[1-2]b[0-1]", d, 4);
    check_hl("n[8-10],n[08-10]", e, 6);
    check_hl("host.example.org,h_1", f, 2);
    CU_ASSERT_EQUAL(hb_cfg_hostlist_expand("n[000-029]", &names, &n, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(n, 30);
    if (n == 30) {
        CU_ASSERT_STRING_EQUAL(names[0], "n000");
        CU_ASSERT_STRING_EQUAL(names[29], "n029");
    }
    hb_cfg_hostlist_free(names, n);

    {
        static const char *const bad[] = {
            "",      "n[",     "n[1-",     "n[3-1]", "n[1-2", "n]", "n[a-b]",  "a,,b",
            "n[1,]", "n[[1]]", "n[1-2]x]", "a b",    "n[]",   ",",  "n[1--2]", "n[0-9999999999]"};
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            names = NULL;
            err[0] = '\0';
            CU_ASSERT_EQUAL(hb_cfg_hostlist_expand(bad[i], &names, &n, err, sizeof(err)),
                            HB_ERR_CONFIG);
            CU_ASSERT_PTR_NULL(names);
            /* the message names the expression */
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "hostlist"));
            CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i]));
        }
    }
    /* too many names */
    names = NULL;
    CU_ASSERT_EQUAL(hb_cfg_hostlist_expand("n[0-999][0-9999]", &names, &n, err, sizeof(err)),
                    HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "too many"));
}

static void test_defaults(void)
{
    hb_cfg_t *cfg = NULL;
    char err[HB_CFG_ERRLEN], want[64];
    hb_topo_spec_t spec;

    unsetenv("HIBAR_CONFIG");
    CU_ASSERT_EQUAL_FATAL(hb_cfg_load(NULL, NULL, 0, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NULL(cfg->file);
    CU_ASSERT_STRING_EQUAL(cfg->cluster, "hibar");
    CU_ASSERT_EQUAL(cfg->n_nodes, 1);
    CU_ASSERT_EQUAL(cfg->n_chassis, 1);
    CU_ASSERT_EQUAL(cfg->n_sites, 1);
    CU_ASSERT_STRING_EQUAL(cfg->nodes[0].address, "127.0.0.1");
    CU_ASSERT_EQUAL(cfg->nodes[0].port, 0);
    CU_ASSERT_STRING_EQUAL(cfg->hwbarrier, "auto");
    CU_ASSERT_EQUAL(cfg->protocol, HB_CFG_PROTO_SCMD);
    CU_ASSERT_EQUAL(cfg->bootstrap, HB_CFG_BOOT_LOCAL);
    CU_ASSERT_EQUAL(cfg->data_plane, HB_CFG_DATA_PLAIN);
    CU_ASSERT_EQUAL(cfg->fanout, 0);
    CU_ASSERT_EQUAL(cfg->heartbeat_interval_ms, 500);
    CU_ASSERT_EQUAL(cfg->heartbeat_timeout_ms, 2000);
    CU_ASSERT_EQUAL(cfg->barrier_timeout_ms, 30000);
    CU_ASSERT_PTR_NULL(cfg->key_file);
    CU_ASSERT_PTR_NULL(cfg->scic_uio);
    snprintf(want, sizeof(want), "/tmp/hibar-%u-hibar", (unsigned)getuid());
    CU_ASSERT_STRING_EQUAL(cfg->run_dir, want);
    CU_ASSERT_EQUAL(hb_cfg_topo_spec(cfg, &spec), 0);
    CU_ASSERT_EQUAL(spec.n_nodes, 1);
    hb_cfg_free(cfg);

    /* An explicit {} is the defaults too; not finalized → no spec. */
    CU_ASSERT_EQUAL_FATAL(hb_cfg_create(&cfg), 0);
    CU_ASSERT_EQUAL(
        hb_cfg_read_file(cfg, src_path("tests/configs/good-defaults.yaml"), err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_cfg_topo_spec(cfg, &spec), HB_ERR_NOT_INIT);
    CU_ASSERT_EQUAL(hb_cfg_finalize(cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->n_nodes, 1);
    hb_cfg_free(cfg);
}

static void test_full_file(void)
{
    hb_cfg_t *cfg = NULL;
    char err[HB_CFG_ERRLEN] = "";
    uint32_t id = 99;
    hb_topo_spec_t spec;

    CU_ASSERT_EQUAL_FATAL(
        hb_cfg_load(src_path("tests/configs/good-full.yaml"), NULL, 0, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_STRING_EQUAL(cfg->cluster, "full-1");
    CU_ASSERT_EQUAL_FATAL(cfg->n_nodes, 7);
    CU_ASSERT_STRING_EQUAL(cfg->nodes[0].name, "c1");
    CU_ASSERT_STRING_EQUAL(cfg->nodes[1].address, "10.0.0.1");
    CU_ASSERT_EQUAL(cfg->nodes[0].port, 7000);
    CU_ASSERT_EQUAL(cfg->nodes[1].port, 7001);
    CU_ASSERT_STRING_EQUAL(cfg->nodes[2].name, "x01");
    CU_ASSERT_STRING_EQUAL(cfg->nodes[2].address, "127.0.0.1");
    CU_ASSERT_EQUAL(cfg->nodes[2].port, 6002); /* base port + node id */
    CU_ASSERT_STRING_EQUAL(cfg->nodes[5].name, "x07");
    CU_ASSERT_STRING_EQUAL(cfg->nodes[6].name, "y");
    CU_ASSERT_EQUAL(cfg->n_chassis, 3);
    CU_ASSERT_EQUAL(cfg->nodes[6].chassis, 2);
    CU_ASSERT_EQUAL(cfg->chassis_nodes[cfg->chassis_start[2]], 5); /* x07 is the Center */
    CU_ASSERT_EQUAL(cfg->n_sites, 2);
    CU_ASSERT_STRING_EQUAL(cfg->site_names[1], "s1");
    CU_ASSERT_EQUAL(cfg->nodes[4].site, 0);
    CU_ASSERT_EQUAL(cfg->nodes[5].site, 1);
    CU_ASSERT_STRING_EQUAL(cfg->hwbarrier, "shm");
    CU_ASSERT_EQUAL(cfg->protocol, HB_CFG_PROTO_TREE);
    CU_ASSERT_EQUAL(cfg->fanout, 2);
    CU_ASSERT_EQUAL(cfg->bootstrap, HB_CFG_BOOT_STATIC);
    CU_ASSERT_EQUAL(cfg->heartbeat_interval_ms, 100);
    CU_ASSERT_EQUAL(cfg->heartbeat_timeout_ms, 900);
    CU_ASSERT_EQUAL(cfg->barrier_timeout_ms, 0);
    CU_ASSERT_STRING_EQUAL(cfg->key_file, "/etc/hibar/curve.key");
    CU_ASSERT_STRING_EQUAL(cfg->run_dir, "/tmp/hibar-test-full");
    CU_ASSERT_DOUBLE_EQUAL(cfg->links.lan_bw_mbps, 10000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(cfg->links.lan_lat_us, 2.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(cfg->links.wan_lane_bw_mbps, 250, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(cfg->links.wan_total_bw_mbps, 1000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(cfg->links.wan_lat_us, 10000, 1e-9);
    CU_ASSERT_EQUAL(cfg->scic_vendor, 0x1234);
    CU_ASSERT_EQUAL(cfg->scic_device, 0xab);
    CU_ASSERT_STRING_EQUAL(cfg->scic_uio, "/dev/uio3");
    CU_ASSERT_EQUAL(hb_cfg_node_find(cfg, "x03", &id), 0);
    CU_ASSERT_EQUAL(id, 4);
    CU_ASSERT_EQUAL(hb_cfg_node_find(cfg, "nope", &id), HB_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(hb_cfg_topo_spec(cfg, &spec), 0);
    CU_ASSERT_EQUAL(spec.n_chassis, 3);
    CU_ASSERT_EQUAL(spec.fanout, 2);
    CU_ASSERT_EQUAL(spec.site_of[6], 1);
    CU_ASSERT_STRING_EQUAL(hb_cfg_protocol_name(cfg->protocol), "tree");
    CU_ASSERT_STRING_EQUAL(hb_cfg_bootstrap_name(cfg->bootstrap), "static");
    hb_cfg_free(cfg);
}

/* The examples derive the topologies the issue describes. */
static void test_examples(void)
{
    hb_cfg_t *cfg = NULL;
    hb_topo_t *t = NULL;
    hb_topo_spec_t spec;
    char err[HB_CFG_ERRLEN] = "";

    CU_ASSERT_EQUAL_FATAL(
        hb_cfg_load(src_path("examples/scmd-30.yaml"), NULL, 0, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_cfg_topo_spec(cfg, &spec), 0);
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->n_chassis, 10);
    CU_ASSERT_EQUAL(t->chassis[0].n_children, 3);
    CU_ASSERT_EQUAL(t->L, 1);
    CU_ASSERT_STRING_EQUAL(cfg->nodes[29].name, "n29");
    hb_topo_free(t);
    hb_cfg_free(cfg);

    CU_ASSERT_EQUAL_FATAL(
        hb_cfg_load(src_path("examples/two-site.yaml"), NULL, 0, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->n_nodes, 16);
    CU_ASSERT_EQUAL(cfg->n_sites, 2);
    CU_ASSERT_EQUAL(cfg->n_chassis, 4);
    CU_ASSERT_EQUAL(cfg->nodes[8].site, 1);
    CU_ASSERT_EQUAL(hb_cfg_topo_spec(cfg, &spec), 0);
    CU_ASSERT_EQUAL_FATAL(hb_topo_build(&spec, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(t->n_sites, 2);
    CU_ASSERT_EQUAL(t->chassis[2].site, 1);
    hb_topo_free(t);
    hb_cfg_free(cfg);

    CU_ASSERT_EQUAL_FATAL(
        hb_cfg_load(src_path("examples/local.yaml"), NULL, 0, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->n_nodes, 12);
    CU_ASSERT_EQUAL(cfg->n_sites, 2);
    CU_ASSERT_EQUAL(cfg->n_chassis, 4);
    CU_ASSERT_EQUAL(cfg->bootstrap, HB_CFG_BOOT_LOCAL);
    hb_cfg_free(cfg);
}

/* Each invalid fixture: the one message names the file, line and column, and the key/value. */
static void test_bad_files(void)
{
    static const struct {
        const char *file, *where, *what;
        int rc;
    } cases[] = {
        {"bad-unknown-key.yaml", ":3:1: ", "unknown key 'fanuot'", HB_ERR_CONFIG},
        {"bad-wrong-type.yaml", ":2:9: ", "fanout: expected an unsigned integer", HB_ERR_CONFIG},
        {"bad-wrong-type-map.yaml", ":3:3: ", "'protocol'", HB_ERR_CONFIG},
        {"bad-enum.yaml", ":2:11: ", "'ring'", HB_ERR_CONFIG},
        {"bad-hostlist.yaml", ":2:8: ", "malformed hostlist", HB_ERR_CONFIG},
        {"bad-dup-node.yaml", ":3:5: ", "duplicate node 'n2'", HB_ERR_CONFIG},
        {"bad-two-chassis.yaml", ":4:5: ", "node in two chassis 'n2'", HB_ERR_CONFIG},
        {"bad-two-sites.yaml", ":6:12: ", "node in two sites 'n3'", HB_ERR_CONFIG},
        {"bad-chassis-33.yaml", ":2:10: ", "mask width (32) '33'", HB_ERR_CONFIG},
        {"bad-chassis-list-33.yaml", ":3:5: ", "mask width (32) 'n[00-32]'", HB_ERR_CONFIG},
        {"bad-empty-nodes.yaml", ":2:1: ", "empty node list 'nodes'", HB_ERR_CONFIG},
        {"bad-empty.yaml", ":1:1: ", "empty file", HB_ERR_CONFIG},
        {"bad-syntax.yaml", ":2:", "YAML syntax error", HB_ERR_CONFIG},
        {"bad-dup-key.yaml", ":3:1: ", "duplicate key 'fanout'", HB_ERR_CONFIG},
        {"bad-unknown-chassis-node.yaml", ":4:5: ", "unknown node (not in nodes) 'n6'",
         HB_ERR_CONFIG},
        {"bad-nested-unknown.yaml", ":4:5: ", "unknown key 'links.lan.bw'", HB_ERR_CONFIG},
        {"bad-chassis-two-sites.yaml", ":2:10: ", "spans two sites", HB_ERR_CONFIG},
        {"bad-node-no-chassis.yaml", ":3:3: ", "node in no chassis 'n3'", HB_ERR_CONFIG},
        {"bad-negative.yaml", ":4:17: ", "'-4'", HB_ERR_CONFIG},
        {"bad-top-list.yaml", ":1:1: ", "top level", HB_ERR_CONFIG},
        {"bad-group-scalar.yaml", ":2:12: ", "expected a mapping, got '5'", HB_ERR_CONFIG},
        {"bad-node-key.yaml", ":3:5: ", "unknown key 'adress'", HB_ERR_CONFIG},
        {"bad-port-overflow.yaml", ":2:11: ", "past 65535 for node 'a6'", HB_ERR_CONFIG},
        {"bad-site-no-name.yaml", ":3:5: ", "site without a name 'name'", HB_ERR_CONFIG},
        {"bad-node-no-site.yaml", ":2:1: ", "node in no site 'n5'", HB_ERR_CONFIG},
        {"does-not-exist.yaml", ":0:0: ", "cannot read file", HB_ERR_IO},
        {"", ":0:0: ", "not a regular file", HB_ERR_IO},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[4096], prefix[4200], err[HB_CFG_ERRLEN] = "";
        hb_cfg_t *cfg = (hb_cfg_t *)&err; /* must stay untouched on error */
        int rc;

        snprintf(path, sizeof(path), "%s", src_path("tests/configs/"));
        strncat(path, cases[i].file, sizeof(path) - strlen(path) - 1);
        rc = hb_cfg_load(path, NULL, 0, &cfg, err, sizeof(err));
        CU_ASSERT_EQUAL(rc, cases[i].rc);
        CU_ASSERT_PTR_EQUAL(cfg, (hb_cfg_t *)&err);
        snprintf(prefix, sizeof(prefix), "%s%s", path, cases[i].where);
        if (strncmp(err, prefix, strlen(prefix)) != 0 || strstr(err, cases[i].what) == NULL) {
            fprintf(stderr, "\n  %s: got \"%s\"\n  want prefix \"%s\" and \"%s\"\n", cases[i].file,
                    err, prefix, cases[i].what);
            CU_FAIL("config error message");
        }
        /* one line */
        CU_ASSERT_PTR_NULL(strchr(err, '\n'));
        if (rc == 0)
            hb_cfg_free(cfg);
    }
}

static void test_env_and_flags(void)
{
    hb_cfg_t *cfg = NULL;
    char err[HB_CFG_ERRLEN] = "";
    const char *over[] = {"protocol=tree", "links.wan.latency_us=123.5", "chassis=2",
                          "data_plane=curve"};

    unsetenv("HIBAR_CONFIG");
    setenv("HIBAR_FANOUT", "4", 1);
    setenv("HIBAR_PROTOCOL", "scmd", 1);
    setenv("HIBAR_HEARTBEAT_TIMEOUT_MS", "777", 1);
    setenv("HIBAR_NODES", "m[0-7]", 1);
    setenv("HIBAR_LOG", "debug", 1); /* not a key: ignored */
    /* file < env < flags */
    CU_ASSERT_EQUAL_FATAL(
        hb_cfg_load(src_path("examples/scmd-30.yaml"), over, 4, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->fanout, 4); /* env over the file's 0 */
    CU_ASSERT_EQUAL(cfg->data_plane, HB_CFG_DATA_CURVE);
    CU_ASSERT_STRING_EQUAL(hb_cfg_data_plane_name(cfg->data_plane), "curve");
    CU_ASSERT_EQUAL(cfg->protocol, HB_CFG_PROTO_TREE); /* flag over env */
    CU_ASSERT_EQUAL(cfg->heartbeat_timeout_ms, 777);   /* env */
    CU_ASSERT_EQUAL(cfg->heartbeat_interval_ms, 1000); /* file */
    CU_ASSERT_DOUBLE_EQUAL(cfg->links.wan_lat_us, 123.5, 1e-9);
    CU_ASSERT_EQUAL(cfg->n_nodes, 8);
    CU_ASSERT_EQUAL(cfg->n_chassis, 4);
    CU_ASSERT_STRING_EQUAL(cfg->nodes[7].name, "m7");
    hb_cfg_free(cfg);
    unsetenv("HIBAR_NODES");

    /* HIBAR_CONFIG names the file when none is given. */
    setenv("HIBAR_CONFIG", src_path("examples/two-site.yaml"), 1);
    CU_ASSERT_EQUAL_FATAL(hb_cfg_load(NULL, NULL, 0, &cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->n_nodes, 16);
    hb_cfg_free(cfg);
    unsetenv("HIBAR_CONFIG");

    /* A bad environment value names the variable. */
    setenv("HIBAR_FANOUT", "x", 1);
    cfg = NULL;
    CU_ASSERT_EQUAL(hb_cfg_load(NULL, NULL, 0, &cfg, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NULL(cfg);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "environment HIBAR_FANOUT"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "'x'"));
    unsetenv("HIBAR_FANOUT");
    unsetenv("HIBAR_PROTOCOL");
    unsetenv("HIBAR_HEARTBEAT_TIMEOUT_MS");
    unsetenv("HIBAR_LOG");

    /* Flags: unknown key, bad value, bad form; explicit chassis and site lists. */
    CU_ASSERT_EQUAL_FATAL(hb_cfg_create(&cfg), 0);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "fanuot", "1", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown key 'fanuot'"));
    CU_ASSERT_EQUAL(hb_cfg_set_kv(cfg, "port=70000", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "override port=70000"));
    CU_ASSERT_EQUAL(hb_cfg_set_kv(cfg, "noequals", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "hwbarrier", "magic", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "cluster", "bad name!", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "nodes", "n[1-", err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "malformed hostlist"));
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "nodes", "n[0-5]", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "chassis", "n[3-5];n[0-2]", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "sites", "east=n[3-5];west=n[0-2]", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "key_file", "", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL_FATAL(hb_cfg_finalize(cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->n_chassis, 2);
    CU_ASSERT_EQUAL(cfg->chassis_nodes[0], 3);
    CU_ASSERT_EQUAL(cfg->nodes[0].chassis, 1);
    CU_ASSERT_STRING_EQUAL(cfg->site_names[cfg->nodes[4].site], "east");
    /* change and finalize again */
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "chassis", "n[0-1];n[2-5]", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_cfg_finalize(cfg, err, sizeof(err)), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "spans two sites"));
    CU_ASSERT_EQUAL(hb_cfg_set(cfg, "sites", "all=n[0-5]", err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(hb_cfg_finalize(cfg, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(cfg->chassis_start[1], 2);
    hb_cfg_free(cfg);
}

/* Without chassis, nodes sharing an address form one chassis. */
static void test_default_chassis(void)
{
    hb_cfg_t *cfg = NULL;
    char err[HB_CFG_ERRLEN] = "";
    const char *over[] = {"nodes=n[0-39]"};

    CU_ASSERT_EQUAL_FATAL(hb_cfg_load(NULL, over, 1, &cfg, err, sizeof(err)), 0);
    /* all on 127.0.0.1: cut at the mask width */
    CU_ASSERT_EQUAL(cfg->n_chassis, 2);
    CU_ASSERT_EQUAL(cfg->chassis_start[1], 32);
    hb_cfg_free(cfg);
}

int hb_test_cfg_register(void)
{
    CU_pSuite s = CU_add_suite("cfg", NULL, NULL);

    if (s == NULL)
        return CU_get_error();
    if (CU_add_test(s, "hostlist expansion", test_hostlist) == NULL ||
        CU_add_test(s, "defaults", test_defaults) == NULL ||
        CU_add_test(s, "every key from a file", test_full_file) == NULL ||
        CU_add_test(s, "examples", test_examples) == NULL ||
        CU_add_test(s, "invalid files", test_bad_files) == NULL ||
        CU_add_test(s, "env and flag overrides", test_env_and_flags) == NULL ||
        CU_add_test(s, "default chassis", test_default_chassis) == NULL ||
        CU_add_test(s, "schema: values and sources", test_schema) == NULL ||
        CU_add_test(s, "schema: reload", test_reload) == NULL)
        return CU_get_error();
    return 0;
}
