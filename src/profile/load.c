/* load.c — finding profiles: the compiled-in built-ins and the user's agents directory, merged
 * (profile.h). The user files are the user's own configuration: they are read (size-capped,
 * regular files only) but never trusted to name paths outside that directory. */
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>

#include "profile/builtins.h"
#include "profile/profile.h"
#include "util/fdio.h"

char *profile_config_dir(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	if (xdg && xdg[0] == '/')
		return xasprintf("%s/paddock", xdg);
	const char *home = getenv("HOME");
	if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home || home[0] != '/')
		return NULL;
	return xasprintf("%s/.config/paddock", home);
}

char *profile_user_dir(void)
{
	_cleanup_free_ char *c = profile_config_dir();
	return c ? xasprintf("%s/agents", c) : NULL;
}

static const struct profile_builtin *builtin_find(const char *name)
{
	for (size_t i = 0; i < profile_builtins_count; i++)
		if (streq(profile_builtins[i].name, name))
			return &profile_builtins[i];
	return NULL;
}

static int load_builtin(const struct profile_builtin *b, struct profile **ret,
			char ***ret_warnings, pd_err *err)
{
	_cleanup_free_ char *file = xasprintf("<built-in>/%s.json", b->name);
	int r = profile_parse(b->json, b->len, file, b->name, ret, ret_warnings, err);
	if (r < 0)
		return r;
	strv_free((*ret)->sources);
	(*ret)->sources = strv_append(NULL, "built-in");
	return 0;
}

/* Reads user_dir/NAME.json; -ENOENT (no message) when there is none. */
static int read_user_file(const char *path, char **ret_text, size_t *ret_len, pd_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return pd_error(err, errno, "cannot read %s", path);
		/* a link whose target is gone is a broken definition, not an unknown name */
		return lstat(path, &st) == 0 ? pd_error_msg(err, EINVAL, "%s: a symbolic link to a missing file", path) : -ENOENT;
	}
	if (!S_ISREG(st.st_mode))
		return pd_error_msg(err, EINVAL, "%s: not a regular file", path);
	int r = read_file_at(AT_FDCWD, path, PROFILE_FILE_MAX, ret_text, ret_len);
	if (r == -EFBIG)
		return pd_error_msg(err, EFBIG, "%s: larger than %d bytes", path, PROFILE_FILE_MAX);
	if (r < 0)
		return pd_error(err, r, "cannot read %s", path);
	return 0;
}

static int load_user(const char *user_dir, const char *name, struct profile **ret,
		     char ***ret_warnings, pd_err *err)
{
	if (!user_dir)
		return -ENOENT;
	_cleanup_free_ char *path = xasprintf("%s/%s.json", user_dir, name);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_user_file(path, &text, &len, err);
	if (r < 0)
		return r;
	return profile_parse(text, len, path, name, ret, ret_warnings, err);
}

static int unknown_profile(const char *user_dir, const char *name, pd_err *err)
{
	_cleanup_strv_ char **names = NULL;
	char known[700] = "";
	if (profile_list_at(user_dir, &names, NULL) == 0)
		for (char **n = names; *n && strlen(known) + strlen(*n) + 3 < sizeof(known); n++)
			snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
				 known[0] ? ", " : "", *n);
	return pd_error_msg(err, ENOENT, "unknown profile '%s' (known: %s)", name, known);
}

/* The built-in (if any) with the user file (if any) merged on top. */
static int load_merged(const char *user_dir, const char *name, struct profile **ret,
		       char ***ret_warnings, pd_err *err)
{
	_cleanup_profile_ struct profile *base = NULL, *user = NULL;
	const struct profile_builtin *b = builtin_find(name);
	int r = b ? load_builtin(b, &base, ret_warnings, err) : 0;
	if (r < 0)
		return r;
	r = load_user(user_dir, name, &user, ret_warnings, err);
	if (r < 0 && r != -ENOENT)
		return r;
	if (!base && !user)
		return unknown_profile(user_dir, name, err);
	if (!base) {
		*ret = TAKE_PTR(user);
		return 0;
	}
	if (user)
		profile_merge(base, user);
	*ret = TAKE_PTR(base);
	return 0;
}

int profile_load_at(const char *user_dir, const char *name, struct profile **ret,
		    char ***ret_warnings, pd_err *err)
{
	if (!profile_name_valid(name))
		return pd_error_msg(err, EINVAL,
				    "invalid profile name '%.80s' (expected [a-z0-9][a-z0-9._-]*)",
				    name);
	if (streq(name, PROFILE_VM_BASE))
		return pd_error_msg(err, EINVAL, "'%s' is paddock's own image for vm boxes, not a profile", name);
	_cleanup_profile_ struct profile *p = NULL;
	int r = load_merged(user_dir, name, &p, ret_warnings, err);
	if (r < 0)
		return r;
	r = profile_check_complete(p, err);
	if (r < 0) {
		if (err)
			pd_err_prefix(err, "%s", p->sources[strv_len(p->sources) - 1]);
		return r;
	}
	*ret = TAKE_PTR(p);
	return 0;
}

int profile_load(const char *name, struct profile **ret, char ***ret_warnings, pd_err *err)
{
	_cleanup_free_ char *dir = profile_user_dir();
	return profile_load_at(dir, name, ret, ret_warnings, err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the names of user_dir/ *.json; a missing directory adds nothing. */
static int list_user(const char *user_dir, char ***names, pd_err *err)
{
	if (!user_dir)
		return 0;
	_cleanup_closedir_ DIR *d = opendir(user_dir);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0
			: pd_error(err, errno, "cannot list %s", user_dir);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n <= 5 || !streq(de->d_name + n - 5, ".json"))
			continue;
		_cleanup_free_ char *name = xstrndup(de->d_name, n - 5);
		if (profile_name_valid(name) && !streq(name, PROFILE_VM_BASE) && strv_len(*names) < 10000)
			*names = strv_append(*names, name);
	}
	return 0;
}

int profile_list_at(const char *user_dir, char ***ret_names, pd_err *err)
{
	_cleanup_strv_ char **names = xcalloc(1, sizeof(char *));
	for (size_t i = 0; i < profile_builtins_count; i++)
		names = strv_append(names, profile_builtins[i].name);
	int r = list_user(user_dir, &names, err);
	if (r < 0)
		return r;
	size_t n = strv_len(names), k = 0;
	qsort(names, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (k > 0 && streq(names[k - 1], names[i]))
			free(names[i]);
		else
			names[k++] = names[i];
	}
	names[k] = NULL;
	*ret_names = TAKE_PTR(names);
	return 0;
}

int profile_list(char ***ret_names, pd_err *err)
{
	_cleanup_free_ char *dir = profile_user_dir();
	return profile_list_at(dir, ret_names, err);
}
