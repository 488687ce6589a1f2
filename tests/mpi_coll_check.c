/* mpi_coll_check.c: an unmodified MPI program for Open MPI's coll component on hibar: barrier
 * ordering, collectives with random sizes, roots and types checked bit for bit against Open
 * MPI's own in the same job, derived datatypes, sub-communicators (the halves of a split: their
 * collectives checked against the patterns sent, also while an MPI_Ibarrier of the world is in
 * flight, started before them on some ranks and after on others), a point-to-point send still
 * owed when a hibar barrier starts (tests/mpi_coll.sh, tests/netns_mpi_coll.sh).
 *   mpi_coll_check [FILE [ROUNDS [MAX_BYTES [SEED]]]]
 * FILE, FILE.0 and FILE.1: 8-byte files, the barrier ordering's counters (none: no ordering). */
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Open MPI's own result of each collective comes from a communicator of the whole job in the
 * reverse order: hibar's component serves it only the barrier (its ranks are not the job's),
 * so its collectives are the component below's. */

static int me, np;
static uint64_t digest = 1469598103934665603ULL;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "mpi_coll_check: rank %d: ", me);                                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

static void mix(const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        digest = (digest ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
}

/* The same pseudo-random sequence on every rank (sizes, roots); the data differ by rank. */
static uint64_t rnd_state;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static void fill(void *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ((unsigned char *)p)[i] = (unsigned char)x;
    }
}

/* Barrier ordering: each round every rank adds one to a counter in a shared file, then enters
 * the barrier; after it the counter holds at least every rank's adds of this round and less
 * than the next round's of every rank (none can pass the next barrier before this rank). */
static void barrier_order(MPI_Comm comm, const char *file, int rounds, int nonblocking)
{
    int n, fd = open(file, O_RDWR);
    CHECK(fd >= 0, "open %s", file);
    long *ctr = mmap(NULL, sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(ctr != MAP_FAILED, "mmap %s", file);
    close(fd);
    MPI_Comm_size(comm, &n);
    MPI_Barrier(comm);
    long base = __atomic_load_n(ctr, __ATOMIC_SEQ_CST);
    MPI_Barrier(comm);
    for (int k = 0; k < rounds; k++) {
        if ((k + me) % 3 == 0) /* some ranks late, others early */
            usleep((useconds_t)(500 + 300 * (me % 4)));
        __atomic_fetch_add(ctr, 1, __ATOMIC_SEQ_CST);
        if (nonblocking) { /* MPI_Ibarrier, tested until done, or waited for */
            MPI_Request req;
            int done = 0;
            MPI_Ibarrier(comm, &req);
            for (int t = 0; t < 3 && !done; t++)
                MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (!done)
                MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(comm);
        }
        long v = __atomic_load_n(ctr, __ATOMIC_SEQ_CST) - base;
        CHECK(v >= (long)(k + 1) * n && v < (long)(k + 2) * n + 1,
              "barrier round %d: counter %ld, want %ld..%ld", k, v, (long)(k + 1) * n,
              (long)(k + 2) * n);
    }
    munmap(ctr, sizeof(long));
}

static const MPI_Datatype types[] = {MPI_BYTE, MPI_INT, MPI_DOUBLE, MPI_LONG_LONG};
static const int tsizes[] = {1, sizeof(int), sizeof(double), sizeof(long long)};

/* A send whose data the sender still owes when it enters a collective hibar takes: rank 0's
 * MPI_Isend of 4 MiB (past every eager limit: a rendezvous the sender must progress) to the
 * last rank, then a barrier of the whole job, then its wait; the last rank receives first.
 * Across hosts the last rank gets the data only while rank 0 waits in the barrier: hibar's
 * wait must run Open MPI's progress engine (hibar_set_progress), or the barrier never
 * completes (the job's barrier_timeout_ms ends it with an error). */
static void owed_send(void)
{
    const int n = 4 << 20;
    unsigned char *buf = malloc(n);
    CHECK(buf != NULL, "out of memory");
    if (np < 2) {
        free(buf);
        return;
    }
    if (me == 0) {
        MPI_Request req;
        fill(buf, n, 4242);
        MPI_Isend(buf, n, MPI_BYTE, np - 1, 7, MPI_COMM_WORLD, &req);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (me == np - 1) {
        unsigned char *want = malloc(n);
        CHECK(want != NULL, "out of memory");
        fill(want, n, 4242);
        MPI_Recv(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(memcmp(buf, want, n) == 0, "the owed send's data differ");
        free(want);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
}

/* One round of each collective on world against the reverse-order communicator rev. */
static void coll_round(MPI_Comm rev, size_t maxb, int k)
{
    int t = (int)(rnd() % 4), root = (int)(rnd() % (uint64_t)np), rr = np - 1 - root;
    size_t bytes = 1 + rnd() % maxb;
    int count = (int)((bytes + (size_t)tsizes[t] - 1) / (size_t)tsizes[t]);
    size_t b = (size_t)count * (size_t)tsizes[t], all = b * (size_t)np;
    unsigned char *s = malloc(all), *a = malloc(all), *o = malloc(all), *x = malloc(all);
    int in_place = rnd() % 4 == 0;
    CHECK(s && a && o && x, "out of memory");

    /* bcast */
    fill(a, b, (uint64_t)k * 7919 + (uint64_t)me);
    memcpy(o, a, b);
    MPI_Bcast(a, count, types[t], root, MPI_COMM_WORLD);
    MPI_Bcast(o, count, types[t], rr, rev);
    CHECK(memcmp(a, o, b) == 0, "bcast %zu bytes root %d differs", b, root);
    mix(a, b);

    /* scatter: rev's rank i is world rank np-1-i, so its root sends the blocks reversed */
    fill(s, all, (uint64_t)k * 7919 + 100 + (uint64_t)me);
    for (int i = 0; i < np; i++)
        memcpy(x + (size_t)i * b, s + (size_t)(np - 1 - i) * b, b);
    memset(a, 0, b);
    if (in_place && me == root) {
        MPI_Scatter(s, count, types[t], MPI_IN_PLACE, count, types[t], root, MPI_COMM_WORLD);
        memcpy(a, s + (size_t)me * b, b);
    } else {
        MPI_Scatter(s, count, types[t], a, count, types[t], root, MPI_COMM_WORLD);
    }
    MPI_Scatter(x, count, types[t], o, count, types[t], rr, rev);
    CHECK(memcmp(a, o, b) == 0, "scatter %zu bytes root %d differs", b, root);
    mix(a, b);

    /* gather */
    fill(s, b, (uint64_t)k * 7919 + 200 + (uint64_t)me);
    memset(a, 0, all);
    if (in_place && me == root) {
        memcpy(a + (size_t)me * b, s, b);
        MPI_Gather(MPI_IN_PLACE, count, types[t], a, count, types[t], root, MPI_COMM_WORLD);
    } else {
        MPI_Gather(s, count, types[t], a, count, types[t], root, MPI_COMM_WORLD);
    }
    MPI_Gather(s, count, types[t], x, count, types[t], rr, rev);
    if (me == root) {
        for (int i = 0; i < np; i++)
            memcpy(o + (size_t)i * b, x + (size_t)(np - 1 - i) * b, b);
        CHECK(memcmp(a, o, all) == 0, "gather %zu bytes root %d differs", b, root);
        mix(a, all);
    }

    /* allgather */
    fill(s, b, (uint64_t)k * 7919 + 300 + (uint64_t)me);
    memset(a, 0, all);
    if (in_place) {
        memcpy(a + (size_t)me * b, s, b);
        MPI_Allgather(MPI_IN_PLACE, count, types[t], a, count, types[t], MPI_COMM_WORLD);
    } else {
        MPI_Allgather(s, count, types[t], a, count, types[t], MPI_COMM_WORLD);
    }
    MPI_Allgather(s, count, types[t], x, count, types[t], rev);
    for (int i = 0; i < np; i++)
        memcpy(o + (size_t)i * b, x + (size_t)(np - 1 - i) * b, b);
    CHECK(memcmp(a, o, all) == 0, "allgather %zu bytes differs", b);
    mix(a, all);
    free(s);
    free(a);
    free(o);
    free(x);
}

/* One round of each collective on a split (the halves, each node's ranks: where all run on one
 * node hibar's collectives of a rank set, else Open MPI's), every result checked against the
 * pattern its sender filled. */
static void half_round(MPI_Comm half, size_t maxb, int k)
{
    int hn, hr, t = (int)(rnd() % 4);
    MPI_Comm_size(half, &hn);
    MPI_Comm_rank(half, &hr);
    int root = (int)(rnd() % (uint64_t)hn);
    size_t bytes = 1 + rnd() % maxb;
    int count = (int)((bytes + (size_t)tsizes[t] - 1) / (size_t)tsizes[t]);
    size_t b = (size_t)count * (size_t)tsizes[t], all = b * (size_t)hn;
    unsigned char *s = malloc(all), *a = malloc(all), *w = malloc(b);
    CHECK(s && a && w, "out of memory");
    /* the pattern of member i's block j in round k (every member can compute any) */
#define HALF_SEED(i, j) ((uint64_t)k * 104729 + (uint64_t)(i)*1000 + (uint64_t)(j) + 7)

    fill(a, b, HALF_SEED(root, 0)); /* bcast: the root's buffer */
    if (hr != root)
        memset(a, 0, b);
    MPI_Bcast(a, count, types[t], root, half);
    fill(w, b, HALF_SEED(root, 0));
    CHECK(memcmp(a, w, b) == 0, "bcast on a split, %zu bytes", b);
    mix(a, b);

    for (int j = 0; j < hn; j++) /* scatter */
        fill(s + (size_t)j * b, b, HALF_SEED(root, j));
    memset(a, 0, b);
    MPI_Scatter(s, count, types[t], a, count, types[t], root, half);
    fill(w, b, HALF_SEED(root, hr));
    CHECK(memcmp(a, w, b) == 0, "scatter on a split, %zu bytes", b);
    mix(a, b);

    fill(s, b, HALF_SEED(hr, 1000)); /* gather */
    memset(a, 0, all);
    MPI_Gather(s, count, types[t], a, count, types[t], root, half);
    for (int j = 0; hr == root && j < hn; j++) {
        fill(w, b, HALF_SEED(j, 1000));
        CHECK(memcmp(a + (size_t)j * b, w, b) == 0, "gather on a split, block %d", j);
    }
    if (hr == root)
        mix(a, all);

    fill(s, b, HALF_SEED(hr, 2000)); /* allgather */
    memset(a, 0, all);
    MPI_Allgather(s, count, types[t], a, count, types[t], half);
    for (int j = 0; j < hn; j++) {
        fill(w, b, HALF_SEED(j, 2000));
        CHECK(memcmp(a + (size_t)j * b, w, b) == 0, "allgather on a split, block %d", j);
    }
    mix(a, all);
#undef HALF_SEED
    free(s);
    free(a);
    free(w);
}

/* Derived datatypes (the component passes them down): a contiguous type on every rank, a
 * vector, and a call where the root's type is derived and the others' predefined (the same
 * type signature): every rank must take the same side. */
static void derived(void)
{
    enum { N = 1024 };
    int *buf = malloc(sizeof(int) * 2 * N * (size_t)np), *want = malloc(sizeof(int) * N);
    MPI_Datatype c4, vec;
    CHECK(buf && want, "out of memory");
    MPI_Type_contiguous(4, MPI_INT, &c4);
    MPI_Type_commit(&c4);
    MPI_Type_vector(N, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int root = 0; root < np; root++) {
        for (int i = 0; i < N; i++)
            want[i] = root * 100000 + i;
        /* bcast of a contiguous derived type */
        memcpy(buf, want, sizeof(int) * N);
        if (me != root)
            memset(buf, 0, sizeof(int) * N);
        MPI_Bcast(buf, N / 4, c4, root, MPI_COMM_WORLD);
        CHECK(memcmp(buf, want, sizeof(int) * N) == 0, "bcast of a derived type, root %d", root);
        /* the root derived (contiguous), the others MPI_INT */
        memcpy(buf, want, sizeof(int) * N);
        if (me != root)
            memset(buf, 0, sizeof(int) * N);
        if (me == root)
            MPI_Bcast(buf, N / 4, c4, root, MPI_COMM_WORLD);
        else
            MPI_Bcast(buf, N, MPI_INT, root, MPI_COMM_WORLD);
        CHECK(memcmp(buf, want, sizeof(int) * N) == 0, "bcast derived at the root, root %d", root);
        /* gather of a strided vector into plain ints */
        for (int i = 0; i < 2 * N; i++)
            buf[i] = i % 2 ? -1 : me * N + i / 2;
        int *g = malloc(sizeof(int) * N * (size_t)np);
        CHECK(g != NULL, "out of memory");
        MPI_Gather(buf, 1, vec, g, N, MPI_INT, root, MPI_COMM_WORLD);
        if (me == root)
            for (int i = 0; i < N * np; i++)
                CHECK(g[i] == i, "gather of a vector type, root %d: [%d] = %d", root, i, g[i]);
        free(g);
    }
    MPI_Type_free(&c4);
    MPI_Type_free(&vec);
    free(buf);
    free(want);
}

int main(int argc, char **argv)
{
    const char *file = argc > 1 ? argv[1] : NULL;
    int rounds = argc > 2 ? atoi(argv[2]) : 20;
    size_t maxb = argc > 3 ? strtoul(argv[3], NULL, 0) : 65536;
    unsigned long long seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
    MPI_Comm rev, half;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    rnd_state = seed * 2654435761ULL + 88172645463325252ULL;
    MPI_Comm_split(MPI_COMM_WORLD, 0, np - 1 - me, &rev);
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    MPI_Comm node; /* each node's ranks (on a job of several nodes: hibar's subset collectives) */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (file) {
        barrier_order(MPI_COMM_WORLD, file, rounds, 0);
        barrier_order(MPI_COMM_WORLD, file, rounds, 1);
        barrier_order(rev, file, rounds, 0);
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        barrier_order(dup, file, rounds, 0);
        /* an MPI_Ibarrier in flight while a blocking collective runs */
        MPI_Request req;
        int v = me, sum = 0;
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Bcast(&v, 1, MPI_INT, 0, dup);
        MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, dup);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(v == 0 && sum == np * (np - 1) / 2, "bcast and allreduce under an ibarrier");
        MPI_Comm_free(&dup);
    }
    owed_send();
    for (int k = 0; k < rounds; k++)
        coll_round(rev, maxb, k);
    if (np > 2) { /* a split: each half's barrier (hibar's subset barrier) and collectives */
        int hn, hr, v = me, sum = 0;
        MPI_Comm_size(half, &hn);
        MPI_Comm_rank(half, &hr);
        if (file) { /* each half its own counter, FILE.0 and FILE.1 */
            char hf[4096];
            snprintf(hf, sizeof hf, "%s.%d", file, me % 2);
            barrier_order(half, hf, rounds, 0);
        }
        for (int k = 0; k < rounds; k++)
            half_round(half, maxb, k);
        /* an MPI_Ibarrier of the world in flight while each half runs a bcast and a barrier:
         * the half's first rank starts it before them, the others after (valid MPI: the two
         * are on different communicators; before, hibar's component ended the ibarrier first
         * and the first rank waited for the others, which waited for it in the bcast) */
        for (int k = 0; k < rounds; k++) {
            MPI_Request req;
            int hv = hr == 0 ? 1000 * k + me : -1;
            if (hr == 0)
                MPI_Ibarrier(MPI_COMM_WORLD, &req);
            MPI_Bcast(&hv, 1, MPI_INT, 0, half);
            MPI_Barrier(half);
            if (hr != 0)
                MPI_Ibarrier(MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK(hv == 1000 * k + me % 2, "bcast on a split under an ibarrier: %d", hv);
        }
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half);
        int want = 0;
        for (int i = me % 2; i < np; i += 2)
            want += i;
        CHECK(sum == want, "allreduce on a split: %d, want %d", sum, want);
        mix(&sum, sizeof sum);
    }
    for (int k = 0; k < rounds; k++)
        half_round(node, maxb, 1000 + k);
    derived();
    MPI_Barrier(MPI_COMM_WORLD);
    printf("mpi_coll_check: rank %d of %d ok digest %016llx\n", me, np, (unsigned long long)digest);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
