/* test-vmboot.c — the pure parts of the guest's stage 1 (src/guest/vmboot.c): the kernel
 * command line and the control-port choice. (Lives here because src/guest's tests belong to
 * paddock-init's own module.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "guest/vmboot.h"
#include "util/util.h"

static void test_cmdline_defaults(void **state)
{
	struct vmboot_cmdline c;
	vmboot_parse_cmdline("console=ttyS0 quiet panic=-1\n", &c);
	assert_false(c.probe);
	assert_false(c.net);
	assert_string_equal(c.root, "vda");
	assert_string_equal(c.hostname, "");
	assert_int_equal(c.agent_uid, 1000);
	assert_int_equal(c.agent_gid, 1000);
}

static void test_cmdline_keys(void **state)
{
	struct vmboot_cmdline c;
	vmboot_parse_cmdline("console=ttyS0 paddock.root=vdb paddock.host=my_box.1 paddock.agent=1001:1002 "
			     "paddock.probe=1 paddock.debug=1 paddock.net=1 paddock.pids=64\n", &c);
	assert_int_equal(c.pids, 64);
	assert_true(c.probe);
	assert_true(c.net);
	assert_true(c.debug);
	assert_string_equal(c.root, "vdb");
	assert_string_equal(c.hostname, "my_box.1");
	assert_int_equal(c.agent_uid, 1001);
	assert_int_equal(c.agent_gid, 1002);
}

static void test_cmdline_rejects(void **state)
{
	struct vmboot_cmdline c;
	/* bad values are ignored: defaults stay */
	vmboot_parse_cmdline("paddock.root=../sda paddock.host=-x paddock.agent=0:0 paddock.probe=yes "
			     "paddock.hostx=a paddock.host=" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
			     "paddock.agent=5:6:7 paddock.root paddock.pids=7 paddock.pids=12x", &c);
	assert_false(c.probe);
	assert_int_equal(c.pids, 0);
	assert_string_equal(c.root, "vda");
	assert_string_equal(c.hostname, "");
	assert_int_equal(c.agent_uid, 1000);
	vmboot_parse_cmdline("", &c);
	assert_string_equal(c.root, "vda");
}

static void test_pick_port(void **state)
{
	const char *names[] = {"vport0p0", "vport0p1", "vport1p1"};
	const char *contents[] = {"other\n", "paddock.ctl\n", "paddock.ctl"};
	assert_int_equal(vmboot_pick_port(names, contents, 3), 1);
	const char *bad_contents[] = {"paddock.ctlx\n", "paddock.ct\n", "xpaddock.ctl"};
	assert_int_equal(vmboot_pick_port(names, bad_contents, 3), -1);
	const char *bad_names[] = {"hvc0"};
	const char *c1[] = {"paddock.ctl"};
	assert_int_equal(vmboot_pick_port(bad_names, c1, 1), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmdline_defaults),
		cmocka_unit_test(test_cmdline_keys),
		cmocka_unit_test(test_cmdline_rejects),
		cmocka_unit_test(test_pick_port),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
