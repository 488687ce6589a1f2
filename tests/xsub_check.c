/* xsub_check.c: a libhibar job that runs many subset barriers on different rank sets across
 * nodes, overlapped with one another and with whole barriers, and checks that each one released
 * its ranks only once every member had arrived (run by hibar-run in tests/jobs_subset.sh). */
/*
 * Every rank draws the same sets and schedule (seed from --seed): a pool of rank sets (the even
 * ranks, the odd ranks, the two halves, every third rank, random ones), then --rounds rounds in
 * which some sets run a barrier and maybe the whole job one. A rank calls the barriers of the
 * sets it is in in ascending set order (a common order: sets that share ranks never wait for
 * each other crosswise), so sets without common ranks run at the same time on different nodes
 * and share nodes. The check: a file that every rank maps (--shm PATH, on one host: an emulated
 * cluster) holds a counter per set; a member adds 1 before its e-th barrier of set s (e from
 * 1) and afterwards finds e * |s| <= counter <= (e + 1) * |s| (everybody arrived, nobody went
 * two barriers further). Rank 0 prints "xsub_check: ok B subset barriers, W whole barriers on
 * R ranks"; a failure prints what went wrong and exits 1.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hibar.h"

#define XS_SETS 8

static unsigned long long rng_state;

static uint64_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}

/* Set s of the pool over np ranks: member[r] for every rank; returns its size (>= 2). */
static int pick_set(int s, int np, unsigned char *member)
{
    int n = 0;
    for (int r = 0; r < np; r++) {
        switch (s) {
        case 0:
            member[r] = r % 2 == 0;
            break;
        case 1:
            member[r] = r % 2 == 1;
            break;
        case 2:
            member[r] = r < np / 2;
            break;
        case 3:
            member[r] = r >= np / 2;
            break;
        case 4:
            member[r] = r % 3 == 1;
            break;
        default:
            member[r] = rnd() % 3 != 0;
            break;
        }
        n += member[r];
    }
    for (int r = 0; n < 2 && r < np; r++)
        if (!member[r]) {
            member[r] = 1;
            n++;
        }
    return n;
}

/* One barrier of set s (n members, epoch e) or of the job (s < 0), with the check. */
static int one(hibar_t *h, _Atomic uint64_t *cnt, int s, const int *ranks, int n, uint64_t e,
               int me)
{
    atomic_fetch_add(cnt, 1);
    int rc = s < 0 ? hibar_barrier(h) : hibar_barrier_subset(h, ranks, n);
    uint64_t c = atomic_load(cnt);
    if (rc != 0) {
        fprintf(stderr, "xsub_check: rank %d: barrier %llu of set %d: %s\n", me,
                (unsigned long long)e, s, hibar_strerror(rc));
        return 1;
    }
    if (c < e * (uint64_t)n || c > (e + 1) * (uint64_t)n) {
        fprintf(stderr,
                "xsub_check: rank %d: barrier %llu of set %d (%d ranks) released with %llu "
                "arrivals counted\n",
                me, (unsigned long long)e, s, n, (unsigned long long)c);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    hibar_t *h = NULL;
    const char *shm = NULL;
    long rounds = 200;
    int me, np, rc;
    rng_state = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--shm") == 0)
            shm = argv[i + 1];
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            rng_state = strtoull(argv[i + 1], NULL, 10);
        else
            break;
    }
    if (shm == NULL || rounds <= 0 || argc % 2 == 0) {
        fprintf(stderr, "usage: xsub_check --shm FILE [--rounds N] [--seed S]\n");
        return 2;
    }
    int fd = open(shm, O_RDWR);
    size_t len = (XS_SETS + 1) * sizeof(uint64_t);
    _Atomic uint64_t *cnt =
        fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (cnt == MAP_FAILED) {
        perror("xsub_check: the counters' file");
        return 1;
    }
    close(fd);
    if ((rc = hibar_init(&h)) != 0 || (rc = hibar_rank(h, &me)) != 0 ||
        (rc = hibar_size(h, &np)) != 0) {
        fprintf(stderr, "xsub_check: hibar_init: %s\n", hibar_strerror(rc));
        return 1;
    }
    unsigned char *member = malloc((size_t)XS_SETS * (size_t)np);
    int *ranks = malloc((size_t)XS_SETS * (size_t)np * sizeof(int)), size[XS_SETS];
    uint64_t epoch[XS_SETS + 1] = {0};
    int bad = member == NULL || ranks == NULL;
    for (int s = 0; s < XS_SETS && !bad; s++) {
        size[s] = pick_set(s, np, member + (size_t)s * np);
        for (int r = 0, k = 0; r < np; r++)
            if (member[(size_t)s * np + r])
                ranks[(size_t)s * np + k++] = r;
    }
    for (long k = 0; k < rounds && !bad; k++) {
        uint64_t which = rnd(), whole = rnd() % 2;
        for (int s = 0; s < XS_SETS && !bad; s++) {
            if (!(which >> s & 1))
                continue;
            epoch[s]++; /* every rank counts every set's barriers, members or not */
            if (!member[(size_t)s * np + me])
                continue;
            bad = one(h, &cnt[s], s, ranks + (size_t)s * np, size[s], epoch[s], me);
        }
        if (whole && !bad)
            bad = one(h, &cnt[XS_SETS], -1, NULL, np, ++epoch[XS_SETS], me);
    }
    /* every set's arrivals, once all are in */
    uint64_t total = 0, arrivals = 0;
    for (int s = 0; s < XS_SETS; s++) {
        total += epoch[s];
        arrivals += epoch[s] * (uint64_t)size[s];
    }
    if (!bad && (rc = hibar_barrier(h)) != 0) {
        fprintf(stderr, "xsub_check: rank %d: last barrier: %s\n", me, hibar_strerror(rc));
        bad = 1;
    }
    for (int s = 0; s < XS_SETS && !bad; s++)
        if (atomic_load(&cnt[s]) != epoch[s] * (uint64_t)size[s]) {
            fprintf(stderr, "xsub_check: rank %d: set %d counted %llu arrivals, not %llu\n", me, s,
                    (unsigned long long)atomic_load(&cnt[s]),
                    (unsigned long long)(epoch[s] * (uint64_t)size[s]));
            bad = 1;
        }
    if (!bad && me == 0)
        printf("xsub_check: ok %llu subset barriers (%llu arrivals), %llu whole barriers on %d "
               "ranks\n",
               (unsigned long long)total, (unsigned long long)arrivals,
               (unsigned long long)epoch[XS_SETS], np);
    free(member);
    free(ranks);
    hibar_finalize(&h);
    munmap((void *)cnt, len);
    return bad ? 1 : 0;
}
