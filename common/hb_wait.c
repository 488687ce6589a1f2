/* hb_wait.c: spin, then sched_yield for a bounded time, then sleep (futex or fd) until done. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_wait.h"

#include "hb_env.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hb_status.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HB_WAIT_SLOW_NS 1000000ull /* a slow (expensive) poll at most every millisecond */

static const hb_wait_policy_t hb_wait_policy_dflt = {
    .spin_ns = 2000ull, .yield_ns = 2000000ull, .slice_ns = 100000000ull, .spin_max_ns = 50000ull};
static hb_wait_policy_t hb_wait_policy;
static _Atomic int hb_wait_policy_ready;

/* A HIBAR_WAIT_* budget in units of `scale` ns; malformed values are logged and ignored. */
static uint64_t hb_wait_env_u64(const char *name, uint64_t dflt, uint64_t scale)
{
    uint64_t v;
    return hb_env_u64(name, UINT64_MAX / scale, &v) == 0 ? v * scale : dflt;
}

const hb_wait_policy_t *hb_wait_policy_default(void)
{
    if (!atomic_load_explicit(&hb_wait_policy_ready, memory_order_acquire)) {
        /* Racing initializers compute the same values; the last store wins harmlessly. */
        hb_wait_policy_t p = hb_wait_policy_dflt;
        p.spin_ns = hb_wait_env_u64("HIBAR_WAIT_SPIN_US", p.spin_ns, 1000);
        p.spin_max_ns = hb_wait_env_u64("HIBAR_WAIT_SPIN_MAX_US", p.spin_max_ns, 1000);
        if (p.spin_max_ns < p.spin_ns)
            p.spin_max_ns = p.spin_ns;
        p.yield_ns = hb_wait_env_u64("HIBAR_WAIT_YIELD_US", p.yield_ns, 1000);
        p.slice_ns = hb_wait_env_u64("HIBAR_WAIT_SLICE_MS", p.slice_ns, 1000000);
        if (p.slice_ns == 0)
            p.slice_ns = 1000000;
        hb_wait_policy = p;
        atomic_store_explicit(&hb_wait_policy_ready, 1, memory_order_release);
    }
    return &hb_wait_policy;
}

void hb_wait_policy_reload(void)
{
    atomic_store_explicit(&hb_wait_policy_ready, 0, memory_order_release);
}

void hb_wait_word_init(hb_wait_word_t *w)
{
    atomic_init(&w->seq, 0);
    atomic_init(&w->sleepers, 0);
}

void hb_wait_word_wake(hb_wait_word_t *w)
{
    atomic_fetch_add(&w->seq, 1);
    if (atomic_load(&w->sleepers) != 0)
        syscall(SYS_futex, &w->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static struct timespec hb_wait_ts(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    return ts;
}

/* The spin budget of this wait. */
static uint64_t hb_wait_spin_budget(const hb_wait_policy_t *pol, hb_wait_adapt_t *ad)
{
    uint64_t max = pol->spin_max_ns > pol->spin_ns ? pol->spin_max_ns : pol->spin_ns;
    if (ad == NULL)
        return pol->spin_ns;
    if (ad->spin_ns == 0 || ++ad->waits % 64 == 0)
        return max; /* first wait, or a probe */
    return ad->spin_ns;
}

/* Learn from how the wait ended (spun: it ended inside a spin stage of `used` ns). */
static void hb_wait_adapt(const hb_wait_policy_t *pol, hb_wait_adapt_t *ad, int spun, uint64_t used)
{
    uint64_t max = pol->spin_max_ns > pol->spin_ns ? pol->spin_max_ns : pol->spin_ns;
    if (ad == NULL)
        return;
    if (spun)
        ad->spin_ns = max;
    else
        ad->spin_ns = used / 2 > pol->spin_ns ? used / 2 : pol->spin_ns;
    if (ad->spin_ns == 0)
        ad->spin_ns = 1; /* a zero floor: keep "learned" distinct from "new" */
}

/* Stages 1 and 2. Returns the poll result, HB_ERR_TIMEOUT, or WOULD_BLOCK when the budget
 * is spent and the caller should go to sleep. */
static int hb_wait_busy(hb_wait_poll_fn poll, void *arg, const hb_wait_policy_t *pol,
                        hb_wait_adapt_t *ad, uint64_t start, uint64_t deadline_ns)
{
    uint64_t now = start, last_slow = start, spin = hb_wait_spin_budget(pol, ad);
    unsigned i;
    int rc;

    for (i = 0;; i++) {
        rc = poll(arg, 0);
        if (rc != HB_ERR_WOULD_BLOCK) {
            hb_wait_adapt(pol, ad, 1, spin);
            return rc;
        }
        if ((i & 15) == 15) {
            now = hb_time_now_ns();
            if (now >= deadline_ns)
                return HB_ERR_TIMEOUT;
            if (now - start >= spin)
                break;
        }
        hb_wait_pause();
    }
    hb_wait_adapt(pol, ad, 0, spin);
    while (now - start < spin + pol->yield_ns) {
        int slow = now - last_slow >= HB_WAIT_SLOW_NS;
        if (slow)
            last_slow = now;
        rc = poll(arg, slow);
        if (rc != HB_ERR_WOULD_BLOCK)
            return rc;
        if (now >= deadline_ns)
            return HB_ERR_TIMEOUT;
        sched_yield();
        now = hb_time_now_ns();
    }
    return HB_ERR_WOULD_BLOCK;
}

/* What every wait does before it sleeps: the policy (the default for NULL), one poll, the zero
 * deadline, then the spin and yield stages. HB_ERR_WOULD_BLOCK: go on to sleep. */
static int hb_wait_start(hb_wait_poll_fn poll, void *arg, const hb_wait_policy_t **pol_p,
                         hb_wait_adapt_t *ad, uint64_t deadline_ns)
{
    int rc;

    if (*pol_p == NULL)
        *pol_p = hb_wait_policy_default();
    rc = poll(arg, 0);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    if (deadline_ns == 0)
        return HB_ERR_TIMEOUT;
    return hb_wait_busy(poll, arg, *pol_p, ad, hb_time_now_ns(), deadline_ns);
}

/* What every wait does before each sleep: one poll, then the deadline; HB_ERR_WOULD_BLOCK
 * with *ts_p the nap (to the deadline, at most max_ns and the policy's slice). */
static int hb_wait_next(hb_wait_poll_fn poll, void *arg, const hb_wait_policy_t *pol,
                        uint64_t deadline_ns, uint64_t max_ns, struct timespec *ts_p)
{
    uint64_t now, nap;
    int rc;

    rc = poll(arg, 1);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    now = hb_time_now_ns();
    if (now >= deadline_ns)
        return HB_ERR_TIMEOUT;
    nap = deadline_ns - now;
    if (nap > max_ns)
        nap = max_ns;
    if (nap > pol->slice_ns)
        nap = pol->slice_ns;
    *ts_p = hb_wait_ts(nap);
    return HB_ERR_WOULD_BLOCK;
}

int hb_wait_until(hb_wait_word_t *w, hb_wait_poll_fn poll, void *arg, const hb_wait_policy_t *pol,
                  uint64_t deadline_ns)
{
    return hb_wait_until_adaptive(w, poll, arg, pol, NULL, deadline_ns);
}

int hb_wait_until_adaptive(hb_wait_word_t *w, hb_wait_poll_fn poll, void *arg,
                           const hb_wait_policy_t *pol, hb_wait_adapt_t *ad, uint64_t deadline_ns)
{
    int rc;

    rc = hb_wait_start(poll, arg, &pol, ad, deadline_ns);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    for (;;) {
        uint32_t seen = w ? atomic_load(&w->seq) : 0;
        struct timespec ts;

        /* no futex to wake us: nap 1 ms at most */
        rc = hb_wait_next(poll, arg, pol, deadline_ns, w == NULL ? 1000000ull : UINT64_MAX, &ts);
        if (rc != HB_ERR_WOULD_BLOCK)
            return rc;
        if (w != NULL) {
            /* slice "forever" and no deadline: sleep until woken, never on a timer */
            int forever = pol->slice_ns == UINT64_MAX && deadline_ns == UINT64_MAX;
            atomic_fetch_add(&w->sleepers, 1);
            /* Returns at once (EAGAIN) if seq moved since we looked: no lost wake-up. */
            syscall(SYS_futex, &w->seq, FUTEX_WAIT, seen, forever ? NULL : &ts, NULL, 0);
            atomic_fetch_sub(&w->sleepers, 1);
        } else {
            nanosleep(&ts, NULL);
        }
    }
}

int hb_wait_until_fd(int fd, hb_wait_arm_fn arm, hb_wait_poll_fn poll, void *arg,
                     const hb_wait_policy_t *pol, hb_wait_adapt_t *ad, uint64_t deadline_ns)
{
    int rc;

    rc = hb_wait_start(poll, arg, &pol, ad, deadline_ns);
    if (rc != HB_ERR_WOULD_BLOCK)
        return rc;
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        struct timespec ts;

        if (arm != NULL) {
            rc = arm(arg);
            if (rc < 0)
                return rc;
        }
        rc = hb_wait_next(poll, arg, pol, deadline_ns, UINT64_MAX, &ts);
        if (rc != HB_ERR_WOULD_BLOCK)
            return rc;
        if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR) {
            hb_log_error("hb_wait: ppoll on fd %d: %m", fd);
            return HB_ERR_IO;
        }
    }
}
