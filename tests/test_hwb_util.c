/* test_hwb_util.c: tests of common/hb_stats (benchmark statistics) and common/hb_wait. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_size.h"
#include "hb_stats.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hb_status.h"
#include "hb_test.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NEAR(a, b, eps) CU_ASSERT(fabs((a) - (b)) <= (eps))

static void test_stats_basic(void)
{
    double x[] = {5, 1, 4, 2, 3};
    hb_stats_t s;
    NEAR(hb_stats_mean(x, 5), 3.0, 1e-12);
    NEAR(hb_stats_stddev(x, 5), sqrt(2.5), 1e-12);
    NEAR(hb_stats_min(x, 5), 1.0, 0);
    NEAR(hb_stats_max(x, 5), 5.0, 0);
    CU_ASSERT_EQUAL(hb_stats_summarize(x, 5, 0.95, &s), 0);
    NEAR(s.median, 3.0, 1e-12);
    NEAR(s.min, 1.0, 0);
    NEAR(s.max, 5.0, 0);
    NEAR(s.p99, 4.96, 1e-9); /* type 7: 4 + 0.96 * (5 - 4) */
    /* t(0.975, 4) = 2.776445 */
    NEAR(s.ci, 2.776445 * sqrt(2.5) / sqrt(5.0), 1e-5);
    CU_ASSERT_EQUAL(s.n, 5);
    CU_ASSERT_EQUAL(hb_stats_summarize(x, 0, 0.95, &s), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_stats_summarize(x, 5, 1.0, &s), HB_ERR_INVAL);
    NEAR(hb_stats_mean(x, 0), 0.0, 0);
    NEAR(hb_stats_stddev(x, 1), 0.0, 0);
    NEAR(hb_stats_ci(x, 1, 0.95), 0.0, 0);
}

static void test_stats_quantile(void)
{
    double even[] = {1, 2, 3, 4};
    NEAR(hb_stats_quantile_sorted(even, 4, 0.5), 2.5, 1e-12);
    NEAR(hb_stats_quantile_sorted(even, 4, 0.0), 1.0, 0);
    NEAR(hb_stats_quantile_sorted(even, 4, 1.0), 4.0, 0);
    NEAR(hb_stats_quantile_sorted(even, 1, 0.99), 1.0, 0);
    NEAR(hb_stats_quantile_sorted(even, 0, 0.5), 0.0, 0);
}

static void test_stats_t(void)
{
    /* Reference values from statistical tables. */
    NEAR(hb_stats_t_critical(0.95, 1), 12.7062, 1e-3);
    NEAR(hb_stats_t_critical(0.95, 9), 2.2622, 1e-4);
    NEAR(hb_stats_t_critical(0.99, 9), 3.2498, 1e-4);
    NEAR(hb_stats_t_critical(0.95, 30), 2.0423, 1e-4);
    NEAR(hb_stats_t_critical(0.95, 100000), 1.95998, 1e-4);
    NEAR(hb_stats_t_critical(0.90, 5), 2.0150, 1e-4);
    CU_ASSERT(isnan(hb_stats_t_critical(0.95, 0)));
}

/* ---- hb_wait ---- */

typedef struct {
    hb_wait_word_t w;
    _Atomic int flag;
    _Atomic int polls;
} t_wait_t;

static int t_poll_flag(void *arg, int slow)
{
    t_wait_t *t = arg;
    (void)slow;
    atomic_fetch_add(&t->polls, 1);
    return atomic_load(&t->flag) ? 0 : HB_ERR_WOULD_BLOCK;
}

static int t_poll_err_on_slow(void *arg, int slow)
{
    (void)arg;
    return slow ? HB_ERR_PEER_LOST : HB_ERR_WOULD_BLOCK;
}

static void test_wait_timeout(void)
{
    t_wait_t t = {.flag = 0};
    hb_wait_word_init(&t.w);
    CU_ASSERT_EQUAL(hb_wait_until(&t.w, t_poll_flag, &t, NULL, 0), HB_ERR_TIMEOUT);
    CU_ASSERT_EQUAL(hb_wait_until(&t.w, t_poll_flag, &t, NULL, hb_time_now_ns() + 30000000ull),
                    HB_ERR_TIMEOUT);
    CU_ASSERT_EQUAL(hb_wait_until(NULL, t_poll_flag, &t, NULL, hb_time_now_ns() + 5000000ull),
                    HB_ERR_TIMEOUT);
    atomic_store(&t.flag, 1);
    CU_ASSERT_EQUAL(hb_wait_until(&t.w, t_poll_flag, &t, NULL, 0), 0);
}

static void test_wait_error(void)
{
    CU_ASSERT_EQUAL(hb_wait_until(NULL, t_poll_err_on_slow, NULL, NULL, UINT64_MAX),
                    HB_ERR_PEER_LOST);
}

/* A waiter in another process, past its spin and yield budget, is woken by the futex. */
static void test_wait_wake_process(void)
{
    static const hb_wait_policy_t quick = {
        .spin_ns = 1000, .yield_ns = 1000, .slice_ns = 60000000000ull};
    t_wait_t *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pid;
    int st;
    CU_ASSERT_FATAL(t != MAP_FAILED);
    hb_wait_word_init(&t->w);
    atomic_init(&t->flag, 0);
    pid = fork();
    if (pid == 0) {
        int rc = hb_wait_until(&t->w, t_poll_flag, t, &quick, UINT64_MAX);
        _exit(rc == 0 ? 0 : 1);
    }
    /* let the child reach its futex sleep (it announces itself in sleepers) */
    while (atomic_load(&t->w.sleepers) == 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&t->flag, 1);
    hb_wait_word_wake(&t->w);
    waitpid(pid, &st, 0);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    munmap(t, sizeof(*t));
}

/*
 * Lost wake-ups: two processes hand a turn back and forth, each move waking the other's word,
 * and every wait goes straight to the futex (no spin, no yield, 60 s sleep slices). A wake-up
 * that does not end the sleep it was meant for leaves the waiter asleep; its guard (20 s, far
 * beyond any scheduling delay) then ends the wait with TIMEOUT and the test fails. Every third
 * wait naps between its last look and its sleep, so the waker lands there too.
 */
typedef struct {
    hb_wait_word_t w[2];
    _Atomic uint32_t turn; /* moves made so far; player p makes moves p, p + 2, ... */
} t_pp_t;

typedef struct {
    t_pp_t *pp;
    uint32_t want;
} t_pp_arg_t;

static int t_poll_turn(void *arg, int slow)
{
    t_pp_arg_t *a = arg;
    if (atomic_load(&a->pp->turn) >= a->want)
        return 0;
    if (slow && a->want % 3 == 0) {
        /* the last look before a sleep: hold the window to the sleep open, so the other side's
         * move and wake-up land in it (a wake-up that only counts sleepers is lost here) */
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    return HB_ERR_WOULD_BLOCK;
}

static int t_pingpong(t_pp_t *pp, uint32_t me, uint32_t rounds)
{
    static const hb_wait_policy_t sleep_only = {
        .spin_ns = 0, .yield_ns = 0, .slice_ns = 60000000000ull};
    for (uint32_t k = me; k < 2 * rounds; k += 2) {
        t_pp_arg_t a = {pp, k};
        int rc = hb_wait_until(&pp->w[me], t_poll_turn, &a, &sleep_only,
                               hb_time_now_ns() + 20000000000ull);
        if (rc != 0)
            return rc;
        atomic_store(&pp->turn, k + 1);
        hb_wait_word_wake(&pp->w[1 - me]);
    }
    return 0;
}

static void test_wait_no_lost_wakeup(void)
{
    t_pp_t *pp = mmap(NULL, sizeof(*pp), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    const uint32_t rounds = 5000;
    pid_t pid;
    int st, rc;
    CU_ASSERT_FATAL(pp != MAP_FAILED);
    hb_wait_word_init(&pp->w[0]);
    hb_wait_word_init(&pp->w[1]);
    atomic_init(&pp->turn, 0);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0)
        _exit(t_pingpong(pp, 1, rounds) == 0 ? 0 : 1);
    rc = t_pingpong(pp, 0, rounds);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0) { /* let the other side finish its wait */
        atomic_store(&pp->turn, 2 * rounds);
        hb_wait_word_wake(&pp->w[1]);
    }
    waitpid(pid, &st, 0);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CU_ASSERT_EQUAL(atomic_load(&pp->turn), 2 * rounds);
    munmap(pp, sizeof(*pp));
}

/* Idle waits must sleep: over 300 ms the poll function runs only a bounded number of times
 * after the spin/yield budget (this is a count, not a time limit). */
static void test_wait_sleeps(void)
{
    static const hb_wait_policy_t pol = {.spin_ns = 0, .yield_ns = 0, .slice_ns = 100000000ull};
    t_wait_t t = {.flag = 0};
    hb_wait_word_init(&t.w);
    CU_ASSERT_EQUAL(hb_wait_until(&t.w, t_poll_flag, &t, &pol, hb_time_now_ns() + 300000000ull),
                    HB_ERR_TIMEOUT);
    /* spin stage polls up to 16 times before it reads the clock; then ~1 poll per 100 ms */
    CU_ASSERT(atomic_load(&t.polls) <= 16 + 10);
}

/* Adaptive spin: waits that outlast the spin stage halve it (to the floor); one that ends
 * inside it restores the ceiling. Which stage a wait ends in is decided by the calls, not by
 * the clock (a preempted test must not end a wait inside the spin stage): the spin stage only
 * ever polls with slow = 0, so a poll that succeeds at the first slow call ends outside it. */
static int t_poll_slow(void *arg, int slow)
{
    (void)arg;
    return slow ? 0 : HB_ERR_WOULD_BLOCK;
}

static int t_poll_second(void *arg, int slow)
{
    int *calls = arg;
    (void)slow;
    return ++*calls >= 2 ? 0 : HB_ERR_WOULD_BLOCK;
}

static void test_wait_adaptive(void)
{
    static const hb_wait_policy_t pol = {
        .spin_ns = 4000, .yield_ns = 10000000, .slice_ns = 1000000, .spin_max_ns = 64000};
    hb_wait_adapt_t ad = {0, 0};
    int calls = 0;
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(hb_wait_until_adaptive(NULL, t_poll_slow, NULL, &pol, &ad, UINT64_MAX), 0);
    CU_ASSERT_EQUAL(ad.spin_ns, 4000); /* 64 -> 32 -> 16 -> 8 -> 4 -> 4 (floor) us */
    /* second poll: inside the spin stage */
    CU_ASSERT_EQUAL(hb_wait_until_adaptive(NULL, t_poll_second, &calls, &pol, &ad, UINT64_MAX), 0);
    CU_ASSERT_EQUAL(ad.spin_ns, 64000);
}

static void test_size_one(void)
{
    uint64_t v = 7;
    CU_ASSERT_EQUAL(hb_size_parse("0", UINT64_MAX, &v), 0);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(hb_size_parse("64K", UINT64_MAX, &v), 0);
    CU_ASSERT_EQUAL(v, 65536);
    CU_ASSERT_EQUAL(hb_size_parse("1MiB", UINT64_MAX, &v), 0);
    CU_ASSERT_EQUAL(v, 1u << 20);
    CU_ASSERT_EQUAL(hb_size_parse("2gB", UINT64_MAX, &v), 0);
    CU_ASSERT_EQUAL(v, 2ull << 30);
    CU_ASSERT_EQUAL(hb_size_parse("8b", UINT64_MAX, &v), 0);
    CU_ASSERT_EQUAL(v, 8);
    CU_ASSERT_EQUAL(hb_size_parse("4G", 1ull << 32, &v), 0);
    v = 7;
    const char *bad[] = {"",
                         "K",
                         "-1",
                         " 1",
                         "+1",
                         "1X",
                         "1KK",
                         "1 K",
                         "1iBB",
                         "1,2",
                         "99999999999999999999",
                         "17179869184G"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_EQUAL(hb_size_parse(bad[i], UINT64_MAX, &v), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_size_parse("5G", 1ull << 32, &v), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(v, 7); /* untouched on error */
}

static void test_size_list(void)
{
    size_t s[8], n = 99;
    CU_ASSERT_EQUAL(hb_size_list_parse("64K..1M", 1, SIZE_MAX, s, 8, &n), 0);
    CU_ASSERT_EQUAL(n, 5);
    CU_ASSERT_EQUAL(s[0], 65536);
    CU_ASSERT_EQUAL(s[4], 1u << 20);
    CU_ASSERT_EQUAL(hb_size_list_parse("0,1K,3..10", 0, SIZE_MAX, s, 8, &n), 0);
    CU_ASSERT_EQUAL(n, 4); /* 0, 1024, 3, 6: never past the range's end */
    CU_ASSERT_EQUAL(s[0], 0);
    CU_ASSERT_EQUAL(s[1], 1024);
    CU_ASSERT_EQUAL(s[3], 6);
    CU_ASSERT_EQUAL(hb_size_list_parse("0..4", 0, SIZE_MAX, s, 8, &n), 0);
    CU_ASSERT_EQUAL(n, 4); /* 0, 1, 2, 4 */
    CU_ASSERT_EQUAL(s[3], 4);
    CU_ASSERT_EQUAL(hb_size_list_parse("0..3K:1K", 0, SIZE_MAX, s, 8, &n), 0);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(s[3], 3072);
    n = 99;
    CU_ASSERT_EQUAL(hb_size_list_parse("1..256", 0, SIZE_MAX, s, 8, &n), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_size_list_parse("1..128", 0, SIZE_MAX, s, 8, &n), 0); /* exactly 8 */
    CU_ASSERT_EQUAL(n, 8);
    n = 99;
    const char *bad[] = {"", ",", "0", "1X", "8..4", "1..8:0", "1..", "..8", "1K,2M"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CU_ASSERT_EQUAL(hb_size_list_parse(bad[i], 1, 1u << 20, s, 8, &n), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(n, 99); /* untouched on error */
    /* the largest 64-bit value: the doubling stops instead of wrapping */
    if (SIZE_MAX == UINT64_MAX) {
        CU_ASSERT_EQUAL(
            hb_size_list_parse("9223372036854775808..18446744073709551615", 1, SIZE_MAX, s, 8, &n),
            0);
        CU_ASSERT_EQUAL(n, 1);
    }
}

int main(void)
{
    CU_pSuite s;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    s = CU_add_suite("hb_stats", NULL, NULL);
    CU_add_test(s, "basic", test_stats_basic);
    CU_add_test(s, "quantile", test_stats_quantile);
    CU_add_test(s, "t_critical", test_stats_t);
    s = CU_add_suite("hb_wait", NULL, NULL);
    CU_add_test(s, "timeout", test_wait_timeout);
    CU_add_test(s, "error", test_wait_error);
    CU_add_test(s, "wake_process", test_wait_wake_process);
    CU_add_test(s, "sleeps", test_wait_sleeps);
    CU_add_test(s, "no lost wake-up", test_wait_no_lost_wakeup);
    CU_add_test(s, "adaptive", test_wait_adaptive);
    s = CU_add_suite("hb_size", NULL, NULL);
    CU_add_test(s, "one size", test_size_one);
    CU_add_test(s, "size list", test_size_list);
    return hb_test_run(CU_BRM_VERBOSE);
}
