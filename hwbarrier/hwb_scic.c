/* hwb_scic.c: the scic backend: driver of the SCIC board over UIO (doc/scic-registers.md). */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hwb.h"
#include "scic_regs.h"

#include "hb_log.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hb_status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/*
 * The board is a UIO device: map 0 is BAR0 (the registers), and the device fd carries the
 * interrupt: read() returns a 4-byte interrupt count once an interrupt fired, write() of a
 * 4-byte 1 re-enables the interrupt. A completion raises the interrupt if it is enabled.
 *
 * Completion of an arrival is seen in B_RESULT[s]: its count moves when the chip resets
 * this node's B-Flag for s. (B_FLAG itself cannot tell "not yet taken by the chip" from
 * "completed", so the count sampled at arrival is the reference.)
 *
 * Test hooks, used by the device model: bar_path names a file to map instead of the UIO map,
 * and a uio_path naming a UNIX socket is connected to (SOCK_SEQPACKET) instead of opened;
 * the protocol on it is the UIO one above. The rest of the driver is the same.
 */

typedef struct hb_scic {
    hb_hwb_t base;
    volatile void *bar;
    size_t bar_len;
    int fd; /* interrupt fd */
    uint32_t me, nodes;
    uint32_t pending; /* bit s: arrived, completion not yet collected */
    uint32_t mask[HB_HWB_NSYNC];
    uint32_t seen[HB_HWB_NSYNC]; /* B_RESULT count when we arrived */
    int fd_armed;                /* the event-loop fd was asked for: keep the irq armed */
    hb_wait_adapt_t adapt;       /* our waits' adaptive spin */
    char path[256];
} hb_scic_t;

static int hb_scic_read_hex(const char *path, unsigned long *v_p)
{
    char buf[32];
    FILE *f = fopen(path, "r");
    int ok;
    if (f == NULL)
        return -1;
    ok = fgets(buf, sizeof(buf), f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    *v_p = strtoul(buf, NULL, 0);
    return 0;
}

/* Find /dev/uioN whose PCI device has the ids. 0 with path filled, or UNAVAIL with why. */
static int hb_scic_find(const hb_hwb_params_t *p, char *path, size_t len, size_t *maplen_p,
                        char *why, size_t whylen)
{
    const char *root = p->sysfs_root ? p->sysfs_root : "/sys";
    unsigned vendor = p->pci_vendor ? p->pci_vendor : HB_HWB_SCIC_VENDOR;
    unsigned device = p->pci_device ? p->pci_device : HB_HWB_SCIC_DEVICE;
    char dir[256], f[512];
    struct dirent *de;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/class/uio", root);
    d = opendir(dir);
    if (d == NULL) {
        snprintf(why, whylen, "no UIO devices (%s: %s; is uio_pci_generic loaded?)", dir,
                 strerror(errno));
        return HB_ERR_UNAVAIL;
    }
    while ((de = readdir(d)) != NULL) {
        unsigned long v, dv, sz;
        if (strncmp(de->d_name, "uio", 3) != 0)
            continue;
        if (snprintf(f, sizeof(f), "%s/%s/device/vendor", dir, de->d_name) >= (int)sizeof(f) ||
            hb_scic_read_hex(f, &v) < 0 || v != vendor)
            continue;
        if (snprintf(f, sizeof(f), "%s/%s/device/device", dir, de->d_name) >= (int)sizeof(f) ||
            hb_scic_read_hex(f, &dv) < 0 || dv != device)
            continue;
        if (snprintf(f, sizeof(f), "%s/%s/maps/map0/size", dir, de->d_name) < (int)sizeof(f) &&
            hb_scic_read_hex(f, &sz) == 0 && sz >= HB_SCIC_BAR_SIZE)
            *maplen_p = sz;
        else
            *maplen_p = HB_SCIC_BAR_SIZE;
        if (snprintf(path, len, "/dev/%s", de->d_name) >= (int)len)
            continue;
        closedir(d);
        return 0;
    }
    closedir(d);
    snprintf(why, whylen, "no SCIC board (PCI %04x:%04x) among %s", vendor, device, dir);
    return HB_ERR_UNAVAIL;
}

static int hb_scic_query(const hb_hwb_params_t *p, char *why, size_t len)
{
    char path[256];
    size_t maplen;
    if (p->uio_path != NULL) {
        if (access(p->uio_path, R_OK | W_OK) != 0) {
            snprintf(why, len, "%s: %s", p->uio_path, strerror(errno));
            return HB_ERR_UNAVAIL;
        }
        snprintf(why, len, "SCIC board at %s", p->uio_path);
        return 0;
    }
    if (hb_scic_find(p, path, sizeof(path), &maplen, why, len) < 0)
        return HB_ERR_UNAVAIL;
    snprintf(why, len, "SCIC board at %s", path);
    return 0;
}

/* Open the interrupt fd: the UIO device itself, or a device model's socket. */
static int hb_scic_open_irq(const char *path)
{
    struct stat st;
    int fd;
    if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa.sun_path)) {
            errno = ENAMETOOLONG;
            return -1;
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        return fd;
    }
    return open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
}

static int hb_scic_open(const hb_hwb_params_t *p, hb_hwb_t **h_p)
{
    hb_scic_t *s = calloc(1, sizeof(*s));
    char why[160];
    const char *barfile;
    uint32_t id, cfg;
    size_t maplen = HB_SCIC_BAR_SIZE;
    int bfd = -1, rc;

    if (s == NULL)
        return HB_ERR_NOMEM;
    s->fd = -1;
    s->me = p->port;
    s->nodes = p->nodes;
    if (p->uio_path != NULL) {
        snprintf(s->path, sizeof(s->path), "%s", p->uio_path);
    } else if (hb_scic_find(p, s->path, sizeof(s->path), &maplen, why, sizeof(why)) < 0) {
        hb_log_error("hwbarrier scic: %s", why);
        rc = HB_ERR_UNAVAIL;
        goto err_free;
    }
    s->fd = hb_scic_open_irq(s->path);
    if (s->fd < 0) {
        hb_log_error("hwbarrier scic: open %s: %m", s->path);
        rc = errno == EACCES ? HB_ERR_PERM : HB_ERR_IO;
        goto err_free;
    }
    barfile = p->bar_path ? p->bar_path : s->path;
    bfd = p->bar_path ? open(barfile, O_RDWR | O_CLOEXEC) : s->fd;
    if (bfd < 0) {
        hb_log_error("hwbarrier scic: open %s: %m", barfile);
        rc = HB_ERR_IO;
        goto err_close;
    }
    s->bar_len = maplen;
    /* UIO: map N is at offset N * page size; BAR0 is map 0. */
    s->bar = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0);
    if (p->bar_path)
        close(bfd);
    if (s->bar == MAP_FAILED) {
        hb_log_error("hwbarrier scic: mmap BAR0 of %s: %m", barfile);
        rc = HB_ERR_IO;
        goto err_close;
    }
    id = hb_scic_rd32(s->bar, HB_SCIC_ID);
    cfg = hb_scic_rd32(s->bar, HB_SCIC_CONFIG);
    if (id != HB_SCIC_ID_VALUE) {
        hb_log_error("hwbarrier scic: %s: chip id 0x%08x, expected 0x%08x", barfile, id,
                     HB_SCIC_ID_VALUE);
        rc = HB_ERR_UNAVAIL;
        goto err_unmap;
    }
    if ((cfg & 0xffu) != p->port || ((cfg >> 8) & 0xffu) != p->nodes ||
        ((cfg >> 16) & 0xffu) < HB_HWB_NSYNC) {
        hb_log_error("hwbarrier scic: board says node %u of %u (%u syncs); topology says %u "
                     "of %u",
                     cfg & 0xffu, (cfg >> 8) & 0xffu, (cfg >> 16) & 0xffu, p->port, p->nodes);
        rc = HB_ERR_MISMATCH;
        goto err_unmap;
    }
    if (!(hb_scic_rd32(s->bar, HB_SCIC_STATUS) & HB_SCIC_ST_LINK_UP)) {
        hb_log_error("hwbarrier scic: %s: link down", s->path);
        rc = HB_ERR_PEER_LOST;
        goto err_unmap;
    }
    *h_p = &s->base;
    return 0;
err_unmap:
    munmap((void *)s->bar, s->bar_len);
err_close:
    close(s->fd);
err_free:
    free(s);
    return rc;
}

static void hb_scic_close(hb_hwb_t *h)
{
    hb_scic_t *s = (hb_scic_t *)h;
    munmap((void *)s->bar, s->bar_len);
    close(s->fd);
    free(s);
}

/* Enable the interrupt (UIO irqcontrol: write 1); a pending count stays readable. */
static int hb_scic_enable(hb_scic_t *s)
{
    uint32_t v = 1;
    if (write(s->fd, &v, sizeof(v)) != (ssize_t)sizeof(v) && errno != EAGAIN) {
        hb_log_error("hwbarrier scic: %s: enabling the interrupt: %m", s->path);
        return HB_ERR_IO;
    }
    return 0;
}

/* Re-enable the interrupt: consume a pending count, then enable. */
static int hb_scic_arm(void *arg)
{
    hb_scic_t *s = arg;
    uint32_t cnt;
    while (read(s->fd, &cnt, sizeof(cnt)) == (ssize_t)sizeof(cnt))
        ;
    return hb_scic_enable(s);
}

static int hb_scic_db_free(void *arg, int slow)
{
    hb_scic_t *s = arg;
    (void)slow;
    return hb_scic_rd64(s->bar, HB_SCIC_DOORBELL) == 0 ? 0 : HB_ERR_WOULD_BLOCK;
}

static int hb_scic_arrive(hb_hwb_t *h, uint32_t sync, uint32_t mask)
{
    hb_scic_t *s = (hb_scic_t *)h;
    int rc;

    if (!(mask & (1u << s->me)) || (s->nodes < 32 && (mask >> s->nodes) != 0))
        return HB_ERR_INVAL;
    if (s->pending & (1u << sync))
        return HB_ERR_BUSY;
    if (!(hb_scic_rd32(s->bar, HB_SCIC_STATUS) & HB_SCIC_ST_LINK_UP)) {
        hb_log_error("hwbarrier scic: %s: board link down", s->path);
        return HB_ERR_PEER_LOST;
    }
    /* The doorbell takes one command at a time; the chip takes it within microseconds. */
    rc = hb_wait_until(NULL, hb_scic_db_free, s, NULL, hb_time_now_ns() + 1000000000ull);
    if (rc < 0) {
        hb_log_error("hwbarrier scic: %s: doorbell not taken by the chip", s->path);
        return rc == HB_ERR_TIMEOUT ? HB_ERR_BUSY : rc;
    }
    /* An event loop waits on the fd after arriving: the interrupt must be enabled first (not
     * drained: the count may be another round's completion the loop has not seen yet). */
    if (s->fd_armed && (rc = hb_scic_enable(s)) < 0)
        return rc;
    s->seen[sync] = HB_SCIC_RES_COUNT(hb_scic_rd32(s->bar, HB_SCIC_B_RESULT(sync)));
    s->mask[sync] = mask;
    s->pending |= 1u << sync;
    hb_scic_wr64(s->bar, HB_SCIC_DOORBELL, hb_scic_db(mask, sync, HB_SCIC_DB_ARRIVE));
    return 0;
}

/* 0 + result code if complete, else WOULD_BLOCK. */
static int hb_scic_done(hb_scic_t *s, uint32_t sync, uint32_t *code_p)
{
    uint32_t v = hb_scic_rd32(s->bar, HB_SCIC_B_RESULT(sync));
    if (HB_SCIC_RES_COUNT(v) == s->seen[sync])
        return HB_ERR_WOULD_BLOCK;
    *code_p = HB_SCIC_RES_CODE(v);
    return 0;
}

static int hb_scic_collect(hb_scic_t *s, uint32_t sync, uint32_t code)
{
    s->pending &= ~(1u << sync);
    switch (code) {
    case HB_SCIC_RES_OK:
        return 0;
    case HB_SCIC_RES_MISMATCH:
        return HB_ERR_MISMATCH;
    case HB_SCIC_RES_LOST:
        return HB_ERR_PEER_LOST;
    default:
        hb_log_error("hwbarrier scic: %s: chip rejected sync %u (result %u)", s->path, sync, code);
        return HB_ERR_IO;
    }
}

static int hb_scic_test(hb_hwb_t *h, uint32_t sync)
{
    hb_scic_t *s = (hb_scic_t *)h;
    uint32_t code;
    if (!(s->pending & (1u << sync)))
        return HB_ERR_INVAL;
    if (hb_scic_done(s, sync, &code) == 0)
        return hb_scic_collect(s, sync, code);
    return HB_ERR_WOULD_BLOCK;
}

typedef struct hb_scic_waitctx {
    hb_scic_t *s;
    uint32_t syncs;      /* the rounds waited for */
    uint32_t sync, code; /* the one that ended and its result */
} hb_scic_waitctx_t;

/* Any of the rounds in c->syncs over? (One interrupt serves every sync number: look at all.) */
static int hb_scic_poll(void *arg, int slow)
{
    hb_scic_waitctx_t *c = arg;
    for (uint32_t m = c->syncs, k = 0; m != 0; k++, m >>= 1)
        if ((m & 1) && hb_scic_done(c->s, k, &c->code) == 0) {
            c->sync = k;
            return 0;
        }
    if (slow && !(hb_scic_rd32(c->s->bar, HB_SCIC_STATUS) & HB_SCIC_ST_LINK_UP))
        return HB_ERR_PEER_LOST; /* our own board is gone */
    return HB_ERR_WOULD_BLOCK;
}

static int hb_scic_arm_cb(void *arg)
{
    return hb_scic_arm(((hb_scic_waitctx_t *)arg)->s);
}

static int hb_scic_wait(hb_hwb_t *h, uint32_t syncs, int timeout_ms, uint32_t *sync_p)
{
    hb_scic_t *s = (hb_scic_t *)h;
    hb_scic_waitctx_t c = {s, syncs, HB_HWB_NSYNC, 0};
    uint64_t deadline;
    int rc;

    if ((syncs & s->pending) != syncs)
        return HB_ERR_INVAL;
    deadline = timeout_ms < 0 ? UINT64_MAX : hb_time_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    rc = hb_wait_until_fd(s->fd, hb_scic_arm_cb, hb_scic_poll, &c, NULL, &s->adapt, deadline);
    if (rc == HB_ERR_TIMEOUT)
        return rc;
    if (rc < 0) {
        /* our own board is gone: the lowest round waited for reports it (the others will
         * fail the same way when waited for) */
        uint32_t sync = (uint32_t)__builtin_ctz(syncs);
        if (rc == HB_ERR_PEER_LOST)
            hb_log_warn("hwbarrier scic: %s: board link down", s->path);
        s->pending &= ~(1u << sync);
        *sync_p = sync;
        return rc;
    }
    *sync_p = c.sync;
    return hb_scic_collect(s, c.sync, c.code);
}

static int hb_scic_fd(hb_hwb_t *h, int *fd_p)
{
    hb_scic_t *s = (hb_scic_t *)h;
    int rc = hb_scic_arm(s);
    if (rc < 0)
        return rc;
    s->fd_armed = 1;
    *fd_p = s->fd;
    return 0;
}

/* The loop is about to sleep on the fd, or saw it readable: consume the interrupt count and
 * enable the interrupt before it tests the pending rounds, so a completion after this raises
 * a new one. (Doing it in test would consume, in the test of one round, the interrupt of a
 * round tested a moment before.) */
static int hb_scic_fd_arm(hb_hwb_t *h, int armed)
{
    hb_scic_t *s = (hb_scic_t *)h;
    (void)armed; /* an interrupt costs nobody a wake-up: it stays enabled */
    return s->fd_armed ? hb_scic_arm(s) : HB_ERR_INVAL;
}

static const hb_hwb_ops_t hb_scic_ops = {
    .open = hb_scic_open,
    .arrive = hb_scic_arrive,
    .test = hb_scic_test,
    .wait = hb_scic_wait,
    .fd = hb_scic_fd,
    .fd_arm = hb_scic_fd_arm,
    .close = hb_scic_close,
};

const hb_hwb_component_t hb_hwb_scic_component = {
    .name = "scic",
    .priority = 50,
    .query = hb_scic_query,
    .ops = &hb_scic_ops,
};
