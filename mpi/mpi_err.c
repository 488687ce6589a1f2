/* mpi_err.c: hibar's status codes as MPI error classes. */
#include "mpi_err.h"

#include <mpi.h>

#include "hibar.h"

int hb_mpi_error_class(int hibar_rc)
{
    switch (hibar_rc) {
    case HIBAR_SUCCESS:
        return MPI_SUCCESS;
    case HIBAR_ERR_NOMEM:
        return MPI_ERR_NO_MEM;
    case HIBAR_ERR_TRUNCATED:
        return MPI_ERR_TRUNCATE;
    case HIBAR_ERR_MISMATCH:
    case HIBAR_ERR_INVAL:
        return MPI_ERR_ARG;
    case HIBAR_ERR_INTERNAL:
        return MPI_ERR_INTERN;
    default:
        return MPI_ERR_OTHER;
    }
}
