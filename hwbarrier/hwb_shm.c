/* hwb_shm.c: the shm backend: the SCIC chassis barrier's sync memory in a shared segment. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hwb.h"

#include "hb_log.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hibar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * Mapping of the paper's sync memory (DESIGN section 1) onto the segment:
 *
 *   B-Flag   flag[node][sync]: each node's own line. The node sets it (1 = arrived) when it
 *            arrives; completion resets it (0), or writes an error code in its place.
 *   B-Mask,  sync[s].mr: the Center-held registers as one 64-bit word, mask in the low half,
 *   B-Reach  reach in the high half. An arrival is the "arrival packet": it installs the mask
 *            if the word is empty, compares it otherwise, and ORs its bit into reach, all in
 *            one compare-and-swap. The arrival that makes reach cover mask plays the
 *            Center's completion: it empties the word in that same CAS, then resets the flags
 *            of every participant ("completion packets") and wakes them. So no Center thread
 *            or process has to run for a barrier to progress, and the word is clean before
 *            any participant can see its completion and arrive again.
 *   poison   sync[s].poison: nodes named in a disagreeing round that had not arrived yet
 *            when it was aborted; their next arrival at s fails with MISMATCH at once.
 *
 * Liveness (robust ownership): the process holding port i keeps an open-file-description lock
 * (F_OFD_SETLK) on byte i of the segment; the kernel drops it when the process dies, even
 * while it is an unreaped zombie, and a second holder of the port is refused. node[i].pid
 * says whether port i ever came (0 = never, -1 = closed cleanly). Waiters check their round's
 * participants about every millisecond once they stop spinning (F_OFD_GETLK); a dead or
 * departed one aborts the round with PEER_LOST. Segment life: the Center (port 0) creates it,
 * O_EXCL, mode 0600, and locks byte 0; a segment whose byte 0 nobody holds is stale and is
 * unlinked and recreated by the next Center. Ports wait (bounded by timeout_ms) until a live
 * Center's segment is ready. The Center unlinks the segment on close; ports only unmap it.
 */

#define HB_SHM_MAGIC 0x68627368u /* "hbsh" */
#define HB_SHM_VERSION 1u

enum { HB_SHM_IDLE = 0, HB_SHM_ARRIVED = 1, HB_SHM_ERR_MISMATCH = 2, HB_SHM_ERR_LOST = 3 };

typedef struct hb_shm_sync {
    alignas(64) _Atomic uint64_t mr; /* B-Mask (low 32 bits) | B-Reach (high 32 bits) */
    _Atomic uint32_t poison;
    _Atomic uint32_t rounds; /* completed rounds, for inspection */
} hb_shm_sync_t;

typedef struct hb_shm_flags {
    alignas(64) _Atomic uint32_t flag[HB_HWB_NSYNC]; /* B-Flag of one node */
} hb_shm_flags_t;

typedef struct hb_shm_node {
    alignas(64) _Atomic int32_t pid;
    hb_wait_word_t wake;
} hb_shm_node_t;

typedef struct hb_shm_seg {
    alignas(64) uint32_t magic;
    uint32_t version;
    uint32_t nodes;
    _Atomic uint32_t ready; /* set last by the Center (release) */
    _Atomic int32_t center_pid;
    hb_shm_sync_t sync[HB_HWB_NSYNC];
    hb_shm_flags_t flags[HB_HWB_MAX_NODES];
    hb_shm_node_t node[HB_HWB_MAX_NODES];
} hb_shm_seg_t;

typedef struct hb_shm {
    hb_hwb_t base;
    hb_shm_seg_t *seg;
    int fd; /* kept open: our OFD lock on byte `me` */
    uint32_t me, nodes;
    int32_t pid;
    uint32_t pending;            /* bit s: arrived at s, completion not yet collected */
    uint32_t mask[HB_HWB_NSYNC]; /* mask this node arrived with */
    hb_wait_adapt_t adapt;       /* our waits' adaptive spin */
    char name[96];
} hb_shm_t;

static int hb_shm_name(const hb_hwb_params_t *p, char *buf, size_t len)
{
    int n = snprintf(buf, len, "/hibar-%u-%s-c%u", (unsigned)getuid(), p->cluster, p->chassis);
    return n > 0 && (size_t)n < len ? 0 : HIBAR_ERR_INVAL;
}

/* Take the liveness lock of port i on fd; -1 if another process holds it. */
static int hb_shm_lock(int fd, uint32_t i)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &fl);
}

/* Does some other open file description (a live holder of port i) hold its lock? */
static int hb_shm_held(int fd, uint32_t i)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1};
    if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
        return 1; /* cannot tell: do not declare anyone dead */
    return fl.l_type != F_UNLCK;
}

static int hb_shm_query(const hb_hwb_params_t *p, char *why, size_t len)
{
    if (access("/dev/shm", W_OK) != 0) {
        snprintf(why, len, "/dev/shm is not writable: %s", strerror(errno));
        return HIBAR_ERR_UNAVAIL;
    }
    snprintf(why, len, "shared-memory segment; nodes of a chassis must share this host");
    return 0;
}

static void hb_shm_nap(void)
{
    struct timespec ts = {0, 2000000}; /* 2 ms between open attempts */
    nanosleep(&ts, NULL);
}

/* Center: create (or reclaim) the segment. */
static int hb_shm_create(hb_shm_t *s, uint64_t deadline)
{
    for (;;) {
        hb_shm_seg_t *seg;
        int fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) {
            /* Someone's segment: a live Center's (refuse) or a stale one (reclaim). */
            struct stat st;
            int young;
            fd = shm_open(s->name, O_RDWR | O_CLOEXEC, 0);
            if (fd < 0)
                continue; /* vanished meanwhile */
            if (hb_shm_lock(fd, 0) < 0) {
                hb_log_error("hwbarrier shm: %s is held by a live Center", s->name);
                close(fd);
                return HIBAR_ERR_EXISTS;
            }
            /* Nobody holds it. A Center that has just created it locks it at once, so only a
             * very young segment without a header may still be someone's creation. */
            young = fstat(fd, &st) == 0 && (size_t)st.st_size < sizeof(*seg) &&
                    time(NULL) - st.st_ctime < 2;
            close(fd);
            if (young && hb_time_now_ns() < deadline) {
                hb_shm_nap();
                continue;
            }
            hb_log_warn("hwbarrier shm: reclaiming stale segment %s (its Center is gone)", s->name);
            if (shm_unlink(s->name) < 0 && errno != ENOENT) {
                hb_log_error("hwbarrier shm: shm_unlink %s: %m", s->name);
                return HIBAR_ERR_IO;
            }
            continue;
        }
        if (fd < 0) {
            hb_log_error("hwbarrier shm: shm_open %s: %m", s->name);
            return errno == EACCES ? HIBAR_ERR_PERM : HIBAR_ERR_IO;
        }
        if (hb_shm_lock(fd, 0) < 0) { /* someone judged it stale within microseconds */
            close(fd);
            continue;
        }
        if (ftruncate(fd, sizeof(*seg)) < 0) {
            hb_log_error("hwbarrier shm: ftruncate %s: %m", s->name);
            goto err_unlink;
        }
        seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (seg == MAP_FAILED) {
            hb_log_error("hwbarrier shm: mmap %s: %m", s->name);
            goto err_unlink;
        }
        /* ftruncate zero-filled the segment: every flag idle, every mask/reach empty. */
        seg->magic = HB_SHM_MAGIC;
        seg->version = HB_SHM_VERSION;
        seg->nodes = s->nodes;
        for (uint32_t i = 0; i < HB_HWB_MAX_NODES; i++)
            hb_wait_word_init(&seg->node[i].wake);
        atomic_store(&seg->node[0].pid, s->pid);
        atomic_store(&seg->center_pid, s->pid);
        atomic_store_explicit(&seg->ready, 1, memory_order_release);
        s->seg = seg;
        s->fd = fd;
        return 0;
    err_unlink:
        shm_unlink(s->name);
        close(fd);
        return HIBAR_ERR_IO;
    }
}

/* Port: wait (bounded) for a live Center's ready segment, then claim the port. */
static int hb_shm_attach(hb_shm_t *s, uint64_t deadline)
{
    for (;; hb_shm_nap()) {
        hb_shm_seg_t *seg;
        struct stat st;
        int32_t old;
        int fd;

        if (hb_time_now_ns() >= deadline) {
            hb_log_error("hwbarrier shm: no live Center segment %s within the timeout", s->name);
            return HIBAR_ERR_TIMEOUT;
        }
        fd = shm_open(s->name, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
            if (errno == ENOENT)
                continue;
            hb_log_error("hwbarrier shm: shm_open %s: %m", s->name);
            return errno == EACCES ? HIBAR_ERR_PERM : HIBAR_ERR_IO;
        }
        if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(*seg)) {
            close(fd);
            continue;
        }
        if (st.st_uid != getuid() || (st.st_mode & 077) != 0) {
            hb_log_error("hwbarrier shm: %s has the wrong owner or mode %o", s->name,
                         (unsigned)(st.st_mode & 0777));
            close(fd);
            return HIBAR_ERR_PERM;
        }
        seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (seg == MAP_FAILED) {
            hb_log_error("hwbarrier shm: mmap %s: %m", s->name);
            close(fd);
            return HIBAR_ERR_IO;
        }
        if (!atomic_load_explicit(&seg->ready, memory_order_acquire) ||
            seg->magic != HB_SHM_MAGIC || !hb_shm_held(fd, 0)) {
            munmap(seg, sizeof(*seg)); /* not ready yet, or stale: the Center will redo it */
            close(fd);
            continue;
        }
        if (seg->version != HB_SHM_VERSION || seg->nodes != s->nodes) {
            hb_log_error("hwbarrier shm: %s: Center says %u nodes (version %u), we say %u", s->name,
                         seg->nodes, seg->version, s->nodes);
            munmap(seg, sizeof(*seg));
            close(fd);
            return HIBAR_ERR_MISMATCH;
        }
        if (hb_shm_lock(fd, s->me) < 0) {
            old = atomic_load(&seg->node[s->me].pid);
            hb_log_error("hwbarrier shm: port %u of %s is held by a live process (pid %d)", s->me,
                         s->name, old);
            munmap(seg, sizeof(*seg));
            close(fd);
            return HIBAR_ERR_EXISTS;
        }
        /* A previous holder of this port may have died mid-round: clear its flags. (Poison
         * stays: it may name this port for a disagreeing round it has not joined yet.) */
        for (uint32_t i = 0; i < HB_HWB_NSYNC; i++)
            atomic_store(&seg->flags[s->me].flag[i], HB_SHM_IDLE);
        atomic_store(&seg->node[s->me].pid, s->pid);
        s->seg = seg;
        s->fd = fd;
        return 0;
    }
}

static int hb_shm_open(const hb_hwb_params_t *p, hb_hwb_t **h_p)
{
    uint64_t deadline =
        hb_time_now_ns() + (uint64_t)(p->timeout_ms ? p->timeout_ms : 10000) * 1000000ull;
    hb_shm_t *s = calloc(1, sizeof(*s));
    int rc;

    if (s == NULL)
        return HIBAR_ERR_NOMEM;
    s->me = p->port;
    s->nodes = p->nodes;
    s->pid = (int32_t)getpid();
    rc = hb_shm_name(p, s->name, sizeof(s->name));
    if (rc < 0)
        goto err_free;
    rc = s->me == 0 ? hb_shm_create(s, deadline) : hb_shm_attach(s, deadline);
    if (rc < 0)
        goto err_free;
    *h_p = &s->base;
    return 0;
err_free:
    free(s);
    return rc;
}

static void hb_shm_close(hb_hwb_t *h)
{
    hb_shm_t *s = (hb_shm_t *)h;
    hb_shm_seg_t *seg = s->seg;

    atomic_store(&seg->node[s->me].pid, -1);
    /* Wake everyone so waiters on a round with us notice at once that we left. */
    for (uint32_t i = 0; i < s->nodes; i++)
        if (i != s->me)
            hb_wait_word_wake(&seg->node[i].wake);
    if (s->me == 0) {
        atomic_store(&seg->center_pid, -1);
        if (shm_unlink(s->name) < 0 && errno != ENOENT)
            hb_log_warn("hwbarrier shm: shm_unlink %s: %m", s->name);
    }
    munmap(seg, sizeof(*seg));
    close(s->fd); /* drops our liveness lock */
    free(s);
}

/* Reset (or mark with code) the flags of `who` at sync and wake them (completion packets). */
static void hb_shm_release(hb_shm_t *s, uint32_t sync, uint32_t who, uint32_t code)
{
    hb_shm_seg_t *seg = s->seg;
    for (uint32_t j = 0, m = who; m != 0; j++, m >>= 1) {
        if (!(m & 1))
            continue;
        atomic_store_explicit(&seg->flags[j].flag[sync], code, memory_order_release);
        if (j != s->me)
            hb_wait_word_wake(&seg->node[j].wake);
    }
}

static int hb_shm_arrive(hb_hwb_t *h, uint32_t sync, uint32_t mask)
{
    hb_shm_t *s = (hb_shm_t *)h;
    hb_shm_seg_t *seg = s->seg;
    hb_shm_sync_t *sy = &seg->sync[sync];
    uint32_t bit = 1u << s->me;
    uint64_t old, nw;

    if (!(mask & bit) || (s->nodes < 32 && (mask >> s->nodes) != 0))
        return HIBAR_ERR_INVAL;
    if (s->pending & (1u << sync))
        return HIBAR_ERR_BUSY;
    s->pending |= 1u << sync;
    s->mask[sync] = mask;
    if (atomic_load_explicit(&sy->poison, memory_order_relaxed) & bit) {
        atomic_fetch_and(&sy->poison, ~bit);
        atomic_store(&seg->flags[s->me].flag[sync], HB_SHM_ERR_MISMATCH);
        return 0;
    }
    atomic_store_explicit(&seg->flags[s->me].flag[sync], HB_SHM_ARRIVED, memory_order_relaxed);
    old = atomic_load(&sy->mr);
    for (;;) {
        uint32_t m = (uint32_t)old, r = (uint32_t)(old >> 32);
        if (m != 0 && m != mask) {
            /* Disagreement: abort the round for everyone who arrived, poison the rest. */
            if (!atomic_compare_exchange_weak(&sy->mr, &old, 0))
                continue;
            atomic_fetch_or(&sy->poison, (m | mask) & ~(r | bit));
            hb_log_debug("hwbarrier shm: sync %u: node %u mask 0x%x, round has 0x%x", sync, s->me,
                         mask, m);
            hb_shm_release(s, sync, r | bit, HB_SHM_ERR_MISMATCH);
            return 0;
        }
        r |= bit;
        nw = r == mask ? 0 : ((uint64_t)r << 32 | mask);
        /* seq_cst: the flag store above is visible before our reach bit. */
        if (atomic_compare_exchange_weak(&sy->mr, &old, nw))
            break;
    }
    if (nw == 0) {
        atomic_fetch_add_explicit(&sy->rounds, 1, memory_order_relaxed);
        hb_shm_release(s, sync, mask, HB_SHM_IDLE);
    }
    return 0;
}

/* Collect a finished round's result from our flag. */
static int hb_shm_collect(hb_shm_t *s, uint32_t sync, uint32_t f)
{
    s->pending &= ~(1u << sync);
    if (f == HB_SHM_IDLE)
        return 0;
    atomic_store(&s->seg->flags[s->me].flag[sync], HB_SHM_IDLE);
    return f == HB_SHM_ERR_MISMATCH ? HIBAR_ERR_MISMATCH : HIBAR_ERR_PEER_LOST;
}

static int hb_shm_test(hb_hwb_t *h, uint32_t sync)
{
    hb_shm_t *s = (hb_shm_t *)h;
    uint32_t f;
    if (!(s->pending & (1u << sync)))
        return HIBAR_ERR_INVAL;
    f = atomic_load_explicit(&s->seg->flags[s->me].flag[sync], memory_order_acquire);
    if (f == HB_SHM_ARRIVED)
        return HIBAR_ERR_WOULD_BLOCK;
    return hb_shm_collect(s, sync, f);
}

typedef struct hb_shm_waitctx {
    hb_shm_t *s;
    uint32_t syncs; /* the rounds waited for */
    uint32_t sync;  /* the one that ended (set by the poll functions) */
} hb_shm_waitctx_t;

/* A participant of our round that died or left. Returns its index or -1. */
static int hb_shm_find_lost(hb_shm_t *s, uint32_t mask)
{
    for (uint32_t j = 0; j < s->nodes; j++) {
        int32_t pid;
        if (j == s->me || !(mask & (1u << j)))
            continue;
        pid = atomic_load(&s->seg->node[j].pid);
        if (pid == -1 || (pid > 0 && !hb_shm_held(s->fd, j)))
            return (int)j;
    }
    return -1;
}

/*
 * Is our round at sync still in progress (our mask installed, our bit in reach)? If not, a
 * completer has taken it and is writing the flags: a participant that left after seeing its
 * own flag does not make our round fail.
 */
static int hb_shm_in_round(hb_shm_t *s, uint32_t sync)
{
    uint64_t mr = atomic_load(&s->seg->sync[sync].mr);
    return (uint32_t)mr == s->mask[sync] && ((uint32_t)(mr >> 32) & (1u << s->me));
}

static int hb_shm_poll_flag(void *arg, int slow)
{
    hb_shm_waitctx_t *c = arg;
    (void)slow;
    return atomic_load_explicit(&c->s->seg->flags[c->s->me].flag[c->sync], memory_order_acquire) !=
                   HB_SHM_ARRIVED
               ? 0
               : HIBAR_ERR_WOULD_BLOCK;
}

/*
 * Any of our rounds in c->syncs over? All of them share our one wake word, so the completion
 * of any wakes us; each wake-up must look at every round waited for, or a waiter on one round
 * sleeps through the end of another (it would only see it when its sleep runs out).
 */
static int hb_shm_poll(void *arg, int slow)
{
    hb_shm_waitctx_t *c = arg;
    hb_shm_t *s = c->s;
    for (uint32_t m = c->syncs, k = 0; m != 0; k++, m >>= 1) {
        if ((m & 1) && atomic_load_explicit(&s->seg->flags[s->me].flag[k], memory_order_acquire) !=
                           HB_SHM_ARRIVED) {
            c->sync = k;
            return 0;
        }
    }
    if (!slow)
        return HIBAR_ERR_WOULD_BLOCK;
    for (uint32_t m = c->syncs, k = 0; m != 0; k++, m >>= 1) {
        if ((m & 1) && hb_shm_find_lost(s, s->mask[k]) >= 0 && hb_shm_in_round(s, k)) {
            c->sync = k;
            return HIBAR_ERR_PEER_LOST;
        }
    }
    return HIBAR_ERR_WOULD_BLOCK;
}

/* A participant is gone: abort the round (if it is still ours) for everyone in it. */
static void hb_shm_abort_lost(hb_shm_t *s, uint32_t sync)
{
    hb_shm_sync_t *sy = &s->seg->sync[sync];
    uint64_t old = atomic_load(&sy->mr);
    while ((uint32_t)old == s->mask[sync] && ((uint32_t)(old >> 32) & (1u << s->me))) {
        if (atomic_compare_exchange_weak(&sy->mr, &old, 0)) {
            hb_shm_release(s, sync, (uint32_t)(old >> 32), HB_SHM_ERR_LOST);
            return;
        }
    }
}

static int hb_shm_wait(hb_hwb_t *h, uint32_t syncs, int timeout_ms, uint32_t *sync_p)
{
    hb_shm_t *s = (hb_shm_t *)h;
    hb_shm_waitctx_t c = {s, syncs, HB_HWB_NSYNC};
    uint64_t deadline;
    uint32_t f, sync;
    int rc;

    if ((syncs & s->pending) != syncs)
        return HIBAR_ERR_INVAL;
    deadline = timeout_ms < 0 ? UINT64_MAX : hb_time_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    rc = hb_wait_until_adaptive(&s->seg->node[s->me].wake, hb_shm_poll, &c, NULL, &s->adapt,
                                deadline);
    if (rc == HIBAR_ERR_TIMEOUT)
        return rc; /* still pending: the caller may wait again */
    sync = c.sync;
    *sync_p = sync;
    if (rc == HIBAR_ERR_PEER_LOST) {
        int lost = hb_shm_find_lost(s, s->mask[sync]);
        hb_log_warn("hwbarrier shm: %s sync %u: node %d died or left", s->name, sync, lost);
        hb_shm_abort_lost(s, sync);
    }
    f = atomic_load_explicit(&s->seg->flags[s->me].flag[sync], memory_order_acquire);
    if (f == HB_SHM_ARRIVED && rc == HIBAR_ERR_PEER_LOST) {
        /* Someone else took the round meanwhile: its flag write is imminent, unless it died. */
        (void)hb_wait_until(&s->seg->node[s->me].wake, hb_shm_poll_flag, &c, NULL,
                            hb_time_now_ns() + 100000000ull);
        f = atomic_load_explicit(&s->seg->flags[s->me].flag[sync], memory_order_acquire);
    }
    if (f == HB_SHM_ARRIVED) {
        /* A completer took the round but has not written our flag: it died. */
        s->pending &= ~(1u << sync);
        return HIBAR_ERR_PEER_LOST;
    }
    return hb_shm_collect(s, sync, f);
}

/*
 * No event-loop fd: nothing lets one process make another's fd readable exactly while a
 * completion is uncollected (a socket notification can land after the flag was collected
 * and leave the fd readable with nothing to do). Callers wait with hb_hwb_wait(), which
 * sleeps on the futex after its spin and yield budget.
 */
static int hb_shm_fd(hb_hwb_t *h, int *fd_p)
{
    (void)h;
    (void)fd_p;
    return HIBAR_ERR_UNAVAIL;
}

static const hb_hwb_ops_t hb_shm_ops = {
    .open = hb_shm_open,
    .arrive = hb_shm_arrive,
    .test = hb_shm_test,
    .wait = hb_shm_wait,
    .fd = hb_shm_fd,
    .close = hb_shm_close,
};

const hb_hwb_component_t hb_hwb_shm_component = {
    .name = "shm",
    .priority = 10,
    .query = hb_shm_query,
    .ops = &hb_shm_ops,
};
