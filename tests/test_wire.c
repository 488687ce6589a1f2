/* test_wire.c: CUnit tests of the daemon wire format: round trips and every refusal reason. */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hibar.h"
#include "wire.h"
#include "hb_hash.h"
#include "hb_test.h"
#include "hbd_step.h"

static const hbd_wire_ctx_t ctx = {.n_nodes = 30, .job_max = 0, .peer = 7};

static int mk(uint8_t *buf, size_t cap, uint8_t type, uint32_t len, const uint8_t *payload)
{
    hbd_wire_msg_t m = {.type = type,
                        .flags = 0,
                        .job = 0,
                        .coll_id = 0x0123456789abcdefull,
                        .inc = 3,
                        .src = 7,
                        .len = len,
                        .payload = payload};
    return hbd_wire_encode(&m, buf, cap);
}

static void test_roundtrip(void)
{
    uint8_t buf[HBD_WIRE_MAX_FRAME], pl[HBD_WIRE_MAX_PAYLOAD];
    hbd_wire_msg_t d;
    hbd_wire_reason_t why = HBD_WIRE_N_REASONS;
    for (size_t i = 0; i < sizeof(pl); i++)
        pl[i] = (uint8_t)(i * 7);
    int n = mk(buf, sizeof(buf), HBD_WIRE_HIER, HBD_WIRE_MAX_PAYLOAD, pl);
    CU_ASSERT_EQUAL(n, HBD_WIRE_MAX_FRAME);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, &why), 0);
    CU_ASSERT_EQUAL(why, HBD_WIRE_OK);
    CU_ASSERT_EQUAL(d.type, HBD_WIRE_HIER);
    CU_ASSERT_EQUAL(d.coll_id, 0x0123456789abcdefull);
    CU_ASSERT_EQUAL(d.inc, 3);
    CU_ASSERT_EQUAL(d.src, 7);
    CU_ASSERT_EQUAL(d.len, HBD_WIRE_MAX_PAYLOAD);
    CU_ASSERT(d.payload == buf + HBD_WIRE_HDR_LEN);
    CU_ASSERT_EQUAL(memcmp(d.payload, pl, sizeof(pl)), 0);
    /* byte order is fixed: little-endian magic and coll id */
    CU_ASSERT_EQUAL(memcmp(buf, "HBAR", 4), 0);
    CU_ASSERT_EQUAL(buf[12], 0xef);
    CU_ASSERT_EQUAL(buf[19], 0x01);

    n = mk(buf, sizeof(buf), HBD_WIRE_HEARTBEAT, 0, NULL);
    CU_ASSERT_EQUAL(n, HBD_WIRE_HDR_LEN);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, NULL), 0);
    CU_ASSERT_PTR_NULL(d.payload);

    hbd_wire_hello_t h = {.n_nodes = 30,
                          .cluster_tag = hbd_wire_tag("scmd-30"),
                          .data_port = 40123,
                          .data_token = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                          .inc = 0x18ebccfd08855906ull,
                          .you_lost = 0x18ebccfd0a27d6f5ull,
                          .n_lost = 2},
                     h2;
    uint8_t hp[HBD_WIRE_HELLO_LEN];
    hbd_wire_hello_pack(&h, hp);
    n = mk(buf, sizeof(buf), HBD_WIRE_HELLO, HBD_WIRE_HELLO_LEN, hp);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, NULL), 0);
    hbd_wire_hello_unpack(d.payload, &h2);
    CU_ASSERT_EQUAL(h2.n_nodes, 30);
    CU_ASSERT_EQUAL(h2.cluster_tag, h.cluster_tag);
    CU_ASSERT_EQUAL(h2.data_port, 40123);
    CU_ASSERT_EQUAL(memcmp(h2.data_token, h.data_token, HBD_WIRE_TOKEN_LEN), 0);
    CU_ASSERT_EQUAL(h2.inc, h.inc);
    CU_ASSERT_EQUAL(h2.you_lost, h.you_lost);
    CU_ASSERT_EQUAL(h2.n_lost, 2);
    CU_ASSERT_EQUAL(hbd_wire_inc32(h.inc), (uint32_t)(h.inc ^ (h.inc >> 32)) | 1u);
    hbd_wire_put32(buf + HBD_WIRE_HDR_LEN + 32, 0); /* incarnation 0 */
    hbd_wire_put32(buf + HBD_WIRE_HDR_LEN + 36, 0);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, NULL), HIBAR_ERR_PROTO);
    hbd_wire_put32(buf + 28, 8); /* the old 8-byte HELLO */
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, HBD_WIRE_HDR_LEN + 8, &ctx, &d, NULL), HIBAR_ERR_PROTO);

    hbd_wire_abort_t a = {.status = HIBAR_ERR_PEER_LOST, .lost = 4, .inc = 1ull << 40}, a2;
    hbd_wire_abort_pack(&a, hp);
    n = mk(buf, sizeof(buf), HBD_WIRE_ABORT, HBD_WIRE_ABORT_LEN, hp);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, NULL), 0);
    hbd_wire_abort_unpack(d.payload, &a2);
    CU_ASSERT_EQUAL(a2.status, HIBAR_ERR_PEER_LOST);
    CU_ASSERT_EQUAL(a2.lost, 4);
    CU_ASSERT_EQUAL(a2.inc, 1ull << 40);
    a.lost = 7; /* the sender itself: nobody reports itself lost */
    hbd_wire_abort_pack(&a, hp);
    n = mk(buf, sizeof(buf), HBD_WIRE_ABORT, HBD_WIRE_ABORT_LEN, hp);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, NULL), HIBAR_ERR_PROTO);

    hbd_wire_member_t x = {.node = 29, .inc = 99}, x2;
    hbd_wire_member_pack(&x, hp);
    n = mk(buf, sizeof(buf), HBD_WIRE_MEMBER, HBD_WIRE_MEMBER_LEN, hp);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, NULL), 0);
    hbd_wire_member_unpack(d.payload, &x2);
    CU_ASSERT_EQUAL(x2.node, 29);
    CU_ASSERT_EQUAL(x2.inc, 99);
    const hbd_wire_member_t bad[] = {
        {.node = 30, .inc = 1}, {.node = 1, .inc = 0}, {.node = 1, .reserved = 1, .inc = 1}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hbd_wire_member_pack(&bad[i], hp);
        n = mk(buf, sizeof(buf), HBD_WIRE_MEMBER, HBD_WIRE_MEMBER_LEN, hp);
        CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, NULL), HIBAR_ERR_PROTO);
    }
}

static void test_encode_refuses(void)
{
    uint8_t buf[HBD_WIRE_MAX_FRAME + 8], pl[HBD_WIRE_MAX_PAYLOAD + 1] = {0};
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), 0, 0, NULL), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), 99, 0, NULL), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), HBD_WIRE_HIER, HBD_WIRE_MAX_PAYLOAD + 1, pl),
                    HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), HBD_WIRE_HEARTBEAT, 4, pl), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), HBD_WIRE_HIER, 4, NULL), HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(mk(buf, HBD_WIRE_HDR_LEN + 3, HBD_WIRE_HIER, 4, pl), HIBAR_ERR_TRUNCATED);
    CU_ASSERT_EQUAL(hbd_wire_encode(NULL, buf, sizeof(buf)), HIBAR_ERR_INVAL);
}

/* FENCE frames: a 12-byte header, then up to HBD_WIRE_FENCE_MAX_DATA bytes. */
static void test_fence_lengths(void)
{
    static uint8_t buf[HBD_WIRE_HDR_LEN + HBD_WIRE_FENCE_MAX_PAYLOAD + 8];
    static uint8_t pl[HBD_WIRE_FENCE_MAX_PAYLOAD + 1];
    hbd_wire_msg_t d;
    hbd_wire_reason_t why;
    for (uint32_t i = 0; i < sizeof(pl); i++)
        pl[i] = (uint8_t)(i * 13u);
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), HBD_WIRE_FENCE, HBD_WIRE_FENCE_HDR - 1, pl),
                    HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), HBD_WIRE_FENCE, HBD_WIRE_FENCE_MAX_PAYLOAD + 1, pl),
                    HIBAR_ERR_INVAL);
    CU_ASSERT_EQUAL(mk(buf, HBD_WIRE_HDR_LEN + HBD_WIRE_FENCE_MAX_PAYLOAD - 1, HBD_WIRE_FENCE,
                       HBD_WIRE_FENCE_MAX_PAYLOAD, pl),
                    HIBAR_ERR_TRUNCATED);
    int n = mk(buf, sizeof(buf), HBD_WIRE_FENCE, HBD_WIRE_FENCE_MAX_PAYLOAD, pl);
    CU_ASSERT_EQUAL(n, HBD_WIRE_HDR_LEN + HBD_WIRE_FENCE_MAX_PAYLOAD);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, &why), 0);
    CU_ASSERT_EQUAL(d.len, HBD_WIRE_FENCE_MAX_PAYLOAD);
    CU_ASSERT(memcmp(d.payload, pl, HBD_WIRE_FENCE_MAX_PAYLOAD) == 0);
    /* a frame that claims one byte more than it carries, or is one byte too long */
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n - 1, &ctx, &d, &why), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, HBD_WIRE_BAD_LENGTH);
    hbd_wire_put32(buf + 28, HBD_WIRE_FENCE_MAX_PAYLOAD + 1);
    buf[n] = 0;
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n + 1, &ctx, &d, &why), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, HBD_WIRE_BAD_LENGTH);
    n = mk(buf, sizeof(buf), HBD_WIRE_FENCE, HBD_WIRE_FENCE_HDR, pl);
    CU_ASSERT_EQUAL(n, HBD_WIRE_HDR_LEN + HBD_WIRE_FENCE_HDR);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, (size_t)n, &ctx, &d, &why), 0);
}

/* DMODEX frames: header fields and lengths checked. */
static int dm(uint8_t *buf, size_t cap, const hbd_wire_dmodex_t *x, const char *ns, uint32_t ndata,
              uint32_t claim_nslen)
{
    static uint8_t pl[HBD_WIRE_DMODEX_MAX_PAYLOAD + 64];
    size_t nl = strlen(ns);
    hbd_wire_dmodex_t y = *x;
    y.nslen = (uint8_t)claim_nslen;
    hbd_wire_dmodex_pack(&y, pl);
    memcpy(pl + HBD_WIRE_DMODEX_HDR, ns, nl);
    memset(pl + HBD_WIRE_DMODEX_HDR + nl, 0x5a, ndata);
    return mk(buf, cap, HBD_WIRE_DMODEX, (uint32_t)(HBD_WIRE_DMODEX_HDR + nl + ndata), pl);
}

static hbd_wire_reason_t dm_why(const hbd_wire_dmodex_t *x, const char *ns, uint32_t ndata,
                                uint32_t claim_nslen)
{
    static uint8_t buf[HBD_WIRE_HDR_LEN + HBD_WIRE_DMODEX_MAX_PAYLOAD + 64];
    hbd_wire_msg_t d;
    hbd_wire_reason_t why = HBD_WIRE_N_REASONS;
    int n = dm(buf, sizeof(buf), x, ns, ndata, claim_nslen);
    if (n < 0)
        return HBD_WIRE_BAD_LENGTH; /* refused already by the encoder */
    if (hbd_wire_decode(buf, (size_t)n, &ctx, &d, &why) == 0) {
        hbd_wire_dmodex_t back;
        hbd_wire_dmodex_unpack(d.payload, &back);
        CU_ASSERT_EQUAL(back.id, x->id);
        CU_ASSERT_EQUAL(back.rank, x->rank);
        CU_ASSERT_EQUAL(back.arg, x->arg);
        CU_ASSERT_EQUAL(back.origin, x->origin);
        CU_ASSERT_EQUAL(back.dest, x->dest);
        CU_ASSERT_EQUAL(back.nslen, claim_nslen);
        CU_ASSERT_EQUAL(back.keylen, x->keylen);
    }
    return why;
}

static void test_dmodex(void)
{
    const char *ns = "hibar.123";
    uint32_t nl = (uint32_t)strlen(ns);
    hbd_wire_dmodex_t req = {
        .kind = HBD_WIRE_DMODEX_REQ, .id = 9, .rank = 5, .arg = 2000, .origin = 1, .dest = 29};
    hbd_wire_dmodex_t rep = req;
    rep.kind = HBD_WIRE_DMODEX_REPLY;
    rep.arg = 0;
    CU_ASSERT_EQUAL(dm_why(&req, ns, 0, nl), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(dm_why(&rep, ns, 100, nl), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(dm_why(&rep, ns, HBD_WIRE_DMODEX_MAX_DATA, nl), HBD_WIRE_OK);
    /* a reply with more than 32 KiB of data; a request carrying data */
    CU_ASSERT_EQUAL(dm_why(&rep, ns, HBD_WIRE_DMODEX_MAX_DATA + 1, nl), HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(dm_why(&req, ns, 1, nl), HBD_WIRE_BAD_PAYLOAD);
    /* namespace length 0, or beyond the frame */
    CU_ASSERT_EQUAL(dm_why(&req, ns, 0, 0), HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(dm_why(&req, ns, 0, nl + 1), HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(dm_why(&rep, ns, 0, nl + 1), HBD_WIRE_BAD_PAYLOAD);
    /* a request with its required key (PMIX_REQUIRED_KEY): exactly keylen bytes after the
     * namespace, at most HBD_WIRE_DMODEX_MAX_KEY; a reply never has one */
    hbd_wire_dmodex_t kreq = req;
    kreq.keylen = 7;
    CU_ASSERT_EQUAL(dm_why(&kreq, ns, 7, nl), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(dm_why(&kreq, ns, 6, nl), HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(dm_why(&kreq, ns, 8, nl), HBD_WIRE_BAD_PAYLOAD);
    kreq.keylen = HBD_WIRE_DMODEX_MAX_KEY;
    CU_ASSERT_EQUAL(dm_why(&kreq, ns, HBD_WIRE_DMODEX_MAX_KEY, nl), HBD_WIRE_OK);
    kreq.keylen = HBD_WIRE_DMODEX_MAX_KEY + 1;
    CU_ASSERT_EQUAL(dm_why(&kreq, ns, HBD_WIRE_DMODEX_MAX_KEY + 1, nl), HBD_WIRE_BAD_PAYLOAD);
    /* kind, key length of a reply, origin/destination, statuses */
    hbd_wire_dmodex_t bad = req;
    bad.kind = 3;
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 0, nl), HBD_WIRE_BAD_PAYLOAD);
    bad = rep;
    bad.keylen = 1;
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 1, nl), HBD_WIRE_BAD_PAYLOAD);
    bad = req;
    bad.dest = 30; /* ctx has 30 nodes */
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 0, nl), HBD_WIRE_BAD_PAYLOAD);
    bad = req;
    bad.origin = bad.dest;
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 0, nl), HBD_WIRE_BAD_PAYLOAD);
    bad = req;
    bad.arg = -1;
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 0, nl), HBD_WIRE_BAD_PAYLOAD);
    bad = rep;
    bad.arg = 1;
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 0, nl), HBD_WIRE_BAD_PAYLOAD);
    bad = rep;
    bad.arg = -46; /* an error reply carries no data */
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 0, nl), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(dm_why(&bad, ns, 5, nl), HBD_WIRE_BAD_PAYLOAD);
    /* header only: too short for any DMODEX frame */
    uint8_t buf[HBD_WIRE_HDR_LEN + HBD_WIRE_DMODEX_HDR], pl[HBD_WIRE_DMODEX_HDR] = {0};
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), HBD_WIRE_DMODEX, HBD_WIRE_DMODEX_HDR, pl),
                    HIBAR_ERR_INVAL);
    CU_ASSERT_STRING_EQUAL(hbd_wire_type_name(HBD_WIRE_DMODEX), "dmodex");
}

/* JOB frames (launch forwarding): header fields, what each kind may carry, SPEC chunking. */
static hbd_wire_reason_t job_why(const hbd_wire_job_t *x, const uint8_t *data, uint32_t dlen,
                                 hbd_wire_msg_t *out)
{
    static uint8_t pl[HBD_WIRE_JOB_MAX_PAYLOAD + 64], buf[HBD_WIRE_HDR_LEN + sizeof(pl)];
    hbd_wire_job_pack(x, pl);
    if (dlen > 0)
        memcpy(pl + HBD_WIRE_JOB_HDR, data, dlen);
    hbd_wire_msg_t m = {.type = HBD_WIRE_JOB,
                        .coll_id = 77,
                        .inc = 3,
                        .src = 7,
                        .len = HBD_WIRE_JOB_HDR + dlen,
                        .payload = pl};
    /* encode checks only the length range: build the frame by hand beyond it */
    int n = hbd_wire_encode(&m, buf, sizeof(buf));
    if (n < 0) {
        memset(buf, 0, HBD_WIRE_HDR_LEN);
        m.len = HBD_WIRE_JOB_MAX_PAYLOAD;
        n = hbd_wire_encode(&m, buf, sizeof(buf));
        hbd_wire_put32(buf + 28, HBD_WIRE_JOB_HDR + dlen);
        memcpy(buf + HBD_WIRE_HDR_LEN, pl, HBD_WIRE_JOB_HDR + dlen);
        n = (int)(HBD_WIRE_HDR_LEN + HBD_WIRE_JOB_HDR + dlen);
    }
    hbd_wire_reason_t why = HBD_WIRE_N_REASONS;
    hbd_wire_msg_t d;
    int rc = hbd_wire_decode(buf, (size_t)n, &ctx, &d, &why);
    CU_ASSERT_EQUAL(rc == 0, why == HBD_WIRE_OK);
    if (rc == 0 && out != NULL)
        *out = d;
    return why;
}

static void test_job(void)
{
    static uint8_t data[HBD_WIRE_JOB_MAX_DATA + 1];
    memset(data, 'a', sizeof(data));
    hbd_wire_job_t spec = {.kind = HBD_WIRE_JOB_SPEC,
                           .flags = HBD_WIRE_JOB_F_LAST,
                           .src = 7,
                           .dest = 29,
                           .seq = 0,
                           .arg = 100};
    hbd_wire_msg_t d;
    /* a one-chunk spec round trip */
    CU_ASSERT_EQUAL(job_why(&spec, data, 100, &d), HBD_WIRE_OK);
    hbd_wire_job_t y;
    hbd_wire_job_unpack(d.payload, &y);
    CU_ASSERT(y.kind == spec.kind && y.flags == spec.flags && y.src == 7 && y.dest == 29 &&
              y.seq == 0 && y.arg == 100);
    CU_ASSERT_EQUAL(d.coll_id, 77);
    CU_ASSERT_STRING_EQUAL(hbd_wire_type_name(HBD_WIRE_JOB), "job");
    /* chunks: full ones without LAST, the last one shorter with it */
    hbd_wire_job_t c = spec;
    c.arg = 2 * HBD_WIRE_JOB_MAX_DATA + 5;
    c.flags = 0;
    CU_ASSERT_EQUAL(job_why(&c, data, HBD_WIRE_JOB_MAX_DATA, NULL), HBD_WIRE_OK);
    c.seq = 2;
    c.flags = HBD_WIRE_JOB_F_LAST;
    CU_ASSERT_EQUAL(job_why(&c, data, 5, NULL), HBD_WIRE_OK);
    /* last chunk without LAST, a middle one with it, a short middle one, beyond the total */
    c.flags = 0;
    CU_ASSERT_EQUAL(job_why(&c, data, 5, NULL), HBD_WIRE_BAD_PAYLOAD);
    c.seq = 1;
    c.flags = HBD_WIRE_JOB_F_LAST;
    CU_ASSERT_EQUAL(job_why(&c, data, HBD_WIRE_JOB_MAX_DATA, NULL), HBD_WIRE_BAD_PAYLOAD);
    c.flags = 0;
    CU_ASSERT_EQUAL(job_why(&c, data, 100, NULL), HBD_WIRE_BAD_PAYLOAD);
    c.seq = 3;
    CU_ASSERT_EQUAL(job_why(&c, data, 5, NULL), HBD_WIRE_BAD_PAYLOAD);
    c.seq = UINT32_MAX; /* offset arithmetic must not wrap */
    CU_ASSERT_EQUAL(job_why(&c, data, 5, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* empty chunk, a spec of 0 bytes or beyond the limit, more data than a frame carries */
    c = spec;
    CU_ASSERT_EQUAL(job_why(&c, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    c.arg = 0;
    CU_ASSERT_EQUAL(job_why(&c, data, 1, NULL), HBD_WIRE_BAD_PAYLOAD);
    c.arg = (uint64_t)HBD_WIRE_JOB_SPEC_MAX + 1;
    c.flags = 0;
    CU_ASSERT_EQUAL(job_why(&c, data, HBD_WIRE_JOB_MAX_DATA, NULL), HBD_WIRE_BAD_PAYLOAD);
    c = spec;
    c.arg = HBD_WIRE_JOB_MAX_DATA + 1;
    CU_ASSERT_EQUAL(job_why(&c, data, HBD_WIRE_JOB_MAX_DATA + 1, NULL), HBD_WIRE_BAD_LENGTH);
    /* header: kind, flags, reserved, nodes */
    c = spec;
    c.kind = 0;
    CU_ASSERT_EQUAL(job_why(&c, data, 100, NULL), HBD_WIRE_BAD_PAYLOAD);
    c.kind = HBD_WIRE_JOB_KIND_MAX + 1;
    CU_ASSERT_EQUAL(job_why(&c, data, 100, NULL), HBD_WIRE_BAD_PAYLOAD);
    c = spec;
    c.flags = 0x02;
    CU_ASSERT_EQUAL(job_why(&c, data, 100, NULL), HBD_WIRE_BAD_PAYLOAD);
    c = spec;
    c.reserved = 1;
    CU_ASSERT_EQUAL(job_why(&c, data, 100, NULL), HBD_WIRE_BAD_PAYLOAD);
    c = spec;
    c.dest = 30; /* ctx has 30 nodes */
    CU_ASSERT_EQUAL(job_why(&c, data, 100, NULL), HBD_WIRE_BAD_PAYLOAD);
    c = spec;
    c.src = c.dest;
    CU_ASSERT_EQUAL(job_why(&c, data, 100, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* OUT: lines ending with a newline, no NUL; LAST only on SPEC */
    const char *lines = "o 3 1 hello\nx 3 0 ok\n";
    hbd_wire_job_t o = {.kind = HBD_WIRE_JOB_OUT, .src = 29, .dest = 7, .seq = 12};
    CU_ASSERT_EQUAL(job_why(&o, (const uint8_t *)lines, (uint32_t)strlen(lines), NULL),
                    HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&o, (const uint8_t *)lines, (uint32_t)strlen(lines) - 1, NULL),
                    HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(job_why(&o, (const uint8_t *)"a\0b\n", 4, NULL), HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(job_why(&o, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    o.flags = HBD_WIRE_JOB_F_LAST;
    CU_ASSERT_EQUAL(job_why(&o, (const uint8_t *)"a\n", 2, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* KILL, END, FREE carry no data; KILL no argument; FREE a job number */
    hbd_wire_job_t k = {.kind = HBD_WIRE_JOB_KILL, .src = 7, .dest = 3};
    CU_ASSERT_EQUAL(job_why(&k, data, 0, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&k, data, 1, NULL), HBD_WIRE_BAD_PAYLOAD);
    k.arg = 1;
    CU_ASSERT_EQUAL(job_why(&k, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* END: no engine, or the round counts of its sync numbers (base << 8 | count) */
    hbd_wire_job_t e = {.kind = HBD_WIRE_JOB_END, .src = 3, .dest = 7};
    CU_ASSERT_EQUAL(job_why(&e, data, 0, NULL), HBD_WIRE_OK);
    e.arg = (4u << 8) | 2;
    CU_ASSERT_EQUAL(job_why(&e, data, 8, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&e, data, 4, NULL), HBD_WIRE_BAD_PAYLOAD);
    e.arg = 123456789;
    CU_ASSERT_EQUAL(job_why(&e, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    e.arg = 17; /* more counts than sync numbers */
    CU_ASSERT_EQUAL(job_why(&e, data, 68, NULL), HBD_WIRE_BAD_PAYLOAD);
    e.arg = 0;
    e.seq = 5; /* the member's last frame of the job */
    CU_ASSERT_EQUAL(job_why(&e, data, 0, NULL), HBD_WIRE_OK);
    /* CREDIT: the frames taken (seq, UINT32_MAX: all) and the bytes given back (none: a repeat) */
    hbd_wire_job_t cr = {.kind = HBD_WIRE_JOB_CREDIT, .src = 7, .dest = 3, .seq = 9, .arg = 4096};
    CU_ASSERT_EQUAL(job_why(&cr, data, 0, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&cr, data, 1, NULL), HBD_WIRE_BAD_PAYLOAD);
    cr.seq = UINT32_MAX;
    cr.arg = 0;
    CU_ASSERT_EQUAL(job_why(&cr, data, 0, NULL), HBD_WIRE_OK);
    cr.arg = 1ull << 32;
    CU_ASSERT_EQUAL(job_why(&cr, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* DRAIN: a bitmap of sync numbers; CLEAN: nothing */
    hbd_wire_job_t dr = {.kind = HBD_WIRE_JOB_DRAIN, .src = 3, .dest = 7, .arg = 0x30};
    CU_ASSERT_EQUAL(job_why(&dr, data, 0, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&dr, data, 1, NULL), HBD_WIRE_BAD_PAYLOAD);
    dr.arg = 1ull << 40;
    CU_ASSERT_EQUAL(job_why(&dr, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    hbd_wire_job_t cn = {.kind = HBD_WIRE_JOB_CLEAN, .src = 7, .dest = 3};
    CU_ASSERT_EQUAL(job_why(&cn, data, 0, NULL), HBD_WIRE_OK);
    cn.arg = 1;
    CU_ASSERT_EQUAL(job_why(&cn, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    hbd_wire_job_t fr = {.kind = HBD_WIRE_JOB_FREE, .src = 3, .dest = 0, .arg = 5};
    CU_ASSERT_EQUAL(job_why(&fr, data, 0, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&fr, data, 4, NULL), HBD_WIRE_BAD_PAYLOAD);
    fr.arg = 0;
    CU_ASSERT_EQUAL(job_why(&fr, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    fr.arg = 1ull << 32;
    CU_ASSERT_EQUAL(job_why(&fr, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* ALLOC: a bitmap of the 30 nodes (4 bytes), no bit beyond them, one set at least */
    hbd_wire_job_t al = {.kind = HBD_WIRE_JOB_ALLOC, .src = 9, .dest = 0, .arg = 8};
    uint8_t bits[5] = {0x0f, 0, 0, 0x20, 0};
    CU_ASSERT_EQUAL(job_why(&al, bits, 4, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&al, bits, 5, NULL), HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(job_why(&al, bits, 3, NULL), HBD_WIRE_BAD_PAYLOAD);
    bits[3] = 0x40; /* node 30: beyond the cluster */
    CU_ASSERT_EQUAL(job_why(&al, bits, 4, NULL), HBD_WIRE_BAD_PAYLOAD);
    memset(bits, 0, sizeof(bits));
    CU_ASSERT_EQUAL(job_why(&al, bits, 4, NULL), HBD_WIRE_BAD_PAYLOAD);
    bits[0] = 1;
    al.arg = 0; /* no ranks */
    CU_ASSERT_EQUAL(job_why(&al, bits, 4, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* SLOT: given (job number, base, count), or refused (a status and its text) */
    hbd_wire_job_t sl = {
        .kind = HBD_WIRE_JOB_SLOT, .src = 0, .dest = 9, .arg = (7ull << 32) | (4u << 8) | 2};
    CU_ASSERT_EQUAL(job_why(&sl, data, 0, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&sl, data, 3, NULL), HBD_WIRE_BAD_PAYLOAD);
    sl.arg = (4u << 8) | 2; /* job 0 */
    CU_ASSERT_EQUAL(job_why(&sl, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    sl.arg = (7ull << 32) | (4u << 8); /* no sync number */
    CU_ASSERT_EQUAL(job_why(&sl, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    sl.seq = (uint32_t)-HIBAR_ERR_BUSY;
    sl.arg = 0;
    CU_ASSERT_EQUAL(job_why(&sl, (const uint8_t *)"chassis 2 is full", 17, NULL), HBD_WIRE_OK);
    CU_ASSERT_EQUAL(job_why(&sl, (const uint8_t *)"a\0b", 3, NULL), HBD_WIRE_BAD_PAYLOAD);
    sl.seq = 1000; /* no status */
    CU_ASSERT_EQUAL(job_why(&sl, data, 0, NULL), HBD_WIRE_BAD_PAYLOAD);
    /* a header alone is the shortest JOB frame; less is refused by the length check */
    uint8_t buf[HBD_WIRE_HDR_LEN + HBD_WIRE_JOB_HDR], pl[HBD_WIRE_JOB_HDR] = {0};
    CU_ASSERT_EQUAL(mk(buf, sizeof(buf), HBD_WIRE_JOB, HBD_WIRE_JOB_HDR - 1, pl), HIBAR_ERR_INVAL);
}

/* Decode a valid HIER frame after applying an edit; expect the given reason. */
static void expect(void (*edit)(uint8_t *buf, size_t *len), hbd_wire_reason_t want)
{
    uint8_t buf[HBD_WIRE_MAX_FRAME + 64] = {0}, pl[16] = {1, 0, 0, 0};
    hbd_wire_msg_t d;
    memset(&d, 0x5a, sizeof(d));
    hbd_wire_msg_t before = d;
    hbd_wire_reason_t why = HBD_WIRE_OK;
    size_t len = (size_t)mk(buf, sizeof(buf), HBD_WIRE_HIER, 16, pl);
    edit(buf, &len);
    CU_ASSERT_EQUAL(hbd_wire_decode(buf, len, &ctx, &d, &why), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, want);
    CU_ASSERT_EQUAL(memcmp(&d, &before, sizeof(d)), 0); /* out-param untouched on failure */
}

static void e_short(uint8_t *b, size_t *l)
{
    (void)b;
    *l = HBD_WIRE_HDR_LEN - 1;
}
static void e_empty(uint8_t *b, size_t *l)
{
    (void)b;
    *l = 0;
}
static void e_magic(uint8_t *b, size_t *l)
{
    (void)l;
    b[0] ^= 1;
}
static void e_version(uint8_t *b, size_t *l)
{
    (void)l;
    b[4] = 1; /* the version before incarnations */
}
static void e_type0(uint8_t *b, size_t *l)
{
    (void)l;
    b[5] = 0;
}
static void e_type(uint8_t *b, size_t *l)
{
    (void)l;
    b[5] = 200;
}
static void e_flags(uint8_t *b, size_t *l)
{
    (void)l;
    b[7] = 0x80;
}
static void e_trunc(uint8_t *b, size_t *l)
{
    (void)b;
    *l -= 1;
}
static void e_extra(uint8_t *b, size_t *l)
{
    (void)b;
    *l += 1;
}
static void e_lenbig(uint8_t *b, size_t *l)
{
    (void)l;
    b[31] = 0xff;
}
static void e_oversize(uint8_t *b, size_t *l)
{
    hbd_wire_put32(b + 28, HBD_WIRE_MAX_PAYLOAD + 1);
    *l = HBD_WIRE_MAX_FRAME + 1;
}
static void e_hb_payload(uint8_t *b, size_t *l)
{
    (void)l;
    b[5] = HBD_WIRE_HEARTBEAT;
}
static void e_node(uint8_t *b, size_t *l)
{
    (void)l;
    hbd_wire_put32(b + 24, 30);
}
static void e_spoof(uint8_t *b, size_t *l)
{
    (void)l;
    hbd_wire_put32(b + 24, 8);
}
static void e_inc0(uint8_t *b, size_t *l)
{
    (void)l;
    hbd_wire_put32(b + 20, 0);
}
static void e_job(uint8_t *b, size_t *l)
{
    (void)l;
    hbd_wire_put32(b + 8, 1);
}
static void e_abort(uint8_t *b, size_t *l)
{
    b[5] = HBD_WIRE_ABORT;
    hbd_wire_put32(b + 28, HBD_WIRE_ABORT_LEN);
    hbd_wire_put32(b + 32, 5); /* a positive status is not a failure */
    *l = HBD_WIRE_HDR_LEN + HBD_WIRE_ABORT_LEN;
}
static void e_hello(uint8_t *b, size_t *l)
{
    b[5] = HBD_WIRE_HELLO;
    hbd_wire_put32(b + 28, HBD_WIRE_HELLO_LEN);
    hbd_wire_put32(b + 32, 31); /* another cluster size */
    *l = HBD_WIRE_HDR_LEN + HBD_WIRE_HELLO_LEN;
}

static void test_decode_refuses(void)
{
    expect(e_short, HBD_WIRE_BAD_SHORT);
    expect(e_empty, HBD_WIRE_BAD_SHORT);
    expect(e_magic, HBD_WIRE_BAD_MAGIC);
    expect(e_version, HBD_WIRE_BAD_VERSION);
    expect(e_type0, HBD_WIRE_BAD_TYPE);
    expect(e_type, HBD_WIRE_BAD_TYPE);
    expect(e_flags, HBD_WIRE_BAD_FLAGS);
    expect(e_trunc, HBD_WIRE_BAD_LENGTH);
    expect(e_extra, HBD_WIRE_BAD_LENGTH);
    expect(e_lenbig, HBD_WIRE_BAD_LENGTH);
    expect(e_oversize, HBD_WIRE_BAD_LENGTH);
    expect(e_hb_payload, HBD_WIRE_BAD_LENGTH);
    expect(e_node, HBD_WIRE_BAD_NODE);
    expect(e_spoof, HBD_WIRE_BAD_NODE);
    expect(e_inc0, HBD_WIRE_BAD_INC);
    expect(e_job, HBD_WIRE_BAD_JOB);
    expect(e_abort, HBD_WIRE_BAD_PAYLOAD);
    expect(e_hello, HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(hbd_wire_decode(NULL, 64, &ctx, NULL, NULL), HIBAR_ERR_PROTO);
}

/* Every prefix and every single-byte corruption of a valid frame decodes or is refused cleanly. */
static void test_all_prefixes_and_flips(void)
{
    uint8_t good[HBD_WIRE_HDR_LEN + 8], pl[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    int n = mk(good, sizeof(good), HBD_WIRE_HIER, 8, pl);
    CU_ASSERT_EQUAL(n, (int)sizeof(good));
    for (int len = 0; len < n; len++) {
        uint8_t *copy = malloc((size_t)len + 1); /* exact-size heap copy: ASan catches overreads */
        memcpy(copy, good, (size_t)len);
        CU_ASSERT_EQUAL(hbd_wire_decode(copy, (size_t)len, &ctx, NULL, NULL), HIBAR_ERR_PROTO);
        free(copy);
    }
    unsigned accepted = 0;
    for (int i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            uint8_t b[sizeof(good)];
            memcpy(b, good, sizeof(b));
            b[i] ^= (uint8_t)(1u << bit);
            hbd_wire_msg_t d;
            if (hbd_wire_decode(b, sizeof(b), &ctx, &d, NULL) == 0)
                accepted++;
        }
    /* only the coll id bits, the payload bits, the REPLY flag and the incarnation's (3: every
     * flip leaves it nonzero; which incarnation is current is the transport's check) survive */
    CU_ASSERT_EQUAL(accepted, 64 + 64 + 1 + 32);
}

/* Published FNV-1a 32 vectors; the 64-bit word form against its definition. */
static void test_hash(void)
{
    CU_ASSERT(hbd_wire_tag("") == 0x811c9dc5u);
    CU_ASSERT(hbd_wire_tag("a") == 0xe40c292cu);
    CU_ASSERT(hbd_wire_tag("foobar") == 0xbf9cf968u);
    CU_ASSERT(hbd_wire_tag(NULL) == hbd_wire_tag(""));
    CU_ASSERT(hb_fnv32(HB_FNV32_BASIS, "foobar", 6) == hb_fnv32_str("foobar"));
    CU_ASSERT(hb_fnv32(hb_fnv32(HB_FNV32_BASIS, "foo", 3), "bar", 3) == 0xbf9cf968u);
    uint64_t h = HB_FNV64_BASIS;
    h = hb_fnv64_u32(hb_fnv64_u32(h, 3), 70000);
    CU_ASSERT(h == ((14695981039346656037ull ^ 3u) * 1099511628211ull ^ 70000u) * 1099511628211ull);
}

static void test_names(void)
{
    CU_ASSERT_STRING_EQUAL(hbd_wire_type_name(HBD_WIRE_ABORT), "abort");
    CU_ASSERT_STRING_EQUAL(hbd_wire_type_name(77), "unknown");
    CU_ASSERT_STRING_EQUAL(hbd_wire_reason_name(HBD_WIRE_BAD_INC), "inc");
    CU_ASSERT_STRING_EQUAL(hbd_wire_reason_name(HBD_WIRE_N_REASONS), "unknown");
    CU_ASSERT_NOT_EQUAL(hbd_wire_tag("a"), hbd_wire_tag("b"));
}

/* A PMIx step's JOB message (hbd_step.h): round trip; every prefix, a map entry or self out of
 * range, and bit flips are refused or parse within range, never read past the payload. */
static void test_step_job(void)
{
    uint32_t map[5] = {0, 1, 1, 2, 0};
    const char *names[3] = {"n0", "node-1", "n2"};
    hbd_step_job_t jb = {.size = 5,
                         .n_nodes = 3,
                         .self = 1,
                         .map = map,
                         .nspace = "hibar.7",
                         .names = names},
                   u;
    size_t len = 0, next;
    uint8_t *p = hbd_step_job_pack(&jb, &len);
    CU_ASSERT_FATAL(p != NULL);
    CU_ASSERT_EQUAL_FATAL(hbd_step_job_unpack(p, len, &u), 0);
    CU_ASSERT_EQUAL(u.size, 5);
    CU_ASSERT_EQUAL(u.n_nodes, 3);
    CU_ASSERT_EQUAL(u.self, 1);
    CU_ASSERT_EQUAL(memcmp(u.map, map, sizeof(map)), 0);
    CU_ASSERT_STRING_EQUAL(u.nspace, "hibar.7");
    CU_ASSERT_STRING_EQUAL(u.names[1], "node-1");
    CU_ASSERT_STRING_EQUAL(u.names[2], "n2");
    hbd_step_job_free(&u);
    for (size_t n = 0; n < len; n++) { /* every truncation */
        uint8_t *q = malloc(n + 1);
        CU_ASSERT_FATAL(q != NULL);
        memcpy(q, p, n);
        CU_ASSERT_EQUAL(hbd_step_job_unpack(q, n, &u), -1);
        free(q);
    }
    uint8_t *q = malloc(len);
    CU_ASSERT_FATAL(q != NULL);
    memcpy(q, p, len);
    q[12 + 4 * 3] = 3; /* rank 3's node: not one of the 3 */
    CU_ASSERT_EQUAL(hbd_step_job_unpack(q, len, &u), -1);
    memcpy(q, p, len);
    q[8] = 3; /* self */
    CU_ASSERT_EQUAL(hbd_step_job_unpack(q, len, &u), -1);
    memcpy(q, p, len);
    memset(q, 0xff, 4); /* size beyond the payload */
    CU_ASSERT_EQUAL(hbd_step_job_unpack(q, len, &u), -1);
    for (size_t bit = 0; bit < len * 8; bit++) {
        memcpy(q, p, len);
        q[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (hbd_step_job_unpack(q, len, &u) != 0)
            continue;
        CU_ASSERT(u.self < u.n_nodes);
        for (uint32_t r = 0; r < u.size; r++)
            CU_ASSERT(u.map[r] < u.n_nodes);
        hbd_step_job_free(&u);
    }
    free(q);
    free(p);
    const uint8_t s2[] = {'a', 0, 'b', 'c'};
    CU_ASSERT_EQUAL(hbd_pxm_str(s2, sizeof(s2), 0, &next), 0);
    CU_ASSERT_EQUAL(next, 2);
    CU_ASSERT_EQUAL(hbd_pxm_str(s2, sizeof(s2), 2, &next), -1); /* no NUL before the end */
    CU_ASSERT_EQUAL(hbd_pxm_str(s2, sizeof(s2), 5, &next), -1);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("wire", NULL, NULL);
    CU_add_test(s, "round trip", test_roundtrip);
    CU_add_test(s, "encode refuses", test_encode_refuses);
    CU_add_test(s, "fence frame lengths", test_fence_lengths);
    CU_add_test(s, "dmodex frames", test_dmodex);
    CU_add_test(s, "job frames", test_job);
    CU_add_test(s, "decode refuses each field", test_decode_refuses);
    CU_add_test(s, "prefixes and bit flips", test_all_prefixes_and_flips);
    CU_add_test(s, "names", test_names);
    CU_add_test(s, "FNV-1a (the cluster tag and the subset id)", test_hash);
    CU_add_test(s, "PMIx step: the JOB message", test_step_job);
    return hb_test_run(CU_BRM_NORMAL);
}
