/* hb_prom.c: hibard's `stats` counters as Prometheus text (hibar-cluster metrics). */
#include "hb_prom.h"

#include <stdlib.h>
#include <string.h>

#define HB_PROM_MAX_KEYS 96

/* The gauges among the stats fields; every other field counts up from the daemon's start. */
static const struct {
    const char *key, *metric, *help;
    double scale;
} hb_prom_gauges[] = {
    {"in_flight", "hibar_in_flight", "Barriers in flight on the node.", 1},
    {"relay_jobs", "hibar_relay_jobs", "Jobs whose output the daemon relays.", 1},
    {"rss_kb", "hibar_rss_bytes", "Resident memory of the daemon.", 1024},
};
#define HB_PROM_NGAUGES (sizeof(hb_prom_gauges) / sizeof(hb_prom_gauges[0]))

/* Label value with \, " and newline escaped. */
static void hb_prom_label(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void hb_prom_sample(FILE *f, const char *metric, const char *cluster, const char *node,
                           double v)
{
    fprintf(f, "%s{cluster=\"", metric);
    hb_prom_label(f, cluster);
    fputs("\",node=\"", f);
    hb_prom_label(f, node);
    fprintf(f, "\"} %.17g\n", v);
}

/* Value of key in "ok k=v k=v"; 0 found. */
static int hb_prom_field(const char *stats, const char *key, double *v)
{
    size_t kl = strlen(key);

    for (const char *p = stats; p != NULL && *p != '\0'; p = strchr(p, ' ')) {
        while (*p == ' ')
            p++;
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            char *end;
            *v = strtod(p + kl + 1, &end);
            return end == p + kl + 1 ? -1 : 0;
        }
    }
    return -1;
}

/* The field names of a stats line, in order, into keys[] (pointers into a copy). */
static size_t hb_prom_keys(char *copy, char **keys, size_t cap)
{
    size_t n = 0;
    char *save = NULL;

    for (char *t = strtok_r(copy, " ", &save); t != NULL && n < cap;
         t = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(t, '=');
        if (eq == NULL || eq == t)
            continue;
        *eq = '\0';
        if (strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(t))
            keys[n++] = t;
    }
    return n;
}

static int hb_prom_gauge(const char *key)
{
    for (size_t g = 0; g < HB_PROM_NGAUGES; g++)
        if (strcmp(hb_prom_gauges[g].key, key) == 0)
            return (int)g;
    return -1;
}

int hb_prom_write(FILE *f, const char *cluster, const hb_prom_node_t *nodes, size_t n)
{
    char *copy = NULL, *keys[HB_PROM_MAX_KEYS];
    size_t nk = 0;

    fputs("# HELP hibar_up Whether the node's hibard answered on its control socket.\n"
          "# TYPE hibar_up gauge\n",
          f);
    for (size_t i = 0; i < n; i++) {
        hb_prom_sample(f, "hibar_up", cluster, nodes[i].node, nodes[i].stats != NULL);
        if (copy == NULL && nodes[i].stats != NULL) {
            copy = strdup(nodes[i].stats);
            if (copy != NULL)
                nk = hb_prom_keys(copy, keys, HB_PROM_MAX_KEYS);
        }
    }
    for (size_t k = 0; k < nk; k++) {
        char metric[128];
        int g = hb_prom_gauge(keys[k]);
        if (g >= 0) {
            fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", hb_prom_gauges[g].metric,
                    hb_prom_gauges[g].help, hb_prom_gauges[g].metric);
            snprintf(metric, sizeof(metric), "%s", hb_prom_gauges[g].metric);
        } else {
            snprintf(metric, sizeof(metric), "hibar_%s_total", keys[k]);
            fprintf(f, "# HELP %s hibard stats counter %s (hibard(8), CONTROL SOCKET).\n", metric,
                    keys[k]);
            fprintf(f, "# TYPE %s counter\n", metric);
        }
        for (size_t i = 0; i < n; i++) {
            double v;
            if (nodes[i].stats != NULL && hb_prom_field(nodes[i].stats, keys[k], &v) == 0)
                hb_prom_sample(f, metric, cluster, nodes[i].node,
                               g >= 0 ? v * hb_prom_gauges[g].scale : v);
        }
    }
    free(copy);
    return ferror(f) ? -1 : 0;
}
