/* oci_json.h — the JSON reading shared by the OCI parsers (internal to src/image/oci_*.c).
 *
 * Registry and archive metadata is untrusted: a document is checked for strict syntax, NUL
 * characters, depth, item counts, string lengths and duplicate keys (two parsers must never
 * read two different values from one signed document) before any field is looked at.
 * Messages read "WHAT: PATH: problem" ("image manifest: layers[2].digest: not a sha256
 * digest"). */
#pragma once

#include <cjson/cJSON.h>

#include "util/error.h"

#define OCI_JSON_DEPTH_MAX 32
#define OCI_JSON_ITEMS_MAX 10000
#define OCI_JSON_STRING_MAX (256 * 1024)

/* Parses buf (at most max bytes) into a checked tree; -EINVAL/-EFBIG with a message. */
int oci_json_parse(const char *buf, size_t len, size_t max, const char *what, cJSON **ret,
		   pd_err *err);

/* Parses buf like oci_json_parse() and hands the tree to fill(root, out, err); the tree is
 * freed afterwards. Returns fill's result. */
typedef int (*oci_json_fill_fn)(const cJSON *root, void *out, pd_err *err);
int oci_json_parse_into(const char *buf, size_t len, size_t max, const char *what,
			oci_json_fill_fn fill, void *out, pd_err *err);

/* Member lookups. A missing member: -ENOENT without a message when !required, else -EINVAL.
 * A JSON null counts as missing. path is the member's parent path ("" at the top). */
int oci_json_string(const cJSON *obj, const char *key, bool required, size_t max,
		    const char *what, const char *path, const char **ret, pd_err *err);
int oci_json_u64(const cJSON *obj, const char *key, bool required, uint64_t max,
		 const char *what, const char *path, uint64_t *ret, pd_err *err);
/* An array of strings (each at most max bytes, at most max_items) as a new strv. */
int oci_json_strv(const cJSON *obj, const char *key, bool required, size_t max_items,
		  size_t max, const char *what, const char *path, char ***ret, pd_err *err);
/* An object or array member; type is cJSON_Object or cJSON_Array. */
int oci_json_child(const cJSON *obj, const char *key, bool required, int type,
		   const char *what, const char *path, const cJSON **ret, pd_err *err);

/* "path.key" / "path[i]" into out (truncated: messages only). */
void oci_json_path_key(char *out, size_t n, const char *path, const char *key);
void oci_json_path_index(char *out, size_t n, const char *path, size_t i);
