/* hb_proc.h: the CPU time of other processes, thread by thread, and their resident size (/proc). */
#ifndef HB_PROC_H
#define HB_PROC_H

#include <sys/types.h>

/* Called for each thread: its id, its name (comm, "" if unknown) and the CPU time it has run
 * so far in ns (the scheduler's exact figure, /proc/PID/task/TID/schedstat). */
typedef void (*hb_proc_thread_fn)(void *arg, pid_t pid, pid_t tid, const char *comm, double ns);

/* fn for every thread of pid. 0, or HB_ERR_NOT_FOUND if the process is gone. */
int hb_proc_threads_cpu(pid_t pid, hb_proc_thread_fn fn, void *arg);

/* CPU seconds of every thread of pid together (exact, not in clock ticks), or -1. */
double hb_proc_cpu_seconds(pid_t pid);

/* Resident set size of pid in KiB (/proc/PID/statm), or -1 if the process is gone. */
long hb_proc_rss_kb(pid_t pid);

/* Is process pid gone: no such process, or a zombie (pid <= 0 counts as gone)? */
int hb_proc_gone(pid_t pid);

/* pid's start time (field 22 of /proc/PID/stat, clock ticks after boot), or 0 if it cannot be
 * read: a pid with another start time than before is another process. */
unsigned long long hb_proc_start(pid_t pid);

#endif
