/* bench_mpi.c: hibar-bench mpi: an unmodified MPI program three ways in one run (Open MPI's
 * mpirun alone, hibar-run with mca_coll_hibar, hibar-run with OMPI_MCA_coll=^hibar), and the
 * component's crossovers measured on this machine (--crossover FILE). */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hb_stats.h"
#include "mpi_xover.h"

/*
 * The runner is netns/mpi-compare (the source tree's tests/netns/ or the installed copy): it
 * runs hibar-mpi-bench (tools/peer/mpi_bench.c: warm-up with a data check, repetitions
 * isolated by a barrier, the maximum over ranks, adaptive repetitions to a 95% CI) --reps
 * times each way, interleaved (mpirun, hibar-run with the component, hibar-run with ^hibar;
 * then again), and prints every row's median ("sample WAY OP SIZE US REP"). On one node:
 * hibar-run --emulate (examples/local.yaml or --config) and mpirun --oversubscribe on this
 * host. --bed HOSTS (root): inside tests/netns/testbed --sites 1 --nodes HOSTS, one hibard per
 * host, mpirun over the same hosts (netns/ompi-run), --per-node ranks on each; the bed's packet
 * counter around each run shows that Open MPI's traffic crossed the bed. Per operation and size
 * this prints the median over the repetitions of each way, the component's median over the
 * others' (vs mpirun, vs ^hibar), the fastest, and which side the component's table gives the
 * call (hibar, or "below": passed down to Open MPI's own).
 *
 * --crossover FILE: the component's side is forced to hibar (coll_hibar_force=hibar), and the
 * sizes where hibar beat the component below (^hibar) become the table's entries of this run's
 * regime (one node; several nodes; several nodes, one rank each), written into FILE, a file of
 * Open MPI's MCA parameters: its other lines are kept. Open MPI reads $HOME/.openmpi/
 * mca-params.conf and its system's openmpi-mca-params.conf, or the files that
 * OMPI_MCA_mca_base_param_files names; hibar-info --mpi shows the table a job will get and
 * where each entry comes from.
 */

enum { WAY_MPIRUN, WAY_HIBAR, WAY_BELOW, N_WAYS };
static const char *const way_name[N_WAYS] = {"mpirun", "hibar", "ompi"};
static const char *const way_impl[N_WAYS] = {"open-mpi", "coll-hibar", "coll-below"};
static const char *const way_title[N_WAYS] = {"mpirun", "hibar-run", "^hibar"};

#define BM_MAX_SIZES 32
#define BM_MAX_SAMPLES 64

typedef struct bm_opts {
    unsigned n, ppn, hosts, reps;
    char config[PATH_MAX], bench[128], force[16], crossover[PATH_MAX];
    char bed_name[32], bed_net[32];
    size_t sizes[BM_MAX_SIZES];
    int n_sizes, no_mpirun;
    int ops[HB_MPI_N_OPS]; /* measured */
    char harness[1024];    /* after --: hibar-mpi-bench's own options, quoted */
    hb_bench_common_t common;
} bm_opts_t;

/* The medians of the runs of one way at one (operation, size). */
typedef struct bm_cell {
    double x[BM_MAX_SAMPLES];
    size_t n;
} bm_cell_t;

static bm_cell_t cells[HB_MPI_N_OPS][BM_MAX_SIZES][N_WAYS];

static void usage(FILE *f)
{
    fprintf(
        f, "usage: hibar-bench mpi [-n N (4)] [--per-node K (N)] [--config FILE]\n"
           "         [--bench LIST (barrier,bcast,scatter,gather,allgather)]\n"
           "         [--sizes LIST (8,1K,16K,64K,256K,1M,4M)] [--reps R (3)]\n"
           "         [--force auto|hibar|ompi] [--no-mpirun] [--crossover FILE]\n"
           "         " HB_BENCH_COMMON_USAGE " [-- HIBAR-MPI-BENCH OPTIONS]\n"
           "       hibar-bench mpi --bed HOSTS [--per-node K (1)] [-n N (HOSTS x K)]\n"
           "         [--bed-name NAME (hbmpi)] [--bed-net A.B (10.234)] ...   (root)\n"
           "  the same MPI program (hibar-mpi-bench) three ways, interleaved, R times each: under\n"
           "  Open MPI's mpirun alone, under hibar-run with mca_coll_hibar, under hibar-run with\n"
           "  OMPI_MCA_coll=^hibar; per operation and size the medians, the component's ratios\n"
           "  to the other two, the fastest, and the side the component's table gives the call\n"
           "  -n N            ranks (one node: on this host, hibar-run --emulate FILE)\n"
           "  --config FILE   the emulated cluster of hibar-run (examples/local.yaml)\n"
           "  --bed HOSTS     on a network-namespace test bed of HOSTS hosts, one hibard each,\n"
           "                  mpirun over the same hosts; K ranks per host\n"
           "  --force MODE    the component's side: auto (its table), hibar, ompi\n"
           "  --no-mpirun     only the two hibar-run ways\n"
           "  --crossover FILE  force the component's side to hibar, and write the sizes where\n"
           "                  hibar beat ^hibar as the crossover table of this run's regime into\n"
           "                  FILE (Open MPI's MCA parameter syntax; its other lines kept): copy\n"
           "                  it to $HOME/.openmpi/mca-params.conf or Open MPI's\n"
           "                  openmpi-mca-params.conf, or name it in\n"
           "                  OMPI_MCA_mca_base_param_files; hibar-info --mpi shows the result\n"
           "  after --: hibar-mpi-bench's options (e.g. --max-secs 1 --min-iters 50)\n");
}

static int op_index(const char *name)
{
    for (int op = 0; op < HB_MPI_N_OPS; op++)
        if (strcmp(name, hb_mpi_op_name(op)) == 0)
            return op;
    return -1;
}

static int size_index(const bm_opts_t *o, int op, size_t size)
{
    if (op == HB_MPI_BARRIER)
        return 0;
    for (int i = 0; i < o->n_sizes; i++)
        if (o->sizes[i] == size)
            return i;
    return -1;
}

static double median_of(const bm_cell_t *c)
{
    double x[BM_MAX_SAMPLES];
    hb_stats_t s;

    if (c->n == 0)
        return 0.0;
    memcpy(x, c->x, c->n * sizeof x[0]);
    hb_stats_summarize(x, c->n, 0.95, &s);
    return s.median;
}

static hb_mpi_regime_t bm_regime(const bm_opts_t *o)
{
    if (o->hosts < 2)
        return HB_MPI_ONE_NODE;
    return o->ppn == 1 ? HB_MPI_NODES1 : HB_MPI_NODES;
}

/* The table (or JSON / OSU rows, one per way, with --json / --osu; --csv: the same rows). */
static void print_table(const bm_opts_t *o, const hb_mpi_xover_t *table)
{
    hb_mpi_regime_t regime = bm_regime(o);
    hb_bench_out_t out;

    if (hb_bench_out_open(&out, "mpi", &o->common) != 0)
        return;
    for (int op = 0; op < HB_MPI_N_OPS; op++) {
        int ns = op == HB_MPI_BARRIER ? 1 : o->n_sizes, header = 0;

        if (!o->ops[op])
            continue;
        for (int i = 0; i < ns; i++) {
            size_t size = op == HB_MPI_BARRIER ? 0 : o->sizes[i];
            double m[N_WAYS];
            int fastest = -1;
            const char *side = hb_mpi_xover_takes(table, op, regime, size) ? "hibar" : "below";

            for (int w = 0; w < N_WAYS; w++) {
                m[w] = median_of(&cells[op][i][w]);
                if (m[w] > 0 && (fastest < 0 || m[w] < m[fastest]))
                    fastest = w;
            }
            if (fastest < 0)
                continue;
            double vm = m[WAY_MPIRUN] > 0 ? m[WAY_HIBAR] / m[WAY_MPIRUN] : 0.0;
            double vb = m[WAY_BELOW] > 0 ? m[WAY_HIBAR] / m[WAY_BELOW] : 0.0;
            if (o->common.json || o->common.osu || o->common.csv) {
                out.bench = hb_mpi_op_name(op);
                for (int w = 0; w < N_WAYS; w++) {
                    double x[BM_MAX_SAMPLES];
                    char extra[256];
                    hb_stats_t s;

                    if (cells[op][i][w].n == 0)
                        continue;
                    memcpy(x, cells[op][i][w].x, cells[op][i][w].n * sizeof x[0]);
                    hb_stats_summarize(x, cells[op][i][w].n, o->common.confidence, &s);
                    snprintf(extra, sizeof extra,
                             "\"way\": \"%s\", \"vs_mpirun\": %.3f, \"vs_below\": %.3f, "
                             "\"fastest\": \"%s\", \"table\": \"%s\"",
                             way_title[w], vm, vb, way_title[fastest], side);
                    hb_bench_row_t row = {.impl = way_impl[w],
                                          .nodes = o->hosts ? o->hosts : 1,
                                          .ranks = o->n,
                                          .size = size,
                                          .reps = cells[op][i][w].n,
                                          .st = &s,
                                          .iters = cells[op][i][w].n,
                                          .extra_json = extra};
                    if (o->common.json || o->common.osu)
                        hb_bench_out_row(&out, &row);
                    else if (out.csv) /* the table below on stdout, the rows in the file */
                        fprintf(out.csv,
                                "%s,%s,%u,%u,%zu,%llu,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.3f\n",
                                out.bench, row.impl, row.nodes, row.ranks, size,
                                (unsigned long long)row.iters, (unsigned long long)row.reps, s.mean,
                                s.median, s.min, s.max, s.p99, s.ci, s.confidence);
                }
                if (o->common.json || o->common.osu)
                    continue;
            }
            if (!header) {
                char title[16];
                size_t runs = o->reps;
                for (int k = 0; k < ns; k++) /* fewer where a run failed or was cut short */
                    for (int w = 0; w < N_WAYS; w++)
                        if (cells[op][k][w].n > 0 && cells[op][k][w].n < runs)
                            runs = cells[op][k][w].n;
                snprintf(title, sizeof title, "MPI_%c%s", hb_mpi_op_name(op)[0] - 'a' + 'A',
                         hb_mpi_op_name(op) + 1);
                printf("# %s, %u ranks, %u per node%s: medians of %zu run%s (us); vs: the "
                       "component's median / the other's\n",
                       title, o->n, o->ppn, o->hosts ? " on the bed" : " on one node", runs,
                       runs == 1 ? "" : "s");
                printf("# %-8s %12s %12s %12s %10s %10s %10s %6s\n", "Size", "mpirun", "hibar-run",
                       "^hibar", "vs mpirun", "vs ^hibar", "fastest", "table");
                header = 1;
            }
            char t[N_WAYS][24], r[2][24];
            for (int w = 0; w < N_WAYS; w++)
                snprintf(t[w], sizeof t[w], m[w] > 0 ? "%.2f" : "-", m[w]);
            snprintf(r[0], sizeof r[0], vm > 0 ? "%.3g" : "-", vm);
            snprintf(r[1], sizeof r[1], vb > 0 ? "%.3g" : "-", vb);
            printf("%-10zu %12s %12s %12s %10s %10s %10s %6s\n", size, t[WAY_MPIRUN], t[WAY_HIBAR],
                   t[WAY_BELOW], r[0], r[1], way_title[fastest], side);
        }
    }
    fflush(stdout);
    hb_bench_out_close(&out);
}

/* Whether a line of FILE is one this run replaces: a parameter of (op, regime) for an
 * operation measured, or the comment hibar-bench wrote with it. */
static int replaced(const bm_opts_t *o, hb_mpi_regime_t regime, const char *line)
{
    char want[96];

    while (*line == ' ' || *line == '\t')
        line++;
    for (int op = 0; op < HB_MPI_N_OPS; op++) {
        if (!o->ops[op])
            continue;
        for (int b = 0; b < 2; b++) {
            size_t k;
            snprintf(want, sizeof want, "coll_hibar_%s_%s_%s", hb_mpi_op_name(op),
                     b ? "max" : "min", hb_mpi_regime_name(regime));
            k = strlen(want);
            if (strncmp(line, want, k) == 0 &&
                (line[k] == ' ' || line[k] == '=' || line[k] == '\t'))
                return 1;
        }
        snprintf(want, sizeof want, "# hibar-bench mpi: %s %s:", hb_mpi_op_name(op),
                 hb_mpi_regime_name(regime));
        if (strncmp(line, want, strlen(want)) == 0)
            return 1;
    }
    return 0;
}

/* --crossover FILE: the measured entries of this run's regime into FILE (other lines kept). */
static int write_crossover(const bm_opts_t *o)
{
    hb_mpi_regime_t regime = bm_regime(o);
    hb_mpi_xover_t x;
    char tmp[PATH_MAX + 16], line[2048], date[32], a[32];
    struct utsname un;
    time_t now = time(NULL);
    FILE *in = fopen(o->crossover, "r"), *f;

    hb_mpi_xover_defaults(&x);
    snprintf(tmp, sizeof tmp, "%s.%d", o->crossover, (int)getpid());
    f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "hibar-bench mpi: cannot write %s: %s\n", tmp, strerror(errno));
        if (in)
            fclose(in);
        return 1;
    }
    if (in) {
        while (fgets(line, sizeof line, in))
            if (!replaced(o, regime, line))
                fputs(line, f);
        fclose(in);
    } else {
        fprintf(f, "# Open MPI MCA parameters: mca_coll_hibar's crossovers, measured by "
                   "hibar-bench mpi --crossover\n# (hibar takes a call of sizes min..max, bytes "
                   "per rank; -1: no bound, 0: none)\n");
    }
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
    if (uname(&un) != 0)
        snprintf(un.nodename, sizeof un.nodename, "?");
    for (int op = 0; op < HB_MPI_N_OPS; op++) {
        size_t sizes[BM_MAX_SIZES];
        double h[BM_MAX_SIZES], b[BM_MAX_SIZES];
        int ns = op == HB_MPI_BARRIER ? 1 : o->n_sizes;

        if (!o->ops[op])
            continue;
        fprintf(f,
                "# hibar-bench mpi: %s %s: %s on %s, %u ranks, %u per node, %u runs; "
                "medians hibar/^hibar (us):",
                hb_mpi_op_name(op), hb_mpi_regime_name(regime), date, un.nodename, o->n, o->ppn,
                o->reps);
        for (int i = 0; i < ns; i++) {
            sizes[i] = op == HB_MPI_BARRIER ? 0 : o->sizes[i];
            h[i] = median_of(&cells[op][i][WAY_HIBAR]);
            b[i] = median_of(&cells[op][i][WAY_BELOW]);
            fprintf(f, " %zu:%.1f/%.1f", sizes[i], h[i], b[i]);
        }
        fputc('\n', f);
        hb_mpi_xover_from_medians(&x, op, regime, sizes, h, b, ns);
        if (op != HB_MPI_BARRIER)
            fprintf(f, "coll_hibar_%s_min_%s = %ld\n", hb_mpi_op_name(op),
                    hb_mpi_regime_name(regime), x.min[op][regime]);
        fprintf(f, "coll_hibar_%s_max_%s = %ld\n", hb_mpi_op_name(op), hb_mpi_regime_name(regime),
                x.max[op][regime]);
        printf("# crossover %s %s: hibar takes %s\n", hb_mpi_op_name(op),
               hb_mpi_regime_desc(regime),
               hb_mpi_xover_fmt(op, x.min[op][regime], x.max[op][regime], a, sizeof a));
    }
    if (fclose(f) != 0 || rename(tmp, o->crossover) != 0) {
        fprintf(stderr, "hibar-bench mpi: writing %s: %s\n", o->crossover, strerror(errno));
        unlink(tmp);
        return 1;
    }
    printf("# crossovers of %s written to %s (Open MPI reads it as $HOME/.openmpi/"
           "mca-params.conf, its openmpi-mca-params.conf, or through "
           "OMPI_MCA_mca_base_param_files; hibar-info --mpi shows them)\n",
           hb_mpi_regime_desc(regime), o->crossover);
    return 0;
}

static int parse(int argc, char **argv, bm_opts_t *o)
{
    static const struct option lo[] = {{"per-node", required_argument, NULL, 'p'},
                                       {"config", required_argument, NULL, 'c'},
                                       {"bed", required_argument, NULL, 'b'},
                                       {"bench", required_argument, NULL, 'B'},
                                       {"sizes", required_argument, NULL, 's'},
                                       {"reps", required_argument, NULL, 'r'},
                                       {"force", required_argument, NULL, 'f'},
                                       {"crossover", required_argument, NULL, 'x'},
                                       {"no-mpirun", no_argument, NULL, 'M'},
                                       {"bed-name", required_argument, NULL, 'N'},
                                       {"bed-net", required_argument, NULL, 'A'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    char sizes[256] = "8,1K,16K,64K,256K,1M,4M";
    int c;

    snprintf(o->bench, sizeof o->bench, "barrier,bcast,scatter,gather,allgather");
    snprintf(o->bed_name, sizeof o->bed_name, "hbmpi");
    snprintf(o->bed_net, sizeof o->bed_net, "10.234");
    o->reps = 3;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+n:h", lo, NULL)) != -1) {
        switch (c) {
        case 'n':
            o->n = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'p':
            o->ppn = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'c':
            snprintf(o->config, sizeof o->config, "%s", optarg);
            break;
        case 'b':
            o->hosts = (unsigned)strtoul(optarg, NULL, 10);
            if (o->hosts < 2 || o->hosts > 64) {
                fprintf(stderr, "hibar-bench mpi: --bed takes 2..64 hosts\n");
                return 2;
            }
            break;
        case 'B':
            snprintf(o->bench, sizeof o->bench, "%s", optarg);
            break;
        case 's':
            snprintf(sizes, sizeof sizes, "%s", optarg);
            break;
        case 'r':
            o->reps = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'f':
            snprintf(o->force, sizeof o->force, "%s", optarg);
            break;
        case 'x':
            snprintf(o->crossover, sizeof o->crossover, "%s", optarg);
            break;
        case 'M':
            o->no_mpirun = 1;
            break;
        case 'N':
            snprintf(o->bed_name, sizeof o->bed_name, "%s", optarg);
            break;
        case 'A':
            snprintf(o->bed_net, sizeof o->bed_net, "%s", optarg);
            break;
        case 'h':
            usage(stdout);
            return -1;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (hb_bench_sizes_parse(sizes, o->sizes, BM_MAX_SIZES, &o->n_sizes) != 0)
        return 2;
    for (int i = 1; i < o->n_sizes; i++)
        if (o->sizes[i] <= o->sizes[i - 1] || o->sizes[i - 1] == 0) {
            fprintf(stderr, "hibar-bench mpi: --sizes: increasing sizes of at least 1 byte\n");
            return 2;
        }
    char list[128], *sv = NULL;
    snprintf(list, sizeof list, "%s", o->bench);
    for (char *t = strtok_r(list, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        int op = op_index(t);
        if (op < 0) {
            fprintf(stderr,
                    "hibar-bench mpi: --bench: '%s' is not one of barrier, bcast, scatter, "
                    "gather, allgather\n",
                    t);
            return 2;
        }
        o->ops[op] = 1;
    }
    if (o->force[0] == '\0')
        snprintf(o->force, sizeof o->force, "%s", o->crossover[0] ? "hibar" : "auto");
    if (strcmp(o->force, "auto") != 0 && strcmp(o->force, "hibar") != 0 &&
        strcmp(o->force, "ompi") != 0) {
        fprintf(stderr, "hibar-bench mpi: --force takes auto, hibar or ompi\n");
        return 2;
    }
    if (o->crossover[0] && strcmp(o->force, "hibar") != 0) {
        fprintf(stderr, "hibar-bench mpi: --crossover measures hibar itself: not with --force %s\n",
                o->force);
        return 2;
    }
    if (o->hosts) {
        if (o->ppn == 0)
            o->ppn = o->n ? (o->n + o->hosts - 1) / o->hosts : 1;
        if (o->n == 0)
            o->n = o->hosts * o->ppn;
    } else {
        if (o->n == 0)
            o->n = 4;
        if (o->ppn == 0)
            o->ppn = o->n;
    }
    if (o->n < 2 || o->n > 1024 || o->ppn == 0 || o->reps == 0 || o->reps > BM_MAX_SAMPLES ||
        strspn(o->bed_name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(o->bed_name) ||
        strspn(o->bed_net, "0123456789.") != strlen(o->bed_net)) {
        usage(stderr);
        return 2;
    }
    /* the rest: hibar-mpi-bench's own options */
    size_t k = 0;
    o->harness[0] = '\0';
    for (int i = optind; i < argc && k + 8 < sizeof o->harness; i++) {
        char q[512];
        hb_bench_shell_quote(q, sizeof q, argv[i]);
        k += (size_t)snprintf(o->harness + k, sizeof o->harness - k, " %s", q);
    }
    return 0;
}

int hb_bench_mpi_main(int argc, char **argv)
{
    bm_opts_t o;
    char dir[PATH_MAX], qs[PATH_MAX + 64], args[4 * PATH_MAX], cmd[8 * PATH_MAX], sl[512];
    char qc[PATH_MAX + 64] = "";
    hb_mpi_xover_t table;
    hb_mpi_xover_src_t src;
    char err[512];
    int rc;

    memset(&o, 0, sizeof o);
    if (hb_bench_common_parse(&argc, argv, &o.common) != 0)
        return 2;
    rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    hb_bench_exe_dir(dir, sizeof dir);
    if (o.hosts) {
        rc = hb_bench_bed_script("hibar-bench mpi --bed", "mpi-compare", qs, sizeof qs);
        if (rc != 0)
            return rc;
    } else {
        char tests[PATH_MAX], path[PATH_MAX + 64];
        hb_bench_scripts(tests, sizeof tests);
        snprintf(path, sizeof path, "%s/netns/mpi-compare", tests);
        if (access(path, X_OK) != 0) {
            fprintf(stderr, "hibar-bench mpi: %s not found (HIBAR_SRCDIR: a source tree)\n", path);
            return 2;
        }
        hb_bench_shell_quote(qs, sizeof qs, path);
    }
    /* the table the component's side uses (--force over it) */
    if (hb_mpi_xover_load(&table, &src, HB_OMPI_SYSCONFDIR, err, sizeof err) != 0) {
        fprintf(stderr, "hibar-bench mpi: %s\n", err);
        return 2;
    }
    hb_mpi_xover_set(&table, "coll_hibar_force", o.force, NULL, 0);
    sl[0] = '\0';
    for (int i = 0, k = 0; i < o.n_sizes; i++)
        k += snprintf(sl + k, sizeof sl - (size_t)k, "%s%zu", i ? "," : "", o.sizes[i]);
    if (o.config[0])
        hb_bench_shell_quote(qc, sizeof qc, o.config);
    snprintf(args, sizeof args,
             "%s -n %u --per-node %u%s%s --bench %s --sizes %s --reps %u --force %s%s --%s", qs,
             o.n, o.ppn, o.config[0] ? " --config " : "", qc, o.bench, sl, o.reps, o.force,
             o.no_mpirun ? " --no-mpirun" : "", o.harness);
    hb_bench_bed_cmd(dir, args, o.bed_name, o.bed_net, o.hosts, cmd, sizeof cmd);
    if (!o.common.json && !o.common.osu)
        printf("# hibar-bench mpi: %s\n", cmd);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("hibar-bench mpi: popen");
        return 1;
    }
    char line[1024];
    unsigned long long pk_mpirun = 0;
    int runs_mpirun = 0;
    while (fgets(line, sizeof line, p)) {
        char way[16], opn[16];
        unsigned long long size, pk;
        double us;
        unsigned rep, r2;

        if (sscanf(line, "sample %15s %15s %llu %lf %u", way, opn, &size, &us, &rep) == 5) {
            int op = op_index(opn), w = -1, i;
            for (int k = 0; k < N_WAYS; k++)
                if (strcmp(way, way_name[k]) == 0)
                    w = k;
            if (op < 0 || w < 0 || (i = size_index(&o, op, (size_t)size)) < 0)
                continue;
            bm_cell_t *c = &cells[op][i][w];
            if (c->n < BM_MAX_SAMPLES)
                c->x[c->n++] = us;
        } else if (strncmp(line, "note ", 5) == 0) {
            if (sscanf(line, "note mpirun run %u: %llu packets", &r2, &pk) == 2) {
                pk_mpirun += pk;
                runs_mpirun++;
            }
            if (!o.common.json && !o.common.osu)
                printf("# %s", line + 5);
        } else {
            fputs(line, stderr);
        }
    }
    int st = pclose(p);
    rc = 0;
    if (st != 0) {
        fprintf(stderr, "hibar-bench mpi: a run failed (status %d)\n", st);
        rc = WIFEXITED(st) && WEXITSTATUS(st) == 77 ? 77 : 1;
    }
    if (o.hosts && !o.no_mpirun && !o.common.json && !o.common.osu)
        printf("# Open MPI alone sent %llu packets across the bed in %d runs%s\n", pk_mpirun,
               runs_mpirun,
               pk_mpirun < 100 ? " (next to none: its ranks may all have been on one host)" : "");
    if (!o.common.json && !o.common.osu)
        printf("# the component's side: force=%s%s\n", o.force,
               strcmp(o.force, "auto") == 0 ? " (its table: hibar-info --mpi)" : "");
    print_table(&o, &table);
    if (rc == 0 && o.crossover[0])
        rc = write_crossover(&o);
    return rc;
}
