/* xcoll_drive.c: send one control command to every daemon of a cluster at once and print each reply
 * (for xcoll-bench). */
#include "cfg.h"
#include "hb_log.h"
#include "hbd_client.h"
#include "hibar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xcoll_drive --config FILE [--set KEY=VALUE]... COMMAND WORDS...
 * Prints "NODE: REPLY" per daemon, like hibar-cluster ctl all, but every daemon gets the
 * command within microseconds (one connection each, opened first). Exit 0 when every reply
 * starts with "ok", 1 otherwise, 2 on bad usage. */
int main(int argc, char **argv)
{
    const char *config = NULL, *over[64];
    size_t n_over = 0;
    char err[HB_CFG_ERRLEN], cmd[512] = "";
    int i = 1, rc, bad = 0;
    hb_cfg_t *cfg;
    hbd_cluster_t *cl;

    hb_log_init_from_env();
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config = argv[++i];
        else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && n_over < 64)
            over[n_over++] = argv[++i];
        else
            break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: xcoll_drive --config FILE [--set KEY=VALUE]... COMMAND...\n");
        return 2;
    }
    for (; i < argc; i++) {
        strncat(cmd, argv[i], sizeof(cmd) - strlen(cmd) - 2);
        if (i + 1 < argc)
            strcat(cmd, " ");
    }
    if (hb_cfg_load(config, over, n_over, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "xcoll_drive: %s\n", err);
        return 2;
    }
    rc = hbd_cluster_open(cfg, 10000, 0, &cl);
    if (rc != 0) {
        fprintf(stderr, "xcoll_drive: cannot reach the daemons: %s\n", hibar_strerror(rc));
        hb_cfg_free(cfg);
        return 1;
    }
    uint32_t *nodes = calloc(cl->n, sizeof(uint32_t));
    char(*replies)[512] = calloc(cl->n, sizeof(*replies));
    if (nodes == NULL || replies == NULL) {
        rc = HIBAR_ERR_NOMEM;
    } else {
        for (uint32_t k = 0; k < cl->n; k++)
            nodes[k] = k;
        rc = hbd_cluster_all(cl, nodes, cl->n, cmd, replies, 600000);
    }
    if (rc != 0) {
        fprintf(stderr, "xcoll_drive: %s\n", hibar_strerror(rc));
        bad = 1;
    } else {
        for (uint32_t k = 0; k < cl->n; k++) {
            printf("%s: %s\n", cfg->nodes[k].name, replies[k]);
            bad |= strncmp(replies[k], "ok", 2) != 0;
        }
    }
    free(nodes);
    free(replies);
    hbd_cluster_close(cl);
    hb_cfg_free(cfg);
    return bad;
}
