/* SPDX-License-Identifier: MIT */
/*
 * lab_cmd.h - `uswap lab`: the seed experiments of src/lab/ (lab.c).
 */
#ifndef USWAP_TOOLS_LAB_CMD_H
#define USWAP_TOOLS_LAB_CMD_H

/* `uswap lab list | run NAME [OPTIONS]`; argv[0] is "lab". */
int cmd_lab(int argc, char **argv);

#endif /* USWAP_TOOLS_LAB_CMD_H */
