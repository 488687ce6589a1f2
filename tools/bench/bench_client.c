/* bench_client.c: hibar-bench barrier|scatter|gather --ranks: libhibar on one node, or on
 * namespace hosts through the daemons (--per-node). */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include "client.h"
#include "hb_log.h"
#include "hb_size.h"
#include "hb_stats.h"
#include "hb_time.h"
#include "hb_wait.h"
#include "hibar.h"
#include "seg.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

/*
 * This process stands in for hibard: it creates the job's segment (a sealed memfd, as the
 * daemon will) and forks N ranks that join it with the library's attach path, then call the
 * public API (hibar_barrier, hibar_scatter): the code measured is the code users run.
 * Timing, as hibar-mpi-bench does for the Open MPI peer (MPIBlib's maximum method): every
 * repetition is isolated by a hibar_barrier; each rank times the operation with
 * CLOCK_MONOTONIC; a repetition's time is the maximum over the ranks. The average of a loop
 * of back-to-back operations (OSU style) is reported too as loop_us. With --compare the same
 * measurement runs under Open MPI's mpirun (hibar-mpi-bench) in the same run and the ratio
 * of the medians is printed.
 *
 * With --per-node K < N the ranks run on N / K hosts, each a network namespace running one
 * hibard (needs root): tests/netns/client-compare inside `tests/netns/testbed --sites 1
 * --nodes N/K` (or inside the bed this runs in, HIBAR_TESTBED_CONFIG) runs hibar-lib-bench
 * under hibar-run through the daemons and, with --compare, hibar-mpi-bench under mpirun on
 * the same hosts (the same harness: tools/peer/mpi_bench.c); --set passes cluster settings
 * (e.g. data_plane=plain) to the daemons and hibar-run.
 */

#define BC_MAX_RANKS 64
#define BC_MAX_SIZES 32

typedef struct bc_opts {
    const char *bench; /* "barrier", "scatter" or "gather" */
    uint32_t n;
    uint64_t iters, warmup;
    size_t sizes[BC_MAX_SIZES];
    int nsizes;
    int bind; /* 1: rank r on CPU r % CPUs */
    int compare;
    int floor;            /* barrier: also the plain shared-memory barrier (the machine's floor) */
    uint32_t per_node;    /* 0: one node (this process stands in for hibard) */
    const char *sets[16]; /* --set KEY=VALUE for the daemons (--per-node) */
    int nsets;
    char bed_name[32], bed_net[32];
    int iters_set;
} bc_opts_t;

typedef struct bc_shared {
    int status[BC_MAX_RANKS];
    double loop_us;
    int cma;
    double t[]; /* [n][iters] */
} bc_shared_t;

static void bc_usage(FILE *f, const char *bench)
{
    fprintf(f,
            "usage: hibar-bench %s --ranks N [--iters I] [--warmup W]%s [--bind core|none]\n"
            "                   [--per-node K [--set KEY=VALUE]... [--bed-name NAME]\n"
            "                   [--bed-net 10.X]] [--compare] " HB_BENCH_COMMON_USAGE "\n"
            "  --ranks N      ranks in all (1..%d), default 2\n"
            "  --per-node K   K ranks on each of N/K namespace hosts, one hibard each (root;\n"
            "                 default bed hbcli on 10.236; iters: barrier 1000, scatter 100)\n"
            "  --set KEY=VAL  with --per-node: a cluster setting, e.g. data_plane=plain\n"
            "  --iters I      measured repetitions per row, default %s\n"
            "  --warmup W     repetitions before measuring, default 100\n"
            "%s"
            "  --bind B       core: rank r bound to CPU r %% CPUs (default); none\n"
            "  --compare      also run hibar-mpi-bench under mpirun, print the ratio\n"
            "  --floor        barrier, ranks <= cores: also a plain shared-memory barrier\n"
            "                 (impl shm-floor), timed the same way: the machine's floor;\n"
            "                 with --per-node: the wire's floor, 1-byte TCP round trips between\n"
            "                 two hosts (polling and blocking), and hibar's hop against it\n",
            bench, strcmp(bench, "barrier") != 0 ? " [--sizes LIST]" : "", BC_MAX_RANKS,
            strcmp(bench, "barrier") != 0 ? "1000" : "10000",
            strcmp(bench, "barrier") != 0
                ? "  --sizes LIST   bytes per rank, e.g. 8,1K,64K,1M (default 8,1K,64K,1M)\n"
                : "");
}

static int bc_parse(int argc, char **argv, bc_opts_t *o)
{
    /* clang-format off */
    static const struct option lo[] = {
        {"ranks", required_argument, NULL, 'n'},    {"iters", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, 'w'},   {"sizes", required_argument, NULL, 's'},
        {"bind", required_argument, NULL, 'b'},     {"compare", no_argument, NULL, 'c'},
        {"per-node", required_argument, NULL, 'K'}, {"set", required_argument, NULL, 'o'},
        {"bed-name", required_argument, NULL, 'B'}, {"bed-net", required_argument, NULL, 'N'},
        {"floor", no_argument, NULL, 'F'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* clang-format on */
    int c, scatter = strcmp(o->bench, "barrier") != 0; /* scatter or gather: sizes */
    char *end;
    size_t n;

    o->n = 2;
    o->iters = scatter ? 1000 : 10000;
    o->warmup = 100;
    o->bind = 1;
    snprintf(o->bed_name, sizeof(o->bed_name), "hbcli");
    snprintf(o->bed_net, sizeof(o->bed_net), "10.236");
    if (scatter) {
        static const size_t dflt[] = {8, 1024, 65536, 1 << 20};
        memcpy(o->sizes, dflt, sizeof(dflt));
        o->nsizes = 4;
    } else {
        o->sizes[0] = 0;
        o->nsizes = 1;
    }
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:h", lo, NULL)) != -1) {
        errno = 0;
        switch (c) {
        case 'n':
            o->n = (uint32_t)strtoul(optarg, &end, 10);
            if (*end || errno || o->n < 1 || o->n > BC_MAX_RANKS) {
                fprintf(stderr, "hibar-bench %s: --ranks must be 1..%d\n", o->bench, BC_MAX_RANKS);
                return -1;
            }
            break;
        case 'i':
        case 'w':
            if (c == 'i') {
                o->iters = strtoull(optarg, &end, 10);
                o->iters_set = 1;
            } else
                o->warmup = strtoull(optarg, &end, 10);
            if (*end || errno || (c == 'i' && (o->iters < 1 || o->iters > 10000000)) ||
                o->warmup > 10000000) {
                fprintf(stderr, "hibar-bench %s: bad --%s '%s'\n", o->bench,
                        c == 'i' ? "iters" : "warmup", optarg);
                return -1;
            }
            break;
        case 's':
            if (!scatter) {
                fprintf(stderr, "hibar-bench %s: --sizes is for scatter and gather\n", o->bench);
                return -1;
            }
            if (hb_size_list_parse(optarg, 0, 64u << 20, o->sizes, BC_MAX_SIZES, &n) != 0) {
                fprintf(stderr, "hibar-bench %s: bad --sizes '%s' (at most %d, each <= 64M)\n",
                        o->bench, optarg, BC_MAX_SIZES);
                return -1;
            }
            o->nsizes = (int)n;
            break;
        case 'b':
            if (strcmp(optarg, "core") != 0 && strcmp(optarg, "none") != 0) {
                fprintf(stderr, "hibar-bench %s: --bind core|none\n", o->bench);
                return -1;
            }
            o->bind = strcmp(optarg, "core") == 0;
            break;
        case 'c':
            o->compare = 1;
            break;
        case 'F':
            o->floor = 1;
            break;
        case 'K':
            o->per_node = (uint32_t)strtoul(optarg, &end, 10);
            if (*end || errno || o->per_node < 1 || o->per_node > BC_MAX_RANKS) {
                fprintf(stderr, "hibar-bench %s: --per-node must be 1..%d\n", o->bench,
                        BC_MAX_RANKS);
                return -1;
            }
            break;
        case 'o':
            if (o->nsets == (int)(sizeof(o->sets) / sizeof(o->sets[0])) ||
                strchr(optarg, '=') == NULL) {
                fprintf(stderr, "hibar-bench %s: bad --set '%s' (KEY=VALUE, at most 16)\n",
                        o->bench, optarg);
                return -1;
            }
            o->sets[o->nsets++] = optarg;
            break;
        case 'B':
        case 'N':
            if (strlen(optarg) >= sizeof(o->bed_name) ||
                strspn(optarg, c == 'B' ? "abcdefghijklmnopqrstuvwxyz0123456789_"
                                        : "0123456789.") != strlen(optarg)) {
                fprintf(stderr, "hibar-bench %s: bad --bed-%s '%s'\n", o->bench,
                        c == 'B' ? "name" : "net", optarg);
                return -1;
            }
            snprintf(c == 'B' ? o->bed_name : o->bed_net, sizeof(o->bed_name), "%s", optarg);
            break;
        case 'h':
            bc_usage(stdout, o->bench);
            exit(0);
        default:
            bc_usage(stderr, o->bench);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hibar-bench %s: unexpected argument '%s'\n", o->bench, argv[optind]);
        return -1;
    }
    if (o->per_node != 0 && (o->per_node >= o->n || o->n % o->per_node != 0 ||
                             o->n / o->per_node < 2 || o->n / o->per_node > 64)) {
        fprintf(stderr,
                "hibar-bench %s: --per-node K needs --ranks a multiple of K, on 2..64 hosts\n",
                o->bench);
        return -1;
    }
    if (o->per_node == 0 && (o->nsets > 0)) {
        fprintf(stderr, "hibar-bench %s: --set is for --per-node\n", o->bench);
        return -1;
    }
    if (o->floor &&
        (scatter || (o->per_node == 0 && o->n > (uint32_t)sysconf(_SC_NPROCESSORS_ONLN)))) {
        fprintf(stderr,
                "hibar-bench %s: --floor is for barrier: on one node with ranks <= cores (%ld, "
                "its ranks spin), or with --per-node (the TCP ping-pong between two hosts)\n",
                o->bench, sysconf(_SC_NPROCESSORS_ONLN));
        return -1;
    }
    if (o->per_node != 0 && !o->iters_set)
        o->iters = scatter ? 100 : 1000;
    return 0;
}

/* The number at key in a JSON row; -1 if absent or not a number. */
static double bc_json_num(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(row, key);
    return json_is_number(v) ? json_number_value(v) : -1.0;
}

/* The string at key in a JSON row, "" if absent. */
static const char *bc_json_str(const json_t *row, const char *key)
{
    const char *v = json_string_value(json_object_get(row, key));
    return v != NULL ? v : "";
}

/*
 * --per-node: the ranks on namespace hosts through the daemons (client-compare), the peer
 * beside them with --compare. Rows as client-compare reports them (the harness's summary:
 * median, min, max, p99, mean, CI over the repetitions it took).
 */
static int bc_nodes(const bc_opts_t *o, const hb_bench_common_t *com, const char *dir)
{
    char who[64], qs[PATH_MAX + 64];
    snprintf(who, sizeof(who), "hibar-bench %s --per-node", o->bench);
    int brc = hb_bench_bed_script(who, "client-compare", qs, sizeof(qs));
    if (brc != 0)
        return brc;
    char sizes[512] = "", q[PATH_MAX + 64], args[6 * PATH_MAX], cmd[12 * PATH_MAX];
    size_t off = 0;
    for (int i = 0; i < o->nsizes && off < sizeof(sizes); i++)
        off +=
            (size_t)snprintf(sizes + off, sizeof(sizes) - off, "%s%zu", i ? "," : "", o->sizes[i]);
    uint32_t hosts = o->n / o->per_node;
    off = (size_t)snprintf(args, sizeof(args), "%s --ppn %u --bench %s --sizes %s%s%s", qs,
                           o->per_node, o->bench, sizes, o->compare ? "" : " --no-peer",
                           o->floor ? " --floor" : "");
    for (int i = 0; i < o->nsets && off < sizeof(args); i++) {
        hb_bench_shell_quote(q, sizeof(q), o->sets[i]);
        off += (size_t)snprintf(args + off, sizeof(args) - off, " --set %s", q);
    }
    if (off < sizeof(args))
        snprintf(args + off, sizeof(args) - off, " --min-iters %llu --max-iters %llu",
                 (unsigned long long)(o->iters < 50 ? o->iters : 50), (unsigned long long)o->iters);
    hb_bench_bed_cmd(dir, args, o->bed_name, o->bed_net, hosts, cmd, sizeof(cmd));
    hb_bench_out_t out;
    if (hb_bench_out_open(&out, o->bench, com) != 0)
        return 1;
    hb_bench_out_note(&out,
                      "hibar-bench %s: %u namespace hosts x %u ranks, one hibard each; impl hibar "
                      "= libhibar through the daemons (hibar-run)%s",
                      o->bench, hosts, o->per_node,
                      o->compare ? ", open-mpi = the same harness under mpirun" : "");
    hb_bench_out_note(&out, "%s", cmd);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        perror("popen");
        hb_bench_out_close(&out);
        return 1;
    }
    char line[2048];
    json_t *jr = NULL; /* the row read */
    int rows = 0;
    while (fgets(line, sizeof(line), p) != NULL) {
        json_decref(jr);
        jr = line[0] == '{' ? json_loads(line, JSON_DECODE_INT_AS_REAL, NULL) : NULL;
        const char *impl = bc_json_str(jr, "impl"), *bench = bc_json_str(jr, "bench");
        int is_h = strcmp(impl, "hibar") == 0, is_m = strcmp(impl, "open-mpi") == 0;
        if (strcmp(impl, "ratio") == 0) {
            hb_bench_out_note(&out, "size %.0f: ratio hibar/open-mpi (medians) %.3f",
                              bc_json_num(jr, "size"), bc_json_num(jr, "ratio"));
            continue;
        }
        if (strcmp(bench, "rtt") == 0) {
            hb_bench_out_note(&out, "wire floor (%s, 1-byte TCP round trips): one way %.2f us",
                              strstr(line, "tcp-polled") ? "both ends polling" : "blocking",
                              bc_json_num(jr, "median_us") / 2);
            continue;
        }
        if (strcmp(impl, "hop-vs-wire") == 0) {
            hb_bench_out_note(&out,
                              "hibar's hop (barrier median / 2) %.2f us against the polled wire "
                              "%.2f us: ratio %.3f",
                              bc_json_num(jr, "hop_us"), bc_json_num(jr, "wire_us"),
                              bc_json_num(jr, "ratio"));
            continue;
        }
        if (!json_is_object(jr) || bench[0] == '\0' || (!is_h && !is_m)) {
            if (line[0] == '#')
                hb_bench_out_note(&out, "%.*s", (int)strcspn(line + 2, "\n"), line + 2);
            else
                fputs(line, stderr);
            continue;
        }
        hb_stats_t st = {.n = (size_t)bc_json_num(jr, "iters"),
                         .mean = bc_json_num(jr, "mean_us"),
                         .min = bc_json_num(jr, "min_us"),
                         .max = bc_json_num(jr, "max_us"),
                         .median = bc_json_num(jr, "median_us"),
                         .p99 = bc_json_num(jr, "p99_us"),
                         .ci = bc_json_num(jr, "ci_us"),
                         .confidence = 0.95};
        hb_bench_out_note(&out, "impl %s, size %.0f", is_h ? "hibar" : "open-mpi",
                          bc_json_num(jr, "size"));
        hb_bench_row_t row = {.impl = is_h ? "hibar" : "open-mpi",
                              .nodes = hosts,
                              .ranks = o->n,
                              .size = (uint64_t)bc_json_num(jr, "size"),
                              .reps = st.n,
                              .st = &st,
                              .iters = st.n,
                              .extra_json = "\"method\": \"maximum\""};
        hb_bench_out_row(&out, &row);
        rows++;
    }
    json_decref(jr);
    int ps = pclose(p);
    hb_bench_out_close(&out);
    if (ps != 0 || rows == 0) {
        fprintf(stderr, "hibar-bench %s --per-node: the test bed run failed (status %d)\n",
                o->bench, ps);
        return WIFEXITED(ps) && WEXITSTATUS(ps) == 77 ? 77 : 1;
    }
    return 0;
}

/* With --bind core: rank me on CPU me % CPUs. */
static void bc_bind(const bc_opts_t *o, uint32_t me)
{
    if (o->bind) {
        cpu_set_t set;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        CPU_ZERO(&set);
        CPU_SET((int)(me % (uint32_t)(ncpu > 0 ? ncpu : 1)), &set);
        if (sched_setaffinity(0, sizeof(set), &set) != 0)
            hb_log_warn("rank %u: sched_setaffinity: %m", (unsigned)me);
    }
}

/* x[k]: repetition k's time, the maximum over the ranks' sh->t. */
static void bc_max_over_ranks(const bc_opts_t *o, const bc_shared_t *sh, double *x)
{
    for (uint64_t k = 0; k < o->iters; k++) {
        double m = 0;
        for (uint32_t i = 0; i < o->n; i++)
            m = sh->t[(uint64_t)i * o->iters + k] > m ? sh->t[(uint64_t)i * o->iters + k] : m;
        x[k] = m;
    }
}

static int bc_op(hibar_t *h, const bc_opts_t *o, size_t size, const void *sbuf, void *rbuf)
{
    if (strcmp(o->bench, "barrier") == 0)
        return hibar_barrier(h);
    if (strcmp(o->bench, "gather") == 0)
        return hibar_gather(h, sbuf, rbuf, size, 0);
    return hibar_scatter(h, sbuf, rbuf, size, 0);
}

/* One rank: returns a status. */
static int bc_rank(int seg_fd, uint32_t me, const bc_opts_t *o, size_t size, bc_shared_t *sh)
{
    double *t = sh->t + (uint64_t)me * o->iters;
    char *sbuf = NULL, *rbuf = NULL;
    hibar_t *h = NULL;
    uint64_t i, t0;
    int rc;

    bc_bind(o, me);
    /* scatter: the root sends n blocks, each rank receives one; gather: the other way */
    int gather = strcmp(o->bench, "gather") == 0;
    size_t slen = gather ? size : size * o->n, rlen = gather ? size * o->n : size;
    int has_s = gather || me == 0, has_r = !gather || me == 0;
    if (size > 0) {
        sbuf = has_s ? malloc(slen) : NULL;
        rbuf = has_r ? malloc(rlen) : NULL;
        if ((has_s && sbuf == NULL) || (has_r && rbuf == NULL)) {
            rc = HIBAR_ERR_NOMEM;
            goto out;
        }
        if (sbuf != NULL)
            memset(sbuf, 0x5a, slen);
        if (rbuf != NULL)
            memset(rbuf, 0, rlen);
    }
    rc = hb_client_attach(seg_fd, -1, me, &h);
    if (rc != 0)
        goto out;
    if (me == 0)
        sh->cma = hb_client_cma(h);
    for (i = 0; i < o->warmup && rc == 0; i++)
        rc = bc_op(h, o, size, sbuf, rbuf);
    /* MPIBlib maximum method: isolated repetitions */
    for (i = 0; i < o->iters && rc == 0; i++) {
        rc = hibar_barrier(h);
        t0 = hb_time_now_ns();
        if (rc == 0)
            rc = bc_op(h, o, size, sbuf, rbuf);
        t[i] = (double)(hb_time_now_ns() - t0) / 1e3;
    }
    /* OSU style: back-to-back */
    if (rc == 0)
        rc = hibar_barrier(h);
    t0 = hb_time_now_ns();
    for (i = 0; i < o->iters && rc == 0; i++)
        rc = bc_op(h, o, size, sbuf, rbuf);
    if (me == 0)
        sh->loop_us = (double)(hb_time_now_ns() - t0) / 1e3 / (double)o->iters;
    if (rc == 0 && rbuf != NULL && size > 0 && rbuf[rlen - 1] != 0x5a)
        rc = HIBAR_ERR_INTERNAL; /* the data did not arrive */
    {
        int frc = hibar_finalize(&h);
        if (rc == 0)
            rc = frc;
    }
out:
    free(sbuf);
    free(rbuf);
    return rc;
}

/*
 * --floor: the plainest barrier two or more processes can run on this machine, timed like
 * hibar's (isolated repetitions, CLOCK_MONOTONIC, maximum over the ranks): each rank stores
 * its count in its own cache line and spins on everyone else's. No sleeping, no checks, no
 * library: what hibar's barrier is compared with to tell its overhead from the hardware's.
 * Only with ranks <= cores; a spin longer than BC_FLOOR_SPINS pauses yields once, and a wait
 * longer than BC_FLOOR_TIMEOUT_NS (a rank died) fails the row.
 */
#define BC_FLOOR_SPINS 100000u

typedef struct bc_floor_line {
    _Alignas(64) _Atomic uint64_t v;
} bc_floor_line_t;

typedef struct bc_floor_arg {
    const bc_opts_t *o;
    bc_shared_t *sh;
    bc_floor_line_t *line; /* [n], shared */
} bc_floor_arg_t;

#define BC_FLOOR_TIMEOUT_NS 10000000000ull /* a rank that died: the others give up */

static int bc_floor_barrier(bc_floor_line_t *line, uint32_t n, uint32_t me, uint64_t s)
{
    uint64_t deadline = 0;
    atomic_store_explicit(&line[me].v, s, memory_order_release);
    for (uint32_t r = 0; r < n; r++) {
        unsigned spins = 0;
        while (atomic_load_explicit(&line[r].v, memory_order_acquire) < s) {
            hb_wait_pause();
            if (++spins < BC_FLOOR_SPINS)
                continue;
            spins = 0;
            sched_yield();
            uint64_t now = hb_time_now_ns();
            if (deadline == 0)
                deadline = now + BC_FLOOR_TIMEOUT_NS;
            else if (now > deadline)
                return HIBAR_ERR_TIMEOUT;
        }
    }
    return 0;
}

static int bc_floor_rank(uint32_t me, void *arg)
{
    const bc_floor_arg_t *a = arg;
    const bc_opts_t *o = a->o;
    double *t = a->sh->t + (uint64_t)me * o->iters;
    uint64_t s = 0, i, t0;

    int rc = 0;

    bc_bind(o, me);
    for (i = 0; i < o->warmup && rc == 0; i++)
        rc = bc_floor_barrier(a->line, o->n, me, ++s);
    for (i = 0; i < o->iters && rc == 0; i++) {
        rc = bc_floor_barrier(a->line, o->n, me, ++s);
        t0 = hb_time_now_ns();
        if (rc == 0)
            rc = bc_floor_barrier(a->line, o->n, me, ++s);
        t[i] = (double)(hb_time_now_ns() - t0) / 1e3;
    }
    return rc;
}

/* The floor row: x gets the per-repetition maximum over ranks. */
static int bc_floor_row(const bc_opts_t *o, bc_shared_t *sh, double *x)
{
    size_t len = (size_t)o->n * sizeof(bc_floor_line_t);
    bc_floor_line_t *line =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (line == MAP_FAILED) {
        fprintf(stderr, "hibar-bench barrier --floor: %s\n", strerror(errno));
        return -1;
    }
    bc_floor_arg_t fa = {.o = o, .sh = sh, .line = line};
    int failed = hb_bench_fork_ranks("hibar-bench barrier --floor", o->n, bc_floor_rank, &fa,
                                     sh->status) != 0;
    munmap(line, len);
    if (failed)
        return -1;
    bc_max_over_ranks(o, sh, x);
    return 0;
}

/* Where hibar-mpi-bench is: next to this program (build tree: peer/, installed: same dir). */
static int bc_peer_path(char *buf, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;
    if (n <= 0)
        return -1;
    self[n] = '\0';
    slash = strrchr(self, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    if (snprintf(buf, len, "%.*s/peer/hibar-mpi-bench", (int)(len - 32), self) < (int)len &&
        access(buf, X_OK) == 0)
        return 0;
    if (snprintf(buf, len, "%.*s/hibar-mpi-bench", (int)(len - 32), self) < (int)len &&
        access(buf, X_OK) == 0)
        return 0;
    return -1;
}

/* Run the Open MPI peer for one row; fills *st (median, min, max, p99, ci, mean). */
static int bc_peer(const bc_opts_t *o, size_t size, hb_stats_t *st, uint64_t *iters_p)
{
    return hb_bench_mpi_peer(o->bench, o->n, size, o->iters, o->warmup, "", st, iters_p);
}

int hb_bench_mpi_peer(const char *bench, uint32_t n, size_t size, uint64_t iters, uint64_t warmup,
                      const char *mca, hb_stats_t *st, uint64_t *iters_p)
{
    char peer[PATH_MAX], cmd[PATH_MAX + 512], line[1024];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    FILE *p;
    int found = 0, status;

    if (bc_peer_path(peer, sizeof(peer)) != 0) {
        fprintf(stderr,
                "hibar-bench %s: --compare: hibar-mpi-bench not found (configure "
                "found no mpicc?)\n",
                bench);
        return -1;
    }
    if (geteuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    /* The peer at its best: yield when idle if ranks outnumber cores, as mpirun does. */
    snprintf(cmd, sizeof(cmd),
             "mpirun -n %u --oversubscribe%s %s %s --bench %s --sizes %zu --iters %llu "
             "--warmup %llu 2>&1",
             (unsigned)n, (long)n > ncpu ? " --mca mpi_yield_when_idle 1" : "", mca, peer, bench,
             size, (unsigned long long)iters, (unsigned long long)warmup);
    fflush(stdout);
    p = popen(cmd, "r");
    if (p == NULL) {
        fprintf(stderr, "hibar-bench %s: popen mpirun: %s\n", bench, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), p) != NULL) {
        json_t *jr = line[0] == '{' ? json_loads(line, JSON_DECODE_INT_AS_REAL, NULL) : NULL;
        if (strcmp(bc_json_str(jr, "impl"), "open-mpi") == 0 && bc_json_num(jr, "median_us") >= 0) {
            memset(st, 0, sizeof(*st));
            st->median = bc_json_num(jr, "median_us");
            st->min = bc_json_num(jr, "min_us");
            st->max = bc_json_num(jr, "max_us");
            st->p99 = bc_json_num(jr, "p99_us");
            st->ci = bc_json_num(jr, "ci_us");
            st->mean = bc_json_num(jr, "mean_us");
            st->confidence = 0.95;
            *iters_p = (uint64_t)bc_json_num(jr, "iters");
            st->n = (size_t)*iters_p;
            found = 1;
        } else if (!found) {
            fprintf(stderr, "mpirun: %s", line);
        }
        json_decref(jr);
    }
    status = pclose(p);
    if (!found || status != 0) {
        fprintf(stderr, "hibar-bench %s: the Open MPI run failed (%s)\n", bench, cmd);
        return -1;
    }
    return 0;
}

typedef struct bc_rank_arg {
    int seg_fd;
    const bc_opts_t *o;
    size_t size;
    bc_shared_t *sh;
} bc_rank_arg_t;

static int bc_rank_run(uint32_t me, void *arg)
{
    const bc_rank_arg_t *a = arg;
    return bc_rank(a->seg_fd, me, a->o, a->size, a->sh);
}

/* Fork the ranks for one row; x gets the per-repetition maximum over ranks. */
static int bc_row(const bc_opts_t *o, size_t size, bc_shared_t *sh, double *x)
{
    hb_seg_t seg;
    int rc;

    rc = hb_seg_create(o->n, HB_SEG_DEFAULT_DEPTH, HB_SEG_DEFAULT_BUF, (uint64_t)getpid(), 0, 1, 0,
                       &seg);
    if (rc != 0) {
        fprintf(stderr, "hibar-bench %s: segment: %s\n", o->bench, hibar_strerror(rc));
        return -1;
    }
    bc_rank_arg_t ra = {.seg_fd = seg.fd, .o = o, .size = size, .sh = sh};
    char prog[64];
    snprintf(prog, sizeof(prog), "hibar-bench %s", o->bench);
    int failed = hb_bench_fork_ranks(prog, o->n, bc_rank_run, &ra, sh->status) != 0;
    hb_seg_unmap(&seg);
    if (failed)
        return -1;
    bc_max_over_ranks(o, sh, x);
    return 0;
}

static int bc_main(const char *bench, int argc, char **argv)
{
    hb_bench_common_t com;
    hb_bench_out_t out;
    bc_opts_t o;
    bc_shared_t *sh;
    size_t shlen;
    double *x;
    int s, rc = 1, peer_failed = 0;

    memset(&o, 0, sizeof(o));
    o.bench = bench;
    if (hb_bench_common_parse(&argc, argv, &com) < 0 || bc_parse(argc, argv, &o) < 0)
        return 2;
    if (o.per_node != 0) {
        char dir[PATH_MAX];
        hb_bench_exe_dir(dir, sizeof(dir));
        return bc_nodes(&o, &com, dir);
    }
    shlen = sizeof(*sh) + (size_t)o.n * o.iters * sizeof(double);
    sh = mmap(NULL, shlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    x = malloc(o.iters * sizeof(*x));
    if (sh == MAP_FAILED || x == NULL) {
        fprintf(stderr, "hibar-bench %s: out of memory\n", bench);
        if (sh != MAP_FAILED)
            munmap(sh, shlen);
        free(x);
        return 1;
    }
    if (hb_bench_out_open(&out, bench, &com) != 0)
        goto out;
    hb_bench_out_note(&out,
                      "hibar-bench %s: one node, %u ranks (processes, %s), %ld cores online; "
                      "impl hibar = libhibar's intra-node path",
                      bench, o.n, o.bind ? "bound to CPU rank % cores" : "not bound",
                      sysconf(_SC_NPROCESSORS_ONLN));
    hb_bench_out_note(&out, "latency per repetition = max over ranks (isolated by a barrier); "
                            "loop_us = back-to-back average");
    for (s = 0; s < o.nsizes; s++) {
        hb_stats_t st, pst;
        hb_bench_row_t row = {.impl = "hibar",
                              .nodes = 1,
                              .ranks = o.n,
                              .size = o.sizes[s],
                              .reps = o.iters,
                              .iters = o.iters,
                              .st = &st};
        char extra[256];
        uint64_t piters = 0;

        if (bc_row(&o, o.sizes[s], sh, x) != 0)
            goto out_close;
        hb_stats_summarize(x, o.iters, com.confidence, &st);
        snprintf(extra, sizeof(extra),
                 "\"method\": \"maximum\", \"loop_us\": %.3f, \"warmup\": %llu, \"cma\": %d",
                 sh->loop_us, (unsigned long long)o.warmup, sh->cma);
        row.extra_json = extra;
        hb_bench_out_note(&out, "impl hibar, size %zu: loop_us %.3f", o.sizes[s], sh->loop_us);
        hb_bench_out_row(&out, &row);
        if (o.floor) {
            hb_stats_t fst;
            hb_bench_row_t frow = {.impl = "shm-floor",
                                   .nodes = 1,
                                   .ranks = o.n,
                                   .size = 0,
                                   .reps = o.iters,
                                   .iters = o.iters,
                                   .st = &fst};
            char fextra[96];
            if (bc_floor_row(&o, sh, x) != 0)
                goto out_close;
            hb_stats_summarize(x, o.iters, com.confidence, &fst);
            snprintf(fextra, sizeof(fextra), "\"method\": \"maximum\", \"hibar_over_floor\": %.3f",
                     fst.median > 0 ? st.median / fst.median : 0.0);
            frow.extra_json = fextra;
            hb_bench_out_note(&out,
                              "impl shm-floor (a plain shared-memory barrier, spinning): "
                              "ratio hibar/floor (medians) %.3f",
                              fst.median > 0 ? st.median / fst.median : 0.0);
            hb_bench_out_row(&out, &frow);
        }
        if (o.compare) {
            hb_bench_row_t prow = {
                .impl = "open-mpi", .nodes = 1, .ranks = o.n, .size = o.sizes[s], .st = &pst};
            char pextra[128];
            if (bc_peer(&o, o.sizes[s], &pst, &piters) != 0) {
                peer_failed = 1; /* its row only: hibar's of the other sizes still come */
                continue;
            }
            prow.iters = prow.reps = piters;
            snprintf(pextra, sizeof(pextra), "\"method\": \"maximum\", \"ratio\": %.3f",
                     pst.median > 0 ? st.median / pst.median : 0.0);
            prow.extra_json = pextra;
            hb_bench_out_note(&out, "impl open-mpi, size %zu: ratio hibar/open-mpi (medians) %.3f",
                              o.sizes[s], pst.median > 0 ? st.median / pst.median : 0.0);
            hb_bench_out_row(&out, &prow);
        }
    }
    rc = peer_failed; /* the comparison is not whole */
out_close:
    hb_bench_out_close(&out);
out:
    munmap(sh, shlen);
    free(x);
    return rc;
}

int hb_bench_barrier_main(int argc, char **argv)
{
    return bc_main("barrier", argc, argv);
}
int hb_bench_scatter_main(int argc, char **argv)
{
    return bc_main("scatter", argc, argv);
}
int hb_bench_gather_main(int argc, char **argv)
{
    return bc_main("gather", argc, argv);
}
