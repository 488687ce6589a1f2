/* scic_model.c: device model of the SCIC control chip: sync memory, arrival/completion packets
 * on a modelled cable with bounded receive buffers and stop/start flow control. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "scic_model.h"
#include "scic_regs.h"

#include "hb_log.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hb_status.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * What is modelled (doc/design.md section 1): every board runs the same chip. The cable is a
 * star of point-to-point links, Center <-> each port, each direction with a sender queue and a
 * receive buffer of HB_SCIC_MODEL_RXBUF packets. When a receive buffer fills to its high mark
 * the receiver sends STOP on the reverse wire (a control packet that does not use the data
 * buffer); the sender pauses until START, sent when the buffer has drained to the low mark.
 *
 *   port doorbell       B_FLAG[s] = flag; ARRIVAL(s, mask) to the Center
 *   Center doorbell     like an arrival packet from node 0
 *   Center, arrival     B_MASK empty: install mask; differs: MISMATCH for everyone arrived,
 *                       B_POISON for the rest; else B_REACH |= node. B_REACH == B_MASK:
 *                       clear both, reset own flag, COMPLETION(s) to every other participant
 *   port, COMPLETION    B_FLAG[s] = 0, B_RESULT[s] count + 1 with the result, interrupt
 *   carrier lost        Center: LOST |= port, rounds naming it end with result LOST, later
 *                       arrivals naming it too; port: every flagged sync ends with LOST
 *
 * All boards of a chassis are stepped by one thread of one process, each board touching only
 * its own registers and its link ends, so the only coupling between boards is the cable.
 * Hooks from the test process arrive through a shared control page.
 */

#define HB_SCIM_MAX 32
#define HB_SCIM_TXQ 64
#define HB_SCIM_HIGH (HB_SCIC_MODEL_RXBUF - 2)
#define HB_SCIM_LOW 2

enum { HB_PKT_ARRIVAL = 1, HB_PKT_COMPLETION, HB_PKT_STOP, HB_PKT_START };

typedef struct hb_scim_pkt {
    uint8_t type, src, sync, res;
    uint32_t mask;
} hb_scim_pkt_t;

typedef struct hb_scim_fifo {
    hb_scim_pkt_t q[HB_SCIM_TXQ];
    unsigned head, count, cap;
} hb_scim_fifo_t;

/* One direction of one link. */
typedef struct hb_scim_dir {
    hb_scim_fifo_t txq; /* at the sender */
    hb_scim_fifo_t rx;  /* receive buffer at the receiver */
    hb_scim_fifo_t ctl; /* STOP/START travelling back to the sender */
    int paused;         /* sender got STOP */
    int stopped;        /* receiver sent STOP */
} hb_scim_dir_t;

typedef struct hb_scim_hooks {
    _Atomic int lose;
    _Atomic uint32_t slow_us;
    _Atomic int hold;
} hb_scim_hooks_t;

typedef struct hb_scim_ctl {
    _Atomic int stop;
    hb_scim_hooks_t b[HB_SCIM_MAX];
} hb_scim_ctl_t;

typedef struct hb_scim_board {
    volatile void *bar;
    int lfd, conn; /* interrupt socket: listening, connected driver */
    int irq_enabled;
    int dead;
    uint64_t busy_until;
    char bar_name[96], bar_path[128], uio_path[108];
} hb_scim_board_t;

struct hb_scic_model {
    uint32_t n;
    pid_t pid;
    hb_scim_ctl_t *ctl;
    hb_scim_board_t b[HB_SCIM_MAX];
    hb_scim_dir_t up[HB_SCIM_MAX], down[HB_SCIM_MAX]; /* port p -> Center, Center -> port p */
};

/* ---- fifo ---- */

static int hb_scim_push(hb_scim_fifo_t *f, hb_scim_pkt_t p)
{
    if (f->count >= f->cap)
        return -1;
    f->q[(f->head + f->count) % HB_SCIM_TXQ] = p;
    f->count++;
    return 0;
}

static int hb_scim_pop(hb_scim_fifo_t *f, hb_scim_pkt_t *p)
{
    if (f->count == 0)
        return -1;
    *p = f->q[f->head];
    f->head = (f->head + 1) % HB_SCIM_TXQ;
    f->count--;
    return 0;
}

/* ---- registers ---- */

static uint32_t rd(hb_scim_board_t *b, uint32_t off)
{
    return hb_scic_rd32(b->bar, off);
}
static void wr(hb_scim_board_t *b, uint32_t off, uint32_t v)
{
    hb_scic_wr32(b->bar, off, v);
}
static void inc(hb_scim_board_t *b, uint32_t off)
{
    wr(b, off, rd(b, off) + 1);
}

static void hb_scim_status(hb_scim_board_t *b, uint32_t bit, int on)
{
    uint32_t st = rd(b, HB_SCIC_STATUS), nw = on ? st | bit : st & ~bit;
    if (nw != st) /* STATUS shares a cache line with DOORBELL: write only on change */
        wr(b, HB_SCIC_STATUS, nw);
}

/* ---- interrupt (UIO protocol on the socket) ---- */

static void hb_scim_irq_drain(hb_scim_board_t *b)
{
    uint32_t v;
    ssize_t r;
    if (b->conn < 0) {
        b->conn = accept4(b->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (b->conn < 0)
            return;
        b->irq_enabled = 0;
    }
    while ((r = recv(b->conn, &v, sizeof(v), MSG_DONTWAIT)) == (ssize_t)sizeof(v))
        b->irq_enabled = v != 0;
    if (r == 0) { /* the driver closed: next one may connect */
        close(b->conn);
        b->conn = -1;
        b->irq_enabled = 0;
    }
}

static void hb_scim_irq(hb_scim_board_t *b)
{
    hb_scim_irq_drain(b);
    if (b->conn >= 0 && b->irq_enabled) {
        uint32_t cnt = rd(b, HB_SCIC_IRQ_COUNT) + 1;
        wr(b, HB_SCIC_IRQ_COUNT, cnt);
        b->irq_enabled = 0; /* UIO: disabled until the driver writes 1 again */
        if (send(b->conn, &cnt, sizeof(cnt), MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN) {
            close(b->conn);
            b->conn = -1;
        }
    }
}

/* ---- chip logic ---- */

/* This node's flag for s is reset with a result: the completion as the node sees it. */
static void hb_scim_complete_local(hb_scim_board_t *b, uint32_t s, uint32_t res)
{
    uint32_t v = rd(b, HB_SCIC_B_RESULT(s));
    wr(b, HB_SCIC_B_FLAG(s), 0);
    wr(b, HB_SCIC_B_RESULT(s), ((HB_SCIC_RES_COUNT(v) + 1) & 0xffffu) | res << 16);
    hb_scim_irq(b);
}

/* Center: completion for node k (local flag or a COMPLETION packet). */
static void hb_scim_complete(hb_scic_model_t *m, uint32_t k, uint32_t s, uint32_t res)
{
    hb_scim_pkt_t p = {
        .type = HB_PKT_COMPLETION, .src = 0, .sync = (uint8_t)s, .res = (uint8_t)res};
    if (k == 0) {
        hb_scim_complete_local(&m->b[0], s, res);
        return;
    }
    if (rd(&m->b[0], HB_SCIC_LOST) & (1u << k))
        return; /* nobody to tell */
    if (hb_scim_push(&m->down[k].txq, p) < 0)
        inc(&m->b[0], HB_SCIC_RX_OVERRUN); /* cannot happen: <= NSYNC per port in flight */
}

static void hb_scim_complete_set(hb_scic_model_t *m, uint32_t who, uint32_t s, uint32_t res)
{
    for (uint32_t k = 0; k < m->n; k++)
        if (who & (1u << k))
            hb_scim_complete(m, k, s, res);
}

/* Center: an arrival of node j at sync s with mask (own doorbell or ARRIVAL packet). */
static void hb_scim_center_arrival(hb_scic_model_t *m, uint32_t j, uint32_t s, uint32_t mask)
{
    hb_scim_board_t *c = &m->b[0];
    uint32_t bit = 1u << j, full = m->n == 32 ? 0xffffffffu : (1u << m->n) - 1;
    uint32_t bm, br, poison = rd(c, HB_SCIC_B_POISON(s));

    if (s >= HB_SCIC_NSYNC || !(mask & bit) || (mask & ~full)) {
        hb_scim_complete(m, j, s < HB_SCIC_NSYNC ? s : 0, HB_SCIC_RES_BADCMD);
        return;
    }
    if (poison & bit) {
        wr(c, HB_SCIC_B_POISON(s), poison & ~bit);
        hb_scim_complete(m, j, s, HB_SCIC_RES_MISMATCH);
        return;
    }
    if (mask & rd(c, HB_SCIC_LOST)) {
        hb_scim_complete(m, j, s, HB_SCIC_RES_LOST);
        return;
    }
    bm = rd(c, HB_SCIC_B_MASK(s));
    br = rd(c, HB_SCIC_B_REACH(s));
    if (bm != 0 && bm != mask) {
        wr(c, HB_SCIC_B_MASK(s), 0);
        wr(c, HB_SCIC_B_REACH(s), 0);
        wr(c, HB_SCIC_B_POISON(s), poison | ((bm | mask) & ~(br | bit)));
        hb_scim_complete_set(m, br | bit, s, HB_SCIC_RES_MISMATCH);
        return;
    }
    br |= bit;
    if (br == mask) {
        wr(c, HB_SCIC_B_MASK(s), 0);
        wr(c, HB_SCIC_B_REACH(s), 0);
        hb_scim_complete_set(m, mask, s, HB_SCIC_RES_OK);
        return;
    }
    wr(c, HB_SCIC_B_MASK(s), mask);
    wr(c, HB_SCIC_B_REACH(s), br);
}

/* Center noticed port p's carrier is gone: end every round that names it. */
static void hb_scim_center_lost(hb_scic_model_t *m, uint32_t p)
{
    hb_scim_board_t *c = &m->b[0];
    wr(c, HB_SCIC_LOST, rd(c, HB_SCIC_LOST) | 1u << p);
    hb_scim_status(c, HB_SCIC_ST_PEER_LOST, 1);
    for (uint32_t s = 0; s < HB_SCIC_NSYNC; s++) {
        uint32_t bm = rd(c, HB_SCIC_B_MASK(s)), br = rd(c, HB_SCIC_B_REACH(s));
        if (bm & (1u << p)) {
            wr(c, HB_SCIC_B_MASK(s), 0);
            wr(c, HB_SCIC_B_REACH(s), 0);
            hb_scim_complete_set(m, br & ~(1u << p), s, HB_SCIC_RES_LOST);
        }
    }
}

/* Port noticed the Center is gone: every flagged sync ends with LOST. */
static void hb_scim_port_lost(hb_scim_board_t *b)
{
    wr(b, HB_SCIC_LOST, 1);
    hb_scim_status(b, HB_SCIC_ST_PEER_LOST, 1);
    for (uint32_t s = 0; s < HB_SCIC_NSYNC; s++)
        if (rd(b, HB_SCIC_B_FLAG(s)))
            hb_scim_complete_local(b, s, HB_SCIC_RES_LOST);
}

static void hb_scim_receive(hb_scic_model_t *m, uint32_t k, const hb_scim_pkt_t *p)
{
    hb_scim_board_t *b = &m->b[k];
    inc(b, HB_SCIC_RX_PKTS);
    if (k == 0 && p->type == HB_PKT_ARRIVAL)
        hb_scim_center_arrival(m, p->src, p->sync, p->mask);
    else if (k != 0 && p->type == HB_PKT_COMPLETION && p->sync < HB_SCIC_NSYNC)
        hb_scim_complete_local(b, p->sync, p->res);
}

static void hb_scim_doorbell(hb_scic_model_t *m, uint32_t k, uint64_t db)
{
    hb_scim_board_t *b = &m->b[k];
    uint32_t mask = (uint32_t)db, s = (uint32_t)(db >> 32) & 0xffu;
    uint32_t flag = (uint32_t)(db >> 40) & 0xffu;
    hb_scim_pkt_t p = {.type = HB_PKT_ARRIVAL, .src = (uint8_t)k, .sync = (uint8_t)s, .mask = mask};

    if (s >= HB_SCIC_NSYNC || flag != HB_SCIC_DB_ARRIVE) {
        if (s < HB_SCIC_NSYNC)
            hb_scim_complete_local(b, s, HB_SCIC_RES_BADCMD);
        return;
    }
    wr(b, HB_SCIC_B_FLAG(s), flag);
    if (k == 0) {
        hb_scim_center_arrival(m, 0, s, mask);
    } else if (rd(b, HB_SCIC_LOST)) {
        hb_scim_complete_local(b, s, HB_SCIC_RES_LOST);
    } else if (hb_scim_push(&m->up[k].txq, p) < 0) {
        inc(b, HB_SCIC_RX_OVERRUN);
    }
}

/* Send STOP/START for direction d as its receiver (board k) sees its buffer. */
static int hb_scim_flow(hb_scim_board_t *rcv, hb_scim_dir_t *d)
{
    hb_scim_pkt_t c = {0};
    if (!d->stopped && d->rx.count >= HB_SCIM_HIGH) {
        c.type = HB_PKT_STOP;
        if (hb_scim_push(&d->ctl, c) == 0) {
            d->stopped = 1;
            inc(rcv, HB_SCIC_STOPS_SENT);
            inc(rcv, HB_SCIC_TX_PKTS);
        }
        return 1;
    }
    if (d->stopped && d->rx.count <= HB_SCIM_LOW) {
        c.type = HB_PKT_START;
        if (hb_scim_push(&d->ctl, c) == 0) {
            d->stopped = 0;
            inc(rcv, HB_SCIC_STARTS_SENT);
            inc(rcv, HB_SCIC_TX_PKTS);
        }
        return 1;
    }
    return 0;
}

/* Sender side of direction d: obey STOP/START, then put one packet on the wire. */
static int hb_scim_send(hb_scim_board_t *snd, hb_scim_board_t *rcv, hb_scim_dir_t *d)
{
    hb_scim_pkt_t p;
    int work = 0;
    while (hb_scim_pop(&d->ctl, &p) == 0) {
        inc(snd, HB_SCIC_RX_PKTS);
        if (p.type == HB_PKT_STOP && !d->paused) {
            d->paused = 1;
            inc(snd, HB_SCIC_TX_PAUSES);
        } else if (p.type == HB_PKT_START) {
            d->paused = 0;
        }
        work = 1;
    }
    if (!d->paused && hb_scim_pop(&d->txq, &p) == 0) {
        inc(snd, HB_SCIC_TX_PKTS);
        if (rcv->dead) {
            /* on a cut cable the packet is lost */
        } else if (hb_scim_push(&d->rx, p) < 0) {
            inc(rcv, HB_SCIC_RX_OVERRUN);
        }
        work = 1;
    }
    return work;
}

static int hb_scim_step(hb_scic_model_t *m, uint32_t k, uint64_t now)
{
    hb_scim_board_t *b = &m->b[k];
    hb_scim_hooks_t *hk = &m->ctl->b[k];
    uint32_t slow = atomic_load_explicit(&hk->slow_us, memory_order_relaxed);
    int hold = atomic_load_explicit(&hk->hold, memory_order_relaxed), work = 0, paused = 0,
        stopped = 0;
    hb_scim_pkt_t p;
    uint64_t db;

    if (b->dead)
        return 0;
    if (atomic_load_explicit(&hk->lose, memory_order_relaxed)) {
        b->dead = 1;
        hb_scim_status(b, HB_SCIC_ST_LINK_UP, 0);
        return 1;
    }
    /* carrier */
    if (k == 0) {
        for (uint32_t q = 1; q < m->n; q++)
            if (m->b[q].dead && !(rd(b, HB_SCIC_LOST) & (1u << q))) {
                hb_scim_center_lost(m, q);
                work = 1;
            }
    } else if (m->b[0].dead && !rd(b, HB_SCIC_LOST)) {
        hb_scim_port_lost(b);
        work = 1;
    }
    /* transmit */
    if (k == 0) {
        for (uint32_t q = 1; q < m->n; q++)
            work |= hb_scim_send(b, &m->b[q], &m->down[q]);
    } else {
        work |= hb_scim_send(b, &m->b[0], &m->up[k]);
    }
    /* receive: one packet per step per link; a slowed board one per slow_us */
    for (uint32_t q = k == 0 ? 1 : k; q < (k == 0 ? m->n : k + 1); q++) {
        hb_scim_dir_t *d = k == 0 ? &m->up[q] : &m->down[k];
        if (!hold && now >= b->busy_until && hb_scim_pop(&d->rx, &p) == 0) {
            hb_scim_receive(m, k, &p);
            if (slow)
                b->busy_until = now + slow * 1000ull;
            work = 1;
        }
        work |= hb_scim_flow(b, d);
        stopped |= d->stopped;
    }
    /* doorbell */
    if (now >= b->busy_until && ((db = hb_scic_rd64(b->bar, HB_SCIC_DOORBELL)) & HB_SCIC_DB_GO)) {
        hb_scic_wr64(b->bar, HB_SCIC_DOORBELL, 0);
        hb_scim_doorbell(m, k, db);
        if (slow)
            b->busy_until = now + slow * 1000ull;
        work = 1;
    }
    if (k == 0) {
        for (uint32_t q = 1; q < m->n; q++)
            paused |= m->down[q].paused;
    } else {
        paused = m->up[k].paused;
    }
    hb_scim_status(b, HB_SCIC_ST_TX_PAUSED, paused);
    hb_scim_status(b, HB_SCIC_ST_RX_STOPPED, stopped);
    return work;
}

static void hb_scim_unlink(hb_scic_model_t *m)
{
    for (uint32_t k = 0; k < m->n; k++) {
        shm_unlink(m->b[k].bar_name);
        unlink(m->b[k].uio_path);
    }
}

/* The model process. */
static void hb_scim_run(hb_scic_model_t *m, pid_t parent)
{
    uint64_t now = hb_time_now_ns(), last_work = now, last_slow = now;
    for (;;) {
        int work = 0;
        for (uint32_t k = 0; k < m->n; k++)
            work |= hb_scim_step(m, k, now);
        now = hb_time_now_ns();
        if (work) {
            last_work = now;
            continue;
        }
        if (now - last_slow > 10000000ull) {
            last_slow = now;
            if (atomic_load(&m->ctl->stop) || getppid() != parent)
                break;
            for (uint32_t k = 0; k < m->n; k++) {
                wr(&m->b[k], HB_SCIC_HEARTBEAT, rd(&m->b[k], HB_SCIC_HEARTBEAT) + 1);
                if (m->b[k].conn < 0)
                    hb_scim_irq_drain(&m->b[k]);
            }
        }
        /* The chip has no CPU to save; the model follows the waiting rule. */
        if (now - last_work < 20000ull) {
            hb_wait_pause();
        } else if (now - last_work < 5000000ull) {
            sched_yield();
        } else {
            struct timespec ts = {0, now - last_work < 1000000000ull ? 100000 : 1000000};
            nanosleep(&ts, NULL);
        }
    }
    hb_scim_unlink(m);
}

int hb_scic_model_create(uint32_t boards, const char *tag, hb_scic_model_t **m_p)
{
    hb_scic_model_t *m;
    pid_t parent = getpid();
    int rc = HB_ERR_IO;

    if (boards < 1 || boards > HB_SCIM_MAX || tag == NULL || strlen(tag) > 40 || strlen(tag) == 0 ||
        strchr(tag, '/') != NULL)
        return HB_ERR_INVAL;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return HB_ERR_NOMEM;
    m->n = boards;
    m->ctl = mmap(NULL, sizeof(*m->ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m->ctl == MAP_FAILED) {
        hb_log_error("scic model: mmap: %m");
        free(m);
        return HB_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < boards; k++) {
        m->up[k].txq.cap = m->down[k].txq.cap = HB_SCIM_TXQ;
        m->up[k].rx.cap = m->down[k].rx.cap = HB_SCIC_MODEL_RXBUF;
        m->up[k].ctl.cap = m->down[k].ctl.cap = 4;
        m->b[k].lfd = m->b[k].conn = -1;
        m->b[k].bar = MAP_FAILED;
    }
    for (uint32_t k = 0; k < boards; k++) {
        hb_scim_board_t *b = &m->b[k];
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd;
        snprintf(b->bar_name, sizeof(b->bar_name), "/hibar-%u-scicm-%s-b%u", (unsigned)getuid(),
                 tag, k);
        snprintf(b->bar_path, sizeof(b->bar_path), "/dev/shm%s", b->bar_name);
        snprintf(b->uio_path, sizeof(b->uio_path), "/tmp/hibar-%u-scicm-%s-b%u.sock",
                 (unsigned)getuid(), tag, k);
        shm_unlink(b->bar_name); /* a stale one from a crashed run with the same tag */
        fd = shm_open(b->bar_name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0) {
            hb_log_error("scic model: shm_open %s: %m", b->bar_name);
            goto err_files;
        }
        if (ftruncate(fd, HB_SCIC_BAR_SIZE) < 0) {
            hb_log_error("scic model: ftruncate %s: %m", b->bar_name);
            close(fd);
            goto err_files;
        }
        b->bar = mmap(NULL, HB_SCIC_BAR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (b->bar == MAP_FAILED) {
            hb_log_error("scic model: mmap %s: %m", b->bar_name);
            goto err_files;
        }
        wr(b, HB_SCIC_ID, HB_SCIC_ID_VALUE);
        wr(b, HB_SCIC_CONFIG, k | boards << 8 | HB_SCIC_NSYNC << 16);
        wr(b, HB_SCIC_STATUS, HB_SCIC_ST_LINK_UP | (k == 0 ? HB_SCIC_ST_CENTER : 0));
        unlink(b->uio_path);
        strcpy(sa.sun_path, b->uio_path);
        b->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (b->lfd < 0 || bind(b->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            chmod(b->uio_path, 0600) < 0 || listen(b->lfd, 8) < 0) {
            hb_log_error("scic model: socket %s: %m", b->uio_path);
            goto err_files;
        }
    }
    m->pid = fork();
    if (m->pid < 0) {
        hb_log_error("scic model: fork: %m");
        goto err_files;
    }
    if (m->pid == 0) {
        hb_scim_run(m, parent);
        _exit(0);
    }
    for (uint32_t k = 0; k < boards; k++) {
        close(m->b[k].lfd);
        m->b[k].lfd = -1;
    }
    *m_p = m;
    return 0;
err_files:
    for (uint32_t k = 0; k < boards; k++) {
        if (m->b[k].lfd >= 0)
            close(m->b[k].lfd);
        if (m->b[k].bar != MAP_FAILED)
            munmap((void *)m->b[k].bar, HB_SCIC_BAR_SIZE);
    }
    hb_scim_unlink(m);
    munmap(m->ctl, sizeof(*m->ctl));
    free(m);
    return rc;
}

void hb_scic_model_destroy(hb_scic_model_t *m)
{
    int st;
    if (m == NULL)
        return;
    atomic_store(&m->ctl->stop, 1);
    while (waitpid(m->pid, &st, 0) < 0 && errno == EINTR)
        ;
    hb_scim_unlink(m);
    for (uint32_t k = 0; k < m->n; k++)
        munmap((void *)m->b[k].bar, HB_SCIC_BAR_SIZE);
    munmap(m->ctl, sizeof(*m->ctl));
    free(m);
}

const char *hb_scic_model_bar_path(const hb_scic_model_t *m, uint32_t board)
{
    return board < m->n ? m->b[board].bar_path : NULL;
}

const char *hb_scic_model_uio_path(const hb_scic_model_t *m, uint32_t board)
{
    return board < m->n ? m->b[board].uio_path : NULL;
}

void hb_scic_model_lose_board(hb_scic_model_t *m, uint32_t board)
{
    if (board < m->n)
        atomic_store(&m->ctl->b[board].lose, 1);
}

void hb_scic_model_slow_board(hb_scic_model_t *m, uint32_t board, uint32_t us)
{
    if (board < m->n)
        atomic_store(&m->ctl->b[board].slow_us, us);
}

void hb_scic_model_hold_rx(hb_scic_model_t *m, uint32_t board, int hold)
{
    if (board < m->n)
        atomic_store(&m->ctl->b[board].hold, hold);
}

int hb_scic_model_stats(const hb_scic_model_t *m, uint32_t board, hb_scic_model_stats_t *st_p)
{
    volatile void *bar;
    if (board >= m->n || st_p == NULL)
        return HB_ERR_INVAL;
    bar = m->b[board].bar;
    st_p->tx_pkts = hb_scic_rd32(bar, HB_SCIC_TX_PKTS);
    st_p->rx_pkts = hb_scic_rd32(bar, HB_SCIC_RX_PKTS);
    st_p->stops_sent = hb_scic_rd32(bar, HB_SCIC_STOPS_SENT);
    st_p->starts_sent = hb_scic_rd32(bar, HB_SCIC_STARTS_SENT);
    st_p->rx_overrun = hb_scic_rd32(bar, HB_SCIC_RX_OVERRUN);
    st_p->tx_pauses = hb_scic_rd32(bar, HB_SCIC_TX_PAUSES);
    st_p->irqs = hb_scic_rd32(bar, HB_SCIC_IRQ_COUNT);
    return 0;
}
