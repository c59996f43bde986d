/* qemu_argv.c — the QEMU command line for one vm box (see qemu_argv.h). Pure. */
#include "guest/vmboot.h"
#include "runtime/vm/qemu_argv.h"

const char *vm_accel_name(enum vm_accel a)
{
	return a == VM_ACCEL_KVM ? "kvm" : a == VM_ACCEL_TCG ? "tcg" : "invalid";
}

void qemu_config_init(struct qemu_config *c)
{
	*c = (struct qemu_config){
		.binary = "qemu-system-x86_64", .accel = VM_ACCEL_TCG, .memory_mib = 1024, .cpus = 1,
		.ctl_fd = -1, .qmp_fd = -1, .console_fd = -1, .net_fd = -1, .incoming_fd = -1,
		.balloon = true, .rng = true, .sandbox = true, .guest_aslr = true};
}

/* QEMU 7.2 gives TCG a 1 GiB buffer for translated code and never hands a page of it back:
 * translations are appended until it is full, then all are dropped at once and it is filled
 * again from the start. What fills it is new guest code, and under ASLR every exec in the
 * guest is new code (QEMU 7.2 finds an x86 translation by the guest's virtual address too:
 * the same binary at another address is translated again), ~1.4 MB a process: a few
 * hundred tool calls leave QEMU holding guest RAM + 1 GiB. Capped, memory stays bounded; the cost is one
 * re-translation of the code in use each time the buffer fills, which a quarter of the
 * guest's RAM (at least 128 MiB) makes rare: with the guest's ASLR off the code in use of
 * shell tools, git, Python and Perl measured here was 55-74 MB (docs/vm-backend.md). */
uint64_t qemu_tcg_tb_mib(uint64_t memory_mib)
{
	uint64_t mib = memory_mib / 4;
	return mib < 128 ? 128 : mib > 512 ? 512 : mib;
}

/* Under KVM the guest keeps time with kvm-clock, so the PIT, the 8259 PIC and the RTC are
 * dead weight. Under TCG the PIT must stay (the kernel calibrates its timers against it when
 * tsc_early_khz is not given; without it boots hang at "Unable to calibrate against PIT")
 * and dropping the RTC made boots slower; the PIC is never needed (IOAPIC).
 * x-option-roms=off would also drop pvh.bin, the option ROM that does PVH boot: no. */
const char *qemu_machine(enum vm_accel a)
{
	return a == VM_ACCEL_KVM ? "microvm,pit=off,pic=off,rtc=off" : "microvm,pic=off";
}

char *qemu_opt_escape(const char *s)
{
	size_t n = strlen(s), commas = 0;
	for (size_t i = 0; i < n; i++)
		commas += s[i] == ',';
	char *r = xmalloc(n + commas + 1), *p = r;
	for (size_t i = 0; i < n; i++) {
		*p++ = s[i];
		if (s[i] == ',')
			*p++ = ',';
	}
	*p = '\0';
	return r;
}

/* Quiet serial console (every byte on the 8250 is a VM exit, expensive under TCG), no probing
 * of devices microvm does not have, no crypto self-tests at boot (~15% of a TCG boot; they
 * catch broken hardware drivers, and the guest's CPU is QEMU's), panic = power off at once
 * (-no-reboot), and paddock's own keys for stage 1 (src/guest/vmboot.h).
 * Under TCG the guest's TSC is the host's, so with a constant host TSC the guest is told its
 * rate (no calibration against the PIT, which hangs under host load) and that it is reliable
 * (otherwise the clocksource watchdog, comparing against jiffies that lose ticks under TCG,
 * marks it unstable and the guest falls back to a jiffies clock that drifts).
 * norandmaps (guest_aslr false; vm.c: under TCG unless --guest-aslr) puts the guest's user
 * space at fixed addresses, so each exec reuses the translations of the last one instead of
 * making ~1.4 MB of new ones: execs ~3x faster under TCG, and translated code bounded by the
 * code in use, not by the number of execs (qemu_tcg_tb_mib). Why that is safe: ASLR in the
 * guest hardens its processes against their inputs, and everything in a box is untrusted
 * already, holds no host secret (egress keeps keys on the host) and reaches the host only
 * through QEMU's devices and the supervisor, which keep their own ASLR. The guest kernel's
 * own randomisation is not touched. */
char *qemu_kernel_cmdline(const struct qemu_config *c)
{
	_cleanup_free_ char *tsc = c->accel == VM_ACCEL_TCG && c->tsc_khz
					   ? xasprintf(" tsc_early_khz=%llu tsc=reliable", (unsigned long long)c->tsc_khz)
					   : xstrdup("");
	_cleanup_free_ char *pids = c->pids ? xasprintf(" paddock.pids=%u", c->pids) : xstrdup("");
	_cleanup_free_ char *resv = c->disk_resv_blocks
					    ? xasprintf(" paddock.resv=%llu", (unsigned long long)c->disk_resv_blocks)
					    : xstrdup("");
	/* a template's guest is every box restored from it: no name of one of them */
	const char *host = c->template_boot ? NULL : c->name;
	return xasprintf("console=ttyS0 %s panic=-1 rdinit=/init 8250.nr_uarts=1 "
			 "i8042.noaux i8042.nokbd i8042.nopnp cryptomgr.notests%s%s paddock.root=vda%s%s%s%s%s%s%s",
			 c->verbose ? "loglevel=7 paddock.debug=1" : "quiet loglevel=4", tsc,
			 c->guest_aslr ? "" : " norandmaps", host ? " paddock.host=" : "",
			 host ? host : "", c->probe ? " paddock.probe=1" : "", c->net_fd >= 0 ? " paddock.net=1" : "",
			 pids, resv, c->template_boot ? " paddock.template=1" : "");
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n <= 63 && s[0] != '-' && s[0] != '.' &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int validate(const struct qemu_config *c, pd_err *err)
{
	if (c->accel != VM_ACCEL_KVM && c->accel != VM_ACCEL_TCG)
		return pd_error_msg(err, EINVAL, "qemu: no accelerator chosen");
	if (!c->binary || !c->kernel || !c->initrd)
		return pd_error_msg(err, EINVAL, "qemu: a binary, a kernel and an initramfs are needed");
	if (c->name && !name_ok(c->name))
		return pd_error_msg(err, EINVAL, "qemu: box name '%s' is not a valid hostname", c->name);
	/* 64 MiB panics Debian's kernel at boot ("System is deadlocked on memory"); 128 boots */
	if (c->memory_mib < 128 || c->memory_mib > 1024 * 1024)
		return pd_error_msg(err, EINVAL, "qemu: memory %llu MiB out of range for a vm box (128 MiB .. 1 TiB)",
				    (unsigned long long)c->memory_mib);
	if (c->cpus < 1 || c->cpus > 64)
		return pd_error_msg(err, EINVAL, "qemu: %u cpus out of range (1..64)", c->cpus);
	if (!c->probe && c->ctl_fd < 0)
		return pd_error_msg(err, EINVAL, "qemu: no control channel");
	if ((c->template_boot || c->incoming_fd >= 0) && (c->probe || !c->root_disk))
		return pd_error_msg(err, EINVAL, "qemu: a template needs a disk and is never a probe");
	if (c->incoming_fd >= 0 && !c->template_boot)
		return pd_error_msg(err, EINVAL, "qemu: only a template boot's state can be restored");
	return 0;
}

static void add(char ***v, const char *s) { *v = strv_append(*v, s); }

static void addf(char ***v, const char *opt, char *val /* freed */)
{
	add(v, opt);
	add(v, val);
	free(val);
}

/* A chardev on an inherited connected socket, or a path (file, or a socket QEMU serves). */
static void add_chardev(char ***v, const char *id, int fd, const char *path, const char *path_backend)
{
	if (fd >= 0) {
		addf(v, "-chardev", xasprintf("socket,id=%s,fd=%d", id, fd));
		return;
	}
	_cleanup_free_ char *p = qemu_opt_escape(path);
	if (streq(path_backend, "socket"))
		addf(v, "-chardev", xasprintf("socket,id=%s,path=%s,server=on,wait=off", id, p));
	else
		addf(v, "-chardev", xasprintf("%s,id=%s,path=%s", path_backend, id, p));
}

static void add_base(char ***v, const struct qemu_config *c)
{
	add(v, c->binary);
	static const char *const fixed[] = {"-nodefaults", "-no-user-config", "-nographic", "-no-reboot"};
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		add(v, fixed[i]);
	if (c->name)
		addf(v, "-name", xasprintf("paddock-%s", c->name));
	/* a template is saved paused (vm_template.c); without the run state in the saved state
	 * the QEMU that restores it starts the guest once the load completes */
	addf(v, "-global", xstrdup("migration.store-global-state=off"));
	/* QEMU's seccomp filter: no execve/fork (spawn), no setuid (elevateprivileges), no
	 * obsolete syscalls, no scheduler/affinity changes — a guest that escapes into QEMU
	 * still cannot run a program. */
	if (c->sandbox)
		addf(v, "-sandbox", xstrdup("on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"));
	addf(v, "-M", xstrdup(qemu_machine(c->accel)));
	addf(v, "-accel", c->accel == VM_ACCEL_TCG
				  ? xasprintf("tcg,tb-size=%llu", (unsigned long long)qemu_tcg_tb_mib(c->memory_mib))
				  : xstrdup(vm_accel_name(c->accel)));
	addf(v, "-cpu", xstrdup(c->accel == VM_ACCEL_KVM ? "host" : "max"));
	/* plain -m: the guest's RAM is QEMU's own anonymous memory ("microvm.ram"), zero until
	 * written, which is what lets a template's state leave its zero pages out (migstream.h);
	 * a memory backend with a file or preallocation would need them back */
	addf(v, "-m", xasprintf("%lluM", (unsigned long long)c->memory_mib));
	addf(v, "-smp", xasprintf("%u", c->cpus));
}

static void add_boot(char ***v, const struct qemu_config *c)
{
	addf(v, "-kernel", xstrdup(c->kernel));
	addf(v, "-initrd", xstrdup(c->initrd));
	addf(v, "-append", qemu_kernel_cmdline(c));
}

static void add_devices(char ***v, const struct qemu_config *c)
{
	if (c->console_fd >= 0 || c->console_path) {
		add_chardev(v, "con", c->console_fd, c->console_path, "file");
		addf(v, "-serial", xstrdup("chardev:con"));
	}
	if (c->ctl_fd >= 0) {
		add_chardev(v, "ctl", c->ctl_fd, NULL, "socket");
		/* port 0 is reserved for virtconsole: two ports is the least that gives us nr=1 */
		addf(v, "-device", xstrdup("virtio-serial-device,max_ports=2"));
		addf(v, "-device", xasprintf("virtserialport,chardev=ctl,nr=1,name=%s", VMBOOT_CTL_PORT));
	}
	if (c->root_disk) {
		_cleanup_free_ char *p = qemu_opt_escape(c->root_disk);
		addf(v, "-blockdev", xasprintf("driver=qcow2,node-name=root,discard=unmap,file.driver=file,file.filename=%s", p));
		addf(v, "-device", xstrdup("virtio-blk-device,drive=root"));
	}
	/* one datagram = one Ethernet frame, both ways: the supervisor reads and writes its end
	 * exactly like a TAP fd (no framing to parse, no partial frames) */
	if (c->net_fd >= 0) {
		addf(v, "-netdev", xasprintf("dgram,id=net0,local.type=fd,local.str=%d", c->net_fd));
		addf(v, "-device", xstrdup("virtio-net-device,netdev=net0"));
	}
	if (c->balloon)
		addf(v, "-device", xstrdup("virtio-balloon-device,free-page-reporting=on,deflate-on-oom=on"));
	if (c->rng) {
		addf(v, "-object", xstrdup("rng-random,id=rng0,filename=/dev/urandom"));
		addf(v, "-device", xstrdup("virtio-rng-device,rng=rng0"));
	}
	if (c->qmp_fd >= 0 || c->qmp_path) {
		add_chardev(v, "qmp", c->qmp_fd, c->qmp_path, "socket");
		addf(v, "-mon", xstrdup("chardev=qmp,mode=control"));
	}
}

int qemu_argv_build(const struct qemu_config *c, char ***ret_argv, pd_err *err)
{
	int r = validate(c, err);
	if (r < 0)
		return r;
	char **v = xcalloc(1, sizeof(char *));
	add_base(&v, c);
	add_boot(&v, c);
	add_devices(&v, c);
	/* the saved state of a template guest, loaded before the guest runs; QEMU starts it
	 * when the load completes (the state carries no run state: add_base) */
	if (c->incoming_fd >= 0)
		addf(&v, "-incoming", xasprintf("fd:%d", c->incoming_fd));
	*ret_argv = v;
	return 0;
}
