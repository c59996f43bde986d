/* ws_mfile.c — manifest files: one header line, then one line per entry,
 *
 *     paddock-manifest 1
 *     <type> <mode> <size> <sha256|-> <reason> <path> [<target>]
 *
 * type f/d/l/x (file, dir, symlink, refused), mode 4 octal digits, size decimal, reason the
 * enum ws_reason number. Paths and targets are escaped: every byte outside 0x21..0x7e and the
 * backslash become \xNN, so a line is plain ASCII split on single spaces. The loader trusts
 * nothing: it re-checks every path, the sort order and the limits. */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "ws_manifest.h"

#define MFILE_MAGIC "paddock-manifest 1"
static const char type_chars[WS_TYPE_MAX] = {
	[WS_FILE] = 'f', [WS_DIR] = 'd', [WS_SYMLINK] = 'l', [WS_REFUSED] = 'x',
};

static void put_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x21 || *p > 0x7e || *p == '\\')
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
}

static void put_entry(FILE *f, const struct ws_entry *e)
{
	char hex[2 * WS_SHA256_LEN + 1] = "-";
	if (e->type == WS_FILE)
		ws_sha256_hex(e->sha256, hex);
	fprintf(f, "%c %04o %" PRIu64 " %s %d ", type_chars[e->type], (unsigned)(e->mode & 0777),
		e->size, hex, (int)e->reason);
	put_escaped(f, e->path);
	if (e->type == WS_SYMLINK) {
		fputc(' ', f);
		put_escaped(f, e->target);
	}
	fputc('\n', f);
}

static void put_manifest(FILE *f, const void *what)
{
	const struct ws_manifest *m = what;
	fprintf(f, "%s\n", MFILE_MAGIC);
	for (size_t i = 0; i < m->n; i++)
		put_entry(f, &m->v[i]);
}

/* dirfd/name written by put through a temp file (fsynced when durable) renamed over it; what
 * ("manifest", "notes") names it in errors. */
static int save_file(int dirfd, const char *name, const char *what_name, void (*put)(FILE *, const void *),
		     const void *what, bool durable, pd_err *err)
{
	char tmp[WS_TMP_NAME_MAX];
	int fd, r = ws_tmpfile_at(dirfd, tmp, &fd);
	if (r < 0)
		return pd_error(err, r, "cannot create %s file beside %s", what_name, name);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
	} else {
		put(f, what);
		if (fflush(f) != 0 || ferror(f) || (durable && fsync(fd) != 0))
			r = errno ? -errno : -EIO;
		if (fclose(f) != 0 && r == 0)
			r = -errno;
	}
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		return pd_error(err, r, "cannot write %s %s", what_name, name);
	}
	return 0;
}

static int save(const struct ws_manifest *m, int dirfd, const char *name, bool durable, pd_err *err)
{
	return save_file(dirfd, name, "manifest", put_manifest, m, durable, err);
}

int ws_manifest_save(const struct ws_manifest *m, int dirfd, const char *name, pd_err *err)
{
	return save(m, dirfd, name, true, err);
}

int ws_manifest_save_nosync(const struct ws_manifest *m, int dirfd, const char *name, pd_err *err)
{
	return save(m, dirfd, name, false, err);
}

static int unescape(const char *s, char **ret)
{
	size_t n = strlen(s), j = 0;
	_cleanup_free_ char *out = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			out[j++] = s[i];
			continue;
		}
		if (i + 3 >= n || s[i + 1] != 'x')
			return -EINVAL;
		int hi = hex_digit(s[i + 2]), lo = hex_digit(s[i + 3]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0)
			return -EINVAL; /* no NUL inside a name */
		out[j++] = (char)(hi << 4 | lo);
		i += 3;
	}
	out[j] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

static enum ws_type type_of(const char *t)
{
	for (int i = 1; i < WS_TYPE_MAX; i++)
		if (t[0] == type_chars[i] && t[1] == '\0')
			return (enum ws_type)i;
	return WS_TYPE_INVALID;
}

static int parse_numbers(char **fld, struct ws_entry *e)
{
	char *end;
	unsigned long mode = strtoul(fld[1], &end, 8);
	if (*end || mode > 0777 || strlen(fld[1]) != 4)
		return -EINVAL;
	e->mode = (mode_t)mode;
	errno = 0;
	e->size = strtoull(fld[2], &end, 10);
	if (*end || errno || fld[2][0] == '-')
		return -EINVAL;
	long reason = strtol(fld[4], &end, 10);
	if (*end || reason < 0 || reason >= WS_R_MAX)
		return -EINVAL;
	e->reason = (enum ws_reason)reason;
	if (e->type == WS_FILE)
		return ws_sha256_parse(fld[3], e->sha256);
	return streq(fld[3], "-") ? 0 : -EINVAL;
}

/* Parses one line (modified in place) into e (strings owned by e). */
static int parse_line(char *line, const struct ws_limits *lim, struct ws_entry *e)
{
	char *fld[8] = {0};
	size_t n = 0;
	for (char *tok; n < ARRAY_SIZE(fld) && (tok = strsep(&line, " "));)
		fld[n++] = tok;
	if (line || n < 6 || (e->type = type_of(fld[0])) == WS_TYPE_INVALID)
		return -EINVAL;
	if (n != (e->type == WS_SYMLINK ? 7u : 6u) || parse_numbers(fld, e) < 0)
		return -EINVAL;
	if (unescape(fld[5], &e->path) < 0 || ws_path_check(e->path, strlen(e->path), lim) != WS_OK)
		return -EINVAL;
	/* targets are not judged here: a base manifest records the host's own links as they are;
	 * apply checks every target with ws_symlink_check() before it creates a link */
	if (e->type == WS_SYMLINK && (unescape(fld[6], &e->target) < 0 || !e->target[0] ||
				      strlen(e->target) > lim->max_path))
		return -EINVAL;
	return 0;
}

static int add_line(struct ws_manifest *m, char *line, const struct ws_limits *lim)
{
	struct ws_entry e = {0};
	int r = parse_line(line, lim, &e);
	if (r == 0 && m->n > 0 && strcmp(m->v[m->n - 1].path, e.path) >= 0)
		r = -EINVAL; /* must be strictly sorted: no duplicates */
	if (r == 0 && m->n >= lim->max_entries)
		r = -EFBIG;
	if (r == 0)
		ws_manifest_add(m, &e);
	free(e.path);
	free(e.target);
	return r;
}

static int load_lines(FILE *f, const struct ws_limits *lim, struct ws_manifest *m, size_t *ret_line)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, max = 2 * 4 * lim->max_path + 256;
	ssize_t n;
	for (*ret_line = 1; (n = getline(&line, &cap, f)) >= 0; ++*ret_line) {
		if (n == 0 || line[n - 1] != '\n' || (size_t)n > max)
			return -EINVAL;
		line[n - 1] = '\0';
		if (*ret_line == 1) {
			if (!streq(line, MFILE_MAGIC))
				return -EINVAL;
			continue;
		}
		int r = add_line(m, line, lim);
		if (r < 0)
			return r;
	}
	return *ret_line > 1 ? 0 : -EINVAL;
}

/* dirfd/name as a stream, never through a symlink; NULL with errno */
static FILE *open_read(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
	if (!f && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

int ws_manifest_load(int dirfd, const char *name, const struct ws_limits *lim,
		     struct ws_manifest *ret, pd_err *err)
{
	_cleanup_fclose_ FILE *f = open_read(dirfd, name);
	if (!f)
		return pd_error(err, errno, "cannot open manifest %s", name);
	struct ws_manifest m = {0};
	size_t line = 0;
	int r = load_lines(f, lim ? lim : &WS_LIMITS_DEFAULT, &m, &line);
	if (r < 0) {
		ws_manifest_free(&m);
		return pd_error_msg(err, r, "manifest %s: bad line %zu", name, line);
	}
	*ret = m;
	return 0;
}

/* ---- notes files ---------------------------------------------------------------------------
 *
 *     paddock-notes 1
 *     <reason> p<path> [d<detail>]
 *     dropped <count>
 *
 * Escaped like manifest paths; a path is cut at WS_NOTE_PATH_MAX bytes (a note names what
 * was left out, it is never used as a path). */
#define NFILE_MAGIC "paddock-notes 1"
#define WS_NOTE_PATH_MAX 4096
#define NFILE_LINE_MAX (2 * 4 * WS_NOTE_PATH_MAX + 64)

static void put_notes(FILE *f, const void *what)
{
	const struct ws_notes *n = what;
	fprintf(f, "%s\n", NFILE_MAGIC);
	for (size_t i = 0; i < n->n; i++) {
		_cleanup_free_ char *path = xstrndup(n->v[i].path ? n->v[i].path : "", WS_NOTE_PATH_MAX);
		fprintf(f, "%d p", (int)n->v[i].reason);
		put_escaped(f, path);
		if (n->v[i].detail) {
			_cleanup_free_ char *detail = xstrndup(n->v[i].detail, WS_NOTE_PATH_MAX);
			fputs(" d", f);
			put_escaped(f, detail);
		}
		fputc('\n', f);
	}
	fprintf(f, "dropped %zu\n", n->dropped);
}

int ws_notes_save(const struct ws_notes *n, int dirfd, const char *name, pd_err *err)
{
	return save_file(dirfd, name, "notes", put_notes, n, false, err);
}

static int note_line(char *line, struct ws_notes *n)
{
	char *fld[4] = {0}, *end;
	size_t k = 0;
	for (char *tok; k < ARRAY_SIZE(fld) && (tok = strsep(&line, " "));)
		fld[k++] = tok;
	if (line || k < 2)
		return -EINVAL;
	if (streq(fld[0], "dropped")) {
		errno = 0;
		unsigned long long d = strtoull(fld[1], &end, 10);
		if (k != 2 || *end || errno || fld[1][0] == '-' || d > SIZE_MAX)
			return -EINVAL;
		n->dropped = (size_t)d;
		return 1; /* the last line */
	}
	long reason = strtol(fld[0], &end, 10);
	if (*end || reason <= WS_OK || reason >= WS_R_MAX || fld[1][0] != 'p' || k > 3 || (k == 3 && fld[2][0] != 'd'))
		return -EINVAL;
	_cleanup_free_ char *path = NULL, *detail = NULL;
	if (unescape(fld[1] + 1, &path) < 0 || (k == 3 && unescape(fld[2] + 1, &detail) < 0))
		return -EINVAL;
	if (n->n >= WS_NOTES_MAX)
		return -EFBIG;
	ws_notes_add(n, (enum ws_reason)reason, path, detail);
	return 0;
}

int ws_notes_load(int dirfd, const char *name, struct ws_notes *ret, pd_err *err)
{
	_cleanup_fclose_ FILE *f = open_read(dirfd, name);
	if (!f)
		return pd_error(err, errno, "cannot open %s", name);
	struct ws_notes n = {0};
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, no = 0;
	ssize_t len;
	int r = 0, last = 0;
	while (r == 0 && !last && (len = getline(&line, &cap, f)) >= 0) {
		if (len == 0 || line[len - 1] != '\n' || (size_t)len > NFILE_LINE_MAX) {
			r = -EINVAL;
			break;
		}
		line[len - 1] = '\0';
		if (no++ == 0)
			r = streq(line, NFILE_MAGIC) ? 0 : -EINVAL;
		else if ((last = note_line(line, &n)) < 0)
			r = last;
	}
	if (r == 0 && (last != 1 || getline(&line, &cap, f) >= 0))
		r = -EINVAL; /* cut short, or something after the end */
	if (r < 0) {
		ws_notes_free(&n);
		return pd_error_msg(err, r, "%s: bad line %zu", name, no);
	}
	*ret = n;
	return 0;
}
