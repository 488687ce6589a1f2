/* sim_heap.c: the discrete-event engine: a binary min-heap of events ordered by (time, seq). */
#include <stdlib.h>

#include "hb_status.h"
#include "sim.h"

struct hb_sim_engine {
    hb_sim_ev_t *h; /* heap, h[0] earliest */
    size_t n, cap;
    uint64_t seq, popped;
    double now;
};

int hb_sim_engine_create(hb_sim_engine_t **e_p)
{
    hb_sim_engine_t *e;

    if (e_p == NULL)
        return HB_ERR_INVAL;
    e = calloc(1, sizeof(*e));
    if (e == NULL)
        return HB_ERR_NOMEM;
    *e_p = e;
    return 0;
}

void hb_sim_engine_destroy(hb_sim_engine_t *e)
{
    if (e == NULL)
        return;
    free(e->h);
    free(e);
}

/* a runs before b */
static int ev_before(const hb_sim_ev_t *a, const hb_sim_ev_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int hb_sim_engine_push(hb_sim_engine_t *e, double t, uint32_t kind, uint32_t node, uint32_t a,
                       uint32_t b, uint64_t x)
{
    hb_sim_ev_t ev;
    size_t i;

    if (e->n == e->cap) {
        size_t ncap = e->cap ? e->cap * 2 : 1024;
        hb_sim_ev_t *nh = realloc(e->h, ncap * sizeof(*nh));
        if (nh == NULL)
            return HB_ERR_NOMEM;
        e->h = nh;
        e->cap = ncap;
    }
    ev.t = t < e->now ? e->now : t;
    ev.seq = e->seq++;
    ev.kind = kind;
    ev.node = node;
    ev.a = a;
    ev.b = b;
    ev.x = x;
    /* sift up */
    i = e->n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!ev_before(&ev, &e->h[up]))
            break;
        e->h[i] = e->h[up];
        i = up;
    }
    e->h[i] = ev;
    return 0;
}

int hb_sim_engine_pop(hb_sim_engine_t *e, hb_sim_ev_t *ev_p)
{
    hb_sim_ev_t last;
    size_t i = 0;

    if (e->n == 0)
        return HB_ERR_NOT_FOUND;
    *ev_p = e->h[0];
    last = e->h[--e->n];
    /* sift the last element down from the root */
    for (;;) {
        size_t l = 2 * i + 1, m;
        if (l >= e->n)
            break;
        m = (l + 1 < e->n && ev_before(&e->h[l + 1], &e->h[l])) ? l + 1 : l;
        if (!ev_before(&e->h[m], &last))
            break;
        e->h[i] = e->h[m];
        i = m;
    }
    if (e->n > 0)
        e->h[i] = last;
    e->now = ev_p->t;
    e->popped++;
    return 0;
}

double hb_sim_engine_now(const hb_sim_engine_t *e)
{
    return e->now;
}

size_t hb_sim_engine_pending(const hb_sim_engine_t *e)
{
    return e->n;
}

uint64_t hb_sim_engine_count(const hb_sim_engine_t *e)
{
    return e->popped;
}
