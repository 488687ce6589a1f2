/* hb_wait.h: the waiting rule of doc/design.md section 6.1 (spin, yield, sleep) as one helper. */
#ifndef HB_WAIT_H
#define HB_WAIT_H

#include <stdatomic.h>
#include <stdint.h>

/*
 * A wake word lives in memory shared by the waiter and the waker (process-shared is fine:
 * the futex is not private). The waiter remembers `seq`, checks its condition, and sleeps
 * only while `seq` is unchanged; the waker makes the condition true, then bumps `seq` and
 * calls FUTEX_WAKE only if somebody announced itself in `sleepers`. So a wake costs one
 * atomic add when nobody sleeps.
 */
typedef struct hb_wait_word {
    _Atomic uint32_t seq;
    _Atomic uint32_t sleepers;
} hb_wait_word_t;

/* How long each stage lasts. Zero spin or yield skips that stage. */
typedef struct hb_wait_policy {
    uint64_t spin_ns;     /* stage 1: pause-instruction spin (adaptive waits: the floor) */
    uint64_t yield_ns;    /* stage 2: sched_yield loop */
    uint64_t slice_ns;    /* stage 3: longest single sleep (bounds liveness checks); UINT64_MAX
                           * with no deadline: a futex sleep lasts until woken */
    uint64_t spin_max_ns; /* adaptive waits: the ceiling of the spin stage */
} hb_wait_policy_t;

/*
 * Adaptive spin, one per waiter (not shared, zero-initialized). Spinning only pays when the
 * waker runs on another core at the same time; when processes outnumber cores the spinner
 * holds the core the waker needs. So: a wait that ends inside its spin stage sets the spin
 * budget back to the ceiling; a wait that needed to yield or sleep halves it (down to the
 * floor); every 64th wait probes with the ceiling so a machine that became idle is noticed.
 */
typedef struct hb_wait_adapt {
    uint64_t spin_ns; /* current budget; 0 = start at the ceiling */
    uint32_t waits;
} hb_wait_adapt_t;

/*
 * Poll function: 0 = done, HB_ERR_WOULD_BLOCK = keep waiting, other negative = stop with
 * that error. `slow` is non-zero about every millisecond in the yield stage and after every
 * sleep: do the expensive checks (peer liveness) only then.
 */
typedef int (*hb_wait_poll_fn)(void *arg, int slow);

/* Defaults: spin 2 us (adaptive: 2..50 us), yield 2 ms, sleep slices of 100 ms; overridden
 * by the environment (HIBAR_WAIT_SPIN_US, HIBAR_WAIT_SPIN_MAX_US, HIBAR_WAIT_YIELD_US,
 * HIBAR_WAIT_SLICE_MS) when first used. */
const hb_wait_policy_t *hb_wait_policy_default(void);
/* Read the environment again at the next hb_wait_policy_default() (a test's forked children;
 * not thread-safe against waits in progress). */
void hb_wait_policy_reload(void);

void hb_wait_word_init(hb_wait_word_t *w);

/* Bump the word and wake every sleeper. Call after making the waited-for condition true. */
void hb_wait_word_wake(hb_wait_word_t *w);

/*
 * Wait until poll(arg) returns something other than HB_ERR_WOULD_BLOCK or until
 * deadline_ns (hb_time_now_ns() clock; 0 = poll once, UINT64_MAX = no deadline).
 * w may be NULL: then stage 3 sleeps for short bounded naps instead of on a futex.
 * Returns poll's result, or HB_ERR_TIMEOUT. Never busy-waits past the policy's budgets.
 * Thread-safe (no shared state besides *w).
 */
int hb_wait_until(hb_wait_word_t *w, hb_wait_poll_fn poll, void *arg, const hb_wait_policy_t *pol,
                  uint64_t deadline_ns);
/* The same with an adaptive spin stage (ad may be NULL: fixed policy). */
int hb_wait_until_adaptive(hb_wait_word_t *w, hb_wait_poll_fn poll, void *arg,
                           const hb_wait_policy_t *pol, hb_wait_adapt_t *ad, uint64_t deadline_ns);

/*
 * Same rule, but stage 3 sleeps in poll(2) on fd (readable = something happened) instead of a
 * futex. arm(arg) is called before each sleep (e.g. re-enable an interrupt) and may return a
 * negative error; after arming, poll_fn is checked once more before sleeping.
 */
typedef int (*hb_wait_arm_fn)(void *arg);
int hb_wait_until_fd(int fd, hb_wait_arm_fn arm, hb_wait_poll_fn poll, void *arg,
                     const hb_wait_policy_t *pol, hb_wait_adapt_t *ad, uint64_t deadline_ns);

/* One CPU pause (x86 PAUSE, arm YIELD, else a compiler barrier). */
static inline void hb_wait_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

#endif
