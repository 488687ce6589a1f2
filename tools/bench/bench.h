/* bench.h: what every hibar-bench mode shares: common options, the mode table, output rows. */
#ifndef HB_BENCH_H
#define HB_BENCH_H

#include "hb_stats.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* A mode: `hibar-bench NAME ARGS`. main gets argv[0] = NAME and returns the exit status. */
typedef struct hb_bench_mode {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
} hb_bench_mode_t;

/* Options every mode accepts: --json, --osu, --csv FILE, --confidence LEVEL (default 0.95). */
typedef struct hb_bench_common {
    int json;
    int osu; /* the OSU micro-benchmarks' table (common/hb_osu.h), nothing else on stdout */
    const char *csv;
    double confidence;
} hb_bench_common_t;

/* Take the common options out of argv (argv is compacted, *argc updated). 0, or -1 after
 * printing what is wrong (exit status 2 then). */
int hb_bench_common_parse(int *argc, char **argv, hb_bench_common_t *c_p);
#define HB_BENCH_COMMON_USAGE "[--json | --osu] [--csv FILE] [--confidence LEVEL]"

/* One result row (doc/design.md section 6). Latencies in the stats are microseconds. */
typedef struct hb_bench_row {
    const char *impl; /* backend, protocol or algorithm; "open-mpi" for the peer */
    uint32_t nodes, ranks;
    uint64_t size;        /* bytes; 0 for barriers */
    uint64_t reps;        /* repetitions measured (MPIBlib) */
    const hb_stats_t *st; /* over `iters` samples */
    uint64_t iters;
    const char *extra_json; /* more `"key": value` pairs, comma-separated, or NULL */
} hb_bench_row_t;

/* Output of one benchmark run: an OSU-style table on stdout (JSON lines with --json, the OSU
 * micro-benchmarks' own table with --osu: a title and header per impl) and, with --csv, the
 * same rows in a CSV file. */
typedef struct hb_bench_out {
    const char *bench;
    const hb_bench_common_t *common;
    FILE *csv;
    int header_done;
    char osu_impl[64]; /* --osu: the impl of the last header */
} hb_bench_out_t;

int hb_bench_out_open(hb_bench_out_t *o, const char *bench, const hb_bench_common_t *c);
/* A "# ..." comment line on the table (suppressed with --json and --osu). */
void hb_bench_out_note(hb_bench_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hb_bench_out_row(hb_bench_out_t *o, const hb_bench_row_t *r);
void hb_bench_out_close(hb_bench_out_t *o);

/* Shell-quote s into out (single quotes; cut short rather than overflow cap). */
void hb_bench_shell_quote(char *out, size_t cap, const char *s);

/*
 * Runs of a test-bed script (netns/SCRIPT: the source tree's tests/netns/ for a build tree or
 * HIBAR_SRCDIR, else the installed copy under libexec/hibar/netns/) on a one-site test bed
 * (root): hb_bench_bed_script checks root (77) and that SCRIPT and the bed exist (2, after
 * saying why), then gives the script's quoted path to start the arguments with;
 * hb_bench_bed_cmd wraps the arguments in the bed of `hosts` hosts (or runs them in the bed
 * this process is in; hosts 0: on this host, no bed), with top_builddir for the build tree's tools
 * next to `dir` (this executable's directory), or, installed, the programs beside it in the
 * environment.
 */
int hb_bench_bed_script(const char *who, const char *script, char *qscript, size_t cap);
void hb_bench_bed_cmd(const char *dir, const char *args, const char *bed_name, const char *bed_net,
                      unsigned hosts, char *cmd, size_t cap);

/* Where the test-bed scripts are (netns/testbed, netns/ompi-run, ..., slurm/, hb_test.sh): the
 * tests/ of HIBAR_SRCDIR, or of the configured source tree for a build tree's hibar-bench, else
 * the installed copies under libexec/hibar. Returns 1 for the installed ones. */
int hb_bench_scripts(char *buf, size_t cap);
/* The directory of this executable (".", if /proc cannot tell). */
void hb_bench_exe_dir(char *buf, size_t cap);
/* A helper program NAME (installed under libexec/hibar): beside hibar-bench in the build tree,
 * DIR/../libexec/hibar, or the configured pkglibexecdir; its path into buf. */
void hb_bench_helper(const char *dir, const char *name, char *buf, size_t cap);

/* Run rank(i, arg) in n forked processes, i = 0..n-1 (stdio flushed first); each child stores
 * its result in status[i], which must be memory it shares with this process (MAP_SHARED).
 * Waits for all of them: 0 if every rank returned 0, else -1 after printing "PROG: rank I
 * failed: ..." for each one that did not (or the fork error; the ranks forked are killed). */
int hb_bench_fork_ranks(const char *prog, uint32_t n, int (*rank)(uint32_t i, void *arg), void *arg,
                        int *status);

/*
 * Open MPI's side of --compare: hibar-mpi-bench (found beside this program) under mpirun with n
 * ranks on this host, one row of `bench` at `size` bytes, iters repetitions after warmup; mca:
 * more mpirun arguments ("" for none). Fills *st and *iters_p from the peer's JSON row. 0, or -1
 * after saying why (bench_client.c).
 */
int hb_bench_mpi_peer(const char *bench, uint32_t n, size_t size, uint64_t iters, uint64_t warmup,
                      const char *mca, hb_stats_t *st, uint64_t *iters_p);

/* The modes (one file each). */
int hb_bench_barrier_main(int argc, char **argv); /* barrier: bench_client.c */
int hb_bench_scatter_main(int argc, char **argv); /* scatter: bench_client.c */
int hb_bench_gather_main(int argc, char **argv);  /* gather --ranks: bench_client.c */
int hb_bench_hwbarrier_main(int argc, char **argv);
int hb_bench_cluster_main(int argc, char **argv); /* cluster-barrier: bench_cluster.c */
int hb_bench_fence_main(int argc, char **argv);   /* fence: bench_fence.c */
int hb_bench_logp_main(int argc, char **argv);    /* logp: bench_logp.c */
/* Links come up on demand and only from one side of a pair (hbd_net_link): a one-byte flat
 * gather to each of roots[0..n-1] on every daemon of cl links each root with every node.
 * 0, or an error (printed after "prog: "). bench_logp.c. */
struct hbd_cluster;
int hb_bench_link(struct hbd_cluster *cl, const uint32_t *roots, uint32_t n, const char *prog);
/* Write the parts `what` of p (common/hb_params.h: hb_params_update) to cache, or to the
 * cluster's file (hb_params_path) when cache is NULL, and say where on out. 0 or an error
 * (logged). bench_logp.c. */
struct hb_params;
int hb_bench_cache_write(hb_bench_out_t *out, const char *cache, const struct hb_params *p,
                         unsigned what, const char *prog);
/* scatter|gather across nodes through the daemons (--config): bench_coll.c. wants: is argv
 * (argv[0] = mode) such a run (gather; scatter with --config, or inside the test bed without
 * --ranks)? */
int hb_bench_coll_wants(int argc, char **argv);
int hb_bench_coll_main(int argc, char **argv);
/* Is config the configuration of the tests/netns/testbed this runs in (then its daemons run
 * on the bed's hosts, through $HIBAR_TESTBED_HOSTEXEC)? bench_coll.c. */
int hb_bench_on_bed(const char *config);
int hb_bench_lanes_main(int argc, char **argv);   /* lanes: bench_lanes.c */
int hb_bench_subset_main(int argc, char **argv);  /* subset: bench_subset.c */
int hb_bench_methods_main(int argc, char **argv); /* methods: bench_methods.c */
int hb_bench_repro_main(int argc, char **argv);   /* reproduce: bench_repro.c */
int hb_bench_mpi_main(int argc, char **argv);     /* mpi: bench_mpi.c */

/* Sizes: comma-separated N[K|M|G] or FROM..TO[:STEP] (no step: powers of two), each at most
 * 1G (hb_size_list_parse). 0 or -1 after printing what is wrong. bench_plot.c. */
int hb_bench_sizes_parse(const char *spec, size_t *sizes, int max, int *n_p);

/* One curve of a plot. */
typedef struct hb_bench_series {
    const char *title;
    double *x, *y;
    size_t n;
} hb_bench_series_t;

/* Write DIR/NAME.dat and DIR/NAME.gp and render DIR/NAME.png with gnuplot (logxy: log
 * scales). 0, or -1 after printing what failed (the script is kept). */
int hb_bench_plot(const char *dir, const char *name, const char *title, const char *xlabel,
                  const char *ylabel, const hb_bench_series_t *ser, int nser, int logxy);

#endif
