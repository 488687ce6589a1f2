/* bench_subset.c: hibar-bench subset: a job's barrier on k of a cluster's N nodes, against the
 * same k nodes as a cluster of their own, and beside a second job's barriers on other nodes. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include "cfg.h"
#include "hb_cli.h"
#include "hibar.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Three runs of hibar-lib-bench --bench barrier (rank 0's median over the slowest rank of each
 * repetition, the maximum method) through hibar-run, all on this host:
 *   subset  a job on --nodes of the running cluster of --config (the other nodes idle),
 *   beside  the same while a second job runs barriers without pause on --other,
 *   own     the --nodes alone as a cluster of their own (their chassis as in --config).
 * Rows: impl subset / beside / own; notes: subset/own (target <= 1.2) and beside's rate against
 * subset's (target >= 0.8 where every daemon has a core). Emulated clusters: every daemon and
 * rank shares this host's cores, so both ratios say as much about the host as about hibar.
 */
typedef struct sb_opts {
    const char *config, *nodes, *other;
    const char *op; /* hibar-lib-bench --bench of the measured rows: barrier or subset */
    unsigned ppn;
    unsigned long iters;
} sb_opts_t;

static void sb_usage(FILE *f)
{
    fprintf(f, "usage: hibar-bench subset --config FILE --nodes LIST [--other LIST] [--ppn K]\n"
               "                          [--iters N] [--op barrier|subset] " HB_BENCH_COMMON_USAGE
               "\n"
               "  --config FILE  the cluster (emulated on this host, e.g. examples/local.yaml)\n"
               "  --nodes LIST   the job's nodes (hostlist), k of the cluster's N\n"
               "  --other LIST   the second job's nodes for the 'beside' row (default: none)\n"
               "  --ppn K        ranks per node (default 1)\n"
               "  --iters N      barriers per row (default 2000)\n"
               "  --op OP        what the job measures: barrier (the job's whole barrier, the\n"
               "                 default) or subset (libhibar's subset barrier of the even ranks\n"
               "                 beside one of the odd ranks)\n");
}

/* The node of tool NAME: beside hibar-bench (build tree: DIR/NAME or DIR/peer/NAME). */
static void sb_tool(const char *dir, const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", dir, name);
    if (access(buf, X_OK) != 0)
        snprintf(buf, cap, "%s/peer/%s", dir, name);
}

/* A number of a JSON row, 0 if absent. */
static double sb_num(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(row, key);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* Run cmd; the statistics of its first JSON row with a median into *st. 0 or -1. */
static int sb_median(const char *cmd, hb_stats_t *st)
{
    FILE *p = popen(cmd, "r");
    char line[2048];
    int found = 0;
    if (p == NULL)
        return -1;
    while (fgets(line, sizeof(line), p) != NULL) {
        json_t *row = found || line[0] != '{' ? NULL
                                              : json_loads(line, JSON_DECODE_INT_AS_REAL, NULL);
        if (row != NULL && json_is_number(json_object_get(row, "median_us"))) {
            *st = (hb_stats_t){.median = sb_num(row, "median_us"),
                               .min = sb_num(row, "min_us"),
                               .max = sb_num(row, "max_us"),
                               .mean = sb_num(row, "mean_us"),
                               .n = (size_t)sb_num(row, "iters"),
                               .confidence = 0.95};
            found = 1;
        }
        json_decref(row);
    }
    int rc = pclose(p);
    return found && rc == 0 ? 0 : -1;
}

int hb_bench_subset_main(int argc, char **argv)
{
    hb_bench_common_t com;
    sb_opts_t o = {.ppn = 1, .iters = 2000, .op = "barrier"};
    if (hb_bench_common_parse(&argc, argv, &com) != 0)
        return 2;
    static const struct option lo[] = {
        {"config", required_argument, NULL, 'c'}, {"nodes", required_argument, NULL, 'n'},
        {"other", required_argument, NULL, 'x'},  {"ppn", required_argument, NULL, 'p'},
        {"iters", required_argument, NULL, 'i'},  {"op", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:n:x:p:i:o:h", lo, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'c':
            o.config = optarg;
            break;
        case 'n':
            o.nodes = optarg;
            break;
        case 'x':
            o.other = optarg;
            break;
        case 'o':
            if (strcmp(optarg, "barrier") != 0 && strcmp(optarg, "subset") != 0) {
                fprintf(stderr, "hibar-bench subset: bad --op '%s' (barrier or subset)\n", optarg);
                return 2;
            }
            o.op = optarg;
            break;
        case 'p':
        case 'i': {
            unsigned long v = strtoul(optarg, &end, 10);
            if (*end != '\0' || v == 0 || (c == 'p' && v > 64)) {
                fprintf(stderr, "hibar-bench subset: bad --%s '%s'\n", c == 'p' ? "ppn" : "iters",
                        optarg);
                return 2;
            }
            if (c == 'p')
                o.ppn = (unsigned)v;
            else
                o.iters = v;
            break;
        }
        case 'h':
            sb_usage(stdout);
            return 0;
        default:
            sb_usage(stderr);
            return 2;
        }
    }
    if (o.config == NULL || o.nodes == NULL || optind != argc) {
        sb_usage(stderr);
        return 2;
    }
    hb_cfg_t *cfg = NULL;
    char err[512] = "";
    if (hb_cfg_load(o.config, NULL, 0, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "hibar-bench subset: %s\n", err);
        return 2;
    }
    uint8_t *mem = calloc(cfg->n_nodes, 1), *oth = calloc(cfg->n_nodes, 1);
    uint32_t k = 0, ko = 0;
    int status = 1;
    if (mem == NULL || oth == NULL)
        goto out;
    if (hb_cfg_members(cfg, o.nodes, mem, &k, err, sizeof(err)) != 0 ||
        (o.other != NULL && hb_cfg_members(cfg, o.other, oth, &ko, err, sizeof(err)) != 0)) {
        fprintf(stderr, "hibar-bench subset: %s\n", err);
        status = 2;
        goto out;
    }
    char dir[PATH_MAX], run[PATH_MAX + 32], clt[PATH_MAX + 32], lib[PATH_MAX + 32];
    char name[64], rdir[128], tmp[] = "/tmp/hibar-bench-subset.XXXXXX", yaml[PATH_MAX] = "";
    hb_bench_exe_dir(dir, sizeof(dir));
    sb_tool(dir, "hibar-run", run, sizeof(run));
    sb_tool(dir, "hibar-cluster", clt, sizeof(clt));
    sb_tool(dir, "hibar-lib-bench", lib, sizeof(lib));
    snprintf(name, sizeof(name), "hbsub%d", (int)getpid());
    snprintf(rdir, sizeof(rdir), "/tmp/hibar-%u-%s", (unsigned)getuid(), name);
    if (mkdtemp(tmp) == NULL) {
        perror("hibar-bench subset: mkdtemp");
        goto out;
    }
    char qc[PATH_MAX + 8], qn[1024], qo[1024], sets[512], cmd[8 * PATH_MAX];
    hb_bench_shell_quote(qc, sizeof(qc), o.config);
    hb_bench_shell_quote(qn, sizeof(qn), o.nodes);
    hb_bench_shell_quote(qo, sizeof(qo), o.other ? o.other : "");
    snprintf(sets, sizeof(sets), "--set cluster=%s --set run_dir=%s", name, rdir);
    hb_stats_t st[3];
    int have[3] = {0, 0, 0};
    const char *impl[3] = {"subset", "beside", "own"};
    snprintf(cmd, sizeof(cmd), "%s --config %s %s up >/dev/null", clt, qc, sets);
    if (system(cmd) != 0) {
        fprintf(stderr, "hibar-bench subset: cluster %s did not come up\n", o.config);
        goto out_tmp;
    }
    /* subset, then beside a second job that runs barriers until it is stopped */
    snprintf(cmd, sizeof(cmd),
             "%s --config %s %s -H %s -n %u --per-node %u %s --bench %s --iters %lu --json", run,
             qc, sets, qn, k * o.ppn, o.ppn, lib, o.op, o.iters);
    have[0] = sb_median(cmd, &st[0]) == 0;
    if (o.other != NULL) {
        pid_t bg = fork();
        if (bg == 0) {
            char bcmd[8 * PATH_MAX];
            snprintf(bcmd, sizeof(bcmd),
                     "exec %s --config %s %s -H %s -n %u --per-node %u %s --bench barrier "
                     "--iters 100000000 --json >/dev/null 2>&1",
                     run, qc, sets, qo, ko * o.ppn, o.ppn, lib);
            execl("/bin/sh", "sh", "-c", bcmd, (char *)NULL);
            _exit(127);
        }
        if (bg > 0) {
            sleep(1); /* its ranks are up and running barriers */
            have[1] = sb_median(cmd, &st[1]) == 0;
            kill(bg, SIGTERM); /* hibar-run stops its job everywhere */
            waitpid(bg, NULL, 0);
        }
    }
    snprintf(cmd, sizeof(cmd), "%s --config %s %s down >/dev/null", clt, qc, sets);
    if (system(cmd) != 0)
        fprintf(stderr, "hibar-bench subset: cluster %s did not stop cleanly\n", name);
    /* own: the k nodes, chassis as in the configuration, as a cluster of their own */
    snprintf(yaml, sizeof(yaml), "%s/own.yaml", tmp);
    FILE *f = fopen(yaml, "w");
    if (f != NULL) {
        fprintf(f, "cluster: %so\nbootstrap: local\nprotocol: %s\nnodes: ", name,
                hb_cfg_protocol_name(cfg->protocol));
        for (uint32_t i = 0, first = 1; i < cfg->n_nodes; i++)
            if (mem[i]) {
                fprintf(f, "%s%s", first ? "" : ",", cfg->nodes[i].name);
                first = 0;
            }
        fprintf(f, "\nchassis:\n");
        for (uint32_t ch = 0; ch < cfg->n_chassis; ch++) {
            int any = 0;
            for (uint32_t j = cfg->chassis_start[ch]; j < cfg->chassis_start[ch + 1]; j++) {
                uint32_t nd = cfg->chassis_nodes[j];
                if (!mem[nd])
                    continue;
                fprintf(f, "%s%s", any ? "," : "  - ", cfg->nodes[nd].name);
                any = 1;
            }
            if (any)
                fprintf(f, "\n");
        }
        fclose(f);
        snprintf(cmd, sizeof(cmd),
                 "%s --emulate %s -n %u --per-node %u %s --bench %s --iters %lu --json", run, yaml,
                 k * o.ppn, o.ppn, lib, o.op, o.iters);
        have[2] = sb_median(cmd, &st[2]) == 0;
    }
    hb_bench_out_t out;
    if (hb_bench_out_open(&out, "subset", &com) != 0)
        goto out_tmp;
    hb_bench_out_note(&out,
                      "hibar-bench subset: a job's %s on %" PRIu32 " of the %" PRIu32
                      " nodes of %s (%s), %u rank(s) per node; beside: while a second job runs "
                      "barriers on %s; own: those nodes as a cluster of their own",
                      o.op, k, cfg->n_nodes, o.config, o.nodes, o.ppn,
                      o.other ? o.other : "(none)");
    hb_bench_out_note(&out, "emulated: every daemon and rank on this host (%ld cores)",
                      sysconf(_SC_NPROCESSORS_ONLN));
    for (int i = 0; i < 3; i++) {
        if (!have[i])
            continue;
        hb_bench_out_note(&out, "impl %s", impl[i]);
        hb_bench_row_t row = {.impl = impl[i],
                              .nodes = k,
                              .ranks = k * o.ppn,
                              .reps = st[i].n,
                              .st = &st[i],
                              .iters = st[i].n,
                              .extra_json = "\"method\": \"maximum\""};
        hb_bench_out_row(&out, &row);
    }
    if (have[0] && have[2])
        hb_bench_out_note(&out, "subset / own (medians) %.3f (target <= 1.2)",
                          st[0].median / st[2].median);
    if (have[0] && have[1])
        hb_bench_out_note(&out,
                          "beside: %.3f of the solo rate (target >= 0.8 with a core per daemon)",
                          st[0].median / st[1].median);
    hb_bench_out_close(&out);
    status = have[0] && have[2] && (o.other == NULL || have[1]) ? 0 : 1;
    if (status != 0)
        fprintf(stderr, "hibar-bench subset: a run failed (subset %d, beside %d, own %d)\n",
                have[0], have[1], have[2]);
out_tmp:
    if (yaml[0] != '\0')
        unlink(yaml);
    rmdir(tmp);
out:
    free(mem);
    free(oth);
    hb_cfg_free(cfg);
    return status;
}
