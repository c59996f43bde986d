/* initramfs.h — the vm guest's initramfs: paddock-init as /init plus the kernel modules it
 * loads before mounting the box's disk (see src/guest/vmboot.h for the layout contract).
 *
 * Three layers: the content list (pure: which entries, from the init bytes and the module
 * order), the newc cpio writer (pure: appends entries to a memory buffer), and the cache
 * (writes the archive once per (kernel, paddock-init) pair into the kernel's cache dir).
 * The archive is not compressed: the kernel unpacks a few MB of plain cpio faster than it
 * would decompress anything, which matters most under TCG. */
#pragma once

#include "image/kernel_cache.h"

enum initramfs_kind {
	INITRAMFS_INVALID = 0,
	INITRAMFS_DIR,
	INITRAMFS_FILE,
	INITRAMFS_CHARDEV,
	INITRAMFS_MAX,
};

struct initramfs_entry {
	enum initramfs_kind kind;
	char *path;            /* inside the archive, no leading '/' */
	unsigned perm;         /* permission bits */
	const uint8_t *data;   /* FILE: bytes held by the caller, or NULL to read src */
	size_t len;
	char *src;             /* FILE: host file to read when data is NULL */
	unsigned rmajor, rminor; /* CHARDEV */
};

struct initramfs_plan {
	struct initramfs_entry *v;
	size_t n;
	char *order; /* the text of VMBOOT_ORDER_FILE (v points into it) */
};

/* The content list: dev/console, the mount points, /init (the given bytes), and each module
 * of `modules` (in load order) read from moddir/<name>.ko (its signature stripped when the
 * archive is built: see kmod_strip_signature). */
void initramfs_plan_build(const uint8_t *init, size_t init_len, const char *moddir, char *const *modules,
			  struct initramfs_plan *ret);
void initramfs_plan_free(struct initramfs_plan *p);

/* newc ("070701") writer over a growable buffer. Entries are numbered in order, owned by
 * root, mtime 0 (reproducible: the same inputs give the same bytes). */
struct cpio_buf {
	uint8_t *data;
	size_t len, cap;
	uint32_t ino;
};
void cpio_buf_free(struct cpio_buf *b);
/* Appends one entry whose file bytes are data[0..len) (ignored unless FILE). -ENAMETOOLONG
 * for a path over PATH_MAX, -EFBIG for a file over 4 GiB (newc's 32-bit size field). */
int cpio_add(struct cpio_buf *b, const struct initramfs_entry *e, const uint8_t *data, size_t len);
void cpio_finish(struct cpio_buf *b); /* the TRAILER!!! entry */

/* Builds the whole archive in memory (reading src files). */
int initramfs_build(const struct initramfs_plan *p, struct cpio_buf *ret, pd_err *err);

/* The cached archive for this kernel and this paddock-init:
 * <kernel dir>/initramfs-<sha256(init, modules) prefix>.cpio, written when missing. When the
 * kernel's cache is not writable (a cache shared read-only with ordinary users) and the archive
 * is not there, it is written to fallback_dir instead (NULL: no fallback). */
int initramfs_ensure(const struct kernel_cache *k, const char *fallback_dir, const uint8_t *init, size_t init_len,
		     char **ret_path,
		     pd_err *err);
