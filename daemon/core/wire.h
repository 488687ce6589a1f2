/* wire.h: the message format between hibard daemons (doc/design.md section 5), encode and
 * validating decode. */
#ifndef HBD_WIRE_H
#define HBD_WIRE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Every frame is a fixed 32-byte little-endian header followed by the payload:
 *
 *   off size field
 *     0    4 magic        HBD_WIRE_MAGIC ("HBAR" read as bytes)
 *     4    1 version      HBD_WIRE_VERSION
 *     5    1 type         hbd_wire_type_t
 *     6    2 flags        HBD_WIRE_F_*; unknown bits are rejected
 *     8    4 job id
 *    12    8 collective id
 *    20    4 incarnation  the sender's (hbd_wire_inc32 of its 64-bit incarnation; 0 is never
 *                         valid; the transport drops a frame from another than the one it
 *                         knows for that node, doc/design.md section 5.1)
 *    24    4 source node  < ctx->n_nodes, and equal to the sender's routing id when known
 *    28    4 payload length, equal to the bytes that follow and legal for the type
 */
#define HBD_WIRE_MAGIC 0x52414248u /* 'H' 'B' 'A' 'R' in memory order */
#define HBD_WIRE_VERSION 2
#define HBD_WIRE_HDR_LEN 32
#define HBD_WIRE_MAX_PAYLOAD 1024
/* COLL frames carry larger payloads: a 40-byte header (op, alg, root, size, lanes, seq, seg
 * size, layout offset) then up to HBD_WIRE_COLL_MAX_DATA bytes of data */
#define HBD_WIRE_COLL_HDR 40
#define HBD_WIRE_COLL_MAX_DATA 262144
#define HBD_WIRE_COLL_MAX_PAYLOAD (HBD_WIRE_COLL_HDR + HBD_WIRE_COLL_MAX_DATA)
/* ECHO frames: T_SR probes (8 bytes), PlogP probes ([seq][mode] + up to 32 KiB: hbd_logp.c) */
#define HBD_WIRE_ECHO_MAX_PAYLOAD (8 + HBD_WIRE_COLL_MAX_DATA)
/* FENCE frames: a 12-byte header (hbd_fence.c) then up to HBD_WIRE_FENCE_MAX_DATA bytes (as
 * COLL: a 1 KiB-per-rank fence of a few hundred ranks is one frame per edge) */
#define HBD_WIRE_FENCE_HDR 12
#define HBD_WIRE_FENCE_MAX_DATA HBD_WIRE_COLL_MAX_DATA
#define HBD_WIRE_FENCE_MAX_PAYLOAD (HBD_WIRE_FENCE_HDR + HBD_WIRE_FENCE_MAX_DATA)
/* DMODEX frames: a 24-byte header, the namespace (1..255 bytes), then: requests the required
 * key (0..HBD_WIRE_DMODEX_MAX_KEY bytes), replies up to HBD_WIRE_DMODEX_MAX_DATA bytes of the
 * process' modex blob */
#define HBD_WIRE_DMODEX_HDR 24
#define HBD_WIRE_DMODEX_MAX_DATA 32768
#define HBD_WIRE_DMODEX_MAX_KEY 511 /* PMIX_MAX_KEYLEN */
#define HBD_WIRE_DMODEX_MAX_PAYLOAD (HBD_WIRE_DMODEX_HDR + 255 + HBD_WIRE_DMODEX_MAX_DATA)
#define HBD_WIRE_DMODEX_REQ 1
#define HBD_WIRE_DMODEX_REPLY 2
/* JOB frames (launch forwarding, hbd_relay.c): a 24-byte header then, for SPEC and OUT only,
 * 1..HBD_WIRE_JOB_MAX_DATA bytes; the job id is the frame's collective id */
#define HBD_WIRE_JOB_HDR 24
#define HBD_WIRE_JOB_MAX_DATA 32768
#define HBD_WIRE_JOB_MAX_PAYLOAD (HBD_WIRE_JOB_HDR + HBD_WIRE_JOB_MAX_DATA)
#define HBD_WIRE_JOB_SPEC_MAX (16u << 20) /* a job spec's largest size (= HBD_JOB_SPEC_MAX) */
#define HBD_WIRE_MAX_FRAME (HBD_WIRE_HDR_LEN + HBD_WIRE_MAX_PAYLOAD)
#define HBD_WIRE_COLL_MAX_FRAME (HBD_WIRE_HDR_LEN + HBD_WIRE_COLL_MAX_PAYLOAD)

typedef enum hbd_wire_type {
    HBD_WIRE_HELLO = 1,     /* link set-up: payload = hbd_wire_hello_t (32 bytes) */
    HBD_WIRE_HEARTBEAT = 2, /* liveness, no payload */
    HBD_WIRE_HIER = 3,      /* a barrier protocol message: payload = 4-byte hier message kind */
    HBD_WIRE_ABORT = 4,     /* failure flood: payload = hbd_wire_abort_t (16 bytes) */
    HBD_WIRE_ECHO = 5,      /* T_SR probe: payload echoed back, flag REPLY set on the answer */
    HBD_WIRE_FENCE = 6,     /* fence data chunk: 12-byte header (hbd_fence.c) + up to 256 KiB */
    HBD_WIRE_COLL = 7, /* collective segment: HBD_WIRE_COLL_HDR-byte header (hbd_coll.c) + data */
    HBD_WIRE_DMODEX =
        8,            /* direct modex request / reply: hbd_wire_dmodex_t header + nspace + data */
    HBD_WIRE_JOB = 9, /* launch forwarding: hbd_wire_job_t header + spec chunk / output lines */
    HBD_WIRE_MEMBER = 10, /* membership flood: a node is up at an incarnation (hbd_wire_member_t) */
    HBD_WIRE_TYPE_MAX = 10
} hbd_wire_type_t;

#define HBD_WIRE_F_REPLY 0x0001u /* this frame answers a HELLO or an ECHO */
#define HBD_WIRE_F_ALL 0x0001u

/* Why a frame was refused; each has its own counter in the daemon's stats. */
typedef enum hbd_wire_reason {
    HBD_WIRE_OK = 0,
    HBD_WIRE_BAD_SHORT,   /* fewer bytes than the header */
    HBD_WIRE_BAD_MAGIC,   /* magic does not match */
    HBD_WIRE_BAD_VERSION, /* unknown protocol version */
    HBD_WIRE_BAD_TYPE,    /* unknown message type */
    HBD_WIRE_BAD_FLAGS,   /* unknown flag bits */
    HBD_WIRE_BAD_LENGTH,  /* payload length disagrees with the frame or the type */
    HBD_WIRE_BAD_NODE,    /* source node unknown, or not the peer it came from */
    HBD_WIRE_BAD_INC,     /* incarnation 0, or not the sender's current one (a stale frame) */
    HBD_WIRE_BAD_JOB,     /* job id not served by this daemon */
    HBD_WIRE_BAD_PAYLOAD, /* payload content invalid for the type */
    HBD_WIRE_N_REASONS
} hbd_wire_reason_t;

/* A decoded message; payload points into the decoded buffer (not copied). */
typedef struct hbd_wire_msg {
    uint8_t type;
    uint16_t flags;
    uint32_t job;
    uint64_t coll_id;
    uint32_t inc; /* the sender's incarnation (hbd_wire_inc32) */
    uint32_t src;
    uint32_t len;
    const uint8_t *payload;
} hbd_wire_msg_t;

/* What the receiver knows, to judge a frame. */
typedef struct hbd_wire_ctx {
    uint32_t n_nodes; /* nodes in the cluster; src must be below */
    uint32_t job_max; /* highest job id served (0: only job 0) */
    uint32_t peer;    /* node the frame came from (routing id), or UINT32_MAX if unknown */
} hbd_wire_ctx_t;

/* HELLO payload: who is speaking, the cluster fingerprint it believes in, and where it takes
 * collective data when the cluster's data_plane is plain (hbd_net.c). */
#define HBD_WIRE_HELLO_LEN 56
#define HBD_WIRE_TOKEN_LEN 16
typedef struct hbd_wire_hello {
    uint32_t n_nodes;     /* size of the sender's cluster */
    uint32_t cluster_tag; /* hash of the cluster name */
    uint32_t data_port;   /* TCP port of its plain data socket; 0: none (data_plane curve) */
    uint8_t data_token[HBD_WIRE_TOKEN_LEN]; /* what a peer must present there (and on the fast
                                             * lane) */
    uint32_t fast_port;                     /* TCP port of its fast lane (hbd_fast.c); 0: none */
    uint64_t inc;      /* the sender's incarnation (nonzero; a later start has a larger one) */
    uint64_t you_lost; /* the receiver's incarnation the sender holds lost, or 0 */
    uint32_t n_lost;   /* how many nodes the sender holds lost */
} hbd_wire_hello_t;

/* ABORT payload: node `lost` at incarnation `inc` is gone. */
#define HBD_WIRE_ABORT_LEN 16
typedef struct hbd_wire_abort {
    int32_t status; /* negative HB_ERR_* what it was in fails with */
    uint32_t lost;  /* node found lost, or UINT32_MAX */
    uint64_t inc;   /* its incarnation that was lost (0: whichever it had) */
} hbd_wire_abort_t;

/* MEMBER payload: node `node` is up at incarnation `inc` (it joined, restarted or rejoined). */
#define HBD_WIRE_MEMBER_LEN 16
typedef struct hbd_wire_member {
    uint32_t node;     /* < n_nodes */
    uint32_t reserved; /* 0 */
    uint64_t inc;      /* nonzero */
} hbd_wire_member_t;

/* The header's 32-bit incarnation field for a 64-bit incarnation (never 0). */
static inline uint32_t hbd_wire_inc32(uint64_t inc)
{
    return (uint32_t)(inc ^ (inc >> 32)) | 1u;
}

/* COLL payload header: the collective's arguments (so a daemon can build the schedule from
 * the first frame, before its own ranks asked) and the segment's place in the layout. */
#define HBD_WIRE_COLL_F_V 0x0001u /* -v form: node i's bytes = hbd_coll_vcount(size, i) */
/* The sender's run failed (a buffer it could not read or write, no memory...): the 4 data bytes
 * are its status (i32 le, a HB_ERR_*), and the receiver's run fails with it (hbd_coll.c) */
#define HBD_WIRE_COLL_F_FAIL 0x0002u
#define HBD_WIRE_COLL_FAIL_LEN 4u
#define HBD_WIRE_COLL_OPS 5u      /* op below: HB_COLL_OP_COUNT (hbd_coll.c checks) */
#define HBD_WIRE_COLL_ALGS 5u     /* alg below: HB_COLL_ALG_COUNT */
#define HBD_WIRE_COLL_ALLTOALL 4u /* no -v form, as bcast (2) */
typedef struct hbd_wire_coll {
    uint8_t op, alg; /* hb_coll_op_t, hb_coll_alg_t: below HBD_WIRE_COLL_OPS, _ALGS */
    uint16_t flags;  /* HBD_WIRE_COLL_F_*; other bits 0 */
    uint32_t root;   /* < n_nodes */
    uint64_t size;   /* bytes per node (bcast: in total) */
    uint32_t lanes;
    uint32_t seq;      /* per (sender, receiver) segment number */
    uint64_t seg_size; /* pipelining segment */
    uint64_t off;      /* layout offset of the data that follows */
} hbd_wire_coll_t;

/* DMODEX payload header (validated by hbd_wire_decode: kind, nslen, keylen, the lengths). */
typedef struct hbd_wire_dmodex {
    uint8_t kind;    /* HBD_WIRE_DMODEX_REQ or _REPLY */
    uint8_t nslen;   /* namespace bytes after the header, 1..255 */
    uint16_t keylen; /* request: PMIX_REQUIRED_KEY bytes after the namespace; reply: 0 */
    uint32_t id;     /* the requester's request id */
    uint32_t rank;   /* the process asked for */
    int32_t arg;     /* request: timeout in ms (>= 0); reply: PMIx status (<= 0) */
    uint32_t origin; /* node that made this request / reply (< n_nodes) */
    uint32_t dest;   /* node it is for (< n_nodes); forwarded hop by hop along the tree */
} hbd_wire_dmodex_t;
void hbd_wire_dmodex_pack(const hbd_wire_dmodex_t *x, uint8_t out[HBD_WIRE_DMODEX_HDR]);
void hbd_wire_dmodex_unpack(const uint8_t in[HBD_WIRE_DMODEX_HDR], hbd_wire_dmodex_t *x);

/*
 * JOB payload header (validated by hbd_wire_decode: kind, flags, reserved, nodes, lengths, arg).
 * The origin daemon (the one hibar-run talks to) asks the cluster's root for the job's slot
 * (ALLOC, answered by SLOT), then sends SPEC chunks and KILL to every other node of the job;
 * each sends OUT (its launcher's lines) and END back; once every node ended the origin tells
 * each how to clean the job's sync numbers (DRAIN), and once all are CLEAN gives the slot back
 * (FREE). Frames go hop by hop along the chassis data tree (dest is where they
 * are for).
 */
typedef enum hbd_wire_job_kind {
    HBD_WIRE_JOB_SPEC = 1,  /* a chunk of the job spec: seq = chunk number, arg = spec bytes;
                             * every chunk but the last carries exactly HBD_WIRE_JOB_MAX_DATA */
    HBD_WIRE_JOB_KILL = 2,  /* stop the job's ranks on dest */
    HBD_WIRE_JOB_OUT = 3,   /* launcher lines of src (each ends with '\n', no NUL); seq counts
                             * src's OUT and END frames of the job from 0 */
    HBD_WIRE_JOB_END = 4,   /* src's part of the job ended (seq: its last); arg = sync base << 8
                             * | count (0: no barrier engine), data = that many u32: the chassis
                             * rounds src arrived at on each of the job's sync numbers */
    HBD_WIRE_JOB_ALLOC = 5, /* to the root: a slot for the job whose nodes are the bits set in
                             * the data (bit i of byte i / 8: node i; (n_nodes + 7) / 8 bytes);
                             * arg = its ranks */
    HBD_WIRE_JOB_SLOT = 6,  /* the root's answer: seq = -status (0: given), arg = job number << 32
                             * | sync base << 8 | sync count; data: why not (text, no NUL) */
    HBD_WIRE_JOB_FREE = 7,  /* to the root: job number arg ended everywhere */
    HBD_WIRE_JOB_DRAIN = 8, /* origin -> node: arrive once more at the sync numbers of bitmap arg
                             * (0: none), then report CLEAN (hbd_barrier_job_drain) */
    HBD_WIRE_JOB_CLEAN = 9, /* node -> origin: the job's sync numbers are clean here */
    /* origin -> node: it took node's OUT and END frames below seq (UINT32_MAX: it takes no
     * more), and arg more bytes of OUT data may be sent (flow control, hbd_relay.c) */
    HBD_WIRE_JOB_CREDIT = 10,
    HBD_WIRE_JOB_CENSUS = 11, /* a new root -> node: which jobs' sync numbers do you hold? */
    HBD_WIRE_JOB_HOLD = 12,   /* node -> root: arg records of HBD_WIRE_JOB_HOLD_REC bytes (job
                               * number, sync base, sync count, origin, ranks, job id) */
    HBD_WIRE_JOB_KIND_MAX = 12
} hbd_wire_job_kind_t;
#define HBD_WIRE_JOB_HOLD_REC 24
#define HBD_WIRE_JOB_HOLD_MAX 64  /* records in one HOLD (a daemon's relayed jobs at most) */
#define HBD_WIRE_JOB_F_LAST 0x01u /* SPEC: the last chunk (offset + bytes == arg) */
typedef struct hbd_wire_job {
    uint8_t kind;      /* hbd_wire_job_kind_t */
    uint8_t flags;     /* HBD_WIRE_JOB_F_LAST on the last SPEC chunk only */
    uint16_t reserved; /* 0 */
    uint32_t src;      /* node that made the frame (< n_nodes) */
    uint32_t dest;     /* node it is for (< n_nodes, != src) */
    uint32_t seq;
    uint64_t arg;
} hbd_wire_job_t;
void hbd_wire_job_pack(const hbd_wire_job_t *x, uint8_t out[HBD_WIRE_JOB_HDR]);
void hbd_wire_job_unpack(const uint8_t in[HBD_WIRE_JOB_HDR], hbd_wire_job_t *x);

/*
 * Encode header + payload into buf (cap bytes). Returns the frame length (> 0), or
 * HB_ERR_INVAL (unknown type, payload illegal for the type) or HB_ERR_TRUNCATED (cap too
 * small). Pure, thread-safe.
 */
int hbd_wire_encode(const hbd_wire_msg_t *msg, void *buf, size_t cap);
/* Only the header (msg->len says how long the payload that follows will be; msg->payload is
 * not read): for senders that place the payload themselves. 0 or HB_ERR_INVAL. */
int hbd_wire_encode_hdr(const hbd_wire_msg_t *msg, uint8_t hdr[HBD_WIRE_HDR_LEN]);

/*
 * Decode and validate one frame of len bytes. Every field is checked against ctx before use.
 * Returns 0 and fills *msg_p, or HB_ERR_PROTO with *why_p saying which check failed
 * (why_p may be NULL). Never reads outside buf[0..len). Pure, thread-safe.
 */
int hbd_wire_decode(const void *buf, size_t len, const hbd_wire_ctx_t *ctx, hbd_wire_msg_t *msg_p,
                    hbd_wire_reason_t *why_p);
/*
 * A COLL frame in two pieces: hdr (hlen == HBD_WIRE_HDR_LEN + HBD_WIRE_COLL_HDR: the frame
 * header and the collective header) and dlen bytes of data elsewhere (the plain data plane
 * sends the data as a second ZeroMQ frame, without copying it). Same checks as
 * hbd_wire_decode on the whole; *msg_p's payload is the 40-byte collective header only.
 * Anything else (another type, another header length) is refused.
 */
int hbd_wire_decode_coll_split(const void *hdr, size_t hlen, size_t dlen, const hbd_wire_ctx_t *ctx,
                               hbd_wire_msg_t *msg_p, hbd_wire_reason_t *why_p);

/* Typed payload helpers (little-endian). */
void hbd_wire_hello_pack(const hbd_wire_hello_t *h, uint8_t out[HBD_WIRE_HELLO_LEN]);
void hbd_wire_hello_unpack(const uint8_t in[HBD_WIRE_HELLO_LEN], hbd_wire_hello_t *h);
void hbd_wire_abort_pack(const hbd_wire_abort_t *a, uint8_t out[HBD_WIRE_ABORT_LEN]);
void hbd_wire_abort_unpack(const uint8_t in[HBD_WIRE_ABORT_LEN], hbd_wire_abort_t *a);
void hbd_wire_member_pack(const hbd_wire_member_t *x, uint8_t out[HBD_WIRE_MEMBER_LEN]);
void hbd_wire_member_unpack(const uint8_t in[HBD_WIRE_MEMBER_LEN], hbd_wire_member_t *x);
void hbd_wire_coll_pack(const hbd_wire_coll_t *c, uint8_t out[HBD_WIRE_COLL_HDR]);
void hbd_wire_coll_unpack(const uint8_t in[HBD_WIRE_COLL_HDR], hbd_wire_coll_t *c);
uint32_t hbd_wire_get32(const uint8_t *p);
void hbd_wire_put32(uint8_t *p, uint32_t v);

/* Name of a type / reason, for logs and stats. Never NULL. */
const char *hbd_wire_type_name(unsigned type);
const char *hbd_wire_reason_name(hbd_wire_reason_t why);

/* 32-bit FNV-1a of a string (the cluster tag in HELLO). */
uint32_t hbd_wire_tag(const char *s);

#endif
