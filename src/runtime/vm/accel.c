/* accel.c — the accelerator decision (pure), probe classification (pure), the verdict cache
 * format (pure), the /dev/kvm checks and the host TSC rate (see accel.h). */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <x86intrin.h>

#include "guest/vmboot.h"
#include "runtime/vm/accel.h"
#include "util/fdio.h"

int vm_accel_mode_parse(const char *s, enum vm_accel_mode *ret)
{
	static const char *const names[VM_ACCEL_MODE_MAX] = {
		[VM_ACCEL_MODE_AUTO] = "auto", [VM_ACCEL_MODE_KVM] = "kvm", [VM_ACCEL_MODE_TCG] = "tcg"};
	for (int m = VM_ACCEL_MODE_AUTO; m < VM_ACCEL_MODE_MAX; m++)
		if (s && streq(s, names[m])) {
			*ret = (enum vm_accel_mode)m;
			return 0;
		}
	return -EINVAL;
}

/* Why the device checks failed, in words, or NULL when they passed. */
static const char *kvm_device_problem(const struct vm_kvm_facts *f, char *buf, size_t n)
{
	if (f->open_errno == ENOENT)
		return "no /dev/kvm (no hardware virtualisation, or the kvm module is not loaded)";
	if (f->open_errno == EACCES || f->open_errno == EPERM)
		return "/dev/kvm: permission denied (add your user to the 'kvm' group)";
	if (f->open_errno) {
		snprintf(buf, n, "/dev/kvm: %s", strerror(f->open_errno));
		return buf;
	}
	if (f->api_version != KVM_API_VERSION) {
		snprintf(buf, n, "/dev/kvm: API version %d, expected %d", f->api_version, KVM_API_VERSION);
		return buf;
	}
	if (f->create_vm_errno) {
		snprintf(buf, n, "/dev/kvm cannot create a VM: %s", strerror(f->create_vm_errno));
		return buf;
	}
	return NULL;
}

static _printf_(4, 5) void choose(struct vm_accel_choice *c, enum vm_accel a, bool cached, const char *fmt, ...)
{
	c->accel = a;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(c->reason, sizeof(c->reason), "%s: %s%s", a == VM_ACCEL_INVALID ? "refused" : vm_accel_name(a), what,
		 cached ? " (cached verdict)" : "");
}

void vm_accel_decide(enum vm_accel_mode mode, const struct vm_kvm_facts *f, struct vm_accel_choice *ret)
{
	*ret = (struct vm_accel_choice){0};
	char buf[128];
	if (mode == VM_ACCEL_MODE_TCG)
		return choose(ret, VM_ACCEL_TCG, false, "requested with --accel tcg");
	bool forced = mode == VM_ACCEL_MODE_KVM;
	if (mode != VM_ACCEL_MODE_AUTO && !forced)
		return choose(ret, VM_ACCEL_INVALID, false, "unknown accelerator mode");
	const char *dev = kvm_device_problem(f, buf, sizeof(buf));
	if (dev && forced)
		return choose(ret, VM_ACCEL_INVALID, false, "--accel kvm, but %s", dev);
	if (dev)
		return choose(ret, VM_ACCEL_TCG, false, "KVM unavailable: %s", dev);
	if (!f->probed) {
		ret->need_probe = true;
		return;
	}
	ret->fresh = !f->probe_cached;
	if (f->probe_ok)
		return choose(ret, VM_ACCEL_KVM, f->probe_cached, "/dev/kvm works and a probe boot %s", f->probe_reason);
	if (forced)
		return choose(ret, VM_ACCEL_INVALID, f->probe_cached,
			      "--accel kvm, but a probe boot under KVM failed: %s (use --accel tcg)", f->probe_reason);
	return choose(ret, VM_ACCEL_TCG, f->probe_cached, "KVM is present but broken for real guests: %s",
		      f->probe_reason);
}

/* ---- the probe boot's outcome --------------------------------------------------------- */

bool vm_probe_fatal_output(const char *out)
{
	return strstr(out, "KVM internal error") || strstr(out, "emulation failure") ||
	       strstr(out, "failed to set MSR") || strstr(out, "Assertion") || strstr(out, "kvm run failed");
}

static void first_line(char *reason, size_t n, const char *prefix, const char *text)
{
	size_t l = strcspn(text, "\n");
	snprintf(reason, n, "%s%.*s", prefix, (int)(l > 100 ? 100 : l), text);
}

static const char *find_line(const char *text, const char *needle)
{
	const char *p = strstr(text, needle);
	if (!p)
		return NULL;
	while (p > text && p[-1] != '\n')
		p--;
	return p;
}

bool vm_probe_classify(const struct vm_probe_outcome *o, char *reason, size_t n)
{
	const char *out = o->qemu_out ? o->qemu_out : "", *con = o->console ? o->console : "";
	const char *l;
	if ((l = find_line(out, "KVM internal error")) || (l = find_line(out, "emulation failure")))
		first_line(reason, n, "", l);
	else if ((l = find_line(out, "failed to set MSR")))
		first_line(reason, n, "QEMU cannot set up the vCPU: ", l);
	else if (o->timed_out)
		snprintf(reason, n, "the guest did not reach user space in time%s",
			 strstr(con, "Linux version") ? " (the kernel started, then stalled)" : "");
	else if (!strstr(con, VMBOOT_PROBE_MARKER))
		snprintf(reason, n, "QEMU %s %d before the guest reached user space",
			 o->exited && WIFEXITED(o->status) ? "exited with status" : "died of signal",
			 o->exited && WIFEXITED(o->status) ? WEXITSTATUS(o->status) : WTERMSIG(o->status));
	else if (!o->exited || !WIFEXITED(o->status) || WEXITSTATUS(o->status) != 0)
		snprintf(reason, n, "the guest reached user space but QEMU did not exit cleanly");
	else {
		snprintf(reason, n, "reached user space and powered off");
		return true;
	}
	return false;
}

/* ---- verdict cache -------------------------------------------------------------------- */

char *vm_accel_cache_key(const char *kernel_digest, const char *qemu_id, const char *host_release)
{
	return xasprintf("%s/%s/%s", kernel_digest, qemu_id, host_release);
}

static void one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
}

char *vm_accel_cache_format(const char *key, bool ok, const char *reason)
{
	_cleanup_free_ char *k = xstrdup(key), *r = xstrdup(reason);
	one_line(k);
	one_line(r);
	return xasprintf("key %s\nverdict %s\nreason %s\n", k, ok ? "ok" : "broken", r);
}

/* The value of "name " on its own line, or NULL. */
static const char *field(const char *text, const char *name, size_t *ret_len)
{
	size_t nl = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, name, nl) == 0 && l[nl] == ' ') {
			*ret_len = strcspn(l + nl + 1, "\n");
			return l + nl + 1;
		}
	return NULL;
}

int vm_accel_cache_parse(const char *text, const char *key, bool *ret_ok, char *reason, size_t reason_len)
{
	size_t kl, vl, rl;
	const char *k = field(text, "key", &kl), *v = field(text, "verdict", &vl), *r = field(text, "reason", &rl);
	if (!k || !v || !r || (vl != 2 && vl != 6))
		return -EBADMSG;
	bool ok = vl == 2 && strncmp(v, "ok", 2) == 0;
	if (!ok && strncmp(v, "broken", vl) != 0)
		return -EBADMSG;
	if (kl != strlen(key) || strncmp(k, key, kl) != 0)
		return -ENOENT;
	*ret_ok = ok;
	snprintf(reason, reason_len, "%.*s", (int)rl, r);
	return 0;
}

/* ---- host facts ----------------------------------------------------------------------- */

void vm_kvm_check(struct vm_kvm_facts *f)
{
	*f = (struct vm_kvm_facts){0};
	_cleanup_close_ int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		f->open_errno = errno;
		return;
	}
	f->api_version = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (f->api_version < 0)
		f->api_version = -errno;
	if (f->api_version != KVM_API_VERSION)
		return;
	/* A VM with no vCPU and no memory: allocates nothing the guest could touch, closed at once. */
	_cleanup_close_ int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		f->create_vm_errno = errno;
	else
		fd_set_cloexec(vm, true);
}

bool vm_cpuinfo_constant_tsc(const char *cpuinfo)
{
	size_t n;
	const char *flags = strstr(cpuinfo, "\nflags");
	if (!flags || !(flags = strchr(flags, ':')))
		return false;
	n = strcspn(flags, "\n");
	_cleanup_free_ char *line = xasprintf("%.*s ", (int)n, flags);
	return strstr(line, " constant_tsc ") && strstr(line, " nonstop_tsc ");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t measure_tsc_khz(void)
{
	uint64_t t0 = mono_ns(), c0 = __rdtsc(), t1;
	while ((t1 = mono_ns()) - t0 < 20 * 1000 * 1000)
		;
	uint64_t c1 = __rdtsc();
	return (c1 - c0) * 1000000u / (t1 - t0);
}

uint64_t vm_host_tsc_khz(const char *home)
{
	_cleanup_free_ char *cpuinfo = NULL, *boot_id = NULL, *cached = NULL;
	if (read_file_at(AT_FDCWD, "/proc/cpuinfo", 4u << 20, &cpuinfo, NULL) < 0 || !vm_cpuinfo_constant_tsc(cpuinfo))
		return 0;
	if (read_file_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 64, &boot_id, NULL) < 0)
		return measure_tsc_khz();
	boot_id[strcspn(boot_id, "\n")] = '\0';
	_cleanup_free_ char *path = xasprintf("%s/cache/tsc-khz", home);
	unsigned long long khz;
	char id[64];
	if (read_file_at(AT_FDCWD, path, 256, &cached, NULL) == 0 && sscanf(cached, "%63s %llu", id, &khz) == 2 &&
	    streq(id, boot_id) && khz > 0)
		return khz;
	khz = measure_tsc_khz();
	_cleanup_free_ char *dir = xasprintf("%s/cache", home), *text = xasprintf("%s %llu\n", boot_id, khz);
	if (mkdir_p(dir, 0700) == 0)
		(void)write_file_atomic_at(AT_FDCWD, path, text, strlen(text), 0644);
	return khz;
}
