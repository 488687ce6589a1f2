/* hbd_key.c: the per-cluster CurveZMQ key pair, kept in a 0600 file of two Z85 lines. */
#include "hb_config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "hb_log.h"
#include "hbd_key.h"
#include "hb_status.h"

int hbd_key_generate(const char *path)
{
    char pub[41], sec[41], text[160];
    if (!zmq_has("curve")) {
        hb_log_error("libzmq was built without CurveZMQ; cannot secure the cluster");
        return HB_ERR_UNAVAIL;
    }
    if (zmq_curve_keypair(pub, sec) != 0) {
        hb_log_error("zmq_curve_keypair: %s", zmq_strerror(errno));
        return HB_ERR_INTERNAL;
    }
    /* written under a private name, then linked into place: readers never see half a file,
     * and of several daemons racing to create it exactly one wins (the others get EXISTS) */
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        hb_log_error("cannot create key file %s: %m", tmp);
        return HB_ERR_IO;
    }
    int n = snprintf(text, sizeof(text),
                     "# hibar cluster key pair (CurveZMQ); keep private\n"
                     "public=%s\nsecret=%s\n",
                     pub, sec);
    if (write(fd, text, (size_t)n) != n || fsync(fd) != 0) {
        hb_log_error("cannot write key file %s: %m", tmp);
        close(fd);
        unlink(tmp);
        return HB_ERR_IO;
    }
    close(fd);
    int rc = link(tmp, path);
    int err = errno;
    unlink(tmp);
    if (rc != 0) {
        if (err == EEXIST)
            return HB_ERR_EXISTS;
        errno = err;
        hb_log_error("cannot create key file %s: %m", path);
        return HB_ERR_IO;
    }
    return 0;
}

int hbd_key_load(const char *path, uint8_t pub[32], uint8_t sec[32], char pub_z85[41])
{
    struct stat sb;
    char line[256], zpub[41] = "", zsec[41] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        hb_log_error("cannot open key file %s: %m", path);
        return errno == ENOENT ? HB_ERR_NOT_FOUND : HB_ERR_IO;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        hb_log_error("key file %s is not a regular file", path);
        close(fd);
        return HB_ERR_PERM;
    }
    if ((sb.st_mode & 077) != 0 || sb.st_uid != geteuid()) {
        hb_log_error("key file %s must belong to uid %u and have mode 0600 (has %03o, uid %u)",
                     path, (unsigned)geteuid(), (unsigned)(sb.st_mode & 0777), (unsigned)sb.st_uid);
        close(fd);
        return HB_ERR_PERM;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        hb_log_error("fdopen %s: %m", path);
        close(fd);
        return HB_ERR_IO;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strncmp(line, "public=", 7) == 0 && strlen(line + 7) == 40)
            memcpy(zpub, line + 7, 41);
        else if (strncmp(line, "secret=", 7) == 0 && strlen(line + 7) == 40)
            memcpy(zsec, line + 7, 41);
    }
    fclose(f);
    if (zpub[0] == '\0' || zsec[0] == '\0' || zmq_z85_decode(pub, zpub) == NULL ||
        zmq_z85_decode(sec, zsec) == NULL) {
        hb_log_error("key file %s: expected lines public=<40 Z85 chars> and secret=<...>", path);
        return HB_ERR_CONFIG;
    }
    /* the public key must belong to the secret one */
    char derived[41];
    if (zmq_curve_public(derived, zsec) != 0 || strcmp(derived, zpub) != 0) {
        hb_log_error("key file %s: the public key does not match the secret key", path);
        return HB_ERR_CONFIG;
    }
    memcpy(pub_z85, zpub, 41);
    return 0;
}
