/* place.c: a job's nodes, slots and rank map (place.h). */
#include "hb_config.h"

#include "place.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"

/* The candidate nodes in order, with their slots (0: unbounded). */
typedef struct {
    uint32_t *node, *slots;
    uint32_t n;
} cand_t;

static void cand_free(cand_t *c)
{
    free(c->node);
    free(c->slots);
}

static int cand_alloc(cand_t *c, uint32_t cap)
{
    c->n = 0;
    c->node = calloc(cap ? cap : 1, sizeof(uint32_t));
    c->slots = calloc(cap ? cap : 1, sizeof(uint32_t));
    return c->node != NULL && c->slots != NULL ? 0 : HB_ERR_NOMEM;
}

/* Append node `name` (what: where it was named, for messages). */
static int cand_add(const hb_cfg_t *cfg, cand_t *c, uint8_t *seen, const char *name, uint32_t slots,
                    const char *what, char *err, size_t errlen)
{
    uint32_t id;

    if (hb_cfg_node_find(cfg, name, &id) != 0) {
        snprintf(err, errlen, "unknown node '%s' in %s (cluster %s)", name, what, cfg->cluster);
        return HB_ERR_CONFIG;
    }
    if (seen[id]) {
        snprintf(err, errlen, "node '%s' named twice in %s", name, what);
        return HB_ERR_CONFIG;
    }
    seen[id] = 1;
    c->node[c->n] = id;
    c->slots[c->n++] = slots;
    return 0;
}

static int from_hostlist(const hb_cfg_t *cfg, const char *list, const char *what, cand_t *c,
                         uint8_t *seen, char *err, size_t errlen)
{
    char **names = NULL, where[128];
    uint32_t n = 0, i;
    int rc = hb_cfg_hostlist_expand(list, &names, &n, err, errlen);

    if (rc != 0)
        return rc;
    rc = cand_alloc(c, n);
    snprintf(where, sizeof(where), "%s '%s'", what, list);
    for (i = 0; i < n && rc == 0; i++)
        rc = cand_add(cfg, c, seen, names[i], 0, where, err, errlen);
    hb_cfg_hostlist_free(names, n);
    return rc;
}

/* "NAME [slots=N]" per line; # starts a comment. */
static int from_hostfile(const hb_cfg_t *cfg, const char *path, cand_t *c, uint8_t *seen, char *err,
                         size_t errlen)
{
    FILE *f = fopen(path, "r");
    char line[512], where[300];
    unsigned ln = 0;
    int rc;

    if (f == NULL) {
        snprintf(err, errlen, "cannot read hostfile %s: %s", path, strerror(errno));
        return HB_ERR_IO;
    }
    rc = cand_alloc(c, cfg->n_nodes);
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        char *hash = strchr(line, '#'), *save = NULL, *name, *tok;
        uint32_t slots = 0;
        ln++;
        if (hash != NULL)
            *hash = '\0';
        name = strtok_r(line, " \t\r\n", &save);
        if (name == NULL)
            continue;
        snprintf(where, sizeof(where), "%s:%u", path, ln);
        while (rc == 0 && (tok = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
            char *end = NULL;
            unsigned long v;
            if (strncmp(tok, "slots=", 6) != 0) {
                snprintf(err, errlen, "%s: unknown attribute '%s' (NAME [slots=N])", where, tok);
                rc = HB_ERR_CONFIG;
                break;
            }
            errno = 0;
            v = strtoul(tok + 6, &end, 10);
            if (!isdigit((unsigned char)tok[6]) || *end != '\0' || errno != 0 || v == 0 ||
                v > 1000000) {
                snprintf(err, errlen, "%s: bad slot count '%s'", where, tok + 6);
                rc = HB_ERR_CONFIG;
                break;
            }
            slots = (uint32_t)v;
        }
        if (rc == 0) /* known and not seen yet: never more than n_nodes of them */
            rc = cand_add(cfg, c, seen, name, slots, where, err, errlen);
    }
    fclose(f);
    if (rc == 0 && c->n == 0) {
        snprintf(err, errlen, "hostfile %s names no node", path);
        rc = HB_ERR_CONFIG;
    }
    return rc;
}

/* SLURM_TASKS_PER_NODE, "2(x3),1": slots of the allocation's nodes in order. */
static int slurm_slots(const char *spec, cand_t *c, char *err, size_t errlen)
{
    const char *p = spec;
    uint32_t k = 0;

    while (*p != '\0') {
        char *end = NULL;
        unsigned long v, rep = 1;
        errno = 0;
        v = strtoul(p, &end, 10);
        if (end == p || errno != 0 || v == 0 || v > 1000000)
            goto bad;
        p = end;
        if (strncmp(p, "(x", 2) == 0) {
            rep = strtoul(p + 2, &end, 10);
            if (end == p + 2 || *end != ')' || rep == 0 || rep > 1000000)
                goto bad;
            p = end + 1;
        }
        for (; rep > 0 && k < c->n; rep--)
            c->slots[k++] = (uint32_t)v;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            goto bad;
    }
    if (k == 1) /* SLURM_NTASKS_PER_NODE: one count for every node */
        for (; k < c->n; k++)
            c->slots[k] = c->slots[0];
    if (k != c->n) {
        snprintf(err, errlen,
                 "the allocation's tasks per node '%s' cover %" PRIu32 " of its %" PRIu32 " nodes",
                 spec, k, c->n);
        return HB_ERR_CONFIG;
    }
    return 0;
bad:
    snprintf(err, errlen, "malformed tasks per node '%s' (e.g. 2(x3),1)", spec);
    return HB_ERR_CONFIG;
}

static int place_nodes(const hb_cfg_t *cfg, const hb_place_req_t *req, hb_place_t *out, cand_t *c,
                       char *err, size_t errlen)
{
    uint8_t *seen = calloc(cfg->n_nodes, 1);
    uint32_t i, want;
    int rc = 0;

    if (seen == NULL)
        return HB_ERR_NOMEM;
    if (req->hosts != NULL) {
        snprintf(out->source, sizeof(out->source), "--host");
        rc = from_hostlist(cfg, req->hosts, "--host", c, seen, err, errlen);
    } else if (req->hostfile != NULL) {
        snprintf(out->source, sizeof(out->source), "--hostfile");
        rc = from_hostfile(cfg, req->hostfile, c, seen, err, errlen);
    } else if (req->slurm_nodes != NULL &&
               from_hostlist(cfg, req->slurm_nodes, "the Slurm allocation", c, seen, out->note,
                             sizeof(out->note)) == 0) {
        snprintf(out->source, sizeof(out->source), "the Slurm allocation");
        if (req->slurm_tasks != NULL)
            rc = slurm_slots(req->slurm_tasks, c, err, errlen);
        if (rc == 0 && req->n > 0) { /* more ranks than tasks: spread over the allocation */
            uint64_t cap = 0;
            for (i = 0; i < c->n; i++)
                cap += c->slots[i];
            for (i = 0; cap < req->n && i < c->n; i++)
                c->slots[i] = 0;
        }
    } else {
        if (req->slurm_nodes != NULL) {
            size_t k = strlen(out->note);
            snprintf(out->note + k, sizeof(out->note) - k, ": placing on the cluster's nodes");
            cand_free(c);
            memset(seen, 0, cfg->n_nodes);
        }
        /* the cluster's nodes in order, as many as the job needs */
        snprintf(out->source, sizeof(out->source), "the cluster");
        want = cfg->n_nodes;
        if (req->n > 0 && req->per_node > 0)
            want = (uint32_t)(((uint64_t)req->n + req->per_node - 1) / req->per_node);
        else if (req->n > 0 && req->n < cfg->n_nodes)
            want = req->n;
        if (want > cfg->n_nodes)
            want = cfg->n_nodes;
        uint32_t live = 0;
        for (i = 0; i < cfg->n_nodes; i++)
            live += req->lost == NULL || !req->lost[i];
        if (want > live)
            want = live;
        if (want == 0) {
            snprintf(err, errlen, "every node of the cluster is lost");
            rc = HB_ERR_CONFIG;
        }
        if (rc == 0)
            rc = cand_alloc(c, want);
        /* free nodes first, then busy ones; in node order; never a lost one */
        uint32_t got = 0;
        for (int pass = 0; rc == 0 && pass < 2 && got < want; pass++)
            for (i = 0; i < cfg->n_nodes && got < want; i++)
                if ((req->busy != NULL && req->busy[i]) == pass &&
                    (req->lost == NULL || !req->lost[i])) {
                    seen[i] = 1;
                    got++;
                }
        for (i = 0; rc == 0 && i < cfg->n_nodes; i++)
            if (seen[i]) {
                c->node[c->n] = i;
                c->slots[c->n++] = 0;
            }
    }
    free(seen);
    if (rc == 0 && req->per_node > 0)
        for (i = 0; i < c->n; i++)
            if (c->slots[i] == 0 || c->slots[i] > req->per_node)
                c->slots[i] = req->per_node;
    return rc;
}

/* Ranks per candidate: filled in order up to the slots, or spread evenly. */
static int place_counts(const hb_place_req_t *req, const cand_t *c, const hb_place_t *out,
                        uint32_t *cnt, char *err, size_t errlen)
{
    uint64_t cap = 0;
    uint32_t i, left = out->n;
    int bounded = 1;

    for (i = 0; i < c->n; i++) {
        bounded &= c->slots[i] > 0;
        cap += c->slots[i];
    }
    if (bounded && cap < out->n) {
        snprintf(err, errlen,
                 "%" PRIu32 " ranks do not fit on the %" PRIu32 " nodes of %s: %" PRIu64 " slots%s",
                 out->n, c->n, out->source, cap, req->per_node > 0 ? " (--per-node)" : "");
        return HB_ERR_CONFIG;
    }
    uint32_t n_free = 0, excess = 0;
    for (i = 0; i < c->n; i++) {
        if (bounded)
            cnt[i] = left < c->slots[i] ? left : c->slots[i];
        else
            cnt[i] = out->n / c->n + (i < out->n % c->n);
        left -= cnt[i];
        if (!bounded && c->slots[i] > 0 && cnt[i] > c->slots[i]) {
            excess += cnt[i] - c->slots[i]; /* a hostfile's bound holds: to the unbounded */
            cnt[i] = c->slots[i];
        }
        n_free += c->slots[i] == 0;
    }
    for (i = 0; excess > 0 && i < c->n; i++)
        if (c->slots[i] == 0) {
            uint32_t k = excess / n_free + (excess % n_free != 0);
            cnt[i] += k;
            excess -= k;
            n_free--;
        }
    return 0;
}

int hb_place(const hb_cfg_t *cfg, const hb_place_req_t *req, hb_place_t *out, char *err,
             size_t errlen)
{
    cand_t c = {0};
    uint32_t *cnt = NULL, i, r = 0;
    int rc;

    if (cfg == NULL || req == NULL || out == NULL || err == NULL)
        return HB_ERR_INVAL;
    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    rc = place_nodes(cfg, req, out, &c, err, errlen);
    if (rc != 0)
        goto out;
    out->n = req->n;
    if (out->n == 0) {
        for (i = 0; i < c.n && rc == 0; i++) {
            if (c.slots[i] == 0) {
                snprintf(err, errlen, "how many ranks? the nodes of %s bound no slots: give -n",
                         out->source);
                rc = HB_ERR_CONFIG;
            }
            out->n += c.slots[i];
        }
        if (rc != 0)
            goto out;
    }
    cnt = calloc(c.n, sizeof(uint32_t));
    out->map = calloc(out->n, sizeof(uint32_t));
    out->member = calloc(cfg->n_nodes, 1);
    if (cnt == NULL || out->map == NULL || out->member == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    rc = place_counts(req, &c, out, cnt, err, errlen);
    if (rc != 0)
        goto out;
    for (i = 0; i < c.n; i++)
        if (cnt[i] > 0) {
            out->member[c.node[i]] = 1;
            out->n_members++;
        }
    if (!req->by_chassis) {
        for (i = 0; i < c.n; i++)
            for (uint32_t k = 0; k < cnt[i]; k++)
                out->map[r++] = c.node[i];
    } else {
        /* each chassis' ranks, chassis by chassis, dealt round-robin over its member nodes */
        uint32_t *per = calloc(cfg->n_nodes, sizeof(uint32_t));
        if (per == NULL) {
            rc = HB_ERR_NOMEM;
            goto out;
        }
        for (i = 0; i < c.n; i++)
            per[c.node[i]] = cnt[i];
        for (uint32_t ch = 0; ch < cfg->n_chassis; ch++) {
            uint32_t s0 = cfg->chassis_start[ch], s1 = cfg->chassis_start[ch + 1], total = 0;
            for (uint32_t k = s0; k < s1; k++)
                total += per[cfg->chassis_nodes[k]];
            for (uint32_t got = 0, k = s0; got < total; k = k + 1 < s1 ? k + 1 : s0)
                if (per[cfg->chassis_nodes[k]] > 0) {
                    per[cfg->chassis_nodes[k]]--;
                    out->map[r++] = cfg->chassis_nodes[k];
                    got++;
                }
        }
        free(per);
    }
out:
    free(cnt);
    cand_free(&c);
    if (rc != 0)
        hb_place_free(out);
    return rc;
}

void hb_place_free(hb_place_t *p)
{
    if (p == NULL)
        return;
    free(p->map);
    free(p->member);
    p->map = NULL;
    p->member = NULL;
}
