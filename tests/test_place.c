/* test_place.c: CUnit tests of placement (config/place.c): nodes, slots, rank maps, errors. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "hb_status.h"
#include "place.h"
#include "test_cfg.h"

static hb_cfg_t *g_cfg; /* examples/local.yaml: n[00-11], chassis of 3 */

static int place_init(void)
{
    char err[HB_CFG_ERRLEN];

    return hb_cfg_load(HB_TEST_TOP_SRCDIR "/examples/local.yaml", NULL, 0, &g_cfg, err,
                       sizeof(err)) == 0
               ? 0
               : -1;
}

static int place_clean(void)
{
    hb_cfg_free(g_cfg);
    return 0;
}

/* Place req; on success the map as node numbers "0 0 1 1 ..." in buf. */
static int try_place(const hb_place_req_t *req, hb_place_t *p, char *buf, size_t len, char *err)
{
    int rc = hb_place(g_cfg, req, p, err, 256);
    size_t o = 0;

    buf[0] = '\0';
    for (uint32_t r = 0; rc == 0 && r < p->n && o < len; r++)
        o += (size_t)snprintf(buf + o, len - o, "%s%u", r ? " " : "", p->map[r]);
    return rc;
}

static void test_host_list(void)
{
    hb_place_req_t req = {.n = 8, .hosts = "n[03-05,08]"};
    hb_place_t p;
    char map[256], err[256];

    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "3 3 4 4 5 5 8 8");
    CU_ASSERT_EQUAL(p.n_members, 4);
    CU_ASSERT(p.member[3] && p.member[8] && !p.member[0] && !p.member[6]);
    CU_ASSERT_STRING_EQUAL(p.source, "--host");
    hb_place_free(&p);
    /* 6 ranks on 4 nodes: the first two get one more */
    req.n = 6;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "3 3 4 4 5 8");
    hb_place_free(&p);
    /* fewer ranks than nodes: the rest are no members */
    req.n = 2;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "3 4");
    CU_ASSERT_EQUAL(p.n_members, 2);
    hb_place_free(&p);
    /* --per-node fills in order */
    req.n = 5;
    req.per_node = 2;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "3 3 4 4 5");
    hb_place_free(&p);
    /* by chassis: a chassis' ranks dealt round-robin over its member nodes */
    req.per_node = 0;
    req.n = 8;
    req.by_chassis = 1;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "3 4 5 3 4 5 8 8");
    hb_place_free(&p);
}

static void test_cluster_default(void)
{
    hb_place_req_t req = {.n = 24};
    hb_place_t p;
    char map[512], err[256];

    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_EQUAL(p.n_members, 12);
    CU_ASSERT_STRING_EQUAL(p.source, "the cluster");
    hb_place_free(&p);
    /* -n 4: the first four nodes, a rank each (hibar-run -n 4 on 12 nodes) */
    req.n = 4;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "0 1 2 3");
    hb_place_free(&p);
    /* -n 6 --per-node 2: three nodes */
    req.n = 6;
    req.per_node = 2;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "0 0 1 1 2 2");
    CU_ASSERT_EQUAL(p.n_members, 3);
    hb_place_free(&p);
    /* more than the cluster holds with --per-node */
    req.n = 25;
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "25 ranks do not fit"));
    /* no -n and nothing bounds the slots */
    req.n = 0;
    req.per_node = 0;
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "give -n"));
}

/* Other jobs run on some nodes: the default placement takes the free ones first. */
static void test_cluster_busy(void)
{
    uint8_t busy[12] = {1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    hb_place_req_t req = {.n = 4, .busy = busy};
    hb_place_t p;
    char map[512], err[256];

    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "2 4 5 6");
    hb_place_free(&p);
    /* more nodes than are free: the busy ones too, still in node order */
    memset(busy, 1, sizeof(busy));
    busy[7] = 0;
    req.n = 3;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "0 1 7");
    hb_place_free(&p);
    /* a host list is taken as given, busy or not */
    req.hosts = "n[00-01]";
    req.n = 2;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "0 1");
    hb_place_free(&p);
}

static void test_slurm(void)
{
    hb_place_req_t req = {.slurm_nodes = "n[06-08]", .slurm_tasks = "2(x2),1"};
    hb_place_t p;
    char map[256], err[256];

    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "6 6 7 7 8");
    CU_ASSERT_STRING_EQUAL(p.source, "the Slurm allocation");
    hb_place_free(&p);
    /* SLURM_NTASKS_PER_NODE: one count for all; -n below the slots */
    req.slurm_tasks = "2";
    req.n = 3;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "6 6 7");
    CU_ASSERT_EQUAL(p.n_members, 2);
    hb_place_free(&p);
    /* --host wins over the allocation */
    req.hosts = "n00";
    req.n = 1;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "0");
    hb_place_free(&p);
    req.hosts = NULL;
    /* more ranks than tasks: spread over the allocation (sbatch -N 3, -n 7); --per-node bounds */
    req.n = 7;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "6 6 6 7 7 8 8");
    hb_place_free(&p);
    req.per_node = 2;
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "6 slots (--per-node)"));
    req.per_node = 0;
    /* an allocation the cluster does not hold: the cluster's nodes, with a note */
    req.slurm_nodes = "node[1-3]";
    req.n = 2;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "0 1");
    CU_ASSERT_STRING_EQUAL(p.source, "the cluster");
    CU_ASSERT_PTR_NOT_NULL(strstr(p.note, "unknown node 'node1' in the Slurm allocation"));
    hb_place_free(&p);
    req.slurm_nodes = "n[06-08]";
    req.n = 0;
    req.slurm_tasks = "2(x";
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "malformed"));
    req.slurm_tasks = "2,2";
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cover 2 of its 3"));
}

static void test_hostfile(void)
{
    char path[] = "/tmp/hibar-place-XXXXXX", map[256], err[256];
    hb_place_req_t req = {.hostfile = path};
    hb_place_t p;
    int fd = mkstemp(path);
    FILE *f;

    CU_ASSERT_FATAL(fd >= 0);
    f = fdopen(fd, "w");
    fputs("# two nodes\nn10 slots=3\n\n  n02   # the Center of chassis 0\n", f);
    fclose(f);
    req.n = 4;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "10 10 2 2"); /* n02's slots unbounded: spread evenly */
    hb_place_free(&p);
    req.n = 9; /* n10 keeps its 3 slots, n02 takes the rest */
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "10 10 10 2 2 2 2 2 2");
    hb_place_free(&p);
    req.per_node = 1; /* caps n10's 3 slots */
    req.n = 0;
    CU_ASSERT_EQUAL_FATAL(try_place(&req, &p, map, sizeof(map), err), 0);
    CU_ASSERT_STRING_EQUAL(map, "10 2");
    hb_place_free(&p);
    f = fopen(path, "w");
    fputs("n01\nn01 slots=2\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ":2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "twice"));
    f = fopen(path, "w");
    fputs("n01 slot=2\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ":1: unknown attribute 'slot=2'"));
    f = fopen(path, "w");
    fputs("n01 slots=0\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    unlink(path);
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_IO);
}

static void test_bad_hosts(void)
{
    hb_place_req_t req = {.n = 2, .hosts = "n[00-01],x9"};
    hb_place_t p;
    char map[256], err[256];

    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown node 'x9' in --host 'n[00-01],x9'"));
    req.hosts = "n01,n[00-01]";
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "'n01' named twice"));
    req.hosts = "n[01-";
    CU_ASSERT_EQUAL(try_place(&req, &p, map, sizeof(map), err), HB_ERR_CONFIG);
    CU_ASSERT_EQUAL(hb_place(NULL, &req, &p, err, sizeof(err)), HB_ERR_INVAL);
}

int hb_test_place_register(void)
{
    CU_pSuite s = CU_add_suite("place", place_init, place_clean);

    if (s == NULL)
        return CU_get_error();
    if (CU_add_test(s, "--host", test_host_list) == NULL ||
        CU_add_test(s, "the cluster's first nodes", test_cluster_default) == NULL ||
        CU_add_test(s, "free nodes first", test_cluster_busy) == NULL ||
        CU_add_test(s, "the Slurm allocation", test_slurm) == NULL ||
        CU_add_test(s, "--hostfile", test_hostfile) == NULL ||
        CU_add_test(s, "bad host lists", test_bad_hosts) == NULL)
        return CU_get_error();
    return 0;
}
