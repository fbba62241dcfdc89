/* SPDX-License-Identifier: MIT */
/*
 * status_cmd.h - `uswap status` (status.c).
 */
#ifndef USWAP_TOOLS_STATUS_CMD_H
#define USWAP_TOOLS_STATUS_CMD_H

/* `uswap status [--json] [--watch SECONDS] [PID]`; argv[0] is "status". */
int cmd_status(int argc, char **argv);

/* status_ask_pid() - the state process @pid publishes on its status
 * socket (the object `uswap status --json PID` prints), or NULL with
 * errno (nobody listens, a malformed answer). The caller puts it. */
struct json_object;
struct json_object *status_ask_pid(long pid);

#endif /* USWAP_TOOLS_STATUS_CMD_H */
