/* hbd_client.c: control-socket client of hibard: one-shot commands and cluster-wide barrier rounds.
 */
#include "hb_config.h"
#include "hbd_client.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hb_log.h"
#include "hb_time.h"
#include "hibar.h"

int hbd_client_connect(const char *path, int *fd_p)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return HIBAR_ERR_INVAL;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return HIBAR_ERR_IO;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int e = errno;
        close(fd);
        return e == ENOENT ? HIBAR_ERR_NOT_FOUND
                           : (e == ECONNREFUSED ? HIBAR_ERR_UNAVAIL : HIBAR_ERR_IO);
    }
    *fd_p = fd;
    return 0;
}

int hbd_client_send(int fd, const char *line)
{
    char buf[600];
    int n = snprintf(buf, sizeof(buf), "%s\n", line);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return HIBAR_ERR_INVAL;
    return send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n ? 0 : HIBAR_ERR_IO;
}

int hbd_client_recv(int fd, char *buf, size_t cap, int timeout_ms)
{
    uint64_t deadline =
        timeout_ms < 0 ? UINT64_MAX : hb_time_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        /* peek, then take exactly one line: no state is kept between calls */
        ssize_t r = recv(fd, buf, cap - 1, MSG_PEEK | MSG_DONTWAIT);
        if (r > 0) {
            char *nl = memchr(buf, '\n', (size_t)r);
            if (nl != NULL) {
                size_t len = (size_t)(nl - buf) + 1;
                if (recv(fd, buf, len, 0) != (ssize_t)len)
                    return HIBAR_ERR_IO;
                buf[len - 1] = '\0';
                return 0;
            }
            if ((size_t)r == cap - 1)
                return HIBAR_ERR_TRUNCATED;
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            return HIBAR_ERR_IO;
        }
        uint64_t now = hb_time_now_ns();
        if (now >= deadline)
            return HIBAR_ERR_TIMEOUT;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = deadline == UINT64_MAX ? -1 : (int)((deadline - now) / 1000000ull) + 1;
        poll(&p, 1, r > 0 ? (ms < 1 ? ms : 1) : ms); /* partial line: come back soon */
    }
}

int hbd_client_cmd(const char *path, const char *cmd, char *reply, size_t cap, int timeout_ms)
{
    int fd, rc = hbd_client_connect(path, &fd);
    if (rc != 0)
        return rc;
    rc = hbd_client_send(fd, cmd);
    if (rc == 0)
        rc = hbd_client_recv(fd, reply, cap, timeout_ms);
    close(fd);
    return rc;
}

int hbd_client_field(const char *reply, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    for (const char *p = reply; (p = strstr(p, key)) != NULL; p += kl) {
        if ((p == reply || p[-1] == ' ') && p[kl] == '=') {
            size_t n = strcspn(p + kl + 1, " ");
            if (n >= cap)
                n = cap - 1;
            memcpy(out, p + kl + 1, n);
            out[n] = '\0';
            return 0;
        }
    }
    return HIBAR_ERR_NOT_FOUND;
}

void hbd_client_sock_path(const hb_cfg_t *cfg, uint32_t node, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s.sock", cfg->run_dir, cfg->nodes[node].name);
}

void hbd_client_pid_path(const hb_cfg_t *cfg, uint32_t node, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s.pid", cfg->run_dir, cfg->nodes[node].name);
}

pid_t hbd_client_pid(const hb_cfg_t *cfg, uint32_t node)
{
    char path[400], buf[32];
    hbd_client_pid_path(cfg, node, path, sizeof(path));
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long pid = -1;
    if (fgets(buf, sizeof(buf), f) != NULL)
        pid = strtol(buf, NULL, 10);
    fclose(f);
    return pid > 0 ? (pid_t)pid : -1;
}

static void nap_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int hbd_cluster_open(const hb_cfg_t *cfg, int timeout_ms, int allow_missing, hbd_cluster_t **cl_p)
{
    hbd_cluster_t *cl = calloc(1, sizeof(*cl));
    if (cl == NULL || (cl->fd = malloc(sizeof(int) * cfg->n_nodes)) == NULL) {
        free(cl);
        return HIBAR_ERR_NOMEM;
    }
    cl->cfg = cfg;
    cl->n = cfg->n_nodes;
    for (uint32_t i = 0; i < cl->n; i++)
        cl->fd[i] = -1;
    uint64_t deadline = hb_time_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
    int rc = 0;
    for (uint32_t i = 0; i < cl->n && rc == 0; i++) {
        char path[400], reply[512], ready[8];
        hbd_client_sock_path(cfg, i, path, sizeof(path));
        for (;;) {
            if (cl->fd[i] < 0)
                rc = hbd_client_connect(path, &cl->fd[i]);
            if (allow_missing && (rc == HIBAR_ERR_NOT_FOUND || rc == HIBAR_ERR_UNAVAIL)) {
                rc = 0;
                cl->fd[i] = -1;
                break;
            }
            if (rc == 0 && (rc = hbd_client_send(cl->fd[i], "status")) == 0 &&
                (rc = hbd_client_recv(cl->fd[i], reply, sizeof(reply), 5000)) == 0) {
                if (hbd_client_field(reply, "ready", ready, sizeof(ready)) == 0 &&
                    strcmp(ready, "1") == 0)
                    break;
                rc = HIBAR_ERR_NOT_INIT;
            }
            if (rc != 0 && rc != HIBAR_ERR_NOT_INIT && cl->fd[i] >= 0) {
                close(cl->fd[i]);
                cl->fd[i] = -1;
            }
            if (hb_time_now_ns() >= deadline) {
                hb_log_error("daemon of node %s (%s) not ready: %s", cfg->nodes[i].name, path,
                             hibar_strerror(rc));
                break;
            }
            rc = 0;
            nap_ms(20);
        }
    }
    if (rc != 0) {
        hbd_cluster_close(cl);
        return rc;
    }
    *cl_p = cl;
    return 0;
}

void hbd_cluster_close(hbd_cluster_t *cl)
{
    if (cl == NULL)
        return;
    for (uint32_t i = 0; i < cl->n; i++)
        if (cl->fd[i] >= 0)
            close(cl->fd[i]);
    free(cl->fd);
    free(cl);
}

int hbd_cluster_next_coll(hbd_cluster_t *cl, uint64_t *coll_p)
{
    char reply[512], v[32];
    uint64_t next = 0;
    uint32_t asked = 0;
    /* every reachable daemon's: one that a failed barrier never reached (a late or stopped
     * node) still names that barrier's id, which the others hold until its timeout (BUSY) */
    for (uint32_t i = 0; i < cl->n; i++) {
        if (cl->fd[i] < 0)
            continue;
        int rc = hbd_client_send(cl->fd[i], "status");
        if (rc == 0)
            rc = hbd_client_recv(cl->fd[i], reply, sizeof(reply), 5000);
        if (rc == 0 && hbd_client_field(reply, "next_coll", v, sizeof(v)) != 0)
            rc = HIBAR_ERR_PROTO;
        if (rc != 0)
            return rc;
        uint64_t c = strtoull(v, NULL, 10);
        next = c > next ? c : next;
        asked++;
    }
    if (asked == 0)
        return HIBAR_ERR_NOT_FOUND;
    *coll_p = next;
    return 0;
}

/* Node ids "a-b.c" from f on: set in set[n]. */
static void id_ranges(const char *f, uint8_t *set, uint32_t n)
{
    while (f != NULL && *f >= '0' && *f <= '9') {
        char *end;
        unsigned long a = strtoul(f, &end, 10), b = a;
        if (*end == '-')
            b = strtoul(end + 1, &end, 10);
        for (unsigned long i = a; i <= b && i < n; i++)
            set[i] = 1;
        f = *end == '.' ? end + 1 : NULL;
    }
}

/* The reply to "jobs" at node i's daemon: 0 when it is the root's list ("ok jobs="), NOT_FOUND
 * (no daemon of it here), PROTO (another answer, kept in reply) or the client's error. */
static int jobs_at(const hb_cfg_t *cfg, uint32_t i, char *reply, size_t cap)
{
    char path[400];
    if (i >= cfg->n_nodes)
        return HIBAR_ERR_NOT_FOUND;
    hbd_client_sock_path(cfg, i, path, sizeof(path));
    if (access(path, F_OK) != 0)
        return HIBAR_ERR_NOT_FOUND;
    int rc = hbd_client_cmd(path, "jobs", reply, cap, 5000);
    if (rc == 0 && strncmp(reply, "ok jobs=", 8) != 0)
        rc = HIBAR_ERR_PROTO;
    return rc;
}

int hbd_cluster_jobs(const hb_cfg_t *cfg, char **reply_p, uint8_t *busy, uint8_t *lost)
{
    hb_topo_spec_t ts;
    if (hb_cfg_topo_spec(cfg, &ts) != 0 || ts.n_chassis == 0)
        return HIBAR_ERR_INVAL;
    uint32_t root = ts.chassis_nodes[ts.chassis_start[0]];
    size_t cap = 64u << 10;
    char *reply = malloc(cap);
    if (reply == NULL)
        return HIBAR_ERR_NOMEM;
    int rc = jobs_at(cfg, root, reply, cap);
    /* the configured root is lost: any daemon here names the root of the live nodes */
    for (uint32_t i = 0; rc != 0 && i < cfg->n_nodes; i++) {
        const char *at;
        int r = i == root ? HIBAR_ERR_NOT_FOUND : jobs_at(cfg, i, reply, cap);
        if (r == 0)
            rc = 0;
        else if (r == HIBAR_ERR_PROTO && (at = strstr(reply, ", id ")) != NULL)
            rc = jobs_at(cfg, (uint32_t)strtoul(at + 5, NULL, 10), reply, cap);
    }
    if (rc != 0) {
        free(reply);
        return rc;
    }
    /* " job=NUM:ID:ORIGIN:RANKS:a-b.c:AGE:BASE+N": the fifth field */
    for (const char *t = strstr(reply, " job="); busy != NULL && t != NULL;
         t = strstr(t + 1, " job=")) {
        const char *f = t + 5;
        for (int k = 0; k < 4 && f != NULL; k++)
            f = strchr(f, ':') != NULL ? strchr(f, ':') + 1 : NULL;
        id_ranges(f, busy, cfg->n_nodes);
    }
    const char *l = strstr(reply, " lost=");
    if (lost != NULL && l != NULL)
        id_ranges(l + 6, lost, cfg->n_nodes);
    *reply_p = reply;
    return 0;
}

void hbd_drive_opts_init(hbd_drive_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->late_node = UINT32_MAX;
    o->kill_node = UINT32_MAX;
    o->kill_sig = SIGKILL;
    o->timeout_ms = 60000;
}

/* Parse "ok barrier <id> 0 <us> <t_arrive> <t_done>" / "err barrier <id> <status> ...":
 * status or PROTO; the stamps are 0 when absent. */
static int parse_barrier_reply(const char *line, uint64_t coll, int *status_p, uint64_t *ta_p,
                               uint64_t *tc_p)
{
    char word[8], kind[16];
    unsigned long long id, ta = 0, tc = 0;
    double us;
    int st;
    if (sscanf(line, "%7s %15s %llu %d", word, kind, &id, &st) != 4 ||
        strcmp(kind, "barrier") != 0 || id != coll)
        return HIBAR_ERR_PROTO;
    if (st != 0 || sscanf(line, "%*s %*s %*u %*d %lf %llu %llu", &us, &ta, &tc) != 3)
        ta = tc = 0;
    *status_p = st;
    *ta_p = ta;
    *tc_p = tc;
    return 0;
}

int hbd_cluster_barrier(hbd_cluster_t *cl, uint64_t coll, const hbd_drive_opts_t *o,
                        hbd_drive_result_t *r)
{
    char cmd[64], line[512];
    uint32_t n = cl->n, waiting = 0;
    struct pollfd *pf = calloc(n, sizeof(*pf));
    uint8_t *got = calloc(n, 1);
    int rc = 0;
    if (pf == NULL || got == NULL) {
        free(pf);
        free(got);
        return HIBAR_ERR_NOMEM;
    }
    memset(r, 0, sizeof(*r));
    r->all_err_same = 1;
    snprintf(cmd, sizeof(cmd), "barrier %" PRIu64, coll);
    pid_t kill_pid = o->kill_node < n ? hbd_client_pid(cl->cfg, o->kill_node) : -1;
    uint64_t t0 = hb_time_now_ns(), t_late = 0, t_kill = 0, ta_max = 0, tc_max = 0,
             ta_min = UINT64_MAX;
    int stamps = 1;
    for (uint32_t i = 0; i < n; i++) {
        pf[i].fd = -1;
        pf[i].events = POLLIN;
        if (i == o->kill_node || i == o->late_node || cl->fd[i] < 0) {
            if (cl->fd[i] < 0)
                r->n_missing++;
            continue;
        }
        if ((rc = hbd_client_send(cl->fd[i], cmd)) != 0) {
            hb_log_error("cannot ask node %s for barrier %" PRIu64, cl->cfg->nodes[i].name, coll);
            goto out;
        }
        pf[i].fd = cl->fd[i];
        waiting++;
    }
    int late_pending = o->late_node < n, kill_pending = o->kill_node < n;
    uint64_t deadline = t0 + (uint64_t)o->timeout_ms * 1000000ull;
    while (waiting > 0 || late_pending) {
        uint64_t now = hb_time_now_ns();
        if (late_pending && now >= t0 + (uint64_t)o->late_ms * 1000000ull) {
            late_pending = 0;
            t_late = hb_time_now_ns();
            if ((rc = hbd_client_send(cl->fd[o->late_node], cmd)) != 0)
                goto out;
            pf[o->late_node].fd = cl->fd[o->late_node];
            waiting++;
        }
        if (kill_pending && now >= t0 + (uint64_t)o->kill_ms * 1000000ull) {
            kill_pending = 0;
            t_kill = hb_time_now_ns();
            if (kill_pid > 0)
                kill(kill_pid, o->kill_sig);
            else
                hb_log_warn("no pid for node %s: nothing killed",
                            cl->cfg->nodes[o->kill_node].name);
        }
        if (now >= deadline) {
            rc = HIBAR_ERR_TIMEOUT;
            break;
        }
        int ms = (int)((deadline - now) / 1000000ull) + 1;
        if (late_pending) {
            uint64_t at = t0 + (uint64_t)o->late_ms * 1000000ull;
            ms = at > now ? (int)((at - now) / 1000000ull) + 1 : 0;
        }
        if (kill_pending) {
            uint64_t at = t0 + (uint64_t)o->kill_ms * 1000000ull;
            int km = at > now ? (int)((at - now) / 1000000ull) + 1 : 0;
            ms = km < ms ? km : ms;
        }
        int np = poll(pf, n, ms);
        if (np < 0 && errno != EINTR) {
            rc = HIBAR_ERR_IO;
            break;
        }
        for (uint32_t i = 0; i < n && np > 0; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int st;
            uint64_t ta = 0, tc = 0;
            int rr = hbd_client_recv(pf[i].fd, line, sizeof(line), 0);
            if (rr == HIBAR_ERR_TIMEOUT)
                continue; /* partial line */
            uint64_t t = hb_time_now_ns();
            pf[i].fd = -1;
            waiting--;
            got[i] = 1;
            if (rr != 0) {
                st = HIBAR_ERR_PEER_LOST; /* the daemon went away */
            } else if (parse_barrier_reply(line, coll, &st, &ta, &tc) != 0) {
                hb_log_error("node %s: unexpected reply '%s'", cl->cfg->nodes[i].name, line);
                st = HIBAR_ERR_PROTO;
            }
            if (r->n_ok + r->n_err == 0)
                r->first_us = (double)(t - t0) / 1e3;
            r->total_us = (double)(t - t0) / 1e3;
            if (t_late && (r->after_late_us == 0))
                r->after_late_us = (double)(t - t_late) / 1e3;
            if (t_kill)
                r->after_kill_us = (double)(t - t_kill) / 1e3;
            if (ta == 0 || tc == 0)
                stamps = 0;
            ta_max = ta > ta_max ? ta : ta_max;
            ta_min = ta < ta_min ? ta : ta_min;
            tc_max = tc > tc_max ? tc : tc_max;
            if (st == 0) {
                r->n_ok++;
                r->all_err_same = 0;
            } else {
                if (r->first_err == 0)
                    r->first_err = st;
                else if (st != r->first_err)
                    r->all_err_same = 0;
                r->n_err++;
            }
            if (rr != 0) {
                close(cl->fd[i]);
                cl->fd[i] = -1;
            }
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (pf[i].fd >= 0)
            r->n_missing++;
    if (stamps && r->n_missing == 0 && r->n_ok > 0 && tc_max > ta_max) {
        r->proto_us = (double)(tc_max - ta_max) / 1e3;
        r->spread_us = (double)(ta_max - ta_min) / 1e3;
    }
    if (o->late_node < n && t_late == 0)
        r->n_missing++;
out:
    free(pf);
    free(got);
    return rc;
}

int hbd_cluster_all(hbd_cluster_t *cl, const uint32_t *nodes, uint32_t n, const char *cmd,
                    char (*replies)[512], int timeout_ms)
{
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        replies[i][0] = '\0';
        if (nodes[i] >= cl->n || cl->fd[nodes[i]] < 0)
            rc = HIBAR_ERR_NOT_FOUND;
        else
            rc = hbd_client_send(cl->fd[nodes[i]], cmd);
    }
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = hbd_client_recv(cl->fd[nodes[i]], replies[i], 512, timeout_ms);
    return rc;
}
