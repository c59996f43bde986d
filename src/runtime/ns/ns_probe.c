/* ns_probe.c — host capability probes for paddock doctor. */
#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "runtime/ns/ns_cgroup.h"
#include "runtime/ns/ns_idmap.h"
#include "runtime/ns/ns_landlock.h"
#include "runtime/ns/ns_probe.h"
#include "util/fdio.h"

/* What a probe child found, sent back through a pipe. */
struct probe_msg {
	unsigned namespaces;
	bool overlay, mount_api;
};

static int write_self(const char *file, const char *s)
{
	return write_file_str(file, s);
}

/* probe child: a user namespace mapping ourselves to root, so the other probes may mount. */
static bool enter_userns(void)
{
	char m[64];
	uid_t u = geteuid();
	gid_t g = getegid();
	if (unshare(CLONE_NEWUSER) < 0)
		return false;
	write_self("/proc/self/setgroups", "deny");
	snprintf(m, sizeof(m), "0 %u 1", (unsigned)u);
	if (write_self("/proc/self/uid_map", m) < 0)
		return false;
	snprintf(m, sizeof(m), "0 %u 1", (unsigned)g);
	return write_self("/proc/self/gid_map", m) == 0;
}

static bool try_overlay(void)
{
	static const char *const dirs[] = {"/tmp/l", "/tmp/u", "/tmp/w", "/tmp/m"};
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		mkdir(dirs[i], 0755);
	return mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w,userxattr") == 0 ||
	       mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w") == 0;
}

static bool try_mount_api(void)
{
	int t = open_tree(AT_FDCWD, "/tmp/l", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	bool ok = t >= 0 && mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof(a)) == 0 &&
		  move_mount(t, "", AT_FDCWD, "/tmp/u", MOVE_MOUNT_F_EMPTY_PATH) == 0;
	if (t >= 0)
		close(t);
	return ok;
}

static _noreturn_ void probe_child(int fd)
{
	static const struct {
		int flag;
		unsigned bit;
	} types[] = {
		{CLONE_NEWNS, NS_PROBE_MNT},   {CLONE_NEWPID, NS_PROBE_PID}, {CLONE_NEWIPC, NS_PROBE_IPC},
		{CLONE_NEWUTS, NS_PROBE_UTS},  {CLONE_NEWNET, NS_PROBE_NET}, {CLONE_NEWCGROUP, NS_PROBE_CGROUP},
	};
	struct probe_msg m = {0};
	if (enter_userns()) {
		m.namespaces = NS_PROBE_USER;
		for (size_t i = 0; i < ARRAY_SIZE(types); i++)
			if (unshare(types[i].flag) == 0)
				m.namespaces |= types[i].bit;
		m.overlay = (m.namespaces & NS_PROBE_MNT) && try_overlay();
		m.mount_api = m.overlay && try_mount_api();
	}
	(void)!write(fd, &m, sizeof(m));
	_exit(0);
}

static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void probe_namespaces(struct ns_probe_result *ret)
{
	int p[2];
	struct probe_msg m = {0};
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0)
		probe_child(p[1]);
	close(p[1]);
	if (pid > 0) {
		if (read(p[0], &m, sizeof(m)) != (ssize_t)sizeof(m))
			m = (struct probe_msg){0};
		wait_status(pid);
	}
	close(p[0]);
	ret->userns = m.namespaces & NS_PROBE_USER;
	ret->namespaces = m.namespaces;
	ret->overlay_userns = m.overlay;
	ret->mount_api = m.mount_api;
}

static long sysctl_value(const char *path, long missing)
{
	_cleanup_free_ char *s = NULL;
	return read_file_at(AT_FDCWD, path, 64, &s, NULL) < 0 ? missing : atol(s);
}

/* As root, the only honest answer is to try as nobody. */
static bool probe_unprivileged(void)
{
	if (geteuid() != 0)
		return sysctl_value("/proc/sys/kernel/unprivileged_userns_clone", 1) == 1 &&
		       sysctl_value("/proc/sys/user/max_user_namespaces", 1) > 0 &&
		       sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) == 0;
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	}
	return pid > 0 && wait_status(pid) == 0;
}

static bool probe_seccomp(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = {.len = 1, .filter = &allow};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(1);
		_exit(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0 ? 0 : 1);
	}
	return pid > 0 && wait_status(pid) == 0;
}

static void probe_ids(struct ns_probe_result *ret)
{
	struct ns_subid_range u, g;
	const char *nu = ns_idmap_helper(false), *ng = ns_idmap_helper(true);
	snprintf(ret->newuidmap, sizeof(ret->newuidmap), "%s", nu ? nu : "");
	snprintf(ret->newgidmap, sizeof(ret->newgidmap), "%s", ng ? ng : "");
	ret->subid_range = ns_subid_lookup(false, geteuid(), &u) == 0 && ns_subid_lookup(true, geteuid(), &g) == 0;
	if (ret->subid_range) {
		ret->subuid_start = u.start;
		ret->subuid_count = u.count;
	}
}

static void probe_cgroup(struct ns_probe_result *ret)
{
	struct ns_cgroup *cg = NULL;
	pd_err err = {0};
	if (ns_cgroup_locate(false, &cg, &err) < 0) {
		snprintf(ret->cgroup_error, sizeof(ret->cgroup_error), "%.400s; %s", err.msg,
			 "run `sudo paddock system setup --user $USER`");
		return;
	}
	ret->cgroup_ok = true;
	ret->cgroup_version = cg->version;
	const char *p = cg->dirs[0] ? cg->dirs[0] : cg->dirs[NS_CG_PIDS];
	snprintf(ret->cgroup_path, sizeof(ret->cgroup_path), "%s", p ? p : "");
	ns_cgroup_free(cg);
}

int ns_probe(struct ns_probe_result *ret)
{
	*ret = (struct ns_probe_result){0};
	probe_namespaces(ret);
	ret->userns_unprivileged = probe_unprivileged();
	probe_ids(ret);
	ret->landlock_abi = ns_landlock_abi();
	ret->seccomp_filter = probe_seccomp();
	probe_cgroup(ret);
	bool ok = ret->namespaces == NS_PROBE_ALL && ret->overlay_userns && ret->mount_api && ret->landlock_abi >= 1 &&
		  ret->seccomp_filter && ret->cgroup_ok;
	return ok ? 0 : -EOPNOTSUPP;
}
