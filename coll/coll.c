/* coll.c: names of the collective operations and algorithms. */
#include <string.h>

#include "hb_status.h"
#include "coll.h"

static const char *const op_names[HB_COLL_OP_COUNT] = {"scatter", "gather", "bcast", "allgather",
                                                       "alltoall"};
static const char *const alg_names[HB_COLL_ALG_COUNT] = {"flat", "binomial", "single-lane",
                                                         "multi-lane", "pairwise"};

const char *hb_coll_op_name(hb_coll_op_t op)
{
    return (unsigned)op < HB_COLL_OP_COUNT ? op_names[op] : "?";
}

const char *hb_coll_alg_name(hb_coll_alg_t alg)
{
    return (unsigned)alg < HB_COLL_ALG_COUNT ? alg_names[alg] : "?";
}

int hb_coll_alg_parse(const char *name, hb_coll_alg_t *alg_p)
{
    if (name == NULL || alg_p == NULL)
        return HB_ERR_INVAL;
    for (int i = 0; i < HB_COLL_ALG_COUNT; i++) {
        if (strcmp(name, alg_names[i]) == 0) {
            *alg_p = (hb_coll_alg_t)i;
            return 0;
        }
    }
    return HB_ERR_INVAL;
}

int hb_coll_op_parse(const char *name, hb_coll_op_t *op_p)
{
    if (name == NULL || op_p == NULL)
        return HB_ERR_INVAL;
    for (int i = 0; i < HB_COLL_OP_COUNT; i++) {
        if (strcmp(name, op_names[i]) == 0) {
            *op_p = (hb_coll_op_t)i;
            return 0;
        }
    }
    return HB_ERR_INVAL;
}

int hb_coll_alg_valid(hb_coll_op_t op, hb_coll_alg_t alg)
{
    if ((unsigned)op >= HB_COLL_OP_COUNT || (unsigned)alg >= HB_COLL_ALG_COUNT)
        return 0;
    if (op == HB_COLL_ALLTOALL)
        return alg == HB_COLL_ALG_FLAT || alg == HB_COLL_ALG_PAIRWISE;
    return alg != HB_COLL_ALG_PAIRWISE;
}
