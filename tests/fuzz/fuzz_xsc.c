/* fuzz_xsc.c: libFuzzer target for the blobs of a rank set's collective across nodes
 * (daemon/launch/hbd_xsc.c): a release as a peer daemon may send it, read against a set the
 * input also picks. Whatever is accepted must point inside the release; a cut release must read
 * the same way. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbd_xsc.h"
#include "ncoll.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every pointer of a verdict of 0 inside [p, p + len). */
static void inside(const hbd_xsc_set_t *s, uint32_t self, const uint8_t *p, size_t len,
                   const hbd_xsc_hdr_t *h, const uint8_t **dat, const uint8_t *rootd)
{
    const uint8_t *end = p + len;
    for (uint32_t k = 0; k < s->n; k++)
        if (dat[k] != NULL && (dat[k] < p || h->count > (uint64_t)(end - dat[k])))
            __builtin_trap();
    uint64_t want = h->op == HB_NCOLL_BCAST ? h->count : 0;
    for (uint32_t k = 0; h->op == HB_NCOLL_SCATTER && k < s->n; k++)
        want += hbd_xsc_on(s, k, self) ? h->count : 0;
    if (rootd != NULL && (rootd < p || want > (uint64_t)(end - rootd)))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* byte 0: members (1-16); byte 1: this node (0-7); then a node (0-7) per member, then the
     * release (the list is the members in order: job rank k is member k) */
    if (size < 2)
        return 0;
    uint32_t n = 1 + data[0] % 16, self = data[1] % 8;
    if (size < 2 + (size_t)n)
        return 0;
    uint32_t list[16], map[16];
    for (uint32_t k = 0; k < n; k++) {
        list[k] = k;
        map[k] = data[2 + k] % 8;
    }
    hbd_xsc_set_t s = {.n = n, .list = list, .map = map};
    const uint8_t *rel = data + 2 + n;
    size_t len = size - 2 - n;
    /* a private copy: the parser must not read past its own length */
    uint8_t *p = malloc(len ? len : 1);
    if (p == NULL)
        return 0;
    memcpy(p, rel, len);
    const uint8_t *dat[16] = {0}, *rootd = NULL;
    hbd_xsc_hdr_t h;
    int rc = hbd_xsc_parse(&s, self, p, len, &h, dat, &rootd);
    if (rc > 0)
        __builtin_trap();
    if (rc == 0)
        inside(&s, self, p, len, &h, dat, rootd);
    uint8_t *o = NULL;
    size_t ol = 0;
    if (hbd_xsc_cut(&s, self, p, len, &o, &ol) == 1) {
        memset(dat, 0, sizeof(dat));
        rootd = NULL;
        if (hbd_xsc_parse(&s, self, o, ol, &h, dat, &rootd) == 0)
            inside(&s, self, o, ol, &h, dat, rootd);
        free(o);
    }
    free(p);
    return 0;
}
