#!/usr/bin/env python3
"""thread_stop.py PID: stop one thread of process PID, libpmix's progress thread (the thread
named like the process, not the main one, waiting in epoll_wait), with ptrace (PTRACE_SEIZE +
PTRACE_INTERRUPT stop that thread only; the others run on). Prints "stopped TID" and holds it
until this process ends (the kernel then lets it go). This is how a wedged libpmix looks to
the daemon. Exit 77 when ptrace is not permitted here, 1 when no such thread is found."""
import ctypes
import os
import signal
import sys
import time

PTRACE_SEIZE, PTRACE_INTERRUPT, WALL = 0x4206, 0x4207, 0x40000000
SYS_EPOLL_WAIT = 232  # x86_64


def find_thread(pid):
    comm = open(f"/proc/{pid}/comm").read().strip()
    for _ in range(200):
        for t in sorted(os.listdir(f"/proc/{pid}/task")):
            tid = int(t)
            base = f"/proc/{pid}/task/{tid}"
            try:
                if tid == pid or open(base + "/comm").read().strip() != comm:
                    continue
                call = open(base + "/syscall").read().split()
            except OSError:
                continue
            if call and call[0] == str(SYS_EPOLL_WAIT):
                return tid
        time.sleep(0.05)  # a thread that is running shows no system call: look again
    return None


def main():
    if os.uname().machine != "x86_64":
        print("SKIP: thread_stop.py knows x86_64 system call numbers only")
        return 77
    pid = int(sys.argv[1])
    try:  # what a thread waits in needs ptrace's read access (root, or Yama's scope 0)
        open(f"/proc/{pid}/task/{pid}/syscall").read()
    except PermissionError:
        print("SKIP: no ptrace access to the daemon here (not root, Yama ptrace_scope)")
        return 77
    tid = find_thread(pid)
    if tid is None:
        print(f"thread_stop.py: no libpmix progress thread found in process {pid}")
        return 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
        print(f"SKIP: ptrace not permitted: {os.strerror(ctypes.get_errno())}")
        return 77
    libc.ptrace(PTRACE_INTERRUPT, tid, None, None)
    os.waitpid(tid, WALL)
    print(f"stopped {tid}", flush=True)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
