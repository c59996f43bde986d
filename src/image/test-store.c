/* test-store.c — the image store: blobs verified on entry, records round-trip, lookups, the
 * docker-save / OCI layout import of generated archives, gc keeping what is referenced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <sys/stat.h>

#include "image/base.h"
#include "image/import.h"
#include "image/registry.h"
#include "image/tree_clone.h"
#include "image/vmdisk.h"
#include "image/layer.h"
#include "util/fdio.h"

static char *tmp_home(void)
{
	char *d = xstrdup("/tmp/pd-test-store-XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static int count_dir(struct img_store *s, const char *dir)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", s->dir, dir);
	_cleanup_closedir_ DIR *d = opendir(p);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += de->d_name[0] != '.';
	return n;
}

static void test_blob_verified(void **state)
{
	_cleanup_free_ char *home = tmp_home();
	struct img_store *s;
	pd_err err = {0};
	char d[OCI_DIGEST_LEN + 1], want[OCI_DIGEST_LEN + 1];
	assert_int_equal(img_store_open(home, IMG_LOCK_SHARED, &s, &err), 0);
	img_sha256_digest("hello", 5, want);
	assert_string_equal(want, "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
	assert_int_equal(img_blob_put_buf(s, "hello", 5, want, d, &err), 0);
	assert_string_equal(d, want);
	assert_true(img_blob_exists(s, want));
	/* other bytes under a digest: refused, nothing stored, nothing left in tmp/ */
	char other[OCI_DIGEST_LEN + 1];
	img_sha256_digest("other", 5, other);
	assert_int_equal(img_blob_put_buf(s, "hellO", 5, other, NULL, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "digest mismatch"));
	assert_false(img_blob_exists(s, other));
	assert_int_equal(count_dir(s, "tmp"), 0);
	/* a stored blob that rotted is caught on read */
	_cleanup_free_ char *p = xasprintf("%s/blobs/sha256/%s", s->dir, want + 7);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, p, "jello", 5, 0644), 0);
	char *buf;
	assert_int_equal(img_blob_read(s, want, 100, &buf, NULL, &err), -EBADMSG);
	img_store_close(s);
	rm_rf(home);
}

static struct img_record *sample(const char *name, const char *seed)
{
	struct img_record *r = xcalloc(1, sizeof(*r));
	r->name = xstrdup(name);
	img_sha256_digest(seed, strlen(seed), r->digest);
	_cleanup_free_ char *c = xasprintf("%s-config", seed), *l = xasprintf("%s-layer", seed);
	img_sha256_digest(c, strlen(c), r->config);
	char d[OCI_DIGEST_LEN + 1];
	img_sha256_digest(l, strlen(l), d);
	r->layers = strv_append(NULL, d);
	r->size = 1234;
	r->unpacked = 99999;
	r->created = 1700000000;
	r->source = xstrdup("import x.tar");
	r->contents = xstrdup("linux/amd64, 1 layer");
	return r;
}

static void test_record_json(void **state)
{
	_cleanup_img_record_ struct img_record *r = sample("docker.io/library/node:22", "a");
	_cleanup_free_ char *j = img_record_to_json(r);
	struct img_record *back = NULL;
	pd_err err = {0};
	assert_int_equal(img_record_from_json(j, strlen(j), &back, &err), 0);
	assert_string_equal(back->name, r->name);
	assert_string_equal(back->digest, r->digest);
	assert_string_equal(back->config, r->config);
	assert_string_equal(back->layers[0], r->layers[0]);
	assert_null(back->layers[1]);
	assert_int_equal(back->size, 1234);
	assert_int_equal(back->unpacked, 99999);
	assert_int_equal(back->created, 1700000000);
	assert_string_equal(back->contents, r->contents);
	img_record_free(back);
	static const char *bad[] = {
		"{\"name\":\"x\",\"digest\":\"sha256:zz\",\"config\":\"sha256:zz\",\"layers\":[]}",
		"{\"name\":\"x\"}",
		"[1]",
		"{\"name\":\"x\",\"name\":\"y\"}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		back = NULL;
		assert_true(img_record_from_json(bad[i], strlen(bad[i]), &back, &err) < 0);
		assert_null(back);
	}
}

static void test_record_find(void **state)
{
	_cleanup_free_ char *home = tmp_home();
	struct img_store *s;
	pd_err err = {0};
	assert_int_equal(img_store_open(home, IMG_LOCK_SHARED, &s, &err), 0);
	_cleanup_img_record_ struct img_record *a = sample("docker.io/library/node:22", "a");
	_cleanup_img_record_ struct img_record *b = sample("localhost/x:latest", "b");
	assert_int_equal(img_record_save(s, a, &err), 0);
	assert_int_equal(img_record_save(s, b, &err), 0);
	struct img_record **v;
	size_t n;
	assert_int_equal(img_record_list(s, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0]->name, "docker.io/library/node:22"); /* sorted */
	img_record_list_free(v, n);
	struct img_record *f = NULL;
	assert_int_equal(img_record_find(s, "node:22", &f, &err), 0); /* normalised */
	assert_string_equal(f->name, a->name);
	img_record_free(f);
	char prefix[20];
	snprintf(prefix, sizeof(prefix), "%.12s", b->digest + 7);
	assert_int_equal(img_record_find(s, prefix, &f, &err), 0); /* by digest prefix */
	assert_string_equal(f->name, b->name);
	img_record_free(f);
	assert_int_equal(img_record_find(s, "node:23", &f, &err), -ENOENT);
	assert_int_equal(img_record_remove(s, a->name, &err), 0);
	assert_int_equal(img_record_find(s, "node:22", &f, &err), -ENOENT);
	img_store_close(s);
	rm_rf(home);
}

/* gc drops what nothing refers to and keeps trees of images and of boxes that still exist */
static void test_gc(void **state)
{
	_cleanup_free_ char *home = tmp_home();
	struct img_store *s;
	pd_err err = {0};
	assert_int_equal(img_store_open(home, IMG_LOCK_EXCLUSIVE, &s, &err), 0);
	_cleanup_img_record_ struct img_record *kept = sample("localhost/kept:1", "k");
	_cleanup_img_record_ struct img_record *gone = sample("localhost/gone:1", "g");
	_cleanup_img_record_ struct img_record *used = sample("localhost/used:1", "u");
	char d[OCI_DIGEST_LEN + 1];
	/* blobs whose content hashes to the sample digests are not needed: gc looks at names */
	struct img_record *all[] = {kept, gone, used};
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		const char *names[] = {all[i]->digest, all[i]->config, all[i]->layers[0]};
		for (size_t k = 0; k < 3; k++) {
			_cleanup_free_ char *p = xasprintf("%s/blobs/sha256/%s", s->dir, names[k] + 7);
			assert_int_equal(write_file_atomic_at(AT_FDCWD, p, "x", 1, 0644), 0);
		}
		_cleanup_free_ char *t = img_rootfs_path(s, all[i]->config);
		assert_int_equal(mkdir(t, 0755), 0);
		assert_int_equal(img_record_save(s, all[i], &err), 0);
	}
	char *rootfs = NULL;
	_cleanup_free_ char *boxdir = xasprintf("%s/boxes/b1", home);
	assert_int_equal(mkdir_p(boxdir, 0700), 0);
	assert_int_equal(img_use(s, "b1", used, &rootfs, &err), 0);
	free(rootfs);
	assert_int_equal(img_use(s, "b2", gone, &rootfs, &err), 0); /* box b2 never existed */
	free(rootfs);
	/* a use as fresh as this one is a box still being made (see test_gc_grace): age it */
	_cleanup_free_ char *b2use = xasprintf("%s/uses/b2", s->dir);
	struct timespec old[2] = {{.tv_sec = time(NULL) - IMG_USE_GRACE_S - 60}, {.tv_sec = time(NULL) - IMG_USE_GRACE_S - 60}};
	assert_int_equal(utimensat(AT_FDCWD, b2use, old, 0), 0);
	img_sha256_digest("stray", 5, d);
	assert_int_equal(img_record_remove(s, gone->name, &err), 0);
	assert_int_equal(img_record_remove(s, used->name, &err), 0);
	struct img_gc_stats st;
	assert_int_equal(img_gc(s, &st, &err), 0);
	assert_int_equal(st.blobs, 6);      /* gone's three and used's three blobs */
	assert_int_equal(st.rootfs, 1);     /* gone's tree; used's stays for box b1 */
	assert_int_equal(st.uses, 1);       /* b2's stale use */
	assert_true(img_rootfs_exists(s, kept->config));
	assert_true(img_rootfs_exists(s, used->config));
	assert_false(img_rootfs_exists(s, gone->config));
	assert_true(img_blob_exists(s, kept->layers[0]));
	/* the box goes (`rm` drops its use too: store_drop_image_use): its tree goes with the
	 * next gc */
	assert_int_equal(rm_rf(boxdir), 0);
	_cleanup_free_ char *b1use = xasprintf("%s/uses/b1", s->dir);
	assert_int_equal(unlink(b1use), 0);
	assert_int_equal(img_gc(s, &st, &err), 0);
	assert_int_equal(st.rootfs, 1);
	assert_false(img_rootfs_exists(s, used->config));
	img_store_close(s);
	/* gc needs the exclusive lock */
	assert_int_equal(img_store_open(home, IMG_LOCK_NONE, &s, &err), 0);
	assert_int_equal(img_gc(s, &st, &err), -EINVAL);
	img_store_close(s);
	rm_rf(home);
}

/* A store in a fresh home (*ret_home, for the caller to remove). */
static struct img_store *new_store(char **ret_home, enum img_lock lock)
{
	*ret_home = tmp_home();
	struct img_store *s = NULL;
	pd_err err = {0};
	assert_int_equal(img_store_open(*ret_home, lock, &s, &err), 0);
	return s;
}

/* Swaps the store's directory rel for a symlink to a directory outside the store. */
static void plant_dir_symlink(struct img_store *s, const char *rel, const char *target)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", s->dir, rel), *real = xasprintf("%s/%s.real", s->dir, rel);
	assert_int_equal(rename(p, real), 0);
	assert_int_equal(symlink(target, p), 0);
}

/* A vm disk's path goes to QEMU: a symlink at vmdisk/KEY (to a disk of someone's choosing) is
 * not a disk, a regular file is; and a store whose vmdisk/ is a symlink does not open. */
static void test_vmdisk_not_through_symlinks(void **state)
{
	(void)state;
	_cleanup_free_ char *home = NULL;
	struct img_store *s = new_store(&home, IMG_LOCK_SHARED);
	pd_err err = {0};
	_cleanup_img_record_ struct img_record *r = sample("localhost/vm:1", "v");
	_cleanup_free_ char *disk = xasprintf("%s/vmdisk/%s", s->dir, r->config + 7);
	_cleanup_free_ char *other = xasprintf("%s/other.img", home);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, other, "disk", 4, 0444), 0);
	assert_int_equal(symlink(other, disk), 0);
	assert_false(img_vmdisk_exists(s, r));
	assert_int_equal(unlink(disk), 0);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, disk, "disk", 4, 0444), 0);
	assert_true(img_vmdisk_exists(s, r));
	plant_dir_symlink(s, "vmdisk", "vmdisk.real");
	assert_false(img_vmdisk_exists(s, r));
	img_store_close(s);
	assert_int_equal(img_store_open(home, IMG_LOCK_SHARED, &s, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "/vmdisk"));
	rm_rf(home);
}

/* `create` records a box's use before it makes the box's directory: a gc in between keeps the
 * tree (the use is young), and drops the use only once it is older than IMG_USE_GRACE_S. */
static void test_gc_grace(void **state)
{
	(void)state;
	_cleanup_free_ char *home = tmp_home();
	struct img_store *s;
	pd_err err = {0};
	assert_int_equal(img_store_open(home, IMG_LOCK_EXCLUSIVE, &s, &err), 0);
	_cleanup_img_record_ struct img_record *r = sample("localhost/new:1", "n");
	_cleanup_free_ char *t = img_rootfs_path(s, r->config);
	assert_int_equal(mkdir(t, 0755), 0);
	assert_int_equal(img_record_save(s, r, &err), 0);
	char *rootfs = NULL;
	assert_int_equal(img_use(s, "being-made", r, &rootfs, &err), 0);
	free(rootfs);
	assert_int_equal(img_record_remove(s, r->name, &err), 0); /* `image rm` raced too */
	struct img_gc_stats st;
	assert_int_equal(img_gc(s, &st, &err), 0);
	assert_int_equal(st.uses, 0);
	assert_int_equal(st.rootfs, 0);
	assert_true(img_rootfs_exists(s, r->config));
	_cleanup_free_ char *use = xasprintf("%s/uses/being-made", s->dir);
	time_t then = time(NULL) - IMG_USE_GRACE_S - 1;
	struct timespec ts[2] = {{.tv_sec = then}, {.tv_sec = then}};
	assert_int_equal(utimensat(AT_FDCWD, use, ts, 0), 0);
	assert_int_equal(img_gc(s, &st, &err), 0);
	assert_int_equal(st.uses, 1);
	assert_int_equal(st.rootfs, 1);
	assert_false(img_rootfs_exists(s, r->config));
	img_store_close(s);
	rm_rf(home);
}

/* A symlink planted for blobs/ (the store's own owner, or a racing process of theirs) would
 * have turned gc's sweep of blobs/sha256 into a removal of every file in the directory the
 * link names. gc refuses, and the directory outside the store keeps its files. */
static void test_gc_symlink_in_store_not_followed(void **state)
{
	(void)state;
	_cleanup_free_ char *home = NULL;
	struct img_store *s = new_store(&home, IMG_LOCK_EXCLUSIVE);
	pd_err err = {0};
	_cleanup_free_ char *outside = xasprintf("%s/outside/sha256", home);
	_cleanup_free_ char *victim = xasprintf("%s/precious", outside);
	assert_int_equal(mkdir_p(outside, 0755), 0);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, victim, "keep me", 7, 0644), 0);
	plant_dir_symlink(s, "blobs", "../outside");
	struct img_gc_stats st;
	assert_int_equal(img_gc(s, &st, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "blobs/sha256"));
	assert_int_equal(access(victim, F_OK), 0);
	img_store_close(s);
	rm_rf(home);
}

/* Blobs and records are reached beneath the store with no symlink in any component: a link
 * planted for blobs/ or records/ neither serves outside content nor receives writes; and
 * a store whose own directory is such a link is not opened at all. */
static void test_store_paths_not_through_symlinks(void **state)
{
	(void)state;
	_cleanup_free_ char *home = NULL;
	struct img_store *s = new_store(&home, IMG_LOCK_SHARED);
	pd_err err = {0};
	char d[OCI_DIGEST_LEN + 1];
	img_sha256_digest("hello", 5, d);
	_cleanup_free_ char *outside = xasprintf("%s/outside", home), *sha = xasprintf("%s/sha256", outside);
	_cleanup_free_ char *served = xasprintf("%s/%s", sha, d + 7);
	assert_int_equal(mkdir_p(sha, 0755), 0);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, served, "hello", 5, 0644), 0);
	plant_dir_symlink(s, "blobs", "../outside");
	assert_false(img_blob_exists(s, d));
	assert_int_equal(img_blob_open(s, d, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "symlink"));
	char other[OCI_DIGEST_LEN + 1];
	img_sha256_digest("other", 5, other);
	assert_int_equal(img_blob_put_buf(s, "other", 5, other, NULL, &err), -ELOOP);
	_cleanup_free_ char *written = xasprintf("%s/%s", sha, other + 7);
	assert_int_equal(access(written, F_OK), -1);
	assert_int_equal(count_dir(s, "tmp"), 0);
	_cleanup_img_record_ struct img_record *r = sample("localhost/x:1", "x");
	plant_dir_symlink(s, "records", "../outside");
	assert_int_equal(img_record_save(s, r, &err), -ELOOP);
	assert_int_equal(count_dir(s, "../outside"), 1);  /* sha256/ only: no record went there */
	img_store_close(s);
	/* the next open refuses the store until the links are gone */
	assert_int_equal(img_store_open(home, IMG_LOCK_SHARED, &s, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "/blobs"));
	rm_rf(home);
}

/* A FIFO where a stored blob belongs is refused at once, not read (which would wait for a
 * writer forever, holding the store lock). */
static void test_store_blob_fifo_refused(void **state)
{
	(void)state;
	_cleanup_free_ char *home = NULL;
	struct img_store *s = new_store(&home, IMG_LOCK_SHARED);
	pd_err err = {0};
	char d[OCI_DIGEST_LEN + 1];
	img_sha256_digest("fifo", 4, d);
	_cleanup_free_ char *p = xasprintf("%s/blobs/sha256/%s", s->dir, d + 7);
	assert_int_equal(mkfifo(p, 0644), 0);
	alarm(10); /* a hang is the failure this tests: end it with SIGALRM */
	assert_false(img_blob_exists(s, d));
	char *buf = NULL;
	assert_int_equal(img_blob_read(s, d, 100, &buf, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "a FIFO"));
	alarm(0);
	img_store_close(s);
	rm_rf(home);
}

/* An OCI layout directory with oci-layout and, unless index is NULL, that index.json. */
static char *layout_dir(const char *home, const char *index)
{
	char *dir = xasprintf("%s/layout", home);
	_cleanup_free_ char *blobs = xasprintf("%s/blobs/sha256", dir), *ol = xasprintf("%s/oci-layout", dir);
	assert_int_equal(mkdir_p(blobs, 0755), 0);
	const char *v = "{\"imageLayoutVersion\":\"1.0.0\"}";
	assert_int_equal(write_file_atomic_at(AT_FDCWD, ol, v, strlen(v), 0644), 0);
	_cleanup_free_ char *ip = xasprintf("%s/index.json", dir);
	if (index)
		assert_int_equal(write_file_atomic_at(AT_FDCWD, ip, index, strlen(index), 0644), 0);
	return dir;
}

/* Imports dir, which must fail at once (a FIFO read would block: SIGALRM ends the test)
 * with errnum and a message holding expect. */
static void import_fails(struct img_store *s, const char *dir, int errnum, const char *expect)
{
	struct img_import_opts o = {.name = "localhost/bad:1"};
	struct img_record *r = NULL;
	pd_err err = {0};
	alarm(10);
	assert_int_equal(img_import(s, dir, &o, &r, &err), -errnum);
	alarm(0);
	assert_null(r);
	if (!strstr(err.msg, expect))
		fail_msg("message '%s' lacks '%s'", err.msg, expect);
}

/* A layout whose index.json or manifest blob is a FIFO used to hang the import (holding the
 * store lock) on the open; one whose index.json or blobs/ is a symlink was followed. Each is
 * refused at once, naming the file. */
static void test_import_layout_fifo_and_symlink_refused(void **state)
{
	(void)state;
	_cleanup_free_ char *home = NULL;
	struct img_store *s = new_store(&home, IMG_LOCK_SHARED);
	_cleanup_free_ char *dir = layout_dir(home, NULL), *ip = xasprintf("%s/index.json", dir);
	assert_int_equal(mkfifo(ip, 0644), 0);
	import_fails(s, dir, EINVAL, "the layout's index.json is a FIFO");
	/* the same index.json elsewhere, reached through a symlink */
	_cleanup_free_ char *elsewhere = xasprintf("%s/index-elsewhere.json", home);
	char d[OCI_DIGEST_LEN + 1];
	img_sha256_digest("manifest", 8, d);
	_cleanup_free_ char *index = xasprintf("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
					       "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"%s\",\"size\":8}]}", d);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, elsewhere, index, strlen(index), 0644), 0);
	assert_int_equal(unlink(ip), 0);
	assert_int_equal(symlink(elsewhere, ip), 0);
	import_fails(s, dir, ELOOP, "the layout's index.json is a symlink");
	/* a real index.json naming a manifest whose blob is a FIFO */
	assert_int_equal(unlink(ip), 0);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, ip, index, strlen(index), 0644), 0);
	_cleanup_free_ char *mp = xasprintf("%s/blobs/sha256/%s", dir, d + 7);
	assert_int_equal(mkfifo(mp, 0644), 0);
	import_fails(s, dir, EINVAL, "blobs/sha256/");
	import_fails(s, dir, EINVAL, "is a FIFO");
	/* blobs/ a symlink to a directory holding the manifest: not followed either */
	assert_int_equal(unlink(mp), 0);
	_cleanup_free_ char *blobs = xasprintf("%s/blobs", dir), *other = xasprintf("%s/other-blobs", home);
	assert_int_equal(rename(blobs, other), 0);
	assert_int_equal(symlink(other, blobs), 0);
	_cleanup_free_ char *behind = xasprintf("%s/sha256/%s", other, d + 7);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, behind, "manifest", 8, 0644), 0);
	import_fails(s, dir, ELOOP, "symlink");
	/* a FIFO given as the archive itself */
	_cleanup_free_ char *fifo = xasprintf("%s/archive.tar", home);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	import_fails(s, fifo, EINVAL, "neither a tar archive nor an OCI layout directory");
	img_store_close(s);
	rm_rf(home);
}

static void test_base_url(void **state)
{
	pd_err err = {0};
	char *u;
	assert_true(img_registry_is_loopback("localhost:5000"));
	assert_true(img_registry_is_loopback("127.0.0.1:5000"));
	assert_true(img_registry_is_loopback("[::1]:5000"));
	assert_true(img_registry_is_loopback("localhost"));
	assert_false(img_registry_is_loopback("localhost.evil.com"));
	assert_false(img_registry_is_loopback("127.0.0.1.evil.com"));
	assert_false(img_registry_is_loopback("ghcr.io"));
	u = img_registry_base_url("docker.io", NULL, &err);
	assert_string_equal(u, "https://registry-1.docker.io");
	free(u);
	u = img_registry_base_url("docker.io", "http://127.0.0.1:5000/", &err);
	assert_string_equal(u, "http://127.0.0.1:5000");
	free(u);
	u = img_registry_base_url("ghcr.io", "http://127.0.0.1:5000", &err);
	assert_string_equal(u, "https://ghcr.io"); /* mirrors stand in for docker.io only */
	free(u);
	u = img_registry_base_url("127.0.0.1:5000", NULL, &err);
	assert_string_equal(u, "http://127.0.0.1:5000");
	free(u);
	assert_null(img_registry_base_url("docker.io", "http://mirror.example.com", &err));
	assert_null(img_registry_base_url("docker.io", "ftp://x", &err));
	assert_null(img_registry_base_url("docker.io", "https://", &err));
	/* userinfo makes curl's host the part after '@': never a loopback bypass, nor accepted */
	assert_null(img_registry_base_url("docker.io", "http://localhost:1@deb.debian.org", &err));
	assert_null(img_registry_base_url("docker.io", "http://127.0.0.1:1@example.com/v2", &err));
	assert_null(img_registry_base_url("docker.io", "https://user@mirror.example.com", &err));
	assert_null(img_registry_base_url("docker.io", "http://127.0.0.1?@example.com", &err));
	assert_null(img_registry_base_url("docker.io", "http://127.0.0.1#@example.com", &err));
	assert_null(img_registry_base_url("docker.io", "http://127.0.0.1\\@example.com", &err));
	u = img_registry_base_url("docker.io", "https://mirror.example.com:8443/dockerhub/", &err);
	assert_string_equal(u, "https://mirror.example.com:8443/dockerhub");
	free(u);
	u = img_registry_base_url("docker.io", "https://mirror.example.com", &err);
	assert_string_equal(u, "https://mirror.example.com");
	free(u);
}

static void test_default_name(void **state)
{
	char *n;
	n = img_import_default_name("node:22", "x:1", "/a/b.tar", NULL);
	assert_string_equal(n, "docker.io/library/node:22");
	free(n);
	n = img_import_default_name(NULL, "busybox:latest", "/a/b.tar", NULL);
	assert_string_equal(n, "docker.io/library/busybox:latest");
	free(n);
	n = img_import_default_name(NULL, NULL, "/a/My_Image.oci.tar", "v1");
	assert_string_equal(n, "localhost/my-image:v1");
	free(n);
	n = img_import_default_name(NULL, NULL, "/a/layout/", NULL);
	assert_non_null(n);
	free(n);
	assert_null(img_import_default_name("Bad Name", NULL, "/a/b.tar", NULL));
}

static void test_apt_hosts(void **state)
{
	static const char text[] =
		"# deb http://commented.example/debian bookworm main\n"
		"deb [signed-by=/k.gpg] http://deb.debian.org/debian bookworm main\n"
		"deb-src https://User@Mirror.Example.com:8080/debian bookworm main # trailing\n"
		"deb http://deb.debian.org/debian bookworm-updates main\n"
		"deb http://[2001:db8::1]/debian bookworm main\n"
		"deb file:/srv/local bookworm main\n"
		"Types: deb\n"
		"URIs: http://security.debian.org/debian-security https://second.example\n"
		"Suites: bookworm-security\n"
		"X-Note: http://not-a-source.example/\n"
		"deb http://bad_name!.example/ x\n"
		"URIs:";
	_cleanup_strv_ char **h = img_apt_hosts_parse(text, strlen(text), NULL);
	assert_int_equal(strv_len(h), 4);
	assert_string_equal(h[0], "deb.debian.org");
	assert_string_equal(h[1], "mirror.example.com");
	assert_string_equal(h[2], "security.debian.org");
	assert_string_equal(h[3], "second.example");
	/* appends to what it is given, each name once */
	static const char more[] = "deb http://deb.debian.org/x y\ndeb http://new.example/ z";
	h = img_apt_hosts_parse(more, strlen(more), h);
	assert_int_equal(strv_len(h), 5);
	assert_string_equal(h[4], "new.example");
	/* a NUL inside a name refuses the name (found by fuzz-apt-sources) */
	static const char nul[] = "deb http://a\0b.example/ x\ndeb http://x@\0y/ z";
	h = img_apt_hosts_parse(nul, sizeof(nul) - 1, h);
	assert_int_equal(strv_len(h), 5);
}

static int put_text(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd_write_all(fd, text, strlen(text));
}

/* An image's apt sources are read inside its tree: a link to a host directory reads the
 * tree's own path, a FIFO (which would wait for a writer) and a device are skipped. */
static void test_apt_sources_stay_in_the_tree(void **state)
{
	(void)state;
	_cleanup_free_ char *d = tmp_home();
	_cleanup_free_ char *host = xasprintf("%s/hostapt", d), *tree = xasprintf("%s/tree", d);
	_cleanup_free_ char *hostlist = xasprintf("%s/sources.list", host);
	assert_int_equal(mkdir_p(host, 0755), 0);
	assert_int_equal(put_text(hostlist, "deb http://secret.corp.example/ x main\n"), 0);
	_cleanup_free_ char *etc = xasprintf("%s/etc", tree), *apt = xasprintf("%s/etc/apt", tree);
	assert_int_equal(mkdir_p(etc, 0755), 0);
	assert_int_equal(symlink(host, apt), 0); /* absolute: the host's directory */
	_cleanup_strv_ char **h = img_apt_source_hosts(tree);
	assert_int_equal(strv_len(h), 0);
	/* the same name inside the tree is what counts */
	_cleanup_free_ char *inside = xasprintf("%s%s", tree, host);
	assert_int_equal(mkdir_p(inside, 0755), 0);
	_cleanup_free_ char *inlist = xasprintf("%s/sources.list", inside);
	assert_int_equal(put_text(inlist, "deb http://tree.example/ x main\n"), 0);
	_cleanup_free_ char *listd = xasprintf("%s/sources.list.d", inside);
	assert_int_equal(mkdir_p(listd, 0755), 0);
	_cleanup_free_ char *fifo = xasprintf("%s/pipe.list", listd), *dev = xasprintf("%s/null.list", listd);
	_cleanup_free_ char *lnk = xasprintf("%s/stdin.list", listd);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	assert_int_equal(symlink("/dev/null", dev), 0);
	assert_int_equal(symlink("/proc/self/fd/0", lnk), 0);
	strv_free(h);
	h = img_apt_source_hosts(tree);
	assert_int_equal(strv_len(h), 1);
	assert_string_equal(h[0], "tree.example");
	assert_int_equal(rm_rf(d), 0);
}

/* The store is its owner's only, whoever made its directory and however open they left it:
 * host root's trees keep set-user-ID files. */
static void test_store_private(void **state)
{
	(void)state;
	_cleanup_free_ char *home = tmp_home();
	_cleanup_free_ char *dir = xasprintf("%s/images", home);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	struct img_store *s = NULL;
	pd_err err = {0};
	assert_int_equal(img_store_open(home, IMG_LOCK_SHARED, &s, &err), 0);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	img_store_close(s);
	rm_rf(home);
}

/* A store directory someone else owns is refused even when it is closed to others (0700):
 * its owner could open it up again or plant a symlink that root would follow. */
static void test_store_of_another_uid_refused(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* only root can hand a directory to another uid */
	_cleanup_free_ char *home = tmp_home();
	_cleanup_free_ char *dir = xasprintf("%s/images", home);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chown(dir, 4242, 4242), 0);
	struct img_store *s = NULL;
	pd_err err = {0};
	assert_int_equal(img_store_open(home, IMG_LOCK_SHARED, &s, &err), -EPERM);
	assert_null(s);
	assert_non_null(strstr(err.msg, "belongs to uid 4242"));
	/* nothing was made inside it */
	_cleanup_free_ char *tmp = xasprintf("%s/tmp", dir);
	assert_int_equal(access(tmp, F_OK), -1);
	rm_rf(home);
}

static void test_vmdisk_size(void **state)
{
	assert_int_equal(img_vmdisk_size(0), 2ULL << 30);
	assert_int_equal(img_vmdisk_size(100ULL << 20), 2ULL << 30);
	assert_int_equal(img_vmdisk_size(600ULL << 20), 2ULL * (600ULL << 20) + (1ULL << 30) + (0));
	assert_int_equal(img_vmdisk_size((600ULL << 20) + 1) % (1ULL << 20), 0);
	assert_int_equal(img_vmdisk_size(1ULL << 40), 129ULL << 30);
}

/* A clone shares files by inode, has its own directories (modes, attributes), and a layer
 * applied onto it never changes the source (tree_clone.h). */
static void test_tree_clone(void **state)
{
	char base[] = "/var/tmp/test-clone.XXXXXX";
	assert_non_null(mkdtemp(base));
	char p[256];
	snprintf(p, sizeof(p), "%s/src", base);
	assert_int_equal(mkdir(p, 0755), 0);
	int src = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/dst", base);
	assert_int_equal(mkdir(p, 0755), 0);
	int dst = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(src >= 0 && dst >= 0);
	assert_int_equal(mkdirat(src, "etc", 0750), 0);
	assert_int_equal(write_file_atomic_at(src, "etc/conf", "base\n", 5, 0644), 0);
	assert_int_equal(symlinkat("conf", src, "etc/link"), 0);
	snprintf(p, sizeof(p), "%s/src/etc", base);
	assert_int_equal(setxattr(p, "user.mark", "d", 1, 0), 0);
	assert_int_equal(fchmodat(src, "etc", 0750, 0), 0);
	uint64_t n = 0;
	pd_err err = {0};
	assert_int_equal(img_tree_clone(src, dst, &n, &err), 0);
	assert_int_equal(n, 3);
	struct stat a, b;
	assert_int_equal(fstatat(src, "etc/conf", &a, 0), 0);
	assert_int_equal(fstatat(dst, "etc/conf", &b, 0), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(fstatat(src, "etc", &a, 0), 0);
	assert_int_equal(fstatat(dst, "etc", &b, 0), 0);
	assert_int_not_equal(a.st_ino, b.st_ino);
	assert_int_equal(b.st_mode & 07777, 0750);
	char v[4] = {0};
	snprintf(p, sizeof(p), "%s/dst/etc", base);
	assert_int_equal(getxattr(p, "user.mark", v, sizeof(v)), 1);
	char t[8] = {0};
	assert_int_equal(readlinkat(dst, "etc/link", t, sizeof(t) - 1), 4);
	/* a layer replacing etc/conf on the clone leaves the source's file as it was */
	struct archive *w = archive_write_new();
	char tar[8192];
	size_t used = 0;
	archive_write_set_format_pax_restricted(w);
	assert_int_equal(archive_write_open_memory(w, tar, sizeof(tar), &used), ARCHIVE_OK);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "etc/conf");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, 4);
	assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
	assert_int_equal(archive_write_data(w, "new\n", 4), 4);
	archive_entry_free(e);
	archive_write_close(w);
	archive_write_free(w);
	struct layer_options o;
	layer_options_default(&o);
	o.privileged = false;
	assert_int_equal(layer_apply_buffer(dst, tar, used, &o, NULL, &err), 0);
	_cleanup_free_ char *sb = NULL, *db = NULL;
	size_t len;
	assert_int_equal(read_file_at(src, "etc/conf", 64, &sb, &len), 0);
	assert_int_equal(read_file_at(dst, "etc/conf", 64, &db, &len), 0);
	assert_string_equal(sb, "base\n");
	assert_string_equal(db, "new\n");
	close(src);
	close(dst);
	rm_rf(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blob_verified),
		cmocka_unit_test(test_record_json),
		cmocka_unit_test(test_record_find),
		cmocka_unit_test(test_gc),
		cmocka_unit_test(test_gc_grace),
		cmocka_unit_test(test_vmdisk_not_through_symlinks),
		cmocka_unit_test(test_gc_symlink_in_store_not_followed),
		cmocka_unit_test(test_store_paths_not_through_symlinks),
		cmocka_unit_test(test_store_blob_fifo_refused),
		cmocka_unit_test(test_import_layout_fifo_and_symlink_refused),
		cmocka_unit_test(test_base_url),
		cmocka_unit_test(test_default_name),
		cmocka_unit_test(test_apt_hosts),
		cmocka_unit_test(test_apt_sources_stay_in_the_tree),
		cmocka_unit_test(test_store_private),
		cmocka_unit_test(test_store_of_another_uid_refused),
		cmocka_unit_test(test_vmdisk_size),
		cmocka_unit_test(test_tree_clone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
