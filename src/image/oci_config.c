/* oci_config.c — the image config blob, a `docker save` manifest.json and an OCI layout's
 * oci-layout file (oci_manifest.h). */
#include "image/oci_json.h"
#include "image/oci_manifest.h"

#define CONFIG_STRING_MAX (64 * 1024)

/* ---- image config ---- */

void oci_config_free(struct oci_config *c)
{
	if (!c)
		return;
	free(c->os);
	free(c->architecture);
	strv_free(c->env);
	strv_free(c->entrypoint);
	strv_free(c->cmd);
	free(c->working_dir);
	free(c->user);
	free(c->diff_ids);
	free(c);
}

static int opt_strv(const cJSON *o, const char *key, const char *path, char ***out, pd_err *err)
{
	int r = oci_json_strv(o, key, false, OCI_ARGV_MAX, CONFIG_STRING_MAX, "image config", path,
			      out, err);
	if (r == -ENOENT) {
		*out = xcalloc(1, sizeof(char *));
		return 0;
	}
	return r;
}

static int opt_str(const cJSON *o, const char *key, const char *path, char **out, pd_err *err)
{
	const char *s = NULL;
	int r = oci_json_string(o, key, false, CONFIG_STRING_MAX, "image config", path, &s, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	*out = xstrdup(s);
	return 0;
}

static int check_env(char **env, pd_err *err)
{
	for (size_t i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		if (!eq || eq == env[i])
			return pd_error_msg(err, EINVAL, "image config: config.Env[%zu]: not "
					    "NAME=VALUE (%.64s)", i, env[i]);
	}
	return 0;
}

/* The "config" object (Docker's run defaults); absent or null in some minimal images. */
static int config_runtime(const cJSON *root, struct oci_config *c, pd_err *err)
{
	const cJSON *rc = NULL;
	int r = oci_json_child(root, "config", false, cJSON_Object, "image config", "", &rc, err);
	if (r < 0 && r != -ENOENT)
		return r;
	if ((r = opt_strv(rc, "Env", "config", &c->env, err)) < 0 ||
	    (r = opt_strv(rc, "Entrypoint", "config", &c->entrypoint, err)) < 0 ||
	    (r = opt_strv(rc, "Cmd", "config", &c->cmd, err)) < 0 ||
	    (r = opt_str(rc, "WorkingDir", "config", &c->working_dir, err)) < 0 ||
	    (r = opt_str(rc, "User", "config", &c->user, err)) < 0)
		return r;
	return check_env(c->env, err);
}

static int config_rootfs(const cJSON *root, struct oci_config *c, pd_err *err)
{
	const char *what = "image config";
	const cJSON *fs = NULL;
	int r = oci_json_child(root, "rootfs", true, cJSON_Object, what, "", &fs, err);
	if (r < 0)
		return r;
	const char *type = NULL;
	if ((r = oci_json_string(fs, "type", true, 64, what, "rootfs", &type, err)) < 0)
		return r;
	if (!streq(type, "layers"))
		return pd_error_msg(err, EINVAL, "%s: rootfs.type: expected \"layers\"", what);
	_cleanup_strv_ char **ids = NULL;
	r = oci_json_strv(fs, "diff_ids", true, OCI_LAYERS_MAX, OCI_DIGEST_LEN, what, "rootfs",
			  &ids, err);
	if (r < 0)
		return r;
	c->n_diff_ids = strv_len(ids);
	c->diff_ids = xcalloc(c->n_diff_ids ? c->n_diff_ids : 1, sizeof(*c->diff_ids));
	for (size_t i = 0; i < c->n_diff_ids; i++) {
		if (!oci_digest_valid(ids[i]))
			return pd_error_msg(err, EINVAL, "%s: rootfs.diff_ids[%zu]: not a sha256 "
					    "digest", what, i);
		strcpy(c->diff_ids[i], ids[i]);
	}
	return 0;
}

static int config_from_tree(const cJSON *root, void *out, pd_err *err)
{
	struct oci_config *c = out;
	if (!cJSON_IsObject(root))
		return pd_error_msg(err, EINVAL, "image config: expected an object");
	int r = opt_str(root, "os", "", &c->os, err);
	if (r < 0 || (r = opt_str(root, "architecture", "", &c->architecture, err)) < 0)
		return r;
	if (!c->os || !c->architecture)
		return pd_error_msg(err, EINVAL, "image config: missing os or architecture");
	if ((r = config_runtime(root, c, err)) < 0)
		return r;
	return config_rootfs(root, c, err);
}

int oci_config_parse(const char *buf, size_t len, struct oci_config **ret, pd_err *err)
{
	struct oci_config *c = xcalloc(1, sizeof(*c));
	int r = oci_json_parse_into(buf, len, OCI_CONFIG_MAX, "image config", config_from_tree, c,
				    err);
	if (r < 0) {
		oci_config_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int oci_config_check_layers(const struct oci_config *c, const struct oci_manifest *m, pd_err *err)
{
	if (c->n_diff_ids != m->n_layers)
		return pd_error_msg(err, EINVAL, "image config lists %zu layers, the manifest %zu",
				    c->n_diff_ids, m->n_layers);
	return 0;
}

/* ---- docker save manifest.json ---- */

bool oci_archive_path_valid(const char *path)
{
	size_t n = strlen(path);
	if (n == 0 || n > OCI_PATH_MAX || path[0] == '/')
		return false;
	for (const char *p = path; *p;) {
		size_t l = strcspn(p, "/");
		if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && !strncmp(p, "..", 2)))
			return false;
		p += l;
		if (*p == '/' && *++p == '\0')
			return false;
	}
	return true;
}

void oci_docker_save_free(struct oci_docker_save *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_images; i++) {
		free(s->images[i].config);
		strv_free(s->images[i].repo_tags);
		strv_free(s->images[i].layers);
	}
	free(s->images);
	free(s);
}

static int check_paths(char **paths, const char *path, pd_err *err)
{
	for (size_t i = 0; paths[i]; i++)
		if (!oci_archive_path_valid(paths[i]))
			return pd_error_msg(err, EINVAL, "docker manifest.json: %s.Layers[%zu]: "
					    "unsafe path (%.100s)", path, i, paths[i]);
	return 0;
}

static int save_image(const cJSON *e, const char *path, struct oci_docker_save_image *img,
		      pd_err *err)
{
	const char *what = "docker manifest.json";
	if (!cJSON_IsObject(e))
		return pd_error_msg(err, EINVAL, "%s: %s: expected an object", what, path);
	const char *config = NULL;
	int r = oci_json_string(e, "Config", true, OCI_PATH_MAX, what, path, &config, err);
	if (r < 0)
		return r;
	if (!oci_archive_path_valid(config))
		return pd_error_msg(err, EINVAL, "%s: %s.Config: unsafe path (%.100s)", what, path,
				    config);
	img->config = xstrdup(config);
	r = oci_json_strv(e, "RepoTags", false, 1024, 1024, what, path, &img->repo_tags, err);
	if (r == -ENOENT)
		img->repo_tags = xcalloc(1, sizeof(char *));
	else if (r < 0)
		return r;
	r = oci_json_strv(e, "Layers", true, OCI_LAYERS_MAX, OCI_PATH_MAX, what, path, &img->layers,
			  err);
	if (r < 0)
		return r;
	return check_paths(img->layers, path, err);
}

static int save_from_tree(const cJSON *root, void *out, pd_err *err)
{
	struct oci_docker_save *s = out;
	if (!cJSON_IsArray(root))
		return pd_error_msg(err, EINVAL, "docker manifest.json: expected an array");
	size_t n = (size_t)cJSON_GetArraySize(root), i = 0;
	if (n == 0 || n > OCI_MANIFESTS_MAX)
		return pd_error_msg(err, EINVAL, "docker manifest.json: %zu images (expected 1..%d)",
				    n, OCI_MANIFESTS_MAX);
	s->images = xcalloc(n, sizeof(*s->images));
	for (const cJSON *e = root->child; e; e = e->next, i++) {
		char path[32];
		oci_json_path_index(path, sizeof(path), "", i);
		s->n_images = i + 1;
		int r = save_image(e, path, &s->images[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

int oci_docker_save_parse(const char *buf, size_t len, struct oci_docker_save **ret, pd_err *err)
{
	struct oci_docker_save *s = xcalloc(1, sizeof(*s));
	int r = oci_json_parse_into(buf, len, OCI_DOC_MAX, "docker manifest.json", save_from_tree,
				    s, err);
	if (r < 0) {
		oci_docker_save_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* ---- OCI layout ---- */

int oci_layout_check(const char *buf, size_t len, pd_err *err)
{
	cJSON *root = NULL;
	int r = oci_json_parse(buf, len, 64 * 1024, "oci-layout", &root, err);
	if (r < 0)
		return r;
	const char *v = NULL;
	r = oci_json_string(root, "imageLayoutVersion", true, 64, "oci-layout", "", &v, err);
	if (r == 0 && !startswith(v, "1."))
		r = pd_error_msg(err, EINVAL, "oci-layout: unsupported imageLayoutVersion %s", v);
	cJSON_Delete(root);
	return r;
}
