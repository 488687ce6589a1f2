/* bench_out.c: what hibar-bench modes share: output (OSU-style table, JSON lines, CSV), CPU time.
 */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"

#include "hb_log.h"
#include "hb_osu.h"
#include "hbd_emu.h"
#include "hibar.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <libgen.h>
#include <sys/wait.h>
#include <unistd.h>

int hb_bench_common_parse(int *argc, char **argv, hb_bench_common_t *c_p)
{
    hb_bench_common_t c = {.json = 0, .osu = 0, .csv = NULL, .confidence = 0.95};
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            c.json = 1;
        } else if (strcmp(a, "--osu") == 0) {
            c.osu = 1;
        } else if (strcmp(a, "--csv") == 0 || strcmp(a, "--confidence") == 0) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "hibar-bench: %s needs a value\n", a);
                return -1;
            }
            if (strcmp(a, "--csv") == 0) {
                c.csv = argv[++i];
            } else {
                char *end;
                c.confidence = strtod(argv[++i], &end);
                if (*end != '\0' || !(c.confidence > 0.0 && c.confidence < 1.0)) {
                    fprintf(stderr, "hibar-bench: --confidence must be in (0, 1), e.g. 0.95\n");
                    return -1;
                }
            }
        } else {
            argv[out++] = argv[i];
        }
    }
    if (c.json && c.osu) {
        fprintf(stderr, "hibar-bench: --json and --osu exclude each other\n");
        return -1;
    }
    argv[out] = NULL;
    *argc = out;
    *c_p = c;
    return 0;
}

int hb_bench_out_open(hb_bench_out_t *o, const char *bench, const hb_bench_common_t *c)
{
    memset(o, 0, sizeof(*o));
    o->bench = bench;
    o->common = c;
    if (c->csv != NULL) {
        o->csv = fopen(c->csv, "w");
        if (o->csv == NULL) {
            fprintf(stderr, "hibar-bench: cannot write %s: %s\n", c->csv, strerror(errno));
            return -1;
        }
        fprintf(o->csv, "bench,impl,nodes,ranks,size,iters,reps,avg_us,median_us,min_us,max_us,"
                        "p99_us,ci_us,confidence\n");
    }
    return 0;
}

void hb_bench_out_note(hb_bench_out_t *o, const char *fmt, ...)
{
    va_list ap;
    if (o->common->json || o->common->osu)
        return;
    va_start(ap, fmt);
    fputs("# ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
}

void hb_bench_out_row(hb_bench_out_t *o, const hb_bench_row_t *r)
{
    const hb_stats_t *s = r->st;
    if (o->common->json) {
        printf("{\"bench\": \"%s\", \"impl\": \"%s\", \"nodes\": %u, \"ranks\": %u, "
               "\"size\": %llu, \"iters\": %llu, \"median_us\": %.3f, \"min_us\": %.3f, "
               "\"max_us\": %.3f, \"p99_us\": %.3f, \"ci_us\": %.4f, \"avg_us\": %.3f, "
               "\"reps\": %llu, \"confidence\": %.3f%s%s}\n",
               o->bench, r->impl, r->nodes, r->ranks, (unsigned long long)r->size,
               (unsigned long long)r->iters, s->median, s->min, s->max, s->p99, s->ci, s->mean,
               (unsigned long long)r->reps, s->confidence, r->extra_json ? ", " : "",
               r->extra_json ? r->extra_json : "");
    } else if (o->common->osu) {
        if (!o->header_done || strcmp(o->osu_impl, r->impl) != 0) {
            char who[160];
            snprintf(who, sizeof(who), "hibar-bench %s, impl %s, %u ranks on %u nodes",
                     PACKAGE_VERSION, r->impl, r->ranks, r->nodes);
            hb_osu_header(stdout, o->bench, who);
            snprintf(o->osu_impl, sizeof(o->osu_impl), "%s", r->impl);
            o->header_done = 1;
        }
        hb_osu_row(stdout, o->bench, r->size, s->mean, s->min, s->max, r->iters);
    } else {
        if (!o->header_done) {
            printf("# %-8s %16s %10s %10s %11s %10s %10s %8s %10s\n", "Size", "Avg Latency(us)",
                   "Min", "Max", "Iterations", "Median", "P99", "Reps", "CI(us)");
            o->header_done = 1;
        }
        printf("%-10llu %16.2f %10.2f %10.2f %11llu %10.2f %10.2f %8llu %10.3f\n",
               (unsigned long long)r->size, s->mean, s->min, s->max, (unsigned long long)r->iters,
               s->median, s->p99, (unsigned long long)r->reps, s->ci);
    }
    fflush(stdout);
    if (o->csv != NULL)
        fprintf(o->csv, "%s,%s,%u,%u,%llu,%llu,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.3f\n", o->bench,
                r->impl, r->nodes, r->ranks, (unsigned long long)r->size,
                (unsigned long long)r->iters, (unsigned long long)r->reps, s->mean, s->median,
                s->min, s->max, s->p99, s->ci, s->confidence);
}

void hb_bench_out_close(hb_bench_out_t *o)
{
    if (o->csv != NULL && fclose(o->csv) != 0)
        fprintf(stderr, "hibar-bench: writing %s: %s\n", o->common->csv, strerror(errno));
    o->csv = NULL;
}

int hb_bench_fork_ranks(const char *prog, uint32_t n, int (*rank)(uint32_t i, void *arg), void *arg,
                        int *status)
{
    pid_t *pid = calloc(n ? n : 1, sizeof(pid_t));
    int failed = 0;
    if (pid == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    fflush(NULL);
    for (uint32_t i = 0; i < n; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            status[i] = rank(i, arg);
            _exit(0);
        }
        if (pid[i] < 0) {
            fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
            for (uint32_t k = 0; k < i; k++)
                kill(pid[k], SIGKILL);
            n = i;
            failed = 1;
            break;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        int st;
        while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || status[i] != 0) {
            fprintf(stderr, "%s: rank %u failed: %s\n", prog, (unsigned)i,
                    WIFEXITED(st) ? hibar_strerror(status[i]) : "killed");
            failed = 1;
        }
    }
    free(pid);
    return failed ? -1 : 0;
}

void hb_bench_shell_quote(char *out, size_t cap, const char *s)
{
    size_t k = 0;
    if (cap < 3)
        return;
    out[k++] = '\'';
    for (; *s != '\0' && k + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *s;
        }
    }
    out[k++] = '\'';
    out[k] = '\0';
}

void hb_bench_exe_dir(char *buf, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(buf, cap, ".");
        return;
    }
    self[n] = '\0';
    snprintf(buf, cap, "%s", dirname(self));
}

void hb_bench_helper(const char *dir, const char *name, char *buf, size_t cap)
{
    /* the build tree (beside hibar-bench), an installed tree moved as a whole (DESTDIR), the
     * configured pkglibexecdir */
    snprintf(buf, cap, "%s/%s", dir, name);
    if (access(buf, X_OK) == 0)
        return;
    snprintf(buf, cap, "%s/../libexec/%s/%s", dir, PACKAGE, name);
    if (access(buf, X_OK) == 0)
        return;
    snprintf(buf, cap, "%s/%s", HB_PKGLIBEXECDIR, name);
}

/*
 * Where the test-bed scripts are (netns/testbed, netns/client-compare, netns/fence-compare,
 * slurm/up, hb_test.sh): the tests/ of the source tree HIBAR_SRCDIR names; the configured
 * source tree's when this hibar-bench is the build tree's (config.status beside tools/); else
 * the installed copies under libexec/hibar (DIR/../libexec/hibar for a tree moved as a whole,
 * then the configured pkglibexecdir). 1: installed.
 */
int hb_bench_scripts(char *buf, size_t cap)
{
    const char *e = getenv("HIBAR_SRCDIR");
    char dir[PATH_MAX - 64], probe[PATH_MAX + 64];
    if (e != NULL && *e != '\0') {
        snprintf(buf, cap, "%s/tests", e);
        return 0;
    }
    hb_bench_exe_dir(dir, sizeof(dir));
    snprintf(probe, sizeof(probe), "%s/../config.status", dir);
    if (access(probe, F_OK) == 0) {
        snprintf(buf, cap, "%s/tests", HB_ABS_TOP_SRCDIR);
        return 0;
    }
    snprintf(buf, cap, "%s/../libexec/%s", dir, PACKAGE);
    snprintf(probe, sizeof(probe), "%s/netns/testbed", buf);
    if (access(probe, X_OK) != 0)
        snprintf(buf, cap, "%s", HB_PKGLIBEXECDIR);
    return 1;
}

/* An installed tree: the scripts find the programs through these (unless already set). */
static void bench_script_env(const char *dir)
{
    static const char *const prog[][2] = {
        {"HIBAR_RUN", "hibar-run"},
        {"CLUSTER_TOOL", "hibar-cluster"},
        {"HIBAR_TESTBED_LIB_BENCH", "hibar-lib-bench"},
        {"HIBAR_TESTBED_MPI_BENCH", "hibar-mpi-bench"},
    };
    char path[PATH_MAX + 64];
    setenv("HIBARD", hbd_emu_hibard_path(), 0);
    for (size_t i = 0; i < sizeof(prog) / sizeof(prog[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, prog[i][1]);
        setenv(prog[i][0], path, 0);
    }
    hb_bench_helper(dir, "hibar-fence-client", path, sizeof(path));
    setenv("HIBAR_FENCE_CLIENT", path, 0);
    hb_bench_helper(dir, "netns/hb_bwprobe", path, sizeof(path));
    setenv("HIBAR_TESTBED_PROBE", path, 0);
}

int hb_bench_bed_script(const char *who, const char *script, char *qscript, size_t cap)
{
    char tests[PATH_MAX], path[PATH_MAX + 64], bed[PATH_MAX + 64];
    if (geteuid() != 0) {
        fprintf(stderr, "%s: needs root (network namespaces)\n", who);
        return 77;
    }
    int installed = hb_bench_scripts(tests, sizeof(tests));
    snprintf(path, sizeof(path), "%s/netns/%s", tests, script);
    snprintf(bed, sizeof(bed), "%s/netns/testbed", tests);
    if (access(path, X_OK) != 0 || access(bed, X_OK) != 0) {
        fprintf(stderr, "%s: %s not found (%s)\n", who, access(bed, X_OK) != 0 ? bed : path,
                installed ? "not installed? HIBAR_SRCDIR: a source tree"
                          : "HIBAR_SRCDIR: the source tree");
        return 2;
    }
    hb_bench_shell_quote(qscript, cap, path);
    return 0;
}

void hb_bench_bed_cmd(const char *dir, const char *args, const char *bed_name, const char *bed_net,
                      unsigned hosts, char *cmd, size_t cap)
{
    char tests[PATH_MAX], env[PATH_MAX + 256], bed[PATH_MAX + 64], qbed[PATH_MAX + 64];
    if (hb_bench_scripts(tests, sizeof(tests))) { /* installed: the programs beside hibar-bench */
        bench_script_env(dir);
        env[0] = '\0';
    } else { /* the build tree */
        char bld[PATH_MAX + 8], qbld[PATH_MAX + 64];
        snprintf(bld, sizeof(bld), "%s/..", dir);
        hb_bench_shell_quote(qbld, sizeof(qbld), bld);
        snprintf(env, sizeof(env), "top_builddir=%s ", qbld);
    }
    if (getenv("HIBAR_TESTBED_CONFIG") != NULL || hosts == 0) { /* inside a bed: its hosts */
        snprintf(cmd, cap, "%s%s 2>&1", env, args);
        return;
    }
    snprintf(bed, sizeof(bed), "%s/netns/testbed", tests);
    hb_bench_shell_quote(qbed, sizeof(qbed), bed);
    snprintf(cmd, cap, "%s%s --name %s --net %s --sites 1 --nodes %u -- %s 2>&1", env, qbed,
             bed_name, bed_net, hosts, args);
}
