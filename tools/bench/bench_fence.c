/* bench_fence.c: hibar-bench fence: PMIx_Fence latency (no data, 1 KiB, 64 KiB per rank) on emulated clusters. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hb_stats.h"
#include "hibar.h"

/*
 * For every cluster size (--nodes, default 4,8,16; chassis of 4 nodes, protocol scmd) and every
 * size (--sizes, default 0,1024,65536 bytes per rank; 0 is a fence without data), one job of
 * nodes x --ppn ranks (default 4) runs under `hibar-run --emulate` (a fresh emulated cluster
 * on this host per job): every rank puts its blob, then --iters timed PMIx_Fence calls after
 * one warm-up fence (with PMIX_COLLECT_DATA when size > 0; every rank checks every blob after
 * the last one). The samples are rank 0's fence times: from its PMIx_Fence call to its
 * return, so they include its server's local collection and the release, as an application
 * sees them. The client is fence_client (HIBAR_FENCE_CLIENT, else ../tests/fence_client next
 * to this program: the build tree); hibar-run is found next to this program unless
 * HIBAR_RUN names it, hibard through HIBARD (else ../daemon/hibard in the build tree, else
 * PATH).
 */

typedef struct bf_opts {
    char nodes[128], sizes[128];
    unsigned ppn, iters;
    hb_bench_common_t common;
} bf_opts_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: hibar-bench fence [--nodes LIST (4,8,16)] [--sizes LIST (0,1024,65536)]\n"
               "         [--ppn N (4)] [--iters N (100)] " HB_BENCH_COMMON_USAGE "\n");
}

static void exe_dir(char *buf, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(buf, cap, ".");
        return;
    }
    self[n] = '\0';
    snprintf(buf, cap, "%s", dirname(self));
}

/* One job: fill x[0..iters) with rank 0's samples. 0, or an error after printing why. */
static int run_job(const char *run, const char *fc, const char *cfg, uint32_t nodes, unsigned ppn,
                   uint64_t size, unsigned iters, double *x)
{
    char cmd[3 * PATH_MAX], line[512];
    snprintf(cmd, sizeof(cmd),
             "'%s' --emulate '%s' -n %u --per-node %u '%s' %s%" PRIu64 " --iters %u --samples "
             "2>&1",
             run, cfg, nodes * ppn, ppn, fc, size ? "--size " : "--no-data --size ", size, iters);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        fprintf(stderr, "hibar-bench fence: cannot run %s\n", run);
        return HIBAR_ERR_IO;
    }
    unsigned got = 0, ok = 0;
    while (fgets(line, sizeof(line), p) != NULL) {
        if (strncmp(line, "sample ", 7) == 0 && got < iters)
            x[got++] = strtod(line + 7, NULL);
        else if (strncmp(line, "ok rank ", 8) == 0)
            ok++;
        else if (strncmp(line, "fence ", 6) != 0)
            fprintf(stderr, "  %s", line);
    }
    int st = pclose(p);
    if (st != 0 || got != iters || ok != nodes * ppn) {
        fprintf(stderr, "hibar-bench fence: %u nodes, %" PRIu64 " B: job failed (status %d, %u "
                        "samples, %u ranks ok)\n",
                nodes, size, st, got, ok);
        return HIBAR_ERR_IO;
    }
    return 0;
}

int hb_bench_fence_main(int argc, char **argv)
{
    bf_opts_t o = {.ppn = 4, .iters = 100};
    snprintf(o.nodes, sizeof(o.nodes), "4,8,16");
    snprintf(o.sizes, sizeof(o.sizes), "0,1024,65536");
    if (hb_bench_common_parse(&argc, argv, &o.common) != 0)
        return 2;
    static const struct option lo[] = {{"nodes", required_argument, NULL, 'n'},
                                       {"sizes", required_argument, NULL, 's'},
                                       {"ppn", required_argument, NULL, 'p'},
                                       {"iters", required_argument, NULL, 'i'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'n':
            snprintf(o.nodes, sizeof(o.nodes), "%s", optarg);
            break;
        case 's':
            snprintf(o.sizes, sizeof(o.sizes), "%s", optarg);
            break;
        case 'p':
            o.ppn = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'i':
            o.iters = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc || o.ppn == 0 || o.ppn > 64 || o.iters == 0 || o.iters > 100000) {
        usage(stderr);
        return 2;
    }
    char dir[PATH_MAX], run[PATH_MAX + 16], fc[PATH_MAX + 32], hbd[PATH_MAX + 32];
    exe_dir(dir, sizeof(dir));
    const char *e = getenv("HIBAR_RUN");
    snprintf(run, sizeof(run), "%s", e ? e : "");
    if (e == NULL)
        snprintf(run, sizeof(run), "%s/hibar-run", dir);
    e = getenv("HIBAR_FENCE_CLIENT");
    if (e != NULL)
        snprintf(fc, sizeof(fc), "%s", e);
    else
        snprintf(fc, sizeof(fc), "%s/../tests/fence_client", dir);
    snprintf(hbd, sizeof(hbd), "%s/../daemon/hibard", dir);
    if (getenv("HIBARD") == NULL && access(hbd, X_OK) == 0)
        setenv("HIBARD", hbd, 1);
    if (access(run, X_OK) != 0 || access(fc, X_OK) != 0) {
        fprintf(stderr, "hibar-bench fence: needs %s and %s (HIBAR_RUN, HIBAR_FENCE_CLIENT)\n",
                run, fc);
        return 2;
    }
    char cfg[] = "/tmp/hibar-bench-fence-XXXXXX";
    int fd = mkstemp(cfg);
    if (fd < 0) {
        perror("hibar-bench fence: mkstemp");
        return 1;
    }
    close(fd);
    hb_bench_out_t out;
    if (hb_bench_out_open(&out, "fence", &o.common) != 0) {
        unlink(cfg);
        return 1;
    }
    double *x = calloc(o.iters, sizeof(double));
    int rc = x == NULL;
    char nl[128];
    snprintf(nl, sizeof(nl), "%s", o.nodes);
    for (char *sv = NULL, *tn = strtok_r(nl, ",", &sv); tn != NULL && rc == 0;
         tn = strtok_r(NULL, ",", &sv)) {
        uint32_t nodes = (uint32_t)strtoul(tn, NULL, 10);
        if (nodes == 0 || nodes > 256) {
            fprintf(stderr, "hibar-bench fence: bad node count '%s'\n", tn);
            rc = 2;
            break;
        }
        FILE *f = fopen(cfg, "w");
        if (f == NULL) {
            perror("hibar-bench fence: config");
            rc = 1;
            break;
        }
        fprintf(f, "cluster: hbbf%d\nnodes: bf[0-%u]\nchassis:\n", (int)getpid(), nodes - 1);
        for (uint32_t k = 0; k < nodes; k += 4)
            fprintf(f, "  - bf[%u-%u]\n", k, (k + 4 < nodes ? k + 4 : nodes) - 1);
        fprintf(f, "protocol: scmd\nbootstrap: local\nbarrier_timeout_ms: 60000\n");
        fclose(f);
        hb_bench_out_note(&out, "fence: %" PRIu32 " nodes x %u ranks (chassis of 4, scmd)", nodes,
                          o.ppn);
        char sl[128];
        snprintf(sl, sizeof(sl), "%s", o.sizes);
        for (char *sv2 = NULL, *ts = strtok_r(sl, ",", &sv2); ts != NULL && rc == 0;
             ts = strtok_r(NULL, ",", &sv2)) {
            uint64_t size = strtoull(ts, NULL, 10);
            rc = run_job(run, fc, cfg, nodes, o.ppn, size, o.iters, x);
            if (rc != 0)
                break;
            hb_stats_t s;
            hb_stats_summarize(x, o.iters, o.common.confidence, &s);
            hb_bench_row_t row = {.impl = size ? "hibar-fence-data" : "hibar-fence",
                                  .nodes = nodes,
                                  .ranks = nodes * o.ppn,
                                  .size = size,
                                  .reps = 1,
                                  .st = &s,
                                  .iters = o.iters};
            hb_bench_out_row(&out, &row);
        }
    }
    hb_bench_out_note(&out, "PMIx_Fence on emulated clusters (this host), %u ranks per node, "
                            "rank 0's call-to-return time; size = bytes per rank",
                      o.ppn);
    hb_bench_out_close(&out);
    free(x);
    unlink(cfg);
    return rc;
}
