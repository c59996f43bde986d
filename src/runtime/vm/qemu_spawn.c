/* qemu_spawn.c — start, kill and wait for QEMU (see qemu_spawn.h). */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/vm/qemu_spawn.h"
#include "runtime/vm/thp_trim.h"
#include "util/log.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int qemu_find_binary(const char *name, char **ret, pd_err *err)
{
	if (strchr(name, '/')) {
		*ret = xstrdup(name);
		return 0;
	}
	const char *path = getenv("PATH");
	_cleanup_free_ char *dirs = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *p = xasprintf("%s/%s", d, name);
		if (d[0] == '/' && access(p, X_OK) == 0) {
			*ret = TAKE_PTR(p);
			return 0;
		}
	}
	return pd_error_msg(err, ENOENT, "%s not found in PATH (install qemu-system-x86 and qemu-utils)", name);
}

/* What one first touch of an anonymous 4 KiB page costs this host, in ns: ~100-300 on bare
 * metal and under nested paging, 10,000 and more where every fault exits to a hypervisor that
 * keeps the page tables itself (seen here: a PVM guest, 11 us). Measured once per process on
 * 256 pages (1 MiB, ~3 ms at the slow end). */
static uint64_t fault_ns(void)
{
	static uint64_t ns;
	if (ns)
		return ns;
	const size_t len = 1u << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	(void)madvise(p, len, MADV_NOHUGEPAGE);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (size_t i = 0; i < len; i += 4096)
		((volatile char *)p)[i] = 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	munmap(p, len);
	uint64_t total = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec);
	ns = total / (len / 4096) + 1;
	return ns;
}

/* PADDOCK_VM_THP=0|1: 0 or 1; anything else (or unset): -1, the measure decides */
static int thp_override(void)
{
	const char *env = getenv("PADDOCK_VM_THP");
	return env && (streq(env, "0") || streq(env, "1")) ? env[0] - '0' : -1;
}

bool qemu_want_thp(void)
{
	int o = thp_override();
	return o >= 0 ? o == 1 : fault_ns() >= QEMU_THP_FAULT_NS && thp_trim_possible();
}

char *qemu_thp_doctor(void)
{
	int o = thp_override();
	if (o >= 0)
		return xasprintf("info huge pages: %s for QEMU (PADDOCK_VM_THP=%d)", o ? "on" : "off", o);
	uint64_t ns = fault_ns();
	if (ns < QEMU_THP_FAULT_NS)
		return xasprintf("info huge pages: off for QEMU (a page fault costs %llu ns here): an idle box holds only the "
				 "pages its guest wrote",
				 (unsigned long long)ns);
	const char *why_not = thp_trim_why_not();
	if (why_not)
		return xasprintf("info huge pages: off for QEMU although a page fault costs %llu ns here: restores are "
				 "slower, but huge pages would keep the zeros of every 2 MiB a guest writes resident, and "
				 "here they cannot be split back (%s); PADDOCK_VM_THP=1 trades that memory for the faster restores",
				 (unsigned long long)ns, why_not);
	return xasprintf("info huge pages: kept for QEMU (a page fault costs %llu ns here): faster restores; their "
			 "zero-filled pages are given back a few seconds into each box (split with process_madvise)",
			 (unsigned long long)ns);
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static _noreturn_ void child(char *const argv[], const struct qemu_fd *fds, size_t n, int out_fd, pid_t parent,
			     bool thp)
{
	static char *const envp[] = {"LC_ALL=C", NULL};
	/* The VM must not outlive its supervisor (fail closed); if the parent died before the
	 * prctl took effect we notice here. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	/* Its own session: a Ctrl-C on the user's terminal reaches paddock, which stops the box
	 * gracefully, not QEMU directly. A clean signal mask: the supervisor's blocked signals
	 * (signalfd) must not be inherited across exec. */
	sigset_t none;
	sigemptyset(&none);
	if (setsid() < 0 || sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		_exit(127);
	/* No transparent huge pages for QEMU (inherited across exec): QEMU madvises guest RAM
	 * MADV_HUGEPAGE, so one guest write made the host back 2 MiB, and a box restored from a
	 * template held ~24 MB more than the pages its state carries (docs/bench.md, vm section);
	 * the restore itself was slower too. Firecracker backs guests with 4 KiB pages by default
	 * for the same reason. Best effort: an old kernel without it only costs memory.
	 * Except where a page fault is expensive (qemu_want_thp): there one fault per 2 MiB
	 * instead of 512 is what makes a restore take 0.4 s rather than 3.5 (docs/bench.md). */
	if (!thp)
		(void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	int null = open("/dev/null", O_RDWR);
	/* Move every source fd above the destination range first, so no dup2 clobbers one. */
	int high = 3 + (int)n + 64, moved[16];
	if (null < 0 || n > ARRAY_SIZE(moved))
		_exit(127);
	for (size_t i = 0; i < n; i++)
		if ((moved[i] = fcntl(fds[i].src, F_DUPFD_CLOEXEC, high)) < 0)
			_exit(127);
	if (dup2(null, 0) < 0 || dup2(out_fd >= 0 ? out_fd : null, 1) < 0 || dup2(out_fd >= 0 ? out_fd : null, 2) < 0)
		_exit(127);
	for (size_t i = 0; i < n; i++)
		if (dup2(moved[i], fds[i].dst) < 0) /* dup2 leaves the new fd without O_CLOEXEC */
			_exit(127);
	/* Nothing else of ours reaches QEMU: everything above the mapped fds closes on exec. */
	syscall(SYS_close_range, 3 + (unsigned)n, ~0U, CLOSE_RANGE_CLOEXEC);
	execve(argv[0], argv, envp);
	_exit(127);
}

int qemu_spawn(char *const argv[], const struct qemu_fd *fds, size_t n_fds, int out_fd, pid_t *ret_pid,
	       int *ret_pidfd, pd_err *err)
{
	for (size_t i = 0; i < n_fds; i++)
		if (fds[i].dst != 3 + (int)i || n_fds > 16)
			return pd_error_msg(err, EINVAL, "qemu: fds must map to 3, 4, ... in order");
	pid_t parent = getpid();
	bool thp = qemu_want_thp();
	pd_debug("qemu: transparent huge pages %s (a page fault here: %llu ns)", thp ? "on" : "off",
		 (unsigned long long)fault_ns());
	pid_t pid = fork();
	if (pid < 0)
		return pd_error(err, errno, "cannot fork to start %s", argv[0]);
	if (pid == 0)
		child(argv, fds, n_fds, out_fd, parent, thp);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	*ret_pid = pid;
	*ret_pidfd = pidfd; /* pidfd_open fds are O_CLOEXEC */
	return 0;
}

void qemu_kill(pid_t pid, int pidfd)
{
	if (pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	else if (pid > 0)
		(void)kill(pid, SIGKILL);
}

uint64_t qemu_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int qemu_wait(pid_t pid, int pidfd, int timeout_ms, int *ret_status)
{
	uint64_t deadline = qemu_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		pid_t r = waitpid(pid, ret_status, WNOHANG);
		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
		uint64_t now = qemu_now_ms();
		if (now >= deadline)
			return 0;
		int left = (int)(deadline - now);
		if (pidfd >= 0) {
			struct pollfd p = {.fd = pidfd, .events = POLLIN};
			(void)poll(&p, 1, left);
		} else {
			(void)poll(NULL, 0, left < 10 ? left : 10);
		}
	}
}
