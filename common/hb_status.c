/* hb_status.c: the text of every hibar status code. */
#include "hibar.h"

const char *hibar_strerror(int status)
{
    static const char *const text[] = {
        [0] = "success",
        [1] = "invalid argument",
        [2] = "out of memory",
        [3] = "timed out",
        [4] = "peer lost (a participant died or left)",
        [5] = "not available",
        [6] = "I/O error",
        [7] = "protocol error (malformed or unexpected message)",
        [8] = "busy",
        [9] = "participants disagree",
        [10] = "invalid configuration",
        [11] = "not initialized",
        [12] = "already exists",
        [13] = "not found",
        [14] = "permission denied",
        [15] = "truncated (buffer too small)",
        [16] = "concurrent calls from two threads",
        [17] = "internal error",
        [18] = "operation not yet complete",
    };
    if (status > 0 || status < HIBAR_ERR_LAST)
        return "unknown hibar status";
    return text[-status];
}
