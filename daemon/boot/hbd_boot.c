/* hbd_boot.c: hibard's start-up under a resource manager: bootstrap pmix (through hibar-boot) and
 * env (rendezvous). */
#include "hb_config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "hb_log.h"
#include "hb_rundir.h"
#include "hb_time.h"
#include "hbd_boot.h"
#include "hb_status.h"

extern char **environ;

/* One daemon as the bootstrap learns it. */
typedef struct hbd_boot_ent {
    char name[128];
    char host[128];
    char addr[64];
    unsigned port;
    unsigned lrank;
    int seen;
} hbd_boot_ent_t;

typedef struct hbd_boot_res {
    hbd_boot_ent_t *ents;
    uint32_t n;
    uint32_t self;
    char key[96]; /* "pubZ85:secZ85" or "" */
} hbd_boot_res_t;

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

static unsigned boot_timeout_s(void)
{
    const char *s = getenv("HIBAR_BOOT_TIMEOUT");
    char *end;
    unsigned long v = s != NULL ? strtoul(s, &end, 10) : 0;
    if (s == NULL || *s == '\0' || *end != '\0' || v == 0 || v > 600)
        return 20;
    return (unsigned)v;
}

/* Host names and addresses go into YAML and the wire lines unquoted: keep them plain. */
static int word_ok(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == '_' || *s == ':'))
            return 0;
    return 1;
}

/* This host's address for the daemons' ROUTER sockets. */
static int addr_pick(char *out, size_t cap, char *err, size_t errlen)
{
    const char *a = getenv("HIBAR_BOOT_ADDRESS"), *ifn = getenv("HIBAR_BOOT_IF");
    struct in_addr ia;
    if (a != NULL && *a != '\0') {
        if (inet_pton(AF_INET, a, &ia) != 1)
            return fail(err, errlen, HB_ERR_CONFIG,
                        "environment HIBAR_BOOT_ADDRESS: not an IPv4 address '%s'", a);
        snprintf(out, cap, "%s", a);
        return 0;
    }
    struct ifaddrs *ifs, *i;
    if (getifaddrs(&ifs) != 0)
        return fail(err, errlen, HB_ERR_IO, "bootstrap: getifaddrs: %s", strerror(errno));
    out[0] = '\0';
    for (i = ifs; i != NULL && out[0] == '\0'; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
            continue;
        if (ifn != NULL && *ifn != '\0' ? strcmp(i->ifa_name, ifn) != 0
                                        : (i->ifa_flags & IFF_LOOPBACK) != 0)
            continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, out,
                  (socklen_t)cap);
    }
    freeifaddrs(ifs);
    if (out[0] != '\0')
        return 0;
    if (ifn != NULL && *ifn != '\0')
        return fail(err, errlen, HB_ERR_NOT_FOUND,
                    "environment HIBAR_BOOT_IF: no IPv4 address on interface '%s'", ifn);
    snprintf(out, cap, "127.0.0.1"); /* a host without a network: one-host cluster */
    return 0;
}

/* want if it can be bound on addr now, else a port the system picks. */
static int port_pick(const char *addr, unsigned want, unsigned *port_p, char *err, size_t errlen)
{
    for (int pass = want != 0 ? 0 : 1; pass < 2; pass++) {
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)(pass == 0 ? want : 0))};
        socklen_t sl = sizeof(sa);
        inet_pton(AF_INET, addr, &sa.sin_addr);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
        if (fd < 0)
            return fail(err, errlen, HB_ERR_IO, "bootstrap: socket: %s", strerror(errno));
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
            getsockname(fd, (struct sockaddr *)&sa, &sl) == 0) {
            close(fd);
            *port_p = ntohs(sa.sin_port);
            return 0;
        }
        int e = errno;
        close(fd);
        if (pass == 1)
            return fail(err, errlen, HB_ERR_IO, "bootstrap: no free TCP port on %s: %s", addr,
                        strerror(e));
        hb_log_warn("bootstrap: port %u on %s is taken (%s); using one the system picks", want,
                    addr, strerror(e));
    }
    return HB_ERR_INTERNAL;
}

/* ------------------------------------------------------------------ line I/O with deadlines */

typedef struct hbd_boot_rd {
    int fd;
    char buf[8192];
    size_t len;
} hbd_boot_rd_t;

/* One line (without '\n') into out, by deadline_ns. 0, HB_ERR_TIMEOUT, HB_ERR_PEER_LOST
 * (EOF), HB_ERR_IO, HB_ERR_TRUNCATED. */
static int line_read(hbd_boot_rd_t *r, char *out, size_t cap, uint64_t deadline_ns)
{
    for (;;) {
        char *nl = memchr(r->buf, '\n', r->len);
        if (nl != NULL) {
            size_t l = (size_t)(nl - r->buf);
            if (l >= cap)
                return HB_ERR_TRUNCATED;
            memcpy(out, r->buf, l);
            out[l] = '\0';
            memmove(r->buf, nl + 1, r->len - l - 1);
            r->len -= l + 1;
            return 0;
        }
        if (r->len == sizeof(r->buf))
            return HB_ERR_TRUNCATED;
        uint64_t now = hb_time_now_ns();
        if (now >= deadline_ns)
            return HB_ERR_TIMEOUT;
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)((deadline_ns - now) / 1000000u) + 1);
        if (pr < 0 && errno != EINTR)
            return HB_ERR_IO;
        if (pr <= 0)
            continue;
        ssize_t n = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
        if (n == 0)
            return HB_ERR_PEER_LOST;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return HB_ERR_IO;
        if (n > 0)
            r->len += (size_t)n;
    }
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return HB_ERR_IO;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static const char *rd_what(int rc)
{
    return rc == HB_ERR_TIMEOUT     ? "no answer in time"
           : rc == HB_ERR_PEER_LOST ? "connection closed"
                                    : hb_status_str(rc);
}

/* A NODE line of a rendezvous's answer. */
typedef struct rdv_node {
    unsigned i, lrank, port;
    char host[128], addr[64];
} rdv_node_t;

enum { RDV_NODE, RDV_KEY, RDV_END };

/* One line of a rendezvous's answer, in one format for both (node 0's answer for env below, the
 * pmix helper's in tools/hibar_boot.c): RDV_END; RDV_KEY (res->key taken); RDV_NODE (its fields in
 * *nd, the host and address single words, the port in range); or HB_ERR_PEER_LOST (ERR: its text in
 * err, as the rendezvous has it) or HB_ERR_PROTO (a bad line from `from`), err starting with
 * `what`. */
static int rdv_line(const char *line, hbd_boot_res_t *res, rdv_node_t *nd, const char *what,
                    const char *from, char *err, size_t errlen)
{
    if (strncmp(line, "ERR ", 4) == 0)
        return fail(err, errlen, HB_ERR_PEER_LOST, "%s: %s", what, line + 4);
    if (strcmp(line, "END") == 0)
        return RDV_END;
    if (strncmp(line, "KEY ", 4) == 0) {
        snprintf(res->key, sizeof(res->key), "%.95s", line + 4);
        return RDV_KEY;
    }
    if (sscanf(line, "NODE %u %127s %u %63s %u", &nd->i, nd->host, &nd->lrank, nd->addr,
               &nd->port) != 5 ||
        nd->port == 0 || nd->port > 65535 || !word_ok(nd->host) || !word_ok(nd->addr))
        return fail(err, errlen, HB_ERR_PROTO, "%s: bad line from %s: '%.200s'", what, from, line);
    return RDV_NODE;
}

/* A fresh CurveZMQ key pair as "pub:sec". */
static int key_new(char *key, size_t cap, char *err, size_t errlen)
{
    char pub[41], sec[41];
    if (!zmq_has("curve") || zmq_curve_keypair(pub, sec) != 0)
        return fail(err, errlen, HB_ERR_UNAVAIL,
                    "bootstrap: cannot make a CurveZMQ key pair (libzmq without curve?)");
    snprintf(key, cap, "%s:%s", pub, sec);
    return 0;
}

/* ------------------------------------------------------------------------------- pmix */

static int helper_find(char *path, size_t cap)
{
    const char *e = getenv("HIBAR_BOOT");
    if (e != NULL && *e != '\0') {
        snprintf(path, cap, "%s", e);
        return access(path, X_OK) == 0 ? 0 : HB_ERR_NOT_FOUND;
    }
    char self[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (l > 0) {
        self[l] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            static const char *const rel[] = {"", "/../tools", "/../bin"};
            for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
                if (snprintf(path, cap, "%s%s/hibar-boot", self, rel[i]) < (int)cap &&
                    access(path, X_OK) == 0)
                    return 0;
            }
        }
    }
    const char *pe = getenv("PATH");
    if (pe == NULL)
        return HB_ERR_NOT_FOUND;
    char *dup = strdup(pe), *save = NULL;
    if (dup == NULL)
        return HB_ERR_NOMEM;
    for (char *d = strtok_r(dup, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
        if (snprintf(path, cap, "%s/hibar-boot", d) < (int)cap && access(path, X_OK) == 0) {
            free(dup);
            return 0;
        }
    }
    free(dup);
    return HB_ERR_NOT_FOUND;
}

static void helper_reap(pid_t pid, int kill_it)
{
    int st;
    if (kill_it)
        kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

static int boot_pmix(const hb_cfg_t *cfg, hbd_boot_res_t *res, char *err, size_t errlen)
{
    const char *ns = getenv("PMIX_NAMESPACE");
    unsigned to = boot_timeout_s();
    char helper[PATH_MAX], line[HBD_BOOT_LINE_MAX], tos[16];
    int rc;

    if (ns == NULL || *ns == '\0')
        return fail(err, errlen, HB_ERR_UNAVAIL,
                    "bootstrap pmix: no PMIx server to ask (PMIX_NAMESPACE is not set): start "
                    "hibard with 'srun --mpi=pmix' or 'mpirun', or use another bootstrap");
    if ((rc = helper_find(helper, sizeof(helper))) != 0)
        return fail(err, errlen, HB_ERR_NOT_FOUND,
                    "bootstrap pmix: helper hibar-boot not found ($HIBAR_BOOT, next to hibard, "
                    "../tools, ../bin, $PATH)");
    int to_h[2], from_h[2];
    if (pipe2(to_h, O_CLOEXEC) != 0)
        return fail(err, errlen, HB_ERR_IO, "bootstrap pmix: pipe: %s", strerror(errno));
    if (pipe2(from_h, O_CLOEXEC) != 0) {
        close(to_h[0]);
        close(to_h[1]);
        return fail(err, errlen, HB_ERR_IO, "bootstrap pmix: pipe: %s", strerror(errno));
    }
    snprintf(tos, sizeof(tos), "%u", to);
    pid_t pid = fork(); /* no threads yet: hibard has not started ZeroMQ or PMIx */
    if (pid == 0) {
        if (dup2(to_h[0], 0) < 0 || dup2(from_h[1], 1) < 0)
            _exit(127);
        execl(helper, "hibar-boot", "--timeout", tos, (char *)NULL);
        fprintf(stderr, "hibard: exec %s: %s\n", helper, strerror(errno));
        _exit(127);
    }
    close(to_h[0]);
    close(from_h[1]);
    if (pid < 0) {
        close(to_h[1]);
        close(from_h[0]);
        return fail(err, errlen, HB_ERR_IO, "bootstrap pmix: fork: %s", strerror(errno));
    }
    hbd_boot_rd_t *rd = calloc(1, sizeof(*rd));
    if (rd == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    rd->fd = from_h[0];
    uint64_t deadline = hb_time_now_ns() + (uint64_t)(to + 5) * 1000000000u;
    unsigned rank, size, lrank;
    char host[128];
    /* first line: who we are in the job */
    rc = line_read(rd, line, sizeof(line), deadline);
    if (rc == 0 && strncmp(line, "ERR ", 4) == 0) {
        rc = fail(err, errlen, HB_ERR_UNAVAIL, "bootstrap pmix: %s", line + 4);
        goto out;
    }
    if (rc != 0 || sscanf(line, "RANK %u %u %u %127s", &rank, &size, &lrank, host) != 4 ||
        size == 0 || rank >= size || size > HB_CFG_HOSTLIST_MAX) {
        rc = fail(err, errlen, rc == HB_ERR_TIMEOUT ? rc : HB_ERR_PROTO,
                  "bootstrap pmix: helper %s (namespace %s) gave no rank: %s", helper, ns,
                  rc != 0 ? rd_what(rc) : line);
        goto out;
    }
    char addr[64], key[96] = "-";
    unsigned port = 0;
    if ((rc = addr_pick(addr, sizeof(addr), err, errlen)) != 0 ||
        (rc = port_pick(addr, cfg->port != 0 ? cfg->port + lrank : 0, &port, err, errlen)) != 0)
        goto out;
    if (rank == 0 && cfg->key_file == NULL && (rc = key_new(key, sizeof(key), err, errlen)) != 0)
        goto out;
    int n = snprintf(line, sizeof(line), "EP %s %u %s\n", addr, port, key);
    if (write_all(to_h[1], line, (size_t)n) != 0) {
        rc = fail(err, errlen, HB_ERR_IO, "bootstrap pmix: helper %s died", helper);
        goto out;
    }
    res->ents = calloc(size, sizeof(hbd_boot_ent_t));
    if (res->ents == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    res->n = size;
    res->self = rank;
    for (;;) {
        rc = line_read(rd, line, sizeof(line), deadline);
        if (rc != 0) {
            rc = fail(err, errlen, rc == HB_ERR_TIMEOUT ? rc : HB_ERR_PROTO,
                      "bootstrap pmix: the exchange of %u daemons (namespace %s) did not finish "
                      "within %u s: %s",
                      size, ns, to + 5, rd_what(rc));
            goto out;
        }
        rdv_node_t nd;
        if ((rc = rdv_line(line, res, &nd, "bootstrap pmix", helper, err, errlen)) == RDV_END)
            break;
        if (rc == RDV_KEY)
            continue;
        if (rc == RDV_NODE && nd.i >= size)
            rc = fail(err, errlen, HB_ERR_PROTO, "bootstrap pmix: bad line from %s: '%.200s'",
                      helper, line);
        if (rc != RDV_NODE)
            goto out;
        hbd_boot_ent_t *e = &res->ents[nd.i];
        snprintf(e->host, sizeof(e->host), "%s", nd.host);
        snprintf(e->addr, sizeof(e->addr), "%s", nd.addr);
        e->port = nd.port;
        e->lrank = nd.lrank;
        e->seen = 1;
    }
    for (uint32_t i = 0; i < size; i++)
        if (!res->ents[i].seen) {
            rc = fail(err, errlen, HB_ERR_PROTO,
                      "bootstrap pmix: daemon of rank %" PRIu32 " missing from the exchange", i);
            goto out;
        }
    /* names: the host names, made unique with the local rank where daemons share a host */
    for (uint32_t i = 0; i < size; i++) {
        int dup = 0;
        for (uint32_t j = 0; j < size && !dup; j++)
            dup = j != i && strcmp(res->ents[i].host, res->ents[j].host) == 0;
        hbd_boot_ent_t *e = &res->ents[i];
        if (dup)
            snprintf(e->name, sizeof(e->name), "%.100s-%u", e->host, e->lrank);
        else
            snprintf(e->name, sizeof(e->name), "%s", e->host);
    }
    rc = 0;
out:
    close(to_h[1]);
    int eof = 0;
    if (rd != NULL && rc == 0) {
        /* the helper finalizes PMIx and exits after END; one that hangs there is killed */
        char tail[64];
        eof = line_read(rd, tail, sizeof(tail), hb_time_now_ns() + 5000000000u) == HB_ERR_PEER_LOST;
    }
    close(from_h[0]);
    helper_reap(pid, !eof);
    free(rd);
    return rc;
}

/* ------------------------------------------------------------------------------- env */

static int env_nodes(hbd_boot_res_t *res, char *err, size_t errlen)
{
    const char *hf = getenv("HIBAR_HOSTFILE"), *idx_s, *what;
    char **names = NULL;
    uint32_t n = 0;

    if (hf != NULL && *hf != '\0') {
        what = "HIBAR_NODE_INDEX";
        FILE *f = fopen(hf, "re");
        if (f == NULL)
            return fail(err, errlen, HB_ERR_IO, "bootstrap env: cannot read HIBAR_HOSTFILE %s: %s",
                        hf, strerror(errno));
        char ln[512];
        unsigned lineno = 0;
        while (fgets(ln, sizeof(ln), f) != NULL) {
            lineno++;
            char *h = strchr(ln, '#');
            if (h != NULL)
                *h = '\0';
            char a[2][256];
            int k = sscanf(ln, "%255s %255s", a[0], a[1]);
            if (k <= 0)
                continue;
            if (k == 2 && strchr(a[1], '=') != NULL)
                k = 1; /* "host slots=4": an Open MPI hostfile */
            struct in_addr ia;
            if (!word_ok(a[0]) || strlen(a[0]) >= sizeof(res->ents[0].name) ||
                (k == 2 && inet_pton(AF_INET, a[1], &ia) != 1)) {
                fclose(f);
                return fail(err, errlen, HB_ERR_CONFIG, "%s:%u: bad host line '%s'", hf, lineno,
                            k == 2 ? a[1] : a[0]);
            }
            hbd_boot_ent_t *ne = realloc(res->ents, (size_t)(n + 1) * sizeof(*ne));
            if (ne == NULL) {
                fclose(f);
                return HB_ERR_NOMEM;
            }
            res->ents = ne;
            memset(&ne[n], 0, sizeof(ne[n]));
            snprintf(ne[n].name, sizeof(ne[n].name), "%s", a[0]);
            if (k == 2)
                snprintf(ne[n].addr, sizeof(ne[n].addr), "%.63s", a[1]);
            n++;
        }
        fclose(f);
        if (n == 0)
            return fail(err, errlen, HB_ERR_CONFIG, "%s: no hosts in HIBAR_HOSTFILE", hf);
        idx_s = getenv("HIBAR_NODE_INDEX");
    } else {
        const char *nl = getenv("SLURM_JOB_NODELIST");
        if (nl == NULL)
            nl = getenv("SLURM_NODELIST");
        if (nl == NULL)
            return fail(err, errlen, HB_ERR_CONFIG,
                        "bootstrap env: no node list: set SLURM_JOB_NODELIST and SLURM_NODEID "
                        "(Slurm does), or HIBAR_HOSTFILE and HIBAR_NODE_INDEX");
        what = "SLURM_NODEID";
        char m[256];
        int rc = hb_cfg_hostlist_expand(nl, &names, &n, m, sizeof(m));
        if (rc != 0)
            return fail(err, errlen, HB_ERR_CONFIG, "environment SLURM_JOB_NODELIST: %s", m);
        res->ents = calloc(n, sizeof(hbd_boot_ent_t));
        if (res->ents == NULL) {
            hb_cfg_hostlist_free(names, n);
            return HB_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (!word_ok(names[i]) || strlen(names[i]) >= sizeof(res->ents[i].name)) {
                fail(err, errlen, HB_ERR_CONFIG, "environment SLURM_JOB_NODELIST: bad name '%s'",
                     names[i]);
                hb_cfg_hostlist_free(names, n);
                return HB_ERR_CONFIG;
            }
            snprintf(res->ents[i].name, sizeof(res->ents[i].name), "%s", names[i]);
        }
        hb_cfg_hostlist_free(names, n);
        idx_s = getenv("SLURM_NODEID");
    }
    res->n = n;
    char *end;
    unsigned long idx = idx_s != NULL ? strtoul(idx_s, &end, 10) : 0;
    if (idx_s == NULL || *idx_s == '\0' || *end != '\0' || idx >= n)
        return fail(err, errlen, HB_ERR_CONFIG,
                    "environment %s: expected a node index below %" PRIu32 ", got '%s'", what, n,
                    idx_s != NULL ? idx_s : "(unset)");
    res->self = (uint32_t)idx;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            if (strcmp(res->ents[i].name, res->ents[j].name) == 0)
                return fail(err, errlen, HB_ERR_CONFIG, "bootstrap env: node '%s' listed twice",
                            res->ents[i].name);
    return 0;
}

static void ep_str(const char *addr, unsigned port, char *out, size_t cap)
{
    snprintf(out, cap, "%s:%u", addr, port);
}

/* Node 0: take every other node's HELLO, then tell all of them the whole cluster. */
static int rdv_serve(const hb_cfg_t *cfg, hbd_boot_res_t *res, unsigned to, char *err,
                     size_t errlen)
{
    uint32_t n = res->n, joined = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, rc = 0;
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(cfg->port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    hbd_boot_rd_t *conn = calloc(n, sizeof(*conn)); /* [i]: node i's connection */
    char line[HBD_BOOT_LINE_MAX], msg[HBD_BOOT_LINE_MAX];

    if (conn == NULL) {
        if (lfd >= 0)
            close(lfd);
        return HB_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        conn[i].fd = -1;
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 128) != 0) {
        rc = fail(err, errlen, HB_ERR_IO,
                  "bootstrap env: node %s cannot serve the rendezvous on TCP port %u: %s",
                  res->ents[0].name, (unsigned)cfg->port, strerror(errno));
        goto out;
    }
    res->ents[0].seen = 1;
    uint64_t deadline = hb_time_now_ns() + (uint64_t)to * 1000000000u;
    while (joined < n && hb_time_now_ns() < deadline) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0)
            continue;
        /* a HELLO comes right after connecting; a silent peer is dropped after 5 s */
        hbd_boot_rd_t tmp = {.fd = cfd};
        char cl[64], name[128], addr[64];
        unsigned idx, port;
        const char *why = NULL;
        int r = line_read(&tmp, line, sizeof(line), hb_time_now_ns() + 5000000000u);
        if (r != 0 || sscanf(line, "HELLO %63s %u %127s %63s %u", cl, &idx, name, addr, &port) != 5)
            why = "malformed HELLO";
        else if (strcmp(cl, cfg->cluster) != 0)
            why = "from another cluster";
        else if (idx == 0 || idx >= n || strcmp(name, res->ents[idx].name) != 0)
            why = "names a node of another list";
        else if (res->ents[idx].seen)
            why = "node already joined";
        else if (!word_ok(addr) || port == 0 || port > 65535)
            why = "bad endpoint";
        if (why != NULL) {
            hb_log_warn("bootstrap env: rendezvous refused a peer: %s", why);
            int l =
                snprintf(msg, sizeof(msg), "ERR rendezvous at %s: %s\n", res->ents[0].name, why);
            (void)write_all(cfd, msg, (size_t)l);
            close(cfd);
            continue;
        }
        hbd_boot_ent_t *e = &res->ents[idx];
        snprintf(e->addr, sizeof(e->addr), "%s", addr);
        e->port = port;
        e->seen = 1;
        conn[idx].fd = cfd;
        joined++;
    }
    if (joined < n) {
        size_t o = (size_t)snprintf(msg, sizeof(msg),
                                    "%" PRIu32 " of %" PRIu32
                                    " nodes did not reach the rendezvous at %s port %u within "
                                    "%u s:",
                                    n - joined, n, res->ents[0].name, (unsigned)cfg->port, to);
        for (uint32_t i = 0; i < n && o < sizeof(msg) - 40; i++)
            if (!res->ents[i].seen)
                o += (size_t)snprintf(msg + o, sizeof(msg) - o, " %s", res->ents[i].name);
        rc = fail(err, errlen, HB_ERR_PEER_LOST, "bootstrap env: %s", msg);
        int l = snprintf(line, sizeof(line), "ERR %s\n", msg);
        for (uint32_t i = 1; i < n; i++)
            if (conn[i].fd >= 0)
                (void)write_all(conn[i].fd, line, (size_t)l);
        goto out;
    }
    /* the answer: every node, and the key pair unless the config names a key file */
    size_t cap = (size_t)n * 256 + 256, o = 0;
    char *ans = malloc(cap);
    if (ans == NULL) {
        rc = HB_ERR_NOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        o += (size_t)snprintf(ans + o, cap - o, "NODE %" PRIu32 " %s 0 %s %u\n", i,
                              res->ents[i].name, res->ents[i].addr, res->ents[i].port);
    if (res->key[0] != '\0')
        o += (size_t)snprintf(ans + o, cap - o, "KEY %s\n", res->key);
    o += (size_t)snprintf(ans + o, cap - o, "END\n");
    for (uint32_t i = 1; i < n; i++)
        if (write_all(conn[i].fd, ans, o) != 0)
            hb_log_warn("bootstrap env: could not answer node %s", res->ents[i].name);
    free(ans);
out:
    for (uint32_t i = 0; i < n; i++)
        if (conn[i].fd >= 0)
            close(conn[i].fd);
    free(conn);
    if (lfd >= 0)
        close(lfd);
    return rc;
}

/* Node i > 0: connect to node 0's rendezvous (retrying until the deadline), say HELLO, read
 * the cluster. */
static int rdv_join(const hb_cfg_t *cfg, hbd_boot_res_t *res, unsigned to, char *err, size_t errlen)
{
    hbd_boot_ent_t *r0 = &res->ents[0], *me = &res->ents[res->self];
    char where[200], line[HBD_BOOT_LINE_MAX];
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(cfg->port)};
    int fd = -1, rc, e = 0;

    const char *rv = getenv("HIBAR_RENDEZVOUS");
    if (r0->addr[0] == '\0' && rv != NULL && *rv != '\0') {
        if (inet_pton(AF_INET, rv, &sa.sin_addr) != 1)
            return fail(err, errlen, HB_ERR_CONFIG,
                        "environment HIBAR_RENDEZVOUS: not an IPv4 address '%s'", rv);
        snprintf(r0->addr, sizeof(r0->addr), "%.63s", rv);
    }
    if (r0->addr[0] == '\0') {
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
        int g = getaddrinfo(r0->name, NULL, &hints, &ai);
        if (g != 0 || ai == NULL)
            return fail(err, errlen, HB_ERR_NOT_FOUND,
                        "bootstrap env: cannot resolve the first node '%s' (rendezvous, port %u): "
                        "%s",
                        r0->name, (unsigned)cfg->port, gai_strerror(g));
        sa.sin_addr = ((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr;
        inet_ntop(AF_INET, &sa.sin_addr, r0->addr, sizeof(r0->addr));
        freeaddrinfo(ai);
    } else {
        inet_pton(AF_INET, r0->addr, &sa.sin_addr);
    }
    ep_str(r0->addr, cfg->port, where, sizeof(where));
    uint64_t t0 = hb_time_now_ns(), deadline = t0 + (uint64_t)to * 1000000000u;
    while (hb_time_now_ns() < deadline) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return fail(err, errlen, HB_ERR_IO, "bootstrap env: socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            break;
        e = errno;
        close(fd);
        fd = -1;
        usleep(250000); /* node 0 may not be listening yet */
    }
    if (fd < 0)
        return fail(err, errlen, HB_ERR_UNAVAIL,
                    "bootstrap env: node %s cannot reach the rendezvous of node %s at %s within "
                    "%u s: %s",
                    me->name, r0->name, where, to, e != 0 ? strerror(e) : "timed out");
    int n = snprintf(line, sizeof(line), "HELLO %s %" PRIu32 " %s %s %u\n", cfg->cluster, res->self,
                     me->name, me->addr, me->port);
    hbd_boot_rd_t *rd = calloc(1, sizeof(*rd));
    if (rd == NULL) {
        close(fd);
        return HB_ERR_NOMEM;
    }
    rd->fd = fd;
    if (write_all(fd, line, (size_t)n) != 0) {
        rc = fail(err, errlen, HB_ERR_IO, "bootstrap env: rendezvous at %s: %s", where,
                  strerror(errno));
        goto out;
    }
    /* node 0 waits up to `to` for the last node from its own start; allow for that */
    deadline = hb_time_now_ns() + (uint64_t)(to + 5) * 1000000000u;
    for (;;) {
        rc = line_read(rd, line, sizeof(line), deadline);
        if (rc != 0) {
            rc = fail(err, errlen, HB_ERR_PEER_LOST,
                      "bootstrap env: the rendezvous at %s (node %s) did not answer: %s", where,
                      r0->name, rd_what(rc));
            goto out;
        }
        rdv_node_t nd;
        char from[240];
        snprintf(from, sizeof(from), "the rendezvous at %s", where);
        if ((rc = rdv_line(line, res, &nd, "bootstrap env", from, err, errlen)) == RDV_END)
            break;
        if (rc == RDV_KEY)
            continue;
        if (rc == RDV_NODE && (nd.i >= res->n || strcmp(nd.host, res->ents[nd.i].name) != 0))
            rc = fail(err, errlen, HB_ERR_PROTO, "bootstrap env: bad line from %s: '%.200s'", from,
                      line);
        if (rc != RDV_NODE)
            goto out;
        snprintf(res->ents[nd.i].addr, sizeof(res->ents[nd.i].addr), "%s", nd.addr);
        res->ents[nd.i].port = nd.port;
        res->ents[nd.i].seen = 1;
    }
    for (uint32_t i = 0; i < res->n; i++)
        if (!res->ents[i].seen) {
            rc = fail(err, errlen, HB_ERR_PROTO, "bootstrap env: rendezvous at %s: node %s missing",
                      where, res->ents[i].name);
            goto out;
        }
    rc = 0;
out:
    close(fd);
    free(rd);
    return rc;
}

static int boot_env(const hb_cfg_t *cfg, hbd_boot_res_t *res, char *err, size_t errlen)
{
    unsigned to = boot_timeout_s();
    int rc;
    if (cfg->port == 0 || cfg->port == 65535)
        return fail(err, errlen, HB_ERR_CONFIG,
                    "bootstrap env needs 'port' (the rendezvous port; daemons use port + 1)");
    if ((rc = env_nodes(res, err, errlen)) != 0)
        return rc;
    hbd_boot_ent_t *me = &res->ents[res->self];
    if (me->addr[0] == '\0' && (rc = addr_pick(me->addr, sizeof(me->addr), err, errlen)) != 0)
        return rc;
    me->port = cfg->port + 1u;
    if (res->n == 1) {
        res->ents[0].seen = 1;
        return cfg->key_file == NULL ? key_new(res->key, sizeof(res->key), err, errlen) : 0;
    }
    if (res->self == 0) {
        if (cfg->key_file == NULL && (rc = key_new(res->key, sizeof(res->key), err, errlen)) != 0)
            return rc;
        return rdv_serve(cfg, res, to, err, errlen);
    }
    return rdv_join(cfg, res, to, err, errlen);
}

/* ----------------------------------------------------------------- the configuration */

/* The nodes as a YAML document in a memfd; *path_p names it (/proc/self/fd/N). */
static int nodes_yaml(const hbd_boot_res_t *res, int *fd_p, char *path, size_t cap)
{
    int fd = memfd_create("hibar-boot-nodes", MFD_CLOEXEC);
    if (fd < 0)
        return HB_ERR_IO;
    FILE *f = fdopen(dup(fd), "w");
    if (f == NULL) {
        close(fd);
        return HB_ERR_IO;
    }
    fprintf(f, "nodes:\n");
    for (uint32_t i = 0; i < res->n; i++)
        fprintf(f, "  - {name: \"%s\", address: \"%s\", port: %u}\n", res->ents[i].name,
                res->ents[i].addr, res->ents[i].port);
    if (fclose(f) != 0) {
        close(fd);
        return HB_ERR_IO;
    }
    *fd_p = fd;
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return 0;
}

/* defaults < the file < the learned nodes < environment < overrides, then finalize. */
static int cfg_rebuild(const char *config, const char *const *over, size_t n_over,
                       const hbd_boot_res_t *res, hb_cfg_t **cfg_p, char *err, size_t errlen)
{
    hb_cfg_t *cfg = NULL;
    int fd = -1, rc;
    char path[64];
    if (config == NULL)
        config = getenv("HIBAR_CONFIG");
    if ((rc = hb_cfg_create(&cfg)) != 0)
        return rc;
    if (config != NULL && *config != '\0' && (rc = hb_cfg_read_file(cfg, config, err, errlen)) != 0)
        goto out;
    if ((rc = nodes_yaml(res, &fd, path, sizeof(path))) != 0) {
        fail(err, errlen, rc, "bootstrap: cannot write the node list: %s", strerror(errno));
        goto out;
    }
    if ((rc = hb_cfg_read_file(cfg, path, err, errlen)) != 0)
        goto out;
    if ((rc = hb_cfg_apply_env(cfg, err, errlen)) != 0)
        goto out;
    for (size_t i = 0; i < n_over && rc == 0; i++)
        rc = hb_cfg_set_kv(cfg, over[i], err, errlen);
    if (rc == 0)
        rc = hb_cfg_finalize(cfg, err, errlen);
out:
    if (fd >= 0)
        close(fd);
    if (rc != 0) {
        hb_cfg_free(cfg);
        return rc;
    }
    *cfg_p = cfg;
    return 0;
}

static int file_replace(const char *path, const char *text, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    int fd = hb_file_create(tmp, O_WRONLY, mode, NULL, 0); /* O_EXCL, O_NOFOLLOW */
    if (fd < 0)
        return HB_ERR_IO;
    size_t l = strlen(text);
    if (write_all(fd, text, l) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return HB_ERR_IO;
    }
    return 0;
}

/* RUN_DIR/cluster.key (the agreed pair) and RUN_DIR/cluster.yaml (for hibar-run). */
static int run_files(const hb_cfg_t *cfg, const hbd_boot_res_t *res, char *err, size_t errlen)
{
    char path[PATH_MAX], why[768];
    int prc = hb_rundir_prepare(cfg->run_dir, why, sizeof(why)); /* before the key goes in */
    if (prc != 0)
        return fail(err, errlen, prc, "%s", why);
    if (cfg->key_file == NULL) {
        char text[256];
        /* two Z85 keys of 40 characters around a ':' (which Z85 also uses: split by length) */
        const char *colon = res->key + 40;
        if (strlen(res->key) != 81 || *colon != ':')
            return fail(err, errlen, HB_ERR_PROTO, "bootstrap: no cluster key was agreed");
        snprintf(text, sizeof(text),
                 "# hibar cluster key pair (CurveZMQ); keep private\npublic=%.40s\nsecret=%s\n",
                 res->key, colon + 1);
        snprintf(path, sizeof(path), "%s/cluster.key", cfg->run_dir);
        if (file_replace(path, text, 0600) != 0)
            return fail(err, errlen, HB_ERR_IO, "cannot write key file %s: %s", path,
                        strerror(errno));
    }
    size_t cap = (size_t)cfg->n_nodes * 300 + 1024, o = 0;
    char *y = malloc(cap);
    if (y == NULL)
        return HB_ERR_NOMEM;
    o += (size_t)snprintf(y + o, cap - o,
                          "# written by hibard (bootstrap %s): the running cluster; "
                          "hibar-run --config THIS_FILE\n"
                          "cluster: %s\nrun_dir: \"%s\"\nbootstrap: static\n",
                          hb_cfg_bootstrap_name(cfg->bootstrap), cfg->cluster, cfg->run_dir);
    if (cfg->key_file != NULL)
        o += (size_t)snprintf(y + o, cap - o, "key_file: \"%s\"\n", cfg->key_file);
    o += (size_t)snprintf(y + o, cap - o, "nodes:\n");
    for (uint32_t i = 0; i < cfg->n_nodes; i++)
        o += (size_t)snprintf(y + o, cap - o, "  - {name: \"%s\", address: \"%s\", port: %u}\n",
                              cfg->nodes[i].name, cfg->nodes[i].address, cfg->nodes[i].port);
    o += (size_t)snprintf(y + o, cap - o, "chassis:\n");
    for (uint32_t c = 0; c < cfg->n_chassis; c++) {
        o += (size_t)snprintf(y + o, cap - o, "  - \"");
        for (uint32_t k = cfg->chassis_start[c]; k < cfg->chassis_start[c + 1]; k++)
            o += (size_t)snprintf(y + o, cap - o, "%s%s", k == cfg->chassis_start[c] ? "" : ",",
                                  cfg->nodes[cfg->chassis_nodes[k]].name);
        o += (size_t)snprintf(y + o, cap - o, "\"\n");
    }
    snprintf(path, sizeof(path), "%s/cluster.yaml", cfg->run_dir);
    int rc = file_replace(path, y, 0644);
    free(y);
    if (rc != 0)
        return fail(err, errlen, HB_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* hibard will be a PMIx server: the client variables of its own launch must go. */
static void env_scrub(void)
{
    for (size_t i = 0; environ[i] != NULL;) {
        const char *v = environ[i];
        if (strncmp(v, "PMIX_", 5) == 0 && strncmp(v, "PMIX_MCA_", 9) != 0) {
            char name[256];
            size_t l = strcspn(v, "=");
            snprintf(name, sizeof(name), "%.*s", (int)(l < 255 ? l : 255), v);
            unsetenv(name);
            continue; /* environ shifted */
        }
        i++;
    }
}

int hbd_boot_load(const char *config, const char *const *over, size_t n_over, const char **node_p,
                  int *foreground_p, hb_cfg_t **cfg_p, char *err, size_t errlen)
{
    hb_cfg_t *cfg = NULL, *full = NULL;
    hbd_boot_res_t res = {0};
    pid_t parent = getppid();
    int rc = hb_cfg_load(config, over, n_over, &cfg, err, errlen);
    if (rc != 0)
        return rc;
    if (cfg->bootstrap != HB_CFG_BOOT_PMIX && cfg->bootstrap != HB_CFG_BOOT_ENV) {
        *cfg_p = cfg;
        return 0;
    }
    const char *kind = hb_cfg_bootstrap_name(cfg->bootstrap);
    uint64_t t0 = hb_time_now_ns();
    rc = cfg->bootstrap == HB_CFG_BOOT_PMIX ? boot_pmix(cfg, &res, err, errlen)
                                            : boot_env(cfg, &res, err, errlen);
    if (cfg->bootstrap == HB_CFG_BOOT_PMIX)
        env_scrub();
    if (rc != 0)
        goto out;
    if ((rc = cfg_rebuild(config, over, n_over, &res, &full, err, errlen)) != 0)
        goto out;
    if (full->n_nodes != res.n ||
        strcmp(full->nodes[res.self].name, res.ents[res.self].name) != 0) {
        rc = fail(err, errlen, HB_ERR_CONFIG,
                  "bootstrap %s: the configuration's overrides changed the node list", kind);
        goto out;
    }
    if ((rc = run_files(full, &res, err, errlen)) != 0)
        goto out;
    hb_log_info("bootstrap %s: node %s (%" PRIu32 " of %" PRIu32 "), %s:%u, in %.1f ms", kind,
                res.ents[res.self].name, res.self, res.n, res.ents[res.self].addr,
                res.ents[res.self].port, (double)(hb_time_now_ns() - t0) / 1e6);
    /* no orphans: the launcher's daemon (slurmstepd, orted) going away stops hibard */
    *foreground_p = 1;
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) {
        rc = fail(err, errlen, HB_ERR_PEER_LOST, "bootstrap %s: the launcher is gone", kind);
        goto out;
    }
    *node_p = full->nodes[res.self].name;
    *cfg_p = full;
    full = NULL;
out:
    free(res.ents);
    hb_cfg_free(cfg);
    hb_cfg_free(full);
    return rc;
}
