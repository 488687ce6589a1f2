/* hibar_example.c: a libhibar program: barrier, split-phase barrier, subset barrier, scatter and
 * gather, each checked, then a table of their latencies. Run it with hibar-run:
 *     hibar-run -n 24 --emulate examples/local.yaml hibar-example
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hibar.h"

#define REPS 100

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Die with a message naming the call (every rank gets the same status on misuse). */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != HIBAR_SUCCESS) {                                                                \
            fprintf(stderr, "rank %d: %s: %s\n", rank, #call, hibar_strerror(rc_));                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(void)
{
    hibar_t *h;
    int rank = -1, size, bad = 0;
    CHECK(hibar_init(&h));
    CHECK(hibar_rank(h, &rank));
    CHECK(hibar_size(h, &size));

    /* scatter: rank i gets the ints i*n .. i*n+n-1 from root 0; gather them back */
    enum { N = 256 };
    int *all = malloc(sizeof(int) * N * size), *mine = malloc(sizeof(int) * N);
    double *t = malloc(sizeof(double) * REPS), *tmax = malloc(sizeof(double) * size);
    if (all == NULL || mine == NULL || t == NULL || tmax == NULL)
        return 1;
    for (int i = 0; i < N * size; i++)
        all[i] = rank == 0 ? i : -1;
    CHECK(hibar_scatter(h, all, mine, sizeof(int) * N, 0));
    for (int i = 0; i < N; i++)
        bad |= mine[i] != rank * N + i;
    memset(all, 0, sizeof(int) * N * size);
    CHECK(hibar_gather(h, mine, all, sizeof(int) * N, 0));
    for (int i = 0; rank == 0 && i < N * size; i++)
        bad |= all[i] != i;

    /* split-phase: arrive, do some work, wait */
    hibar_epoch_t e;
    CHECK(hibar_barrier_arrive(h, &e));
    volatile double x = 0;
    for (int i = 0; i < 10000; i++)
        x += i * 0.5;
    CHECK(hibar_barrier_wait(h, e));

    /* subset: the even ranks only */
    int *even = malloc(sizeof(int) * (size + 1) / 2), n_even = 0;
    for (int r = 0; r < size; r += 2)
        even[n_even++] = r;
    if (rank % 2 == 0)
        CHECK(hibar_barrier_subset(h, even, n_even));
    CHECK(hibar_barrier(h));

    /* latencies: each repetition isolated by a barrier, the slowest rank counts */
    const char *names[] = {"barrier", "split-phase barrier", "subset barrier (even ranks)",
                           "scatter 1 KiB/rank", "gather 1 KiB/rank"};
    if (rank == 0)
        printf("%-30s %12s %12s   (%d ranks, %d repetitions)\n", "operation", "median us", "min us",
               size, REPS);
    for (int op = 0; op < 5; op++) {
        for (int k = 0; k < REPS; k++) {
            CHECK(hibar_barrier(h));
            double t0 = now_us();
            switch (op) {
            case 0:
                CHECK(hibar_barrier(h));
                break;
            case 1:
                CHECK(hibar_barrier_arrive(h, &e));
                CHECK(hibar_barrier_wait(h, e));
                break;
            case 2:
                if (rank % 2 == 0)
                    CHECK(hibar_barrier_subset(h, even, n_even));
                break;
            case 3:
                CHECK(hibar_scatter(h, all, mine, 1024, 0));
                break;
            default:
                CHECK(hibar_gather(h, mine, all, 1024, 0));
                break;
            }
            t[k] = now_us() - t0;
        }
        /* the slowest rank of each repetition: gather every rank's times at rank 0 */
        double *every = rank == 0 ? malloc(sizeof(double) * REPS * size) : NULL;
        CHECK(hibar_gather(h, t, every, sizeof(double) * REPS, 0));
        if (rank == 0) {
            for (int k = 0; k < REPS; k++) {
                double m = 0;
                for (int r = 0; r < size; r++)
                    m = every[r * REPS + k] > m ? every[r * REPS + k] : m;
                t[k] = m;
            }
            qsort(t, REPS, sizeof(double), cmp_double);
            printf("%-30s %12.1f %12.1f\n", names[op], t[REPS / 2], t[0]);
        }
        free(every);
    }
    CHECK(hibar_finalize(&h));
    if (bad) {
        fprintf(stderr, "rank %d: wrong data\n", rank);
        return 1;
    }
    if (rank == 0)
        printf("hibar-example: %d ranks: barrier, split-phase, subset, scatter and gather data "
               "checked: ok\n",
               size);
    free(all);
    free(mine);
    free(t);
    free(tmax);
    free(even);
    return 0;
}
