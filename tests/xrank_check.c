/* xrank_check.c: a libhibar job that checks every operation's data across nodes (run by
 * hibar-run in tests/client_nodes.sh). */
/*
 * Every rank draws the same pseudo-random sequence of operations (seed from --seed), with
 * random roots and sizes from 0 to --max bytes per rank (bounded so that no buffer exceeds
 * --max-total), fills its send buffer with a pattern of (operation, rank, byte) and checks
 * every byte it receives, and that bytes outside the received range are untouched. With
 * --errors it also checks that misuse is reported on every rank: a root out of range
 * (INVAL), ranks disagreeing on the root (MISMATCH; also the two halves of the job, each
 * node agreeing within itself, on the root of a scatter and on the size of an allgather),
 * a NULL buffer on one rank (INVAL); with
 * --unreadable (jobs on several nodes: on one node the root copies its own block itself) a
 * scatter whose root's send buffer is mapped but unreadable (INVAL).
 * Rank 0 prints "xrank_check: ok N operations on R ranks" and every rank exits 0 on success;
 * a failure prints what went wrong and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hibar.h"

static int me, np;
static unsigned long long rng_state;

static uint64_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}

static unsigned char pat(int op, int rank, size_t i)
{
    return (unsigned char)(op * 29 + rank * 131 + (int)(i % 251) + (int)(i >> 12) * 7 + 1);
}

static int fail(const char *what, int op, int rc)
{
    fprintf(stderr, "xrank_check: rank %d: operation %d (%s): %s\n", me, op, what,
            rc ? hibar_strerror(rc) : "wrong data");
    return 1;
}

static int check(const unsigned char *b, size_t n, int op, int rank, const char *what, int k)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(op, rank, i)) {
            fprintf(stderr, "xrank_check: rank %d: %s op %d: byte %zu of rank %d's block is %u\n",
                    me, what, k, i, rank, b[i]);
            return 1;
        }
    return 0;
}

static void fill(unsigned char *b, size_t n, int op, int rank)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(op, rank, i);
}

/* The guard byte after a received block must be untouched. */
#define GUARD 0xA5

/* Misuse of a rank set's collective, the set every other rank (with ranks placed by block, on
 * several nodes): the members disagree on the root (the first member on another), the root's
 * own call is bad (a NULL send buffer), the members list the set in two orders: the same error
 * on every member; the set's barrier after each completes. */
static int run_subset_errors(hibar_t *h, unsigned char *s, unsigned char *r, size_t bytes)
{
    int set[8], n = 0, rc;
    for (int i = 1; i < np && n < 8; i += 2) /* n blocks of 8 bytes fit r */
        set[n++] = i;
    if (me % 2 == 0 || n < 2)
        return 0;
    rc = hibar_gather_subset(h, set, n, s, r, bytes, me == set[0] ? 1 : 0);
    if (rc != HIBAR_ERR_MISMATCH)
        return fail("subset: roots disagree", -7, rc ? rc : HIBAR_ERR_INTERNAL);
    rc = hibar_barrier_subset(h, set, n);
    if (rc != 0)
        return fail("subset barrier after a mismatch", -7, rc);
    rc = hibar_scatter_subset(h, set, n, me == set[1] ? NULL : s, r, bytes, 1);
    if (rc != HIBAR_ERR_INVAL)
        return fail("subset: the root's NULL buffer", -8, rc ? rc : HIBAR_ERR_INTERNAL);
    rc = hibar_barrier_subset(h, set, n);
    if (rc != 0)
        return fail("subset barrier after a NULL buffer", -8, rc);
    if (me == set[n - 1]) { /* the last member lists the first two the other way round */
        int t = set[0];
        set[0] = set[1];
        set[1] = t;
    }
    rc = hibar_allgather_subset(h, set, n, s, r, bytes);
    if (rc != HIBAR_ERR_MISMATCH)
        return fail("subset: members listed in two orders", -9, rc ? rc : HIBAR_ERR_INTERNAL);
    rc = hibar_barrier_subset(h, set, n);
    if (rc != 0)
        return fail("subset barrier after two orders", -9, rc);
    return 0;
}

static int run_errors(hibar_t *h, int unreadable)
{
    unsigned char s[64 * 8] = {0}, r[64];
    size_t bytes = 8;
    int rc;
    if (np * bytes > sizeof(s))
        return 0;
    /* root out of range: INVAL everywhere */
    rc = hibar_scatter(h, s, r, bytes, np + 3);
    if (rc != HIBAR_ERR_INVAL)
        return fail("root out of range", -1, rc ? rc : HIBAR_ERR_INTERNAL);
    rc = hibar_barrier(h);
    if (rc != 0)
        return fail("barrier after an error", -1, rc);
    /* disagreeing roots: MISMATCH everywhere (needs two ranks) */
    if (np > 1) {
        rc = hibar_gather(h, s, r, bytes, me == np - 1 ? 1 : 0);
        if (rc != HIBAR_ERR_MISMATCH)
            return fail("roots disagree", -2, rc ? rc : HIBAR_ERR_INTERNAL);
        rc = hibar_barrier(h);
        if (rc != 0)
            return fail("barrier after a mismatch", -2, rc);
        /* the halves disagree on the root: with ranks placed by node, every node agrees
         * within itself and starts its data (coll_overlap), yet the verdict is MISMATCH */
        rc = hibar_scatter(h, s, r, bytes, me < np / 2 ? 0 : np / 2);
        if (rc != HIBAR_ERR_MISMATCH)
            return fail("halves disagree on the root", -5, rc ? rc : HIBAR_ERR_INTERNAL);
        rc = hibar_barrier(h);
        if (rc != 0)
            return fail("barrier after a mismatch between nodes", -5, rc);
        rc = hibar_allgather(h, r, s, me < np / 2 ? bytes : bytes / 2);
        if (rc != HIBAR_ERR_MISMATCH)
            return fail("halves disagree on the size", -6, rc ? rc : HIBAR_ERR_INTERNAL);
        rc = hibar_barrier(h);
        if (rc != 0)
            return fail("barrier after a size mismatch between nodes", -6, rc);
    }
    /* a NULL receive buffer on the last rank: INVAL everywhere */
    rc = hibar_allgather(h, s, me == np - 1 ? NULL : s, bytes);
    if (rc != HIBAR_ERR_INVAL)
        return fail("NULL buffer on one rank", -3, rc ? rc : HIBAR_ERR_INTERNAL);
    rc = hibar_barrier(h);
    if (rc != 0)
        return fail("barrier after a NULL buffer", -3, rc);
    if (unreadable) {
        /* the root's daemon checks the buffer before the ranks agree: INVAL everywhere */
        void *nr = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (nr == MAP_FAILED)
            return fail("mmap", -4, HIBAR_ERR_NOMEM);
        rc = hibar_scatter(h, me == 0 ? nr : s, r, bytes, 0);
        munmap(nr, 8192);
        if (rc != HIBAR_ERR_INVAL)
            return fail("unreadable root buffer", -4, rc ? rc : HIBAR_ERR_INTERNAL);
        rc = hibar_barrier(h);
        if (rc != 0)
            return fail("barrier after an unreadable buffer", -4, rc);
        /* a large one (more than the daemon reads at once: it checks the root's mappings),
         * readable but for its last page, with a readable mapping right after it: INVAL
         * everywhere too */
        size_t per = 128u << 10, len = per * (size_t)np, pg = 4096;
        char *lr =
            mmap(NULL, len + 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *rb = malloc(per);
        if (lr == MAP_FAILED || rb == NULL)
            return fail("mmap", -5, HIBAR_ERR_NOMEM);
        memset(lr, 1, len + 2 * pg);
        if (mprotect(lr + len - pg, pg, PROT_NONE) != 0)
            return fail("mprotect", -5, HIBAR_ERR_INTERNAL);
        rc = hibar_scatter(h, me == 0 ? (const void *)lr : (const void *)s, rb, per, 0);
        munmap(lr, len + 2 * pg);
        free(rb);
        if (rc != HIBAR_ERR_INVAL)
            return fail("large root buffer with an unreadable page", -5,
                        rc ? rc : HIBAR_ERR_INTERNAL);
        rc = hibar_barrier(h);
        if (rc != 0)
            return fail("barrier after an unreadable page", -5, rc);
    }
    return np >= 4 ? run_subset_errors(h, s, r, bytes) : 0;
}

/* A scatter of 64 KiB a rank (a data run between the daemons) whose receive buffer on the
 * middle rank (with ranks placed by node on 4 nodes: the first of the third node) is read-only:
 * that rank's daemon cannot write its part. With a schedule in which that node forwards (a
 * binomial tree: HIBAR_COLL_ALG=binomial in the daemons' environment), the nodes below it would
 * wait for data that never comes; the failure reaches them instead (hbd_coll.c,
 * run_fail_tell). Every rank gets success or INVAL, the middle rank INVAL, and the barrier
 * after it completes on every rank, long before any timeout. */
static int run_unwritable(hibar_t *h)
{
    size_t per = 64u << 10, pg = 4096, len = (per + pg - 1) / pg * pg;
    unsigned char *s = malloc(per * (size_t)np);
    unsigned char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int mid = np / 2, rc;
    if (s == NULL || r == MAP_FAILED)
        return fail("mmap", -60, HIBAR_ERR_NOMEM);
    memset(s, 3, per * (size_t)np);
    memset(r, 0, len);
    if (me == mid && mprotect(r, len, PROT_READ) != 0)
        return fail("mprotect", -60, HIBAR_ERR_INTERNAL);
    rc = hibar_scatter(h, s, r, per, 0);
    munmap(r, len);
    free(s);
    if (me == mid && rc != HIBAR_ERR_INVAL)
        return fail("scatter into a read-only buffer", -60, rc ? rc : HIBAR_ERR_INTERNAL);
    if (rc != 0 && rc != HIBAR_ERR_INVAL)
        return fail("scatter beside a read-only buffer", -61, rc);
    rc = hibar_barrier(h);
    if (rc != 0)
        return fail("barrier after a read-only buffer", -62, rc);
    return 0;
}

/* Daemons that disagree on coll_inline_max (netns_inline_split.sh: one daemon with 0, the
 * others with the default): a small collective, carried inside the agreement by some nodes and
 * not by others, fails with MISMATCH on every rank, never a hang; a large one (no node carries
 * it inside) and barriers still work, before and after. */
static int run_inline_split(hibar_t *h)
{
    size_t big = 65536, bytes = 8;
    unsigned char *s = malloc(big * (size_t)np + 1), *r = malloc(big * (size_t)np + 1);
    int rc, bad = 0;
    if (s == NULL || r == NULL)
        return fail("malloc", -10, HIBAR_ERR_NOMEM);
    for (int k = 0; k < 3 && !bad; k++) {
        if (me == 0)
            for (int q = 0; q < np; q++)
                fill(s + (size_t)q * big, big, 100 + k, q);
        memset(r, GUARD, big + 1);
        rc = hibar_scatter(h, s, r, big, 0);
        if (rc != 0)
            bad = fail("large scatter", -10 - k, rc);
        else
            bad = check(r, big, 100 + k, me, "large scatter", k) || r[big] != GUARD;
        if (!bad && (rc = hibar_scatter(h, s, r, bytes, 0)) != HIBAR_ERR_MISMATCH)
            bad = fail("small scatter across the split", -20 - k, rc ? rc : HIBAR_ERR_INTERNAL);
        if (!bad && (rc = hibar_barrier(h)) != 0)
            bad = fail("barrier after the split", -30 - k, rc);
        fill(s, bytes, 200 + k, me);
        if (!bad && (rc = hibar_allgather(h, s, r, bytes)) != HIBAR_ERR_MISMATCH)
            bad = fail("small allgather across the split", -40 - k, rc ? rc : HIBAR_ERR_INTERNAL);
        if (!bad && (rc = hibar_barrier(h)) != 0)
            bad = fail("barrier after the split", -50 - k, rc);
    }
    free(s);
    free(r);
    return bad;
}

/* A collective of the rank set (members in list order; the same draw on every rank; in: this
 * rank is a member): a random one of the four, a random member as root, every byte checked. */
static int run_subset_coll(hibar_t *h, const int *set, int n, int in, int k, size_t bytes,
                           unsigned char *sb, unsigned char *rb)
{
    static const char *const names[] = {"subset bcast", "subset scatter", "subset gather",
                                        "subset allgather"};
    int op = (int)(rnd() % 4), ri = (int)(rnd() % (uint64_t)n), rc = 0, bad = 0;
    int root = set[ri];
    if (!in)
        return 0;
    switch (op) {
    case 0:
        if (me == root)
            fill(rb, bytes, k, root);
        rc = hibar_bcast_subset(h, set, n, rb, bytes, ri);
        if (rc == 0)
            bad = check(rb, bytes, k, root, names[op], k) || rb[bytes] != GUARD;
        break;
    case 1:
        if (me == root)
            for (int i = 0; i < n; i++)
                fill(sb + (size_t)i * bytes, bytes, k, set[i]);
        rc = hibar_scatter_subset(h, set, n, sb, rb, bytes, ri);
        if (rc == 0)
            bad = check(rb, bytes, k, me, names[op], k) || rb[bytes] != GUARD;
        break;
    case 2:
    case 3:
        fill(sb, bytes, k, me);
        rc = op == 2 ? hibar_gather_subset(h, set, n, sb, rb, bytes, ri)
                     : hibar_allgather_subset(h, set, n, sb, rb, bytes);
        if (rc == 0 && (op == 3 || me == root)) {
            for (int i = 0; i < n && !bad; i++)
                bad = check(rb + (size_t)i * bytes, bytes, k, set[i], names[op], k);
            bad = bad || rb[(size_t)n * bytes] != GUARD;
        }
        break;
    }
    if (rc != 0)
        return fail(names[op], k, rc);
    return bad;
}

int main(int argc, char **argv)
{
    hibar_t *h = NULL;
    int n_ops = 40, errors = 0, unreadable = 0, unwritable = 0, inline_split = 0, rc, die_rank = -1,
        die_at = -1, die_linger = 0, only = -1, block = 0;
    size_t max = 4u << 20, max_total = 32u << 20, fixed = 0;
    static const char *const kinds[] = {"", "", "scatter", "gather", "bcast", "allgather"};
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            n_ops = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
            max = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--max-total") == 0 && i + 1 < argc)
            max_total = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--die-rank") == 0 && i + 1 < argc)
            die_rank = atoi(argv[++i]);
        else if (strcmp(argv[i], "--die-at") == 0 && i + 1 < argc)
            die_at = atoi(argv[++i]);
        else if (strcmp(argv[i], "--die-linger") == 0 && i + 1 < argc)
            die_linger = atoi(argv[++i]);
        else if (strcmp(argv[i], "--errors") == 0)
            errors = 1;
        else if (strcmp(argv[i], "--unreadable") == 0)
            unreadable = 1;
        else if (strcmp(argv[i], "--inline-split") == 0)
            inline_split = 1;
        else if (strcmp(argv[i], "--unwritable") == 0)
            unwritable = 1;
        else if (strcmp(argv[i], "--block") == 0 && i + 1 < argc)
            block = atoi(argv[++i]);
        else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
            fixed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            i++;
            for (int q = 2; q <= 5; q++)
                if (strcmp(argv[i], kinds[q]) == 0)
                    only = q;
            if (only < 0) {
                fprintf(stderr, "xrank_check: --only: scatter, gather, bcast or allgather\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: xrank_check [--ops N] [--max BYTES] [--max-total BYTES] "
                            "[--seed S] [--errors [--unreadable]] [--inline-split] [--unwritable] "
                            "[--only OP [--size BYTES]] [--block K] "
                            "[--die-rank R --die-at K [--die-linger MS]]\n");
            return 2;
        }
    }
    if ((rc = hibar_init(&h)) != 0) {
        fprintf(stderr, "xrank_check: hibar_init: %s\n", hibar_strerror(rc));
        return 1;
    }
    hibar_rank(h, &me);
    hibar_size(h, &np);
    rng_state = seed;
    if (max * (size_t)np > max_total)
        max = max_total / (size_t)np;
    size_t cap = max * (size_t)np + 1;
    unsigned char *sb = malloc(cap), *rb = malloc(cap);
    size_t *counts = malloc(np * sizeof(size_t)), *displs = malloc(np * sizeof(size_t));
    if (sb == NULL || rb == NULL || counts == NULL || displs == NULL) {
        fprintf(stderr, "xrank_check: out of memory\n");
        return 1;
    }
    int bad = errors ? run_errors(h, unreadable) : 0;
    if (!bad && inline_split)
        bad = run_inline_split(h);
    if (!bad && unwritable)
        bad = run_unwritable(h);
    for (int k = 0; k < n_ops && !bad; k++) {
        int kind = (int)(rnd() % 10), root = (int)(rnd() % (uint64_t)np);
        /* sizes: often small, sometimes up to max */
        size_t bytes = rnd() % 4 == 0 ? (size_t)(rnd() % (max + 1)) : (size_t)(rnd() % 4097);
        if (bytes > max)
            bytes = max;
        if (only >= 0) {
            kind = only;
            if (fixed > 0)
                bytes = fixed <= max ? fixed : max;
        }
        size_t total = 0;
        for (int r = 0; r < np; r++) {
            counts[r] = (size_t)(rnd() % (bytes + 1)); /* -v forms: every rank its own count */
            displs[r] = total;
            total += counts[r] + (size_t)(rnd() % 3); /* gaps between blocks */
        }
        if (total + 1 > cap)
            total = 0, memset(counts, 0, np * sizeof(size_t)),
            memset(displs, 0, np * sizeof(size_t));
        memset(rb, GUARD, cap);
        if (me == die_rank && k == die_at) {
            /* a rank lost in the middle of the job; with a linger, a child of it holds its
             * output open that long: its end is reported after the others' failures */
            if (die_linger > 0 && fork() == 0) {
                for (int fd = 3; fd < 1024; fd++) /* only the output: the job's links die */
                    close(fd);
                usleep((useconds_t)die_linger * 1000);
                _exit(0);
            }
            _exit(3);
        }
        switch (kind) {
        case 0: /* barrier */
            rc = hibar_barrier(h);
            if (rc != 0)
                bad = fail("barrier", k, rc);
            break;
        case 1: { /* split-phase barrier with work in between */
            hibar_epoch_t e;
            rc = hibar_barrier_arrive(h, &e);
            if (rc == 0) {
                volatile unsigned x = 0;
                for (int i = 0; i < 1000 * (me + 1); i++)
                    x += (unsigned)i;
                rc = hibar_barrier_wait(h, e);
            }
            if (rc != 0)
                bad = fail("split-phase barrier", k, rc);
            break;
        }
        case 2: /* scatter */
            if (me == root)
                for (int r = 0; r < np; r++)
                    fill(sb + (size_t)r * bytes, bytes, k, r);
            rc = hibar_scatter(h, sb, rb, bytes, root);
            if (rc != 0)
                bad = fail("scatter", k, rc);
            else
                bad = check(rb, bytes, k, me, "scatter", k) || rb[bytes] != GUARD;
            break;
        case 3: /* gather */
            fill(sb, bytes, k, me);
            rc = hibar_gather(h, sb, rb, bytes, root);
            if (rc != 0)
                bad = fail("gather", k, rc);
            else if (me == root) {
                for (int r = 0; r < np && !bad; r++)
                    bad = check(rb + (size_t)r * bytes, bytes, k, r, "gather", k);
                bad = bad || rb[(size_t)np * bytes] != GUARD;
            }
            break;
        case 4: /* bcast */
            if (me == root)
                fill(rb, bytes, k, root);
            rc = hibar_bcast(h, rb, bytes, root);
            if (rc != 0)
                bad = fail("bcast", k, rc);
            else
                bad = check(rb, bytes, k, root, "bcast", k) || rb[bytes] != GUARD;
            break;
        case 5: /* allgather */
            fill(sb, bytes, k, me);
            rc = hibar_allgather(h, sb, rb, bytes);
            if (rc != 0)
                bad = fail("allgather", k, rc);
            for (int r = 0; r < np && !bad; r++)
                bad = check(rb + (size_t)r * bytes, bytes, k, r, "allgather", k);
            if (!bad && rb[(size_t)np * bytes] != GUARD)
                bad = fail("allgather guard", k, 0);
            break;
        case 6: /* scatterv */
            if (me == root)
                for (int r = 0; r < np; r++)
                    fill(sb + displs[r], counts[r], k, r);
            rc = hibar_scatterv(h, sb, counts, displs, rb, counts[me], root);
            if (rc != 0)
                bad = fail("scatterv", k, rc);
            else
                bad = check(rb, counts[me], k, me, "scatterv", k) || rb[counts[me]] != GUARD;
            break;
        case 7: /* gatherv */
            fill(sb, counts[me], k, me);
            rc = hibar_gatherv(h, sb, counts[me], rb, counts, displs, root);
            if (rc != 0)
                bad = fail("gatherv", k, rc);
            else if (me == root)
                for (int r = 0; r < np && !bad; r++)
                    bad = check(rb + displs[r], counts[r], k, r, "gatherv", k) ||
                          (r + 1 < np && displs[r] + counts[r] < displs[r + 1] &&
                           rb[displs[r] + counts[r]] != GUARD);
            break;
        case 9: { /* a subset barrier: the same random set on every rank, members call it;
                   * with --block K, every other one within root's block of K ranks (with ranks
                   * placed by block, one node's: the node's own barrier, not the daemons') */
            int *set = malloc((size_t)np * sizeof(int)), n = 0, in = 0;
            int lo = 0, hi = np;
            if (block > 0 && rnd() % 2 == 0) {
                lo = root / block * block;
                hi = lo + block < np ? lo + block : np;
            }
            for (int r = lo; r < hi; r++)
                if (rnd() % 2 == 0 || r == root) {
                    set[n++] = r;
                    in |= r == me;
                }
            /* any order: the library sorts */
            for (int i = 0; i + 1 < n; i += 2) {
                int t = set[i];
                set[i] = set[i + 1];
                set[i + 1] = t;
            }
            if (rnd() % 2 == 0) {
                rc = in ? hibar_barrier_subset(h, set, n) : 0;
                if (rc != 0)
                    bad = fail("subset barrier", k, rc);
            } else {
                bad = run_subset_coll(h, set, n, in, k, bytes, sb, rb);
            }
            free(set);
            break;
        }
        default: /* barrier twice: epochs in quick succession */
            rc = hibar_barrier(h);
            if (rc == 0)
                rc = hibar_barrier(h);
            if (rc != 0)
                bad = fail("two barriers", k, rc);
            break;
        }
        if (bad && rc == 0)
            fail("data check", k, 0);
    }
    rc = hibar_finalize(&h);
    if (rc != 0 && !bad)
        bad = fail("finalize", n_ops, rc);
    if (!bad && me == 0)
        printf("xrank_check: ok %d operations on %d ranks\n", n_ops, np);
    free(sb);
    free(rb);
    free(counts);
    free(displs);
    return bad ? 1 : 0;
}
