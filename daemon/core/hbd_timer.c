/* hbd_timer.c: the daemon's one timer: a one-shot timer on the loop (hbd_timer.h). */
#include "hb_config.h"
#include <event2/event.h>
#include <stdlib.h>

#include "hbd_timer.h"

struct hbd_timer {
    hbd_t *d;
    hbd_timer_fn fn;
    void *arg;
    struct event *ev;
};

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_timer_t *t = arg;
    (void)fd;
    (void)what;
    t->fn(t->d, t->arg); /* last: fn may free t */
}

hbd_timer_t *hbd_timer_new(hbd_t *d, hbd_timer_fn fn, void *arg)
{
    hbd_timer_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->d = d;
    t->fn = fn;
    t->arg = arg;
    t->ev = evtimer_new(d->base, timer_cb, t);
    if (t->ev == NULL) {
        free(t);
        return NULL;
    }
    return t;
}

void hbd_timer_arm(hbd_timer_t *t, uint64_t usec, int reset)
{
    if (t == NULL)
        return;
    if (evtimer_pending(t->ev, NULL)) {
        if (!reset)
            return;
        evtimer_del(t->ev);
    }
    struct timeval tv = {(time_t)(usec / 1000000), (suseconds_t)(usec % 1000000)};
    evtimer_add(t->ev, &tv);
}

void hbd_timer_cancel(hbd_timer_t *t)
{
    if (t != NULL)
        evtimer_del(t->ev);
}

int hbd_timer_pending(const hbd_timer_t *t)
{
    return t != NULL && evtimer_pending(t->ev, NULL);
}

void hbd_timer_free(hbd_timer_t *t)
{
    if (t == NULL)
        return;
    event_free(t->ev);
    free(t);
}
