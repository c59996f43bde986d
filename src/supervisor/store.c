/* store.c — sandboxes on disk. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "supervisor/net.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"

static const char *const status_names[BOX_STATUS_MAX] = {
	[BOX_STATUS_INVALID] = "invalid", [BOX_STATUS_CREATED] = "created",
	[BOX_STATUS_RUNNING] = "running", [BOX_STATUS_STOPPED] = "stopped",
	[BOX_STATUS_DEAD] = "dead",
};

const char *box_status_name(enum box_status s)
{
	return s < BOX_STATUS_MAX ? status_names[s] : "invalid";
}

void box_spec_free(struct box_spec *s)
{
	free(s->name);
	free(s->backend);
	free(s->user);
	for (size_t i = 0; i < s->n_binds; i++) {
		free(s->binds[i].host);
		free(s->binds[i].box);
	}
	free(s->binds);
	strv_free(s->env);
	free(s->workdir);
	free(s->workspace);
	free(s->project);
	free(s->image);
	free(s->rootfs);
	free(s->rootfs_upper);
	free(s->profile);
	free(s->vm_disk);
	free(s->accel);
	free(s->ca_file);
	free(s->net.preset);
	strv_free(s->net.allow);
	strv_free(s->net.deny);
	strv_free(s->net.resolve);
	strv_free(s->net.publish);
	*s = (struct box_spec){0};
}

bool box_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > BOX_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '-' || c == '_' || c == '.'));
		if (!ok)
			return false;
	}
	return true;
}

int store_home(char **ret, pd_err *err)
{
	const char *e = getenv("PADDOCK_HOME");
	_cleanup_free_ char *home = NULL;
	if (e && *e)
		home = xstrdup(e);
	else if ((e = getenv("XDG_DATA_HOME")) && *e == '/')
		home = xasprintf("%s/paddock", e);
	else {
		const char *h = getenv("HOME");
		struct passwd *pw = (h && *h == '/') ? NULL : getpwuid(getuid());
		if (!h || *h != '/')
			h = pw ? pw->pw_dir : NULL;
		if (!h)
			return pd_error_msg(err, ENOENT, "cannot find a home directory; set PADDOCK_HOME");
		home = xasprintf("%s/.local/share/paddock", h);
	}
	if (home[0] != '/')
		return pd_error_msg(err, EINVAL, "PADDOCK_HOME must be an absolute path: %s", home);
	_cleanup_free_ char *boxes = xasprintf("%s/boxes", home);
	int r = mkdir_p(boxes, 0700);
	if (r < 0)
		return pd_error(err, r, "cannot create %s", boxes);
	*ret = TAKE_PTR(home);
	return 0;
}

char *store_box_dir(const char *home, const char *name)
{
	return xasprintf("%s/boxes/%s", home, name);
}

static void json_add_strv(cJSON *o, const char *key, char **v)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);
	for (size_t i = 0; v && v[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
}

char *box_spec_to_json(const struct box_spec *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddStringToObject(o, "backend", s->backend ? s->backend : "ns");
	cJSON_AddStringToObject(o, "user", s->user ? s->user : "agent");
	cJSON_AddNumberToObject(o, "memory", (double)s->memory);
	cJSON_AddNumberToObject(o, "disk", (double)s->disk);
	cJSON_AddNumberToObject(o, "cpus_milli", s->cpus_milli);
	cJSON_AddNumberToObject(o, "pids", s->pids);
	cJSON *binds = cJSON_AddArrayToObject(o, "binds");
	for (size_t i = 0; i < s->n_binds; i++) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "host", s->binds[i].host);
		cJSON_AddStringToObject(b, "box", s->binds[i].box);
		cJSON_AddBoolToObject(b, "readonly", s->binds[i].readonly);
		cJSON_AddItemToArray(binds, b);
	}
	json_add_strv(o, "env", s->env);
	if (s->workdir)
		cJSON_AddStringToObject(o, "workdir", s->workdir);
	cJSON_AddNumberToObject(o, "created", (double)s->created);
	cJSON_AddBoolToObject(o, "rm", s->rm);
	cJSON_AddStringToObject(o, "workspace", s->workspace ? s->workspace : "none");
	if (s->project)
		cJSON_AddStringToObject(o, "project", s->project);
	if (s->image && s->rootfs) {
		cJSON_AddStringToObject(o, "image", s->image);
		cJSON_AddStringToObject(o, "rootfs", s->rootfs);
	}
	if (s->profile)
		cJSON_AddStringToObject(o, "profile", s->profile);
	if (s->vm_disk)
		cJSON_AddStringToObject(o, "vm_disk", s->vm_disk);
	if (s->accel)
		cJSON_AddStringToObject(o, "accel", s->accel);
	if (s->guest_aslr)
		cJSON_AddBoolToObject(o, "guest_aslr", true);
	if (s->ca_file)
		cJSON_AddStringToObject(o, "ca_file", s->ca_file);
	cJSON *net = cJSON_AddObjectToObject(o, "net");
	cJSON_AddStringToObject(net, "preset", s->net.preset ? s->net.preset : "none");
	json_add_strv(net, "allow", s->net.allow);
	json_add_strv(net, "deny", s->net.deny);
	json_add_strv(net, "resolve", s->net.resolve);
	json_add_strv(net, "publish", s->net.publish);
	char *r = cJSON_Print(o);
	cJSON_Delete(o);
	if (!r)
		abort();
	return r;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 ? v->valuedouble : 0;
}

static int spec_binds_from_json(const cJSON *a, struct box_spec *s)
{
	int n = cJSON_GetArraySize(a);
	if (n < 0 || n > 256)
		return -EINVAL;
	s->binds = xcalloc((size_t)n + 1, sizeof(*s->binds));
	for (int i = 0; i < n; i++) {
		const cJSON *b = cJSON_GetArrayItem(a, i);
		const char *h = jstr(b, "host"), *x = jstr(b, "box");
		if (!h || !x)
			return -EINVAL;
		s->binds[i] = (struct box_bind){xstrdup(h), xstrdup(x),
						cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "readonly"))};
		s->n_binds++;
	}
	return 0;
}

static char **json_strv(const cJSON *a)
{
	char **v = xcalloc(1, sizeof(char *));
	const cJSON *e;
	cJSON_ArrayForEach(e, a) if (cJSON_IsString(e)) v = strv_append(v, e->valuestring);
	return v;
}

static int spec_net_from_json(const cJSON *n, struct box_net *ret)
{
	const char *preset = n ? jstr(n, "preset") : NULL;
	ret->preset = xstrdup(preset ? preset : "none");
	ret->allow = json_strv(cJSON_GetObjectItemCaseSensitive(n, "allow"));
	ret->deny = json_strv(cJSON_GetObjectItemCaseSensitive(n, "deny"));
	ret->resolve = json_strv(cJSON_GetObjectItemCaseSensitive(n, "resolve"));
	ret->publish = json_strv(cJSON_GetObjectItemCaseSensitive(n, "publish"));
	return 0;
}

int box_spec_from_json(const char *json, struct box_spec *ret, pd_err *err)
{
	cJSON *o = cJSON_Parse(json);
	if (!o)
		return pd_error_msg(err, EINVAL, "config.json is not valid JSON");
	struct box_spec s = {0};
	const char *name = jstr(o, "name");
	int r = 0;
	if (!name || !box_name_valid(name))
		r = -EINVAL;
	if (r == 0) {
		s.name = xstrdup(name);
		s.backend = xstrdup(jstr(o, "backend") ? jstr(o, "backend") : "ns");
		s.user = xstrdup(jstr(o, "user") ? jstr(o, "user") : "agent");
		s.memory = (uint64_t)jnum(o, "memory");
		s.disk = (uint64_t)jnum(o, "disk");
		s.cpus_milli = (uint32_t)jnum(o, "cpus_milli");
		s.pids = (uint32_t)jnum(o, "pids");
		s.created = (int64_t)jnum(o, "created");
		s.rm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "rm"));
		if (jstr(o, "workdir"))
			s.workdir = xstrdup(jstr(o, "workdir"));
		s.workspace = xstrdup(jstr(o, "workspace") ? jstr(o, "workspace") : "none");
		if (jstr(o, "project"))
			s.project = xstrdup(jstr(o, "project"));
		if (jstr(o, "image") && jstr(o, "rootfs") && jstr(o, "rootfs")[0] == '/') {
			s.image = xstrdup(jstr(o, "image"));
			s.rootfs = xstrdup(jstr(o, "rootfs"));
		}
		if (jstr(o, "profile"))
			s.profile = xstrdup(jstr(o, "profile"));
		if (jstr(o, "vm_disk") && jstr(o, "vm_disk")[0] == '/')
			s.vm_disk = xstrdup(jstr(o, "vm_disk"));
		if (jstr(o, "accel"))
			s.accel = xstrdup(jstr(o, "accel"));
		s.guest_aslr = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "guest_aslr"));
		if (jstr(o, "ca_file") && jstr(o, "ca_file")[0] == '/')
			s.ca_file = xstrdup(jstr(o, "ca_file"));
		r = spec_net_from_json(cJSON_GetObjectItemCaseSensitive(o, "net"), &s.net);
		const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env"), *e;
		cJSON_ArrayForEach(e, env) if (cJSON_IsString(e)) s.env = strv_append(s.env, e->valuestring);
		const cJSON *binds = cJSON_GetObjectItemCaseSensitive(o, "binds");
		if (binds && r == 0)
			r = spec_binds_from_json(binds, &s);
	}
	cJSON_Delete(o);
	if (r < 0) {
		box_spec_free(&s);
		return pd_error_msg(err, EINVAL, "config.json is malformed");
	}
	*ret = s;
	return 0;
}

/* realpath of p, or p itself where it does not resolve (not made yet) */
static char *real_or_same(const char *p)
{
	char buf[PATH_MAX];
	return xstrdup(realpath(p, buf) ? buf : p);
}

static bool overlaps(const char *a, const char *b)
{
	return path_under(a, b) || path_under(b, a);
}

/* How path stands to dir, which it overlaps: for messages */
static const char *relation(const char *path, const char *dir)
{
	return streq(path, dir) ? "is" : path_under(path, dir) ? "lies in" : "holds";
}

/* What paddock keeps under $PADDOCK_HOME: each box's control socket, state and logs, the
 * image store, the vm kernel and templates, the apply journal. */
static const char *const state_dirs[] = {"boxes", "images", "cache", "journal"};

/* The first of home's state directories that path is at, above or below, or NULL. */
static char *state_overlap(const char *home_real, const char *path)
{
	for (size_t i = 0; i < ARRAY_SIZE(state_dirs); i++) {
		char *d = xasprintf("%s/%s", home_real, state_dirs[i]);
		if (overlaps(path, d))
			return d;
		free(d);
	}
	return NULL;
}

int store_check_mounts(const char *home, const struct box_spec *spec, pd_err *err)
{
	_cleanup_free_ char *state = real_or_same(home), *policy = sup_net_global_policy_path();
	char *slash = strrchr(policy, '/');
	if (slash)
		*slash = '\0'; /* the config directory: profiles, the global policy */
	_cleanup_free_ char *config = real_or_same(policy);
	for (size_t i = 0; i < spec->n_binds; i++) {
		_cleanup_free_ char *src = real_or_same(spec->binds[i].host);
		/* A box that can reach another box's control socket (it connects on a read-only
		 * mount too), its state, the image store or the vm templates could drive, stop or
		 * poison the user's other boxes, as the user. */
		_cleanup_free_ char *hit = state_overlap(state, src);
		if (hit)
			return pd_error_msg(err, EINVAL, "refusing to mount %s into the box: it %s paddock's own state (%s), "
					  "through which a box could reach the others", src,
					  relation(src, hit), hit);
		/* The profiles and the egress policy decide what later boxes may do: a box that
		 * could write them would widen its own next run. */
		if (!spec->binds[i].readonly && overlaps(src, config))
			return pd_error_msg(err, EINVAL, "refusing to mount %s read-write into the box: it %s paddock's "
					  "configuration (%s), with which a box could widen its next run", src,
					  relation(src, config), config);
	}
	_cleanup_free_ char *held = spec->project && spec->workspace && streq(spec->workspace, "copy")
					    ? state_overlap(state, spec->project) : NULL;
	if (held)
		return pd_error_msg(err, EINVAL, "refusing to copy %s into the box: it holds paddock's own state (%s)",
				    spec->project, held);
	return 0;
}

int store_create(const char *home, const struct box_spec *spec, pd_err *err)
{
	int q = store_check_mounts(home, spec, err);
	if (q < 0)
		return q;
	_cleanup_free_ char *dir = store_box_dir(home, spec->name);
	if (access(dir, F_OK) == 0) /* the common refusal, before any work (the rename decides) */
		return pd_error_msg(err, EEXIST, "a sandbox named '%s' already exists", spec->name);
	/* A box appears whole or not at all: its directory is made under a private name, its
	 * configuration written, and then it is renamed into place without replacing anything —
	 * the atomic name reservation (of two concurrent creates one rename wins). A create killed
	 * half-way leaves a .new- directory that store_sweep_gone removes, never a box without its
	 * configuration (which ls could only call broken and whose name would stay taken). */
	_cleanup_free_ char *tmpname = xasprintf(STORE_NEW_PREFIX "%s.%d", spec->name, (int)getpid());
	_cleanup_free_ char *tmp = store_box_dir(home, tmpname);
	rm_rf(tmp); /* a leftover of a killed process whose pid this one has */
	if (mkdir(tmp, 0700) < 0)
		return pd_error(err, errno, "cannot create %s", tmp);
	_cleanup_free_ char *json = box_spec_to_json(spec);
	_cleanup_close_ int dfd = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* a --rm box's directory lives only as long as this process: no fsync on its way */
	int r = dfd < 0 ? -errno : write_file_replace_at(dfd, "config.json", json, strlen(json), 0600, !spec->rm);
	if (r == 0 && !spec->rm) {
		struct box_state st = {.status = BOX_STATUS_CREATED, .last_exit = -1};
		r = store_save_state(tmp, &st, err);
	}
	if (r < 0) {
		rm_rf(tmp);
		return pd_error(err, r, "cannot write the configuration of '%s'", spec->name);
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0) {
		int e = errno;
		rm_rf(tmp);
		if (e == EEXIST)
			return pd_error_msg(err, EEXIST, "a sandbox named '%s' already exists", spec->name);
		return pd_error(err, e, "cannot create %s", dir);
	}
	if (!spec->rm) { /* the rename itself must outlive a crash, as the files it named */
		_cleanup_free_ char *boxes = xasprintf("%s/boxes", home);
		_cleanup_close_ int bfd = open(boxes, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (bfd >= 0)
			(void)fsync(bfd);
	}
	return 0;
}

int store_load_spec(const char *box_dir, struct box_spec *ret, pd_err *err)
{
	_cleanup_free_ char *json = NULL;
	_cleanup_free_ char *path = xasprintf("%s/config.json", box_dir);
	int r = read_file_at(AT_FDCWD, path, 1 << 20, &json, NULL);
	if (r < 0)
		return pd_error(err, r, "cannot read %s", path);
	return box_spec_from_json(json, ret, err);
}

int store_save_state(const char *box_dir, const struct box_state *st, pd_err *err)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "status", box_status_name(st->status));
	cJSON_AddNumberToObject(o, "supervisor_pid", st->supervisor_pid);
	cJSON_AddNumberToObject(o, "started", (double)st->started);
	cJSON_AddNumberToObject(o, "stopped", (double)st->stopped);
	cJSON_AddNumberToObject(o, "last_exit", st->last_exit);
	_cleanup_free_ char *json = cJSON_Print(o);
	cJSON_Delete(o);
	_cleanup_close_ int dfd = open(box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = dfd < 0 ? -errno : write_file_atomic_at(dfd, "state.json", json, strlen(json), 0600);
	return r < 0 ? pd_error(err, r, "cannot write state of %s", box_dir) : 0;
}

int store_load_state(const char *box_dir, struct box_state *ret)
{
	_cleanup_free_ char *json = NULL;
	_cleanup_free_ char *path = xasprintf("%s/state.json", box_dir);
	*ret = (struct box_state){.status = BOX_STATUS_CREATED, .last_exit = -1};
	int r = read_file_at(AT_FDCWD, path, 1 << 16, &json, NULL);
	if (r < 0)
		return r;
	cJSON *o = cJSON_Parse(json);
	if (!o)
		return -EINVAL;
	const char *s = jstr(o, "status");
	for (int i = 1; s && i < BOX_STATUS_MAX; i++)
		if (streq(s, status_names[i]))
			ret->status = (enum box_status)i;
	ret->supervisor_pid = (pid_t)jnum(o, "supervisor_pid");
	ret->started = (int64_t)jnum(o, "started");
	ret->stopped = (int64_t)jnum(o, "stopped");
	const cJSON *le = cJSON_GetObjectItemCaseSensitive(o, "last_exit");
	ret->last_exit = cJSON_IsNumber(le) ? le->valueint : -1;
	cJSON_Delete(o);
	return 0;
}

static int lock_file(const char *box_dir, const char *file, int op)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", box_dir, file);
	_cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, op) < 0)
		if (errno != EINTR)
			return -errno;
	return TAKE_FD(fd);
}

int store_lock(const char *box_dir, const char *file, bool wait)
{
	return lock_file(box_dir, file, LOCK_EX | (wait ? 0 : LOCK_NB));
}

int store_lock_shared(const char *box_dir, const char *file)
{
	return lock_file(box_dir, file, LOCK_SH);
}

enum box_status store_status(const char *box_dir, struct box_state *ret_state)
{
	struct box_state st;
	/* no state file: a `run --rm` box (store_create writes one for every other box) */
	st.in_run = store_load_state(box_dir, &st) == -ENOENT;
	int fd = store_lock(box_dir, "supervisor.lock", false);
	if (fd == -EWOULDBLOCK)
		st.status = BOX_STATUS_RUNNING;
	else {
		if (fd >= 0)
			close(fd);
		if (st.status == BOX_STATUS_RUNNING || st.in_run)
			st.status = BOX_STATUS_DEAD; /* nobody holds the lock: the supervisor (or the run) is gone */
	}
	if (ret_state)
		*ret_state = st;
	return st.status;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void store_sweep_gone(const char *home)
{
	_cleanup_free_ char *boxes = xasprintf("%s/boxes", home);
	_cleanup_closedir_ DIR *d = opendir(boxes);
	struct dirent *de;
	struct stat st;
	while (d && (de = readdir(d))) {
		bool gone = startswith(de->d_name, STORE_GONE_PREFIX);
		bool stale = startswith(de->d_name, STORE_NEW_PREFIX) &&
			     fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			     st.st_mtime + STORE_NEW_STALE_S < time(NULL);
		if (gone || stale) {
			_cleanup_free_ char *p = xasprintf("%s/%s", boxes, de->d_name);
			rm_rf(p);
		}
	}
}

int store_list(const char *home, char ***ret_names, pd_err *err)
{
	_cleanup_free_ char *boxes = xasprintf("%s/boxes", home);
	_cleanup_closedir_ DIR *d = opendir(boxes);
	if (!d)
		return pd_error(err, errno, "cannot list %s", boxes);
	char **names = xcalloc(1, sizeof(char *));
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && box_name_valid(de->d_name))
			names = strv_append(names, de->d_name);
	qsort(names, strv_len(names), sizeof(char *), cmpstr);
	*ret_names = names;
	return 0;
}

void store_drop_image_use(const char *home, const char *name)
{
	if (!box_name_valid(name))
		return;
	/* The layout of image/store.h, which this module does not link. Dropped before the state
	 * directory goes: while that exists no other box of this name can record a use, so this
	 * never removes a newer box's record; gc meanwhile sees a use-less box (it is ending). */
	_cleanup_free_ char *use = xasprintf("%s/images/uses/%s", home, name);
	(void)unlink(use);
}

int store_remove(const char *box_dir, pd_err *err)
{
	_cleanup_free_ char *copy = xstrdup(box_dir);
	char *slash = strrchr(copy, '/');
	if (slash && slash > copy) {
		*slash = '\0';
		char *boxes = strrchr(copy, '/');
		if (boxes && streq(boxes + 1, "boxes")) {
			*boxes = '\0';
			store_drop_image_use(copy, slash + 1);
		}
	}
	int r = rm_rf(box_dir);
	return r < 0 ? pd_error(err, r, "cannot remove %s", box_dir) : 0;
}

void box_config_from_spec(const struct box_spec *s, const char *box_dir, struct box_config *ret)
{
	*ret = (struct box_config){
		.name = s->name,
		.state_dir = (char *)box_dir,
		.memory = s->memory,
		.cpus_milli = s->cpus_milli,
		.pids = s->pids,
		.disk = s->disk,
		.binds = s->binds,
		.n_binds = s->n_binds,
		.rootfs = s->rootfs,
		.rootfs_upper = s->rootfs_upper,
		.disk_image = s->vm_disk,
		.vm_accel = s->accel,
		.vm_guest_aslr = s->guest_aslr,
		/* every box built from a stored spec gets the fail-closed network (preset "none"
		 * by default); only hand-built specs without a preset (unit tests) go without */
		.network = s->net.preset != NULL,
		.ws_alias = s->workspace && streq(s->workspace, "copy") ? s->project : NULL,
	};
	const char *t = getenv("PADDOCK_TESTING");
	if (t && streq(t, "1"))
		ret->test_fail_layer = getenv("PADDOCK_TEST_FAIL_LAYER");
}

void sup_merge_exec(const struct box_spec *spec, const struct proto_exec *req, struct proto_buf *out)
{
	_cleanup_strv_ char **env = NULL;
	/* the explicit proxy for tools that honour it; -e and the request may override */
	if (spec->net.preset)
		env = sup_net_proxy_env(env);
	for (char **e = spec->env; e && *e; e++)
		env = strv_append(env, *e);
	for (size_t i = 0; i < req->envc; i++)
		env = strv_append(env, req->envp[i]);
	const char *user = req->user ? req->user : spec->user;
	const char *cwd = req->cwd ? req->cwd : spec->workdir;
	proto_encode_exec(out, (char *const *)req->argv, env, cwd, user, req->tty, req->rows, req->cols);
}
