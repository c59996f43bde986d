/* test-initramfs.c — the initramfs content list and the newc writer (read back with a small
 * independent reader). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "guest/vmboot.h"
#include "image/initramfs.h"
#include "util/fdio.h"

struct ent {
	char name[256];
	uint32_t mode, size, rmaj, rmin, nlink;
	const uint8_t *data;
};

static uint32_t hex8(const uint8_t *p)
{
	char s[9];
	memcpy(s, p, 8);
	s[8] = '\0';
	return (uint32_t)strtoul(s, NULL, 16);
}

/* Parses a newc archive; returns the number of entries before the trailer. */
static size_t read_newc(const uint8_t *b, size_t len, struct ent *v, size_t max)
{
	size_t pos = 0, n = 0;
	for (;;) {
		assert_true(pos + 110 <= len);
		assert_memory_equal(b + pos, "070701", 6);
		const uint8_t *h = b + pos + 6;
		uint32_t namesize = hex8(h + 11 * 8), size = hex8(h + 6 * 8);
		const char *name = (const char *)b + pos + 110;
		assert_int_equal(name[namesize - 1], '\0');
		pos = (pos + 110 + namesize + 3) & ~(size_t)3;
		if (streq(name, "TRAILER!!!"))
			break;
		assert_true(n < max);
		snprintf(v[n].name, sizeof(v[n].name), "%s", name);
		v[n].mode = hex8(h + 8);
		v[n].nlink = hex8(h + 4 * 8);
		v[n].size = size;
		v[n].rmaj = hex8(h + 9 * 8);
		v[n].rmin = hex8(h + 10 * 8);
		v[n].data = b + pos;
		pos = (pos + size + 3) & ~(size_t)3;
		n++;
	}
	assert_int_equal(pos, len);
	return n;
}

static const struct ent *find(const struct ent *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (streq(v[i].name, name))
			return &v[i];
	return NULL;
}

static void test_plan(void **state)
{
	static const uint8_t init[] = "\177ELF-fake";
	char *mods[] = {"virtio_ring", "virtio", "virtio_mmio", NULL};
	struct initramfs_plan p;
	initramfs_plan_build(init, sizeof(init), "/cache/k/modules", mods, &p);
	assert_string_equal(p.order, "virtio_ring\nvirtio\nvirtio_mmio\n");
	bool console = false, initf = false, order = false, newroot = false;
	size_t nmods = 0;
	for (size_t i = 0; i < p.n; i++) {
		const struct initramfs_entry *e = &p.v[i];
		assert_true(e->path[0] != '/');
		if (streq(e->path, "dev/console"))
			console = e->kind == INITRAMFS_CHARDEV && e->rmajor == 5 && e->rminor == 1;
		if (streq(e->path, "init"))
			initf = e->kind == INITRAMFS_FILE && e->data == init && e->perm == 0755;
		if (streq(e->path, &VMBOOT_ORDER_FILE[1]))
			order = e->data == (const uint8_t *)p.order;
		if (streq(e->path, &VMBOOT_NEWROOT[1]))
			newroot = e->kind == INITRAMFS_DIR;
		if (e->src) {
			assert_string_equal(e->src + strlen("/cache/k/modules/"), e->path + strlen("lib/modules/"));
			nmods++;
		}
	}
	assert_true(console && initf && order && newroot);
	assert_int_equal(nmods, 3);
	/* modules are added in load order */
	for (size_t i = 0, k = 0; i < p.n; i++)
		if (p.v[i].src) {
			char *want = xasprintf("lib/modules/%s.ko", mods[k++]);
			assert_string_equal(p.v[i].path, want);
			free(want);
		}
	initramfs_plan_free(&p);
}

static void test_newc_roundtrip(void **state)
{
	struct cpio_buf b = {0};
	struct initramfs_entry d = {.kind = INITRAMFS_DIR, .path = "dev", .perm = 0755};
	struct initramfs_entry c = {.kind = INITRAMFS_CHARDEV, .path = "dev/console", .perm = 0600, .rmajor = 5, .rminor = 1};
	struct initramfs_entry f = {.kind = INITRAMFS_FILE, .path = "init", .perm = 0755};
	struct initramfs_entry z = {.kind = INITRAMFS_FILE, .path = "empty", .perm = 0644};
	assert_int_equal(cpio_add(&b, &d, NULL, 0), 0);
	assert_int_equal(cpio_add(&b, &c, NULL, 0), 0);
	assert_int_equal(cpio_add(&b, &f, (const uint8_t *)"hello", 5), 0);
	assert_int_equal(cpio_add(&b, &z, NULL, 0), 0);
	cpio_finish(&b);
	assert_int_equal(b.len % 4, 0);
	struct ent v[8];
	size_t n = read_newc(b.data, b.len, v, 8);
	assert_int_equal(n, 4);
	assert_int_equal(v[0].mode, S_IFDIR | 0755);
	assert_int_equal(v[0].nlink, 2);
	assert_int_equal(v[1].mode, S_IFCHR | 0600);
	assert_int_equal(v[1].rmaj, 5);
	assert_int_equal(v[1].rmin, 1);
	assert_int_equal(v[2].mode, S_IFREG | 0755);
	assert_int_equal(v[2].size, 5);
	assert_memory_equal(v[2].data, "hello", 5);
	assert_int_equal(v[3].size, 0);
	cpio_buf_free(&b);
}

static void test_newc_rejects(void **state)
{
	struct cpio_buf b = {0};
	struct initramfs_entry abs = {.kind = INITRAMFS_FILE, .path = "/init"};
	struct initramfs_entry bad = {.kind = INITRAMFS_MAX, .path = "x"};
	assert_int_equal(cpio_add(&b, &abs, NULL, 0), -EINVAL);
	assert_int_equal(cpio_add(&b, &bad, NULL, 0), -EINVAL);
	assert_int_equal(b.len, 0);
	cpio_buf_free(&b);
}

static void test_build_from_files(void **state)
{
	char dir[] = "/tmp/test-initramfs-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *p1 = xasprintf("%s/a.ko", dir), *p2 = xasprintf("%s/b.ko", dir);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, p1, "AAAA1", 5, 0644), 0);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, p2, "BB", 2, 0644), 0);
	char *mods[] = {"a", "b", NULL};
	struct initramfs_plan p;
	initramfs_plan_build((const uint8_t *)"INIT", 4, dir, mods, &p);
	struct cpio_buf b;
	pd_err err = {0};
	assert_int_equal(initramfs_build(&p, &b, &err), 0);
	struct ent v[32];
	size_t n = read_newc(b.data, b.len, v, 32);
	assert_int_equal(n, p.n);
	const struct ent *a = find(v, n, "lib/modules/a.ko"), *o = find(v, n, "lib/modules/paddock.order");
	assert_non_null(a);
	assert_memory_equal(a->data, "AAAA1", 5);
	assert_non_null(o);
	assert_memory_equal(o->data, "a\nb\n", 4);
	/* the same inputs give the same bytes */
	struct cpio_buf b2;
	assert_int_equal(initramfs_build(&p, &b2, &err), 0);
	assert_int_equal(b.len, b2.len);
	assert_memory_equal(b.data, b2.data, b.len);
	cpio_buf_free(&b2);
	cpio_buf_free(&b);
	/* a missing module file is an error naming it */
	unlink(p2);
	assert_int_equal(initramfs_build(&p, &b, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "b.ko"));
	initramfs_plan_free(&p);
	unlink(p1);
	rmdir(dir);
	free(p1);
	free(p2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_newc_roundtrip),
		cmocka_unit_test(test_newc_rejects),
		cmocka_unit_test(test_build_from_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
