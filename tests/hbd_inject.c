/* hbd_inject.c: test helper: sends malformed frames (or tries without the key) to a live hibard. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "cfg.h"
#include "hbd_key.h"
#include "wire.h"
#include "hibar.h"
#include "wire.h"

/*
 * usage: hbd_inject --config FILE [-o KEY=VALUE]... --target NODE --mode bad|nokey
 *   bad    connect with the cluster key under routing ids that are not neighbours of the
 *          target and send garbage, truncated, oversized and malformed frames and frames
 *          from an unknown node; print "sent <frames> expect_bad <n> expect_parts <m>"
 *   nokey  connect with a key pair that is not the cluster's and send valid-looking frames;
 *          print "sent <frames>" (the daemon must refuse the connection: auth_denied grows,
 *          no frame is counted)
 *   job    (with --as NODE, a neighbour of the target that is not running) connect as that node
 *          and send malformed JOB frames (launch forwarding) and well-formed ones for no job;
 *          print "sent <frames> expect_bad <n> expect_drop <m>" (relay_drop in stats)
 *   inc    (with --as NODE, as for job) say HELLO as that node with an incarnation, then send
 *          a frame of another incarnation and a HELLO of an older one, then a frame of the
 *          right one; print "sent <frames> expect_inc <n>" (bad_inc must grow by n, nothing else)
 *   data   (cluster with data_plane plain) connect to the target's plain data socket as a
 *          neighbour (--as NODE) with a wrong token, then with none, and send COLL frames;
 *          print "sent <frames> tries <n>" (the daemon must refuse: data_denied grows by at
 *          least one per try, data_rx does not move)
 * Exit 0 when everything was handed to ZeroMQ, 1 otherwise, 2 for usage errors.
 */

static int sendf(void *s, const void *buf, size_t len, int more)
{
    return zmq_send(s, buf, len, more ? ZMQ_SNDMORE : 0) == (int)len ? 0 : -1;
}

static int frame(uint8_t *buf, uint8_t type, uint32_t src, uint32_t inc, uint32_t len)
{
    uint8_t pl[HBD_WIRE_MAX_PAYLOAD] = {1, 0, 0, 0};
    hbd_wire_msg_t m = {
        .type = type, .coll_id = 0, .inc = inc, .src = src, .len = len, .payload = pl};
    return hbd_wire_encode(&m, buf, HBD_WIRE_MAX_FRAME);
}

/* A JOB frame from node src to dest (job id 42) with dlen bytes of data. */
static int job_frame(uint8_t *buf, size_t cap, uint32_t src, const hbd_wire_job_t *x,
                     const char *data, uint32_t dlen)
{
    static uint8_t pl[HBD_WIRE_JOB_MAX_PAYLOAD + 16];
    hbd_wire_job_pack(x, pl);
    memcpy(pl + HBD_WIRE_JOB_HDR, data, dlen);
    hbd_wire_msg_t m = {.type = HBD_WIRE_JOB,
                        .coll_id = 42,
                        .inc = 1,
                        .src = src,
                        .len = HBD_WIRE_JOB_HDR + dlen,
                        .payload = pl};
    int n = hbd_wire_encode(&m, buf, cap);
    if (n < 0) { /* beyond what encode allows: the header by hand */
        m.len = HBD_WIRE_JOB_HDR;
        n = hbd_wire_encode(&m, buf, cap);
        if (n < 0 || (size_t)n + dlen > cap)
            return -1;
        hbd_wire_put32(buf + 28, HBD_WIRE_JOB_HDR + dlen);
        memcpy(buf + HBD_WIRE_HDR_LEN + HBD_WIRE_JOB_HDR, data, dlen);
        n += (int)dlen;
    }
    return n;
}

/* --mode job: malformed JOB frames (counted bad) and well-formed ones for no job (relay_drop). */
static int inject_job(void *s, uint32_t as, uint32_t target, unsigned *sent, unsigned *bad,
                      unsigned *dropped)
{
    static uint8_t buf[HBD_WIRE_HDR_LEN + HBD_WIRE_JOB_MAX_PAYLOAD + 64];
    static char data[HBD_WIRE_JOB_MAX_DATA + 8];
    int rc = 0, n;
    memset(data, 'a', sizeof(data));
    struct {
        hbd_wire_job_t x;
        const char *data;
        uint32_t dlen;
        int drop; /* 0: refused by the decoder; 1: well formed, fits no job */
    } f[] = {
        {{.kind = HBD_WIRE_JOB_KIND_MAX + 1, .src = as, .dest = target}, NULL, 0, 0}, /* unknown */
        {{.kind = HBD_WIRE_JOB_SPEC, .src = as, .dest = target, .arg = 100000}, data, 10, 0},
        {{.kind = HBD_WIRE_JOB_OUT, .src = as, .dest = target}, "x 0 0 ok", 8, 0}, /* no \n */
        {{.kind = HBD_WIRE_JOB_KILL, .src = as, .dest = target}, "z", 1, 0},       /* data */
        {{.kind = HBD_WIRE_JOB_FREE, .src = as, .dest = target, .arg = 0}, NULL, 0, 0},
        {{.kind = HBD_WIRE_JOB_END, .src = as, .dest = as}, NULL, 0, 0}, /* src = dest */
        {{.kind = HBD_WIRE_JOB_OUT, .src = as, .dest = target}, data, HBD_WIRE_JOB_MAX_DATA + 1, 0},
        {{.kind = HBD_WIRE_JOB_OUT, .src = as, .dest = target}, "x 0 0 ok\n", 9, 1},
        {{.kind = HBD_WIRE_JOB_END, .src = as, .dest = target, .arg = 0}, NULL, 0, 1},
        {{.kind = HBD_WIRE_JOB_SPEC,
          .src = as,
          .dest = target,
          .seq = 1,
          .arg = 40000,
          .flags = HBD_WIRE_JOB_F_LAST},
         data,
         40000 - HBD_WIRE_JOB_MAX_DATA,
         1}, /* a last chunk of a spec never begun */
        {{.kind = HBD_WIRE_JOB_SLOT,
          .src = as,
          .dest = target,
          .arg = (9ull << 32) | (4u << 8) | 1},
         NULL,
         0,
         1}, /* a slot for no job */
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        n = job_frame(buf, sizeof(buf), as, &f[i].x, f[i].data ? f[i].data : "", f[i].dlen);
        if (n < 0)
            return -1;
        rc |= sendf(s, buf, (size_t)n, 0);
        (*sent)++;
        *(f[i].drop ? dropped : bad) += 1;
    }
    return rc;
}

/* Incarnations (mode inc): frames as node `as`, which the target must take from the
 * incarnation of its last HELLO only. */
static int inject_inc(void *s, const hb_cfg_t *cfg, uint32_t as, unsigned *sent, unsigned *bad)
{
    uint8_t buf[HBD_WIRE_HDR_LEN + HBD_WIRE_HELLO_LEN], pl[HBD_WIRE_HELLO_LEN];
    const uint64_t inc = 0x18ebce0000000000ull + (uint64_t)time(NULL), older = inc - 1000;
    struct {
        uint8_t type;
        uint64_t hello_inc; /* HELLO: its incarnation; 0 for a HEARTBEAT */
        uint32_t hdr_inc;
        int bad;
    } f[] = {
        {HBD_WIRE_HELLO, inc, hbd_wire_inc32(inc), 0},
        {HBD_WIRE_HEARTBEAT, 0, hbd_wire_inc32(inc) ^ 6u, 1}, /* another incarnation's */
        {HBD_WIRE_HELLO, older, hbd_wire_inc32(older), 1},    /* an older one */
        {HBD_WIRE_HEARTBEAT, 0, hbd_wire_inc32(inc), 0},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        hbd_wire_hello_t h = {.n_nodes = cfg->n_nodes,
                              .cluster_tag = hbd_wire_tag(cfg->cluster),
                              .inc = f[i].hello_inc};
        hbd_wire_hello_pack(&h, pl);
        hbd_wire_msg_t m = {.type = f[i].type,
                            .inc = f[i].hdr_inc,
                            .src = as,
                            .len = f[i].type == HBD_WIRE_HELLO ? HBD_WIRE_HELLO_LEN : 0,
                            .payload = pl};
        int n = hbd_wire_encode(&m, buf, sizeof(buf));
        if (n < 0)
            return -1;
        rc |= sendf(s, buf, (size_t)n, 0);
        (*sent)++;
        *bad += (unsigned)f[i].bad;
        struct timespec ts = {0, 50000000}; /* in order, each after the last was taken */
        nanosleep(&ts, NULL);
    }
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, 'o'},
        {"target", required_argument, NULL, 't'}, {"mode", required_argument, NULL, 'm'},
        {"as", required_argument, NULL, 'a'},     {NULL, 0, NULL, 0}};
    const char *config = NULL, *target = NULL, *mode = "bad", *over[32], *as = NULL;
    size_t n_over = 0;
    int c;
    while ((c = getopt_long(argc, argv, "c:o:t:m:a:", opts, NULL)) != -1) {
        if (c == 'a')
            as = optarg;
        else if (c == 'c')
            config = optarg;
        else if (c == 'o' && n_over < 32)
            over[n_over++] = optarg;
        else if (c == 't')
            target = optarg;
        else if (c == 'm')
            mode = optarg;
        else
            return 2;
    }
    char err[HB_CFG_ERRLEN];
    hb_cfg_t *cfg;
    uint32_t tid;
    if (target == NULL || hb_cfg_load(config, over, n_over, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "hbd_inject: %s\n", target == NULL ? "--target missing" : err);
        return 2;
    }
    if (hb_cfg_node_find(cfg, target, &tid) != 0) {
        fprintf(stderr, "hbd_inject: unknown node %s\n", target);
        return 2;
    }
    char path[600], ep[256] = "", keyp[600];
    snprintf(path, sizeof(path), "%s/%s.port", cfg->run_dir, target);
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(ep, sizeof(ep), f) == NULL) {
        fprintf(stderr, "hbd_inject: cannot read %s\n", path);
        if (f != NULL)
            fclose(f);
        return 1;
    }
    char line2[64] = "";
    if (fgets(line2, sizeof(line2), f) == NULL)
        line2[0] = '\0';
    fclose(f);
    ep[strcspn(ep, "\r\n")] = '\0';
    if (cfg->key_file)
        snprintf(keyp, sizeof(keyp), "%s", cfg->key_file);
    else
        snprintf(keyp, sizeof(keyp), "%s/cluster.key", cfg->run_dir);
    uint8_t pub[32], sec[32];
    char pubz[41];
    if (hbd_key_load(keyp, pub, sec, pubz) != 0)
        return 1;

    void *ctx = zmq_ctx_new();
    int linger = 3000, rc = 0;
    unsigned sent = 0, expect_bad = 0, expect_parts = 0;
    uint8_t buf[4 * HBD_WIRE_MAX_FRAME];
    srand((unsigned)time(NULL));

    if (strcmp(mode, "data") == 0) {
        unsigned dport = 0, tries = 0;
        char dep[300], rid[16];
        uint32_t aid;
        if (sscanf(line2, "data %u", &dport) != 1 || dport == 0 || dport > 65535) {
            fprintf(stderr, "hbd_inject: %s names no data port (data_plane plain?)\n", path);
            return 1;
        }
        if (as == NULL || hb_cfg_node_find(cfg, as, &aid) != 0 || aid == tid) {
            fprintf(stderr, "hbd_inject: --mode data needs --as NODE (not the target)\n");
            return 2;
        }
        snprintf(rid, sizeof(rid), "n%u", aid);
        const char *colon = strrchr(ep, ':');
        snprintf(dep, sizeof(dep), "%.*s:%u", (int)(colon - ep), ep, dport);
        for (int k = 0; k < 2; k++) {
            void *s = zmq_socket(ctx, ZMQ_DEALER);
            int zero = 0;
            zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
            zmq_setsockopt(s, ZMQ_ROUTING_ID, rid, strlen(rid));
            if (k == 0) { /* the right user name, a token that is not the one it was given */
                zmq_setsockopt(s, ZMQ_PLAIN_USERNAME, rid, strlen(rid));
                zmq_setsockopt(s, ZMQ_PLAIN_PASSWORD, "00112233445566778899aabbccddeeff", 32);
            } else { /* a user name that is no node, no token */
                zmq_setsockopt(s, ZMQ_PLAIN_USERNAME, "intruder", 8);
                zmq_setsockopt(s, ZMQ_PLAIN_PASSWORD, "", 0);
            }
            if (zmq_connect(s, dep) != 0) {
                fprintf(stderr, "hbd_inject: connect %s: %s\n", dep, zmq_strerror(errno));
                return 1;
            }
            tries++;
            uint8_t pl[HBD_WIRE_COLL_HDR + 64];
            memset(pl, 0, sizeof(pl));
            hbd_wire_msg_t m = {.type = HBD_WIRE_COLL,
                                .coll_id = 1,
                                .inc = 1,
                                .src = aid,
                                .len = sizeof(pl),
                                .payload = pl};
            int n = hbd_wire_encode(&m, buf, sizeof(buf));
            for (int i = 0; i < 5 && n > 0; i++, sent++)
                zmq_send(s, buf, (size_t)n, ZMQ_DONTWAIT); /* dropped by ZeroMQ: no handshake */
            struct timespec ts = {0, 300000000};
            nanosleep(&ts, NULL); /* let the handshake (and its refusal) happen */
            zmq_close(s);
        }
        zmq_ctx_term(ctx);
        printf("sent %u tries %u\n", sent, tries);
        hb_cfg_free(cfg);
        return 0;
    }
    if (strcmp(mode, "job") == 0 || strcmp(mode, "inc") == 0) {
        uint32_t aid;
        char rid[16];
        unsigned dropped = 0;
        if (as == NULL || hb_cfg_node_find(cfg, as, &aid) != 0 || aid == tid) {
            fprintf(stderr, "hbd_inject: --mode %s needs --as NODE (not the target)\n", mode);
            return 2;
        }
        snprintf(rid, sizeof(rid), "n%u", aid);
        void *s = zmq_socket(ctx, ZMQ_DEALER);
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
        zmq_setsockopt(s, ZMQ_ROUTING_ID, rid, strlen(rid));
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, pub, 32);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 32);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 32);
        int inc = strcmp(mode, "inc") == 0;
        if (zmq_connect(s, ep) != 0 ||
            (inc ? inject_inc(s, cfg, aid, &sent, &expect_bad)
                 : inject_job(s, aid, tid, &sent, &expect_bad, &dropped)) != 0)
            rc = 1;
        zmq_close(s);
        zmq_ctx_term(ctx);
        if (inc)
            printf("sent %u expect_inc %u\n", sent, expect_bad);
        else
            printf("sent %u expect_bad %u expect_drop %u\n", sent, expect_bad, dropped);
        hb_cfg_free(cfg);
        return rc;
    }
    /* one connection per claimed routing id; none of them is a neighbour of the target */
    const char *ids[] = {"zz-intruder", "n999", "n0x"};
    char nonneigh[16];
    snprintf(nonneigh, sizeof(nonneigh), "n%u", tid == cfg->n_nodes - 1 ? 0u : cfg->n_nodes - 1);
    for (size_t k = 0; k < (strcmp(mode, "nokey") == 0 ? 1 : 4); k++) {
        const char *id = k < 3 ? ids[k] : nonneigh;
        void *s = zmq_socket(ctx, ZMQ_DEALER);
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
        zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id));
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, pub, 32);
        if (strcmp(mode, "nokey") == 0) {
            char zp[41], zs[41];
            zmq_curve_keypair(zp, zs);
            zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, zp, 40);
            zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, zs, 40);
        } else {
            zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 32);
            zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 32);
        }
        if (zmq_connect(s, ep) != 0) {
            fprintf(stderr, "hbd_inject: connect %s: %s\n", ep, zmq_strerror(errno));
            return 1;
        }
        if (strcmp(mode, "nokey") == 0) {
            for (int i = 0; i < 5; i++) {
                int n = frame(buf, HBD_WIRE_HEARTBEAT, 1, 1, 0);
                rc |= sendf(s, buf, (size_t)n, 0);
                sent++;
            }
            zmq_close(s);
            continue;
        }
        /* garbage of random length */
        for (int i = 0; i < 10; i++) {
            size_t len = 1 + (size_t)(rand() % 200);
            for (size_t j = 0; j < len; j++)
                buf[j] = (uint8_t)rand();
            buf[0] = 'X'; /* never a valid magic */
            rc |= sendf(s, buf, len, 0);
            sent++, expect_bad++;
        }
        /* truncated headers and truncated payloads */
        int n = frame(buf, HBD_WIRE_HIER, 0, 1, 16);
        for (int i = 0; i < 10; i++) {
            rc |= sendf(s, buf, (size_t)(i < 5 ? 4 + i * 5 : n - 1 - i), 0);
            sent++, expect_bad++;
        }
        /* oversized: a header claiming more than the limit, and a frame carrying it */
        memset(buf, 0xab, sizeof(buf));
        n = frame(buf, HBD_WIRE_HIER, 0, 1, 16);
        hbd_wire_put32(buf + 28, 3000);
        rc |= sendf(s, buf, HBD_WIRE_HDR_LEN + 3000, 0);
        rc |= sendf(s, buf, sizeof(buf), 0);
        sent += 2, expect_bad += 2;
        /* wrong version, type, flags, incarnation (0), job */
        n = frame(buf, HBD_WIRE_HIER, 0, 1, 4);
        const int offs[] = {4, 5, 7, 20, 8};
        const uint8_t vals[] = {9, 77, 0x40, 0, 3};
        for (int i = 0; i < 5; i++) {
            uint8_t b2[HBD_WIRE_MAX_FRAME];
            memcpy(b2, buf, (size_t)n);
            b2[offs[i]] = vals[i];
            if (offs[i] == 20)
                memset(b2 + 20, 0, 4);
            rc |= sendf(s, b2, (size_t)n, 0);
            sent++, expect_bad++;
        }
        /* well-formed frames from an unknown node and from a node that is not this peer */
        n = frame(buf, HBD_WIRE_HIER, 999, 1, 4);
        rc |= sendf(s, buf, (size_t)n, 0);
        n = frame(buf, HBD_WIRE_ABORT, 0, 1, HBD_WIRE_ABORT_LEN);
        hbd_wire_put32(buf + 32, (uint32_t)HIBAR_ERR_PEER_LOST);
        rc |= sendf(s, buf, (size_t)n, 0); /* a forged abort: must not fail the cluster */
        n = frame(buf, HBD_WIRE_HELLO, 0, 1, HBD_WIRE_HELLO_LEN);
        rc |= sendf(s, buf, (size_t)n, 0);
        sent += 3, expect_bad += 3;
        /* multipart messages and an empty one */
        n = frame(buf, HBD_WIRE_HEARTBEAT, 0, 1, 0);
        rc |= sendf(s, buf, (size_t)n, 1);
        rc |= sendf(s, buf, (size_t)n, 0);
        rc |= sendf(s, "", 0, 0);
        sent += 2, expect_parts += 1, expect_bad += 1;
        zmq_close(s);
    }
    zmq_ctx_term(ctx);
    printf("sent %u expect_bad %u expect_parts %u\n", sent, expect_bad + expect_parts,
           expect_parts);
    hb_cfg_free(cfg);
    return rc ? 1 : 0;
}
