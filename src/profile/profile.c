/* profile.c — parsing, validation, merging and printing of agent definitions (profile.h).
 * Pure: no I/O (load.c reads files). */
#include <stdarg.h>

#include <cjson/cJSON.h>

#include "egress/policy.h"
#include "profile/jsonpos.h"
#include "profile/profile.h"

/* One parse: the text, the tree, where messages go. */
struct pctx {
	const char *text;
	size_t len;
	const char *file;
	const cJSON *root;
	char ***warnings;
	pd_err *err;
};

static void locate(const struct pctx *c, const cJSON *node, bool at_key, unsigned *line,
		   unsigned *col)
{
	size_t key = 0, val = 0;
	if (json_locate(c->text, c->len, c->root, node, &key, &val) < 0)
		key = val = 0;
	json_linecol(c->text, c->len, at_key ? key : val, line, col);
}

/* "FILE:LINE:COL: PATH: message" about node (its key when at_key), -EINVAL. */
_printf_(5, 6) static int fail(const struct pctx *c, const cJSON *node, bool at_key,
			       const char *path, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	unsigned line, col;
	locate(c, node, at_key, &line, &col);
	return pd_error_msg(c->err, EINVAL, "%s:%u:%u: %s%s%s", c->file, line, col, path,
			    path[0] ? ": " : "", msg);
}

static void warn(const struct pctx *c, const cJSON *node, const char *path)
{
	if (!c->warnings || strv_len(*c->warnings) >= PROFILE_WARNINGS_MAX)
		return;
	unsigned line, col;
	locate(c, node, true, &line, &col);
	_cleanup_free_ char *w = xasprintf("%s:%u:%u: unknown key \"%.64s\" in %s (ignored)",
					   c->file, line, col, node->string,
					   path[0] ? path : "the definition");
	*c->warnings = strv_append(*c->warnings, w);
}

/* path + ".key" or path + "[i]"; long paths are truncated (they only appear in messages). */
_printf_(3, 4) static void path_fmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, n, fmt, ap);
	va_end(ap);
}

static void path_key(char *out, size_t n, const char *path, const char *key)
{
	path_fmt(out, n, "%s%s%.64s", path, path[0] ? "." : "", key);
}

static void path_index(char *out, size_t n, const char *path, size_t i)
{
	path_fmt(out, n, "%s[%zu]", path, i);
}

/* ---- generic caps: depth, items, string lengths, duplicate keys ---- */

static int check_caps(const struct pctx *c, const cJSON *node, const char *path, unsigned depth);

static int check_dup_key(const struct pctx *c, const cJSON *parent, const cJSON *m,
			 const char *path)
{
	for (const cJSON *o = parent->child; o && o != m; o = o->next)
		if (streq(o->string, m->string))
			return fail(c, m, true, path, "duplicate key");
	return 0;
}

static int check_children(const struct pctx *c, const cJSON *node, const char *path,
			  unsigned depth)
{
	size_t i = 0;
	for (const cJSON *m = node->child; m; m = m->next, i++) {
		char sub[256];
		if (i >= PROFILE_ITEMS_MAX)
			return fail(c, m, false, path, "more than %d items", PROFILE_ITEMS_MAX);
		if (cJSON_IsObject(node)) {
			path_key(sub, sizeof(sub), path, m->string);
			if (strlen(m->string) > PROFILE_STRING_MAX)
				return fail(c, m, true, sub, "key longer than %d bytes",
					    PROFILE_STRING_MAX);
			int r = check_dup_key(c, node, m, sub);
			if (r < 0)
				return r;
		} else {
			path_index(sub, sizeof(sub), path, i);
		}
		int r = check_caps(c, m, sub, depth + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_caps(const struct pctx *c, const cJSON *node, const char *path, unsigned depth)
{
	if (depth > PROFILE_DEPTH_MAX)
		return fail(c, node, false, path, "nested deeper than %d levels", PROFILE_DEPTH_MAX);
	if (cJSON_IsString(node) && strlen(node->valuestring) > PROFILE_STRING_MAX)
		return fail(c, node, false, path, "string longer than %d bytes", PROFILE_STRING_MAX);
	if (cJSON_IsObject(node) || cJSON_IsArray(node))
		return check_children(c, node, path, depth);
	return 0;
}

/* ---- value checks ---- */

static bool env_name_valid(const char *s, size_t n)
{
	if (n == 0 || n > 255 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		bool ok = ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
			  (ch >= 'A' && ch <= 'Z');
		if (!ok)
			return false;
	}
	return true;
}

static int check_env(const struct pctx *c, const cJSON *v, const char *path)
{
	const char *s = v->valuestring, *eq = strchr(s, '=');
	if (!env_name_valid(s, eq ? (size_t)(eq - s) : strlen(s)))
		return fail(c, v, false, path, "\"%.64s\" is not NAME or NAME=VALUE", s);
	return 0;
}

static int check_host(const struct pctx *c, const cJSON *v, const char *path)
{
	const char *s = v->valuestring;
	if (s[0] == '!')
		return fail(c, v, false, path, "\"%.64s\": deny rules are not allowed here", s);
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	pd_err e = { 0 };
	if (egress_policy_add(p, s, false, &e) < 0)
		return fail(c, v, false, path, "%s", e.msg);
	return 0;
}

static int check_nonempty(const struct pctx *c, const cJSON *v, const char *path)
{
	return v->valuestring[0] ? 0 : fail(c, v, false, path, "must not be empty");
}

static int check_container_path(const struct pctx *c, const cJSON *v, const char *path)
{
	const char *s = v->valuestring;
	if (s[0] != '/')
		return fail(c, v, false, path, "\"%.64s\" is not an absolute path", s);
	for (const char *p = s; (p = strstr(p, "/..")); p += 3)
		if (p[3] == '\0' || p[3] == '/')
			return fail(c, v, false, path, "\"%.64s\" contains \"..\"", s);
	/* what every backend will refuse at run time, said here with the place */
	if (!box_target_path_valid(s))
		return fail(c, v, false, path,
			    "\"%.64s\" must be a normalised absolute path, not \"/\" and outside /proc, /dev and /sys", s);
	return 0;
}

static int check_host_path(const struct pctx *c, const cJSON *v, const char *path)
{
	const char *s = v->valuestring;
	if (s[0] != '/' && !streq(s, "~") && !startswith(s, "~/"))
		return fail(c, v, false, path, "\"%.64s\" must be an absolute path or start with \"~/\"", s);
	return 0;
}

static int check_image(const struct pctx *c, const cJSON *v, const char *path)
{
	const char *s = v->valuestring;
	if (!s[0])
		return fail(c, v, false, path, "must not be empty");
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return fail(c, v, false, path, "contains a space or control character");
	return 0;
}

/* ---- fields ---- */

typedef int (*check_fn)(const struct pctx *c, const cJSON *v, const char *path);

static int get_string(const struct pctx *c, const cJSON *v, const char *path, check_fn check,
		      char **out)
{
	if (!cJSON_IsString(v))
		return fail(c, v, false, path, "expected a string");
	int r = check ? check(c, v, path) : 0;
	if (r < 0)
		return r;
	free(*out);
	*out = xstrdup(v->valuestring);
	return 0;
}

static int get_strv(const struct pctx *c, const cJSON *v, const char *path, check_fn check,
		    char ***out)
{
	if (!cJSON_IsArray(v))
		return fail(c, v, false, path, "expected an array of strings");
	_cleanup_strv_ char **l = xcalloc(1, sizeof(char *));
	size_t i = 0;
	for (const cJSON *e = v->child; e; e = e->next, i++) {
		char sub[256];
		path_index(sub, sizeof(sub), path, i);
		if (!cJSON_IsString(e))
			return fail(c, e, false, sub, "expected a string");
		int r = check ? check(c, e, sub) : 0;
		if (r < 0)
			return r;
		l = strv_append(l, e->valuestring);
	}
	strv_free(*out);
	*out = TAKE_PTR(l);
	return 0;
}

static void mount_clear(struct profile_mount *m)
{
	free(m->host_path);
	free(m->container_path);
}

static void mounts_free(struct profile_mount *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mount_clear(&m[i]);
	free(m);
}

static int mount_member(const struct pctx *c, const cJSON *k, const char *path,
			struct profile_mount *m)
{
	char sub[256];
	path_key(sub, sizeof(sub), path, k->string);
	if (streq(k->string, "hostPath"))
		return get_string(c, k, sub, check_host_path, &m->host_path);
	if (streq(k->string, "containerPath"))
		return get_string(c, k, sub, check_container_path, &m->container_path);
	if (streq(k->string, "readOnly")) {
		if (!cJSON_IsBool(k))
			return fail(c, k, false, sub, "expected a boolean");
		m->read_only = cJSON_IsTrue(k);
		return 0;
	}
	warn(c, k, path);
	return 0;
}

static int parse_mount(const struct pctx *c, const cJSON *v, const char *path,
		       struct profile_mount *m)
{
	if (!cJSON_IsObject(v))
		return fail(c, v, false, path,
			    "expected an object {hostPath, containerPath, readOnly}");
	for (const cJSON *k = v->child; k; k = k->next) {
		if (cJSON_IsNull(k))
			continue;
		int r = mount_member(c, k, path, m);
		if (r < 0)
			return r;
	}
	if (!m->host_path)
		return fail(c, v, false, path, "missing \"hostPath\"");
	if (!m->container_path)
		return fail(c, v, false, path, "missing \"containerPath\"");
	return 0;
}

static int get_mounts(const struct pctx *c, const cJSON *v, const char *path, struct profile *p)
{
	if (!cJSON_IsArray(v))
		return fail(c, v, false, path, "expected an array of mounts");
	size_t n = (size_t)cJSON_GetArraySize(v), i = 0;
	struct profile_mount *m = xcalloc(n ? n : 1, sizeof(*m));
	for (const cJSON *e = v->child; e; e = e->next, i++) {
		char sub[256];
		path_index(sub, sizeof(sub), path, i);
		int r = parse_mount(c, e, sub, &m[i]);
		if (r < 0) {
			mounts_free(m, n);
			return r;
		}
	}
	mounts_free(p->mounts, p->n_mounts);
	p->mounts = m;
	p->n_mounts = n;
	return 0;
}

static int parse_member(const struct pctx *c, const cJSON *k, struct profile *p)
{
	const char *key = k->string;
	static const struct {
		const char *key;
		unsigned field;
	} keys[] = {
		{ "displayName", PROFILE_DISPLAY_NAME },
		{ "baseImage", PROFILE_BASE_IMAGE },
		{ "installCommands", PROFILE_INSTALL_COMMANDS },
		{ "launchCommand", PROFILE_LAUNCH_COMMAND },
		{ "environmentVariables", PROFILE_ENVIRONMENT },
		{ "mounts", PROFILE_MOUNTS },
		{ "allowedHosts", PROFILE_ALLOWED_HOSTS },
	};
	unsigned field = 0;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (streq(key, keys[i].key))
			field = keys[i].field;
	if (!field) {
		warn(c, k, "");
		return 0;
	}
	/* null means "not given" (sandboxy decodes it as an absent optional) */
	if (cJSON_IsNull(k))
		return 0;
	int r;
	switch (field) {
	case PROFILE_DISPLAY_NAME:
		r = get_string(c, k, key, check_nonempty, &p->display_name);
		break;
	case PROFILE_BASE_IMAGE:
		r = get_string(c, k, key, check_image, &p->base_image);
		break;
	case PROFILE_INSTALL_COMMANDS:
		r = get_strv(c, k, key, NULL, &p->install_commands);
		break;
	case PROFILE_LAUNCH_COMMAND:
		r = get_strv(c, k, key, NULL, &p->launch_command);
		if (r == 0 && (!p->launch_command[0] || !p->launch_command[0][0]))
			r = fail(c, k, false, key, "must name a program");
		break;
	case PROFILE_ENVIRONMENT:
		r = get_strv(c, k, key, check_env, &p->environment);
		break;
	case PROFILE_MOUNTS:
		r = get_mounts(c, k, key, p);
		break;
	default:
		r = get_strv(c, k, key, check_host, &p->allowed_hosts);
		break;
	}
	if (r == 0)
		p->fields |= field;
	return r;
}

/* ---- text ---- */

/* Rejects what cJSON would silently truncate: NUL bytes and "\u0000" escapes. */
static int check_nul(const char *file, const char *s, size_t len, pd_err *err)
{
	ssize_t at = json_find_nul(s, len);
	if (at < 0)
		return 0;
	unsigned line, col;
	json_linecol(s, len, (size_t)at, &line, &col);
	return pd_error_msg(err, EINVAL, "%s:%u:%u: NUL character in the text", file, line, col);
}

/* Nesting accepted by the syntax check; deeper than PROFILE_DEPTH_MAX is then refused with
 * the key path, this bound only keeps the recursion small. */
#define SYNTAX_DEPTH_MAX 64

static int parse_tree(const char *file, const char *s, size_t len, cJSON **ret, pd_err *err)
{
	if (len > PROFILE_FILE_MAX)
		return pd_error_msg(err, EFBIG, "%s: larger than %d bytes", file, PROFILE_FILE_MAX);
	int r = check_nul(file, s, len, err);
	if (r < 0)
		return r;
	/* cJSON reports no reason and an approximate place: check the syntax ourselves first */
	size_t off = 0;
	const char *what = NULL;
	if (json_check_syntax(s, len, SYNTAX_DEPTH_MAX, &off, &what) < 0) {
		unsigned line, col;
		json_linecol(s, len, off, &line, &col);
		return pd_error_msg(err, EINVAL, "%s:%u:%u: invalid JSON: %s", file, line, col,
				    what);
	}
	/* cJSON wants the terminating NUL inside the buffer it is given */
	_cleanup_free_ char *z = xstrndup(s, len);
	cJSON *root = cJSON_ParseWithLengthOpts(z, len + 1, NULL, true);
	if (!root)
		return pd_error_msg(err, EINVAL, "%s: invalid JSON", file);
	*ret = root;
	return 0;
}

static int parse_root(const struct pctx *c, struct profile *p)
{
	int r = check_caps(c, c->root, "", 0);
	if (r < 0)
		return r;
	if (!cJSON_IsObject(c->root))
		return fail(c, c->root, false, "", "expected an object (an agent definition)");
	for (const cJSON *k = c->root->child; k; k = k->next) {
		r = parse_member(c, k, p);
		if (r < 0)
			return r;
	}
	return 0;
}

int profile_parse(const char *text, size_t len, const char *filename, const char *name,
		  struct profile **ret, char ***ret_warnings, pd_err *err)
{
	/* a UTF-8 byte order mark is allowed (and invisible) */
	if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
		text += 3;
		len -= 3;
	}
	cJSON *root = NULL;
	int r = parse_tree(filename, text, len, &root, err);
	if (r < 0)
		return r;
	_cleanup_strv_ char **warnings = NULL;
	struct pctx c = { .text = text, .len = len, .file = filename, .root = root,
			  .warnings = &warnings, .err = err };
	_cleanup_profile_ struct profile *p = xcalloc(1, sizeof(*p));
	p->name = xstrdup(name ? name : "");
	p->sources = strv_append(NULL, filename);
	r = parse_root(&c, p);
	cJSON_Delete(root);
	if (r < 0)
		return r;
	for (char **w = warnings; ret_warnings && w && *w; w++)
		if (strv_len(*ret_warnings) < PROFILE_WARNINGS_MAX)
			*ret_warnings = strv_append(*ret_warnings, *w);
	*ret = TAKE_PTR(p);
	return 0;
}

/* ---- merge, completeness, printing ---- */

void profile_free(struct profile *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->display_name);
	free(p->base_image);
	strv_free(p->install_commands);
	strv_free(p->launch_command);
	strv_free(p->environment);
	strv_free(p->allowed_hosts);
	mounts_free(p->mounts, p->n_mounts);
	strv_free(p->sources);
	free(p);
}

static void replace_str(char **dst, const char *src)
{
	free(*dst);
	*dst = xstrdup(src);
}

static void replace_strv(char ***dst, char *const *src)
{
	strv_free(*dst);
	*dst = strv_copy(src);
}

static void replace_mounts(struct profile *dst, const struct profile *src)
{
	mounts_free(dst->mounts, dst->n_mounts);
	dst->mounts = xcalloc(src->n_mounts ? src->n_mounts : 1, sizeof(*dst->mounts));
	for (size_t i = 0; i < src->n_mounts; i++) {
		dst->mounts[i].host_path = xstrdup(src->mounts[i].host_path);
		dst->mounts[i].container_path = xstrdup(src->mounts[i].container_path);
		dst->mounts[i].read_only = src->mounts[i].read_only;
	}
	dst->n_mounts = src->n_mounts;
}

void profile_merge(struct profile *base, const struct profile *over)
{
	unsigned f = over->fields;
	if (f & PROFILE_DISPLAY_NAME)
		replace_str(&base->display_name, over->display_name);
	if (f & PROFILE_BASE_IMAGE)
		replace_str(&base->base_image, over->base_image);
	if (f & PROFILE_INSTALL_COMMANDS)
		replace_strv(&base->install_commands, over->install_commands);
	if (f & PROFILE_LAUNCH_COMMAND)
		replace_strv(&base->launch_command, over->launch_command);
	if (f & PROFILE_ENVIRONMENT)
		replace_strv(&base->environment, over->environment);
	if (f & PROFILE_ALLOWED_HOSTS)
		replace_strv(&base->allowed_hosts, over->allowed_hosts);
	if (f & PROFILE_MOUNTS)
		replace_mounts(base, over);
	base->fields |= f;
	for (char **s = over->sources; s && *s; s++)
		base->sources = strv_append(base->sources, *s);
}

int profile_check_complete(const struct profile *p, pd_err *err)
{
	static const struct {
		unsigned field;
		const char *key;
	} req[] = {
		{ PROFILE_DISPLAY_NAME, "displayName" },
		{ PROFILE_BASE_IMAGE, "baseImage" },
		{ PROFILE_INSTALL_COMMANDS, "installCommands" },
		{ PROFILE_LAUNCH_COMMAND, "launchCommand" },
	};
	char missing[128] = "";
	for (size_t i = 0; i < ARRAY_SIZE(req); i++)
		if (!(p->fields & req[i].field))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "%s%s", missing[0] ? ", " : "", req[i].key);
	if (missing[0])
		return pd_error_msg(err, EINVAL, "incomplete agent definition: missing %s",
				    missing);
	if (!p->launch_command[0] || !p->launch_command[0][0])
		return pd_error_msg(err, EINVAL, "launchCommand: must name a program");
	return 0;
}

static cJSON *strv_json(char *const *v)
{
	cJSON *a = cJSON_CreateArray();
	for (; v && *v; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

static cJSON *mounts_json(const struct profile *p)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < p->n_mounts; i++) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "hostPath", p->mounts[i].host_path);
		cJSON_AddStringToObject(m, "containerPath", p->mounts[i].container_path);
		cJSON_AddBoolToObject(m, "readOnly", p->mounts[i].read_only);
		cJSON_AddItemToArray(a, m);
	}
	return a;
}

/* cJSON separates with tabs: indentation becomes four spaces a level, the tab after a key's
 * colon one space. Raw tabs occur nowhere else (tabs inside strings are escaped). */
static char *tabs_to_spaces(const char *s)
{
	size_t tabs = 0;
	for (const char *q = s; *q; q++)
		tabs += *q == '\t';
	char *out = xmalloc(strlen(s) + 3 * tabs + 2), *o = out;
	for (const char *q = s; *q; q++) {
		if (*q != '\t') {
			*o++ = *q;
		} else if (q > s && q[-1] == ':') {
			*o++ = ' ';
		} else {
			memcpy(o, "    ", 4);
			o += 4;
		}
	}
	strcpy(o, "\n");
	return out;
}

char *profile_to_json(const struct profile *p)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		abort();
	cJSON_AddStringToObject(o, "displayName", p->display_name ? p->display_name : "");
	cJSON_AddStringToObject(o, "baseImage", p->base_image ? p->base_image : "");
	cJSON_AddItemToObject(o, "installCommands", strv_json(p->install_commands));
	/* an unset launchCommand prints as nothing: [] is not a valid value (it names no program) */
	if (p->launch_command && p->launch_command[0])
		cJSON_AddItemToObject(o, "launchCommand", strv_json(p->launch_command));
	cJSON_AddItemToObject(o, "environmentVariables", strv_json(p->environment));
	cJSON_AddItemToObject(o, "mounts", mounts_json(p));
	cJSON_AddItemToObject(o, "allowedHosts", strv_json(p->allowed_hosts));
	_cleanup_free_ char *text = cJSON_Print(o);
	cJSON_Delete(o);
	if (!text)
		abort(); /* out of memory */
	return tabs_to_spaces(text);
}

/* ---- run-time helpers ---- */

char *profile_expand_home(const char *host_path, const char *home)
{
	if (home && streq(host_path, "~"))
		return xstrdup(home);
	if (home && startswith(host_path, "~/"))
		return xasprintf("%s%s", home, host_path + 1);
	return xstrdup(host_path);
}

static size_t env_name_len(const char *s)
{
	const char *eq = strchr(s, '=');
	return eq ? (size_t)(eq - s) : strlen(s);
}

static const char *env_lookup(char *const *env, const char *name, size_t n)
{
	for (; env && *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env;
	return NULL;
}

/* Sets entry (NAME=VALUE) in *v, replacing an earlier entry of the same name. */
static void env_set(char ***v, const char *entry)
{
	size_t n = env_name_len(entry);
	for (char **e = *v; e && *e; e++)
		if (!strncmp(*e, entry, n) && (*e)[n] == '=') {
			replace_str(e, entry);
			return;
		}
	*v = strv_append(*v, entry);
}

char **profile_env_resolve(const struct profile *p, char *const *host_env)
{
	char **out = xcalloc(1, sizeof(char *));
	for (char **e = p->environment; e && *e; e++) {
		const char *entry = *e;
		if (!strchr(entry, '='))
			entry = env_lookup(host_env, *e, strlen(*e));
		if (entry)
			env_set(&out, entry);
	}
	return out;
}

char **profile_egress_rules(const struct profile *p)
{
	char **out = xcalloc(1, sizeof(char *));
	for (char **h = p->allowed_hosts; h && *h; h++) {
		const char *apex = startswith(*h, "*.") ? *h + 2 : startswith(*h, ".") ? *h + 1 : NULL;
		if (apex && apex[0] && apex[0] != ':')
			out = strv_append(out, apex);
		if (apex && (*h)[0] == '.') {
			_cleanup_free_ char *star = xasprintf("*%s", *h);
			out = strv_append(out, star);
		} else {
			out = strv_append(out, *h);
		}
	}
	return out;
}

bool profile_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > PROFILE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
			  (i > 0 && (ch == '.' || ch == '_' || ch == '-'));
		if (!ok)
			return false;
	}
	return true;
}
