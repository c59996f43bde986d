/* test-cli.c — unit tests for the CLI's option value parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/wsnap.h"
#include "util/fdio.h"

static void test_size(void **state)
{
	uint64_t v;
	assert_int_equal(cli_parse_size("512M", &v), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(cli_parse_size("2G", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(cli_parse_size("2GiB", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(cli_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(cli_parse_size("-1", &v), -EINVAL);
	assert_int_equal(cli_parse_size("", &v), -EINVAL);
	assert_int_equal(cli_parse_size("1X", &v), -EINVAL);
	assert_int_equal(cli_parse_size("99999999999999T", &v), -ERANGE);
	assert_int_equal(cli_parse_size("99999999999999999999G", &v), -ERANGE);
	assert_int_equal(cli_parse_size("5Mx", &v), -EINVAL);
	/* decimal fractions of a unit */
	assert_int_equal(cli_parse_size("1.5G", &v), 0);
	assert_true(v == (UINT64_C(3) << 29));
	assert_int_equal(cli_parse_size("0.25M", &v), 0);
	assert_true(v == (UINT64_C(1) << 18));
	assert_int_equal(cli_parse_size("1.5", &v), -EINVAL); /* no fraction of a byte */
	assert_int_equal(cli_parse_size("1.G", &v), -EINVAL);
	assert_int_equal(cli_parse_size("1.5.5G", &v), -EINVAL);
}

static void test_cpus(void **state)
{
	uint32_t m;
	assert_int_equal(cli_parse_cpus("1.5", &m), 0);
	assert_int_equal(m, 1500);
	assert_int_equal(cli_parse_cpus("0", &m), -EINVAL);
	assert_int_equal(cli_parse_cpus("-2", &m), -EINVAL);
	assert_int_equal(cli_parse_cpus("nan", &m), -EINVAL);
	assert_int_equal(cli_parse_cpus("2x", &m), -EINVAL);
	assert_int_equal(cli_parse_cpus("1e9", &m), -ERANGE);
}

static void test_env(void **state)
{
	char **env = NULL;
	assert_int_equal(cli_env_arg("A=1", &env), 0);
	setenv("PD_TEST_FWD", "host value", 1);
	assert_int_equal(cli_env_arg("PD_TEST_FWD", &env), 0);
	unsetenv("PD_TEST_UNSET");
	assert_int_equal(cli_env_arg("PD_TEST_UNSET", &env), 0);
	assert_int_equal(cli_env_arg("=x", &env), -EINVAL);
	assert_int_equal(cli_env_arg("1A=x", &env), -EINVAL);
	assert_int_equal(cli_env_arg("A-B=x", &env), -EINVAL);
	assert_int_equal(strv_len(env), 2);
	assert_string_equal(env[0], "A=1");
	assert_string_equal(env[1], "PD_TEST_FWD=host value");
	strv_free(env);
}

static void test_bind(void **state)
{
	struct box_bind b;
	pd_err err = {0};
	assert_int_equal(cli_parse_bind("/tmp:/data:ro", &b, &err), 0);
	assert_string_equal(b.host, "/tmp");
	assert_string_equal(b.box, "/data");
	assert_true(b.readonly);
	free(b.host);
	free(b.box);
	assert_int_equal(cli_parse_bind("/tmp:/data", &b, &err), 0);
	assert_false(b.readonly);
	free(b.host);
	free(b.box);
	assert_int_equal(cli_parse_bind("/tmp:/proc/x", &b, &err), -EINVAL);
	assert_int_equal(cli_parse_bind("/tmp:/dev", &b, &err), -EINVAL);
	assert_int_equal(cli_parse_bind("/tmp:/", &b, &err), -EINVAL);
	assert_int_equal(cli_parse_bind("/tmp:relative", &b, &err), -EINVAL);
	assert_int_equal(cli_parse_bind("/tmp:/a/../etc", &b, &err), -EINVAL);
	assert_int_equal(cli_parse_bind("/tmp:/x:rx", &b, &err), -EINVAL);
	assert_int_equal(cli_parse_bind("/nonexistent-pd:/x", &b, &err), -ENOENT);
	assert_int_equal(cli_parse_bind("/tmp", &b, &err), -EINVAL);
}

static void test_names(void **state)
{
	assert_true(box_name_valid("claude-my-project"));
	assert_true(box_name_valid("a"));
	assert_false(box_name_valid(""));
	assert_false(box_name_valid("-x"));
	assert_false(box_name_valid("../x"));
	assert_false(box_name_valid("a/b"));
	assert_false(box_name_valid(".hidden"));
	char big[80];
	memset(big, 'a', sizeof(big) - 1);
	big[79] = 0;
	assert_false(box_name_valid(big));
}

/* the copied-mounts list: records found by box path, a missing one named, a torn last record
 * (a crash while it was written) ignored */
static void test_mounts_list(void **state)
{
	(void)state;
	char dir[] = "/tmp/paddock-test-mounts-XXXXXX";
	assert_non_null(mkdtemp(dir));
	pd_err err = {0};
	assert_int_equal(wsnap_mount_record(dir, "/home/agent/a", "/host/a b", &err), 0);
	assert_int_equal(wsnap_mount_record(dir, "/home/agent/b", "/host/b", &err), 1);
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	int idx = -1;
	char *host = NULL;
	assert_int_equal(wsnap_mount_find(fd, "box", "/home/agent/b", &idx, &host, &err), 0);
	assert_int_equal(idx, 1);
	assert_string_equal(host, "/host/b");
	free(host);
	host = NULL;
	assert_int_equal(wsnap_mount_find(fd, "box", "/home/agent/a", &idx, &host, &err), 0);
	assert_int_equal(idx, 0);
	assert_string_equal(host, "/host/a b");
	free(host);
	host = NULL;
	assert_int_equal(wsnap_mount_find(fd, "box", "/home/agent", &idx, &host, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no copied read-write mount at /home/agent"));
	/* a torn record: its box path is there, its host path's end is not */
	char *mf = xasprintf("%s/%s", dir, WSNAP_MOUNTS);
	int w = open(mf, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(w >= 0);
	assert_int_equal(fd_write_all(w, "/home/agent/c\0/host/c", 21), 0);
	close(w);
	assert_int_equal(wsnap_mount_find(fd, "box", "/home/agent/c", &idx, &host, &err), -ENOENT);
	assert_int_equal(wsnap_mount_find(fd, "box", "/home/agent/b", &idx, &host, &err), 0);
	free(host);
	char *m0 = wsnap_mount_manifest(0);
	assert_string_equal(m0, "mount-0.manifest");
	free(m0);
	close(fd);
	unlink(mf);
	free(mf);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size), cmocka_unit_test(test_cpus), cmocka_unit_test(test_env),
		cmocka_unit_test(test_bind), cmocka_unit_test(test_names), cmocka_unit_test(test_mounts_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
