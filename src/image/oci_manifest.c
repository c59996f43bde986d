/* oci_manifest.c — media types, digests, descriptors, indexes and image manifests
 * (oci_manifest.h). The config, docker-save and layout parsers are in oci_config.c. */
#include "image/oci_json.h"
#include "image/oci_manifest.h"

static const char *const media_types[OCI_MT_MAX] = {
	[OCI_MT_INDEX] = "application/vnd.oci.image.index.v1+json",
	[OCI_MT_DOCKER_LIST] = "application/vnd.docker.distribution.manifest.list.v2+json",
	[OCI_MT_MANIFEST] = "application/vnd.oci.image.manifest.v1+json",
	[OCI_MT_DOCKER_MANIFEST] = "application/vnd.docker.distribution.manifest.v2+json",
	[OCI_MT_CONFIG] = "application/vnd.oci.image.config.v1+json",
	[OCI_MT_DOCKER_CONFIG] = "application/vnd.docker.container.image.v1+json",
	[OCI_MT_LAYER_TAR] = "application/vnd.oci.image.layer.v1.tar",
	[OCI_MT_LAYER_GZIP] = "application/vnd.oci.image.layer.v1.tar+gzip",
	[OCI_MT_LAYER_ZSTD] = "application/vnd.oci.image.layer.v1.tar+zstd",
	[OCI_MT_DOCKER_LAYER_TAR] = "application/vnd.docker.image.rootfs.diff.tar",
	[OCI_MT_DOCKER_LAYER_GZIP] = "application/vnd.docker.image.rootfs.diff.tar.gzip",
};

#define MEDIA_TYPE_MAX 255

const char *oci_media_type_name(enum oci_media_type t)
{
	return t > OCI_MT_INVALID && t < OCI_MT_MAX ? media_types[t] : NULL;
}

enum oci_media_type oci_media_type_from_string(const char *s)
{
	size_t n = strcspn(s, "; \t");
	for (int t = OCI_MT_INVALID + 1; t < OCI_MT_MAX; t++)
		if (strlen(media_types[t]) == n && !strncasecmp(s, media_types[t], n))
			return (enum oci_media_type)t;
	return OCI_MT_INVALID;
}

bool oci_media_type_is_index(enum oci_media_type t)
{
	return t == OCI_MT_INDEX || t == OCI_MT_DOCKER_LIST;
}

bool oci_media_type_is_manifest(enum oci_media_type t)
{
	return t == OCI_MT_MANIFEST || t == OCI_MT_DOCKER_MANIFEST;
}

enum oci_compression oci_layer_compression(enum oci_media_type t)
{
	switch (t) {
	case OCI_MT_LAYER_TAR:
	case OCI_MT_DOCKER_LAYER_TAR:
		return OCI_COMP_NONE;
	case OCI_MT_LAYER_GZIP:
	case OCI_MT_DOCKER_LAYER_GZIP:
		return OCI_COMP_GZIP;
	case OCI_MT_LAYER_ZSTD:
		return OCI_COMP_ZSTD;
	default:
		return OCI_COMP_INVALID;
	}
}

bool oci_digest_valid(const char *s)
{
	if (!startswith(s, "sha256:") || strlen(s) != OCI_DIGEST_LEN)
		return false;
	for (s += 7; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* ---- descriptors ---- */

static void descriptor_clear(struct oci_descriptor *d)
{
	free(d->os);
	free(d->architecture);
	free(d->variant);
	free(d->ref_name);
}

static int desc_fail(pd_err *err, const char *what, const char *path, const char *msg,
		     const char *value)
{
	return pd_error_msg(err, EINVAL, "%s: %s: %s%s%.100s%s", what, path, msg,
			    value ? " (" : "", value ? value : "", value ? ")" : "");
}

/* Why a layer media type is refused, for the message. */
static const char *refusal(const char *mt)
{
	if (strstr(mt, "foreign") || strstr(mt, "nondistributable"))
		return "foreign layer refused: its content lives outside the registry";
	if (startswith(mt, "application/vnd.docker.distribution.manifest.v1"))
		return "Docker schema 1 manifests are not supported";
	return "unsupported media type";
}

static int desc_media_type(const cJSON *o, const char *what, const char *path,
			   struct oci_descriptor *d, pd_err *err)
{
	const char *mt = NULL;
	int r = oci_json_string(o, "mediaType", true, MEDIA_TYPE_MAX, what, path, &mt, err);
	if (r < 0)
		return r;
	d->media_type = oci_media_type_from_string(mt);
	if (d->media_type == OCI_MT_INVALID)
		return desc_fail(err, what, path, refusal(mt), mt);
	return 0;
}

static int desc_digest_size(const cJSON *o, const char *what, const char *path,
			    struct oci_descriptor *d, pd_err *err)
{
	const char *digest = NULL;
	int r = oci_json_string(o, "digest", true, MEDIA_TYPE_MAX, what, path, &digest, err);
	if (r < 0)
		return r;
	if (!oci_digest_valid(digest))
		return desc_fail(err, what, path, startswith(digest, "sha256:")
				 ? "malformed sha256 digest" : "unsupported digest (only sha256)",
				 digest);
	strcpy(d->digest, digest);
	return oci_json_u64(o, "size", true, OCI_BLOB_SIZE_MAX, what, path, &d->size, err);
}

/* Copies an optional string member into *out. */
static int opt_string(const cJSON *o, const char *key, size_t max, const char *what,
		      const char *path, char **out, pd_err *err)
{
	const char *s = NULL;
	int r = oci_json_string(o, key, false, max, what, path, &s, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	*out = xstrdup(s);
	return 0;
}

static int desc_platform(const cJSON *o, const char *what, const char *path,
			 struct oci_descriptor *d, pd_err *err)
{
	const cJSON *p = NULL;
	int r = oci_json_child(o, "platform", false, cJSON_Object, what, path, &p, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	char sub[160];
	oci_json_path_key(sub, sizeof(sub), path, "platform");
	if ((r = opt_string(p, "os", 64, what, sub, &d->os, err)) < 0 ||
	    (r = opt_string(p, "architecture", 64, what, sub, &d->architecture, err)) < 0 ||
	    (r = opt_string(p, "variant", 64, what, sub, &d->variant, err)) < 0)
		return r;
	return 0;
}

static int desc_annotations(const cJSON *o, const char *what, const char *path,
			    struct oci_descriptor *d, pd_err *err)
{
	const cJSON *a = NULL;
	int r = oci_json_child(o, "annotations", false, cJSON_Object, what, path, &a, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	char sub[160];
	oci_json_path_key(sub, sizeof(sub), path, "annotations");
	r = opt_string(a, "org.opencontainers.image.ref.name", 1024, what, sub, &d->ref_name, err);
	if (r < 0)
		return r;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "vnd.docker.reference.type");
	d->attestation = cJSON_IsString(t) && streq(t->valuestring, "attestation-manifest");
	return 0;
}

static int descriptor_parse(const cJSON *o, const char *what, const char *path,
			    struct oci_descriptor *d, pd_err *err)
{
	if (!cJSON_IsObject(o))
		return desc_fail(err, what, path, "expected an object", NULL);
	int r = desc_media_type(o, what, path, d, err);
	if (r < 0)
		return r;
	return desc_digest_size(o, what, path, d, err);
}

/* ---- document type ---- */

static int shape_type(const cJSON *root, enum oci_media_type *ret, pd_err *err)
{
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schemaVersion");
	if (cJSON_IsNumber(sv) && sv->valuedouble == 1)
		return pd_error_msg(err, EINVAL, "Docker schema 1 manifests are not supported");
	if (cJSON_GetObjectItemCaseSensitive(root, "manifests"))
		*ret = OCI_MT_INDEX;
	else if (cJSON_GetObjectItemCaseSensitive(root, "layers") &&
		 cJSON_GetObjectItemCaseSensitive(root, "config"))
		*ret = OCI_MT_MANIFEST;
	else
		return pd_error_msg(err, EINVAL, "neither an image index nor an image manifest");
	return 0;
}

int oci_document_type(const char *buf, size_t len, const char *content_type,
		      enum oci_media_type *ret, pd_err *err)
{
	enum oci_media_type t = content_type ? oci_media_type_from_string(content_type)
					     : OCI_MT_INVALID;
	if (oci_media_type_is_index(t) || oci_media_type_is_manifest(t)) {
		*ret = t;
		return 0;
	}
	cJSON *root = NULL;
	int r = oci_json_parse(buf, len, OCI_DOC_MAX, "manifest", &root, err);
	if (r < 0)
		return r;
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "mediaType");
	if (cJSON_IsString(mt)) {
		t = oci_media_type_from_string(mt->valuestring);
		if (!oci_media_type_is_index(t) && !oci_media_type_is_manifest(t))
			r = pd_error_msg(err, EINVAL, "manifest: %s (%.100s)",
					 refusal(mt->valuestring), mt->valuestring);
	} else {
		r = shape_type(root, &t, err);
	}
	cJSON_Delete(root);
	if (r < 0)
		return r;
	*ret = t;
	return 0;
}

/* A present mediaType must be one of the two wanted; absent is allowed (OCI makes it
 * optional). */
static int check_doc_type(const cJSON *root, enum oci_media_type a, enum oci_media_type b,
			  const char *what, enum oci_media_type *ret, pd_err *err)
{
	const char *mt = NULL;
	int r = oci_json_string(root, "mediaType", false, MEDIA_TYPE_MAX, what, "", &mt, err);
	if (r == -ENOENT) {
		*ret = a;
		return 0;
	}
	if (r < 0)
		return r;
	enum oci_media_type t = oci_media_type_from_string(mt);
	if (t != a && t != b)
		return pd_error_msg(err, EINVAL, "%s: unexpected mediaType %.100s", what, mt);
	*ret = t;
	return 0;
}

static int check_schema_version(const cJSON *root, const char *what, pd_err *err)
{
	uint64_t v = 0;
	int r = oci_json_u64(root, "schemaVersion", true, 100, what, "", &v, err);
	if (r < 0)
		return r;
	if (v != 2)
		return pd_error_msg(err, EINVAL, "%s: schemaVersion %llu is not supported%s", what,
				    (unsigned long long)v,
				    v == 1 ? " (Docker schema 1: pull with a newer tool)" : "");
	return 0;
}

/* ---- index ---- */

void oci_index_free(struct oci_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->n_manifests; i++)
		descriptor_clear(&idx->manifests[i]);
	free(idx->manifests);
	free(idx);
}

/* One entry; *ret_skip when its media type is not an index or manifest (artifacts). */
static int index_entry(const cJSON *e, const char *path, struct oci_descriptor *d,
		       bool *ret_skip, pd_err *err)
{
	const char *what = "image index";
	const cJSON *mt = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "mediaType")
					    : NULL;
	enum oci_media_type t = cJSON_IsString(mt) ? oci_media_type_from_string(mt->valuestring)
						   : OCI_MT_INVALID;
	*ret_skip = cJSON_IsString(mt) && !oci_media_type_is_index(t) &&
		    !oci_media_type_is_manifest(t);
	if (*ret_skip)
		return 0;
	int r = descriptor_parse(e, what, path, d, err);
	if (r < 0)
		return r;
	if ((r = desc_platform(e, what, path, d, err)) < 0)
		return r;
	return desc_annotations(e, what, path, d, err);
}

static int index_entries(const cJSON *list, struct oci_index *idx, pd_err *err)
{
	size_t n = (size_t)cJSON_GetArraySize(list), i = 0;
	if (n > OCI_MANIFESTS_MAX)
		return pd_error_msg(err, EINVAL, "image index: more than %d manifests",
				    OCI_MANIFESTS_MAX);
	idx->manifests = xcalloc(n ? n : 1, sizeof(*idx->manifests));
	for (const cJSON *e = list->child; e; e = e->next, i++) {
		char path[64];
		oci_json_path_index(path, sizeof(path), "manifests", i);
		struct oci_descriptor *d = &idx->manifests[idx->n_manifests];
		bool skip = false;
		int r = index_entry(e, path, d, &skip, err);
		if (r < 0 || skip) {
			descriptor_clear(d);
			memset(d, 0, sizeof(*d));
		}
		if (r < 0)
			return r;
		if (!skip)
			idx->n_manifests++;
	}
	return 0;
}

static int index_from_tree(const cJSON *root, void *out, pd_err *err)
{
	struct oci_index *idx = out;
	const char *what = "image index";
	if (!cJSON_IsObject(root))
		return pd_error_msg(err, EINVAL, "%s: expected an object", what);
	int r = check_schema_version(root, what, err);
	if (r < 0)
		return r;
	r = check_doc_type(root, OCI_MT_INDEX, OCI_MT_DOCKER_LIST, what, &idx->media_type, err);
	if (r < 0)
		return r;
	const cJSON *list = NULL;
	r = oci_json_child(root, "manifests", true, cJSON_Array, what, "", &list, err);
	if (r < 0)
		return r;
	return index_entries(list, idx, err);
}

int oci_index_parse(const char *buf, size_t len, struct oci_index **ret, pd_err *err)
{
	struct oci_index *idx = xcalloc(1, sizeof(*idx));
	int r = oci_json_parse_into(buf, len, OCI_DOC_MAX, "image index", index_from_tree, idx, err);
	if (r < 0) {
		oci_index_free(idx);
		return r;
	}
	*ret = idx;
	return 0;
}

static bool platform_matches(const struct oci_descriptor *d, const char *os, const char *arch,
			     const char *variant)
{
	/* an entry may be a manifest or, nested, another index for that platform (followed by
	 * the caller, a bounded number of levels) */
	return (oci_media_type_is_manifest(d->media_type) || oci_media_type_is_index(d->media_type)) &&
	       !d->attestation && d->os &&
	       d->architecture && streq(d->os, os) && streq(d->architecture, arch) &&
	       (!variant || (d->variant && streq(d->variant, variant)));
}

static void list_platforms(const struct oci_index *idx, char *out, size_t n)
{
	out[0] = '\0';
	for (size_t i = 0; i < idx->n_manifests && strlen(out) + 80 < n; i++) {
		const struct oci_descriptor *d = &idx->manifests[i];
		if (!d->os || !d->architecture || d->attestation)
			continue;
		snprintf(out + strlen(out), n - strlen(out), "%s%s/%s%s%s", out[0] ? ", " : "",
			 d->os, d->architecture, d->variant ? "/" : "", d->variant ? d->variant : "");
	}
}

int oci_index_pick(const struct oci_index *idx, const char *os, const char *arch,
		   const char *variant, const struct oci_descriptor **ret, pd_err *err)
{
	for (size_t i = 0; i < idx->n_manifests; i++)
		if (platform_matches(&idx->manifests[i], os, arch, variant)) {
			*ret = &idx->manifests[i];
			return 0;
		}
	char have[512];
	list_platforms(idx, have, sizeof(have));
	return pd_error_msg(err, ENOENT, "no image for %s/%s%s%s (available: %s)", os, arch,
			    variant ? "/" : "", variant ? variant : "", have[0] ? have : "none");
}

static int find_only(const struct oci_index *idx, const struct oci_descriptor **ret, pd_err *err)
{
	const struct oci_descriptor *found = NULL;
	for (size_t i = 0; i < idx->n_manifests; i++) {
		if (idx->manifests[i].attestation)
			continue;
		if (found)
			return pd_error_msg(err, ENOENT,
					    "the layout holds several images: name one");
		found = &idx->manifests[i];
	}
	if (!found)
		return pd_error_msg(err, ENOENT, "the layout holds no image");
	*ret = found;
	return 0;
}

int oci_index_find_ref(const struct oci_index *idx, const char *ref,
		       const struct oci_descriptor **ret, pd_err *err)
{
	if (!ref)
		return find_only(idx, ret, err);
	char names[512] = "";
	for (size_t i = 0; i < idx->n_manifests; i++) {
		const struct oci_descriptor *d = &idx->manifests[i];
		if (d->ref_name && streq(d->ref_name, ref)) {
			*ret = d;
			return 0;
		}
		if (d->ref_name && strlen(names) + strlen(d->ref_name) + 3 < sizeof(names))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? ", " : "", d->ref_name);
	}
	return pd_error_msg(err, ENOENT, "no image named '%.100s' in the layout (names: %s)", ref,
			    names[0] ? names : "none");
}

/* ---- image manifest ---- */

void oci_manifest_free(struct oci_manifest *m)
{
	if (!m)
		return;
	descriptor_clear(&m->config);
	for (size_t i = 0; i < m->n_layers; i++)
		descriptor_clear(&m->layers[i]);
	free(m->layers);
	free(m);
}

static int manifest_config(const cJSON *root, struct oci_manifest *m, pd_err *err)
{
	const char *what = "image manifest";
	const cJSON *c = NULL;
	int r = oci_json_child(root, "config", true, cJSON_Object, what, "", &c, err);
	if (r < 0)
		return r;
	const char *mt = NULL;
	r = oci_json_string(c, "mediaType", true, MEDIA_TYPE_MAX, what, "config", &mt, err);
	if (r < 0)
		return r;
	enum oci_media_type t = oci_media_type_from_string(mt);
	if (t != OCI_MT_CONFIG && t != OCI_MT_DOCKER_CONFIG)
		return pd_error_msg(err, EINVAL, "%s: config: not a container image (config "
				    "media type %.100s)", what, mt);
	m->config.media_type = t;
	return desc_digest_size(c, what, "config", &m->config, err);
}

static int manifest_layer(const cJSON *e, size_t i, struct oci_descriptor *d, pd_err *err)
{
	char path[64];
	oci_json_path_index(path, sizeof(path), "layers", i);
	int r = descriptor_parse(e, "image manifest", path, d, err);
	if (r < 0)
		return r;
	if (oci_layer_compression(d->media_type) == OCI_COMP_INVALID)
		return desc_fail(err, "image manifest", path, "not a layer media type",
				 oci_media_type_name(d->media_type));
	return 0;
}

static int manifest_layers(const cJSON *root, struct oci_manifest *m, pd_err *err)
{
	const cJSON *list = NULL;
	int r = oci_json_child(root, "layers", true, cJSON_Array, "image manifest", "", &list, err);
	if (r < 0)
		return r;
	size_t n = (size_t)cJSON_GetArraySize(list), i = 0;
	if (n > OCI_LAYERS_MAX)
		return pd_error_msg(err, EINVAL, "image manifest: more than %d layers",
				    OCI_LAYERS_MAX);
	m->layers = xcalloc(n ? n : 1, sizeof(*m->layers));
	for (const cJSON *e = list->child; e; e = e->next, i++) {
		r = manifest_layer(e, i, &m->layers[i], err);
		m->n_layers = i + 1;
		if (r < 0)
			return r;
	}
	return 0;
}

static int manifest_from_tree(const cJSON *root, void *out, pd_err *err)
{
	struct oci_manifest *m = out;
	const char *what = "image manifest";
	if (!cJSON_IsObject(root))
		return pd_error_msg(err, EINVAL, "%s: expected an object", what);
	int r = check_schema_version(root, what, err);
	if (r < 0)
		return r;
	r = check_doc_type(root, OCI_MT_MANIFEST, OCI_MT_DOCKER_MANIFEST, what, &m->media_type,
			   err);
	if (r < 0)
		return r;
	if ((r = manifest_config(root, m, err)) < 0)
		return r;
	return manifest_layers(root, m, err);
}

int oci_manifest_parse(const char *buf, size_t len, struct oci_manifest **ret, pd_err *err)
{
	struct oci_manifest *m = xcalloc(1, sizeof(*m));
	int r = oci_json_parse_into(buf, len, OCI_DOC_MAX, "image manifest", manifest_from_tree, m,
				    err);
	if (r < 0) {
		oci_manifest_free(m);
		return r;
	}
	*ret = m;
	return 0;
}
