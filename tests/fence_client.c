/* fence_client.c: PMIx client for the fence tests and hibar-bench fence: fences with data over
 * the whole job or a subset, checks every blob, PMIX_TIMEOUT, times fences. */
#include <pmix.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * fence_client [--size B] [--iters N] [--split] [--stride S] [--timeout SEC --hang-rank R]
 *              [--no-data] [--dmodex]
 * --size B     each rank puts a B-byte key (pattern of its rank) and fences with
 *              PMIX_COLLECT_DATA (default 1024; --no-data: a fence without data)
 * --stride S   only ranks r with r % S == 0 fence, over exactly those ranks
 * --split      even and odd ranks fence at the same time, each over its own half
 * --timeout T  PMIX_TIMEOUT T s; with --hang-rank R, rank R sleeps T+3 s instead of fencing and
 *              the others must get PMIX_ERR_TIMEOUT (printed "timeout rank R", exit 0)
 * --iters N    N fences; rank 0 prints "fence size=B ranks=N iters=N avg_us= min_us= max_us="
 * --samples    rank 0 also prints "sample US" per fence (hibar-bench fence); the first fence
 *              is a warm-up then (not timed), so --iters N makes N + 1 fences
 * --first      before those: one fence without data (aligns the ranks after their start-up,
 *              not timed), then one timed fence like the others; rank 0 prints "first US"
 * --sync-check MS  then two more fences like the others, which the set's lowest (K 0), then its
 *              highest rank (K 1) calls MS ms late; every rank prints "tsync RANK K T0_NS T1_NS"
 *              (its call and return, CLOCK_MONOTONIC). A fence that is a barrier returns
 *              nowhere before the late rank called: on one machine (emulated nodes, the
 *              namespace bed) every T1 of fence K is after the late rank's T0, which the caller
 *              checks (no time limit involved). Two, because a peer that is no barrier lets its
 *              hosts drift apart: ranks already MS ms behind the late one would pass one check,
 *              but they cannot be behind both the lowest and the highest rank
 * --dmodex     no fence: rank 0 gets rank size-1's key (direct modex) and checks it; with
 *              --hang-rank size-1 that rank never puts it (sleeps --timeout + 3 s) and rank 0
 *              must get PMIX_ERR_TIMEOUT after --timeout s ("dmodex timeout"); then a key of
 *              an unknown namespace must give PMIX_ERR_NOT_FOUND ("dmodex not found")
 * --late-key MS  no fence: rank size-1 (another node than rank 0's) puts and commits the key
 *              "fc.late" (its rank, 4 bytes) MS ms after start-up, after its other data;
 *              rank 0 asks for it at once (PMIx_Get, PMIX_TIMEOUT --timeout or 10 s): the
 *              request must wait for the key, not fail at once ("late key after US").
 *              With --hang-rank size-1 that rank never puts it and rank 0 must get
 *              PMIX_ERR_TIMEOUT no sooner than --timeout - 1 s ("late key timeout after US").
 * After the fences, each rank gets the key of every rank of its set and checks its bytes.
 * Exit: 0 ok, 2 usage, 3 init, 4 fence failed, 5 data wrong, 6 expected timeout missing.
 */
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void pattern(uint8_t *b, size_t n, uint32_t rank)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(rank * 31u + i * 7u + 1u);
}

static int check_key(const pmix_proc_t *me, uint32_t r, size_t size, pmix_info_t *inf, size_t ni)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    PMIX_LOAD_PROCID(&p, me->nspace, r);
    pmix_status_t rc = PMIx_Get(&p, "fc.blob", inf, ni, &v);
    if (rc != PMIX_SUCCESS || v == NULL) {
        fprintf(stderr, "rank %u: get rank %u's key: %s\n", me->rank, r, PMIx_Error_string(rc));
        return 5;
    }
    int bad = v->type != PMIX_BYTE_OBJECT || v->data.bo.size != size;
    if (!bad) {
        uint8_t *want = malloc(size ? size : 1);
        pattern(want, size, r);
        bad = size > 0 && (want == NULL || memcmp(want, v->data.bo.bytes, size) != 0);
        free(want);
    }
    PMIX_VALUE_RELEASE(v);
    if (bad)
        fprintf(stderr, "rank %u: rank %u's key is wrong\n", me->rank, r);
    return bad ? 5 : 0;
}

/* --late-key: see the usage above. 0, 5 (wrong value), 6 (wrong status or timing). */
static int late_key(const pmix_proc_t *me, uint32_t n, long late_ms, long tmo, long hang)
{
    uint32_t last = n - 1;
    if (me->rank == last && (long)last != hang) {
        usleep((useconds_t)late_ms * 1000u);
        pmix_value_t val;
        val.type = PMIX_UINT32;
        val.data.uint32 = me->rank + 1000u;
        if (PMIx_Put(PMIX_GLOBAL, "fc.late", &val) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS)
            return 4;
        return 0;
    }
    if (me->rank != 0 || n < 2)
        return 0;
    pmix_info_t info[1];
    int t = tmo > 0 ? (int)tmo : 10;
    PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &t, PMIX_INT);
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    PMIX_LOAD_PROCID(&p, me->nspace, last);
    double t0 = now_us();
    pmix_status_t rc = PMIx_Get(&p, "fc.late", info, 1, &v);
    double dt = now_us() - t0;
    int ret = 0;
    if ((long)last == hang) {
        if (rc == PMIX_ERR_TIMEOUT && dt >= (double)(t - 1) * 1e6) {
            printf("late key timeout after %.0f\n", dt);
        } else {
            fprintf(stderr, "rank 0: late key never put: %s after %.0f us\n", PMIx_Error_string(rc),
                    dt);
            ret = 6;
        }
    } else if (rc != PMIX_SUCCESS || v == NULL) {
        fprintf(stderr, "rank 0: late key: %s after %.0f us\n", PMIx_Error_string(rc), dt);
        ret = 6;
    } else if (v->type != PMIX_UINT32 || v->data.uint32 != last + 1000u) {
        fprintf(stderr, "rank 0: late key has the wrong value\n");
        ret = 5;
    } else {
        printf("late key after %.0f\n", dt);
    }
    if (v != NULL)
        PMIX_VALUE_RELEASE(v);
    return ret;
}

int main(int argc, char **argv)
{
    pmix_proc_t me, job;
    long size = 1024, iters = 1, stride = 1, tmo = 0, hang = -1, late = -1, sync_ms = -1;
    int split = 0, nodata = 0, dmodex = 0, samples = 0, first = 0, ret = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--split") == 0) {
            split = 1;
            continue;
        }
        if (strcmp(a, "--no-data") == 0) {
            nodata = 1;
            continue;
        }
        if (strcmp(a, "--samples") == 0) {
            samples = 1;
            continue;
        }
        if (strcmp(a, "--dmodex") == 0) {
            dmodex = 1;
            continue;
        }
        if (strcmp(a, "--first") == 0) {
            first = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fence_client: %s needs a value\n", a);
            return 2;
        }
        long v = strtol(argv[++i], NULL, 10);
        if (strcmp(a, "--size") == 0)
            size = v;
        else if (strcmp(a, "--iters") == 0)
            iters = v;
        else if (strcmp(a, "--stride") == 0)
            stride = v;
        else if (strcmp(a, "--timeout") == 0)
            tmo = v;
        else if (strcmp(a, "--hang-rank") == 0)
            hang = v;
        else if (strcmp(a, "--late-key") == 0)
            late = v;
        else if (strcmp(a, "--sync-check") == 0)
            sync_ms = v;
        else {
            fprintf(stderr, "fence_client: unknown option %s\n", a);
            return 2;
        }
    }
    if (size < 0 || iters < 1 || stride < 1 || tmo < 0) {
        fprintf(stderr, "fence_client: bad value\n");
        return 2;
    }
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS)
        return 3;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *v = NULL;
    uint32_t n = 0;
    if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v) == PMIX_SUCCESS && v != NULL) {
        n = v->data.uint32;
        PMIX_VALUE_RELEASE(v);
    }
    if (n == 0) {
        PMIx_Finalize(NULL, 0);
        return 3;
    }
    if ((!nodata || dmodex) && !(dmodex && (long)me.rank == hang)) {
        uint8_t *b = malloc(size ? (size_t)size : 1);
        pmix_value_t val;
        pattern(b, (size_t)size, me.rank);
        val.type = PMIX_BYTE_OBJECT;
        val.data.bo.bytes = (char *)b;
        val.data.bo.size = (size_t)size;
        if (PMIx_Put(PMIX_GLOBAL, "fc.blob", &val) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS)
            ret = 4;
        free(b);
    }
    if (late >= 0 && ret == 0) {
        ret = late_key(&me, n, late, tmo, hang);
        PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
        pmix_status_t frc = PMIx_Fence(&job, 1, NULL, 0);
        if (frc != PMIX_SUCCESS && ret == 0) {
            fprintf(stderr, "rank %u: fence after the late key: %s\n", me.rank,
                    PMIx_Error_string(frc));
            ret = 4;
        }
        if (ret == 0)
            printf("ok rank %u\n", me.rank);
        fflush(stdout);
        PMIx_Finalize(NULL, 0);
        return ret;
    }
    /* this rank's set */
    pmix_proc_t *set = calloc(n, sizeof(pmix_proc_t));
    size_t ns = 0;
    int in = 1;
    for (uint32_t r = 0; r < n; r++) {
        int take = split ? (r % 2 == me.rank % 2) : (r % (uint32_t)stride == 0);
        if (take) { /* a macro: its arguments may be evaluated more than once */
            PMIX_LOAD_PROCID(&set[ns], me.nspace, r);
            ns++;
        }
    }
    if (!split && me.rank % (uint32_t)stride != 0)
        in = 0;
    if (stride == 1 && !split) { /* the whole job: the wildcard form */
        ns = 1;
        PMIX_LOAD_PROCID(&set[0], me.nspace, PMIX_RANK_WILDCARD);
    }
    pmix_info_t info[2];
    size_t ninfo = 0;
    bool collect = !nodata;
    PMIX_INFO_LOAD(&info[ninfo], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    ninfo++;
    if (tmo > 0) {
        int t = (int)tmo;
        PMIX_INFO_LOAD(&info[ninfo], PMIX_TIMEOUT, &t, PMIX_INT);
        ninfo++;
    }
    if (dmodex) {
        /* PMIx_Get goes to the server, which asks the daemon hosting the rank */
        int t = tmo > 0 ? (int)tmo : 10;
        PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &t, PMIX_INT);
        if (me.rank == 0 && n > 1 && ret == 0 && hang != (long)n - 1)
            ret = check_key(&me, n - 1, (size_t)size, info, 1);
        if (me.rank == 0 && n > 1 && ret == 0 && hang == (long)n - 1) {
            pmix_proc_t p;
            pmix_value_t *dv = NULL;
            PMIX_LOAD_PROCID(&p, me.nspace, n - 1);
            pmix_status_t grc = PMIx_Get(&p, "fc.blob", info, 1, &dv);
            if (dv != NULL)
                PMIX_VALUE_RELEASE(dv);
            if (grc == PMIX_ERR_TIMEOUT) {
                printf("dmodex timeout\n");
            } else {
                fprintf(stderr, "rank 0: get of a key never put: %s\n", PMIx_Error_string(grc));
                ret = 6;
            }
        }
        if (me.rank == 0 && ret == 0) {
            pmix_proc_t p;
            pmix_value_t *dv = NULL;
            PMIX_LOAD_PROCID(&p, "hibar.nonexistent", 0);
            pmix_status_t grc = PMIx_Get(&p, "fc.blob", info, 1, &dv);
            if (dv != NULL)
                PMIX_VALUE_RELEASE(dv);
            if (grc == PMIX_ERR_NOT_FOUND) {
                printf("dmodex not found\n");
            } else {
                fprintf(stderr, "rank 0: get from an unknown namespace: %s\n",
                        PMIx_Error_string(grc));
                ret = 6;
            }
        }
        if ((long)me.rank == hang)
            sleep((unsigned)tmo + 3);
        PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
        pmix_status_t frc = PMIx_Fence(&job, 1, NULL, 0);
        if (frc != PMIX_SUCCESS && ret == 0) {
            fprintf(stderr, "rank %u: fence after the direct modex: %s\n", me.rank,
                    PMIx_Error_string(frc));
            ret = 4;
        }
        if (ret == 0)
            printf("ok rank %u\n", me.rank);
        in = 0;
    }
    double sum = 0, mn = 1e30, mx = 0, first_us = -1;
    int prof = getenv("FENCE_CLIENT_PROF") != NULL; /* every rank: "tfence RANK IT T0_NS T1_NS" */
    double *smp = calloc((size_t)iters, sizeof(double));
    if (first && in && ret == 0 && hang < 0) {
        double ta = now_us();
        pmix_status_t rc = PMIx_Fence(set, ns, NULL, 0); /* align: start-up skew not timed */
        double t0 = now_us();
        if (rc == PMIX_SUCCESS)
            rc = PMIx_Fence(set, ns, info, ninfo);
        first_us = now_us() - t0;
        if (prof) /* IT -3: the aligning fence, -2: the first fence with data */
            printf("tfence %u -3 %.0f %.0f\ntfence %u -2 %.0f %.0f\n", me.rank, ta * 1e3, t0 * 1e3,
                   me.rank, t0 * 1e3, (t0 + first_us) * 1e3);
        if (rc != PMIX_SUCCESS) {
            fprintf(stderr, "rank %u: first fence: %s\n", me.rank, PMIx_Error_string(rc));
            ret = 4;
        }
    }
    if (sync_ms >= 0 && in && ret == 0 && hang < 0) {
        uint32_t low = set[0].rank == PMIX_RANK_WILDCARD ? 0 : set[0].rank, high = low;
        if (set[0].rank == PMIX_RANK_WILDCARD)
            high = n - 1;
        for (size_t k = 1; k < ns; k++) {
            low = set[k].rank < low ? set[k].rank : low;
            high = set[k].rank > high ? set[k].rank : high;
        }
        for (int k = 0; k < 2 && ret == 0; k++) {
            if (me.rank == (k == 0 ? low : high))
                usleep((useconds_t)sync_ms * 1000);
            double t0 = now_us();
            pmix_status_t rc = PMIx_Fence(set, ns, info, ninfo);
            double t1 = now_us();
            printf("tsync %u %d %.0f %.0f\n", me.rank, k, t0 * 1e3, t1 * 1e3);
            if (rc != PMIX_SUCCESS) {
                fprintf(stderr, "rank %u: sync-check fence: %s\n", me.rank, PMIx_Error_string(rc));
                ret = 4;
            }
        }
    }
    for (long it = -samples; in && ret == 0 && it < iters; it++) {
        if ((long)me.rank == hang) {
            sleep((unsigned)tmo + 3);
            break;
        }
        double t0 = now_us();
        pmix_status_t rc = PMIx_Fence(set, ns, info, ninfo);
        double dt = now_us() - t0;
        if (hang >= 0) {
            if (rc == PMIX_ERR_TIMEOUT) {
                printf("timeout rank %u\n", me.rank);
            } else {
                fprintf(stderr, "rank %u: fence: %s, expected a timeout\n", me.rank,
                        PMIx_Error_string(rc));
                ret = 6;
            }
            break;
        }
        if (rc != PMIX_SUCCESS) {
            fprintf(stderr, "rank %u: fence: %s\n", me.rank, PMIx_Error_string(rc));
            ret = 4;
            break;
        }
        if (prof)
            printf("tfence %u %ld %.0f %.0f\n", me.rank, it, t0 * 1e3, (t0 + dt) * 1e3);
        if (it < 0)
            continue; /* warm-up */
        if (smp != NULL)
            smp[it] = dt;
        sum += dt;
        mn = dt < mn ? dt : mn;
        mx = dt > mx ? dt : mx;
    }
    if (in && ret == 0 && hang < 0 && !nodata) {
        for (size_t k = 0; k < ns && ret == 0; k++) {
            if (set[k].rank == PMIX_RANK_WILDCARD) {
                for (uint32_t r = 0; r < n && ret == 0; r++)
                    ret = check_key(&me, r, (size_t)size, NULL, 0);
            } else {
                ret = check_key(&me, set[k].rank, (size_t)size, NULL, 0);
            }
        }
    }
    if (in && ret == 0 && hang < 0 && me.rank == 0)
        printf("fence size=%ld ranks=%u set=%zu iters=%ld avg_us=%.1f min_us=%.1f max_us=%.1f\n",
               nodata ? 0 : size, n, ns, iters, sum / (double)iters, mn, mx);
    if (first_us >= 0 && in && ret == 0 && me.rank == 0)
        printf("first %.3f\n", first_us);
    for (long it = 0; samples && smp != NULL && in && ret == 0 && me.rank == 0 && it < iters; it++)
        printf("sample %.3f\n", smp[it]);
    free(smp);
    if (in && ret == 0 && hang < 0)
        printf("ok rank %u\n", me.rank);
    fflush(stdout);
    free(set);
    PMIx_Finalize(NULL, 0);
    return ret;
}
