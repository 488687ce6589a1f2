/* conn.c: the segment hand-over on hibard's UNIX socket (SO_PEERCRED, SCM_RIGHTS). */
#include "hb_config.h"

#include "conn.h"

#include "hb_log.h"
#include "hibar.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int conn_peer(int fd, struct ucred *cr)
{
    socklen_t len = sizeof(*cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) != 0 || len != sizeof(*cr)) {
        hb_log_error("SO_PEERCRED: %m");
        return HIBAR_ERR_IO;
    }
    return 0;
}

int hb_conn_client(const char *path, uint32_t rank, uint64_t job_id, int *seg_fd_p,
                   int *doorbell_fd_p, hb_conn_welcome_t *w_p, int *daemon_pid_p)
{
    struct sockaddr_un sa;
    struct ucred cr;
    hb_conn_hello_t hello;
    hb_conn_welcome_t w;
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {&w, sizeof(w)};
    struct msghdr msg;
    struct cmsghdr *cm;
    int fd, fds[2] = {-1, -1}, nfds = 0, rc;
    ssize_t n;

    if (path == NULL || seg_fd_p == NULL || doorbell_fd_p == NULL || w_p == NULL ||
        daemon_pid_p == NULL)
        return HIBAR_ERR_INVAL;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        hb_log_error("daemon socket path too long: %s", path);
        return HIBAR_ERR_INVAL;
    }
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        hb_log_error("socket: %m");
        return HIBAR_ERR_IO;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        hb_log_error("connecting to hibard at %s: %m", path);
        rc = HIBAR_ERR_UNAVAIL;
        goto out;
    }
    rc = conn_peer(fd, &cr);
    if (rc != 0)
        goto out;
    if (cr.uid != getuid() && cr.uid != 0) {
        hb_log_error("hibard at %s runs as uid %u, not %u: refused", path, (unsigned)cr.uid,
                     (unsigned)getuid());
        rc = HIBAR_ERR_PERM;
        goto out;
    }
    memset(&hello, 0, sizeof(hello));
    hello.magic = HB_CONN_MAGIC;
    hello.version = HB_CONN_VERSION;
    hello.type = HB_CONN_HELLO;
    hello.rank = rank;
    hello.pid = (int32_t)getpid();
    hello.job_id = job_id;
    if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello)) {
        hb_log_error("sending hello to hibard: %m");
        rc = HIBAR_ERR_IO;
        goto out;
    }
    memset(&msg, 0, sizeof(msg));
    memset(&ctl, 0, sizeof(ctl));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof(ctl.buf);
    do
        n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        hb_log_error("receiving welcome from hibard: %m");
        rc = HIBAR_ERR_IO;
        goto out;
    }
    for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int), i;
            for (i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                if (nfds < 2)
                    fds[nfds++] = f;
                else
                    close(f);
            }
        }
    }
    if (n != (ssize_t)sizeof(w) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        w.magic != HB_CONN_MAGIC || w.version != HB_CONN_VERSION || w.type != HB_CONN_WELCOME ||
        w.status > 0 || w.status < HIBAR_ERR_LAST) {
        hb_log_error("malformed welcome from hibard (%zd bytes)", n);
        rc = HIBAR_ERR_PROTO;
        goto out;
    }
    if (w.status != 0) {
        hb_log_error("hibard refused: %s", hibar_strerror(w.status));
        rc = w.status;
        goto out;
    }
    if (nfds < 1 || w.nranks == 0 || w.rank >= w.nranks || w.gsize < w.nranks ||
        w.grank >= w.gsize || (rank != HB_CONN_RANK_ANY && w.grank != rank)) {
        hb_log_error("inconsistent welcome from hibard (rank %u of %u, node rank %u of %u, %d fds)",
                     (unsigned)w.grank, (unsigned)w.gsize, (unsigned)w.rank, (unsigned)w.nranks,
                     nfds);
        rc = HIBAR_ERR_PROTO;
        goto out;
    }
    *seg_fd_p = fds[0];
    *doorbell_fd_p = nfds > 1 ? fds[1] : -1;
    fds[0] = fds[1] = -1;
    *w_p = w;
    *daemon_pid_p = (int)cr.pid;
    rc = 0;
out:
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    close(fd);
    return rc;
}

int hb_conn_accept_hello(int fd, uid_t uid, hb_conn_hello_t *hello_p, pid_t *pid_p)
{
    struct ucred cr;
    hb_conn_hello_t h;
    ssize_t n;
    int rc;

    rc = conn_peer(fd, &cr);
    if (rc != 0)
        return rc;
    if (cr.uid != uid && cr.uid != 0) {
        hb_log_warn("client pid %d with uid %u refused (job uid %u)", (int)cr.pid, (unsigned)cr.uid,
                    (unsigned)uid);
        return HIBAR_ERR_PERM;
    }
    do
        n = recv(fd, &h, sizeof(h), 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        hb_log_error("receiving hello: %m");
        return HIBAR_ERR_IO;
    }
    if (n != (ssize_t)sizeof(h) || h.magic != HB_CONN_MAGIC || h.version != HB_CONN_VERSION ||
        h.type != HB_CONN_HELLO || h.pid != (int32_t)cr.pid) {
        hb_log_warn("malformed hello from pid %d (%zd bytes)", (int)cr.pid, n);
        return HIBAR_ERR_PROTO;
    }
    *hello_p = h;
    *pid_p = cr.pid;
    return 0;
}

int hb_conn_send_welcome(int fd, const hb_conn_welcome_t *w, int seg_fd, int doorbell_fd)
{
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {(void *)(uintptr_t)w, sizeof(*w)};
    struct msghdr msg;
    struct cmsghdr *cm;
    int fds[2] = {seg_fd, doorbell_fd}, nfds;

    memset(&msg, 0, sizeof(msg));
    memset(&ctl, 0, sizeof(ctl));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    nfds = w->status != 0 || seg_fd < 0 ? 0 : doorbell_fd >= 0 ? 2 : 1;
    if (nfds > 0) {
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }
    if (sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(*w)) {
        hb_log_error("sending welcome: %m");
        return HIBAR_ERR_IO;
    }
    return 0;
}
