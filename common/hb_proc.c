/* hb_proc.c: the CPU time of other processes, thread by thread, and their resident size (/proc). */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hb_status.h"

int hb_proc_threads_cpu(pid_t pid, hb_proc_thread_fn fn, void *arg)
{
    char path[96], comm[64];
    struct dirent *de;
    DIR *d;
    int found = 0;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (d == NULL)
        return HB_ERR_NOT_FOUND;
    while ((de = readdir(d)) != NULL) {
        unsigned long long ns = 0;
        FILE *f;
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%.16s/schedstat", (int)pid, de->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue; /* the thread ended */
        if (fscanf(f, "%llu", &ns) != 1)
            ns = 0;
        fclose(f);
        comm[0] = '\0';
        snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm", (int)pid, de->d_name);
        f = fopen(path, "r");
        if (f != NULL) {
            if (fgets(comm, sizeof(comm), f) == NULL)
                comm[0] = '\0';
            fclose(f);
        }
        comm[strcspn(comm, "\n")] = '\0';
        fn(arg, pid, (pid_t)strtol(de->d_name, NULL, 10), comm, (double)ns);
        found = 1;
    }
    closedir(d);
    return found ? 0 : HB_ERR_NOT_FOUND;
}

static void add_ns(void *arg, pid_t pid, pid_t tid, const char *comm, double ns)
{
    (void)pid;
    (void)tid;
    (void)comm;
    *(double *)arg += ns;
}

double hb_proc_cpu_seconds(pid_t pid)
{
    double ns = 0;

    if (pid <= 0 || hb_proc_threads_cpu(pid, add_ns, &ns) != 0)
        return -1;
    return ns / 1e9;
}

long hb_proc_rss_kb(pid_t pid)
{
    char path[64];
    unsigned long size = 0, resident = 0;
    long pg = sysconf(_SC_PAGESIZE);
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (f == NULL)
        return -1;
    int n = fscanf(f, "%lu %lu", &size, &resident);
    fclose(f);
    if (n != 2 || pg <= 0)
        return -1;
    return (long)(resident * (unsigned long)pg / 1024);
}

/* /proc/PID/stat of pid into buf (NUL-terminated); where its fields after the command name
 * start (field 3, the state); NULL if it cannot be read (*gone_p: it does not exist). */
static const char *proc_stat(pid_t pid, char *buf, size_t cap, int *gone_p)
{
    char path[64], *p;
    ssize_t n;
    int fd;

    *gone_p = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *gone_p = errno == ENOENT || errno == ESRCH;
        return NULL;
    }
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' ? p + 2 : NULL;
}

int hb_proc_gone(pid_t pid)
{
    char buf[512];
    const char *f;
    int gone;

    if (pid <= 0)
        return 1;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    /* a zombie still answers kill() */
    f = proc_stat(pid, buf, sizeof(buf), &gone);
    if (f == NULL)
        return gone;
    return f[0] == 'Z' || f[0] == 'X';
}

unsigned long long hb_proc_start(pid_t pid)
{
    char buf[512];
    const char *f;
    int gone;

    f = proc_stat(pid, buf, sizeof(buf), &gone);
    for (int i = 3; f != NULL && i < 22; i++) {
        f = strchr(f, ' ');
        if (f != NULL)
            f++;
    }
    return f != NULL ? strtoull(f, NULL, 10) : 0;
}
