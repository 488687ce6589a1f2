/* bench_plot.c: hibar-bench --plot: data files, gnuplot scripts, PNG (or SVG); size lists. */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "bench.h"
#include "hb_size.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int hb_bench_sizes_parse(const char *spec, size_t *sizes, int max, int *n_p)
{
    size_t n;
    if (max <= 0 || hb_size_list_parse(spec, 0, 1ull << 30, sizes, (size_t)max, &n) != 0) {
        fprintf(stderr,
                "hibar-bench: bad size list '%s' (N[K|M|G], FROM..TO[:STEP], at most %d, each "
                "<= 1G)\n",
                spec, max);
        return -1;
    }
    *n_p = (int)n;
    return 0;
}

int hb_bench_plot(const char *dir, const char *name, const char *title, const char *xlabel,
                  const char *ylabel, const hb_bench_series_t *ser, int nser, int logxy)
{
    char path[4096];
    FILE *f;
    int status;
    pid_t pid;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "hibar-bench --plot: mkdir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s.dat", dir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "hibar-bench --plot: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < nser; i++) {
        fprintf(f, "# %s\n", ser[i].title);
        for (size_t k = 0; k < ser[i].n; k++)
            fprintf(f, "%.6g %.6g\n", ser[i].x[k], ser[i].y[k]);
        fputs("\n\n", f);
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/%s.gp", dir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "hibar-bench --plot: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f,
            "# %s.gp: written by hibar-bench; `gnuplot %s.gp` in this directory renders %s.png\n"
            "set terminal pngcairo size 1000,650 noenhanced\n"
            "set output '%s.png'\n"
            "set title \"%s\"\nset xlabel \"%s\"\nset ylabel \"%s\"\nset grid\n"
            "set key left top\n%s",
            name, name, name, name, title, xlabel, ylabel, logxy ? "set logscale xy\n" : "");
    fputs("plot ", f);
    for (int i = 0; i < nser; i++)
        fprintf(f, "%s'%s.dat' index %d with linespoints pt %d title \"%s\"",
                i ? ", \\\n     " : "", name, i, 1 + i % 12, ser[i].title);
    fputc('\n', f);
    fclose(f);
    /* render: gnuplot in dir; a missing gnuplot leaves the script */
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
        if (chdir(dir) != 0)
            _exit(127);
        snprintf(path, sizeof(path), "%s.gp", name);
        execlp("gnuplot", "gnuplot", path, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "hibar-bench --plot: gnuplot did not render %s/%s.gp (script kept)\n", dir,
                name);
        return -1;
    }
    fprintf(stderr, "hibar-bench: wrote %s/%s.png\n", dir, name);
    return 0;
}
