/* base.c — Debian base images from mmdebstrap (base.h). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include "image/base.h"
#include "util/fdio.h"
#include "image/derive.h"

extern char **environ;

static const struct {
	const char *name, *suite, *variant;
} bases[] = {
	{"docker.io/library/debian:bookworm", "bookworm", "apt"},
	{"docker.io/library/debian:bookworm-slim", "bookworm", "minbase"},
};

bool img_base_lookup(const char *name, const char **ret_suite, const char **ret_variant)
{
	_cleanup_free_ char *n = img_name_normalize(name);
	for (size_t i = 0; n && i < ARRAY_SIZE(bases); i++)
		if (streq(n, bases[i].name)) {
			*ret_suite = bases[i].suite;
			*ret_variant = bases[i].variant;
			return true;
		}
	return false;
}

/* Runs mmdebstrap with the tar on a pipe into the store; ret_digest/ret_size: the layer. */
static int debootstrap(struct img_store *s, const char *suite, const char *variant,
		       char ret_digest[OCI_DIGEST_LEN + 1], uint64_t *ret_size, pd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	_cleanup_free_ char *var = xasprintf("--variant=%s", variant);
	char *argv[] = {"mmdebstrap", var, "--format=tar", (char *)suite, "-", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	pid_t pid;
	int r = posix_spawnp(&pid, "mmdebstrap", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r != 0) {
		close(p[0]);
		return pd_error(err, r, "cannot run mmdebstrap (apt-get install mmdebstrap)");
	}
	r = img_blob_put_stream(s, img_read_fd, &p[0], NULL, UINT64_MAX, ret_digest, ret_size, err);
	if (r < 0)
		kill(pid, SIGTERM); /* the blob is discarded: stop the build too */
	close(p[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return pd_error(err, errno, "cannot wait for mmdebstrap");
	if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		r = pd_error_msg(err, EIO, "mmdebstrap %s %s failed (status %d); its messages are above",
				 var, suite, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return r;
}

static char *json_string(cJSON *o)
{
	char *j = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!j)
		abort();
	char *out = xstrdup(j);
	cJSON_free(j);
	return out;
}

static char *base_config(const char *layer)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "architecture", "amd64");
	cJSON_AddStringToObject(o, "os", "linux");
	cJSON *c = cJSON_AddObjectToObject(o, "config");
	cJSON *env = cJSON_AddArrayToObject(c, "Env");
	cJSON_AddItemToArray(env, cJSON_CreateString("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
	cJSON *cmd = cJSON_AddArrayToObject(c, "Cmd");
	cJSON_AddItemToArray(cmd, cJSON_CreateString("bash"));
	cJSON *rootfs = cJSON_AddObjectToObject(o, "rootfs");
	cJSON_AddStringToObject(rootfs, "type", "layers");
	cJSON *ids = cJSON_AddArrayToObject(rootfs, "diff_ids");
	cJSON_AddItemToArray(ids, cJSON_CreateString(layer));
	return json_string(o);
}

int img_base_build(struct img_store *s, const char *name, FILE *progress, struct img_record **ret,
		   pd_err *err)
{
	const char *suite, *variant;
	if (!img_base_lookup(name, &suite, &variant))
		return pd_error_msg(err, ENOENT, "'%s' is not a base image paddock builds (debian:bookworm, debian:bookworm-slim)", name);
	_cleanup_free_ char *canon = img_name_normalize(name);
	char layer[OCI_DIGEST_LEN + 1], config[OCI_DIGEST_LEN + 1], manifest[OCI_DIGEST_LEN + 1];
	uint64_t size;
	if (progress)
		fprintf(progress, "building %s with mmdebstrap --variant=%s %s\n", canon, variant, suite);
	int r = debootstrap(s, suite, variant, layer, &size, err);
	if (r < 0)
		return pd_err_prefix(err, "cannot build %s", canon);
	_cleanup_free_ char *cfg = base_config(layer);
	if ((r = img_blob_put_buf(s, cfg, strlen(cfg), NULL, config, err)) < 0)
		return r;
	_cleanup_free_ char *man = img_manifest_json(NULL, config, strlen(cfg), layer, size);
	if ((r = img_blob_put_buf(s, man, strlen(man), NULL, manifest, err)) < 0)
		return r;
	struct img_fetcher f = {.fetch = img_fetch_stored_only, .progress = progress};
	_cleanup_free_ char *source = xasprintf("mmdebstrap --variant=%s %s", variant, suite);
	return img_ingest(s, &f, manifest, canon, source, ret, err);
}

/* "http://[user@]host[:port]/..." -> host (lower-cased), or NULL. */
static char *url_host(const char *w, size_t n)
{
	size_t skip = n > 7 && strncasecmp(w, "http://", 7) == 0 ? 7 : n > 8 && strncasecmp(w, "https://", 8) == 0 ? 8 : 0;
	if (!skip)
		return NULL;
	const char *h = w + skip, *end = w + n;
	const char *slash = memchr(h, '/', (size_t)(end - h));
	if (slash)
		end = slash;
	const char *at = memchr(h, '@', (size_t)(end - h));
	if (at)
		h = at + 1;
	if (h >= end || *h == '[')
		return NULL; /* an address literal is not a host name a rule can allow */
	const char *colon = memchr(h, ':', (size_t)(end - h));
	if (colon)
		end = colon;
	if (end == h || end - h > 253)
		return NULL;
	/* every byte checked (a NUL inside would otherwise cut the name short) */
	for (const char *c = h; c < end; c++)
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '.')
			return NULL;
	char *out = xstrndup(h, (size_t)(end - h));
	for (char *c = out; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return out;
}

char **img_apt_hosts_parse(const char *text, size_t len, char **hosts)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *hash = memchr(p, '#', (size_t)(le - p));
		const char *stop = hash ? hash : le;
		/* every whitespace-separated word of a line that starts "deb", "deb-src" or "URIs:" */
		const char *w = p;
		bool first = true, source = false;
		while (w < stop) {
			while (w < stop && isspace((unsigned char)*w))
				w++;
			const char *we = w;
			while (we < stop && !isspace((unsigned char)*we))
				we++;
			if (we == w)
				break;
			size_t n = (size_t)(we - w);
			if (first)
				source = (n == 3 && !strncmp(w, "deb", 3)) || (n == 7 && !strncmp(w, "deb-src", 7)) ||
					 (n == 5 && !strncasecmp(w, "URIs:", 5));
			else if (source) {
				char *h = url_host(w, n);
				if (h)
					hosts = strv_append_unique(hosts, h);
				free(h);
			}
			first = false;
			w = we;
		}
		p = nl ? nl + 1 : end;
	}
	return hosts;
}

/* path beneath rootfd, as the tree sees it (an image's: its links stay inside it, no magic
 * link, no other mount); for the host's own "/" a plain open (openat2 missing: only the host's
 * tree is read without it) */
static int open_in_root(int rootfd, bool image, const char *path, uint64_t flags)
{
	/* (openat2 refuses O_NOCTTY beside O_PATH) */
	struct open_how how = {.flags = flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY),
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | (image ? RESOLVE_NO_XDEV : 0)};
	long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS && !image)
		fd = openat(rootfd, path, (int)how.flags);
	return fd < 0 ? -errno : (int)fd;
}

static char **hosts_of_file(int rootfd, bool image, const char *path, char **hosts)
{
	/* looked at before it is opened for reading: opening a device can act (a watchdog
	 * arms, a tape rewinds) and a FIFO would wait for a writer; the file read is the one
	 * looked at (same inode) */
	_cleanup_close_ int pfd = open_in_root(rootfd, image, path, O_PATH);
	struct stat st, st2;
	if (pfd < 0 || fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode))
		return hosts;
	_cleanup_close_ int fd = open_in_root(rootfd, image, path, O_RDONLY | O_NONBLOCK);
	_cleanup_free_ char *buf = NULL;
	size_t len;
	if (fd >= 0 && fstat(fd, &st2) == 0 && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino && S_ISREG(st2.st_mode) &&
	    read_fd_all(fd, 1 << 20, &buf, &len) == 0)
		hosts = img_apt_hosts_parse(buf, len, hosts);
	return hosts;
}

char **img_apt_source_hosts(const char *root)
{
	char **hosts = NULL;
	bool image = !streq(root, "/");
	_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return hosts;
	hosts = hosts_of_file(rootfd, image, "etc/apt/sources.list", hosts);
	int sd = open_in_root(rootfd, image, "etc/apt/sources.list.d", O_RDONLY | O_DIRECTORY);
	DIR *dir = sd >= 0 ? fdopendir(sd) : NULL;
	if (!dir) {
		if (sd >= 0)
			close(sd);
		return hosts;
	}
	_cleanup_strv_ char **names = NULL;
	for (struct dirent *de; (de = readdir(dir));) {
		size_t n = strlen(de->d_name);
		if ((n > 5 && streq(de->d_name + n - 5, ".list")) || (n > 8 && streq(de->d_name + n - 8, ".sources")))
			names = strv_append(names, de->d_name);
	}
	closedir(dir);
	for (char **n = names; n && *n; n++) {
		_cleanup_free_ char *p = xasprintf("etc/apt/sources.list.d/%s", *n);
		hosts = hosts_of_file(rootfd, image, p, hosts);
	}
	return hosts;
}
