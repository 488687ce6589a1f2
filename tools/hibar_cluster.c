/* hibar_cluster.c: hibar-cluster, start/inspect/stop an emulated cluster and drive barriers on it. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "hb_config.h"
#include "hb_cli.h"
#include "hb_log.h"
#include "hb_prom.h"
#include "hbd_client.h"
#include "hbd_emu.h"
#include "hibar.h"

#define MAX_OVER 64

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hibar-cluster COMMAND --config FILE [options]\n"
            "commands:\n"
            "  up        start one hibard per node on this host, wait until all are linked\n"
            "  status    show every daemon: state, incarnation, and how the cluster sees it;\n"
            "            exit 0 if all are ready, 1 if not, 3 if none runs\n"
            "  restart NODE  start NODE's daemon again (stopped first if it runs); wait until\n"
            "            every daemon holds it up at its new incarnation (emulated clusters)\n"
            "  down      stop every daemon, remove sockets, pid files, segments (also after a "
            "crash)\n"
            "  barrier   drive barriers through every control socket\n"
            "              --count N (1)  --late NODE:MS  --kill NODE:MS  --expect STATUS (0)\n"
            "              --timeout MS (60000)  --stop (--kill sends SIGSTOP: a hung daemon)\n"
            "  ctl NODE|all COMMAND...   send one control command, print the replies\n"
            "  jobs      the running jobs (from the root daemon): number, id, ranks, age, nodes\n"
            "  metrics   the stats counters of this host's daemons in Prometheus text format\n"
            "              --output FILE (written atomically: node_exporter's textfile collector)\n"
            "options:\n"
            "  -c, --config FILE     cluster configuration (default $HIBAR_CONFIG)\n"
            "  -o, --set KEY=VALUE   configuration override, also passed to the daemons\n"
            "  -l, --log-level LVL   log level of the daemons (and of this tool)\n"
            "      --timeout-up MS   how long up waits (default 30000)\n"
            "      --keep-logs       down keeps RUN_DIR/NODE.log\n");
}

static int node_arg(const hb_cfg_t *cfg, const char *s, uint32_t *node_p, uint32_t *ms_p)
{
    char name[128];
    const char *colon = strchr(s, ':');
    size_t len = colon ? (size_t)(colon - s) : strlen(s);
    if (len == 0 || len >= sizeof(name))
        return HIBAR_ERR_INVAL;
    memcpy(name, s, len);
    name[len] = '\0';
    if (hb_cfg_node_find(cfg, name, node_p) != 0) {
        char *end;
        unsigned long v = strtoul(name, &end, 10);
        if (*end != '\0' || v >= cfg->n_nodes)
            return HIBAR_ERR_NOT_FOUND;
        *node_p = (uint32_t)v;
    }
    if (ms_p != NULL)
        *ms_p = colon ? (uint32_t)strtoul(colon + 1, NULL, 10) : 0;
    return 0;
}

/* The members view of the first daemon that answers: "NAME:up|lost:INC ...", or NULL. */
static char *members_view(const hb_cfg_t *cfg)
{
    size_t cap = 64 + (size_t)cfg->n_nodes * 96;
    char *reply = malloc(cap);
    for (uint32_t i = 0; reply != NULL && i < cfg->n_nodes; i++) {
        char path[400];
        hbd_client_sock_path(cfg, i, path, sizeof(path));
        if (hbd_client_cmd(path, "members", reply, cap, 2000) == 0 && strncmp(reply, "ok ", 3) == 0)
            return reply;
    }
    free(reply);
    return NULL;
}

/* Node name's state and incarnation in a members view ("?" when not there). */
static void member_of(const char *view, const char *name, char *state, size_t scap, char *inc,
                      size_t icap)
{
    char want[160];
    snprintf(state, scap, "?");
    snprintf(inc, icap, "?");
    snprintf(want, sizeof(want), " %s:", name);
    const char *at = view != NULL ? strstr(view, want) : NULL;
    if (at == NULL)
        return;
    at += strlen(want);
    size_t n = strcspn(at, ":");
    snprintf(state, scap, "%.*s", (int)(n < scap ? n : scap - 1), at);
    if (at[n] == ':')
        snprintf(inc, icap, "%.*s", (int)strcspn(at + n + 1, " "), at + n + 1);
}

static int cmd_status(const hb_cfg_t *cfg)
{
    unsigned ready = 0, up = 0, lost = 0;
    char *view = members_view(cfg);
    printf("cluster %s, %" PRIu32 " nodes, run dir %s\n", cfg->cluster, cfg->n_nodes,
           cfg->run_dir);
    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        char path[400], reply[640], f[8][64], state[16], inc[40];
        const char *keys[] = {"pid", "ready", "peers", "role", "port", "lost", "endpoint", "inc"};
        member_of(view, cfg->nodes[i].name, state, sizeof(state), inc, sizeof(inc));
        lost += strcmp(state, "lost") == 0;
        hbd_client_sock_path(cfg, i, path, sizeof(path));
        int rc = hbd_client_cmd(path, "status", reply, sizeof(reply), 2000);
        if (rc != 0) {
            pid_t pid = hbd_client_pid(cfg, i);
            printf("  %-12s down%s%s\n", cfg->nodes[i].name, pid > 0 ? " (stale pid file)" : "",
                   strcmp(state, "lost") == 0 ? ", the cluster holds it lost" : "");
            continue;
        }
        up++;
        for (int k = 0; k < 8; k++)
            if (hbd_client_field(reply, keys[k], f[k], sizeof(f[k])) != 0)
                strcpy(f[k], "?");
        int r = strcmp(f[1], "1") == 0;
        ready += r;
        printf("  %-12s pid %-7s %-7s inc %-16s peers %-5s chassis-port %-3s %-6s %s%s%s\n",
               cfg->nodes[i].name, f[0], r ? "ready" : "linking", f[7], f[2], f[4], f[3], f[6],
               strcmp(f[5], "0") ? " (holds nodes lost)" : "",
               strcmp(state, "lost") == 0 ? " LOST (rejoining)" : "");
    }
    printf("%u of %" PRIu32 " daemons up, %u ready, %u lost\n", up, cfg->n_nodes, ready, lost);
    free(view);
    return up == 0 ? 3 : (ready == cfg->n_nodes ? 0 : 1);
}

/* "jobs": the running jobs, from the cluster's root daemon (it holds every job's slot). */
static int cmd_jobs(const hb_cfg_t *cfg)
{
    char *reply = NULL;
    uint8_t *lost = calloc(cfg->n_nodes, 1);
    int rc = lost == NULL ? HIBAR_ERR_NOMEM : hbd_cluster_jobs(cfg, &reply, NULL, lost);
    if (rc != 0) {
        free(lost);
        fprintf(stderr,
                "hibar-cluster: the cluster's root daemon does not answer on this host: %s\n",
                hibar_strerror(rc));
        return 1;
    }
    printf("%-6s %-20s %-8s %-6s %-8s %-8s %s\n", "JOB", "ID", "STATE", "RANKS", "AGE", "SYNC",
           "NODES");
    char *save = NULL;
    for (char *t = strtok_r(reply + 3, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save)) {
        unsigned long jobno, origin, size, base, nsync;
        unsigned long long id, age;
        char nodes[32768];
        if (strncmp(t, "job=", 4) != 0 ||
            sscanf(t + 4, "%lu:%llu:%lu:%lu:%32767[0-9.-]:%llu:%lu+%lu", &jobno, &id, &origin,
                   &size, nodes, &age, &base, &nsync) != 8)
            continue;
        /* node ids "a-b.c" -> names */
        char names[65536] = "";
        size_t o = 0;
        char *s2 = NULL;
        for (char *r = strtok_r(nodes, ".", &s2); r != NULL && o < sizeof(names) - 64;
             r = strtok_r(NULL, ".", &s2)) {
            unsigned long a = strtoul(r, NULL, 10), b = a;
            const char *dash = strchr(r, '-');
            if (dash != NULL)
                b = strtoul(dash + 1, NULL, 10);
            if (a >= cfg->n_nodes || b >= cfg->n_nodes)
                continue;
            o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s%s%s", o ? "," : "",
                                  cfg->nodes[a].name, b > a ? "-" : "",
                                  b > a ? cfg->nodes[b].name : "");
        }
        char agebuf[32], sync[24];
        snprintf(agebuf, sizeof(agebuf), "%.1fs", (double)age / 1e3);
        snprintf(sync, sizeof(sync), "%lu+%lu", base, nsync);
        /* a job whose origin is gone (a new root found it in its census) only drains */
        const char *state = origin >= cfg->n_nodes || lost[origin] ? "draining" : "running";
        printf("%-6lu %-20llu %-8s %-6lu %-8s %-8s %s\n", jobno, id, state, size, agebuf, sync,
               names);
    }
    free(lost);
    const char *l = strstr(reply, " lost=");
    if (l != NULL)
        printf("lost nodes (ids): %s\n", l + 6);
    free(reply);
    return 0;
}

typedef struct barrier_args {
    unsigned long count;
    const char *late, *kill;
    int expect, timeout_ms, stop;
} barrier_args_t;

static int cmd_barrier(const hb_cfg_t *cfg, const barrier_args_t *ba)
{
    hbd_drive_opts_t o;
    unsigned long count = ba->count;
    int expect = ba->expect;
    hbd_drive_opts_init(&o);
    if (ba->timeout_ms > 0)
        o.timeout_ms = ba->timeout_ms;
    if (ba->stop)
        o.kill_sig = SIGSTOP;
    if (ba->late != NULL && node_arg(cfg, ba->late, &o.late_node, &o.late_ms) != 0) {
        fprintf(stderr, "hibar-cluster: --late NODE:MS, unknown node in '%s'\n", ba->late);
        return 2;
    }
    if (ba->kill != NULL && node_arg(cfg, ba->kill, &o.kill_node, &o.kill_ms) != 0) {
        fprintf(stderr, "hibar-cluster: --kill NODE:MS, unknown node in '%s'\n", ba->kill);
        return 2;
    }
    hbd_cluster_t *cl;
    uint64_t coll;
    int rc = hbd_cluster_open(cfg, 5000, ba->kill != NULL, &cl);
    if (rc == 0)
        rc = hbd_cluster_next_coll(cl, &coll);
    if (rc != 0) {
        fprintf(stderr, "hibar-cluster: cluster %s not reachable: %s\n", cfg->cluster,
                hibar_strerror(rc));
        return 1;
    }
    double sum = 0, max = 0, min = 1e300, late_min = 1e300, kill_max = 0;
    unsigned long bad = 0, done = 0;
    uint32_t expected_replies = cfg->n_nodes - (o.kill_node < cfg->n_nodes);
    for (unsigned long k = 0; k < count; k++) {
        hbd_drive_result_t r;
        rc = hbd_cluster_barrier(cl, coll + k, &o, &r);
        if (rc != 0) {
            fprintf(stderr, "hibar-cluster: barrier %" PRIu64 ": %s (%u replies of %u)\n",
                    coll + k, hibar_strerror(rc), r.n_ok + r.n_err, expected_replies);
            bad++;
            break;
        }
        int good = r.n_ok + r.n_err == expected_replies &&
                   (expect == 0 ? r.n_err == 0 : (r.n_ok == 0 && r.all_err_same &&
                                                   r.first_err == expect));
        if (!good) {
            bad++;
            if (bad <= 5)
                fprintf(stderr,
                        "hibar-cluster: barrier %" PRIu64 ": %u ok, %u failed (first %d %s), "
                        "%u missing; expected status %d from %u daemons\n",
                        coll + k, r.n_ok, r.n_err, r.first_err, hibar_strerror(r.first_err),
                        r.n_missing, expect, expected_replies);
        }
        done++;
        sum += r.total_us;
        max = r.total_us > max ? r.total_us : max;
        min = r.total_us < min ? r.total_us : min;
        if (o.late_node < cfg->n_nodes && r.first_us < late_min)
            late_min = r.first_us;
        if (o.kill_node < cfg->n_nodes && r.after_kill_us > kill_max)
            kill_max = r.after_kill_us;
    }
    /* the times of those that ended (a barrier that got no reply in time ends the run) */
    if (done == count)
        printf("barriers %lu (ids from %" PRIu64 "), bad %lu", count, coll, bad);
    else
        printf("barriers %lu of %lu (ids from %" PRIu64 "; the next got no reply in time), bad %lu",
               done, count, coll, bad);
    if (done > 0)
        printf(", mean %.1f us, min %.1f us, max %.1f us", sum / (double)done, min, max);
    if (o.late_node < cfg->n_nodes)
        printf(", late node %s +%" PRIu32 " ms", cfg->nodes[o.late_node].name, o.late_ms);
    if (o.late_node < cfg->n_nodes && late_min < 1e300)
        printf(", earliest completion %.1f ms", late_min / 1e3);
    if (o.kill_node < cfg->n_nodes)
        printf(", %s %s at +%" PRIu32 " ms, last reply %.1f ms after the kill",
               ba->stop ? "stopped" : "killed", cfg->nodes[o.kill_node].name, o.kill_ms,
               kill_max / 1e3);
    printf("\n");
    hbd_cluster_close(cl);
    return bad ? 1 : 0;
}

/* The stats of the daemons whose control socket is on this host, as Prometheus text, on stdout
 * or into output (a temporary file renamed over it). 0; 1 when a daemon did not answer or
 * the file could not be written. */
static int cmd_metrics(const hb_cfg_t *cfg, const char *output)
{
    hb_prom_node_t *nodes = calloc(cfg->n_nodes, sizeof(*nodes));
    char(*replies)[2048] = calloc(cfg->n_nodes, sizeof(*replies)), tmp[4200];
    size_t n = 0;
    int bad = 0;
    FILE *f = stdout;

    if (nodes == NULL || replies == NULL) {
        free(nodes);
        free(replies);
        return 1;
    }
    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        char path[400];
        hbd_client_sock_path(cfg, i, path, sizeof(path));
        if (access(path, F_OK) != 0)
            continue; /* not a daemon of this host */
        nodes[n].node = cfg->nodes[i].name;
        if (hbd_client_cmd(path, "stats", replies[n], sizeof(replies[n]), 10000) == 0 &&
            strncmp(replies[n], "ok ", 3) == 0)
            nodes[n].stats = replies[n];
        else
            bad = 1;
        n++;
    }
    if (output != NULL) {
        snprintf(tmp, sizeof(tmp), "%s.%d.tmp", output, (int)getpid());
        f = fopen(tmp, "w");
        if (f == NULL) {
            fprintf(stderr, "hibar-cluster: cannot write %s: %s\n", tmp, strerror(errno));
            free(nodes);
            free(replies);
            return 1;
        }
    }
    int wrc = hb_prom_write(f, cfg->cluster, nodes, n);
    if (output != NULL) {
        wrc |= fclose(f);
        if (wrc != 0 || rename(tmp, output) != 0) {
            fprintf(stderr, "hibar-cluster: cannot write %s: %s\n", output, strerror(errno));
            unlink(tmp);
            bad = 1;
        }
    }
    free(nodes);
    free(replies);
    return bad || wrc != 0;
}

static int cmd_ctl(const hb_cfg_t *cfg, int argc, char **argv)
{
    char line[512] = "", reply[2048];
    uint32_t node = UINT32_MAX;
    if (argc < 2) {
        fprintf(stderr, "hibar-cluster: ctl NODE|all COMMAND...\n");
        return 2;
    }
    if (strcmp(argv[0], "all") != 0 && node_arg(cfg, argv[0], &node, NULL) != 0) {
        fprintf(stderr, "hibar-cluster: unknown node '%s'\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        strncat(line, argv[i], sizeof(line) - strlen(line) - 2);
        if (i + 1 < argc)
            strcat(line, " ");
    }
    int bad = 0;
    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        char path[400];
        if (node != UINT32_MAX && i != node)
            continue;
        hbd_client_sock_path(cfg, i, path, sizeof(path));
        int rc = hbd_client_cmd(path, line, reply, sizeof(reply), 120000);
        if (rc != 0) {
            printf("%s: error %s\n", cfg->nodes[i].name, hibar_strerror(rc));
            bad = 1;
        } else {
            printf("%s: %s\n", cfg->nodes[i].name, reply);
            bad |= strncmp(reply, "ok", 2) != 0;
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"set", required_argument, NULL, 'o'},
                                         {"log-level", required_argument, NULL, 'l'},
                                         {"timeout-up", required_argument, NULL, 'T'},
                                         {"keep-logs", no_argument, NULL, 'k'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {"count", required_argument, NULL, 'n'},
                                         {"late", required_argument, NULL, 'L'},
                                         {"kill", required_argument, NULL, 'K'},
                                         {"expect", required_argument, NULL, 'e'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"stop", no_argument, NULL, 'S'},
                                         {"output", required_argument, NULL, 'O'},
                                         {NULL, 0, NULL, 0}};
    const char *output = NULL;
    const char *over[MAX_OVER];
    hbd_emu_opts_t eo = {.timeout_ms = 30000};
    barrier_args_t ba = {.count = 1};
    char err[HB_CFG_ERRLEN];
    int c;

    hb_log_init_from_env();
    hb_log_set_ident("hibar-cluster");
    while ((c = getopt_long(argc, argv, "c:o:l:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            eo.config = optarg;
            break;
        case 'o':
            if (eo.n_over == MAX_OVER)
                return 2;
            over[eo.n_over++] = optarg;
            break;
        case 'l':
            eo.log_level = optarg;
            if (hb_log_parse_level(optarg) >= 0)
                hb_log_set_level((hb_log_level_t)hb_log_parse_level(optarg));
            break;
        case 'T':
            eo.timeout_ms = atoi(optarg);
            break;
        case 'k':
            eo.keep_logs = 1;
            break;
        case 'n':
            ba.count = strtoul(optarg, NULL, 10);
            break;
        case 'L':
            ba.late = optarg;
            break;
        case 'K':
            ba.kill = optarg;
            break;
        case 'e':
            ba.expect = atoi(optarg);
            break;
        case 't':
            ba.timeout_ms = atoi(optarg);
            break;
        case 'O':
            output = optarg;
            break;
        case 'S':
            ba.stop = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            return hb_cli_version("hibar-cluster");
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind];
    int sub_argc = argc - optind - 1;
    char **sub_argv = argv + optind + 1;
    eo.over = over;
    hb_cfg_t *cfg;
    if (hb_cfg_load(eo.config, over, eo.n_over, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "hibar-cluster: %s\n", err);
        return 2;
    }
    int rc = 0;
    if (strcmp(cmd, "up") == 0) {
        rc = hbd_emu_up(cfg, &eo);
        if (rc == 0)
            printf("cluster %s up: %" PRIu32 " daemons, run dir %s\n", cfg->cluster,
                   cfg->n_nodes, cfg->run_dir);
        else
            fprintf(stderr, "hibar-cluster: up failed: %s\n", hibar_strerror(rc));
        rc = rc == 0 ? 0 : 1;
    } else if (strcmp(cmd, "status") == 0) {
        rc = cmd_status(cfg);
    } else if (strcmp(cmd, "down") == 0) {
        unsigned n = hbd_emu_running(cfg);
        rc = hbd_emu_down(cfg, &eo) == 0 ? 0 : 1;
        printf("cluster %s down (%u daemons were running)\n", cfg->cluster, n);
    } else if (strcmp(cmd, "barrier") == 0) {
        rc = cmd_barrier(cfg, &ba);
    } else if (strcmp(cmd, "ctl") == 0) {
        rc = cmd_ctl(cfg, sub_argc, sub_argv);
    } else if (strcmp(cmd, "jobs") == 0) {
        rc = cmd_jobs(cfg);
    } else if (strcmp(cmd, "restart") == 0) {
        uint32_t node;
        if (sub_argc != 1 || node_arg(cfg, sub_argv[0], &node, NULL) != 0) {
            fprintf(stderr, "hibar-cluster: restart needs one node of the cluster (name or id)\n");
            rc = 2;
        } else {
            rc = hbd_emu_restart(cfg, &eo, node);
            if (rc == 0)
                printf("node %s rejoined\n", cfg->nodes[node].name);
            else
                fprintf(stderr, "hibar-cluster: restart %s: %s\n", cfg->nodes[node].name,
                        hibar_strerror(rc));
            rc = rc == 0 ? 0 : 1;
        }
    } else if (strcmp(cmd, "metrics") == 0) {
        rc = cmd_metrics(cfg, output);
    } else {
        fprintf(stderr, "hibar-cluster: unknown command '%s'\n", cmd);
        usage(stderr);
        rc = 2;
    }
    hb_cfg_free(cfg);
    return rc;
}
