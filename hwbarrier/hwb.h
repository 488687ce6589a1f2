/* hwb.h: the chassis barrier: one ops table, backends (scic, shm) chosen by priority. */
#ifndef HB_HWB_H
#define HB_HWB_H

#include <stddef.h>
#include <stdint.h>

/*
 * A chassis barrier joins the nodes of one chassis (1 to HB_HWB_MAX_NODES). Node i is bit i of
 * a participation mask; node 0 is the Center. Every node opens its own endpoint,
 * independently and in any order; then, for a sync number s (0..HB_HWB_NSYNC-1):
 *
 *   hb_hwb_arrive(h, s, mask)   non-blocking; mask names every participant, itself included
 *   hb_hwb_test(h, s)           0 = complete, HB_ERR_WOULD_BLOCK = not yet, or an error
 *   hb_hwb_wait(h, s, ms)       blocks per the waiting rule (doc/design.md section 6.1)
 *   hb_hwb_fd(h, &fd), _fd_arm  an fd for an event loop, for several rounds in flight at once
 *
 * Several sync numbers may be in flight at once. A sync number is reusable as soon as this
 * node has seen its completion (test/wait returned 0 or a round error). All participants of
 * one round must pass the same mask: if they do not, every one of them gets
 * HB_ERR_MISMATCH (from test/wait). A participant that dies makes the others of its
 * rounds fail with HB_ERR_PEER_LOST (shm: its process died or closed; scic: its board or
 * cable was lost — a dead process on a live board is only seen as a timeout); one that never
 * arrives makes them time out (HB_ERR_TIMEOUT, which leaves the arrival pending: wait
 * again or close). A handle is used by one thread at a time.
 */

#define HB_HWB_MAX_NODES 32
#define HB_HWB_NSYNC 16 /* sync numbers per chassis (the chip's B-Flag count) */
#define HB_HWB_NAME_MAX 32

/* What a node passes to open its endpoint. */
typedef struct hb_hwb_params {
    const char *cluster; /* cluster name: 1..32 of [A-Za-z0-9_.-]; names the shm segment */
    uint32_t chassis;    /* chassis index in the cluster */
    uint32_t port;       /* this node's index in the chassis; 0 = Center */
    uint32_t nodes;      /* nodes in the chassis, 1..HB_HWB_MAX_NODES */
    /* open: how long to wait for the chassis (0 = 10000). shm: the Center creates the segment;
     * ports that start first wait up to this long for it, so nodes start in any order. */
    uint32_t timeout_ms;
    /* scic only (NULL/0 = defaults): */
    const char *uio_path;   /* UIO device (registers map 0 + interrupt fd); NULL = find by ids */
    const char *bar_path;   /* file to mmap as BAR0 instead of uio_path (device model, tests) */
    const char *sysfs_root; /* root of /sys/class/uio lookups (tests); NULL = "/sys" */
    uint16_t pci_vendor;    /* 0 = HB_HWB_SCIC_VENDOR */
    uint16_t pci_device;    /* 0 = HB_HWB_SCIC_DEVICE */
} hb_hwb_params_t;

typedef struct hb_hwb hb_hwb_t; /* one node's open endpoint; starts with its ops pointer */

/* The backend interface. Every function returns 0 or a negative HB_ERR_*. */
typedef struct hb_hwb_ops {
    int (*open)(const hb_hwb_params_t *params, hb_hwb_t **h_p);
    int (*arrive)(hb_hwb_t *h, uint32_t sync_no, uint32_t mask);
    int (*test)(hb_hwb_t *h, uint32_t sync_no);
    /* wait for the first of the rounds in syncs (bit s = sync s) to end; collects it */
    int (*wait)(hb_hwb_t *h, uint32_t syncs, int timeout_ms, uint32_t *sync_p);
    int (*fd)(hb_hwb_t *h, int *fd_p);
    int (*fd_arm)(hb_hwb_t *h, int armed);
    void (*close)(hb_hwb_t *h);
    int (*abandon)(hb_hwb_t *h); /* NULL: the backend cannot (hb_hwb_abandon) */
} hb_hwb_ops_t;

/* A backend: query says whether it can work here (0) or why not (negative, reason in why). */
typedef struct hb_hwb_component {
    const char *name;
    int priority; /* higher is preferred by "auto" */
    int (*query)(const hb_hwb_params_t *params, char *why, size_t whylen);
    const hb_hwb_ops_t *ops;
} hb_hwb_component_t;

struct hb_hwb {
    const hb_hwb_ops_t *ops;
    const hb_hwb_component_t *comp;
};

/* One line of hb_hwb_list(). */
typedef struct hb_hwb_info {
    char name[HB_HWB_NAME_MAX];
    int priority;
    int available; /* 1 if query succeeded */
    char why[160]; /* reason when not available, else a short description */
} hb_hwb_info_t;

/*
 * Open this node's endpoint. backend: "auto" or NULL (HIBAR_HWBARRIER if set, else the
 * highest-priority backend whose query and open succeed) or a backend name (only that one).
 * Blocks at most params->timeout_ms waiting for the chassis (shm: the Center's segment).
 * Errors: INVAL (bad params), NOT_FOUND (no such backend), UNAVAIL (none usable; logged with
 * each backend's reason), EXISTS (this port is already open elsewhere), TIMEOUT, IO, NOMEM.
 */
int hb_hwb_open(const char *backend, const hb_hwb_params_t *params, hb_hwb_t **h_p);
void hb_hwb_close(hb_hwb_t *h);
const char *hb_hwb_name(const hb_hwb_t *h);

/* Arrive at sync_no with participation mask (must contain this node). Never blocks.
 * INVAL (bad sync_no or mask), BUSY (this node already arrived at sync_no, not complete). */
int hb_hwb_arrive(hb_hwb_t *h, uint32_t sync_no, uint32_t mask);
/* 0 when the round this node arrived at is complete (the sync number is then free again),
 * WOULD_BLOCK if not yet, MISMATCH / PEER_LOST for a failed round, INVAL if not arrived. */
int hb_hwb_test(hb_hwb_t *h, uint32_t sync_no);
/* Like test, but waits up to timeout_ms (< 0: forever) following the waiting rule. */
int hb_hwb_wait(hb_hwb_t *h, uint32_t sync_no, int timeout_ms);
/* arrive + wait. */
int hb_hwb_barrier(hb_hwb_t *h, uint32_t sync_no, uint32_t mask, int timeout_ms);
/*
 * A file descriptor for an event loop (poll for POLLIN), owned by the handle; the way to wait
 * for several rounds in flight at once. It is the sleep stage of the waiting rule: before the
 * loop sleeps with rounds pending it calls hb_hwb_fd_arm(h, 1), then hb_hwb_test() on every
 * pending sync number (one may have ended meanwhile), then sleeps; the fd becomes readable
 * once one of the pending rounds has ended (or failed), and stays readable until the next
 * hb_hwb_fd_arm(). On readable: hb_hwb_fd_arm (which clears it; 0 to disarm if the loop does
 * not sleep next), test every pending round. hb_hwb_test() never clears the fd. Wake-ups may
 * be spurious. A loop that wants the spin and yield stages tests its rounds meanwhile and
 * arms only when it goes to sleep, so nothing wakes on its behalf before. Do not also sleep in
 * hb_hwb_wait() on a handle whose fd a loop watches (scic: the wait consumes the interrupt).
 * scic: the board's interrupt. shm: an epoll fd (a UNIX datagram socket, bound beside the
 * segment, that whoever ends one of the node's rounds writes to only while the node is
 * armed, and a liveness timer ticking every sleep slice, 100 ms, only while armed). Errors:
 * IO.
 */
int hb_hwb_fd(hb_hwb_t *h, int *fd_p);
/* Clear the fd's readability and arm (armed != 0) or disarm it (see hb_hwb_fd). Arming with
 * nothing pending does nothing more than clear. Never blocks. 0, INVAL (no fd yet), IO. */
int hb_hwb_fd_arm(hb_hwb_t *h, int armed);
/* This node's process goes on as a new incarnation of the node (it was stopped or cut off and
 * taken for lost; its jobs have ended): every round in progress that names it ends now with
 * PEER_LOST for each participant that arrived, itself included (collected by test/wait as
 * usual), so its mates' sync numbers and its own are clean at once rather than at their
 * jobs' barrier timeout. 0, or UNAVAIL where the backend cannot (scic: the board's rounds are
 * the board's; they end by their timeout as before). */
int hb_hwb_abandon(hb_hwb_t *h);

/*
 * shm backend: remove what dead processes left in /dev/shm, whatever their cluster: every
 * segment of this uid (hibar-UID-CLUSTER-cN, with the segment's magic) in which no process
 * holds any port's liveness lock, and every node's socket (...-cN-pP) that nobody has bound
 * any more (connect(2) is refused). The kernel drops those locks and bindings with their
 * process, so what is removed is proven dead. Each removal is logged (warning); returns how
 * many entries went. For a daemon's start, before it opens its own endpoint.
 */
int hb_hwb_shm_reclaim(void);

/* Every backend with its priority and availability here (for hibar-info). params may be
 * NULL (defaults). Fills at most max entries; *n_p = number of backends. */
int hb_hwb_list(const hb_hwb_params_t *params, hb_hwb_info_t *info, size_t max, size_t *n_p);

/* Validate params (shared by backends). 0 or HB_ERR_INVAL with the reason logged. */
int hb_hwb_params_check(const hb_hwb_params_t *params);

/* The SCIC board's PCI ids (doc/scic-registers.md). */
#define HB_HWB_SCIC_VENDOR 0x1b5c
#define HB_HWB_SCIC_DEVICE 0x5c1c

extern const hb_hwb_component_t hb_hwb_shm_component;
extern const hb_hwb_component_t hb_hwb_scic_component;

#endif
