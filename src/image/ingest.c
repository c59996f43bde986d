/* ingest.c — index -> manifest -> config + layers -> rootfs -> record (ingest.h). */
#include <stdarg.h>
#include <time.h>

#include "image/ingest.h"

#define NESTED_INDEX_MAX 4

static int need_blob(struct img_store *s, struct img_fetcher *f, const struct oci_descriptor *d,
		     bool manifest, pd_err *err)
{
	if (img_blob_exists(s, d->digest))
		return 0; /* content-addressed: what is stored was verified when it came in */
	int r = f->fetch(f, s, d, manifest, err);
	if (r < 0)
		return r;
	if (!img_blob_exists(s, d->digest))
		return pd_error_msg(err, EBADMSG, "the source did not deliver %s", d->digest);
	return 0;
}

/* Follows indexes (at most a few levels) to the linux/amd64 image manifest. */
static int resolve_manifest(struct img_store *s, struct img_fetcher *f, const char *top,
			    char ret_digest[OCI_DIGEST_LEN + 1], struct oci_manifest **ret, pd_err *err)
{
	char cur[OCI_DIGEST_LEN + 1];
	snprintf(cur, sizeof(cur), "%s", top);
	for (int depth = 0; depth <= NESTED_INDEX_MAX; depth++) {
		_cleanup_free_ char *buf = NULL;
		size_t len;
		enum oci_media_type t;
		int r = img_blob_read(s, cur, OCI_DOC_MAX, &buf, &len, err);
		if (r < 0 || (r = oci_document_type(buf, len, NULL, &t, err)) < 0)
			return r;
		if (oci_media_type_is_manifest(t)) {
			memcpy(ret_digest, cur, sizeof(cur));
			return oci_manifest_parse(buf, len, ret, err);
		}
		struct oci_index *idx = NULL;
		const struct oci_descriptor *d;
		r = oci_index_parse(buf, len, &idx, err);
		if (r == 0)
			r = oci_index_pick(idx, "linux", "amd64", NULL, &d, err);
		if (r == 0 && (r = need_blob(s, f, d, true, err)) == 0)
			snprintf(cur, sizeof(cur), "%s", d->digest);
		oci_index_free(idx);
		if (r < 0)
			return r;
	}
	return pd_error_msg(err, ELOOP, "image indexes nested more than %d deep", NESTED_INDEX_MAX);
}

static int check_config(struct img_store *s, const struct oci_manifest *m, char **ret_contents, pd_err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	struct oci_config *c = NULL;
	int r = img_blob_read(s, m->config.digest, OCI_CONFIG_MAX, &buf, &len, err);
	if (r == 0)
		r = oci_config_parse(buf, len, &c, err);
	if (r == 0)
		r = oci_config_check_layers(c, m, err);
	if (r == 0 && c->os && c->architecture && (!streq(c->os, "linux") || !streq(c->architecture, "amd64")))
		r = pd_error_msg(err, ENOEXEC, "the image is for %s/%s; this host runs linux/amd64", c->os, c->architecture);
	if (r == 0)
		*ret_contents = xasprintf("%s/%s, %zu layer%s", c->os ? c->os : "linux",
					  c->architecture ? c->architecture : "amd64", m->n_layers,
					  m->n_layers == 1 ? "" : "s");
	oci_config_free(c);
	return r;
}

/* The unpacked size another record of the same tree measured (0 when none says). */
static uint64_t unpacked_of(struct img_store *s, const char *config)
{
	struct img_record **v;
	size_t n;
	uint64_t bytes = 0;
	if (img_record_list(s, &v, &n, NULL) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (streq(v[i]->config, config) && v[i]->unpacked)
			bytes = v[i]->unpacked;
	img_record_list_free(v, n);
	return bytes;
}

static void progress(struct img_fetcher *f, const char *fmt, ...) _printf_(2, 3);
static void progress(struct img_fetcher *f, const char *fmt, ...)
{
	if (!f->progress)
		return;
	va_list va;
	va_start(va, fmt);
	vfprintf(f->progress, fmt, va);
	va_end(va);
	fflush(f->progress);
}

int img_ingest(struct img_store *s, struct img_fetcher *f, const char *top, const char *name,
	       const char *source, struct img_record **ret, pd_err *err)
{
	struct oci_manifest *m = NULL;
	struct img_record *rec = xcalloc(1, sizeof(*rec));
	_cleanup_(img_record_freep) struct img_record *guard = rec;
	int r = resolve_manifest(s, f, top, rec->digest, &m, err);
	if (r == 0)
		r = need_blob(s, f, &m->config, false, err);
	if (r == 0)
		r = check_config(s, m, &rec->contents, err);
	rec->size = m ? m->config.size : 0;
	/* a registry names the sizes up front: an image bigger than any real one is refused
	 * before a byte of it is fetched (the disk under PADDOCK_HOME is the host's) */
	uint64_t declared = 0;
	for (size_t i = 0; r == 0 && i < m->n_layers; i++)
		declared += m->layers[i].size; /* each <= OCI_BLOB_SIZE_MAX, at most OCI_LAYERS_MAX */
	if (r == 0 && declared > OCI_IMAGE_SIZE_MAX)
		r = pd_error_msg(err, EFBIG, "the image's layers add up to %llu bytes (more than %llu)",
				 (unsigned long long)declared, (unsigned long long)OCI_IMAGE_SIZE_MAX);
	for (size_t i = 0; r == 0 && i < m->n_layers; i++) {
		progress(f, "layer %zu/%zu %s (%llu bytes)\n", i + 1, m->n_layers, m->layers[i].digest,
			 (unsigned long long)m->layers[i].size);
		r = need_blob(s, f, &m->layers[i], false, err);
		rec->layers = strv_append(rec->layers, m->layers[i].digest);
		rec->size += m->layers[i].size;
	}
	if (r == 0) {
		memcpy(rec->config, m->config.digest, sizeof(rec->config));
		if (!rec->layers)
			rec->layers = xcalloc(1, sizeof(char *));
		if (img_rootfs_exists(s, rec->config))
			rec->unpacked = unpacked_of(s, rec->config);
		else {
			progress(f, "unpacking %zu layer%s\n", m->n_layers, m->n_layers == 1 ? "" : "s");
			r = img_rootfs_unpack(s, rec->config, rec->layers, &rec->unpacked, err);
		}
	}
	oci_manifest_free(m);
	if (r < 0)
		return r;
	rec->name = xstrdup(name);
	rec->source = xstrdup(source);
	rec->created = (int64_t)time(NULL);
	/* a name is moved to the new image (as `docker load` and `pull` do), said out loud: the
	 * image it named stays in the store until gc, reachable by its digest */
	_cleanup_img_record_ struct img_record *old = NULL;
	if (img_record_find(s, name, &old, NULL) == 0 && !streq(old->digest, rec->digest))
		progress(f, "note: %s named %s; it now names %s\n", name, old->digest, rec->digest);
	if ((r = img_record_save(s, rec, err)) < 0)
		return r;
	if (ret)
		*ret = TAKE_PTR(guard);
	return 0;
}
