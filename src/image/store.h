/* store.h — the image store: $PADDOCK_HOME/images/
 *
 *   lock                 flock: shared by everyone who adds images or starts a box from one,
 *                        exclusive for gc (so gc never removes what someone is about to use)
 *   blobs/sha256/HEX     content-addressed blobs (manifests, configs, compressed layers); a blob
 *                        only enters under its name after its bytes were hashed and matched
 *   rootfs/HEX           the unpacked tree of an image, keyed by its config digest (which names
 *                        the layers' diff_ids): what a box uses as its read-only lower layer
 *   records/HASH.json    one per image name (HASH = sha256 of the name): name, digests, sizes,
 *                        when, from where, what it contains
 *   uses/BOX             a box made from an image: the rootfs key it uses; kept by gc while
 *                        $PADDOCK_HOME/boxes/BOX exists, and for IMG_USE_GRACE_S after it
 *                        was written (the box is made after its use is recorded)
 *   tmp/                 blobs being downloaded, trees being unpacked (gc empties it)
 * Everything enters by rename from tmp/, so a reader sees an old or a new state, never half. */
#pragma once

#include "image/oci_manifest.h"

struct img_store {
	char *home;      /* $PADDOCK_HOME */
	char *dir;       /* $PADDOCK_HOME/images */
	int dirfd;
	int lockfd;      /* holds the store lock (shared or exclusive), or -1 */
	/* owners of unpacked files when unpacking as root: shift + the image's id, so trees
	 * appear inside root's boxes as the image says (layer.h); 0 = as in the image */
	uint32_t uid_shift, gid_shift;
	/* img_store_link_layer: while set, unpacking the layer link_layer links its files from
	 * link_fd (layer_options.link_from); -1 = none */
	int link_fd;
	char link_layer[OCI_DIGEST_LEN + 1];
	/* gc: removes dirfd/name, which the caller may not (a killed profile build's files,
	 * owned by the caller's subordinate ids); 0 or -errno. dirfd is a store directory gc
	 * opened without following symlinks. NULL: none (the CLI sets it) */
	int (*remove_foreign)(int dirfd, const char *name);
};

enum img_lock {
	IMG_LOCK_NONE = 0,    /* readers: records are replaced atomically */
	IMG_LOCK_SHARED,      /* adding images, starting boxes */
	IMG_LOCK_EXCLUSIVE,   /* gc */
};

int img_store_open(const char *home, enum img_lock lock, struct img_store **ret, pd_err *err);
/* The next unpack of layer `digest` (a profile build's, as root) hard-links its files from
 * the directory fd it was captured from instead of writing them again (layer.h, link_from);
 * fd -1 ends it. The caller keeps fd open meanwhile. */
void img_store_link_layer(struct img_store *s, const char *digest, int fd);
/* Opens the directory relpath ("blobs/sha256") of the store without following a symlink in
 * any of its components (ws_open_beneath): a symlink planted in the store refuses the step
 * instead of redirecting it out of the store. */
int img_store_open_dir(struct img_store *s, const char *relpath, int *ret_fd, pd_err *err);
/* Opens the regular file path beneath dirfd for reading without following a symlink in any
 * component and without blocking: a FIFO, device or directory where a file belongs is refused
 * (EINVAL), not waited on while the store lock is held. what names it in messages. */
int img_open_regular(int dirfd, const char *path, const char *what, int *ret_fd, pd_err *err);
void img_store_close(struct img_store *s);
static inline void img_store_closep(struct img_store **s) { img_store_close(*s); }
#define _cleanup_img_store_ _cleanup_(img_store_closep)

/* What the store knows about one image. */
struct img_record {
	char *name;                          /* "docker.io/library/node:22", "profile/pi" */
	char digest[OCI_DIGEST_LEN + 1];     /* manifest digest: the image's identity */
	char config[OCI_DIGEST_LEN + 1];     /* config digest: names the rootfs */
	char **layers;                       /* layer blob digests, base first (strv) */
	uint64_t size;                       /* bytes of its blobs */
	uint64_t unpacked;                   /* bytes of file data in its rootfs */
	int64_t created;                     /* unix time it was stored */
	char *source;                        /* "pull REF" | "import FILE" | "build ..." */
	char *contents;                      /* "linux/amd64, 3 layers", agent versions, ... */
};
void img_record_free(struct img_record *r);
static inline void img_record_freep(struct img_record **r) { img_record_free(*r); }
#define _cleanup_img_record_ _cleanup_(img_record_freep)

/* JSON form of a record (pure; tested). */
char *img_record_to_json(const struct img_record *r);
int img_record_from_json(const char *json, size_t len, struct img_record **ret, pd_err *err);

/* ---- blobs ---- */

/* "sha256:HEX" -> "blobs/sha256/HEX" relative to the store (malloc'd). */
char *img_blob_relpath(const char *digest);
bool img_blob_exists(struct img_store *s, const char *digest);
/* Opens a stored blob for reading. */
int img_blob_open(struct img_store *s, const char *digest, pd_err *err);

/* A blob being written: bytes go to tmp/ and are hashed on the way. */
struct img_blob_writer;
int img_blob_writer_new(struct img_store *s, uint64_t max, struct img_blob_writer **ret, pd_err *err);
int img_blob_writer_write(struct img_blob_writer *w, const void *buf, size_t len, pd_err *err);
/* Finishes the blob: when expect_digest is non-NULL the content must hash to it (and have
 * expect_size bytes unless that is UINT64_MAX), else nothing is stored (-EBADMSG). Renames it
 * into blobs/ and frees w (also on error). ret_digest (may be NULL) gets the actual digest. */
int img_blob_writer_commit(struct img_blob_writer *w, const char *expect_digest, uint64_t expect_size,
			   char ret_digest[OCI_DIGEST_LEN + 1], uint64_t *ret_size, pd_err *err);
/* Discards an unfinished blob; NULL is fine. */
void img_blob_writer_abort(struct img_blob_writer *w);
/* Whole fd, stream or buffer into the store, verified as above. A reader returns the bytes
 * read, 0 at the end, or -errno with err set. */
typedef ssize_t (*img_read_fn)(void *ctx, void *buf, size_t len, pd_err *err);
int img_blob_put_stream(struct img_store *s, img_read_fn rd, void *ctx, const char *expect_digest,
			uint64_t expect_size, char ret_digest[OCI_DIGEST_LEN + 1], uint64_t *ret_size, pd_err *err);
/* An img_read_fn over an fd (ctx points to the int). */
ssize_t img_read_fd(void *ctx, void *buf, size_t len, pd_err *err);
int img_blob_put_fd(struct img_store *s, int fd, const char *expect_digest, uint64_t expect_size,
		    char ret_digest[OCI_DIGEST_LEN + 1], uint64_t *ret_size, pd_err *err);
int img_blob_put_buf(struct img_store *s, const void *buf, size_t len, const char *expect_digest,
		     char ret_digest[OCI_DIGEST_LEN + 1], pd_err *err);
/* Reads a small stored blob whole (manifests, configs), re-checking its digest. */
int img_blob_read(struct img_store *s, const char *digest, size_t max, char **ret_buf,
		  size_t *ret_len, pd_err *err);

/* The sha256 of buf as "sha256:HEX". */
void img_sha256_digest(const void *buf, size_t len, char ret[OCI_DIGEST_LEN + 1]);
/* The diff_id of the layer blob at fd (plain, gzip or zstd): the sha256 of its decompressed
 * bytes, read to the end (at most max_bytes of them). */
int img_layer_diff_id(int fd, uint64_t max_bytes, char ret[OCI_DIGEST_LEN + 1], pd_err *err);

/* ---- records ---- */

int img_record_save(struct img_store *s, const struct img_record *r, pd_err *err);
/* Every record, sorted by name. */
int img_record_list(struct img_store *s, struct img_record ***ret, size_t *ret_n, pd_err *err);
void img_record_list_free(struct img_record **v, size_t n);
/* Finds an image by name (as given, then normalised as an OCI reference), or by a unique
 * prefix (>= 4 hex digits) of its digest with or without "sha256:". -ENOENT with a message. */
int img_record_find(struct img_store *s, const char *what, struct img_record **ret, pd_err *err);
/* An image name in its stored spelling: an OCI reference, normalised ("node:22" ->
 * "docker.io/library/node:22"); NULL when name is not a valid reference. */
char *img_name_normalize(const char *name);
/* Removes the record of that name (the blobs stay until gc). */
int img_record_remove(struct img_store *s, const char *name, pd_err *err);

/* ---- rootfs ---- */

/* Absolute path of the rootfs for a config digest (malloc'd); it may not exist. */
char *img_rootfs_path(struct img_store *s, const char *config_digest);
bool img_rootfs_exists(struct img_store *s, const char *config_digest);
/* Applies the record's layers (from blobs/) into a fresh tree under tmp/ and renames it into
 * rootfs/ (an existing one is kept). ret_unpacked (may be NULL) gets the bytes of file data. */
int img_rootfs_unpack(struct img_store *s, const char *config_digest, char *const *layers,
		      uint64_t *ret_unpacked, pd_err *err);

/* ---- boxes and gc ---- */

/* Records that box uses the image's rootfs (needs the shared lock); returns the rootfs path. */
int img_use(struct img_store *s, const char *box, const struct img_record *r, char **ret_rootfs,
	    pd_err *err);
/* A use is written (under the shared lock) before its box's directory exists: gc, which
 * may run in between, keeps a use this young even without its box. */
#define IMG_USE_GRACE_S 3600
/* What gc removed. */
struct img_gc_stats {
	uint64_t blobs, rootfs, bytes, uses, tmp;
};
/* Needs the exclusive lock. Removes blobs and trees no record and no existing box refers
 * to, stale uses/ entries and everything in tmp/. */
int img_gc(struct img_store *s, struct img_gc_stats *ret, pd_err *err);
