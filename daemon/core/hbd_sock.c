/* hbd_sock.c: socket helpers of every layer. */
#include "hb_config.h"
#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>

#include "hb_log.h"
#include "hbd_sock.h"

int hbd_accept(int lfd, const char *what)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            hb_log_warn("accept on the %s: %m", what);
        return -1;
    }
}
