/* hb_rundir.c: a run directory safe in a shared /tmp, and files created in it (hb_rundir.h). */
#include "hb_config.h"
#include "hb_rundir.h"

#include "hb_log.h"
#include "hb_proc.h"
#include "hb_status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- pid files and stale run directories ---- */

int hb_pidfile_lock(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : HB_ERR_IO;
}

int hb_pidfile_live(const char *path)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    char buf[32];
    ssize_t n;
    long pid;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0)
        return errno == ENOENT ? HB_ERR_NOT_FOUND : 1; /* cannot look: do not call it dead */
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0 || fl.l_type != F_UNLCK) {
        close(fd);
        return 1;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0; /* unlocked and empty: its writer died before the rename */
    buf[n] = '\0';
    pid = strtol(buf, NULL, 10);
    return !hb_proc_gone((pid_t)pid);
}

static int has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s && strcmp(name + n - s, suffix) == 0;
}

int hb_rundir_live(const char *dir)
{
    char path[PATH_MAX];
    struct dirent *e;
    int rc = HB_ERR_NOT_FOUND;
    DIR *d = opendir(dir);

    if (d == NULL)
        return errno == ENOENT ? HB_ERR_NOT_FOUND : 1;
    while (rc != 1 && (e = readdir(d)) != NULL) {
        if (!has_suffix(e->d_name, ".pid"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        int live = hb_pidfile_live(path);
        if (live != HB_ERR_NOT_FOUND)
            rc = live;
    }
    closedir(d);
    return rc;
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

/* Is this name one a daemon creates in its run dir? */
static int rundir_ours(const char *name)
{
    static const char *const suffixes[] = {".pid", ".sock", ".ranks", ".port", ".tmp", ".spec"};
    if (strcmp(name, "cluster.key") == 0 || strcmp(name, "cluster.yaml") == 0)
        return 1;
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (has_suffix(name, suffixes[i]))
            return 1;
    return 0;
}

int hb_rundir_remove(const char *dir)
{
    char path[PATH_MAX];
    struct dirent *e;
    struct stat sb;
    int rc = 0;
    DIR *d = opendir(dir);

    if (d == NULL)
        return errno == ENOENT ? 0 : HB_ERR_IO;
    /* the pid files last: a removal cut short (SIGKILL after KillWait) leaves the proof that
     * lets a later daemon finish it */
    for (int pass = 0; pass < 2; pass++, rewinddir(d))
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                has_suffix(e->d_name, ".pid") != pass)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            if (lstat(path, &sb) != 0)
                continue;
            if (S_ISDIR(sb.st_mode) && has_suffix(e->d_name, ".pmix")) {
                if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
                    rc = HB_ERR_IO;
            } else if (!S_ISDIR(sb.st_mode) && rundir_ours(e->d_name)) {
                if (unlink(path) != 0 && errno != ENOENT)
                    rc = HB_ERR_IO;
            }
        }
    closedir(d);
    if (rmdir(dir) == 0 || errno == ENOENT)
        return 0;
    return errno == ENOTEMPTY || errno == EEXIST ? HB_ERR_EXISTS : rc ? rc : HB_ERR_IO;
}

/* An empty directory, untouched for HB_RUNDIR_EMPTY_AGE_S: no daemon is setting it up (one
 * writes its key or pid file into it at once). */
#define HB_RUNDIR_EMPTY_AGE_S 60
static int rundir_empty_old(const char *path, const struct stat *sb)
{
    struct dirent *e;
    int empty = 1;
    DIR *d;

    if (time(NULL) - sb->st_mtime < HB_RUNDIR_EMPTY_AGE_S || (d = opendir(path)) == NULL)
        return 0;
    while (empty && (e = readdir(d)) != NULL)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

int hb_rundir_reclaim(const char *self)
{
    char parent[PATH_MAX], path[PATH_MAX], prefix[32];
    const char *base;
    struct dirent *e;
    struct stat sb;
    int n = 0;
    DIR *d;

    snprintf(parent, sizeof(parent), "%s", self);
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        return 0;
    base = self + (slash - parent) + 1;
    if (slash == parent)
        slash[1] = '\0';
    else
        *slash = '\0';
    snprintf(prefix, sizeof(prefix), "hibar-%u-", (unsigned)geteuid());
    d = opendir(parent);
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || strcmp(e->d_name, base) == 0)
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", strcmp(parent, "/") ? parent : "", e->d_name) >=
            (int)sizeof(path))
            continue;
        if (lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid())
            continue;
        int live = hb_rundir_live(path);
        if (live == HB_ERR_NOT_FOUND && rundir_empty_old(path, &sb) && rmdir(path) == 0) {
            hb_log_warn("removed the empty run dir %s", path);
            n++;
            continue;
        }
        if (live != 0)
            continue;
        int rc = hb_rundir_remove(path);
        if (rc == 0)
            hb_log_warn("reclaimed the stale run dir %s (its daemons are gone)", path);
        else if (rc == HB_ERR_EXISTS)
            hb_log_warn("removed what the dead daemons of %s left in it (other files kept it)",
                        path);
        else
            hb_log_warn("stale run dir %s: cannot remove all of it", path);
        n += rc == 0;
    }
    closedir(d);
    return n;
}
