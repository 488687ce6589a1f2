/* hb_rundir.c: a run directory safe in a shared /tmp, and files created in it (hb_rundir.h). */
#include "hb_config.h"
#include "hb_rundir.h"

#include "hb_status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void say(char *err, size_t errlen, const char *fmt, const char *path, const char *more)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, fmt, path, more);
}

/* "uid 65534 (nobody)" */
static const char *who(uid_t uid, char *buf, size_t cap)
{
    struct passwd pw, *p = NULL;
    char pwbuf[1024];
    if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &p) == 0 && p != NULL)
        snprintf(buf, cap, "uid %u (%s)", (unsigned)uid, p->pw_name);
    else
        snprintf(buf, cap, "uid %u", (unsigned)uid);
    return buf;
}

/* "belongs to uid 65534 (nobody), not to uid 0 (root)" */
static const char *not_mine(uid_t owner, char *buf, size_t cap)
{
    char a[96], b[96];
    snprintf(buf, cap, "belongs to %s, not to %s", who(owner, a, sizeof(a)),
             who(geteuid(), b, sizeof(b)));
    return buf;
}

int hb_rundir_prepare(const char *dir, char *err, size_t errlen)
{
    char parent[PATH_MAX], why[256];
    struct stat sb, pb;
    size_t l;

    if (dir == NULL || *dir == '\0' || strlen(dir) >= sizeof(parent)) {
        say(err, errlen, "run dir '%s': empty or too long%s", dir ? dir : "", "");
        return HB_ERR_CONFIG;
    }
    /* the parent: ours, root's, or sticky (/tmp): else its owner could swap the directory */
    snprintf(parent, sizeof(parent), "%s", dir);
    for (l = strlen(parent); l > 1 && parent[l - 1] == '/'; l--)
        parent[l - 1] = '\0';
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        snprintf(parent, sizeof(parent), ".");
    else if (slash == parent)
        parent[1] = '\0';
    else
        *slash = '\0';
    if (stat(parent, &pb) != 0) {
        say(err, errlen, "cannot create run dir %s: %s", dir, strerror(errno));
        return HB_ERR_IO;
    }
    if (pb.st_uid != geteuid() && pb.st_uid != 0 && !(pb.st_mode & S_ISVTX)) {
        char m[600];
        snprintf(m, sizeof(m), "the parent of run dir %s, %s, %s: refused", dir, parent,
                 not_mine(pb.st_uid, why, sizeof(why)));
        say(err, errlen, "%s%s", m, "");
        return HB_ERR_PERM;
    }
    int shared = (pb.st_mode & S_IWOTH) != 0; /* /tmp and the like */

    /* exclusive: mkdir neither follows a symbolic link nor reuses anything */
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        say(err, errlen, "cannot create run dir %s: %s", dir, strerror(errno));
        return HB_ERR_IO;
    }
    if (lstat(dir, &sb) != 0) {
        say(err, errlen, "run dir %s: %s", dir, strerror(errno));
        return HB_ERR_IO;
    }
    if (S_ISLNK(sb.st_mode)) {
        say(err, errlen, "run dir %s is a symbolic link: refused (remove it, or set run_dir)%s",
            dir, "");
        return HB_ERR_PERM;
    }
    if (!S_ISDIR(sb.st_mode)) {
        say(err, errlen, "run dir %s is not a directory%s", dir, "");
        return HB_ERR_IO;
    }
    if (sb.st_uid != geteuid()) {
        say(err, errlen, "run dir %s %s: refused (remove it, or set run_dir)", dir,
            not_mine(sb.st_uid, why, sizeof(why)));
        return HB_ERR_PERM;
    }
    if ((sb.st_mode & 022) != 0) { /* others could have put files there */
        snprintf(why, sizeof(why), "has mode %04o: group or world writable: refused (remove it)",
                 (unsigned)(sb.st_mode & 07777));
        say(err, errlen, "run dir %s %s", dir, why);
        return HB_ERR_PERM;
    }
    /* ours and closed to writers, but readable (mkdir -p under umask 022): 0700 in /tmp */
    if (shared && (sb.st_mode & 077) != 0 && chmod(dir, 0700) != 0) {
        say(err, errlen, "run dir %s: chmod 700: %s", dir, strerror(errno));
        return HB_ERR_IO;
    }
    return 0;
}

int hb_file_create(const char *path, int flags, mode_t mode, char *err, size_t errlen)
{
    struct stat sb;
    char why[256];

    if (lstat(path, &sb) == 0) {
        if (sb.st_uid != geteuid()) {
            say(err, errlen, "%s %s: refused", path, not_mine(sb.st_uid, why, sizeof(why)));
            return HB_ERR_PERM;
        }
        if (S_ISDIR(sb.st_mode)) {
            say(err, errlen, "%s is a directory%s", path, "");
            return HB_ERR_EXISTS;
        }
        unlink(path); /* our own leftover (or our own symbolic link: the link goes, not its
                       * target) */
    }
    int fd = open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        say(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return errno == EEXIST ? HB_ERR_EXISTS : HB_ERR_IO;
    }
    return fd;
}

int hb_file_owned(int fd, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    char why[256];

    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        say(err, errlen, "%s is not a regular file%s", path, "");
        return HB_ERR_PERM;
    }
    if (sb.st_uid != geteuid()) {
        say(err, errlen, "%s %s: refused", path, not_mine(sb.st_uid, why, sizeof(why)));
        return HB_ERR_PERM;
    }
    return 0;
}
