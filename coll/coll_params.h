/* coll_params.h: the measured parameters (common/hb_params.h: PlogP(-BR), b_WAN(P)) as the models'
 * input. */
#ifndef HB_COLL_PARAMS_H
#define HB_COLL_PARAMS_H

#include "coll_model.h"
#include "hb_params.h"

/*
 * A view of p for hb_model_plogp_*: v points into p (valid while p lives and is not changed).
 * The pair pattern is g(m), one-to-many g(m, 1->n), many-to-one g(m, n->1). Pure.
 */
void hb_model_plogp_view(const hb_params_t *p, hb_model_plogp_t *v);

/*
 * The measured b_WAN(P) table of p (if any) as l's b_wan / n_b_wan (pointing into p); l's
 * other fields (from the configuration) are kept. Without a table l is left as it is. Returns
 * 1 if a table is used, else 0. Pure.
 */
int hb_model_lanes_view(const hb_params_t *p, hb_model_lanes_t *l);

#endif
