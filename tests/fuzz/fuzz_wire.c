/* fuzz_wire.c: libFuzzer target for the daemon frame decoder (hbd_wire_decode). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hibar.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the first byte picks the receiver context so every check is reachable */
    hbd_wire_ctx_t ctx = {.n_nodes = 30, .job_max = 1, .peer = UINT32_MAX};
    hbd_wire_msg_t m;
    hbd_wire_reason_t why = HBD_WIRE_N_REASONS;
    if (size > 0 && (data[0] & 1))
        ctx.peer = data[0] >> 1;
    int rc = hbd_wire_decode(data, size, size > 0 && (data[0] & 0x80) ? NULL : &ctx, &m, &why);
    if (rc == 0) {
        /* an accepted frame must re-encode to the same bytes */
        static uint8_t
            out[HBD_WIRE_COLL_MAX_FRAME + HBD_WIRE_DMODEX_MAX_PAYLOAD + HBD_WIRE_JOB_MAX_PAYLOAD];
        uint32_t max = m.type == HBD_WIRE_COLL     ? HBD_WIRE_COLL_MAX_PAYLOAD
                       : m.type == HBD_WIRE_FENCE  ? HBD_WIRE_FENCE_MAX_PAYLOAD
                       : m.type == HBD_WIRE_DMODEX ? HBD_WIRE_DMODEX_MAX_PAYLOAD
                       : m.type == HBD_WIRE_JOB    ? HBD_WIRE_JOB_MAX_PAYLOAD
                       : m.type == HBD_WIRE_ECHO   ? HBD_WIRE_ECHO_MAX_PAYLOAD
                                                   : HBD_WIRE_MAX_PAYLOAD;
        if (why != HBD_WIRE_OK || m.len > max)
            __builtin_trap();
        int n = hbd_wire_encode(&m, out, sizeof(out));
        if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
            __builtin_trap();
        if (m.type == HBD_WIRE_DMODEX) {
            hbd_wire_dmodex_t x;
            hbd_wire_dmodex_unpack(m.payload, &x);
            if (x.nslen == 0 || HBD_WIRE_DMODEX_HDR + (uint32_t)x.nslen > m.len ||
                (x.kind == HBD_WIRE_DMODEX_REQ &&
                 (x.arg < 0 || x.keylen > HBD_WIRE_DMODEX_MAX_KEY ||
                  m.len != HBD_WIRE_DMODEX_HDR + (uint32_t)x.nslen + x.keylen)) ||
                (x.kind == HBD_WIRE_DMODEX_REPLY && x.keylen != 0) ||
                (x.kind == HBD_WIRE_DMODEX_REPLY && x.arg > 0) || x.origin == x.dest)
                __builtin_trap();
        }
        if (m.type == HBD_WIRE_JOB) {
            /* what the relay relies on without checking again */
            hbd_wire_job_t x;
            hbd_wire_job_unpack(m.payload, &x);
            uint32_t dl = m.len - HBD_WIRE_JOB_HDR;
            const uint8_t *dt = m.payload + HBD_WIRE_JOB_HDR;
            if (x.kind == 0 || x.kind > HBD_WIRE_JOB_KIND_MAX || x.src == x.dest ||
                (x.kind == HBD_WIRE_JOB_SPEC &&
                 (dl == 0 || (uint64_t)x.seq * HBD_WIRE_JOB_MAX_DATA + dl > x.arg ||
                  x.arg > HBD_WIRE_JOB_SPEC_MAX)) ||
                (x.kind == HBD_WIRE_JOB_OUT &&
                 (dl == 0 || dt[dl - 1] != '\n' || memchr(dt, 0, dl) != NULL)) ||
                (x.kind != HBD_WIRE_JOB_SPEC && x.kind != HBD_WIRE_JOB_OUT &&
                 x.kind != HBD_WIRE_JOB_ALLOC && x.kind != HBD_WIRE_JOB_SLOT &&
                 x.kind != HBD_WIRE_JOB_END && x.kind != HBD_WIRE_JOB_HOLD && dl != 0) ||
                (x.kind == HBD_WIRE_JOB_HOLD &&
                 (x.arg > HBD_WIRE_JOB_HOLD_MAX || dl != x.arg * HBD_WIRE_JOB_HOLD_REC)) ||
                (x.kind == HBD_WIRE_JOB_END && dl != (x.arg & 0xff) * 4) ||
                (x.kind == HBD_WIRE_JOB_ALLOC && dl == 0) ||
                (x.kind == HBD_WIRE_JOB_FREE && (x.arg == 0 || x.arg > UINT32_MAX)))
                __builtin_trap();
        }
        if (m.type == HBD_WIRE_ABORT) {
            hbd_wire_abort_t a;
            hbd_wire_abort_unpack(m.payload, &a);
            if (a.status >= 0 || a.lost == m.src)
                __builtin_trap();
        }
    } else if (rc != HIBAR_ERR_PROTO || why == HBD_WIRE_OK || why >= HBD_WIRE_N_REASONS) {
        __builtin_trap();
    }
    (void)hbd_wire_reason_name(why);
    return 0;
}
