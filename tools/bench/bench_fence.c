/* bench_fence.c: hibar-bench fence: PMIx_Fence latency (no data, 1 KiB, 64 KiB per rank) on
 * emulated clusters. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
 *
 * --compare: the same program under hibar and under Open MPI's mpirun (its own PMIx server in
 * each orted) on the network-namespace test bed, in the same run: tests/netns/fence-compare
 * inside `tests/netns/testbed --sites 1 --nodes N` (one bed of --nodes hosts, named by
 * --bed-name / --bed-net, or the bed this runs in when HIBAR_TESTBED_CONFIG is set: then its
 * hosts). Per size, --jobs jobs of each, alternated; per job a first fence (after a fence
 * without data that aligns the ranks' start-up) and --iters steady-state fences (after one
 * warm-up). Rows: impl hibar and open-mpi, with "phase" first or steady and "ratio" = hibar's
 * median / Open MPI's. --peer slurm compares with Slurm's own PMIx server instead: a private
 * Slurm on the bed's hosts (tests/slurm/up: slurmctld, a slurmd per host), the same program
 * under `srun --mpi=pmix` (impl slurm). Needs root (exit 77 without).
 */

typedef struct bf_opts {
    char nodes[128], sizes[128];
    unsigned ppn, iters, jobs;
    int compare;
    char bed_name[32], bed_net[32], peer[16];
    hb_bench_common_t common;
} bf_opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hibar-bench fence [--nodes LIST (4,8,16)] [--sizes LIST (0,1024,65536)]\n"
            "         [--ppn N (4)] [--iters N (100)] " HB_BENCH_COMMON_USAGE "\n"
            "       hibar-bench fence --compare [--nodes N (8)] [--sizes LIST (0,1024)] [--ppn N]\n"
            "         [--iters N (50)] [--jobs N (5)] [--bed-name NAME (hbfence)]\n"
            "         [--bed-net A.B (10.239)] [--peer open-mpi|slurm] " HB_BENCH_COMMON_USAGE "\n"
            "  --compare   hibar and Open MPI's mpirun on N network-namespace hosts (root)\n"
            "  --peer P    what hibar is compared with: open-mpi (mpirun, default) or slurm\n"
            "              (srun --mpi=pmix on a private Slurm on the same hosts)\n");
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
        fprintf(stderr,
                "hibar-bench fence: %u nodes, %" PRIu64 " B: job failed (status %d, %u "
                "samples, %u ranks ok)\n",
                nodes, size, st, got, ok);
        return HIBAR_ERR_IO;
    }
    return 0;
}

/* Samples of one (impl, size, phase) from fence-compare's "sample IMPL SIZE PHASE US" lines. */
typedef struct bf_set {
    char impl[32];
    uint64_t size;
    int steady;
    double *x;
    size_t n, cap;
} bf_set_t;

static bf_set_t *set_get(bf_set_t **sets, size_t *n_sets, const char *impl, uint64_t size,
                         int steady)
{
    for (size_t i = 0; i < *n_sets; i++)
        if (strcmp((*sets)[i].impl, impl) == 0 && (*sets)[i].size == size &&
            (*sets)[i].steady == steady)
            return &(*sets)[i];
    bf_set_t *ns = realloc(*sets, (*n_sets + 1) * sizeof(*ns));
    if (ns == NULL)
        return NULL;
    *sets = ns;
    bf_set_t *st = &ns[(*n_sets)++];
    memset(st, 0, sizeof(*st));
    snprintf(st->impl, sizeof(st->impl), "%s", impl);
    st->size = size;
    st->steady = steady;
    return st;
}

static int set_add(bf_set_t *st, double v)
{
    if (st->n == st->cap) {
        size_t nc = st->cap ? 2 * st->cap : 64;
        double *nx = realloc(st->x, nc * sizeof(double));
        if (nx == NULL)
            return -1;
        st->x = nx;
        st->cap = nc;
    }
    st->x[st->n++] = v;
    return 0;
}

static int compare_main(const bf_opts_t *o, const char *dir)
{
    char nodes_s[128];
    snprintf(nodes_s, sizeof(nodes_s), "%s", o->nodes);
    unsigned nodes = (unsigned)strtoul(nodes_s, NULL, 10);
    if (strchr(nodes_s, ',') != NULL || nodes < 2 || nodes > 64) {
        fprintf(stderr, "hibar-bench fence --compare: --nodes takes one host count, 2..64\n");
        return 2;
    }
    char sizes[160], qs[PATH_MAX + 64], qz[PATH_MAX], cmd[8 * PATH_MAX];
    int brc = hb_bench_bed_script("hibar-bench fence --compare", "fence-compare", qs, sizeof(qs));
    if (brc != 0)
        return brc;
    snprintf(sizes, sizeof(sizes), "%s", o->sizes);
    for (char *c = sizes; *c != '\0'; c++)
        if (*c == ',')
            *c = ' ';
    hb_bench_shell_quote(qz, sizeof(qz), sizes);
    char args[PATH_MAX * 3];
    snprintf(args, sizeof(args), "%s --ppn %u --sizes %s --iters %u --jobs %u --impls 'hibar %s'",
             qs, o->ppn, qz, o->iters, o->jobs, o->peer);
    hb_bench_bed_cmd(dir, args, o->bed_name, o->bed_net, nodes, cmd, sizeof(cmd));
    hb_bench_out_t out;
    if (hb_bench_out_open(&out, "fence", &o->common) != 0)
        return 1;
    hb_bench_out_note(&out, "%s", cmd);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        perror("hibar-bench fence --compare: popen");
        hb_bench_out_close(&out);
        return 1;
    }
    bf_set_t *sets = NULL;
    size_t n_sets = 0;
    unsigned hosts = nodes, ppn = o->ppn;
    char line[1024], impl[32], phase[16];
    int rc = 0;
    unsigned long long pk_hibar = 0, pk_peer = 0; /* packets each sent across the bed */
    while (fgets(line, sizeof(line), p) != NULL) {
        unsigned long long size;
        double us;
        if (sscanf(line, "sample %31s %llu %15s %lf", impl, &size, phase, &us) == 4) {
            bf_set_t *st = set_get(&sets, &n_sets, impl, size, strcmp(phase, "steady") == 0);
            if (st == NULL || set_add(st, us) != 0)
                rc = 1;
        } else if (strncmp(line, "note ", 5) == 0) {
            line[strcspn(line, "\n")] = '\0';
            sscanf(line, "note hosts=%u ppn=%u", &hosts, &ppn);
            char who[32];
            unsigned long long pk;
            if (sscanf(line, "note packets sent across the bed by %31[^']'s jobs: %llu", who,
                       &pk) == 2) {
                if (strcmp(who, "hibar") == 0)
                    pk_hibar = pk;
                else
                    pk_peer = pk;
            }
            hb_bench_out_note(&out, "%s", line + 5);
        } else {
            fputs(line, stderr);
        }
    }
    int st = pclose(p);
    if (st != 0) {
        fprintf(stderr, "hibar-bench fence --compare: the test bed run failed (status %d)\n", st);
        rc = WIFEXITED(st) && WEXITSTATUS(st) == 77 ? 77 : 1;
    }
    /* rows: per size and phase, hibar then the peer, both with the ratio of the medians */
    for (size_t i = 0; i < n_sets; i++) {
        bf_set_t *h = &sets[i];
        if (strcmp(h->impl, "hibar") != 0)
            continue;
        bf_set_t *m = NULL;
        for (size_t k = 0; k < n_sets; k++)
            if (strcmp(sets[k].impl, o->peer) == 0 && sets[k].size == h->size &&
                sets[k].steady == h->steady)
                m = &sets[k];
        hb_stats_t hs, ms;
        memset(&ms, 0, sizeof(ms));
        hb_stats_summarize(h->x, h->n, o->common.confidence, &hs);
        if (m != NULL)
            hb_stats_summarize(m->x, m->n, o->common.confidence, &ms);
        double ratio = m != NULL && ms.median > 0 ? hs.median / ms.median : 0.0;
        char extra[200], extra_m[200];
        snprintf(extra, sizeof(extra),
                 "\"phase\": \"%s\", \"ratio\": %.3f, \"jobs\": %u, \"bed_packets\": %llu",
                 h->steady ? "steady" : "first", ratio, o->jobs, pk_hibar);
        snprintf(extra_m, sizeof(extra_m),
                 "\"phase\": \"%s\", \"ratio\": %.3f, \"jobs\": %u, \"bed_packets\": %llu",
                 h->steady ? "steady" : "first", ratio, o->jobs, pk_peer);
        hb_bench_out_note(&out,
                          "%s fence, %" PRIu64 " B per rank: hibar then %s; ratio "
                          "hibar/%s (medians) %.3f",
                          h->steady ? "steady-state" : "first", h->size, o->peer, o->peer, ratio);
        hb_bench_row_t row = {.impl = "hibar",
                              .nodes = hosts,
                              .ranks = hosts * ppn,
                              .size = h->size,
                              .reps = h->n,
                              .st = &hs,
                              .iters = h->n,
                              .extra_json = extra};
        hb_bench_out_row(&out, &row);
        if (m != NULL) {
            row.impl = o->peer;
            row.extra_json = extra_m;
            row.st = &ms;
            row.reps = row.iters = m->n;
            hb_bench_out_row(&out, &row);
        }
    }
    hb_bench_out_note(&out,
                      "PMIx_Fence on %u namespace hosts x %u ranks, rank 0's call-to-return "
                      "time; first: the job's first fence with data; size = bytes per rank",
                      hosts, ppn);
    hb_bench_out_close(&out);
    for (size_t i = 0; i < n_sets; i++)
        free(sets[i].x);
    free(sets);
    return rc;
}

int hb_bench_fence_main(int argc, char **argv)
{
    bf_opts_t o = {.ppn = 4, .iters = 0, .jobs = 5};
    snprintf(o.nodes, sizeof(o.nodes), "%s", "");
    snprintf(o.sizes, sizeof(o.sizes), "%s", "");
    snprintf(o.bed_name, sizeof(o.bed_name), "hbfence");
    snprintf(o.bed_net, sizeof(o.bed_net), "10.239");
    snprintf(o.peer, sizeof(o.peer), "open-mpi");
    if (hb_bench_common_parse(&argc, argv, &o.common) != 0)
        return 2;
    static const struct option lo[] = {{"nodes", required_argument, NULL, 'n'},
                                       {"sizes", required_argument, NULL, 's'},
                                       {"ppn", required_argument, NULL, 'p'},
                                       {"iters", required_argument, NULL, 'i'},
                                       {"jobs", required_argument, NULL, 'j'},
                                       {"compare", no_argument, NULL, 'c'},
                                       {"bed-name", required_argument, NULL, 'B'},
                                       {"bed-net", required_argument, NULL, 'N'},
                                       {"peer", required_argument, NULL, 'P'},
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
            if (o.iters == 0) {
                usage(stderr);
                return 2;
            }
            break;
        case 'j':
            o.jobs = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'c':
            o.compare = 1;
            break;
        case 'B':
            snprintf(o.bed_name, sizeof(o.bed_name), "%s", optarg);
            break;
        case 'N':
            snprintf(o.bed_net, sizeof(o.bed_net), "%s", optarg);
            break;
        case 'P':
            if (strcmp(optarg, "open-mpi") != 0 && strcmp(optarg, "slurm") != 0) {
                fprintf(stderr, "hibar-bench fence: --peer takes open-mpi or slurm, not '%s'\n",
                        optarg);
                return 2;
            }
            snprintf(o.peer, sizeof(o.peer), "%s", optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (o.nodes[0] == '\0')
        snprintf(o.nodes, sizeof(o.nodes), "%s", o.compare ? "8" : "4,8,16");
    if (o.sizes[0] == '\0')
        snprintf(o.sizes, sizeof(o.sizes), "%s", o.compare ? "0,1024" : "0,1024,65536");
    if (o.iters == 0)
        o.iters = o.compare ? 50 : 100;
    if (optind != argc || o.ppn == 0 || o.ppn > 64 || o.iters > 100000 || o.jobs == 0 ||
        o.jobs > 1000 ||
        strspn(o.bed_name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(o.bed_name) ||
        strspn(o.bed_net, "0123456789.") != strlen(o.bed_net) ||
        strspn(o.sizes, "0123456789,") != strlen(o.sizes)) {
        usage(stderr);
        return 2;
    }
    char dir[PATH_MAX], run[PATH_MAX + 16], fc[PATH_MAX + 32], hbd[PATH_MAX + 32];
    hb_bench_exe_dir(dir, sizeof(dir));
    if (o.compare)
        return compare_main(&o, dir);
    const char *e = getenv("HIBAR_RUN");
    snprintf(run, sizeof(run), "%s", e ? e : "");
    if (e == NULL)
        snprintf(run, sizeof(run), "%s/hibar-run", dir);
    e = getenv("HIBAR_FENCE_CLIENT");
    if (e != NULL)
        snprintf(fc, sizeof(fc), "%s", e);
    else
        hb_bench_helper(dir, "hibar-fence-client", fc, sizeof(fc));
    snprintf(hbd, sizeof(hbd), "%s/../daemon/hibard", dir);
    if (getenv("HIBARD") == NULL && access(hbd, X_OK) == 0)
        setenv("HIBARD", hbd, 1);
    if (access(run, X_OK) != 0 || access(fc, X_OK) != 0) {
        fprintf(stderr, "hibar-bench fence: needs %s and %s (HIBAR_RUN, HIBAR_FENCE_CLIENT)\n", run,
                fc);
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
    hb_bench_out_note(&out,
                      "PMIx_Fence on emulated clusters (this host), %u ranks per node, "
                      "rank 0's call-to-return time; size = bytes per rank",
                      o.ppn);
    hb_bench_out_close(&out);
    free(x);
    unlink(cfg);
    return rc;
}
