/* mpi_xover.h: the crossover table of the Open MPI component: which calls hibar takes (no Open
 * MPI header here: hibar-info shows the same table). */
#ifndef HB_MPI_XOVER_H
#define HB_MPI_XOVER_H

#include <stddef.h>

/* The operations the component can take. */
typedef enum {
    HB_MPI_BARRIER,
    HB_MPI_BCAST,
    HB_MPI_SCATTER,
    HB_MPI_GATHER,
    HB_MPI_ALLGATHER,
    HB_MPI_N_OPS
} hb_mpi_op_t;

/* Where the job runs: every rank on one node; several nodes, some with several ranks; several
 * nodes with one rank each. */
typedef enum { HB_MPI_ONE_NODE, HB_MPI_NODES, HB_MPI_NODES1, HB_MPI_N_REGIMES } hb_mpi_regime_t;

/* Who serves a call: the table, or one side for every size (MCA parameter coll_hibar_force). */
typedef enum { HB_MPI_FORCE_AUTO, HB_MPI_FORCE_HIBAR, HB_MPI_FORCE_OMPI } hb_mpi_force_t;

/* The sizes hibar takes, per operation and regime, in bytes per rank (the whole buffer for
 * bcast): from min to max; max HB_MPI_XOVER_ALL: no upper bound, 0: none (the component below
 * takes them all). A barrier has no size: any max but 0 takes it. */
#define HB_MPI_XOVER_ALL (-1L)
typedef struct hb_mpi_xover {
    long min[HB_MPI_N_OPS][HB_MPI_N_REGIMES];
    long max[HB_MPI_N_OPS][HB_MPI_N_REGIMES];
    int force; /* hb_mpi_force_t */
} hb_mpi_xover_t;

/* The built-in table (measured with hibar-bench: doc/results.md, "Open MPI component"). */
void hb_mpi_xover_defaults(hb_mpi_xover_t *x);

/* "barrier", "bcast", ...; "node" / "nodes" / "nodes1": the MCA parameters of (op, regime) are
 * coll_hibar_<op>_min_<regime> and coll_hibar_<op>_max_<regime>; the regime in words ("one
 * node", "several nodes", "several nodes, one rank each"). */
const char *hb_mpi_op_name(hb_mpi_op_t op);
const char *hb_mpi_regime_name(hb_mpi_regime_t regime);
const char *hb_mpi_regime_desc(hb_mpi_regime_t regime);
const char *hb_mpi_force_name(int force);

/* Whether hibar takes op of `bytes` in regime. Pure; the same answer on every rank that has the
 * same table, which is what keeps the ranks of one call on the same side. */
int hb_mpi_xover_takes(const hb_mpi_xover_t *x, hb_mpi_op_t op, hb_mpi_regime_t regime,
                       size_t bytes);

/* One entry of the table as text: "every size", "none", ">= 1M", "16K..4M"; for the barrier
 * "yes" / "no". Returns buf. */
const char *hb_mpi_xover_fmt(hb_mpi_op_t op, long min, long max, char *buf, size_t n);

#endif /* HB_MPI_XOVER_H */
