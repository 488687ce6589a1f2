/* bench_main.c: hibar-bench: dispatch `hibar-bench MODE ARGS` to the mode's file. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include "hb_cli.h"
#include "hb_log.h"

#include <stdio.h>
#include <string.h>

/* One line per mode; each mode lives in its own bench_<mode>.c. */
static const hb_bench_mode_t hb_bench_modes[] = {
    {"barrier", "libhibar barrier latency, one node, N ranks (--compare: Open MPI)",
     hb_bench_barrier_main},
    {"scatter", "libhibar scatter latency per size, one node, N ranks (--compare: Open MPI)",
     hb_bench_scatter_main},
    {"hwbarrier", "chassis barrier latency per backend (shm, scic), CPU of idle waits",
     hb_bench_hwbarrier_main},
    {"cluster-barrier", "whole-cluster barrier (scmd, tree) on an emulated cluster vs the formulas",
     hb_bench_cluster_main},
    {"gather",
     "scatter|gather across the daemons of --config: flat, single-lane, multi-lane, "
     "P sweep, vs the model (bench_coll.c); with --ranks N: libhibar's gather as scatter's",
     hb_bench_coll_main},
    {"alltoall",
     "alltoall across the daemons of --config: flat against pairwise (PlogP-BR's A/B) vs the "
     "model; --compare: Open MPI's MPI_Alltoall in the same run",
     hb_bench_coll_main},
    {"fence", "PMIx_Fence latency (no data, 1 KiB, 64 KiB per rank) on emulated clusters",
     hb_bench_fence_main},
    {"methods", "MPIBlib timing methods (global, maximum, root): cost and agreement, sweep",
     hb_bench_methods_main},
    {"logp", "PlogP(-BR) parameters between daemons (L, o_s, o_r, g(m), g(m, C)), cached",
     hb_bench_logp_main},
    {"lanes", "b_WAN(P): WAN bandwidth with P node pairs at once across two sites, cached",
     hb_bench_lanes_main},
    {"subset", "a job's barrier on k of N nodes vs those k as a cluster, and beside another job",
     hb_bench_subset_main},
    {"mpi",
     "an MPI program under mpirun, hibar-run with mca_coll_hibar, and ^hibar, interleaved; "
     "--crossover: the component's crossovers measured",
     hb_bench_mpi_main},
    {"reproduce", "the seed papers' experiments on this machine, doc/reproduction.md (--quick)",
     hb_bench_repro_main},
};
#define HB_BENCH_NMODES (sizeof(hb_bench_modes) / sizeof(hb_bench_modes[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: hibar-bench MODE [OPTIONS] " HB_BENCH_COMMON_USAGE "\n"
               "       hibar-bench MODE --help\n       hibar-bench --version\nmodes:\n");
    for (size_t i = 0; i < HB_BENCH_NMODES; i++)
        fprintf(f, "  %-16s %s\n", hb_bench_modes[i].name, hb_bench_modes[i].summary);
    fprintf(f, "Every mode prints an OSU-style table (# Size  Avg Latency(us)  Min  Max  "
               "Iterations ...),\nwith --json one JSON object per result row, with --osu the "
               "OSU micro-benchmarks' own\ntable (hibar and the Open MPI peer alike), with --csv "
               "FILE the rows as CSV.\n");
}

int main(int argc, char **argv)
{
    hb_log_init_from_env();
    hb_log_set_ident("hibar-bench");
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? HB_EXIT_USAGE : HB_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
        return hb_cli_version("hibar-bench");
    if (hb_bench_coll_wants(argc - 1, argv + 1)) /* scatter --config: across nodes */
        return hb_bench_coll_main(argc - 1, argv + 1);
    for (size_t i = 0; i < HB_BENCH_NMODES; i++)
        if (strcmp(argv[1], hb_bench_modes[i].name) == 0)
            return hb_bench_modes[i].main(argc - 1, argv + 1);
    fprintf(stderr, "hibar-bench: unknown mode '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
