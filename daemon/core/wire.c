/* wire.c: encode and validating decode of the daemon-to-daemon frame header (doc/design.md
 * section 5). */
#include "wire.h"

#include <string.h>

#include "hb_hash.h"
#include "hb_status.h"

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void hbd_wire_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t hbd_wire_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)hbd_wire_get32(p) | (uint64_t)hbd_wire_get32(p + 4) << 32;
}

/* Legal payload length range of each type; min > max marks an unknown type. */
static int type_len_ok(unsigned type, uint32_t len)
{
    switch (type) {
    case HBD_WIRE_HELLO:
        return len == HBD_WIRE_HELLO_LEN;
    case HBD_WIRE_HEARTBEAT:
        return len == 0;
    case HBD_WIRE_HIER:
        return len >= 4 && len <= HBD_WIRE_MAX_PAYLOAD;
    case HBD_WIRE_ABORT:
        return len == HBD_WIRE_ABORT_LEN;
    case HBD_WIRE_MEMBER:
        return len == HBD_WIRE_MEMBER_LEN;
    case HBD_WIRE_ECHO:
        return len <= HBD_WIRE_ECHO_MAX_PAYLOAD;
    case HBD_WIRE_FENCE:
        return len >= HBD_WIRE_FENCE_HDR && len <= HBD_WIRE_FENCE_MAX_PAYLOAD;
    case HBD_WIRE_COLL:
        return len >= HBD_WIRE_COLL_HDR && len <= HBD_WIRE_COLL_MAX_PAYLOAD;
    case HBD_WIRE_DMODEX:
        return len > HBD_WIRE_DMODEX_HDR && len <= HBD_WIRE_DMODEX_MAX_PAYLOAD;
    case HBD_WIRE_JOB:
        return len >= HBD_WIRE_JOB_HDR && len <= HBD_WIRE_JOB_MAX_PAYLOAD;
    default:
        return 0;
    }
}

static int type_known(unsigned type)
{
    return type >= HBD_WIRE_HELLO && type <= HBD_WIRE_TYPE_MAX;
}

int hbd_wire_encode_hdr(const hbd_wire_msg_t *msg, uint8_t hdr[HBD_WIRE_HDR_LEN])
{
    uint8_t *p = hdr;
    if (msg == NULL || hdr == NULL || !type_known(msg->type) || !type_len_ok(msg->type, msg->len) ||
        (msg->flags & ~HBD_WIRE_F_ALL) != 0)
        return HB_ERR_INVAL;
    hbd_wire_put32(p, HBD_WIRE_MAGIC);
    p[4] = HBD_WIRE_VERSION;
    p[5] = msg->type;
    put16(p + 6, msg->flags);
    hbd_wire_put32(p + 8, msg->job);
    put64(p + 12, msg->coll_id);
    hbd_wire_put32(p + 20, msg->inc);
    hbd_wire_put32(p + 24, msg->src);
    hbd_wire_put32(p + 28, msg->len);
    return 0;
}

int hbd_wire_encode(const hbd_wire_msg_t *msg, void *buf, size_t cap)
{
    uint8_t hdr[HBD_WIRE_HDR_LEN];
    int rc;
    if (msg == NULL || buf == NULL || (msg->len > 0 && msg->payload == NULL))
        return HB_ERR_INVAL;
    if ((rc = hbd_wire_encode_hdr(msg, hdr)) != 0)
        return rc;
    if (cap < (size_t)HBD_WIRE_HDR_LEN + msg->len)
        return HB_ERR_TRUNCATED;
    memcpy(buf, hdr, sizeof(hdr));
    if (msg->len > 0)
        memcpy((uint8_t *)buf + HBD_WIRE_HDR_LEN, msg->payload, msg->len);
    return HBD_WIRE_HDR_LEN + (int)msg->len;
}

static int refuse(hbd_wire_reason_t why, hbd_wire_reason_t *why_p)
{
    if (why_p != NULL)
        *why_p = why;
    return HB_ERR_PROTO;
}

/* A JOB payload: the header's fields, and the data each kind may carry. */
static int job_ok(const hbd_wire_msg_t *m, const hbd_wire_ctx_t *ctx)
{
    hbd_wire_job_t x;
    hbd_wire_job_unpack(m->payload, &x);
    uint32_t dlen = m->len - HBD_WIRE_JOB_HDR;
    const uint8_t *data = m->payload + HBD_WIRE_JOB_HDR;
    if (x.kind == 0 || x.kind > HBD_WIRE_JOB_KIND_MAX || x.reserved != 0 || x.src == x.dest ||
        (ctx != NULL && (x.src >= ctx->n_nodes || x.dest >= ctx->n_nodes)) ||
        (x.flags & ~HBD_WIRE_JOB_F_LAST) != 0 || (x.flags != 0 && x.kind != HBD_WIRE_JOB_SPEC))
        return 0;
    switch (x.kind) {
    case HBD_WIRE_JOB_SPEC: {
        /* chunk seq covers [seq * MAX_DATA, + dlen) of arg bytes; only the last is shorter */
        uint64_t off = (uint64_t)x.seq * HBD_WIRE_JOB_MAX_DATA;
        if (dlen == 0 || x.arg == 0 || x.arg > HBD_WIRE_JOB_SPEC_MAX || off + dlen > x.arg)
            return 0;
        int last = off + dlen == x.arg;
        return last == !!(x.flags & HBD_WIRE_JOB_F_LAST) && (last || dlen == HBD_WIRE_JOB_MAX_DATA);
    }
    case HBD_WIRE_JOB_OUT:
        return dlen > 0 && data[dlen - 1] == '\n' && memchr(data, '\0', dlen) == NULL;
    case HBD_WIRE_JOB_ALLOC: {
        /* a bitmap of the cluster's nodes, no bit beyond them, at least one set */
        if (x.seq != 0 || x.arg == 0 || x.arg > UINT32_MAX ||
            (ctx != NULL && dlen != (ctx->n_nodes + 7) / 8))
            return 0;
        int any = 0;
        for (uint32_t i = 0; i < dlen; i++)
            any |= data[i] != 0;
        if (ctx != NULL && ctx->n_nodes % 8 != 0 && (data[dlen - 1] >> (ctx->n_nodes % 8)) != 0)
            return 0;
        return any;
    }
    case HBD_WIRE_JOB_SLOT: {
        if (x.seq == 0)
            return dlen == 0 && (x.arg >> 32) != 0 && (x.arg & 0xff) != 0 &&
                   ((x.arg >> 8) & 0xff) + (x.arg & 0xff) <= 64 && ((x.arg >> 16) & 0xffff) == 0;
        int64_t st = -(int64_t)x.seq;
        return x.arg == 0 && st < 0 && st >= HB_ERR_LAST && memchr(data, '\0', dlen) == NULL;
    }
    case HBD_WIRE_JOB_FREE:
        return dlen == 0 && x.seq == 0 && x.arg != 0 && x.arg <= UINT32_MAX;
    case HBD_WIRE_JOB_HOLD:
        return x.seq == 0 && x.arg <= HBD_WIRE_JOB_HOLD_MAX &&
               dlen == (uint32_t)x.arg * HBD_WIRE_JOB_HOLD_REC;
    case HBD_WIRE_JOB_KILL:
    case HBD_WIRE_JOB_CLEAN:
    case HBD_WIRE_JOB_CENSUS:
        return dlen == 0 && x.seq == 0 && x.arg == 0;
    case HBD_WIRE_JOB_DRAIN:
        return dlen == 0 && x.seq == 0 && (x.arg >> 32) == 0;
    case HBD_WIRE_JOB_CREDIT:
        return dlen == 0 && x.arg <= UINT32_MAX;
    default: /* END */
        return (x.arg >> 16) == 0 && dlen == (x.arg & 0xff) * 4 && (x.arg & 0xff) <= 16 &&
               ((x.arg >> 8) & 0xff) + (x.arg & 0xff) <= 32;
    }
}

/* Decode a frame whose first `len` bytes are at buf and whose last `tail` bytes are elsewhere
 * (0: all of it at buf). Only COLL frames may have a tail, and only after their header. */
static int decode(const void *buf, size_t len, size_t tail, const hbd_wire_ctx_t *ctx,
                  hbd_wire_msg_t *msg_p, hbd_wire_reason_t *why_p)
{
    const uint8_t *p = buf;
    hbd_wire_msg_t m;
    if (buf == NULL || len < HBD_WIRE_HDR_LEN)
        return refuse(HBD_WIRE_BAD_SHORT, why_p);
    if (tail > 0 && (len != HBD_WIRE_HDR_LEN + HBD_WIRE_COLL_HDR || p[5] != HBD_WIRE_COLL))
        return refuse(HBD_WIRE_BAD_LENGTH, why_p);
    if (tail > SIZE_MAX - len)
        return refuse(HBD_WIRE_BAD_LENGTH, why_p);
    len += tail;
    if (hbd_wire_get32(p) != HBD_WIRE_MAGIC)
        return refuse(HBD_WIRE_BAD_MAGIC, why_p);
    if (p[4] != HBD_WIRE_VERSION)
        return refuse(HBD_WIRE_BAD_VERSION, why_p);
    m.type = p[5];
    if (!type_known(m.type))
        return refuse(HBD_WIRE_BAD_TYPE, why_p);
    m.flags = get16(p + 6);
    if ((m.flags & ~HBD_WIRE_F_ALL) != 0)
        return refuse(HBD_WIRE_BAD_FLAGS, why_p);
    m.job = hbd_wire_get32(p + 8);
    m.coll_id = get64(p + 12);
    m.inc = hbd_wire_get32(p + 20);
    m.src = hbd_wire_get32(p + 24);
    m.len = hbd_wire_get32(p + 28);
    /* compare without adding to len: len - HDR cannot underflow here */
    if ((size_t)m.len != len - HBD_WIRE_HDR_LEN || !type_len_ok(m.type, m.len))
        return refuse(HBD_WIRE_BAD_LENGTH, why_p);
    if (ctx != NULL) {
        if (m.src >= ctx->n_nodes || (ctx->peer != UINT32_MAX && m.src != ctx->peer))
            return refuse(HBD_WIRE_BAD_NODE, why_p);
        if (m.job > ctx->job_max)
            return refuse(HBD_WIRE_BAD_JOB, why_p);
    }
    if (m.inc == 0)
        return refuse(HBD_WIRE_BAD_INC, why_p);
    m.payload = m.len > 0 ? p + HBD_WIRE_HDR_LEN : NULL;
    if (m.type == HBD_WIRE_ABORT) {
        int32_t st = (int32_t)hbd_wire_get32(m.payload);
        if (st >= 0 || st < HB_ERR_LAST)
            return refuse(HBD_WIRE_BAD_PAYLOAD, why_p);
    }
    if (m.type == HBD_WIRE_HELLO &&
        ((ctx != NULL && hbd_wire_get32(m.payload) != ctx->n_nodes) || get64(m.payload + 32) == 0 ||
         hbd_wire_get32(m.payload + 52) != 0))
        return refuse(HBD_WIRE_BAD_PAYLOAD, why_p);
    if (m.type == HBD_WIRE_ABORT && (hbd_wire_get32(m.payload + 4) == m.src))
        return refuse(HBD_WIRE_BAD_PAYLOAD, why_p); /* nobody reports itself lost */
    if (m.type == HBD_WIRE_MEMBER &&
        ((ctx != NULL && hbd_wire_get32(m.payload) >= ctx->n_nodes) ||
         hbd_wire_get32(m.payload + 4) != 0 || get64(m.payload + 8) == 0))
        return refuse(HBD_WIRE_BAD_PAYLOAD, why_p);
    if (m.type == HBD_WIRE_COLL) {
        hbd_wire_coll_t c;
        hbd_wire_coll_unpack(m.payload, &c);
        if (c.op >= HBD_WIRE_COLL_OPS || c.alg >= HBD_WIRE_COLL_ALGS ||
            (c.flags & ~(HBD_WIRE_COLL_F_V | HBD_WIRE_COLL_F_FAIL)) != 0 ||
            ((c.op == 2 || c.op == HBD_WIRE_COLL_ALLTOALL) && (c.flags & HBD_WIRE_COLL_F_V)) ||
            ((c.flags & HBD_WIRE_COLL_F_FAIL) &&
             m.len - HBD_WIRE_COLL_HDR != HBD_WIRE_COLL_FAIL_LEN) ||
            (ctx != NULL && c.root >= ctx->n_nodes) ||
            c.off > UINT64_MAX - (m.len - HBD_WIRE_COLL_HDR))
            return refuse(HBD_WIRE_BAD_PAYLOAD, why_p);
    }
    if (m.type == HBD_WIRE_DMODEX) {
        /* a request is header + namespace + key (keylen bytes); a reply is header + namespace
         * + at most HBD_WIRE_DMODEX_MAX_DATA */
        hbd_wire_dmodex_t x;
        hbd_wire_dmodex_unpack(m.payload, &x);
        uint32_t min = HBD_WIRE_DMODEX_HDR + x.nslen;
        if ((x.kind != HBD_WIRE_DMODEX_REQ && x.kind != HBD_WIRE_DMODEX_REPLY) || x.nslen == 0 ||
            m.len < min || x.origin == x.dest ||
            (ctx != NULL && (x.origin >= ctx->n_nodes || x.dest >= ctx->n_nodes)) ||
            (x.kind == HBD_WIRE_DMODEX_REQ &&
             (x.keylen > HBD_WIRE_DMODEX_MAX_KEY || m.len != min + x.keylen || x.arg < 0)) ||
            (x.kind == HBD_WIRE_DMODEX_REPLY && x.keylen != 0) ||
            (x.kind == HBD_WIRE_DMODEX_REPLY &&
             (x.arg > 0 || m.len - min > HBD_WIRE_DMODEX_MAX_DATA || (x.arg != 0 && m.len != min))))
            return refuse(HBD_WIRE_BAD_PAYLOAD, why_p);
    }
    if (m.type == HBD_WIRE_JOB && !job_ok(&m, ctx))
        return refuse(HBD_WIRE_BAD_PAYLOAD, why_p);
    if (why_p != NULL)
        *why_p = HBD_WIRE_OK;
    if (msg_p != NULL)
        *msg_p = m;
    return 0;
}

int hbd_wire_decode(const void *buf, size_t len, const hbd_wire_ctx_t *ctx, hbd_wire_msg_t *msg_p,
                    hbd_wire_reason_t *why_p)
{
    return decode(buf, len, 0, ctx, msg_p, why_p);
}

int hbd_wire_decode_coll_split(const void *hdr, size_t hlen, size_t dlen, const hbd_wire_ctx_t *ctx,
                               hbd_wire_msg_t *msg_p, hbd_wire_reason_t *why_p)
{
    return decode(hdr, hlen, dlen, ctx, msg_p, why_p);
}

void hbd_wire_dmodex_pack(const hbd_wire_dmodex_t *x, uint8_t out[HBD_WIRE_DMODEX_HDR])
{
    out[0] = x->kind;
    out[1] = x->nslen;
    put16(out + 2, x->keylen);
    hbd_wire_put32(out + 4, x->id);
    hbd_wire_put32(out + 8, x->rank);
    hbd_wire_put32(out + 12, (uint32_t)x->arg);
    hbd_wire_put32(out + 16, x->origin);
    hbd_wire_put32(out + 20, x->dest);
}

void hbd_wire_job_pack(const hbd_wire_job_t *x, uint8_t out[HBD_WIRE_JOB_HDR])
{
    out[0] = x->kind;
    out[1] = x->flags;
    put16(out + 2, x->reserved);
    hbd_wire_put32(out + 4, x->src);
    hbd_wire_put32(out + 8, x->dest);
    hbd_wire_put32(out + 12, x->seq);
    put64(out + 16, x->arg);
}

void hbd_wire_job_unpack(const uint8_t in[HBD_WIRE_JOB_HDR], hbd_wire_job_t *x)
{
    x->kind = in[0];
    x->flags = in[1];
    x->reserved = get16(in + 2);
    x->src = hbd_wire_get32(in + 4);
    x->dest = hbd_wire_get32(in + 8);
    x->seq = hbd_wire_get32(in + 12);
    x->arg = get64(in + 16);
}

void hbd_wire_dmodex_unpack(const uint8_t in[HBD_WIRE_DMODEX_HDR], hbd_wire_dmodex_t *x)
{
    x->kind = in[0];
    x->nslen = in[1];
    x->keylen = get16(in + 2);
    x->id = hbd_wire_get32(in + 4);
    x->rank = hbd_wire_get32(in + 8);
    x->arg = (int32_t)hbd_wire_get32(in + 12);
    x->origin = hbd_wire_get32(in + 16);
    x->dest = hbd_wire_get32(in + 20);
}

void hbd_wire_hello_pack(const hbd_wire_hello_t *h, uint8_t out[HBD_WIRE_HELLO_LEN])
{
    hbd_wire_put32(out, h->n_nodes);
    hbd_wire_put32(out + 4, h->cluster_tag);
    hbd_wire_put32(out + 8, h->data_port);
    memcpy(out + 12, h->data_token, HBD_WIRE_TOKEN_LEN);
    hbd_wire_put32(out + 28, h->fast_port);
    put64(out + 32, h->inc);
    put64(out + 40, h->you_lost);
    hbd_wire_put32(out + 48, h->n_lost);
    hbd_wire_put32(out + 52, 0);
}

void hbd_wire_hello_unpack(const uint8_t in[HBD_WIRE_HELLO_LEN], hbd_wire_hello_t *h)
{
    h->n_nodes = hbd_wire_get32(in);
    h->cluster_tag = hbd_wire_get32(in + 4);
    h->data_port = hbd_wire_get32(in + 8);
    memcpy(h->data_token, in + 12, HBD_WIRE_TOKEN_LEN);
    h->fast_port = hbd_wire_get32(in + 28);
    h->inc = get64(in + 32);
    h->you_lost = get64(in + 40);
    h->n_lost = hbd_wire_get32(in + 48);
}

void hbd_wire_abort_pack(const hbd_wire_abort_t *a, uint8_t out[HBD_WIRE_ABORT_LEN])
{
    hbd_wire_put32(out, (uint32_t)a->status);
    hbd_wire_put32(out + 4, a->lost);
    put64(out + 8, a->inc);
}

void hbd_wire_abort_unpack(const uint8_t in[HBD_WIRE_ABORT_LEN], hbd_wire_abort_t *a)
{
    a->status = (int32_t)hbd_wire_get32(in);
    a->lost = hbd_wire_get32(in + 4);
    a->inc = get64(in + 8);
}

void hbd_wire_member_pack(const hbd_wire_member_t *x, uint8_t out[HBD_WIRE_MEMBER_LEN])
{
    hbd_wire_put32(out, x->node);
    hbd_wire_put32(out + 4, x->reserved);
    put64(out + 8, x->inc);
}

void hbd_wire_member_unpack(const uint8_t in[HBD_WIRE_MEMBER_LEN], hbd_wire_member_t *x)
{
    x->node = hbd_wire_get32(in);
    x->reserved = hbd_wire_get32(in + 4);
    x->inc = get64(in + 8);
}

void hbd_wire_coll_pack(const hbd_wire_coll_t *c, uint8_t out[HBD_WIRE_COLL_HDR])
{
    out[0] = c->op;
    out[1] = c->alg;
    out[2] = (uint8_t)c->flags;
    out[3] = (uint8_t)(c->flags >> 8);
    hbd_wire_put32(out + 4, c->root);
    put64(out + 8, c->size);
    hbd_wire_put32(out + 16, c->lanes);
    hbd_wire_put32(out + 20, c->seq);
    put64(out + 24, c->seg_size);
    put64(out + 32, c->off);
}

void hbd_wire_coll_unpack(const uint8_t in[HBD_WIRE_COLL_HDR], hbd_wire_coll_t *c)
{
    c->op = in[0];
    c->alg = in[1];
    c->flags = get16(in + 2);
    c->root = hbd_wire_get32(in + 4);
    c->size = get64(in + 8);
    c->lanes = hbd_wire_get32(in + 16);
    c->seq = hbd_wire_get32(in + 20);
    c->seg_size = get64(in + 24);
    c->off = get64(in + 32);
}

const char *hbd_wire_type_name(unsigned type)
{
    static const char *const names[] = {"?",     "hello", "heartbeat", "hier", "abort", "echo",
                                        "fence", "coll",  "dmodex",    "job",  "member"};
    return type_known(type) ? names[type] : "unknown";
}

const char *hbd_wire_reason_name(hbd_wire_reason_t why)
{
    static const char *const names[HBD_WIRE_N_REASONS] = {"ok",   "short", "magic",  "version",
                                                          "type", "flags", "length", "node",
                                                          "inc",  "job",   "payload"};
    return (unsigned)why < HBD_WIRE_N_REASONS ? names[why] : "unknown";
}

uint32_t hbd_wire_tag(const char *s)
{
    return hb_fnv32_str(s);
}
