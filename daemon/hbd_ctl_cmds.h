/* hbd_ctl_cmds.h: hibard's control commands, one list (the socket, --help and the man page). */
#ifndef HBD_CTL_CMDS_H
#define HBD_CTL_CMDS_H

#include <stdio.h>

#include "hbd_ctl.h"

extern const hbd_ctl_cmd_t hbd_ctl_cmds[];
extern const size_t hbd_ctl_n_cmds;
/* The list, one "  NAME ARGS  HELP" line each (hibard --help). */
void hbd_ctl_cmds_usage(FILE *f);

#endif
