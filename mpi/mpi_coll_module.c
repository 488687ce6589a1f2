/* mpi_coll_module.c: mca_coll_hibar's module: which communicators and calls hibar serves; the
 * rest goes to the module below, whose functions it keeps. */
#include "mpi_coll.h"
#include "mpi_err.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/rte/rte.h"
#include "opal/runtime/opal_progress.h"

#define C mca_coll_hibar_component

/* One communicator's module. Calls hibar cannot take go to prev_* (the module below: the one
 * whose function the communicator held when this module was enabled). */
typedef struct hb_mpi_module {
    mca_coll_base_module_t super;
    int whole;  /* the group is the whole job: hibar_barrier */
    int ident;  /* ... in the job's order (rank i is job rank i): the collectives too */
    int local;  /* not that, but every member on this node: hibar's subset collectives */
    int spread; /* neither, members on several nodes: hibar's subset collectives through the
                 * daemons, taken only where forced (coll_hibar_force=hibar): the crossover
                 * table has no row for them (doc/results.md, ninth session) */
    int *ranks; /* otherwise its job ranks (hibar_barrier_subset), n of them */
    int n;
    mca_coll_base_module_barrier_fn_t prev_barrier;
    mca_coll_base_module_t *prev_barrier_module;
    mca_coll_base_module_ibarrier_fn_t prev_ibarrier;
    mca_coll_base_module_t *prev_ibarrier_module;
    mca_coll_base_module_bcast_fn_t prev_bcast;
    mca_coll_base_module_t *prev_bcast_module;
    mca_coll_base_module_scatter_fn_t prev_scatter;
    mca_coll_base_module_t *prev_scatter_module;
    mca_coll_base_module_gather_fn_t prev_gather;
    mca_coll_base_module_t *prev_gather_module;
    mca_coll_base_module_allgather_fn_t prev_allgather;
    mca_coll_base_module_t *prev_allgather_module;
} hb_mpi_module_t;

static void hb_mpi_module_construct(hb_mpi_module_t *m)
{
    memset((char *)m + sizeof m->super, 0, sizeof *m - sizeof m->super);
}

static void hb_mpi_module_destruct(hb_mpi_module_t *m)
{
    mca_coll_base_module_t *prev[] = {m->prev_barrier_module, m->prev_ibarrier_module,
                                      m->prev_bcast_module,   m->prev_scatter_module,
                                      m->prev_gather_module,  m->prev_allgather_module};

    for (size_t i = 0; i < sizeof prev / sizeof prev[0]; i++)
        if (prev[i])
            OBJ_RELEASE(prev[i]);
    free(m->ranks);
}

OBJ_CLASS_INSTANCE(hb_mpi_module_t, mca_coll_base_module_t, hb_mpi_module_construct,
                   hb_mpi_module_destruct);

/* hibar's status as an MPI error class (the communicator's error handler gets it). */
static int hb_mpi_error(const char *op, int rc)
{
    if (rc != HIBAR_SUCCESS)
        hb_mpi_verbose(1, "%s: %s", op, hibar_strerror(rc));
    return hb_mpi_error_class(rc);
}

/* count items of dt as plain bytes: a predefined type without gaps, starting at the buffer. */
static int hb_mpi_plain(struct ompi_datatype_t *dt, int count)
{
    size_t size;
    ptrdiff_t lb, extent;

    if (count < 0 || !ompi_datatype_is_predefined(dt))
        return 0;
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    return lb == 0 && extent >= 0 && (size_t)extent == size;
}

/* The bytes of count items of dt: the size every rank of a call agrees on (the type
 * signatures of a collective match), whatever each rank's datatype. */
static size_t hb_mpi_bytes(struct ompi_datatype_t *dt, int count)
{
    size_t size = 0;

    ompi_datatype_type_size(dt, &size);
    return count > 0 ? size * (size_t)count : 0;
}

OBJ_CLASS_INSTANCE(hb_mpi_request_t, ompi_request_t, NULL, NULL);

/* Complete the MPI_Ibarrier in flight with hibar's status rc. */
static void hb_mpi_ibarrier_done(int rc)
{
    hb_mpi_request_t *r = C.pending;

    C.pending = NULL;
    r->super.req_status.MPI_ERROR = hb_mpi_error("hibar_barrier_test", rc);
    ompi_request_complete(&r->super, true);
}

int hb_mpi_progress(void)
{
    int rc;

    if (!C.pending || C.in_wait)
        return 0;
    rc = hibar_barrier_test(C.h, C.pending->epoch);
    if (rc == HIBAR_ERR_WOULD_BLOCK)
        return 0;
    hb_mpi_ibarrier_done(rc);
    return 1;
}

int hb_mpi_wait_progress(void *arg)
{
    (void)arg;
    if (C.in_wait) /* a callback of opal_progress called MPI: hibar's handle is busy */
        return 0;
    C.in_wait = 1;
    opal_progress();
    C.in_wait = 0;
    return 0;
}

/* Before another call of the whole job (hibar_barrier, the collectives of an ident
 * communicator): the MPI_Ibarrier in flight ends first (hibar allows one split-phase barrier of
 * the whole job and no other call of the whole job until its wait). Those calls share the
 * job's sequence, so their communicators must see them in the same order on every rank (the
 * limit in README); then every rank has arrived at it already. The calls of rank sets (the
 * other communicators) run beside it and need not wait: a rank may start the MPI_Ibarrier
 * before a sub-communicator's collective and another after it. */
static void hb_mpi_settle(void)
{
    if (C.pending)
        hb_mpi_ibarrier_done(hibar_barrier_wait(C.h, C.pending->epoch));
}

/* MPI_Request_free of a nonblocking collective is erroneous while it runs (MPI 3.0, 5.12). */
static int hb_mpi_request_free(ompi_request_t **req)
{
    if (!REQUEST_COMPLETE(*req))
        return MPI_ERR_REQUEST;
    OMPI_REQUEST_FINI(*req);
    OBJ_RELEASE(*req);
    *req = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* Whether hibar takes this call. The same answer on every rank: the size agreed by the type
 * signatures, the table, the job's regime. A rank that then cannot take it (a derived datatype,
 * no memory) declines by passing a NULL buffer: hibar returns HIBAR_ERR_INVAL to every rank of
 * the call, before any data moves, and every rank passes the call down. */
static int hb_mpi_takes(hb_mpi_module_t *m, hb_mpi_op_t op, size_t bytes)
{
    /* a communicator of one node's ranks runs as a job of one node would */
    hb_mpi_regime_t regime = m->ident ? C.regime : HB_MPI_ONE_NODE;
    if (m->spread ? C.xover.force != HB_MPI_FORCE_HIBAR : !m->ident && !m->local)
        return 0;
    if (bytes == 0 || (!m->spread && !hb_mpi_xover_takes(&C.xover, op, regime, bytes)))
        return 0;
    if (m->ident)
        hb_mpi_settle();
    return 1;
}

static int hb_mpi_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hb_mpi_module_t *m = (hb_mpi_module_t *)module;

    if (!hb_mpi_xover_takes(&C.xover, HB_MPI_BARRIER, C.regime, 0))
        return m->prev_barrier(comm, m->prev_barrier_module);
    if (m->whole) {
        hb_mpi_settle();
        return hb_mpi_error("hibar_barrier", hibar_barrier(C.h));
    }
    return hb_mpi_error("hibar_barrier_subset", hibar_barrier_subset(C.h, m->ranks, m->n));
}

/* MPI_Ibarrier of the whole job on hibar's split-phase barrier; opal_progress (MPI_Test,
 * MPI_Wait, any MPI call that progresses) completes it. */
static int hb_mpi_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    hb_mpi_module_t *m = (hb_mpi_module_t *)module;
    hb_mpi_request_t *r;
    int rc;

    if (!m->whole || !hb_mpi_xover_takes(&C.xover, HB_MPI_BARRIER, C.regime, 0))
        return m->prev_ibarrier(comm, request, m->prev_ibarrier_module);
    hb_mpi_settle();
    if (!C.progress) {
        if (opal_progress_register(hb_mpi_progress) != OPAL_SUCCESS)
            return MPI_ERR_INTERN;
        C.progress = 1;
    }
    r = OBJ_NEW(hb_mpi_request_t);
    if (!r)
        return MPI_ERR_NO_MEM;
    rc = hibar_barrier_arrive(C.h, &r->epoch);
    if (rc != HIBAR_SUCCESS) {
        OBJ_RELEASE(r);
        return hb_mpi_error("hibar_barrier_arrive", rc);
    }
    OMPI_REQUEST_INIT(&r->super, false);
    r->super.req_type = OMPI_REQUEST_COLL;
    r->super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.req_free = hb_mpi_request_free;
    r->super.req_mpi_object.comm = comm;
    C.pending = r;
    hb_mpi_progress(); /* the last rank to arrive completes it at once */
    *request = &r->super;
    return MPI_SUCCESS;
}

static int hb_mpi_bcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hb_mpi_module_t *m = (hb_mpi_module_t *)module;
    size_t bytes = hb_mpi_bytes(dt, count);
    int rc;

    if (!hb_mpi_takes(m, HB_MPI_BCAST, bytes))
        return m->prev_bcast(buf, count, dt, root, comm, m->prev_bcast_module);
    void *b = hb_mpi_plain(dt, count) ? buf : NULL;
    rc = m->ident ? hibar_bcast(C.h, b, bytes, root)
                  : hibar_bcast_subset(C.h, m->ranks, m->n, b, bytes, root);
    if (rc == HIBAR_ERR_INVAL || rc == HIBAR_ERR_UNAVAIL)
        return m->prev_bcast(buf, count, dt, root, comm, m->prev_bcast_module);
    return hb_mpi_error("hibar_bcast", rc);
}

/* A copy of `bytes` at src (an MPI_IN_PLACE rank's own block), or NULL to decline. */
static void *hb_mpi_copy(const void *src, size_t bytes)
{
    void *p = malloc(bytes);

    if (p && src)
        memcpy(p, src, bytes);
    return p;
}

static int hb_mpi_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdt, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hb_mpi_module_t *m = (hb_mpi_module_t *)module;
    int me = ompi_comm_rank(comm), in_place = me == root && rbuf == MPI_IN_PLACE, ok, rc;
    size_t bytes = in_place ? hb_mpi_bytes(sdt, scount) : hb_mpi_bytes(rdt, rcount);
    void *tmp = NULL, *recv = rbuf;

    if (!hb_mpi_takes(m, HB_MPI_SCATTER, bytes))
        goto down;
    ok = in_place || hb_mpi_plain(rdt, rcount);
    if (me == root)
        ok = ok && hb_mpi_plain(sdt, scount) && hb_mpi_bytes(sdt, scount) == bytes;
    if (ok && in_place) /* the root's block stays where it is: hibar writes it aside */
        recv = tmp = hb_mpi_copy(NULL, bytes);
    rc = m->ident ? hibar_scatter(C.h, sbuf, ok ? recv : NULL, bytes, root)
                  : hibar_scatter_subset(C.h, m->ranks, m->n, sbuf, ok ? recv : NULL, bytes, root);
    free(tmp);
    if (rc != HIBAR_ERR_INVAL && rc != HIBAR_ERR_UNAVAIL)
        return hb_mpi_error("hibar_scatter", rc);
down:
    return m->prev_scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm,
                           m->prev_scatter_module);
}

static int hb_mpi_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdt, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hb_mpi_module_t *m = (hb_mpi_module_t *)module;
    int me = ompi_comm_rank(comm), in_place = me == root && sbuf == MPI_IN_PLACE, ok, rc;
    size_t bytes = in_place ? hb_mpi_bytes(rdt, rcount) : hb_mpi_bytes(sdt, scount);
    void *tmp = NULL;
    const void *send = sbuf;

    if (!hb_mpi_takes(m, HB_MPI_GATHER, bytes))
        goto down;
    ok = in_place || hb_mpi_plain(sdt, scount);
    if (me == root)
        ok = ok && hb_mpi_plain(rdt, rcount) && hb_mpi_bytes(rdt, rcount) == bytes;
    if (ok && in_place) /* the root's block is in rbuf already: hibar copies it onto itself */
        send = tmp = hb_mpi_copy((char *)rbuf + (size_t)me * bytes, bytes);
    rc = m->ident ? hibar_gather(C.h, ok ? send : NULL, rbuf, bytes, root)
                  : hibar_gather_subset(C.h, m->ranks, m->n, ok ? send : NULL, rbuf, bytes, root);
    free(tmp);
    if (rc != HIBAR_ERR_INVAL && rc != HIBAR_ERR_UNAVAIL)
        return hb_mpi_error("hibar_gather", rc);
down:
    return m->prev_gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, m->prev_gather_module);
}

static int hb_mpi_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdt,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    hb_mpi_module_t *m = (hb_mpi_module_t *)module;
    int me = ompi_comm_rank(comm), in_place = sbuf == MPI_IN_PLACE, ok, rc;
    size_t bytes = in_place ? hb_mpi_bytes(rdt, rcount) : hb_mpi_bytes(sdt, scount);
    void *tmp = NULL;
    const void *send = sbuf;

    if (!hb_mpi_takes(m, HB_MPI_ALLGATHER, bytes))
        goto down;
    ok = (in_place || hb_mpi_plain(sdt, scount)) && hb_mpi_plain(rdt, rcount) &&
         hb_mpi_bytes(rdt, rcount) == bytes;
    if (ok && in_place)
        send = tmp = hb_mpi_copy((char *)rbuf + (size_t)me * bytes, bytes);
    rc = m->ident ? hibar_allgather(C.h, ok ? send : NULL, rbuf, bytes)
                  : hibar_allgather_subset(C.h, m->ranks, m->n, ok ? send : NULL, rbuf, bytes);
    free(tmp);
    if (rc != HIBAR_ERR_INVAL && rc != HIBAR_ERR_UNAVAIL)
        return hb_mpi_error("hibar_allgather", rc);
down:
    return m->prev_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, m->prev_allgather_module);
}

/* Keep the module below's function of one operation (and a reference to its module). */
#define HB_MPI_KEEP(m, comm, op)                                                                   \
    do {                                                                                           \
        if ((m)->super.coll_##op) {                                                                \
            if (!(comm)->c_coll->coll_##op || !(comm)->c_coll->coll_##op##_module)                 \
                return OMPI_ERROR;                                                                 \
            (m)->prev_##op = (comm)->c_coll->coll_##op;                                            \
            (m)->prev_##op##_module = (comm)->c_coll->coll_##op##_module;                          \
            OBJ_RETAIN((m)->prev_##op##_module);                                                   \
        }                                                                                          \
    } while (0)

static int hb_mpi_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    hb_mpi_module_t *m = (hb_mpi_module_t *)module;

    HB_MPI_KEEP(m, comm, barrier);
    HB_MPI_KEEP(m, comm, ibarrier);
    HB_MPI_KEEP(m, comm, bcast);
    HB_MPI_KEEP(m, comm, scatter);
    HB_MPI_KEEP(m, comm, gather);
    HB_MPI_KEEP(m, comm, allgather);
    return OMPI_SUCCESS;
}

/* The communicator's job ranks in ranks_p (n of them); 0 when every member is of this job. */
static int hb_mpi_job_ranks(struct ompi_communicator_t *comm, int n, int **ranks_p)
{
    int *ranks = malloc(sizeof *ranks * (size_t)n);

    if (!ranks)
        return -1;
    for (int i = 0; i < n; i++) {
        opal_process_name_t name = ompi_group_get_proc_name(comm->c_local_group, i);

        if (name.jobid != OMPI_PROC_MY_NAME->jobid) { /* a spawned or connected process */
            free(ranks);
            return -1;
        }
        ranks[i] = (int)name.vpid;
    }
    *ranks_p = ranks;
    return 0;
}

mca_coll_base_module_t *hb_mpi_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    int n = ompi_comm_size(comm), world;
    int *ranks = NULL;
    hb_mpi_module_t *m;

    if (comm == &ompi_mpi_comm_world.comm && hb_mpi_join(comm) != 0)
        return NULL;
    if (!C.h || OMPI_COMM_IS_INTER(comm) || n < 2 || C.priority < 0)
        return NULL;
    if (hb_mpi_job_ranks(comm, n, &ranks) != 0)
        return NULL;
    m = OBJ_NEW(hb_mpi_module_t);
    if (!m) {
        free(ranks);
        return NULL;
    }
    world = ompi_comm_size(&ompi_mpi_comm_world.comm);
    m->whole = n == world; /* n distinct ranks of the job: all of them */
    m->ident = m->whole;
    for (int i = 0; m->ident && i < n; i++)
        m->ident = ranks[i] == i;
    /* the same answer on every member: where the members run (and the node's attach) */
    m->local = !m->ident && hibar_subset_on_node(C.h, ranks, n) == 1;
    m->spread = !m->ident && !m->local;
    if (m->ident) {
        free(ranks);
    } else {
        m->ranks = ranks;
        m->n = n;
    }
    m->super.coll_module_enable = hb_mpi_enable;
    m->super.coll_barrier = hb_mpi_barrier;
    if (m->whole)
        m->super.coll_ibarrier = hb_mpi_ibarrier;
    if (m->ident || m->local || m->spread) {
        m->super.coll_bcast = hb_mpi_bcast;
        m->super.coll_scatter = hb_mpi_scatter;
        m->super.coll_gather = hb_mpi_gather;
        m->super.coll_allgather = hb_mpi_allgather;
    }
    hb_mpi_verbose(10, "communicator %s (%d ranks): %s", comm->c_name, n,
                   m->ident ? "barrier, ibarrier, bcast, scatter, gather, allgather"
                   : m->local && m->whole
                       ? "barrier, ibarrier, bcast, scatter, gather, allgather (the whole job in "
                         "another order, on one node)"
                   : m->local ? "barrier, bcast, scatter, gather, allgather (ranks of one node)"
                   : m->whole && C.xover.force == HB_MPI_FORCE_HIBAR
                       ? "barrier, ibarrier; bcast, scatter, gather, allgather forced (the whole "
                         "job in another order, through the daemons)"
                   : m->whole ? "barrier, ibarrier (the whole job in another order)"
                   : C.xover.force == HB_MPI_FORCE_HIBAR
                       ? "barrier; bcast, scatter, gather, allgather forced (a subset of the job, "
                         "through the daemons)"
                       : "barrier (a subset of the job)");
    *priority = C.priority;
    return &m->super;
}
