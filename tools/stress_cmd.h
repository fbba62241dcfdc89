/* SPDX-License-Identifier: MIT */
/*
 * stress_cmd.h - `uswap stress` (stress.c).
 */
#ifndef USWAP_TOOLS_STRESS_CMD_H
#define USWAP_TOOLS_STRESS_CMD_H

/* `uswap stress [OPTIONS]`; argv[0] is "stress". */
int cmd_stress(int argc, char **argv);

#endif /* USWAP_TOOLS_STRESS_CMD_H */
