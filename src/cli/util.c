/* util.c — option value parsers and small helpers shared by the verbs. */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "proto/proto.h"
#include "supervisor/wsbox.h"

int cli_usage(const char *verb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	fprintf(stderr, "paddock%s%s: ", verb ? " " : "", verb ? verb : "");
	/* the message quotes what was typed: shown escaped like every error */
	pd_fputs_escaped(msg ? msg : fmt, stderr);
	free(msg);
	fprintf(stderr, "\nTry 'paddock %s%s--help'.\n", verb ? verb : "", verb ? " " : "");
	return EXIT_USAGE;
}

int cli_check_tty(const char *verb, int tty)
{
	if (tty == 1 && !isatty(STDIN_FILENO))
		return cli_usage(verb, "-t needs a terminal on stdin (leave it out, or give -T, for pipes)");
	return 0;
}

int cli_check_command(const char *verb, char *const *cmd, char *const *env)
{
	size_t n = 0, bytes = 0, ne = 0;
	for (char *const *a = cmd; a && *a; a++, n++) {
		if (strlen(*a) >= PROTO_MAX_STR)
			return cli_usage(verb, "argument %zu of the command is %zu bytes; at most %u fit (pass more through a file or stdin)",
					 n + 1, strlen(*a), PROTO_MAX_STR - 1);
		bytes += strlen(*a) + 1 + 6; /* a TLV's header */
	}
	for (char *const *e = env; e && *e; e++, ne++) {
		if (strlen(*e) >= PROTO_MAX_STR)
			return cli_usage(verb, "-e %.*s: %zu bytes; at most %u fit", (int)strcspn(*e, "="), *e, strlen(*e),
					 PROTO_MAX_STR - 1);
		bytes += strlen(*e) + 1 + 6;
	}
	if (n > PROTO_MAX_ARGS)
		return cli_usage(verb, "the command has %zu arguments; at most %u fit", n, PROTO_MAX_ARGS);
	if (ne > PROTO_MAX_ENV)
		return cli_usage(verb, "%zu environment variables; at most %u fit", ne, PROTO_MAX_ENV);
	/* the whole request is one frame; what the box adds (its defaults, the directory) fits
	 * in the margin */
	if (bytes > PROTO_MAX_PAYLOAD - 16384)
		return cli_usage(verb, "the command and its -e values are %zu bytes; at most %u fit (pass more through a "
				 "file or stdin)", bytes, PROTO_MAX_PAYLOAD - 16384);
	if (n && !cmd[0][0])
		return cli_usage(verb, "the command's name is empty");
	return 0;
}

int cli_fail(const pd_err *err)
{
	pd_err_print(err);
	return EXIT_FAILURE_PD;
}

int cli_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	/* a decimal fraction of a unit: 1.5G */
	uint64_t frac = 0, scale = 1;
	if (*end == '.') {
		for (end++; *end >= '0' && *end <= '9'; end++)
			if (scale < UINT64_C(1000000000))
				frac = frac * 10 + (uint64_t)(*end - '0'), scale *= 10;
		if (scale == 1)
			return -EINVAL;
	}
	unsigned shift = 0;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end || (scale > 1 && !shift))
		return -EINVAL;
	if (v >= (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = ((uint64_t)v << shift) + (uint64_t)((unsigned __int128)frac * (UINT64_C(1) << shift) / scale);
	return 0;
}

int cli_parse_cpus(const char *s, uint32_t *ret_milli)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0))
		return -EINVAL;
	if (v > 1024)
		return -ERANGE;
	*ret_milli = (uint32_t)(v * 1000 + 0.5);
	return *ret_milli ? 0 : -EINVAL;
}

int cli_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *ret)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		return -EINVAL;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

int cli_env_arg(const char *arg, char ***env)
{
	const char *eq = strchr(arg, '=');
	size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
	if (klen == 0)
		return -EINVAL;
	for (size_t i = 0; i < klen; i++) {
		char c = arg[i];
		if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9')))
			return -EINVAL;
	}
	if (eq) {
		*env = strv_append(*env, arg);
		return 0;
	}
	const char *v = getenv(arg);
	if (v) {
		_cleanup_free_ char *kv = xasprintf("%s=%s", arg, v);
		*env = strv_append(*env, kv);
	}
	return 0;
}

static bool box_path_ok(const char *p)
{
	if (p[0] != '/' || strlen(p) >= PATH_MAX || strstr(p, "/../") || strstr(p, "/./") ||
	    (strlen(p) >= 3 && streq(p + strlen(p) - 3, "/..")))
		return false;
	static const char *const reserved[] = {"/proc", "/sys", "/dev", "/.probe-reserved"};
	for (size_t i = 0; i < ARRAY_SIZE(reserved); i++) {
		size_t n = strlen(reserved[i]);
		if (strncmp(p, reserved[i], n) == 0 && (p[n] == '\0' || p[n] == '/'))
			return false;
	}
	return !streq(p, "/");
}

int cli_parse_bind(const char *arg, struct box_bind *ret, pd_err *err)
{
	_cleanup_free_ char *copy = xstrdup(arg);
	char *box = strchr(copy, ':');
	if (!box)
		return pd_error_msg(err, EINVAL, "-v wants HOST:BOX[:ro|:rw], got '%s'", arg);
	*box++ = '\0';
	bool ro = false;
	char *mode = strchr(box, ':');
	if (mode) {
		*mode++ = '\0';
		if (streq(mode, "ro"))
			ro = true;
		else if (!streq(mode, "rw"))
			return pd_error_msg(err, EINVAL, "-v mode must be ro or rw, got '%s'", mode);
	}
	char real[PATH_MAX];
	if (!realpath(copy, real))
		return pd_error(err, errno, "-v: cannot use host path '%s'", copy);
	if (!box_path_ok(box))
		return pd_error_msg(err, EINVAL, "-v: '%s' is not a usable path inside the box", box);
	*ret = (struct box_bind){xstrdup(real), xstrdup(box), ro};
	return 0;
}

char *cli_random_name(const char *prefix)
{
	uint8_t b[3] = {0};
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		b[0] = (uint8_t)getpid();
	return xasprintf("%s-%02x%02x%02x", prefix, b[0], b[1], b[2]);
}

char *cli_apply_journal(void)
{
	_cleanup_free_ char *home = NULL;
	return store_home(&home, NULL) < 0 ? NULL : xasprintf("%s/journal", home);
}

void cli_apply_waiting(const char *root)
{
	fprintf(stderr, "paddock: another apply to %s is running; waiting for it to finish\n", root);
}

int cli_check_name(const char *verb, const char *name)
{
	if (box_name_valid(name))
		return 0;
	return cli_usage(verb, "invalid name '%s' (letters, digits, '-', '_', '.'; up to %d)", name, BOX_NAME_MAX);
}

int cli_box_dir(const char *name, char **ret_home, char **ret_dir, pd_err *err)
{
	if (!box_name_valid(name))
		return pd_error_msg(err, EINVAL, "'%s' is not a valid sandbox name", name);
	_cleanup_free_ char *home = NULL;
	int r = store_home(&home, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *dir = store_box_dir(home, name);
	struct stat st;
	if (stat(dir, &st) < 0)
		return pd_error_msg(err, ENOENT, "no sandbox named '%s' (see 'paddock ls')", name);
	if (ret_home)
		*ret_home = TAKE_PTR(home);
	*ret_dir = TAKE_PTR(dir);
	return 0;
}

void cli_print_copyin_notes(const char *box_dir)
{
	_cleanup_free_ char *path = xasprintf("%s/" WSBOX_NOTES, box_dir);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[1024];
	size_t n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = '\0';
		/* written escaped by the supervisor (wsbox.c): printable as it is */
		if (n++ < 8)
			fprintf(stderr, "paddock: not copied in: %s (%s)\n", tab[1] ? tab + 1 : "", line);
	}
	if (n > 8)
		fprintf(stderr, "paddock: … and %zu more not copied in (the list: %s)\n", n - 8, path);
}
