/* ws_ignore.c — .paddockignore rules and the default secret exclusions (see ws_ignore.h).
 *
 * A rule is a list of '/'-separated segments; an unanchored rule gets a leading "**". A rule
 * "**"+one segment (the common "*.log", "build/") only needs the last component, which keeps
 * copy-in of large trees cheap; anything else is matched with a small dynamic programme over
 * (segment, component) pairs, so no pattern can make matching exponential. */
#include <fcntl.h>
#include <fnmatch.h>

#include "util/fdio.h"
#include "ws_io.h"
#include "ws_ignore.h"

#define MAX_SEGS 64
#define IGNORE_FILE_MAX (1u << 20)

struct rule {
	char **segs;
	size_t nseg;
	bool negate, dir_only;
	enum ws_reason tag;
};

struct ws_ignore {
	struct rule *v;
	size_t n, cap;
};

struct ws_ignore *ws_ignore_new(void)
{
	return xcalloc(1, sizeof(struct ws_ignore));
}

void ws_ignore_free(struct ws_ignore *ig)
{
	if (!ig)
		return;
	for (size_t i = 0; i < ig->n; i++)
		strv_free(ig->v[i].segs);
	free(ig->v);
	free(ig);
}

/* Splits the pattern into segments; empty segments ("a//b") are dropped. */
static char **split_segs(const char *pat, bool anchored, size_t *ret_n)
{
	_cleanup_free_ char *copy = xstrdup(pat);
	char **segs = xcalloc(1, sizeof(char *));
	size_t n = 0;
	if (!anchored) {
		segs = strv_append(segs, "**");
		n++;
	}
	char *p = copy;
	for (char *tok; (tok = strsep(&p, "/"));)
		if (*tok && n < MAX_SEGS) {
			segs = strv_append(segs, tok);
			n++;
		}
	*ret_n = n;
	return segs;
}

/* Parses one line into a rule; false for blank lines and comments. */
static bool parse_rule(char *line, enum ws_reason tag, struct rule *ret)
{
	size_t len = strlen(line);
	while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\r') &&
	       !(len >= 2 && line[len - 2] == '\\'))
		line[--len] = '\0';
	if (len == 0 || line[0] == '#')
		return false;
	*ret = (struct rule){.tag = tag};
	if (line[0] == '!') {
		ret->negate = true;
		line++;
		len--;
	}
	if (len > 0 && line[len - 1] == '/') {
		ret->dir_only = true;
		line[--len] = '\0';
	}
	bool anchored = strchr(line, '/') != NULL; /* leading or inner '/' anchors */
	ret->segs = split_segs(line, anchored, &ret->nseg);
	if (ret->nseg == 0 || (ret->nseg == 1 && streq(ret->segs[0], "**") && !anchored)) {
		strv_free(ret->segs);
		return false;
	}
	return true;
}

static int add_line(struct ws_ignore *ig, char *line, enum ws_reason tag)
{
	struct rule r;
	if (!parse_rule(line, tag, &r))
		return 0;
	if (ig->n >= WS_IGNORE_MAX_RULES) {
		strv_free(r.segs);
		return -E2BIG;
	}
	if (ig->n == ig->cap) {
		ig->cap = ig->cap ? ig->cap * 2 : 16;
		ig->v = xrealloc(ig->v, ig->cap * sizeof(*ig->v));
	}
	ig->v[ig->n++] = r;
	return 0;
}

void ws_ignore_add_defaults(struct ws_ignore *ig)
{
	static const char *const defaults[] = {
		".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "id_ecdsa*", "id_dsa*",
		/* the credential stores of curl/ftp/git (netrc), git's store helper, npm and PyPI
		 * (registry tokens): `!.npmrc` in .paddockignore brings a token-free one back */
		".netrc", "_netrc", ".git-credentials", ".npmrc", ".pypirc",
		/* cloud and registry logins, where a project keeps its own */
		"**/.aws/credentials", "**/.docker/config.json",
	};
	for (size_t i = 0; i < ARRAY_SIZE(defaults); i++) {
		_cleanup_free_ char *l = xstrdup(defaults[i]);
		(void)add_line(ig, l, WS_R_DEFAULT_EXCLUDED);
	}
}

int ws_ignore_add_text(struct ws_ignore *ig, const char *buf, size_t len)
{
	for (size_t start = 0; start < len;) {
		const char *nl = memchr(buf + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - buf) : len;
		if (end - start > WS_IGNORE_MAX_LINE)
			return -E2BIG;
		_cleanup_free_ char *line = xstrndup(buf + start, end - start);
		int r = add_line(ig, line, WS_R_IGNORED);
		if (r < 0)
			return r;
		start = end + 1;
	}
	return 0;
}

int ws_ignore_load(int rootfd, bool defaults, struct ws_ignore **ret, pd_err *err)
{
	struct ws_ignore *ig = ws_ignore_new();
	if (defaults)
		ws_ignore_add_defaults(ig);
	_cleanup_close_ int fd = -1;
	int r = ws_open_beneath(rootfd, WS_IGNORE_FILE, O_RDONLY | O_NOCTTY | O_NONBLOCK, &fd);
	if (r == 0) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		r = read_fd_all(fd, IGNORE_FILE_MAX, &buf, &len);
		if (r == 0)
			r = ws_ignore_add_text(ig, buf, len);
	} else if (r == -ENOENT) {
		r = 0;
	}
	if (r < 0) {
		ws_ignore_free(ig);
		return pd_error(err, r, "cannot read %s", WS_IGNORE_FILE);
	}
	*ret = ig;
	return 0;
}

/* segs[i..] against comps[j..]: a trailing "**" needs at least one component (it means
 * "everything inside"); any other "**" matches zero or more. */
static bool match_segs(char *const *segs, size_t ns, char *const *comps, size_t nc)
{
	_cleanup_free_ bool *dp = xcalloc((ns + 1) * (nc + 1), sizeof(bool));
#define DP(i, j) dp[(i) * (nc + 1) + (j)]
	DP(ns, nc) = true;
	for (size_t i = ns; i-- > 0;) {
		bool star = streq(segs[i], "**");
		for (size_t j = nc + 1; j-- > 0;) {
			if (star && i == ns - 1)
				DP(i, j) = j < nc;
			else if (star)
				DP(i, j) = DP(i + 1, j) || (j < nc && DP(i, j + 1));
			else
				DP(i, j) = j < nc && fnmatch(segs[i], comps[j], 0) == 0 && DP(i + 1, j + 1);
		}
	}
	return DP(0, 0);
#undef DP
}

static bool rule_matches(const struct rule *r, char *const *comps, size_t nc, bool is_dir)
{
	if (r->dir_only && !is_dir)
		return false;
	if (r->nseg == 2 && streq(r->segs[0], "**") && !streq(r->segs[1], "**"))
		return fnmatch(r->segs[1], comps[nc - 1], 0) == 0;
	return match_segs(r->segs, r->nseg, comps, nc);
}

static enum ws_reason match_comps(const struct ws_ignore *ig, char *const *comps, size_t nc, bool is_dir)
{
	enum ws_reason verdict = WS_OK;
	for (size_t i = 0; i < ig->n; i++)
		if (rule_matches(&ig->v[i], comps, nc, is_dir))
			verdict = ig->v[i].negate ? WS_OK : ig->v[i].tag;
	return verdict;
}

static size_t split_path(char *p, char **comps, size_t max)
{
	size_t n = 0;
	for (char *tok; n < max && (tok = strsep(&p, "/"));)
		comps[n++] = tok;
	return n;
}

enum ws_reason ws_ignore_match_one(const struct ws_ignore *ig, const char *path, bool is_dir)
{
	if (!ig || ig->n == 0)
		return WS_OK;
	_cleanup_free_ char *copy = xstrdup(path);
	char *comps[512];
	size_t nc = split_path(copy, comps, ARRAY_SIZE(comps));
	return match_comps(ig, comps, nc, is_dir);
}

enum ws_reason ws_ignore_match(const struct ws_ignore *ig, const char *path, bool is_dir)
{
	if (!ig || ig->n == 0)
		return WS_OK;
	_cleanup_free_ char *copy = xstrdup(path);
	char *comps[512];
	size_t nc = split_path(copy, comps, ARRAY_SIZE(comps));
	for (size_t k = 1; k <= nc; k++) {
		enum ws_reason r = match_comps(ig, comps, k, k < nc || is_dir);
		if (r != WS_OK)
			return r;
	}
	return WS_OK;
}
