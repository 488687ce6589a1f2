/* hwb.c: backend selection (priority, HIBAR_HWBARRIER) and the generic chassis-barrier calls. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hwb.h"

#include "hb_log.h"
#include "hb_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every backend; "auto" tries them by descending priority. */
static const hb_hwb_component_t *const hb_hwb_components[] = {
    &hb_hwb_scic_component,
    &hb_hwb_shm_component,
};
#define HB_HWB_NCOMP (sizeof(hb_hwb_components) / sizeof(hb_hwb_components[0]))

int hb_hwb_params_check(const hb_hwb_params_t *p)
{
    size_t len;
    if (p == NULL || p->cluster == NULL) {
        hb_log_error("hwbarrier: no parameters or no cluster name");
        return HB_ERR_INVAL;
    }
    len = strlen(p->cluster);
    if (len == 0 || len > 32 ||
        strspn(p->cluster, "abcdefghijklmnopqrstuvwxyz"
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len) {
        hb_log_error("hwbarrier: cluster name '%s' must be 1..32 of [A-Za-z0-9_.-]", p->cluster);
        return HB_ERR_INVAL;
    }
    if (p->nodes < 1 || p->nodes > HB_HWB_MAX_NODES || p->port >= p->nodes) {
        hb_log_error("hwbarrier: port %u of %u nodes is out of range (1..%d nodes)", p->port,
                     p->nodes, HB_HWB_MAX_NODES);
        return HB_ERR_INVAL;
    }
    return 0;
}

/* The k-th component in descending priority (ties: table order). */
static const hb_hwb_component_t *hb_hwb_by_priority(size_t k)
{
    const hb_hwb_component_t *order[HB_HWB_NCOMP];
    memcpy(order, hb_hwb_components, sizeof(order));
    for (size_t i = 1; i < HB_HWB_NCOMP; i++)
        for (size_t j = i; j > 0 && order[j - 1]->priority < order[j]->priority; j--) {
            const hb_hwb_component_t *t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
        }
    return order[k];
}

static const hb_hwb_component_t *hb_hwb_find(const char *name)
{
    for (size_t i = 0; i < HB_HWB_NCOMP; i++)
        if (strcmp(hb_hwb_components[i]->name, name) == 0)
            return hb_hwb_components[i];
    return NULL;
}

static int hb_hwb_open_one(const hb_hwb_component_t *c, const hb_hwb_params_t *p, hb_hwb_t **h_p,
                           int forced)
{
    char why[160] = "";
    hb_hwb_t *h;
    int rc = c->query(p, why, sizeof(why));
    if (rc < 0) {
        if (forced)
            hb_log_error("hwbarrier: backend %s unavailable: %s", c->name, why);
        else
            hb_log_info("hwbarrier: backend %s unavailable: %s", c->name, why);
        return rc;
    }
    rc = c->ops->open(p, &h);
    if (rc < 0)
        return rc;
    h->ops = c->ops;
    h->comp = c;
    *h_p = h;
    hb_log_debug("hwbarrier: chassis %u port %u/%u opened with backend %s", p->chassis, p->port,
                 p->nodes, c->name);
    return 0;
}

int hb_hwb_open(const char *backend, const hb_hwb_params_t *p, hb_hwb_t **h_p)
{
    const char *env = getenv("HIBAR_HWBARRIER");
    int rc = HB_ERR_UNAVAIL;

    if (h_p == NULL || hb_hwb_params_check(p) < 0)
        return HB_ERR_INVAL;
    if (env != NULL && *env != '\0')
        backend = env; /* the environment overrides configuration (doc/design.md section 4) */
    if (backend != NULL && strcmp(backend, "auto") != 0) {
        const hb_hwb_component_t *c = hb_hwb_find(backend);
        if (c == NULL) {
            hb_log_error("hwbarrier: unknown backend '%s' (known: scic, shm, auto)", backend);
            return HB_ERR_NOT_FOUND;
        }
        return hb_hwb_open_one(c, p, h_p, 1);
    }
    for (size_t i = 0; i < HB_HWB_NCOMP; i++) {
        rc = hb_hwb_open_one(hb_hwb_by_priority(i), p, h_p, 0);
        if (rc == 0)
            return 0;
        /* A usable backend that failed for a reason other than absence is an error. */
        if (rc != HB_ERR_UNAVAIL)
            return rc;
    }
    hb_log_error("hwbarrier: no backend available (HIBAR_LOG=info shows why)");
    return HB_ERR_UNAVAIL;
}

void hb_hwb_close(hb_hwb_t *h)
{
    if (h != NULL)
        h->ops->close(h);
}

const char *hb_hwb_name(const hb_hwb_t *h)
{
    return h ? h->comp->name : "none";
}

static int hb_hwb_sync_check(const hb_hwb_t *h, uint32_t sync_no)
{
    if (h == NULL || sync_no >= HB_HWB_NSYNC)
        return HB_ERR_INVAL;
    return 0;
}

int hb_hwb_arrive(hb_hwb_t *h, uint32_t sync_no, uint32_t mask)
{
    if (hb_hwb_sync_check(h, sync_no) < 0 || mask == 0)
        return HB_ERR_INVAL;
    return h->ops->arrive(h, sync_no, mask);
}

int hb_hwb_test(hb_hwb_t *h, uint32_t sync_no)
{
    if (hb_hwb_sync_check(h, sync_no) < 0)
        return HB_ERR_INVAL;
    return h->ops->test(h, sync_no);
}

int hb_hwb_wait(hb_hwb_t *h, uint32_t sync_no, int timeout_ms)
{
    uint32_t got;
    if (hb_hwb_sync_check(h, sync_no) < 0)
        return HB_ERR_INVAL;
    return h->ops->wait(h, 1u << sync_no, timeout_ms, &got);
}

int hb_hwb_barrier(hb_hwb_t *h, uint32_t sync_no, uint32_t mask, int timeout_ms)
{
    int rc = hb_hwb_arrive(h, sync_no, mask);
    if (rc < 0)
        return rc;
    return hb_hwb_wait(h, sync_no, timeout_ms);
}

int hb_hwb_fd(hb_hwb_t *h, int *fd_p)
{
    if (h == NULL || fd_p == NULL)
        return HB_ERR_INVAL;
    return h->ops->fd(h, fd_p);
}

int hb_hwb_fd_arm(hb_hwb_t *h, int armed)
{
    if (h == NULL)
        return HB_ERR_INVAL;
    return h->ops->fd_arm(h, armed);
}

int hb_hwb_abandon(hb_hwb_t *h)
{
    if (h == NULL)
        return HB_ERR_INVAL;
    return h->ops->abandon != NULL ? h->ops->abandon(h) : HB_ERR_UNAVAIL;
}

int hb_hwb_list(const hb_hwb_params_t *params, hb_hwb_info_t *info, size_t max, size_t *n_p)
{
    hb_hwb_params_t dflt = {.cluster = "hibar", .chassis = 0, .port = 0, .nodes = 1};
    if (n_p == NULL || (info == NULL && max > 0))
        return HB_ERR_INVAL;
    if (params == NULL)
        params = &dflt;
    for (size_t i = 0; i < HB_HWB_NCOMP && i < max; i++) {
        const hb_hwb_component_t *c = hb_hwb_by_priority(i);
        snprintf(info[i].name, sizeof(info[i].name), "%s", c->name);
        info[i].priority = c->priority;
        info[i].why[0] = '\0';
        info[i].available = c->query(params, info[i].why, sizeof(info[i].why)) == 0;
    }
    *n_p = HB_HWB_NCOMP;
    return 0;
}
