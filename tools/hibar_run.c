/* hibar_run.c: hibar-run, launch a job's ranks as PMIx clients through the hibard daemons of a
 * cluster. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "hb_config.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hbd_client.h"
#include "hbd_emu.h"
#include "hbd_pmix.h"
#include "hibar.h"

#define MAX_OVER 64
#define KILL_WAIT_MS 15000 /* after asking the daemons to stop a job, how long to wait */

extern char **environ;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hibar-run -n N [options] PROGRAM [ARGS...]\n"
            "  -n, --np N            number of ranks\n"
            "  -N, --per-node K      at most K ranks per node (default: spread evenly)\n"
            "  -m, --map-by WHAT     node: fill node after node (default); chassis: deal the\n"
            "                        ranks round-robin over the nodes of each chassis\n"
            "  -e, --emulate CONFIG  start an emulated cluster of CONFIG on this host for the job\n"
            "                        and stop it afterwards\n"
            "  -c, --config FILE     the running cluster to use (default $HIBAR_CONFIG); with\n"
            "                        neither and no cluster running, a one-node cluster is\n"
            "                        emulated for the job\n"
            "  -o, --set KEY=VALUE   configuration override\n"
            "  -t, --tag-output      prefix every output line with [rank]\n"
            "  -T, --timeout SEC     stop the job after SEC seconds (exit 124)\n"
            "  -v, --verbose         report placement and start-up time on stderr\n"
            "Exit status: 0 when every rank exited 0; else the failing rank's exit status\n"
            "(128+signal when killed), 1 when the job could not run, 2 on bad usage.\n");
}

typedef struct node_conn {
    int fd;
    char buf[65536];
    size_t len;
    int launched, done, kill_sent;
} node_conn_t;

typedef struct run {
    const hb_cfg_t *cfg;
    uint32_t n_nodes;
    node_conn_t *nc;
    uint32_t *map;
    int tag, verbose;
    int failed, status; /* first failure decides the exit status */
    int killing;
    uint64_t kill_ns;
    uint32_t alive;
} run_t;

static volatile sig_atomic_t got_signal;
static void on_signal(int sig)
{
    got_signal = sig;
}

/* Find PROGRAM like execvp would; its absolute path into out[PATH_MAX]. */
static int resolve_program(const char *prog, char *out)
{
    if (strchr(prog, '/') != NULL)
        return realpath(prog, out) != NULL && access(out, X_OK) == 0 ? 0 : -1;
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        char cand[2 * PATH_MAX];
        struct stat sb;
        snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, n ? path : ".", prog);
        if (stat(cand, &sb) == 0 && S_ISREG(sb.st_mode) && access(cand, X_OK) == 0)
            return realpath(cand, out) != NULL ? 0 : -1;
        path += n + (c != NULL);
    }
    return -1;
}

/* Placement: node of each rank. Returns 0 or prints why not and returns 2. */
static int place(const hb_cfg_t *cfg, uint32_t n, uint32_t per_node, int by_chassis, uint32_t *map)
{
    uint32_t nn = cfg->n_nodes;
    if (per_node > 0 && (uint64_t)per_node * nn < n) {
        fprintf(stderr,
                "hibar-run: %" PRIu32 " ranks do not fit on %" PRIu32
                " nodes with --per-node %" PRIu32 "\n",
                n, nn, per_node);
        return 2;
    }
    uint32_t *cnt = calloc(nn, sizeof(uint32_t));
    if (cnt == NULL)
        return 1;
    /* ranks per node: K each in node order, or spread evenly */
    for (uint32_t i = 0, left = n; i < nn; i++) {
        uint32_t c = per_node > 0 ? (left < per_node ? left : per_node) : n / nn + (i < n % nn);
        cnt[i] = c;
        left -= c;
    }
    if (!by_chassis) {
        for (uint32_t i = 0, r = 0; i < nn; i++)
            for (uint32_t k = 0; k < cnt[i]; k++)
                map[r++] = i;
    } else {
        /* counts go to the nodes chassis by chassis; inside a chassis ranks are dealt
         * round-robin over its nodes */
        uint32_t r = 0, slot = 0;
        for (uint32_t c = 0; c < cfg->n_chassis; c++) {
            uint32_t s0 = cfg->chassis_start[c], s1 = cfg->chassis_start[c + 1];
            uint32_t *take = calloc(s1 - s0, sizeof(uint32_t));
            uint32_t total = 0;
            if (take == NULL) {
                free(cnt);
                return 1;
            }
            for (uint32_t k = s0; k < s1; k++, slot++)
                total += take[k - s0] = cnt[slot];
            for (uint32_t got = 0, k = 0; got < total; k = (k + 1) % (s1 - s0))
                if (take[k] > 0) {
                    take[k]--;
                    map[r++] = cfg->chassis_nodes[s0 + k];
                    got++;
                }
            free(take);
        }
    }
    int rc = 0;
    for (uint32_t i = 0; nn > 1 && i < nn; i++)
        if (cnt[i] == 0) {
            fprintf(stderr,
                    "hibar-run: node %s would get no rank: a job must use every node of the "
                    "cluster (%" PRIu32 " nodes; its fences span the whole chassis tree)\n",
                    cfg->nodes[i].name, nn);
            rc = 2;
            break;
        }
    free(cnt);
    return rc;
}

static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] == 'x' && p[2] && p[3]) {
            char h[3] = {p[2], p[3], 0};
            *o++ = (char)strtol(h, NULL, 16);
            p += 3;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

static void kill_all(run_t *R, const char *why)
{
    if (R->killing)
        return;
    R->killing = 1;
    R->kill_ns = hb_time_now_ns();
    if (R->verbose && why != NULL)
        fprintf(stderr, "hibar-run: stopping the job (%s)\n", why);
    for (uint32_t i = 0; i < R->n_nodes; i++)
        if (R->nc[i].fd >= 0 && !R->nc[i].done && !R->nc[i].kill_sent) {
            R->nc[i].kill_sent = 1;
            if (hbd_client_send(R->nc[i].fd, "kill") != 0)
                continue; /* its EOF comes through poll */
        }
}

static void fail(run_t *R, int status)
{
    if (!R->failed) {
        R->failed = 1;
        R->status = status;
    }
}

static void node_gone(run_t *R, uint32_t i)
{
    close(R->nc[i].fd);
    R->nc[i].fd = -1;
    R->nc[i].done = 1;
    R->alive--;
}

/* One line from node i's daemon. */
static void on_line(run_t *R, uint32_t i, char *line)
{
    const char *node = R->cfg->nodes[i].name;
    char *save = NULL, *kind = strtok_r(line, " ", &save);
    if (kind == NULL)
        return;
    if (strcmp(kind, "o") == 0 || strcmp(kind, "p") == 0) {
        char *rk = strtok_r(NULL, " ", &save), *st = strtok_r(NULL, " ", &save);
        char *text = save != NULL ? save : (char *)"";
        if (rk == NULL || st == NULL)
            return;
        unescape(text);
        FILE *f = strcmp(st, "2") == 0 ? stderr : stdout;
        if (R->tag)
            fprintf(f, "[%s] ", rk);
        fputs(text, f);
        if (kind[0] == 'o')
            fputc('\n', f);
        if (f == stderr || !R->tag)
            fflush(f);
    } else if (strcmp(kind, "ok") == 0) {
        R->nc[i].launched = 1;
    } else if (strcmp(kind, "err") == 0) {
        char *text = save != NULL ? save : (char *)"";
        unescape(text);
        fprintf(stderr, "hibar-run: node %s: %s\n", node, text);
        fail(R, 1);
        kill_all(R, "a daemon could not launch");
    } else if (strcmp(kind, "a") == 0) {
        char *rk = strtok_r(NULL, " ", &save), *st = strtok_r(NULL, " ", &save);
        char *text = save != NULL ? save : (char *)"";
        if (rk == NULL || st == NULL)
            return;
        unescape(text);
        int s = atoi(st);
        fprintf(stderr, "hibar-run: rank %s (node %s) called PMIx_Abort with status %d: %s\n", rk,
                node, s, text);
        fail(R, s > 0 && s < 256 ? s : 1);
        kill_all(R, "PMIx_Abort");
    } else if (strcmp(kind, "x") == 0) {
        char *rk = strtok_r(NULL, " ", &save), *cs = strtok_r(NULL, " ", &save);
        const char *why = save != NULL ? save : "";
        if (rk == NULL || cs == NULL)
            return;
        int code = atoi(cs);
        if (strcmp(why, "ok") == 0)
            return;
        if (!R->failed || strcmp(why, "stopped (job aborted)") != 0) {
            if (code > 0)
                fprintf(stderr, "hibar-run: rank %s (node %s) exited with status %d\n", rk, node,
                        code);
            else if (code < 0 && strcmp(why, "killed by a signal") == 0)
                fprintf(stderr, "hibar-run: rank %s (node %s) was killed by signal %d (%s)\n", rk,
                        node, -code, strsignal(-code));
            else if (!R->killing)
                fprintf(stderr, "hibar-run: rank %s (node %s) %s\n", rk, node, why);
        }
        fail(R, code > 0 ? code : (code < 0 ? 128 - code : 1));
        char b[64];
        snprintf(b, sizeof(b), "rank %s failed", rk);
        kill_all(R, b);
    } else if (strcmp(kind, "done") == 0) {
        node_gone(R, i);
    }
}

/*
 * After a job that failed, some daemons may have entered a fence (a collective of their
 * barrier engine) that the others never reached: the engine's collectives would be out of
 * step for every later job. The daemons that are behind are made to arrive at the missing
 * collectives, which then complete everywhere. 0, or the error (the cluster needs a restart).
 */
static int barrier_catch_up(const hb_cfg_t *cfg)
{
    hbd_cluster_t *cl = NULL;
    uint32_t n = cfg->n_nodes, *behind = NULL;
    uint64_t *next = calloc(n, sizeof(uint64_t)), hi = 0;
    char(*rep)[512] = calloc(n, 512);
    int rc = next && rep ? hbd_cluster_open(cfg, 5000, 0, &cl) : HIBAR_ERR_NOMEM;
    behind = calloc(n, sizeof(uint32_t));
    if (rc == 0 && behind == NULL)
        rc = HIBAR_ERR_NOMEM;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        char v[32];
        uint32_t me = i;
        rc = hbd_cluster_all(cl, &me, 1, "status", &rep[i], 5000);
        if (rc == 0 && hbd_client_field(rep[i], "next_coll", v, sizeof(v)) != 0)
            rc = HIBAR_ERR_PROTO;
        if (rc == 0)
            next[i] = strtoull(v, NULL, 10);
        if (rc == 0 && next[i] > hi)
            hi = next[i];
    }
    for (uint64_t k = 0; rc == 0 && hi > 0 && k < hi; k++) {
        uint32_t nb = 0;
        for (uint32_t i = 0; i < n; i++)
            if (next[i] <= k)
                behind[nb++] = i;
        if (nb == 0)
            continue;
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "barrier %" PRIu64, k);
        rc = hbd_cluster_all(cl, behind, nb, cmd, rep, 10000);
        for (uint32_t i = 0; rc == 0 && i < nb; i++)
            if (strncmp(rep[i], "ok", 2) != 0)
                rc = HIBAR_ERR_PEER_LOST;
    }
    if (rc != 0)
        fprintf(stderr,
                "hibar-run: the daemons' barrier engines could not be brought back in step "
                "after the failed job (%s): restart cluster %s\n",
                hibar_strerror(rc), cfg->cluster);
    if (cl != NULL)
        hbd_cluster_close(cl);
    free(next);
    free(rep);
    free(behind);
    return rc;
}

static int run_job(run_t *R, int timeout_s)
{
    struct pollfd *pfd = calloc(R->n_nodes, sizeof(*pfd));
    uint64_t t_end = timeout_s > 0 ? hb_time_now_ns() + (uint64_t)timeout_s * 1000000000ull : 0;
    if (pfd == NULL)
        return 1;
    while (R->alive > 0) {
        if (got_signal) {
            fprintf(stderr, "hibar-run: %s: stopping the job\n", strsignal(got_signal));
            fail(R, 128 + got_signal);
            got_signal = 0;
            kill_all(R, NULL);
        }
        if (t_end != 0 && hb_time_now_ns() > t_end && !R->killing) {
            fprintf(stderr, "hibar-run: timeout after %d s: stopping the job\n", timeout_s);
            fail(R, 124);
            kill_all(R, NULL);
        }
        if (R->killing && hb_time_now_ns() - R->kill_ns > KILL_WAIT_MS * 1000000ull) {
            fprintf(stderr, "hibar-run: %" PRIu32 " daemons did not report the job's end\n",
                    R->alive);
            break;
        }
        nfds_t n = 0;
        for (uint32_t i = 0; i < R->n_nodes; i++) {
            pfd[i].fd = R->nc[i].fd;
            pfd[i].events = POLLIN;
            n++;
        }
        int pr = poll(pfd, n, 200);
        if (pr < 0 && errno != EINTR) {
            perror("hibar-run: poll");
            break;
        }
        for (uint32_t i = 0; pr > 0 && i < R->n_nodes; i++) {
            node_conn_t *c = &R->nc[i];
            if (c->fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
            if (r <= 0) {
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                    continue;
                fprintf(stderr, "hibar-run: lost the daemon of node %s\n", R->cfg->nodes[i].name);
                fail(R, 1);
                node_gone(R, i);
                kill_all(R, "a daemon went away");
                continue;
            }
            c->len += (size_t)r;
            char *start = c->buf, *nl;
            while (c->fd >= 0 && (nl = memchr(start, '\n', c->len - (size_t)(start - c->buf)))) {
                *nl = '\0';
                on_line(R, i, start);
                start = nl + 1;
            }
            if (c->fd < 0)
                continue;
            c->len -= (size_t)(start - c->buf);
            memmove(c->buf, start, c->len);
            if (c->len == sizeof(c->buf) - 1) /* cannot happen: lines are bounded */
                c->len = 0;
        }
    }
    free(pfd);
    fflush(stdout);
    return R->failed ? R->status : 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"np", required_argument, NULL, 'n'},        {"per-node", required_argument, NULL, 'N'},
        {"map-by", required_argument, NULL, 'm'},    {"emulate", required_argument, NULL, 'e'},
        {"config", required_argument, NULL, 'c'},    {"set", required_argument, NULL, 'o'},
        {"tag-output", no_argument, NULL, 't'},      {"timeout", required_argument, NULL, 'T'},
        {"verbose", no_argument, NULL, 'v'},         {"help", no_argument, NULL, 'h'},
        {"log-level", required_argument, NULL, 'l'}, {NULL, 0, NULL, 0}};
    const char *emulate = NULL, *config = NULL, *log_level = NULL;
    const char *over[MAX_OVER + 2];
    size_t n_over = 0;
    long np = 0, per_node = 0, timeout_s = 0;
    int by_chassis = 0, tag = 0, verbose = 0, c, status = 1;
    char err[HB_CFG_ERRLEN], prog[PATH_MAX], spec_path[600] = "", own_name[64], own_dir[128];

    hb_log_init_from_env();
    hb_log_set_ident("hibar-run");
    while ((c = getopt_long(argc, argv, "+n:N:m:e:c:o:tT:vhl:", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'n':
        case 'N':
        case 'T': {
            long v = strtol(optarg, &end, 10);
            if (*end != '\0' || v < (c == 'n' ? 1 : 0) || v > 1000000) {
                fprintf(stderr, "hibar-run: bad number '%s' for -%c\n", optarg, c);
                return 2;
            }
            *(c == 'n' ? &np : c == 'N' ? &per_node : &timeout_s) = v;
            break;
        }
        case 'm':
            if (strcmp(optarg, "node") == 0)
                by_chassis = 0;
            else if (strcmp(optarg, "chassis") == 0)
                by_chassis = 1;
            else {
                fprintf(stderr, "hibar-run: --map-by node|chassis, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'e':
            emulate = optarg;
            break;
        case 'c':
            config = optarg;
            break;
        case 'o':
            if (n_over == MAX_OVER) {
                fprintf(stderr, "hibar-run: too many --set options\n");
                return 2;
            }
            over[n_over++] = optarg;
            break;
        case 't':
            tag = 1;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'l': {
            int l = hb_log_parse_level(optarg);
            if (l < 0) {
                fprintf(stderr, "hibar-run: unknown log level '%s'\n", optarg);
                return 2;
            }
            hb_log_set_level((hb_log_level_t)l);
            log_level = optarg;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc || np == 0) {
        usage(stderr);
        return 2;
    }
    if (resolve_program(argv[optind], prog) != 0) {
        fprintf(stderr, "hibar-run: %s: command not found or not executable\n", argv[optind]);
        return 127;
    }
    uint64_t t0 = hb_time_now_ns();

    /* which cluster: emulated for this job, or a running one */
    hb_cfg_t *cfg = NULL;
    int own = emulate != NULL;
    if (!own) {
        if (config == NULL && getenv("HIBAR_CONFIG") == NULL) {
            /* a running default cluster, else a one-node one of our own */
            int rc = hb_cfg_load(NULL, over, n_over, &cfg, err, sizeof(err));
            if (rc != 0 || hbd_emu_running(cfg) == 0) {
                hb_cfg_free(cfg);
                cfg = NULL;
                own = 1;
            }
        } else {
            int rc = hb_cfg_load(config, over, n_over, &cfg, err, sizeof(err));
            if (rc != 0) {
                fprintf(stderr, "hibar-run: %s\n", err);
                return 2;
            }
            unsigned up = hbd_emu_running(cfg);
            if (up != cfg->n_nodes) {
                fprintf(stderr,
                        "hibar-run: cluster %s: %u of %" PRIu32 " daemons running (start it "
                        "with hibar-cluster up, or use --emulate)\n",
                        cfg->cluster, up, cfg->n_nodes);
                hb_cfg_free(cfg);
                return 1;
            }
        }
    }
    hbd_emu_opts_t eo = {.config = emulate, .log_level = log_level, .timeout_ms = 60000};
    if (own) {
        /* a private name and run dir: never meets another cluster */
        snprintf(own_name, sizeof(own_name), "cluster=hbrun%d", (int)getpid());
        snprintf(own_dir, sizeof(own_dir), "run_dir=/tmp/hibar-%u-hbrun%d", (unsigned)getuid(),
                 (int)getpid());
        over[n_over++] = own_name;
        over[n_over++] = own_dir;
        /* without --emulate: the default configuration, one node named after this host */
        int rc = hb_cfg_load(emulate, over, n_over, &cfg, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "hibar-run: %s\n", err);
            return 2;
        }
        eo.over = over;
        eo.n_over = n_over;
        if ((rc = hbd_emu_up(cfg, &eo)) != 0) {
            fprintf(stderr, "hibar-run: cannot start the emulated cluster %s: %s\n", cfg->cluster,
                    hibar_strerror(rc));
            hbd_emu_down(cfg, &eo);
            hb_cfg_free(cfg);
            return 1;
        }
    }
    uint64_t t_up = hb_time_now_ns();

    run_t R = {.cfg = cfg, .n_nodes = cfg->n_nodes, .tag = tag, .verbose = verbose};
    hbd_job_spec_t spec = {0};
    hbd_cluster_t *cl = NULL;
    R.map = calloc((size_t)np, sizeof(uint32_t));
    R.nc = calloc(cfg->n_nodes, sizeof(node_conn_t));
    if (R.map == NULL || R.nc == NULL)
        goto out;
    for (uint32_t i = 0; i < cfg->n_nodes; i++)
        R.nc[i].fd = -1;
    if ((status = place(cfg, (uint32_t)np, (uint32_t)per_node, by_chassis, R.map)) != 0)
        goto out;
    status = 1;
    uint64_t coll = 0;
    int rc = hbd_cluster_open(cfg, 10000, 0, &cl);
    if (rc == 0)
        rc = hbd_cluster_next_coll(cl, &coll);
    if (rc != 0) {
        fprintf(stderr, "hibar-run: cluster %s not reachable: %s\n", cfg->cluster,
                hibar_strerror(rc));
        goto out;
    }

    /* the ranks' environment: ours, plus what Open MPI needs unless the user chose */
    size_t n_env = 0;
    while (environ[n_env] != NULL)
        n_env++;
    char *extra[5];
    size_t n_extra = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t max_host = 0;
    if (cfg->bootstrap == HB_CFG_BOOT_LOCAL) {
        max_host = (uint32_t)np; /* every emulated node is on this host */
    } else {
        for (uint32_t i = 0; i < cfg->n_nodes; i++) {
            uint32_t k = 0;
            for (long r = 0; r < np; r++)
                k += R.map[r] == i;
            max_host = k > max_host ? k : max_host;
        }
    }
    if (getenv("OMPI_MCA_schizo") == NULL)
        extra[n_extra++] = "OMPI_MCA_schizo=^orte";
    if (getenv("OMPI_MCA_ess") == NULL)
        extra[n_extra++] = "OMPI_MCA_ess=pmi";
    if (getenv("OMPI_MCA_mpi_yield_when_idle") == NULL && cores > 0 && max_host > (uint32_t)cores)
        extra[n_extra++] = "OMPI_MCA_mpi_yield_when_idle=1";
    /* emulated nodes share this host under different hostnames: Open MPI's shared-memory
     * transport (vader) then crashes between them (checked here); TCP over loopback works */
    if (getenv("OMPI_MCA_btl") == NULL && cfg->bootstrap == HB_CFG_BOOT_LOCAL && cfg->n_nodes > 1)
        extra[n_extra++] = "OMPI_MCA_btl=self,tcp";
    char **env = calloc(n_env + n_extra + 1, sizeof(char *));
    if (env == NULL)
        goto out;
    memcpy(env, environ, n_env * sizeof(char *));
    memcpy(env + n_env, extra, n_extra * sizeof(char *));
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        snprintf(cwd, sizeof(cwd), "/");
    argv[optind] = prog;
    spec.id = ((uint64_t)time(NULL) << 22) ^ (uint64_t)getpid();
    spec.size = (uint32_t)np;
    spec.coll_base = coll;
    spec.tag = tag;
    spec.map = R.map;
    spec.cwd = cwd;
    spec.argv = argv + optind;
    spec.n_argv = (uint32_t)(argc - optind);
    spec.env = env;
    spec.n_env = (uint32_t)(n_env + n_extra);
    snprintf(spec_path, sizeof(spec_path), "%s/hibar-job-%" PRIu64 ".spec", cfg->run_dir, spec.id);
    rc = hbd_job_spec_write(spec_path, &spec);
    free(env);
    if (rc != 0) {
        spec_path[0] = '\0';
        goto out;
    }
    if (verbose) {
        fprintf(stderr, "hibar-run: %ld ranks on %" PRIu32 " nodes of cluster %s:", np,
                cfg->n_nodes, cfg->cluster);
        for (long r = 0; r < np && r < 64; r++)
            fprintf(stderr, " %s", cfg->nodes[R.map[r]].name);
        fprintf(stderr, "%s\n", np > 64 ? " ..." : "");
    }

    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "launch %s", spec_path);
    /* the connections become the job's streams: take them from the cluster handle */
    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        R.nc[i].fd = cl->fd[i];
        cl->fd[i] = -1;
        R.alive++;
        if (hbd_client_send(R.nc[i].fd, cmd) != 0) {
            fprintf(stderr, "hibar-run: cannot reach the daemon of node %s\n", cfg->nodes[i].name);
            fail(&R, 1);
            kill_all(&R, NULL);
        }
    }
    uint64_t t_sent = hb_time_now_ns();
    status = run_job(&R, (int)timeout_s);
    uint64_t t_end = hb_time_now_ns();
    if (status != 0 && !own && cfg->n_nodes > 1)
        barrier_catch_up(cfg);
    if (verbose)
        fprintf(stderr,
                "hibar-run: cluster ready %.1f ms, launch to end of job %.1f ms, total %.1f ms, "
                "exit %d\n",
                (double)(t_up - t0) / 1e6, (double)(t_end - t_sent) / 1e6,
                (double)(t_end - t0) / 1e6, status);
out:
    if (spec_path[0] != '\0')
        unlink(spec_path);
    for (uint32_t i = 0; R.nc != NULL && i < cfg->n_nodes; i++)
        if (R.nc[i].fd >= 0)
            close(R.nc[i].fd);
    if (cl != NULL)
        hbd_cluster_close(cl);
    if (own)
        hbd_emu_down(cfg, &eo);
    free(R.map);
    free(R.nc);
    hb_cfg_free(cfg);
    return status;
}
