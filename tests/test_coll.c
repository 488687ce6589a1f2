/* test_coll.c: CUnit tests of coll/ schedules and executors, run by an in-memory driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "hb_status.h"
#include "coll_sched.h"
#include "../config/topo.h"
#include "hb_test.h"

/* ---- deterministic random numbers (xorshift64*) ---- */

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
    rng_state = s * 2654435761u + 0x9e3779b97f4a7c15ull;
}

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static uint32_t rnd(uint32_t n)
{
    return n ? (uint32_t)(rng() % n) : 0;
}

/* ---- the in-memory network ---- */

typedef enum {
    DLV_FIFO = 0,        /* scripted: every message in the order it was sent */
    DLV_LIFO = 1,        /* scripted: the newest message first */
    DLV_RANDOM_LINK = 2, /* seeded: a random link, its oldest message (per-link FIFO) */
    DLV_RANDOM_ANY = 3,  /* seeded: any message (links reorder) */
    DLV_COUNT = 4
} dlv_t;

typedef struct msg {
    uint32_t from, to, seq;
    uint64_t off, len;
    uint8_t wan;
    uint8_t *data;
    uint64_t id; /* send order */
} msg_t;

/* What one run observed. */
typedef struct run {
    uint32_t n;
    hb_coll_exec_t **x;
    uint8_t **sbuf, **rbuf;
    uint64_t *rlen;
    msg_t *q;              /* in flight, in send order */
    size_t nq, capq, head; /* in flight: q[head .. nq) */
    uint64_t next_id;
    uint32_t *msgs_to;   /* [n] segments received per node */
    uint32_t *msgs_from; /* [n] segments sent per node */
    uint32_t *wan_from;  /* [n] WAN segments sent per node */
    uint32_t *wan_to;    /* [n] WAN segments received per node */
    uint32_t *pair;      /* [n*n] segments per (from, to) */
    uint32_t *delivered, *completed, *failed;
    int proto_errors;
    size_t total_msgs;
    /* HB_COLL_EXEC_OUT_BY_CALLER: every node's copy of what it received, in layout order (as
     * hibard writes it to the ranks), and how many bytes of each node's block it got */
    uint8_t **mine;
    uint64_t *got; /* [n * n] */
} run_t;

static void run_free(run_t *r)
{
    for (uint32_t v = 0; v < r->n; v++) {
        hb_coll_exec_free(r->x[v]);
        free(r->sbuf[v]);
        free(r->rbuf[v]);
        if (r->mine != NULL)
            free(r->mine[v]);
    }
    free(r->mine);
    free(r->got);
    for (size_t i = r->head; i < r->nq; i++)
        free(r->q[i].data);
    free(r->x);
    free(r->sbuf);
    free(r->rbuf);
    free(r->rlen);
    free(r->q);
    free(r->msgs_to);
    free(r->msgs_from);
    free(r->wan_from);
    free(r->wan_to);
    free(r->pair);
    free(r->delivered);
    free(r->completed);
    free(r->failed);
}

/* Byte i of node v's block. */
static uint8_t pat(uint32_t v, uint64_t i, uint32_t salt)
{
    return (uint8_t)(v * 131u + i * 7u + (i >> 8) * 13u + salt);
}

static void handle_acts(run_t *r, uint32_t v, const hb_coll_act_t *a, size_t na)
{
    for (size_t i = 0; i < na; i++) {
        switch (a[i].kind) {
        case HB_COLL_ACT_SEND: {
            if (r->nq == r->capq) {
                r->capq = r->capq ? 2 * r->capq : 256;
                r->q = realloc(r->q, r->capq * sizeof(*r->q));
                if (r->q == NULL)
                    abort();
            }
            msg_t *m = &r->q[r->nq++];
            *m = (msg_t){.from = v,
                         .to = a[i].to,
                         .seq = a[i].seq,
                         .off = a[i].off,
                         .len = a[i].len,
                         .wan = a[i].wan,
                         .id = r->next_id++};
            if (a[i].data != NULL && a[i].len > 0) {
                m->data = malloc(a[i].len);
                if (m->data == NULL)
                    abort();
                memcpy(m->data, a[i].data, a[i].len);
            }
            r->msgs_from[v]++;
            r->pair[(size_t)v * r->n + a[i].to]++;
            if (a[i].wan)
                r->wan_from[v]++;
            r->total_msgs++;
            break;
        }
        case HB_COLL_ACT_DELIVER:
            r->delivered[v]++;
            break;
        case HB_COLL_ACT_COMPLETE:
            r->completed[v]++;
            break;
        case HB_COLL_ACT_FAIL:
            r->failed[v]++;
            break;
        case HB_COLL_ACT_POST_RECV:
            break;
        }
    }
}

/* Feed one event to node v with a small, random action buffer; poll while it has more. */
static void feed(run_t *r, uint32_t v, const hb_coll_ev_t *ev)
{
    hb_coll_act_t acts[4];
    size_t max = 1 + rnd(4), na = 0;
    int rc = hb_coll_exec_step(r->x[v], ev, acts, max, &na);
    if (rc != 0) {
        r->proto_errors++;
        return;
    }
    handle_acts(r, v, acts, na);
    while (hb_coll_exec_pending(r->x[v])) {
        hb_coll_ev_t poll = {.kind = HB_COLL_EV_POLL};
        rc = hb_coll_exec_step(r->x[v], &poll, acts, max, &na);
        if (rc != 0) {
            r->proto_errors++;
            return;
        }
        handle_acts(r, v, acts, na);
    }
}

/* Take the message to deliver next out of the queue. */
static msg_t take(run_t *r, dlv_t mode)
{
    size_t i;
    switch (mode) {
    case DLV_FIFO:
        return r->q[r->head++];
    case DLV_LIFO:
        return r->q[--r->nq];
    case DLV_RANDOM_ANY:
        i = r->head + rnd((uint32_t)(r->nq - r->head));
        break;
    case DLV_RANDOM_LINK:
    default:
        i = r->head + rnd((uint32_t)(r->nq - r->head));
        /* the oldest message on the same link */
        for (size_t j = r->head; j < r->nq; j++)
            if (r->q[j].from == r->q[i].from && r->q[j].to == r->q[i].to && r->q[j].id < r->q[i].id)
                i = j;
        break;
    }
    msg_t m = r->q[i];
    r->q[i] = r->q[--r->nq];
    return m;
}

/* In place: gather node v's output from the executor's blocks into rbuf (node order), as a
 * caller would, so that check_data sees it. -1 when a block is missing or has the wrong size. */
static int out_from_blocks(run_t *r, const hb_coll_sched_t *s, uint32_t v)
{
    uint64_t len;
    const uint8_t *b;
    if (r->delivered[v] == 0)
        return 0;
    if (s->op == HB_COLL_ALLTOALL) {
        for (uint32_t w = 0; w < s->n_nodes; w++) {
            uint64_t want = hb_coll_pair_len(s, w, v);
            b = hb_coll_exec_block(r->x[v], w, &len);
            if (want > 0 && (b == NULL || len != want))
                return -1;
            if (want > 0)
                memcpy(r->rbuf[v] + hb_coll_pair_noff(s, v, w), b, want);
        }
        return 0;
    }
    if (s->op == HB_COLL_BCAST || s->op == HB_COLL_SCATTER) {
        uint64_t want = s->op == HB_COLL_BCAST ? s->total : s->bytes[v];
        uint32_t w = s->op == HB_COLL_BCAST ? 0 : v;
        b = hb_coll_exec_block(r->x[v], v, &len);
        if (want > 0 && (b == NULL || len != want))
            return -1;
        if (r->mine != NULL && want > 0 && v != s->root && r->got[(size_t)v * r->n + w] >= want)
            b = r->mine[v] + (s->op == HB_COLL_BCAST ? 0 : s->loff[v]);
        if (want > 0)
            memcpy(r->rbuf[v], b, want);
        return 0;
    }
    for (uint32_t w = 0; w < s->n_nodes; w++) {
        b = hb_coll_exec_block(r->x[v], w, &len);
        if (s->bytes[w] > 0 && (b == NULL || len != s->bytes[w]))
            return -1;
        if (r->mine != NULL && s->bytes[w] > 0 && w != v &&
            r->got[(size_t)v * r->n + w] >= s->bytes[w])
            b = r->mine[v] + s->loff[w]; /* received, every byte: the caller's copy */
        if (s->bytes[w] > 0)
            memcpy(r->rbuf[v] + s->noff[w], b, s->bytes[w]);
    }
    return 0;
}

/* OUT_BY_CALLER: node v took segment [off, off + len): keep the caller's copy of it. */
static void keep_mine(run_t *r, const hb_coll_sched_t *s, uint32_t v, uint64_t off, uint64_t len,
                      const uint8_t *data)
{
    if (r->mine == NULL || len == 0)
        return;
    memcpy(r->mine[v] + off, data, len);
    for (uint32_t w = 0; w < s->n_nodes; w++) {
        uint64_t lo = s->op == HB_COLL_BCAST ? 0 : s->loff[w];
        uint64_t hi = lo + (s->op == HB_COLL_BCAST ? s->total : s->bytes[w]);
        uint64_t a = off > lo ? off : lo, e = off + len < hi ? off + len : hi;
        if (e > a)
            r->got[(size_t)v * r->n + w] += e - a;
    }
}

/*
 * Run schedule s on every node: nodes start in a random order interleaved with deliveries
 * (random modes) or all first (scripted modes). Returns 0 when every node completed.
 */
static int run_sched(run_t *r, const hb_coll_sched_t *s, dlv_t mode, unsigned flags, uint32_t salt)
{
    uint32_t n = s->n_nodes;
    memset(r, 0, sizeof(*r));
    r->n = n;
    r->x = calloc(n, sizeof(*r->x));
    r->sbuf = calloc(n, sizeof(*r->sbuf));
    r->rbuf = calloc(n, sizeof(*r->rbuf));
    r->rlen = calloc(n, sizeof(*r->rlen));
    r->msgs_to = calloc(n, sizeof(uint32_t));
    r->msgs_from = calloc(n, sizeof(uint32_t));
    r->wan_from = calloc(n, sizeof(uint32_t));
    r->wan_to = calloc(n, sizeof(uint32_t));
    r->pair = calloc((size_t)n * n, sizeof(uint32_t));
    r->delivered = calloc(n, sizeof(uint32_t));
    r->completed = calloc(n, sizeof(uint32_t));
    r->failed = calloc(n, sizeof(uint32_t));
    CU_ASSERT_FATAL(r->x && r->sbuf && r->rbuf && r->rlen && r->msgs_to && r->pair && r->failed);
    int nodata = (flags & HB_COLL_EXEC_NODATA) != 0;
    if (flags & HB_COLL_EXEC_OUT_BY_CALLER) {
        r->mine = calloc(n, sizeof(*r->mine));
        r->got = calloc((size_t)n * n, sizeof(*r->got));
        CU_ASSERT_FATAL(r->mine != NULL && r->got != NULL);
        for (uint32_t v = 0; v < n; v++) {
            r->mine[v] = calloc(s->total + 1, 1);
            CU_ASSERT_FATAL(r->mine[v] != NULL);
        }
    }
    for (uint32_t v = 0; v < n; v++) {
        uint64_t slen = 0;
        if (s->op == HB_COLL_SCATTER && v == s->root)
            slen = s->total;
        else if (s->op == HB_COLL_BCAST && v == s->root)
            slen = s->total;
        else if (s->op == HB_COLL_GATHER || s->op == HB_COLL_ALLGATHER || s->op == HB_COLL_ALLTOALL)
            slen = s->bytes[v];
        if (s->op == HB_COLL_SCATTER || s->op == HB_COLL_ALLTOALL)
            r->rlen[v] = s->bytes[v];
        else if (s->op == HB_COLL_GATHER)
            r->rlen[v] = v == s->root ? s->total : 0;
        else
            r->rlen[v] = s->total;
        r->sbuf[v] = malloc(slen + 1);
        r->rbuf[v] = malloc(r->rlen[v] + 1);
        CU_ASSERT_FATAL(r->sbuf[v] && r->rbuf[v]);
        memset(r->rbuf[v], 0xEE, r->rlen[v] + 1);
        if (s->op == HB_COLL_SCATTER && v == s->root) {
            for (uint32_t w = 0; w < n; w++)
                for (uint64_t i = 0; i < s->bytes[w]; i++)
                    r->sbuf[v][s->noff[w] + i] = pat(w, i, salt);
        } else if (s->op == HB_COLL_BCAST) {
            for (uint64_t i = 0; i < slen; i++)
                r->sbuf[v][i] = pat(0, i, salt);
        } else if (s->op == HB_COLL_ALLTOALL) {
            for (uint32_t w = 0; w < n; w++)
                for (uint64_t i = 0; i < hb_coll_pair_len(s, v, w); i++)
                    r->sbuf[v][hb_coll_pair_noff(s, v, w) + i] = pat(v * 257 + w, i, salt);
        } else {
            for (uint64_t i = 0; i < slen; i++)
                r->sbuf[v][i] = pat(v, i, salt);
        }
        int in_place = (flags & HB_COLL_EXEC_IN_PLACE) != 0;
        int rc = hb_coll_exec_create(s, v, nodata ? NULL : r->sbuf[v],
                                     nodata || in_place ? NULL : r->rbuf[v], flags, &r->x[v]);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
    }
    /* start order: a random permutation */
    uint32_t *order = malloc(n * sizeof(*order));
    CU_ASSERT_FATAL(order != NULL);
    for (uint32_t v = 0; v < n; v++)
        order[v] = v;
    for (uint32_t v = n; v > 1; v--) {
        uint32_t j = rnd(v), t = order[v - 1];
        order[v - 1] = order[j];
        order[j] = t;
    }
    uint32_t started = 0;
    int scripted = mode == DLV_FIFO || mode == DLV_LIFO;
    for (;;) {
        if (r->head == r->nq)
            r->head = r->nq = 0;
        if (started < n && (scripted || r->nq == 0 || rnd(3) == 0)) {
            hb_coll_ev_t ev = {.kind = HB_COLL_EV_START};
            feed(r, order[started++], &ev);
            continue;
        }
        if (r->nq == 0)
            break;
        msg_t m = take(r, mode);
        r->msgs_to[m.to]++;
        if (m.wan)
            r->wan_to[m.to]++;
        hb_coll_ev_t ev = {.kind = HB_COLL_EV_MSG,
                           .from = m.from,
                           .seq = m.seq,
                           .off = m.off,
                           .len = m.len,
                           .data = m.data};
        int errs = r->proto_errors;
        feed(r, m.to, &ev);
        if (r->proto_errors == errs)
            keep_mine(r, s, m.to, m.off, m.len, m.data);
        free(m.data);
    }
    free(order);
    int ok = 1;
    for (uint32_t v = 0; v < n; v++)
        if (r->completed[v] != 1 || r->failed[v] != 0 || !hb_coll_exec_done(r->x[v]))
            ok = 0;
    if (ok && (flags & HB_COLL_EXEC_IN_PLACE))
        for (uint32_t v = 0; v < n; v++)
            if (out_from_blocks(r, s, v) != 0)
                ok = 0;
    return ok ? 0 : -1;
}

/* Check every node's output against the inputs. Returns the number of wrong nodes. */
static int check_data(const run_t *r, const hb_coll_sched_t *s, uint32_t salt)
{
    int bad = 0;
    for (uint32_t v = 0; v < s->n_nodes; v++) {
        const uint8_t *out = r->rbuf[v];
        int wrong = 0;
        switch (s->op) {
        case HB_COLL_SCATTER:
            for (uint64_t i = 0; i < s->bytes[v] && !wrong; i++)
                wrong = out[i] != pat(v, i, salt);
            break;
        case HB_COLL_BCAST:
            for (uint64_t i = 0; i < s->total && !wrong; i++)
                wrong = out[i] != pat(0, i, salt);
            break;
        case HB_COLL_GATHER:
            if (v != s->root)
                break;
            /* fall through */
        case HB_COLL_ALLGATHER:
            for (uint32_t w = 0; w < s->n_nodes && !wrong; w++)
                for (uint64_t i = 0; i < s->bytes[w] && !wrong; i++)
                    wrong = out[s->noff[w] + i] != pat(w, i, salt);
            break;
        case HB_COLL_ALLTOALL: /* the block from w, node v's in w's input */
            for (uint32_t w = 0; w < s->n_nodes && !wrong; w++)
                for (uint64_t i = 0; i < hb_coll_pair_len(s, w, v) && !wrong; i++)
                    wrong = out[hb_coll_pair_noff(s, v, w) + i] != pat(w * 257 + v, i, salt);
            break;
        default:
            wrong = 1;
        }
        if (out[r->rlen[v]] != 0xEE) /* nothing written past the output */
            wrong = 1;
        int has_out = s->op != HB_COLL_GATHER || v == s->root;
        if (r->delivered[v] != (uint32_t)has_out)
            wrong = 1;
        bad += wrong;
    }
    return bad;
}

/* Segments node v expects, from its schedule. */
static uint32_t expected_segs(const hb_coll_sched_t *s, uint32_t v)
{
    uint32_t ns, k = 0;
    const hb_coll_step_t *st = hb_coll_sched_steps(s, v, &ns);
    for (uint32_t i = 0; i < ns; i++)
        if (st[i].kind == HB_COLL_STEP_RECV)
            k += st[i].nseg;
    return k;
}

/* ---- one randomized case ---- */

typedef struct shape {
    uint32_t n;
    uint32_t site_of[64];
    uint32_t ranks_of[64];
    uint64_t counts[64];
} shape_t;

static void random_shape(shape_t *sh, uint32_t max_nodes)
{
    sh->n = 1 + rnd(max_nodes);
    uint32_t n_sites = 1 + rnd(4);
    for (uint32_t v = 0; v < sh->n; v++) {
        /* uneven sites: skewed towards low site numbers, and not contiguous in node order */
        uint32_t a = rnd(n_sites), b = rnd(n_sites);
        sh->site_of[v] = a < b ? a : b;
        sh->ranks_of[v] = rnd(4); /* 0..3 ranks, uneven */
        sh->counts[v] = rnd(5) == 0 ? 0 : rnd(300);
    }
}

static int g_cases, g_failures;

static void one_case(uint64_t seed, hb_coll_op_t op, hb_coll_alg_t alg, dlv_t mode, int vform)
{
    static const uint64_t sizes[] = {0, 1, 7, 100, 1000};
    static const uint64_t segs[] = {0, 1, 3, 64, 1000};
    rng_seed(seed);
    shape_t sh;
    random_shape(&sh, 24);
    hb_coll_nodes_t nodes = {.n_nodes = sh.n, .site_of = sh.site_of, .ranks_of = sh.ranks_of};
    hb_coll_args_t args = {
        .op = op,
        .alg = alg,
        .root = rnd(sh.n),
        .size = sizes[rnd(5)],
        .counts = (vform && op != HB_COLL_BCAST && op != HB_COLL_ALLTOALL) ? sh.counts : NULL,
        .seg_size = segs[rnd(5)],
        .lanes = rnd(5)};
    if (args.seg_size > 0 && args.seg_size < args.size / 8) /* bound the message count */
        args.seg_size = args.size / 8 + 1;
    hb_coll_sched_t *s = NULL;
    int rc = hb_coll_sched_build(&nodes, &args, &s);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char msg[200];
    rc = hb_coll_sched_check(s, msg, sizeof(msg));
    if (rc != 0)
        fprintf(stderr, "\nseed %llu %s/%s: %s\n", (unsigned long long)seed, hb_coll_op_name(op),
                hb_coll_alg_name(alg), msg);
    CU_ASSERT_EQUAL(rc, 0);
    run_t r;
    uint32_t salt = (uint32_t)seed;
    /* one seed in two: segments out of the input and the output read where it is; one in
     * four of those (not alltoall): what a node only receives is the caller's to keep */
    unsigned flags = (seed / 1000) & 1 ? HB_COLL_EXEC_IN_PLACE : 0;
    if ((seed / 1000) % 4 == 1 && op != HB_COLL_ALLTOALL)
        flags |= HB_COLL_EXEC_OUT_BY_CALLER;
    rc = run_sched(&r, s, mode, flags, salt);
    int bad = rc == 0 ? check_data(&r, s, salt) : -1;
    for (uint32_t v = 0; v < s->n_nodes; v++)
        if (r.msgs_to[v] != expected_segs(s, v))
            bad = bad < 0 ? bad : bad + 1;
    if (r.proto_errors != 0)
        bad = -2;
    if (bad != 0) {
        fprintf(stderr, "\nseed %llu %s/%s mode %d n %u root %u size %llu seg %llu lanes %u: %d\n",
                (unsigned long long)seed, hb_coll_op_name(op), hb_coll_alg_name(alg), (int)mode,
                sh.n, args.root, (unsigned long long)args.size, (unsigned long long)args.seg_size,
                args.lanes, bad);
        g_failures++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    g_cases++;
    run_free(&r);
    hb_coll_sched_free(s);
}

static void test_random_all(void)
{
    g_cases = g_failures = 0;
    for (uint64_t seed = 1; seed <= 30 && g_failures < 5; seed++)
        for (int op = 0; op < HB_COLL_OP_COUNT; op++)
            for (int alg = 0; alg < HB_COLL_ALG_COUNT; alg++)
                for (int mode = 0; mode < DLV_COUNT && hb_coll_alg_valid(op, alg); mode++)
                    one_case(seed * 1000 + (uint64_t)(op * 100 + alg * 10 + mode), (hb_coll_op_t)op,
                             (hb_coll_alg_t)alg, (dlv_t)mode, (int)(seed & 1));
    CU_ASSERT(g_cases >= 30 * (4 * 4 + 2) * 4 || g_failures > 0);
}

/* In place, a flat scatter's root sends every segment out of its send buffer and holds no
 * layout; its own block is read there too. A root-rotated binomial tree sends ranges that are
 * not one piece in node order (root 3: blocks 5 and 0 side by side), so its root copies. */
static void test_in_place(void)
{
    uint32_t site_of[6] = {0}, ranks_of[6] = {1, 2, 1, 3, 1, 1};
    hb_coll_nodes_t nodes = {.n_nodes = 6, .site_of = site_of, .ranks_of = ranks_of};
    for (int alg = HB_COLL_ALG_FLAT; alg <= HB_COLL_ALG_BINOMIAL; alg++) {
        hb_coll_args_t a = {.op = HB_COLL_SCATTER,
                            .alg = (hb_coll_alg_t)alg,
                            .root = 3,
                            .size = 100,
                            .seg_size = 64};
        hb_coll_sched_t *s = NULL;
        CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&nodes, &a, &s), 0);
        uint8_t *in = malloc(s->total);
        CU_ASSERT_FATAL(in != NULL);
        for (uint32_t w = 0; w < 6; w++)
            for (uint64_t i = 0; i < s->bytes[w]; i++)
                in[s->noff[w] + i] = pat(w, i, 5);
        hb_coll_exec_t *x = NULL;
        CU_ASSERT_EQUAL_FATAL(hb_coll_exec_create(s, 3, in, NULL, HB_COLL_EXEC_IN_PLACE, &x), 0);
        int flat = alg == HB_COLL_ALG_FLAT;
        uint64_t wl = 99;
        const uint8_t *w = hb_coll_exec_work(x, &wl);
        CU_ASSERT_EQUAL(wl, flat ? 0 : s->total); /* flat: nothing copied, no layout */
        hb_coll_act_t acts[64];
        size_t na = 0, sends = 0;
        hb_coll_ev_t ev = {.kind = HB_COLL_EV_START};
        CU_ASSERT_EQUAL(hb_coll_exec_step(x, &ev, acts, 64, &na), 0);
        for (size_t i = 0; i < na; i++) {
            if (acts[i].kind != HB_COLL_ACT_SEND)
                continue;
            const uint8_t *p = acts[i].data;
            sends++;
            if (flat)
                CU_ASSERT(p >= in && p + acts[i].len <= in + s->total);
            if (!flat)
                CU_ASSERT(p >= w && p + acts[i].len <= w + wl);
            /* the bytes the layout range names */
            for (uint32_t b = 0; b < 6; b++)
                if (acts[i].off >= s->loff[b] && acts[i].off < s->loff[b] + s->bytes[b])
                    CU_ASSERT_EQUAL(p[0], pat(b, acts[i].off - s->loff[b], 5));
        }
        CU_ASSERT(sends >= (alg == HB_COLL_ALG_FLAT ? 5u : 2u));
        uint64_t len = 0;
        const uint8_t *own = hb_coll_exec_block(x, 3, &len);
        CU_ASSERT_EQUAL(len, s->bytes[3]);
        CU_ASSERT(own != NULL && (flat ? own == in + s->noff[3] : own == w + s->loff[3]));
        for (uint64_t i = 0; own != NULL && i < len; i++)
            CU_ASSERT_EQUAL_FATAL(own[i], pat(3, i, 5));
        CU_ASSERT_PTR_NULL(hb_coll_exec_block(x, 99, &len));
        CU_ASSERT_EQUAL(len, 0);
        hb_coll_exec_free(x);
        free(in);
        hb_coll_sched_free(s);
    }
}

/* ---- structure: message counts per link ---- */

/* 2 sites: site 0 = nodes {0,2,4,..} (n0 of them), site 1 the rest; root 0. */
static hb_coll_sched_t *two_sites(hb_coll_op_t op, hb_coll_alg_t alg, uint32_t n0, uint32_t n1,
                                  uint32_t lanes, uint64_t seg, uint64_t size, uint32_t *site_of,
                                  uint32_t *ranks_of)
{
    uint32_t n = n0 + n1;
    for (uint32_t v = 0, a = 0, b = 0; v < n; v++) {
        int zero = (a < n0 && (v % 2 == 0 || b >= n1));
        site_of[v] = zero ? 0 : 1;
        if (zero)
            a++;
        else
            b++;
        ranks_of[v] = 1 + v % 3;
    }
    hb_coll_nodes_t nodes = {.n_nodes = n, .site_of = site_of, .ranks_of = ranks_of};
    hb_coll_args_t args = {
        .op = op, .alg = alg, .root = 0, .size = size, .seg_size = seg, .lanes = lanes};
    hb_coll_sched_t *s = NULL;
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), 0);
    return s;
}

static void test_counts(void)
{
    uint32_t site_of[64], ranks_of[64];
    run_t r;
    /* flat scatter: n-1 messages, all from root, one per node */
    hb_coll_sched_t *s =
        two_sites(HB_COLL_SCATTER, HB_COLL_ALG_FLAT, 5, 4, 0, 0, 10, site_of, ranks_of);
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_ANY, 0, 1), 0);
    CU_ASSERT_EQUAL(r.total_msgs, 8);
    CU_ASSERT_EQUAL(r.msgs_from[0], 8);
    CU_ASSERT_EQUAL(r.wan_from[0], 4);
    for (uint32_t v = 1; v < 9; v++)
        CU_ASSERT_EQUAL(r.msgs_to[v], 1);
    CU_ASSERT_EQUAL(check_data(&r, s, 1), 0);
    run_free(&r);
    hb_coll_sched_free(s);

    /* binomial scatter over 9 nodes: 8 messages, root sends ceil(log2 9) = 4 */
    s = two_sites(HB_COLL_SCATTER, HB_COLL_ALG_BINOMIAL, 5, 4, 0, 0, 10, site_of, ranks_of);
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_LINK, 0, 2), 0);
    CU_ASSERT_EQUAL(r.total_msgs, 8);
    CU_ASSERT_EQUAL(r.msgs_from[0], 4);
    for (uint32_t v = 1; v < 9; v++)
        CU_ASSERT_EQUAL(r.msgs_to[v], 1);
    run_free(&r);
    hb_coll_sched_free(s);

    /* single-lane gather: exactly one WAN message, leader of site 1 -> root */
    s = two_sites(HB_COLL_GATHER, HB_COLL_ALG_SINGLE_LANE, 5, 4, 0, 0, 10, site_of, ranks_of);
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_LINK, 0, 3), 0);
    uint32_t wan = 0;
    for (uint32_t v = 0; v < 9; v++)
        wan += r.wan_from[v];
    CU_ASSERT_EQUAL(wan, 1);
    CU_ASSERT_EQUAL(r.wan_to[0], 1);
    CU_ASSERT_EQUAL(r.total_msgs, 8);
    CU_ASSERT_EQUAL(r.msgs_to[0], 4 + 1); /* own site's 4 others + the remote leader */
    CU_ASSERT_EQUAL(check_data(&r, s, 3), 0);
    run_free(&r);
    hb_coll_sched_free(s);

    /* multi-lane scatter, 2 sites x 8, P = 4: 4 WAN pairs with distinct ends */
    for (uint32_t P = 1; P <= 8; P++) {
        s = two_sites(HB_COLL_SCATTER, HB_COLL_ALG_MULTI_LANE, 8, 8, P, 0, 10, site_of, ranks_of);
        CU_ASSERT_EQUAL(s->lanes, P);
        CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_ANY, 0, 4), 0);
        uint32_t wan_senders = 0, wan_receivers = 0, wan_msgs = 0, wan_pairs = 0;
        for (uint32_t v = 0; v < 16; v++) {
            wan_senders += r.wan_from[v] > 0;
            wan_receivers += r.wan_to[v] > 0;
            wan_msgs += r.wan_from[v];
            CU_ASSERT(r.wan_from[v] <= 1);
            CU_ASSERT(r.wan_to[v] <= 1);
            for (uint32_t w = 0; w < 16; w++)
                wan_pairs += r.pair[v * 16 + w] > 0 && site_of[v] != site_of[w];
        }
        CU_ASSERT_EQUAL(wan_pairs, P);
        CU_ASSERT_EQUAL(wan_senders, P);
        CU_ASSERT_EQUAL(wan_receivers, P);
        CU_ASSERT_EQUAL(wan_msgs, P);
        CU_ASSERT_EQUAL(r.wan_from[0], 1); /* the root is lane 0's Dep_send */
        /* root: P-1 shares + 1 WAN + 7 own site; total n0 + n1 + P - 2 */
        CU_ASSERT_EQUAL(r.msgs_from[0], P - 1 + 1 + 7);
        CU_ASSERT_EQUAL(r.total_msgs, 8 + 8 + P - 2);
        CU_ASSERT_EQUAL(check_data(&r, s, 4), 0);
        run_free(&r);
        hb_coll_sched_free(s);
    }

    /* multi-lane gather, n1 not a multiple of P: 7 remote nodes, P 3 */
    s = two_sites(HB_COLL_GATHER, HB_COLL_ALG_MULTI_LANE, 6, 7, 3, 0, 10, site_of, ranks_of);
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_LINK, 0, 5), 0);
    wan = 0;
    uint32_t wan_senders = 0;
    for (uint32_t v = 0; v < 13; v++) {
        wan += r.wan_from[v];
        wan_senders += r.wan_from[v] > 0;
    }
    CU_ASSERT_EQUAL(wan, 3);
    CU_ASSERT_EQUAL(wan_senders, 3);
    CU_ASSERT_EQUAL(r.total_msgs, 6 + 7 + 3 - 2);
    CU_ASSERT_EQUAL(check_data(&r, s, 5), 0);
    run_free(&r);
    hb_coll_sched_free(s);

    /* three sites of 5 (root's), 3 and 6 nodes, 4 lanes asked: 3 + 4 WAN pairs, distinct ends */
    {
        uint32_t st3[14] = {0, 1, 2, 0, 2, 1, 2, 0, 2, 1, 2, 0, 0, 2};
        hb_coll_nodes_t nodes3 = {.n_nodes = 14, .site_of = st3};
        for (int op = 0; op < HB_COLL_ALLTOALL; op++) {
            hb_coll_args_t a3 = {.op = (hb_coll_op_t)op,
                                 .alg = HB_COLL_ALG_MULTI_LANE,
                                 .root = 3,
                                 .size = 50,
                                 .lanes = 4};
            CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&nodes3, &a3, &s), 0);
            CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_ANY, 0, 9), 0);
            CU_ASSERT_EQUAL(check_data(&r, s, 9), 0);
            uint32_t pairs[3] = {0, 0, 0};
            for (uint32_t v = 0; v < 14; v++)
                for (uint32_t w = 0; w < 14; w++)
                    if (st3[v] != st3[w] && r.pair[v * 14 + w] > 0)
                        pairs[st3[v] == 0 ? st3[w] : st3[v]]++;
            if (op == HB_COLL_BCAST) {
                CU_ASSERT_EQUAL(s->lanes, 3); /* bcast: the same parts to every site */
                CU_ASSERT_EQUAL(pairs[1], 3);
                CU_ASSERT_EQUAL(pairs[2], 3);
            } else if (op == HB_COLL_ALLGATHER) {
                CU_ASSERT_EQUAL(pairs[1], 2 * 3); /* the same lanes, up then down */
                CU_ASSERT_EQUAL(pairs[2], 2 * 4);
            } else {
                CU_ASSERT_EQUAL(s->lanes, 4);
                CU_ASSERT_EQUAL(pairs[1], 3);
                CU_ASSERT_EQUAL(pairs[2], 4);
            }
            run_free(&r);
            hb_coll_sched_free(s);
        }
    }

    /* segments: 1000 bytes per rank in 64-byte segments; every node gets one message per segment */
    s = two_sites(HB_COLL_SCATTER, HB_COLL_ALG_MULTI_LANE, 4, 4, 4, 64, 1000, site_of, ranks_of);
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_LINK, 0, 6), 0);
    for (uint32_t v = 1; v < 8; v++) {
        uint64_t bytes = s->bytes[v];
        uint32_t own = (uint32_t)((bytes + 63) / 64);
        /* remote nodes other than the Dep_recvs receive exactly their own block's segments */
        if (site_of[v] == 1 && r.wan_to[v] == 0)
            CU_ASSERT_EQUAL(r.msgs_to[v], own);
        CU_ASSERT_EQUAL(r.msgs_to[v], expected_segs(s, v));
    }
    CU_ASSERT_EQUAL(check_data(&r, s, 6), 0);
    run_free(&r);
    hb_coll_sched_free(s);
}

/* ---- pipelining: a Dep_send forwards segment 0 before it has its whole share ---- */

static void test_pipelining(void)
{
    uint32_t site_of[8] = {0, 0, 1, 1}, ranks_of[8] = {4, 4, 4, 4};
    hb_coll_nodes_t nodes = {.n_nodes = 4, .site_of = site_of, .ranks_of = ranks_of};
    hb_coll_args_t args = {.op = HB_COLL_SCATTER,
                           .alg = HB_COLL_ALG_MULTI_LANE,
                           .root = 0,
                           .size = 100,
                           .seg_size = 100,
                           .lanes = 2};
    hb_coll_sched_t *s = NULL;
    CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&nodes, &args, &s), 0);
    CU_ASSERT_EQUAL(s->lanes, 2);
    uint8_t in[1600], out1[400];
    for (int i = 0; i < 1600; i++)
        in[i] = (uint8_t)i;
    hb_coll_exec_t *root = NULL, *ds = NULL;
    CU_ASSERT_EQUAL_FATAL(hb_coll_exec_create(s, 0, in, out1, 0, &root), 0);
    CU_ASSERT_EQUAL_FATAL(hb_coll_exec_create(s, 1, NULL, out1, 0, &ds), 0);
    hb_coll_act_t acts[64];
    size_t na = 0;
    hb_coll_ev_t ev = {.kind = HB_COLL_EV_START};
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &ev, acts, 64, &na), 0);
    for (size_t i = 0; i < na; i++)
        CU_ASSERT_NOT_EQUAL(acts[i].kind, HB_COLL_ACT_SEND); /* nothing to forward yet */
    CU_ASSERT_EQUAL(hb_coll_exec_step(root, &ev, acts, 64, &na), 0);
    /* root's first sends: the 4 segments of node 3's block (the share of lane 1) to node 1 */
    CU_ASSERT_FATAL(na >= 4);
    CU_ASSERT_EQUAL(acts[0].kind, HB_COLL_ACT_SEND);
    CU_ASSERT_EQUAL(acts[0].to, 1);
    CU_ASSERT_EQUAL(acts[0].nseg, 4);
    CU_ASSERT_EQUAL(acts[0].wan, 0);
    /* deliver segment 0 only: the Dep_send forwards exactly segment 0 over the WAN to node 3 */
    hb_coll_ev_t m = {.kind = HB_COLL_EV_MSG,
                      .from = 0,
                      .seq = acts[0].seq,
                      .off = acts[0].off,
                      .len = acts[0].len,
                      .data = acts[0].data};
    hb_coll_act_t f[8];
    size_t nf = 0;
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &m, f, 8, &nf), 0);
    CU_ASSERT_EQUAL_FATAL(nf, 1);
    CU_ASSERT_EQUAL(f[0].kind, HB_COLL_ACT_SEND);
    CU_ASSERT_EQUAL(f[0].to, 3);
    CU_ASSERT_EQUAL(f[0].wan, 1);
    CU_ASSERT_EQUAL(f[0].seg, 0);
    CU_ASSERT_EQUAL(f[0].len, 100);
    CU_ASSERT_EQUAL(memcmp(f[0].data, in + 1200, 100), 0);
    /* SEND actions point into the executor's layout buffer, which the caller may take over */
    uint64_t wl = 0;
    const uint8_t *w = hb_coll_exec_work(ds, &wl);
    CU_ASSERT_FATAL(w != NULL && wl > 0);
    const uint8_t *fd = (const uint8_t *)f[0].data, *ad = (const uint8_t *)acts[0].data;
    CU_ASSERT(fd >= w && fd + f[0].len <= w + wl);
    CU_ASSERT(ad >= hb_coll_exec_work(root, NULL));
    /* duplicate, unknown sender, misplaced offset: rejected, state unchanged */
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &m, f, 8, &nf), HB_ERR_PROTO);
    hb_coll_ev_t bad = m;
    bad.from = 2;
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &bad, f, 8, &nf), HB_ERR_PROTO);
    bad = m;
    bad.seq = 1;
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &bad, f, 8, &nf), HB_ERR_PROTO);
    bad.seq = 99;
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &bad, f, 8, &nf), HB_ERR_PROTO);
    /* segment 2 before segment 1: nothing to forward until 1 arrives (in-order sends) */
    m = (hb_coll_ev_t){.kind = HB_COLL_EV_MSG,
                       .from = 0,
                       .seq = acts[2].seq,
                       .off = acts[2].off,
                       .len = acts[2].len,
                       .data = acts[2].data};
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &m, f, 8, &nf), 0);
    CU_ASSERT_EQUAL(nf, 0);
    m = (hb_coll_ev_t){.kind = HB_COLL_EV_MSG,
                       .from = 0,
                       .seq = acts[1].seq,
                       .off = acts[1].off,
                       .len = acts[1].len,
                       .data = acts[1].data};
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &m, f, 8, &nf), 0);
    CU_ASSERT_EQUAL(nf, 2);
    CU_ASSERT_EQUAL(f[0].seg, 1);
    CU_ASSERT_EQUAL(f[1].seg, 2);
    /* the peer it forwards to dies: FAIL with PEER_LOST, once */
    hb_coll_ev_t lost = {.kind = HB_COLL_EV_PEER_LOST, .from = 3};
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &lost, f, 8, &nf), 0);
    CU_ASSERT_EQUAL_FATAL(nf, 1);
    CU_ASSERT_EQUAL(f[0].kind, HB_COLL_ACT_FAIL);
    CU_ASSERT_EQUAL(f[0].status, HB_ERR_PEER_LOST);
    CU_ASSERT(hb_coll_exec_done(ds));
    char line[160];
    CU_ASSERT_EQUAL(hb_coll_exec_describe(ds, line, sizeof(line)), 0);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(line, "node 1 scatter multi-lane: failed, received 3/8 segments"));
    CU_ASSERT_EQUAL(hb_coll_exec_describe(ds, line, 10), HB_ERR_TRUNCATED);
    CU_ASSERT_EQUAL(hb_coll_sched_describe(s, line, sizeof(line)), 0);
    CU_ASSERT_STRING_EQUAL(line, "scatter multi-lane root 0 nodes 4 sites 2 lanes 2 segment 100 "
                                 "bytes 1600 steps 13");
    CU_ASSERT_EQUAL(hb_coll_exec_step(ds, &lost, f, 8, &nf), 0);
    CU_ASSERT_EQUAL(nf, 0);
    hb_coll_exec_free(root);
    /* detached, the buffer is the caller's to free (no double free under ASan) */
    void *dw = hb_coll_exec_detach_work(ds);
    CU_ASSERT_PTR_NOT_NULL(dw);
    CU_ASSERT_PTR_NULL(hb_coll_exec_work(ds, NULL));
    hb_coll_exec_free(ds);
    free(dw);
    hb_coll_sched_free(s);
}

/* ---- allgather (and alltoall) with nothing to move still synchronizes ---- */

static void test_zero_sync(void)
{
    uint32_t site_of[6] = {0, 1, 0, 1, 1, 0};
    for (int alg = 0; alg < HB_COLL_ALG_COUNT; alg++) {
        hb_coll_nodes_t nodes = {.n_nodes = 6, .site_of = site_of};
        /* pairwise: a zero-byte alltoall */
        hb_coll_op_t op = alg == HB_COLL_ALG_PAIRWISE ? HB_COLL_ALLTOALL : HB_COLL_ALLGATHER;
        hb_coll_args_t args = {.op = op, .alg = (hb_coll_alg_t)alg, .root = 2};
        hb_coll_sched_t *s = NULL;
        CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&nodes, &args, &s), 0);
        hb_coll_exec_t *x[6];
        hb_coll_act_t acts[32];
        size_t na;
        int completed = 0;
        /* start every node but node 4: nobody may complete */
        for (uint32_t v = 0; v < 6; v++) {
            CU_ASSERT_EQUAL_FATAL(hb_coll_exec_create(s, v, NULL, NULL, HB_COLL_EXEC_NODATA, &x[v]),
                                  0);
        }
        /* run the others to quiescence with a simple FIFO */
        msg_t q[256];
        size_t nq = 0;
        for (uint32_t v = 0; v < 6; v++) {
            if (v == 4)
                continue;
            hb_coll_ev_t ev = {.kind = HB_COLL_EV_START};
            CU_ASSERT_EQUAL(hb_coll_exec_step(x[v], &ev, acts, 32, &na), 0);
            for (size_t i = 0; i < na; i++) {
                if (acts[i].kind == HB_COLL_ACT_SEND && nq < 256)
                    q[nq++] = (msg_t){
                        .from = v, .to = acts[i].to, .seq = acts[i].seq, .off = acts[i].off};
                completed += acts[i].kind == HB_COLL_ACT_COMPLETE;
            }
        }
        for (size_t h = 0; h < nq; h++) {
            if (q[h].to == 4)
                continue; /* held: node 4 has not started, it gets them later */
            hb_coll_ev_t ev = {
                .kind = HB_COLL_EV_MSG, .from = q[h].from, .seq = q[h].seq, .off = q[h].off};
            CU_ASSERT_EQUAL(hb_coll_exec_step(x[q[h].to], &ev, acts, 32, &na), 0);
            for (size_t i = 0; i < na; i++) {
                if (acts[i].kind == HB_COLL_ACT_SEND && nq < 256)
                    q[nq++] = (msg_t){
                        .from = q[h].to, .to = acts[i].to, .seq = acts[i].seq, .off = acts[i].off};
                completed += acts[i].kind == HB_COLL_ACT_COMPLETE;
            }
        }
        size_t held_end = nq;
        CU_ASSERT_EQUAL(completed, 0);
        /* node 4 starts: its held messages and everything after them complete the collective */
        hb_coll_ev_t ev4 = {.kind = HB_COLL_EV_START};
        CU_ASSERT_EQUAL(hb_coll_exec_step(x[4], &ev4, acts, 32, &na), 0);
        for (size_t i = 0; i < na; i++) {
            if (acts[i].kind == HB_COLL_ACT_SEND && nq < 256)
                q[nq++] =
                    (msg_t){.from = 4, .to = acts[i].to, .seq = acts[i].seq, .off = acts[i].off};
            completed += acts[i].kind == HB_COLL_ACT_COMPLETE;
        }
        for (size_t h = 0; h < nq; h++) {
            hb_coll_ev_t ev = {
                .kind = HB_COLL_EV_MSG, .from = q[h].from, .seq = q[h].seq, .off = q[h].off};
            if (h < held_end && q[h].to != 4)
                continue; /* delivered in the first pass */
            CU_ASSERT_EQUAL(hb_coll_exec_step(x[q[h].to], &ev, acts, 32, &na), 0);
            for (size_t i = 0; i < na; i++) {
                if (acts[i].kind == HB_COLL_ACT_SEND && nq < 256)
                    q[nq++] = (msg_t){
                        .from = q[h].to, .to = acts[i].to, .seq = acts[i].seq, .off = acts[i].off};
                completed += acts[i].kind == HB_COLL_ACT_COMPLETE;
            }
        }
        CU_ASSERT(nq < 256);
        CU_ASSERT_EQUAL(completed, 6);
        for (uint32_t v = 0; v < 6; v++)
            hb_coll_exec_free(x[v]);
        hb_coll_sched_free(s);
    }
}

/* ---- no data (simulator mode), topology helper, bad input ---- */

static void test_nodata_and_misc(void)
{
    uint32_t site_of[40], ranks_of[40];
    run_t r;
    hb_coll_sched_t *s = two_sites(HB_COLL_ALLGATHER, HB_COLL_ALG_MULTI_LANE, 20, 20, 0, 512, 4096,
                                   site_of, ranks_of);
    CU_ASSERT_EQUAL(s->lanes, 20);
    CU_ASSERT_EQUAL(hb_coll_sched_check(s, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_LINK, HB_COLL_EXEC_NODATA, 7), 0);
    for (uint32_t v = 0; v < 40; v++)
        CU_ASSERT_EQUAL(r.msgs_to[v], expected_segs(s, v));
    run_free(&r);
    hb_coll_sched_free(s);

    /* from a topology: sites come from topo->nodes[i].site */
    hb_topo_node_t tn[4] = {{.site = 0}, {.site = 1}, {.site = 1}, {.site = 0}};
    hb_topo_t topo = {.n_nodes = 4, .nodes = tn};
    uint32_t buf[4];
    hb_coll_nodes_t nodes;
    CU_ASSERT_EQUAL(hb_coll_nodes_from_topo(&topo, NULL, buf, &nodes), 0);
    CU_ASSERT_EQUAL(nodes.n_nodes, 4);
    CU_ASSERT_EQUAL(nodes.site_of[2], 1);
    hb_coll_args_t args = {
        .op = HB_COLL_SCATTER, .alg = HB_COLL_ALG_SINGLE_LANE, .root = 3, .size = 5};
    CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&nodes, &args, &s), 0);
    CU_ASSERT_EQUAL(s->n_sites, 2);
    CU_ASSERT_EQUAL(s->lanes, 1);
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_LIFO, 0, 8), 0);
    CU_ASSERT_EQUAL(check_data(&r, s, 8), 0);
    CU_ASSERT_EQUAL(r.wan_from[3], 1); /* root 3 -> leader of site 1 (node 1) */
    CU_ASSERT_EQUAL(r.wan_to[1], 1);
    CU_ASSERT_EQUAL(r.pair[3 * 4 + 2], 0); /* node 2 is served by its leader */
    run_free(&r);
    hb_coll_sched_free(s);

    /* bad input */
    args.root = 4;
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), HB_ERR_INVAL);
    args.root = 0;
    args.op = HB_COLL_BCAST;
    uint64_t counts[4] = {1, 2, 3, 4};
    args.counts = counts;
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), HB_ERR_INVAL);
    args.counts = NULL;
    args.op = HB_COLL_GATHER;
    args.size = UINT64_MAX / 2; /* 4 nodes x 1 rank: the total overflows */
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), HB_ERR_INVAL);
    uint32_t many[4] = {3, 3, 3, 3};
    hb_coll_nodes_t big = {.n_nodes = 4, .ranks_of = many};
    args.size = UINT64_MAX / 3 + 1; /* ranks x size overflows */
    CU_ASSERT_EQUAL(hb_coll_sched_build(&big, &args, &s), HB_ERR_INVAL);
    args.size = 5;
    args.seg_size = 1; /* fine: 15 bytes, 15 segments */
    CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&big, &args, &s), 0);
    hb_coll_sched_free(s);
    args.seg_size = 0;
    args.op = HB_COLL_BCAST;
    args.alg = HB_COLL_ALG_COUNT;
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), HB_ERR_INVAL);
    /* a root without its buffer */
    args.alg = HB_COLL_ALG_FLAT;
    CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&nodes, &args, &s), 0);
    hb_coll_exec_t *x = NULL;
    CU_ASSERT_EQUAL(hb_coll_exec_create(s, 0, NULL, NULL, 0, &x), HB_ERR_INVAL);
    CU_ASSERT_EQUAL(hb_coll_exec_create(s, 9, NULL, NULL, 0, &x), HB_ERR_INVAL);
    hb_coll_sched_free(s);
    /* names */
    hb_coll_alg_t alg;
    CU_ASSERT_EQUAL(hb_coll_alg_parse("multi-lane", &alg), 0);
    CU_ASSERT_EQUAL(alg, HB_COLL_ALG_MULTI_LANE);
    CU_ASSERT_EQUAL(hb_coll_alg_parse("ring", &alg), HB_ERR_INVAL);
    CU_ASSERT_STRING_EQUAL(hb_coll_op_name(HB_COLL_ALLGATHER), "allgather");
}

/* ---- alltoall: PlogP-BR's two patterns ---- */

/* Sends node v emits on START alone (nothing received yet). */
static uint32_t first_sends(const hb_coll_sched_t *s, uint32_t v, uint8_t *in)
{
    hb_coll_exec_t *x = NULL;
    hb_coll_act_t acts[64];
    size_t na = 0;
    uint32_t sends = 0;
    CU_ASSERT_EQUAL_FATAL(hb_coll_exec_create(s, v, in, NULL, HB_COLL_EXEC_IN_PLACE, &x), 0);
    hb_coll_ev_t ev = {.kind = HB_COLL_EV_START};
    CU_ASSERT_EQUAL(hb_coll_exec_step(x, &ev, acts, 64, &na), 0);
    for (size_t i = 0; i < na; i++)
        sends += acts[i].kind == HB_COLL_ACT_SEND;
    /* its layout holds its row and the blocks it receives, not the n x n layout */
    uint64_t wl = 0;
    (void)hb_coll_exec_work(x, &wl);
    CU_ASSERT_EQUAL(wl, 2 * s->bytes[v] - hb_coll_pair_len(s, v, v));
    hb_coll_exec_free(x);
    return sends;
}

static void test_alltoall(void)
{
    uint32_t site_of[6] = {0, 0, 0, 1, 1, 1}, ranks_of[6] = {1, 2, 1, 3, 1, 2};
    hb_coll_nodes_t nodes = {.n_nodes = 6, .site_of = site_of, .ranks_of = ranks_of};
    uint8_t in[10 * 3 * 10];
    memset(in, 1, sizeof(in));
    for (int alg = 0; alg < HB_COLL_ALG_COUNT; alg++) {
        hb_coll_args_t args = {.op = HB_COLL_ALLTOALL, .alg = (hb_coll_alg_t)alg, .size = 10};
        hb_coll_sched_t *s = NULL;
        int rc = hb_coll_sched_build(&nodes, &args, &s);
        if (!hb_coll_alg_valid(HB_COLL_ALLTOALL, (hb_coll_alg_t)alg)) {
            CU_ASSERT_EQUAL(rc, HB_ERR_INVAL);
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(hb_coll_sched_check(s, NULL, 0), 0);
        CU_ASSERT_EQUAL(s->total, 10 * 10 * 10); /* 10 ranks: 100 rank pairs of 10 bytes */
        CU_ASSERT_EQUAL(hb_coll_pair_len(s, 3, 5), 3 * 2 * 10);
        CU_ASSERT_EQUAL(hb_coll_pair_noff(s, 3, 5), 3 * 8 * 10);
        /* one message per ordered pair; flat sends all at once, pairwise one round at a time */
        run_t r;
        CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_RANDOM_ANY, 0, 3), 0);
        CU_ASSERT_EQUAL(check_data(&r, s, 3), 0);
        CU_ASSERT_EQUAL(r.total_msgs, 6 * 5);
        for (uint32_t v = 0; v < 6; v++)
            for (uint32_t w = 0; w < 6; w++)
                CU_ASSERT_EQUAL(r.pair[v * 6 + w], v != w);
        run_free(&r);
        for (uint32_t v = 0; v < 6; v++)
            CU_ASSERT_EQUAL(first_sends(s, v, in), alg == HB_COLL_ALG_FLAT ? 5u : 1u);
        hb_coll_sched_free(s);
    }
    /* in segments, in place, LIFO (a later round's block may arrive first) */
    hb_coll_args_t args = {
        .op = HB_COLL_ALLTOALL, .alg = HB_COLL_ALG_PAIRWISE, .size = 100, .seg_size = 64};
    hb_coll_sched_t *s = NULL;
    CU_ASSERT_EQUAL_FATAL(hb_coll_sched_build(&nodes, &args, &s), 0);
    run_t r;
    CU_ASSERT_EQUAL_FATAL(run_sched(&r, s, DLV_LIFO, HB_COLL_EXEC_IN_PLACE, 4), 0);
    CU_ASSERT_EQUAL(check_data(&r, s, 4), 0);
    run_free(&r);
    hb_coll_sched_free(s);
    /* counts, and pairwise for another op, are refused */
    uint64_t counts[6] = {1, 2, 3, 4, 5, 6};
    args.counts = counts;
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), HB_ERR_INVAL);
    args.counts = NULL;
    args.op = HB_COLL_GATHER;
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), HB_ERR_INVAL);
    args.op = HB_COLL_ALLTOALL;
    args.size = UINT64_MAX / 50; /* 10 x 10 rank pairs: the total overflows */
    CU_ASSERT_EQUAL(hb_coll_sched_build(&nodes, &args, &s), HB_ERR_INVAL);
    hb_coll_op_t op;
    CU_ASSERT_EQUAL(hb_coll_op_parse("alltoall", &op), 0);
    CU_ASSERT_EQUAL(op, HB_COLL_ALLTOALL);
    CU_ASSERT_STRING_EQUAL(hb_coll_alg_name(HB_COLL_ALG_PAIRWISE), "pairwise");
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    CU_pSuite s = CU_add_suite("coll", NULL, NULL);
    if (s == NULL ||
        CU_add_test(s, "every op x algorithm, random shapes and orders", test_random_all) == NULL ||
        CU_add_test(s, "message counts per link", test_counts) == NULL ||
        CU_add_test(s, "in place: sends from the input, output in the layout", test_in_place) ==
            NULL ||
        CU_add_test(s, "pipelined forwarding, bad messages, peer lost", test_pipelining) == NULL ||
        CU_add_test(s, "zero-byte allgather and alltoall synchronize", test_zero_sync) == NULL ||
        CU_add_test(s, "alltoall: flat and pairwise", test_alltoall) == NULL ||
        CU_add_test(s, "no-data mode, topology, bad input", test_nodata_and_misc) == NULL) {
        CU_cleanup_registry();
        return 99;
    }
    return hb_test_run(CU_BRM_VERBOSE);
}
