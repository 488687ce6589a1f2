/* hb_log.c: leveled logging to stderr, a file, syslog or the journal, or to a user sink. */
#include "hb_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static hb_log_level_t hb_log_level = HB_LOG_WARN;
static int hb_log_level_explicit; /* set by hb_log_set_level (a command-line option) */
static hb_log_sink_t hb_log_sink;
static void *hb_log_sink_arg;
static char hb_log_ident[64] = "hibar";

/* Where lines go (hb_log_open); HB_LOG_TO_STDERR until then. */
typedef enum { TO_STDERR, TO_FILE, TO_SYSLOG, TO_JOURNAL } hb_log_to_t;
static hb_log_to_t hb_log_to = TO_STDERR;
static char hb_log_file[4096];

int hb_log_parse_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (s == NULL)
        return -1;
    if (s[0] >= '0' && s[0] <= '3' && s[1] == '\0')
        return s[0] - '0';
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    if (strcasecmp(s, "warning") == 0)
        return HB_LOG_WARN;
    return -1;
}

void hb_log_init_from_env(void)
{
    int l = hb_log_parse_level(getenv("HIBAR_LOG"));
    if (l >= 0 && !hb_log_level_explicit)
        hb_log_level = (hb_log_level_t)l;
}

void hb_log_set_level(hb_log_level_t level)
{
    hb_log_level = level;
    hb_log_level_explicit = 1;
}

void hb_log_set_level_default(hb_log_level_t level)
{
    if (!hb_log_level_explicit && (int)level >= 0 && level <= HB_LOG_DEBUG)
        hb_log_level = level;
}

hb_log_level_t hb_log_get_level(void) { return hb_log_level; }

void hb_log_set_ident(const char *ident)
{
    snprintf(hb_log_ident, sizeof(hb_log_ident), "%s", ident ? ident : "hibar");
    if (hb_log_to == TO_SYSLOG) {
        closelog();
        openlog(hb_log_ident, LOG_NDELAY, LOG_DAEMON);
    }
}

void hb_log_set_sink(hb_log_sink_t sink, void *arg)
{
    hb_log_sink = sink;
    hb_log_sink_arg = arg;
}

/* Is stderr the journal's stream (systemd sets JOURNAL_STREAM=DEV:INO for it)? */
static int hb_log_stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat sb;

    if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &sb) != 0)
        return 0;
    return (unsigned long long)sb.st_dev == dev && (unsigned long long)sb.st_ino == ino;
}

int hb_log_open(const char *to, const char *file, int detached)
{
    static int last_detached;

    if (detached < 0)
        detached = last_detached;
    last_detached = detached;
    if (file != NULL && *file != '\0') {
        int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0)
            return -1;
        /* stderr too: what libraries and child processes write lands in the same file */
        if (fd != 2 && dup2(fd, 2) < 0) {
            close(fd);
            return -1;
        }
        if (fd != 2)
            close(fd);
        snprintf(hb_log_file, sizeof(hb_log_file), "%s", file);
        hb_log_to = TO_FILE;
        return 0;
    }
    hb_log_file[0] = '\0';
    if (to == NULL || *to == '\0' || strcmp(to, "auto") == 0) {
        if (hb_log_stderr_is_journal())
            hb_log_to = TO_JOURNAL;
        else if (detached || !isatty(2))
            hb_log_to = detached ? TO_SYSLOG : TO_STDERR; /* stderr captured: keep it */
        else
            hb_log_to = TO_STDERR;
    } else if (strcmp(to, "syslog") == 0) {
        hb_log_to = TO_SYSLOG;
    } else if (strcmp(to, "stderr") == 0) {
        hb_log_to = hb_log_stderr_is_journal() ? TO_JOURNAL : TO_STDERR;
    } else {
        errno = EINVAL;
        return -1;
    }
    if (hb_log_to == TO_SYSLOG)
        openlog(hb_log_ident, LOG_NDELAY, LOG_DAEMON);
    return 0;
}

int hb_log_reopen(void)
{
    char file[sizeof(hb_log_file)];

    if (hb_log_to != TO_FILE)
        return 0;
    snprintf(file, sizeof(file), "%s", hb_log_file);
    return hb_log_open(NULL, file, 0);
}

/* "2026-11-27T00:39:12.123Z" (UTC, ISO 8601). */
static void hb_log_stamp(char *buf, size_t cap)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void hb_log_msg(hb_log_level_t level, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warn", "info", "debug"};
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    int saved = errno; /* keep %m meaningful and errno untouched for the caller */
    char line[1024], stamp[40];
    va_list ap;
    if (level > hb_log_level)
        return;
    va_start(ap, fmt);
    errno = saved;
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (hb_log_sink != NULL) {
        hb_log_sink(level, line, hb_log_sink_arg);
    } else if (hb_log_to == TO_SYSLOG) {
        syslog(prio[level], "%s: %s", tags[level], line);
    } else if (hb_log_to == TO_JOURNAL) { /* sd-daemon(3) priority prefix; the journal stamps */
        fprintf(stderr, "<%d>%s: %s: %s\n", prio[level], hb_log_ident, tags[level], line);
    } else if (hb_log_to == TO_FILE) {
        hb_log_stamp(stamp, sizeof(stamp));
        fprintf(stderr, "%s %s: %s: %s\n", stamp, hb_log_ident, tags[level], line);
    } else {
        fprintf(stderr, "%s: %s: %s\n", hb_log_ident, tags[level], line);
    }
    errno = saved;
}
