/* test-accel.c — accelerator choice, probe classification, verdict cache format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <linux/kvm.h>
#include <sys/wait.h>

#include "guest/vmboot.h"
#include "runtime/vm/accel.h"

static struct vm_kvm_facts good_device(void)
{
	return (struct vm_kvm_facts){.api_version = KVM_API_VERSION};
}

static void test_mode_parse(void **state)
{
	enum vm_accel_mode m;
	assert_int_equal(vm_accel_mode_parse("auto", &m), 0);
	assert_int_equal(m, VM_ACCEL_MODE_AUTO);
	assert_int_equal(vm_accel_mode_parse("kvm", &m), 0);
	assert_int_equal(m, VM_ACCEL_MODE_KVM);
	assert_int_equal(vm_accel_mode_parse("tcg", &m), 0);
	assert_int_equal(m, VM_ACCEL_MODE_TCG);
	assert_int_equal(vm_accel_mode_parse("hvf", &m), -EINVAL);
	assert_int_equal(vm_accel_mode_parse(NULL, &m), -EINVAL);
}

static void test_tcg_requested(void **state)
{
	struct vm_kvm_facts f = good_device();
	f.probed = f.probe_ok = true;
	struct vm_accel_choice c;
	vm_accel_decide(VM_ACCEL_MODE_TCG, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_TCG);
	assert_false(c.need_probe);
	assert_non_null(strstr(c.reason, "--accel tcg"));
}

static void test_auto_no_device(void **state)
{
	struct vm_kvm_facts f = {.open_errno = ENOENT};
	struct vm_accel_choice c;
	vm_accel_decide(VM_ACCEL_MODE_AUTO, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_TCG);
	assert_false(c.need_probe);
	assert_non_null(strstr(c.reason, "no /dev/kvm"));
	f.open_errno = EACCES;
	vm_accel_decide(VM_ACCEL_MODE_AUTO, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_TCG);
	assert_non_null(strstr(c.reason, "kvm' group"));
	f = good_device();
	f.create_vm_errno = EINVAL;
	vm_accel_decide(VM_ACCEL_MODE_AUTO, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_TCG);
	assert_non_null(strstr(c.reason, "cannot create a VM"));
	f = good_device();
	f.api_version = 11;
	vm_accel_decide(VM_ACCEL_MODE_AUTO, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_TCG);
}

static void test_auto_needs_probe_then_decides(void **state)
{
	struct vm_kvm_facts f = good_device();
	struct vm_accel_choice c;
	vm_accel_decide(VM_ACCEL_MODE_AUTO, &f, &c);
	assert_true(c.need_probe);
	f.probed = true;
	f.probe_ok = true;
	snprintf(f.probe_reason, sizeof(f.probe_reason), "reached user space and powered off");
	vm_accel_decide(VM_ACCEL_MODE_AUTO, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_KVM);
	assert_true(startswith(c.reason, "kvm: "));
	assert_true(c.fresh); /* a probe just ran: said once */
	f.probe_ok = false;
	f.probe_cached = true;
	snprintf(f.probe_reason, sizeof(f.probe_reason), "KVM internal error. Suberror: 1");
	vm_accel_decide(VM_ACCEL_MODE_AUTO, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_TCG);
	assert_non_null(strstr(c.reason, "broken for real guests: KVM internal error"));
	assert_non_null(strstr(c.reason, "(cached verdict)"));
	assert_false(c.fresh); /* from the cache: not repeated on every start */
}

static void test_kvm_forced(void **state)
{
	struct vm_kvm_facts f = {.open_errno = EACCES};
	struct vm_accel_choice c;
	vm_accel_decide(VM_ACCEL_MODE_KVM, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_INVALID); /* refuse, never fall back silently */
	assert_non_null(strstr(c.reason, "--accel kvm"));
	f = good_device();
	vm_accel_decide(VM_ACCEL_MODE_KVM, &f, &c);
	assert_true(c.need_probe);
	f.probed = true;
	vm_accel_decide(VM_ACCEL_MODE_KVM, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_INVALID);
	assert_non_null(strstr(c.reason, "--accel tcg"));
	f.probe_ok = true;
	vm_accel_decide(VM_ACCEL_MODE_KVM, &f, &c);
	assert_int_equal(c.accel, VM_ACCEL_KVM);
}

static bool classify(bool exited, int status, bool timed_out, const char *con, const char *out, char *reason)
{
	struct vm_probe_outcome o = {.exited = exited, .status = status, .timed_out = timed_out, .console = con,
				     .qemu_out = out};
	return vm_probe_classify(&o, reason, 160);
}

static void test_classify(void **state)
{
	char r[160];
	assert_true(classify(true, 0, false, "Linux version 6.1\n" VMBOOT_PROBE_MARKER "\n", "", r));
	/* this host: QEMU aborts on MSR 0x10a with -cpu host */
	assert_false(classify(true, SIGABRT, false, "",
			      "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69\nqemu: Assertion `ret == ...' failed.\n", r));
	assert_non_null(strstr(r, "failed to set MSR 0x10a"));
	/* this host too: the guest stops with an emulation failure, QEMU stays up */
	assert_false(classify(false, 0, false, "[ 0.1] Linux version", "KVM internal error. Suberror: 1\nemulation failure\n", r));
	assert_true(startswith(r, "KVM internal error. Suberror: 1"));
	assert_false(classify(false, 0, true, "[ 0.1] Linux version", "", r));
	assert_non_null(strstr(r, "stalled"));
	assert_false(classify(true, 1 << 8, false, "", "", r));
	assert_non_null(strstr(r, "status 1"));
	assert_false(classify(true, SIGKILL, false, VMBOOT_PROBE_MARKER, "", r));
	assert_non_null(strstr(r, "did not exit cleanly"));
	assert_true(vm_probe_fatal_output("x\nKVM internal error. Suberror: 1\n"));
	assert_false(vm_probe_fatal_output("qemu-system-x86_64: terminating on signal 15\n"));
}

static void test_cache(void **state)
{
	char *key = vm_accel_cache_key("abc123", "1f-2e-3d", "6.18.44");
	char *text = vm_accel_cache_format(key, false, "KVM internal error.\nSuberror: 1");
	bool ok = true;
	char reason[160];
	assert_int_equal(vm_accel_cache_parse(text, key, &ok, reason, sizeof(reason)), 0);
	assert_false(ok);
	assert_string_equal(reason, "KVM internal error. Suberror: 1"); /* kept on one line */
	assert_int_equal(vm_accel_cache_parse(text, "other/key/x", &ok, reason, sizeof(reason)), -ENOENT);
	free(text);
	text = vm_accel_cache_format(key, true, "reached user space");
	assert_int_equal(vm_accel_cache_parse(text, key, &ok, reason, sizeof(reason)), 0);
	assert_true(ok);
	free(text);
	assert_int_equal(vm_accel_cache_parse("garbage", key, &ok, reason, sizeof(reason)), -EBADMSG);
	assert_int_equal(vm_accel_cache_parse("key a\nverdict maybe\nreason x\n", "a", &ok, reason, sizeof(reason)), -EBADMSG);
	free(key);
}

static void test_constant_tsc(void **state)
{
	assert_true(vm_cpuinfo_constant_tsc("processor: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\nbugs: x\n"));
	assert_false(vm_cpuinfo_constant_tsc("processor: 0\nflags\t\t: fpu tsc constant_tsc\n"));
	assert_false(vm_cpuinfo_constant_tsc("processor: 0\nflags\t\t: fpu tsc constant_tsc_x nonstop_tsc\n"));
	assert_false(vm_cpuinfo_constant_tsc(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_parse),
		cmocka_unit_test(test_tcg_requested),
		cmocka_unit_test(test_auto_no_device),
		cmocka_unit_test(test_auto_needs_probe_then_decides),
		cmocka_unit_test(test_kvm_forced),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_constant_tsc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
