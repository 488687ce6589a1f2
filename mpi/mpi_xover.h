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

/*
 * Where the table a process gets comes from, as Open MPI reads the MCA parameters (hibar-info
 * --mpi, hibar-bench mpi; the component itself gets them from Open MPI's MCA system): the
 * built-in table; under it the files of MCA parameters (mca_base_param_files: by default
 * $HOME/.openmpi/mca-params.conf, then the system's openmpi-mca-params.conf; an earlier file
 * wins over a later one); over them the environment (OMPI_MCA_coll_hibar_*: what mpirun --mca
 * and hibar-run's environment give the ranks). hibar-bench mpi --crossover writes such a file.
 */
#define HB_MPI_XOVER_SRC_BUILTIN 0
#define HB_MPI_XOVER_SRC_ENV 1
#define HB_MPI_XOVER_MAX_FILES 8
typedef struct hb_mpi_xover_src {
    /* per entry (bound 0: min, 1: max) and force: an index into name[] */
    unsigned char of[HB_MPI_N_OPS][HB_MPI_N_REGIMES][2];
    unsigned char force;
    int n; /* names in use: "built-in table", "environment", then the files read */
    char name[2 + HB_MPI_XOVER_MAX_FILES][256];
} hb_mpi_xover_src_t;

/* The parameter `name` ("coll_hibar_gather_min_node", "coll_hibar_force"; with or without
 * the OMPI_MCA_ prefix) set to `value` in x, its source recorded as src_index (src may be
 * NULL). 1: set; 0: not a parameter of the table; -1: a bad value (nothing set). */
int hb_mpi_xover_set(hb_mpi_xover_t *x, const char *name, const char *value,
                     hb_mpi_xover_src_t *src, int src_index);

/* The table's parameters of one file of MCA parameters (Open MPI's syntax: "name = value",
 * '#' comments) over x, their source recorded as the file. The number set, 0 for a missing
 * file; -1 for a bad value (its line in err). */
int hb_mpi_xover_read(hb_mpi_xover_t *x, const char *path, hb_mpi_xover_src_t *src, char *err,
                      size_t n);

/* The table a process started now would get: defaults, files, environment (above). sysconfdir:
 * Open MPI's (ompi_info --path sysconfdir), "" if unknown. 0, or -1 with err filled. */
int hb_mpi_xover_load(hb_mpi_xover_t *x, hb_mpi_xover_src_t *src, const char *sysconfdir, char *err,
                      size_t n);

/*
 * Crossovers from measurements (hibar-bench mpi --crossover): n sizes in increasing order, with
 * hibar's median (every call to hibar) and the component below's (OMPI_MCA_coll=^hibar) at
 * each, in microseconds (<= 0: not measured). Sets x's entry of (op, regime): the longest run of
 * consecutive sizes where hibar is faster, from its first size (0 when it starts at the first
 * size measured) to its last (no bound when it ends at the last size measured); none when hibar
 * is never faster. For the barrier (one size) yes or no.
 */
void hb_mpi_xover_from_medians(hb_mpi_xover_t *x, hb_mpi_op_t op, hb_mpi_regime_t regime,
                               const size_t *sizes, const double *hibar, const double *below,
                               int n);

#endif /* HB_MPI_XOVER_H */
