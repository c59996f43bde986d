/* store_gc.c — unpacked trees (rootfs/), boxes' uses of them, and garbage collection
 * (store.h). */
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "image/layer.h"
#include "image/store.h"
#include "image/tree_clone.h"
#include "util/log.h"
#include "util/fdio.h"
#include "workspace/ws_io.h"

char *img_rootfs_path(struct img_store *s, const char *config_digest)
{
	return xasprintf("%s/rootfs/%s", s->dir, config_digest + 7);
}

bool img_rootfs_exists(struct img_store *s, const char *config_digest)
{
	_cleanup_free_ char *p = xasprintf("rootfs/%s", config_digest + 7);
	_cleanup_close_ int fd = -1;
	return ws_open_beneath(s->dirfd, p, O_PATH | O_DIRECTORY, &fd) == 0;
}

/* The config's diff_ids: the digests of the layers' decompressed tars, in order. The config
 * entered the store verified against its digest, and a tree is keyed by that digest, so every
 * layer must hash to its diff_id before it is applied: otherwise a registry could pair a
 * well-known config (debian's) with layers of its own and plant them under that config's key,
 * for a later honest pull of the same config to reuse. */
static int load_diff_ids(struct img_store *s, const char *config_digest, size_t n_layers,
			 struct oci_config **ret, pd_err *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = img_blob_read(s, config_digest, OCI_CONFIG_MAX, &buf, &len, err);
	if (r == 0)
		r = oci_config_parse(buf, len, ret, err);
	if (r == 0 && (*ret)->n_diff_ids != n_layers)
		r = pd_error_msg(err, EINVAL, "the image config lists %zu layers, the manifest %zu",
				 (*ret)->n_diff_ids, n_layers);
	return r;
}

/* The tree to start from: the stored tree of another record whose layers are the first k of
 * ours (k as large as possible, k < n) and whose config names the same diff_ids for them, so
 * its tree is what our first k layers unpack to (tree_clone.h). 0 when there is none. */
static size_t prefix_tree(struct img_store *s, const struct oci_config *cfg, char *const *layers,
			  char ret_config[OCI_DIGEST_LEN + 1], uint64_t *ret_bytes)
{
	struct img_record **v;
	size_t n, best = 0, total = strv_len(layers);
	if (img_record_list(s, &v, &n, NULL) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = strv_len(v[i]->layers);
		if (k == 0 || k <= best || k >= total || !img_rootfs_exists(s, v[i]->config))
			continue;
		bool same = true;
		for (size_t j = 0; same && j < k; j++)
			same = streq(v[i]->layers[j], layers[j]);
		struct oci_config *pc = NULL;
		if (same && load_diff_ids(s, v[i]->config, k, &pc, NULL) == 0)
			for (size_t j = 0; same && j < k; j++)
				same = streq(pc->diff_ids[j], cfg->diff_ids[j]);
		else
			same = false;
		oci_config_free(pc);
		if (same) {
			best = k;
			memcpy(ret_config, v[i]->config, OCI_DIGEST_LEN + 1);
			*ret_bytes = v[i]->unpacked;
		}
	}
	img_record_list_free(v, n);
	return best;
}

static int apply_layers(struct img_store *s, int rootfd, const char *config_digest, char *const *layers,
			uint64_t *ret_bytes, pd_err *err)
{
	struct oci_config *cfg = NULL;
	int r = load_diff_ids(s, config_digest, strv_len(layers), &cfg, err);
	if (r < 0) {
		oci_config_free(cfg);
		return r;
	}
	/* a stored tree of our first layers is cloned instead of unpacking them again */
	char base[OCI_DIGEST_LEN + 1];
	uint64_t bytes = 0;
	size_t start = prefix_tree(s, cfg, layers, base, &bytes);
	if (start > 0) {
		_cleanup_free_ char *bp = img_rootfs_path(s, base);
		_cleanup_close_ int bfd = open(bp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		r = bfd < 0 ? pd_error(err, errno, "cannot open %s", bp) : img_tree_clone(bfd, rootfd, NULL, err);
		if (r < 0) {
			oci_config_free(cfg);
			return pd_err_prefix(err, "cannot start from the tree of %.19s", base);
		}
	}
	struct layer_options o;
	layer_options_default(&o);
	o.uid_shift = s->uid_shift;
	o.gid_shift = s->gid_shift;
	for (size_t i = start; r == 0 && layers && layers[i]; i++) {
		_cleanup_close_ int fd = img_blob_open(s, layers[i], err);
		if (fd < 0) {
			r = fd;
			break;
		}
		char diff_id[OCI_DIGEST_LEN + 1];
		struct layer_stats st;
		/* an uncompressed layer's diff_id is its blob digest, which the store verified when
		 * the blob came in (blobs are named by the hash of what was written): hashing it
		 * again here would only cost a read of the whole layer */
		if (!streq(layers[i], cfg->diff_ids[i])) {
			r = img_layer_diff_id(fd, o.max_bytes + (o.max_bytes >> 2), diff_id, err);
			if (r == 0 && !streq(diff_id, cfg->diff_ids[i]))
				r = pd_error_msg(err, EBADMSG, "its content is %s, the config says %s", diff_id,
						 cfg->diff_ids[i]);
			if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
				r = pd_error(err, errno, "cannot rewind the layer");
		}
		o.link_from = s->link_fd >= 0 && streq(layers[i], s->link_layer) ? s->link_fd : -1;
		if (r == 0)
			r = layer_apply_fd(rootfd, fd, &o, &st, err);
		if (r < 0)
			pd_err_prefix(err, "layer %zu (%.19s)", i + 1, layers[i]);
		else {
			bytes += st.bytes;
			pd_debug("unpack: layer %zu: %llu files (%llu hard-linked from the build)", i + 1,
				 (unsigned long long)st.files, (unsigned long long)st.linked);
		}
	}
	oci_config_free(cfg);
	if (r == 0)
		*ret_bytes = bytes;
	return r;
}

int img_rootfs_unpack(struct img_store *s, const char *config_digest, char *const *layers,
		      uint64_t *ret_unpacked, pd_err *err)
{
	/* why safe: tmp/ and rootfs/ are opened without following a symlink in any component,
	 * and the tree is made, renamed and removed by plain names in them */
	_cleanup_close_ int tmpfd = -1, treesfd = -1;
	int r = img_store_open_dir(s, "tmp", &tmpfd, err);
	if (r == 0)
		r = img_store_open_dir(s, "rootfs", &treesfd, err);
	if (r < 0)
		return r;
	char name[WS_TMP_NAME_MAX];
	ws_tmpname(name);
	if (mkdirat(tmpfd, name, 0700) < 0)
		return pd_error(err, errno, "cannot create a directory in %s/tmp", s->dir);
	uint64_t bytes = 0;
	{
		_cleanup_close_ int rootfd = openat(tmpfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (rootfd < 0)
			r = pd_error(err, errno, "cannot open %s/tmp/%s", s->dir, name);
		if (r == 0 && fchmod(rootfd, 0755) < 0)
			r = pd_error(err, errno, "cannot chmod %s/tmp/%s", s->dir, name);
		if (r == 0)
			r = apply_layers(s, rootfd, config_digest, layers, &bytes, err);
	}
	if (r == 0 && renameat(tmpfd, name, treesfd, config_digest + 7) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		r = pd_error(err, errno, "cannot move the unpacked image to %s/rootfs/%s", s->dir, config_digest + 7);
	/* failure, or another process unpacked the same image first: ours goes */
	rm_rf_at(tmpfd, name);
	if (r == 0 && ret_unpacked)
		*ret_unpacked = bytes;
	return r;
}

int img_use(struct img_store *s, const char *box, const struct img_record *r, char **ret_rootfs,
	    pd_err *err)
{
	/* a file name under uses/: the box store's names are stricter still */
	if (!*box || strlen(box) > 63 || strchr(box, '/') || box[0] == '.')
		return pd_error_msg(err, EINVAL, "invalid box name '%s'", box);
	if (!img_rootfs_exists(s, r->config)) {
		int q = img_rootfs_unpack(s, r->config, r->layers, NULL, err);
		if (q < 0)
			return pd_err_prefix(err, "cannot unpack %s", r->name);
	}
	_cleanup_close_ int usesfd = -1;
	int q = img_store_open_dir(s, "uses", &usesfd, err);
	if (q < 0)
		return q;
	q = write_file_atomic_at(usesfd, box, r->config, strlen(r->config), 0644);
	if (q < 0)
		return pd_error(err, q, "cannot record that %s uses %s", box, r->name);
	*ret_rootfs = img_rootfs_path(s, r->config);
	return 0;
}

/* ---- gc ---- */

struct keep {
	char **blobs, **trees;  /* hex names */
};


static void keep_record(struct keep *k, const struct img_record *r)
{
	k->blobs = strv_append(k->blobs, r->digest + 7);
	k->blobs = strv_append(k->blobs, r->config + 7);
	for (char **l = r->layers; l && *l; l++)
		k->blobs = strv_append(k->blobs, *l + 7);
	k->trees = strv_append(k->trees, r->config + 7);
}

/* uses/BOX keeps its tree while the box exists; a use whose box is gone is dropped, unless it
 * is younger than IMG_USE_GRACE_S: `create` records the use before it makes the box's
 * directory, and a gc in between must not take the tree from under the box being made */
static int keep_uses(struct img_store *s, struct keep *k, struct img_gc_stats *st, pd_err *err)
{
	int fd = -1;
	int r = img_store_open_dir(s, "uses", &fd, err);
	if (r < 0)
		return r;
	_cleanup_closedir_ DIR *d = fdopendir(fd);
	if (!d)
		return close(fd), pd_error(err, errno, "cannot list %s/uses", s->dir);
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		/* the box store's layout (supervisor/store.h), which this module does not link */
		_cleanup_free_ char *box = xasprintf("%s/boxes/%s", s->home, de->d_name);
		_cleanup_free_ char *buf = NULL;
		struct stat us;
		if (access(box, F_OK) < 0 && errno == ENOENT &&
		    (fstatat(dirfd(d), de->d_name, &us, AT_SYMLINK_NOFOLLOW) < 0 ||
		     us.st_mtime + IMG_USE_GRACE_S < time(NULL))) {
			unlinkat(dirfd(d), de->d_name, 0);
			st->uses++;
			continue;
		}
		_cleanup_close_ int ufd = -1;
		/* a FIFO here must not hold gc (and the exclusive lock) forever */
		if (img_open_regular(dirfd(d), de->d_name, de->d_name, &ufd, NULL) < 0 ||
		    read_fd_all(ufd, 128, &buf, NULL) < 0 || !oci_digest_valid(buf)) {
			/* unreadable: keep every tree rather than guess (refuse, do not degrade) */
			return pd_error_msg(err, EINVAL, "%s/uses/%s is unreadable; remove it or the box first",
					    s->dir, de->d_name);
		}
		k->trees = strv_append(k->trees, buf + 7);
	}
	return 0;
}

/* Removes entries of dir not in keep; for blobs counts their bytes. */
static int sweep(struct img_store *s, const char *dir, char *const *keep, bool trees, struct img_gc_stats *st,
		 pd_err *err)
{
	/* why safe: dir is opened beneath the store with no symlink in any component, and every
	 * removal is relative to that fd, one plain name at a time (rm_rf_at never follows
	 * symlinks below it): a symlink planted for blobs/ or tmp/ fails the gc, it does not
	 * send it into a directory outside the store */
	int fd = -1;
	int r = img_store_open_dir(s, dir, &fd, err);
	if (r < 0)
		return r;
	_cleanup_closedir_ DIR *d = fdopendir(fd);
	if (!d)
		return close(fd), pd_error(err, errno, "cannot list %s/%s", s->dir, dir);
	for (struct dirent *de; (de = readdir(d));) {
		if (streq(de->d_name, ".") || streq(de->d_name, "..") || (keep && strv_contains(keep, de->d_name)))
			continue;
		struct stat sb;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		_cleanup_free_ char *full = xasprintf("%s/%s/%s", s->dir, dir, de->d_name);
		int q = rm_rf_at(dirfd(d), de->d_name);
		if ((q == -EACCES || q == -EPERM) && s->remove_foreign)
			q = s->remove_foreign(dirfd(d), de->d_name);
		if (q < 0 && r == 0)
			r = pd_error(err, q, "cannot remove %s", full);
		if (q < 0)
			continue;
		if (!keep)
			st->tmp++;
		else if (trees)
			st->rootfs++;
		else {
			st->blobs++;
			st->bytes += (uint64_t)sb.st_size;
		}
	}
	return r;
}

int img_gc(struct img_store *s, struct img_gc_stats *ret, pd_err *err)
{
	if (s->lockfd < 0)
		return pd_error_msg(err, EINVAL, "image gc needs the store's exclusive lock");
	struct img_gc_stats st = {0};
	struct keep k = {0};
	struct img_record **v;
	size_t n;
	int r = img_record_list(s, &v, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		keep_record(&k, v[i]);
	img_record_list_free(v, n);
	/* empty vectors still mean "keep nothing", not "no filter" */
	k.blobs = strv_append(k.blobs, ".");
	k.trees = strv_append(k.trees, ".");
	r = keep_uses(s, &k, &st, err);
	if (r == 0)
		r = sweep(s, "blobs/sha256", k.blobs, false, &st, err);
	if (r == 0)
		r = sweep(s, "rootfs", k.trees, true, &st, err);
	/* vm disks are named like trees and kept with them (vmdisk.h) */
	if (r == 0 && faccessat(s->dirfd, "vmdisk", F_OK, 0) == 0)
		r = sweep(s, "vmdisk", k.trees, true, &st, err);
	/* writers hold the shared lock: with the exclusive one, tmp/ is nobody's */
	if (r == 0)
		r = sweep(s, "tmp", NULL, false, &st, err);
	strv_free(k.blobs);
	strv_free(k.trees);
	if (ret)
		*ret = st;
	return r;
}
