/* test_hwb.c: the hwbarrier conformance suite, run on every backend (participants are processes).
 */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hwb.h"
#include "scic_model.h"

#include "hb_log.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hb_status.h"
#include "hb_test.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T_WAIT_MS                                                                                  \
    20000 /* per-barrier guard: a broken barrier fails the test instead of hanging                 \
           */
#define T_MAXROUNDS 4096

/* Memory shared by the test process and its participant processes. */
typedef struct t_shared {
    _Atomic uint32_t cnt[T_MAXROUNDS];
    _Atomic int go;
    int result[HB_HWB_MAX_NODES]; /* first failing status of each participant, 0 if none */
    int line[HB_HWB_MAX_NODES];   /* where it failed */
    int got[HB_HWB_MAX_NODES];    /* a value the body wants the test to check */
} t_shared_t;

typedef int (*t_body_fn)(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg);

static const char *t_backend;    /* backend of the running suite */
static hb_scic_model_t *t_model; /* scic: the device model of the running group */
static t_shared_t *t_sh;
static long t_center_delay_us; /* the Center opens this late (any-order start) */
static unsigned t_seq;

#define T_CHECK(cond, st)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            t_sh->line[me] = __LINE__;                                                             \
            return t_fail_code(st);                                                                \
        }                                                                                          \
    } while (0)

/* A check failed with status st: report st, or INTERNAL if st is 0 (success not expected). */
static int t_fail_code(int st)
{
    return st != 0 ? st : HB_ERR_INTERNAL;
}

static void t_nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void t_cluster(char *buf, size_t len)
{
    snprintf(buf, len, "test%d-%u", (int)getpid(), t_seq++);
}

/* Remove the shm segment of a test cluster and its nodes' fd sockets, if any (normally the
 * Center and the nodes did). */
static void t_unlink(const char *cluster)
{
    char name[128];
    snprintf(name, sizeof(name), "/hibar-%u-%s-c3", (unsigned)getuid(), cluster);
    shm_unlink(name);
    for (int i = 0; i < HB_HWB_MAX_NODES; i++) {
        snprintf(name, sizeof(name), "/dev/shm/hibar-%u-%s-c3-p%d", (unsigned)getuid(), cluster, i);
        unlink(name);
    }
}

/*
 * The shm fd's liveness timer ticks every sleep slice, and each tick lets a loop re-test its
 * rounds: a lost wake-up would only cost a slice. The fd tests that need no liveness check run
 * with hour-long slices (the participants read HIBAR_WAIT_SLICE_MS when they start), so that
 * a lost wake-up leaves a participant asleep until its guard fails it.
 */
static void t_long_slices(int on)
{
    if (on)
        setenv("HIBAR_WAIT_SLICE_MS", "3600000", 1);
    else
        unsetenv("HIBAR_WAIT_SLICE_MS");
}

static void t_params(hb_hwb_params_t *p, const char *cluster, uint32_t me, uint32_t n)
{
    memset(p, 0, sizeof(*p));
    p->cluster = cluster;
    p->chassis = 3;
    p->port = me;
    p->nodes = n;
    p->timeout_ms = 10000;
    if (t_model != NULL) {
        p->uio_path = hb_scic_model_uio_path(t_model, me);
        p->bar_path = hb_scic_model_bar_path(t_model, me);
    }
}

/*
 * Run body in n participant processes (ports 0..n-1); those not in open_mask never open.
 * Ports open in reverse order (ports before the Center) to exercise any-order start.
 * Returns the number of participants that failed; details in t_sh->result/line.
 */
/* Called in the test process: phase 0 after the model starts, 1 once participants run,
 * 2 after they all exited (the model still runs). */
typedef void (*t_parent_fn)(int phase);

static int t_run_ex(uint32_t n, uint32_t open_mask, t_body_fn body, void *arg, t_parent_fn parent)
{
    char cluster[48];
    pid_t pid[HB_HWB_MAX_NODES];
    int failed = 0;

    t_cluster(cluster, sizeof(cluster));
    memset(t_sh, 0, sizeof(*t_sh));
    if (strcmp(t_backend, "scic") == 0 && hb_scic_model_create(n, cluster, &t_model) < 0)
        return (int)n;
    if (parent != NULL)
        parent(0);
    for (int i = (int)n - 1; i >= 0; i--) {
        pid[i] = fork();
        if (pid[i] == 0) {
            hb_hwb_params_t p;
            hb_hwb_t *h;
            int rc;
            hb_wait_policy_reload(); /* this test's HIBAR_WAIT_* (t_long_slices) */
            if (!(open_mask & (1u << i)))
                _exit(0);
            if (i == 0 && t_center_delay_us > 0)
                t_nap_us(t_center_delay_us); /* the ports open first and wait for it */
            t_params(&p, cluster, (uint32_t)i, n);
            rc = hb_hwb_open(t_backend, &p, &h);
            if (rc == 0) {
                rc = body(h, (uint32_t)i, n, arg);
                hb_hwb_close(h);
            } else {
                t_sh->line[i] = -1;
            }
            t_sh->result[i] = rc;
            _exit(0);
        }
        if (pid[i] < 0) {
            perror("fork");
            return (int)n;
        }
    }
    if (parent != NULL)
        parent(1);
    for (uint32_t i = 0; i < n; i++) {
        int st;
        while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            t_sh->result[i] = HB_ERR_INTERNAL;
            t_sh->line[i] = -2;
        }
        if (t_sh->result[i] != 0) {
            fprintf(stderr, "\n  [%s n=%u] participant %u: %s (line %d)", t_backend, n, i,
                    hb_status_str(t_sh->result[i]), t_sh->line[i]);
            failed++;
        }
    }
    if (parent != NULL)
        parent(2);
    t_unlink(cluster); /* a participant that crashed must not leave its segment behind */
    if (t_model != NULL) {
        hb_scic_model_destroy(t_model);
        t_model = NULL;
    }
    return failed;
}

static int t_run(uint32_t n, uint32_t open_mask, t_body_fn body, void *arg)
{
    return t_run_ex(n, open_mask, body, arg, NULL);
}

static uint32_t t_full(uint32_t n)
{
    return n == 32 ? 0xffffffffu : (1u << n) - 1;
}

/* ---- bodies ---- */

/* rounds barriers over every sync number in turn; checks nobody leaves a barrier early. */
static int t_body_barriers(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    long rounds = *(long *)arg;
    uint32_t mask = t_full(n);
    for (long r = 0; r < rounds; r++) {
        uint32_t s = (uint32_t)(r % HB_HWB_NSYNC);
        int rc;
        atomic_fetch_add(&t_sh->cnt[r % 4], 1);
        rc = hb_hwb_barrier(h, s, mask, T_WAIT_MS);
        T_CHECK(rc == 0, rc);
        T_CHECK(atomic_load(&t_sh->cnt[r % 4]) == n * (uint32_t)(r / 4 + 1), HB_ERR_INTERNAL);
    }
    return 0;
}

static uint32_t t_round_mask(long r, uint32_t n)
{
    uint32_t x = (uint32_t)(r * 2654435761u) ^ (uint32_t)(r >> 3);
    uint32_t m = x & t_full(n);
    m |= 1u << (r % n);
    m |= 1u << ((r + 1) % n);
    return m;
}

/* Arbitrary participation: rounds with varying masks on syncs 0..14, a full barrier on 15
 * after each 15 so that no sync number is reused before its round is over. */
static int t_body_masks(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    (void)arg;
    for (long r = 0; r < 150; r++) {
        uint32_t s = (uint32_t)(r % 15), m = t_round_mask(r, n);
        int rc;
        if (m & (1u << me)) {
            atomic_fetch_add(&t_sh->cnt[r], 1);
            rc = hb_hwb_barrier(h, s, m, T_WAIT_MS);
            T_CHECK(rc == 0, rc);
            T_CHECK(atomic_load(&t_sh->cnt[r]) == (uint32_t)__builtin_popcount(m), 0);
        }
        if (s == 14) {
            rc = hb_hwb_barrier(h, 15, t_full(n), T_WAIT_MS);
            T_CHECK(rc == 0, rc);
        }
    }
    return 0;
}

/* Every sync number in flight at once, arrived and collected in different orders. */
static int t_body_concurrent(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    (void)arg;
    for (uint32_t it = 0; it < 20; it++) {
        for (uint32_t k = 0; k < HB_HWB_NSYNC; k++) {
            uint32_t s = me & 1 ? HB_HWB_NSYNC - 1 - k : k;
            int rc;
            atomic_fetch_add(&t_sh->cnt[it * HB_HWB_NSYNC + s], 1);
            rc = hb_hwb_arrive(h, s, t_full(n));
            T_CHECK(rc == 0, rc);
        }
        for (uint32_t k = 0; k < HB_HWB_NSYNC; k++) {
            uint32_t s = (k * 7 + me) % HB_HWB_NSYNC;
            int rc = hb_hwb_wait(h, s, T_WAIT_MS);
            T_CHECK(rc == 0, rc);
            T_CHECK(atomic_load(&t_sh->cnt[it * HB_HWB_NSYNC + s]) == n, 0);
        }
    }
    return 0;
}

/*
 * The event-loop discipline of hb_hwb_fd: arm, test every round in *pend, sleep in poll() on
 * fd, again; rounds that ended leave *pend with their result in res[s]. Returns 0 once no
 * round of `want` is pending, TIMEOUT if that took T_WAIT_MS (a lost wake-up: a guard against
 * a hang, not a time limit on the barrier), or IO.
 */
static int t_fd_loop(hb_hwb_t *h, int fd, uint32_t *pend, uint32_t want, int *res)
{
    uint64_t t0 = hb_time_now_ns();
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        /* the guard covers every sleep: the shm fd's liveness tick wakes a loop regularly */
        if (hb_time_now_ns() - t0 > T_WAIT_MS * 1000000ull)
            return HB_ERR_TIMEOUT;
        if (hb_hwb_fd_arm(h, 1) != 0)
            return HB_ERR_IO;
        for (uint32_t s = 0; s < HB_HWB_NSYNC; s++) {
            int rc;
            if (!(*pend & (1u << s)) || (rc = hb_hwb_test(h, s)) == HB_ERR_WOULD_BLOCK)
                continue;
            *pend &= ~(1u << s);
            res[s] = rc;
        }
        if (!(*pend & want))
            return 0;
        if (poll(&pfd, 1, T_WAIT_MS) != 1)
            return HB_ERR_TIMEOUT;
    }
}

/*
 * Several rounds in flight and one event loop, as in hibard: node 0 arrives at 1 and 2 and
 * sleeps on the fd; the others complete 2 only, and arrive at 1 once node 0 has said that it
 * saw 2 end. An fd that only reports one of the rounds, or reports a round that has not ended,
 * fails a check; one that misses the end of 2 leaves node 0 asleep until the others give up
 * waiting for its word (T_WAIT_MS) and complete 1: then node 0 sees 1 end first and fails.
 */
static int t_body_any(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int rc, fd = -1, fd2 = -1, res[HB_HWB_NSYNC];
    uint32_t pend = 0x6;
    (void)arg;
    if (me == 0) {
        struct pollfd pfd = {.fd = -1, .events = POLLIN};
        T_CHECK(hb_hwb_fd_arm(h, 1) == HB_ERR_INVAL, 0); /* no fd asked for yet */
        T_CHECK(hb_hwb_fd(h, &fd) == 0 && fd >= 0, 0);
        T_CHECK(hb_hwb_fd(h, &fd2) == 0 && fd2 == fd, 0); /* one fd per handle */
        pfd.fd = fd;
        T_CHECK(hb_hwb_arrive(h, 1, t_full(n)) == 0, 0);
        T_CHECK(hb_hwb_arrive(h, 2, t_full(n)) == 0, 0);
        T_CHECK(hb_hwb_fd_arm(h, 1) == 0, 0);
        T_CHECK(hb_hwb_test(h, 1) == HB_ERR_WOULD_BLOCK, 0);
        T_CHECK(hb_hwb_test(h, 2) == HB_ERR_WOULD_BLOCK, 0);
        T_CHECK(poll(&pfd, 1, 0) == 0, 0); /* nothing ended: not readable */
        atomic_store(&t_sh->go, 1);
        T_CHECK(poll(&pfd, 1, T_WAIT_MS) == 1, HB_ERR_TIMEOUT);
        /* only hb_hwb_fd_arm clears it: a test of another round must not (a loop that tested
         * that round a moment before would never hear of its end) */
        T_CHECK(hb_hwb_test(h, 1) == HB_ERR_WOULD_BLOCK, 0);
        T_CHECK(poll(&pfd, 1, 0) == 1, 0);
        T_CHECK(hb_hwb_fd_arm(h, 0) == 0, 0); /* cleared, disarmed */
        T_CHECK(hb_hwb_test(h, 1) == HB_ERR_WOULD_BLOCK, 0);
        rc = hb_hwb_test(h, 2);
        t_sh->got[0] = rc == 0 ? 2 : -1;
        T_CHECK(rc == 0 && atomic_load(&t_sh->cnt[1]) == 0, rc);
        T_CHECK(poll(&pfd, 1, 0) == 0, 0); /* cleared, and nothing else ended */
        atomic_store(&t_sh->go, 2);
        pend = 0x2;
        rc = t_fd_loop(h, fd, &pend, 0x2, res);
        T_CHECK(rc == 0 && res[1] == 0, rc ? rc : res[1]);
        T_CHECK(atomic_load(&t_sh->cnt[1]) == n - 1, 0);
        return 0;
    }
    while (atomic_load(&t_sh->go) < 1)
        t_nap_us(100);
    t_nap_us(20000); /* node 0 is most likely asleep by now (the check does not rely on it) */
    rc = hb_hwb_barrier(h, 2, t_full(n), T_WAIT_MS);
    T_CHECK(rc == 0, rc);
    /* bounded, so that a broken fd fails the test instead of hanging it */
    for (uint64_t t0 = hb_time_now_ns();
         atomic_load(&t_sh->go) < 2 && hb_time_now_ns() - t0 < T_WAIT_MS * 1000000ull;)
        t_nap_us(200);
    atomic_fetch_add(&t_sh->cnt[1], 1);
    rc = hb_hwb_barrier(h, 1, t_full(n), T_WAIT_MS);
    T_CHECK(rc == 0, rc);
    return 0;
}

/*
 * Every participant an event loop with T_FD_INFLIGHT rounds in flight: each arrives at them in
 * its own order (some last, completing the round in its own arrival), then collects them
 * through the fd alone. A lost wake-up anywhere stops a participant in poll (the guard fails
 * it); a round reported ended before everyone arrived fails the count check.
 */
#define T_FD_INFLIGHT 4
#define T_FD_ITERS 500
static int t_body_fd_rounds(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int fd = -1, res[HB_HWB_NSYNC];
    (void)arg;
    T_CHECK(hb_hwb_fd(h, &fd) == 0, 0);
    for (uint32_t it = 0; it < T_FD_ITERS; it++) {
        uint32_t base = (it % 2) * T_FD_INFLIGHT, pend = 0; /* alternate halves of the syncs */
        for (uint32_t k = 0; k < T_FD_INFLIGHT; k++) {
            uint32_t s = base + (k + me + it) % T_FD_INFLIGHT;
            atomic_fetch_add(&t_sh->cnt[(it * T_FD_INFLIGHT + s - base) % T_MAXROUNDS], 1);
            T_CHECK(hb_hwb_arrive(h, s, t_full(n)) == 0, 0);
            pend |= 1u << s;
            if ((it + me) % 3 == 0)
                sched_yield(); /* let others arrive in between */
        }
        uint32_t want = pend;
        int rc = t_fd_loop(h, fd, &pend, want, res);
        T_CHECK(rc == 0, rc);
        for (uint32_t k = 0; k < T_FD_INFLIGHT; k++) {
            T_CHECK(res[base + k] == 0, res[base + k]);
            T_CHECK(atomic_load(&t_sh->cnt[(it * T_FD_INFLIGHT + k) % T_MAXROUNDS]) == n, 0);
        }
    }
    return 0;
}

/* The last port: once the others are under way, die (exit without closing, no arrival). */
static void t_last_port_dies(uint32_t me, uint32_t n)
{
    if (me != n - 1)
        return;
    while (atomic_load(&t_sh->go) < (int)n - 1)
        t_nap_us(200);
    t_nap_us(20000);
    _exit(0);
}

/* The last port dies (exits without closing) while the others collect through the fd: the
 * liveness timer of the fd finds it and the round fails; a round without it completes. With 2
 * nodes nobody else ends a round: the sleeping loop must wake on its own timer. */
static int t_body_fd_dead(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int fd = -1, rc, res[HB_HWB_NSYNC];
    uint32_t pend = 0x6;
    (void)arg;
    t_last_port_dies(me, n);
    T_CHECK(hb_hwb_fd(h, &fd) == 0, 0);
    t_nap_us(20000); /* nothing pending yet: the dying port is most likely asleep by now */
    T_CHECK(hb_hwb_arrive(h, 1, t_full(n)) == 0, 0);
    T_CHECK(hb_hwb_arrive(h, 2, t_full(n) & ~(1u << (n - 1))) == 0, 0);
    atomic_fetch_add(&t_sh->go, 1);
    rc = t_fd_loop(h, fd, &pend, 0x6, res);
    T_CHECK(rc == 0, rc);
    t_sh->got[me] = res[1];
    T_CHECK(res[2] == 0, res[2]);
    T_CHECK(res[1] == HB_ERR_PEER_LOST, res[1]);
    return 0;
}

/* Node 0 closes its handle while its fd is armed for a round: close returns, and node 1 sees
 * node 0 leave. */
static int t_body_fd_close(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int fd = -1, rc;
    (void)arg;
    if (me == 0) {
        T_CHECK(hb_hwb_fd(h, &fd) == 0, 0);
        T_CHECK(hb_hwb_arrive(h, 3, t_full(n)) == 0, 0); /* node 1 never comes to 3 */
        /* node 1 must have attached before the Center goes (on a loaded machine it can
         * start late); bounded: a node 1 that never comes fails its own check */
        for (uint64_t t0 = hb_time_now_ns();
             atomic_load(&t_sh->cnt[0]) == 0 && hb_time_now_ns() - t0 < T_WAIT_MS * 1000000ull;)
            t_nap_us(200);
        t_nap_us(5000); /* node 1 is most likely asleep by now (or about to call) */
        hb_hwb_close(h);
        atomic_store(&t_sh->go, 1);
        _exit(0);
    }
    atomic_store(&t_sh->cnt[0], 1); /* attached */
    rc = hb_hwb_barrier(h, 4, t_full(n), T_WAIT_MS);
    T_CHECK(rc == HB_ERR_PEER_LOST, rc);
    for (uint64_t t0 = hb_time_now_ns(); /* bounded: a hung close fails here */
         !atomic_load(&t_sh->go) && hb_time_now_ns() - t0 < T_WAIT_MS * 1000000ull;)
        t_nap_us(200);
    T_CHECK(atomic_load(&t_sh->go) == 1, HB_ERR_TIMEOUT);
    return 0;
}

/* Split phase: the Center arrives and sees "not yet" until the others arrive. */
static int t_body_split(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int rc;
    (void)arg;
    if (me == 0) {
        rc = hb_hwb_arrive(h, 5, t_full(n));
        T_CHECK(rc == 0, rc);
        rc = hb_hwb_test(h, 5);
        T_CHECK(rc == HB_ERR_WOULD_BLOCK, rc);
        T_CHECK(hb_hwb_arrive(h, 5, t_full(n)) == HB_ERR_BUSY, 0);
        atomic_store(&t_sh->go, 1);
        while ((rc = hb_hwb_test(h, 5)) == HB_ERR_WOULD_BLOCK)
            t_nap_us(100); /* the "work" between arrive and completion */
        T_CHECK(rc == 0, rc);
        T_CHECK(atomic_load(&t_sh->cnt[0]) == n - 1, 0);
        T_CHECK(hb_hwb_test(h, 5) == HB_ERR_INVAL, 0); /* collected: not pending any more */
    } else {
        while (!atomic_load(&t_sh->go))
            t_nap_us(100);
        atomic_fetch_add(&t_sh->cnt[0], 1);
        rc = hb_hwb_barrier(h, 5, t_full(n), T_WAIT_MS);
        T_CHECK(rc == 0, rc);
    }
    rc = hb_hwb_barrier(h, 5, t_full(n), T_WAIT_MS); /* reuse after completion */
    T_CHECK(rc == 0, rc);
    return 0;
}

/* Disagreeing masks: every participant gets MISMATCH; then the sync number works again. */
static int t_body_mismatch(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    uint32_t mask = me == 0 ? 0x3u : t_full(n);
    int rc;
    (void)arg;
    rc = hb_hwb_arrive(h, 2, mask);
    T_CHECK(rc == 0, rc);
    rc = hb_hwb_wait(h, 2, T_WAIT_MS);
    T_CHECK(rc == HB_ERR_MISMATCH, rc);
    rc = hb_hwb_barrier(h, 3, t_full(n), T_WAIT_MS);
    T_CHECK(rc == 0, rc);
    rc = hb_hwb_barrier(h, 2, t_full(n), T_WAIT_MS);
    T_CHECK(rc == 0, rc);
    return 0;
}

/* Timeout: the last port arrives late; the early ones time out, then complete. */
static int t_body_timeout(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int rc;
    (void)arg;
    if (me == n - 1) {
        while (atomic_load(&t_sh->go) < (int)n - 1)
            t_nap_us(200);
        return hb_hwb_barrier(h, 7, t_full(n), T_WAIT_MS);
    }
    rc = hb_hwb_arrive(h, 7, t_full(n));
    T_CHECK(rc == 0, rc);
    rc = hb_hwb_wait(h, 7, 50);
    T_CHECK(rc == HB_ERR_TIMEOUT, rc);
    T_CHECK(hb_hwb_test(h, 7) == HB_ERR_WOULD_BLOCK, 0);
    atomic_fetch_add(&t_sh->go, 1);
    rc = hb_hwb_wait(h, 7, T_WAIT_MS);
    T_CHECK(rc == 0, rc);
    return 0;
}

/* The last port dies (exits without closing) after the others arrive. */
static int t_body_dead(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int rc;
    (void)arg;
    t_last_port_dies(me, n);
    rc = hb_hwb_arrive(h, 1, t_full(n));
    T_CHECK(rc == 0, rc);
    atomic_fetch_add(&t_sh->go, 1);
    /* shm finds the death within a sleep slice: a long timeout costs nothing there and keeps
     * a loaded machine from turning PEER_LOST into TIMEOUT; scic can only time out */
    rc = hb_hwb_wait(h, 1, strcmp(t_backend, "shm") == 0 ? 10000 : 1000);
    t_sh->got[me] = rc;
    T_CHECK(rc == HB_ERR_PEER_LOST || rc == HB_ERR_TIMEOUT, rc);
    return 0;
}

/* Some participant never opens: the others time out within their timeout. */
static int t_body_never(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int rc;
    (void)arg;
    rc = hb_hwb_barrier(h, 0, t_full(n), 300);
    T_CHECK(rc == HB_ERR_TIMEOUT, rc);
    /* stay until every opened participant timed out (leaving would be a PEER_LOST) */
    atomic_fetch_add(&t_sh->go, 1);
    while (atomic_load(&t_sh->go) < (int)n - 1)
        t_nap_us(200);
    return 0;
}

/* Event-loop fd (split phase driven by poll): the Center arrives first, then last. */
static int t_body_fd(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int fd = -1, rc;
    (void)arg;
    if (me != 0) {
        while (!atomic_load(&t_sh->go))
            t_nap_us(100);
        T_CHECK(hb_hwb_barrier(h, 6, t_full(n), T_WAIT_MS) == 0, 0);
        atomic_fetch_add(&t_sh->cnt[0], 1);
        T_CHECK(hb_hwb_barrier(h, 7, t_full(n), T_WAIT_MS) == 0, 0);
        return 0;
    }
    rc = hb_hwb_fd(h, &fd);
    T_CHECK(rc == 0 && fd >= 0, rc);
    for (uint32_t s = 6; s <= 7; s++) {
        if (s == 7) /* the others wait at 7 before the Center arrives: it completes the round */
            while (atomic_load(&t_sh->cnt[0]) < n - 1)
                t_nap_us(100);
        T_CHECK(hb_hwb_arrive(h, s, t_full(n)) == 0, 0);
        atomic_store(&t_sh->go, 1);
        uint32_t pend = 1u << s;
        int res[HB_HWB_NSYNC];
        rc = t_fd_loop(h, fd, &pend, pend, res); /* the fd woke us */
        T_CHECK(rc == 0, rc);
        T_CHECK(res[s] == 0, res[s]);
    }
    return 0;
}

/* ---- tests ---- */

static void t_barriers(uint32_t n, long rounds)
{
    CU_ASSERT_EQUAL(t_run(n, t_full(n), t_body_barriers, &rounds), 0);
}

static void test_barrier_2(void)
{
    t_barriers(2, 2000);
}
static void test_barrier_3(void)
{
    t_barriers(3, 2000);
}
static void test_barrier_8(void)
{
    t_barriers(8, 300);
}
static void test_barrier_32(void)
{
    t_barriers(32, 40);
}
static void test_100k(void)
{
    t_barriers(2, 100000);
}
static void test_masks_3(void)
{
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_masks, NULL), 0);
}
static void test_masks_8(void)
{
    CU_ASSERT_EQUAL(t_run(8, 0xff, t_body_masks, NULL), 0);
}
static void test_concurrent_2(void)
{
    CU_ASSERT_EQUAL(t_run(2, 3, t_body_concurrent, NULL), 0);
}
static void test_concurrent_3(void)
{
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_concurrent, NULL), 0);
}
static void test_any_3(void)
{
    t_long_slices(1);
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_any, NULL), 0);
    t_long_slices(0);
    CU_ASSERT_EQUAL(t_sh->got[0], 2);
}
static void test_split_3(void)
{
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_split, NULL), 0);
}
static void test_mismatch_3(void)
{
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_mismatch, NULL), 0);
}
static void test_timeout_2(void)
{
    CU_ASSERT_EQUAL(t_run(2, 3, t_body_timeout, NULL), 0);
}
static void test_timeout_3(void)
{
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_timeout, NULL), 0);
}

static void test_fd_3(void)
{
    t_long_slices(1);
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_fd, NULL), 0);
    t_long_slices(0);
}

static void test_fd_rounds_2(void)
{
    t_long_slices(1);
    CU_ASSERT_EQUAL(t_run(2, 3, t_body_fd_rounds, NULL), 0);
    t_long_slices(0);
}

static void test_fd_rounds_3(void)
{
    t_long_slices(1);
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_fd_rounds, NULL), 0);
    t_long_slices(0);
}

static void test_fd_dead_2(void)
{
    /* alone with the dying port: nobody else aborts the round and wakes node 0 */
    CU_ASSERT_EQUAL(t_run(2, 3, t_body_fd_dead, NULL), 0);
    CU_ASSERT_EQUAL(t_sh->got[0], HB_ERR_PEER_LOST);
}

static void test_fd_dead_3(void)
{
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_fd_dead, NULL), 0);
    CU_ASSERT_EQUAL(t_sh->got[0], HB_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(t_sh->got[1], HB_ERR_PEER_LOST);
}

static void test_fd_close_2(void)
{
    CU_ASSERT_EQUAL(t_run(2, 3, t_body_fd_close, NULL), 0);
}

static void test_dead_3(void)
{
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_dead, NULL), 0);
    /* shm sees the death through pids: PEER_LOST, not a timeout. */
    if (strcmp(t_backend, "shm") == 0) {
        CU_ASSERT_EQUAL(t_sh->got[0], HB_ERR_PEER_LOST);
        CU_ASSERT_EQUAL(t_sh->got[1], HB_ERR_PEER_LOST);
    }
}

static void test_never_3(void)
{
    /* For scic the Center's board must exist for ports to open; port 2 never comes. */
    CU_ASSERT_EQUAL(t_run(3, 3, t_body_never, NULL), 0);
}

/* In-process API checks with a single participant. */
static void test_api(void)
{
    char cluster[48];
    hb_hwb_params_t p;
    hb_hwb_t *h = NULL;

    t_cluster(cluster, sizeof(cluster));
    if (strcmp(t_backend, "scic") == 0)
        CU_ASSERT_FATAL(hb_scic_model_create(1, cluster, &t_model) == 0);
    t_params(&p, cluster, 0, 1);
    CU_ASSERT_EQUAL(hb_hwb_open("nosuch", &p, &h), HB_ERR_NOT_FOUND);
    p.nodes = 33;
    CU_ASSERT_EQUAL(hb_hwb_open(t_backend, &p, &h), HB_ERR_INVAL);
    p.nodes = 1;
    p.cluster = "bad/name";
    CU_ASSERT_EQUAL(hb_hwb_open(t_backend, &p, &h), HB_ERR_INVAL);
    p.cluster = cluster;
    CU_ASSERT_FATAL(hb_hwb_open(t_backend, &p, &h) == 0);
    CU_ASSERT_STRING_EQUAL(hb_hwb_name(h), t_backend);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h, HB_HWB_NSYNC, 1), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h, 0, 2), HB_ERR_INVAL); /* mask without this node */
    CU_ASSERT_EQUAL(hb_hwb_arrive(h, 0, 0), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_hwb_test(h, 0), HB_ERR_INVAL); /* not arrived */
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(hb_hwb_barrier(h, (uint32_t)i % HB_HWB_NSYNC, 1, T_WAIT_MS), 0);
    {
        /* alone, every arrival completes its round: the fd reports it at once */
        int fd = -1, res[HB_HWB_NSYNC];
        struct pollfd pfd = {.fd = -1, .events = POLLIN};
        CU_ASSERT_FATAL(hb_hwb_fd(h, &fd) == 0 && fd >= 0);
        pfd.fd = fd;
        CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);    /* nothing pending: not readable */
        CU_ASSERT_EQUAL(hb_hwb_fd_arm(h, 1), 0); /* nothing pending: nothing to report */
        CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);
        CU_ASSERT_EQUAL(hb_hwb_arrive(h, 9, 1), 0);
        CU_ASSERT_EQUAL(hb_hwb_fd_arm(h, 1), 0); /* a round that has ended is reported */
        CU_ASSERT_EQUAL(poll(&pfd, 1, T_WAIT_MS), 1);
        CU_ASSERT_EQUAL(hb_hwb_test(h, 9), 0);
        CU_ASSERT_EQUAL(hb_hwb_fd_arm(h, 1), 0);
        CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0); /* cleared, nothing pending */
        for (int i = 0; i < 100; i++) {
            uint32_t s = (uint32_t)i % HB_HWB_NSYNC, pend = 1u << s;
            CU_ASSERT_EQUAL(hb_hwb_arrive(h, s, 1), 0);
            CU_ASSERT_EQUAL(t_fd_loop(h, fd, &pend, 1u << s, res), 0);
            CU_ASSERT_EQUAL(res[s], 0);
        }
    }
    hb_hwb_close(h);
    if (t_model != NULL) {
        hb_scic_model_destroy(t_model);
        t_model = NULL;
    }
}

/* ---- shm only ---- */

static void test_shm_list(void)
{
    hb_hwb_info_t info[4];
    size_t n = 0;
    int found = 0;
    CU_ASSERT_EQUAL(hb_hwb_list(NULL, info, 4, &n), 0);
    CU_ASSERT(n >= 2);
    for (size_t i = 0; i < n && i < 4; i++) {
        if (strcmp(info[i].name, "shm") == 0 && info[i].available)
            found = 1;
        if (strcmp(info[i].name, "scic") == 0) /* no board on a test machine */
            CU_ASSERT(!info[i].available && info[i].why[0] != '\0');
    }
    CU_ASSERT(found);
}

/* A Center that dies leaves its segment; the next Center reclaims it. A second live
 * Center is refused. HIBAR_HWBARRIER forces the backend. */
static void test_shm_stale(void)
{
    char cluster[48], path[128];
    hb_hwb_params_t p;
    hb_hwb_t *h, *h2;
    pid_t pid;
    int st;

    t_cluster(cluster, sizeof(cluster));
    t_params(&p, cluster, 0, 2);
    pid = fork();
    if (pid == 0) {
        _exit(hb_hwb_open("shm", &p, &h) == 0 ? 0 : 1); /* crash: no close */
    }
    CU_ASSERT_FATAL(pid > 0);
    waitpid(pid, &st, 0);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    snprintf(path, sizeof(path), "/dev/shm/hibar-%u-%s-c3", (unsigned)getuid(), cluster);
    CU_ASSERT(access(path, F_OK) == 0); /* the stale segment */
    setenv("HIBAR_HWBARRIER", "shm", 1);
    CU_ASSERT_FATAL(hb_hwb_open("scic", &p, &h) == 0); /* env wins over the argument */
    unsetenv("HIBAR_HWBARRIER");
    CU_ASSERT_EQUAL(hb_hwb_open("shm", &p, &h2), HB_ERR_EXISTS); /* same pid: slot held */
    pid = fork();
    if (pid == 0) {
        hb_hwb_t *h3;
        _exit(hb_hwb_open("shm", &p, &h3) == HB_ERR_EXISTS ? 0 : 1);
    }
    waitpid(pid, &st, 0);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    hb_hwb_close(h);
    CU_ASSERT(access(path, F_OK) != 0); /* the Center unlinks on close */
}

/* A child that opens port `me` of the test chassis, says so on ready[1], arrives at sync (when
 * sync < NSYNC) and waits to be killed: it dies holding the port, mid-round. */
static pid_t t_holder(const hb_hwb_params_t *p, uint32_t sync, uint32_t mask)
{
    int ready[2];
    char c = 0;
    if (pipe(ready) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        hb_hwb_t *h;
        close(ready[0]);
        if (hb_hwb_open("shm", p, &h) != 0 || (sync < HB_HWB_NSYNC && hb_hwb_arrive(h, sync, mask)))
            _exit(1);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    if (pid > 0 && read(ready[0], &c, 1) != 1) {
        waitpid(pid, NULL, 0);
        pid = -1;
    }
    close(ready[0]);
    return pid;
}

static void t_kill(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* A holder of a port dies mid-round and its next incarnation opens the port before the others
 * checked on it (their handles here only test, which checks no liveness): the new holder aborts
 * its predecessor's rounds (PEER_LOST for those who arrived), so its own first round there is a
 * new one, not the old one completed. The Center (it takes the segment over) and a port. */
static void test_shm_restart(void)
{
    char cluster[48];
    hb_hwb_params_t p0, p1, p2;
    hb_hwb_t *h0, *h1, *h2;
    pid_t pid;

    t_cluster(cluster, sizeof(cluster));
    t_params(&p0, cluster, 0, 3);
    t_params(&p1, cluster, 1, 3);
    t_params(&p2, cluster, 2, 3);
    /* the Center, in a child, dies before it arrives at 5; ports 1 and 2 arrived */
    pid = t_holder(&p0, HB_HWB_NSYNC, 0);
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p1, &h1) == 0);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p2, &h2) == 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h1, 5, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h2, 5, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h1, 6, 0x3), 0); /* not with port 2: also the Center's */
    t_kill(pid);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p0, &h0) == 0); /* takes the segment over */
    CU_ASSERT_EQUAL(hb_hwb_test(h1, 5), HB_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(hb_hwb_test(h2, 5), HB_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(hb_hwb_test(h1, 6), HB_ERR_PEER_LOST);
    /* the next round at 5 is the new Center's with both */
    CU_ASSERT_EQUAL(hb_hwb_arrive(h0, 5, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 5), HB_ERR_WOULD_BLOCK);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h1, 5, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h2, 5, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 5), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h1, 5), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h2, 5), 0);
    /* port 2's holder dies (close, then a child holds it and dies at 9's round of its own),
     * the others arrived at 7 with it; its next holder aborts that, not rounds without it */
    hb_hwb_close(h2);
    pid = t_holder(&p2, 9, 0x7);
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h0, 7, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h1, 7, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h0, 8, 0x3), 0);
    t_kill(pid);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p2, &h2) == 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 7), HB_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(hb_hwb_test(h1, 7), HB_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 8), HB_ERR_WOULD_BLOCK); /* no port 2 there: goes on */
    CU_ASSERT_EQUAL(hb_hwb_arrive(h1, 8, 0x3), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 8), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h1, 8), 0);
    CU_ASSERT_EQUAL(hb_hwb_barrier(h2, 9, 0x4, 1000), 0); /* its predecessor's round: gone */
    hb_hwb_close(h2);
    hb_hwb_close(h1);
    hb_hwb_close(h0);
    t_unlink(cluster);
}

/* The same process goes on as a new incarnation of its node (hb_hwb_abandon): the rounds in
 * progress that name it end with PEER_LOST for everyone who arrived, itself included; rounds
 * without it go on; the sync numbers work again at once. */
static void test_shm_abandon(void)
{
    char cluster[48];
    hb_hwb_params_t p0, p1, p2;
    hb_hwb_t *h0, *h1, *h2;

    t_cluster(cluster, sizeof(cluster));
    t_params(&p0, cluster, 0, 3);
    t_params(&p1, cluster, 1, 3);
    t_params(&p2, cluster, 2, 3);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p0, &h0) == 0);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p1, &h1) == 0);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p2, &h2) == 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h0, 3, 0x7), 0); /* port 2 never comes to 3 */
    CU_ASSERT_EQUAL(hb_hwb_arrive(h1, 3, 0x7), 0);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h2, 4, 0x6), 0); /* port 1 never comes to 4 */
    CU_ASSERT_EQUAL(hb_hwb_arrive(h0, 5, 0x3), 0); /* without port 2 */
    CU_ASSERT_EQUAL(hb_hwb_abandon(h2), 0);        /* port 2 is taken for lost, goes on */
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 3), HB_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(hb_hwb_test(h1, 3), HB_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(hb_hwb_test(h2, 4), HB_ERR_PEER_LOST); /* its own */
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 5), HB_ERR_WOULD_BLOCK);
    CU_ASSERT_EQUAL(hb_hwb_arrive(h1, 5, 0x3), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h0, 5), 0);
    CU_ASSERT_EQUAL(hb_hwb_test(h1, 5), 0);
    /* 3 and 4 are clean: new rounds there complete */
    for (uint32_t s = 3; s <= 4; s++) {
        CU_ASSERT_EQUAL(hb_hwb_arrive(h0, s, 0x7), 0);
        CU_ASSERT_EQUAL(hb_hwb_arrive(h1, s, 0x7), 0);
        CU_ASSERT_EQUAL(hb_hwb_arrive(h2, s, 0x7), 0);
        CU_ASSERT_EQUAL(hb_hwb_test(h0, s), 0);
        CU_ASSERT_EQUAL(hb_hwb_test(h1, s), 0);
        CU_ASSERT_EQUAL(hb_hwb_test(h2, s), 0);
    }
    CU_ASSERT_EQUAL(hb_hwb_abandon(NULL), HB_ERR_INVAL);
    hb_hwb_close(h2);
    hb_hwb_close(h1);
    hb_hwb_close(h0);
    t_unlink(cluster);
}

/* The Center starts 300 ms after its ports: they wait for its segment, then all work. */
static void test_shm_late_center(void)
{
    long rounds = 100;
    t_center_delay_us = 300000;
    CU_ASSERT_EQUAL(t_run(3, 7, t_body_barriers, &rounds), 0);
    t_center_delay_us = 0;
}

/* The segment is created mode 0600 under the hibar name. */
static void test_shm_mode(void)
{
    char cluster[48], path[128];
    hb_hwb_params_t p;
    hb_hwb_t *h;
    struct stat st;

    t_cluster(cluster, sizeof(cluster));
    t_params(&p, cluster, 0, 1);
    CU_ASSERT_FATAL(hb_hwb_open("shm", &p, &h) == 0);
    snprintf(path, sizeof(path), "/dev/shm/hibar-%u-%s-c3", (unsigned)getuid(), cluster);
    CU_ASSERT_FATAL(stat(path, &st) == 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    hb_hwb_close(h);
}

/* ---- scic (device model) only: the chip's loss, slowness and flow control ---- */

static hb_scic_model_stats_t t_mst[3];

static void t_model_snapshot(void)
{
    for (uint32_t k = 0; k < 3; k++)
        hb_scic_model_stats(t_model, k, &t_mst[k]);
}

/* Ports 0 and 1 wait at sync 4, port 2 at sync 9; then board 2's cable is cut. */
static int t_body_lost(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int rc;
    (void)arg;
    rc = hb_hwb_arrive(h, me == 2 ? 9 : 4, t_full(n));
    T_CHECK(rc == 0, rc);
    atomic_fetch_add(&t_sh->go, 1);
    rc = hb_hwb_wait(h, me == 2 ? 9 : 4, T_WAIT_MS);
    t_sh->got[me] = rc;
    T_CHECK(rc == HB_ERR_PEER_LOST, rc);
    if (me == 2) /* our own board is gone: arrivals fail at once */
        return hb_hwb_arrive(h, 3, t_full(n)) == HB_ERR_PEER_LOST ? 0 : HB_ERR_INTERNAL;
    /* the survivors go on without node 2 (arbitrary participation) */
    T_CHECK(hb_hwb_barrier(h, 4, 0x3, T_WAIT_MS) == 0, HB_ERR_INTERNAL);
    /* and a round naming the lost node fails at once */
    T_CHECK(hb_hwb_barrier(h, 5, t_full(n), T_WAIT_MS) == HB_ERR_PEER_LOST, 0);
    return 0;
}

static void t_parent_lose(int phase)
{
    if (phase != 1)
        return;
    while (atomic_load(&t_sh->go) < 3)
        t_nap_us(500);
    t_nap_us(20000);
    hb_scic_model_lose_board(t_model, 2);
}

/* The Center's board is lost: the ports' boards end every flagged sync with LOST. */
static int t_body_lost_center(hb_hwb_t *h, uint32_t me, uint32_t n, void *arg)
{
    int rc;
    (void)arg;
    rc = hb_hwb_arrive(h, me == 0 ? 9 : 4, t_full(n)); /* two rounds, neither complete */
    T_CHECK(rc == 0, rc);
    atomic_fetch_add(&t_sh->go, 1);
    rc = hb_hwb_wait(h, me == 0 ? 9 : 4, T_WAIT_MS);
    t_sh->got[me] = rc;
    T_CHECK(rc == HB_ERR_PEER_LOST, rc);
    /* the ports cannot reach a Center any more: every new round fails at once */
    if (me != 0)
        T_CHECK(hb_hwb_barrier(h, 5, 0x6u, T_WAIT_MS) == HB_ERR_PEER_LOST, 0);
    return 0;
}

static void t_parent_lose_center(int phase)
{
    if (phase != 1)
        return;
    while (atomic_load(&t_sh->go) < 3)
        t_nap_us(500);
    t_nap_us(20000);
    hb_scic_model_lose_board(t_model, 0);
}

static void test_scic_lost_center(void)
{
    CU_ASSERT_EQUAL(t_run_ex(3, 7, t_body_lost_center, NULL, t_parent_lose_center), 0);
}

static void test_scic_lost(void)
{
    CU_ASSERT_EQUAL(t_run_ex(3, 7, t_body_lost, NULL, t_parent_lose), 0);
}

/* A slow Center (one packet or doorbell per 300 us): 16 arrivals from each port at once
 * outrun it; its receive buffers fill, it sends STOP, later START; nothing is lost. */
static void t_parent_slow(int phase)
{
    if (phase == 0)
        hb_scic_model_slow_board(t_model, 0, 300);
    else if (phase == 2)
        t_model_snapshot();
}

static void test_scic_slow(void)
{
    CU_ASSERT_EQUAL(t_run_ex(3, 7, t_body_concurrent, NULL, t_parent_slow), 0);
    CU_ASSERT(t_mst[0].stops_sent >= 1);  /* the slow Center told ports to stop */
    CU_ASSERT(t_mst[0].starts_sent >= 1); /* and to start again */
    CU_ASSERT(t_mst[1].tx_pauses + t_mst[2].tx_pauses >= 1); /* the ports obeyed */
    for (int k = 0; k < 3; k++)
        CU_ASSERT_EQUAL(t_mst[k].rx_overrun, 0);
}

/* The Center stops draining its receive buffers until the ports have been told to stop. */
static void t_parent_hold(int phase)
{
    hb_scic_model_stats_t st;
    if (phase == 0) {
        hb_scic_model_hold_rx(t_model, 0, 1);
        return;
    }
    if (phase == 2) {
        t_model_snapshot();
        return;
    }
    for (int i = 0; i < 40000; i++) { /* bounded: 20 s */
        hb_scic_model_stats(t_model, 0, &st);
        if (st.stops_sent >= 2)
            break;
        t_nap_us(500);
    }
    hb_scic_model_hold_rx(t_model, 0, 0);
}

static void test_scic_fill(void)
{
    CU_ASSERT_EQUAL(t_run_ex(3, 7, t_body_concurrent, NULL, t_parent_hold), 0);
    CU_ASSERT(t_mst[0].stops_sent >= 2); /* both ports' links filled */
    CU_ASSERT(t_mst[0].starts_sent >= 2);
    CU_ASSERT(t_mst[1].tx_pauses >= 1 && t_mst[2].tx_pauses >= 1);
    for (int k = 0; k < 3; k++)
        CU_ASSERT_EQUAL(t_mst[k].rx_overrun, 0);
}

static int t_suite_shm(void)
{
    t_backend = "shm";
    return 0;
}

static int t_suite_scic(void)
{
    t_backend = "scic";
    return 0;
}

typedef struct {
    const char *name;
    CU_TestFunc fn;
} t_case_t;

static const t_case_t t_common[] = {
    {"api", test_api},
    {"barrier_2", test_barrier_2},
    {"barrier_3", test_barrier_3},
    {"masks_3", test_masks_3},
    {"concurrent_2", test_concurrent_2},
    {"concurrent_3", test_concurrent_3},
    {"any_3", test_any_3},
    {"split_3", test_split_3},
    {"mismatch_3", test_mismatch_3},
    {"timeout_2", test_timeout_2},
    {"timeout_3", test_timeout_3},
    {"fd_3", test_fd_3},
    {"fd_rounds_2", test_fd_rounds_2},
    {"fd_rounds_3", test_fd_rounds_3},
    {"dead_3", test_dead_3},
    {"never_3", test_never_3},
    {"100k_2", test_100k},
};

static const t_case_t t_shm_only[] = {
    {"barrier_8", test_barrier_8}, {"barrier_32", test_barrier_32},
    {"masks_8", test_masks_8},     {"late_center", test_shm_late_center},
    {"list", test_shm_list},       {"stale", test_shm_stale},
    {"mode", test_shm_mode},       {"fd_dead_2", test_fd_dead_2},
    {"fd_dead_3", test_fd_dead_3}, {"fd_close_2", test_fd_close_2},
    {"restart", test_shm_restart}, {"abandon", test_shm_abandon},
};

/* Board discovery through sysfs by PCI ids (a fake sysfs tree). */
static void t_write(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void test_scic_sysfs(void)
{
    char root[128], d[256], cmd[700];
    hb_hwb_params_t p;
    hb_hwb_info_t info[4];
    size_t n = 0;
    int seen = 0;

    snprintf(root, sizeof(root), "/tmp/hibar-%u-sysfs-%d", (unsigned)getuid(), (int)getpid());
    snprintf(d, sizeof(d), "%s/class/uio/uio0/device", root); /* another PCI device */
    snprintf(cmd, sizeof(cmd), "mkdir -p %s %s/class/uio/uio7/device %s/class/uio/uio7/maps/map0",
             d, root, root);
    CU_ASSERT_FATAL(system(cmd) == 0);
    t_write(d, "vendor", "0x8086\n");
    t_write(d, "device", "0x5c1c\n");
    memset(&p, 0, sizeof(p));
    p.cluster = "x";
    p.nodes = 1;
    p.sysfs_root = root;
    CU_ASSERT_EQUAL(hb_hwb_list(&p, info, 4, &n), 0);
    for (size_t i = 0; i < n && i < 4; i++)
        if (strcmp(info[i].name, "scic") == 0) {
            CU_ASSERT(!info[i].available);
            CU_ASSERT(strstr(info[i].why, "1b5c:5c1c") != NULL);
        }
    snprintf(d, sizeof(d), "%s/class/uio/uio7/device", root);
    t_write(d, "vendor", "0x1b5c\n");
    t_write(d, "device", "0x5c1c\n");
    snprintf(d, sizeof(d), "%s/class/uio/uio7/maps/map0", root);
    t_write(d, "size", "0x1000\n");
    CU_ASSERT_EQUAL(hb_hwb_list(&p, info, 4, &n), 0);
    for (size_t i = 0; i < n && i < 4; i++)
        if (strcmp(info[i].name, "scic") == 0) {
            seen = 1;
            CU_ASSERT(info[i].available);
            CU_ASSERT(strstr(info[i].why, "/dev/uio7") != NULL);
        }
    CU_ASSERT(seen);
    p.pci_vendor = 0x1234; /* configurable ids */
    CU_ASSERT_EQUAL(hb_hwb_list(&p, info, 4, &n), 0);
    for (size_t i = 0; i < n && i < 4; i++)
        if (strcmp(info[i].name, "scic") == 0)
            CU_ASSERT(!info[i].available);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    CU_ASSERT(system(cmd) == 0);
}

static const t_case_t t_scic_only[] = {
    {"sysfs", test_scic_sysfs},
    {"lost_board", test_scic_lost},
    {"lost_center", test_scic_lost_center},
    {"slow_board", test_scic_slow},
    {"fill_buffer", test_scic_fill},
};

/* T_ONLY=name runs only the tests of that name (for timing one test). */
static void t_add(CU_pSuite s, const t_case_t *c, size_t n)
{
    const char *only = getenv("T_ONLY");
    for (size_t i = 0; i < n; i++)
        if (only == NULL || strcmp(only, c[i].name) == 0)
            CU_add_test(s, c[i].name, c[i].fn);
}

int main(void)
{
    CU_pSuite s;

    hb_log_init_from_env();
    if (getenv("HIBAR_LOG") == NULL)
        hb_log_set_level(HB_LOG_ERROR); /* expected failures still log their error line */
    t_sh = mmap(NULL, sizeof(*t_sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (t_sh == MAP_FAILED)
        return 99;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    /* T_SUITE=shm or scic runs one backend only */
    if (getenv("T_SUITE") == NULL || strcmp(getenv("T_SUITE"), "shm") == 0) {
        s = CU_add_suite("hwb_shm", t_suite_shm, NULL);
        t_add(s, t_common, sizeof(t_common) / sizeof(t_common[0]));
        t_add(s, t_shm_only, sizeof(t_shm_only) / sizeof(t_shm_only[0]));
    }
    if (getenv("T_SUITE") == NULL || strcmp(getenv("T_SUITE"), "scic") == 0) {
        s = CU_add_suite("hwb_scic_model", t_suite_scic, NULL);
        t_add(s, t_common, sizeof(t_common) / sizeof(t_common[0]));
        t_add(s, t_scic_only, sizeof(t_scic_only) / sizeof(t_scic_only[0]));
    }
    return hb_test_run(CU_BRM_VERBOSE);
}
