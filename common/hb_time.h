/* hb_time.h: monotonic clock helpers for the I/O side (never included by hier/ or coll/). */
#ifndef HB_TIME_H
#define HB_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t hb_time_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double hb_time_now_us(void) { return (double)hb_time_now_ns() / 1e3; }

#endif
