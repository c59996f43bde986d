/* test-qemu-argv.c — the QEMU command line for both accelerators, and what must never be in
 * it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runtime/vm/qemu_argv.h"

static void box_config(struct qemu_config *c, enum vm_accel a)
{
	qemu_config_init(c);
	c->binary = "/usr/bin/qemu-system-x86_64";
	c->name = "demo";
	c->accel = a;
	c->memory_mib = 512;
	c->cpus = 2;
	c->kernel = "/k/vmlinux";
	c->initrd = "/k/initramfs.cpio";
	c->tsc_khz = 2445321;
	c->root_disk = "/boxes/demo/disk.qcow2";
	c->ctl_fd = 3;
	c->qmp_fd = 4;
	c->console_path = "/boxes/demo/console.log";
}

/* index of the value following option opt whose value starts with prefix, or -1 */
static int opt_index(char **v, const char *opt, const char *prefix)
{
	for (int i = 0; v[i] && v[i + 1]; i++)
		if (streq(v[i], opt) && startswith(v[i + 1], prefix))
			return i + 1;
	return -1;
}

static const char *opt(char **v, const char *o, const char *prefix)
{
	int i = opt_index(v, o, prefix);
	return i < 0 ? NULL : v[i];
}

static bool has(char **v, const char *s)
{
	for (; *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

static bool any_contains(char **v, const char *needle)
{
	for (; *v; v++)
		if (strstr(*v, needle))
			return true;
	return false;
}

static void common_checks(char **v)
{
	assert_string_equal(v[0], "/usr/bin/qemu-system-x86_64");
	assert_true(has(v, "-nodefaults") && has(v, "-no-user-config") && has(v, "-nographic") && has(v, "-no-reboot"));
	assert_string_equal(opt(v, "-m", ""), "512M");
	assert_string_equal(opt(v, "-smp", ""), "2");
	assert_string_equal(opt(v, "-kernel", ""), "/k/vmlinux");
	assert_string_equal(opt(v, "-initrd", ""), "/k/initramfs.cpio");
	assert_string_equal(opt(v, "-name", ""), "paddock-demo");
	assert_string_equal(opt(v, "-chardev", "socket,id=ctl"), "socket,id=ctl,fd=3");
	assert_string_equal(opt(v, "-device", "virtserialport"), "virtserialport,chardev=ctl,nr=1,name=paddock.ctl");
	assert_non_null(opt(v, "-device", "virtio-serial-device"));
	assert_string_equal(opt(v, "-blockdev", ""),
			    "driver=qcow2,node-name=root,discard=unmap,file.driver=file,file.filename=/boxes/demo/disk.qcow2");
	assert_string_equal(opt(v, "-device", "virtio-blk-device"), "virtio-blk-device,drive=root");
	assert_string_equal(opt(v, "-device", "virtio-balloon-device"),
			    "virtio-balloon-device,free-page-reporting=on,deflate-on-oom=on");
	assert_string_equal(opt(v, "-device", "virtio-rng-device"), "virtio-rng-device,rng=rng0");
	assert_string_equal(opt(v, "-chardev", "socket,id=qmp"), "socket,id=qmp,fd=4");
	assert_string_equal(opt(v, "-mon", ""), "chardev=qmp,mode=control");
	assert_string_equal(opt(v, "-chardev", "file,id=con"), "file,id=con,path=/boxes/demo/console.log");
	assert_string_equal(opt(v, "-serial", ""), "chardev:con");
	assert_non_null(opt(v, "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny"));
	/* nothing of the host is shared, and there is no way in but ours */
	const char *never[] = {"9p", "virtfs", "virtiofs", "vhost-user", "vsock", "-monitor", "stdio", "-fsdev",
			       "pci", "-netdev", "-nic", "-hda", "-drive", "-virtfs", "-incoming"};
	for (size_t i = 0; i < ARRAY_SIZE(never); i++)
		assert_false(any_contains(v, never[i]));
	const char *append = opt(v, "-append", "");
	assert_non_null(strstr(append, "console=ttyS0"));
	assert_non_null(strstr(append, "paddock.host=demo"));
	assert_non_null(strstr(append, "panic=-1"));
	assert_null(strstr(append, "paddock.probe"));
	assert_null(strstr(append, "paddock.net")); /* no network unless asked */
	assert_null(strstr(append, "paddock.template"));
}

static void test_kvm(void **state)
{
	struct qemu_config c;
	box_config(&c, VM_ACCEL_KVM);
	char **v;
	assert_int_equal(qemu_argv_build(&c, &v, NULL), 0);
	common_checks(v);
	assert_string_equal(opt(v, "-accel", ""), "kvm");
	assert_string_equal(opt(v, "-cpu", ""), "host");
	assert_string_equal(opt(v, "-M", ""), "microvm,pit=off,pic=off,rtc=off");
	assert_null(strstr(opt(v, "-append", ""), "tsc")); /* kvm-clock */
	assert_null(strstr(opt(v, "-append", ""), "norandmaps"));
	strv_free(v);
}

static void test_tcg(void **state)
{
	struct qemu_config c;
	box_config(&c, VM_ACCEL_TCG);
	c.disk_resv_blocks = 455123;
	char **v;
	assert_int_equal(qemu_argv_build(&c, &v, NULL), 0);
	common_checks(v);
	assert_non_null(strstr(opt(v, "-append", ""), " paddock.resv=455123"));
	assert_string_equal(opt(v, "-accel", ""), "tcg,tb-size=128"); /* 512 MiB guest: the floor */
	assert_string_equal(opt(v, "-cpu", ""), "max");
	assert_string_equal(opt(v, "-M", ""), "microvm,pic=off");
	assert_non_null(strstr(opt(v, "-append", ""), " tsc_early_khz=2445321 tsc=reliable"));
	assert_null(strstr(opt(v, "-append", ""), "norandmaps")); /* vm.c decides; the default keeps ASLR */
	strv_free(v);
	/* a guest without ASLR: the key is on the command line, once */
	c.guest_aslr = false;
	c.memory_mib = 1024;
	assert_int_equal(qemu_argv_build(&c, &v, NULL), 0);
	assert_string_equal(opt(v, "-accel", ""), "tcg,tb-size=256");
	const char *append = opt(v, "-append", "");
	const char *at = strstr(append, " norandmaps");
	assert_non_null(at);
	assert_true(at[11] == ' ' || at[11] == '\0');
	assert_null(strstr(at + 11, "norandmaps"));
	strv_free(v);
}

/* A quarter of the guest's RAM, between 128 and 512 MiB */
static void test_tcg_tb_size(void **state)
{
	assert_int_equal(qemu_tcg_tb_mib(128), 128);
	assert_int_equal(qemu_tcg_tb_mib(512), 128);
	assert_int_equal(qemu_tcg_tb_mib(1024), 256);
	assert_int_equal(qemu_tcg_tb_mib(1500), 375);
	assert_int_equal(qemu_tcg_tb_mib(2048), 512);
	assert_int_equal(qemu_tcg_tb_mib(1024 * 1024), 512);
}

static void test_optional_devices(void **state)
{
	struct qemu_config c;
	box_config(&c, VM_ACCEL_TCG);
	c.net_fd = 5;
	c.qmp_fd = -1;
	c.qmp_path = "/run/q,mp.sock";
	c.console_path = NULL;
	c.console_fd = 6;
	c.balloon = c.rng = c.sandbox = false;
	c.tsc_khz = 0;
	char **v;
	assert_int_equal(qemu_argv_build(&c, &v, NULL), 0);
	assert_string_equal(opt(v, "-netdev", ""), "dgram,id=net0,local.type=fd,local.str=5");
	assert_non_null(strstr(opt(v, "-append", ""), " paddock.net=1"));
	assert_null(strstr(opt(v, "-append", ""), "paddock.pids")); /* 0: no limit */
	assert_null(strstr(opt(v, "-append", ""), "paddock.resv")); /* 0: nothing held back */
	assert_string_equal(opt(v, "-device", "virtio-net-device"), "virtio-net-device,netdev=net0");
	/* a comma in a path is doubled, not an option separator */
	assert_string_equal(opt(v, "-chardev", "socket,id=qmp"), "socket,id=qmp,path=/run/q,,mp.sock,server=on,wait=off");
	assert_string_equal(opt(v, "-chardev", "socket,id=con"), "socket,id=con,fd=6");
	assert_false(any_contains(v, "balloon") || any_contains(v, "rng") || any_contains(v, "-sandbox"));
	assert_null(strstr(opt(v, "-append", ""), "tsc")); /* unknown rate: the guest calibrates */
	strv_free(v);
}

static void test_probe(void **state)
{
	struct qemu_config c;
	qemu_config_init(&c);
	c.accel = VM_ACCEL_KVM;
	c.kernel = "/k/vmlinux";
	c.initrd = "/k/i.cpio";
	c.probe = true;
	c.console_fd = 3;
	char **v;
	assert_int_equal(qemu_argv_build(&c, &v, NULL), 0);
	assert_non_null(strstr(opt(v, "-append", ""), "paddock.probe=1"));
	assert_false(any_contains(v, "virtserialport") || any_contains(v, "-blockdev") || any_contains(v, "-name"));
	strv_free(v);
}

static void test_rejects(void **state)
{
	struct qemu_config c;
	char **v = NULL;
	pd_err err = {0};
	box_config(&c, VM_ACCEL_INVALID);
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	box_config(&c, VM_ACCEL_TCG);
	c.name = "a b";
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	c.name = "x,driver=evil";
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	box_config(&c, VM_ACCEL_TCG);
	c.memory_mib = 16;
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	box_config(&c, VM_ACCEL_TCG);
	c.cpus = 0;
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	box_config(&c, VM_ACCEL_TCG);
	c.ctl_fd = -1;
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "control channel"));
	box_config(&c, VM_ACCEL_TCG);
	c.kernel = NULL;
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	assert_null(v);
}

/* A template's guest parks at the end of stage 1 and is nobody's box yet: no hostname on its
 * command line (a restored box gets its own in the resume frame), the same argv otherwise;
 * a restore adds -incoming on the saved state's fd, last. */
static void test_template(void **state)
{
	struct qemu_config c;
	char **v, **plain;
	box_config(&c, VM_ACCEL_TCG);
	assert_int_equal(qemu_argv_build(&c, &plain, NULL), 0);
	c.template_boot = true;
	assert_int_equal(qemu_argv_build(&c, &v, NULL), 0);
	const char *append = opt(v, "-append", "");
	assert_non_null(strstr(append, " paddock.template=1"));
	assert_null(strstr(append, "paddock.host"));
	assert_string_equal(opt(v, "-name", ""), "paddock-demo"); /* the host's name for QEMU only */
	assert_false(any_contains(v, "-incoming"));
	/* saved paused, restored running: the saved state carries no run state */
	assert_string_equal(opt(v, "-global", ""), "migration.store-global-state=off");
	size_t n = 0;
	for (; v[n]; n++)
		if (!streq(v[n], append))
			assert_string_equal(v[n], plain[n]);
	strv_free(v);
	c.incoming_fd = 7;
	assert_int_equal(qemu_argv_build(&c, &v, NULL), 0);
	size_t m = 0;
	while (v[m])
		m++;
	assert_int_equal(m, n + 2);
	assert_string_equal(v[m - 2], "-incoming");
	assert_string_equal(v[m - 1], "fd:7");
	strv_free(v);
	strv_free(plain);
	/* nonsense: a restore of a guest that was not a template's, a template probe or diskless */
	pd_err err = {0};
	v = NULL;
	box_config(&c, VM_ACCEL_TCG);
	c.incoming_fd = 7;
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	c.template_boot = true;
	c.probe = true;
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	c.probe = false;
	c.root_disk = NULL;
	assert_int_equal(qemu_argv_build(&c, &v, &err), -EINVAL);
	assert_null(v);
}

static void test_escape(void **state)
{
	char *s = qemu_opt_escape("a,b,,c");
	assert_string_equal(s, "a,,b,,,,c");
	free(s);
	s = qemu_opt_escape("");
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kvm),
		cmocka_unit_test(test_tcg),
		cmocka_unit_test(test_tcg_tb_size),
		cmocka_unit_test(test_optional_devices),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_template),
		cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
