/* hb_bwprobe.c: TCP bandwidth and round-trip probe for the namespace test bed (no iperf here). */
/*
 * Server: hb_bwprobe -s [-b ADDR] [-p PORT] [-n CONNS] [-T IDLE_S]
 *   accepts connections (one child process each), drains each until EOF and answers with the
 *   byte count and the receive time (first byte to EOF); exits after CONNS connections, or
 *   when no connection arrives for IDLE_S seconds (default 60).
 * Client: hb_bwprobe -c ADDR [-p PORT] [-t SECS] [-l LABEL]
 *   sends for SECS seconds (default 2), half-closes, waits for the server's answer and prints
 *   one JSON row (doc/design.md section 6 keys where they apply) with the measured Mbit/s.
 *   The rate is the receiver's byte count over the sender's time from connect to the answer,
 *   so data still queued in socket buffers when the sender stops is counted correctly.
 * Client: hb_bwprobe -c ADDR -r N [-P] [-p PORT] [-l LABEL]
 *   N round trips of one byte (TCP_NODELAY, after 10 warm-up ones); prints one JSON row
 *   with the median, min, max and p99 round-trip time. -P: both ends poll (recv with
 *   MSG_DONTWAIT in a loop, 10 s at most per byte) instead of blocking in read: the wire's
 *   floor where each end has a core (impl "tcp-polled"; hibar-bench barrier --floor).
 * The client's first byte tells the server which it wants ('B', 'R', or 'P' for polled).
 */
#include "hb_config.h" /* first: _GNU_SOURCE for accept4 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hb_log.h"
#include "hb_time.h"

#define PROBE_BUF (128 * 1024)
#define PROBE_CONNECT_TRIES 100 /* x 50 ms: the server may still be starting */

typedef struct probe_opts {
    int server;
    const char *addr;
    const char *label;
    int port;
    int rtt_iters;
    int conns;
    int idle_s;
    double secs;
    int polled;
} probe_opts_t;

static int probe_polled; /* this connection's reads poll (mode 'P') */

static void probe_usage(void)
{
    fprintf(stderr, "usage: hb_bwprobe -s [-b ADDR] [-p PORT] [-n CONNS] [-T IDLE_S]\n"
                    "       hb_bwprobe -c ADDR [-p PORT] [-t SECS] [-l LABEL]\n"
                    "       hb_bwprobe -c ADDR -r ROUND_TRIPS [-P] [-p PORT] [-l LABEL]\n");
}

static void probe_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t probe_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int probe_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            hb_log_error("bwprobe: write: %m");
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int probe_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    uint64_t t0 = probe_polled ? hb_time_now_ns() : 0;
    while (len > 0) {
        ssize_t n = probe_polled ? recv(fd, p, len, MSG_DONTWAIT) : read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && probe_polled && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (hb_time_now_ns() - t0 > 10000000000ull) {
                hb_log_error("bwprobe: nothing for 10 s");
                return -1;
            }
            continue;
        }
        if (n < 0) {
            hb_log_error("bwprobe: read: %m");
            return -1;
        }
        if (n == 0) {
            hb_log_error("bwprobe: connection closed before the server's answer");
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int probe_parse_addr(const char *addr, int port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1) {
        hb_log_error("bwprobe: not an IPv4 address: '%s'", addr);
        return -1;
    }
    return 0;
}

/* Round-trip mode: echo every byte until EOF. */
static int probe_serve_echo(int fd)
{
    int one = 1;
    char b;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    for (;;) {
        ssize_t n = probe_polled ? recv(fd, &b, 1, MSG_DONTWAIT) : read(fd, &b, 1);
        if (n < 0 && (errno == EINTR || (probe_polled && errno == EAGAIN)))
            continue;
        if (n < 0) {
            hb_log_error("bwprobe: read: %m");
            return 1;
        }
        if (n == 0)
            return 0;
        if (probe_write_all(fd, &b, 1) != 0)
            return 1;
    }
}

/*
 * One accepted connection, in a child. Bandwidth mode: drain to EOF, answer (bytes, receive
 * time in ns); round-trip mode: echo.
 */
static int probe_serve_one(int fd)
{
    static char buf[PROBE_BUF];
    uint64_t bytes = 0, t0 = 0, t1;
    unsigned char ans[16];
    char mode;

    if (probe_read_all(fd, &mode, 1) != 0)
        return 1;
    if (mode == 'R' || mode == 'P') {
        probe_polled = mode == 'P';
        return probe_serve_echo(fd);
    }
    if (mode != 'B') {
        hb_log_error("bwprobe: unknown mode byte 0x%02x", (unsigned char)mode);
        return 1;
    }
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            hb_log_error("bwprobe: read: %m");
            return 1;
        }
        if (n == 0)
            break;
        if (bytes == 0)
            t0 = hb_time_now_ns();
        bytes += (uint64_t)n;
    }
    t1 = hb_time_now_ns();
    probe_put_u64(ans, bytes);
    probe_put_u64(ans + 8, bytes ? t1 - t0 : 0);
    return probe_write_all(fd, ans, sizeof(ans)) == 0 ? 0 : 1;
}

static int probe_server(const probe_opts_t *o)
{
    struct sockaddr_in sa;
    int one = 1, lfd, served = 0, rc = 1;

    if (probe_parse_addr(o->addr ? o->addr : "0.0.0.0", o->port, &sa) != 0)
        return 2;
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
        hb_log_error("bwprobe: socket: %m");
        return 1;
    }
    if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 64) != 0) {
        hb_log_error("bwprobe: listen on port %d: %m", o->port);
        goto out_close;
    }
    while (o->conns == 0 || served < o->conns) {
        struct pollfd pfd = {.fd = lfd, .events = POLLIN};
        int pr = poll(&pfd, 1, o->idle_s * 1000);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            hb_log_error("bwprobe: poll: %m");
            goto out_wait;
        }
        if (pr == 0) {
            hb_log_error("bwprobe: no connection for %d s, giving up", o->idle_s);
            goto out_wait;
        }
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            hb_log_error("bwprobe: accept: %m");
            goto out_wait;
        }
        pid_t pid = fork();
        if (pid < 0) {
            hb_log_error("bwprobe: fork: %m");
            close(cfd);
            goto out_wait;
        }
        if (pid == 0) {
            close(lfd);
            _exit(probe_serve_one(cfd));
        }
        close(cfd);
        served++;
    }
    rc = 0;
out_wait:
    /* Collect the children; any failed child fails the server. */
    for (;;) {
        int st;
        pid_t w = wait(&st);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = 1;
    }
out_close:
    close(lfd);
    return rc;
}

static int probe_connect(const struct sockaddr_in *sa, const char *addr, int port)
{
    for (int i = 0; i < PROBE_CONNECT_TRIES; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            hb_log_error("bwprobe: socket: %m");
            return -1;
        }
        if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
            return fd;
        int err = errno;
        close(fd);
        if (err != ECONNREFUSED && err != EINTR) {
            errno = err;
            hb_log_error("bwprobe: connect to %s:%d: %m", addr, port);
            return -1;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    hb_log_error("bwprobe: connect to %s:%d: refused for %d s", addr, port,
                 PROBE_CONNECT_TRIES / 20);
    return -1;
}

static int probe_client(const probe_opts_t *o)
{
    static char buf[PROBE_BUF];
    struct sockaddr_in sa, me;
    socklen_t melen = sizeof(me);
    char src[INET_ADDRSTRLEN] = "?";
    unsigned char ans[16];
    uint64_t sent = 0, t0, t1, tend;
    int fd, rc = 1;

    if (probe_parse_addr(o->addr, o->port, &sa) != 0)
        return 2;
    fd = probe_connect(&sa, o->addr, o->port);
    if (fd < 0)
        return 1;
    if (getsockname(fd, (struct sockaddr *)&me, &melen) == 0)
        inet_ntop(AF_INET, &me.sin_addr, src, sizeof(src));
    memset(buf, 0x5a, sizeof(buf));
    if (probe_write_all(fd, "B", 1) != 0)
        goto out;
    t0 = hb_time_now_ns();
    tend = t0 + (uint64_t)(o->secs * 1e9);
    while (hb_time_now_ns() < tend) {
        if (probe_write_all(fd, buf, sizeof(buf)) != 0)
            goto out;
        sent += sizeof(buf);
    }
    if (shutdown(fd, SHUT_WR) != 0) {
        hb_log_error("bwprobe: shutdown: %m");
        goto out;
    }
    if (probe_read_all(fd, ans, sizeof(ans)) != 0)
        goto out;
    t1 = hb_time_now_ns();
    uint64_t got = probe_get_u64(ans), rx_ns = probe_get_u64(ans + 8);
    if (got != sent) {
        hb_log_error("bwprobe: sent %llu bytes, server received %llu", (unsigned long long)sent,
                     (unsigned long long)got);
        goto out;
    }
    double secs = (double)(t1 - t0) / 1e9;
    printf("{\"bench\": \"bwprobe\", \"impl\": \"tcp\", \"label\": \"%s\", \"src\": \"%s\", "
           "\"dst\": \"%s\", \"bytes\": %llu, \"secs\": %.3f, \"rx_secs\": %.3f, "
           "\"mbit\": %.1f}\n",
           o->label ? o->label : "", src, o->addr, (unsigned long long)got, secs,
           (double)rx_ns / 1e9, (double)got * 8.0 / secs / 1e6);
    fflush(stdout);
    rc = 0;
out:
    close(fd);
    return rc;
}

static int probe_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int probe_client_rtt(const probe_opts_t *o)
{
    struct sockaddr_in sa;
    uint64_t *rtt = NULL;
    int fd, one = 1, rc = 1;
    long n = o->rtt_iters;
    char b = o->polled ? 'P' : 'R';

    if (probe_parse_addr(o->addr, o->port, &sa) != 0)
        return 2;
    rtt = malloc(sizeof(*rtt) * (size_t)n);
    if (!rtt) {
        hb_log_error("bwprobe: out of memory");
        return 1;
    }
    fd = probe_connect(&sa, o->addr, o->port);
    if (fd < 0)
        goto out_free;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (probe_write_all(fd, &b, 1) != 0)
        goto out;
    probe_polled = o->polled;
    for (long i = -10; i < n; i++) {
        uint64_t t0 = hb_time_now_ns();
        if (probe_write_all(fd, &b, 1) != 0 || probe_read_all(fd, &b, 1) != 0)
            goto out;
        if (i >= 0)
            rtt[i] = hb_time_now_ns() - t0;
    }
    qsort(rtt, (size_t)n, sizeof(*rtt), probe_cmp_u64);
    long k = (long)(0.99 * (double)n + 0.999999) - 1;
    double med = n % 2 ? (double)rtt[n / 2] : ((double)rtt[n / 2 - 1] + (double)rtt[n / 2]) / 2;
    printf("{\"bench\": \"rtt\", \"impl\": \"%s\", \"label\": \"%s\", \"dst\": \"%s\", "
           "\"size\": 1, \"iters\": %ld, \"median_us\": %.1f, \"min_us\": %.1f, "
           "\"max_us\": %.1f, \"p99_us\": %.1f}\n",
           o->polled ? "tcp-polled" : "tcp", o->label ? o->label : "", o->addr, n, med / 1e3,
           (double)rtt[0] / 1e3, (double)rtt[n - 1] / 1e3, (double)rtt[k < 0 ? 0 : k] / 1e3);
    fflush(stdout);
    rc = 0;
out:
    close(fd);
out_free:
    free(rtt);
    return rc;
}

int main(int argc, char **argv)
{
    probe_opts_t o = {.port = 5201, .idle_s = 60, .secs = 2.0};
    int c;

    hb_log_init_from_env();
    hb_log_set_ident("hb_bwprobe");
    while ((c = getopt(argc, argv, "sc:b:p:n:T:t:l:r:Ph")) != -1) {
        switch (c) {
        case 's':
            o.server = 1;
            break;
        case 'c':
            o.addr = optarg;
            break;
        case 'b':
            o.addr = optarg;
            break;
        case 'p':
            o.port = atoi(optarg);
            break;
        case 'n':
            o.conns = atoi(optarg);
            break;
        case 'T':
            o.idle_s = atoi(optarg);
            break;
        case 't':
            o.secs = atof(optarg);
            break;
        case 'l':
            o.label = optarg;
            break;
        case 'r':
            o.rtt_iters = atoi(optarg);
            break;
        case 'P':
            o.polled = 1;
            break;
        case 'h':
            probe_usage();
            return 0;
        default:
            probe_usage();
            return 2;
        }
    }
    if (optind != argc || o.port <= 0 || o.port > 65535 || o.conns < 0 || o.idle_s <= 0 ||
        !(o.secs > 0.0 && o.secs < 3600.0) || (!o.server && !o.addr) || o.rtt_iters < 0 ||
        o.rtt_iters > 10000000) {
        probe_usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (o.server)
        return probe_server(&o);
    return o.rtt_iters > 0 ? probe_client_rtt(&o) : probe_client(&o);
}
