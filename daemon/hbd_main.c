/* hbd_main.c: hibard's entry point: options, config, run dir, pid file, signals, the event loop. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hb_config.h"
#include "hb_log.h"
#include "hb_rundir.h"
#include "hb_sd.h"
#include "hb_time.h"
#include "hbd.h"
#include "hbd_barrier.h"
#include "hbd_boot.h"
#include "hbd_coll.h"
#include "hbd_cron.h"
#include "hbd_ctl_cmds.h"
#include "hbd_dmodex.h"
#include "hbd_fence.h"
#include "hbd_key.h"
#include "hbd_launch.h"
#include "hbd_logp.h"
#include "hbd_model.h"
#include "hbd_net.h"
#include "hbd_sock.h"
#include "hbd_pmix.h"
#include "hbd_step.h"
#include "hbd_ranks.h"
#include "hbd_relay.h"
#include "hb_status.h"
#include "hwb.h"

#define HBD_MAX_OVERRIDES 64

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: hibard --config FILE [--node NAME] [options]\n"
        "       hibard --gen-key FILE\n"
        "  -c, --config FILE     cluster configuration (YAML); default $HIBAR_CONFIG\n"
        "  -n, --node NAME       which node of the configuration this daemon is (required with\n"
        "                        bootstrap local/static; pmix and env find it themselves)\n"
        "  -o, --set KEY=VALUE   override a configuration key (repeatable)\n"
        "  -f, --foreground      stay in the foreground (default: detach)\n"
        "  -l, --log-level LVL   error|warn|info|debug (default $HIBAR_LOG or warn)\n"
        "      --log-file FILE   append the log to FILE instead of stderr\n"
        "  -p, --pid-file FILE   default RUN_DIR/NAME.pid\n"
        "      --gen-key FILE    write a new cluster key pair to FILE (mode 0600) and exit\n"
        "  -h, --help, -V, --version\n"
        "Environment: HIBAR_<KEY> overrides, HIBAR_LOG, HIBAR_TRACE_DIR (write every hier event\n"
        "and action to DIR/n<node>.trace, for hibar-sim replay).\n"
        "Control socket: RUN_DIR/NAME.sock, one command a line:\n");
    hbd_ctl_cmds_usage(f);
    fprintf(f, "Without --config: $HIBAR_CONFIG, else %s if it exists; without --node: the\n",
            hb_cfg_default_file());
    fprintf(f, "node named as this host. Every key is also HIBAR_<KEY> (hibar-info --all).\n");
    fprintf(f, "SIGHUP re-reads the configuration and re-opens the log; SIGTERM, SIGINT stop.\n");
    fprintf(f, "Exit status: 0 clean stop, 1 start-up failure, 2 bad configuration or usage.\n");
}

/* The file paths in the run dir for a node name, truncated if too long (external linkage: as a
 * static function GCC inlines it and warns of that truncation under -Werror). */
void hbd_paths(const char *run_dir, const char *name, char *sock, size_t ls, char *pid, size_t lp,
               char *port, size_t lpo);
void hbd_paths(const char *run_dir, const char *name, char *sock, size_t ls, char *pid, size_t lp,
               char *port, size_t lpo)
{
    if (sock)
        snprintf(sock, ls, "%s/%s.sock", run_dir, name);
    if (pid)
        snprintf(pid, lp, "%s/%s.pid", run_dir, name);
    if (port)
        snprintf(port, lpo, "%s/%s.port", run_dir, name);
}

/* The run dir, created (mkdir 0700) and checked before the key or any socket is written in
 * it (common/hb_rundir.h). */
static int run_dir_prepare(const char *dir)
{
    char err[768];
    int rc = hb_rundir_prepare(dir, err, sizeof(err));
    if (rc != 0)
        hb_log_error("%s", err);
    return rc;
}

/* 0 if no live daemon owns the pid file (a stale one is replaced), EXISTS otherwise. */
static int pid_file_write(hbd_t *d)
{
    char buf[32], err[768];
    int fd = open(d->pid_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ELOOP) {
        hb_log_error("pid file %s is a symbolic link: refused", d->pid_path);
        return HB_ERR_PERM;
    }
    if (fd >= 0 && hb_file_owned(fd, d->pid_path, err, sizeof(err)) != 0) {
        hb_log_error("pid file %s", err);
        close(fd);
        return HB_ERR_PERM;
    }
    if (fd >= 0) {
        ssize_t r = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (r > 0) {
            buf[r] = '\0';
            long pid = strtol(buf, NULL, 10);
            if (pid != getpid() && hb_pidfile_live(d->pid_path) == 1) {
                hb_log_error("node %s already has a daemon (pid %ld, %s)", d->name, pid,
                             d->pid_path);
                return HB_ERR_EXISTS;
            }
        }
    }
    char tmp[400];
    snprintf(tmp, sizeof(tmp), "%s.tmp", d->pid_path);
    fd = hb_file_create(tmp, O_WRONLY, 0644, err, sizeof(err));
    if (fd < 0) {
        hb_log_error("pid file: %s", err);
        return fd == HB_ERR_PERM ? HB_ERR_PERM : HB_ERR_IO;
    }
    /* locked for our life, before it is in place: a pid file nobody holds is a dead
     * daemon's (hb_pidfile_live; a later daemon reclaims its run dir) */
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
    if (hb_pidfile_lock(fd) != 0 || write(fd, buf, (size_t)n) != n || rename(tmp, d->pid_path)) {
        hb_log_error("cannot write pid file %s: %m", d->pid_path);
        close(fd);
        unlink(tmp);
        return HB_ERR_IO;
    }
    d->pid_fd = fd;
    d->pid_written = 1;
    return 0;
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    hbd_t *d = arg;
    char err[HB_CFG_ERRLEN];
    (void)what;
    if (sig == SIGHUP) { /* systemctl reload */
        hb_sd_notify("RELOADING=1");
        if (hb_cfg_reload(d->cfg, d->hup_config, d->hup_over, d->hup_n_over, err, sizeof(err)) != 0)
            hb_log_error("SIGHUP: configuration not re-read: %s", err);
        hb_sd_notify("READY=1");
        return;
    }
    hb_sd_notify("STOPPING=1");
    hb_log_info("signal %d: shutting down", (int)sig);
    d->stopping = 1;
    event_base_loopexit(d->base, NULL);
}

static int daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        hb_log_error("fork: %m");
        return HB_ERR_IO;
    }
    if (pid > 0)
        _exit(0);
    if (setsid() < 0)
        return HB_ERR_IO;
    pid = fork();
    if (pid < 0)
        return HB_ERR_IO;
    if (pid > 0)
        _exit(0);
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        if (fd > 1)
            close(fd);
    }
    return 0;
}

static int open_hwb(hbd_t *d)
{
    const hb_topo_node_t *me = &d->topo->nodes[d->self];
    hb_hwb_params_t hp = {
        .cluster = d->cfg->cluster,
        .chassis = me->chassis,
        .port = me->port,
        .nodes = d->topo->chassis[me->chassis].n_nodes,
        .timeout_ms = 20000,
        .uio_path = d->cfg->scic_uio,
        .pci_vendor = d->cfg->scic_vendor,
        .pci_device = d->cfg->scic_device,
    };
    int rc = hb_hwb_open(d->cfg->hwbarrier, &hp, &d->hwb);
    if (rc != 0)
        hb_log_error("node %s: cannot open the chassis barrier (%s, chassis %u port %u): %s",
                     d->name, d->cfg->hwbarrier ? d->cfg->hwbarrier : "auto", me->chassis, me->port,
                     hb_status_str(rc));
    return rc;
}

static void hwb_stop(hbd_t *d)
{
    if (d->hwb != NULL)
        hb_hwb_close(d->hwb);
    d->hwb = NULL;
}

static int ctl_start(hbd_t *d)
{
    return hbd_ctl_start(d, hbd_ctl_cmds, hbd_ctl_n_cmds);
}

/*
 * The daemon's parts, started in this order and stopped in the reverse one. The services
 * register their frames and lost-node subscribers with the transport as they start; nothing
 * of them runs before the loop does. Stopping in reverse answers what is in flight while what
 * it needs still runs: barriers first (pending fences are answered while the steps still run),
 * the relay before the launcher (it tells hibar-run; the launcher then stops the ranks),
 * fences and dmodex before the jobs' namespaces go, the probes before the control socket.
 */
typedef struct hbd_part {
    const char *name;
    int (*start)(hbd_t *d);
    void (*stop)(hbd_t *d); /* also after a failed or partial start */
} hbd_part_t;

static const hbd_part_t parts[] = {
    {"spare descriptor", hbd_sock_spare_open, hbd_sock_spare_close},
    {"chassis barrier", open_hwb, hwb_stop},
    {"transport", hbd_net_start, hbd_net_stop},
    {"cron", hbd_cron_start, hbd_cron_stop},
    {"control socket", ctl_start, hbd_ctl_stop},
    {"probes", hbd_logp_init, hbd_logp_fini},
    {"ranks socket", hbd_ranks_start, hbd_ranks_stop},
    {"PMIx server", hbd_pmix_start, hbd_pmix_stop},
    {"launcher", hbd_launch_start, hbd_launch_stop},
    {"dmodex", hbd_dmodex_init, hbd_dmodex_fini},
    {"fences", hbd_fence_init, hbd_fence_fini},
    {"relay", hbd_relay_init, hbd_relay_fini},
    {"model file", hbd_model_init, hbd_model_fini},
    {"collectives", hbd_coll_init, hbd_coll_fini},
    {"barriers", hbd_barrier_init, hbd_barrier_fini},
};
#define HBD_N_PARTS (sizeof(parts) / sizeof(parts[0]))

/* Start the parts in order: 0, or the first failure (logged where found) with *n_p parts to
 * stop (the failed one included). */
static int parts_start(hbd_t *d, size_t *n_p)
{
    for (size_t i = 0; i < HBD_N_PARTS; i++) {
        *n_p = i + 1;
        int rc = parts[i].start(d);
        if (rc != 0) {
            hb_log_debug("start of the %s failed: %s", parts[i].name, hb_status_str(rc));
            return rc;
        }
    }
    return 0;
}

/* Stop the first n parts, in reverse, then what main set up before them, in reverse too
 * (signals, the loop, the pid file, the topology and configuration). */
static void cleanup(hbd_t *d, size_t n)
{
    while (n > 0)
        parts[--n].stop(d);
    for (int i = 0; i < 3; i++)
        if (d->ev_sig[i] != NULL)
            event_free(d->ev_sig[i]);
    if (d->base != NULL)
        event_base_free(d->base);
    if (d->pid_written)
        unlink(d->pid_path);
    if (d->pid_fd >= 0)
        close(d->pid_fd); /* after the unlink: a pid file is never there unlocked */
    /* The last daemon of the run dir takes the files they share (the generated key,
     * cluster.yaml) with it; "last": no live pid file left beside ours (--pid-file elsewhere:
     * cannot tell, left). */
    size_t rl = strlen(d->run_dir);
    if (d->pid_written && d->cfg->key_file == NULL && strncmp(d->pid_path, d->run_dir, rl) == 0 &&
        d->pid_path[rl] == '/' && hb_rundir_live(d->run_dir) != 1 &&
        hb_rundir_remove(d->run_dir) == 0)
        hb_log_info("removed run dir %s", d->run_dir);
    hb_topo_free(d->topo);
    hb_cfg_free(d->cfg);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},   {"node", required_argument, NULL, 'n'},
        {"set", required_argument, NULL, 'o'},      {"foreground", no_argument, NULL, 'f'},
        {"log-level", required_argument, NULL, 'l'}, {"log-file", required_argument, NULL, 'L'},
        {"pid-file", required_argument, NULL, 'p'}, {"gen-key", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *config = NULL, *node = NULL, *pid_file = NULL;
    const char *over[HBD_MAX_OVERRIDES];
    char log_kv[PATH_MAX + 16]; /* --log-file's override (the last one) */
    size_t n_over = 0;
    int foreground = 0, c, rc, status = 1;
    size_t n_started = 0;
    char err[HB_CFG_ERRLEN];

    if (argc > 1 && strcmp(argv[1], HBD_STEP_ARG) == 0) /* a job's PMIx step (hbd_step.h) */
        return hbd_step_main(argc, argv);
    hbd_t dd, *d = &dd;

    memset(d, 0, sizeof(*d));
    d->ctl_fd = -1;
    d->ranks_lfd = -1;
    d->hwb_fd = -1;
    d->spare_fd = -1;
    d->pid_fd = -1;
    hb_log_init_from_env();
    hb_log_set_ident("hibard");
    while ((c = getopt_long(argc, argv, "c:n:o:fl:p:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 'n':
            node = optarg;
            break;
        case 'o':
            if (n_over == HBD_MAX_OVERRIDES) {
                fprintf(stderr, "hibard: too many --set options\n");
                return 2;
            }
            over[n_over++] = optarg;
            break;
        case 'f':
            foreground = 1;
            break;
        case 'l': {
            int l = hb_log_parse_level(optarg);
            if (l < 0) {
                fprintf(stderr, "hibard: unknown log level '%s'\n", optarg);
                return 2;
            }
            hb_log_set_level((hb_log_level_t)l);
            break;
        }
        case 'L':
            if (n_over == HBD_MAX_OVERRIDES) {
                fprintf(stderr, "hibard: too many --set options\n");
                return 2;
            }
            snprintf(log_kv, sizeof(log_kv), "log_file=%s", optarg);
            over[n_over++] = log_kv;
            break;
        case 'p':
            pid_file = optarg;
            break;
        case 'K':
            rc = hbd_key_generate(optarg);
            if (rc == HB_ERR_EXISTS)
                fprintf(stderr, "hibard: %s already exists\n", optarg);
            return rc == 0 ? 0 : 1;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("hibard %s (%s)\n", PACKAGE_VERSION, HB_DEP_VERSIONS);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    config = hb_cfg_find(config, NULL); /* --config, HIBAR_CONFIG, SYSCONFDIR/hibar/hibar.yaml */
    d->hup_config = config;
    d->hup_over = over; /* main's: lives as long as the daemon */
    d->hup_n_over = n_over;
    /* bootstrap pmix / env learn the node list (and this node's name) here */
    rc = hbd_boot_load(config, over, n_over, &node, &foreground, &d->cfg, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "hibard: %s\n", err);
        return 2;
    }
    char host[256] = "?";
    if (node == NULL && config != NULL &&
        hb_cfg_node_self(d->cfg, host, sizeof(host), &d->self) == 0)
        node = d->cfg->nodes[d->self].name; /* the same command line on every host */
    if (node == NULL) {
        if (config != NULL)
            fprintf(stderr, "hibard: this host (%s) is no node of %s: give --node NAME\n", host,
                    config);
        else
            fprintf(stderr,
                    "hibard: no configuration: write %s (hibar.yaml(5)), or give "
                    "--config FILE or HIBAR_CONFIG, or --node NAME\n",
                    hb_cfg_default_file());
        hb_cfg_free(d->cfg);
        return 2;
    }
    hb_topo_spec_t spec;
    if ((rc = hb_cfg_topo_spec(d->cfg, &spec)) != 0 ||
        (rc = hb_topo_build(&spec, &d->topo, err, sizeof(err))) != 0) {
        fprintf(stderr, "hibard: %s\n", rc == HB_ERR_CONFIG ? err : hb_status_str(rc));
        hb_cfg_free(d->cfg);
        return 2;
    }
    if (hb_cfg_node_find(d->cfg, node, &d->self) != 0) {
        fprintf(stderr, "hibard: node '%s' is not in the configuration\n", node);
        cleanup(d, 0);
        return 2;
    }
    d->name = d->cfg->nodes[d->self].name;
    char ident[64];
    snprintf(ident, sizeof(ident), "hibard[%s]", d->name);
    hb_log_set_ident(ident);
    if (hb_cfg_log_open(d->cfg, !foreground) != 0) {
        fprintf(stderr, "hibard: cannot open the log: %s\n", strerror(errno));
        cleanup(d, 0);
        return 1;
    }
    d->epoch = 1;
    d->tag = hbd_wire_tag(d->cfg->cluster);
    d->start_ns = hb_time_now_ns();
    snprintf(d->run_dir, sizeof(d->run_dir), "%s", d->cfg->run_dir);
    hbd_paths(d->run_dir, d->name, d->sock_path, sizeof(d->sock_path), d->pid_path,
              sizeof(d->pid_path), d->port_path, sizeof(d->port_path));
    int tl = 0;
    if (pid_file != NULL)
        tl |= snprintf(d->pid_path, sizeof(d->pid_path), "%s", pid_file) >= (int)sizeof(d->pid_path);
    if (d->cfg->key_file != NULL)
        tl |= snprintf(d->key_path, sizeof(d->key_path), "%s", d->cfg->key_file) >=
              (int)sizeof(d->key_path);
    else
        tl |= snprintf(d->key_path, sizeof(d->key_path), "%s/cluster.key", d->run_dir) >=
              (int)sizeof(d->key_path);
    if (tl || strlen(d->cfg->run_dir) >= sizeof(d->run_dir) - 64) {
        hb_log_error("run dir, pid file or key file path too long");
        goto out;
    }

    /*
     * An emulated cluster puts many daemons on few cores: a chassis mate that spins or yields
     * for long takes the CPU from the very peers it waits for, and on this VM every
     * sched_yield that finds another runnable task costs a full context switch. Unless the
     * user chose, waits then spin 2 us and go straight to sleep on the futex (doc/design.md
     * section 6.1 with an empty yield stage): measured on scmd-30, median barrier 3.5-4.1 ms
     * against 4.5-4.6 ms with a 20 us yield stage, T_IB 39-46 us against 76-81 us.
     */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (d->cfg->bootstrap == HB_CFG_BOOT_LOCAL && cores > 0 && d->cfg->n_nodes > (uint32_t)cores) {
        setenv("HIBAR_WAIT_SPIN_US", "2", 0);
        setenv("HIBAR_WAIT_YIELD_US", "0", 0);
    }
    if (run_dir_prepare(d->run_dir) != 0)
        goto out;
    /* what SIGKILLed daemons of other clusters left on this node (proven dead: hibard(8)) */
    hb_rundir_reclaim(d->run_dir);
    hb_hwb_shm_reclaim();
    if (d->cfg->key_file == NULL) {
        rc = hbd_key_generate(d->key_path); /* the first daemon of a cluster creates it */
        if (rc != 0 && rc != HB_ERR_EXISTS)
            goto out;
    }
    if (hbd_key_load(d->key_path, d->pub, d->sec, d->pub_z85) != 0)
        goto out;
    if (!foreground && daemonize() != 0)
        goto out;
    if (pid_file_write(d) != 0)
        goto out;
    signal(SIGPIPE, SIG_IGN);

    /* plain epoll timers (ms): the loop only needs the 1 s tick and zero timers, and a
     * precise (timerfd) timer would cost a system call each time one is set */
    d->base = event_base_new();
    if (d->base == NULL) {
        hb_log_error("cannot create the event loop");
        goto out;
    }
    int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 3; i++) {
        d->ev_sig[i] = evsignal_new(d->base, sigs[i], signal_cb, d);
        if (d->ev_sig[i] == NULL || event_add(d->ev_sig[i], NULL) != 0)
            goto out;
    }
    if (parts_start(d, &n_started) != 0)
        goto out;
    hb_log_info("node %s up: pid %d, control %s, protocol %s", d->name, (int)getpid(),
                d->sock_path, hb_cfg_protocol_name(d->cfg->protocol));
    hb_sd_notify("READY=1");
    if (event_base_dispatch(d->base) < 0) {
        hb_log_error("event loop failed");
        goto out;
    }
    status = 0;
out:
    cleanup(d, n_started);
    if (status == 0)
        hb_log_info("stopped cleanly");
    return status;
}
