// SPDX-License-Identifier: MIT
/*
 * json_valid - check a --json output with json-c: FILE must hold exactly
 * one JSON value (whitespace around it allowed), and when KEYs are given,
 * an object with each of them at its top level.
 * Usage: json_valid FILE [KEY...]. Exit: 0 valid; 1 not (the reason on
 * stderr); 2 usage or I/O error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;

	*len = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (*len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = 2 * cap + 8192);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		size_t n = fread(buf + *len, 1, 4096, f);

		*len += n;
		if (n < 4096)
			break;
	}
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

int main(int argc, char **argv)
{
	struct json_tokener *tok;
	struct json_object *v;
	size_t len, end;
	char *text;
	int bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: json_valid FILE [KEY...]\n");
		return 2;
	}
	text = slurp(argv[1], &len);
	if (!text) {
		fprintf(stderr, "json_valid: cannot read %s\n", argv[1]);
		return 2;
	}
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	v = json_tokener_parse_ex(tok, text, (int)len);
	if (!v && json_tokener_get_error(tok) != json_tokener_success) {
		fprintf(stderr, "%s: not JSON: %s at byte %zu\n", argv[1],
			json_tokener_error_desc(json_tokener_get_error(tok)),
			json_tokener_get_parse_end(tok));
		return 1;
	}
	for (end = json_tokener_get_parse_end(tok); end < len; end++)
		if (!strchr(" \t\r\n", text[end])) {
			fprintf(stderr, "%s: more than one value (byte %zu)\n", argv[1], end);
			return 1;
		}
	for (int i = 2; i < argc; i++) {
		if (!json_object_is_type(v, json_type_object) ||
		    !json_object_object_get_ex(v, argv[i], NULL)) {
			fprintf(stderr, "%s: no top-level \"%s\"\n", argv[1], argv[i]);
			bad = 1;
		}
	}
	json_object_put(v);
	json_tokener_free(tok);
	free(text);
	return bad;
}
