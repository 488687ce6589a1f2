/*
 * hb_osu.h: the OSU micro-benchmarks' output, as their osu_util.c prints it with -f (full
 * statistics): a title line ("# OSU MPI Barrier Latency Test"), a column header ("# Size",
 * then "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)" right-aligned in 18 columns,
 * "Iterations" in 12; a barrier has no Size column: "# Avg Latency(us)"), then one row per
 * size (size left-aligned in 10 columns, latencies with 2 decimals). hibar-bench --osu and
 * hibar-mpi-bench / hibar-lib-bench --osu print it, so that tools reading OSU output read
 * both harnesses alike.
 */
#ifndef HB_OSU_H
#define HB_OSU_H

#include <stdint.h>
#include <stdio.h>

/* The OSU name of a benchmark: barrier -> "Barrier", bcast -> "Broadcast", ...; others
 * capitalised. Into buf (cap bytes). */
const char *hb_osu_name(const char *bench, char *buf, size_t cap);
/* 0 for the size-less benchmarks (barrier, hwbarrier, cluster-barrier), else 1. */
int hb_osu_sized(const char *bench);
/* The title and column header; `who` (may be NULL) is added to the title in parentheses. */
void hb_osu_header(FILE *f, const char *bench, const char *who);
/* One row: latencies in microseconds. */
void hb_osu_row(FILE *f, const char *bench, uint64_t size, double avg_us, double min_us,
                double max_us, uint64_t iters);

#endif
