/* derive.c — an image plus one layer (derive.h). */
#include <time.h>

#include "image/derive.h"
#include "image/oci_json.h"

int img_fetch_stored_only(struct img_fetcher *f, struct img_store *s, const struct oci_descriptor *d,
			  bool manifest, pd_err *err)
{
	(void)f, (void)s, (void)manifest;
	return pd_error_msg(err, ENOENT, "blob %s is missing", d->digest);
}

static char *print(cJSON *o)
{
	char *j = cJSON_PrintUnformatted(o);
	if (!j)
		abort();
	char *out = xstrdup(j);
	cJSON_free(j);
	return out;
}

/* A stored JSON blob (checked like any untrusted document: the base may be a pulled image). */
static int read_json(struct img_store *s, const char *digest, size_t max, const char *what, cJSON **ret,
		     pd_err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = img_blob_read(s, digest, max, &buf, &len, err);
	if (r == 0)
		r = oci_json_parse(buf, len, max, what, ret, err);
	if (r == 0 && !cJSON_IsObject(*ret)) {
		cJSON_Delete(*ret);
		r = pd_error_msg(err, EINVAL, "%s %s: not an object", what, digest);
	}
	return r;
}

/* o[key] as an object (array: an array), replacing a member of another type. */
static cJSON *member(cJSON *o, const char *key, bool array)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
	if (array ? cJSON_IsArray(m) : cJSON_IsObject(m))
		return m;
	cJSON_DeleteItemFromObjectCaseSensitive(o, key);
	return array ? cJSON_AddArrayToObject(o, key) : cJSON_AddObjectToObject(o, key);
}

static void iso_time(char buf[32])
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static char *derived_config(cJSON *cfg, const char *layer, const struct img_derive_opts *o)
{
	char now[32];
	iso_time(now);
	cJSON_DeleteItemFromObjectCaseSensitive(cfg, "created");
	cJSON_AddStringToObject(cfg, "created", now);
	cJSON *rootfs = member(cfg, "rootfs", false);
	cJSON_DeleteItemFromObjectCaseSensitive(rootfs, "type");
	cJSON_AddStringToObject(rootfs, "type", "layers");
	cJSON_AddItemToArray(member(rootfs, "diff_ids", true), cJSON_CreateString(layer));
	cJSON *env = member(member(cfg, "config", false), "Env", true);
	for (char **e = o->env; e && *e; e++) {
		size_t k = strcspn(*e, "=") + 1;
		for (int i = cJSON_GetArraySize(env) - 1; i >= 0; i--) {
			const cJSON *v = cJSON_GetArrayItem(env, i);
			if (cJSON_IsString(v) && strncmp(v->valuestring, *e, k) == 0)
				cJSON_DeleteItemFromArray(env, i);
		}
		cJSON_AddItemToArray(env, cJSON_CreateString(*e));
	}
	cJSON *labels = member(member(cfg, "config", false), "Labels", false);
	for (char **l = o->labels; l && *l; l++) {
		const char *eq = strchr(*l, '=');
		if (!eq)
			continue;
		_cleanup_free_ char *k = xstrndup(*l, (size_t)(eq - *l));
		cJSON_DeleteItemFromObjectCaseSensitive(labels, k);
		cJSON_AddStringToObject(labels, k, eq + 1);
	}
	cJSON *h = cJSON_CreateObject();
	cJSON_AddStringToObject(h, "created", now);
	cJSON_AddStringToObject(h, "created_by", o->created_by ? o->created_by : "paddock");
	cJSON_AddItemToArray(member(cfg, "history", true), h);
	return print(cfg);
}

char *img_manifest_json(const cJSON *base, const char *config, size_t config_len, const char *layer,
			uint64_t size)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddNumberToObject(m, "schemaVersion", 2);
	cJSON_AddStringToObject(m, "mediaType", oci_media_type_name(OCI_MT_MANIFEST));
	cJSON *c = cJSON_AddObjectToObject(m, "config");
	cJSON_AddStringToObject(c, "mediaType", oci_media_type_name(OCI_MT_CONFIG));
	cJSON_AddStringToObject(c, "digest", config);
	cJSON_AddNumberToObject(c, "size", (double)config_len);
	cJSON *layers = cJSON_AddArrayToObject(m, "layers");
	/* the base's layer descriptors as they are (their media types say how they are
	 * compressed); the base manifest was parsed and verified when it was stored */
	const cJSON *bl = base ? cJSON_GetObjectItemCaseSensitive(base, "layers") : NULL;
	const cJSON *d;
	cJSON_ArrayForEach(d, bl)
		cJSON_AddItemToArray(layers, cJSON_Duplicate(d, true));
	cJSON *l = cJSON_CreateObject();
	cJSON_AddStringToObject(l, "mediaType", oci_media_type_name(OCI_MT_LAYER_TAR));
	cJSON_AddStringToObject(l, "digest", layer);
	cJSON_AddNumberToObject(l, "size", (double)size);
	cJSON_AddItemToArray(layers, l);
	char *out = print(m);
	cJSON_Delete(m);
	return out;
}

int img_derive(struct img_store *s, const struct img_record *base, const char *layer, uint64_t size,
	       const struct img_derive_opts *o, struct img_record **ret, pd_err *err)
{
	cJSON *man = NULL, *cfg = NULL;
	int r = read_json(s, base->digest, OCI_DOC_MAX, "image manifest", &man, err);
	if (r == 0)
		r = read_json(s, base->config, OCI_CONFIG_MAX, "image config", &cfg, err);
	char config[OCI_DIGEST_LEN + 1], manifest[OCI_DIGEST_LEN + 1];
	_cleanup_free_ char *cj = r == 0 ? derived_config(cfg, layer, o) : NULL;
	if (r == 0)
		r = img_blob_put_buf(s, cj, strlen(cj), NULL, config, err);
	_cleanup_free_ char *mj = r == 0 ? img_manifest_json(man, config, strlen(cj), layer, size) : NULL;
	if (r == 0)
		r = img_blob_put_buf(s, mj, strlen(mj), NULL, manifest, err);
	cJSON_Delete(man);
	cJSON_Delete(cfg);
	if (r < 0)
		return r;
	struct img_fetcher f = {.fetch = img_fetch_stored_only, .progress = o->progress};
	return img_ingest(s, &f, manifest, o->name, o->source, ret, err);
}
