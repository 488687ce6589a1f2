/* hb_proc.c: the CPU time of other processes, thread by thread, and their resident size (/proc). */
#include "hb_config.h" /* first: _GNU_SOURCE */
#include "hb_proc.h"

#include <dirent.h>
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
