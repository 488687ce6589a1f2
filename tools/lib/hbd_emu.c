/* hbd_emu.c: start and stop an emulated cluster (one detached hibard per node on this host). */
#include "hb_config.h"
#include "hbd_emu.h"

#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hb_log.h"
#include "hb_rundir.h"
#include "hb_status.h"
#include "hb_time.h"
#include "hbd_key.h"
#include "hbd_client.h"
#include "hibar.h"

const char *hbd_emu_hibard_path(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("HIBARD");
    if (env != NULL && *env != '\0')
        return env;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            /* libtool may run the real program from .libs/ */
            size_t sl = strlen(self);
            if (sl >= 6 && strcmp(self + sl - 6, "/.libs") == 0)
                self[sl - 6] = '\0';
            const char *cand[] = {"../daemon/hibard", "../sbin/hibard", "hibard"};
            for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", self, cand[i]);
                if (access(path, X_OK) == 0)
                    return path;
            }
        }
    }
    return "hibard";
}

/* 1 if pid is a live (not zombie) hibard process. */
static int is_hibard(pid_t pid)
{
    char path[64], comm[64] = "";
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
        return 0;
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fgets(comm, sizeof(comm), f) == NULL)
            comm[0] = '\0';
        fclose(f);
    }
    if (strstr(comm, "hibard") == NULL)
        return 0; /* the pid was reused by something else */
    /* a zombie is dead for our purposes */
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f != NULL) {
        char buf[256];
        size_t r = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[r] = '\0';
        char *rp = strrchr(buf, ')');
        if (rp != NULL && rp[1] == ' ' && rp[2] == 'Z')
            return 0;
    }
    return 1;
}

/* The pid in node i's pid file if that process is alive and is a hibard, else -1. */
static pid_t live_pid(const hb_cfg_t *cfg, uint32_t i)
{
    pid_t pid = hbd_client_pid(cfg, i);
    return is_hibard(pid) ? pid : -1;
}

unsigned hbd_emu_running(const hb_cfg_t *cfg)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < cfg->n_nodes; i++)
        n += live_pid(cfg, i) > 0;
    return n;
}

static void tail_log(const hb_cfg_t *cfg, uint32_t i)
{
    char path[400], line[512];
    snprintf(path, sizeof(path), "%s/%s.log", cfg->run_dir, cfg->nodes[i].name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    char last[5][512];
    unsigned n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        snprintf(last[n++ % 5], sizeof(last[0]), "%s", line);
    fclose(f);
    for (unsigned k = n > 5 ? n - 5 : 0; k < n; k++)
        fprintf(stderr, "  %s: %s", cfg->nodes[i].name, last[k % 5]);
}

/* Double fork: the daemon is not our child, so a dead one never lingers as our zombie. */
static int spawn(const hb_cfg_t *cfg, uint32_t i, const hbd_emu_opts_t *o, const char *hibard)
{
    const char *argv[18 + 2 * 64];
    size_t k = 0;
    char logp[400];
    snprintf(logp, sizeof(logp), "%s/%s.log", cfg->run_dir, cfg->nodes[i].name);
    if (o->hostexec != NULL) {
        argv[k++] = o->hostexec;
        argv[k++] = cfg->nodes[i].name;
    }
    argv[k++] = hibard;
    argv[k++] = "--foreground";
    if (o->config != NULL) {
        argv[k++] = "--config";
        argv[k++] = o->config;
    }
    argv[k++] = "--node";
    argv[k++] = cfg->nodes[i].name;
    argv[k++] = "--log-file";
    argv[k++] = logp;
    if (o->log_level != NULL) {
        argv[k++] = "--log-level";
        argv[k++] = o->log_level;
    }
    for (size_t j = 0; j < o->n_over && j < 64; j++) {
        argv[k++] = "--set";
        argv[k++] = o->over[j];
    }
    argv[k] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        hb_log_error("fork: %m");
        return HIBAR_ERR_IO;
    }
    if (pid == 0) {
        setsid();
        if (fork() != 0)
            _exit(0);
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
        }
        char why[768];
        int lfd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
        if (lfd >= 0 && hb_file_owned(lfd, logp, why, sizeof(why)) != 0) {
            fprintf(stderr, "hibar-cluster: log %s\n", why);
            _exit(1);
        }
        if (lfd >= 0)
            dup2(lfd, 2);
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "hibar-cluster: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return 0;
}

int hbd_emu_up(const hb_cfg_t *cfg, const hbd_emu_opts_t *o)
{
    const char *hibard = hbd_emu_hibard_path();
    unsigned running = hbd_emu_running(cfg);
    if (running > 0) {
        hb_log_error("cluster %s already has %u daemon(s) running (run dir %s)", cfg->cluster,
                     running, cfg->run_dir);
        return HIBAR_ERR_EXISTS;
    }
    char err[768];
    int prc = hb_rundir_prepare(cfg->run_dir, err, sizeof(err)); /* common/hb_rundir.h */
    if (prc != 0) {
        hb_log_error("%s", err);
        return prc == HB_ERR_PERM ? HIBAR_ERR_PERM : HIBAR_ERR_IO;
    }
    /* leftovers of a crashed cluster (segments, stale files) go first */
    hbd_emu_down(cfg, o);
    if ((prc = hb_rundir_prepare(cfg->run_dir, err, sizeof(err))) != 0) {
        hb_log_error("%s", err);
        return prc == HB_ERR_PERM ? HIBAR_ERR_PERM : HIBAR_ERR_IO;
    }
    if (cfg->key_file == NULL) {
        char key[400];
        snprintf(key, sizeof(key), "%s/cluster.key", cfg->run_dir);
        int rc = hbd_key_generate(key);
        if (rc != 0 && rc != HIBAR_ERR_EXISTS)
            return rc;
    }
    for (uint32_t i = 0; i < cfg->n_nodes; i++) {
        int rc = spawn(cfg, i, o, hibard);
        if (rc != 0) {
            hbd_emu_down(cfg, o);
            return rc;
        }
    }
    hbd_cluster_t *cl = NULL;
    int rc = hbd_cluster_open(cfg, o->timeout_ms > 0 ? o->timeout_ms : 30000, 0, &cl);
    if (rc != 0) {
        for (uint32_t i = 0; i < cfg->n_nodes; i++) {
            char path[400], reply[512];
            hbd_client_sock_path(cfg, i, path, sizeof(path));
            if (hbd_client_cmd(path, "status", reply, sizeof(reply), 1000) != 0 ||
                strstr(reply, "ready=1") == NULL) {
                fprintf(stderr, "hibar-cluster: node %s did not come up; its log ends:\n",
                        cfg->nodes[i].name);
                tail_log(cfg, i);
            }
        }
        hbd_emu_opts_t keep = *o;
        keep.keep_logs = 1;
        hbd_emu_down(cfg, &keep);
        return rc;
    }
    hbd_cluster_close(cl);
    return 0;
}

int hbd_emu_acquire(const hb_cfg_t *cfg, const hbd_emu_opts_t *o, int timeout_ms, const char *prog,
                    int *started_p, hbd_cluster_t **cl_p)
{
    int rc;
    *started_p = 0;
    *cl_p = NULL;
    if (hbd_emu_running(cfg) == 0) {
        if ((rc = hbd_emu_up(cfg, o)) != 0) {
            fprintf(stderr, "%s: cannot start the emulated cluster %s: %s\n", prog, cfg->cluster,
                    hibar_strerror(rc));
            return rc;
        }
        *started_p = 1;
    }
    if ((rc = hbd_cluster_open(cfg, timeout_ms, 0, cl_p)) != 0) {
        fprintf(stderr, "%s: cluster %s not usable: %s\n", prog, cfg->cluster, hibar_strerror(rc));
        *cl_p = NULL;
    }
    return rc;
}

void hbd_emu_release(const hb_cfg_t *cfg, const hbd_emu_opts_t *o, hbd_cluster_t *cl, int started,
                     int keep)
{
    if (cl != NULL)
        hbd_cluster_close(cl);
    if (started && !keep)
        hbd_emu_down(cfg, o);
}

static void nap_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT)
        hb_log_warn("cannot remove %s: %m", path);
    return 0;
}

static int unlink_quiet(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT) {
        hb_log_error("cannot remove %s: %m", path);
        return HIBAR_ERR_IO;
    }
    return 0;
}

/* Is node i up in the members view of daemon j, at incarnation inc (hex)? */
static int seen_up(const hb_cfg_t *cfg, uint32_t j, uint32_t i, const char *inc)
{
    char path[400], want[200];
    size_t cap = 64 + (size_t)cfg->n_nodes * 96;
    char *reply = malloc(cap);
    hbd_client_sock_path(cfg, j, path, sizeof(path));
    snprintf(want, sizeof(want), " %s:up:%s", cfg->nodes[i].name, inc);
    int ok = reply != NULL && hbd_client_cmd(path, "members", reply, cap, 1000) == 0;
    if (ok) { /* followed by a space or the end */
        char *at = strstr(reply, want);
        ok = at != NULL && (at[strlen(want)] == ' ' || at[strlen(want)] == '\0');
    }
    free(reply);
    return ok;
}

int hbd_emu_restart(const hb_cfg_t *cfg, const hbd_emu_opts_t *o, uint32_t node)
{
    if (node >= cfg->n_nodes)
        return HIBAR_ERR_INVAL;
    pid_t pid = live_pid(cfg, node);
    if (pid > 0) { /* stop it first: SIGTERM, SIGKILL after 5 s */
        kill(pid, SIGTERM);
        uint64_t t0 = hb_time_now_ns();
        while (is_hibard(pid)) {
            if (hb_time_now_ns() - t0 > 5000000000ull)
                kill(pid, SIGKILL);
            nap_ms(10);
        }
    }
    const char *sfx[] = {"sock", "pid", "port", "port.tmp", "pid.tmp", "ranks"};
    for (size_t k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++) {
        char path[400];
        snprintf(path, sizeof(path), "%s/%s.%s", cfg->run_dir, cfg->nodes[node].name, sfx[k]);
        (void)unlink_quiet(path);
    }
    int rc = spawn(cfg, node, o, hbd_emu_hibard_path());
    if (rc != 0)
        return rc;
    /* back when it is ready and every other running daemon holds it up at its incarnation */
    uint64_t t0 = hb_time_now_ns(), limit = (uint64_t)(o->timeout_ms > 0 ? o->timeout_ms : 30000);
    for (;;) {
        char path[400], reply[512], ready[8] = "", inc[40] = "";
        hbd_client_sock_path(cfg, node, path, sizeof(path));
        int ok = hbd_client_cmd(path, "status", reply, sizeof(reply), 1000) == 0 &&
                 hbd_client_field(reply, "ready", ready, sizeof(ready)) == 0 &&
                 hbd_client_field(reply, "inc", inc, sizeof(inc)) == 0 && strcmp(ready, "1") == 0;
        for (uint32_t j = 0; ok && j < cfg->n_nodes; j++)
            if (j != node && live_pid(cfg, j) > 0)
                ok = seen_up(cfg, j, node, inc);
        if (ok)
            return 0;
        if ((hb_time_now_ns() - t0) / 1000000ull > limit) {
            fprintf(stderr, "hibar-cluster: node %s did not rejoin in %llu ms; its log ends:\n",
                    cfg->nodes[node].name, (unsigned long long)limit);
            tail_log(cfg, node);
            return HIBAR_ERR_TIMEOUT;
        }
        nap_ms(50);
    }
}

int hbd_emu_down(const hb_cfg_t *cfg, const hbd_emu_opts_t *o)
{
    uint32_t n = cfg->n_nodes;
    int rc = 0;
    pid_t *pid = calloc(n, sizeof(pid_t));
    if (pid == NULL)
        return HIBAR_ERR_NOMEM;
    /* ask politely, all at once */
    int *fd = malloc(sizeof(int) * n);
    for (uint32_t i = 0; i < n; i++) {
        char path[400];
        pid[i] = live_pid(cfg, i);
        if (fd != NULL)
            fd[i] = -1;
        if (pid[i] <= 0 || fd == NULL)
            continue;
        hbd_client_sock_path(cfg, i, path, sizeof(path));
        if (hbd_client_connect(path, &fd[i]) != 0 || hbd_client_send(fd[i], "shutdown") != 0)
            kill(pid[i], SIGTERM);
    }
    /* wait up to 5 s, then SIGTERM at 5 s, SIGKILL at 8 s */
    uint64_t t0 = hb_time_now_ns();
    int termed = 0;
    for (;;) {
        uint32_t alive = 0;
        /* the pids found at the start: a daemon removes its pid file before it has exited */
        for (uint32_t i = 0; i < n; i++)
            if (pid[i] > 0 && is_hibard(pid[i]))
                alive++;
            else
                pid[i] = -1;
        if (alive == 0)
            break;
        double s = (double)(hb_time_now_ns() - t0) / 1e9;
        if (s > 5 && !termed) {
            termed = 1;
            for (uint32_t i = 0; i < n; i++)
                if (pid[i] > 0)
                    kill(pid[i], SIGTERM);
        }
        if (s > 8) {
            for (uint32_t i = 0; i < n; i++)
                if (pid[i] > 0) {
                    hb_log_warn("node %s (pid %d) did not stop: killed", cfg->nodes[i].name,
                                (int)pid[i]);
                    kill(pid[i], SIGKILL);
                }
            nap_ms(100);
            break;
        }
        nap_ms(10);
    }
    if (fd != NULL)
        for (uint32_t i = 0; i < n; i++)
            if (fd[i] >= 0)
                close(fd[i]);
    free(fd);
    free(pid);
    /* files a crashed daemon leaves behind */
    for (uint32_t i = 0; i < n; i++) {
        char path[400];
        const char *sfx[] = {"sock", "pid", "port", "port.tmp", "pid.tmp", "ranks", "log"};
        for (size_t k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++) {
            if (strcmp(sfx[k], "log") == 0 && o != NULL && o->keep_logs)
                continue;
            snprintf(path, sizeof(path), "%s/%s.%s", cfg->run_dir, cfg->nodes[i].name, sfx[k]);
            if (unlink_quiet(path) != 0)
                rc = HIBAR_ERR_IO;
        }
    }
    /* each daemon's PMIx server directory (PMIX_SERVER_TMPDIR), which a crash leaves behind */
    for (uint32_t i = 0; i < n; i++) {
        char path[400];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s.pmix", cfg->run_dir, cfg->nodes[i].name);
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (cfg->key_file == NULL) {
        char path[400];
        snprintf(path, sizeof(path), "%s/cluster.key", cfg->run_dir);
        if (unlink_quiet(path) != 0)
            rc = HIBAR_ERR_IO;
    }
    /* chassis barrier segments (hwbarrier shm: /dev/shm/hibar-<uid>-<cluster>-c<N>) and the
     * sockets of their nodes' event-loop fds (...-c<N>-p<port>) */
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "hibar-%u-%s-c", (unsigned)getuid(), cfg->cluster);
    DIR *dir = opendir("/dev/shm");
    if (dir != NULL) {
        struct dirent *e;
        size_t pl = strlen(prefix);
        while ((e = readdir(dir)) != NULL) {
            const char *rest = e->d_name + pl;
            size_t nd = strspn(rest, "0123456789");
            if (strncmp(e->d_name, prefix, pl) != 0 || nd == 0 ||
                (rest[nd] != '\0' &&
                 (strncmp(rest + nd, "-p", 2) != 0 || rest[nd + 2] == '\0' ||
                  strspn(rest + nd + 2, "0123456789") != strlen(rest + nd + 2))))
                continue;
            char path[400];
            snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
            if (unlink_quiet(path) != 0)
                rc = HIBAR_ERR_IO;
        }
        closedir(dir);
    }
    if (rmdir(cfg->run_dir) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
        hb_log_warn("cannot remove run dir %s: %m", cfg->run_dir);
    return rc;
}
