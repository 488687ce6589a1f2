/* hbd_model.c: the measured model parameters (PlogP(-BR), b_WAN(P)) the daemon's algorithm choice
 * uses. */
#include "hb_config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coll_params.h"
#include "hb_log.h"
#include "hb_params.h"
#include "hbd_model.h"
#include "hb_status.h"

/*
 * The file hibar-bench logp and lanes write for this cluster (hb_params_path: $HIBAR_MODEL_CACHE,
 * or ~/.cache/hibar/CLUSTER.plogp; HIBAR_MODEL_CACHE=none: never; a file naming another cluster
 * is not used). Read when first needed and again whenever it changes (one stat per collective);
 * without it the chooser uses the configuration's links (Hockney / lane model). Every daemon of
 * a cluster must see the same file (an emulated cluster does; on real hosts copy it), or they
 * choose differently and the collective fails with MISMATCH. The cache lives in the daemon
 * context (d->model), from hbd_model_init to hbd_model_fini.
 */
struct hbd_model {
    char path[4096];
    struct timespec mtime;
    off_t size;
    int loaded, warned;
    hb_params_t p;
    hb_model_plogp_t v;
};

int hbd_model_init(hbd_t *d)
{
    d->model = calloc(1, sizeof(*d->model));
    return d->model != NULL ? 0 : HB_ERR_NOMEM;
}

void hbd_model_fini(hbd_t *d)
{
    free(d->model);
    d->model = NULL;
}

const hb_model_plogp_t *hbd_model_params(hbd_t *d, hb_model_lanes_t *ml, const char **src_p)
{
    struct hbd_model *M = d->model;
    struct stat st;
    const char *env = getenv("HIBAR_MODEL_CACHE");
    *src_p = "configuration links";
    if (M == NULL || (env != NULL && strcmp(env, "none") == 0))
        return NULL;
    if (M->path[0] == '\0' && hb_params_path(d->cfg->cluster, M->path, sizeof(M->path)) != 0)
        return NULL;
    if (stat(M->path, &st) != 0) {
        M->loaded = 0;
        return NULL;
    }
    if (!M->loaded || st.st_mtim.tv_sec != M->mtime.tv_sec ||
        st.st_mtim.tv_nsec != M->mtime.tv_nsec || st.st_size != M->size) {
        char err[512], path[4096];
        hb_params_t p;
        M->mtime = st.st_mtim;
        M->size = st.st_size;
        if (hb_params_load(d->cfg->cluster, &p, path, sizeof(path), err, sizeof(err)) != 0) {
            if (!M->warned++)
                hb_log_warn("model parameters not used: %s", err);
            M->loaded = 0;
            return NULL;
        }
        M->p = p;
        hb_model_plogp_view(&M->p, &M->v);
        M->loaded = 1;
        M->warned = 0;
        if (p.n > 0)
            hb_log_info("model: PlogP(-BR) parameters from %s (L %.1f us, %" PRIu32
                        " sizes, q %.0f B, T_RTO %.0f us%s)",
                        M->path, p.L, p.n, p.q, p.t_rto, p.flow_control ? ", flow control" : "");
        if (p.n_bwan > 0)
            hb_log_info("model: b_WAN(P) measured for P = 1..%" PRIu32 " from %s (%.1f .. %.1f "
                        "Mbit/s per lane)",
                        p.n_bwan, M->path, p.bwan[0] * 8.0, p.bwan[p.n_bwan - 1] * 8.0);
    }
    *src_p = M->path;
    hb_model_lanes_view(&M->p, ml);
    return M->p.n > 0 ? &M->v : NULL;
}
