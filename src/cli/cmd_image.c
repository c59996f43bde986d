/* cmd_image.c — `paddock image ls|inspect|rm|gc|import|pull`: the image store
 * ($PADDOCK_HOME/images, src/image/store.h). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <getopt.h>
#include <time.h>

#include "cli/cli.h"
#include "image/base.h"
#include "image/import.h"
#include "image/oci_json.h"
#include "image/registry.h"
#include "image/oci_ref.h"
#include "image/vmdisk.h"
#include "profile/jsonpos.h"
#include "profile/profile.h"
#include "util/fdio.h"
#include "workspace/ws_path.h"
#include "runtime/ns/ns_idmap.h"

static void image_help(FILE *f)
{
	fprintf(f, "Usage: paddock image ls [--json]\n"
		   "       paddock image inspect IMAGE\n"
		   "       paddock image rm IMAGE...\n"
		   "       paddock image gc\n"
		   "       paddock image import [--name NAME] [--tag TAG] FILE\n"
		   "       paddock image pull [--name NAME] [--registry-mirror URL] [--ca-file PEM] REF\n"
		   "       paddock image build debian:bookworm|debian:bookworm-slim\n"
		   "       paddock image update [--resolve NAME=ADDR]... [PROFILE...]\n\n"
		   "The image store: content-addressed (sha256) blobs and unpacked trees under\n"
		   "$PADDOCK_HOME/images. IMAGE is a name (node:22 = docker.io/library/node:22) or a\n"
		   "digest prefix. import reads a `docker save` tarball or an OCI layout (directory or\n"
		   "tar); pull speaks the OCI distribution API (linux/amd64 picked from manifest lists,\n"
		   "anonymous token auth, every digest verified). --registry-mirror (or\n"
		   "$PADDOCK_REGISTRY_MIRROR, or \"registryMirror\" in $XDG_CONFIG_HOME/paddock/images.json)\n"
		   "replaces docker.io. rm forgets images; gc removes blobs and trees that no image and no\n"
		   "existing sandbox uses. build makes a Debian base\n"
		   "image with mmdebstrap through the host's apt sources. update rebuilds the images of\n"
		   "the named profiles (default: every profile that has one) to pick up new agent releases;\n"
		   "existing sandboxes keep the image they were made from.\n");
}

static char *human_size(uint64_t n)
{
	static const char units[] = "BKMGT";
	double v = (double)n;
	size_t u = 0;
	while (v >= 1024 && u < sizeof(units) - 2)
		v /= 1024, u++;
	return u == 0 ? xasprintf("%lluB", (unsigned long long)n) : xasprintf("%.1f%c", v, units[u]);
}

static char *human_age(int64_t created)
{
	int64_t d = (int64_t)time(NULL) - created;
	if (d < 0)
		d = 0;
	if (d < 120)
		return xasprintf("%llds ago", (long long)d);
	if (d < 7200)
		return xasprintf("%lldm ago", (long long)d / 60);
	if (d < 2 * 86400)
		return xasprintf("%lldh ago", (long long)d / 3600);
	return xasprintf("%lldd ago", (long long)d / 86400);
}

/* Where inside id 0 of this caller's boxes lives on the host (0 when not root). */
static uint32_t inside_root(const struct ns_idmap *map)
{
	uint32_t id = 0;
	for (size_t i = 0; i < map->n; i++)
		if (map->e[i].inside == 0)
			id = map->e[i].outside;
	return id;
}

static int owner_shift(struct img_store *s, pd_err *err)
{
	struct ns_idmaps m;
	if (geteuid() != 0)
		return 0; /* an ordinary user unpacks as itself (layer.h: unprivileged) */
	int r = ns_idmaps_for_caller(&m, err);
	if (r < 0)
		return r;
	s->uid_shift = inside_root(&m.uid);
	s->gid_shift = inside_root(&m.gid);
	return 0;
}

/* A killed profile build leaves its overlay's upper and work directories owned by the box's
 * ids — for an ordinary user its subordinate ids (the kernel makes work/work d---------),
 * which the user may not remove. They go from a child in a user namespace with the box's
 * maps: its root has the caps there over files owned by mapped ids, and none over anything
 * else (the host's files are not mapped). dirfd/name is the store's own tmp/ entry: the
 * child removes it through the fd gc opened, so no path is resolved again by name. */
static int remove_foreign(int dirfd, const char *name)
{
	struct ns_idmaps m;
	pd_err err = {0};
	if (getuid() == 0 || ns_idmaps_for_caller(&m, &err) < 0 || !m.root_ok)
		return -EPERM;
	/* the handshake of vmdisk.c's mkfs: the child says when it has its namespace (u), the
	 * parent writes the maps and says go (g) */
	int go[2], done[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(done, O_CLOEXEC) < 0) {
		close(go[0]), close(go[1]);
		return -errno;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		if (unshare(CLONE_NEWUSER) < 0 || write(done[1], "u", 1) != 1 || read(go[0], &c, 1) != 1 || c != 'g' ||
		    setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
			_exit(1);
		_exit(rm_rf_at(dirfd, name) < 0 ? 1 : 0);
	}
	close(go[0]), close(done[1]);
	char c = 0;
	int r = pid < 0 ? -errno : 0;
	if (r == 0 && (read(done[0], &c, 1) != 1 || c != 'u' || ns_idmaps_write(&m, pid, &err) < 0 ||
		       write(go[1], "g", 1) != 1))
		r = -EIO;
	close(go[1]), close(done[0]);
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return r < 0 ? r : WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EPERM;
}

int cli_image_store(enum img_lock lock, struct img_store **ret, pd_err *err)
{
	_cleanup_free_ char *home = NULL;
	struct img_store *s;
	int r = store_home(&home, err);
	if (r < 0 || (r = img_store_open(home, lock, &s, err)) < 0)
		return r;
	if ((r = owner_shift(s, err)) < 0) {
		img_store_close(s);
		return r;
	}
	s->remove_foreign = remove_foreign;
	*ret = s;
	return 0;
}


/* The image config's Env go first, so -e given by the user wins. Entries come from the image:
 * only NAME=VALUE with a valid name is taken (a bare NAME would forward the host's value).
 * WorkingDir when no directory was chosen. ret_cmd (may be NULL): Entrypoint + Cmd, NULL when
 * both are empty. */
static void image_defaults(struct img_store *s, const struct img_record *r, struct box_spec *spec, char ***ret_cmd)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	struct oci_config *c = NULL;
	if (img_blob_read(s, r->config, OCI_CONFIG_MAX, &buf, &len, NULL) < 0 || oci_config_parse(buf, len, &c, NULL) < 0)
		return;
	char **env = NULL;
	for (char **e = c->env; *e; e++)
		if (strchr(*e, '='))
			(void)cli_env_arg(*e, &env); /* an invalid name is skipped */
	for (char **e = spec->env; e && *e; e++)
		env = strv_append(env, *e);
	strv_free(spec->env);
	spec->env = env;
	/* the image's WorkingDir when nothing else chose one (-w, the workspace) and the tree has
	 * that directory: a path inside the box, where paddock-init changes directory. Looked up
	 * with the tree as the root (RESOLVE_IN_ROOT: "..", absolute symlinks stay inside it), as
	 * the box will see it: an image's symlink must not make this a probe of host paths. */
	if (!spec->workdir && c->working_dir && c->working_dir[0] == '/' && strlen(c->working_dir) < 4096) {
		_cleanup_close_ int rootfd = open(spec->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
		long fd = rootfd < 0 ? -1 : syscall(SYS_openat2, rootfd, c->working_dir, &how, sizeof(how));
		if (fd >= 0) {
			close((int)fd);
			spec->workdir = xstrdup(c->working_dir);
		}
	}
	/* Not applied (docs/images.md): said once per box, so a command that needs that user
	 * does not fail without a hint. The name is the image's: shown escaped. */
	if (c->user && *c->user && spec->user && streq(spec->user, "agent")) {
		_cleanup_free_ char *u = ws_escape_name(c->user);
		fprintf(stderr, "paddock: note: the image's User '%s' is not applied; commands run as agent "
				"(uid 1000), or as root with --user root\n", u);
	}
	char **cmd = NULL;
	for (char **a = c->entrypoint; ret_cmd && *a; a++)
		cmd = strv_append(cmd, *a);
	for (char **a = c->cmd; ret_cmd && *a; a++)
		cmd = strv_append(cmd, *a);
	if (ret_cmd)
		*ret_cmd = cmd;
	oci_config_free(c);
}

/* $PADDOCK_CA_FILE: a PEM bundle the user trusts (a TLS-inspecting corporate proxy's CA with
 * the public roots, typically the host's /etc/ssl/certs/ca-certificates.crt). An image's own
 * trust store does not know such a CA, so the bundle goes into image boxes at BOX_CA_PATH —
 * bound read-only on ns, copied in by the supervisor at each boot on vm (no host file reaches
 * a guest) — and the usual variables point the TLS stacks at it. Opt-in: nothing is trusted
 * by default that the image does not trust itself. */
#define BOX_CA_PATH "/run/paddock/ca.pem"
static int ca_bundle(struct box_spec *spec, bool vm, pd_err *err)
{
	static const char *const vars[] = {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
					   "GIT_SSL_CAINFO", "REQUESTS_CA_BUNDLE", "NPM_CONFIG_CAFILE"};
	const char *ca = getenv("PADDOCK_CA_FILE");
	if (!ca || !*ca)
		return 0;
	char real[PATH_MAX];
	struct stat st;
	if (!realpath(ca, real) || stat(real, &st) < 0)
		return pd_error(err, errno, "PADDOCK_CA_FILE=%s", ca);
	if (!S_ISREG(st.st_mode))
		return pd_error_msg(err, EINVAL, "PADDOCK_CA_FILE=%s is not a file", ca);
	if (vm) {
		free(spec->ca_file);
		spec->ca_file = xstrdup(real);
	} else {
		spec->binds = xrealloc(spec->binds, (spec->n_binds + 1) * sizeof(*spec->binds));
		spec->binds[spec->n_binds++] = (struct box_bind){xstrdup(real), xstrdup(BOX_CA_PATH), true};
	}
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		_cleanup_free_ char *kv = xasprintf("%s=%s", vars[i], BOX_CA_PATH);
		spec->env = strv_append(spec->env, kv);
	}
	return 0;
}

int cli_image_for_box(const char *image, struct box_spec *spec, char ***ret_cmd, pd_err *err)
{
	_cleanup_img_store_ struct img_store *s = NULL;
	_cleanup_img_record_ struct img_record *r = NULL;
	_cleanup_free_ char *dir = NULL;
	int q = cli_image_store(IMG_LOCK_SHARED, &s, err);
	if (q < 0 || (q = img_record_find(s, image, &r, err)) < 0)
		return q;
	/* the box name is checked free first: a use recorded under a taken name would replace
	 * that box's own (two creations racing for one name is the remaining window) */
	dir = store_box_dir(s->home, spec->name);
	if (access(dir, F_OK) == 0)
		return pd_error_msg(err, EEXIST, "a sandbox named '%s' exists", spec->name);
	if ((q = img_use(s, spec->name, r, &spec->rootfs, err)) < 0)
		return q;
	spec->image = xstrdup(r->name);
	image_defaults(s, r, spec, ret_cmd);
	if (streq(spec->backend, "vm")) {
		/* the guest boots from a disk made of the tree (once per image): the tree itself
		 * never reaches it, nor any host path */
		if (!s->uid_shift && geteuid() == 0)
			return pd_error_msg(err, EINVAL, "root's trees need the box id range to make a vm disk");
		if (!img_vmdisk_exists(s, r))
			fprintf(stderr, "paddock: making the vm disk of this image (once)\n");
		if ((q = img_vmdisk(s, r, &spec->vm_disk, err)) < 0)
			return q;
		return ca_bundle(spec, true, err);
	}
	return ca_bundle(spec, false, err);
}

static int image_ls(bool json)
{
	pd_err err = {0};
	_cleanup_img_store_ struct img_store *s = NULL;
	struct img_record **v;
	size_t n;
	if (cli_image_store(IMG_LOCK_NONE, &s, &err) < 0 || img_record_list(s, &v, &n, &err) < 0)
		return cli_fail(&err);
	if (json) {
		cJSON *a = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *j = img_record_to_json(v[i]);
			cJSON_AddItemToArray(a, cJSON_Parse(j));
		}
		char *out = cJSON_Print(a);
		printf("%s\n", out);
		cJSON_free(out);
		cJSON_Delete(a);
	} else {
		printf("%-40s %-19s %-8s %-10s %s\n", "NAME", "DIGEST", "SIZE", "CREATED", "CONTENTS");
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *size = human_size(v[i]->unpacked ? v[i]->unpacked : v[i]->size);
			_cleanup_free_ char *age = human_age(v[i]->created);
			printf("%-40s %.19s %-8s %-10s %s\n", v[i]->name, v[i]->digest, size, age, v[i]->contents);
		}
	}
	img_record_list_free(v, n);
	return 0;
}

static int image_inspect(const char *what)
{
	pd_err err = {0};
	_cleanup_img_store_ struct img_store *s = NULL;
	_cleanup_img_record_ struct img_record *r = NULL;
	if (cli_image_store(IMG_LOCK_NONE, &s, &err) < 0 || img_record_find(s, what, &r, &err) < 0)
		return cli_fail(&err);
	_cleanup_free_ char *j = img_record_to_json(r);
	cJSON *o = cJSON_Parse(j);
	_cleanup_free_ char *rootfs = img_rootfs_path(s, r->config);
	cJSON_AddStringToObject(o, "rootfs", img_rootfs_exists(s, r->config) ? rootfs : "");
	_cleanup_free_ char *cfg = NULL;
	size_t len;
	if (img_blob_read(s, r->config, OCI_CONFIG_MAX, &cfg, &len, NULL) == 0)
		cJSON_AddItemToObject(o, "imageConfig", cJSON_Parse(cfg));
	char *out = cJSON_Print(o);
	printf("%s\n", out);
	cJSON_free(out);
	cJSON_Delete(o);
	return 0;
}

static int print_gc(struct img_store *s, pd_err *err)
{
	struct img_gc_stats st;
	int r = img_gc(s, &st, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *bytes = human_size(st.bytes);
	printf("removed %llu blob%s (%s), %llu unpacked tree%s\n", (unsigned long long)st.blobs,
	       st.blobs == 1 ? "" : "s", bytes, (unsigned long long)st.rootfs, st.rootfs == 1 ? "" : "s");
	return 0;
}

static int image_rm(int argc, char **argv)
{
	pd_err err = {0};
	int rc = 0, removed = 0;
	{
		_cleanup_img_store_ struct img_store *s = NULL;
		if (cli_image_store(IMG_LOCK_SHARED, &s, &err) < 0)
			return cli_fail(&err);
		for (int i = 0; i < argc; i++) {
			_cleanup_img_record_ struct img_record *r = NULL;
			if (img_record_find(s, argv[i], &r, &err) < 0) {
				rc = cli_fail(&err);
				continue;
			}
			/* a digest names the image: every name it has goes */
			_cleanup_free_ char *canon = img_name_normalize(argv[i]);
			bool by_digest = !canon || !streq(canon, r->name);
			struct img_record **v = NULL;
			size_t n = 0;
			if (by_digest && img_record_list(s, &v, &n, &err) < 0) {
				rc = cli_fail(&err);
				continue;
			}
			for (size_t k = 0; k < (by_digest ? n : 1); k++) {
				const struct img_record *x = by_digest ? v[k] : r;
				if (by_digest && !streq(x->digest, r->digest))
					continue;
				if (img_record_remove(s, x->name, &err) < 0) {
					rc = cli_fail(&err);
					err = (pd_err){0};
					continue;
				}
				printf("removed %s\n", x->name);
				removed++;
			}
			if (by_digest)
				img_record_list_free(v, n);
		}
	}
	/* what the removed images alone used goes now; boxes still using a tree keep it (nothing
	 * to collect when no name was removed) */
	if (rc != 0 && !removed)
		return rc;
	_cleanup_img_store_ struct img_store *s = NULL;
	if (cli_image_store(IMG_LOCK_EXCLUSIVE, &s, &err) < 0 || print_gc(s, &err) < 0)
		return cli_fail(&err);
	return rc;
}

static int image_gc(void)
{
	pd_err err = {0};
	_cleanup_img_store_ struct img_store *s = NULL;
	if (cli_image_store(IMG_LOCK_EXCLUSIVE, &s, &err) < 0 || print_gc(s, &err) < 0)
		return cli_fail(&err);
	return 0;
}

static void print_added(const struct img_record *r)
{
	_cleanup_free_ char *size = human_size(r->unpacked);
	printf("%s %s (%s, %s)\n", r->name, r->digest, r->contents, size);
}

/* The mirror of a pull that names none: NULL when $PADDOCK_REGISTRY_MIRROR is set (registry.c
 * reads it), else the "registryMirror" key of $XDG_CONFIG_HOME/paddock/images.json (the user's
 * own file: read strictly, size-capped; other keys ignored), NULL when absent. */
static int default_mirror(char **ret, pd_err *err)
{
	*ret = NULL;
	const char *env = getenv("PADDOCK_REGISTRY_MIRROR");
	if (env && *env)
		return 0;
	_cleanup_free_ char *dir = profile_config_dir();
	_cleanup_free_ char *path = dir ? xasprintf("%s/images.json", dir) : NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = path ? read_file_at(AT_FDCWD, path, 64 * 1024, &buf, &len) : -ENOENT;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return pd_error(err, r, "cannot read %s", path);
	/* a config file: its errors say file:line:col (profile/jsonpos.h, as profiles' do) */
	size_t off = 0;
	unsigned line, col;
	const char *what = NULL;
	if (json_check_syntax(buf, len, 16, &off, &what) < 0) {
		json_linecol(buf, len, off, &line, &col);
		return pd_error_msg(err, EINVAL, "%s:%u:%u: invalid JSON: %s", path, line, col, what);
	}
	cJSON *root = cJSON_ParseWithLength(buf, len);
	if (!root)
		return pd_error_msg(err, EINVAL, "%s: invalid JSON", path);
	const cJSON *node = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "registryMirror") : root;
	r = 0;
	if (node && (!cJSON_IsString(node) || strlen(node->valuestring) > 2048)) {
		size_t key = 0, val = 0;
		if (json_locate(buf, len, root, node, &key, &val) < 0)
			val = 0;
		json_linecol(buf, len, val, &line, &col);
		r = node == root ? pd_error_msg(err, EINVAL, "%s:%u:%u: expected an object {\"registryMirror\": URL}", path, line, col)
				 : pd_error_msg(err, EINVAL, "%s:%u:%u: registryMirror: expected a URL string", path, line, col);
	} else if (node) {
		*ret = xstrdup(node->valuestring);
	}
	cJSON_Delete(root);
	return r;
}

int cli_image_pull(struct img_store *s, const char *ref, struct img_record **ret, pd_err *err)
{
	_cleanup_free_ char *mirror = NULL;
	int r = default_mirror(&mirror, err);
	struct img_pull_opts po = {.progress = stderr, .mirror = mirror};
	return r < 0 ? r : img_pull(s, ref, &po, ret, err);
}

static int image_add(const char *verb, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"name", required_argument, NULL, 'n'},
		{"tag", required_argument, NULL, 't'},
		{"registry-mirror", required_argument, NULL, 'm'},
		{"ca-file", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	bool pull = streq(verb, "pull");
	struct img_import_opts io = {.progress = stderr};
	struct img_pull_opts po = {.progress = stderr};
	optind = 1;
	for (int c; (c = getopt_long(argc, argv, "+n:h", longopts, NULL)) != -1;) {
		if (c == 'n') {
			_cleanup_free_ char *canon = img_name_normalize(optarg);
			if (!canon) /* checked before anything is fetched */
				return cli_usage("image", "--name '%s' is not an image name (like repo/name:tag)", optarg);
			io.name = po.name = optarg;
		}
		else if (c == 't' && !pull)
			io.tag = optarg;
		else if (c == 'm' && pull)
			po.mirror = optarg;
		else if (c == 'c' && pull)
			po.ca_file = optarg;
		else if (c == 'h')
			return image_help(stdout), 0;
		else
			return cli_usage("image", "option not understood by image %s", verb);
	}
	if (optind != argc - 1)
		return cli_usage("image", "image %s takes one %s", verb, pull ? "REF" : "FILE");
	pd_err err = {0};
	if (pull) { /* a reference that cannot be one is a usage error, said before any network */
		struct oci_ref *ref = NULL;
		if (oci_ref_parse(argv[optind], &ref, &err) < 0)
			return cli_usage("image", "%s", err.msg);
		oci_ref_free(ref);
	}
	if (po.mirror) { /* and so is a --registry-mirror that is not one */
		_cleanup_free_ char *url = img_registry_base_url("docker.io", po.mirror, &err);
		if (!url)
			return cli_usage("image", "%s", err.msg);
	}
	_cleanup_img_store_ struct img_store *s = NULL;
	_cleanup_img_record_ struct img_record *r = NULL;
	_cleanup_free_ char *mirror = NULL;
	/* --registry-mirror, else $PADDOCK_REGISTRY_MIRROR (registry.c), else the config key */
	if (pull && !po.mirror) {
		if (default_mirror(&mirror, &err) < 0)
			return cli_fail(&err);
		po.mirror = mirror;
	}
	if (cli_image_store(IMG_LOCK_SHARED, &s, &err) < 0)
		return cli_fail(&err);
	int q = pull ? img_pull(s, argv[optind], &po, &r, &err) : img_import(s, argv[optind], &io, &r, &err);
	if (q < 0)
		return cli_fail(&err);
	print_added(r);
	return 0;
}

static int image_build(const char *name)
{
	const char *suite, *variant;
	if (!img_base_lookup(name, &suite, &variant))
		return cli_usage("image", "'%s' is not a base image paddock builds (debian:bookworm, debian:bookworm-slim)",
				 name);
	pd_err err = {0};
	_cleanup_img_store_ struct img_store *s = NULL;
	_cleanup_img_record_ struct img_record *r = NULL;
	if (cli_image_store(IMG_LOCK_SHARED, &s, &err) < 0 || img_base_build(s, name, stderr, &r, &err) < 0)
		return cli_fail(&err);
	print_added(r);
	return 0;
}

/* The profiles that have an image: records named localhost/paddock/NAME:KEY. */
static char **profiles_with_images(struct img_store *s)
{
	struct img_record **v;
	size_t n;
	char **names = NULL;
	if (img_record_list(s, &v, &n, NULL) < 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *name = cli_profile_of_image(v[i]->name);
		if (name)
			names = strv_append_unique(names, name);
	}
	img_record_list_free(v, n);
	return names;
}

char **cli_profile_image_states(char *const *profiles)
{
	_cleanup_img_store_ struct img_store *s = NULL;
	struct img_record **v = NULL;
	size_t n = 0;
	bool known = cli_image_store(IMG_LOCK_NONE, &s, NULL) == 0 && img_record_list(s, &v, &n, NULL) == 0;
	char **states = NULL;
	for (char *const *p = profiles; p && *p; p++) {
		int64_t newest = -1;
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *of = cli_profile_of_image(v[i]->name);
			if (of && streq(of, *p) && v[i]->created > newest)
				newest = v[i]->created;
		}
		_cleanup_free_ char *age = newest < 0 ? NULL : human_age(newest);
		_cleanup_free_ char *st = !known ? xstrdup("?") : age ? xasprintf("built %s", age) : xstrdup("not built");
		states = strv_append(states, st);
	}
	if (known)
		img_record_list_free(v, n);
	return states;
}

static int image_update(int argc, char **argv)
{
	pd_err err = {0};
	_cleanup_strv_ char **names = NULL;
	_cleanup_strv_ char **resolve = NULL;
	/* --resolve NAME=ADDR (as for run): where the build may dial a name; before, between or
	 * after the profile names */
	for (int i = 0; i < argc; i++) {
		const char *v = NULL;
		if (streq(argv[i], "--resolve")) {
			if (++i == argc)
				return cli_usage("image", "--resolve wants NAME=ADDR");
			v = argv[i];
		} else if (startswith(argv[i], "--resolve="))
			v = argv[i] + strlen("--resolve=");
		else if (argv[i][0] == '-')
			return cli_usage("image", "unknown option '%s' for image update", argv[i]);
		else {
			names = strv_append(names, argv[i]);
			continue;
		}
		if (!strchr(v, '=') || v[0] == '=')
			return cli_usage("image", "--resolve wants NAME=ADDR, got '%s'", v);
		resolve = strv_append(resolve, v);
	}
	if (!names) {
		_cleanup_img_store_ struct img_store *s = NULL;
		if (cli_image_store(IMG_LOCK_NONE, &s, &err) < 0)
			return cli_fail(&err);
		names = profiles_with_images(s);
		if (!names) {
			fprintf(stderr, "paddock: no profile images yet (paddock run PROFILE builds one)\n");
			return 0;
		}
	}
	/* every profile loads before anything is built: a typo in the third name must not
	 * surface after two long builds */
	size_t n = strv_len(names);
	_cleanup_free_ struct profile **ps = xcalloc(n + 1, sizeof(*ps));
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_strv_ char **warn = NULL;
		int q = streq(names[i], PROFILE_VM_BASE) ? (ps[i] = cli_vm_base_profile(), 0)
							 : profile_load(names[i], &ps[i], &warn, &err);
		for (char **w = warn; w && *w; w++)
			fprintf(stderr, "paddock: warning: %s\n", *w);
		if (q < 0) {
			pd_err_print(&err);
			err = (pd_err){0};
			rc = q == -EINVAL || q == -ENOENT ? EXIT_USAGE : EXIT_FAILURE_PD;
		}
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		_cleanup_img_record_ struct img_record *r = NULL;
		if (cli_profile_image(ps[i], true, resolve, &r, &err) < 0) {
			rc = cli_fail(&err);
			err = (pd_err){0};
			continue;
		}
		print_added(r);
	}
	for (size_t i = 0; i < n; i++)
		profile_free(ps[i]);
	return rc;
}

int cmd_image(int argc, char **argv)
{
	if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
		image_help(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	const char *sub = argv[1];
	/* `image SUB --help` is help, for every SUB (import and pull print their own) */
	for (int i = 2; i < argc && !streq(sub, "import") && !streq(sub, "pull"); i++)
		if (streq(argv[i], "--help") || streq(argv[i], "-h")) {
			image_help(stdout);
			return 0;
		}
	if (streq(sub, "ls") && (argc == 2 || (argc == 3 && streq(argv[2], "--json"))))
		return image_ls(argc == 3);
	if (streq(sub, "inspect") && argc == 3)
		return image_inspect(argv[2]);
	if (streq(sub, "rm") && argc >= 3)
		return image_rm(argc - 2, argv + 2);
	if (streq(sub, "gc") && argc == 2)
		return image_gc();
	if (streq(sub, "build") && argc == 3)
		return image_build(argv[2]);
	if (streq(sub, "update"))
		return image_update(argc - 2, argv + 2);
	if (streq(sub, "import") || streq(sub, "pull"))
		return image_add(sub, argc - 1, argv + 1);
	return cli_usage("image", "usage: paddock image ls|inspect|rm|gc|import|pull|build (see --help)");
}
