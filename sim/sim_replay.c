/* sim_replay.c: replays a daemon's recorded hier events through the simulator's barrier driver
 * and compares the actions line by line (issue 10 item 4: one protocol, two drivers). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hb_status.h"
#include "sim_hier.h"

#define RP_LINE 512

/* The action lines (and REFUSED) one fed event gave, as hb_hier_rec_format lines. */
typedef struct rp_out {
    char (*line)[RP_LINE];
    size_t n, cap;
    int nomem;
} rp_out_t;

static void rp_collect(void *arg, const hb_hier_rec_t *r)
{
    rp_out_t *o = arg;

    if (r->kind == HB_HIER_REC_ARRIVE || r->kind == HB_HIER_REC_MSG ||
        r->kind == HB_HIER_REC_HWB_DONE || (r->kind == HB_HIER_REC_REFUSED && r->status == 0))
        return; /* the event itself (PEER_LOST, TIMEOUT: REFUSED 0): input, not an outcome */
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 16;
        char(*l)[RP_LINE] = realloc(o->line, cap * sizeof(*l));
        if (l == NULL) {
            o->nomem = 1;
            return;
        }
        o->line = l;
        o->cap = cap;
    }
    if (hb_hier_rec_format(r, o->line[o->n], RP_LINE) != 0)
        o->line[o->n][RP_LINE - 1] = '\0';
    o->n++;
}

/* Length of the part of a line that must match: up to " ib=" (the stamps differ), without
 * trailing white space. */
static size_t rp_key_len(const char *s)
{
    const char *ib = strstr(s, " ib=");
    size_t n = ib ? (size_t)(ib - s) : strlen(s);

    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        n--;
    return n;
}

static int rp_same(const char *a, const char *b)
{
    size_t na = rp_key_len(a), nb = rp_key_len(b);
    return na == nb && memcmp(a, b, na) == 0;
}

static int rp_msg_parse(const char *s, uint32_t *msg_p)
{
    uint32_t m;

    for (m = 1; m <= HB_HIER_MSG_MAX; m++)
        if (strcmp(s, hb_hier_msg_name(m)) == 0) {
            *msg_p = m;
            return 0;
        }
    return HB_ERR_PROTO;
}

/*
 * One trace line. 1: an event (*ev_p), 0: an outcome line (action or REFUSED), negative: it
 * cannot be parsed. *node_p: the node it names.
 */
static int rp_parse(const char *line, uint32_t *node_p, hb_hier_ev_t *ev_p)
{
    char kind[32], a1[32], a2[32];
    unsigned long long coll;
    unsigned node, x;
    int st, n;

    memset(ev_p, 0, sizeof(*ev_p));
    n = sscanf(line, "n%u coll %llu %31s %31s %31s", &node, &coll, kind, a1, a2);
    if (n < 3)
        return HB_ERR_PROTO;
    *node_p = node;
    ev_p->coll_id = coll;
    if (strcmp(kind, "ARRIVE") == 0) {
        ev_p->kind = HB_HIER_EV_ARRIVE;
        return 1;
    }
    if (strcmp(kind, "MSG") == 0) {
        ev_p->kind = HB_HIER_EV_MSG;
        if (n < 5 || rp_msg_parse(a1, &ev_p->msg) != 0 ||
            sscanf(line, "n%*u coll %*u MSG %*s from n%u", &x) != 1)
            return HB_ERR_PROTO;
        ev_p->from = x;
        return 1;
    }
    if (strcmp(kind, "HWB_DONE") == 0) {
        ev_p->kind = HB_HIER_EV_HWB_DONE;
        if (sscanf(line, "n%*u coll %*u HWB_DONE sync %u", &x) != 1)
            return HB_ERR_PROTO;
        ev_p->sync_no = x;
        if (sscanf(line, "n%*u coll %*u HWB_DONE sync %*u status %d", &st) == 1)
            ev_p->status = st;
        return 1;
    }
    if (strcmp(kind, "PEER_LOST") == 0) {
        ev_p->kind = HB_HIER_EV_PEER_LOST;
        if (sscanf(line, "n%*u coll %*u PEER_LOST from n%u", &x) != 1)
            return HB_ERR_PROTO;
        ev_p->from = x;
        return 1;
    }
    if (strcmp(kind, "TIMEOUT") == 0) {
        ev_p->kind = HB_HIER_EV_TIMEOUT;
        return 1;
    }
    if (strcmp(kind, "SEND") == 0 || strcmp(kind, "HWB_ARRIVE") == 0 ||
        strcmp(kind, "COMPLETE") == 0 || strcmp(kind, "FAIL") == 0 || strcmp(kind, "REFUSED") == 0)
        return 0;
    return HB_ERR_PROTO;
}

/* The header: "# hibard trace: node N nodes N protocol P job J epoch E first_coll F
 * sync_base B n_sync S". */
static int rp_header(const char *line, const hb_topo_t *topo, uint32_t *node_p, hb_sim_opts_t *o,
                     char *err, size_t errlen, const char *path)
{
    char proto[16];
    unsigned node, nodes, job, epoch, base, nsync;
    unsigned long long first;

    if (sscanf(line,
               "# hibard trace: node %u nodes %u protocol %15s job %u epoch %u first_coll %llu "
               "sync_base %u n_sync %u",
               &node, &nodes, proto, &job, &epoch, &first, &base, &nsync) != 8) {
        snprintf(err, errlen, "%s:1: not a hibard trace header", path);
        return HB_ERR_PROTO;
    }
    if (nodes != topo->n_nodes || node >= topo->n_nodes) {
        snprintf(err, errlen,
                 "%s:1: node %u of %u nodes does not fit the topology (%" PRIu32 " nodes)", path,
                 node, nodes, topo->n_nodes);
        return HB_ERR_CONFIG;
    }
    if (hb_hier_proto_parse(proto, &o->proto) != 0 || job != 0 || first != 0 || base != 0 ||
        nsync == 0 || nsync > 64 || epoch == 0) {
        snprintf(err, errlen,
                 "%s:1: engine configuration the simulator's driver does not take "
                 "(protocol %s job %u first_coll %llu sync_base %u n_sync %u epoch %u)",
                 path, proto, job, first, base, nsync, epoch);
        return HB_ERR_CONFIG;
    }
    *node_p = node;
    o->epoch = epoch;
    o->n_sync = nsync;
    return 0;
}

/* Compare the outcome lines that follow an event (lines[from..to)) with what the simulator
 * gave. */
static int rp_compare(const rp_out_t *got, char (*lines)[RP_LINE], const size_t *lno, size_t from,
                      size_t to, size_t ev_i, const char *path, char *err, size_t errlen)
{
    size_t k, n = to - from, m = got->n > n ? got->n : n;

    for (k = 0; k < m; k++) {
        const char *want = k < n ? lines[from + k] : NULL;
        const char *have = k < got->n ? got->line[k] : NULL;
        if (want != NULL && have != NULL && rp_same(want, have))
            continue;
        snprintf(err, errlen,
                 "%s:%zu: after the event of line %zu: daemon: \"%.*s\", simulator: \"%.*s\"", path,
                 want ? lno[from + k] : (to > from ? lno[to - 1] : lno[ev_i]), lno[ev_i],
                 want ? (int)rp_key_len(want) : 9, want ? want : "(nothing)",
                 have ? (int)rp_key_len(have) : 9, have ? have : "(nothing)");
        return HB_ERR_MISMATCH;
    }
    return 0;
}

int hb_sim_replay_file(const hb_topo_t *topo, const char *path, uint64_t *n_ev_p, uint64_t *n_act_p,
                       char *err, size_t errlen)
{
    char(*lines)[RP_LINE] = NULL;
    size_t *lno = NULL, n = 0, cap = 0, i, ln = 0;
    char buf[RP_LINE];
    uint64_t n_ev = 0, n_act = 0;
    uint32_t node = 0, *site_of = NULL;
    hb_sim_params_t p;
    hb_sim_opts_t o;
    sim_world_t w;
    sim_hier_t s;
    rp_out_t out;
    FILE *f;
    int rc = 0, have_world = 0, have_hier = 0;

    memset(&out, 0, sizeof(out));
    if (topo == NULL || path == NULL || err == NULL || errlen == 0)
        return HB_ERR_INVAL;
    err[0] = '\0';
    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HB_ERR_IO;
    }
    /* read it all: the outcome lines of an event are compared once it has been fed */
    while (fgets(buf, sizeof(buf), f) != NULL) {
        ln++;
        if (strchr(buf, '\n') == NULL && !feof(f)) {
            snprintf(err, errlen, "%s:%zu: line too long", path, ln);
            rc = HB_ERR_PROTO;
            goto out;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            char(*l)[RP_LINE] = realloc(lines, nc * sizeof(*l));
            size_t *x;
            if (l == NULL) {
                rc = HB_ERR_NOMEM;
                goto out;
            }
            lines = l;
            x = realloc(lno, nc * sizeof(*x));
            if (x == NULL) {
                rc = HB_ERR_NOMEM;
                goto out;
            }
            lno = x;
            cap = nc;
        }
        memcpy(lines[n], buf, sizeof(buf));
        lno[n++] = ln;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = HB_ERR_IO;
        goto out;
    }
    if (n == 0) {
        snprintf(err, errlen, "%s: empty trace", path);
        rc = HB_ERR_PROTO;
        goto out;
    }
    hb_sim_opts_init(&o);
    rc = rp_header(lines[0], topo, &node, &o, err, errlen, path);
    if (rc != 0)
        goto out;
    o.trace = rp_collect;
    o.trace_arg = &out;

    /* the simulator's own driver, as hb_sim_barrier sets it up, in replay mode */
    hb_sim_params_init(&p);
    site_of = malloc(sizeof(uint32_t) * topo->n_nodes);
    if (site_of == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    for (i = 0; i < topo->n_nodes; i++)
        site_of[i] = topo->nodes[i].site;
    rc = sim_world_init(&w, &p, topo->n_nodes, site_of, NULL);
    if (rc != 0)
        goto out;
    have_world = 1;
    rc = sim_hier_init(&s, &w, topo, &o);
    if (rc != 0)
        goto out;
    have_hier = 1;
    s.replay = 1;

    for (i = 1; i < n && rc == 0;) {
        hb_hier_ev_t ev;
        uint32_t ln_node;
        size_t j, ev_i = i;
        int k;

        if (lines[i][0] == '#' || lines[i][0] == '\n') {
            i++;
            continue;
        }
        k = rp_parse(lines[i], &ln_node, &ev);
        if (k < 0 || ln_node != node) {
            snprintf(err, errlen, "%s:%zu: %s: %.*s", path, lno[i],
                     k < 0 ? "cannot parse" : "another node's line", (int)rp_key_len(lines[i]),
                     lines[i]);
            rc = k < 0 ? HB_ERR_PROTO : HB_ERR_CONFIG;
            break;
        }
        if (k == 0) {
            snprintf(err, errlen, "%s:%zu: an action with no event before it: %.*s", path, lno[i],
                     (int)rp_key_len(lines[i]), lines[i]);
            rc = HB_ERR_MISMATCH;
            break;
        }
        /* the outcome lines of this event run up to the next event */
        for (j = i + 1; j < n; j++) {
            hb_hier_ev_t e2;
            uint32_t n2;
            if (lines[j][0] == '#')
                continue;
            if (rp_parse(lines[j], &n2, &e2) != 0)
                break;
        }
        out.n = 0;
        ev.job = 0;
        ev.epoch = o.epoch;
        (void)sim_hier_feed(&s, node, &ev); /* a refusal is an outcome: traced and compared */
        if (out.nomem) {
            rc = HB_ERR_NOMEM;
            break;
        }
        n_ev++;
        n_act += out.n;
        rc = rp_compare(&out, lines, lno, i + 1, j, ev_i, path, err, errlen);
        i = j;
    }

out:
    if (have_hier)
        sim_hier_free(&s);
    if (have_world)
        sim_world_free(&w);
    if (rc == HB_ERR_NOMEM && err[0] == '\0')
        snprintf(err, errlen, "%s: out of memory", path);
    if (rc == 0) {
        if (n_ev_p != NULL)
            *n_ev_p = n_ev;
        if (n_act_p != NULL)
            *n_act_p = n_act;
    }
    free(site_of);
    free(out.line);
    free(lines);
    free(lno);
    fclose(f);
    return rc;
}
