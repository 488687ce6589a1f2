/* hb_size.h: byte sizes as command lines give them ("64K", "1K,64K..8M", "0..100K:1K"). */
#ifndef HB_SIZE_H
#define HB_SIZE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Pure functions (no I/O, no global state), self-contained: the Open MPI peer
 * (hibar-mpi-bench) compiles this file without libhibar.
 */

/* One size: decimal digits, then K, M or G (powers of 1024), then i, B, iB or b, each
 * optional ("8", "64K", "1MiB", "4KB"). 0, or HB_ERR_INVAL when s is no such size or the
 * size is above max (*v_p untouched). */
int hb_size_parse(const char *s, uint64_t max, uint64_t *v_p);

/* A list of sizes separated by commas, each one of
 *   N          that size;
 *   A..B       A, 2A, 4A, ... up to B (from 0: 0, 1, 2, 4, ...);
 *   A..B:STEP  A, A + STEP, A + 2 STEP, ... up to B;
 * every size in [min, max] (max at most SIZE_MAX), at most cap of them. 0 with *n_p > 0, or
 * HB_ERR_INVAL (a bad or empty list, a size out of range, more than cap sizes; sizes[]
 * may have been written, *n_p is untouched). */
int hb_size_list_parse(const char *spec, uint64_t min, uint64_t max, size_t *sizes, size_t cap,
                       size_t *n_p);

#endif
