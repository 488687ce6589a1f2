/* mpi_xover.c: the Open MPI component's crossover table (defaults, names, the decision). */
#include "mpi_xover.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * 1.28x Open MPI's own under hibar-run on the 2-core one); of the data collectives, the gather
 * from 1 MiB where a node has several ranks (4 x 4 through the component on the 16-core bed,
 * forced to hibar: 0.74x and 0.53x Open MPI's own under hibar-run at 1 and 4 MiB, 0.89x at 256
 * KiB; hibar's own 0.73-0.85x at 1 MiB), none with one rank a node (0.93-1.0x there) and no
 * scatter (through the component 1.09-2.9x: doc/results.md, "the data off the loop"; half of
 * that was the daemon reading an MPI rank's whole /proc/PID/maps, fixed since: "The root's maps
 * file"; after it, on the 2-core bed, 0.41-1.11x mpirun but 0.99-2.43x Open MPI's own under
 * hibar-run: a device run is to measure it before it is taken).
 * A site measures its own with hibar-bench mpi --crossover, which writes the entries as MCA
 * parameters into a file Open MPI reads (hb_mpi_xover_load reads them back the same way). */
#define K 1024L
static const hb_mpi_xover_t xover_defaults = {
    .min =
        {
            [HB_MPI_BCAST] = {1024 * K, 0},
            [HB_MPI_SCATTER] = {1024 * K, 0},
            [HB_MPI_GATHER] = {16 * K, 1024 * K, 0},
            [HB_MPI_ALLGATHER] = {16 * K, 0},
        },
    .max =
        {
            [HB_MPI_BARRIER] = {HB_MPI_XOVER_ALL, HB_MPI_XOVER_ALL, 0},
            [HB_MPI_BCAST] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_SCATTER] = {HB_MPI_XOVER_ALL, 0},
            [HB_MPI_GATHER] = {HB_MPI_XOVER_ALL, HB_MPI_XOVER_ALL, 0},
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

/* "coll_hibar_<op>_<min|max>_<regime>" -> op, regime, bound (0 min, 1 max); "coll_hibar_force"
 * -> bound 2. 0, or -1 when name is none of the table's. */
static int xover_param(const char *name, int *op, int *regime, int *bound)
{
    char want[64];

    if (strncmp(name, "OMPI_MCA_", 9) == 0)
        name += 9;
    if (strcmp(name, "coll_hibar_force") == 0) {
        *bound = 2;
        return 0;
    }
    for (int o = 0; o < HB_MPI_N_OPS; o++)
        for (int r = 0; r < HB_MPI_N_REGIMES; r++)
            for (int b = 0; b < 2; b++) {
                snprintf(want, sizeof want, "coll_hibar_%s_%s_%s", xover_ops[o], b ? "max" : "min",
                         xover_regimes[r]);
                if (strcmp(name, want) == 0) {
                    *op = o;
                    *regime = r;
                    *bound = b;
                    return 0;
                }
            }
    return -1;
}

int hb_mpi_xover_set(hb_mpi_xover_t *x, const char *name, const char *value,
                     hb_mpi_xover_src_t *src, int src_index)
{
    int op = 0, regime = 0, bound = 0;
    char *end;

    if (xover_param(name, &op, &regime, &bound) != 0)
        return 0;
    if (bound == 2) {
        for (int i = HB_MPI_FORCE_AUTO; i <= HB_MPI_FORCE_OMPI; i++)
            if (strcmp(value, xover_forces[i]) == 0 || (value[0] == '0' + i && value[1] == '\0')) {
                x->force = i;
                if (src)
                    src->force = (unsigned char)src_index;
                return 1;
            }
        return -1;
    }
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || v < -1)
        return -1;
    if (bound)
        x->max[op][regime] = v;
    else
        x->min[op][regime] = v;
    if (src)
        src->of[op][regime][bound] = (unsigned char)src_index;
    return 1;
}

/* s without its leading and trailing blanks (in place). */
static char *xover_trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int hb_mpi_xover_read(hb_mpi_xover_t *x, const char *path, hb_mpi_xover_src_t *src, char *err,
                      size_t n)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int idx = 0, set = 0, lineno = 0;

    if (!f)
        return 0;
    if (src && src->n < 2 + HB_MPI_XOVER_MAX_FILES) {
        idx = src->n++;
        snprintf(src->name[idx], sizeof src->name[idx], "%s", path);
    }
    while (fgets(line, sizeof line, f)) {
        char *k = line, *eq, *v;
        int rc;

        lineno++;
        line[strcspn(line, "#\n")] = '\0'; /* Open MPI's comments: from '#' on */
        eq = strchr(k, '=');
        if (!eq)
            continue;
        *eq = '\0';
        k = xover_trim(k);
        v = xover_trim(eq + 1);
        rc = hb_mpi_xover_set(x, k, v, src, idx);
        if (rc < 0) {
            snprintf(err, n, "%s:%d: %s = '%s': not a valid value", path, lineno, k, v);
            fclose(f);
            return -1;
        }
        set += rc;
    }
    fclose(f);
    return set;
}

int hb_mpi_xover_load(hb_mpi_xover_t *x, hb_mpi_xover_src_t *src, const char *sysconfdir, char *err,
                      size_t n)
{
    char list[4096], *files[HB_MPI_XOVER_MAX_FILES];
    const char *e = getenv("OMPI_MCA_mca_base_param_files");
    const char *home = getenv("HOME");
    extern char **environ;
    int nf = 0;

    hb_mpi_xover_defaults(x);
    memset(src, 0, sizeof *src);
    snprintf(src->name[HB_MPI_XOVER_SRC_BUILTIN], sizeof src->name[0], "built-in table");
    snprintf(src->name[HB_MPI_XOVER_SRC_ENV], sizeof src->name[0], "environment");
    src->n = 2;
    if (!e)
        e = getenv("OMPI_MCA_mca_param_files"); /* its deprecated synonym */
    if (e)
        snprintf(list, sizeof list, "%s", e);
    else
        snprintf(list, sizeof list, "%s/.openmpi/mca-params.conf,%s/openmpi-mca-params.conf",
                 home ? home : "", sysconfdir && *sysconfdir ? sysconfdir : "/etc/openmpi");
    for (char *sv = NULL, *t = strtok_r(list, ",", &sv); t && nf < HB_MPI_XOVER_MAX_FILES;
         t = strtok_r(NULL, ",", &sv))
        if (strcmp(t, "none") != 0)
            files[nf++] = t;
    /* Open MPI reads the last file first: an earlier one overrides a later one */
    for (int i = nf - 1; i >= 0; i--)
        if (hb_mpi_xover_read(x, files[i], src, err, n) < 0)
            return -1;
    for (char **v = environ; *v; v++) {
        char name[128];
        const char *eq = strchr(*v, '=');

        if (strncmp(*v, "OMPI_MCA_coll_hibar_", 20) != 0 || !eq || (size_t)(eq - *v) >= sizeof name)
            continue;
        memcpy(name, *v, (size_t)(eq - *v));
        name[eq - *v] = '\0';
        if (hb_mpi_xover_set(x, name, eq + 1, src, HB_MPI_XOVER_SRC_ENV) < 0) {
            snprintf(err, n, "%s='%s': not a valid value", name, eq + 1);
            return -1;
        }
    }
    return 0;
}

void hb_mpi_xover_from_medians(hb_mpi_xover_t *x, hb_mpi_op_t op, hb_mpi_regime_t regime,
                               const size_t *sizes, const double *hibar, const double *below, int n)
{
    int best = -1, best_len = 0;

    for (int i = 0; i < n;) {
        int j = i;

        while (j < n && hibar[j] > 0 && below[j] > 0 && hibar[j] < below[j])
            j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j > i ? j : i + 1;
    }
    if (best < 0) { /* the component below wins everywhere */
        x->min[op][regime] = 0;
        x->max[op][regime] = 0;
        return;
    }
    if (op == HB_MPI_BARRIER) {
        x->min[op][regime] = 0;
        x->max[op][regime] = HB_MPI_XOVER_ALL;
        return;
    }
    x->min[op][regime] = best == 0 ? 0 : (long)sizes[best];
    x->max[op][regime] = best + best_len == n ? HB_MPI_XOVER_ALL : (long)sizes[best + best_len - 1];
}
