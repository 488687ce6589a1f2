/* hb_status.c: the text of every hibar status code. */
#include "hb_status.h"

#include <stddef.h>

static const char *const text[] = {
    [HB_OK] = "success",
    [-HB_ERR_INVAL] = "invalid argument",
    [-HB_ERR_NOMEM] = "out of memory",
    [-HB_ERR_TIMEOUT] = "timed out",
    [-HB_ERR_PEER_LOST] = "peer lost (a participant died or left)",
    [-HB_ERR_UNAVAIL] = "not available",
    [-HB_ERR_IO] = "I/O error",
    [-HB_ERR_PROTO] = "protocol error (malformed or unexpected message)",
    [-HB_ERR_BUSY] = "busy",
    [-HB_ERR_MISMATCH] = "participants disagree",
    [-HB_ERR_CONFIG] = "invalid configuration",
    [-HB_ERR_NOT_INIT] = "not initialized",
    [-HB_ERR_EXISTS] = "already exists",
    [-HB_ERR_NOT_FOUND] = "not found",
    [-HB_ERR_PERM] = "permission denied",
    [-HB_ERR_TRUNCATED] = "truncated (buffer too small)",
    [-HB_ERR_THREAD] = "concurrent calls from two threads",
    [-HB_ERR_INTERNAL] = "internal error",
    [-HB_ERR_WOULD_BLOCK] = "operation not yet complete",
};
_Static_assert(sizeof(text) / sizeof(text[0]) == 1 - HB_ERR_LAST, "a status code has no text");

const char *hb_status_str(int status)
{
    if (status > HB_OK || status < HB_ERR_LAST || text[-status] == NULL)
        return "unknown hibar status";
    return text[-status];
}
