/* test_xsc.c: the blobs of a collective of a rank set across nodes (daemon/launch/hbd_xsc.c):
 * the verdict and the data every member node reads from a release, the release trimmed for one
 * node, every refusal of a malformed or disagreeing blob, and random corruptions of good
 * releases, after which whatever is accepted points inside the release. */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hb_test.h"
#include "hbd_xsc.h"
#include "ncoll.h"

/* 8 job ranks on 4 nodes (rank r on node r / 2); the set: 7 of them, in an order of their own */
static const uint32_t MAP[8] = {0, 0, 1, 1, 2, 2, 3, 3};
static const uint32_t LIST[7] = {5, 0, 3, 6, 1, 7, 2};
#define N 7
#define NODES 4
static const hbd_xsc_set_t SET = {.n = N, .list = LIST, .map = MAP};

static uint8_t pat(uint32_t k, uint64_t j)
{
    return (uint8_t)(k * 31 + j * 7 + 1);
}

typedef struct rel {
    uint8_t *p;
    size_t len;
} rel_t;

/* One node's honest blob, as hibard makes it (its members in ascending member index): the
 * root's buffer where the root is there (bcast: pat(N, j); scatter: member k's block pat(k, j)),
 * every member's block pat(k, j) for gather and allgather. */
static void add_blob(rel_t *r, uint32_t node, uint32_t op, int32_t root, uint64_t count,
                     uint32_t mode)
{
    uint32_t mi[N], nh = 0;
    int root_here = 0;
    for (uint32_t k = 0; k < N; k++)
        if (hbd_xsc_on(&SET, k, node)) {
            mi[nh++] = k;
            root_here |= k == (uint32_t)root;
        }
    uint64_t dlen = mode ? 0 : hbd_xsc_data_len(op, count, N, nh, root_here);
    size_t idx = ((size_t)nh * 4 + 7) & ~(size_t)7, at = r->len;
    hbd_xsc_hdr_t h = {.magic = HBD_XSC_MAGIC,
                       .node = node,
                       .op = op,
                       .n_here = nh,
                       .root = root,
                       .count = count,
                       .order = 0x1234,
                       .data_len = dlen,
                       .mode = mode};
    r->len += sizeof(h) + idx + dlen;
    r->p = realloc(r->p, r->len);
    CU_ASSERT_FATAL(r->p != NULL);
    memset(r->p + at, 0, sizeof(h) + idx + dlen);
    memcpy(r->p + at, &h, sizeof(h));
    memcpy(r->p + at + sizeof(h), mi, nh * 4);
    uint8_t *d = r->p + at + sizeof(h) + idx;
    for (uint64_t j = 0; j < dlen; j++) {
        uint64_t b = count ? j / count : 0, o = count ? j % count : 0;
        d[j] = op == HB_NCOLL_BCAST     ? pat(N, j)
               : op == HB_NCOLL_SCATTER ? pat((uint32_t)b, o)
                                        : pat(mi[b], o);
    }
}

static rel_t release(uint32_t op, int32_t root, uint64_t count, uint32_t mode)
{
    rel_t r = {NULL, 0};
    for (uint32_t node = 0; node < NODES; node++)
        add_blob(&r, node, op, root, count, mode);
    return r;
}

/* The header of the b-th blob of r (its offset into *at). */
static hbd_xsc_hdr_t *hdr_of(rel_t *r, uint32_t b)
{
    size_t off = 0;
    hbd_xsc_hdr_t h;
    const uint8_t *mp, *dp;
    for (uint32_t i = 0; i < b; i++)
        CU_ASSERT_FATAL(hbd_xsc_next(&SET, r->p, r->len, &off, &h, &mp, &dp) == 0);
    return (hbd_xsc_hdr_t *)(void *)(r->p + off);
}

static int parse(const rel_t *r, uint32_t self, hbd_xsc_hdr_t *h, const uint8_t **dat,
                 const uint8_t **rootd)
{
    memset(dat, 0, N * sizeof(*dat));
    return hbd_xsc_parse(&SET, self, r->p, r->len, h, dat, rootd);
}

/* After a verdict of 0: every pointer handed out lies inside the release with its bytes. */
static int inside(const rel_t *r, uint32_t self, const hbd_xsc_hdr_t *h, const uint8_t **dat,
                  const uint8_t *rootd)
{
    const uint8_t *lo = r->p, *hi = r->p + r->len;
    for (uint32_t k = 0; k < N; k++)
        if (dat[k] != NULL && (dat[k] < lo || h->count > (uint64_t)(hi - dat[k])))
            return 0;
    if (rootd != NULL) {
        uint64_t want = h->op == HB_NCOLL_BCAST ? h->count : 0;
        if (h->op == HB_NCOLL_SCATTER) /* this node's members' blocks at most */
            for (uint32_t k = 0; k < N; k++)
                want += hbd_xsc_on(&SET, k, self) ? h->count : 0;
        if (rootd < lo || want > (uint64_t)(hi - rootd))
            return 0;
    }
    return 1;
}

/* Member k's output as node `self` would write it, checked against the patterns. */
static int right(uint32_t self, const hbd_xsc_hdr_t *h, const uint8_t **dat, const uint8_t *rootd)
{
    for (uint32_t k = 0; k < N; k++) {
        int here = hbd_xsc_on(&SET, k, self);
        for (uint64_t j = 0; j < h->count; j++) {
            if (h->op == HB_NCOLL_BCAST && rootd[j] != pat(N, j))
                return 0;
            if (h->op == HB_NCOLL_SCATTER && here && dat[k][j] != pat(k, j))
                return 0;
            if ((h->op == HB_NCOLL_GATHER || h->op == HB_NCOLL_ALLGATHER) && dat[k][j] != pat(k, j))
                return 0;
        }
    }
    return 1;
}

static const uint32_t OPS[4] = {HB_NCOLL_BCAST, HB_NCOLL_SCATTER, HB_NCOLL_GATHER,
                                HB_NCOLL_ALLGATHER};

static void test_good(void)
{
    const uint8_t *dat[N], *rootd;
    hbd_xsc_hdr_t h;
    for (uint32_t o = 0; o < 4; o++)
        for (int32_t root = 0; root < N; root += 3) {
            int32_t rt = OPS[o] == HB_NCOLL_ALLGATHER ? 0 : root;
            rel_t r = release(OPS[o], rt, 24, 0);
            for (uint32_t self = 0; self < NODES; self++) {
                CU_ASSERT_EQUAL(parse(&r, self, &h, dat, &rootd), 0);
                CU_ASSERT(h.op == OPS[o] && h.root == rt && h.count == 24);
                CU_ASSERT(inside(&r, self, &h, dat, rootd));
                CU_ASSERT(right(self, &h, dat, rootd));
            }
            free(r.p);
            /* mode 1: no data in the blobs, the same verdict */
            r = release(OPS[o], rt, 1 << 20, 1);
            CU_ASSERT_EQUAL(parse(&r, 1, &h, dat, &rootd), 0);
            CU_ASSERT(h.mode == 1 && rootd == NULL);
            free(r.p);
        }
}

/* The leader's release cut for each other node reads as the whole one does there; a gather's
 * is not cut for the root's node (its data goes there). */
static void test_cut(void)
{
    const uint8_t *dat[N], *rootd;
    hbd_xsc_hdr_t h;
    for (uint32_t o = 0; o < 4; o++)
        for (int32_t root = 0; root < N; root += 2) {
            rel_t r = release(OPS[o], root, 40, 0);
            for (uint32_t kid = 0; kid < NODES; kid++) {
                rel_t c = {NULL, 0};
                int cut = hbd_xsc_cut(&SET, kid, r.p, r.len, &c.p, &c.len);
                int want = OPS[o] == HB_NCOLL_SCATTER ||
                           (OPS[o] == HB_NCOLL_GATHER && MAP[LIST[root]] != kid);
                CU_ASSERT_EQUAL(cut, want);
                if (!cut)
                    continue;
                CU_ASSERT(c.len < r.len);
                CU_ASSERT_EQUAL(parse(&c, kid, &h, dat, &rootd), 0);
                CU_ASSERT(inside(&c, kid, &h, dat, rootd));
                if (OPS[o] == HB_NCOLL_SCATTER)
                    CU_ASSERT(right(kid, &h, dat, rootd));
                /* a cut gather that reaches the root's node is refused there */
                if (OPS[o] == HB_NCOLL_GATHER)
                    CU_ASSERT_EQUAL(parse(&c, MAP[LIST[root]], &h, dat, &rootd), HB_ERR_PROTO);
                free(c.p);
            }
            free(r.p);
        }
    /* blobs that disagree, or a failed node's: sent whole */
    rel_t r = release(HB_NCOLL_SCATTER, 0, 40, 0), c = {NULL, 0};
    hdr_of(&r, 2)->verdict = HB_ERR_INVAL;
    CU_ASSERT_EQUAL(hbd_xsc_cut(&SET, 1, r.p, r.len, &c.p, &c.len), 0);
    free(r.p);
}

/* One change to a good gather's release (blob b's header) and the verdict it must get. */
static void refused(uint32_t op, uint32_t b, void (*change)(hbd_xsc_hdr_t *, rel_t *), int want)
{
    const uint8_t *dat[N], *rootd;
    hbd_xsc_hdr_t h;
    rel_t r = release(op, 1, 16, 0);
    change(hdr_of(&r, b), &r);
    for (uint32_t self = 0; self < NODES; self++)
        CU_ASSERT_EQUAL(parse(&r, self, &h, dat, &rootd), want);
    free(r.p);
}

static void ch_magic(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->magic ^= 1;
}
static void ch_n_here(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->n_here = N + 1;
}
static void ch_root(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->root = N;
}
static void ch_root_neg(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->root = -1;
}
static void ch_op(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->op = HB_NCOLL_SCATTERV;
}
static void ch_data_len(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->data_len -= 16; /* the blobs after it then start inside its data */
}
static void ch_index(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    ((uint32_t *)(void *)(h + 1))[0] = N;
}
static void ch_dup(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    uint32_t *mi = (uint32_t *)(void *)(h + 1);
    mi[1] = mi[0];
}
static void ch_order(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->order ^= 1;
}
static void ch_count(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->count = 8; /* its data_len stays that of 16 (the blob whole): the counts differ */
}
static void ch_verdict(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->verdict = HB_ERR_TIMEOUT;
}
static void ch_verdict_odd(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->verdict = 5;
}
static void ch_cut_allgather(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)r;
    h->cut = 1;
}
static void ch_truncate(hbd_xsc_hdr_t *h, rel_t *r)
{
    (void)h;
    r->len--;
}
static void ch_missing(hbd_xsc_hdr_t *h, rel_t *r)
{
    r->len = (size_t)((uint8_t *)h - r->p); /* the last blob left out: members missing */
}

static void test_refused(void)
{
    refused(HB_NCOLL_GATHER, 1, ch_magic, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 2, ch_n_here, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 0, ch_root, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 3, ch_root_neg, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 1, ch_op, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 1, ch_data_len, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 2, ch_index, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 0, ch_dup, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 3, ch_truncate, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 3, ch_missing, HB_ERR_PROTO);
    refused(HB_NCOLL_ALLGATHER, 1, ch_cut_allgather, HB_ERR_PROTO);
    refused(HB_NCOLL_GATHER, 2, ch_order, HB_ERR_MISMATCH);
    refused(HB_NCOLL_GATHER, 1, ch_count, HB_ERR_MISMATCH);
    refused(HB_NCOLL_SCATTER, 3, ch_order, HB_ERR_MISMATCH);
    /* a failed node's verdict is everyone's (a code hibar does not know: PROTO) */
    refused(HB_NCOLL_GATHER, 2, ch_verdict, HB_ERR_TIMEOUT);
    refused(HB_NCOLL_GATHER, 2, ch_verdict_odd, HB_ERR_PROTO);
}

/* Blobs that agree among themselves on a count whose products wrap around: a gather of 2^63
 * bytes per member, whose nodes of 2 members say data_len 0 (2 * 2^63 mod 2^64). Accepted, it
 * would hand out blocks 2^63 bytes past the release. */
static void test_wrap(void)
{
    static const uint32_t map2[8] = {0, 0, 1, 1, 2, 2, 3, 3}, list2[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    hbd_xsc_set_t s = {.n = 8, .list = list2, .map = map2};
    rel_t r = {NULL, 0};
    for (uint32_t node = 0; node < 4; node++) {
        hbd_xsc_hdr_t h = {.magic = HBD_XSC_MAGIC,
                           .node = node,
                           .op = HB_NCOLL_GATHER,
                           .n_here = 2,
                           .root = 0,
                           .count = 1ull << 63,
                           .data_len = 0};
        uint32_t mi[2] = {2 * node, 2 * node + 1};
        r.p = realloc(r.p, r.len + sizeof(h) + 8);
        CU_ASSERT_FATAL(r.p != NULL);
        memcpy(r.p + r.len, &h, sizeof(h));
        memcpy(r.p + r.len + sizeof(h), mi, 8);
        r.len += sizeof(h) + 8;
    }
    const uint8_t *dat[8] = {0}, *rootd;
    hbd_xsc_hdr_t h;
    CU_ASSERT_EQUAL(hbd_xsc_parse(&s, 0, r.p, r.len, &h, dat, &rootd), HB_ERR_PROTO);
    uint8_t *o = NULL;
    size_t ol = 0;
    CU_ASSERT_EQUAL(hbd_xsc_cut(&s, 1, r.p, r.len, &o, &ol), 0);
    free(o);
    free(r.p);
}

/* Random corruptions of good releases (bytes changed, cut short, blobs repeated): every one gets
 * a verdict, an accepted one points inside the release, and a cut of it reads the same way. */
static void test_random(void)
{
    uint64_t x = 88172645463325252ull;
    const uint8_t *dat[N], *rootd;
    hbd_xsc_hdr_t h;
    unsigned accepted = 0;
    for (int it = 0; it < 20000; it++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t op = OPS[x % 4];
        rel_t r = release(op, (int32_t)((x >> 8) % N), 1 + (x >> 16) % 48, 0);
        uint32_t nchg = 1 + (uint32_t)((x >> 24) % 4);
        for (uint32_t c = 0; c < nchg; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            switch (x % 4) {
            case 0: /* a byte anywhere */
                r.p[(x >> 8) % r.len] ^= (uint8_t)(1u << ((x >> 40) % 8));
                break;
            case 1: /* a header field's low byte or word, most likely to matter */
            {
                size_t off = 0;
                hbd_xsc_hdr_t hh;
                const uint8_t *mp, *dp;
                uint32_t b = (uint32_t)((x >> 8) % NODES);
                for (uint32_t i = 0;
                     i < b && hbd_xsc_next(&SET, r.p, r.len, &off, &hh, &mp, &dp) == 0; i++)
                    ;
                size_t at = off + ((x >> 16) % (sizeof(hh) / 4)) * 4;
                if (at + 4 <= r.len) {
                    uint32_t v = (uint32_t)(x >> 32);
                    memcpy(r.p + at, &v, (x >> 30) % 2 ? 4 : 1);
                }
                break;
            }
            case 2: /* cut short */
                r.len -= (x >> 8) % (r.len / 2 + 1);
                break;
            default: /* the first blob again at the end */
            {
                size_t off = 0;
                hbd_xsc_hdr_t hh;
                const uint8_t *mp, *dp;
                if (hbd_xsc_next(&SET, r.p, r.len, &off, &hh, &mp, &dp) == 0) {
                    uint8_t *p = realloc(r.p, r.len + off);
                    CU_ASSERT_FATAL(p != NULL);
                    memcpy(p + r.len, p, off);
                    r.p = p;
                    r.len += off;
                }
            }
            }
        }
        uint32_t self = (uint32_t)((x >> 48) % NODES);
        int rc = parse(&r, self, &h, dat, &rootd);
        CU_ASSERT(rc <= 0 && rc >= HB_ERR_LAST);
        if (rc == 0) {
            accepted++;
            CU_ASSERT(inside(&r, self, &h, dat, rootd));
        }
        rel_t c = {NULL, 0};
        if (hbd_xsc_cut(&SET, self, r.p, r.len, &c.p, &c.len) == 1) {
            if (parse(&c, self, &h, dat, &rootd) == 0)
                CU_ASSERT(inside(&c, self, &h, dat, rootd));
            free(c.p);
        }
        free(r.p);
    }
    CU_ASSERT(accepted > 0); /* some corruptions are harmless: data bytes */
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("xsc", NULL, NULL);
    CU_add_test(s, "good releases, every op, root and node", test_good);
    CU_add_test(s, "the release cut for one node", test_cut);
    CU_add_test(s, "malformed and disagreeing blobs", test_refused);
    CU_add_test(s, "a count whose products wrap", test_wrap);
    CU_add_test(s, "random corruptions", test_random);
    return hb_test_run(CU_BRM_VERBOSE);
}
