/* store_record.c — image records: their JSON form and records/HASH.json (store.h). */
#include <cjson/cJSON.h>
#include <fcntl.h>

#include "image/oci_json.h"
#include "image/oci_ref.h"
#include "image/store.h"
#include "util/fdio.h"

#define RECORD_MAX (1024 * 1024)
#define RECORD_STRING_MAX 4096

void img_record_free(struct img_record *r)
{
	if (!r)
		return;
	free(r->name);
	strv_free(r->layers);
	free(r->source);
	free(r->contents);
	free(r);
}

char *img_record_to_json(const struct img_record *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "digest", r->digest);
	cJSON_AddStringToObject(o, "config", r->config);
	cJSON *l = cJSON_AddArrayToObject(o, "layers");
	for (char **p = r->layers; p && *p; p++)
		cJSON_AddItemToArray(l, cJSON_CreateString(*p));
	/* sizes and times are exact integers well below 2^53 */
	cJSON_AddNumberToObject(o, "size", (double)r->size);
	cJSON_AddNumberToObject(o, "unpacked", (double)r->unpacked);
	cJSON_AddNumberToObject(o, "created", (double)r->created);
	cJSON_AddStringToObject(o, "source", r->source ? r->source : "");
	cJSON_AddStringToObject(o, "contents", r->contents ? r->contents : "");
	char *s = cJSON_Print(o);
	cJSON_Delete(o);
	if (!s)
		abort();
	char *out = xstrdup(s);
	cJSON_free(s);
	return out;
}

static int copy_digest(const cJSON *o, const char *key, char out[OCI_DIGEST_LEN + 1], pd_err *err)
{
	const char *s;
	int r = oci_json_string(o, key, true, OCI_DIGEST_LEN, "image record", "", &s, err);
	if (r < 0)
		return r;
	if (!oci_digest_valid(s))
		return pd_error_msg(err, EINVAL, "image record: %s: not a sha256 digest", key);
	memcpy(out, s, OCI_DIGEST_LEN + 1);
	return 0;
}

static int fill_record(const cJSON *o, void *out, pd_err *err)
{
	struct img_record *r = out;
	const char *name, *src = "", *contents = "";
	uint64_t created = 0;
	int q = oci_json_string(o, "name", true, OCI_REF_MAX, "image record", "", &name, err);
	if (q < 0 || (q = copy_digest(o, "digest", r->digest, err)) < 0 ||
	    (q = copy_digest(o, "config", r->config, err)) < 0)
		return q;
	if ((q = oci_json_strv(o, "layers", true, OCI_LAYERS_MAX, OCI_DIGEST_LEN, "image record", "", &r->layers, err)) < 0)
		return q;
	for (char **p = r->layers; *p; p++)
		if (!oci_digest_valid(*p))
			return pd_error_msg(err, EINVAL, "image record: layers: not a sha256 digest");
	if ((q = oci_json_u64(o, "size", false, OCI_BLOB_SIZE_MAX * OCI_LAYERS_MAX, "image record", "", &r->size, err)) < 0 && q != -ENOENT)
		return q;
	if ((q = oci_json_u64(o, "unpacked", false, UINT64_MAX >> 12, "image record", "", &r->unpacked, err)) < 0 && q != -ENOENT)
		return q;
	if ((q = oci_json_u64(o, "created", false, INT64_MAX >> 12, "image record", "", &created, err)) < 0 && q != -ENOENT)
		return q;
	if ((q = oci_json_string(o, "source", false, RECORD_STRING_MAX, "image record", "", &src, err)) < 0 && q != -ENOENT)
		return q;
	if ((q = oci_json_string(o, "contents", false, RECORD_STRING_MAX, "image record", "", &contents, err)) < 0 && q != -ENOENT)
		return q;
	r->name = xstrdup(name);
	r->created = (int64_t)created;
	r->source = xstrdup(src);
	r->contents = xstrdup(contents);
	return 0;
}

int img_record_from_json(const char *json, size_t len, struct img_record **ret, pd_err *err)
{
	struct img_record *r = xcalloc(1, sizeof(*r));
	int q = oci_json_parse_into(json, len, RECORD_MAX, "image record", fill_record, r, err);
	if (q < 0) {
		img_record_free(r);
		return q;
	}
	*ret = r;
	return 0;
}

/* records/HASH.json: names hold '/' and ':', so the file is named by the name's hash */
static char *record_file(const char *name)
{
	char d[OCI_DIGEST_LEN + 1];
	img_sha256_digest(name, strlen(name), d);
	return xasprintf("%s.json", d + 7);
}

int img_record_save(struct img_store *s, const struct img_record *r, pd_err *err)
{
	_cleanup_free_ char *json = img_record_to_json(r);
	_cleanup_free_ char *f = record_file(r->name);
	_cleanup_close_ int dfd = -1;
	int q = img_store_open_dir(s, "records", &dfd, err);
	if (q < 0)
		return q;
	q = write_file_atomic_at(dfd, f, json, strlen(json), 0644);
	return q < 0 ? pd_error(err, q, "cannot write the record of %s (%s/records/%s)", r->name, s->dir, f) : 0;
}

/* records/NAME, read from the records directory dfd (opened without following symlinks) */
static int load_record(struct img_store *s, int dfd, const char *name, struct img_record **ret, pd_err *err)
{
	_cleanup_free_ char *buf = NULL, *what = xasprintf("%s/records/%s", s->dir, name);
	_cleanup_close_ int fd = -1;
	size_t len;
	int q = img_open_regular(dfd, name, what, &fd, err);
	if (q < 0)
		return q;
	if ((q = read_fd_all(fd, RECORD_MAX, &buf, &len)) < 0)
		return pd_error(err, q, "cannot read %s", what);
	q = img_record_from_json(buf, len, ret, err);
	return q < 0 ? pd_err_prefix(err, "%s", what) : 0;
}

void img_record_list_free(struct img_record **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		img_record_free(v[i]);
	free(v);
}

static int cmp_record(const void *a, const void *b)
{
	return strcmp((*(struct img_record *const *)a)->name, (*(struct img_record *const *)b)->name);
}

int img_record_list(struct img_store *s, struct img_record ***ret, size_t *ret_n, pd_err *err)
{
	int fd = -1;
	int q = img_store_open_dir(s, "records", &fd, err);
	if (q < 0)
		return q;
	_cleanup_closedir_ DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return pd_error(err, errno, "cannot list %s/records", s->dir);
	}
	struct img_record **v = NULL;
	size_t n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		size_t l = strlen(de->d_name);
		if (l != 64 + 5 || !streq(de->d_name + 64, ".json"))
			continue; /* temporary files of a concurrent save, dot entries */
		struct img_record *r;
		pd_err e2 = {0};
		if (load_record(s, dirfd(d), de->d_name, &r, &e2) < 0)
			continue; /* vanished under a concurrent rm; a damaged record shows in inspect */
		v = xrealloc(v, (n + 1) * sizeof(*v));
		v[n++] = r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_record);
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool hex_prefix_of(const char *what, const char *digest)
{
	const char *h = startswith(what, "sha256:") ? what + 7 : what;
	size_t n = strlen(h);
	if (n < 4 || n > 64 || strspn(h, "0123456789abcdef") != n)
		return false;
	return strncmp(h, digest + 7, n) == 0;
}

static int find_by_name(struct img_store *s, const char *name, struct img_record **ret)
{
	_cleanup_free_ char *f = record_file(name);
	_cleanup_close_ int dfd = -1;
	if (img_store_open_dir(s, "records", &dfd, NULL) < 0 || faccessat(dfd, f, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	return load_record(s, dfd, f, ret, NULL);
}

char *img_name_normalize(const char *name)
{
	_cleanup_oci_ref_ struct oci_ref *ref = NULL;
	return oci_ref_parse(name, &ref, NULL) == 0 ? oci_ref_format(ref) : NULL;
}

int img_record_find(struct img_store *s, const char *what, struct img_record **ret, pd_err *err)
{
	if (find_by_name(s, what, ret) == 0)
		return 0;
	_cleanup_free_ char *canon = img_name_normalize(what);
	if (canon && find_by_name(s, canon, ret) == 0)
		return 0;
	struct img_record **v;
	size_t n, hits = 0, hit = 0;
	int q = img_record_list(s, &v, &n, err);
	if (q < 0)
		return q;
	/* one image under several names is one hit (the first name) */
	for (size_t i = 0; i < n; i++)
		if (hex_prefix_of(what, v[i]->digest) && (!hits || !streq(v[i]->digest, v[hit]->digest))) {
			hit = hits++ ? hit : i;
		}
	if (hits == 1) {
		*ret = TAKE_PTR(v[hit]);
		img_record_list_free(v, n);
		return 0;
	}
	img_record_list_free(v, n);
	if (hits > 1)
		return pd_error_msg(err, EINVAL, "'%s' matches %zu images; give more of the digest", what, hits);
	return pd_error_msg(err, ENOENT, "no image '%s' (see 'paddock image ls')", what);
}

int img_record_remove(struct img_store *s, const char *name, pd_err *err)
{
	_cleanup_free_ char *f = record_file(name);
	_cleanup_close_ int dfd = -1;
	int q = img_store_open_dir(s, "records", &dfd, err);
	if (q < 0)
		return q;
	if (unlinkat(dfd, f, 0) < 0)
		return pd_error(err, errno, "cannot remove the record of %s", name);
	return 0;
}
