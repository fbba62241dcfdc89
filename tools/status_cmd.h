/* SPDX-License-Identifier: MIT */
/*
 * status_cmd.h - `uswap status` (status.c).
 */
#ifndef USWAP_TOOLS_STATUS_CMD_H
#define USWAP_TOOLS_STATUS_CMD_H

/* `uswap status [--json] [--watch SECONDS] [PID]`; argv[0] is "status". */
int cmd_status(int argc, char **argv);

#endif /* USWAP_TOOLS_STATUS_CMD_H */
