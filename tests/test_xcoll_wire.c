/* test_xcoll_wire.c: CUnit tests of the COLL frame (collectives across daemons): round trip and
 * every refusal of its payload. */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hibar.h"
#include "wire.h"
#include "hb_test.h"

static const hbd_wire_ctx_t ctx = {.n_nodes = 16, .job_max = 0, .peer = 3};

static uint8_t frame[HBD_WIRE_COLL_MAX_FRAME];
static uint8_t pl[HBD_WIRE_COLL_MAX_PAYLOAD + 1];

static hbd_wire_coll_t good(void)
{
    hbd_wire_coll_t c = {.op = 1,
                         .alg = 3,
                         .flags = 0,
                         .root = 15,
                         .size = 4194304ull,
                         .lanes = 4,
                         .seq = 77,
                         .seg_size = 32768,
                         .off = 0x123456789ull};
    return c;
}

/* Encode a COLL frame with header c and dlen data bytes; the decode status. */
static int roundtrip(const hbd_wire_coll_t *c, uint32_t dlen, hbd_wire_msg_t *m_p,
                     hbd_wire_reason_t *why_p)
{
    hbd_wire_coll_pack(c, pl);
    for (uint32_t i = 0; i < dlen; i++)
        pl[HBD_WIRE_COLL_HDR + i] = (uint8_t)(i * 13 + 1);
    hbd_wire_msg_t m = {.type = HBD_WIRE_COLL,
                        .coll_id = 9,
                        .inc = 2,
                        .src = 3,
                        .len = HBD_WIRE_COLL_HDR + dlen,
                        .payload = pl};
    int n = hbd_wire_encode(&m, frame, sizeof(frame));
    if (n < 0)
        return n;
    return hbd_wire_decode(frame, (size_t)n, &ctx, m_p, why_p);
}

static void test_roundtrip(void)
{
    hbd_wire_coll_t c = good(), d;
    hbd_wire_msg_t m;
    hbd_wire_reason_t why = HBD_WIRE_N_REASONS;
    CU_ASSERT_EQUAL(roundtrip(&c, HBD_WIRE_COLL_MAX_DATA, &m, &why), 0);
    CU_ASSERT_EQUAL(why, HBD_WIRE_OK);
    CU_ASSERT_EQUAL(m.type, HBD_WIRE_COLL);
    CU_ASSERT_EQUAL(m.len, HBD_WIRE_COLL_MAX_PAYLOAD);
    hbd_wire_coll_unpack(m.payload, &d);
    CU_ASSERT(d.op == c.op && d.alg == c.alg && d.flags == c.flags && d.root == c.root);
    CU_ASSERT(d.size == c.size && d.lanes == c.lanes && d.seq == c.seq);
    CU_ASSERT(d.seg_size == c.seg_size && d.off == c.off);
    CU_ASSERT_EQUAL(m.payload[HBD_WIRE_COLL_HDR + 5], 5 * 13 + 1);
    /* header only (an empty block) is legal; -v flag legal for scatter */
    c.flags = HBD_WIRE_COLL_F_V;
    c.op = 0;
    CU_ASSERT_EQUAL(roundtrip(&c, 0, &m, &why), 0);
    CU_ASSERT_STRING_EQUAL(hbd_wire_type_name(HBD_WIRE_COLL), "coll");
}

/* The plain data plane's two-part COLL: header + collective header here, data elsewhere. */
static void test_split(void)
{
    hbd_wire_coll_t c = good(), d;
    hbd_wire_msg_t m;
    hbd_wire_reason_t why = HBD_WIRE_N_REASONS;
    const size_t hl = HBD_WIRE_HDR_LEN + HBD_WIRE_COLL_HDR;
    CU_ASSERT_EQUAL_FATAL(roundtrip(&c, 1000, &m, &why), 0); /* frame = head + 1000 bytes */
    CU_ASSERT_EQUAL(hbd_wire_decode_coll_split(frame, hl, 1000, &ctx, &m, &why), 0);
    CU_ASSERT_EQUAL(why, HBD_WIRE_OK);
    CU_ASSERT_EQUAL(m.len, HBD_WIRE_COLL_HDR + 1000);
    hbd_wire_coll_unpack(m.payload, &d);
    CU_ASSERT(d.seq == c.seq && d.off == c.off);
    /* the data's length must be what the header says */
    CU_ASSERT_EQUAL(hbd_wire_decode_coll_split(frame, hl, 999, &ctx, &m, &why), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, HBD_WIRE_BAD_LENGTH);
    CU_ASSERT_EQUAL(
        hbd_wire_decode_coll_split(frame, hl, HBD_WIRE_COLL_MAX_DATA + 1, &ctx, &m, &why),
        HIBAR_ERR_PROTO);
    /* a head of another length, or another type, never splits */
    CU_ASSERT_EQUAL(hbd_wire_decode_coll_split(frame, hl + 1, 999, &ctx, &m, &why),
                    HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, HBD_WIRE_BAD_LENGTH);
    frame[5] = HBD_WIRE_FENCE;
    CU_ASSERT_EQUAL(hbd_wire_decode_coll_split(frame, hl, 1000, &ctx, &m, &why), HIBAR_ERR_PROTO);
    frame[5] = HBD_WIRE_COLL;
    /* the collective header is still checked */
    frame[HBD_WIRE_HDR_LEN] = 9; /* op */
    CU_ASSERT_EQUAL(hbd_wire_decode_coll_split(frame, hl, 1000, &ctx, &m, &why), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, HBD_WIRE_BAD_PAYLOAD);
    CU_ASSERT_EQUAL(hbd_wire_decode_coll_split(NULL, 0, 10, &ctx, &m, &why), HIBAR_ERR_PROTO);
}

static void expect_refused(const hbd_wire_coll_t *c, uint32_t dlen, hbd_wire_reason_t reason)
{
    hbd_wire_msg_t m;
    hbd_wire_reason_t why = HBD_WIRE_OK;
    CU_ASSERT_EQUAL(roundtrip(c, dlen, &m, &why), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, reason);
}

static void test_refused(void)
{
    hbd_wire_coll_t c;
    c = good(), c.op = 5;
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    c = good(), c.alg = 5;
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    c = good(), c.op = 4, c.flags = HBD_WIRE_COLL_F_V; /* no alltoallv */
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    c = good(), c.flags = 4; /* no such flag */
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    /* a run's failure: exactly its 4-byte status, on any operation */
    c = good(), c.flags = HBD_WIRE_COLL_F_FAIL;
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    expect_refused(&c, 0, HBD_WIRE_BAD_PAYLOAD);
    {
        hbd_wire_msg_t m;
        CU_ASSERT_EQUAL(roundtrip(&c, HBD_WIRE_COLL_FAIL_LEN, &m, NULL), 0);
        c.op = 2; /* bcast */
        CU_ASSERT_EQUAL(roundtrip(&c, HBD_WIRE_COLL_FAIL_LEN, &m, NULL), 0);
    }
    c = good(), c.op = 2, c.flags = HBD_WIRE_COLL_F_V; /* no bcastv */
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    c = good(), c.root = 16;
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    c = good(), c.off = UINT64_MAX - 5; /* off + len wraps */
    expect_refused(&c, 10, HBD_WIRE_BAD_PAYLOAD);
    c = good(), c.off = UINT64_MAX - 10; /* ends exactly at the top: legal */
    {
        hbd_wire_msg_t m;
        CU_ASSERT_EQUAL(roundtrip(&c, 10, &m, NULL), 0);
    }
    /* lengths: shorter than the header, longer than the largest payload */
    hbd_wire_msg_t m = {.type = HBD_WIRE_COLL,
                        .coll_id = 9,
                        .inc = 2,
                        .src = 3,
                        .len = HBD_WIRE_COLL_HDR - 1,
                        .payload = pl};
    CU_ASSERT_EQUAL(hbd_wire_encode(&m, frame, sizeof(frame)), HIBAR_ERR_INVAL);
    m.len = HBD_WIRE_COLL_MAX_PAYLOAD + 1;
    CU_ASSERT_EQUAL(hbd_wire_encode(&m, frame, sizeof(frame)), HIBAR_ERR_INVAL);
    /* a forged header with a short payload */
    c = good();
    hbd_wire_coll_pack(&c, pl);
    m.len = HBD_WIRE_COLL_HDR;
    int n = hbd_wire_encode(&m, frame, sizeof(frame));
    CU_ASSERT_EQUAL_FATAL(n, HBD_WIRE_HDR_LEN + HBD_WIRE_COLL_HDR);
    frame[28] = HBD_WIRE_COLL_HDR - 1; /* payload length field */
    hbd_wire_reason_t why = HBD_WIRE_OK;
    CU_ASSERT_EQUAL(hbd_wire_decode(frame, (size_t)n - 1, &ctx, NULL, &why), HIBAR_ERR_PROTO);
    CU_ASSERT_EQUAL(why, HBD_WIRE_BAD_LENGTH);
}

int main(void)
{
    CU_pSuite s;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    s = CU_add_suite("xcoll_wire", NULL, NULL);
    if (s == NULL || CU_add_test(s, "COLL round trip", test_roundtrip) == NULL ||
        CU_add_test(s, "COLL refusals", test_refused) == NULL ||
        CU_add_test(s, "COLL in two pieces", test_split) == NULL) {
        CU_cleanup_registry();
        return 99;
    }
    return hb_test_run(CU_BRM_VERBOSE);
}
