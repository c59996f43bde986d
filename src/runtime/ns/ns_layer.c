/* ns_layer.c — pure helpers shared by both sides: layer names and hints, test fault
 * injection, limits with defaults, name and path validation. */
#include <limits.h>
#include <stdarg.h>
#include <time.h>

#include "runtime/ns/ns.h"

static const char *const layer_names[NS_LAYER_MAX] = {
	[NS_LAYER_CGROUP] = "cgroup",
	[NS_LAYER_USERNS] = "userns",
	[NS_LAYER_NS] = "namespaces",
	[NS_LAYER_MOUNT] = "mount",
	[NS_LAYER_PIVOT] = "pivot",
	[NS_LAYER_FDS] = "fds",
	[NS_LAYER_NNP] = "nnp",
	[NS_LAYER_RLIMIT] = "rlimit",
	[NS_LAYER_CAPS] = "caps",
	[NS_LAYER_LANDLOCK] = "landlock",
	[NS_LAYER_SECCOMP] = "seccomp",
	[NS_LAYER_EXEC] = "exec",
	[NS_LAYER_NET] = "network",
};

static const char *const layer_hints[NS_LAYER_MAX] = {
	[NS_LAYER_CGROUP] = "as an ordinary user run `sudo paddock system setup --user $USER` once "
			    "(or start paddock under `systemd-run --user --scope -p Delegate=yes`)",
	[NS_LAYER_USERNS] = "user namespaces must be enabled (sysctl kernel.unprivileged_userns_clone=1, "
			    "user.max_user_namespaces > 0) and uidmap installed; see `paddock doctor`",
	[NS_LAYER_NS] = "the kernel must allow cgroup, UTS and network namespaces inside a user namespace",
	[NS_LAYER_MOUNT] = "the kernel must allow tmpfs, overlayfs, proc and devpts mounts in a user namespace "
			   "(Linux >= 5.12); check the bind paths",
	[NS_LAYER_PIVOT] = "pivot_root must be allowed in the box's mount namespace",
	[NS_LAYER_FDS] = "close_range(2) is needed (Linux >= 5.9)",
	[NS_LAYER_NNP] = "PR_SET_NO_NEW_PRIVS must be available",
	[NS_LAYER_RLIMIT] = "check the hard limits of the calling process (ulimit -H)",
	[NS_LAYER_CAPS] = "the capability bounding set must be changeable in the box's user namespace",
	[NS_LAYER_LANDLOCK] = "Landlock must be enabled (CONFIG_SECURITY_LANDLOCK=y and `landlock` in the lsm= "
			      "boot parameter); the ns backend does not run without it",
	[NS_LAYER_SECCOMP] = "seccomp filters must be available (CONFIG_SECCOMP_FILTER=y)",
	[NS_LAYER_EXEC] = "paddock-init could not be executed (is vm.memfd_noexec set to 2?)",
	[NS_LAYER_NET] = "the box's network needs /dev/net/tun usable by the caller (mode 0666, the Debian "
			 "default) and TUN/TAP in the kernel; see `paddock doctor`",
};

const char *ns_layer_name(enum ns_layer l)
{
	if (l <= NS_LAYER_INVALID || l >= NS_LAYER_MAX)
		return "unknown";
	return layer_names[l];
}

const char *ns_layer_hint(enum ns_layer l)
{
	if (l <= NS_LAYER_INVALID || l >= NS_LAYER_MAX)
		return "run `paddock doctor`";
	return layer_hints[l];
}

static enum ns_layer layer_by_name(const char *s, size_t n)
{
	for (int l = NS_LAYER_INVALID + 1; l < NS_LAYER_MAX; l++)
		if (strlen(layer_names[l]) == n && strncmp(layer_names[l], s, n) == 0)
			return (enum ns_layer)l;
	return NS_LAYER_INVALID;
}

unsigned ns_fail_mask_parse(const char *list)
{
	unsigned mask = 0;
	if (!list)
		return 0;
	for (const char *s = list; *s;) {
		size_t n = strcspn(s, ",");
		enum ns_layer l = layer_by_name(s, n);
		if (l != NS_LAYER_INVALID)
			mask |= 1u << l;
		s += n;
		if (*s == ',')
			s++;
	}
	return mask;
}

unsigned ns_fail_mask_from_cfg(const struct box_config *cfg)
{
	const char *t = getenv("PADDOCK_TESTING");
	if (!t || !streq(t, "1"))
		return 0;
	return ns_fail_mask_parse(cfg->test_fail_layer);
}

uint64_t ns_disk_cap(uint64_t disk, uint64_t memory)
{
	uint64_t shm = memory / 4, reserve = memory / 4;
	if (reserve < (64u << 20))
		reserve = 64u << 20;
	if (reserve > (512u << 20))
		reserve = 512u << 20;
	uint64_t cap = memory > shm + reserve + (16u << 20) ? memory - shm - reserve : 16u << 20;
	return disk < cap ? disk : cap;
}

void ns_limits_from_cfg(const struct box_config *cfg, struct ns_limits *ret)
{
	uint64_t memory = cfg->memory ? cfg->memory : NS_DEFAULT_MEMORY;
	*ret = (struct ns_limits){
		.memory = memory,
		.pids = cfg->pids ? cfg->pids : NS_DEFAULT_PIDS,
		.cpus_milli = cfg->cpus_milli,
		/* the box's files live in tmpfs, charged to its memory cgroup: written past the
		 * memory limit they would make the OOM killer take the box's processes (its init
		 * too) instead of the writer getting ENOSPC */
		.disk = ns_disk_cap(cfg->disk ? cfg->disk : NS_DEFAULT_DISK, memory),
	};
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

bool ns_name_valid(const char *name)
{
	if (!name || !name[0])
		return false;
	size_t n = strlen(name);
	if (n > 63 || !name_char(name[0]) || name[0] == '_' || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(name[i]))
			return false;
	return true;
}

bool ns_box_path_valid(const char *path)
{
	return box_target_path_valid(path);
}

int ns_fail(struct ns_report *rep, enum ns_layer layer, int code, const char *fmt, ...)
{
	va_list ap;
	rep->layer = layer;
	rep->code = code > 0 ? code : (code < 0 ? -code : EIO);
	va_start(ap, fmt);
	vsnprintf(rep->msg, sizeof(rep->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void ns_trace(const struct ns_plan *p, const char *step)
{
	if (p->trace_fd < 0)
		return;
	struct timespec ts;
	char line[128];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int n = snprintf(line, sizeof(line), "[%ld.%06ld child] %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000, step);
	if (n > 0)
		(void)!write(p->trace_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
