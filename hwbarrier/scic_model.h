/* scic_model.h: a device model of the SCIC control chip, one per board, boards on a modelled
 * cable, behind the real register map, so that the scic driver runs unchanged against it. */
#ifndef HB_SCIC_MODEL_H
#define HB_SCIC_MODEL_H

#include <stdint.h>

/*
 * hb_scic_model_create() starts one process that runs the chips of `boards` boards (board 0 is
 * the Center). Each board exposes BAR0 as a 4 KiB shm file (bar path) and the UIO interrupt
 * protocol on a SOCK_SEQPACKET UNIX socket (uio path); pass both to the scic backend as
 * params.bar_path / params.uio_path. Files are named hibar-<uid>-scicm-<tag>-b<k> (mode 0600)
 * and removed by destroy, or by the model process itself when its creator dies.
 * Fork-safe: the caller stays single-threaded; participants can be forked after create.
 */
typedef struct hb_scic_model hb_scic_model_t;

/* Cable parameters (0 = default). */
#define HB_SCIC_MODEL_RXBUF 8 /* receive buffer of each link end, in packets */

typedef struct hb_scic_model_stats {
    uint32_t tx_pkts, rx_pkts, stops_sent, starts_sent, rx_overrun, tx_pauses, irqs;
} hb_scic_model_stats_t;

/* tag: 1..40 of [A-Za-z0-9_.-]. 0 or a negative HB_ERR_*. */
int hb_scic_model_create(uint32_t boards, const char *tag, hb_scic_model_t **m_p);
/* Stop the model process and remove its files. */
void hb_scic_model_destroy(hb_scic_model_t *m);

const char *hb_scic_model_bar_path(const hb_scic_model_t *m, uint32_t board);
const char *hb_scic_model_uio_path(const hb_scic_model_t *m, uint32_t board);

/* Test hooks (take effect within the model's next step). */
void hb_scic_model_lose_board(hb_scic_model_t *m, uint32_t board);              /* cable cut */
void hb_scic_model_slow_board(hb_scic_model_t *m, uint32_t board, uint32_t us); /* per packet */
void hb_scic_model_hold_rx(hb_scic_model_t *m, uint32_t board, int hold);       /* stop draining */
/* Counters of a board, read from its registers. */
int hb_scic_model_stats(const hb_scic_model_t *m, uint32_t board, hb_scic_model_stats_t *st_p);

#endif
