/* test-vmboot.c — the pure parts of the guest's stage 1 (src/guest/vmboot.c): the kernel
 * command line and the control-port choice. (Lives here because src/guest's tests belong to
 * paddock-init's own module.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "guest/vmboot.h"
#include "proto/proto.h"
#include "runtime/vm/vm_template.h"
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
			     "paddock.probe=1 paddock.debug=1 paddock.net=1 paddock.pids=64 paddock.resv=455123\n", &c);
	assert_int_equal(c.pids, 64);
	assert_int_equal(c.resv_blocks, 455123);
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
			     "paddock.agent=5:6:7 paddock.root paddock.pids=7 paddock.pids=12x "
			     "paddock.resv=-5 paddock.resv=12x paddock.resv=281474976710656 paddock.resv=+3", &c);
	assert_false(c.probe);
	assert_int_equal(c.resv_blocks, 0);
	assert_int_equal(c.pids, 0);
	assert_string_equal(c.root, "vda");
	assert_string_equal(c.hostname, "");
	assert_int_equal(c.agent_uid, 1000);
	vmboot_parse_cmdline("", &c);
	assert_string_equal(c.root, "vda");
}

static void test_cmdline_template(void **state)
{
	struct vmboot_cmdline c;
	vmboot_parse_cmdline("paddock.template=1 paddock.net=1", &c);
	assert_true(c.template_boot);
	vmboot_parse_cmdline("paddock.template=yes paddock.templates=1", &c);
	assert_false(c.template_boot);
}

/* The host's resume frame (vm_template.c) as the guest reads it, and what it refuses. */
static void test_resume_round_trip(void **state)
{
	uint8_t seed[VMBOOT_SEED_BYTES];
	for (size_t i = 0; i < sizeof(seed); i++)
		seed[i] = (uint8_t)(i * 37 + 11);
	struct proto_buf b = {0};
	vm_template_resume_payload(&b, "box-1.a_b", 1796290907123456789LL, seed, sizeof(seed));
	struct vmboot_resume r;
	assert_int_equal(vmboot_parse_resume(b.data, b.len, &r), 0);
	assert_string_equal(r.hostname, "box-1.a_b");
	assert_true(r.time_ns == 1796290907123456789LL);
	assert_memory_equal(r.seed, seed, sizeof(seed));
	/* truncated anywhere: refused */
	for (size_t n = 0; n < b.len; n++)
		assert_int_equal(vmboot_parse_resume(b.data, n, &r), -EBADMSG);
	proto_buf_free(&b);
}

static int parse_items(const char *const *items, size_t n)
{
	struct proto_buf b = {0};
	for (size_t i = 0; i < n; i++)
		proto_tlv_put_str(&b, PROTO_TAG_KV, items[i]);
	struct vmboot_resume r;
	int ret = vmboot_parse_resume(b.data, b.len, &r);
	proto_buf_free(&b);
	return ret;
}

static void test_resume_rejects(void **state)
{
	char seed[5 + 2 * VMBOOT_SEED_BYTES + 1] = "seed=";
	memset(seed + 5, 'a', 2 * VMBOOT_SEED_BYTES);
	const char *ok[] = {"host=b", "time=5", seed};
	assert_int_equal(parse_items(ok, 3), 0);
	assert_int_equal(parse_items(ok, 2), -EBADMSG); /* each item is required */
	const char *dup[] = {"host=b", "time=5", seed, "time=6"};
	assert_int_equal(parse_items(dup, 4), -EBADMSG);
	const char *extra[] = {"host=b", "time=5", seed, "x=1"};
	assert_int_equal(parse_items(extra, 4), -EBADMSG);
	const char *bad_host[] = {"host=-b", "time=5", seed};
	assert_int_equal(parse_items(bad_host, 3), -EBADMSG);
	const char *bad_host2[] = {"host=a b", "time=5", seed};
	assert_int_equal(parse_items(bad_host2, 3), -EBADMSG);
	const char *bad_time[] = {"host=b", "time=0", seed};
	assert_int_equal(parse_items(bad_time, 3), -EBADMSG);
	const char *bad_time2[] = {"host=b", "time=5s", seed};
	assert_int_equal(parse_items(bad_time2, 3), -EBADMSG);
	const char *bad_time3[] = {"host=b", "time=99999999999999999999", seed};
	assert_int_equal(parse_items(bad_time3, 3), -EBADMSG);
	char short_seed[] = "seed=abcd";
	const char *bad_seed[] = {"host=b", "time=5", short_seed};
	assert_int_equal(parse_items(bad_seed, 3), -EBADMSG);
	seed[7] = 'G';
	assert_int_equal(parse_items(ok, 3), -EBADMSG);
	/* another tag than KV */
	struct proto_buf b = {0};
	proto_tlv_put_str(&b, PROTO_TAG_ARG, "host=b");
	struct vmboot_resume r;
	assert_int_equal(vmboot_parse_resume(b.data, b.len, &r), -EBADMSG);
	proto_buf_free(&b);
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
		cmocka_unit_test(test_cmdline_template),
		cmocka_unit_test(test_resume_round_trip),
		cmocka_unit_test(test_resume_rejects),
		cmocka_unit_test(test_pick_port),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
