/* hb_status.h: the status codes every hibar module returns, and their text. */
#ifndef HB_STATUS_H
#define HB_STATUS_H

/*
 * A status is an int: HB_OK (0) or one of the negative codes below. The list lives here, at
 * the bottom, so that every module can return it without knowing libhibar; the public
 * header libclient/hibar.h spells the same codes HIBAR_SUCCESS / HIBAR_ERR_* with the same
 * values (libclient/status.c checks every pair at compile time), so a status crosses from
 * any module to a libhibar caller unchanged. Add a code here, in hibar.h and in
 * hb_status_str's table together; never renumber one.
 */
typedef enum {
    HB_OK = 0,
    HB_ERR_INVAL = -1,        /* an argument is invalid (NULL buffer, bad rank, bad mask) */
    HB_ERR_NOMEM = -2,        /* out of memory */
    HB_ERR_TIMEOUT = -3,      /* the operation did not complete within its timeout */
    HB_ERR_PEER_LOST = -4,    /* a participant (process, node or daemon) died or left */
    HB_ERR_UNAVAIL = -5,      /* the requested backend, device or service is not available */
    HB_ERR_IO = -6,           /* a system call failed (details in the log) */
    HB_ERR_PROTO = -7,        /* a malformed or unexpected message was received */
    HB_ERR_BUSY = -8,         /* the resource is in use (sync number in flight, call pending) */
    HB_ERR_MISMATCH = -9,     /* participants disagree (mask, size, root, operation) */
    HB_ERR_CONFIG = -10,      /* the configuration is invalid */
    HB_ERR_NOT_INIT = -11,    /* the library or object is not initialized */
    HB_ERR_EXISTS = -12,      /* the object already exists */
    HB_ERR_NOT_FOUND = -13,   /* no such object (node, rank, key, file) */
    HB_ERR_PERM = -14,        /* permission denied (uid mismatch, file mode) */
    HB_ERR_TRUNCATED = -15,   /* a buffer was too small for the data */
    HB_ERR_THREAD = -16,      /* concurrent calls from two threads on one handle */
    HB_ERR_INTERNAL = -17,    /* a bug in hibar */
    HB_ERR_WOULD_BLOCK = -18, /* a non-blocking test found the operation not yet complete */
    HB_ERR_LAST = -18         /* the lowest code */
} hb_status_t;

/* One line describing status; "unknown hibar status" for a value outside the list. Never
 * NULL; the string is static. Thread-safe. */
const char *hb_status_str(int status);

#endif
