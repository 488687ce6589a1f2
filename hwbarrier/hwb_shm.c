/* hwb_shm.c: the shm backend: the SCIC chassis barrier's sync memory in a shared segment. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hwb.h"

#include "hb_log.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hb_status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/*
 * Mapping of the paper's sync memory (doc/design.md section 1) onto the segment:
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
 * unlinked and recreated by the next Center, unless some port still holds its byte: then the
 * Center restarted under live ports, and takes the segment over (hb_shm_adopt). Ports wait (bounded
 * by timeout_ms) until a live Center's segment is ready. The last node to close unlinks the
 * segment.
 *
 * Event-loop fd (hb_shm_fd): each node that asks for one binds a UNIX datagram socket beside
 * the segment (/dev/shm/hibar-<uid>-<cluster>-c<N>-p<port>: a path, so chassis mates in other
 * network namespaces reach it) and returns an epoll fd holding it and a timerfd. It is the
 * sleep stage of the waiting rule: its user arms it (hb_shm_fd_arm) only when it is about to
 * sleep, which sets fd_armed in the node's part of the segment; whoever ends one of its
 * rounds (hb_shm_release) takes fd_armed back and sends it one datagram, so the sleeping loop
 * is woken directly, once, and nobody pays a syscall for a node that is not asleep. The
 * timer ticks every sleep slice (100 ms) while armed: the liveness checks (a dead participant's
 * round is aborted; one whose completer died before writing our flag fails after two ticks).
 */

#define HB_SHM_MAGIC 0x68627368u /* "hbsh" */
#define HB_SHM_VERSION 2u

/* Flag values. ARRIVED carries this node's arrival count at that sync number in its high 24
 * bits (HB_SHM_STATE gives the state): a flag seen ARRIVED is still that round's. */
enum { HB_SHM_IDLE = 0, HB_SHM_ARRIVED = 1, HB_SHM_ERR_MISMATCH = 2, HB_SHM_ERR_LOST = 3 };
#define HB_SHM_STATE(f) ((f)&0xffu)
#define HB_SHM_ARRIVED_GEN(g) (HB_SHM_ARRIVED | ((g)&0xffffffu) << 8)

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
    _Atomic uint32_t fd_armed; /* its loop sleeps on its fd: notify it (hb_shm_notify) */
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
    /* written by the handle's user only (atomic: read by hb_shm_wait_end's helpers) */
    _Atomic uint32_t pending;            /* bit s: arrived at s, completion not yet collected */
    _Atomic uint32_t mask[HB_HWB_NSYNC]; /* mask this node arrived with */
    _Atomic uint32_t gen[HB_HWB_NSYNC];  /* arrivals at s so far */
    hb_wait_adapt_t adapt;               /* our waits' adaptive spin */
    /* event-loop fd (hb_shm_fd) */
    int epfd;     /* what hb_shm_fd returns, -1 until asked for */
    int sfd, tfd; /* our bound datagram socket, the liveness timer */
    int txfd;     /* unbound datagram socket to notify others, -1 until needed */
    int timer_on;
    uint32_t suspect[HB_HWB_NSYNC]; /* flag seen at the last tick with its completer lost */
    char name[96];
} hb_shm_t;

static int hb_shm_name(const hb_hwb_params_t *p, char *buf, size_t len)
{
    int n = snprintf(buf, len, "/hibar-%u-%s-c%u", (unsigned)getuid(), p->cluster, p->chassis);
    return n > 0 && (size_t)n < len ? 0 : HB_ERR_INVAL;
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
        return HB_ERR_UNAVAIL;
    }
    snprintf(why, len, "shared-memory segment; nodes of a chassis must share this host");
    return 0;
}

static void hb_shm_nap(void)
{
    struct timespec ts = {0, 2000000}; /* 2 ms between open attempts */
    nanosleep(&ts, NULL);
}

static void hb_shm_release(hb_shm_t *s, uint32_t sync, uint32_t who, uint32_t code);

/* Abort the rounds in progress that name port s->me: PEER_LOST to everyone who arrived, this
 * port included. Those rounds belong to an incarnation of this port that has ended. */
static void hb_shm_abort_named(hb_shm_t *s, const char *whose)
{
    uint32_t bit = 1u << s->me;
    for (uint32_t k = 0; k < HB_HWB_NSYNC; k++) {
        hb_shm_sync_t *sy = &s->seg->sync[k];
        uint64_t old = atomic_load(&sy->mr);
        while (((uint32_t)old & bit) != 0) {
            if (atomic_compare_exchange_weak(&sy->mr, &old, 0)) {
                hb_log_warn("hwbarrier shm: %s sync %u: a round of port %u's %s aborted (mask "
                            "0x%x)",
                            s->name, k, s->me, whose, (uint32_t)old);
                hb_shm_release(s, k, (uint32_t)(old >> 32), HB_SHM_ERR_LOST);
                break;
            }
        }
    }
}

/*
 * A new holder of port s->me (a restarted Center or port) in a segment its previous holder
 * used: the rounds in progress that name it are that holder's, which it will never join. The
 * others' liveness checks abort them once they see it dead, but a restart can come before
 * their next check (a loop that polls, a loaded host): then they would wait on, and the new
 * holder's first arrival at that sync number would complete their old round and start a
 * round of its own that nobody joins. So it aborts them here, before it arrives anywhere, and
 * clears its flags. s->seg is set.
 */
static void hb_shm_scrub(hb_shm_t *s)
{
    hb_shm_abort_named(s, "previous holder");
    for (uint32_t i = 0; i < HB_HWB_NSYNC; i++)
        atomic_store(&s->seg->flags[s->me].flag[i], HB_SHM_IDLE);
}

/* The same process, a new incarnation of its node (hb_hwb_abandon): its own pending rounds
 * end with PEER_LOST too, collected as usual. */
static int hb_shm_abandon(hb_hwb_t *h)
{
    hb_shm_abort_named((hb_shm_t *)h, "previous incarnation");
    return 0;
}

/*
 * Center, restarted: the segment of a Center that died while ports still hold theirs (their
 * daemons live on, mapped to it). Recreating it would leave them on the old one; so the new
 * Center takes byte 0 (fd holds it already) and the segment over: its pid, the old Center's
 * rounds aborted and its flags idle (hb_shm_scrub). 0, or -1 when no port holds on or the
 * segment is not one of ours (then it is reclaimed).
 */
static int hb_shm_adopt(hb_shm_t *s, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(hb_shm_seg_t) || st.st_uid != getuid() ||
        (st.st_mode & 077) != 0)
        return -1;
    int live = 0;
    for (uint32_t i = 1; i < s->nodes && !live; i++)
        live = hb_shm_held(fd, i);
    if (!live)
        return -1;
    hb_shm_seg_t *seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (seg == MAP_FAILED)
        return -1;
    if (seg->magic != HB_SHM_MAGIC || seg->version != HB_SHM_VERSION || seg->nodes != s->nodes) {
        munmap(seg, sizeof(*seg));
        return -1;
    }
    hb_log_warn("hwbarrier shm: the Center of %s restarted: its ports still hold the segment, "
                "so it takes it over",
                s->name);
    s->seg = seg;
    s->fd = fd;
    hb_shm_scrub(s);
    atomic_store(&seg->node[0].pid, s->pid);
    atomic_store(&seg->center_pid, s->pid);
    return 0;
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
                return HB_ERR_EXISTS;
            }
            /* Nobody holds it. A Center that has just created it locks it at once, so only a
             * very young segment without a header may still be someone's creation. */
            young = fstat(fd, &st) == 0 && (size_t)st.st_size < sizeof(*seg) &&
                    time(NULL) - st.st_ctime < 2;
            if (!young && hb_shm_adopt(s, fd) == 0)
                return 0;
            close(fd);
            if (young && hb_time_now_ns() < deadline) {
                hb_shm_nap();
                continue;
            }
            hb_log_warn("hwbarrier shm: reclaiming stale segment %s (its Center is gone)", s->name);
            if (shm_unlink(s->name) < 0 && errno != ENOENT) {
                hb_log_error("hwbarrier shm: shm_unlink %s: %m", s->name);
                return HB_ERR_IO;
            }
            continue;
        }
        if (fd < 0) {
            hb_log_error("hwbarrier shm: shm_open %s: %m", s->name);
            return errno == EACCES ? HB_ERR_PERM : HB_ERR_IO;
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
        return HB_ERR_IO;
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
            return HB_ERR_TIMEOUT;
        }
        fd = shm_open(s->name, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
            if (errno == ENOENT)
                continue;
            hb_log_error("hwbarrier shm: shm_open %s: %m", s->name);
            return errno == EACCES ? HB_ERR_PERM : HB_ERR_IO;
        }
        if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(*seg)) {
            close(fd);
            continue;
        }
        if (st.st_uid != getuid() || (st.st_mode & 077) != 0) {
            hb_log_error("hwbarrier shm: %s has the wrong owner or mode %o", s->name,
                         (unsigned)(st.st_mode & 0777));
            close(fd);
            return HB_ERR_PERM;
        }
        seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (seg == MAP_FAILED) {
            hb_log_error("hwbarrier shm: mmap %s: %m", s->name);
            close(fd);
            return HB_ERR_IO;
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
            return HB_ERR_MISMATCH;
        }
        if (hb_shm_lock(fd, s->me) < 0) {
            old = atomic_load(&seg->node[s->me].pid);
            hb_log_error("hwbarrier shm: port %u of %s is held by a live process (pid %d)", s->me,
                         s->name, old);
            munmap(seg, sizeof(*seg));
            close(fd);
            return HB_ERR_EXISTS;
        }
        /* A previous holder of this port may have died or left mid-round: its rounds end
         * and its flags are cleared (hb_shm_scrub). A first holder has none: rounds that name
         * it now were begun by ports that came before it, and wait for it. (Poison stays: it
         * may name this port for a disagreeing round it has not joined yet.) */
        s->seg = seg;
        s->fd = fd;
        if (atomic_load(&seg->node[s->me].pid) != 0)
            hb_shm_scrub(s);
        atomic_store(&seg->node[s->me].pid, s->pid);
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
        return HB_ERR_NOMEM;
    s->me = p->port;
    s->nodes = p->nodes;
    s->epfd = s->sfd = s->tfd = s->txfd = -1;
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

/* The datagram socket of port i's event-loop fd. */
static int hb_shm_sock_path(const hb_shm_t *s, uint32_t i, char *buf, size_t len)
{
    int n = snprintf(buf, len, "/dev/shm%s-p%u", s->name, i);
    return n > 0 && (size_t)n < len ? 0 : HB_ERR_INVAL;
}

/*
 * Node i's loop may sleep on its fd: if it armed it, take that back and send it a datagram.
 * Call after writing what it waits for (its flag). The fences pair with hb_shm_fd_arm's: we
 * see its fd_armed, or it sees our flag in the test that follows its arming.
 */
static void hb_shm_notify(hb_shm_t *s, uint32_t i)
{
    _Atomic uint32_t *armed = &s->seg->node[i].fd_armed;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(armed, memory_order_relaxed) || !atomic_exchange(armed, 0))
        return;
    if (s->txfd < 0)
        s->txfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->txfd < 0 || hb_shm_sock_path(s, i, sa.sun_path, sizeof(sa.sun_path)) != 0)
        return;
    /* its socket may be full (then it is readable anyway) or gone (then so is its loop) */
    (void)sendto(s->txfd, "", 1, MSG_NOSIGNAL, (struct sockaddr *)&sa, sizeof(sa));
}

static void hb_shm_close(hb_hwb_t *h)
{
    hb_shm_t *s = (hb_shm_t *)h;
    hb_shm_seg_t *seg = s->seg;

    if (s->epfd >= 0) {
        char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
        atomic_store(&seg->node[s->me].fd_armed, 0);
        if (hb_shm_sock_path(s, s->me, path, sizeof(path)) == 0)
            unlink(path);
        close(s->epfd);
        close(s->sfd);
        close(s->tfd);
    }
    atomic_store(&seg->node[s->me].pid, -1);
    /* Wake everyone so waiters on a round with us notice at once that we left. */
    for (uint32_t i = 0; i < s->nodes; i++)
        if (i != s->me) {
            hb_wait_word_wake(&seg->node[i].wake);
            hb_shm_notify(s, i);
        }
    if (s->txfd >= 0)
        close(s->txfd);
    if (s->me == 0)
        atomic_store(&seg->center_pid, -1);
    munmap(seg, sizeof(*seg));
    close(s->fd); /* drops our liveness lock */
    /* The last one out removes the segment; a Center that leaves live ports keeps it for its
     * next start to take over (hb_shm_adopt). */
    int fd = shm_open(s->name, O_RDWR | O_CLOEXEC, 0);
    if (fd >= 0) {
        int live = 0;
        for (uint32_t i = 0; i < s->nodes && !live; i++)
            live = hb_shm_held(fd, i);
        if (!live && shm_unlink(s->name) < 0 && errno != ENOENT)
            hb_log_warn("hwbarrier shm: shm_unlink %s: %m", s->name);
        close(fd);
    }
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
        if (j != s->me) {
            hb_wait_word_wake(&seg->node[j].wake);
            hb_shm_notify(s, j);
        }
    }
}

/* Our arrival at sync (round g) is in the segment: it is pending. */
static void hb_shm_arrived(hb_shm_t *s, uint32_t sync, uint32_t g)
{
    /* after our flag's store (release): whoever sees round g sees its flag or a later value */
    atomic_store_explicit(&s->gen[sync], g, memory_order_release);
    atomic_fetch_or_explicit(&s->pending, 1u << sync, memory_order_release);
}

static int hb_shm_arrive(hb_hwb_t *h, uint32_t sync, uint32_t mask)
{
    hb_shm_t *s = (hb_shm_t *)h;
    hb_shm_seg_t *seg = s->seg;
    hb_shm_sync_t *sy = &seg->sync[sync];
    uint32_t bit = 1u << s->me, g;
    uint64_t old, nw;

    if (!(mask & bit) || (s->nodes < 32 && (mask >> s->nodes) != 0))
        return HB_ERR_INVAL;
    if (atomic_load_explicit(&s->pending, memory_order_relaxed) & (1u << sync))
        return HB_ERR_BUSY;
    atomic_store_explicit(&s->mask[sync], mask, memory_order_relaxed);
    g = atomic_load_explicit(&s->gen[sync], memory_order_relaxed) + 1; /* stored by arrived */
    if (atomic_load_explicit(&sy->poison, memory_order_relaxed) & bit) {
        atomic_fetch_and(&sy->poison, ~bit);
        atomic_store(&seg->flags[s->me].flag[sync], HB_SHM_ERR_MISMATCH);
        hb_shm_arrived(s, sync, g);
        return 0;
    }
    atomic_store_explicit(&seg->flags[s->me].flag[sync], HB_SHM_ARRIVED_GEN(g),
                          memory_order_relaxed);
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
            hb_shm_arrived(s, sync, g);
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
    hb_shm_arrived(s, sync, g);
    return 0;
}

/* Collect a finished round's result from our flag. */
static int hb_shm_collect(hb_shm_t *s, uint32_t sync, uint32_t f)
{
    atomic_fetch_and_explicit(&s->pending, ~(1u << sync), memory_order_relaxed);
    if (f == HB_SHM_IDLE)
        return 0;
    atomic_store(&s->seg->flags[s->me].flag[sync], HB_SHM_IDLE);
    return f == HB_SHM_ERR_MISMATCH ? HB_ERR_MISMATCH : HB_ERR_PEER_LOST;
}

static int hb_shm_test(hb_hwb_t *h, uint32_t sync)
{
    hb_shm_t *s = (hb_shm_t *)h;
    uint32_t f;
    if (!(atomic_load_explicit(&s->pending, memory_order_relaxed) & (1u << sync)))
        return HB_ERR_INVAL;
    f = atomic_load_explicit(&s->seg->flags[s->me].flag[sync], memory_order_acquire);
    if (HB_SHM_STATE(f) == HB_SHM_ARRIVED)
        return HB_ERR_WOULD_BLOCK;
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
    uint32_t mask = atomic_load_explicit(&s->mask[sync], memory_order_relaxed);
    return (uint32_t)mr == mask && ((uint32_t)(mr >> 32) & (1u << s->me));
}

static int hb_shm_poll_flag(void *arg, int slow)
{
    hb_shm_waitctx_t *c = arg;
    (void)slow;
    return HB_SHM_STATE(atomic_load_explicit(&c->s->seg->flags[c->s->me].flag[c->sync],
                                             memory_order_acquire)) != HB_SHM_ARRIVED
               ? 0
               : HB_ERR_WOULD_BLOCK;
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
        if ((m & 1) && HB_SHM_STATE(atomic_load_explicit(&s->seg->flags[s->me].flag[k],
                                                         memory_order_acquire)) != HB_SHM_ARRIVED) {
            c->sync = k;
            return 0;
        }
    }
    if (!slow)
        return HB_ERR_WOULD_BLOCK;
    for (uint32_t m = c->syncs, k = 0; m != 0; k++, m >>= 1) {
        if ((m & 1) && hb_shm_find_lost(s, atomic_load(&s->mask[k])) >= 0 &&
            hb_shm_in_round(s, k)) {
            c->sync = k;
            return HB_ERR_PEER_LOST;
        }
    }
    return HB_ERR_WOULD_BLOCK;
}

/* A participant is gone: abort the round at sync (if it is still ours, and has a lost
 * participant: a check may look at a round its user has just replaced) for everyone. */
static void hb_shm_abort_lost(hb_shm_t *s, uint32_t sync)
{
    hb_shm_sync_t *sy = &s->seg->sync[sync];
    uint64_t old = atomic_load(&sy->mr);
    while ((uint32_t)old == atomic_load(&s->mask[sync]) &&
           ((uint32_t)(old >> 32) & (1u << s->me)) && hb_shm_find_lost(s, (uint32_t)old) >= 0) {
        if (atomic_compare_exchange_weak(&sy->mr, &old, 0)) {
            hb_shm_release(s, sync, (uint32_t)(old >> 32), HB_SHM_ERR_LOST);
            return;
        }
    }
}

/*
 * Wait (waiting rule, until deadline) until poll says one of our rounds ended (c->sync), and
 * make sure its end is in our flag: a round with a participant that died or left is aborted
 * here; one whose completer took it and died before writing our flag gets ERR_LOST from us.
 * 0, TIMEOUT, or what poll stopped with. Does not collect.
 */
static int hb_shm_wait_end(hb_shm_t *s, hb_wait_poll_fn poll, hb_shm_waitctx_t *c,
                           const hb_wait_policy_t *pol, hb_wait_adapt_t *ad, uint64_t deadline)
{
    _Atomic uint32_t *flag;
    uint32_t f;
    int rc = hb_wait_until_adaptive(&s->seg->node[s->me].wake, poll, c, pol, ad, deadline);
    if (rc != HB_ERR_PEER_LOST)
        return rc;
    flag = &s->seg->flags[s->me].flag[c->sync];
    hb_log_warn("hwbarrier shm: %s sync %u: node %d died or left", s->name, c->sync,
                hb_shm_find_lost(s, atomic_load(&s->mask[c->sync])));
    hb_shm_abort_lost(s, c->sync);
    f = atomic_load_explicit(flag, memory_order_acquire);
    if (HB_SHM_STATE(f) != HB_SHM_ARRIVED)
        return 0;
    /* Someone else took the round meanwhile: its flag write is imminent, unless it died. */
    (void)hb_wait_until(&s->seg->node[s->me].wake, hb_shm_poll_flag, c, NULL,
                        hb_time_now_ns() + 100000000ull);
    /* Still that round's ARRIVED, and not in progress: its completer died. (The exact value:
     * never a later round at this sync number.) */
    if (!hb_shm_in_round(s, c->sync))
        atomic_compare_exchange_strong(flag, &f, HB_SHM_ERR_LOST);
    return 0;
}

static int hb_shm_wait(hb_hwb_t *h, uint32_t syncs, int timeout_ms, uint32_t *sync_p)
{
    hb_shm_t *s = (hb_shm_t *)h;
    hb_shm_waitctx_t c = {.s = s, .syncs = syncs, .sync = HB_HWB_NSYNC};
    uint64_t deadline;
    uint32_t f;
    int rc;

    if ((syncs & atomic_load_explicit(&s->pending, memory_order_relaxed)) != syncs)
        return HB_ERR_INVAL;
    deadline = timeout_ms < 0 ? UINT64_MAX : hb_time_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    rc = hb_shm_wait_end(s, hb_shm_poll, &c, NULL, &s->adapt, deadline);
    if (rc < 0)
        return rc; /* TIMEOUT: still pending, the caller may wait again */
    *sync_p = c.sync;
    f = atomic_load_explicit(&s->seg->flags[s->me].flag[c.sync], memory_order_acquire);
    if (HB_SHM_STATE(f) == HB_SHM_ARRIVED) { /* lost, and a new round there is not ours */
        atomic_fetch_and(&s->pending, ~(1u << c.sync));
        return HB_ERR_PEER_LOST;
    }
    return hb_shm_collect(s, c.sync, f);
}

/* The liveness checks of a sleeping loop (a timer tick): a pending round with a participant
 * that died or left is aborted; one whose completer took it and died before writing our flag
 * (our flag unchanged over two ticks, the round no longer in progress) fails. */
static void hb_shm_tick(hb_shm_t *s)
{
    uint32_t p = atomic_load_explicit(&s->pending, memory_order_relaxed);
    for (uint32_t m = p, k = 0; m != 0; k++, m >>= 1) {
        _Atomic uint32_t *flag = &s->seg->flags[s->me].flag[k];
        uint32_t f;
        if (!(m & 1))
            continue;
        f = atomic_load_explicit(flag, memory_order_acquire);
        if (HB_SHM_STATE(f) != HB_SHM_ARRIVED ||
            hb_shm_find_lost(s, atomic_load(&s->mask[k])) < 0) {
            s->suspect[k] = 0;
            continue;
        }
        if (hb_shm_in_round(s, k)) {
            hb_log_warn("hwbarrier shm: %s sync %u: node %d died or left", s->name, k,
                        hb_shm_find_lost(s, atomic_load(&s->mask[k])));
            hb_shm_abort_lost(s, k);
        } else if (s->suspect[k] == f) {
            atomic_compare_exchange_strong(flag, &f, HB_SHM_ERR_LOST);
        } else {
            s->suspect[k] = f;
        }
    }
}

static int hb_shm_fd(hb_hwb_t *h, int *fd_p)
{
    hb_shm_t *s = (hb_shm_t *)h;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct epoll_event ev = {.events = EPOLLIN};

    if (s->epfd >= 0) {
        *fd_p = s->epfd;
        return 0;
    }
    if (hb_shm_sock_path(s, s->me, sa.sun_path, sizeof(sa.sun_path)) != 0)
        return HB_ERR_INVAL;
    s->sfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (s->sfd < 0 || s->tfd < 0 || s->epfd < 0) {
        hb_log_error("hwbarrier shm: event-loop fd: %m");
        goto err;
    }
    /* a socket left by a previous holder of this port that died (we hold its lock now) */
    if (bind(s->sfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
        (errno != EADDRINUSE || unlink(sa.sun_path) < 0 ||
         bind(s->sfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)) {
        hb_log_error("hwbarrier shm: bind %s: %m", sa.sun_path);
        goto err;
    }
    if (chmod(sa.sun_path, 0600) < 0)
        hb_log_warn("hwbarrier shm: chmod %s: %m", sa.sun_path);
    ev.data.fd = s->sfd;
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->sfd, &ev) < 0)
        goto err_unlink;
    ev.data.fd = s->tfd;
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->tfd, &ev) < 0)
        goto err_unlink;
    *fd_p = s->epfd;
    return 0;
err_unlink:
    hb_log_error("hwbarrier shm: epoll_ctl: %m");
    unlink(sa.sun_path);
err:
    if (s->sfd >= 0)
        close(s->sfd);
    if (s->tfd >= 0)
        close(s->tfd);
    if (s->epfd >= 0)
        close(s->epfd);
    s->sfd = s->tfd = s->epfd = -1;
    return HB_ERR_IO;
}

/* Start or stop the liveness tick: every sleep slice of the waiting rule (100 ms). */
static void hb_shm_timer(hb_shm_t *s, int on)
{
    struct itimerspec its = {{0, 0}, {0, 0}};
    uint64_t ns = hb_wait_policy_default()->slice_ns;
    if (on == s->timer_on)
        return;
    if (on) {
        its.it_value.tv_sec = (time_t)(ns / 1000000000ull);
        its.it_value.tv_nsec = (long)(ns % 1000000000ull);
        its.it_interval = its.it_value;
    }
    if (timerfd_settime(s->tfd, 0, &its, NULL) == 0)
        s->timer_on = on;
}

static int hb_shm_fd_arm(hb_hwb_t *h, int armed)
{
    hb_shm_t *s = (hb_shm_t *)h;
    _Atomic uint32_t *mine;
    char buf[64];
    uint64_t ticks;
    uint32_t p;

    if (s->epfd < 0)
        return HB_ERR_INVAL;
    mine = &s->seg->node[s->me].fd_armed;
    while (recv(s->sfd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
        ;
    if (read(s->tfd, &ticks, sizeof(ticks)) == (ssize_t)sizeof(ticks))
        hb_shm_tick(s);
    p = atomic_load_explicit(&s->pending, memory_order_relaxed);
    if (!armed || p == 0) {
        atomic_store(mine, 0);
        hb_shm_timer(s, 0);
        return 0;
    }
    hb_shm_timer(s, 1);
    atomic_store(mine, 1);
    atomic_thread_fence(memory_order_seq_cst); /* pairs with hb_shm_notify's */
    /* a round that has already ended: readable now, as the contract says */
    for (uint32_t m = p, k = 0; m != 0; k++, m >>= 1)
        if ((m & 1) && HB_SHM_STATE(atomic_load_explicit(&s->seg->flags[s->me].flag[k],
                                                         memory_order_acquire)) != HB_SHM_ARRIVED) {
            hb_shm_notify(s, s->me);
            break;
        }
    return 0;
}

static const hb_hwb_ops_t hb_shm_ops = {
    .open = hb_shm_open,
    .arrive = hb_shm_arrive,
    .test = hb_shm_test,
    .wait = hb_shm_wait,
    .fd = hb_shm_fd,
    .fd_arm = hb_shm_fd_arm,
    .close = hb_shm_close,
    .abandon = hb_shm_abandon,
};

const hb_hwb_component_t hb_hwb_shm_component = {
    .name = "shm",
    .priority = 10,
    .query = hb_shm_query,
    .ops = &hb_shm_ops,
};

/* ---- stale segments and sockets of any cluster (hb_hwb_shm_reclaim) ---- */

/* /dev/shm/name is one of our segments in which no process holds a port's lock. */
static int hb_shm_seg_dead(const char *path)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = HB_HWB_MAX_NODES};
    uint32_t magic = 0;
    struct stat st;
    int dead = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0)
        return 0;
    /* only a whole segment of ours with the backend's magic: a younger one is a Center's
     * creation in progress (it locks byte 0 at once) or not ours */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
        (size_t)st.st_size >= sizeof(hb_shm_seg_t) &&
        pread(fd, &magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) && magic == HB_SHM_MAGIC &&
        fcntl(fd, F_OFD_GETLK, &fl) == 0)
        dead = fl.l_type == F_UNLCK;
    close(fd);
    return dead;
}

/* /dev/shm/name is a datagram socket of ours that nobody has bound any more. */
static int hb_shm_sock_dead(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, dead;

    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != getuid() ||
        strlen(path) >= sizeof(sa.sun_path))
        return 0;
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    dead = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno == ECONNREFUSED;
    close(fd);
    return dead;
}

/* "-c<digits>" or "-c<digits>-p<digits>" ends name: 1 segment, 2 socket, 0 neither. */
static int hb_shm_entry_kind(const char *name)
{
    const char *p = strrchr(name, '-'), *q;
    int kind = 1;
    if (p == NULL)
        return 0;
    if (p[1] == 'p') {
        q = p + 2;
        while (*q >= '0' && *q <= '9')
            q++;
        if (q == p + 2 || *q != '\0' || p == name)
            return 0;
        for (p--; p > name && *p != '-'; p--)
            ;
        kind = 2;
    }
    if (p[0] != '-' || p[1] != 'c' || p[2] < '0' || p[2] > '9')
        return 0;
    for (q = p + 2; *q >= '0' && *q <= '9'; q++)
        ;
    return *q == '\0' || (kind == 2 && *q == '-') ? kind : 0;
}

int hb_hwb_shm_reclaim(void)
{
    char prefix[32], path[PATH_MAX];
    struct dirent *e;
    int n = 0;
    DIR *dir = opendir("/dev/shm");

    if (dir == NULL)
        return 0;
    snprintf(prefix, sizeof(prefix), "hibar-%u-", (unsigned)getuid());
    while ((e = readdir(dir)) != NULL) {
        int kind;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
            (kind = hb_shm_entry_kind(e->d_name)) == 0)
            continue;
        snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
        if (kind == 1 ? !hb_shm_seg_dead(path) : !hb_shm_sock_dead(path))
            continue;
        if (unlink(path) != 0) {
            if (errno != ENOENT)
                hb_log_warn("hwbarrier shm: cannot remove stale %s: %m", path);
            continue;
        }
        hb_log_warn("hwbarrier shm: reclaimed stale %s %s (its owners are gone)",
                    kind == 1 ? "segment" : "socket", path);
        n++;
    }
    closedir(dir);
    return n;
}
