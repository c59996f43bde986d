/* test-vm-template.c — templates of booted guests: the key (every input counts), the identity
 * of the files behind it, taking a template for a box, and pruning to the most recently used. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "runtime/vm/vm_template.h"
#include "util/fdio.h"

static void test_key(void **state)
{
	char *a[] = {"qemu", "-m", "512M", "-append", "x paddock.template=1", NULL};
	char *b[] = {"qemu", "-m", "1024M", "-append", "x paddock.template=1", NULL};
	/* the NUL between arguments counts: "-m 512M" is not "-m5 12M" */
	char *c[] = {"qemu", "-m5", "12M", "-append", "x paddock.template=1", NULL};
	char *ka = vm_template_key(a, "id 1\n"), *ka2 = vm_template_key(a, "id 1\n");
	char *kb = vm_template_key(b, "id 1\n"), *kc = vm_template_key(c, "id 1\n"), *kid = vm_template_key(a, "id 2\n");
	assert_int_equal(strlen(ka), 32);
	assert_int_equal(strspn(ka, "0123456789abcdef"), 32);
	assert_string_equal(ka, ka2);
	assert_string_not_equal(ka, kb);
	assert_string_not_equal(ka, kc);
	assert_string_not_equal(ka, kid);
	free(ka), free(ka2), free(kb), free(kc), free(kid);
}

static char *tmpdir(void)
{
	char t[] = "/tmp/pd-vmtpl.XXXXXX";
	assert_non_null(mkdtemp(t));
	return xstrdup(t);
}

static void put(const char *dir, const char *name, const char *text, int64_t mtime)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, p, text, strlen(text), 0600), 0);
	struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static bool exists(const char *dir, const char *name)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* A change to any file behind a template (a new kernel, another QEMU, a rebuilt base) changes
 * the identity, so a saved guest is never loaded against other files. */
static void test_identity(void **state)
{
	_cleanup_free_ char *d = tmpdir();
	put(d, "kernel", "k1", 1000);
	_cleanup_free_ char *k = xasprintf("%s/kernel", d), *gone = xasprintf("%s/none", d);
	const char *files[] = {k, gone};
	_cleanup_free_ char *id1 = vm_template_identity(files, 2);
	assert_non_null(strstr(id1, "flags"));
	assert_non_null(strstr(id1, " missing\n"));
	put(d, "kernel", "k2", 1000); /* same mtime, new inode (atomic replace) */
	_cleanup_free_ char *id2 = vm_template_identity(files, 2);
	assert_string_not_equal(id1, id2);
	rm_rf(d);
}

static void test_take(void **state)
{
	_cleanup_free_ char *d = tmpdir();
	struct vm_template t;
	vm_template_init(&t, d, "0123456789abcdef0123456789abcdef");
	assert_false(vm_template_ready(&t));
	put(d, "0123456789abcdef0123456789abcdef.qcow2", "disk bytes", 1000);
	assert_false(vm_template_ready(&t));
	put(d, "0123456789abcdef0123456789abcdef.state", "state", 1000);
	assert_true(vm_template_ready(&t));
	_cleanup_free_ char *box = xasprintf("%s/box.qcow2", d);
	int fd = -1;
	assert_int_equal(vm_template_take(&t, box, &fd, NULL), 0);
	char buf[16] = {0};
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 5);
	assert_string_equal(buf, "state");
	close(fd);
	_cleanup_free_ char *copy = NULL;
	assert_int_equal(read_file_at(AT_FDCWD, box, 1024, &copy, NULL), 0);
	assert_string_equal(copy, "disk bytes");
	struct stat st;
	assert_int_equal(stat(t.state, &st), 0);
	assert_true(st.st_mtime > 1000); /* taking it marks it used */
	assert_int_equal(stat(box, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	vm_template_reject(&t);
	assert_false(vm_template_ready(&t));
	assert_int_equal(vm_template_take(&t, box, &fd, NULL), -ENOENT);
	vm_template_done(&t);
	rm_rf(d);
}

static void test_enabled(void **state)
{
	unsetenv("PADDOCK_VM_TEMPLATE");
	assert_false(vm_template_enabled()); /* no builder named: a program that cannot make them */
	vm_template_enable("/proc/self/exe");
	assert_true(vm_template_enabled());
	setenv("PADDOCK_VM_TEMPLATE", "0", 1);
	assert_false(vm_template_enabled());
	unsetenv("PADDOCK_VM_TEMPLATE");
	vm_template_enable(NULL);
}

static void test_prune(void **state)
{
	_cleanup_free_ char *d = tmpdir();
	for (int i = 0; i < 10; i++) {
		char key[33], name[64];
		snprintf(key, sizeof(key), "%032x", i);
		snprintf(name, sizeof(name), "%s.state", key);
		put(d, name, "s", 1000 + i);
		snprintf(name, sizeof(name), "%s.qcow2", key);
		put(d, name, "q", 1000);
		snprintf(name, sizeof(name), "%s.state.lock", key);
		put(d, name, "", 1000);
	}
	put(d, "unrelated.state", "x", 1);
	put(d, "00000000000000000000000000000063.qcow2.tmp", "x", 1); /* a build under way */
	vm_template_prune(d, 8);
	for (int i = 0; i < 10; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%032x.state", i);
		assert_int_equal(exists(d, name), i >= 2);
		snprintf(name, sizeof(name), "%032x.qcow2", i);
		assert_int_equal(exists(d, name), i >= 2);
		snprintf(name, sizeof(name), "%032x.state.lock", i);
		assert_int_equal(exists(d, name), i >= 2);
	}
	assert_true(exists(d, "unrelated.state"));
	assert_true(exists(d, "00000000000000000000000000000063.qcow2.tmp"));
	rm_rf(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_enabled),
		cmocka_unit_test(test_prune),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
