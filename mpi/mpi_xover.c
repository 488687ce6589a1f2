/* mpi_xover.c: the Open MPI component's crossover table (defaults, names, the decision). */
#include "mpi_xover.h"

#include <stdio.h>

static const char *const xover_ops[HB_MPI_N_OPS] = {"barrier", "bcast", "scatter", "gather",
                                                    "allgather"};
static const char *const xover_regimes[HB_MPI_N_REGIMES] = {"node", "nodes", "nodes1"};
static const char *const xover_regime_desc[HB_MPI_N_REGIMES] = {"one node", "several nodes",
                                                                "several nodes, one rank each"};
static const char *const xover_forces[] = {"auto", "hibar", "ompi"};

/* Measured on the 2-core development machine with scripts/mpi-coll-bench, 4 ranks on one node
 * (doc/results.md, "Open MPI programs: mca_coll_hibar"), hibar against the component below it
 * on the same ranks (Open MPI's tuned over shared memory): kept where hibar won in every run.
 * One node: the barrier; bcast and scatter from 1 MiB, gather from 16 KiB, allgather from 16
 * to 256 KiB (below those hibar's fixed cost of a collective loses to Open MPI's eager path;
 * above 256 KiB allgather swung from 0.1x to 3.6x between runs of the loaded machine). Several
 * nodes: the barrier where a node has several ranks (4 hosts x 4 ranks: libhibar's barrier
 * 0.71-0.81x Open MPI's on the 16-core bed, 0.29x through the component on the 2-core one), not
 * with one rank per node (4 x 1: 0.95-1.23x on the 16-core bed, and through the component
 * 1.28x Open MPI's own under hibar-run on the 2-core one); no data collective (each one's daemon
 * hop costs more than Open MPI's point-to-point where a rank has a core: issue 19's figures). */
#define K 1024L
static const hb_mpi_xover_t xover_defaults = {
    .min =
        {
            [HB_MPI_BCAST] = {1024 * K, 0},
            [HB_MPI_SCATTER] = {1024 * K, 0},
            [HB_MPI_GATHER] = {16 * K, 0},
            [HB_MPI_ALLGATHER] = {16 * K, 0},
        },
    .max =
        {
            [HB_MPI_BARRIER] = {HB_MPI_XOVER_ALL, HB_MPI_XOVER_ALL, 0},
            [HB_MPI_BCAST] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_SCATTER] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_GATHER] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_ALLGATHER] = {256 * K, 0},
        },
    .force = HB_MPI_FORCE_AUTO,
};
#undef K

void hb_mpi_xover_defaults(hb_mpi_xover_t *x)
{
    *x = xover_defaults;
}

const char *hb_mpi_op_name(hb_mpi_op_t op)
{
    return op < HB_MPI_N_OPS ? xover_ops[op] : "?";
}

const char *hb_mpi_regime_name(hb_mpi_regime_t regime)
{
    return regime < HB_MPI_N_REGIMES ? xover_regimes[regime] : "?";
}

const char *hb_mpi_regime_desc(hb_mpi_regime_t regime)
{
    return regime < HB_MPI_N_REGIMES ? xover_regime_desc[regime] : "?";
}

const char *hb_mpi_force_name(int force)
{
    return force >= 0 && force <= HB_MPI_FORCE_OMPI ? xover_forces[force] : "?";
}

int hb_mpi_xover_takes(const hb_mpi_xover_t *x, hb_mpi_op_t op, hb_mpi_regime_t regime,
                       size_t bytes)
{
    long min = x->min[op][regime], max = x->max[op][regime];

    if (x->force == HB_MPI_FORCE_HIBAR)
        return 1;
    if (x->force == HB_MPI_FORCE_OMPI || max == 0)
        return 0;
    if (op == HB_MPI_BARRIER)
        return 1;
    return (min <= 0 || bytes >= (size_t)min) && (max < 0 || bytes <= (size_t)max);
}

/* "64K", "1M", "1000" */
static void xover_size(long v, char *buf, size_t n)
{
    if (v >= 1L << 20 && v % (1L << 20) == 0)
        snprintf(buf, n, "%ldM", v >> 20);
    else if (v >= 1L << 10 && v % (1L << 10) == 0)
        snprintf(buf, n, "%ldK", v >> 10);
    else
        snprintf(buf, n, "%ld", v);
}

const char *hb_mpi_xover_fmt(hb_mpi_op_t op, long min, long max, char *buf, size_t n)
{
    char a[24], b[24];

    xover_size(min, a, sizeof a);
    xover_size(max, b, sizeof b);
    if (op == HB_MPI_BARRIER)
        snprintf(buf, n, "%s", max != 0 ? "yes" : "no");
    else if (max == 0 || (max > 0 && min > max))
        snprintf(buf, n, "none");
    else if (max < 0)
        snprintf(buf, n, min <= 0 ? "every size" : ">= %s", a);
    else
        snprintf(buf, n, "%s..%s", min <= 0 ? "0" : a, b);
    return buf;
}
