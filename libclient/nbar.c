/* nbar.c: the intra-node barrier: tree construction, arrive/test/wait, subsets, liveness. */
#include "hb_config.h"

#include "nbar.h"

#include "hb_hash.h"
#include "hb_log.h"
#include "hb_proc.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hibar.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HB_NBAR_CHECK_NS 10000000ull /* look at the peers' pids at most every 10 ms */

/* ---- tree construction (pure) ---- */

typedef struct nbar_tb {
    hb_nbar_tree_t *t;
    const uint32_t (*keys)[HB_SEG_NKEYS];
    uint32_t radix;
    int err;
} nbar_tb_t;

static void nbar_tb_set_parent(nbar_tb_t *tb, uint32_t unit, uint32_t g)
{
    if (unit < tb->t->nranks)
        tb->t->rank_group[unit] = g;
    else
        tb->t->group_parent[unit - tb->t->nranks] = g;
}

static uint32_t nbar_tb_group(nbar_tb_t *tb, const uint32_t *units, uint32_t n)
{
    uint32_t g = tb->t->ngroups++, i;
    tb->t->group_size[g] = n;
    tb->t->group_parent[g] = HB_NBAR_NONE;
    for (i = 0; i < n; i++)
        nbar_tb_set_parent(tb, units[i], g);
    return tb->t->nranks + g;
}

/* Combine units (ranks or groups) radix at a time until one is left; units is scratch. */
static uint32_t nbar_tb_combine(nbar_tb_t *tb, uint32_t *units, uint32_t n)
{
    while (n > 1) {
        uint32_t m = 0, i;
        if (n <= tb->radix)
            return nbar_tb_group(tb, units, n);
        for (i = 0; i < n; i += tb->radix) {
            uint32_t c = n - i < tb->radix ? n - i : tb->radix;
            units[m++] = c == 1 ? units[i] : nbar_tb_group(tb, units + i, c);
        }
        n = m;
    }
    return units[0];
}

/* ranks[0..n-1] sorted by keys then rank; all share keys[0..level-1]. Returns the unit. */
static uint32_t nbar_tb_build(nbar_tb_t *tb, const uint32_t *ranks, uint32_t n, int level)
{
    uint32_t *units, m = 0, i = 0, u;

    if (n == 1)
        return ranks[0];
    units = malloc(n * sizeof(*units));
    if (units == NULL) {
        tb->err = HIBAR_ERR_NOMEM;
        return ranks[0];
    }
    if (level == HB_SEG_NKEYS) {
        memcpy(units, ranks, n * sizeof(*units));
        m = n;
    } else {
        while (i < n) {
            uint32_t j = i;
            while (j < n && tb->keys[ranks[j]][level] == tb->keys[ranks[i]][level])
                j++;
            units[m++] = nbar_tb_build(tb, ranks + i, j - i, level + 1);
            i = j;
        }
    }
    u = m == 1 ? units[0] : nbar_tb_combine(tb, units, m);
    free(units);
    return u;
}

static const uint32_t (*nbar_sort_keys)[HB_SEG_NKEYS];

static int nbar_rank_cmp(const void *a, const void *b)
{
    uint32_t ra = *(const uint32_t *)a, rb = *(const uint32_t *)b;
    int l;
    for (l = 0; l < HB_SEG_NKEYS; l++) {
        if (nbar_sort_keys[ra][l] != nbar_sort_keys[rb][l])
            return nbar_sort_keys[ra][l] < nbar_sort_keys[rb][l] ? -1 : 1;
    }
    return ra < rb ? -1 : ra > rb;
}

int hb_nbar_tree_build(uint32_t nranks, const uint32_t (*keys)[HB_SEG_NKEYS], uint32_t radix,
                       hb_nbar_tree_t *t_p)
{
    hb_nbar_tree_t t;
    nbar_tb_t tb;
    uint32_t *order, r;

    if (t_p == NULL || keys == NULL || nranks == 0 || nranks > HB_SEG_MAX_RANKS || radix < 2)
        return HIBAR_ERR_INVAL;
    memset(&t, 0, sizeof(t));
    t.nranks = nranks;
    t.rank_group = malloc(nranks * sizeof(uint32_t));
    t.group_parent = malloc(nranks * sizeof(uint32_t));
    t.group_size = malloc(nranks * sizeof(uint32_t));
    order = malloc(nranks * sizeof(uint32_t));
    if (t.rank_group == NULL || t.group_parent == NULL || t.group_size == NULL || order == NULL) {
        free(order);
        hb_nbar_tree_free(&t);
        return HIBAR_ERR_NOMEM;
    }
    for (r = 0; r < nranks; r++) {
        order[r] = r;
        t.rank_group[r] = HB_NBAR_NONE;
    }
    /* qsort has no context argument in C11; the build runs once per init. */
    nbar_sort_keys = keys;
    qsort(order, nranks, sizeof(*order), nbar_rank_cmp);
    tb.t = &t;
    tb.keys = keys;
    tb.radix = radix;
    tb.err = 0;
    (void)nbar_tb_build(&tb, order, nranks, 0);
    free(order);
    if (tb.err != 0) {
        hb_nbar_tree_free(&t);
        return tb.err;
    }
    *t_p = t;
    return 0;
}

void hb_nbar_tree_free(hb_nbar_tree_t *t)
{
    free(t->rank_group);
    free(t->group_parent);
    free(t->group_size);
    t->rank_group = t->group_parent = t->group_size = NULL;
    t->ngroups = 0;
}

uint32_t hb_nbar_tree_depth(const hb_nbar_tree_t *t, uint32_t r)
{
    uint32_t d = 0, g = t->rank_group[r];
    while (g != HB_NBAR_NONE && d <= t->nranks) {
        d++;
        g = t->group_parent[g];
    }
    return d;
}

void hb_nbar_keys_local(uint32_t keys[HB_SEG_NKEYS])
{
    static const hwloc_obj_type_t types[HB_SEG_NKEYS] = {HWLOC_OBJ_NUMANODE, HWLOC_OBJ_L3CACHE,
                                                         HWLOC_OBJ_L2CACHE, HWLOC_OBJ_CORE};
    hwloc_topology_t topo;
    hwloc_bitmap_t set;
    int l;

    for (l = 0; l < HB_SEG_NKEYS; l++)
        keys[l] = HB_SEG_KEY_NONE;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) != 0)
        goto out_topo;
    set = hwloc_bitmap_alloc();
    if (set == NULL)
        goto out_topo;
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(set))
        goto out_set;
    for (l = 0; l < HB_SEG_NKEYS; l++) {
        int i, n = hwloc_get_nbobjs_by_type(topo, types[l]);
        for (i = 0; i < n; i++) {
            hwloc_obj_t o = hwloc_get_obj_by_type(topo, types[l], (unsigned)i);
            if (o != NULL && o->cpuset != NULL && hwloc_bitmap_isincluded(set, o->cpuset)) {
                keys[l] = o->logical_index;
                break;
            }
        }
    }
out_set:
    hwloc_bitmap_free(set);
out_topo:
    hwloc_topology_destroy(topo);
}

/* ---- liveness ---- */

int hb_nbar_pid_dead(int pid)
{
    return hb_proc_gone(pid);
}

void hb_nbar_watch_daemon(hb_nbar_t *b, int pid)
{
    b->daemon_start = pid > 0 ? hb_proc_start(pid) : 0;
    b->daemon_pid = b->daemon_start != 0 ? pid : 0; /* cannot tell its start: do not watch */
}

/* Our daemon died (or its pid now names another process). What cannot be read (/proc, out of
 * descriptors) says nothing. */
static int nbar_daemon_lost(const hb_nbar_t *b)
{
    unsigned long long start;
    if (b->daemon_pid <= 0)
        return 0;
    if (hb_proc_gone(b->daemon_pid))
        return 1;
    start = hb_proc_start(b->daemon_pid);
    return start != 0 && start != b->daemon_start;
}

int hb_nbar_find_lost(hb_nbar_t *b)
{
    uint32_t r;

    for (r = 0; r < b->nranks; r++) {
        hb_seg_ctl_t *c;
        uint32_t st;
        if (r == b->rank)
            continue;
        c = hb_seg_ctl(b->seg, r);
        st = atomic_load_explicit(&c->state, memory_order_acquire);
        if (st == HB_SEG_RANK_LEFT ||
            (st == HB_SEG_RANK_ATTACHED && hb_nbar_pid_dead(atomic_load(&c->pid))))
            return (int)r;
    }
    return -1;
}

/*
 * The wait's slow path: a rate-limited look at the peers. A rank that finalized (LEFT) did
 * so after the last barrier every rank took part in, so the condition waited for may have
 * become true between our last poll and the moment we saw it leave: poll once more (the
 * acquire load of its state makes what it saw visible to us) before declaring it lost.
 */
static int nbar_slow_check(hb_nbar_t *b, hb_wait_poll_fn poll, void *arg)
{
    uint64_t now;
    int lost;

    if (b->progress != NULL) { /* hibar_set_progress: the process's other work goes on */
        (void)b->progress(b->progress_arg);
        if (poll(arg, 0) == 0)
            return 0;
    }
    now = hb_time_now_ns();

    if (now - b->last_check_ns < HB_NBAR_CHECK_NS)
        return HIBAR_ERR_WOULD_BLOCK;
    b->last_check_ns = now;
    lost = hb_nbar_find_lost(b);
    if (lost < 0 && nbar_daemon_lost(b)) {
        if (poll(arg, 0) == 0) /* released just before it died */
            return 0;
        hb_log_error("hibard (pid %d) is gone: the job is broken", b->daemon_pid);
        hb_seg_mark_broken(b->seg, -1);
        return HIBAR_ERR_PEER_LOST;
    }
    if (lost < 0)
        return HIBAR_ERR_WOULD_BLOCK;
    if (poll(arg, 0) == 0)
        return 0;
    hb_seg_mark_broken(b->seg, (int32_t)lost);
    return HIBAR_ERR_PEER_LOST;
}

static uint64_t nbar_deadline(const hb_nbar_t *b)
{
    return b->timeout_ns == 0 ? UINT64_MAX : hb_time_now_ns() + b->timeout_ns;
}

/* A wait's policy: the rank's, with no sleep longer than HIBAR_PROGRESS_US where a progress
 * function must keep running (every wake-up of the sleep stage makes a slow poll, and the
 * yield stage makes one every millisecond: nbar_slow_check calls it). */
static hb_wait_policy_t nbar_pol(const hb_nbar_t *b)
{
    hb_wait_policy_t pol = b->pol;
    if (b->progress != NULL && pol.slice_ns > HIBAR_PROGRESS_US * 1000ull)
        pol.slice_ns = HIBAR_PROGRESS_US * 1000ull;
    return pol;
}

/* ---- the barrier ---- */

static int nbar_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int hb_nbar_init(hb_nbar_t *b, hb_seg_t *seg, uint32_t rank, int doorbell_fd, uint32_t radix,
                 uint32_t flat_max, uint64_t timeout_ns)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t(*keys)[HB_SEG_NKEYS];
    uint32_t r;
    int rc;

    if (b == NULL || seg == NULL || rank >= seg->lay.nranks || radix < 2)
        return HIBAR_ERR_INVAL;
    memset(b, 0, sizeof(*b));
    b->seg = seg;
    b->rank = rank;
    b->grank = rank;
    b->nranks = seg->lay.nranks;
    b->doorbell_fd = doorbell_fd;
    b->timeout_ns = timeout_ns;
    b->flat = seg->nnodes <= 1 && b->nranks <= flat_max;
    b->pol = *hb_wait_policy_default();
    b->yield_set = getenv("HIBAR_WAIT_YIELD_US") != NULL;
    if (getenv("HIBAR_WAIT_SPIN_US") == NULL && ncpu > 0 && b->nranks > (uint32_t)ncpu)
        b->pol.spin_ns = 0;
    keys = malloc(b->nranks * sizeof(*keys));
    if (keys == NULL)
        return HIBAR_ERR_NOMEM;
    for (r = 0; r < b->nranks; r++) {
        /* Copied out: every rank must build the same tree from the same values. */
        memcpy(keys[r], hb_seg_ctl(seg, r)->keys, sizeof(keys[r]));
    }
    rc = hb_nbar_tree_build(b->nranks, (const uint32_t(*)[HB_SEG_NKEYS])keys, radix, &b->tree);
    free(keys);
    if (rc != 0)
        return rc;
    /* which job ranks run here, once (the daemon wrote them before anyone attached) */
    if ((b->places = malloc(b->nranks * sizeof(*b->places))) == NULL) {
        hb_nbar_tree_free(&b->tree);
        return HIBAR_ERR_NOMEM;
    }
    for (r = 0; r < b->nranks; r++)
        b->places[r] = (uint64_t)hb_seg_ctl(seg, r)->grank << 32 | r;
    qsort(b->places, b->nranks, sizeof(*b->places), nbar_u64_cmp);
    /* A rank joining a segment in use (not the case today) starts at the current epoch. */
    b->seq = b->flat ? atomic_load(&hb_seg_ctl(seg, rank)->bar_arrive)
                     : atomic_load(&hb_seg_hdr(seg)->release);
    b->done = b->seq;
    return 0;
}

void hb_nbar_fini(hb_nbar_t *b)
{
    hb_nbar_tree_free(&b->tree);
    free(b->places);
    b->places = NULL;
    free(b->subs);
    b->subs = NULL;
    b->nsubs = b->cap = 0;
}

/* The node's barrier epoch is complete: release it, or hand it to the daemon. */
static int nbar_node_complete(hb_nbar_t *b, uint64_t epoch)
{
    hb_seg_hdr_t *h = hb_seg_hdr(b->seg);
    hb_seg_desc_t d;
    uint64_t one = 1;
    int rc;

    if (b->seg->nnodes <= 1) {
        hb_seg_release(b->seg, epoch);
        return 0;
    }
    memset(&d, 0, sizeof(d));
    d.op = HB_SEG_OP_NBAR_ARRIVED;
    d.epoch = epoch;
    d.rank = b->rank;
    atomic_store_explicit(&h->node_arrived, epoch, memory_order_release);
    rc = hb_seg_ring_push(hb_seg_ring(b->seg, b->rank, 0), b->seg->lay.ring_depth, &d);
    if (rc != 0)
        hb_log_warn("nbar: descriptor ring of rank %u: %s (node_arrived still set)",
                    (unsigned)b->rank, hibar_strerror(rc));
    if (b->doorbell_fd >= 0 && write(b->doorbell_fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
        hb_log_error("nbar: ringing the daemon's doorbell: %m");
        return HIBAR_ERR_IO;
    }
    return 0;
}

int hb_nbar_arrive(hb_nbar_t *b, uint64_t *epoch_p)
{
    uint64_t epoch;
    uint32_t g;

    if (atomic_load_explicit(&hb_seg_hdr(b->seg)->state, memory_order_relaxed) != HB_SEG_JOB_OK)
        return HIBAR_ERR_PEER_LOST;
    if (b->done < b->seq) {
        int rc = hb_nbar_wait(b, b->seq);
        if (rc != 0)
            return rc;
    }
    epoch = ++b->seq;
    *epoch_p = epoch;
    if (b->flat) {
        hb_seg_ctl_t *me = hb_seg_ctl(b->seg, b->rank);
        atomic_store_explicit(&me->bar_arrive, epoch, memory_order_release);
        /*
         * The wake (a locked add: it waits until the store above is visible) is deferred to
         * the first look at the others in test or wait, so that the store's cache-line
         * transfer overlaps with that look. A waiter already asleep is woken at once; one
         * falling asleep right now is woken by the deferred bump.
         */
        if (atomic_load_explicit(&me->bar_wake.sleepers, memory_order_relaxed) != 0)
            hb_wait_word_wake(&me->bar_wake);
        else
            b->wake_pending = 1;
        return 0;
    }
    g = b->tree.rank_group[b->rank];
    while (g != HB_NBAR_NONE) {
        uint64_t old =
            atomic_fetch_add_explicit(&hb_seg_group(b->seg, g)->count, 1, memory_order_acq_rel);
        if (old + 1 != epoch * b->tree.group_size[g])
            return 0; /* others still to come: the last of them carries on */
        g = b->tree.group_parent[g];
    }
    return nbar_node_complete(b, epoch);
}

typedef struct nbar_wait_arg {
    hb_nbar_t *b;
    uint64_t epoch;
    uint32_t missing; /* flat: the rank waited for */
} nbar_wait_arg_t;

/* Flat: the first rank that has not reached `epoch`, or nranks if none. */
static uint32_t nbar_flat_missing(hb_nbar_t *b, uint64_t epoch, uint32_t from)
{
    uint32_t r;
    for (r = from; r < b->nranks; r++) {
        if (atomic_load_explicit(&hb_seg_ctl(b->seg, r)->bar_arrive, memory_order_acquire) < epoch)
            break;
    }
    return r;
}

static int nbar_flat_poll(void *arg, int slow)
{
    nbar_wait_arg_t *a = arg;
    hb_seg_hdr_t *h = hb_seg_hdr(a->b->seg);

    if (atomic_load_explicit(&hb_seg_ctl(a->b->seg, a->missing)->bar_arrive,
                             memory_order_acquire) >= a->epoch)
        return 0;
    if (atomic_load_explicit(&h->state, memory_order_relaxed) != HB_SEG_JOB_OK)
        return HIBAR_ERR_PEER_LOST;
    return slow ? nbar_slow_check(a->b, nbar_flat_poll, arg) : HIBAR_ERR_WOULD_BLOCK;
}

static int nbar_poll(void *arg, int slow)
{
    nbar_wait_arg_t *a = arg;
    hb_seg_hdr_t *h = hb_seg_hdr(a->b->seg);

    if (atomic_load_explicit(&h->release, memory_order_acquire) >= a->epoch)
        return 0;
    if (atomic_load_explicit(&h->state, memory_order_relaxed) != HB_SEG_JOB_OK)
        return HIBAR_ERR_PEER_LOST;
    return slow ? nbar_slow_check(a->b, nbar_poll, arg) : HIBAR_ERR_WOULD_BLOCK;
}

/* Flat: the wake word bump deferred by arrive. */
static void nbar_flat_wake(hb_nbar_t *b)
{
    if (b->wake_pending) {
        b->wake_pending = 0;
        hb_wait_word_wake(&hb_seg_ctl(b->seg, b->rank)->bar_wake);
    }
}

int hb_nbar_arrive_nowait(hb_nbar_t *b)
{
    uint64_t epoch;
    int rc = hb_nbar_arrive(b, &epoch);
    if (rc == 0 && b->flat)
        nbar_flat_wake(b); /* no test or wait follows to do it */
    return rc;
}

int hb_nbar_settle(hb_nbar_t *b)
{
    /* an arrival first waits out the epoch before it (hb_nbar_arrive): an outstanding
     * split-phase barrier's epoch is the only one not yet released */
    return b->done < b->seq && b->seq != b->split ? hb_nbar_wait(b, b->seq) : 0;
}

int hb_nbar_test(hb_nbar_t *b, uint64_t epoch)
{
    nbar_wait_arg_t a = {b, epoch, 0};
    int rc;
    if (b->flat) {
        uint32_t m = nbar_flat_missing(b, epoch, 0);
        nbar_flat_wake(b);
        if (m == b->nranks)
            rc = 0;
        else
            rc = atomic_load(&hb_seg_hdr(b->seg)->state) != HB_SEG_JOB_OK ? HIBAR_ERR_PEER_LOST
                                                                          : HIBAR_ERR_WOULD_BLOCK;
    } else {
        rc = nbar_poll(&a, 0);
    }
    if (rc == 0 && epoch > b->done)
        b->done = epoch;
    if (rc == 0 && b->seg->nnodes > 1)
        rc = hb_seg_epoch_status(b->seg, epoch); /* the daemon's verdict on the epoch */
    return rc;
}

int hb_nbar_wait(hb_nbar_t *b, uint64_t epoch)
{
    nbar_wait_arg_t a = {b, epoch, 0};
    uint64_t deadline = nbar_deadline(b);
    hb_wait_policy_t pol = nbar_pol(b);
    int rc = 0;

    if (b->flat) {
        a.missing = nbar_flat_missing(b, epoch, 0);
        nbar_flat_wake(b);
        /* Wait for each missing rank in turn, asleep (if need be) on its own wake word. */
        while ((a.missing = nbar_flat_missing(b, epoch, a.missing)) < b->nranks) {
            rc = hb_wait_until(&hb_seg_ctl(b->seg, a.missing)->bar_wake, nbar_flat_poll, &a, &pol,
                               deadline);
            if (rc != 0)
                break;
        }
    } else {
        /* Across nodes the release comes from the daemon, a network round away at least: where
         * the daemon's loop yields (it says so in the segment) every turn this rank takes is
         * one the daemon waits for, so sleep after the spin stage, without yielding; the
         * daemon wakes the sleepers as it releases. */
        if (b->seg->nnodes > 1 && !b->yield_set &&
            atomic_load_explicit(&hb_seg_hdr(b->seg)->ranks_sleep, memory_order_relaxed))
            pol.yield_ns = 0;
        rc = hb_wait_until(&hb_seg_hdr(b->seg)->release_wake, nbar_poll, &a, &pol, deadline);
    }
    if (rc == 0 && epoch > b->done)
        b->done = epoch;
    if (rc == 0 && b->seg->nnodes > 1) {
        rc = hb_seg_epoch_status(b->seg, epoch); /* the daemon's verdict on the epoch */
        if (rc == HIBAR_ERR_TIMEOUT) {
            hb_log_error("nbar: epoch %llu timed out across the nodes (hibard's verdict: the "
                         "cluster's barrier_timeout_ms passed before every node arrived)",
                         (unsigned long long)epoch);
            return rc;
        }
    }
    if (rc == HIBAR_ERR_TIMEOUT)
        hb_log_error("nbar: barrier epoch %llu not released within %llu ms",
                     (unsigned long long)epoch, (unsigned long long)(b->timeout_ns / 1000000));
    return rc;
}

int hb_nbar_barrier(hb_nbar_t *b)
{
    uint64_t epoch;
    int rc = hb_nbar_arrive(b, &epoch);
    return rc != 0 ? rc : hb_nbar_wait(b, epoch);
}

/* ---- subset barrier ---- */

int hb_nbar_u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Subset barriers: the lowest rank of the set leads. A member publishes (key of the set,
 * its epoch for that set) in sub_arrive and waits for the leader to copy it into its sub_go.
 * Disagreement: a member waiting for this leader with another value (another set, or the
 * same set out of step) while the leader waits for it can never complete; the leader then
 * publishes its own value in sub_fail (for members still to come) and answers every member
 * waiting for it with its value | HB_NBAR_SUB_FAIL: all of them get HIBAR_ERR_MISMATCH.
 */
#define HB_NBAR_SUB_FAIL (1ull << 63)

typedef struct nbar_sub_arg {
    hb_nbar_t *b;
    const uint32_t *ranks;
    size_t n;
    uint64_t val;
} nbar_sub_arg_t;

/* Is member m waiting for this leader with a value that is not ours (and not one we already
 * answered)? *arr_p gets its value. */
static int nbar_sub_stuck(nbar_sub_arg_t *a, uint32_t m, uint64_t *arr_p)
{
    hb_seg_ctl_t *c = hb_seg_ctl(a->b->seg, m);
    uint64_t arr;

    if (atomic_load_explicit(&c->sub_pending, memory_order_acquire) == 0 ||
        atomic_load_explicit(&c->sub_leader, memory_order_relaxed) != a->b->rank)
        return 0;
    arr = atomic_load_explicit(&c->sub_arrive, memory_order_relaxed);
    *arr_p = arr;
    return arr != a->val && (atomic_load(&c->sub_go) & ~HB_NBAR_SUB_FAIL) != arr;
}

static int nbar_sub_poll_leader(void *arg, int slow)
{
    nbar_sub_arg_t *a = arg;
    uint64_t arr;
    size_t i;

    for (i = 1; i < a->n; i++) {
        if (atomic_load_explicit(&hb_seg_ctl(a->b->seg, a->ranks[i])->sub_arrive,
                                 memory_order_acquire) != a->val)
            break;
    }
    if (i == a->n)
        return 0;
    if (atomic_load_explicit(&hb_seg_hdr(a->b->seg)->state, memory_order_relaxed) != HB_SEG_JOB_OK)
        return HIBAR_ERR_PEER_LOST;
    if (!slow)
        return HIBAR_ERR_WOULD_BLOCK;
    for (i = 1; i < a->n; i++) {
        if (nbar_sub_stuck(a, a->ranks[i], &arr))
            return HIBAR_ERR_MISMATCH;
    }
    return nbar_slow_check(a->b, nbar_sub_poll_leader, arg);
}

static int nbar_sub_poll_member(void *arg, int slow)
{
    nbar_sub_arg_t *a = arg;
    uint64_t go =
        atomic_load_explicit(&hb_seg_ctl(a->b->seg, a->b->rank)->sub_go, memory_order_acquire);
    if (go == a->val)
        return 0;
    if (go == (a->val | HB_NBAR_SUB_FAIL) ||
        atomic_load_explicit(&hb_seg_ctl(a->b->seg, a->ranks[0])->sub_fail, memory_order_acquire) ==
            a->val)
        return HIBAR_ERR_MISMATCH;
    if (atomic_load_explicit(&hb_seg_hdr(a->b->seg)->state, memory_order_relaxed) != HB_SEG_JOB_OK)
        return HIBAR_ERR_PEER_LOST;
    return slow ? nbar_slow_check(a->b, nbar_sub_poll_member, arg) : HIBAR_ERR_WOULD_BLOCK;
}

/* The leader found a disagreement: fail its set and every member waiting for it. */
static void nbar_sub_fail(nbar_sub_arg_t *a)
{
    uint64_t arr;
    size_t i;

    atomic_store_explicit(&hb_seg_ctl(a->b->seg, a->b->rank)->sub_fail, a->val,
                          memory_order_release);
    for (i = 1; i < a->n; i++) {
        hb_seg_ctl_t *c = hb_seg_ctl(a->b->seg, a->ranks[i]);
        if (atomic_load_explicit(&c->sub_arrive, memory_order_acquire) == a->val)
            atomic_store_explicit(&c->sub_go, a->val | HB_NBAR_SUB_FAIL, memory_order_release);
        else if (nbar_sub_stuck(a, a->ranks[i], &arr))
            atomic_store_explicit(&c->sub_go, arr | HB_NBAR_SUB_FAIL, memory_order_release);
        hb_wait_word_wake(&c->sub_wake);
    }
    hb_log_error("nbar: ranks disagree on a subset barrier led by rank %u", (unsigned)a->b->rank);
}

/* Epoch of the next barrier over this rank set (every member counts the same way). */
static int nbar_sub_epoch(hb_nbar_t *b, uint64_t hash, uint32_t *epoch_p)
{
    size_t i;
    for (i = 0; i < b->nsubs; i++) {
        if (b->subs[i].hash == hash) {
            *epoch_p = ++b->subs[i].epoch;
            return 0;
        }
    }
    if (b->nsubs == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        hb_nbar_sub_t *s = realloc(b->subs, cap * sizeof(*s));
        if (s == NULL)
            return HIBAR_ERR_NOMEM;
        b->subs = s;
        b->cap = cap;
    }
    b->subs[b->nsubs].hash = hash;
    b->subs[b->nsubs].epoch = 1;
    b->nsubs++;
    *epoch_p = 1;
    return 0;
}

typedef struct nbar_xsub_arg {
    hb_nbar_t *b;
    uint64_t key; /* HB_SEG_SUB_GO_KEY of the answer expected */
} nbar_xsub_arg_t;

static int nbar_xsub_poll(void *arg, int slow)
{
    nbar_xsub_arg_t *a = arg;
    uint64_t go =
        atomic_load_explicit(&hb_seg_ctl(a->b->seg, a->b->rank)->sub_go, memory_order_acquire);
    if (HB_SEG_SUB_GO_KEY(go) == a->key) {
        int st = -(int)(go & 0xffffu);
        return st > 0 || st < HIBAR_ERR_LAST || st == HIBAR_ERR_WOULD_BLOCK ? HIBAR_ERR_PROTO : st;
    }
    if (atomic_load_explicit(&hb_seg_hdr(a->b->seg)->state, memory_order_relaxed) != HB_SEG_JOB_OK)
        return HIBAR_ERR_PEER_LOST;
    return slow ? nbar_slow_check(a->b, nbar_xsub_poll, arg) : HIBAR_ERR_WOULD_BLOCK;
}

int hb_nbar_subset_daemon(hb_nbar_t *b, uint32_t op, const uint32_t *ranks, size_t n, uint64_t hash)
{
    nbar_xsub_arg_t a = {b, 0};
    hb_seg_desc_t d;
    hb_wait_policy_t pol;
    uint64_t one = 1;
    uint32_t epoch;
    uint64_t key = op == HB_SEG_OP_SUBCOLL ? hash ^ HB_SEG_SUBCOLL_SALT : hash;
    int rc = nbar_sub_epoch(b, key, &epoch);
    if (rc != 0)
        return rc;
    a.key = HB_SEG_SUB_GO_KEY(HB_SEG_SUB_GO(key, epoch, 0));
    /* no answer yet (the daemon writes only after it took the descriptor pushed below) */
    atomic_store_explicit(&hb_seg_ctl(b->seg, b->rank)->sub_go, 0, memory_order_relaxed);
    memset(&d, 0, sizeof(d));
    d.op = op;
    d.coll_id = hash;
    d.epoch = epoch;
    d.addr = (uint64_t)(uintptr_t)ranks;
    d.len = n;
    d.rank = b->rank;
    rc = hb_seg_ring_push(hb_seg_ring(b->seg, b->rank, 0), b->seg->lay.ring_depth, &d);
    if (rc != 0)
        return rc;
    if (b->doorbell_fd < 0 || write(b->doorbell_fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
        hb_log_error("nbar: ringing the daemon's doorbell: %m");
        return HIBAR_ERR_IO;
    }
    /* The daemon reads `ranks` from our memory until it answers: wait even past a timeout
     * is not possible, so a timed-out wait leaves the answer to be ignored later. */
    pol = nbar_pol(b);
    rc = hb_wait_until(&hb_seg_ctl(b->seg, b->rank)->sub_wake, nbar_xsub_poll, &a, &pol,
                       nbar_deadline(b));
    if (rc == HIBAR_ERR_TIMEOUT)
        hb_log_error("nbar: subset %s of %zu ranks across nodes timed out",
                     op == HB_SEG_OP_SUBSET ? "barrier" : "collective", n);
    return rc;
}

/*
 * A job on several nodes: are all of the set's members (sorted job ranks) on this node? Then
 * its barrier is this node's alone, run here like a one-node job's (the set's members as their
 * places on the node, still ascending: a node's ranks are placed in job-rank order, and the
 * set is sorted again all the same) and not through the daemon; every member finds the same
 * answer, from the job ranks the daemon wrote into the segment before anyone attached. An MPI
 * communicator of a node's ranks (MPI_COMM_TYPE_SHARED) gets its barrier at the cost of a
 * barrier in shared memory instead of a doorbell and the daemon's turn.
 */
static int nbar_sub_local(hb_nbar_t *b, uint32_t *sorted, size_t n)
{
    uint32_t *at = malloc(n * sizeof(*at));
    int here = at != NULL && hb_nbar_places(b, sorted, n, at) == 1;
    if (here) {
        memcpy(sorted, at, n * sizeof(*at));
        qsort(sorted, n, sizeof(*sorted), hb_nbar_u32_cmp);
    }
    free(at);
    return here;
}

int hb_nbar_places(const hb_nbar_t *b, const uint32_t *ranks, size_t n, uint32_t *at)
{
    for (size_t i = 0; i < n; i++) {
        size_t lo = 0, hi = b->nranks; /* the first entry of job rank ranks[i] or above */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if ((uint32_t)(b->places[mid] >> 32) < ranks[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == b->nranks || (uint32_t)(b->places[lo] >> 32) != ranks[i])
            return 0;
        at[i] = (uint32_t)b->places[lo];
    }
    return 1;
}

int hb_nbar_set_check(const hb_nbar_t *b, const uint32_t *ranks, size_t n, uint32_t *sorted)
{
    uint32_t size = b->seg->nnodes > 1 ? b->seg->gsize : b->nranks;
    uint32_t self = b->seg->nnodes > 1 ? b->grank : b->rank;
    int me = 0;
    if (ranks == NULL || n == 0 || n > size)
        return HIBAR_ERR_INVAL;
    memcpy(sorted, ranks, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), hb_nbar_u32_cmp);
    for (size_t i = 0; i < n; i++) {
        if (sorted[i] >= size || (i > 0 && sorted[i] == sorted[i - 1]))
            return HIBAR_ERR_INVAL;
        me |= sorted[i] == self;
    }
    return me ? 0 : HIBAR_ERR_INVAL;
}

uint64_t hb_nbar_set_hash(const uint32_t *ranks, size_t n)
{
    uint64_t hash = HB_FNV64_BASIS;
    for (size_t i = 0; i < n; i++)
        hash = hb_fnv64_u32(hash, ranks[i]);
    return hash;
}

uint32_t hb_nbar_set_count(const hb_nbar_t *b, uint64_t hash)
{
    for (size_t i = 0; i < b->nsubs; i++)
        if (b->subs[i].hash == hash)
            return b->subs[i].epoch;
    return 0;
}

int hb_nbar_subset(hb_nbar_t *b, const uint32_t *ranks, size_t n)
{
    nbar_sub_arg_t a;
    hb_wait_policy_t pol;
    uint32_t *sorted, epoch;
    uint64_t hash;
    size_t i;
    int rc;

    if (ranks == NULL || n == 0)
        return HIBAR_ERR_INVAL;
    sorted = malloc(n * sizeof(*sorted));
    if (sorted == NULL)
        return HIBAR_ERR_NOMEM;
    if ((rc = hb_nbar_set_check(b, ranks, n, sorted)) != 0)
        goto out;
    hash = hb_nbar_set_hash(sorted, n);
    /* misuse is told at once; a valid call first waits out the last collective's epoch */
    if ((rc = hb_nbar_settle(b)) != 0)
        goto out;
    if (atomic_load(&hb_seg_hdr(b->seg)->state) != HB_SEG_JOB_OK) {
        rc = HIBAR_ERR_PEER_LOST;
        goto out;
    }
    rc = 0;
    if (n == 1)
        goto out;
    if (b->seg->nnodes > 1 && !nbar_sub_local(b, sorted, n)) {
        rc = hb_nbar_subset_daemon(b, HB_SEG_OP_SUBSET, sorted, n, hash);
        goto out;
    }
    rc = nbar_sub_epoch(b, hash, &epoch);
    if (rc != 0)
        goto out;
    a.b = b;
    a.ranks = sorted;
    a.n = n;
    a.val = ((uint64_t)((uint32_t)(hash ^ (hash >> 32)) & 0x7fffffffu) << 32) | epoch;
    pol = nbar_pol(b);
    if (sorted[0] == b->rank) {
        rc = hb_wait_until(&hb_seg_ctl(b->seg, b->rank)->sub_wake, nbar_sub_poll_leader, &a, &pol,
                           nbar_deadline(b));
        if (rc == HIBAR_ERR_MISMATCH)
            nbar_sub_fail(&a);
        if (rc != 0)
            goto out;
        for (i = 1; i < n; i++) {
            hb_seg_ctl_t *c = hb_seg_ctl(b->seg, sorted[i]);
            atomic_store_explicit(&c->sub_go, a.val, memory_order_release);
            hb_wait_word_wake(&c->sub_wake);
        }
    } else {
        hb_seg_ctl_t *mine = hb_seg_ctl(b->seg, b->rank);
        atomic_store_explicit(&mine->sub_arrive, a.val, memory_order_release);
        atomic_store_explicit(&mine->sub_leader, sorted[0], memory_order_relaxed);
        atomic_store_explicit(&mine->sub_pending, 1, memory_order_release);
        hb_wait_word_wake(&hb_seg_ctl(b->seg, sorted[0])->sub_wake);
        rc = hb_wait_until(&mine->sub_wake, nbar_sub_poll_member, &a, &pol, nbar_deadline(b));
        atomic_store_explicit(&mine->sub_pending, 0, memory_order_release);
    }
    if (rc == HIBAR_ERR_TIMEOUT)
        hb_log_error("nbar: subset barrier of %zu ranks timed out", n);
out:
    free(sorted);
    return rc;
}
