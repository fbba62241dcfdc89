// SPDX-License-Identifier: MIT
/*
 * procswaps.c - the one reader of the kernel's /proc/swaps (procswaps.h).
 * Its columns are those of the kernel's swap_show(): Filename, Type,
 * Size, Used (KiB), Priority; blanks in names are written as \040.
 */
#include "procswaps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Undo the octal escapes of a name (\040 for a blank). */
static void unescape_octal(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

int procswaps_read(char *text, size_t textlen, struct procswaps_row *rows, int cap)
{
	struct procswaps_row row;
	char line[4300];
	size_t used = 0;
	int n = 0;
	FILE *f = fopen("/proc/swaps", "re");

	if (!f)
		return -errno;
	if (text && textlen)
		text[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		unsigned long long size, use;

		if (text && used + strlen(line) < textlen) {
			memcpy(text + used, line, strlen(line) + 1);
			used += strlen(line);
		}
		if (sscanf(line, "%4095s %15s %llu %llu %d", row.name, row.type, &size, &use,
			   &row.prio) != 5)
			continue; /* the heading */
		unescape_octal(row.name);
		row.size_kb = size;
		row.used_kb = use;
		if (rows && n < cap)
			rows[n] = row;
		n++;
	}
	fclose(f);
	return n;
}

bool procswaps_has(const char *path)
{
	static struct procswaps_row rows[32]; /* MAX_SWAPFILES */
	struct stat st, sw;
	int n;

	if (stat(path, &st) || (n = procswaps_read(NULL, 0, rows, 32)) <= 0)
		return false;
	for (int i = 0; i < n && i < 32; i++) {
		if (stat(rows[i].name, &sw))
			continue;
		if (S_ISBLK(st.st_mode) ? S_ISBLK(sw.st_mode) && st.st_rdev == sw.st_rdev
					: st.st_dev == sw.st_dev && st.st_ino == sw.st_ino)
			return true;
	}
	return false;
}
