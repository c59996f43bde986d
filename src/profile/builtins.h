/* builtins.h — the built-in agent definitions, generated at build time from profiles/NAME.json
 * by gen-builtins.py (sorted by name). */
#pragma once

#include <stddef.h>

struct profile_builtin {
	const char *name;
	const char *json;  /* NUL-terminated */
	size_t len;
};

extern const struct profile_builtin profile_builtins[];
extern const size_t profile_builtins_count;
