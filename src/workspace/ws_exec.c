/* ws_exec.c — which paths make the host run code without any user action (pure).
 *
 * Names are folded the way a case-insensitive host filesystem (ext4 casefold, a mounted
 * vfat/NTFS/HFS+ volume) would see them, so ".GIT/Hooks/x" or ".git/hoo\u212As/x" (KELVIN
 * SIGN) or ".g\u200Cit" (zero-width non-joiner, ignored by HFS+) count as git hooks too. */
#include <strings.h>

#include "ws_ignore.h"
#include "ws_path.h"

#define GITATTR_MAX (1u << 20)

/* Unicode characters some filesystems ignore in names (HFS+) — dropped when folding. */
static bool ignorable(const unsigned char *s, size_t left, size_t *ret_len)
{
	if (left >= 3 && s[0] == 0xe2 && s[1] == 0x80 &&
	    ((s[2] >= 0x8b && s[2] <= 0x8f) || (s[2] >= 0xaa && s[2] <= 0xae)))
		return *ret_len = 3, true; /* U+200B..200F, U+202A..202E */
	if (left >= 3 && s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xa0 && s[2] <= 0xaf)
		return *ret_len = 3, true; /* U+2060..206F */
	if (left >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		return *ret_len = 3, true; /* U+FEFF */
	return false;
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

enum ws_exec ws_path_exec_class(const char *path, bool is_dir)
{
	_cleanup_free_ char *f = fold(path);
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
