/*
 * hb_rundir.h: the run directory (sockets, pid and port files, the generated cluster key) and
 * the files created in it, safe in a shared /tmp (doc/hibar.yaml.5, run_dir).
 *
 * hb_rundir_prepare creates the directory with one mkdir(2) of mode 0700 (which fails rather
 * than follow or reuse anything another user put there) and then checks, with lstat(2), what
 * is there before anything is written into it: a directory, not a symbolic link, owned by this
 * effective uid, whose parent is owned by this uid or root (or is a sticky directory such as
 * /tmp), and not group or world writable. In a world-writable parent (/tmp, /var/tmp,
 * /dev/shm) it is then made 0700 if it was readable by others (mkdir -p under umask 022);
 * elsewhere (/run/hibar, made by systemd's RuntimeDirectory=) it is left as it is. Anything
 * else is refused with a message naming the directory and its owner.
 */
#ifndef HB_RUNDIR_H
#define HB_RUNDIR_H

#include <stddef.h>
#include <sys/types.h>

/* 0; HB_ERR_PERM (owned by another user, a symbolic link, writable by others) or HB_ERR_IO
 * (cannot be created, not a directory), with the reason in err. */
int hb_rundir_prepare(const char *dir, char *err, size_t errlen);

/*
 * Create the file at path afresh: a leftover of this uid (a crashed run's temporary file) is
 * removed first, one of another user is refused; then open(2) with O_CREAT | O_EXCL |
 * O_NOFOLLOW | O_CLOEXEC | flags and mode. The descriptor, or a negative HB_ERR_* with the
 * reason in err (naming the file).
 */
int hb_file_create(const char *path, int flags, mode_t mode, char *err, size_t errlen);

/* An open file: 0 if it is a regular file of this effective uid, else HB_ERR_PERM with a
 * message naming path. */
int hb_file_owned(int fd, const char *path, char *err, size_t errlen);

#endif
