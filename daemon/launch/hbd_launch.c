/* hbd_launch.c: hibard's local launcher: spawns a job's ranks on this node, forwards their output
 * and exit statuses, stops the job when a rank fails. */
#include "hb_config.h"
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hb_log.h"
#include "hb_time.h"
#include "hbd_barrier.h"
#include "hbd_launch.h"
#include "hbd_pmix.h"
#include "hbd_ranks.h"
#include "hbd_timer.h"
#include "hb_status.h"

/*
 * "launch SPEC" on the control socket: the daemon takes the connection over and from then on
 * talks to hibar-run on it, one line per event (text escaped: '\\' and bytes < 0x20 or 0x7f
 * as \xHH):
 *   ok launch <nspace> <local ranks>     every local rank was spawned
 *   err <status> <text>                  the launch failed (nothing runs), then close
 *   o <rank> <1|2> <text>                one line of the rank's stdout (1) or stderr (2)
 *   p <rank> <1|2> <text>                output without its newline (long line, or at EOF)
 *   a <rank> <status> <text>             the rank called PMIx_Abort
 *   x <rank> <code> <text>               the rank ended: exit code >= 0, or -signal; text
 *                                        says why it counts as a failure, or "ok"; a
 *                                        non-zero exit once the job here had failed (another
 *                                        rank's end, a failed epoch elsewhere) says "... after
 *                                        the job failed": hibar-run's status is the cause's
 *   done <local ranks> <failed>          every local rank ended; the daemon closes
 * hibar-run may send "kill" (stop the job). If it goes away the job is stopped.
 * Flow control: while more than HBD_OUT_QUEUE_MAX bytes of lines wait for the connection
 * (hibar-run, or the relay, reading slowly), the ranks' pipes are not read; reading resumes
 * once that is down to HBD_OUT_QUEUE_LOW. A rank that writes meanwhile blocks in write(2)
 * once its pipe is full, as under a slow terminal: memory stays bounded, no line is lost.
 * A rank fails when it exits non-zero, is killed by a signal, calls PMIx_Abort, or exits 0
 * after PMIx_Init without PMIx_Finalize; the daemon then stops the job's other local ranks
 * (SIGTERM to each rank's process group, SIGKILL HBD_KILL_GRACE_MS later) and hibar-run
 * stops the other nodes.
 *
 * A rank that has started but not yet connected to the PMIx server gets its SIGTERM once it
 * has connected, or HBD_KILL_CONNECT_WAIT_MS after the stop at the latest: libpmix 4.2.2
 * wedges its server thread for good (a lock left held in its error path) when a client dies
 * in the middle of its connection handshake (seen in run_fail.sh, a rank stopped inside
 * PMIx_Init): the job's PMIx step then cannot finalize (bounded, it exits after 2 s), later
 * jobs get steps of their own. A program that never connects (no PMIx) is stopped after the
 * wait.
 */
#define HBD_KILL_GRACE_MS 2000
#define HBD_KILL_CONNECT_WAIT_MS 2000
#define HBD_KILL_POLL_MS 10
#define HBD_OUT_QUEUE_MAX (1u << 20)   /* lines queued for the connection: pipes pause above */
#define HBD_OUT_QUEUE_LOW (256u << 10) /* ... and are read again at or below */

static void job_finish_check(hbd_job_t *j);

static void job_send(hbd_job_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_send(hbd_job_t *j, const char *fmt, ...)
{
    va_list ap;
    if (j->bev == NULL)
        return;
    va_start(ap, fmt);
    evbuffer_add_vprintf(bufferevent_get_output(j->bev), fmt, ap);
    va_end(ap);
}

/* Escaped text then the newline. */
static void job_send_text(hbd_job_t *j, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char buf[4 * HBD_JOB_LINE + 2];
    size_t o = 0;
    if (j->bev == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (o + 5 > sizeof(buf)) {
            evbuffer_add(bufferevent_get_output(j->bev), buf, o);
            o = 0;
        }
        if (c == '\\' || c < 0x20 || c == 0x7f) {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '\n';
    evbuffer_add(bufferevent_get_output(j->bev), buf, o);
}

/* The launcher's part of j ends here (in the reverse of its start): its engine closes, its
 * ranks no longer count, its PMIx step and segment close, its pipes, timer and connection
 * go; then the job object, which other parts (the relay) may still hold. */
static void job_free(hbd_job_t *j)
{
    if (j->engine)
        hbd_barrier_job_close(j->d, j->spec->jobno);
    j->engine = 0;
    hbd_job_done(j);
    hbd_pmix_job_register_cancel(j);
    hbd_pmix_job_deregister(j);
    hbd_ranks_job_close(j);
    for (uint32_t k = 0; k < j->n_local; k++)
        for (int s = 0; s < 2; s++) {
            if (j->local[k].ev_out[s] != NULL)
                event_free(j->local[k].ev_out[s]);
            if (j->local[k].out_fd[s] >= 0)
                close(j->local[k].out_fd[s]);
        }
    hbd_timer_free(j->kill_timer);
    if (j->bev != NULL)
        bufferevent_free(j->bev);
    else if (j->fd >= 0)
        close(j->fd);
    free(j->local);
    hbd_job_spec_free(j->spec);
    /* clean for the object's other parts (and a later part of the launcher's, if any) */
    j->spec = NULL;
    j->local = NULL;
    j->n_local = j->n_running = 0;
    j->registered = j->killing = j->failed = j->done_sent = j->out_paused = 0;
    j->fd = -1;
    j->bev = NULL;
    j->kill_timer = NULL;
    j->kill_ns = 0;
    j->launched = 0;
    hbd_job_release(j);
}

static void kill_all(hbd_job_t *j)
{
    for (uint32_t k = 0; k < j->n_local; k++)
        if (j->local[k].pid > 0) {
            kill(-j->local[k].pid, SIGKILL);
            kill(j->local[k].pid, SIGKILL);
        }
}

static void term_all(hbd_job_t *j)
{
    int wait = j->kill_timer != NULL &&
               hb_time_now_ns() < j->kill_ns + HBD_KILL_CONNECT_WAIT_MS * 1000000ull,
        waiting = 0;
    for (uint32_t k = 0; k < j->n_local; k++) {
        hbd_rank_t *r = &j->local[k];
        if (r->pid <= 0 || r->termed)
            continue;
        if (wait && !r->connected) {
            waiting = 1; /* perhaps inside PMIx's connection handshake: see above */
            continue;
        }
        r->termed = 1;
        kill(-r->pid, SIGTERM);
        kill(r->pid, SIGTERM);
    }
    if (j->kill_timer == NULL)
        return; /* no timer (out of memory): called once, without waiting */
    if (!waiting)
        j->killing = 2; /* every rank had its SIGTERM: SIGKILL next */
    hbd_timer_arm(j->kill_timer, (waiting ? HBD_KILL_POLL_MS : HBD_KILL_GRACE_MS) * 1000ull, 1);
}

/* The job's stop timer: SIGTERM (deferred while ranks connect), then SIGKILL. */
static void kill_timer_cb(hbd_t *d, void *arg)
{
    hbd_job_t *j = arg;
    (void)d;
    if (j->killing == 2)
        kill_all(j);
    else
        term_all(j);
}

void hbd_launch_kill(hbd_job_t *j, const char *why)
{
    /* the ranks waiting in a fence get its error first; SIGTERM comes a moment later */
    if (j->killing)
        return;
    j->killing = 1;
    j->kill_ns = hb_time_now_ns();
    hb_log_info("job %s: stopping its ranks on this node (%s)", j->nspace, why);
    hbd_pmix_job_cancel_fences(j);
    if (j->kill_timer == NULL)
        j->kill_timer = hbd_timer_new(j->d, kill_timer_cb, j);
    if (j->kill_timer != NULL)
        hbd_timer_arm(j->kill_timer, 50000, 1);
    else
        term_all(j);
}

/* A rank called PMIx_Abort (the job object's rank_abort). */
static void on_abort(hbd_rank_t *r, int status, const char *msg)
{
    hbd_job_t *j = r->job;
    r->aborted = 1;
    j->failed = 1;
    job_send(j, "a %" PRIu32 " %d ", r->rank, status);
    job_send_text(j, msg, strlen(msg));
    hbd_launch_kill(j, "a rank called PMIx_Abort");
}

/* The rank is reaped and both its pipes are at EOF: report it once. */
static void rank_check_done(hbd_rank_t *r)
{
    hbd_job_t *j = r->job;
    if (r->pid != -1 || r->out_fd[0] >= 0 || r->out_fd[1] >= 0)
        return;
    r->pid = -2; /* reported */
    int code = WIFEXITED(r->wstatus)     ? WEXITSTATUS(r->wstatus)
               : WIFSIGNALED(r->wstatus) ? -WTERMSIG(r->wstatus)
                                         : -1;
    const char *why = "ok";
    if (r->aborted)
        why = "called PMIx_Abort";
    else if (code > 0)
        why = hbd_ranks_broken_before(j, r->local_rank) ? HBD_JOB_WHY_AFTER
                                                        : "exited with a non-zero status";
    else if (code < 0)
        why = j->killing ? HBD_JOB_WHY_STOPPED : "killed by a signal";
    else if (r->connected && !r->finalized)
        why = "exited without calling PMIx_Finalize";
    job_send(j, "x %" PRIu32 " %d %s\n", r->rank, code, why);
    if (strcmp(why, "ok") != 0) {
        hbd_ranks_rank_lost(j, r->local_rank);
        j->failed = 1;
        char b[96];
        snprintf(b, sizeof(b), "rank %" PRIu32 " %s", r->rank, why);
        hbd_launch_kill(j, b);
    }
    job_finish_check(j);
}

/* Read the job's rank pipes again (on != 0) or stop reading them (flow control). */
static void out_pipes(hbd_job_t *j, int on)
{
    if (j->out_paused == !on)
        return;
    j->out_paused = !on;
    for (uint32_t k = 0; k < j->n_local; k++)
        for (int s = 0; s < 2; s++)
            if (j->local[k].ev_out[s] != NULL) {
                if (on)
                    event_add(j->local[k].ev_out[s], NULL);
                else
                    event_del(j->local[k].ev_out[s]);
            }
}

/* The connection took some lines and at most HBD_OUT_QUEUE_LOW bytes wait (watermark). */
static void job_write_cb(struct bufferevent *bev, void *arg)
{
    hbd_job_t *j = arg;
    if (j->done_sent && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        job_free(j); /* the last line is out */
        return;
    }
    out_pipes(j, 1);
}

static void job_finish_check(hbd_job_t *j)
{
    uint32_t failed = 0;
    for (uint32_t k = 0; k < j->n_local; k++) {
        if (j->local[k].pid != -2)
            return;
        failed += j->local[k].aborted ||
                  (WIFEXITED(j->local[k].wstatus) ? WEXITSTATUS(j->local[k].wstatus) != 0 : 1);
    }
    hb_log_info("job %s: every local rank ended (%" PRIu32 " failed)", j->nspace, failed);
    if (j->bev == NULL) {
        job_free(j);
        return;
    }
    job_send(j, "done %" PRIu32 " %" PRIu32 "\n", j->n_local, failed);
    hbd_job_done(j);
    bufferevent_disable(j->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(j->bev)) == 0)
        job_free(j);
}

static void out_cb(evutil_socket_t fd, short what, void *arg)
{
    hbd_rank_t *r = arg;
    hbd_job_t *j = r->job;
    int s = fd == r->out_fd[0] ? 0 : 1;
    char buf[16384];
    (void)what;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        if (r->part_len[s] > 0) {
            job_send(j, "p %" PRIu32 " %d ", r->rank, s + 1);
            job_send_text(j, r->part[s], r->part_len[s]);
            r->part_len[s] = 0;
        }
        event_free(r->ev_out[s]);
        r->ev_out[s] = NULL;
        close(fd);
        r->out_fd[s] = -1;
        rank_check_done(r);
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || r->part_len[s] == HBD_JOB_LINE) {
            job_send(j, "%c %" PRIu32 " %d ", buf[i] == '\n' ? 'o' : 'p', r->rank, s + 1);
            job_send_text(j, r->part[s], r->part_len[s]);
            r->part_len[s] = 0;
            if (buf[i] == '\n')
                continue;
        }
        r->part[s][r->part_len[s]++] = buf[i];
    }
    if (j->bev != NULL && evbuffer_get_length(bufferevent_get_output(j->bev)) > HBD_OUT_QUEUE_MAX)
        out_pipes(j, 0); /* job_write_cb resumes */
}

/* A child may have exited (SIGCHLD): reap every one of ours. */
static void reap(hbd_t *d)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            return;
        for (hbd_job_t *j = d->jobs.head; j != NULL; j = j->next)
            for (uint32_t k = 0; k < j->n_local; k++)
                if (j->local[k].pid == pid) {
                    j->local[k].pid = -1;
                    j->local[k].wstatus = st;
                    hb_log_debug("job %s rank %" PRIu32 ": pid %d ended (status %#x)", j->nspace,
                                 j->local[k].rank, (int)pid, st);
                    rank_check_done(&j->local[k]); /* may free j: leave both loops */
                    goto next;
                }
        (void)hbd_pmix_reaped(d, pid, st); /* a job's PMIx step */
    next:;
    }
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    hbd_job_t *j = arg;
    char *line;
    size_t n;
    while ((line = evbuffer_readln(bufferevent_get_input(bev), &n, EVBUFFER_EOL_LF)) != NULL) {
        if (strcmp(line, "kill") == 0)
            hbd_launch_kill(j, "hibar-run asked");
        else
            job_send(j, "err %d unknown command\n", HB_ERR_INVAL);
        free(line);
    }
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    hbd_job_t *j = arg;
    (void)bev;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    bufferevent_free(j->bev);
    j->bev = NULL;
    j->fd = -1;
    if (j->done_sent) {
        job_free(j);
        return;
    }
    out_pipes(j, 1); /* nobody reads: what the stopped ranks still write goes nowhere */
    hbd_launch_kill(j, "hibar-run went away");
}

/*
 * posix_spawn, not fork + exec: glibc spawns with clone(CLONE_VM | CLONE_VFORK), so the
 * daemon's address space is never shared copy-on-write with the child. After a fork every
 * page the daemon writes next takes a write-protect fault, once: the job's first fences paid
 * for all of them on their critical path (8 faults for each 32 KiB copy of the root's release,
 * 10-20 us each on a virtual machine, and at each fault the scheduler could take the CPU). The
 * child: its own process group, no blocked signals, default dispositions (SIGPIPE is ignored
 * here), stdin /dev/null, stdout and stderr the pipes, the job's working directory. A failure
 * to change directory or to execute is reported here, with its reason in why.
 */
/*
 * Start one rank: vfork, then in the child only async-signal-safe calls before execve: its own
 * process group, SIGKILL when this daemon dies (PR_SET_PDEATHSIG: a rank never outlives its
 * daemon, even a SIGKILLed one; kept across execve), stdin from /dev/null, stdout and stderr
 * into the pipes, the working directory, every signal back to its default and unblocked. The
 * parent blocks every signal around the vfork so that none of its handlers runs in the child.
 * 0 and *pid_p, or the errno of what failed (the child reports it through shared memory).
 */
static int spawn_rank(const hbd_job_spec_t *s, char **env, int in_fd, int out_fd, int err_fd,
                      pid_t *pid_p)
{
    volatile int child_err = 0, step = 0;
    sigset_t all, old;
    pid_t parent = getpid();
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = vfork();
    if (pid == 0) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                (void)sigaction(sig, &dfl, NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            step = 1;
        else if (setpgid(0, 0) != 0)
            step = 2;
        else if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
            step = 3;
        else if (s->cwd != NULL && chdir(s->cwd) != 0)
            step = 4;
        if (step == 0) {
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            execve(s->argv[0], s->argv, env);
            step = 5;
        }
        child_err = errno != 0 ? errno : EINVAL;
        _exit(127);
    }
    int e = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        return e;
    if (child_err != 0) { /* it exited: reap it here, the launcher never knew it */
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        return step == 4 ? -child_err : child_err;
    }
    *pid_p = pid;
    return 0;
}

static int rank_spawn(hbd_job_t *j, uint32_t lr, int devnull, char *why, size_t cap)
{
    hbd_rank_t *r = &j->local[lr];
    const hbd_job_spec_t *s = j->spec;
    int p[2][2] = {{-1, -1}, {-1, -1}};
    char **env = calloc(s->n_env + 1, sizeof(char *));
    int rc = HB_ERR_NOMEM;
    snprintf(why, cap, "%s", hb_status_str(rc));
    if (env == NULL)
        return rc;
    for (uint32_t i = 0; i < s->n_env; i++)
        if ((env[i] = strdup(s->env[i])) == NULL)
            goto out;
    if ((rc = hbd_pmix_setup_fork(j, lr, &env)) != 0 || (rc = hbd_ranks_env(j, lr, &env)) != 0) {
        snprintf(why, cap, "%s", hb_status_str(rc));
        goto out;
    }
    rc = HB_ERR_IO;
    if (pipe2(p[0], O_CLOEXEC) != 0 || pipe2(p[1], O_CLOEXEC) != 0) {
        snprintf(why, cap, "pipe: %s", strerror(errno));
        hb_log_error("pipe: %m");
        goto out;
    }
    pid_t pid = -1;
    int se = spawn_rank(s, env, devnull, p[0][1], p[1][1], &pid);
    if (se != 0) {
        if (se < 0)
            snprintf(why, cap, "cannot change to the working directory %s: %s", s->cwd,
                     strerror(-se));
        else
            snprintf(why, cap, "cannot execute %s: %s", s->argv[0], strerror(se));
        hb_log_error("job %s: rank %" PRIu32 ": %s", j->nspace, r->rank, why);
        goto out;
    }
    setpgid(pid, pid); /* also here: no window where a kill of the group misses it */
    r->pid = pid;
    for (int k = 0; k < 2; k++) {
        close(p[k][1]);
        p[k][1] = -1;
        r->out_fd[k] = p[k][0];
        p[k][0] = -1;
        evutil_make_socket_nonblocking(r->out_fd[k]);
        r->ev_out[k] = event_new(j->d->base, r->out_fd[k], EV_READ | EV_PERSIST, out_cb, r);
        if (r->ev_out[k] == NULL || event_add(r->ev_out[k], NULL) != 0) {
            hb_log_error("cannot watch rank output");
            rc = HB_ERR_NOMEM;
            goto out; /* the caller stops the job */
        }
    }
    rc = 0;
out:
    for (int k = 0; k < 2; k++)
        for (int e = 0; e < 2; e++)
            if (p[k][e] >= 0)
                close(p[k][e]);
    if (env != NULL)
        for (char **e = env; *e != NULL; e++)
            free(*e);
    free(env);
    return rc;
}

/* The launcher's part of j from spec (taken over on success): the job's nodes (if no other part
 * set them) and its local ranks. 0, or INVAL or NOMEM with err filled and the part not taken. */
static int job_build(hbd_t *d, hbd_job_t *j, hbd_job_spec_t *spec, char *err, size_t cap)
{
    uint32_t n_local = 0, bad = 0;
    int rc = hbd_job_set_nodes(j, spec->map, spec->size, &bad);
    if (rc == HB_ERR_INVAL && bad == UINT32_MAX) {
        snprintf(err, cap, "job %s runs here on other nodes than this spec names", j->nspace);
        return rc;
    }
    if (rc == HB_ERR_INVAL) {
        snprintf(err, cap, "rank %" PRIu32 " placed on node %" PRIu32 ", not in the cluster", bad,
                 spec->map[bad]);
        return rc;
    }
    if (rc != 0)
        return rc;
    for (uint32_t r = 0; r < spec->size; r++)
        n_local += spec->map[r] == d->self;
    if (j->n_nodes > 1 && spec->jobno == 0) {
        snprintf(err, cap,
                 "a job on %" PRIu32 " nodes needs its number and sync numbers from the cluster: "
                 "start it with \"run\" (hibar-run), not \"launch\"",
                 j->n_nodes);
        return HB_ERR_INVAL;
    }
    if (n_local == 0) {
        snprintf(err, cap, "no rank of the job is placed on node %s", d->name);
        return HB_ERR_INVAL;
    }
    hbd_rank_t *local = calloc(n_local, sizeof(hbd_rank_t));
    if (local == NULL)
        return HB_ERR_NOMEM;
    for (uint32_t r = 0, k = 0; r < spec->size; r++)
        if (spec->map[r] == d->self) {
            hbd_rank_t *x = &local[k];
            x->job = j;
            x->rank = r;
            x->local_rank = k++;
            x->out_fd[0] = x->out_fd[1] = -1;
        }
    j->spec = spec;
    j->jobno = spec->jobno;
    j->local = local;
    j->n_local = n_local;
    j->fd = -1;
    j->launched = 1;
    return 0;
}

/* The job's part could not start: one err line, nothing runs, the job goes once it is out. */
static void job_refuse(hbd_job_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_refuse(hbd_job_t *j, const char *fmt, ...)
{
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    job_send(j, "%s", line);
    hbd_job_done(j);
    j->n_local = 0;
    if (j->bev == NULL || evbuffer_get_length(bufferevent_get_output(j->bev)) == 0)
        job_free(j); /* else once the line is out (job_write_cb) */
}

/* The job is registered with the PMIx server (rc 0), or could not be: start its ranks. */
static void job_registered(hbd_job_t *j, int rc)
{
    hbd_t *d = j->d;
    if (rc == 0 && j->killing) {
        job_refuse(j, "err %d the job was stopped before its ranks started here\n",
                   HB_ERR_PEER_LOST);
        return;
    }
    if (rc != 0) {
        if (rc == HB_ERR_UNAVAIL)
            job_refuse(j,
                       "err %d the PMIx server of node %s is wedged (libpmix's thread stopped "
                       "answering after a client died while connecting): the job's PMIx step "
                       "was killed, the next job gets a new one\n",
                       rc, d->name);
        else
            job_refuse(j, "err %d cannot register the job with the PMIx server\n", rc);
        return;
    }
    if ((rc = hbd_ranks_job_open(j)) != 0) {
        job_refuse(j, "err %d cannot create the job's shared-memory segment: %s\n", rc,
                   hb_status_str(rc));
        return;
    }
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    uint32_t spawned = 0;
    char why[600] = "cannot open /dev/null";
    rc = devnull < 0 ? HB_ERR_IO : 0;
    for (uint32_t k = 0; k < j->n_local && rc == 0; k++)
        if ((rc = rank_spawn(j, k, devnull, why, sizeof(why))) == 0)
            spawned++;
    if (devnull >= 0)
        close(devnull);
    if (rc != 0) {
        /* the ones spawned are stopped; the others count as never started */
        for (uint32_t k = 0; k < j->n_local; k++)
            if (j->local[k].pid == 0) {
                j->local[k].pid = -2;
                j->local[k].wstatus = 127 << 8;
            }
        job_send(j, "err %d cannot spawn rank %" PRIu32 " of %s: %s\n", rc, j->local[spawned].rank,
                 j->nspace, why);
        j->failed = 1;
        hbd_launch_kill(j, "spawn failed");
        job_finish_check(j);
        return;
    }
    hb_log_info("job %s: %" PRIu32 " of %" PRIu32 " ranks started here (%s)", j->nspace, j->n_local,
                j->spec->size, j->spec->argv[0]);
    job_send(j, "ok launch %s %" PRIu32 "\n", j->nspace, j->n_local);
    if (j->n_local == 0)
        job_finish_check(j);
}

void hbd_launch_request(hbd_t *d, hbd_reply_t *conn, const char *spec_path)
{
    char err[512] = "";
    hbd_job_spec_t *spec = NULL;
    hbd_job_t *j = NULL;
    int rc;
    if (spec_path == NULL) {
        hbd_reply(conn, "err %d usage: launch <job spec file>", HB_ERR_INVAL);
        return;
    }
    if ((rc = hbd_job_spec_load(spec_path, &spec, err, sizeof(err))) != 0) {
        hbd_reply(conn, "err %d %s", rc, err[0] ? err : hb_status_str(rc));
        return;
    }
    if ((rc = hbd_job_open(d, spec->id, &j)) != 0) {
        hbd_reply(conn, "err %d %s", rc, hb_status_str(rc));
        hbd_job_spec_free(spec);
        return;
    }
    if (j->launched) {
        hbd_reply(conn, "err %d job %s exists", HB_ERR_EXISTS, j->nspace);
        hbd_job_spec_free(spec);
        return;
    }
    if ((rc = job_build(d, j, spec, err, sizeof(err))) != 0) {
        hbd_reply(conn, "err %d %s", rc, err[0] ? err : hb_status_str(rc));
        hbd_job_spec_free(spec);
        hbd_job_release(j); /* made here: no part holds it */
        return;
    }
    for (uint32_t i = 0; i < j->n_nodes; i++)
        if (hbd_node_lost(d, j->nodes[i])) {
            hbd_reply(conn, "err %d node %s of the job is lost", HB_ERR_PEER_LOST,
                      d->cfg->nodes[j->nodes[i]].name);
            job_free(j);
            return;
        }
    if (!d->ready && d->topo->n_nodes > 1) {
        hbd_reply(conn, "err %d node %s is not linked to all its neighbours yet", HB_ERR_NOT_INIT,
                  d->name);
        job_free(j);
        return;
    }
    if (j->spec->jobno != 0) {
        /* its barrier engine, before any rank can call a barrier */
        rc = hbd_barrier_job_open(d, j->spec->jobno, j->member, j->spec->sync_base, j->spec->n_sync,
                                  err, sizeof(err));
        if (rc != 0) {
            hbd_reply(conn, "err %d %s", rc, err[0] ? err : hb_status_str(rc));
            job_free(j);
            return;
        }
        j->engine = 1;
    }
    hbd_job_count(j);
    j->fd = hbd_reply_detach(conn);
    if (j->fd < 0) {
        job_free(j);
        return;
    }
    j->bev = bufferevent_socket_new(d->base, j->fd, BEV_OPT_CLOSE_ON_FREE);
    if (j->bev == NULL) {
        job_free(j);
        return;
    }
    bufferevent_setcb(j->bev, conn_read_cb, job_write_cb, conn_event_cb, j);
    bufferevent_setwatermark(j->bev, EV_WRITE, HBD_OUT_QUEUE_LOW, 0);
    bufferevent_enable(j->bev, EV_READ | EV_WRITE);

    if ((rc = hbd_pmix_job_register(j, job_registered)) != 0)
        job_registered(j, rc);
}

static void chld_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    reap(arg);
}

/* The job cannot go on here (its PMIx step died): hibar-run is told, the job stops. */
static void on_fail(hbd_job_t *j, const char *why)
{
    if (j->done_sent)
        return;
    j->failed = 1;
    job_send(j, "err %d %s\n", HB_ERR_INTERNAL, why);
    hbd_launch_kill(j, why);
}

static const hbd_job_ops_t job_ops = {.rank_abort = on_abort, .fail = on_fail};

int hbd_launch_start(hbd_t *d)
{
    d->ev_chld = evsignal_new(d->base, SIGCHLD, chld_cb, d);
    if (d->ev_chld == NULL || event_add(d->ev_chld, NULL) != 0) {
        hb_log_error("cannot watch SIGCHLD");
        return HB_ERR_NOMEM;
    }
    hbd_jobs_set_ops(d, &job_ops);
    return 0;
}

void hbd_launch_stop(hbd_t *d)
{
    for (;;) { /* the jobs with a part here (job_free may free one) */
        hbd_job_t *j = d->jobs.head;
        while (j != NULL && !j->launched)
            j = j->next;
        if (j == NULL)
            break;
        for (uint32_t k = 0; k < j->n_local; k++)
            if (j->local[k].pid > 0) {
                kill(-j->local[k].pid, SIGKILL);
                kill(j->local[k].pid, SIGKILL);
                waitpid(j->local[k].pid, NULL, 0);
                j->local[k].pid = -1;
            }
        if (j->bev != NULL) {
            job_send(j, "err %d daemon shutting down\n", HB_ERR_UNAVAIL);
            bufferevent_flush(j->bev, EV_WRITE, BEV_FLUSH);
        }
        job_free(j);
    }
    hbd_jobs_set_ops(d, NULL);
    if (d->ev_chld != NULL)
        event_free(d->ev_chld);
    d->ev_chld = NULL;
}
