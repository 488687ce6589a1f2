/* pmix_hello.c: tiny PMIx client for the launcher tests: init, job info, fences, finalize; exit
 * status says what failed. */
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * pmix_hello [--fences N] [--fail-rank R] [--abort-rank R] [--die-rank R] [--hang-rank R]
 * Prints "hello rank R of N local_rank L host H" once initialized, fences N times (default 2),
 * prints "bye rank R" and finalizes. The --*-rank options make one rank misbehave, for the
 * abort tests: exit 3 after init, PMIx_Abort(4), SIGKILL itself before the first fence,
 * or never reach the fence (sleep).
 */
static int get_u32(const pmix_proc_t *p, const char *key, uint32_t *v)
{
    pmix_value_t *val = NULL;
    pmix_status_t rc = PMIx_Get(p, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL)
        return -1;
    if (val->type == PMIX_UINT32)
        *v = val->data.uint32;
    else if (val->type == PMIX_UINT16)
        *v = val->data.uint16;
    else if (val->type == PMIX_PROC_RANK)
        *v = val->data.rank;
    else
        rc = PMIX_ERR_TYPE_MISMATCH;
    PMIX_VALUE_RELEASE(val);
    return rc == PMIX_SUCCESS ? 0 : -1;
}

int main(int argc, char **argv)
{
    pmix_proc_t me, job;
    long fences = 2, fail = -1, abrt = -1, die = -1, hang = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = strtol(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--fences") == 0)
            fences = v;
        else if (strcmp(argv[i], "--fail-rank") == 0)
            fail = v;
        else if (strcmp(argv[i], "--abort-rank") == 0)
            abrt = v;
        else if (strcmp(argv[i], "--die-rank") == 0)
            die = v;
        else if (strcmp(argv[i], "--hang-rank") == 0)
            hang = v;
        else {
            fprintf(stderr, "pmix_hello: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "pmix_hello: PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 10;
    }
    uint32_t size = 0, lrank = 0, lsize = 0;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    if (get_u32(&job, PMIX_JOB_SIZE, &size) || get_u32(&me, PMIX_LOCAL_RANK, &lrank) ||
        get_u32(&job, PMIX_LOCAL_SIZE, &lsize)) {
        fprintf(stderr, "pmix_hello: rank %u: job size / local rank / local size missing\n",
                me.rank);
        return 11;
    }
    pmix_value_t *hv = NULL;
    const char *host = "?";
    if (PMIx_Get(&me, PMIX_HOSTNAME, NULL, 0, &hv) == PMIX_SUCCESS && hv->type == PMIX_STRING)
        host = hv->data.string;
    printf("hello rank %u of %u local_rank %u local_size %u host %s\n", me.rank, size, lrank, lsize,
           host);
    fflush(stdout);
    if ((long)me.rank == fail)
        return 3;
    if ((long)me.rank == abrt)
        PMIx_Abort(4, "pmix_hello asked to abort", NULL, 0);
    if ((long)me.rank == die)
        raise(SIGKILL);
    if ((long)me.rank == hang)
        for (;;)
            pause();
    for (long f = 0; f < fences; f++) {
        rc = PMIx_Fence(&job, 1, NULL, 0);
        if (rc != PMIX_SUCCESS) {
            fprintf(stderr, "pmix_hello: rank %u: fence %ld: %s\n", me.rank, f,
                    PMIx_Error_string(rc));
            return 12;
        }
    }
    printf("bye rank %u after %ld fences\n", me.rank, fences);
    fflush(stdout);
    if (hv != NULL)
        PMIX_VALUE_RELEASE(hv);
    rc = PMIx_Finalize(NULL, 0);
    return rc == PMIX_SUCCESS ? 0 : 13;
}
