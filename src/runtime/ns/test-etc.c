/* test-etc.c — the list of host /etc entries and the generated files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runtime/ns/ns_etc.h"

static void test_entries(void **state)
{
	(void)state;
	static const char *const never[] = {"shadow", "gshadow", "sudoers", "sudoers.d", "ssh", "ld.so.preload",
					    "environment", "gitconfig", "ssl/private", "ssl", "passwd", "group",
					    "subuid", "subgid", "machine-id", "security", "pam.d", "crontab"};
	size_t n;
	const struct ns_etc_entry *e = ns_etc_entries(&n);
	assert_true(n > 10);
	for (size_t i = 0; i < n; i++) {
		assert_false(ns_etc_generated(e[i].name));
		assert_int_equal(e[i].name[0] == '/', 0);
		assert_null(strstr(e[i].name, ".."));
		const char *slash = strchr(e[i].name, '/');
		assert_true(!slash || !strchr(slash + 1, '/')); /* at most one level */
		for (size_t j = 0; j < ARRAY_SIZE(never); j++)
			assert_string_not_equal(e[i].name, never[j]);
	}
	bool ldcache = false;
	for (size_t i = 0; i < n; i++)
		ldcache |= streq(e[i].name, "ld.so.cache") && e[i].kind == NS_ETC_COPY;
	assert_true(ldcache);
}

static const struct ns_file *get(const struct ns_file *f, const char *name)
{
	for (size_t i = 0; i < NS_ETC_N_GENERATED; i++)
		if (streq(f[i].name, name))
			return &f[i];
	return NULL;
}

static void test_generated(void **state)
{
	(void)state;
	struct ns_file f[NS_ETC_N_GENERATED];
	ns_etc_generate("box-1", "/bin/bash", f);
	for (size_t i = 0; i < NS_ETC_N_GENERATED; i++) {
		assert_true(ns_etc_generated(f[i].name));
		assert_int_equal(f[i].len, strlen(f[i].data));
		assert_int_equal(f[i].mode, 0644);
	}
	assert_non_null(strstr(get(f, "passwd")->data, "\nagent:x:1000:1000:agent:/home/agent:/bin/bash\n"));
	assert_true(startswith(get(f, "passwd")->data, "root:x:0:0:root:/root:/bin/bash\n"));
	assert_non_null(strstr(get(f, "passwd")->data, "nobody:x:65534:65534:"));
	assert_non_null(strstr(get(f, "group")->data, "agent:x:1000:\n"));
	assert_non_null(strstr(get(f, "group")->data, "tty:x:5:\n"));
	assert_string_equal(get(f, "hostname")->data, "box-1\n");
	assert_true(startswith(get(f, "hosts")->data, "127.0.0.1\tlocalhost box-1\n"));
	assert_non_null(strstr(get(f, "nsswitch.conf")->data, "passwd: files\n"));
	assert_null(strstr(get(f, "nsswitch.conf")->data, "systemd"));
	assert_null(strstr(get(f, "nsswitch.conf")->data, "sss"));
	assert_null(strstr(get(f, "resolv.conf")->data, "nameserver"));
	assert_null(get(f, "shadow"));
	ns_etc_files_free(f, NS_ETC_N_GENERATED);
	ns_etc_generate("b", "/bin/sh", f);
	assert_non_null(strstr(get(f, "passwd")->data, "/home/agent:/bin/sh\n"));
	ns_etc_files_free(f, NS_ETC_N_GENERATED);
	ns_etc_files_free(NULL, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_generated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
