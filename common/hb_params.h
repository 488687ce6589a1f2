/* hb_params.h: the measured model parameters of a cluster (PlogP(-BR), b_WAN(P)) and their cache
 * file. */
#ifndef HB_PARAMS_H
#define HB_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * `hibar-bench logp` measures them between two daemons (PlogP: L, o_s(m), o_r(m), g(m) by
 * the logp_mpi method) and for the communication patterns of the collectives (PlogP-BR:
 * g(m, pair), g(m, one-to-many), g(m, many-to-one), each by flooding in that pattern), and
 * writes them to a text file per cluster; the daemons read it to choose algorithms
 * (coll/coll_model.h) and hibar-info shows it.
 * Times µs, sizes bytes. `hibar-bench lanes` adds the WAN's b_WAN(P), measured with P
 * concurrent node pairs across it, to the same file (each tool keeps the other's part).
 * File format, one item per line, '#' comments:
 *   cluster NAME        nodes N        measured UNIX_SECONDS
 *   L US                q BYTES        t_rto US        flow_control 0|1     burst BYTES
 *   point M OS OR G G_ONE_TO_MANY G_MANY_TO_ONE [G_PAIR]   (ascending M, 1..HB_PARAMS_MAXPTS;
 *                       without G_PAIR, as files written before it had: G_PAIR = G)
 *   bwan_measured UNIX_SECONDS
 *   bwan P MBIT         per-lane bandwidth with P lanes active, Mbit/s (P = 1, 2, ... in order,
 *                       at most HB_PARAMS_MAXLANES; the aggregate is P x MBIT)
 * A file holds the PlogP part (L and points), the b_WAN(P) part, or both.
 */

#define HB_PARAMS_MAXPTS 32
#define HB_PARAMS_MAXLANES 64

typedef struct hb_params {
    char cluster[64];
    uint32_t nodes;   /* daemons the patterns were measured with */
    double measured;  /* when (UNIX seconds) */
    double L;         /* end-to-end latency */
    double q;         /* switch queue, bytes; 0: unknown */
    double t_rto;     /* retransmission timeout */
    int flow_control; /* 1: no loss (no RTO penalty) */
    double burst;     /* bytes a sender has in flight at first (TCP initial window); 0: all */
    uint32_t n;       /* points */
    double m[HB_PARAMS_MAXPTS], os[HB_PARAMS_MAXPTS], orv[HB_PARAMS_MAXPTS];
    double g[HB_PARAMS_MAXPTS], g_o2m[HB_PARAMS_MAXPTS], g_m2o[HB_PARAMS_MAXPTS];
    double g_pair[HB_PARAMS_MAXPTS]; /* g(m, pair): one sender flooding one receiver */
    /* b_WAN(P) (hibar-bench lanes); n_bwan 0: not measured */
    uint32_t n_bwan;
    double bwan_measured;
    double bwan[HB_PARAMS_MAXLANES]; /* [P-1]: per-lane bandwidth with P lanes, bytes/µs */
} hb_params_t;

/* The parts of a file, for hb_params_update. */
#define HB_PARAMS_PLOGP 1u
#define HB_PARAMS_BWAN 2u

/* Where the file of `cluster` lives: $HIBAR_MODEL_CACHE if set, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/hibar/CLUSTER.plogp. 0 or HB_ERR_TRUNCATED. */
int hb_params_path(const char *cluster, char *buf, size_t cap);

/* Parse the text of a file (pure). 0 or HB_ERR_CONFIG with err "line N: what". */
int hb_params_parse(const char *text, hb_params_t *p, char *err, size_t errlen);
/* The text of a file; 0 or HB_ERR_TRUNCATED. */
int hb_params_format(const hb_params_t *p, char *buf, size_t cap);

/* Read a file: 0, HB_ERR_NOT_FOUND (no file), HB_ERR_IO, HB_ERR_CONFIG (err says). */
int hb_params_read(const char *path, hb_params_t *p, char *err, size_t errlen);
/* Write a file (directories created, written to a temporary file then renamed). 0 or
 * HB_ERR_IO (logged). */
int hb_params_write(const char *path, const hb_params_t *p);
/* Write the parts `what` (HB_PARAMS_PLOGP, HB_PARAMS_BWAN) of p, keeping the other parts of
 * the file at path when it is readable and names p's cluster. 0 or HB_ERR_IO (logged). */
int hb_params_update(const char *path, const hb_params_t *p, unsigned what);

/*
 * The cached parameters of `cluster`: its file (hb_params_path) into path (cap bytes), read.
 * 0; HB_ERR_NOT_FOUND: no file, or HIBAR_MODEL_CACHE=none (path then says so);
 * HB_ERR_IO; HB_ERR_CONFIG: unreadable, or written for another cluster (err says).
 */
int hb_params_load(const char *cluster, hb_params_t *p, char *path, size_t cap, char *err,
                   size_t errlen);

#endif
