/* hb_params.h: the measured PlogP(-BR) parameters of a cluster and their cache file. */
#ifndef HB_PARAMS_H
#define HB_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * `hibar-bench logp` measures them between two daemons (PlogP: L, o_s(m), o_r(m), g(m) by
 * the logp_mpi method) and for the communication patterns of the collectives (PlogP-BR:
 * g(m, one-to-many), g(m, many-to-one)), and writes them to a text file per cluster; the
 * daemons read it to choose algorithms (coll/coll_model.h) and hibar-info shows it.
 * Times µs, sizes bytes. File format, one item per line, '#' comments:
 *   cluster NAME        nodes N        measured UNIX_SECONDS
 *   L US                q BYTES        t_rto US        flow_control 0|1     burst BYTES
 *   point M OS OR G G_ONE_TO_MANY G_MANY_TO_ONE      (ascending M, 1..HB_PARAMS_MAXPTS)
 */

#define HB_PARAMS_MAXPTS 32

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
} hb_params_t;

/* Where the file of `cluster` lives: $HIBAR_MODEL_CACHE if set, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/hibar/CLUSTER.plogp. 0 or HIBAR_ERR_TRUNCATED. */
int hb_params_path(const char *cluster, char *buf, size_t cap);

/* Parse the text of a file (pure). 0 or HIBAR_ERR_CONFIG with err "line N: what". */
int hb_params_parse(const char *text, hb_params_t *p, char *err, size_t errlen);
/* The text of a file; 0 or HIBAR_ERR_TRUNCATED. */
int hb_params_format(const hb_params_t *p, char *buf, size_t cap);

/* Read a file: 0, HIBAR_ERR_NOT_FOUND (no file), HIBAR_ERR_IO, HIBAR_ERR_CONFIG (err says). */
int hb_params_read(const char *path, hb_params_t *p, char *err, size_t errlen);
/* Write a file (directories created, written to a temporary file then renamed). 0 or
 * HIBAR_ERR_IO (logged). */
int hb_params_write(const char *path, const hb_params_t *p);

#endif
