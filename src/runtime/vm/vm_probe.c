/* vm_probe.c — the KVM probe boot and the cached accelerator decision (see vm_probe.h). */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "runtime/vm/qemu_spawn.h"
#include "runtime/vm/vm_probe.h"
#include "util/fdio.h"
#include "util/log.h"

struct capture {
	char buf[VM_PROBE_OUTPUT_MAX + 1];
	size_t len;
	int fd;
};

/* Appends what is readable; returns false at EOF. Bytes past the cap are drained. */
static bool capture_read(struct capture *c)
{
	char scratch[4096];
	size_t room = VM_PROBE_OUTPUT_MAX - c->len;
	ssize_t n = read(c->fd, room ? c->buf + c->len : scratch, room ? room : sizeof(scratch));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	if (room)
		c->len += (size_t)n;
	c->buf[c->len] = '\0';
	return true;
}

/* Reads console and QEMU output until QEMU exits, a fatal KVM message shows, or the deadline. */
static void probe_watch(struct capture *con, struct capture *out, pid_t pid, int pidfd, int timeout_ms,
			struct vm_probe_outcome *o)
{
	uint64_t deadline = qemu_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		struct pollfd p[3] = {{.fd = con->fd, .events = POLLIN}, {.fd = out->fd, .events = POLLIN},
				      {.fd = pidfd, .events = POLLIN}};
		uint64_t now = qemu_now_ms();
		if (now >= deadline) {
			o->timed_out = true;
			return;
		}
		if (poll(p, 3, (int)(deadline - now)) < 0 && errno != EINTR)
			return;
		if (p[0].revents && !capture_read(con))
			con->fd = -1; /* poll ignores negative fds */
		if (p[1].revents && !capture_read(out))
			out->fd = -1;
		if (vm_probe_fatal_output(out->buf))
			return;
		if (p[2].revents || (pidfd < 0 && con->fd < 0 && out->fd < 0)) {
			o->exited = qemu_wait(pid, -1, 2000, &o->status) == 1;
			/* QEMU is gone, so are the writers: what is left in the pipes is finite */
			while (o->exited && con->fd >= 0 && capture_read(con))
				;
			while (o->exited && out->fd >= 0 && capture_read(out))
				;
			return;
		}
	}
}

static int probe_spawn(const struct vm_boot_files *b, enum vm_accel accel, int con_fd, int out_fd, pid_t *ret_pid,
		       int *ret_pidfd, pd_err *err)
{
	struct qemu_config c;
	qemu_config_init(&c);
	c.binary = b->qemu;
	c.accel = accel;
	c.memory_mib = 256;
	c.kernel = b->kernel;
	c.initrd = b->initrd;
	c.tsc_khz = b->tsc_khz;
	c.probe = true;
	c.console_fd = 3;
	c.balloon = c.rng = false;
	_cleanup_strv_ char **argv = NULL;
	int r = qemu_argv_build(&c, &argv, err);
	if (r < 0)
		return r;
	struct qemu_fd fds[] = {{con_fd, 3}};
	return qemu_spawn(argv, fds, ARRAY_SIZE(fds), out_fd, ret_pid, ret_pidfd, err);
}

int vm_probe_run(const struct vm_boot_files *b, enum vm_accel accel, int timeout_ms, bool *ret_ok, char *reason,
		 size_t reason_len, pd_err *err)
{
	int sp[2], pp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return pd_error(err, errno, "cannot create the probe's console socket");
	_cleanup_close_ int con_rd = sp[0], con_wr = sp[1];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create the probe's output pipe");
	_cleanup_close_ int out_rd = pp[0], out_wr = pp[1];
	pid_t pid;
	_cleanup_close_ int pidfd = -1;
	int r = probe_spawn(b, accel, con_wr, out_wr, &pid, &pidfd, err);
	if (r < 0)
		return r;
	closep(&con_wr);
	closep(&out_wr);
	con_wr = out_wr = -1;
	_cleanup_free_ struct capture *con = xcalloc(1, sizeof(*con)), *out = xcalloc(1, sizeof(*out));
	con->fd = con_rd;
	out->fd = out_rd;
	struct vm_probe_outcome o = {0};
	probe_watch(con, out, pid, pidfd, timeout_ms, &o);
	if (!o.exited) {
		qemu_kill(pid, pidfd);
		(void)qemu_wait(pid, pidfd, 5000, &o.status);
	}
	o.console = con->buf;
	o.qemu_out = out->buf;
	*ret_ok = vm_probe_classify(&o, reason, reason_len);
	pd_debug("vm probe (%s): %s; console: %s; qemu: %s", vm_accel_name(accel), reason, con->buf, out->buf);
	return 0;
}

/* ---- cached decision ------------------------------------------------------------------ */

static char *cache_key(const struct vm_boot_files *b)
{
	struct stat st;
	struct utsname u;
	_cleanup_free_ char *qid = stat(b->qemu, &st) == 0
					   ? xasprintf("%llx-%llx-%lld", (unsigned long long)st.st_ino,
						       (unsigned long long)st.st_size, (long long)st.st_mtime)
					   : xstrdup("unknown");
	return vm_accel_cache_key(b->kernel_digest, qid, uname(&u) == 0 ? u.release : "unknown");
}

static char *cache_path(const struct vm_boot_files *b)
{
	return xasprintf("%s/cache/kvm-verdict", b->home);
}

int vm_accel_cached(const struct vm_boot_files *b, bool *ret_ok, char *reason, size_t reason_len)
{
	_cleanup_free_ char *path = cache_path(b), *text = NULL, *key = cache_key(b);
	int r = read_file_at(AT_FDCWD, path, 4096, &text, NULL);
	if (r < 0)
		return r;
	return vm_accel_cache_parse(text, key, ret_ok, reason, reason_len);
}

static void cache_store(const struct vm_boot_files *b, bool ok, const char *reason)
{
	_cleanup_free_ char *path = cache_path(b), *key = cache_key(b), *dir = xasprintf("%s/cache", b->home);
	_cleanup_free_ char *text = vm_accel_cache_format(key, ok, reason);
	/* a verdict we cannot store is only re-proven next time */
	if (mkdir_p(dir, 0700) == 0)
		(void)write_file_atomic_at(AT_FDCWD, path, text, strlen(text), 0644);
}

static int probe_facts(const struct vm_boot_files *b, struct vm_kvm_facts *f, pd_err *err)
{
	if (vm_accel_cached(b, &f->probe_ok, f->probe_reason, sizeof(f->probe_reason)) == 0) {
		f->probed = f->probe_cached = true;
		return 0;
	}
	int r = vm_probe_run(b, VM_ACCEL_KVM, VM_PROBE_TIMEOUT_MS, &f->probe_ok, f->probe_reason,
			     sizeof(f->probe_reason), err);
	if (r < 0)
		return r;
	f->probed = true;
	cache_store(b, f->probe_ok, f->probe_reason);
	return 0;
}

int vm_accel_choose(enum vm_accel_mode mode, const struct vm_boot_files *b, struct vm_accel_choice *ret,
		    pd_err *err)
{
	struct vm_kvm_facts f = {0};
	if (mode != VM_ACCEL_MODE_TCG)
		vm_kvm_check(&f);
	vm_accel_decide(mode, &f, ret);
	if (ret->need_probe) {
		int r = probe_facts(b, &f, err);
		if (r < 0)
			return pd_err_prefix(err, "cannot probe KVM");
		vm_accel_decide(mode, &f, ret);
	}
	if (ret->accel == VM_ACCEL_INVALID)
		return pd_error_msg(err, ENODEV, "accelerator %s", ret->reason);
	return 0;
}
