/* mpi_coll_component.c: mca_coll_hibar's component: MCA parameters, joining the hibar job, leaving.
 */
#include "mpi_coll.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static int hb_mpi_register(void);
static int hb_mpi_close(void);
static int hb_mpi_init_query(bool progress_threads, bool mpi_threads);

hb_mpi_component_t mca_coll_hibar_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "hibar",
                    MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                          OMPI_RELEASE_VERSION),
                    .mca_close_component = hb_mpi_close,
                    .mca_register_component_params = hb_mpi_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = hb_mpi_init_query,
            .collm_comm_query = hb_mpi_comm_query,
        },
    .priority = 40,
};

#define C mca_coll_hibar_component

void hb_mpi_verbose(int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    opal_output_verbose(level, ompi_coll_base_framework.framework_output, "coll:hibar: %s", line);
}

static int hb_mpi_register_int(const char *name, const char *what, mca_base_var_type_t type,
                               mca_base_var_enum_t *en, void *storage)
{
    int rc = mca_base_component_var_register(&C.super.collm_version, name, what, type, en, 0, 0,
                                             OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, storage);
    return rc < 0 ? rc : OMPI_SUCCESS;
}

static int hb_mpi_register(void)
{
    static const mca_base_var_enum_value_t forces[] = {{HB_MPI_FORCE_AUTO, "auto"},
                                                       {HB_MPI_FORCE_HIBAR, "hibar"},
                                                       {HB_MPI_FORCE_OMPI, "ompi"},
                                                       {0, NULL}};
    mca_base_var_enum_t *en = NULL;
    char name[64], what[256];
    int rc;

    hb_mpi_xover_defaults(&C.xover);
    rc = hb_mpi_register_int("priority",
                             "Priority of the hibar coll component (used only where the process "
                             "was started by hibard)",
                             MCA_BASE_VAR_TYPE_INT, NULL, &C.priority);
    if (rc != OMPI_SUCCESS)
        return rc;
    rc = mca_base_var_enum_create("coll_hibar_force", forces, &en);
    if (rc != OPAL_SUCCESS)
        return rc;
    rc = hb_mpi_register_int("force",
                             "Who serves the calls: auto (the crossover table), hibar (every call "
                             "hibar can take), ompi (every call goes to the component below)",
                             MCA_BASE_VAR_TYPE_INT, en, &C.xover.force);
    OBJ_RELEASE(en);
    if (rc != OMPI_SUCCESS)
        return rc;
    for (int op = 0; op < HB_MPI_N_OPS; op++) {
        for (int r = 0; r < HB_MPI_N_REGIMES; r++) {
            const char *on = hb_mpi_regime_desc(r);
            char opname[16];

            snprintf(opname, sizeof opname, "MPI_%c%s", hb_mpi_op_name(op)[0] - 'a' + 'A',
                     hb_mpi_op_name(op) + 1);
            snprintf(name, sizeof name, "%s_max_%s", hb_mpi_op_name(op), hb_mpi_regime_name(r));
            if (op == HB_MPI_BARRIER)
                snprintf(what, sizeof what,
                         "Whether hibar takes MPI_Barrier and MPI_Ibarrier when the job is on "
                         "%s (0: the component below takes them; any other value: hibar)",
                         on);
            else
                snprintf(what, sizeof what,
                         "Largest %s (bytes%s) hibar takes when the job is on %s; larger ones "
                         "go to the component below (-1: no bound, 0: none)",
                         opname, op == HB_MPI_BCAST ? "" : " per rank", on);
            rc = hb_mpi_register_int(name, what, MCA_BASE_VAR_TYPE_LONG, NULL, &C.xover.max[op][r]);
            if (rc != OMPI_SUCCESS || op == HB_MPI_BARRIER)
                continue;
            snprintf(name, sizeof name, "%s_min_%s", hb_mpi_op_name(op), hb_mpi_regime_name(r));
            snprintf(what, sizeof what,
                     "Smallest %s (bytes%s) hibar takes when the job is on %s; smaller ones go "
                     "to the component below",
                     opname, op == HB_MPI_BCAST ? "" : " per rank", on);
            rc = hb_mpi_register_int(name, what, MCA_BASE_VAR_TYPE_LONG, NULL, &C.xover.min[op][r]);
        }
        if (rc != OMPI_SUCCESS)
            return rc;
    }
    return OMPI_SUCCESS;
}

/* Every process may use the component; whether it runs under hibard is known at
 * MPI_COMM_WORLD's query. A handle serves one thread at a time: not with MPI_THREAD_MULTIPLE. */
static int hb_mpi_init_query(bool progress_threads, bool mpi_threads)
{
    if (mpi_threads) {
        hb_mpi_verbose(1, "not used with MPI_THREAD_MULTIPLE");
        return OMPI_ERR_NOT_SUPPORTED;
    }
    return OMPI_SUCCESS;
}

static void hb_mpi_log(int level, const char *msg, void *arg)
{
    static const int levels[] = {
        [HIBAR_LOG_ERROR] = 1, [HIBAR_LOG_WARN] = 5, [HIBAR_LOG_INFO] = 20, [HIBAR_LOG_DEBUG] = 50};

    hb_mpi_verbose(level >= 0 && level <= HIBAR_LOG_DEBUG ? levels[level] : 1, "libhibar: %s", msg);
}

/* What each rank tells the others once joined: its MPI_COMM_WORLD rank and its node (a hash
 * of its daemon's socket). Every rank gets the same table, so every rank takes the same
 * decision. */
typedef struct hb_mpi_whoami {
    int32_t world_rank;
    int32_t pad;
    uint64_t node;
} hb_mpi_whoami_t;

static uint64_t hb_mpi_node_hash(void)
{
    const char *s = getenv("HIBAR_SOCKET");
    uint64_t x = 1469598103934665603ULL; /* FNV-1a */

    for (; s && *s; s++)
        x = (x ^ (unsigned char)*s) * 1099511628211ULL;
    return x;
}

static int hb_mpi_cmp_node(const void *a, const void *b)
{
    uint64_t x = ((const hb_mpi_whoami_t *)a)->node, y = ((const hb_mpi_whoami_t *)b)->node;
    return (x > y) - (x < y);
}

/* Whether no two ranks share a node (sorts all by node). */
static int hb_mpi_one_per_node(hb_mpi_whoami_t *all, int size)
{
    qsort(all, (size_t)size, sizeof *all, hb_mpi_cmp_node);
    for (int i = 1; i < size; i++)
        if (all[i].node == all[i - 1].node)
            return 0;
    return 1;
}

/* Check the job: hibar's ranks are MPI_COMM_WORLD's (same size, same order). */
static int hb_mpi_check_job(struct ompi_communicator_t *world)
{
    int size = ompi_comm_size(world), hsize = 0, rc, ok = 1;
    hb_mpi_whoami_t me = {.world_rank = ompi_comm_rank(world), .node = hb_mpi_node_hash()};
    hb_mpi_whoami_t *all;

    if (hibar_size(C.h, &hsize) != HIBAR_SUCCESS || hsize != size) {
        /* hibar_size is the same on every rank of the job: every rank stops here */
        hb_mpi_verbose(1, "not used: the hibar job has %d ranks, MPI_COMM_WORLD %d", hsize, size);
        return -1;
    }
    all = malloc(sizeof *all * (size_t)size);
    /* a rank without memory declines (NULL): every rank gets HIBAR_ERR_INVAL */
    rc = hibar_allgather(C.h, all ? &me : NULL, all, sizeof me);
    if (rc != HIBAR_SUCCESS) {
        hb_mpi_verbose(1, "not used: hibar_allgather: %s", hibar_strerror(rc));
        free(all);
        return -1;
    }
    C.regime = HB_MPI_ONE_NODE;
    for (int i = 0; i < size; i++) {
        ok &= all[i].world_rank == i;
        if (all[i].node != all[0].node)
            C.regime = HB_MPI_NODES;
    }
    if (C.regime == HB_MPI_NODES && hb_mpi_one_per_node(all, size))
        C.regime = HB_MPI_NODES1;
    free(all);
    if (!ok) {
        hb_mpi_verbose(1, "not used: hibar's ranks are not MPI_COMM_WORLD's");
        return -1;
    }
    return 0;
}

int hb_mpi_join(struct ompi_communicator_t *world)
{
    int rc;

    if (C.tried)
        return C.h ? 0 : -1;
    C.tried = 1;
    /* hibar_init without these makes a singleton job: not a job hibard runs */
    if (!getenv("HIBAR_SOCKET") && !getenv("HIBAR_SEG_FD")) {
        hb_mpi_verbose(10, "not used: the process was not started by hibard (no HIBAR_SOCKET)");
        return -1;
    }
    hibar_set_log_callback(hb_mpi_log, NULL);
    rc = hibar_init(&C.h);
    if (rc != HIBAR_SUCCESS) {
        hb_mpi_verbose(1, "not used: hibar_init: %s", hibar_strerror(rc));
        C.h = NULL;
        return -1;
    }
    if (hb_mpi_check_job(world) != 0) {
        hibar_finalize(&C.h);
        return -1;
    }
    hibar_set_progress(C.h, hb_mpi_wait_progress, NULL);
    hb_mpi_verbose(10, "joined the hibar job (%s)", hb_mpi_regime_desc(C.regime));
    return 0;
}

/* MPI_Finalize: every rank leaves the job (hibar_finalize is a barrier with every rank). */
static int hb_mpi_close(void)
{
    if (C.progress)
        opal_progress_unregister(hb_mpi_progress);
    C.progress = 0;
    if (C.h) {
        /* MPI_Finalize has taken the point-to-point layer down: no progress from here on */
        hibar_set_progress(C.h, NULL, NULL);
        hibar_finalize(&C.h);
    }
    hibar_set_log_callback(NULL, NULL);
    return OMPI_SUCCESS;
}
