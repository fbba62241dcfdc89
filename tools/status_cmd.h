/* SPDX-License-Identifier: MIT */
/*
 * status_cmd.h - `uswap status` (status_cmd.c).
 */
#ifndef USWAP_TOOLS_STATUS_CMD_H
#define USWAP_TOOLS_STATUS_CMD_H

#include <stdio.h>

/* `uswap status [--json] [--watch SECONDS] [PID]`; argv[0] is "status". */
int cmd_status(int argc, char **argv);

/* status_ask_pid() - the state process @pid publishes on its status
 * socket (the object `uswap status --json PID` prints), or NULL with
 * errno (nobody listens, a malformed answer). The caller puts it. */
struct json_object;
struct json_object *status_ask_pid(long pid);

/* status_print_zram() - zramctl's columns (NAME ALGORITHM DISKSIZE DATA
 * COMPR TOTAL) of the zram devices in @devs (the agent's "devices"
 * array), each line after @lead, the header after @head; nothing
 * without a zram device. */
void status_print_zram(FILE *out, struct json_object *devs, const char *head,
		       const char *lead);

#endif /* USWAP_TOOLS_STATUS_CMD_H */
