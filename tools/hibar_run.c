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
#include "hb_cli.h"
#include "hb_config.h"
#include "hb_log.h"
#include "hb_time.h"
#include "hbd_client.h"
#include "hbd_emu.h"
#include "hbd_job.h"
#include "hibar.h"
#include "place.h"

#define MAX_OVER 64
#define KILL_WAIT_MS 15000 /* after asking the daemons to stop a job, how long to wait */
/* The origin daemon is pinged after PING_IVL_MS without a word from it; silent for
 * max(5 x heartbeat.timeout_ms, SILENT_MIN_MS), it is taken as hung (stopped, or its loop
 * stuck) and hibar-run gives up with an error instead of waiting for ever. */
#define PING_IVL_MS 2000
#define SILENT_MIN_MS 5000

extern char **environ;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hibar-run [-n N] [options] PROGRAM [ARGS...]\n"
            "  -n, --np N            number of ranks (default: one per slot of the nodes, where\n"
            "                        a hostfile or the Slurm allocation bounds them)\n"
            "  -N, --per-node K      at most K ranks per node (default: spread evenly)\n"
            "  -H, --host LIST       run on these nodes (hostlist: n[03-05,08])\n"
            "      --hostfile FILE   run on the nodes of FILE, lines 'NAME [slots=N]'\n"
            "                        (default: the nodes of the Slurm allocation this runs in,\n"
            "                        SLURM_JOB_NODELIST, else the cluster's first free nodes)\n"
            "      --exclusive       refuse to share a node with another running job\n"
            "  -m, --map-by WHAT     node: fill node after node (default); chassis: deal the\n"
            "                        ranks round-robin over the nodes of each chassis\n"
            "  -e, --emulate CONFIG  start an emulated cluster of CONFIG on this host for the job\n"
            "                        and stop it afterwards\n"
            "  -c, --config FILE     the running cluster to use (default $HIBAR_CONFIG): the job\n"
            "                        goes through its daemon on this host, which forwards it to\n"
            "                        the others; with neither and no cluster running, a\n"
            "                        one-node cluster is emulated for the job\n"
            "  -o, --set KEY=VALUE   configuration override\n"
            "  -t, --tag-output      prefix every output line with [rank]\n"
            "  -T, --timeout SEC     stop the job after SEC seconds (exit 124)\n"
            "  -v, --verbose         report placement and start-up time on stderr\n"
            "Exit status: 0 when every rank exited 0; else the failing rank's exit status\n"
            "(128+signal when killed), 1 when the job could not run, 2 on bad usage.\n");
}

/* What hibar-run knows of each node's part of the job. */
typedef struct node_state {
    int launched, done;
} node_state_t;

typedef struct run {
    const hb_cfg_t *cfg;
    uint32_t n_nodes;
    node_state_t *nc;
    uint32_t *map;
    int fd;          /* the connection to the origin daemon (this host's), or -1 */
    uint32_t origin; /* its node */
    char buf[65536];
    size_t len;
    int tag, verbose;
    int failed, status; /* first failure decides the exit status (fail_as) */
    int status_after;   /* ... and it followed the job's failure: a cause heard later wins */
    int killing, kill_sent;
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
    /* the origin daemon stops it on every node; if it is gone, its EOF comes through poll */
    if (R->fd >= 0 && !R->kill_sent) {
        R->kill_sent = 1;
        (void)hbd_client_send(R->fd, "kill");
    }
}

/* The first failure decides the exit status; one that followed the job's failure (a rank that
 * exited non-zero after another rank's end broke the job) gives way to a cause heard later:
 * the order in which nodes report is not the order in which ranks ended. */
static void fail_as(run_t *R, int status, int after)
{
    if (!R->failed || (R->status_after && !after)) {
        R->failed = 1;
        R->status = status;
        R->status_after = after;
    }
}

static void fail(run_t *R, int status)
{
    fail_as(R, status, 0);
}

static void node_gone(run_t *R, uint32_t i)
{
    if (R->nc[i].done)
        return;
    R->nc[i].done = 1;
    R->alive--;
}

/* Name the nodes whose end has not been reported (at most 16). */
static void pending_nodes(const run_t *R, const char *what)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < R->n_nodes; k++) {
        if (R->nc[k].done)
            continue;
        if (n++ < 16)
            fprintf(stderr, "hibar-run: node %s: %s%s\n", R->cfg->nodes[k].name, what,
                    R->nc[k].launched ? "" : "; its launch was not confirmed either");
    }
    if (n > 16)
        fprintf(stderr, "hibar-run: ... and %" PRIu32 " more\n", n - 16);
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
    } else if (strcmp(kind, "pong") == 0) {
        /* the origin's loop runs: its answer to "ping" (run_job) */
    } else if (strcmp(kind, "ok") == 0) {
        R->nc[i].launched = 1;
    } else if (strcmp(kind, "err") == 0) {
        /* "err <status> <text>": the text says it */
        char *text = save != NULL ? save : (char *)"", *end = NULL;
        (void)strtol(text, &end, 10);
        if (end != text && *end == ' ')
            text = end + 1;
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
        if (!R->failed || strcmp(why, HBD_JOB_WHY_STOPPED) != 0) {
            if (code > 0)
                fprintf(stderr, "hibar-run: rank %s (node %s) exited with status %d\n", rk, node,
                        code);
            else if (code < 0 && strcmp(why, "killed by a signal") == 0)
                fprintf(stderr, "hibar-run: rank %s (node %s) was killed by signal %d (%s)\n", rk,
                        node, -code, strsignal(-code));
            else if (!R->killing)
                fprintf(stderr, "hibar-run: rank %s (node %s) %s\n", rk, node, why);
        }
        fail_as(R, code > 0 ? code : (code < 0 ? 128 - code : 1),
                strcmp(why, HBD_JOB_WHY_AFTER) == 0 || strcmp(why, HBD_JOB_WHY_STOPPED) == 0);
        char b[64];
        snprintf(b, sizeof(b), "rank %s failed", rk);
        kill_all(R, b);
    } else if (strcmp(kind, "done") == 0 || strcmp(kind, "end") == 0) {
        node_gone(R, i);
    } else if (strcmp(kind, "lost") == 0) {
        if (!R->nc[i].done)
            fprintf(stderr, "hibar-run: lost node %s: %s\n", node, save != NULL ? save : "");
        fail(R, 1);
        node_gone(R, i);
        kill_all(R, "a node was lost");
    }
}

/* One line from the origin daemon: "<node> <line of that node's launcher>" (hbd_relay.c). */
static void on_origin_line(run_t *R, char *line)
{
    char *end = NULL;
    if (strncmp(line, "err ", 4) == 0) {
        /* the origin refused the job (nothing runs): "err <status> <text>" */
        char *text = strchr(line + 4, ' ');
        fprintf(stderr, "hibar-run: node %s: %s\n", R->cfg->nodes[R->origin].name,
                text != NULL ? text + 1 : line);
        fail(R, 1);
        for (uint32_t k = 0; k < R->n_nodes; k++)
            node_gone(R, k);
        close(R->fd);
        R->fd = -1;
        return;
    }
    errno = 0;
    unsigned long i = strtoul(line, &end, 10);
    if (end == line || *end != ' ' || errno != 0 || i >= R->n_nodes)
        return; /* not ours: ignored */
    on_line(R, (uint32_t)i, end + 1);
}

/* Read the origin daemon's stream until it closes it (every node ended), or it is lost. */
static int run_job(run_t *R, int timeout_s)
{
    uint64_t t_end = timeout_s > 0 ? hb_time_now_ns() + (uint64_t)timeout_s * 1000000000ull : 0;
    uint64_t quiet_ns = ((uint64_t)R->cfg->barrier_timeout_ms + 20000) * 1000000ull, last_ns = 0;
    uint64_t silent_ms = 5ull * R->cfg->heartbeat_timeout_ms;
    uint64_t rx_ns = hb_time_now_ns(), ping_ns = 0;
    if (silent_ms < SILENT_MIN_MS)
        silent_ms = SILENT_MIN_MS;
    while (R->fd >= 0) {
        uint64_t now = hb_time_now_ns();
        if (now - rx_ns > silent_ms * 1000000ull) {
            fprintf(stderr,
                    "hibar-run: the daemon of node %s has not answered for %.1f s (stopped, or "
                    "hung): the job's end on %" PRIu32 " nodes is unknown\n",
                    R->cfg->nodes[R->origin].name, (double)(now - rx_ns) / 1e9, R->alive);
            pending_nodes(R, "no end reported");
            fail(R, 1);
            break;
        }
        if (now - rx_ns > PING_IVL_MS * 1000000ull && now - ping_ns > PING_IVL_MS * 1000000ull) {
            ping_ns = now;
            (void)hbd_client_send(R->fd, "ping");
        }
        if (got_signal) {
            fprintf(stderr, "hibar-run: %s: stopping the job\n", strsignal(got_signal));
            fail(R, 128 + got_signal);
            got_signal = 0;
            kill_all(R, NULL);
        }
        if (t_end != 0 && now > t_end && !R->killing && R->alive > 0) {
            fprintf(stderr, "hibar-run: timeout after %d s: stopping the job\n", timeout_s);
            pending_nodes(R, "still running (no end reported)");
            fail(R, 124);
            kill_all(R, NULL);
        }
        now = hb_time_now_ns();
        if (R->killing && R->alive > 0 && now > R->kill_ns + KILL_WAIT_MS * 1000000ull) {
            fprintf(stderr, "hibar-run: %" PRIu32 " nodes did not report the job's end\n",
                    R->alive);
            pending_nodes(R, "no end reported");
            fail(R, 1);
            break;
        }
        /* every node of the job ended: the origin closes */
        if (R->alive == 0 && last_ns != 0 && now > last_ns + quiet_ns) {
            fprintf(stderr, "hibar-run: the daemon of node %s did not close the job\n",
                    R->cfg->nodes[R->origin].name);
            break;
        }
        struct pollfd pfd = {.fd = R->fd, .events = POLLIN};
        int pr = poll(&pfd, 1, 200);
        if (pr < 0 && errno != EINTR) {
            perror("hibar-run: poll");
            fail(R, 1);
            break;
        }
        if (pr <= 0 || !(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = read(R->fd, R->buf + R->len, sizeof(R->buf) - 1 - R->len);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0) {
            if (R->alive > 0) {
                fprintf(stderr,
                        "hibar-run: lost the daemon of node %s (the daemon this host runs the "
                        "job through): the job's end on %" PRIu32 " nodes is unknown\n",
                        R->cfg->nodes[R->origin].name, R->alive);
                fail(R, 1);
            }
            close(R->fd);
            R->fd = -1;
            break;
        }
        rx_ns = hb_time_now_ns();
        R->len += (size_t)r;
        char *start = R->buf, *nl;
        while (R->fd >= 0 &&
               (nl = memchr(start, '\n', R->len - (size_t)(start - R->buf))) != NULL) {
            *nl = '\0';
            on_origin_line(R, start);
            start = nl + 1;
        }
        if (R->fd < 0)
            break;
        /* writing the lines may have blocked (a slow reader of our stdout: the daemons hold
         * the job's output meanwhile): that is no silence of the daemon */
        rx_ns = hb_time_now_ns();
        R->len -= (size_t)(start - R->buf);
        memmove(R->buf, start, R->len);
        if (R->len == sizeof(R->buf) - 1) /* cannot happen: lines are bounded */
            R->len = 0;
        if (R->alive == 0 && last_ns == 0)
            last_ns = hb_time_now_ns();
    }
    fflush(stdout);
    return R->failed ? R->status : 0;
}

/*
 * The daemon hibar-run talks to: the first of the cluster whose control socket answers on this
 * host (on a real cluster, the node's own daemon; its run dir is local). Waits up to timeout_ms
 * for it to be ready (linked to its neighbours). 0 with *fd_p and *node_p, or an error
 * (printed).
 */
static int open_origin(const hb_cfg_t *cfg, int timeout_ms, int *fd_p, uint32_t *node_p)
{
    uint64_t deadline = hb_time_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    int seen = 0;
    for (;;) {
        for (uint32_t i = 0; i < cfg->n_nodes; i++) {
            char path[400], reply[512], v[32];
            int fd = -1;
            hbd_client_sock_path(cfg, i, path, sizeof(path));
            if (hbd_client_connect(path, &fd) != 0)
                continue;
            seen = 1;
            if (hbd_client_send(fd, "status") == 0 &&
                hbd_client_recv(fd, reply, sizeof(reply), 5000) == 0 &&
                hbd_client_field(reply, "ready", v, sizeof(v)) == 0 && strcmp(v, "1") == 0) {
                *fd_p = fd;
                *node_p = i;
                return 0;
            }
            close(fd);
        }
        if (hb_time_now_ns() > deadline)
            break;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    if (seen)
        fprintf(stderr, "hibar-run: cluster %s not ready within %d s\n", cfg->cluster,
                timeout_ms / 1000);
    else
        fprintf(stderr, "hibar-run: no daemon of cluster %s answers on this host (run dir %s)\n",
                cfg->cluster, cfg->run_dir);
    return HIBAR_ERR_UNAVAIL;
}

/* OMPI_MCA_mca_base_component_path=... that adds the directory of mca_coll_hibar.so (Open
 * MPI's coll component on hibar) to Open MPI's own, into buf; NULL where Open MPI finds it
 * already (installed among its components), where it is not there, or where the user set the
 * path. The directory: $HIBAR_OMPI_COMPONENT_DIR (a build tree), else where it was installed. */
static const char *ompi_component_path(char *buf, size_t n)
{
#ifdef HB_HAVE_OMPI_COLL
    const char *dir = getenv("HIBAR_OMPI_COMPONENT_DIR"), *home = getenv("HOME");
    char so[PATH_MAX];

    if (dir == NULL || *dir == '\0')
        dir = HB_OMPI_COMPONENT_DIR;
    /* without Open MPI's own directory (configure found no ompi_info) the path would hide
     * Open MPI's components: leave it alone */
    if (getenv("OMPI_MCA_mca_base_component_path") != NULL || *HB_OMPI_PKGLIBDIR == '\0' ||
        strcmp(dir, HB_OMPI_PKGLIBDIR) == 0)
        return NULL;
    snprintf(so, sizeof so, "%s/mca_coll_hibar.so", dir);
    if (access(so, R_OK) != 0)
        return NULL;
    /* Open MPI's default path first: its own components, then ours, then the user's */
    int k = snprintf(buf, n, "OMPI_MCA_mca_base_component_path=%s:%s%s%s", HB_OMPI_PKGLIBDIR, dir,
                     home ? ":" : "", home ? home : "");
    if (k < 0 || (size_t)k >= n || (home && (size_t)k + sizeof "/.openmpi/components" > n))
        return NULL;
    if (home)
        strcat(buf, "/.openmpi/components");
    return buf;
#else
    (void)buf;
    (void)n;
    return NULL;
#endif
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"np", required_argument, NULL, 'n'},        {"per-node", required_argument, NULL, 'N'},
        {"map-by", required_argument, NULL, 'm'},    {"emulate", required_argument, NULL, 'e'},
        {"config", required_argument, NULL, 'c'},    {"set", required_argument, NULL, 'o'},
        {"tag-output", no_argument, NULL, 't'},      {"timeout", required_argument, NULL, 'T'},
        {"verbose", no_argument, NULL, 'v'},         {"help", no_argument, NULL, 'h'},
        {"log-level", required_argument, NULL, 'l'}, {"version", no_argument, NULL, 'V'},
        {"host", required_argument, NULL, 'H'},      {"hostfile", required_argument, NULL, 'F'},
        {"exclusive", no_argument, NULL, 'X'},       {NULL, 0, NULL, 0}};
    const char *emulate = NULL, *config = NULL, *log_level = NULL, *hosts = NULL, *hostfile = NULL;
    const char *over[MAX_OVER + 2];
    size_t n_over = 0;
    long np = 0, per_node = 0, timeout_s = 0;
    int by_chassis = 0, tag = 0, verbose = 0, exclusive = 0, c, status = 1;
    char err[HB_CFG_ERRLEN], prog[PATH_MAX], spec_path[600] = "", own_name[64], own_dir[128];

    hb_log_init_from_env();
    hb_log_set_ident("hibar-run");
    while ((c = getopt_long(argc, argv, "+n:N:m:e:c:o:tT:vhVl:H:", opts, NULL)) != -1) {
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
        case 'H':
            hosts = optarg;
            break;
        case 'F':
            hostfile = optarg;
            break;
        case 'X':
            exclusive = 1;
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
        case 'V':
            return hb_cli_version("hibar-run");
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
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
            /* on separate machines only this host's daemon is visible here */
            if (hbd_emu_running(cfg) == 0) {
                fprintf(stderr,
                        "hibar-run: cluster %s: no daemon running on this host (run dir %s; "
                        "start it with hibar-cluster up, or use --emulate)\n",
                        cfg->cluster, cfg->run_dir);
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

    run_t R = {.cfg = cfg, .n_nodes = cfg->n_nodes, .tag = tag, .verbose = verbose, .fd = -1};
    uint8_t *busy = NULL, *lost = NULL;
    hbd_job_spec_t spec = {0};
    hb_place_t pl = {0};
    /* inside a Slurm allocation its nodes, unless placed by hand */
    int in_slurm = getenv("SLURM_JOB_ID") != NULL || getenv("SLURM_JOBID") != NULL;
    const char *st = getenv("SLURM_TASKS_PER_NODE");
    hb_place_req_t preq = {.n = (uint32_t)np,
                           .per_node = (uint32_t)per_node,
                           .hosts = hosts,
                           .hostfile = hostfile,
                           .slurm_nodes = in_slurm ? getenv("SLURM_JOB_NODELIST") : NULL,
                           .slurm_tasks = st != NULL ? st : getenv("SLURM_NTASKS_PER_NODE"),
                           .by_chassis = by_chassis};
    R.nc = calloc(cfg->n_nodes, sizeof(node_state_t));
    busy = calloc(cfg->n_nodes, 1);
    lost = calloc(cfg->n_nodes, 1);
    if (R.nc == NULL || busy == NULL || lost == NULL)
        goto out;
    /* the nodes other jobs run on and the lost ones (the root daemon knows; a cluster of our
     * own runs none) */
    char *jobs = NULL;
    int brc = own ? 0 : hbd_cluster_jobs(cfg, &jobs, busy, lost);
    free(jobs);
    if (brc == 0) {
        preq.busy = busy;
        preq.lost = lost;
    }
    int prc = hb_place(cfg, &preq, &pl, err, sizeof(err));
    if (prc != 0) {
        fprintf(stderr, "hibar-run: %s\n", err);
        status = prc == HIBAR_ERR_CONFIG || prc == HIBAR_ERR_IO ? 2 : 1;
        goto out;
    }
    if (pl.note[0] != '\0')
        fprintf(stderr, "hibar-run: %s\n", pl.note);
    for (uint32_t i = 0; i < cfg->n_nodes; i++)
        if (pl.member[i] && lost[i]) {
            fprintf(stderr,
                    "hibar-run: node %s is lost (its daemon died or cannot be reached): the "
                    "job cannot run there\n",
                    cfg->nodes[i].name);
            status = 1;
            goto out;
        }
    if (exclusive && brc != 0) {
        fprintf(stderr,
                "hibar-run: --exclusive: cannot learn which nodes run jobs (the cluster's root "
                "daemon does not answer on this host: %s)\n",
                hibar_strerror(brc));
        status = 1;
        goto out;
    }
    uint32_t shared = 0;
    for (uint32_t i = 0; exclusive && i < cfg->n_nodes; i++)
        if (pl.member[i] && busy[i]) {
            if (shared++ == 0)
                fprintf(stderr, "hibar-run: --exclusive: the job would share nodes with running "
                                "jobs:");
            fprintf(stderr, " %s", cfg->nodes[i].name);
        }
    if (shared > 0) {
        fprintf(stderr, "\n");
        status = 1;
        goto out;
    }
    R.map = pl.map;
    pl.map = NULL;
    np = pl.n;
    status = 1;
    int rc = open_origin(cfg, 10000, &R.fd, &R.origin);
    if (rc != 0)
        goto out;
    /* only the job's nodes report its end */
    for (uint32_t k = 0; k < cfg->n_nodes; k++)
        R.nc[k].done = 1;
    R.alive = 0;
    for (long r = 0; r < np; r++)
        if (R.nc[R.map[r]].done) {
            R.nc[R.map[r]].done = 0;
            R.alive++;
        }

    /* the ranks' environment: ours, plus what Open MPI needs unless the user chose */
    size_t n_env = 0;
    while (environ[n_env] != NULL)
        n_env++;
    char *extra[6];
    char comp_path[3 * PATH_MAX];
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
        extra[n_extra++] = "OMPI_MCA_schizo=^orte,slurm"; /* slurm: see hibar-run(1) */
    if (getenv("OMPI_MCA_ess") == NULL)
        extra[n_extra++] = "OMPI_MCA_ess=pmi";
    if (getenv("OMPI_MCA_mpi_yield_when_idle") == NULL && cores > 0 && max_host > (uint32_t)cores)
        extra[n_extra++] = "OMPI_MCA_mpi_yield_when_idle=1";
    /* emulated nodes share this host under different hostnames: Open MPI's shared-memory
     * transport (vader) then crashes between them (checked here); TCP over loopback works. A
     * job on one of them keeps vader, as under mpirun */
    int several = 0;
    for (long r = 1; r < np && !several; r++)
        several = R.map[r] != R.map[0];
    if (getenv("OMPI_MCA_btl") == NULL && cfg->bootstrap == HB_CFG_BOOT_LOCAL && several)
        extra[n_extra++] = "OMPI_MCA_btl=self,tcp";
    const char *comp = ompi_component_path(comp_path, sizeof comp_path);
    if (comp != NULL)
        extra[n_extra++] = (char *)comp;
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
        fprintf(stderr,
                "hibar-run: %ld ranks on %" PRIu32 " of the %" PRIu32 " nodes of cluster %s:", np,
                pl.n_members, cfg->n_nodes, cfg->cluster);
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
    /* the origin daemon forwards the job to every node and streams their lines back */
    snprintf(cmd, sizeof(cmd), "run %s", spec_path);
    uint64_t t_sent = hb_time_now_ns();
    if (hbd_client_send(R.fd, cmd) != 0) {
        fprintf(stderr, "hibar-run: cannot reach the daemon of node %s\n",
                cfg->nodes[R.origin].name);
        goto out;
    }
    status = run_job(&R, (int)timeout_s);
    uint64_t t_end = hb_time_now_ns();
    if (verbose)
        fprintf(stderr,
                "hibar-run: cluster ready %.1f ms, launch to end of job %.1f ms, total %.1f ms, "
                "exit %d\n",
                (double)(t_up - t0) / 1e6, (double)(t_end - t_sent) / 1e6,
                (double)(t_end - t0) / 1e6, status);
out:
    if (spec_path[0] != '\0')
        unlink(spec_path);
    if (R.fd >= 0)
        close(R.fd);
    if (own)
        hbd_emu_down(cfg, &eo);
    hb_place_free(&pl);
    free(busy);
    free(lost);
    free(R.map);
    free(R.nc);
    hb_cfg_free(cfg);
    return status;
}
