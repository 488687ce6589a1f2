/* hbd_sock.c: socket helpers of every layer. */
#include "hb_config.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>
#include <sys/socket.h>

#include "hb_log.h"
#include "hb_status.h"
#include "hbd_sock.h"

int hbd_accept(hbd_t *d, int lfd, const char *what)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            d->fd_short = 0;
            return fd;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE) {
            int e = errno;
            if (d->spare_fd < 0) /* another thread took it last time: try again */
                d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (!d->fd_short)
                hb_log_error("accept on the %s: %s: refusing connections until descriptors are "
                             "free again (logged once)",
                             what, strerror(e));
            d->fd_short = 1;
            if (d->spare_fd < 0)
                return -1;
            close(d->spare_fd);
            int x = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (x >= 0)
                close(x);
            d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (x >= 0)
                continue; /* the next one, if any, the same way */
            return -1;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            hb_log_warn("accept on the %s: %m", what);
        return -1;
    }
}

int hbd_sock_spare_open(hbd_t *d)
{
    d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return d->spare_fd >= 0 ? 0 : HB_ERR_IO;
}

void hbd_sock_spare_close(hbd_t *d)
{
    if (d->spare_fd >= 0)
        close(d->spare_fd);
    d->spare_fd = -1;
}
