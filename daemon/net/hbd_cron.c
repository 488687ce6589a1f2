/* hbd_cron.c: the one periodic place: heartbeats, timeouts and retries, and the loop's timers. */
#include "hb_config.h"
#include <event2/event.h>
#include <stdlib.h>

#include "hb_time.h"
#include "hbd_cron.h"
#include "hbd_net.h"
#include "hb_status.h"

int hbd_cron_run(hbd_t *d, uint64_t now)
{
    int busy = 0;
    hbd_net_retry(d, now);
    for (uint32_t i = 0; i < d->n_cron; i++)
        busy |= d->cron_fns[i](d, now);
    hbd_net_check_ready(d); /* a fast link that did not come up in time settles here */
    /* an idle, linked daemon needs no timer at all (hbd_cron_arm starts it again) */
    if (d->ready && !busy) {
        hbd_net_heartbeat_idle(d);
        return 0;
    }
    if (d->ready)
        hbd_net_heartbeat(d, now);
    return 1;
}

/* While something is in flight: every heartbeat interval, 10 ms to 1 s. */
static struct timeval tick_period(const hbd_t *d)
{
    uint32_t ms = d->cfg->heartbeat_interval_ms;
    ms = ms < 10 ? 10 : (ms > 1000 ? 1000 : ms);
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_t *d = arg;
    (void)fd;
    (void)what;
    if (!hbd_cron_run(d, hb_time_now_ns()))
        return;
    struct timeval tv = {0, 20000};
    if (d->ready)
        tv = tick_period(d);
    event_add(d->ev_tick, &tv);
}

void hbd_cron_arm(hbd_t *d)
{
    /* first look one period from now: collectives shorter than that never send a probe */
    if (d->ev_tick != NULL && !evtimer_pending(d->ev_tick, NULL)) {
        struct timeval tv = tick_period(d);
        evtimer_add(d->ev_tick, &tv);
    }
}

int hbd_cron_start(hbd_t *d)
{
    d->ev_tick = evtimer_new(d->base, tick_cb, d);
    if (d->ev_tick == NULL)
        return HB_ERR_NOMEM;
    event_active(d->ev_tick, EV_TIMEOUT, 0);
    return 0;
}

void hbd_cron_stop(hbd_t *d)
{
    if (d->ev_tick != NULL)
        event_free(d->ev_tick);
    d->ev_tick = NULL;
}

/* ---- one-shot timers ---- */

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
    t->fn(t->d, t->arg);
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
