/* ws_exec.c — which paths make the host run code without any user action (pure).
 *
 * Names are folded the way a case-insensitive host filesystem (ext4 casefold, a mounted
 * vfat/NTFS/HFS+ volume) would see them, so ".GIT/Hooks/x" or ".git/hoo\u212As/x" (KELVIN
 * SIGN) or ".g\u200Cit" (zero-width non-joiner, ignored by HFS+) count as git hooks too. */
#include <strings.h>

#include "ws_ignore.h"
#include "ws_path.h"

#define GITATTR_MAX (1u << 20)

/* Unicode's Default_Ignorable_Code_Point set — what HFS+ and the kernel's casefolding
 * (utf8 nfdicf, before Linux 6.14) drop from names — is dropped when folding, so
 * ".g<SOFT HYPHEN>it" is ".git" here as it may be on the host. */
static bool ignorable_cp(uint32_t c)
{
	return c == 0xad || c == 0x34f || c == 0x61c || (c >= 0x115f && c <= 0x1160) || (c >= 0x17b4 && c <= 0x17b5) ||
	       (c >= 0x180b && c <= 0x180f) || (c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x2060 && c <= 0x206f) || c == 0x3164 || (c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff ||
	       c == 0xffa0 || (c >= 0xfff0 && c <= 0xfff8) || (c >= 0x1bca0 && c <= 0x1bca3) ||
	       (c >= 0x1d173 && c <= 0x1d17a) || (c >= 0xe0000 && c <= 0xe0fff);
}

/* Whether s starts with a (well-formed, shortest-form) UTF-8 sequence of an ignorable code
 * point; its length in *ret_len. */
static bool ignorable(const unsigned char *s, size_t left, size_t *ret_len)
{
	uint32_t c;
	size_t n;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07u;
	else
		return false;
	if (left < n)
		return false;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return false;
		c = (c << 6) | (s[i] & 0x3fu);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return false;
	*ret_len = n;
	return ignorable_cp(c);
}

/* Folds case (ASCII, KELVIN SIGN -> k, LONG S -> s) and drops ignorable characters. */
static char *fold(const char *path)
{
	const unsigned char *s = (const unsigned char *)path;
	size_t len = strlen(path), j = 0, skip;
	char *out = xmalloc(len + 1);
	for (size_t i = 0; i < len;) {
		if (ignorable(s + i, len - i, &skip)) {
			i += skip;
		} else if (len - i >= 3 && s[i] == 0xe2 && s[i + 1] == 0x84 && s[i + 2] == 0xaa) {
			out[j++] = 'k';
			i += 3;
		} else if (len - i >= 2 && s[i] == 0xc5 && s[i + 1] == 0xbf) {
			out[j++] = 's';
			i += 2;
		} else {
			out[j++] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] + 32) : (char)s[i];
			i++;
		}
	}
	out[j] = '\0';
	return out;
}

static size_t split(char *p, char **comps, size_t max)
{
	size_t n = 0;
	for (char *tok; (tok = strsep(&p, "/")) && n < max;)
		comps[n++] = tok;
	return n;
}

static bool any_is(char **c, size_t from, size_t n, const char *name)
{
	for (size_t i = from; i < n; i++)
		if (streq(c[i], name))
			return true;
	return false;
}

/* c[0..n) is what lies beneath a ".git" directory. */
static enum ws_exec class_in_gitdir(char **c, size_t n)
{
	if (n == 0)
		return WS_EXEC_NONE;
	const char *last = c[n - 1];
	if (any_is(c, 0, n, "hooks"))
		return WS_EXEC_GIT_HOOK;
	if (streq(last, "config") || streq(last, "config.worktree"))
		return WS_EXEC_GIT_CONFIG;
	if (n >= 2 && streq(c[n - 2], "info") && streq(last, "attributes"))
		return WS_EXEC_GIT_ATTRIBUTES;
	if (streq(last, "commondir") || streq(last, "gitdir"))
		return WS_EXEC_GIT_LINK;
	return WS_EXEC_NONE;
}

static enum ws_exec class_by_name(char **c, size_t n, bool is_dir)
{
	const char *last = c[n - 1];
	if (streq(last, ".gitattributes"))
		return WS_EXEC_GIT_ATTRIBUTES;
	if (streq(last, ".gitmodules"))
		return WS_EXEC_GITMODULES;
	if (streq(last, ".envrc"))
		return WS_EXEC_ENVRC;
	if (streq(last, ".devcontainer.json") || any_is(c, 0, n, ".devcontainer"))
		return WS_EXEC_DEVCONTAINER;
	if (streq(last, ".vscode") || streq(last, ".idea"))
		return is_dir ? WS_EXEC_NONE : (last[1] == 'v' ? WS_EXEC_VSCODE : WS_EXEC_IDEA);
	if (n >= 2 && streq(c[n - 2], ".vscode") &&
	    (streq(last, "tasks.json") || streq(last, "settings.json") || streq(last, "launch.json")))
		return WS_EXEC_VSCODE;
	if (n >= 2 && streq(c[n - 2], ".idea") && streq(last, "workspace.xml"))
		return WS_EXEC_IDEA;
	if (n == 1 && streq(last, WS_IGNORE_FILE))
		return WS_EXEC_IGNORE_RULES;
	/* hook managers: git runs what core.hooksPath names (husky sets .husky/_, many projects
	 * .githooks) or what the manager's config lists, at the next commit, with no other step
	 * by the user — as .git/hooks itself */
	if (any_is(c, 0, n, ".husky") || any_is(c, 0, n, ".githooks"))
		return WS_EXEC_HOOK_MANAGER;
	if (n == 1 && (streq(last, ".pre-commit-config.yaml") || streq(last, ".pre-commit-config.yml") ||
		       streq(last, "lefthook.yml") || streq(last, "lefthook.yaml") || streq(last, ".lefthook.yml") ||
		       streq(last, ".lefthook.yaml") || streq(last, "lefthook-local.yml") ||
		       streq(last, ".lefthook-local.yml")))
		return WS_EXEC_HOOK_MANAGER;
	return WS_EXEC_NONE;
}

/* core.hooksPath directories inside the project (folded), set by the CLI from the host's git
 * configuration: what git runs from there is a git hook like .git/hooks' */
static char **hook_dirs;

void ws_exec_set_hook_dirs(char *const *dirs)
{
	strv_free(hook_dirs);
	hook_dirs = NULL;
	for (char *const *d = dirs; d && *d; d++) {
		_cleanup_free_ char *f = fold(*d);
		char *p = f;
		while (p[0] == '.' && p[1] == '/')
			p += 2;
		size_t n = strlen(p);
		while (n > 0 && p[n - 1] == '/')
			p[--n] = '\0';
		hook_dirs = strv_append(hook_dirs, n == 0 || streq(p, ".") ? "" : p);
	}
}

/* githooks(5): the names git runs from a hooks directory */
static bool is_hook_name(const char *n)
{
	static const char *const names[] = {
		"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
		"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
		"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
		"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
		"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
		"post-index-change",
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (streq(n, names[i]))
			return true;
	return false;
}

static bool in_hook_dir(const char *folded)
{
	for (char **d = hook_dirs; d && *d; d++) {
		size_t n = strlen(*d);
		if (n == 0) { /* the project's root is the hooks directory: its hooks by name */
			if (!strchr(folded, '/') && is_hook_name(folded))
				return true;
			continue;
		}
		if (strncmp(folded, *d, n) == 0 && (folded[n] == '\0' || folded[n] == '/'))
			return true;
	}
	return false;
}

enum ws_exec ws_path_exec_class(const char *path, bool is_dir)
{
	_cleanup_free_ char *f = fold(path);
	if (in_hook_dir(f))
		return WS_EXEC_GIT_HOOK;
	char *comps[4097];
	size_t n = split(f, comps, ARRAY_SIZE(comps));
	if (n == 0)
		return WS_EXEC_NONE;
	for (size_t i = 0; i < n; i++) {
		if (!streq(comps[i], ".git"))
			continue;
		if (i == n - 1) /* a .git that is not a directory redirects git anywhere */
			return is_dir ? WS_EXEC_NONE : WS_EXEC_GIT_LINK;
		/* every path inside a .git is flagged: hooks and config run code, and the rest is data
		 * the host's git trusts (refs, index, objects); commits come over with --branch */
		enum ws_exec e = class_in_gitdir(comps + i + 1, n - i - 1);
		return e != WS_EXEC_NONE ? e : WS_EXEC_GIT_INTERNAL;
	}
	return class_by_name(comps, n, is_dir);
}

static bool token_is_driver(const char *t, size_t n)
{
	static const char *const keys[] = {"filter=", "diff=", "merge="};
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		size_t k = strlen(keys[i]);
		if (n > k && strncasecmp(t, keys[i], k) == 0)
			return true;
	}
	return false;
}

/* Checks every attribute token of one line (the first token is the pattern). */
static bool line_is_exec(const char *s, size_t n)
{
	size_t i = 0, tok = 0;
	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
			i++;
		if (i >= n || (tok == 0 && s[i] == '#'))
			return false;
		size_t start = i;
		if (tok == 0 && s[i] == '"') /* quoted pattern: skip to the closing quote */
			for (i++; i < n && s[i] != '"'; i += (s[i] == '\\') ? 2 : 1)
				;
		while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			i++;
		if (tok++ > 0 && token_is_driver(s + start, (i > n ? n : i) - start))
			return true;
	}
	return false;
}

bool ws_gitattributes_is_exec(const char *buf, size_t len)
{
	if (len > GITATTR_MAX)
		return true;
	for (size_t start = 0; start < len;) {
		const char *nl = memchr(buf + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - buf) : len;
		if (line_is_exec(buf + start, end - start))
			return true;
		start = end + 1;
	}
	return false;
}
