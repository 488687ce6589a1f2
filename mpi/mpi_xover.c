/* mpi_xover.c: the Open MPI component's crossover table (defaults, names, the decision). */
#include "mpi_xover.h"

#include <stdio.h>

static const char *const xover_ops[HB_MPI_N_OPS] = {"barrier", "bcast", "scatter", "gather",
                                                    "allgather"};
static const char *const xover_regimes[HB_MPI_N_REGIMES] = {"node", "nodes"};
static const char *const xover_forces[] = {"auto", "hibar", "ompi"};

/* Measured on the 2-core development machine (doc/results.md, "Open MPI component"), hibar
 * against the component below it (Open MPI's tuned over shared memory on one node, over TCP
 * between nodes). One node: the barrier and every collective up to the sizes below. Several
 * nodes: the barrier only; each data collective's daemon hop costs more than Open MPI's
 * point-to-point at every size where a rank has a core (issue 19's figures), so it goes down. */
static const hb_mpi_xover_t xover_defaults = {
    .max =
        {
            [HB_MPI_BARRIER] = {HB_MPI_XOVER_ALL, HB_MPI_XOVER_ALL},
            [HB_MPI_BCAST] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_SCATTER] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_GATHER] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_ALLGATHER] = {HB_MPI_XOVER_ALL, 0},
        },
    .force = HB_MPI_FORCE_AUTO,
};

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

const char *hb_mpi_force_name(int force)
{
    return force >= 0 && force <= HB_MPI_FORCE_OMPI ? xover_forces[force] : "?";
}

int hb_mpi_xover_takes(const hb_mpi_xover_t *x, hb_mpi_op_t op, hb_mpi_regime_t regime,
                       size_t bytes)
{
    long max = x->max[op][regime];

    if (x->force == HB_MPI_FORCE_HIBAR)
        return 1;
    if (x->force == HB_MPI_FORCE_OMPI)
        return 0;
    if (op == HB_MPI_BARRIER)
        return max != 0;
    return max < 0 || (max > 0 && bytes <= (size_t)max);
}

const char *hb_mpi_xover_fmt(hb_mpi_op_t op, long max, char *buf, size_t n)
{
    if (op == HB_MPI_BARRIER)
        snprintf(buf, n, "%s", max != 0 ? "yes" : "no");
    else if (max < 0)
        snprintf(buf, n, "every size");
    else if (max == 0)
        snprintf(buf, n, "none");
    else if (max % (1L << 20) == 0)
        snprintf(buf, n, "<= %ldM", max >> 20);
    else if (max % (1L << 10) == 0)
        snprintf(buf, n, "<= %ldK", max >> 10);
    else
        snprintf(buf, n, "<= %ld B", max);
    return buf;
}
