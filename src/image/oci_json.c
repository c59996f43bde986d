/* oci_json.c — checked JSON reading for the OCI parsers (oci_json.h). */
#include <math.h>
#include <stdarg.h>

#include "image/oci_json.h"
#include "profile/jsonpos.h"

_printf_(3, 4) static void path_fmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, n, fmt, ap);
	va_end(ap);
}

void oci_json_path_key(char *out, size_t n, const char *path, const char *key)
{
	path_fmt(out, n, "%s%s%.64s", path, path[0] ? "." : "", key);
}

void oci_json_path_index(char *out, size_t n, const char *path, size_t i)
{
	path_fmt(out, n, "%s[%zu]", path, i);
}

static int bad(pd_err *err, const char *what, const char *path, const char *msg)
{
	return pd_error_msg(err, EINVAL, "%s: %s%s%s", what, path, path[0] ? ": " : "", msg);
}

static int check_tree(const cJSON *node, unsigned depth, const char *what, pd_err *err);

static int check_members(const cJSON *node, unsigned depth, const char *what, pd_err *err)
{
	size_t i = 0;
	for (const cJSON *m = node->child; m; m = m->next, i++) {
		if (i >= OCI_JSON_ITEMS_MAX)
			return pd_error_msg(err, EINVAL, "%s: more than %d items in an array or object",
					    what, OCI_JSON_ITEMS_MAX);
		if (cJSON_IsObject(node))
			for (const cJSON *o = node->child; o != m; o = o->next)
				if (streq(o->string, m->string))
					return pd_error_msg(err, EINVAL, "%s: duplicate key \"%.64s\"",
							    what, m->string);
		int r = check_tree(m, depth + 1, what, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_tree(const cJSON *node, unsigned depth, const char *what, pd_err *err)
{
	if (depth > OCI_JSON_DEPTH_MAX)
		return pd_error_msg(err, EINVAL, "%s: nested deeper than %d levels", what,
				    OCI_JSON_DEPTH_MAX);
	if ((node->string && strlen(node->string) > OCI_JSON_STRING_MAX) ||
	    (cJSON_IsString(node) && strlen(node->valuestring) > OCI_JSON_STRING_MAX))
		return pd_error_msg(err, EINVAL, "%s: string longer than %d bytes", what,
				    OCI_JSON_STRING_MAX);
	if (cJSON_IsObject(node) || cJSON_IsArray(node))
		return check_members(node, depth, what, err);
	return 0;
}

int oci_json_parse(const char *buf, size_t len, size_t max, const char *what, cJSON **ret,
		   pd_err *err)
{
	if (len > max)
		return pd_error_msg(err, EFBIG, "%s: larger than %zu bytes", what, max);
	if (json_find_nul(buf, len) >= 0)
		return pd_error_msg(err, EINVAL, "%s: NUL character in JSON", what);
	size_t off = 0;
	const char *why = NULL;
	if (json_check_syntax(buf, len, OCI_JSON_DEPTH_MAX + 1, &off, &why) < 0)
		return pd_error_msg(err, EINVAL, "%s: invalid JSON at byte %zu: %s", what, off, why);
	_cleanup_free_ char *z = xstrndup(buf, len);
	cJSON *root = cJSON_ParseWithLengthOpts(z, len + 1, NULL, true);
	if (!root)
		return pd_error_msg(err, EINVAL, "%s: invalid JSON", what);
	int r = check_tree(root, 0, what, err);
	if (r < 0) {
		cJSON_Delete(root);
		return r;
	}
	*ret = root;
	return 0;
}

#define PATH_BUF 160

int oci_json_parse_into(const char *buf, size_t len, size_t max, const char *what,
			oci_json_fill_fn fill, void *out, pd_err *err)
{
	cJSON *root = NULL;
	int r = oci_json_parse(buf, len, max, what, &root, err);
	if (r < 0)
		return r;
	r = fill(root, out, err);
	cJSON_Delete(root);
	return r;
}

/* The member, or NULL (null counts as absent); -EINVAL when required and absent. ret_path
 * gets the member's path for messages. */
static int member(const cJSON *obj, const char *key, bool required, const char *what,
		  const char *path, char ret_path[PATH_BUF], const cJSON **ret, pd_err *err)
{
	const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	if (v && cJSON_IsNull(v))
		v = NULL;
	oci_json_path_key(ret_path, PATH_BUF, path, key);
	if (!v && required)
		return bad(err, what, ret_path, "missing");
	*ret = v;
	return v ? 0 : -ENOENT;
}

int oci_json_string(const cJSON *obj, const char *key, bool required, size_t max,
		    const char *what, const char *path, const char **ret, pd_err *err)
{
	const cJSON *v;
	char p[PATH_BUF];
	int r = member(obj, key, required, what, path, p, &v, err);
	if (r < 0)
		return r;
	if (!cJSON_IsString(v))
		return bad(err, what, p, "expected a string");
	if (strlen(v->valuestring) > max)
		return bad(err, what, p, "too long");
	*ret = v->valuestring;
	return 0;
}

int oci_json_u64(const cJSON *obj, const char *key, bool required, uint64_t max,
		 const char *what, const char *path, uint64_t *ret, pd_err *err)
{
	const cJSON *v;
	char p[PATH_BUF];
	int r = member(obj, key, required, what, path, p, &v, err);
	if (r < 0)
		return r;
	/* JSON numbers are doubles here: integral, >= 0 and exact (< 2^53) or refused */
	double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
	if (!(d >= 0) || d != floor(d) || d >= 9007199254740992.0)
		return bad(err, what, p, "expected a non-negative integer");
	if ((uint64_t)d > max)
		return bad(err, what, p, "too large");
	*ret = (uint64_t)d;
	return 0;
}

int oci_json_strv(const cJSON *obj, const char *key, bool required, size_t max_items,
		  size_t max, const char *what, const char *path, char ***ret, pd_err *err)
{
	const cJSON *v;
	char p[PATH_BUF];
	int r = member(obj, key, required, what, path, p, &v, err);
	if (r < 0)
		return r;
	if (!cJSON_IsArray(v))
		return bad(err, what, p, "expected an array of strings");
	if ((size_t)cJSON_GetArraySize(v) > max_items)
		return bad(err, what, p, "too many items");
	_cleanup_strv_ char **l = xcalloc(1, sizeof(char *));
	for (const cJSON *e = v->child; e; e = e->next) {
		if (!cJSON_IsString(e) || strlen(e->valuestring) > max)
			return bad(err, what, p, "expected an array of (short) strings");
		l = strv_append(l, e->valuestring);
	}
	*ret = TAKE_PTR(l);
	return 0;
}

int oci_json_child(const cJSON *obj, const char *key, bool required, int type,
		   const char *what, const char *path, const cJSON **ret, pd_err *err)
{
	const cJSON *v;
	char p[PATH_BUF];
	int r = member(obj, key, required, what, path, p, &v, err);
	if (r < 0)
		return r;
	if ((v->type & 0xff) != type)
		return bad(err, what, p, type == cJSON_Array ? "expected an array"
							       : "expected an object");
	*ret = v;
	return 0;
}
