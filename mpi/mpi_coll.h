/* mpi_coll.h: mca_coll_hibar, a coll component of Open MPI 4.1 on libhibar (component, module). */
#ifndef HB_MPI_COLL_H
#define HB_MPI_COLL_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

#include "hibar.h"
#include "mpi_xover.h"

/* An MPI_Ibarrier on hibar's split-phase barrier (one in flight per process: hibar's rule). */
typedef struct hb_mpi_request {
    ompi_request_t super;
    hibar_epoch_t epoch;
} hb_mpi_request_t;

/* The component: its MCA parameters and the process's membership of its hibar job. Open MPI
 * loads it by the name mca_coll_hibar_component, one per process. */
typedef struct hb_mpi_component {
    mca_coll_base_component_2_0_0_t super;
    int priority;              /* coll_hibar_priority */
    hb_mpi_xover_t xover;      /* coll_hibar_<op>_max_<regime>, coll_hibar_force */
    hibar_t *h;                /* the job's handle; NULL: not under hibard (or it failed) */
    int tried;                 /* MPI_COMM_WORLD's query ran hibar_init (once) */
    hb_mpi_regime_t regime;    /* every rank on one node, or several nodes (the same everywhere) */
    hb_mpi_request_t *pending; /* the MPI_Ibarrier in flight, completed by hb_mpi_progress */
    int progress;              /* hb_mpi_progress is registered with opal_progress */
    int in_wait;               /* inside a hibar call's wait, running opal_progress */
} hb_mpi_component_t;

extern hb_mpi_component_t mca_coll_hibar_component;

/* Join the hibar job from MPI_COMM_WORLD's query (collective over the job's ranks, as
 * MPI_Init is); quiet when the process was not started by hibard. 0 when the handle is ready. */
int hb_mpi_join(struct ompi_communicator_t *world);

/* The module of one communicator (mpi_coll_module.c): NULL where hibar cannot serve it. */
mca_coll_base_module_t *hb_mpi_comm_query(struct ompi_communicator_t *comm, int *priority);

/* opal_progress's callback: completes the MPI_Ibarrier in flight once hibar's split-phase
 * barrier has (1 when it did); nothing while a hibar call of this process waits (its handle
 * is busy: the wait itself runs opal_progress, hb_mpi_wait_progress). */
int hb_mpi_progress(void);

/* hibar_set_progress's function: while a hibar call waits, Open MPI's progress engine runs.
 * Ranks waiting in hibar may still owe other ranks the point-to-point messages of a
 * collective another component ran before (a bcast on a communicator hibar does not serve):
 * without this, under load, those ranks never arrive and hibar's call times out. */
int hb_mpi_wait_progress(void *arg);

/* Verbose output on coll_base_verbose's stream (level 1: why the component is not used, 10:
 * each communicator's choice). */
void hb_mpi_verbose(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* HB_MPI_COLL_H */
