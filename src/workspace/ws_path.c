/* ws_path.c — pure checks on names that come from a box (see ws_path.h). */
#include <strings.h>

#include "ws_path.h"

static const char *const reason_names[WS_R_MAX] = {
	[WS_OK] = "ok",
	[WS_R_ROOT] = "tree root",
	[WS_R_EMPTY] = "empty name",
	[WS_R_ABSOLUTE] = "absolute path",
	[WS_R_DOTDOT] = "'..' component",
	[WS_R_DOT] = "'.' component",
	[WS_R_EMPTY_COMPONENT] = "empty component",
	[WS_R_CONTROL_CHAR] = "control character in name",
	[WS_R_NAME_TOO_LONG] = "component too long",
	[WS_R_PATH_TOO_LONG] = "path too long",
	[WS_R_TOO_DEEP] = "path too deep",
	[WS_R_RESERVED_NAME] = "reserved name (" WS_TMP_PREFIX "*)",
	[WS_R_LINK_EMPTY] = "empty symlink target",
	[WS_R_LINK_ABSOLUTE] = "absolute symlink target",
	[WS_R_LINK_ESCAPES] = "symlink target escapes the tree",
	[WS_R_LINK_DOTDOT_AFTER_NAME] = "symlink target has '..' after a name",
	[WS_R_DEVICE] = "device node",
	[WS_R_FIFO] = "FIFO",
	[WS_R_SOCKET] = "socket",
	[WS_R_UNKNOWN_TYPE] = "unsupported file type",
	[WS_R_HARDLINK_OUTSIDE] = "hard link to nothing earlier in the tree",
	[WS_R_DUPLICATE] = "duplicate entry",
	[WS_R_PARENT_NOT_DIR] = "parent is not a directory",
	[WS_R_PARENT_REFUSED] = "parent entry was refused",
	[WS_R_NOT_READ] = "not readable inside the box (or too deep there): left as it is",
	[WS_R_SETID_STRIPPED] = "setuid/setgid/sticky bits removed",
	[WS_R_SPECIAL_SKIPPED] = "special file not copied",
	[WS_R_IGNORED] = "excluded by .paddockignore",
	[WS_R_DEFAULT_EXCLUDED] = "excluded by default (secrets)",
	[WS_R_CREDENTIALS_REMOVED] = "credentials removed from git config",
	[WS_R_CHANGED_WHILE_READ] = "file changed while being copied",
};

const char *ws_reason_str(enum ws_reason r)
{
	return r >= 0 && r < WS_R_MAX && reason_names[r] ? reason_names[r] : "unknown reason";
}

bool ws_reason_left_out(enum ws_reason r)
{
	switch (r) {
	case WS_OK: case WS_R_ROOT: case WS_R_SETID_STRIPPED: case WS_R_SPECIAL_SKIPPED: case WS_R_IGNORED:
	case WS_R_DEFAULT_EXCLUDED: case WS_R_CREDENTIALS_REMOVED: case WS_R_CHANGED_WHILE_READ:
		return false;
	default:
		return r > WS_OK && r < WS_R_MAX;
	}
}

static const char *const exec_names[WS_EXEC_MAX] = {
	[WS_EXEC_NONE] = "none",
	[WS_EXEC_GIT_HOOK] = "git hook",
	[WS_EXEC_GIT_CONFIG] = "git config",
	[WS_EXEC_GIT_ATTRIBUTES] = "gitattributes driver",
	[WS_EXEC_GITMODULES] = "gitmodules",
	[WS_EXEC_GIT_LINK] = "git directory redirect",
	[WS_EXEC_ENVRC] = "direnv .envrc",
	[WS_EXEC_VSCODE] = "VS Code tasks/settings",
	[WS_EXEC_DEVCONTAINER] = "devcontainer",
	[WS_EXEC_IDEA] = "JetBrains workspace",
	[WS_EXEC_HOOK_MANAGER] = "git hook manager (husky, pre-commit, lefthook, .githooks)",
	[WS_EXEC_IGNORE_RULES] = "paddock's copy-in exclusions",
	[WS_EXEC_GIT_INTERNAL] = "git internals (use apply --branch)",
};

const char *ws_exec_str(enum ws_exec e)
{
	return e >= 0 && e < WS_EXEC_MAX && exec_names[e] ? exec_names[e] : "unknown";
}

static enum ws_reason check_component(const char *c, size_t n, const struct ws_limits *lim)
{
	if (n == 0)
		return WS_R_EMPTY_COMPONENT;
	if (n == 1 && c[0] == '.')
		return WS_R_DOT;
	if (n == 2 && c[0] == '.' && c[1] == '.')
		return WS_R_DOTDOT;
	if (n > lim->max_name)
		return WS_R_NAME_TOO_LONG;
	if (n >= strlen(WS_TMP_PREFIX) && memcmp(c, WS_TMP_PREFIX, strlen(WS_TMP_PREFIX)) == 0)
		return WS_R_RESERVED_NAME;
	return WS_OK;
}

static bool has_control(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] == 0x7f)
			return true;
	return false;
}

enum ws_reason ws_path_check(const char *p, size_t len, const struct ws_limits *lim)
{
	if (len == 0)
		return WS_R_EMPTY;
	if (has_control(p, len))
		return WS_R_CONTROL_CHAR;
	if (len > lim->max_path)
		return WS_R_PATH_TOO_LONG;
	if (p[0] == '/')
		return WS_R_ABSOLUTE;
	unsigned depth = 0;
	for (size_t start = 0; start <= len;) {
		const char *slash = memchr(p + start, '/', len - start);
		size_t end = slash ? (size_t)(slash - p) : len;
		enum ws_reason r = check_component(p + start, end - start, lim);
		if (r != WS_OK)
			return r;
		if (++depth > lim->max_depth)
			return WS_R_TOO_DEEP;
		start = end + 1;
	}
	return WS_OK;
}

enum ws_reason ws_path_normalize(const char *raw, const struct ws_limits *lim, char **ret_path)
{
	size_t len = strlen(raw);
	if (len == 0)
		return WS_R_EMPTY;
	/* bound the work before any scanning: a name longer than this is refused anyway */
	if (len > lim->max_path + 2)
		return WS_R_PATH_TOO_LONG;
	const char *p = raw;
	/* only plain "./" prefixes and trailing slashes go; "a//b", "a/./b" stay errors */
	while (len >= 2 && p[0] == '.' && p[1] == '/') {
		p += 2;
		len -= 2;
	}
	while (len > 1 && p[len - 1] == '/')
		len--;
	if (len == 0 || (len == 1 && p[0] == '.'))
		return WS_R_ROOT;
	enum ws_reason r = ws_path_check(p, len, lim);
	if (r == WS_OK)
		*ret_path = xstrndup(p, len);
	return r;
}

bool ws_path_under(const char *path, const char *prefix)
{
	return !*prefix || path_under(path, prefix); /* "" is the tree's root */
}

static enum ws_reason link_component(const char *c, size_t n, int *depth, bool *seen_name)
{
	if (n == 0 || (n == 1 && c[0] == '.'))
		return WS_OK;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		if (*seen_name)
			return WS_R_LINK_DOTDOT_AFTER_NAME;
		return --*depth < 0 ? WS_R_LINK_ESCAPES : WS_OK;
	}
	*seen_name = true;
	++*depth;
	return WS_OK;
}

enum ws_reason ws_symlink_check(const char *linkpath, const char *target, const struct ws_limits *lim)
{
	size_t len = strlen(target);
	if (len == 0)
		return WS_R_LINK_EMPTY;
	if (len > lim->max_path)
		return WS_R_PATH_TOO_LONG;
	if (has_control(target, len))
		return WS_R_CONTROL_CHAR;
	if (target[0] == '/')
		return WS_R_LINK_ABSOLUTE;
	int depth = 0; /* components in dirname(linkpath) */
	for (const char *s = linkpath; *s; s++)
		depth += *s == '/';
	bool seen_name = false;
	for (size_t start = 0; start <= len;) {
		const char *slash = memchr(target + start, '/', len - start);
		size_t end = slash ? (size_t)(slash - target) : len;
		enum ws_reason r = link_component(target + start, end - start, &depth, &seen_name);
		if (r != WS_OK)
			return r;
		start = end + 1;
	}
	return WS_OK;
}
