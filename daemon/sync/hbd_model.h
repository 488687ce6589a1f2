/* hbd_model.h: the measured PlogP(-BR) parameters of this cluster, for the collective chooser. */
#ifndef HBD_MODEL_H
#define HBD_MODEL_H

#include "hbd.h"

/* The measured parameters of this cluster (hibar-bench logp's and lanes' file):
 * a measured b_WAN(P) table goes into *ml (its configuration values kept otherwise); returns
 * the PlogP(-BR) parameters, or NULL when there are none; *src_p names where the chooser's
 * parameters come from. */
struct hb_model_plogp;
struct hb_model_lanes;
const struct hb_model_plogp *hbd_model_params(hbd_t *d, struct hb_model_lanes *ml,
                                              const char **src_p);

#endif
