/* hb_log.h: the one logger of hibar (daemon, tools and, through a sink, the client library). */
#ifndef HB_LOG_H
#define HB_LOG_H

#include <stdarg.h>

typedef enum { HB_LOG_ERROR = 0, HB_LOG_WARN = 1, HB_LOG_INFO = 2, HB_LOG_DEBUG = 3 } hb_log_level_t;

/* A sink receives each formatted line (no trailing newline). */
typedef void (*hb_log_sink_t)(hb_log_level_t level, const char *line, void *arg);

/* Level from HIBAR_LOG (error|warn|info|debug or 0..3); default warn. Idempotent. */
void hb_log_init_from_env(void);
void hb_log_set_level(hb_log_level_t level);
hb_log_level_t hb_log_get_level(void);
/* Parse "error", "warn", "info", "debug" or a digit; -1 if unknown. */
int hb_log_parse_level(const char *s);
/* Prefix printed before each line on stderr (e.g. "hibard[n003]"); copied. */
void hb_log_set_ident(const char *ident);
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
