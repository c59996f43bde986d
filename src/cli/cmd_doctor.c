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

/* ns section: filled in from ns_probe() once the ns backend lands */
static void report_ns(void)
{
}

static void report_vm(void)
{
	char p[512];
	printf("vm backend (QEMU microVM):\n");
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int api = fd >= 0 ? ioctl(fd, KVM_GET_API_VERSION, 0) : -1;
	if (fd >= 0)
		close(fd);
	line("/dev/kvm", api == KVM_API_VERSION, api == KVM_API_VERSION ? "opens (real guests not yet proven)" : "not usable",
	     "add yourself to the kvm group, or the vm backend will use TCG (slow)");
	line("qemu-system-x86_64", in_path("qemu-system-x86_64", p, sizeof(p)), p, "apt-get install qemu-system-x86 qemu-utils");
	line("vm backend", false, "not built yet", NULL);
	printf("\ngvisor backend:\n");
	line("runsc", in_path("runsc", p, sizeof(p)), p, "apt-get install runsc");
	line("gvisor backend", false, "not built yet", NULL);
}

int cmd_doctor(int argc, char **argv)
{
	if (argc > 1 && streq(argv[1], "--help")) {
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
