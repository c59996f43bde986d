/* profile_build.c — a profile's image: its base plus one layer made by running its
 * installCommands in a build box (docs/profiles.md, "Profile images").
 *
 * The build box is an ordinary ns box made from the base image (same isolation, same
 * fail-closed network) with three differences: commands run as the box's root, the network
 * allows the profile's allowedHosts plus the package registries the install needs (the host's
 * apt sources and the npm registry, printed before the build), and the overlay's upper layer is
 * a directory under the store's tmp/ instead of the box's tmpfs. After the last command the box
 * is killed; the upper directory is then quiescent and becomes the layer: a helper process
 * (this program, exec'd fresh, so single-threaded) joins the dead box's user namespace so that
 * every file reads with the box's owners and no file is out of reach (an ordinary user's box
 * root is a subordinate uid), writes the tar to a pipe into the blob store, and finally removes
 * the directory. The image is stored as localhost/paddock/NAME:KEY, KEY a hash of the base's
 * digest, the commands and the build's network and environment: the same profile on the same
 * base reuses it; `paddock image update NAME` builds it again (new agent releases). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <locale.h>
#include <sched.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "image/base.h"
#include "image/capture.h"
#include "image/derive.h"
#include "profile/profile.h"
#include "supervisor/net.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"
#include "util/log.h"

extern char **environ;

#define BUILD_KEY_VERSION "paddock-profile-build-1"
#define VERSIONS_MAX (1 << 20)
#define PROFILE_COMPILE_CACHE "/var/cache/paddock/node-compile-cache"

/* What the runtime generates at every start, never part of a layer (ns_etc.c, ns_rootfs.c),
 * and npm's download cache of the build's root (hundreds of MB no run reads). */
static char *const capture_skip[] = {
	"etc/passwd", "etc/group", "etc/hosts", "etc/hostname", "etc/resolv.conf", "etc/nsswitch.conf",
	"etc/mtab", "tmp", "var/tmp", "run", "proc", "sys", "dev", "workspace", "root/.npm", NULL,
};

/* The environment every install command gets (part of the cache key). */
static const char *const build_env[] = {"DEBIAN_FRONTEND=noninteractive", "HOME=/root", "LC_ALL=C.UTF-8"};

/* Hosts of the host's apt sources (the mirror the Debian base came from) and the npm registry:
 * what the built-in profiles' installs reach besides their own allowedHosts. */
static char **build_hosts(struct img_store *s, const struct img_record *base)
{
	char **hosts = img_apt_source_hosts("/");
	/* the base's own apt sources (a Debian base lists security.debian.org): they only widen
	 * the network of this build, which holds nothing of the user's (no workspace, no
	 * forwarded environment). Read inside the tree: the image's links cannot name host files */
	_cleanup_free_ char *tree = img_rootfs_path(s, base->config);
	_cleanup_strv_ char **own = img_apt_source_hosts(tree);
	for (char **h = own; h && *h; h++)
		hosts = strv_append_unique(hosts, *h);
	return strv_append_unique(hosts, "registry.npmjs.org");
}

static char **build_rules(const struct profile *p, struct img_store *s, const struct img_record *base)
{
	char **rules = profile_egress_rules(p);
	_cleanup_strv_ char **extra = build_hosts(s, base);
	for (char **h = extra; h && *h; h++)
		rules = strv_append_unique(rules, *h);
	return rules;
}

/* sha256 over everything that decides what the build produces. */
static void build_key(const struct profile *p, const struct img_record *base, char *const *rules, char out[17])
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fprintf(f, "%s\nbase %s\n", BUILD_KEY_VERSION, base->digest);
	for (char **c = p->install_commands; c && *c; c++)
		fprintf(f, "cmd %zu:%s\n", strlen(*c), *c);
	for (size_t i = 0; i < ARRAY_SIZE(build_env); i++)
		fprintf(f, "env %s\n", build_env[i]);
	for (char *const *r = rules; r && *r; r++)
		fprintf(f, "allow %s\n", *r);
	if (fclose(f) != 0)
		abort();
	char d[OCI_DIGEST_LEN + 1];
	img_sha256_digest(text, len, d);
	memcpy(out, d + strlen("sha256:"), 16);
	out[16] = '\0';
}

char *cli_profile_of_image(const char *image)
{
	const char *rest = startswith(image, PROFILE_IMAGE_PREFIX) ? image + strlen(PROFILE_IMAGE_PREFIX) : NULL;
	const char *colon = rest ? strchr(rest, ':') : NULL;
	return colon ? xstrndup(rest, (size_t)(colon - rest)) : NULL;
}

/* ---- the helper: `paddock __build-layer capture|remove NSFD DIR` ---- */

int cli_build_layer_helper(int argc, char **argv)
{
	if (argc != 4 || (!streq(argv[1], "capture") && !streq(argv[1], "remove")))
		return EXIT_USAGE;
	pd_err err = {0};
	int nsfd = atoi(argv[2]);
	/* the directory is opened before joining: it is the caller's (store tmp/, 0700) */
	_cleanup_close_ int dirfd = open(argv[3], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		pd_error(&err, errno, "cannot open the build layer %s", argv[3]);
		return cli_fail(&err);
	}
	/* Joining the build box's user namespace (its processes are all dead; the namespace
	 * lives on through nsfd) gives this process the box root's capabilities over files owned
	 * by the box's ids and nothing else: every file of the build layer becomes readable and
	 * removable, and stat shows the box's owners, which is what the layer must record. It
	 * gains nothing over host files (their owners are not mapped there). */
	if (setns(nsfd, CLONE_NEWUSER) < 0) {
		pd_error(&err, errno, "cannot join the build box's user namespace");
		return cli_fail(&err);
	}
	close(nsfd);
	if (streq(argv[1], "remove"))
		return rm_rf(argv[3]) < 0 ? EXIT_FAILURE_PD : 0;
	struct capture_stats st;
	/* names reach the pax headers unconverted (capture.h) */
	if (!setlocale(LC_CTYPE, "C.UTF-8")) {
		pd_error_msg(&err, ENOENT, "the C.UTF-8 locale is missing");
		return cli_fail(&err);
	}
	if (img_capture_upper(dirfd, STDOUT_FILENO, capture_skip, &st, &err) < 0)
		return cli_fail(&err);
	fprintf(stderr, "paddock: layer: %llu entries, %llu files, %llu bytes, %llu deletions\n",
		(unsigned long long)st.entries, (unsigned long long)st.files, (unsigned long long)st.bytes,
		(unsigned long long)st.whiteouts);
	return 0;
}

/* Runs the helper with nsfd as fd 3 and out_fd (or /dev/null) as its stdout. */
static int run_helper(const char *mode, int nsfd, const char *dir, int out_fd, pid_t *ret_pid, pd_err *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, nsfd, 3);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	else
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	char *argv[] = {"paddock", "__build-layer", (char *)mode, "3", (char *)dir, NULL};
	int r = posix_spawn(ret_pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return r ? pd_error(err, r, "cannot start the layer helper") : 0;
}

static int wait_helper(pid_t pid, const char *what, pd_err *err)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return pd_error(err, errno, "cannot wait for the layer helper");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return pd_error_msg(err, EIO, "%s failed (its message is above)", what);
}

static void remove_build_dir(int nsfd, const char *dir)
{
	pid_t pid;
	pd_err err = {0};
	if (nsfd < 0 || run_helper("remove", nsfd, dir, -1, &pid, &err) < 0 || wait_helper(pid, "removing the build layer", &err) < 0)
		rm_rf(dir); /* what the caller can remove itself (nothing was built, or as root) */
}

/* ---- the build box ---- */

struct build {
	const struct profile *p;
	struct img_store *s;
	const struct img_record *base;
	char **rules;
	char *const *resolve;
	char *dir;          /* store tmp/build-XXXXXX: upper/ and work/ */
	int nsfd;           /* the build box's user namespace, once it ran */
	char *versions;     /* "pkg@1.2.3, ..." or NULL */
};

/* "name@version, ..." from `npm ls -g --depth=0 --json` (npm and corepack left out). */
static char *parse_versions(const char *json, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	cJSON *deps = cJSON_GetObjectItemCaseSensitive(root, "dependencies");
	char *out = NULL;
	const cJSON *d;
	cJSON_ArrayForEach(d, deps)
	{
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "version");
		if (!d->string || streq(d->string, "npm") || streq(d->string, "corepack") || !cJSON_IsString(v) ||
		    strlen(d->string) > 214 || strlen(v->valuestring) > 64)
			continue;
		char *t = xasprintf("%s%s%s@%s", out ? out : "", out ? ", " : "", d->string, v->valuestring);
		free(out);
		out = t;
	}
	cJSON_Delete(root);
	return out;
}

static int run_as(int ctl, char *const *env, const char *user, const char *cmd, int out_fd, int *ret_status,
		  pd_err *err)
{
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	/* no stdin (the user's terminal is not the install's), output to our stderr: stdout
	 * stays the agent's */
	struct session_req req = {.argv = argv, .env = (char **)env, .cwd = "/", .user = user, .tty = 0,
				  .redirect = true, .in_fd = -1, .out_fd = out_fd, .err_fd = STDERR_FILENO};
	return session_run(ctl, 1, &req, ret_status, err);
}

static int run_command(int ctl, char *const *env, const char *cmd, int out_fd, int *ret_status, pd_err *err)
{
	return run_as(ctl, env, "root", cmd, out_fd, ret_status, err);
}

/* 'arg' for sh: single quotes, each ' as '\'' */
static char *sh_quote(const char *s)
{
	size_t n = 3;
	for (const char *c = s; *c; c++)
		n += *c == '\'' ? 4 : 1;
	char *out = xmalloc(n), *o = out;
	*o++ = '\'';
	for (const char *c = s; *c; c++) {
		if (*c == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else
			*o++ = *c;
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

/* Node agents compile their JavaScript at every start unless a compile cache has it (pi uses
 * node's, in $TMPDIR by default: on a host it stays warm between runs, in a fresh box it never
 * is). The image gets one: NODE_COMPILE_CACHE points into it (config Env), and the build runs
 * the launch command once with --version to fill it. Best effort, bounded (timeout), output
 * discarded; a box's own additions go to its own layer (the directory is 1777). */
static void warm_compile_cache(struct build *b, struct box *box, char *const *env)
{
	if (!b->p->launch_command || !b->p->launch_command[0])
		return;
	int status;
	if (run_command(box->h.ctl_fd, env, "mkdir -p " PROFILE_COMPILE_CACHE " && chmod 1777 " PROFILE_COMPILE_CACHE,
			STDERR_FILENO, &status, NULL) < 0 || status != 0)
		return;
	_cleanup_free_ char *cmd = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&cmd, &len);
	if (!f)
		abort();
	fputs("command -v timeout >/dev/null && NODE_COMPILE_CACHE=" PROFILE_COMPILE_CACHE " timeout 60", f);
	for (char **a = b->p->launch_command; *a; a++) {
		_cleanup_free_ char *q = sh_quote(*a);
		fprintf(f, " %s", q);
	}
	fputs(" --version </dev/null >/dev/null 2>&1; true", f);
	if (fclose(f) != 0)
		abort();
	/* node keys its cache directory by uid: filled for the agent and for root sessions */
	(void)run_as(box->h.ctl_fd, env, "agent", cmd, STDERR_FILENO, &status, NULL);
	(void)run_as(box->h.ctl_fd, env, "root", cmd, STDERR_FILENO, &status, NULL);
	(void)run_command(box->h.ctl_fd, env, "chmod -R a+rwX " PROFILE_COMPILE_CACHE " 2>/dev/null; true", STDERR_FILENO,
			  &status, NULL);
}

static int install(struct build *b, struct box *box, char *const *env, pd_err *err)
{
	size_t n = strv_len(b->p->install_commands);
	for (size_t i = 0; i < n; i++) {
		const char *cmd = b->p->install_commands[i];
		fprintf(stderr, "paddock: [%zu/%zu] %.*s%s\n", i + 1, n, 160, cmd, strlen(cmd) > 160 ? " ..." : "");
		int status, r = run_command(box->h.ctl_fd, env, cmd, STDERR_FILENO, &status, err);
		if (r < 0)
			return r;
		if (status != 0)
			return pd_error_msg(err, EIO, "install command %zu of profile %s failed with status %d (its output is above)",
					    i + 1, b->p->name, status);
	}
	/* what the image contains, for `image ls` (best effort: only npm-installed agents) */
	int mfd = memfd_create("versions", MFD_CLOEXEC);
	int status;
	if (mfd >= 0 && run_command(box->h.ctl_fd, env, "command -v npm >/dev/null && npm ls -g --depth=0 --json 2>/dev/null",
				    mfd, &status, NULL) == 0 && status == 0) {
		_cleanup_free_ char *buf = NULL;
		size_t len;
		if (lseek(mfd, 0, SEEK_SET) == 0 && read_fd_all(mfd, VERSIONS_MAX, &buf, &len) == 0)
			b->versions = parse_versions(buf, len);
	}
	if (mfd >= 0)
		close(mfd);
	warm_compile_cache(b, box, env);
	return 0;
}

static int build_box(struct build *b, pd_err *err)
{
	_cleanup_free_ char *home = NULL;
	struct box_spec spec = {
		.name = cli_random_name("build"),
		.backend = xstrdup("ns"),
		.user = xstrdup("root"),
		.workspace = xstrdup("none"),
		.workdir = xstrdup("/"),
		.created = time(NULL),
		.rm = true,
		.rootfs_upper = xstrdup(b->dir),
		.net = {.preset = xstrdup("none"), .allow = strv_copy(b->rules), .resolve = strv_copy(b->resolve)},
	};
	int r = store_home(&home, err);
	if (r == 0)
		r = cli_image_for_box(b->base->name, &spec, NULL, err);
	_cleanup_free_ char *dir = store_box_dir(home ? home : "/nonexistent", spec.name);
	if (r == 0)
		r = store_create(home, &spec, err);
	if (r < 0) {
		box_spec_free(&spec);
		return r;
	}
	int lock = store_lock(dir, "supervisor.lock", false);
	struct box box;
	struct sup_net *net = NULL;
	r = box_boot(&spec, dir, &box, &net, err);
	bool booted = r == 0;
	if (r == 0) {
		/* held from the start: whatever the box wrote must be removable afterwards */
		_cleanup_free_ char *ns = xasprintf("/proc/%d/ns/user", (int)box.h.pid);
		b->nsfd = open(ns, O_RDONLY | O_CLOEXEC);
		if (b->nsfd < 0)
			r = pd_error(err, errno, "cannot open the build box's user namespace");
	}
	if (r == 0) {
		_cleanup_strv_ char **env = sup_net_proxy_env(NULL);
		for (char **e = spec.env; e && *e; e++) /* the image's Env */
			env = strv_append(env, *e);
		for (size_t i = 0; i < ARRAY_SIZE(build_env); i++)
			env = strv_append(env, build_env[i]);
		r = install(b, &box, env, err);
	}
	if (booted) {
		box_kill(&box);
		sup_net_stop(TAKE_PTR(net));
		box_shutdown(&box, false, 0);
	}
	sup_net_stop(net);
	store_remove(dir, NULL);
	if (lock >= 0)
		close(lock);
	box_spec_free(&spec);
	return r;
}

/* The box's root must own the build directory: overlayfs writes upper/ and work/ with the
 * credentials of the box's root. As root, that is the shifted id (a fresh directory under the
 * store's 0700 tmp/, which no one else can reach); an ordinary user's box root is a
 * subordinate id that may write the caller's own files (mapped as the agent), so nothing to
 * do there. */
static int make_build_dir(struct build *b, pd_err *err)
{
	_cleanup_free_ char *tmpl = xasprintf("%s/tmp/build-XXXXXX", b->s->dir);
	if (!mkdtemp(tmpl))
		return pd_error(err, errno, "cannot create a build directory in %s/tmp", b->s->dir);
	b->dir = TAKE_PTR(tmpl);
	const char *const sub[] = {"upper", "work"};
	for (size_t i = 0; i < ARRAY_SIZE(sub); i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", b->dir, sub[i]);
		if (mkdir(p, 0755) < 0 || (geteuid() == 0 && chown(p, b->s->uid_shift, b->s->gid_shift) < 0))
			return pd_error(err, errno, "cannot prepare %s", p);
	}
	if (geteuid() == 0 && chown(b->dir, b->s->uid_shift, b->s->gid_shift) < 0)
		return pd_error(err, errno, "cannot prepare %s", b->dir);
	return 0;
}

static int capture_layer(struct build *b, char digest[OCI_DIGEST_LEN + 1], uint64_t *size, pd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	_cleanup_free_ char *upper = xasprintf("%s/upper", b->dir);
	pid_t pid;
	int r = run_helper("capture", b->nsfd, upper, p[1], &pid, err);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		return r;
	}
	r = img_blob_put_fd(b->s, p[0], NULL, UINT64_MAX, digest, size, err);
	close(p[0]);
	int w = wait_helper(pid, "writing the build layer", r < 0 ? NULL : err);
	return r < 0 ? r : w;
}

/* Images of the profile built for other keys (other commands, another base) are forgotten:
 * boxes made from them keep their trees (uses/), gc takes the rest. */
static void forget_older(struct img_store *s, const char *profile, const char *keep)
{
	struct img_record **v;
	size_t n;
	if (img_record_list(s, &v, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *of = cli_profile_of_image(v[i]->name);
		if (of && streq(of, profile) && !streq(v[i]->name, keep))
			(void)img_record_remove(s, v[i]->name, NULL);
	}
	img_record_list_free(v, n);
}

static int derive(struct build *b, const char *name, const char *key, const char *layer, uint64_t size,
		  struct img_record **ret, pd_err *err)
{
	int r;
	_cleanup_free_ char *l1 = xasprintf("dev.paddock.profile=%s", b->p->name);
	_cleanup_free_ char *l2 = xasprintf("dev.paddock.profile.key=%s", key);
	_cleanup_free_ char *l3 = xasprintf("dev.paddock.agents=%s", b->versions ? b->versions : "");
	char *labels[] = {l1, l2, l3, NULL};
	_cleanup_free_ char *source = xasprintf("profile %s on %s", b->p->name, b->base->name);
	_cleanup_free_ char *by = xasprintf("paddock profile %s: %zu install commands", b->p->name,
					    strv_len(b->p->install_commands));
	char *env[] = {"NODE_COMPILE_CACHE=" PROFILE_COMPILE_CACHE, NULL};
	struct img_derive_opts o = {.name = name, .source = source, .created_by = by, .labels = labels, .env = env};
	struct img_record *rec;
	if ((r = img_derive(b->s, b->base, layer, size, &o, &rec, err)) < 0)
		return r;
	if (b->versions) {
		char *c = xasprintf("%s; %s", rec->contents, b->versions);
		free(rec->contents);
		rec->contents = c;
		(void)img_record_save(b->s, rec, NULL);
	}
	forget_older(b->s, b->p->name, name);
	*ret = rec;
	return 0;
}

static int build(struct build *b, const char *name, const char *key, struct img_record **ret, pd_err *err)
{
	fprintf(stderr, "paddock: building the %s image on %s\n", b->p->name, b->base->name);
	fprintf(stderr, "paddock: the build reaches only:");
	for (char **h = b->rules; h && *h; h++)
		fprintf(stderr, " %s", *h);
	fprintf(stderr, "%s\n", b->rules && *b->rules ? "" : " (nothing)");
	int r = make_build_dir(b, err);
	if (r == 0)
		r = build_box(b, err);
	char layer[OCI_DIGEST_LEN + 1];
	uint64_t size = 0;
	if (r == 0)
		r = capture_layer(b, layer, &size, err);
	if (r < 0) {
		remove_build_dir(b->nsfd, b->dir);
		return pd_err_prefix(err, "cannot build the %s image", b->p->name);
	}
	pd_debug("build: layer captured (%llu bytes)", (unsigned long long)size);
	/* as root the tree takes the upper layer's files by hard link (layer.h, link_from): the
	 * layer's bytes are not written a third time, and removing the build directory below
	 * frees no file inodes. (An ordinary user's upper is owned by subordinate ids.) */
	_cleanup_free_ char *upper = xasprintf("%s/upper", b->dir);
	_cleanup_close_ int upfd = geteuid() == 0 ? open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	img_store_link_layer(b->s, layer, upfd);
	r = derive(b, name, key, layer, size, ret, err);
	img_store_link_layer(b->s, NULL, -1);
	pd_debug("build: image derived and its tree unpacked");
	/* only now: ext4 hands out inodes slowly right after tens of thousands were freed (its
	 * allocator skips recently deleted ones, scanning), and unpacking the image creates as
	 * many as the build directory holds — removed first, that took 25 s instead of 2 */
	remove_build_dir(b->nsfd, b->dir);
	pd_debug("build: build directory removed");
	return r;
}

/* A base image: stored, else built (Debian bases) or pulled. */
static int base_image(struct img_store *s, const char *ref, struct img_record **ret, pd_err *err)
{
	int r = img_record_find(s, ref, ret, err);
	if (r != -ENOENT)
		return r;
	*err = (pd_err){0}; /* not stored: made or fetched now */
	const char *suite, *variant;
	if (img_base_lookup(ref, &suite, &variant))
		return img_base_build(s, ref, stderr, ret, err);
	return cli_image_pull(s, ref, ret, err);
}

int cli_profile_image(const struct profile *p, bool rebuild, char *const *resolve, struct img_record **ret,
		      pd_err *err)
{
	_cleanup_img_store_ struct img_store *s = NULL;
	_cleanup_img_record_ struct img_record *base = NULL;
	int r = cli_image_store(IMG_LOCK_SHARED, &s, err);
	if (r == 0)
		r = base_image(s, p->base_image, &base, err);
	if (r < 0)
		return pd_err_prefix(err, "profile %s: base image %s", p->name, p->base_image);
	if (!p->install_commands || !p->install_commands[0]) {
		*ret = TAKE_PTR(base); /* nothing to install: the base is the profile's image */
		return 0;
	}
	_cleanup_strv_ char **rules = build_rules(p, s, base);
	char key[17];
	build_key(p, base, rules, key);
	_cleanup_free_ char *name = xasprintf(PROFILE_IMAGE_PREFIX "%s:%s", p->name, key);
	if (!rebuild && img_record_find(s, name, ret, NULL) == 0)
		return 0;
	/* one build of a profile at a time; whoever waited reuses the image just built */
	_cleanup_free_ char *lockpath = xasprintf("%s/tmp/build-%s.lock", s->dir, p->name);
	_cleanup_close_ int lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return pd_error(err, errno, "cannot lock %s", lockpath);
	if (!rebuild && img_record_find(s, name, ret, NULL) == 0)
		return 0;
	struct build b = {.p = p, .s = s, .base = base, .rules = rules, .resolve = resolve, .nsfd = -1};
	r = build(&b, name, key, ret, err);
	free(b.dir);
	free(b.versions);
	if (b.nsfd >= 0)
		close(b.nsfd);
	return r;
}
