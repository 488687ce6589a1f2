/* coll_params.h: the measured PlogP(-BR) parameters (common/hb_params.h) as the models' input. */
#ifndef HB_COLL_PARAMS_H
#define HB_COLL_PARAMS_H

#include "coll_model.h"
#include "hb_params.h"

/*
 * A view of p for hb_model_plogp_*: v points into p (valid while p lives and is not changed).
 * The pair pattern is g(m), one-to-many g(m, 1->n), many-to-one g(m, n->1). Pure.
 */
void hb_model_plogp_view(const hb_params_t *p, hb_model_plogp_t *v);

#endif
