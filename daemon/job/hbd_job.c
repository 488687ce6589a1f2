/* hbd_job.c: the job object and its registry; job specs, the file hibar-run hands to every daemon
 * of a job (format in hbd_job.h). */
#include "hb_config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hb_log.h"
#include "hbd_job.h"
#include "hb_status.h"

/* ---- the registry ---- */

void hbd_jobs_set_ops(hbd_t *d, const hbd_job_ops_t *ops)
{
    d->jobs.ops = ops;
}

hbd_job_t *hbd_job_get(const hbd_t *d, uint64_t id)
{
    for (hbd_job_t *j = d->jobs.head; j != NULL; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

int hbd_job_open(hbd_t *d, uint64_t id, hbd_job_t **j_p)
{
    hbd_job_t *j = hbd_job_get(d, id);
    if (j == NULL) {
        if ((j = calloc(1, sizeof(*j))) == NULL)
            return HB_ERR_NOMEM;
        j->d = d;
        j->id = id;
        j->fd = -1;
        snprintf(j->nspace, sizeof(j->nspace), "hibar.%" PRIu64, id);
        j->next = d->jobs.head;
        d->jobs.head = j;
        d->jobs.n_jobs++;
    }
    *j_p = j;
    return 0;
}

void hbd_job_release(hbd_job_t *j)
{
    if (j->relay != NULL || j->launched || j->ranks != NULL || j->step != NULL)
        return;
    hbd_jobs_t *js = &j->d->jobs;
    for (hbd_job_t **pp = &js->head; *pp != NULL; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            js->n_jobs--;
            break;
        }
    js->n_local_ranks -= j->counted;
    js->n_local_jobs -= j->counted != 0;
    free(j->nodes);
    free(j->member);
    free(j);
}

int hbd_job_set_nodes(hbd_job_t *j, const uint32_t *map, uint32_t size, uint32_t *bad_p)
{
    uint32_t n = j->d->topo->n_nodes, n_nodes = 0;
    uint8_t *member = calloc(n ? n : 1, 1);
    if (member == NULL)
        return HB_ERR_NOMEM;
    for (uint32_t r = 0; r < size; r++) {
        if (map[r] >= n) {
            free(member);
            *bad_p = r;
            return HB_ERR_INVAL;
        }
        n_nodes += !member[map[r]];
        member[map[r]] = 1;
    }
    if (j->member != NULL) { /* known from another part: the same spec */
        int same = memcmp(member, j->member, n) == 0;
        free(member);
        *bad_p = UINT32_MAX;
        return same ? 0 : HB_ERR_INVAL;
    }
    uint32_t *nodes = calloc(n_nodes ? n_nodes : 1, sizeof(uint32_t));
    if (nodes == NULL) {
        free(member);
        return HB_ERR_NOMEM;
    }
    for (uint32_t i = 0, k = 0; i < n; i++)
        if (member[i])
            nodes[k++] = i;
    j->member = member;
    j->nodes = nodes;
    j->n_nodes = n_nodes;
    return 0;
}

void hbd_job_count(hbd_job_t *j)
{
    hbd_jobs_t *js = &j->d->jobs;
    js->n_local_ranks -= j->counted;
    js->n_local_jobs -= j->counted != 0;
    j->counted = j->done_sent ? 0 : j->n_local;
    js->n_local_ranks += j->counted;
    js->n_local_jobs += j->counted != 0;
}

void hbd_job_done(hbd_job_t *j)
{
    j->done_sent = 1;
    j->d->jobs.n_local_ranks -= j->counted;
    j->d->jobs.n_local_jobs -= j->counted != 0;
    j->counted = 0;
}

hbd_job_t *hbd_job_find(const hbd_t *d, const char *nspace)
{
    for (hbd_job_t *j = d->jobs.head; j != NULL; j = j->next)
        if (j->launched && strncmp(j->nspace, nspace, sizeof(j->nspace)) == 0)
            return j;
    return NULL;
}

hbd_job_t *hbd_job_by_no(const hbd_t *d, uint32_t jobno)
{
    for (hbd_job_t *j = jobno != 0 ? d->jobs.head : NULL; j != NULL; j = j->next)
        if (j->jobno == jobno)
            return j;
    return NULL;
}

hbd_rank_t *hbd_job_rank(hbd_job_t *j, uint32_t rank)
{
    for (uint32_t k = 0; k < j->n_local; k++)
        if (j->local[k].rank == rank)
            return &j->local[k];
    return NULL;
}

void hbd_job_rank_abort(hbd_rank_t *r, int status, const char *msg)
{
    const hbd_job_ops_t *ops = r->job->d->jobs.ops;
    if (ops != NULL && ops->rank_abort != NULL)
        ops->rank_abort(r, status, msg);
}

void hbd_job_fail(hbd_job_t *j, const char *why)
{
    const hbd_job_ops_t *ops = j->d->jobs.ops;
    if (ops != NULL && ops->fail != NULL)
        ops->fail(j, why);
}

/* ---- the spec file ---- */

void hbd_job_spec_free(hbd_job_spec_t *s)
{
    if (s == NULL)
        return;
    for (uint32_t i = 0; i < s->n_argv; i++)
        free(s->argv[i]);
    for (uint32_t i = 0; i < s->n_env; i++)
        free(s->env[i]);
    free(s->argv);
    free(s->env);
    free(s->map);
    free(s->cwd);
    free(s);
}

int hbd_job_spec_read(const char *path, char **buf_p, size_t *len_p)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat sb;
    if (fd < 0)
        return HB_ERR_IO;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
        (uint64_t)sb.st_size > HBD_JOB_SPEC_MAX) {
        close(fd);
        return HB_ERR_PERM;
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    size_t len = 0;
    if (buf == NULL) {
        close(fd);
        return HB_ERR_NOMEM;
    }
    while (len < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + len, (size_t)sb.st_size - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (len != (size_t)sb.st_size) {
        free(buf);
        return HB_ERR_IO;
    }
    buf[len] = '\0';
    *buf_p = buf;
    *len_p = len;
    return 0;
}

/* Append a string to a NULL-terminated vector. */
static int vec_push(char ***v, uint32_t *n, const char *s, size_t len)
{
    char **nv = realloc(*v, (*n + 2) * sizeof(char *));
    if (nv == NULL)
        return HB_ERR_NOMEM;
    *v = nv;
    nv[*n] = strndup(s, len);
    if (nv[*n] == NULL)
        return HB_ERR_NOMEM;
    nv[++*n] = NULL;
    return 0;
}

int hbd_job_spec_load(const char *path, hbd_job_spec_t **spec_p, char *err, size_t cap)
{
    char *buf = NULL;
    size_t len = 0;
    unsigned line = 1;
    int rc = hbd_job_spec_read(path, &buf, &len);
    if (rc != 0) {
        snprintf(err, cap, "%s: cannot read the job spec (%s)", path, hb_status_str(rc));
        return rc;
    }
    hbd_job_spec_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        free(buf);
        return HB_ERR_NOMEM;
    }
    const char *p = buf, *end = buf + len;
    int have_hdr = 0, have_map = 0;
    rc = HB_ERR_INVAL;
    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL || sp == NULL || sp > nl) {
            snprintf(err, cap, "%s:%u: malformed record", path, line);
            goto err_out;
        }
        size_t klen = (size_t)(sp - p);
        const char *v = sp + 1;
        char *e = NULL;
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(p, k, klen) == 0)
        if (KEY("hibar-job")) {
            if (strtoul(v, &e, 10) != 1 || e != nl) {
                snprintf(err, cap, "%s:%u: unknown spec version", path, line);
                goto err_out;
            }
            have_hdr = 1;
        } else if (!have_hdr) {
            snprintf(err, cap, "%s:%u: not a hibar job spec", path, line);
            goto err_out;
        } else if (KEY("slot")) {
            /* the cluster's root daemon gave it: job number, first sync number, how many */
            unsigned long x[3];
            const char *q = v;
            for (int k = 0; k < 3; k++) {
                errno = 0;
                x[k] = strtoul(q, &e, 10);
                if (e == q || *q == '-' || errno != 0 || x[k] > UINT32_MAX) {
                    e = NULL;
                    break;
                }
                q = e;
            }
            if (e != nl || x[0] == 0 || x[2] == 0 || x[1] + x[2] > 64 || s->jobno != 0) {
                snprintf(err, cap, "%s:%u: bad slot (job number, sync base, sync count)", path,
                         line);
                goto err_out;
            }
            s->jobno = (uint32_t)x[0];
            s->sync_base = (uint32_t)x[1];
            s->n_sync = (uint32_t)x[2];
        } else if (KEY("id") || KEY("size") || KEY("tag")) {
            errno = 0;
            unsigned long long x = strtoull(v, &e, 10);
            if (e != nl || errno != 0 || *v == '-') {
                snprintf(err, cap, "%s:%u: bad number", path, line);
                goto err_out;
            }
            if (KEY("id"))
                s->id = x;
            else if (KEY("tag"))
                s->tag = x != 0;
            else if (x == 0 || x > 1000000 || s->size != 0) {
                snprintf(err, cap, "%s:%u: size must be 1..1000000 and given once", path, line);
                goto err_out;
            } else {
                s->size = (uint32_t)x;
            }
        } else if (KEY("map")) {
            if (s->size == 0 || have_map) {
                snprintf(err, cap, "%s:%u: map before size, or twice", path, line);
                goto err_out;
            }
            s->map = calloc(s->size, sizeof(uint32_t));
            if (s->map == NULL) {
                rc = HB_ERR_NOMEM;
                goto err_out;
            }
            const char *q = v;
            for (uint32_t i = 0; i < s->size; i++) {
                errno = 0;
                unsigned long x = strtoul(q, &e, 10);
                if (e == q || e > nl || errno != 0 || x >= UINT32_MAX) {
                    snprintf(err, cap, "%s:%u: map needs %" PRIu32 " node ids", path, line,
                             s->size);
                    goto err_out;
                }
                s->map[i] = (uint32_t)x;
                q = e;
            }
            if (q != nl) {
                snprintf(err, cap, "%s:%u: map has more than %" PRIu32 " node ids", path, line,
                         s->size);
                goto err_out;
            }
            have_map = 1;
        } else if (KEY("cwd") || KEY("arg") || KEY("env")) {
            errno = 0;
            unsigned long long n = strtoull(v, &e, 10);
            if (e >= end || *e != ':' || errno != 0 || n > (unsigned long long)(end - e - 1) ||
                e + 1 + n >= end || e[1 + n] != '\n' || memchr(e + 1, '\0', n) != NULL) {
                snprintf(err, cap, "%s:%u: bad string record", path, line);
                goto err_out;
            }
            const char *str = e + 1;
            if (KEY("cwd")) {
                free(s->cwd);
                if ((s->cwd = strndup(str, n)) == NULL) {
                    rc = HB_ERR_NOMEM;
                    goto err_out;
                }
            } else if (KEY("arg")) {
                if ((rc = vec_push(&s->argv, &s->n_argv, str, n)) != 0)
                    goto err_out;
            } else if ((rc = vec_push(&s->env, &s->n_env, str, n)) != 0) {
                goto err_out;
            }
            rc = HB_ERR_INVAL;
            for (const char *c = str; c < str + n; c++)
                line += *c == '\n';
            nl = str + n;
        } else {
            snprintf(err, cap, "%s:%u: unknown key '%.*s'", path, line,
                     (int)(klen > 32 ? 32 : klen), p);
            goto err_out;
        }
#undef KEY
        p = nl + 1;
        line++;
    }
    if (!have_hdr || !have_map || s->n_argv == 0 || s->argv[0][0] != '/') {
        snprintf(err, cap, "%s: incomplete spec (header, size, map and an absolute argv[0] needed)",
                 path);
        goto err_out;
    }
    if (s->env == NULL && (rc = vec_push(&s->env, &s->n_env, "HIBAR_JOB=1", 11)) != 0)
        goto err_out;
    free(buf);
    *spec_p = s;
    return 0;
err_out:
    free(buf);
    hbd_job_spec_free(s);
    return rc;
}

static int put_str(FILE *f, const char *key, const char *s)
{
    return fprintf(f, "%s %zu:%s\n", key, strlen(s), s) < 0;
}

int hbd_job_spec_write(const char *path, const hbd_job_spec_t *s)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        hb_log_error("cannot create job spec %s: %m", path);
        return HB_ERR_IO;
    }
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        close(fd);
        unlink(path);
        return HB_ERR_IO;
    }
    int bad = fprintf(f, "hibar-job 1\nid %" PRIu64 "\nsize %" PRIu32 "\ntag %d\n", s->id, s->size,
                      s->tag) < 0;
    if (s->jobno != 0)
        bad |= fprintf(f, "slot %" PRIu32 " %" PRIu32 " %" PRIu32 "\n", s->jobno, s->sync_base,
                       s->n_sync) < 0;
    bad |= fputs("map", f) == EOF;
    for (uint32_t i = 0; i < s->size; i++)
        bad |= fprintf(f, " %" PRIu32, s->map[i]) < 0;
    bad |= fputc('\n', f) == EOF;
    if (s->cwd != NULL)
        bad |= put_str(f, "cwd", s->cwd);
    for (uint32_t i = 0; i < s->n_argv; i++)
        bad |= put_str(f, "arg", s->argv[i]);
    for (uint32_t i = 0; i < s->n_env; i++)
        bad |= put_str(f, "env", s->env[i]);
    bad |= fclose(f) != 0;
    if (bad) {
        hb_log_error("cannot write job spec %s: %m", path);
        unlink(path);
        return HB_ERR_IO;
    }
    return 0;
}
