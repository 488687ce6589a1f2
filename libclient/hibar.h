/* hibar.h: the public interface of libhibar, hierarchical barriers and site-aware collectives. */
#ifndef HIBAR_H
#define HIBAR_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Status codes. Every hibar call returns 0 on success or one of these negative values;
 * hibar_strerror() gives a one-line description. The same codes are used inside hibard.
 */
#define HIBAR_SUCCESS 0
#define HIBAR_ERR_INVAL (-1)      /* an argument is invalid (NULL buffer, bad rank, bad mask) */
#define HIBAR_ERR_NOMEM (-2)      /* out of memory */
#define HIBAR_ERR_TIMEOUT (-3)    /* the operation did not complete within its timeout */
#define HIBAR_ERR_PEER_LOST (-4)  /* a participant (process, node or daemon) died or left */
#define HIBAR_ERR_UNAVAIL (-5)    /* the requested backend, device or service is not available */
#define HIBAR_ERR_IO (-6)         /* a system call failed (details in the log) */
#define HIBAR_ERR_PROTO (-7)      /* a malformed or unexpected message was received */
#define HIBAR_ERR_BUSY (-8)       /* the resource is in use (sync number in flight, call pending) */
#define HIBAR_ERR_MISMATCH (-9)   /* participants disagree (mask, size, root, operation) */
#define HIBAR_ERR_CONFIG (-10)    /* the configuration is invalid */
#define HIBAR_ERR_NOT_INIT (-11)  /* the library or object is not initialized */
#define HIBAR_ERR_EXISTS (-12)    /* the object already exists */
#define HIBAR_ERR_NOT_FOUND (-13) /* no such object (node, rank, key, file) */
#define HIBAR_ERR_PERM (-14)      /* permission denied (uid mismatch, file mode) */
#define HIBAR_ERR_TRUNCATED (-15) /* a buffer was too small for the data */
#define HIBAR_ERR_THREAD (-16)    /* concurrent calls from two threads on one handle */
#define HIBAR_ERR_INTERNAL (-17)  /* a bug in hibar; please report it with the log */
#define HIBAR_ERR_WOULD_BLOCK (-18) /* a non-blocking test found the operation not yet complete */
#define HIBAR_ERR_LAST (-18)

/* Describe a status code. Never NULL; the string is static. Thread-safe. */
const char *hibar_strerror(int status);

#ifdef __cplusplus
}
#endif
#endif /* HIBAR_H */
