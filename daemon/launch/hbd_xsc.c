/* hbd_xsc.c: reading the blobs of a collective of a rank set across nodes (doc/design.md 7.3;
 * the layout and each function: hbd_xsc.h): the verdict every member node reaches from all of
 * them, and the release the fence's leader trims for one member node. Pure functions of the
 * bytes and the set, so that what a peer daemon sends is checked in one place
 * (tests/test_xsc.c, tests/fuzz/fuzz_xsc.c). hbd_ranks.c makes the blob from the ranks'
 * records, sends it and writes the outputs. */
#include "hb_config.h"

#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hbd_xsc.h"
#include "ncoll.h"

int hbd_xsc_rooted(uint32_t op)
{
    return op == HB_NCOLL_BCAST || op == HB_NCOLL_SCATTER;
}

uint64_t hbd_xsc_data_len(uint32_t op, uint64_t count, uint32_t n, uint32_t n_here, int root_here)
{
    if (op == HB_NCOLL_BCAST)
        return root_here ? count : 0;
    if (op == HB_NCOLL_SCATTER)
        return root_here ? count * n : 0;
    return count * n_here;
}

int hbd_xsc_on(const hbd_xsc_set_t *x, uint32_t k, uint32_t node)
{
    return x->map[x->list[k]] == node;
}

int hbd_xsc_next(const hbd_xsc_set_t *x, const uint8_t *data, size_t len, size_t *off,
                 hbd_xsc_hdr_t *h, const uint8_t **mp, const uint8_t **dp)
{
    size_t o = *off;
    if (len - o < sizeof(*h))
        return -1;
    memcpy(h, data + o, sizeof(*h));
    size_t idx = ((size_t)h->n_here * sizeof(uint32_t) + 7) & ~(size_t)7;
    if (x->n == 0 || h->magic != HBD_XSC_MAGIC || h->n_here > x->n ||
        h->count > HBD_XSC_MAX_INPUT / x->n || len - o - sizeof(*h) < idx ||
        h->data_len > len - o - sizeof(*h) - idx)
        return -1;
    *mp = data + o + sizeof(*h);
    *dp = *mp + idx;
    *off = o + sizeof(*h) + idx + (size_t)h->data_len;
    return 0;
}

int hbd_xsc_parse(const hbd_xsc_set_t *x, uint32_t self, const uint8_t *data, size_t len,
                  hbd_xsc_hdr_t *first, const uint8_t **dat, const uint8_t **rootd)
{
    uint8_t *seen = calloc(x->n, 1);
    int verdict = 0, mismatch = 0, bad = seen == NULL, root_cut = 0;
    uint32_t nseen = 0, n_self = 0;
    size_t off = 0;
    *rootd = NULL;
    for (uint32_t k = 0; k < x->n; k++)
        n_self += hbd_xsc_on(x, k, self);
    while (!bad && off < len) {
        hbd_xsc_hdr_t h;
        const uint8_t *mp, *dp;
        if (hbd_xsc_next(x, data, len, &off, &h, &mp, &dp) != 0 ||
            (h.cut && h.op != HB_NCOLL_SCATTER && h.op != HB_NCOLL_GATHER) ||
            (h.verdict == 0 && ((h.op != HB_NCOLL_BCAST && h.op != HB_NCOLL_SCATTER &&
                                 h.op != HB_NCOLL_GATHER && h.op != HB_NCOLL_ALLGATHER) ||
                                h.root < 0 || (uint32_t)h.root >= x->n))) {
            bad = 1; /* what the data run, the writes and xsc_on index with: checked here */
            break;
        }
        if (verdict == 0 && h.verdict != 0)
            verdict = h.verdict < 0 && h.verdict >= HB_ERR_LAST ? h.verdict : HB_ERR_PROTO;
        if (h.verdict != 0)
            continue; /* a failed node's blob is its header alone */
        if (nseen == 0 && !mismatch)
            *first = h;
        else if (h.op != first->op || h.root != first->root || h.count != first->count ||
                 h.order != first->order || h.mode != first->mode)
            mismatch = 1;
        int root_here = 0;
        for (uint32_t i = 0; i < h.n_here && !bad; i++) {
            uint32_t k;
            memcpy(&k, mp + i * sizeof(uint32_t), sizeof(k));
            bad = k >= x->n || seen[k];
            if (bad)
                break;
            seen[k] = 1;
            nseen++;
            root_here |= k == (uint32_t)h.root;
            if (!mismatch && !h.cut && !h.mode && !hbd_xsc_rooted(h.op))
                dat[k] = dp + (uint64_t)i * h.count;
        }
        /* a cut gather carries no data, and must not reach the root's node */
        uint64_t want = h.mode   ? 0
                        : !h.cut ? hbd_xsc_data_len(h.op, h.count, x->n, h.n_here, root_here)
                        : h.op == HB_NCOLL_SCATTER && root_here ? h.count * n_self
                                                                : 0;
        if (!bad && !mismatch &&
            (h.data_len != want ||
             (h.cut && h.op == HB_NCOLL_GATHER && h.root >= 0 && (uint32_t)h.root < x->n &&
              hbd_xsc_on(x, (uint32_t)h.root, self))))
            bad = 1;
        if (!bad && root_here && hbd_xsc_rooted(h.op) && !h.mode) {
            *rootd = dp;
            root_cut = (int)h.cut;
        }
    }
    free(seen);
    if (bad)
        return HB_ERR_PROTO;
    if (verdict != 0)
        return verdict;
    if (mismatch)
        return HB_ERR_MISMATCH;
    if (nseen != x->n)
        return HB_ERR_PROTO;
    if (first->op == HB_NCOLL_SCATTER && *rootd != NULL && !first->mode) /* its members' blocks */
        for (uint32_t k = 0, i = 0; k < x->n; k++)
            if (hbd_xsc_on(x, k, self))
                dat[k] = *rootd + (uint64_t)(root_cut ? i++ : k) * first->count;
    return 0;
}

int hbd_xsc_cut(const hbd_xsc_set_t *x, uint32_t kid, const uint8_t *all, size_t len, uint8_t **out,
                size_t *out_len)
{
    hbd_xsc_hdr_t h, h0 = {0};
    const uint8_t *mp, *dp;
    size_t off = 0, w = 0;
    uint32_t n_kid = 0, nb = 0;
    while (off < len) { /* every blob sound, none failed, all alike: else the whole release */
        if (hbd_xsc_next(x, all, len, &off, &h, &mp, &dp) != 0 || h.cut || h.mode ||
            h.verdict != 0 ||
            (nb > 0 && (h.op != h0.op || h.root != h0.root || h.count != h0.count)))
            return 0;
        if (nb++ == 0)
            h0 = h;
    }
    if (nb == 0 || (h0.op != HB_NCOLL_SCATTER && h0.op != HB_NCOLL_GATHER) || h0.root < 0 ||
        (uint32_t)h0.root >= x->n ||
        (h0.op == HB_NCOLL_GATHER && hbd_xsc_on(x, (uint32_t)h0.root, kid)))
        return 0;
    for (uint32_t k = 0; k < x->n; k++)
        n_kid += hbd_xsc_on(x, k, kid);
    uint8_t *o = malloc(len);
    if (o == NULL)
        return 0;
    for (off = 0; off < len && hbd_xsc_next(x, all, len, &off, &h, &mp, &dp) == 0;) {
        size_t idx = (size_t)(dp - mp);
        hbd_xsc_hdr_t nh = h;
        int root_blob = h.op == HB_NCOLL_SCATTER && h.data_len > 0;
        if (root_blob && h.data_len != h.count * x->n) {
            free(o);
            return 0;
        }
        nh.cut = 1;
        nh.data_len = root_blob ? h.count * n_kid : 0;
        memcpy(o + w, &nh, sizeof(nh));
        memcpy(o + w + sizeof(nh), mp, idx);
        w += sizeof(nh) + idx;
        for (uint32_t k = 0; root_blob && k < x->n; k++)
            if (hbd_xsc_on(x, k, kid)) {
                memcpy(o + w, dp + (uint64_t)k * h.count, h.count);
                w += h.count;
            }
    }
    *out = o;
    *out_len = w;
    return 1;
}
