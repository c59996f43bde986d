/* jsonpos.h — where in the source text a cJSON node came from.
 *
 * cJSON keeps no positions. Errors about a value ("mounts[1].readOnly: expected a boolean")
 * must still say file:line:col, so on demand we walk the text and the parsed tree side by side
 * (they match member for member, because cJSON built the tree from this text) until we reach
 * the node asked for. O(text) per lookup; only used on the error and warning paths.
 * Pure: no I/O. */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>

/* Finds target inside root (parsed from text[0..len)). *ret_value gets the offset of the
 * value's first byte; *ret_key (optional) the offset of its key's opening quote when target is
 * an object member, else the value offset. Returns 0, or -ENOENT when target is not in root. */
int json_locate(const char *text, size_t len, const cJSON *root, const cJSON *target,
		size_t *ret_key, size_t *ret_value);

/* 1-based line and column of byte offset off; columns count characters (UTF-8 sequences),
 * a tab counts as one. */
void json_linecol(const char *text, size_t len, size_t off, unsigned *ret_line, unsigned *ret_col);

/* Strict RFC 8259 syntax check with an exact position: 0, or -EINVAL with *ret_off at the
 * offending byte and *ret_what saying what was expected ("expected ':' after the key").
 * Nesting deeper than max_depth is refused too (bounds the recursion). */
int json_check_syntax(const char *text, size_t len, unsigned max_depth, size_t *ret_off,
		      const char **ret_what);

/* Offset of the first NUL byte or "\u0000" escape in text (what cJSON would silently cut a
 * string at), or -1 when there is none. */
ssize_t json_find_nul(const char *text, size_t len);
