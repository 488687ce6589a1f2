/* hb_osu.c: OSU micro-benchmarks' output format (hb_osu.h). */
#include "hb_osu.h"

#include <ctype.h>
#include <string.h>

#define OSU_FIELD 18 /* osu_util.h: FIELD_WIDTH */
#define OSU_PREC 2   /* FLOAT_PRECISION */

const char *hb_osu_name(const char *bench, char *buf, size_t cap)
{
    static const char *const map[][2] = {
        {"barrier", "Barrier"},     {"hwbarrier", "Barrier"},   {"cluster-barrier", "Barrier"},
        {"scatter", "Scatter"},     {"gather", "Gather"},       {"bcast", "Broadcast"},
        {"allgather", "Allgather"}, {"alltoall", "All-to-All"}, {"reduce", "Reduce"},
        {"allreduce", "Allreduce"}, {"fence", "Fence"},
    };
    if (cap == 0)
        return "";
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (bench != NULL && strcmp(bench, map[i][0]) == 0) {
            snprintf(buf, cap, "%s", map[i][1]);
            return buf;
        }
    snprintf(buf, cap, "%s", bench != NULL ? bench : "");
    buf[0] = (char)toupper((unsigned char)buf[0]);
    return buf;
}

int hb_osu_sized(const char *bench)
{
    size_t n = bench != NULL ? strlen(bench) : 0;
    return !(n >= 7 && strcmp(bench + n - 7, "barrier") == 0);
}

void hb_osu_header(FILE *f, const char *bench, const char *who)
{
    char name[64];
    fprintf(f, "# OSU MPI %s Latency Test", hb_osu_name(bench, name, sizeof(name)));
    if (who != NULL && *who != '\0')
        fprintf(f, " (%s)", who);
    fputc('\n', f);
    if (hb_osu_sized(bench)) {
        fprintf(f, "%-*s", 10, "# Size");
        fprintf(f, "%*s", OSU_FIELD, "Avg Latency(us)");
    } else {
        fprintf(f, "# Avg Latency(us)");
    }
    fprintf(f, "%*s%*s%*s\n", OSU_FIELD, "Min Latency(us)", OSU_FIELD, "Max Latency(us)", 12,
            "Iterations");
}

void hb_osu_row(FILE *f, const char *bench, uint64_t size, double avg_us, double min_us,
                double max_us, uint64_t iters)
{
    if (hb_osu_sized(bench))
        fprintf(f, "%-*llu%*.*f", 10, (unsigned long long)size, OSU_FIELD, OSU_PREC, avg_us);
    else
        fprintf(f, "%*.*f", 17, OSU_PREC, avg_us);
    fprintf(f, "%*.*f%*.*f%*llu\n", OSU_FIELD, OSU_PREC, min_us, OSU_FIELD, OSU_PREC, max_us, 12,
            (unsigned long long)iters);
}
