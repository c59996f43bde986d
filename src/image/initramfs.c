/* initramfs.c — content list, newc cpio writer and cache of the vm guest's initramfs
 * (see initramfs.h). */
#include <fcntl.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <sys/stat.h>

#include "guest/vmboot.h"
#include "image/initramfs.h"
#include "image/kernel_modules.h"
#include "util/fdio.h"

#define MODULE_MAX (16u * 1024u * 1024u)

static void plan_add(struct initramfs_plan *p, struct initramfs_entry e)
{
	p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
	p->v[p->n++] = e;
}

static void plan_dir(struct initramfs_plan *p, const char *path)
{
	plan_add(p, (struct initramfs_entry){.kind = INITRAMFS_DIR, .path = xstrdup(path), .perm = 0755});
}

void initramfs_plan_build(const uint8_t *init, size_t init_len, const char *moddir, char *const *modules,
			  struct initramfs_plan *ret)
{
	struct initramfs_plan p = {0};
	size_t olen = 1;
	for (size_t i = 0; modules[i]; i++)
		olen += strlen(modules[i]) + 1;
	p.order = xcalloc(1, olen);
	for (size_t i = 0; modules[i]; i++)
		strcat(strcat(p.order, modules[i]), "\n");

	static const char *const dirs[] = {"dev", "proc", "sys", "lib", "lib/modules", "newroot"};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		plan_dir(&p, dirs[i]);
	/* The kernel opens /dev/console for init before anything is mounted: without this node
	 * paddock-init would start with no stdin/stdout/stderr. */
	plan_add(&p, (struct initramfs_entry){.kind = INITRAMFS_CHARDEV, .path = xstrdup("dev/console"),
					      .perm = 0600, .rmajor = 5, .rminor = 1});
	plan_add(&p, (struct initramfs_entry){.kind = INITRAMFS_FILE, .path = xstrdup("init"), .perm = 0755,
					      .data = init, .len = init_len});
	for (size_t i = 0; modules[i]; i++)
		plan_add(&p, (struct initramfs_entry){
				     .kind = INITRAMFS_FILE, .perm = 0644,
				     .path = xasprintf("%s/%s.ko", &VMBOOT_MODULES_DIR[1], modules[i]),
				     .src = xasprintf("%s/%s.ko", moddir, modules[i])});
	plan_add(&p, (struct initramfs_entry){.kind = INITRAMFS_FILE, .path = xstrdup(&VMBOOT_ORDER_FILE[1]),
					      .perm = 0644, .data = (const uint8_t *)p.order,
					      .len = strlen(p.order)});
	*ret = p;
}

void initramfs_plan_free(struct initramfs_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].path);
		free(p->v[i].src);
	}
	free(p->v);
	free(p->order);
	*p = (struct initramfs_plan){0};
}

/* ---- newc writer --------------------------------------------------------------------- */

void cpio_buf_free(struct cpio_buf *b)
{
	free(b->data);
	*b = (struct cpio_buf){0};
}

static void buf_put(struct cpio_buf *b, const void *p, size_t n)
{
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 64 * 1024;
		while (cap - b->len < n)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void buf_pad4(struct cpio_buf *b)
{
	static const uint8_t zero[4];
	buf_put(b, zero, (4 - (b->len & 3)) & 3);
}

static uint32_t mode_of(const struct initramfs_entry *e)
{
	static const uint32_t type[INITRAMFS_MAX] = {
		[INITRAMFS_DIR] = S_IFDIR, [INITRAMFS_FILE] = S_IFREG, [INITRAMFS_CHARDEV] = S_IFCHR};
	return type[e->kind] | (e->perm & 07777);
}

static void put_header(struct cpio_buf *b, uint32_t ino, uint32_t mode, uint32_t nlink, uint32_t size,
		       uint32_t rmaj, uint32_t rmin, const char *name)
{
	char hdr[6 + 13 * 8 + 1];
	size_t namesize = strlen(name) + 1;
	/* ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check */
	snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, mode, 0u, 0u,
		 nlink, 0u, size, 0u, 0u, rmaj, rmin, (uint32_t)namesize, 0u);
	buf_put(b, hdr, sizeof(hdr) - 1);
	buf_put(b, name, namesize);
	buf_pad4(b);
}

int cpio_add(struct cpio_buf *b, const struct initramfs_entry *e, const uint8_t *data, size_t len)
{
	if (e->kind <= INITRAMFS_INVALID || e->kind >= INITRAMFS_MAX || !e->path[0] || e->path[0] == '/')
		return -EINVAL;
	if (strlen(e->path) >= PATH_MAX)
		return -ENAMETOOLONG;
	bool file = e->kind == INITRAMFS_FILE;
	if (file && len > UINT32_MAX)
		return -EFBIG;
	bool chr = e->kind == INITRAMFS_CHARDEV;
	put_header(b, ++b->ino, mode_of(e), e->kind == INITRAMFS_DIR ? 2 : 1, file ? (uint32_t)len : 0,
		   chr ? e->rmajor : 0, chr ? e->rminor : 0, e->path);
	if (file && len > 0) {
		buf_put(b, data, len);
		buf_pad4(b);
	}
	return 0;
}

void cpio_finish(struct cpio_buf *b)
{
	put_header(b, 0, 0, 1, 0, 0, 0, "TRAILER!!!");
}

/* ---- building and caching ------------------------------------------------------------ */

static int add_entry(struct cpio_buf *b, const struct initramfs_entry *e, pd_err *err)
{
	_cleanup_free_ char *file = NULL;
	const uint8_t *data = e->data;
	size_t len = e->len;
	if (e->kind == INITRAMFS_FILE && !data) {
		int r = read_file_at(AT_FDCWD, e->src, MODULE_MAX, &file, &len);
		if (r < 0)
			return pd_error(err, r, "cannot read %s", e->src);
		data = (const uint8_t *)file;
		len = kmod_strip_signature(data, len); /* every file read from disk here is a module */
	}
	int r = cpio_add(b, e, data, len);
	return r < 0 ? pd_error(err, r, "cannot add %s to the initramfs", e->path) : 0;
}

int initramfs_build(const struct initramfs_plan *p, struct cpio_buf *ret, pd_err *err)
{
	struct cpio_buf b = {0};
	for (size_t i = 0; i < p->n; i++) {
		int r = add_entry(&b, &p->v[i], err);
		if (r < 0) {
			cpio_buf_free(&b);
			return r;
		}
	}
	cpio_finish(&b);
	*ret = b;
	return 0;
}

/* The cache key: the init bytes and the module list (the kernel dir is per release). */
static char *plan_key(const uint8_t *init, size_t init_len, const char *order)
{
	uint8_t md[SHA256_DIGEST_SIZE];
	struct sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, init_len, init);
	sha256_update(&c, strlen(order), (const uint8_t *)order);
	sha256_digest(&c, sizeof(md), md);
	char *hex = xmalloc(33);
	hex_encode(md, 16, hex);
	return hex;
}

int initramfs_ensure(const struct kernel_cache *k, const char *fallback_dir, const uint8_t *init, size_t init_len,
		     char **ret_path, pd_err *err)
{
	_cleanup_free_ char *moddir = xasprintf("%s/modules", k->dir);
	struct initramfs_plan plan;
	initramfs_plan_build(init, init_len, moddir, k->modules, &plan);
	_cleanup_free_ char *key = plan_key(init, init_len, plan.order);
	_cleanup_free_ char *path = xasprintf("%s/initramfs-%s.cpio", k->dir, key);
	int r = 0;
	if (access(path, R_OK) < 0 && fallback_dir && access(k->dir, W_OK) < 0) {
		free(path);
		path = xasprintf("%s/initramfs-%s.cpio", fallback_dir, key);
		if (mkdir_p(fallback_dir, 0700) < 0)
			r = pd_error(err, errno, "cannot create %s", fallback_dir);
	}
	if (r == 0 && access(path, R_OK) < 0) {
		struct cpio_buf b;
		r = initramfs_build(&plan, &b, err);
		if (r == 0) {
			r = write_file_atomic_at(AT_FDCWD, path, b.data, b.len, 0644);
			if (r < 0)
				pd_error(err, r, "cannot write %s", path);
			cpio_buf_free(&b);
		}
	}
	initramfs_plan_free(&plan);
	if (r == 0)
		*ret_path = TAKE_PTR(path);
	return r;
}
