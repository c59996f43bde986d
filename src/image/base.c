/* base.c — Debian base images from mmdebstrap (base.h). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include "image/base.h"

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

static char *base_manifest(const char *config, size_t config_len, const char *layer, uint64_t size)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddNumberToObject(m, "schemaVersion", 2);
	cJSON_AddStringToObject(m, "mediaType", oci_media_type_name(OCI_MT_MANIFEST));
	cJSON *c = cJSON_AddObjectToObject(m, "config");
	cJSON_AddStringToObject(c, "mediaType", oci_media_type_name(OCI_MT_CONFIG));
	cJSON_AddStringToObject(c, "digest", config);
	cJSON_AddNumberToObject(c, "size", (double)config_len);
	cJSON *l = cJSON_CreateObject();
	cJSON_AddStringToObject(l, "mediaType", oci_media_type_name(OCI_MT_LAYER_TAR));
	cJSON_AddStringToObject(l, "digest", layer);
	cJSON_AddNumberToObject(l, "size", (double)size);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "layers"), l);
	return json_string(m);
}

static int no_fetch(struct img_fetcher *f, struct img_store *s, const struct oci_descriptor *d, bool manifest,
		    pd_err *err)
{
	return pd_error_msg(err, ENOENT, "blob %s is missing", d->digest);
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
	_cleanup_free_ char *man = base_manifest(config, strlen(cfg), layer, size);
	if ((r = img_blob_put_buf(s, man, strlen(man), NULL, manifest, err)) < 0)
		return r;
	struct img_fetcher f = {.fetch = no_fetch, .progress = progress};
	_cleanup_free_ char *source = xasprintf("mmdebstrap --variant=%s %s", variant, suite);
	return img_ingest(s, &f, manifest, canon, source, ret, err);
}
