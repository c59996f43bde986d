/* import.c — docker-save tarballs and OCI layouts into the store (import.h). */
#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "image/import.h"
#include "image/oci_ref.h"
#include "util/fdio.h"

#define LINK_DEPTH_MAX 8

/* One file of the archive: where its bytes went in the store, or which entry it links to. */
struct entry {
	char *path;
	char *link;                        /* archive-relative target path, or NULL */
	char digest[OCI_DIGEST_LEN + 1];
	uint64_t size;
};

struct archive_src {
	struct img_fetcher f;
	struct entry *v;
	size_t n;
	int layoutfd;                      /* an OCI layout directory, or -1 */
};

static void src_clear(struct archive_src *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].path);
		free(a->v[i].link);
	}
	free(a->v);
	if (a->layoutfd >= 0)
		close(a->layoutfd);
}

/* "./a//b" -> "a/b"; NULL when not a valid archive path */
static char *entry_path(const char *name)
{
	while (startswith(name, "./"))
		name += 2;
	_cleanup_free_ char *p = xstrdup(name);
	size_t n = strlen(p);
	while (n && p[n - 1] == '/')
		p[--n] = '\0';
	return oci_archive_path_valid(p) ? TAKE_PTR(p) : NULL;
}

/* A symlink's target relative to the archive root: "../x/layer.tar" seen from "y/layer.tar".
 * NULL when it leaves the archive or is absolute. */
static char *resolve_link(const char *from, const char *target)
{
	if (target[0] == '/')
		return NULL;
	const char *slash = strrchr(from, '/');
	_cleanup_free_ char *joined = slash ? xasprintf("%.*s/%s", (int)(slash - from), from, target) : xstrdup(target);
	char *out = xcalloc(1, strlen(joined) + 1);
	size_t len = 0;
	for (char *save = NULL, *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (streq(c, "."))
			continue;
		if (streq(c, "..")) {
			if (len == 0)
				return free(out), NULL;
			char *prev = strrchr(out, '/');
			len = prev ? (size_t)(prev - out) : 0;
			out[len] = '\0';
			continue;
		}
		len += (size_t)sprintf(out + len, "%s%s", len ? "/" : "", c);
	}
	if (!oci_archive_path_valid(out))
		return free(out), NULL;
	return out;
}

static const struct entry *find_entry(const struct archive_src *a, const char *path)
{
	for (int depth = 0; depth < LINK_DEPTH_MAX; depth++) {
		const struct entry *e = NULL;
		for (size_t i = 0; i < a->n && !e; i++)
			if (streq(a->v[i].path, path))
				e = &a->v[i];
		if (!e || !e->link)
			return e;
		path = e->link;
	}
	return NULL;
}

static struct entry *add_entry(struct archive_src *a, char *path)
{
	a->v = xrealloc(a->v, (a->n + 1) * sizeof(*a->v));
	struct entry *e = &a->v[a->n++];
	*e = (struct entry){.path = path};
	return e;
}

static ssize_t read_archive_data(void *ctx, void *buf, size_t len, pd_err *err)
{
	la_ssize_t n = archive_read_data(ctx, buf, len);
	return n < 0 ? pd_error_msg(err, EIO, "%s", archive_error_string(ctx)) : (ssize_t)n;
}

/* A regular file of the archive straight into the store. A file at blobs/sha256/HEX must
 * hash to HEX. */
static int store_entry(struct img_store *s, struct archive *ar, struct entry *e, pd_err *err)
{
	_cleanup_free_ char *want = NULL;
	if (startswith(e->path, "blobs/sha256/"))
		want = xasprintf("sha256:%s", e->path + strlen("blobs/sha256/"));
	if (want && !oci_digest_valid(want))
		want = (free(want), NULL);
	int r = img_blob_put_stream(s, read_archive_data, ar, want, UINT64_MAX, e->digest, &e->size, err);
	return r < 0 ? pd_err_prefix(err, "%s", e->path) : 0;
}

static int read_entry(struct img_store *s, struct archive_src *a, struct archive *ar,
		      struct archive_entry *ae, pd_err *err)
{
	const char *name = archive_entry_pathname(ae);
	mode_t type = archive_entry_filetype(ae);
	const char *hard = archive_entry_hardlink(ae);
	if (type == AE_IFDIR)
		return 0;
	char *path = name ? entry_path(name) : NULL;
	if (!path)
		return pd_error_msg(err, EINVAL, "archive entry '%.200s': not a relative path inside the archive", name ? name : "");
	if (a->n >= IMG_IMPORT_ENTRIES_MAX)
		return free(path), pd_error_msg(err, E2BIG, "more than %d files in the archive", IMG_IMPORT_ENTRIES_MAX);
	struct entry *e = add_entry(a, path);
	if (hard) {
		e->link = entry_path(hard);
		return e->link ? 0 : pd_error_msg(err, EINVAL, "archive entry '%.200s': hard link out of the archive", path);
	}
	if (type == AE_IFLNK) {
		const char *t = archive_entry_symlink(ae);
		e->link = t ? resolve_link(path, t) : NULL;
		return e->link ? 0 : pd_error_msg(err, EINVAL, "archive entry '%.200s': symlink out of the archive", path);
	}
	if (type != AE_IFREG)
		return pd_error_msg(err, EINVAL, "archive entry '%.200s': not a file, directory or link", path);
	return store_entry(s, ar, e, err);
}

/* A name from the archive as it may be printed: at most 200 bytes, anything but printable
 * ASCII as '?' (the archive is untrusted; these lines go to the user's terminal). */
static char *shown_name(const char *name)
{
	char *s = xstrndup(name, 200);
	for (char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	return s;
}

static int cmp_entry_path(const void *x, const void *y)
{
	return strcmp((*(const struct entry *const *)x)->path, (*(const struct entry *const *)y)->path);
}

/* One path twice (a second manifest.json, say): tar and docker's loader take the last, a
 * lookup would take the first — what the user inspects must be what is imported, so the
 * archive is refused. */
static int refuse_duplicates(const struct archive_src *a, pd_err *err)
{
	if (a->n < 2)
		return 0;
	_cleanup_free_ const struct entry **v = xmalloc(a->n * sizeof(*v));
	for (size_t i = 0; i < a->n; i++)
		v[i] = &a->v[i];
	qsort(v, a->n, sizeof(*v), cmp_entry_path);
	for (size_t i = 1; i < a->n; i++)
		if (streq(v[i - 1]->path, v[i]->path))
			return pd_error_msg(err, EINVAL, "the archive holds '%.200s' twice", v[i]->path);
	return 0;
}

static int read_archive(struct img_store *s, struct archive_src *a, int fd, FILE *progress, pd_err *err)
{
	struct archive *ar = archive_read_new();
	archive_read_support_filter_gzip(ar);
	archive_read_support_filter_zstd(ar);
	archive_read_support_filter_xz(ar);
	archive_read_support_format_tar(ar);
	int r = 0;
	if (archive_read_open_fd(ar, fd, 1 << 16) != ARCHIVE_OK)
		r = pd_error_msg(err, EINVAL, "not a tar archive: %s", archive_error_string(ar));
	for (struct archive_entry *ae; r == 0;) {
		int q = archive_read_next_header(ar, &ae);
		if (q == ARCHIVE_EOF)
			break;
		if (q != ARCHIVE_OK && q != ARCHIVE_WARN) {
			r = pd_error_msg(err, EINVAL, "bad tar archive: %s", archive_error_string(ar));
			break;
		}
		r = read_entry(s, a, ar, ae, err);
		if (r == 0 && progress && a->n && a->v[a->n - 1].size > (1 << 20)) {
			_cleanup_free_ char *shown = shown_name(a->v[a->n - 1].path);
			fprintf(progress, "read %s (%llu bytes)\n", shown, (unsigned long long)a->v[a->n - 1].size);
		}
	}
	archive_read_free(ar);
	return r == 0 ? refuse_duplicates(a, err) : r;
}

/* ---- fetchers: every blob is already in the store (tar), or in the layout directory ---- */

static int fetch_missing(struct img_fetcher *f, struct img_store *s, const struct oci_descriptor *d,
			 bool manifest, pd_err *err)
{
	return pd_error_msg(err, ENOENT, "the archive has no blob %s", d->digest);
}

static int fetch_layout(struct img_fetcher *f, struct img_store *s, const struct oci_descriptor *d,
			bool manifest, pd_err *err)
{
	struct archive_src *a = (struct archive_src *)f;
	_cleanup_free_ char *p = img_blob_relpath(d->digest), *what = xasprintf("the layout's %s", p);
	_cleanup_close_ int fd = -1;
	/* why safe: img_open_regular neither follows a symlink on the way (blobs/ included) nor
	 * waits on a FIFO with the store lock held */
	int r = img_open_regular(a->layoutfd, p, what, &fd, err);
	if (r == -ENOENT)
		return pd_error(err, r, "the layout has no blob %s", d->digest);
	if (r < 0)
		return r;
	r = img_blob_put_fd(s, fd, d->digest, d->size, NULL, NULL, err);
	return r < 0 ? pd_err_prefix(err, "layout blob %s", p) : 0;
}

/* ---- reading small files of the source ---- */

static int src_read(struct img_store *s, struct archive_src *a, const char *path, size_t max,
		    char **ret, size_t *ret_len, pd_err *err)
{
	if (a->layoutfd >= 0) {
		_cleanup_free_ char *what = xasprintf("the layout's %s", path);
		_cleanup_close_ int fd = -1;
		/* as for blobs (fetch_layout): no symlink, no FIFO */
		int r = img_open_regular(a->layoutfd, path, what, &fd, err);
		if (r < 0)
			return r;
		r = read_fd_all(fd, max, ret, ret_len);
		return r < 0 ? pd_error(err, r, "cannot read %s", what) : 0;
	}
	const struct entry *e = find_entry(a, path);
	if (!e)
		return pd_error_msg(err, ENOENT, "the archive has no %s", path);
	if (e->size > max)
		return pd_error_msg(err, EFBIG, "%s of the archive is larger than %zu bytes", path, max);
	return img_blob_read(s, e->digest, max, ret, ret_len, err);
}

static bool src_has(struct archive_src *a, const char *path)
{
	if (a->layoutfd >= 0)
		return faccessat(a->layoutfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	return find_entry(a, path) != NULL;
}

/* ---- OCI layout ---- */

static int import_layout(struct img_store *s, struct archive_src *a, const struct img_import_opts *o,
			 const char *path, struct img_record **ret, pd_err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	struct oci_index *idx = NULL;
	const struct oci_descriptor *d;
	int r = src_read(s, a, "oci-layout", 4096, &buf, &len, err);
	if (r == 0)
		r = oci_layout_check(buf, len, err);
	free(TAKE_PTR(buf));
	if (r == 0)
		r = src_read(s, a, "index.json", OCI_DOC_MAX, &buf, &len, err);
	if (r == 0)
		r = oci_index_parse(buf, len, &idx, err);
	if (r == 0)
		r = oci_index_find_ref(idx, o->tag, &d, err);
	if (r == 0 && !img_blob_exists(s, d->digest))
		r = a->f.fetch(&a->f, s, d, true, err);
	_cleanup_free_ char *name = r == 0 ? img_import_default_name(o->name, NULL, path, d->ref_name) : NULL;
	if (r == 0 && !name)
		r = pd_error_msg(err, EINVAL, "cannot make an image name from '%s'; give one with --name", path);
	_cleanup_free_ char *source = xasprintf("import %s", path);
	if (r == 0)
		r = img_ingest(s, &a->f, d->digest, name, source, ret, err);
	oci_index_free(idx);
	return r;
}

/* ---- docker save ---- */

static const struct oci_docker_save_image *pick_saved(const struct oci_docker_save *ds, const char *tag,
						       pd_err *err)
{
	if (!tag && ds->n_images == 1)
		return &ds->images[0];
	_cleanup_free_ char *want = tag ? img_name_normalize(tag) : NULL;
	char names[512] = "";
	for (size_t i = 0; i < ds->n_images; i++)
		for (char **t = ds->images[i].repo_tags; *t; t++) {
			_cleanup_free_ char *canon = img_name_normalize(*t);
			if (tag && (streq(*t, tag) || (want && canon && streq(canon, want))))
				return &ds->images[i];
			if (strlen(names) + strlen(*t) + 3 < sizeof(names))
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "", *t);
		}
	if (tag)
		pd_error_msg(err, ENOENT, "no image '%s' in the archive (it holds: %s)", tag,
			     names[0] ? names : "untagged images");
	else
		pd_error_msg(err, ENOENT, "the archive holds %zu images; pick one with --tag (it holds: %s)",
			     ds->n_images, names[0] ? names : "untagged images");
	return NULL;
}

/* An OCI manifest for a docker-save image, each layer bound to the config's diff_id. */
static int synth_manifest(struct img_store *s, struct archive_src *a, const struct oci_docker_save_image *im,
			  char ret_digest[OCI_DIGEST_LEN + 1], pd_err *err)
{
	const struct entry *ce = find_entry(a, im->config);
	if (!ce)
		return pd_error_msg(err, ENOENT, "the archive has no %s (the image config)", im->config);
	_cleanup_free_ char *buf = NULL;
	size_t len;
	struct oci_config *c = NULL;
	int r = img_blob_read(s, ce->digest, OCI_CONFIG_MAX, &buf, &len, err);
	if (r == 0)
		r = oci_config_parse(buf, len, &c, err);
	if (r == 0 && c->n_diff_ids != strv_len(im->layers))
		r = pd_error_msg(err, EINVAL, "the config lists %zu layers, manifest.json %zu", c->n_diff_ids, strv_len(im->layers));
	cJSON *m = cJSON_CreateObject();
	cJSON_AddNumberToObject(m, "schemaVersion", 2);
	cJSON_AddStringToObject(m, "mediaType", oci_media_type_name(OCI_MT_MANIFEST));
	cJSON *cd = cJSON_AddObjectToObject(m, "config");
	cJSON_AddStringToObject(cd, "mediaType", oci_media_type_name(OCI_MT_CONFIG));
	cJSON_AddStringToObject(cd, "digest", ce->digest);
	cJSON_AddNumberToObject(cd, "size", (double)ce->size);
	cJSON *layers = cJSON_AddArrayToObject(m, "layers");
	for (size_t i = 0; r == 0 && im->layers[i]; i++) {
		const struct entry *le = find_entry(a, im->layers[i]);
		if (!le) {
			r = pd_error_msg(err, ENOENT, "the archive has no %s (layer %zu)", im->layers[i], i + 1);
			break;
		}
		/* docker save writes layers uncompressed: the blob is the diff, so its digest
		 * must be the config's diff_id, which ties every layer to the config digest */
		if (!streq(le->digest, c->diff_ids[i])) {
			r = pd_error_msg(err, EBADMSG, "layer %zu (%s) hashes to %s, but the config says %s; refusing the archive",
					 i + 1, im->layers[i], le->digest, c->diff_ids[i]);
			break;
		}
		cJSON *l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "mediaType", oci_media_type_name(OCI_MT_LAYER_TAR));
		cJSON_AddStringToObject(l, "digest", le->digest);
		cJSON_AddNumberToObject(l, "size", (double)le->size);
		cJSON_AddItemToArray(layers, l);
	}
	oci_config_free(c);
	char *json = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	if (!json)
		abort();
	if (r == 0)
		r = img_blob_put_buf(s, json, strlen(json), NULL, ret_digest, err);
	cJSON_free(json);
	return r;
}

static int import_docker_save(struct img_store *s, struct archive_src *a, const struct img_import_opts *o,
			      const char *path, struct img_record **ret, pd_err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	struct oci_docker_save *ds = NULL;
	char top[OCI_DIGEST_LEN + 1];
	int r = src_read(s, a, "manifest.json", OCI_DOC_MAX, &buf, &len, err);
	if (r == 0)
		r = oci_docker_save_parse(buf, len, &ds, err);
	const struct oci_docker_save_image *im = r == 0 ? pick_saved(ds, o->tag, err) : NULL;
	if (r == 0 && !im)
		r = -ENOENT;
	if (r == 0)
		r = synth_manifest(s, a, im, top, err);
	const char *tag = r == 0 ? (o->tag ? o->tag : im->repo_tags[0]) : NULL;
	_cleanup_free_ char *name = r == 0 ? img_import_default_name(o->name, tag, path, NULL) : NULL;
	if (r == 0 && !name)
		r = pd_error_msg(err, EINVAL, "cannot make an image name from '%s'; give one with --name", path);
	_cleanup_free_ char *canon = tag && !o->name ? img_name_normalize(tag) : NULL;
	if (r == 0 && tag && !o->name && !canon && o->progress) {
		_cleanup_free_ char *shown = shown_name(tag);
		fprintf(o->progress, "note: the archive's tag '%s' is not a valid image name; named %s instead (or give --name)\n",
			shown, name);
	}
	_cleanup_free_ char *source = xasprintf("import %s", path);
	if (r == 0)
		r = img_ingest(s, &a->f, top, name, source, ret, err);
	oci_docker_save_free(ds);
	return r;
}

/* ---- the entry point ---- */

char *img_import_default_name(const char *explicit_name, const char *archive_tag, const char *path,
			      const char *tag)
{
	if (explicit_name)
		return img_name_normalize(explicit_name);
	char *n = archive_tag ? img_name_normalize(archive_tag) : NULL;
	if (n)
		return n;
	_cleanup_free_ char *trimmed = xstrdup(path);
	for (size_t l = strlen(trimmed); l > 1 && trimmed[l - 1] == '/'; l--)
		trimmed[l - 1] = '\0';
	const char *base = strrchr(trimmed, '/');
	base = base ? base + 1 : trimmed;
	_cleanup_free_ char *b = xstrndup(base, strcspn(base, "."));
	/* lower-case alphanumerics joined by single dashes: a valid repository component */
	size_t o = 0;
	for (char *p = b; *p; p++) {
		if (isalnum((unsigned char)*p))
			b[o++] = (char)tolower((unsigned char)*p);
		else if (o && b[o - 1] != '-')
			b[o++] = '-';
	}
	while (o && b[o - 1] == '-')
		o--;
	b[o] = '\0';
	_cleanup_free_ char *s = xasprintf("localhost/%s:%s", b, tag ? tag : "latest");
	return img_name_normalize(s);
}

int img_import(struct img_store *s, const char *path, const struct img_import_opts *o,
	       struct img_record **ret, pd_err *err)
{
	struct archive_src a = {.f = {.fetch = fetch_missing, .progress = o->progress}, .layoutfd = -1};
	struct stat st;
	int r = 0;
	/* O_NONBLOCK: a FIFO given as the archive is refused below, not waited on with the
	 * store lock held (the user's own path: a symlink to it is followed) */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || fd_set_nonblock(fd, false) < 0)
		return pd_error(err, errno, "cannot open %s", path);
	if (S_ISDIR(st.st_mode)) {
		a.layoutfd = TAKE_FD(fd);
		a.f.fetch = fetch_layout;
	} else if (S_ISREG(st.st_mode)) {
		r = read_archive(s, &a, fd, o->progress, err);
	} else
		r = pd_error_msg(err, EINVAL, "%s is neither a tar archive nor an OCI layout directory", path);
	if (r == 0 && src_has(&a, "index.json") && src_has(&a, "oci-layout"))
		r = import_layout(s, &a, o, path, ret, err);
	else if (r == 0 && src_has(&a, "manifest.json"))
		r = import_docker_save(s, &a, o, path, ret, err);
	else if (r == 0)
		r = pd_error_msg(err, EINVAL, "%s has neither manifest.json (docker save) nor oci-layout + index.json (OCI layout)", path);
	src_clear(&a);
	return r < 0 ? pd_err_prefix(err, "cannot import %s", path) : 0;
}
