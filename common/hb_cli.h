/* hb_cli.h: what every hibar command answers alike: --version and the exit statuses. */
#ifndef HB_CLI_H
#define HB_CLI_H

#include "hb_config.h" /* first: _GNU_SOURCE */

#include <stdio.h>

/*
 * Exit statuses of every hibar command (each man page's EXIT STATUS section repeats them):
 *   0 success (--help and --version included), 1 failure at run time, 2 bad usage or a
 *   configuration that cannot be used; hibar-run returns its job's status instead.
 */
#define HB_EXIT_OK 0
#define HB_EXIT_FAIL 1
#define HB_EXIT_USAGE 2

/* --version: "PROG VERSION (hibar; libraries ...)" on stdout; returns HB_EXIT_OK. */
static inline int hb_cli_version(const char *prog)
{
    printf("%s %s (%s %s; %s)\n", prog, PACKAGE_VERSION, PACKAGE_NAME, PACKAGE_VERSION,
           HB_DEP_VERSIONS);
    return HB_EXIT_OK;
}

#endif
