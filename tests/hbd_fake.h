/* hbd_fake.h: a fake transport, clock, cron and chassis barrier for driving hibard's engines. */
#ifndef HBD_FAKE_H
#define HBD_FAKE_H

#include <stdint.h>

#include "cfg.h"
#include "hbd.h"
#include "topo.h"

/*
 * n daemons in one process, each an hbd_t with its own engines, linked through a queue of
 * encoded frames instead of ZeroMQ (tests/test_hbd_engines.c links the engines' sources with
 * this file instead of net/hbd_net.c, net/hbd_cron.c and core/hbd_timer.c). Frames keep their
 * order per link and go through hbd_wire_decode and the transport's receive table as on a real
 * daemon; links are taken in a seeded random order. Time is fake: clock_gettime
 * (CLOCK_MONOTONIC) of the engines is fk_now (the binary links with --wrap=clock_gettime);
 * timers and the cron's work run when the test moves the clock (fk_advance).
 */
#define FK_MAX 32

typedef struct fk_frame {
    uint32_t from, to;
    uint8_t *buf;
    size_t len;
    struct fk_frame *next;
} fk_frame_t;

typedef struct fk_cluster {
    uint32_t n;
    hb_topo_t *topo;
    hb_cfg_t cfg;
    hbd_t d[FK_MAX];
    int dead[FK_MAX]; /* crashed: sends nothing, receives nothing */
    fk_frame_t *q, **q_tail;
    uint32_t q_len;
    uint64_t sent, delivered, dropped;
    int dup_every; /* deliver every k-th frame twice (0: never) */
    int links_down; /* frames of a job (header job != 0) find their link not up yet:
                     * hbd_net_send_job returns WOULD_BLOCK, nothing is sent */
} fk_cluster_t;

/* Fake CLOCK_MONOTONIC, ns. */
extern uint64_t fk_now;

/* n_chassis chassis of `size` nodes, chassis tree of `fanout`; every engine of every node
 * initialised (barrier, fence, coll), every node ready. 0 or -1. */
int fk_cluster_init(fk_cluster_t *c, uint32_t n_chassis, uint32_t size, uint32_t fanout,
                    uint32_t barrier_timeout_ms, uint64_t seed);
void fk_cluster_fini(fk_cluster_t *c);
/* Deliver one frame (a random link's oldest): 1, or 0 when none is queued. */
int fk_step(fk_cluster_t *c);
/* Deliver until nothing is queued (at most max frames): frames delivered. */
uint32_t fk_run(fk_cluster_t *c, uint32_t max);
/* Node `node` crashes: its queued frames and everything sent to it later are dropped. */
void fk_kill(fk_cluster_t *c, uint32_t node);
/* Every live node learns that `node` is lost (heartbeat timeout, ABORT flood). */
void fk_lose(fk_cluster_t *c, uint32_t node);
/* Move the fake clock by ns: expired timers fire, and every live node's cron runs. */
void fk_advance(fk_cluster_t *c, uint64_t ns);

/* ---- a fake PMIx server per node, for the dmodex engine ---- */
/* The job every node runs: n_ranks ranks, rank r on node r % n (namespace FK_NSPACE). */
#define FK_NSPACE "hibar.1"
void fk_job_add(fk_cluster_t *c, uint32_t n_ranks);
/* Rank `rank` has committed the required key (the fake PMIx_Get_nb finds it from now on). */
void fk_key_commit(uint32_t rank);
/* The node whose engine runs now (the fake PMIx's answers go to its loop). */
void fk_on(fk_cluster_t *c, uint32_t node);
/* A rank's modex blob as the fake PMIx server gives it: "blob <rank>". */
size_t fk_blob(uint32_t rank, char *buf, size_t cap);

#endif
