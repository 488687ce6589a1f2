/* hb_log.h: the one logger of hibar (daemon, tools and, through a sink, the client library). */
#ifndef HB_LOG_H
#define HB_LOG_H

#include <stdarg.h>

typedef enum {
    HB_LOG_ERROR = 0,
    HB_LOG_WARN = 1,
    HB_LOG_INFO = 2,
    HB_LOG_DEBUG = 3
} hb_log_level_t;

/* A sink receives each formatted line (no trailing newline). */
typedef void (*hb_log_sink_t)(hb_log_level_t level, const char *line, void *arg);

/* Level from HIBAR_LOG (error|warn|info|debug or 0..3); default warn. Idempotent. */
void hb_log_init_from_env(void);
/* The level a command-line option chose: later defaults (environment, file) do not change it. */
void hb_log_set_level(hb_log_level_t level);
/* The level of the configuration (the key log): applied unless hb_log_set_level chose one. */
void hb_log_set_level_default(hb_log_level_t level);
hb_log_level_t hb_log_get_level(void);
/* Parse "error", "warn", "info", "debug" or a digit; -1 if unknown. */
int hb_log_parse_level(const char *s);
/* Prefix printed before each line on stderr (e.g. "hibard[n003]"); copied. */
void hb_log_set_ident(const char *ident);
/*
 * Where the lines go (a daemon's choice; tools keep stderr). file set: appended to FILE, each
 * line with an ISO-8601 UTC time stamp ("2026-11-27T00:39:12.123Z hibard[n1]: info: ..."),
 * and stderr points there too. Else `to`: "syslog" (facility daemon); "stderr"; "auto" or
 * NULL: the journal when stderr is systemd's journal stream (lines with sd-daemon priority
 * prefixes), syslog when the process detached, stderr otherwise (a terminal, or a pipe or file
 * someone captures). detached < 0: as the last call said. 0, or -1 with errno (the file cannot
 * be opened, an unknown `to`).
 */
int hb_log_open(const char *to, const char *file, int detached);
/* Re-open the log file (after logrotate moved it); 0 when there is none. -1 with errno. */
int hb_log_reopen(void);
/* Replace stderr by a sink (NULL restores stderr). */
void hb_log_set_sink(hb_log_sink_t sink, void *arg);

void hb_log_msg(hb_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define hb_log_error(...) hb_log_msg(HB_LOG_ERROR, __VA_ARGS__)
#define hb_log_warn(...) hb_log_msg(HB_LOG_WARN, __VA_ARGS__)
#define hb_log_info(...) hb_log_msg(HB_LOG_INFO, __VA_ARGS__)
#define hb_log_debug(...) \
    do { \
        if (hb_log_get_level() >= HB_LOG_DEBUG) \
            hb_log_msg(HB_LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
