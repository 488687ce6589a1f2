/* hbd_model.h: the measured PlogP(-BR) parameters of this cluster, for the collective chooser. */
#ifndef HBD_MODEL_H
#define HBD_MODEL_H

#include "hbd.h"

/* The cache of the model file in the daemon context (d->model): 0 or NOMEM. */
int hbd_model_init(hbd_t *d);
void hbd_model_fini(hbd_t *d);

/* The measured parameters of this cluster (hibar-bench logp's and lanes' file):
 * a measured b_WAN(P) table goes into *ml (its configuration values kept otherwise); returns
 * the PlogP(-BR) parameters, or NULL when there are none; *src_p names where the chooser's
 * parameters come from. Without hbd_model_init: none (the configuration's links). */
struct hb_model_plogp;
struct hb_model_lanes;
const struct hb_model_plogp *hbd_model_params(hbd_t *d, struct hb_model_lanes *ml,
                                              const char **src_p);

#endif
