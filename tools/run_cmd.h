/* SPDX-License-Identifier: MIT */
/*
 * run_cmd.h - `uswap run` (run_cmd.c).
 */
#ifndef USWAP_TOOLS_RUN_CMD_H
#define USWAP_TOOLS_RUN_CMD_H

/* `uswap run [OPTIONS] -- CMD [ARG]...`; argv[0] is "run". */
int cmd_run(int argc, char **argv);

#endif /* USWAP_TOOLS_RUN_CMD_H */
