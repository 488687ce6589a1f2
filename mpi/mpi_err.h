/* mpi_err.h: hibar's status codes as MPI error classes (the component's calls return them to the
 * communicator's error handler). Only MPI's public header: a unit test compiles it too. */
#ifndef HB_MPI_ERR_H
#define HB_MPI_ERR_H

/* The MPI error class of a libhibar status (HIBAR_SUCCESS: MPI_SUCCESS). Every HIBAR_ERR_* has
 * one: NOMEM -> MPI_ERR_NO_MEM, TRUNCATED -> MPI_ERR_TRUNCATE, MISMATCH and INVAL (the ranks of
 * one call disagree, or an argument is wrong) -> MPI_ERR_ARG, INTERNAL -> MPI_ERR_INTERN, the
 * others (a peer lost, a timeout, the daemon unreachable, ...) -> MPI_ERR_OTHER. */
int hb_mpi_error_class(int hibar_rc);

#endif /* HB_MPI_ERR_H */
