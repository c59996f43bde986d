/* vm_template.c — templates of booted vm guests: key, files, the resume frame, and the
 * detached builder (see vm_template.h). */
#include <fcntl.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "guest/vmboot.h"
#include "image/kernel_spawn.h"
#include "runtime/vm/migstream.h"
#include "runtime/vm/qemu_spawn.h"
#include "runtime/vm/vm_template.h"
#include "util/fdio.h"
#include "util/log.h"

#define PARK_TIMEOUT_MS (300 * 1000)  /* a TCG boot on a loaded host, in the background */
#define SAVE_TIMEOUT_MS (120 * 1000)
#define CONSOLE_MAX (256u * 1024u)
#define QMP_LINE_MAX 65536u

/* ---- key and files --------------------------------------------------------------------- */

char *vm_template_key(char *const *argv, const char *identity)
{
	uint8_t md[SHA256_DIGEST_SIZE];
	struct sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, sizeof(VM_TEMPLATE_VERSION), (const uint8_t *)VM_TEMPLATE_VERSION);
	for (size_t i = 0; argv[i]; i++)
		sha256_update(&c, strlen(argv[i]) + 1, (const uint8_t *)argv[i]); /* the NUL separates */
	sha256_update(&c, 1, (const uint8_t *)"\n");
	sha256_update(&c, strlen(identity), (const uint8_t *)identity);
	sha256_digest(&c, sizeof(md), md);
	char *hex = xmalloc(33);
	hex_encode(md, 16, hex);
	return hex;
}

/* The first "flags" line of /proc/cpuinfo: a saved guest resumed on a CPU with other features
 * (a cache carried to another host) could use an instruction that is no longer there. */
static char *cpu_flags(void)
{
	_cleanup_free_ char *text = NULL;
	if (read_file_at(AT_FDCWD, "/proc/cpuinfo", 1u << 20, &text, NULL) < 0)
		return xstrdup("flags unknown\n");
	for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, "flags", 5) == 0)
			return xstrndup(l, strcspn(l, "\n") + 1);
	return xstrdup("flags none\n");
}

char *vm_template_identity(const char *const *paths, size_t n)
{
	char *s = cpu_flags();
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		char *line = stat(paths[i], &st) == 0
				     ? xasprintf("%s %llu %llu %lld %lld.%09ld\n", paths[i], (unsigned long long)st.st_dev,
						 (unsigned long long)st.st_ino, (long long)st.st_size,
						 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec)
				     : xasprintf("%s missing\n", paths[i]);
		char *next = xasprintf("%s%s", s, line);
		free(s);
		free(line);
		s = next;
	}
	return s;
}

void vm_template_init(struct vm_template *t, const char *dir, const char *key)
{
	*t = (struct vm_template){.key = xstrdup(key), .disk = xasprintf("%s/%s.qcow2", dir, key),
				  .state = xasprintf("%s/%s.state", dir, key)};
}

void vm_template_done(struct vm_template *t)
{
	free(t->key);
	free(t->disk);
	free(t->state);
	*t = (struct vm_template){0};
}

static const char *builder_exe;

void vm_template_enable(const char *exe)
{
	builder_exe = exe;
}

bool vm_template_enabled(void)
{
	const char *v = getenv("PADDOCK_VM_TEMPLATE");
	return builder_exe && (!v || !streq(v, "0"));
}

char *vm_template_dir(const char *shared_home, const char *own_home)
{
	const char *env = getenv("PADDOCK_VM_TEMPLATE_DIR");
	if (env && env[0] == '/' && mkdir_p(env, 0700) == 0 && access(env, W_OK | X_OK) == 0)
		return xstrdup(env);
	char *d = xasprintf("%s/cache/vm-templates", shared_home);
	if (mkdir_p(d, 0700) == 0 && access(d, W_OK | X_OK) == 0)
		return d;
	free(d);
	d = xasprintf("%s/cache/vm-templates", own_home);
	(void)mkdir_p(d, 0700);
	return d;
}

/* <32 hex digits>.state: a ready template's state file */
static bool is_state_name(const char *name)
{
	return strlen(name) == 32 + 6 && streq(name + 32, ".state");
}

char *vm_template_doctor(const char *home)
{
	if (!vm_template_enabled())
		return xstrdup("info vm templates: off (PADDOCK_VM_TEMPLATE=0): every vm box boots");
	const char *env = getenv("PADDOCK_VM_TEMPLATE_DIR"), *cache = getenv("PADDOCK_VM_CACHE_HOME");
	_cleanup_free_ char *dir = env && env[0] == '/' ? xstrdup(env)
				  : xasprintf("%s/cache/vm-templates", cache && cache[0] == '/' ? cache : home);
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_strv_ char **names = NULL;
	size_t n = 0;
	if (fd >= 0 && dir_list_names(fd, &names) == 0)
		for (size_t i = 0; names[i]; i++)
			n += is_state_name(names[i]);
	return xasprintf("info vm templates: %zu ready in %s (a fresh box resumes from its configuration's; "
			 "the first one of a configuration boots and has one made)", n, dir);
}

bool vm_template_ready(const struct vm_template *t)
{
	return access(t->state, R_OK) == 0 && access(t->disk, R_OK) == 0;
}

static int copy_fd(int in, int out)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1u << 30, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		int r = fd_write_all(out, buf, (size_t)n);
		if (r < 0)
			return r;
	}
}

int vm_template_take(const struct vm_template *t, const char *path, int *ret_fd, pd_err *err)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp", path);
	_cleanup_close_ int state = open(t->state, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int in = open(t->disk, O_RDONLY | O_CLOEXEC);
	if (state < 0 || in < 0)
		return pd_error(err, errno, "vm template %s", t->key);
	(void)unlink(tmp);
	/* the box's disk, private to its state directory like one made by qemu-img */
	_cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return pd_error(err, errno, "cannot create %s", tmp);
	int r = copy_fd(in, out);
	if (r < 0) {
		(void)unlink(tmp);
		return pd_error(err, r, "cannot copy the template's disk to %s", tmp);
	}
	if (rename(tmp, path) < 0) {
		r = pd_error(err, errno, "cannot rename %s", tmp);
		(void)unlink(tmp);
		return r;
	}
	/* last used now: the builder's pruning keeps the templates in use (vm_template_prune) */
	(void)futimens(state, NULL);
	*ret_fd = TAKE_FD(state);
	return 0;
}

void vm_template_reject(const struct vm_template *t)
{
	(void)unlink(t->state);
}

/* ---- resume ------------------------------------------------------------------------------ */

void vm_template_resume_payload(struct proto_buf *b, const char *host, int64_t now_ns, const uint8_t *seed,
				size_t seed_len)
{
	_cleanup_free_ char *h = xasprintf("host=%s", host);
	_cleanup_free_ char *t = xasprintf("time=%lld", (long long)now_ns);
	char *s = xmalloc(5 + 2 * seed_len + 1);
	memcpy(s, "seed=", 5);
	hex_encode(seed, seed_len, s + 5);
	proto_tlv_put_str(b, PROTO_TAG_KV, h);
	proto_tlv_put_str(b, PROTO_TAG_KV, t);
	proto_tlv_put_str(b, PROTO_TAG_KV, s);
	explicit_bzero(s, strlen(s));
	free(s);
}

int vm_template_resume(int ctl_fd, const char *host, pd_err *err)
{
	uint8_t seed[VMBOOT_SEED_BYTES];
	if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		return pd_error(err, errno ? errno : EIO, "getrandom");
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct proto_buf b = {0};
	vm_template_resume_payload(&b, host, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, seed, sizeof(seed));
	explicit_bzero(seed, sizeof(seed));
	/* queued in the socket until the restored guest reads it in its park */
	int r = proto_send(ctl_fd, PROTO_INFO, 0, 0, b.data, (uint32_t)b.len);
	explicit_bzero(b.data, b.len);
	proto_buf_free(&b);
	return r < 0 ? pd_error(err, r, "cannot send the resume frame") : 0;
}

/* ---- the builder ------------------------------------------------------------------------- */

void vm_template_build_async(const struct vm_template *t, char *const *qemu_argv, const char *base, uint64_t size,
			     bool net)
{
	if (!builder_exe || vm_template_ready(t))
		return;
	char **argv = NULL;
	_cleanup_free_ char *disk = xasprintf("%s.tmp", t->disk), *sz = xasprintf("%llu", (unsigned long long)size);
	const char *fixed[] = {"paddock", "__vm-template-build", t->state, disk, base, sz, net ? "net" : "nonet", "--"};
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		argv = strv_append(argv, fixed[i]);
	for (size_t i = 0; qemu_argv[i]; i++)
		argv = strv_append(argv, qemu_argv[i]);
	pid_t pid = fork();
	if (pid == 0) {
		/* detached (its own session, reparented to init) and at the lowest priority: it
		 * works for the next box, never against this one */
		if (setsid() < 0 || fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(1);
		close_range(3, ~0u, 0);
		(void)setpriority(PRIO_PROCESS, 0, 19);
		execv(builder_exe, argv);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	strv_free(argv);
}

struct qmp {
	int fd;
	char buf[QMP_LINE_MAX];
	size_t len;
};

/* The next line from QMP that is not an event, within the deadline. QEMU here runs a guest
 * that has only ever run paddock-init (no box code yet), and the line is only searched for
 * fixed strings, never parsed further. */
static int qmp_line(struct qmp *q, char *out, size_t size, int64_t deadline)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		if (nl) {
			size_t n = (size_t)(nl - q->buf) + 1;
			bool event = memmem(q->buf, n, "\"event\"", 7) != NULL;
			if (!event) {
				size_t c = n < size ? n : size - 1;
				memcpy(out, q->buf, c);
				out[c] = '\0';
			}
			memmove(q->buf, q->buf + n, q->len - n);
			q->len -= n;
			if (!event)
				return 0;
			continue;
		}
		if (q->len == sizeof(q->buf))
			return -EMSGSIZE;
		int left = (int)(deadline - mono_ms());
		struct pollfd p = {.fd = q->fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, left) == 0)
			return -ETIMEDOUT;
		ssize_t r = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		q->len += r > 0 ? (size_t)r : 0;
	}
}

/* One command (with an fd passed alongside when pass_fd >= 0); its reply line in out. */
static int qmp_cmd(struct qmp *q, const char *cmd, int pass_fd, char *out, size_t size, int64_t deadline)
{
	struct iovec iov = {.iov_base = (void *)cmd, .iov_len = strlen(cmd)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u = {0};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (pass_fd >= 0) {
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	if (sendmsg(q->fd, &m, MSG_NOSIGNAL) != (ssize_t)iov.iov_len)
		return -EIO;
	int r = qmp_line(q, out, size, deadline);
	if (r == 0 && strstr(out, "\"error\""))
		return -EIO;
	return r;
}

/* Waits for the guest's VMBOOT_PARKED on the control channel, keeping the console drained (into
 * console_out, capped) and the network socket too (nothing answers the guest there). */
static int wait_parked(int ctl, int con, int net, int console_out, int pidfd)
{
	_cleanup_free_ uint8_t *buf = xmalloc(PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD);
	size_t logged = 0;
	int64_t deadline = mono_ms() + PARK_TIMEOUT_MS;
	for (;;) {
		struct pollfd p[] = {{.fd = ctl, .events = POLLIN}, {.fd = con, .events = POLLIN},
				     {.fd = pidfd, .events = POLLIN}, {.fd = net, .events = POLLIN}};
		int left = (int)(deadline - mono_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(p, net >= 0 ? 4 : 3, left) < 0 && errno != EINTR)
			return -errno;
		if (p[1].revents) {
			char cb[4096];
			ssize_t n = read(con, cb, sizeof(cb));
			if (n > 0 && logged < CONSOLE_MAX && console_out >= 0) {
				(void)fd_write_all(console_out, cb, (size_t)n);
				logged += (size_t)n;
			}
		}
		if (net >= 0 && p[3].revents) {
			char nb[2048];
			(void)recv(net, nb, sizeof(nb), MSG_DONTWAIT);
		}
		if (p[0].revents) {
			struct proto_frame f;
			int r = proto_recv(ctl, buf, &f);
			if (r < 0)
				return r;
			const char *kv;
			struct proto_tlv_iter it = {f.payload, f.hdr.len};
			uint16_t tag;
			const uint8_t *v;
			uint32_t vlen;
			if (f.hdr.type == PROTO_INFO && proto_tlv_next(&it, &tag, &v, &vlen) > 0 && tag == PROTO_TAG_KV &&
			    proto_tlv_str(v, vlen, &kv) == 0 && streq(kv, VMBOOT_PARKED))
				return 0;
			return -EPROTO;
		}
		if (p[2].revents)
			return -ECHILD; /* QEMU ended before the guest parked */
	}
}

/* QEMU's migration of the parked guest into state_fd (passed over QMP: the sandboxed QEMU
 * cannot open files or run programs for it). The guest is stopped first: a migration of a
 * running guest copies its RAM while it runs and sends what it dirtied again, and under TCG
 * (QEMU 7.2, this machine) about one template in sixteen came out with pages older than the
 * CPU and device state saved with them — restored boxes oopsed in the idle loop, or QEMU
 * refused a virtqueue whose ring in RAM was behind the device ("Guest index inconsistent
 * with Host index"). A stopped guest is copied once, consistent by construction, and the
 * copy is no slower: the parked guest had nothing to do meanwhile. */
static int save_state(int qmp_fd, int state_fd)
{
	static struct qmp q;
	char line[4096];
	q.fd = qmp_fd;
	q.len = 0;
	int64_t deadline = mono_ms() + SAVE_TIMEOUT_MS;
	int r = qmp_line(&q, line, sizeof(line), deadline); /* the greeting */
	if (r == 0)
		r = qmp_cmd(&q, "{\"execute\":\"qmp_capabilities\"}\n", -1, line, sizeof(line), deadline);
	if (r == 0)
		r = qmp_cmd(&q, "{\"execute\":\"stop\"}\n", -1, line, sizeof(line), deadline);
	if (r == 0)
		r = qmp_cmd(&q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"state\"}}\n", state_fd, line,
			    sizeof(line), deadline);
	if (r == 0)
		r = qmp_cmd(&q, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:state\"}}\n", -1, line,
			    sizeof(line), deadline);
	while (r == 0) {
		r = qmp_cmd(&q, "{\"execute\":\"query-migrate\"}\n", -1, line, sizeof(line), deadline);
		if (r == 0 && strstr(line, "\"status\": \"completed\""))
			return 0;
		if (r == 0 && (strstr(line, "\"status\": \"failed\"") || strstr(line, "\"status\": \"cancelled\"")))
			return -EIO;
		if (r == 0)
			(void)poll(NULL, 0, 20);
	}
	return r;
}

/* The output of the rewrite below, in writes of 1 MiB. */
struct state_out {
	int fd;
	size_t len;
	uint8_t buf[1u << 20];
};

static int state_out_flush(struct state_out *o)
{
	int r = o->len ? fd_write_all(o->fd, o->buf, o->len) : 0;
	o->len = 0;
	return r;
}

static int state_out_sink(void *ctx, const uint8_t *p, size_t n)
{
	struct state_out *o = ctx;
	if (o->len + n > sizeof(o->buf)) {
		int r = state_out_flush(o);
		if (r < 0)
			return r;
		if (n > sizeof(o->buf))
			return fd_write_all(o->fd, p, n);
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

/* The saved state without the zero markers of the guest's RAM (migstream.h): a restore then
 * touches only the pages that hold something (a 512 MiB guest: ~66 MB instead of all of it,
 * where the host has no shared zero page). A stream the rewrite does not know (-EINVAL) or
 * one it cannot write stays as QEMU wrote it: it loads, only more slowly. */
static int strip_state(const char *path)
{
	_cleanup_free_ char *tmp = xasprintf("%s.strip", path);
	_cleanup_close_ int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		return -errno;
	if (st.st_size <= 0)
		return -EINVAL;
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, in, 0);
	if (map == MAP_FAILED)
		return -errno;
	(void)madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
	(void)unlink(tmp);
	_cleanup_free_ struct state_out *o = xmalloc(sizeof(*o));
	o->len = 0;
	o->fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	struct mig_strip_stats ms;
	int r = o->fd < 0 ? -errno : mig_strip_zero(map, (size_t)st.st_size, MIG_GUEST_RAM_BLOCK, state_out_sink, o, &ms);
	if (r == 0)
		r = state_out_flush(o);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (o->fd >= 0)
		close(o->fd);
	if (r < 0)
		(void)unlink(tmp);
	else
		pd_debug("vm template %s: %llu zero pages of the guest's RAM left out, %llu pages kept", path,
			 (unsigned long long)ms.zero_dropped, (unsigned long long)ms.kept);
	munmap(map, (size_t)st.st_size);
	return r;
}

static int finish_file(const char *tmp, const char *path)
{
	_cleanup_close_ int fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0 || fchmod(fd, 0400) < 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

int vm_overlay_create(const char *base, const char *path, uint64_t size, pd_err *err)
{
	char sz[32];
	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)size);
	char *argv[] = {"qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", (char *)base, (char *)path,
			size ? sz : NULL, NULL};
	return image_run(argv, NULL, NULL, err);
}

static int build(const char *state, const char *disk_tmp, const char *base, uint64_t size, bool net,
		 char **qemu_argv)
{
	_cleanup_free_ char *state_tmp = xasprintf("%s.tmp", state);
	_cleanup_free_ char *console = xasprintf("%s.console", state);
	_cleanup_free_ char *disk = xstrndup(disk_tmp, strlen(disk_tmp) - 4);
	pd_err err = {0};
	(void)unlink(disk_tmp);
	(void)unlink(state_tmp);
	int r = vm_overlay_create(base, disk_tmp, size, &err);
	if (r < 0)
		return r;
	int ctl[2] = {-1, -1}, qmp[2] = {-1, -1}, con[2] = {-1, -1}, nt[2] = {-1, -1};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, con) < 0 ||
	    (net && socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, nt) < 0))
		return -errno;
	struct qemu_fd fds[] = {{ctl[1], 3}, {qmp[1], 4}, {con[1], 5}, {nt[1], 6}};
	pid_t pid;
	int pidfd;
	_cleanup_close_ int out = open(console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	r = qemu_spawn(qemu_argv, fds, net ? 4 : 3, out, &pid, &pidfd, &err);
	/* QEMU's ends: a QEMU that dies shows as EOF */
	closep(&ctl[1]);
	closep(&qmp[1]);
	closep(&con[1]);
	closep(&nt[1]);
	if (r == 0)
		r = wait_parked(ctl[0], con[0], nt[0], out, pidfd);
	else
		pid = -1;
	_cleanup_close_ int sfd = r == 0 ? open(state_tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	if (r == 0 && sfd < 0)
		r = -errno;
	if (r == 0)
		r = save_state(qmp[0], sfd);
	if (pid > 0) {
		qemu_kill(pid, pidfd); /* the guest is saved (or failed): nothing of it is needed */
		int st;
		(void)qemu_wait(pid, pidfd, 10000, &st);
		closep(&pidfd);
	}
	closep(&ctl[0]);
	closep(&qmp[0]);
	closep(&con[0]);
	closep(&nt[0]);
	if (r == 0) {
		int s = strip_state(state_tmp);
		if (s < 0)
			pd_debug("vm template %s: the state stays as QEMU saved it: %s", state, strerror(-s));
	}
	if (r == 0)
		r = finish_file(disk_tmp, disk);
	/* the state last: its presence is what makes the template ready */
	if (r == 0)
		r = finish_file(state_tmp, state);
	if (r < 0) {
		(void)unlink(state_tmp);
		(void)unlink(disk_tmp);
	}
	return r;
}

struct tpl_age {
	char *key;
	int64_t mtime;
};

static int newest_first(const void *a, const void *b)
{
	const struct tpl_age *x = a, *y = b;
	return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : 0;
}

void vm_template_prune(const char *dir, size_t keep)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_strv_ char **names = NULL;
	if (fd < 0 || dir_list_names(fd, &names) < 0)
		return;
	struct tpl_age *v = NULL;
	size_t n = 0;
	for (size_t i = 0; names[i]; i++) {
		struct stat st;
		if (!is_state_name(names[i]) || fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		v = xrealloc(v, (n + 1) * sizeof(*v));
		v[n++] = (struct tpl_age){xstrndup(names[i], 32), (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
	}
	if (n > 0)
		qsort(v, n, sizeof(*v), newest_first);
	for (size_t i = 0; i < n; i++) {
		static const char *const ext[] = {".state", ".qcow2", ".state.console", ".state.lock"};
		for (size_t e = 0; i >= keep && e < ARRAY_SIZE(ext); e++) {
			_cleanup_free_ char *name = xasprintf("%s%s", v[i].key, ext[e]);
			(void)unlinkat(fd, name, 0);
		}
		free(v[i].key);
	}
	free(v);
}

/* SIZE of the builder's argv: decimal bytes, as vm_template_build_async wrote it */
static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

int vm_template_build_main(int argc, char **argv)
{
	uint64_t size;
	if (argc < 8 || !streq(argv[6], "--") || (!streq(argv[5], "net") && !streq(argv[5], "nonet")) ||
	    strlen(argv[2]) < 5 || strcmp(argv[2] + strlen(argv[2]) - 4, ".tmp") != 0 || parse_size(argv[4], &size) < 0)
		return 2;
	const char *state = argv[1];
	_cleanup_free_ char *lock_path = xasprintf("%s.lock", state);
	/* one builder per template; the others leave at once */
	_cleanup_close_ int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
		return 0;
	if (access(state, R_OK) == 0)
		return 0;
	int r = build(state, argv[2], argv[3], size, streq(argv[5], "net"), argv + 7);
	if (r < 0)
		pd_debug("vm template %s: %s", state, strerror(-r));
	_cleanup_free_ char *dir = xstrdup(state);
	char *slash = strrchr(dir, '/');
	if (r == 0 && slash) {
		*slash = '\0';
		vm_template_prune(dir, VM_TEMPLATE_KEEP);
	}
	return r < 0 ? 1 : 0;
}
