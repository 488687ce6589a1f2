/* hbd_cron.c: the one periodic place: heartbeats, timeouts and retries, on an hbd_timer_t. */
#include "hb_config.h"

#include "hb_time.h"
#include "hbd_cron.h"
#include "hbd_net.h"
#include "hb_status.h"

/* While something is in flight: every heartbeat interval, 10 ms to 1 s (in us). */
static uint64_t tick_period(const hbd_t *d)
{
    uint32_t ms = d->cfg->heartbeat_interval_ms;
    ms = ms < 10 ? 10 : (ms > 1000 ? 1000 : ms);
    return (uint64_t)ms * 1000;
}

int hbd_cron_run(hbd_t *d, uint64_t now)
{
    int busy = hbd_net_retry(d, now);
    for (uint32_t i = 0; i < d->n_cron; i++)
        busy |= d->cron_fns[i](d, now);
    hbd_net_check_ready(d); /* a fast link that did not come up in time settles here */
    /* an idle daemon, its peers all linked, needs no timer (hbd_cron_arm starts it again) */
    if (d->ready && !busy) {
        hbd_net_heartbeat_idle(d);
        d->cron_hb_ns = 0;
        return 0;
    }
    if (d->ready) {
        /* late by more than a quarter of the timeout: this daemon itself did not run
         * (hbd_net.c) */
        uint64_t due = d->cron_hb_ns + tick_period(d) * 1000 +
                       (uint64_t)d->cfg->heartbeat_timeout_ms * 250000ull;
        hbd_net_heartbeat(d, now, d->cron_hb_ns != 0 && now > due ? now - d->cron_hb_ns : 0);
        d->cron_hb_ns = now;
    }
    return 1;
}

static void tick_cb(hbd_t *d, void *arg)
{
    (void)arg;
    if (!hbd_cron_run(d, hb_time_now_ns()))
        return;
    hbd_timer_arm(d->tick, d->ready ? tick_period(d) : 20000, 1);
}

void hbd_cron_arm(hbd_t *d)
{
    /* first look one period from now: collectives shorter than that never send a probe */
    if (d->tick != NULL)
        hbd_timer_arm(d->tick, tick_period(d), 0);
}

int hbd_cron_start(hbd_t *d)
{
    d->tick = hbd_timer_new(d, tick_cb, NULL);
    if (d->tick == NULL)
        return HB_ERR_NOMEM;
    hbd_timer_arm(d->tick, 0, 0);
    return 0;
}

void hbd_cron_stop(hbd_t *d)
{
    hbd_timer_free(d->tick);
    d->tick = NULL;
}
