/* cmd_doctor.c — `paddock doctor`: what this host supports, per backend, and what to do
 * about what is missing. Probes only; changes nothing. */
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "cli/cli.h"
#include "runtime/ns/ns_probe.h"
#include "runtime/vm/vm.h"

static void line(const char *what, bool ok, const char *detail, const char *fix)
{
	printf("  %-26s %s  %s\n", what, ok ? "ok  " : "MISSING", detail);
	if (!ok && fix)
		printf("  %-26s       -> %s\n", "", fix);
}

static bool in_path(const char *prog, char *out, size_t n)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *p = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
	for (char *s = strtok(p, ":"); s; s = strtok(NULL, ":")) {
		snprintf(out, n, "%s/%s", s, prog);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

static void report_ns(void)
{
	struct ns_probe_result r;
	bool usable = ns_probe(&r) == 0;
	char d[PATH_MAX + 64];
	printf("ns backend (Linux namespaces + seccomp + Landlock + cgroups):\n");
	line("user namespaces", r.userns, r.userns ? "can be created by this user" : "refused by the kernel",
	     "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
	     "kernel.apparmor_restrict_unprivileged_userns=0)");
	snprintf(d, sizeof(d), "%s%s%s%s%s%s%s", r.namespaces & NS_PROBE_MNT ? "mnt " : "",
		 r.namespaces & NS_PROBE_PID ? "pid " : "", r.namespaces & NS_PROBE_IPC ? "ipc " : "",
		 r.namespaces & NS_PROBE_UTS ? "uts " : "", r.namespaces & NS_PROBE_NET ? "net " : "",
		 r.namespaces & NS_PROBE_CGROUP ? "cgroup " : "", r.namespaces & NS_PROBE_USER ? "user" : "");
	line("namespaces", (r.namespaces & NS_PROBE_ALL) == NS_PROBE_ALL, d, "a kernel built with every CONFIG_*_NS");
	bool tun = access("/dev/net/tun", R_OK | W_OK) == 0;
	line("/dev/net/tun", tun, tun ? "usable (the box's network interface)" : "not usable by this user",
	     "as root: paddock system setup --user $USER (sets Debian's default mode 0666)");
	line("overlayfs in a userns", r.overlay_userns, r.overlay_userns ? "yes" : "no", "Linux 5.11 or later");
	line("mount API in a userns", r.mount_api, r.mount_api ? "open_tree + mount_setattr" : "no", "Linux 5.12 or later");
	line("seccomp filters", r.seccomp_filter, r.seccomp_filter ? "yes" : "no", "a kernel with CONFIG_SECCOMP_FILTER");
	snprintf(d, sizeof(d), "ABI %d", r.landlock_abi);
	line("Landlock", r.landlock_abi > 0, r.landlock_abi > 0 ? d : "not enabled",
	     "boot with landlock in lsm= (CONFIG_SECURITY_LANDLOCK)");
	if (r.cgroup_ok)
		snprintf(d, sizeof(d), "v%d, boxes go under %s", r.cgroup_version, r.cgroup_path);
	else
		snprintf(d, sizeof(d), "v%d: %s", r.cgroup_version, r.cgroup_error);
	line("cgroups (memory,pids,cpu)", r.cgroup_ok, d, "as root: paddock system setup --user $USER");
	if (r.subid_range)
		snprintf(d, sizeof(d), "subordinate ids %u..%u (newuidmap %s)", r.subuid_start,
			 r.subuid_start + r.subuid_count - 1, r.newuidmap[0] ? r.newuidmap : "not needed");
	else
		snprintf(d, sizeof(d), "no subordinate id range: --user root is unavailable");
	line("root inside boxes", r.subid_range || getuid() == 0, getuid() == 0 ? "yes (host root maps it)" : d,
	     "as root: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $USER; apt-get install uidmap");
	printf("  verdict: %s\n\n", usable ? "usable" : "NOT usable: see MISSING above");
}

static void report_vm(void)
{
	char p[512];
	printf("vm backend (QEMU microVM, own kernel):\n");
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int api = fd >= 0 ? ioctl(fd, KVM_GET_API_VERSION, 0) : -1;
	if (fd >= 0)
		close(fd);
	line("/dev/kvm", api == KVM_API_VERSION, api == KVM_API_VERSION ? "opens (see the accelerator line)" : "not usable",
	     "add yourself to the kvm group; without KVM the vm backend uses TCG (seconds per boot)");
	/* where vm boxes look for their kernel and base image: the shared cache when one is set */
	_cleanup_free_ char *home = NULL;
	const char *cache = getenv("PADDOCK_VM_CACHE_HOME");
	int have_home = cache && cache[0] == '/' ? (home = xstrdup(cache), 0) : store_home(&home, NULL);
	_cleanup_strv_ char **lines = have_home == 0 ? vm_doctor(home) : NULL;
	for (size_t i = 0; lines && lines[i]; i++) {
		bool ok = !startswith(lines[i], "missing");
		const char *sp = strchr(lines[i], ' ');
		printf("  %-26s %s  %s\n", "", ok ? "ok  " : "MISSING", sp ? sp + 1 : lines[i]);
	}
	printf("  %-26s       -> a missing kernel is fetched through apt on first use, the vm-base\n"
	       "  %-26s          image built with mmdebstrap (paddock image update vm-base renews it)\n", "", "");
	printf("\ngvisor backend:\n");
	bool have = in_path("runsc", p, sizeof(p));
	line("runsc", have, have ? p : "not found", "apt-get install runsc");
	line("gvisor backend", false, "not built yet", NULL);
}

int cmd_doctor(int argc, char **argv)
{
	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		printf("Usage: paddock doctor\n\nReport what this host supports for each backend and what to do about what is missing.\n");
		return 0;
	}
	if (argc > 1)
		return cli_usage("doctor", "doctor takes no arguments");
	struct utsname u;
	uname(&u);
	printf("paddock doctor — %s %s, running as uid %d\n\n", u.sysname, u.release, (int)getuid());
	report_ns();
	report_vm();
	return 0;
}
