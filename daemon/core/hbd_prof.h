/* hbd_prof.h: profiling lines on stderr, one per step of a fence or collective, for scripts. */
#ifndef HBD_PROF_H
#define HBD_PROF_H

#include <inttypes.h>
#include <stdio.h>

#include "hb_time.h"
#include "hbd.h"

/*
 * A service sets its bit in d->prof at its init when its variable says so (HIBAR_FENCE_PROF,
 * HIBAR_COLL_PROF); every step then writes "TAG NODE STAGE ID T_NS" to stderr, T_NS on
 * CLOCK_MONOTONIC, which the namespace hosts of the test bed share, so the lines of every
 * daemon of a bed (and of its ranks) merge into one timeline (scripts/fence-steps.py,
 * scripts/coll-steps.py). Off: one test of a word.
 */
enum { HBD_PROF_FENCE = 1, HBD_PROF_COLL = 2 };

static inline void hbd_prof(const hbd_t *d, unsigned what, const char *tag, const char *stage,
                            uint64_t id)
{
    if (d->prof & what)
        fprintf(stderr, "%s %" PRIu32 " %s %" PRIx64 " %" PRIu64 "\n", tag, d->self, stage, id,
                hb_time_now_ns());
}

#endif
