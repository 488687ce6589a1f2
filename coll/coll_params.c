/* coll_params.c: measured PlogP(-BR) and b_WAN(P) parameters as the cost models' input (pure, no
 * I/O). */
#include "hb_config.h"
#include "coll_params.h"

#include <string.h>

void hb_model_plogp_view(const hb_params_t *p, hb_model_plogp_t *v)
{
    memset(v, 0, sizeof(*v));
    v->L = p->L;
    v->n = p->n;
    v->m = p->m;
    v->os = p->os;
    v->orv = p->orv;
    v->g = p->g;
    v->g_pat[HB_MODEL_PAT_PAIR] = p->g_pair;
    v->g_pat[HB_MODEL_PAT_ONE_TO_MANY] = p->g_o2m;
    v->g_pat[HB_MODEL_PAT_MANY_TO_ONE] = p->g_m2o;
    v->q = p->q;
    v->t_rto = p->t_rto;
    v->flow_control = p->flow_control;
    v->burst = p->burst;
}

int hb_model_lanes_view(const hb_params_t *p, hb_model_lanes_t *l)
{
    if (p == NULL || p->n_bwan == 0)
        return 0;
    l->b_wan = p->bwan;
    l->n_b_wan = p->n_bwan;
    return 1;
}
