/* hb_log.c: leveled logging to stderr or to a user sink. */
#include "hb_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static hb_log_level_t hb_log_level = HB_LOG_WARN;
static hb_log_sink_t hb_log_sink;
static void *hb_log_sink_arg;
static char hb_log_ident[64] = "hibar";

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
    if (l >= 0)
        hb_log_level = (hb_log_level_t)l;
}

void hb_log_set_level(hb_log_level_t level) { hb_log_level = level; }
hb_log_level_t hb_log_get_level(void) { return hb_log_level; }

void hb_log_set_ident(const char *ident)
{
    snprintf(hb_log_ident, sizeof(hb_log_ident), "%s", ident ? ident : "hibar");
}

void hb_log_set_sink(hb_log_sink_t sink, void *arg)
{
    hb_log_sink = sink;
    hb_log_sink_arg = arg;
}

void hb_log_msg(hb_log_level_t level, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warn", "info", "debug"};
    int saved = errno; /* keep %m meaningful and errno untouched for the caller */
    char line[1024];
    va_list ap;
    if (level > hb_log_level)
        return;
    va_start(ap, fmt);
    errno = saved;
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (hb_log_sink != NULL)
        hb_log_sink(level, line, hb_log_sink_arg);
    else
        fprintf(stderr, "%s: %s: %s\n", hb_log_ident, tags[level], line);
    errno = saved;
}
