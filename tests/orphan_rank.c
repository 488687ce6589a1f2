/* orphan_rank.c: a libhibar rank for tests/daemon_orphans.sh: rank 0 reports how a barrier
 * that rank 1 never joins ends once their hibard is killed; rank 1 waits to be killed. */
/*
 * Usage: orphan_rank FILE. Each rank writes "pid P" and then "waiting" to FILE.RANK (not to
 * stdout: the daemon that read it is the one the test kills); rank 0 then calls
 * hibar_barrier and writes "rc N NAME" when it returns, and exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "hibar.h"

int main(int argc, char **argv)
{
    char path[4096];
    hibar_t *h = NULL;
    int rank, rc;
    FILE *f;

    if (argc != 2) {
        fprintf(stderr, "usage: orphan_rank FILE\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = hibar_init(&h);
    if (rc != 0 || hibar_rank(h, &rank) != 0) {
        fprintf(stderr, "orphan_rank: hibar_init: %s\n", hibar_strerror(rc));
        return 1;
    }
    snprintf(path, sizeof(path), "%s.%d", argv[1], rank);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    fprintf(f, "pid %d\nwaiting\n", (int)getpid());
    fflush(f);
    if (rank != 0) {
        for (;;)
            pause();
    }
    rc = hibar_barrier(h);
    fprintf(f, "rc %d %s\n", rc, hibar_strerror(rc));
    fclose(f);
    return 0;
}
