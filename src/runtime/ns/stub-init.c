/* stub-init.c — a static test payload the integration test runs as the box's init (crun's
 * tests/init.c idea): it answers one-line commands on PADDOCK_CTL_FD with what it sees from
 * inside the box, each answer ending with a line ".". Test-only; never shipped. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <sched.h>

static int ctl = -1;

static void say(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	for (int off = 0; off < n;) {
		ssize_t w = write(ctl, buf + off, (size_t)(n - off));
		if (w <= 0)
			_exit(3);
		off += (int)w;
	}
}

static void cat(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say("error %d\n", errno);
		return;
	}
	for (ssize_t n; (n = read(fd, buf, sizeof(buf) - 1)) > 0;) {
		buf[n] = '\0';
		say("%s", buf);
	}
	close(fd);
}

static void ls(const char *path)
{
	DIR *d = opendir(path);
	if (!d) {
		say("error %d\n", errno);
		return;
	}
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			say("%s\n", de->d_name);
	closedir(d);
}

static void result(long r)
{
	if (r < 0)
		say("errno %d\n", errno);
	else
		say("ok %ld\n", r);
}

static void write_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return result(-1);
	long r = write(fd, "x\n", 2);
	close(fd);
	result(r);
}

static void fill(const char *path)
{
	static char chunk[1 << 20];
	long long total = 0;
	int e = 0;
	signal(SIGXFSZ, SIG_IGN);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return result(-1);
	memset(chunk, 'z', sizeof(chunk));
	for (;;) {
		ssize_t w = write(fd, chunk, sizeof(chunk));
		if (w <= 0) {
			e = w < 0 ? errno : ENOSPC;
			break;
		}
		total += w;
	}
	close(fd);
	unlink(path);
	say("bytes %lld errno %d\n", total, e);
}

static void run_sh(const char *cmd, int as_agent)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return result(-1);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (as_agent && (setgroups(0, NULL) < 0 || setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0))
			_exit(125);
		char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/root", NULL};
		execle("/bin/sh", "sh", "-c", cmd, (char *)NULL, envp);
		_exit(126);
	}
	close(p[1]);
	char buf[4096];
	for (ssize_t n; (n = read(p[0], buf, sizeof(buf) - 1)) > 0;) {
		buf[n] = '\0';
		say("%s", buf);
	}
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	say("exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static void daemonize(void)
{
	int p[2];
	pipe2(p, O_CLOEXEC);
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		pid_t g = fork();
		if (g == 0) {
			for (;;)
				pause();
		}
		(void)!write(p[1], &g, sizeof(g));
		_exit(0);
	}
	close(p[1]);
	pid_t g = 0;
	(void)!read(p[0], &g, sizeof(g));
	close(p[0]);
	waitpid(pid, NULL, 0);
	say("daemon %d\n", (int)g);
}

static void arch_call(int x32)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (x32)
			syscall(0x40000000 | SYS_getpid);
		else {
			int r;
			__asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");
		}
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	say("signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void probe(const char *what)
{
	char c = 'x';
	if (!strcmp(what, "mount"))
		result(mount("none", "/tmp", "tmpfs", 0, NULL));
	else if (!strcmp(what, "unshare"))
		result(unshare(CLONE_NEWUSER));
	else if (!strcmp(what, "clone-newuser"))
		result(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
	else if (!strcmp(what, "clone3"))
		result(syscall(SYS_clone3, NULL, 0));
	else if (!strcmp(what, "io_uring"))
		result(syscall(SYS_io_uring_setup, 1, NULL));
	else if (!strcmp(what, "bpf"))
		result(syscall(SYS_bpf, 0, NULL, 0));
	else if (!strcmp(what, "tiocsti"))
		result(syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c));
	else if (!strcmp(what, "af_packet"))
		result(socket(AF_PACKET, SOCK_RAW, 0));
	else if (!strcmp(what, "chroot"))
		result(chroot("/tmp"));
	else if (!strcmp(what, "umount-proc-mask"))
		result(umount2("/proc/kcore", MNT_DETACH));
	else if (!strcmp(what, "sethostname"))
		result(sethostname("evil", 4));
	else if (!strcmp(what, "kill-1"))
		result(kill(-1, 0));
	else if (!strcmp(what, "x32"))
		arch_call(1);
	else if (!strcmp(what, "i386"))
		arch_call(0);
	else
		say("unknown probe\n");
}

static void rlimits(void)
{
	static const struct { int r; const char *n; } l[] = {
		{RLIMIT_CORE, "core"}, {RLIMIT_NOFILE, "nofile"}, {RLIMIT_NPROC, "nproc"}, {RLIMIT_FSIZE, "fsize"}};
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		struct rlimit v;
		getrlimit(l[i].r, &v);
		say("%s %llu %llu\n", l[i].n, (unsigned long long)v.rlim_cur, (unsigned long long)v.rlim_max);
	}
}

static void command(char *line)
{
	char *arg = strchr(line, ' ');
	if (arg)
		*arg++ = '\0';
	if (!strcmp(line, "env")) {
		extern char **environ;
		for (char **e = environ; *e; e++)
			say("%s\n", *e);
	} else if (!strcmp(line, "id")) {
		say("uid %d gid %d groups %d pid %d ppid %d\n", (int)getuid(), (int)getgid(), getgroups(0, NULL), (int)getpid(),
		    (int)getppid());
	} else if (!strcmp(line, "cat") && arg) {
		cat(arg);
	} else if (!strcmp(line, "ls") && arg) {
		ls(arg);
	} else if (!strcmp(line, "write") && arg) {
		write_file(arg);
	} else if (!strcmp(line, "mkdir") && arg) {
		result(mkdir(arg, 0755));
	} else if (!strcmp(line, "chmod") && arg) {
		result(chmod(arg, 0600));
	} else if (!strcmp(line, "fill") && arg) {
		fill(arg);
	} else if (!strcmp(line, "sh") && arg) {
		run_sh(arg, 0);
	} else if (!strcmp(line, "agent-sh") && arg) {
		run_sh(arg, 1);
	} else if (!strcmp(line, "probe") && arg) {
		probe(arg);
	} else if (!strcmp(line, "daemon")) {
		daemonize();
	} else if (!strcmp(line, "rlimits")) {
		rlimits();
	} else if (!strcmp(line, "fds")) {
		ls("/proc/self/fd");
	} else if (!strcmp(line, "exit")) {
		_exit(arg ? atoi(arg) : 0);
	} else {
		say("unknown command\n");
	}
	say(".\n");
}

int main(void)
{
	const char *e = getenv("PADDOCK_CTL_FD");
	char line[4096];
	size_t len = 0;
	ctl = e ? atoi(e) : -1;
	if (ctl < 0)
		return 2;
	signal(SIGCHLD, SIG_DFL);
	for (;;) {
		ssize_t n = read(ctl, line + len, 1);
		if (n <= 0)
			return 0;
		if (line[len] == '\n' || len == sizeof(line) - 2) {
			line[len] = '\0';
			command(line);
			len = 0;
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
			continue;
		}
		len++;
	}
}
