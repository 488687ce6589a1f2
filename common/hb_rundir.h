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

/*
 * Proof that a run directory's daemons are gone. A daemon writes its pid file (NODE.pid) under
 * an open-file-description write lock that it keeps for its life (hb_pidfile_lock on the new
 * file before it is renamed into place): the kernel drops the lock when the process ends, by
 * SIGKILL too. A pid file nobody holds locked whose pid no longer runs is a dead daemon's.
 */

/* Take the life-long lock on an open pid file (fd open for writing). 0 or HB_ERR_IO. */
int hb_pidfile_lock(int fd);

/* 1 if the pid file at path belongs to a live daemon (it is locked, or, unlocked, its pid
 * still runs: a daemon that does not lock, or a pid reused), 0 if its owner is proven gone,
 * HB_ERR_NOT_FOUND if there is no such file. */
int hb_pidfile_live(const char *path);

/* 1 if some daemon of run dir `dir` lives (hb_pidfile_live of its *.pid files), 0 if it has
 * pid files and every owner is gone, HB_ERR_NOT_FOUND if it has none (cannot tell). */
int hb_rundir_live(const char *dir);

/*
 * Remove what hibar daemons put in run dir `dir`: NODE.pid, .sock, .ranks, .port, the NODE.pmix
 * directories, cluster.key, cluster.yaml, relay spec files and temporaries; then the directory
 * itself if that emptied it. Anything else (logs) stays, and so does the directory then.
 * 0 when the directory is gone, HB_ERR_EXISTS when other files kept it, HB_ERR_IO.
 */
int hb_rundir_remove(const char *dir);

/*
 * At a daemon's start: every directory beside run dir `self` (in its parent) named
 * hibar-UID-* and owned by this uid whose daemons are all proven gone (hb_rundir_live 0) is
 * removed as hb_rundir_remove does (which removes the pid files last, so that a removal cut
 * short can be finished), and so is one left empty and untouched for a minute; each logged
 * (warning). `self` is left alone. How many directories were reclaimed.
 */
int hb_rundir_reclaim(const char *self);

#endif
