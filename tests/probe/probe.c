/* probe.c — paddock-probe, the static payload the escape tests run inside boxes (crun's
 * tests/init.c style): one binary, one subcommand per attack.
 *
 * Each subcommand attempts ONE kind of attack, prints one line per attempt saying what it
 * tried and what happened (with the errno name), a final verdict line, and exits:
 *   0  every attempt was blocked (the expected outcome inside a box)
 *   1  at least one attempt SUCCEEDED: an escape (or a missing layer)
 *   2  the probe could not run the check (bad arguments, missing setup): a test failure too
 * Attempts never destroy anything: writes go to fresh files or rewrite a byte with its own
 * value, kernel interfaces are opened but not written where a write would change the host.
 * Run `paddock-probe list` for the table; docs/escape-tests.md explains each check. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/openat2.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/reboot.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/reboot.h>
#include <linux/vm_sockets.h>
#include <linux/if_alg.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#ifndef TIOCL_GETSHIFTSTATE
#define TIOCL_GETSHIFTSTATE 6
#endif
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

enum { BLOCKED = 0, ESCAPED = 1, PROBE_ERROR = 2 };

#define ERRS(...) ((const int[]){ __VA_ARGS__, 0 })
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_READ (1 << 20)

static const char *g_cmd = "paddock-probe";
static int g_verdict = BLOCKED;

/* ---------------------------------------------------------------- reporting */

static const char *verdict_name(int v)
{
	return v == ESCAPED ? "ESCAPED" : v == PROBE_ERROR ? "CANNOT-CHECK" : "blocked";
}

static const char *errname(int e)
{
	const char *n = e ? strerrorname_np(e) : "success";
	return n ? n : "E?";
}

/* ESCAPED beats PROBE_ERROR beats BLOCKED: one escape makes the whole run an escape. */
static void raise_verdict(int v)
{
	if (v == ESCAPED || (v == PROBE_ERROR && g_verdict == BLOCKED))
		g_verdict = v;
}

static void __attribute__((format(printf, 2, 3))) report(int v, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", g_cmd);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" -> %s\n", verdict_name(v));
	raise_verdict(v);
}

static void __attribute__((format(printf, 1, 2))) info(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", g_cmd);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static bool errno_in(int e, const int *set)
{
	for (; *set; set++)
		if (*set == e)
			return true;
	return false;
}

static int __attribute__((format(printf, 5, 0))) judge_v(long rc, int err, const int *ok, const int *reach, const char *fmt, va_list ap)
{
	bool reached = rc < 0 && reach && errno_in(err, reach);
	char what[512];
	int v;

	vsnprintf(what, sizeof(what), fmt, ap);
	v = rc >= 0 || reached ? ESCAPED : errno_in(err, ok) ? BLOCKED : PROBE_ERROR;
	report(v, "%s: %s%s", what, rc >= 0 ? "succeeded" : errname(err),
	       reached ? " (the kernel got past its privilege check)" : "");
	return v;
}

/* Judges an attempt that must fail: rc >= 0 is an escape, an errno from `ok` is the block
 * we expect, anything else means the probe cannot tell. Returns the verdict. */
static int __attribute__((format(printf, 4, 5))) must_fail(long rc, int err, const int *ok, const char *fmt, ...)
{
	va_list ap;
	int v;

	va_start(ap, fmt);
	v = judge_v(rc, err, ok, NULL, fmt, ap);
	va_end(ap);
	return v;
}

/* must_fail for calls whose argument errors (listed in `reach`, e.g. EINVAL from junk
 * arguments) are only reported after the privilege check: those errnos are escapes too. */
static int __attribute__((format(printf, 5, 6))) must_be_refused(long rc, int err, const int *ok, const int *reach,
								 const char *fmt, ...)
{
	va_list ap;
	int v;

	va_start(ap, fmt);
	v = judge_v(rc, err, ok, reach, fmt, ap);
	va_end(ap);
	return v;
}

/* The usual ways a kernel or seccomp refuses a privileged call. */
static const int DENIED[] = { EPERM, EACCES, ENOSYS, 0 };

/* ---------------------------------------------------------------- small helpers */

static void close_if(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* Reads up to MAX_READ bytes of fd into a NUL-terminated malloc'd buffer. */
static char *read_fd_all(int fd, size_t *ret_len)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	ssize_t n;

	if (!buf)
		return NULL;
	while (len < MAX_READ) {
		if (len == cap) {
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

/* Reads a whole small file (e.g. under /proc); NULL with errno set on failure. */
static char *read_file(int dirfd, const char *path, size_t *ret_len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char *buf;
	int saved;

	if (fd < 0)
		return NULL;
	buf = read_fd_all(fd, ret_len);
	saved = errno;
	close(fd);
	errno = saved;
	return buf;
}

/* Does buf (len bytes, may contain NULs, e.g. /proc/PID/environ) contain token? */
static bool has_token(const char *buf, size_t len, const char *token)
{
	return buf && token && *token && memmem(buf, len, token, strlen(token)) != NULL;
}

/* Reads path (relative to dirfd) and judges: unreadable = blocked, readable with the host
 * token = escape, readable without it = the box's own file (blocked, said so). */
static void judge_host_read(int dirfd, const char *path, const char *token, const char *label)
{
	size_t len = 0;
	char *buf = read_file(dirfd, path, &len);

	if (!buf) {
		int e = errno;
		must_fail(-1, e, ERRS(ENOENT, EACCES, EPERM, ENOTDIR, ELOOP, ENXIO, ESRCH, EINVAL),
			  "read %s", label);
		return;
	}
	if (!token)
		report(ESCAPED, "read %s: %zu bytes", label, len);
	else if (has_token(buf, len, token))
		report(ESCAPED, "read %s: host canary token found", label);
	else
		report(BLOCKED, "read %s: readable, %zu bytes, no host token (the box's own file)", label, len);
	free(buf);
}

/* A writable scratch directory inside the box (for mount targets, mknod, chroot). */
static const char *scratch_dir(void)
{
	static char dir[256];
	const char *bases[] = { getenv("TMPDIR"), "/tmp", "/dev/shm", getenv("HOME"), "/var/tmp" };

	if (dir[0])
		return dir;
	for (size_t i = 0; i < ARRAY_SIZE(bases); i++) {
		if (!bases[i] || !*bases[i])
			continue;
		snprintf(dir, sizeof(dir), "%s/pdprobe.XXXXXX", bases[i]);
		if (mkdtemp(dir))
			return dir;
	}
	dir[0] = '\0';
	return NULL;
}

static void scratch_cleanup(void)
{
	const char *d = scratch_dir();

	if (d)
		rmdir(d);
}

static bool parse_long(const char *s, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*ret = v;
	return true;
}

/* Runs fn(arg) in a forked child, so attacks that change the caller (setns, unshare,
 * chroot, personality) or may kill it (seccomp SIGSYS) leave the probe intact. fn returns 0
 * on success or an errno. On return *ret_err is that value and *ret_sig the killing signal. */
static int in_child(int (*fn)(void *), void *arg, int *ret_err, int *ret_sig)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int r = fn(arg);
		_exit(r < 0 ? 255 : r > 254 ? 254 : r);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	*ret_sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	*ret_err = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
	return 0;
}

/* in_child + judgement: killed by SIGSYS (seccomp kill) counts as blocked too. */
static int __attribute__((format(printf, 5, 0)))
child_judge(int (*fn)(void *), void *arg, const int *ok, const int *reach, const char *fmt, va_list ap)
{
	char what[512];
	int err = 0, sig = 0, v;

	vsnprintf(what, sizeof(what), fmt, ap);
	if (in_child(fn, arg, &err, &sig) < 0) {
		report(PROBE_ERROR, "%s: cannot fork", what);
		return PROBE_ERROR;
	}
	if (sig) {
		v = sig == SIGSYS ? BLOCKED : PROBE_ERROR;
		report(v, "%s: child killed by signal %d (%s)", what, sig, sigabbrev_np(sig) ?: "?");
		return v;
	}
	return must_be_refused(err == 0 ? 0 : -1, err, ok, reach, "%s", what);
}

static int __attribute__((format(printf, 4, 5))) child_must_fail(int (*fn)(void *), void *arg, const int *ok,
								 const char *fmt, ...)
{
	va_list ap;
	int v;

	va_start(ap, fmt);
	v = child_judge(fn, arg, ok, NULL, fmt, ap);
	va_end(ap);
	return v;
}

static int __attribute__((format(printf, 5, 6))) child_must_be_refused(int (*fn)(void *), void *arg, const int *ok,
								       const int *reach, const char *fmt, ...)
{
	va_list ap;
	int v;

	va_start(ap, fmt);
	v = child_judge(fn, arg, ok, reach, fmt, ap);
	va_end(ap);
	return v;
}

static int errno_or(long rc)
{
	return rc < 0 ? errno : 0;
}

/* Lists the numeric entries of /proc (visible pids), up to max. */
static size_t list_pids(pid_t *pids, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while (n < max && (de = readdir(d))) {
		long v;
		if (parse_long(de->d_name, &v) && v > 0)
			pids[n++] = (pid_t)v;
	}
	closedir(d);
	return n;
}

/* The parent pid of pid from /proc/PID/stat, 0 if unknown. */
static pid_t parent_of(pid_t pid)
{
	char path[64], *buf, *p;
	long pp = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	buf = read_file(AT_FDCWD, path, NULL);
	if (!buf)
		return 0;
	p = strrchr(buf, ')');
	if (p && sscanf(p + 1, " %*c %ld", &pp) != 1)
		pp = 0;
	free(buf);
	return (pid_t)pp;
}

/* State letter of pid ('Z' zombie, 'R', 'S', ...), 0 when it does not exist. */
static char proc_state(pid_t pid)
{
	char path[64], *buf, *p, st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	buf = read_file(AT_FDCWD, path, NULL);
	if (!buf)
		return 0;
	p = strrchr(buf, ')');
	if (p && p[1] == ' ')
		st = p[2];
	free(buf);
	return st;
}

/* ---------------------------------------------------------------- filesystem */

/* read-host-file PATH [TOKEN]: reading a host file from inside must fail (or find only the
 * box's own file, which never holds the host canary's TOKEN). */
static int c_read_host_file(int argc, char **argv)
{
	if (argc < 1)
		return PROBE_ERROR;
	judge_host_read(AT_FDCWD, argv[0], argc > 1 ? argv[1] : NULL, argv[0]);
	return g_verdict;
}

/* write-outside PATH: creating (or opening for write) a file the box must not write. An
 * existing file is only opened, never modified. */
static int c_write_outside(int argc, char **argv)
{
	static const char marker[] = "paddock-probe was here\n";
	const char *path = argv[0];
	struct stat st;
	int fd;

	if (argc < 1)
		return PROBE_ERROR;
	if (lstat(path, &st) == 0) {
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
		must_fail(fd, errno_or(fd), ERRS(EROFS, EACCES, EPERM, ELOOP, ETXTBSY),
			  "open existing %s for writing", path);
		close_if(fd);
		return g_verdict;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (must_fail(fd, errno_or(fd), ERRS(EROFS, EACCES, EPERM, ENOENT, ENOTDIR),
		      "create %s", path) == ESCAPED) {
		if (write(fd, marker, sizeof(marker) - 1) < 0)
			info("(write after create failed: %s)", errname(errno));
	}
	close_if(fd);
	return g_verdict;
}

/* ro-bind DIR: DIR is a read-only bind (-v HOST:DIR:ro) holding a file `canary`. Every way
 * of changing it must fail with EROFS/EACCES/EPERM, including a re-open via /proc/self/fd. */
static int c_ro_bind(int argc, char **argv)
{
	const int *ok = ERRS(EROFS, EACCES, EPERM);
	char f[4096], g[4096], via[64];
	int fd, pfd;
	long rc;

	if (argc < 1)
		return PROBE_ERROR;
	snprintf(f, sizeof(f), "%s/canary", argv[0]);
	if (access(f, F_OK) < 0) {
		report(PROBE_ERROR, "%s missing: the test must bind a dir holding `canary`", f);
		return g_verdict;
	}
	fd = open(f, O_WRONLY | O_CLOEXEC);
	must_fail(fd, errno_or(fd), ok, "open %s O_WRONLY", f);
	close_if(fd);
	fd = open(f, O_RDWR | O_APPEND | O_CLOEXEC);
	must_fail(fd, errno_or(fd), ok, "open %s O_RDWR|O_APPEND", f);
	close_if(fd);
	pfd = open(f, O_PATH | O_CLOEXEC);
	snprintf(via, sizeof(via), "/proc/self/fd/%d", pfd);
	fd = pfd < 0 ? -1 : open(via, O_WRONLY | O_CLOEXEC);
	must_fail(fd, pfd < 0 ? ENOENT : errno_or(fd), ERRS(EROFS, EACCES, EPERM, ENOENT),
		  "re-open %s for writing via %s", f, via);
	close_if(fd);
	close_if(pfd);
	rc = truncate(f, 0);
	must_fail(rc, errno_or(rc), ok, "truncate %s", f);
	rc = chmod(f, 04777);
	must_fail(rc, errno_or(rc), ok, "chmod 04777 %s", f);
	rc = chown(f, 0, 0);
	must_fail(rc, errno_or(rc), ERRS(EROFS, EACCES, EPERM, EINVAL), "chown 0:0 %s", f);
	rc = chown(f, getuid(), getgid());
	must_fail(rc, errno_or(rc), ERRS(EROFS, EACCES, EPERM, EINVAL), "chown self %s", f);
	rc = utimensat(AT_FDCWD, f, NULL, 0);
	must_fail(rc, errno_or(rc), ok, "utimensat %s", f);
	rc = setxattr(f, "user.paddock_probe", "x", 1, 0);
	must_fail(rc, errno_or(rc), ERRS(EROFS, EACCES, EPERM, ENOTSUP), "setxattr %s", f);
	snprintf(g, sizeof(g), "%s/probe-new", argv[0]);
	fd = open(g, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	must_fail(fd, errno_or(fd), ok, "create %s", g);
	if (fd >= 0)
		unlink(g);
	close_if(fd);
	rc = mkdir(g, 0755);
	must_fail(rc, errno_or(rc), ok, "mkdir %s", g);
	rc = link(f, g);
	must_fail(rc, errno_or(rc), ok, "link %s", g);
	rc = symlink("/", g);
	must_fail(rc, errno_or(rc), ok, "symlink %s", g);
	rc = rename(f, g);
	must_fail(rc, errno_or(rc), ok, "rename %s", f);
	rc = unlink(f);
	must_fail(rc, errno_or(rc), ok, "unlink %s", f);
	return g_verdict;
}

/* A new file under DIR made with set-id bits by one route; an escape if the call succeeded or
 * the file has either bit. */
static void try_setid_create(const char *dir, const char *how, long (*make)(const char *path))
{
	char p[4096];
	struct stat st;
	long rc;

	snprintf(p, sizeof(p), "%s/pd-setid-%s", dir, how);
	rc = make(p);
	must_fail(rc, errno_or(rc), DENIED, "%s %s with mode 04755/02755", how, p);
	if (rc >= 0 && rc != 0x7fffffff)
		close((int)rc);
	if (stat(p, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		report(ESCAPED, "%s has mode %o", p, (unsigned)st.st_mode & 07777);
}

static long mk_open(const char *p) { return open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755); }
static long mk_openat(const char *p) { return syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_CLOEXEC, 02755); }
static long mk_creat(const char *p) { return syscall(SYS_creat, p, 04755); }
static long mk_mknod(const char *p) { return mknod(p, S_IFREG | 04755, 0) == 0 ? 0x7fffffff : -1; }
static long mk_mknodat(const char *p) { return mknodat(AT_FDCWD, p, S_IFREG | 02755, 0) == 0 ? 0x7fffffff : -1; }
static long mk_openat2(const char *p)
{
	struct open_how how = { .flags = O_WRONLY | O_CREAT | O_CLOEXEC, .mode = 04755 };
	return syscall(SYS_openat2, AT_FDCWD, p, &how, sizeof(how));
}

/* setid-bind DIR: on a writable bind (a host directory), no file gets a setuid or setgid bit:
 * chmod/fchmod/fchmodat/fchmodat2 of DIR's own file, and creating one with the bits by open,
 * openat, creat, mknod, mknodat, openat2. The file made for the chmods is left for the test
 * to inspect on the host. */
static int c_setid_bind(int argc, char **argv)
{
	static const struct { const char *how; long (*make)(const char *); } makers[] = {
		{ "open", mk_open }, { "openat", mk_openat }, { "creat", mk_creat },
		{ "mknod", mk_mknod }, { "mknodat", mk_mknodat }, { "openat2", mk_openat2 },
	};
	char f[4096];
	struct stat st;
	long rc;
	int fd;

	if (argc < 1)
		return PROBE_ERROR;
	snprintf(f, sizeof(f), "%s/pd-setid-chmod", argv[0]);
	fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	if (fd < 0) {
		report(PROBE_ERROR, "cannot create %s: %s (the test must bind a writable dir)", f, strerror(errno));
		return g_verdict;
	}
	rc = chmod(f, 04755);
	must_fail(rc, errno_or(rc), DENIED, "chmod u+s %s", f);
	rc = chmod(f, 02755);
	must_fail(rc, errno_or(rc), DENIED, "chmod g+s %s", f);
	rc = fchmod(fd, 06755);
	must_fail(rc, errno_or(rc), DENIED, "fchmod 06755 %s", f);
	rc = fchmodat(AT_FDCWD, f, 04755, 0);
	must_fail(rc, errno_or(rc), DENIED, "fchmodat 04755 %s", f);
	rc = syscall(452 /* fchmodat2 */, AT_FDCWD, f, 02755, 0);
	must_fail(rc, errno_or(rc), DENIED, "fchmodat2 02755 %s", f);
	rc = syscall(SYS_chmod, f, (1UL << 40) | 04755);
	must_fail(rc, errno_or(rc), DENIED, "chmod (1<<40)|04755 %s", f);
	close(fd);
	if (stat(f, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		report(ESCAPED, "%s has mode %o", f, (unsigned)st.st_mode & 07777);
	for (size_t i = 0; i < ARRAY_SIZE(makers); i++)
		try_setid_create(argv[0], makers[i].how, makers[i].make);
	return g_verdict;
}

/* Tries HOSTPATH through one process's /proc/PID/root and /proc/PID/cwd, also climbing
 * with "..", and relative to an O_PATH fd of its root. */
static void try_proc_root(pid_t pid, const char *hostpath, const char *token)
{
	char root[64], p[4200], label[4300];
	int rfd;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	snprintf(p, sizeof(p), "%s%s", root, hostpath);
	judge_host_read(AT_FDCWD, p, token, p);
	snprintf(p, sizeof(p), "%s/../../..%s", root, hostpath);
	judge_host_read(AT_FDCWD, p, token, p);
	snprintf(p, sizeof(p), "/proc/%d/cwd/../../../../../..%s", pid, hostpath);
	judge_host_read(AT_FDCWD, p, token, p);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return;
	snprintf(label, sizeof(label), "openat(%s, \"%s\")", root, hostpath + 1);
	judge_host_read(rfd, hostpath + 1, token, label);
	snprintf(p, sizeof(p), "../../..%s", hostpath);
	snprintf(label, sizeof(label), "openat(%s, \"%s\")", root, p);
	judge_host_read(rfd, p, token, label);
	close(rfd);
}

/* proc1-root HOSTPATH TOKEN: every visible process's root and cwd (PID 1 is paddock-init
 * inside a box) must lead only to the box's own tree: HOSTPATH never shows the host
 * canary's TOKEN, however it is reached. */
static int c_proc1_root(int argc, char **argv)
{
	pid_t pids[4096];
	char link[4096];
	size_t n;
	ssize_t l;

	if (argc < 2 || argv[0][0] != '/' || strlen(argv[0]) > 4000)
		return PROBE_ERROR;
	l = readlink("/proc/1/root", link, sizeof(link) - 1);
	info("/proc/1/root -> %s", l < 0 ? errname(errno) : (link[l] = '\0', link));
	n = list_pids(pids, ARRAY_SIZE(pids));
	info("%zu processes visible in /proc", n);
	for (size_t i = 0; i < n; i++)
		try_proc_root(pids[i], argv[0], argv[1]);
	return g_verdict;
}

/* proc-ppid TOKEN [HOSTPATH FILETOKEN]: walk up the parent chain from getppid(): no
 * ancestor's environ holds the host's secret env TOKEN and no ancestor's root shows the
 * host file. Then scan every visible process's environ for TOKEN. */
static int c_proc_ppid(int argc, char **argv)
{
	pid_t pids[4096], pid = getppid();
	char p[8192];
	size_t n;
	int hops = 0;

	if (argc < 1 || (argc >= 2 && argc < 3))
		return PROBE_ERROR;
	info("getppid() = %d", pid);
	for (; pid > 0 && hops < 64; pid = parent_of(pid), hops++) {
		char exe[4096];
		ssize_t l;
		snprintf(p, sizeof(p), "/proc/%d/exe", pid);
		l = readlink(p, exe, sizeof(exe) - 1);
		info("ancestor %d exe -> %s", pid, l < 0 ? errname(errno) : (exe[l] = '\0', exe));
		snprintf(p, sizeof(p), "/proc/%d/environ", pid);
		judge_host_read(AT_FDCWD, p, argv[0], p);
		if (argc >= 3) {
			snprintf(p, sizeof(p), "/proc/%d/root%s", pid, argv[1]);
			judge_host_read(AT_FDCWD, p, argv[2], p);
		}
		if (pid == 1)
			break;
	}
	n = list_pids(pids, ARRAY_SIZE(pids));
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		char *buf;
		snprintf(p, sizeof(p), "/proc/%d/environ", pids[i]);
		buf = read_file(AT_FDCWD, p, &len);
		if (has_token(buf, len, argv[0]))
			report(ESCAPED, "%s holds the host env token", p);
		free(buf);
	}
	report(g_verdict == ESCAPED ? ESCAPED : BLOCKED, "scanned %zu environs for the host token", n);
	return g_verdict;
}

/* env-leak TOKEN: the box's own environment must not carry a host variable's value. */
static int c_env_leak(int argc, char **argv)
{
	extern char **environ;
	size_t len = 0, n = 0;
	char *buf;

	if (argc < 1)
		return PROBE_ERROR;
	for (char **e = environ; *e; e++, n++)
		if (strstr(*e, argv[0]))
			report(ESCAPED, "environ entry %.*s=... holds the host token",
			       (int)strcspn(*e, "="), *e);
	buf = read_file(AT_FDCWD, "/proc/self/environ", &len);
	if (has_token(buf, len, argv[0]))
		report(ESCAPED, "/proc/self/environ holds the host token");
	free(buf);
	report(g_verdict == ESCAPED ? ESCAPED : BLOCKED, "%zu environment entries, no host token", n);
	return g_verdict;
}

static const char *fd_kind(mode_t m)
{
	return S_ISDIR(m) ? "dir" : S_ISREG(m) ? "file" : S_ISSOCK(m) ? "socket" : S_ISFIFO(m) ? "pipe"
		: S_ISCHR(m) ? "chardev" : S_ISBLK(m) ? "blockdev" : S_ISLNK(m) ? "symlink" : "other";
}

/* Climbs from a directory fd with openat(fd, "..") and says whether the top reached is
 * another tree than the box's root: a directory fd from the host escapes any chroot. A
 * leaked fd is an escape whatever the top; for the cwd only another tree is. */
static void climb_dir_fd(int fd, bool leaked)
{
	struct stat top, root;
	int cur = dup(fd);

	for (int i = 0; i < 256 && cur >= 0; i++) {
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat a, b;
		if (up < 0 || fstat(cur, &a) < 0 || fstat(up, &b) < 0) {
			close_if(up);
			break;
		}
		close(cur);
		cur = up;
		if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			break;
	}
	if (cur >= 0 && fstat(cur, &top) == 0 && stat("/", &root) == 0) {
		bool same = top.st_dev == root.st_dev && top.st_ino == root.st_ino;
		report(leaked || !same ? ESCAPED : BLOCKED, "fd %d: openat(\"..\") climbs to %s (dev %u:%u ino %ju)", fd,
		       same ? "the box's root" : "ANOTHER tree", major(top.st_dev), minor(top.st_dev),
		       (uintmax_t)top.st_ino);
	} else {
		report(PROBE_ERROR, "fd %d: cannot climb: %s", fd, errname(errno));
	}
	close_if(cur);
}

/* leaked-fds: nothing but 0, 1, 2 may be open when a box's command starts. */
static int c_leaked_fds(int argc, char **argv)
{
	int found = 0;

	for (int fd = 3; fd <= 4096; fd++) {
		char via[64], target[4096] = "?";
		struct stat st;
		ssize_t l;
		if (fcntl(fd, F_GETFD) < 0)
			continue;
		found++;
		snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
		l = readlink(via, target, sizeof(target) - 1);
		if (l >= 0)
			target[l] = '\0';
		if (fstat(fd, &st) < 0)
			st.st_mode = 0;
		report(ESCAPED, "fd %d is open: %s -> %s", fd, fd_kind(st.st_mode), target);
		if (S_ISDIR(st.st_mode))
			climb_dir_fd(fd, true);
	}
	if (!found)
		report(BLOCKED, "fds 3..4096: none open");
	return g_verdict;
}

/* Tries to get write access to path: direct opens, and an O_PATH fd re-opened through
 * /proc/self/fd (the CVE-2019-5736 route). A success rewrites byte 0 with its own value:
 * proof of write access that leaves the content unchanged. */
static void try_write_exe(const char *path)
{
	const int *ok = ERRS(ETXTBSY, EACCES, EPERM, EROFS, ENOENT, ESRCH);
	const int flags[] = { O_WRONLY, O_RDWR };
	char via[64];
	int pfd;

	for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
		int fd = open(path, flags[i] | O_CLOEXEC);
		if (fd < 0) {
			must_fail(-1, errno, ok, "open %s %s", path, i ? "O_RDWR" : "O_WRONLY");
			continue;
		}
		unsigned char b = 0x7f;
		int rfd = open(path, O_RDONLY | O_CLOEXEC);
		if (rfd >= 0 && pread(rfd, &b, 1, 0) != 1)
			b = 0x7f;
		close_if(rfd);
		ssize_t w = pwrite(fd, &b, 1, 0);
		must_fail(w, errno_or(w), ok, "open %s %s then rewrite byte 0", path, i ? "O_RDWR" : "O_WRONLY");
		close(fd);
	}
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		must_fail(-1, errno, ok, "open %s O_PATH", path);
		return;
	}
	snprintf(via, sizeof(via), "/proc/self/fd/%d", pfd);
	int fd = open(via, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		unsigned char b = 0x7f;
		if (pread(fd, &b, 1, 0) != 1)
			b = 0x7f;
		ssize_t w = pwrite(fd, &b, 1, 0);
		must_fail(w, errno_or(w), ok, "re-open %s via %s O_RDWR then rewrite byte 0", path, via);
		close(fd);
	} else {
		must_fail(-1, errno, ok, "re-open %s via %s O_RDWR", path, via);
	}
	close(pfd);
}

/* The CVE-2019-5736 route, our last act: keep an O_PATH fd of our own binary and exec
 * /bin/sh, which re-opens it for appending (writing nothing). After the exec nothing runs
 * the binary any more, so ETXTBSY no longer protects it: only the read-only mount or the
 * permissions can. The shell prints the attempt's line and the verdict and exits with it. */
static void reopen_after_exec(void)
{
	const char *what = "re-open our binary for writing after exec of /bin/sh";
	int fd = open("/proc/self/exe", O_PATH);
	char script[1024];

	if (fd < 0) {
		must_fail(-1, errno, ERRS(EACCES, EPERM, ENOENT), "open /proc/self/exe O_PATH");
		return;
	}
	/* `true` is not a special builtin: a failed redirection does not end the shell. */
	snprintf(script, sizeof(script),
		 "if true 2>/dev/null >>/proc/self/fd/%d; then echo '%s: %s: succeeded -> ESCAPED';"
		 " echo '%s: verdict ESCAPED'; exit 1; fi;"
		 " echo '%s: %s: refused -> blocked'; echo '%s: verdict %s'; exit %d",
		 fd, g_cmd, what, g_cmd, g_cmd, what, g_cmd, verdict_name(g_verdict), g_verdict);
	fflush(NULL);
	execl("/bin/sh", "sh", "-c", script, (char *)NULL);
	report(PROBE_ERROR, "exec /bin/sh: %s", errname(errno));
	close(fd);
}

/* overwrite-exe [PATH...]: the running binaries (our own, PID 1's, our parent's) must not
 * be writable from inside: rewriting paddock-init or a host binary is a host escape. The
 * kernel refuses writes to a file being executed (ETXTBSY), so the CVE-2019-5736 route is
 * tried last (reopen_after_exec). */
static int c_overwrite_exe(int argc, char **argv)
{
	char p[64];
	/* --not-self: our own binary is the box's to rewrite (an image's file, as root in a
	 * build box's own layer): only PID 1 (paddock-init), the parent and PATHs are tried */
	bool self = !(argc > 0 && strcmp(argv[0], "--not-self") == 0);

	if (!self)
		argc--, argv++;
	else
		try_write_exe("/proc/self/exe");
	try_write_exe("/proc/1/exe");
	if (getppid() > 1) {
		snprintf(p, sizeof(p), "/proc/%d/exe", getppid());
		try_write_exe(p);
	}
	for (int i = 0; i < argc; i++)
		try_write_exe(argv[i]);
	if (!self)
		info("after-exec route not tried (--not-self)");
	else if (g_verdict != ESCAPED && access("/bin/sh", X_OK) == 0)
		reopen_after_exec();
	else
		info("after-exec route not tried (%s)", g_verdict == ESCAPED ? "already escaped" : "no /bin/sh");
	return g_verdict;
}

/* ---------------------------------------------------------------- mounts and roots */

/* mount [DIR]: no new mounts, binds or remounts inside a running box (the mount syscalls
 * are denied after setup). Anything that got mounted is undone at once. */
static int c_mount(int argc, char **argv)
{
	const char *dir = argc > 0 ? argv[0] : scratch_dir();
	long rc;
	int fd;

	if (!dir) {
		report(PROBE_ERROR, "no writable scratch directory");
		return g_verdict;
	}
	rc = mount("none", dir, "tmpfs", 0, "size=1m");
	if (must_fail(rc, errno_or(rc), DENIED, "mount tmpfs on %s", dir) == ESCAPED)
		umount2(dir, MNT_DETACH);
	rc = mount("/", dir, NULL, MS_BIND | MS_REC, NULL);
	if (must_fail(rc, errno_or(rc), DENIED, "bind-mount / on %s", dir) == ESCAPED)
		umount2(dir, MNT_DETACH);
	/* MS_BIND makes this a per-mount flag change, never a superblock remount. */
	rc = mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL);
	must_fail(rc, errno_or(rc), DENIED, "remount / read-write (MS_REMOUNT|MS_BIND)");
	rc = umount2(dir, MNT_DETACH);
	/* EINVAL here means the kernel got past the privilege check (dir is no mount point). */
	must_be_refused(rc, errno_or(rc), DENIED, ERRS(EINVAL), "umount2 %s (not a mount point)", dir);
	fd = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	must_fail(fd, errno_or(fd), DENIED, "fsopen tmpfs");
	close_if(fd);
	fd = (int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	must_fail(fd, errno_or(fd), DENIED, "open_tree / OPEN_TREE_CLONE");
	close_if(fd);
	/* open_tree_attr (Linux 6.15, x86-64 467): a clone of / with the read-only flag cleared */
	uint64_t attr[4] = { 0, 0x1 /* attr_clr: MOUNT_ATTR_RDONLY */, 0, 0 };
	fd = (int)syscall(467, AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE, attr, sizeof(attr));
	must_fail(fd, errno_or(fd), DENIED, "open_tree_attr / OPEN_TREE_CLONE, read-only cleared");
	close_if(fd);
	if (argc == 0)
		scratch_cleanup();
	return g_verdict;
}

static int do_pivot_root(void *arg)
{
	if (chdir("/") < 0)
		return errno;
	return errno_or(syscall(SYS_pivot_root, ".", "."));
}

/* pivot-root: pivot_root(".", ".") on / (the runc trick) must be refused. EINVAL or EBUSY
 * would mean the privilege check passed, so only EPERM/EACCES/ENOSYS count as blocked. */
static int c_pivot_root(int argc, char **argv)
{
	child_must_be_refused(do_pivot_root, NULL, DENIED, ERRS(EINVAL, EBUSY), "pivot_root(\".\", \".\") in /");
	return g_verdict;
}

static int do_chroot(void *arg)
{
	return errno_or(chroot((const char *)arg));
}

/* chroot [DIR]: chroot needs CAP_SYS_CHROOT; with it, the classic chroot-in-chroot breakout
 * follows. Must fail. */
static int c_chroot(int argc, char **argv)
{
	const char *dir = argc > 0 ? argv[0] : scratch_dir();

	if (!dir) {
		report(PROBE_ERROR, "no writable scratch directory");
		return g_verdict;
	}
	child_must_fail(do_chroot, (void *)dir, DENIED, "chroot %s", dir);
	child_must_fail(do_chroot, (void *)"/", DENIED, "chroot /");
	if (argc == 0)
		scratch_cleanup();
	return g_verdict;
}

/* mknod [DIR]: device nodes (char 1:1 = /dev/mem, block 8:0 = /dev/sda) must not be
 * creatable; a node inside the box would open the host's device. */
static int c_mknod(int argc, char **argv)
{
	static const struct { const char *name; mode_t mode; unsigned ma, mi; } nodes[] = {
		{ "mem", S_IFCHR, 1, 1 }, { "sda", S_IFBLK, 8, 0 }, { "vda", S_IFBLK, 254, 0 },
	};
	const char *dir = argc > 0 ? argv[0] : scratch_dir();
	char p[4096];

	if (!dir) {
		report(PROBE_ERROR, "no writable scratch directory");
		return g_verdict;
	}
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		long rc;
		snprintf(p, sizeof(p), "%s/pd-%s", dir, nodes[i].name);
		rc = mknod(p, nodes[i].mode | 0600, makedev(nodes[i].ma, nodes[i].mi));
		if (must_fail(rc, errno_or(rc), ERRS(EPERM, EACCES, EROFS), "mknod %s %s %u:%u", p,
			      S_ISCHR(nodes[i].mode) ? "char" : "block", nodes[i].ma, nodes[i].mi) == ESCAPED)
			unlink(p);
	}
	if (argc == 0)
		scratch_cleanup();
	return g_verdict;
}

/* Devices a box may have (DESIGN: null zero full random urandom tty ptmx console, pts). */
static bool dev_allowed(dev_t rdev)
{
	unsigned ma = major(rdev), mi = minor(rdev);

	if (ma == 1)
		return mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9;
	if (ma == 5)
		return mi <= 2;
	return ma >= 136 && ma <= 143;
}

static void try_open_dev(const char *path)
{
	int fd = open(path, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS))
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	must_fail(fd, errno_or(fd), ERRS(ENOENT, EACCES, EPERM, ENXIO, ENODEV, EROFS, EIO),
		  "open %s", path);
	close_if(fd);
}

/* Walks /dev (depth 3) and tries every device node outside the allowed set. */
static void scan_dev(const char *dir, int depth)
{
	DIR *d = depth > 3 ? NULL : opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[4096];
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			scan_dev(p, depth + 1);
		else if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && !dev_allowed(st.st_rdev))
			try_open_dev(p);
	}
	closedir(d);
}

/* dev-access: host devices (memory, kernel log, disks, KVM, VTs, loop, tun) must not be
 * reachable, by name or by any extra node found under /dev. */
static int c_dev_access(int argc, char **argv)
{
	static const char *const devs[] = {
		"/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/nvme0n1",
		"/dev/kvm", "/dev/tty0", "/dev/tty1", "/dev/ttyS0", "/dev/vcs", "/dev/loop-control",
		"/dev/loop0", "/dev/zram0", "/dev/fuse", "/dev/net/tun", "/dev/vsock", "/dev/vhost-vsock",
		"/dev/btrfs-control", "/dev/hwrng", "/dev/cpu/0/msr", "/dev/userfaultfd", "/dev/dri/card0",
	};

	for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
		try_open_dev(devs[i]);
	for (int i = 0; i < argc; i++)
		try_open_dev(argv[i]);
	scan_dev("/dev", 0);
	return g_verdict;
}

/* ---------------------------------------------------------------- privileges */

struct creds { long euid, suid; uint64_t capeff, capprm; char name[64]; };

static bool read_creds(pid_t pid, struct creds *c)
{
	char path[64], *buf, *l;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	buf = read_file(AT_FDCWD, path, NULL);
	if (!buf)
		return false;
	memset(c, 0, sizeof(*c));
	c->euid = c->suid = -1;
	for (l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		sscanf(l, "Name:\t%63s", c->name);
		sscanf(l, "Uid:\t%*s\t%ld\t%ld", &c->euid, &c->suid);
		sscanf(l, "CapEff:\t%" SCNx64, &c->capeff);
		sscanf(l, "CapPrm:\t%" SCNx64, &c->capprm);
	}
	free(buf);
	return true;
}

static bool creds_gained(const struct creds *now, const struct creds *base)
{
	return now->euid != base->euid || now->suid != base->suid || (now->capeff & ~base->capeff) ||
	       (now->capprm & ~base->capprm);
}

/* Execs path with stdin a pipe nobody writes (so su/passwd sit at their password prompt)
 * and samples /proc/PID/status until it exits or ~300 ms after the exec: a set-user-ID or
 * file-capability binary must not give it any uid or capability we do not have. A copy of
 * this probe is run as `suid-report` and says so itself (exit 1 = it gained something). */
static void exec_and_watch(const char *path, const struct creds *base)
{
	char capeff[32], euid[32];
	const char *base_name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	bool self = strstr(base_name, "probe") != NULL, gained = false, execd = false;
	struct creds now, seen = *base;
	int in[2], status = 0;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0) {
		report(PROBE_ERROR, "pipe: %s", errname(errno));
		return;
	}
	snprintf(capeff, sizeof(capeff), "%" PRIx64, base->capeff);
	snprintf(euid, sizeof(euid), "%ld", base->euid);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char *const av_self[] = { (char *)path, "suid-report", euid, capeff, NULL };
		char *const av[] = { (char *)path, NULL };
		dup2(in[0], 0);
		int null = open("/dev/null", O_WRONLY);
		if (!self && null >= 0)
			dup2(null, 1), dup2(null, 2);
		execv(path, self ? av_self : av);
		_exit(127);
	}
	close(in[0]);
	for (int t = 0, after = 0; pid > 0 && t < 2000 && after < 300; t++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pid = 0;
			break;
		}
		if (read_creds(pid, &now)) {
			execd = execd || strncmp(now.name, base->name, 15) != 0;
			if (creds_gained(&now, base))
				gained = true, seen = now;
		}
		after += execd;
		usleep(1000);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(in[1]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		report(BLOCKED, "exec %s: could not exec (missing or not executable)", path);
		return;
	}
	if (self && WIFEXITED(status) && WEXITSTATUS(status) == 1)
		gained = true;
	if (gained)
		report(ESCAPED, "exec %s: euid %ld->%ld capeff %" PRIx64 "->%" PRIx64, path, base->euid,
		       seen.euid, base->capeff, seen.capeff);
	else
		report(BLOCKED, "exec %s: no uid or capability gained (euid %ld, capeff %" PRIx64 ")", path,
		       base->euid, base->capeff);
}

static bool is_setid_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID));
}

/* setuid-binary [PATH...]: execs the given binaries (default: the usual set-user-ID root
 * ones that prompt on stdin: su, passwd, chfn, chsh, plus every other setuid file in
 * /usr/bin and /bin). no_new_privs, the user namespace and nosuid must each stop them
 * from raising euid or capabilities. Tests also pass a root-owned 04755 copy of this
 * probe (or one with file capabilities): it runs `suid-report` and judges itself. */
static int c_setuid_binary(int argc, char **argv)
{
	static const char *const defaults[] = { "/usr/bin/su", "/usr/bin/passwd", "/usr/bin/chfn",
						"/usr/bin/chsh", "/usr/bin/newgrp", "/usr/bin/gpasswd" };
	struct creds base;
	int tried = 0;

	if (!read_creds(getpid(), &base))
		return report(PROBE_ERROR, "cannot read /proc/self/status"), g_verdict;
	info("running as euid %ld capeff %" PRIx64, base.euid, base.capeff);
	for (int i = 0; i < argc; i++, tried++)
		exec_and_watch(argv[i], &base);
	for (size_t i = 0; argc == 0 && i < ARRAY_SIZE(defaults); i++)
		if (is_setid_file(defaults[i]) && ++tried)
			exec_and_watch(defaults[i], &base);
	if (!tried)
		report(BLOCKED, "no set-user-ID binary visible in the box");
	return g_verdict;
}

/* suid-report EUID CAPEFF (internal): run as a setuid/file-cap copy of the probe; exits 1
 * if it now has a different euid or capabilities beyond CAPEFF. */
static int c_suid_report(int argc, char **argv)
{
	struct creds c;
	uint64_t capeff;
	long euid;

	if (argc < 2 || !parse_long(argv[0], &euid) || sscanf(argv[1], "%" SCNx64, &capeff) != 1 ||
	    !read_creds(getpid(), &c))
		return PROBE_ERROR;
	if (c.euid != euid || c.suid != euid || (c.capeff & ~capeff) || (c.capprm & ~capeff)) {
		report(ESCAPED, "after exec: euid %ld suid %ld capeff %" PRIx64 " capprm %" PRIx64, c.euid, c.suid,
		       c.capeff, c.capprm);
		return ESCAPED;
	}
	report(BLOCKED, "after exec: euid %ld capeff %" PRIx64 ", nothing gained", c.euid, c.capeff);
	return BLOCKED;
}

/* confinement: the box's process has no capabilities at all (effective, permitted,
 * inheritable, ambient, bounding), no_new_privs set, and a seccomp filter (mode 2). */
static int c_confinement(int argc, char **argv)
{
	static const char *const want_zero[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	char *buf = read_file(AT_FDCWD, "/proc/self/status", NULL), *l;

	if (!buf)
		return report(PROBE_ERROR, "cannot read /proc/self/status"), g_verdict;
	for (l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		uint64_t v;
		char key[32];
		if (sscanf(l, "%31[^:]:\t%" SCNx64, key, &v) != 2)
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(want_zero); i++)
			if (strcmp(key, want_zero[i]) == 0)
				report(v ? ESCAPED : BLOCKED, "%s = %016" PRIx64, key, v);
		if (strcmp(key, "NoNewPrivs") == 0)
			report(v == 1 ? BLOCKED : ESCAPED, "NoNewPrivs = %" PRIu64, v);
		if (strcmp(key, "Seccomp") == 0)
			report(v == 2 ? BLOCKED : ESCAPED, "Seccomp = %" PRIx64 " (2 = filter)", v);
	}
	free(buf);
	return g_verdict;
}

/* ---------------------------------------------------------------- kernel knobs */

/* Opens path for writing without writing (a write to core_pattern or sysrq-trigger would
 * act on the host if it got through). */
static void open_for_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

	must_fail(fd, errno_or(fd), ERRS(EROFS, EACCES, EPERM, ENOENT), "open %s for writing", path);
	close_if(fd);
}

/* proc-sys-write: /proc/sys, /proc/sysrq-trigger and the /sys knobs that run programs as
 * host root (core_pattern, modprobe, uevent_helper) must not be writable. The hostname is
 * actually written (in the box's own UTS namespace at worst; tests check the host's). */
static int c_proc_sys_write(int argc, char **argv)
{
	static const char *const knobs[] = {
		"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
		"/proc/sysrq-trigger", "/proc/sys/kernel/panic", "/proc/sys/fs/binfmt_misc/register",
		"/sys/kernel/uevent_helper", "/sys/power/state", "/proc/sys/kernel/randomize_va_space",
	};
	static const char name[] = "paddock-probe";
	int fd = open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC);
	long rc;

	if (fd < 0) {
		must_fail(-1, errno, ERRS(EROFS, EACCES, EPERM, ENOENT), "open /proc/sys/kernel/hostname for writing");
	} else {
		rc = write(fd, name, sizeof(name) - 1);
		must_fail(rc, errno_or(rc), ERRS(EROFS, EACCES, EPERM), "write /proc/sys/kernel/hostname");
		close(fd);
	}
	rc = sethostname(name, sizeof(name) - 1);
	must_fail(rc, errno_or(rc), DENIED, "sethostname()");
	for (size_t i = 0; i < ARRAY_SIZE(knobs); i++)
		open_for_write(knobs[i]);
	for (int i = 0; i < argc; i++)
		open_for_write(argv[i]);
	return g_verdict;
}

/* sysrq: /proc/sysrq-trigger must not be writable (opened only, never written). */
static int c_sysrq(int argc, char **argv)
{
	open_for_write("/proc/sysrq-trigger");
	open_for_write("/proc/sys/kernel/sysrq");
	return g_verdict;
}

/* limit-knobs [PATH...]: the files that hold the box's own limits — ext4's reserved clusters
 * (a vm box's --disk), its cgroup's pids.max / memory.max (--pids, --memory), the guest
 * kernel's vm and memory sysctls — are mostly checked by owner and mode only, so root in the
 * box (uid 0 without capabilities) must find them on read-only mounts: no write, no chmod (to
 * the file's own mode: nothing changes where it works, but it proves the owner could open it
 * up), and no remount of the mounts that hold them. Every PATH given must exist (the test
 * names the files the backend is known to have); the built-in list may be absent (ns: no
 * /sys at all). */
static int c_limit_knobs(int argc, char **argv)
{
	static const char *const knobs[] = {
		"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/cgroup.procs",
		"/sys/fs/cgroup/cgroup.subtree_control", "/proc/sys/vm/overcommit_memory", "/proc/sys/vm/min_free_kbytes",
		"/proc/sys/vm/dirty_expire_centisecs", "/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max",
		"/sys/kernel/mm/transparent_hugepage/enabled",
	};
	static const char *const mounts[] = { "/sys", "/sys/fs/cgroup", "/proc/sys", "/proc" };
	static const int RO[] = { EROFS, EACCES, EPERM, 0 };
	char path[512];
	struct stat st;
	size_t n = 0;
	const char *list[64];

	for (int i = 0; i < argc && n < ARRAY_SIZE(list); i++) {
		if (stat(argv[i], &st) < 0) {
			report(PROBE_ERROR, "%s: %s (the test expects it in this box)", argv[i], errname(errno));
			continue;
		}
		list[n++] = argv[i];
	}
	for (size_t i = 0; i < ARRAY_SIZE(knobs) && n < ARRAY_SIZE(list); i++)
		list[n++] = knobs[i];
	/* every ext4's and every cgroup's own files, one level down */
	static char found[16][512];
	size_t nf = 0;
	DIR *d = opendir("/sys/fs/ext4");
	for (struct dirent *de; d && (de = readdir(d)) && nf < 8;)
		if (de->d_name[0] != '.' && strcmp(de->d_name, "features") != 0)
			snprintf(found[nf++], sizeof(found[0]), "/sys/fs/ext4/%s/reserved_clusters", de->d_name);
	if (d)
		closedir(d);
	d = opendir("/sys/fs/cgroup");
	for (struct dirent *de; d && (de = readdir(d)) && nf < ARRAY_SIZE(found);) {
		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		snprintf(found[nf++], sizeof(found[0]), "/sys/fs/cgroup/%s/pids.max", de->d_name);
		if (nf < ARRAY_SIZE(found))
			snprintf(found[nf++], sizeof(found[0]), "/sys/fs/cgroup/%s/memory.max", de->d_name);
	}
	if (d)
		closedir(d);
	for (size_t i = 0; i < nf && n < ARRAY_SIZE(list); i++)
		list[n++] = found[i];
	size_t present = 0;
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			dup |= strcmp(list[i], list[j]) == 0;
		if (dup || stat(list[i], &st) < 0)
			continue;
		present++;
		int fd = open(list[i], O_WRONLY | O_CLOEXEC | O_NOCTTY);
		must_fail(fd, errno_or(fd), RO, "open %s for writing", list[i]);
		close_if(fd);
		long rc = chmod(list[i], st.st_mode & 07777);
		must_fail(rc, errno_or(rc), RO, "chmod %s to its own mode %04o", list[i], st.st_mode & 07777);
	}
	info("%zu limit files present", present);
	for (size_t i = 0; i < ARRAY_SIZE(mounts); i++) {
		snprintf(path, sizeof(path), "%s", mounts[i]);
		if (stat(path, &st) < 0)
			continue;
		/* may_mount() answers EPERM before anything else; EINVAL (not a mount point) comes
		 * only after it */
		long rc = mount(NULL, path, NULL, MS_REMOUNT | MS_BIND, NULL);
		must_be_refused(rc, errno_or(rc), DENIED, ERRS(EINVAL, EBUSY), "remount %s read-write", path);
	}
	return g_verdict;
}

/* Tries mounting a cgroup v1 hierarchy on a scratch dir (needs init-namespace
 * CAP_SYS_ADMIN); whatever mounts is checked for release_agent, then unmounted. */
static void try_cgroup_mount(const char *dir, const char *fstype, const char *opts)
{
	long rc = mount("cgroup", dir, fstype, 0, opts);

	if (must_fail(rc, errno_or(rc), ERRS(EPERM, EACCES, ENOSYS, EBUSY, ENODEV), "mount %s -o %s on %s",
		      fstype, opts ? opts : "", dir) == ESCAPED) {
		char p[4096];
		snprintf(p, sizeof(p), "%s/release_agent", dir);
		open_for_write(p);
		umount2(dir, MNT_DETACH);
	}
}

/* cgroup-release-agent: the cgroup v1 release_agent runs a program as host root when a
 * cgroup empties (CVE-2022-0492). No visible cgroupfs may expose a writable release_agent
 * or notify_on_release, and no cgroup hierarchy may be mounted from inside. */
static int c_cgroup_release_agent(int argc, char **argv)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	const char *dir = scratch_dir();
	char line[4096];
	int seen = 0;

	while (f && fgets(line, sizeof(line), f)) {
		char mnt[2048], fstype[64], p[4096];
		const char *sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*s %*s %*s %*s %2047s", mnt) != 1 || sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		if (strcmp(fstype, "cgroup") != 0 && strcmp(fstype, "cgroup2") != 0)
			continue;
		seen++;
		info("visible %s mount at %s", fstype, mnt);
		snprintf(p, sizeof(p), "%s/release_agent", mnt);
		open_for_write(p);
		snprintf(p, sizeof(p), "%s/notify_on_release", mnt);
		open_for_write(p);
	}
	if (f)
		fclose(f);
	open_for_write("/sys/fs/cgroup/release_agent");
	open_for_write("/sys/fs/cgroup/memory/release_agent");
	open_for_write("/sys/fs/cgroup/systemd/release_agent");
	if (dir) {
		try_cgroup_mount(dir, "cgroup", "memory");
		try_cgroup_mount(dir, "cgroup", "none,name=pdprobe");
		try_cgroup_mount(dir, "cgroup2", NULL);
		scratch_cleanup();
	}
	info("%d cgroup mounts visible", seen);
	return g_verdict;
}

/* ---------------------------------------------------------------- terminals */

/* Collects candidate terminal fds: 0-2 when they are ttys, plus /dev/tty (our controlling
 * terminal, if any) and extra device paths. */
static int collect_ttys(int *fds, int max, const char *const *extra, size_t n_extra)
{
	int n = 0;

	for (int fd = 0; fd <= 2 && n < max; fd++)
		if (isatty(fd))
			fds[n++] = fd;
	int t = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t >= 0 && n < max)
		fds[n++] = t;
	else
		info("open /dev/tty: %s", t < 0 ? errname(errno) : "too many");
	for (size_t i = 0; i < n_extra && n < max; i++) {
		int fd = open(extra[i], O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0)
			fds[n++] = fd;
		else
			must_fail(-1, errno, ERRS(ENOENT, EACCES, EPERM, ENXIO, ENODEV, EIO), "open %s", extra[i]);
	}
	return n;
}

/* tiocsti [--no-tty-ok]: pushing characters into a terminal's input queue (TIOCSTI) would
 * type commands into the host shell that started the box. Tried on every reachable tty,
 * also with high bits set in the command (a filter comparing only 32 bits misses it; the
 * kernel ignores them). Needs a tty: run under `script` or the CLI's tty mode. */
static int c_tiocsti(int argc, char **argv)
{
	const unsigned long cmds[] = { TIOCSTI, (1UL << 32) | TIOCSTI };
	bool no_tty_ok = argc > 0 && strcmp(argv[0], "--no-tty-ok") == 0;
	int fds[8], n = collect_ttys(fds, 8, NULL, 0);
	char c = ' ';

	if (n == 0) {
		report(no_tty_ok ? BLOCKED : PROBE_ERROR, "no terminal reachable (fds 0-2 and /dev/tty)");
		return g_verdict;
	}
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < ARRAY_SIZE(cmds); k++) {
			long rc = syscall(SYS_ioctl, fds[i], cmds[k], &c);
			must_fail(rc, errno_or(rc), ERRS(EPERM, EACCES, EIO), "ioctl(fd %d, %#lx TIOCSTI)", fds[i],
				  cmds[k]);
		}
	return g_verdict;
}

/* tioclinux: TIOCLINUX on a virtual console pastes selections and reads the screen. The
 * harmless TIOCL_GETSHIFTSTATE subcode is tried on every tty and on VT devices. */
static int c_tioclinux(int argc, char **argv)
{
	static const char *const vts[] = { "/dev/tty0", "/dev/tty1", "/dev/console" };
	const unsigned long cmds[] = { TIOCLINUX, (1UL << 32) | TIOCLINUX };
	int fds[8], n = collect_ttys(fds, 8, vts, ARRAY_SIZE(vts));

	if (n == 0)
		report(BLOCKED, "no terminal or VT reachable");
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < ARRAY_SIZE(cmds); k++) {
			char arg[2] = { TIOCL_GETSHIFTSTATE, 0 };
			long rc = syscall(SYS_ioctl, fds[i], cmds[k], arg);
			must_fail(rc, errno_or(rc), ERRS(EPERM, EACCES, EINVAL, ENOTTY, EIO),
				  "ioctl(fd %d, %#lx TIOCLINUX GETSHIFTSTATE)", fds[i], cmds[k]);
		}
	return g_verdict;
}

/* ---------------------------------------------------------------- namespaces */

static const struct { const char *name, *flag_name; int flag; } ns_flags[] = {
	{ "user", "CLONE_NEWUSER", CLONE_NEWUSER }, { "mnt", "CLONE_NEWNS", CLONE_NEWNS },
	{ "net", "CLONE_NEWNET", CLONE_NEWNET }, { "pid", "CLONE_NEWPID", CLONE_NEWPID },
	{ "uts", "CLONE_NEWUTS", CLONE_NEWUTS }, { "ipc", "CLONE_NEWIPC", CLONE_NEWIPC },
	{ "cgroup", "CLONE_NEWCGROUP", CLONE_NEWCGROUP }, { "time", "CLONE_NEWTIME", CLONE_NEWTIME },
};

/* ENOSPC/EUSERS: the user.max_*_namespaces sysctl refused (also a block). */
static const int NS_DENIED[] = { EPERM, EACCES, ENOSYS, ENOSPC, EUSERS, 0 };

static int do_unshare(void *arg)
{
	return errno_or(unshare((int)(intptr_t)arg));
}

/* userns: no new namespaces from inside, above all no nested user namespace (the door to
 * most kernel attack surface). Each unshare runs in a child. */
static int c_userns(int argc, char **argv)
{
	for (size_t i = 0; i < ARRAY_SIZE(ns_flags); i++)
		child_must_fail(do_unshare, (void *)(intptr_t)ns_flags[i].flag, NS_DENIED, "unshare(%s)",
				ns_flags[i].flag_name);
	child_must_fail(do_unshare, (void *)(intptr_t)(CLONE_NEWUSER | CLONE_NEWNS), NS_DENIED,
			"unshare(CLONE_NEWUSER|CLONE_NEWNS)");
	return g_verdict;
}

struct pd_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

/* Raw clone3 / clone with namespace flags: the child exits at once (raw syscall, no libc). */
static long raw_clone(bool v3, unsigned long flags)
{
	long pid;

	if (v3) {
		struct pd_clone_args a = { .flags = flags, .exit_signal = SIGCHLD };
		pid = syscall(SYS_clone3, &a, sizeof(a));
	} else {
		pid = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
	}
	if (pid == 0)
		syscall(SYS_exit_group, 0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return pid;
}

/* clone3-ns: clone3 carries its flags in memory, out of a seccomp filter's sight; the
 * filter must refuse clone3 as a whole (ENOSYS, so libc falls back to clone) or the kernel
 * must refuse the namespace. Legacy clone with the same flags is tried too. */
static int c_clone3_ns(int argc, char **argv)
{
	const unsigned long sets[] = { CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWUSER | CLONE_NEWNS, CLONE_NEWNET,
				       CLONE_NEWPID };

	for (int v3 = 1; v3 >= 0; v3--)
		for (size_t i = 0; i < ARRAY_SIZE(sets); i++) {
			long pid = raw_clone(v3, sets[i]);
			must_fail(pid, errno_or(pid), NS_DENIED, "%s(flags %#lx)", v3 ? "clone3" : "clone", sets[i]);
		}
	return g_verdict;
}

struct setns_arg { int fd, type; };

static int do_setns(void *arg)
{
	struct setns_arg *a = arg;

	return errno_or(setns(a->fd, a->type));
}

/* setns: entering another process's namespaces (PID 1, the parent, every visible pid's)
 * must fail; so must setns on a pidfd. EINVAL is what setns into one's own user namespace
 * returns: harmless, counted as blocked. */
static int c_setns(int argc, char **argv)
{
	pid_t targets[] = { 1, getppid() };
	char p[128];

	for (size_t t = 0; t < ARRAY_SIZE(targets); t++) {
		if (targets[t] <= 0 || (t > 0 && targets[t] == 1))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(ns_flags); i++) {
			struct setns_arg a = { .type = 0 };
			snprintf(p, sizeof(p), "/proc/%d/ns/%s", targets[t], ns_flags[i].name);
			a.fd = open(p, O_RDONLY | O_CLOEXEC);
			if (a.fd < 0) {
				must_fail(-1, errno, ERRS(ENOENT, EACCES, EPERM), "open %s", p);
				continue;
			}
			child_must_fail(do_setns, &a, ERRS(EPERM, EACCES, ENOSYS, EINVAL), "setns(%s)", p);
			close(a.fd);
		}
		struct setns_arg a = { .type = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS };
		a.fd = (int)syscall(SYS_pidfd_open, targets[t], 0);
		if (a.fd < 0) {
			must_fail(-1, errno, ERRS(ENOENT, EACCES, EPERM, ESRCH, ENOSYS), "pidfd_open(%d)", targets[t]);
			continue;
		}
		child_must_fail(do_setns, &a, ERRS(EPERM, EACCES, ENOSYS, EINVAL), "setns(pidfd %d, mnt|net|uts)",
				targets[t]);
		close(a.fd);
	}
	return g_verdict;
}

/* ns-distinct KIND=INODE...: the box's namespaces are all new: none has the inode the
 * test read from the host's /proc/self/ns/KIND. */
static int c_ns_distinct(int argc, char **argv)
{
	if (argc < 1)
		return PROBE_ERROR;
	for (int i = 0; i < argc; i++) {
		char kind[32], p[64];
		unsigned long long host_ino;
		struct stat st;
		if (sscanf(argv[i], "%31[a-z_]=%llu", kind, &host_ino) != 2) {
			report(PROBE_ERROR, "bad argument %s (want KIND=INODE)", argv[i]);
			continue;
		}
		snprintf(p, sizeof(p), "/proc/self/ns/%s", kind);
		if (stat(p, &st) < 0) {
			report(PROBE_ERROR, "stat %s: %s", p, errname(errno));
			continue;
		}
		report(st.st_ino == host_ino ? ESCAPED : BLOCKED, "%s namespace inode %ju (host %llu)", kind,
		       (uintmax_t)st.st_ino, host_ino);
	}
	return g_verdict;
}

/* ---------------------------------------------------------------- kernel attack surface */

/* bpf: loading a program (a two-instruction socket filter) or creating a map must fail. */
static int c_bpf(int argc, char **argv)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	static const char license[] = "GPL";
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insn_cnt = ARRAY_SIZE(insns);
	attr.insns = (uintptr_t)insns;
	attr.license = (uintptr_t)license;
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	must_fail(fd, errno_or(fd), DENIED, "bpf(BPF_PROG_LOAD socket filter)");
	close_if(fd);
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	must_fail(fd, errno_or(fd), DENIED, "bpf(BPF_MAP_CREATE array)");
	close_if(fd);
	return g_verdict;
}

/* perf: perf_event_open, even a user-only software counter on ourselves, must fail. */
static int c_perf(int argc, char **argv)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	must_fail(fd, errno_or(fd), ERRS(EPERM, EACCES, ENOSYS, ENOENT, ENODEV), "perf_event_open(sw cpu-clock, self)");
	close_if(fd);
	a.exclude_kernel = 0;
	fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	must_fail(fd, errno_or(fd), ERRS(EPERM, EACCES, ENOSYS, ENOENT, ENODEV), "perf_event_open(sw cpu-clock, cpu 0)");
	close_if(fd);
	return g_verdict;
}

/* userfaultfd: the race-widening primitive of many kernel exploits; syscall and
 * /dev/userfaultfd both refused. */
static int c_userfaultfd(int argc, char **argv)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

	must_fail(fd, errno_or(fd), ERRS(EPERM, EACCES, ENOSYS, EINVAL), "userfaultfd(UFFD_USER_MODE_ONLY)");
	close_if(fd);
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	must_fail(fd, errno_or(fd), ERRS(EPERM, EACCES, ENOSYS), "userfaultfd(0)");
	close_if(fd);
	fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	must_fail(fd, errno_or(fd), ERRS(EPERM, EACCES, ENOENT, ENXIO), "open /dev/userfaultfd");
	close_if(fd);
	return g_verdict;
}

/* keyctl: kernel keyrings are not namespaced; the box must not add, read or request keys
 * (a user's keyring is shared with their host sessions). ENOKEY from request_key would
 * mean the call reached the keyring code. */
static int c_keyctl(int argc, char **argv)
{
	char buf[256];
	long id, rc;

	id = syscall(SYS_add_key, "user", "paddock-probe", "x", 1, KEY_SPEC_SESSION_KEYRING);
	if (must_fail(id, errno_or(id), DENIED, "add_key(user, session keyring)") == ESCAPED)
		syscall(SYS_keyctl, KEYCTL_INVALIDATE, id);
	rc = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0);
	must_fail(rc, errno_or(rc), DENIED, "keyctl(GET_KEYRING_ID, user keyring)");
	rc = syscall(SYS_keyctl, KEYCTL_READ, KEY_SPEC_USER_KEYRING, buf, sizeof(buf));
	must_fail(rc, errno_or(rc), DENIED, "keyctl(READ, user keyring)");
	rc = syscall(SYS_request_key, "user", "paddock-probe-none", NULL, 0);
	must_be_refused(rc, errno_or(rc), DENIED, ERRS(ENOKEY), "request_key(user)");
	return g_verdict;
}

/* io-uring: io_uring bypasses seccomp for the operations it performs; setup must fail. */
static int c_io_uring(int argc, char **argv)
{
	struct io_uring_params p;
	int fd;

	memset(&p, 0, sizeof(p));
	fd = (int)syscall(SYS_io_uring_setup, 4, &p);
	must_fail(fd, errno_or(fd), DENIED, "io_uring_setup(4)");
	close_if(fd);
	return g_verdict;
}

/* Every way of reaching into another process: ptrace attach (SEIZE: no stop), reading its
 * memory (EFAULT from process_vm_readv = the permission check passed), /proc/PID/mem, and
 * stealing its fd 0 with pidfd_getfd. */
static void attack_pid(pid_t pid)
{
	const int *ok = ERRS(EPERM, EACCES, ESRCH, ENOSYS);
	char byte, p[64];
	struct iovec local = { &byte, 1 }, remote = { (void *)4096, 1 };
	long rc;
	int fd, pidfd;

	rc = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
	if (must_fail(rc, errno_or(rc), ok, "ptrace(PTRACE_SEIZE, %d)", pid) == ESCAPED)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	rc = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	must_be_refused(rc, errno_or(rc), ok, ERRS(EFAULT), "process_vm_readv(%d, bad address)", pid);
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	must_fail(fd, errno_or(fd), ERRS(EPERM, EACCES, ESRCH, ENOENT), "open %s", p);
	close_if(fd);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		fd = (int)syscall(SYS_pidfd_getfd, pidfd, 0, 0);
		must_fail(fd, errno_or(fd), ok, "pidfd_getfd(%d, fd 0)", pid);
		close_if(fd);
		close(pidfd);
	}
}

/* ptrace [PID...]: PID 1 (paddock-init) and our parent must be out of reach; so must any
 * pid the test names (e.g. the supervisor's host pid, which means nothing inside). */
static int c_ptrace(int argc, char **argv)
{
	attack_pid(1);
	if (getppid() > 1)
		attack_pid(getppid());
	for (int i = 0; i < argc; i++) {
		long pid;
		if (parse_long(argv[i], &pid) && pid > 0)
			attack_pid((pid_t)pid);
	}
	return g_verdict;
}

/* kill-all [CANARY_PID...]: kill(-1, SIGKILL) reaches only the box. Canary pids given (and
 * alive beforehand, as seen from here) must survive; the test checks its host canary and
 * that the box's init lived to report our exit status. */
static int c_kill_all(int argc, char **argv)
{
	pid_t canaries[64];
	int n = 0;
	long rc;

	for (int i = 0; i < argc && n < 64; i++) {
		long pid;
		if (parse_long(argv[i], &pid) && pid > 0 && kill((pid_t)pid, 0) == 0)
			canaries[n++] = (pid_t)pid;
		else
			info("canary %s not visible here (fine: the test checks it on the host)", argv[i]);
	}
	rc = kill(-1, SIGKILL);
	info("kill(-1, SIGKILL) = %s", rc == 0 ? "0 (signalled every process we may)" : errname(errno));
	usleep(300 * 1000);
	for (int i = 0; i < n; i++) {
		char st = proc_state(canaries[i]);
		report(st && st != 'Z' && st != 'X' ? BLOCKED : ESCAPED, "canary pid %d %s", canaries[i],
		       st && st != 'Z' && st != 'X' ? "survived" : "was killed");
	}
	report(g_verdict == ESCAPED ? ESCAPED : BLOCKED, "the probe survived kill(-1)");
	return g_verdict;
}

/* stop-spawns SECONDS: for up to SECONDS, SIGSTOPs the first process it may signal but whose
 * /proc/PID/exe it may not read — a session's child of the same uid that still shares the
 * box's init's (non-dumpable) memory, between its setuid and its execve() — prints
 * "stopped PID", never continues it, and exits. Whether the box's init froze with that child
 * is for the test to find out (proc.sh); this only reports whether it found one. */
static int c_stop_spawns(int argc, char **argv)
{
	long secs;
	if (argc < 1 || !parse_long(argv[0], &secs) || secs <= 0)
		return PROBE_ERROR;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("scanning\n");
	do {
		DIR *d = opendir("/proc");
		if (!d)
			return report(PROBE_ERROR, "opendir /proc: %s", errname(errno)), g_verdict;
		struct dirent *de;
		while ((de = readdir(d))) {
			long pid;
			char path[64], buf[PATH_MAX];
			if (!parse_long(de->d_name, &pid) || pid <= 1 || pid == getpid())
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
			if (readlink(path, buf, sizeof(buf)) >= 0 || errno != EACCES)
				continue;
			if (kill((pid_t)pid, SIGSTOP) == 0) {
				printf("stopped %ld\n", pid);
				closedir(d);
				return g_verdict;
			}
		}
		closedir(d);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < secs);
	printf("found no child to stop\n");
	return g_verdict;
}

/* ---------------------------------------------------------------- network */

static void unix_connect(const char *name, bool abstract, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	socklen_t salen;
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	long rc;

	if (fd < 0 || len >= sizeof(sa.sun_path) - 1) {
		report(PROBE_ERROR, "socket(AF_UNIX)/name: %s", errname(errno));
		close_if(fd);
		return;
	}
	memcpy(sa.sun_path + abstract, name, len);
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + len);
	rc = connect(fd, (struct sockaddr *)&sa, salen);
	must_fail(rc, errno_or(rc), ERRS(ECONNREFUSED, ENOENT, EACCES, EPERM, ENOTDIR, EPROTOTYPE), "connect %s %s%s",
		  type == SOCK_STREAM ? "stream" : "dgram", abstract ? "@" : "", name);
	close(fd);
}

/* abstract-unix NAME: abstract unix sockets belong to the network namespace; the host's
 * (D-Bus, X11, the test's @NAME canary) must be unreachable. */
static int c_abstract_unix(int argc, char **argv)
{
	if (argc < 1)
		return PROBE_ERROR;
	unix_connect(argv[0][0] == '@' ? argv[0] + 1 : argv[0], true, SOCK_STREAM);
	unix_connect(argv[0][0] == '@' ? argv[0] + 1 : argv[0], true, SOCK_DGRAM);
	return g_verdict;
}

/* unix-socket PATH: a host pathname socket (docker.sock, ssh-agent) must not be visible. */
static int c_unix_socket(int argc, char **argv)
{
	if (argc < 1)
		return PROBE_ERROR;
	unix_connect(argv[0], false, SOCK_STREAM);
	unix_connect(argv[0], false, SOCK_DGRAM);
	return g_verdict;
}

static bool fill_addr(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*len = sizeof(*in4);
		return true;
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return true;
	}
	return false;
}

/* Non-blocking connect with a 2 s limit; 0 on success or an errno. */
static int tcp_connect(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err = 0;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t elen = sizeof(err);

	if (fd < 0)
		return errno;
	if (connect(fd, (const struct sockaddr *)ss, len) < 0) {
		err = errno;
		if (err == EINPROGRESS) {
			err = poll(&pfd, 1, 2000) == 1 ? 0 : ETIMEDOUT;
			if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
				err = errno;
		}
	}
	close(fd);
	return err;
}

/* host-loopback PORT [ADDR...]: the box has its own network; the host's listener on
 * 127.0.0.1:PORT and [::1]:PORT (and on any extra address: the host's LAN address, a
 * gateway, 169.254.169.254) must not be reachable. */
static int c_host_loopback(int argc, char **argv)
{
	const char *defaults[] = { "127.0.0.1", "::1" };
	long port;

	if (argc < 1 || !parse_long(argv[0], &port) || port <= 0 || port > 65535)
		return PROBE_ERROR;
	for (int i = 0; i < 2 + argc - 1; i++) {
		const char *addr = i < 2 ? defaults[i] : argv[i - 1];
		struct sockaddr_storage ss;
		socklen_t len;
		if (!fill_addr(addr, (int)port, &ss, &len)) {
			report(PROBE_ERROR, "bad address %s", addr);
			continue;
		}
		int err = tcp_connect(&ss, len);
		must_fail(err ? -1 : 0, err,
			  ERRS(ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL, ETIMEDOUT, EPERM, EACCES,
			       EAFNOSUPPORT, ECONNRESET),
			  "tcp connect %s port %ld", addr, port);
	}
	return g_verdict;
}

/* udp-send ADDR PORT: a datagram to ADDR:PORT must not get an answer (the test's listener
 * echoes and logs, so its log decides whether anything arrived). */
static int c_udp_send(int argc, char **argv)
{
	static const char msg[] = "paddock-probe udp";
	struct sockaddr_storage ss;
	socklen_t len;
	long port, rc;
	char buf[64];
	int fd;

	if (argc < 2 || !parse_long(argv[1], &port) || !fill_addr(argv[0], (int)port, &ss, &len))
		return PROBE_ERROR;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return must_fail(-1, errno, ERRS(EPERM, EACCES, EAFNOSUPPORT), "socket(udp)"), g_verdict;
	rc = sendto(fd, msg, sizeof(msg) - 1, 0, (struct sockaddr *)&ss, len);
	if (rc < 0) {
		must_fail(-1, errno, ERRS(ENETUNREACH, EHOSTUNREACH, EPERM, EACCES, EADDRNOTAVAIL, ECONNREFUSED),
			  "sendto %s:%ld", argv[0], port);
	} else {
		/* A send alone proves nothing (it may die in the box's own stack); a reply does. */
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		info("sendto %s:%ld: queued, waiting 1.5 s for a reply", argv[0], port);
		int err = ETIMEDOUT;
		rc = -1;
		if (poll(&pfd, 1, 1500) == 1) {
			rc = recv(fd, buf, sizeof(buf), 0);
			err = errno_or(rc);
		}
		must_fail(rc, err, ERRS(ETIMEDOUT, ECONNREFUSED), "reply from %s:%ld", argv[0], port);
	}
	close(fd);
	return g_verdict;
}

/* raw-socket: raw IP and packet sockets (sniffing, spoofing, the AF_PACKET CVEs) must be
 * refused even to root inside the box's own network namespace. */
static int c_raw_socket(int argc, char **argv)
{
	static const struct { int fam, type, proto; const char *what; } socks[] = {
		{ AF_INET, SOCK_RAW, IPPROTO_ICMP, "AF_INET SOCK_RAW ICMP" },
		{ AF_INET, SOCK_RAW, IPPROTO_RAW, "AF_INET SOCK_RAW IPPROTO_RAW" },
		{ AF_INET6, SOCK_RAW, IPPROTO_ICMPV6, "AF_INET6 SOCK_RAW ICMPV6" },
		{ AF_PACKET, SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */, "AF_PACKET SOCK_RAW" },
		{ AF_PACKET, SOCK_DGRAM, 0x0300, "AF_PACKET SOCK_DGRAM" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(socks); i++) {
		int fd = socket(socks[i].fam, socks[i].type | SOCK_CLOEXEC, socks[i].proto);
		must_fail(fd, errno_or(fd), ERRS(EPERM, EACCES, EAFNOSUPPORT, EPROTONOSUPPORT, ESOCKTNOSUPPORT, ENOSYS),
			  "socket(%s)", socks[i].what);
		close_if(fd);
	}
	return g_verdict;
}

/* One rtnetlink request for ADDR/32 on ifindex (RTM_NEWADDR or RTM_DELADDR); 0 when the
 * kernel acknowledged it, else the errno it answered (or a local one). */
static int rtnl_addr(int type, int ifindex, const struct in_addr *addr)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
		struct rtattr rta;
		struct in_addr a;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = (uint16_t)type,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (type == RTM_NEWADDR ? NLM_F_CREATE | NLM_F_EXCL : 0),
			.nlmsg_seq = 1 },
		.ifa = { .ifa_family = AF_INET, .ifa_prefixlen = 32, .ifa_index = (unsigned)ifindex },
		.rta = { .rta_len = RTA_LENGTH(sizeof(struct in_addr)), .rta_type = IFA_LOCAL },
		.a = *addr,
	};
	char buf[512];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), err;

	if (fd < 0)
		return errno;
	struct timeval tv = { .tv_sec = 2 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, &req, sizeof(req), 0) < 0) {
		err = errno;
	} else {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		const struct nlmsghdr *nh = (const struct nlmsghdr *)buf;
		if (n < 0)
			err = errno;
		else if (n < (ssize_t)(sizeof(*nh) + sizeof(int)) || nh->nlmsg_type != NLMSG_ERROR)
			err = EPROTO;
		else
			err = -*(const int *)NLMSG_DATA(nh);
	}
	close(fd);
	return err;
}

/* A TCP socket bound to ss with the given SO_REUSE* options; 0 when the bind succeeded (the
 * socket is left in *ret_fd), else the errno. */
static int bind_with(const struct sockaddr_storage *ss, socklen_t len, bool reuseaddr, bool reuseport, int *ret_fd)
{
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), err = 0;

	*ret_fd = -1;
	if (fd < 0)
		return errno;
	if (reuseaddr)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) < 0) {
		err = errno;
		close(fd);
	} else {
		*ret_fd = fd;
	}
	return err;
}

/* proxy-listener ADDR PORT: the supervisor's explicit proxy at ADDR:PORT (on ns a listener in
 * the box's own network namespace, on vm an address of the supervisor's network stack) cannot
 * be taken over from inside: the exact address cannot be bound (plain, SO_REUSEADDR,
 * SO_REUSEPORT); a wildcard listener on PORT, if the kernel allows one, does not receive the
 * proxy's connections; the address cannot be deleted or added (rtnetlink), nor loopback taken
 * down. A process that got any of these would see the other processes' proxy traffic (the
 * credentials the proxy adds never reach the box, but the requests do) or could cut the
 * box off its allowed hosts behind the user's back. */
static int c_proxy_listener(int argc, char **argv)
{
	static const int BIND_REFUSED[] = { EADDRINUSE, EADDRNOTAVAIL, EACCES, EPERM, 0 };
	static const struct { bool addr, port; const char *what; } binds[] = {
		{ false, false, "" }, { true, false, " with SO_REUSEADDR" }, { true, true, " with SO_REUSEADDR+SO_REUSEPORT" },
	};
	struct sockaddr_storage ss, any;
	socklen_t len, alen;
	long port;
	int fd, err;

	if (argc < 2 || !parse_long(argv[1], &port) || port <= 0 || port > 65535 || !fill_addr(argv[0], (int)port, &ss, &len) ||
	    ss.ss_family != AF_INET || !fill_addr("0.0.0.0", (int)port, &any, &alen))
		return PROBE_ERROR;
	for (size_t i = 0; i < ARRAY_SIZE(binds); i++) {
		err = bind_with(&ss, len, binds[i].addr, binds[i].port, &fd);
		must_fail(err ? -1 : 0, err, BIND_REFUSED, "bind %s:%ld%s", argv[0], port, binds[i].what);
		close_if(fd);
	}
	/* a wildcard bind may be allowed (another address, same port): what matters is that the
	 * proxy's connections do not come to it */
	err = bind_with(&any, alen, true, true, &fd);
	if (err) {
		must_fail(-1, err, BIND_REFUSED, "bind 0.0.0.0:%ld", port);
	} else if (listen(fd, 8) < 0) {
		must_fail(-1, errno, BIND_REFUSED, "listen on 0.0.0.0:%ld", port);
	} else {
		int cerr = tcp_connect(&ss, len);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		bool stolen = poll(&pfd, 1, cerr ? 0 : 500) == 1;
		report(stolen ? ESCAPED : BLOCKED, "listen on 0.0.0.0:%ld: allowed; a connect to %s:%ld (%s) %s", port,
		       argv[0], port, errname(cerr), stolen ? "came to it" : "did not come to it");
	}
	close_if(fd);
	struct in_addr a = ((struct sockaddr_in *)&ss)->sin_addr, other;
	inet_pton(AF_INET, "198.19.0.99", &other);
	unsigned lo = if_nametoindex("lo");
	if (!lo) {
		report(PROBE_ERROR, "no loopback interface");
		return g_verdict;
	}
	/* rtnetlink answers EPERM before looking at the request; any other answer (EEXIST,
	 * EADDRNOTAVAIL, ENODEV) means the request got past the capability check */
	static const int NL_REFUSED[] = { EPERM, EACCES, EPROTONOSUPPORT, EAFNOSUPPORT, 0 };
	err = rtnl_addr(RTM_DELADDR, (int)lo, &a);
	must_fail(err ? -1 : 0, err, NL_REFUSED, "rtnetlink: delete %s/32 from lo", argv[0]);
	err = rtnl_addr(RTM_NEWADDR, (int)lo, &a);
	must_fail(err ? -1 : 0, err, NL_REFUSED, "rtnetlink: add %s/32 to lo", argv[0]);
	err = rtnl_addr(RTM_NEWADDR, (int)lo, &other);
	must_fail(err ? -1 : 0, err, NL_REFUSED, "rtnetlink: add 198.19.0.99/32 to lo");
	if (err == 0)
		rtnl_addr(RTM_DELADDR, (int)lo, &other);
	/* loopback down would cut the box's own proxy path (ns): the flags are read, then
	 * written back unchanged but for IFF_UP */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		report(PROBE_ERROR, "SIOCGIFFLAGS lo: %s", errname(errno));
	} else {
		ifr.ifr_flags &= ~IFF_UP;
		long rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
		if (must_fail(rc, errno_or(rc), DENIED, "SIOCSIFFLAGS lo down") == ESCAPED) {
			ifr.ifr_flags |= IFF_UP;
			ioctl(fd, SIOCSIFFLAGS, &ifr);
		}
	}
	close_if(fd);
	return g_verdict;
}

/* ---------------------------------------------------------------- resources */

/* The resource checks' verdict: reaching the target means no limit held; stopping early
 * with an errno from `ok` means the limit did. */
static void limit_verdict(bool reached, int err, const int *ok, const char *what, long done)
{
	if (reached)
		report(ESCAPED, "%s: reached %ld, no limit hit", what, done);
	else
		must_fail(-1, err, ok, "%s: stopped after %ld", what, done);
}

/* fork-bomb [MAX]: forks sleeping children until fork fails; blocked = the box's pid limit
 * stopped it before MAX (default 10000). The children die with us (PDEATHSIG) and are
 * killed and reaped before we return. */
static int c_fork_bomb(int argc, char **argv)
{
	long max = 10000, n = 0;
	pid_t *kids;
	int err = 0;

	if (argc > 0 && (!parse_long(argv[0], &max) || max <= 0))
		return PROBE_ERROR;
	kids = calloc((size_t)max, sizeof(*kids));
	if (!kids)
		return report(PROBE_ERROR, "calloc"), g_verdict;
	fflush(NULL);
	for (; n < max; n++) {
		pid_t pid = fork();
		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		kids[n] = pid;
	}
	for (long i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	free(kids);
	limit_verdict(n >= max, err, ERRS(EAGAIN, ENOMEM), "forked processes", n);
	return g_verdict;
}

/* memory-hog MB: allocates and touches MB megabytes, 1 MB at a time. Blocked = allocation
 * fails first or the box's memory limit kills us (the test then sees 137); reaching MB
 * means no limit held. Progress goes to stderr every 64 MB (it survives an OOM kill). */
static int c_memory_hog(int argc, char **argv)
{
	long mb, i;

	if (argc < 1 || !parse_long(argv[0], &mb) || mb <= 0)
		return PROBE_ERROR;
	for (i = 0; i < mb; i++) {
		void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			break;
		memset(p, 0x5a, 1 << 20);
		if (i % 64 == 63)
			fprintf(stderr, "%s: touched %ld MB\n", g_cmd, i + 1);
	}
	limit_verdict(i >= mb, errno, ERRS(ENOMEM, EAGAIN), "allocated and touched MB", i);
	return g_verdict;
}

/* disk-fill DIR MB: writes DIR/pd-fill.PID 1 MB at a time; blocked = ENOSPC/EDQUOT/EFBIG
 * before MB. The file is removed afterwards. */
static int c_disk_fill(int argc, char **argv)
{
	static char block[1 << 20];
	char path[4096];
	long mb, i;
	int fd, err = 0;

	if (argc < 2 || !parse_long(argv[1], &mb) || mb <= 0)
		return PROBE_ERROR;
	signal(SIGXFSZ, SIG_IGN);
	memset(block, 0x5a, sizeof(block));
	snprintf(path, sizeof(path), "%s/pd-fill.%d", argv[0], getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return report(PROBE_ERROR, "create %s: %s", path, errname(errno)), g_verdict;
	for (i = 0; i < mb && !err; i++) {
		size_t off = 0;
		while (off < sizeof(block)) {
			ssize_t w = write(fd, block + off, sizeof(block) - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				err = w < 0 ? errno : ENOSPC;
				break;
			}
			off += (size_t)w;
		}
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	close(fd);
	unlink(path);
	info("writing to %s", argv[0]);
	limit_verdict(!err, err, ERRS(ENOSPC, EDQUOT, EFBIG), "MB written", err ? i - 1 : i);
	return g_verdict;
}

/* daemon MARKER [--keep-stdio]: double-forks a grandchild that calls itself MARKER (comm
 * and argv), ignores SIGTERM/SIGHUP/SIGINT and sleeps 300 s, then returns at once. The
 * test asserts nothing named MARKER is alive on the host after the box ended (and, with
 * --keep-stdio, that the CLI did not hang on the daemon's copy of stdout). */
static int c_daemon(int argc, char **argv)
{
	bool keep = argc > 1 && strcmp(argv[1], "--keep-stdio") == 0;
	int status;
	pid_t pid;

	if (argc < 1)
		return PROBE_ERROR;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		prctl(PR_SET_NAME, argv[0]);
		if (!keep) {
			int null = open("/dev/null", O_RDWR);
			dup2(null, 0), dup2(null, 1), dup2(null, 2);
		}
		sleep(300);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return report(PROBE_ERROR, "fork: %s", errname(errno)), g_verdict;
	report(BLOCKED, "daemon %s started and detached (the test checks the host)", argv[0]);
	return g_verdict;
}

/* ---------------------------------------------------------------- ABI tricks */

/* personality: only the default persona and the query are allowed (Docker's profile also
 * allows UNAME26 and PER_LINUX32); READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO and
 * foreign personas must not take effect. Checked by querying after each attempt. */
static int c_personality(int argc, char **argv)
{
	static const struct { unsigned long p; const char *name; } ps[] = {
		{ PER_BSD, "PER_BSD" },
		{ READ_IMPLIES_EXEC, "READ_IMPLIES_EXEC" },
		{ ADDR_NO_RANDOMIZE, "ADDR_NO_RANDOMIZE" },
		{ MMAP_PAGE_ZERO, "MMAP_PAGE_ZERO" },
		{ PER_SVR4, "PER_SVR4" },
	};
	int before = personality(0xffffffff);

	if (before < 0)
		info("query personality(0xffffffff) failed: %s (too strict, not an escape)", errname(errno));
	for (size_t i = 0; i < ARRAY_SIZE(ps); i++) {
		int rc = personality(ps[i].p), err = errno;
		int now = personality(0xffffffff);
		bool took = now >= 0 && (unsigned long)now == ps[i].p;
		if (took)
			report(ESCAPED, "personality(%s) took effect", ps[i].name);
		else
			must_fail(-1, rc < 0 ? err : EPERM, ERRS(EPERM, EACCES, EINVAL),
				  "personality(%s) (rc %d, persona now %#x)", ps[i].name, rc, now);
		if (before >= 0)
			personality((unsigned long)before);
	}
	return g_verdict;
}

static int do_x32(void *arg)
{
	/* x32 getpid: the x32 syscall bit on the x86-64 number (39). */
	long r = syscall(__X32_SYSCALL_BIT | 39);
	return r == getpid() ? 0 : r < 0 ? errno : EINVAL;
}

/* x32: the x32 ABI is a second syscall table a filter written for x86-64 may not cover;
 * an x32 call must fail (ENOSYS/EPERM) or kill the caller (SIGSYS). */
static int c_x32(int argc, char **argv)
{
	child_must_fail(do_x32, NULL, ERRS(ENOSYS, EPERM, EACCES, EINVAL), "syscall(0x40000000 | 39 x32 getpid)");
	return g_verdict;
}

static int do_int80(void *arg)
{
	long ret;

	/* i386 getpid (20) through the 32-bit entry point; r8-r11 are zeroed by the kernel. */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	return ret == getpid() ? 0 : ret < 0 && ret > -4096 ? (int)-ret : EINVAL;
}

/* int80: the 32-bit entry point has its own syscall numbers: an x86-64 filter must kill it
 * (SIGSYS) or refuse it. SIGSEGV (no IA-32 emulation) also counts as blocked. */
static int c_int80(int argc, char **argv)
{
	int err = 0, sig = 0;

	if (in_child(do_int80, NULL, &err, &sig) < 0)
		return report(PROBE_ERROR, "fork: %s", errname(errno)), g_verdict;
	if (sig)
		report(sig == SIGSYS || sig == SIGSEGV ? BLOCKED : PROBE_ERROR, "int $0x80 getpid: killed by %s",
		       sigabbrev_np(sig) ?: "?");
	else
		must_fail(err ? -1 : 0, err, ERRS(ENOSYS, EPERM, EACCES), "int $0x80 getpid");
	return g_verdict;
}

/* kmod: loading or removing kernel modules. EINVAL/ENOEXEC from junk, or ENOENT from
 * delete_module, would mean the privilege check passed. */
static int c_kmod(int argc, char **argv)
{
	static const char junk[64] = "paddock-probe: not a module";
	long rc;
	int fd;

	rc = syscall(SYS_init_module, junk, sizeof(junk), "");
	must_be_refused(rc, errno_or(rc), DENIED, ERRS(EINVAL, ENOEXEC, ENOMEM, EFAULT), "init_module(junk)");
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	rc = syscall(SYS_finit_module, fd, "", 0);
	must_be_refused(rc, errno_or(rc), DENIED, ERRS(EINVAL, ENOEXEC, EBADF), "finit_module(our own exe)");
	close_if(fd);
	rc = syscall(SYS_delete_module, "paddock_probe_none", O_NONBLOCK);
	must_be_refused(rc, errno_or(rc), DENIED, ERRS(ENOENT, EWOULDBLOCK), "delete_module(paddock_probe_none)");
	return g_verdict;
}

/* kexec: replacing the host kernel. With bad arguments, EBADF/EINVAL would mean the
 * privilege check passed. */
static int c_kexec(int argc, char **argv)
{
	long rc;

	rc = syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0UL);
	must_be_refused(rc, errno_or(rc), DENIED, ERRS(EBADF, EINVAL), "kexec_file_load(-1, -1)");
	rc = syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xdead0000UL);
	must_be_refused(rc, errno_or(rc), DENIED, ERRS(EINVAL, EBADMSG), "kexec_load(bad arch)");
	return g_verdict;
}

/* ---------------------------------------------------------------- more host reach */

/* Tries open_by_handle_at with `fh` relative to the mount of `anchor`; EPERM is the block,
 * ESTALE/EINVAL come after the privilege check (and mean it passed). */
static void try_open_handle(const char *anchor, struct file_handle *fh, const char *label)
{
	int mfd = open(anchor, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	if (mfd < 0) {
		info("open %s: %s (skipped)", anchor, errname(errno));
		return;
	}
	fd = (int)syscall(SYS_open_by_handle_at, mfd, fh, O_RDONLY | O_CLOEXEC);
	must_be_refused(fd, errno_or(fd), ERRS(EPERM, EACCES, ENOSYS, EOPNOTSUPP), ERRS(ESTALE, EINVAL, ENOENT),
			"open_by_handle_at(%s, %s)", anchor, label);
	close_if(fd);
	close(mfd);
}

/* open-by-handle: the "shocker" escape. open_by_handle_at opens an inode by number on the
 * filesystem behind any visible mount, ignoring the mount view: the ext4 root (inode 2)
 * behind the host-view /usr is the host's /. Tried with a crafted root handle and with the
 * real handle of each visible directory. */
static int c_open_by_handle(int argc, char **argv)
{
	static const char *const anchors[] = { "/usr", "/", "/etc", "/tmp", "/.probe" };
	struct { struct file_handle fh; unsigned char bytes[MAX_HANDLE_SZ]; } h;
	uint32_t root_ino2[2] = { 2, 0 };

	for (size_t i = 0; i < ARRAY_SIZE(anchors); i++) {
		int mount_id;
		memset(&h, 0, sizeof(h));
		h.fh.handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, anchors[i], &h.fh, &mount_id, 0) == 0) {
			char label[64];
			snprintf(label, sizeof(label), "its own handle, type %d", h.fh.handle_type);
			try_open_handle(anchors[i], &h.fh, label);
		}
		memset(&h, 0, sizeof(h));
		h.fh.handle_type = 1; /* FILEID_INO32_GEN: ext2/3/4 inode + generation */
		h.fh.handle_bytes = sizeof(root_ino2);
		memcpy(h.fh.f_handle, root_ino2, sizeof(root_ino2));
		try_open_handle(anchors[i], &h.fh, "crafted ext4 root inode 2");
	}
	return g_verdict;
}

/* Undoes mountinfo's octal escapes (\040 for space) in place. */
static void unescape_mountinfo(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*o++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* mount-scan HOSTPATH TOKEN: for every mount in the box whose source root is a prefix of
 * HOSTPATH (a mount of the host's /, or of /root, ...), the host file would be visible at
 * MOUNTPOINT + rest: it must not be (no mount exposes a host tree holding the canary). */
static int c_mount_scan(int argc, char **argv)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	int n = 0;

	if (argc < 2 || argv[0][0] != '/' || !f) {
		if (f)
			fclose(f);
		return PROBE_ERROR;
	}
	while (fgets(line, sizeof(line), f)) {
		char root[4096], mnt[4096], p[8300];
		size_t rl;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2)
			continue;
		unescape_mountinfo(root);
		unescape_mountinfo(mnt);
		rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
		if (strncmp(argv[0], root, rl) != 0 || (argv[0][rl] != '/' && rl))
			continue;
		n++;
		snprintf(p, sizeof(p), "%s%s", strcmp(mnt, "/") == 0 ? "" : mnt, argv[0] + rl);
		info("mount of %s at %s could expose %s", root, mnt, argv[0]);
		judge_host_read(AT_FDCWD, p, argv[1], p);
	}
	fclose(f);
	info("%d mounts could expose %s", n, argv[0]);
	return g_verdict;
}

/* cwd [TOKEN]: the command starts in a directory of the box, not the CLI's host cwd: its
 * `canary` (the test runs the CLI from a dir holding one) is not there, and climbing ".."
 * from the cwd ends at the box's /. */
static int c_cwd(int argc, char **argv)
{
	char cwd[4096];
	int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	info("cwd %s", getcwd(cwd, sizeof(cwd)) ? cwd : errname(errno));
	if (argc > 0)
		judge_host_read(AT_FDCWD, "canary", argv[0], "./canary (the CLI's cwd)");
	if (fd < 0) {
		report(PROBE_ERROR, "open .: %s", errname(errno));
		return g_verdict;
	}
	climb_dir_fd(fd, false);
	close(fd);
	return g_verdict;
}

static bool parse_key(const char *s, key_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end)
		return false;
	*ret = (key_t)v;
	return true;
}

/* sysv-ipc KEY...: System V shared memory, message queues and semaphores belong to the
 * IPC namespace: the host's (the test makes one of each) must not be found. EACCES would
 * mean the object exists here, i.e. the namespace is shared. */
static int c_sysv_ipc(int argc, char **argv)
{
	const int *ok = ERRS(ENOENT, ENOSYS, EPERM);

	if (argc < 1)
		return PROBE_ERROR;
	for (int i = 0; i < argc; i++) {
		key_t key;
		long rc;
		if (!parse_key(argv[i], &key)) {
			report(PROBE_ERROR, "bad key %s", argv[i]);
			continue;
		}
		rc = shmget(key, 0, 0);
		must_fail(rc, errno_or(rc), ok, "shmget(%s)", argv[i]);
		rc = msgget(key, 0);
		must_fail(rc, errno_or(rc), ok, "msgget(%s)", argv[i]);
		rc = semget(key, 0, 0);
		must_fail(rc, errno_or(rc), ok, "semget(%s)", argv[i]);
	}
	return g_verdict;
}

/* vsock: AF_VSOCK is not network-namespaced: from a box it reaches the VM host's (and a
 * local hypervisor's) vsock services around the box's network. The socket itself must be
 * refused; nothing is connected. */
static int c_vsock(int argc, char **argv)
{
	const int types[] = { SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM };
	const char *names[] = { "SOCK_STREAM", "SOCK_SEQPACKET", "SOCK_DGRAM" };

	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		int fd = socket(AF_VSOCK, types[i] | SOCK_CLOEXEC, 0);
		must_fail(fd, errno_or(fd),
			  ERRS(EPERM, EACCES, EAFNOSUPPORT, ESOCKTNOSUPPORT, EPROTONOSUPPORT, ENOSYS, ENODEV),
			  "socket(AF_VSOCK, %s)", names[i]);
		close_if(fd);
	}
	return g_verdict;
}

/* alg [--filtered]: AF_ALG, the kernel crypto API's sockets (algif_hash, _skcipher, _aead):
 * kernel code fed with user data, with a record of memory-corruption bugs. A socket that opens
 * is the escape (the family is reachable); the bind to hash/sha256 is tried too and reported.
 * On a kernel built without AF_ALG every attempt fails whatever the box does, so an invalid
 * type (15, past SOCK_MAX) tells who refused: Linux answers EINVAL before it looks the family
 * up, a seccomp rule on the family EAFNOSUPPORT. With --filtered (ns boxes, whose filter has
 * the rule) a kernel's answer is a missing layer; without, it is only reported. */
static int c_alg(int argc, char **argv)
{
	const struct sockaddr_alg sa = { .salg_family = AF_ALG, .salg_type = "hash", .salg_name = "sha256" };
	const int *ok = ERRS(EAFNOSUPPORT, EPERM, EACCES, ENOSYS);
	bool filtered = argc > 0 && strcmp(argv[0], "--filtered") == 0;
	int fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	long rc;

	if (must_fail(fd, errno_or(fd), ok, "socket(AF_ALG, SOCK_SEQPACKET)") == ESCAPED) {
		rc = bind(fd, (const struct sockaddr *)&sa, sizeof(sa));
		if (rc == 0)
			report(ESCAPED, "bind(AF_ALG, hash/sha256): succeeded");
		else
			info("bind(AF_ALG, hash/sha256): %s", errname(errno));
	}
	close_if(fd);
	/* the family in the low 32 bits, junk above: the kernel reads an int */
	rc = syscall(SYS_socket, (unsigned long)AF_ALG | (1UL << 32), SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	must_fail(rc, errno_or(rc), ok, "socket(AF_ALG | 1<<32, SOCK_SEQPACKET)");
	close_if((int)rc);
	rc = socket(AF_ALG, 15, 0);
	if (filtered)
		report(rc < 0 && errno == EAFNOSUPPORT ? BLOCKED : ESCAPED,
		       "socket(AF_ALG, type 15): %s (EAFNOSUPPORT: refused by the filter; EINVAL: the kernel saw the call)",
		       rc >= 0 ? "succeeded" : errname(errno));
	else
		info("socket(AF_ALG, type 15): %s (Linux says EINVAL; EAFNOSUPPORT is a filter's answer)",
		     rc >= 0 ? "succeeded" : errname(errno));
	close_if((int)rc);
	return g_verdict;
}

/* syslog: the kernel log is the host's (addresses, other containers' messages). */
static int c_syslog(int argc, char **argv)
{
	static char buf[4096];
	long rc;

	rc = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf));
	must_fail(rc, errno_or(rc), DENIED, "syslog(READ_ALL)");
	rc = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	must_fail(rc, errno_or(rc), DENIED, "syslog(SIZE_BUFFER)");
	return g_verdict;
}

/* clock-set: the clocks are the host's. Probed harmlessly: settimeofday with only an
 * out-of-range timezone fails with EINVAL after the CAP_SYS_TIME check, EPERM before it. */
static int c_clock_set(int argc, char **argv)
{
	struct timezone tz = { .tz_minuteswest = 16 * 60 };
	long rc = settimeofday(NULL, &tz);

	must_be_refused(rc, errno_or(rc), DENIED, ERRS(EINVAL), "settimeofday(tz out of range)");
	return g_verdict;
}

/* ioport: raw x86 I/O port access (iopl, ioperm) is host hardware; granted and dropped at
 * once, no port is touched. */
static int c_ioport(int argc, char **argv)
{
	long rc = iopl(3);

	if (must_fail(rc, errno_or(rc), DENIED, "iopl(3)") == ESCAPED)
		iopl(0);
	rc = ioperm(0x80, 1, 1);
	if (must_fail(rc, errno_or(rc), DENIED, "ioperm(0x80)") == ESCAPED)
		ioperm(0x80, 1, 0);
	return g_verdict;
}

/* reboot: reboot(2) with a command number the kernel does not know: EINVAL comes only after
 * the CAP_SYS_BOOT check (harmless anywhere), EPERM before it. */
static int c_reboot(int argc, char **argv)
{
	long rc = syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, 0x50414444, NULL);

	must_be_refused(rc, errno_or(rc), DENIED, ERRS(EINVAL), "reboot(unknown command)");
	return g_verdict;
}

/* ---------------------------------------------------------------- table and main */

struct check {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *desc;
};

static int c_list(int argc, char **argv);

static const struct check checks[] = {
	{ "read-host-file", c_read_host_file, "PATH [TOKEN]", "read a host file (canary, /etc/shadow)" },
	{ "write-outside", c_write_outside, "PATH", "create/open-for-write a file the box must not write" },
	{ "ro-bind", c_ro_bind, "DIR", "modify DIR/canary on a read-only bind (write, chown, chmod, rename...)" },
	{ "setid-bind", c_setid_bind, "DIR", "a setuid/setgid file on a writable bind (chmod, open, mknod...)" },
	{ "proc1-root", c_proc1_root, "HOSTPATH TOKEN", "reach a host file via /proc/PID/root and cwd" },
	{ "proc-ppid", c_proc_ppid, "TOKEN [HOSTPATH FILETOKEN]", "host env/files via the parent chain in /proc" },
	{ "env-leak", c_env_leak, "TOKEN", "a host env var value in the box's environment" },
	{ "leaked-fds", c_leaked_fds, "", "fds 3..4096 open in the box; climb leaked dir fds" },
	{ "overwrite-exe", c_overwrite_exe, "[--not-self] [PATH...]", "write /proc/self/exe, /proc/1/exe (CVE-2019-5736)" },
	{ "mount", c_mount, "[DIR]", "mount tmpfs, bind /, remount / rw, umount, fsopen, open_tree" },
	{ "pivot-root", c_pivot_root, "", "pivot_root(\".\", \".\")" },
	{ "chroot", c_chroot, "[DIR]", "chroot (needs CAP_SYS_CHROOT)" },
	{ "mknod", c_mknod, "[DIR]", "create char 1:1 and block 8:0 device nodes" },
	{ "dev-access", c_dev_access, "[DEV...]", "open host devices; any unexpected node in /dev" },
	{ "setuid-binary", c_setuid_binary, "[PATH...]", "gain uid/caps by exec of a setuid or file-cap binary" },
	{ "suid-report", c_suid_report, "EUID CAPEFF", "(internal) run as a setuid copy: report gained creds" },
	{ "confinement", c_confinement, "", "no capabilities, no_new_privs, seccomp filter on" },
	{ "proc-sys-write", c_proc_sys_write, "[PATH...]", "write /proc/sys, sysrq, core_pattern, uevent_helper" },
	{ "limit-knobs", c_limit_knobs, "[PATH...]", "write, chmod or remount the files holding the box's limits" },
	{ "sysrq", c_sysrq, "", "open /proc/sysrq-trigger for writing" },
	{ "cgroup-release-agent", c_cgroup_release_agent, "", "release_agent / notify_on_release, mount cgroupfs" },
	{ "tiocsti", c_tiocsti, "[--no-tty-ok]", "TIOCSTI (also with high bits) on every reachable tty" },
	{ "tioclinux", c_tioclinux, "", "TIOCLINUX on ttys and VTs" },
	{ "userns", c_userns, "", "unshare each namespace, nested user namespace" },
	{ "clone3-ns", c_clone3_ns, "", "clone3/clone with namespace flags" },
	{ "setns", c_setns, "", "setns into PID 1's / the parent's namespaces, pidfd setns" },
	{ "ns-distinct", c_ns_distinct, "KIND=INODE...", "every namespace differs from the host's" },
	{ "bpf", c_bpf, "", "BPF_PROG_LOAD socket filter, BPF_MAP_CREATE" },
	{ "perf", c_perf, "", "perf_event_open" },
	{ "userfaultfd", c_userfaultfd, "", "userfaultfd syscall and /dev/userfaultfd" },
	{ "keyctl", c_keyctl, "", "add_key, keyctl read, request_key" },
	{ "io-uring", c_io_uring, "", "io_uring_setup" },
	{ "ptrace", c_ptrace, "[PID...]", "ptrace/process_vm_readv/proc mem/pidfd_getfd of PID 1 and parent" },
	{ "stop-spawns", c_stop_spawns, "SECONDS", "SIGSTOP a session's child before its execve()" },
	{ "kill-all", c_kill_all, "[CANARY_PID...]", "kill(-1, SIGKILL) reaches only the box" },
	{ "abstract-unix", c_abstract_unix, "NAME", "connect to a host abstract unix socket" },
	{ "unix-socket", c_unix_socket, "PATH", "connect to a host pathname unix socket" },
	{ "host-loopback", c_host_loopback, "PORT [ADDR...]", "TCP to host 127.0.0.1/::1 (and ADDRs)" },
	{ "udp-send", c_udp_send, "ADDR PORT", "UDP datagram to a host listener gets no reply" },
	{ "proxy-listener", c_proxy_listener, "ADDR PORT", "bind, move or steal the explicit proxy's listener" },
	{ "raw-socket", c_raw_socket, "", "raw IP and AF_PACKET sockets" },
	{ "fork-bomb", c_fork_bomb, "[MAX]", "fork until failure; blocked if the limit hits before MAX" },
	{ "memory-hog", c_memory_hog, "MB", "allocate and touch MB; blocked = fail or OOM kill (137)" },
	{ "disk-fill", c_disk_fill, "DIR MB", "write until ENOSPC; blocked = limit before MB" },
	{ "daemon", c_daemon, "MARKER [--keep-stdio]", "double-forked daemon must not outlive the box" },
	{ "personality", c_personality, "", "PER_BSD, READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, ..." },
	{ "x32", c_x32, "", "x32 ABI syscall" },
	{ "int80", c_int80, "", "32-bit int $0x80 syscall" },
	{ "kmod", c_kmod, "", "init_module, finit_module, delete_module" },
	{ "kexec", c_kexec, "", "kexec_file_load, kexec_load" },
	{ "open-by-handle", c_open_by_handle, "", "open_by_handle_at of the ext4 root (shocker)" },
	{ "mount-scan", c_mount_scan, "HOSTPATH TOKEN", "no box mount exposes the host tree holding HOSTPATH" },
	{ "cwd", c_cwd, "[TOKEN]", "the start directory is the box's, not the CLI's host cwd" },
	{ "sysv-ipc", c_sysv_ipc, "KEY...", "host System V shm/msg/sem objects not visible" },
	{ "vsock", c_vsock, "", "AF_VSOCK sockets (not namespaced) refused" },
	{ "alg", c_alg, "[--filtered]", "AF_ALG (kernel crypto API) socket, bind hash/sha256" },
	{ "syslog", c_syslog, "", "read the host kernel log" },
	{ "clock-set", c_clock_set, "", "settimeofday passes the CAP_SYS_TIME check" },
	{ "ioport", c_ioport, "", "iopl / ioperm" },
	{ "reboot", c_reboot, "", "reboot(2) passes the CAP_SYS_BOOT check" },
	{ "list", c_list, "", "print this table" },
};

static int c_list(int argc, char **argv)
{
	for (size_t i = 0; i < ARRAY_SIZE(checks); i++)
		printf("%-22s %-28s %s\n", checks[i].name, checks[i].usage, checks[i].desc);
	return 0;
}

int main(int argc, char **argv)
{
	const struct check *c = NULL;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: paddock-probe SUBCOMMAND [ARGS...]  (paddock-probe list)\n");
		return PROBE_ERROR;
	}
	for (size_t i = 0; i < ARRAY_SIZE(checks); i++)
		if (strcmp(argv[1], checks[i].name) == 0)
			c = &checks[i];
	if (!c) {
		fprintf(stderr, "paddock-probe: unknown subcommand %s (paddock-probe list)\n", argv[1]);
		return PROBE_ERROR;
	}
	g_cmd = c->name;
	rc = c->fn(argc - 2, argv + 2);
	if (c->fn == c_list)
		return rc;
	if (rc == PROBE_ERROR && g_verdict == BLOCKED) {
		fprintf(stderr, "usage: paddock-probe %s %s\n", c->name, c->usage);
		g_verdict = PROBE_ERROR;
	}
	printf("%s: verdict %s\n", c->name, verdict_name(g_verdict));
	return g_verdict;
}
