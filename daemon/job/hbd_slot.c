/* hbd_slot.c: the cluster's job slots (job numbers, sync numbers per chassis). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "hbd_slot.h"

int hbd_slots_init(hbd_slots_t *S, const hb_topo_t *t, uint32_t first, uint32_t end, uint32_t want)
{
    memset(S, 0, sizeof(*S));
    if (t == NULL || first >= end || end > 32 || want == 0)
        return HB_ERR_INVAL;
    S->used = calloc(t->n_chassis, sizeof(uint32_t));
    if (S->used == NULL)
        return HB_ERR_NOMEM;
    S->n_chassis = t->n_chassis;
    S->first = first;
    S->end = end;
    S->want = want;
    S->next_jobno = 1;
    return 0;
}

static void slot_free(hbd_slot_t *s)
{
    free(s->nodes);
    free(s);
}

void hbd_slots_fini(hbd_slots_t *S)
{
    while (S->list != NULL) {
        hbd_slot_t *s = S->list;
        S->list = s->next;
        slot_free(s);
    }
    free(S->used);
    memset(S, 0, sizeof(*S));
}

/* A slot with no node yet, at the head of the list. NULL without memory. */
static hbd_slot_t *slot_new(hbd_slots_t *S, uint32_t jobno, uint32_t base, uint32_t n, uint64_t id,
                            uint32_t origin, uint32_t size, uint64_t now_ns)
{
    hbd_slot_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    *s = (hbd_slot_t){.jobno = jobno,
                      .base = base,
                      .n = n,
                      .id = id,
                      .origin = origin,
                      .size = size,
                      .t0_ns = now_ns,
                      .next = S->list};
    S->list = s;
    S->n++;
    return s;
}

/* Bits of the chassis the job's nodes are in, OR'ed: what the range must avoid. */
static uint32_t taken(const hbd_slots_t *S, const hb_topo_t *t, const uint32_t *nodes,
                      uint32_t n_nodes, uint32_t *crowded_p)
{
    uint32_t bits = 0, worst = 0, crowded = UINT32_MAX;
    for (uint32_t i = 0; i < n_nodes; i++) {
        uint32_t c = t->nodes[nodes[i]].chassis, u = S->used[c];
        bits |= u;
        if (crowded == UINT32_MAX || (uint32_t)__builtin_popcount(u) > worst) {
            worst = (uint32_t)__builtin_popcount(u);
            crowded = c;
        }
    }
    *crowded_p = crowded;
    return bits;
}

int hbd_slots_alloc(hbd_slots_t *S, const hb_topo_t *t, const uint32_t *nodes, uint32_t n_nodes,
                    uint64_t id, uint32_t origin, uint32_t size, uint64_t now_ns,
                    hbd_slot_t **slot_p, char *err, size_t cap)
{
    if (S->used == NULL || t == NULL || t->n_chassis != S->n_chassis || nodes == NULL ||
        n_nodes == 0 || n_nodes > t->n_nodes) {
        snprintf(err, cap, "bad job slot request");
        return HB_ERR_INVAL;
    }
    for (uint32_t i = 0; i < n_nodes; i++)
        if (nodes[i] >= t->n_nodes || (i > 0 && nodes[i] <= nodes[i - 1])) {
            snprintf(err, cap, "bad node list in a job slot request");
            return HB_ERR_INVAL;
        }
    if (S->n >= HBD_SLOT_MAX) {
        snprintf(err, cap, "the cluster runs %d jobs, its most", HBD_SLOT_MAX);
        return HB_ERR_BUSY;
    }
    uint32_t crowded;
    uint32_t bits = taken(S, t, nodes, n_nodes, &crowded);
    uint32_t base = 0, n = 0;
    for (uint32_t want = S->want; want >= 1 && n == 0; want--)
        for (uint32_t b = S->first; b + want <= S->end; b++) {
            uint32_t range = (want >= 32 ? UINT32_MAX : ((1u << want) - 1)) << b;
            if ((bits & range) == 0) {
                base = b;
                n = want;
                break;
            }
        }
    if (n == 0) {
        snprintf(err, cap,
                 "chassis %" PRIu32 " has no free chassis-barrier sync number (running jobs hold "
                 "all %" PRIu32 "): wait for a job there to end",
                 crowded, S->end - S->first);
        return HB_ERR_BUSY;
    }
    hbd_slot_t *s = slot_new(S, S->next_jobno, base, n, id, origin, size, now_ns);
    uint32_t *copy = malloc(n_nodes * sizeof(uint32_t));
    if (s == NULL || copy == NULL) {
        free(copy);
        if (s != NULL)
            hbd_slots_free(S, t, s->jobno);
        return HB_ERR_NOMEM;
    }
    memcpy(copy, nodes, n_nodes * sizeof(uint32_t));
    s->nodes = copy;
    s->n_nodes = n_nodes;
    if (++S->next_jobno == 0)
        S->next_jobno = 1;
    uint32_t range = ((1u << n) - 1) << base;
    for (uint32_t i = 0; i < n_nodes; i++)
        S->used[t->nodes[nodes[i]].chassis] |= range;
    *slot_p = s;
    return 0;
}

int hbd_slots_claim(hbd_slots_t *S, const hb_topo_t *t, uint32_t jobno, uint32_t base, uint32_t n,
                    uint64_t id, uint32_t origin, uint32_t size, uint32_t node, uint64_t now_ns)
{
    if (S->used == NULL || t == NULL || jobno == 0 || node >= t->n_nodes || n == 0 ||
        base < S->first || base + n > S->end)
        return HB_ERR_INVAL;
    hbd_slot_t *s = hbd_slots_find(S, jobno);
    if (s == NULL && (S->n >= HBD_SLOT_MAX ||
                      (s = slot_new(S, jobno, base, n, id, origin, size, now_ns)) == NULL))
        return HB_ERR_NOMEM;
    uint32_t i = 0;
    while (i < s->n_nodes && s->nodes[i] < node)
        i++;
    if (i == s->n_nodes || s->nodes[i] != node) {
        uint32_t *nn = realloc(s->nodes, (s->n_nodes + 1) * sizeof(uint32_t));
        if (nn == NULL)
            return HB_ERR_NOMEM;
        memmove(nn + i + 1, nn + i, (s->n_nodes - i) * sizeof(uint32_t));
        nn[i] = node;
        s->nodes = nn;
        s->n_nodes++;
    }
    S->used[t->nodes[node].chassis] |= ((1u << s->n) - 1) << s->base;
    if (jobno >= S->next_jobno)
        S->next_jobno = jobno + 1 != 0 ? jobno + 1 : 1;
    return 0;
}

hbd_slot_t *hbd_slots_find(const hbd_slots_t *S, uint32_t jobno)
{
    for (hbd_slot_t *s = S->list; s != NULL; s = s->next)
        if (s->jobno == jobno)
            return s;
    return NULL;
}

void hbd_slots_free(hbd_slots_t *S, const hb_topo_t *t, uint32_t jobno)
{
    for (hbd_slot_t **pp = &S->list; *pp != NULL; pp = &(*pp)->next) {
        hbd_slot_t *s = *pp;
        if (s->jobno != jobno)
            continue;
        uint32_t range = ((1u << s->n) - 1) << s->base;
        for (uint32_t i = 0; i < s->n_nodes; i++)
            S->used[t->nodes[s->nodes[i]].chassis] &= ~range;
        *pp = s->next;
        S->n--;
        slot_free(s);
        return;
    }
}
