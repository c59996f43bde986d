/* test-init.c — drives the real static paddock-init (argv[1]) over a socketpair, as the
 * supervisor does, but without a sandbox: init is our child (not PID 1, so it runs as a child
 * subreaper), and its agent user is us — or nobody (65534) when we are root with CAP_SETUID,
 * so the real uid and capability drop is exercised. We are a subreaper too, so whatever
 * outlives init comes back to us and is reaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "proto/proto.h"
#include "util/fdio.h"

#define CTL_FD 42
#define WAIT_MS 20000
#define MAX_STREAMS 512
/* what we grant each output of a session at its start, and again as it comes */
#define OUT_WINDOW (256u * 1024u)
/* session.h's SESSION_STDIN_WINDOW: the credit init gives a new session's stdin */
#define SESSION_STDIN_WINDOW_TEST (256u * 1024u)

static const char *init_path;
static uid_t agent_uid;
static gid_t agent_gid;
static bool privileged; /* root with CAP_SETUID/CAP_SETGID/CAP_SETPCAP: agent is nobody */

struct box {
	pid_t pid;
	struct proto_conn c;
	uint32_t next_stream;
	/* bytes fed to a session's stdin while we wait for frames */
	const uint8_t *feed;
	size_t feed_len, feed_off;
	uint32_t feed_stream;
	/* windows (we announced PROTO_MINOR_WINDOW): what init granted each stream's stdin,
	 * what we granted its stdout and stderr, and streams whose output we do not grant again
	 * as it comes (hold) */
	bool windowed;
	uint32_t in_credit[MAX_STREAMS];
	uint64_t in_sent[MAX_STREAMS];
	uint32_t out_credit[MAX_STREAMS][2];
	bool hold[MAX_STREAMS];
};

struct result {
	bool started, error, exited;
	uint32_t pid;
	char *out, *err; /* NUL-terminated for strstr, lengths exact */
	size_t out_len, err_len;
	int eofs[3];
	int status;
	int error_errno;
	char error_msg[256];
};

static struct box B = {.pid = -1, .c = {.fd = -1}};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* ---- the box ---------------------------------------------------------------------- */

/* With ns, init runs as PID 1 of new user, pid and mount namespaces (unshare(1) maps our uid
 * to 0 there, so the agent is uid 0: the only one mapped). */
static _noreturn_ void box_child(int fd, bool root_ok, bool ns)
{
	char uid[64], gid[64];
	snprintf(uid, sizeof(uid), "PADDOCK_AGENT_UID=%u", ns ? 0 : (unsigned)agent_uid);
	snprintf(gid, sizeof(gid), "PADDOCK_AGENT_GID=%u", ns ? 0 : (unsigned)agent_gid);
	char *envp[] = {"PADDOCK_CTL_FD=42", uid, gid, root_ok ? "PADDOCK_ROOT_OK=1" : "PADDOCK_ROOT_OK=0",
			"PADDOCK_HOSTNAME=testbox", NULL};
	char *argv[] = {"paddock-init", NULL};
	char *ns_argv[] = {"unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child",
			   "--mount-proc", (char *)init_path, NULL};
	int nul = open("/dev/null", O_RDWR);
	if (dup2(fd, CTL_FD) < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0)
		_exit(98);
	if (ns)
		execvpe("unshare", ns_argv, envp);
	else
		execve(init_path, argv, envp);
	_exit(99);
}

static void box_start_raw_ns(struct box *b, bool root_ok, bool ns)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	b->pid = fork();
	assert_true(b->pid >= 0);
	if (b->pid == 0)
		box_child(sv[1], root_ok, ns);
	close(sv[1]);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	proto_conn_init(&b->c, sv[0]);
	b->next_stream = 1;
}

static void box_start_raw(struct box *b, bool root_ok)
{
	box_start_raw_ns(b, root_ok, false);
}

static void box_send(struct box *b, uint16_t type, uint32_t stream, const void *p, uint32_t len)
{
	proto_conn_send(&b->c, type, 0, stream, p, len);
	int r = proto_conn_flush(&b->c);
	assert_true(r == 0 || r == -EAGAIN || r == -EPIPE || r == -ECONNRESET);
}

/* A grant of n more bytes of output fd (1, 2) of stream. */
static void box_grant(struct box *b, uint32_t stream, uint8_t fd, uint32_t n)
{
	if (!b->windowed || n == 0)
		return;
	assert_int_equal(proto_credit_grant(&b->out_credit[stream][fd - 1], n), 0);
	proto_send_window(&b->c, stream, fd, n);
}

/* n stdin bytes for stream, within the credit init gave it (a test that wants more waits) */
static void box_stdin(struct box *b, uint32_t stream, const void *p, uint32_t n)
{
	if (b->windowed) {
		assert_int_equal(proto_credit_take(&b->in_credit[stream], n), 0);
		b->in_sent[stream] += n;
	}
	box_send(b, PROTO_STDIN, stream, p, n);
}

static void box_feed(struct box *b)
{
	while (b->feed && b->feed_off < b->feed_len && proto_conn_pending(&b->c) < 256 * 1024) {
		size_t n = b->feed_len - b->feed_off < 65536 ? b->feed_len - b->feed_off : 65536;
		if (b->windowed && n > b->in_credit[b->feed_stream])
			n = b->in_credit[b->feed_stream];
		if (n == 0)
			return; /* init holds what it was given: wait for its grant */
		if (b->windowed) {
			b->in_credit[b->feed_stream] -= (uint32_t)n;
			b->in_sent[b->feed_stream] += n;
		}
		proto_conn_send(&b->c, PROTO_STDIN, 0, b->feed_stream, b->feed + b->feed_off, (uint32_t)n);
		b->feed_off += n;
	}
	if (b->feed && b->feed_off == b->feed_len) {
		uint8_t fd0 = 0;
		proto_conn_send(&b->c, PROTO_EOF, 0, b->feed_stream, &fd0, 1);
		b->feed = NULL;
	}
}

/* With windows: a WINDOW (init's grant for stdin) is taken here (true), and output is checked
 * against what we granted — init never sends more — and granted again unless held. */
static bool box_flow(struct box *b, const struct proto_frame *f)
{
	uint8_t fd;
	uint32_t n;
	if (f->hdr.type == PROTO_WINDOW) {
		assert_true(b->windowed); /* never to a supervisor that did not announce them */
		assert_int_equal(proto_decode_window(f, &fd, &n), 0);
		assert_int_equal(fd, 0);
		assert_in_range(f->hdr.stream, 1, MAX_STREAMS - 1);
		assert_int_equal(proto_credit_grant(&b->in_credit[f->hdr.stream], n), 0);
		return true;
	}
	if (b->windowed && (f->hdr.type == PROTO_STDOUT || f->hdr.type == PROTO_STDERR)) {
		int k = f->hdr.type == PROTO_STDERR;
		assert_in_range(f->hdr.stream, 1, MAX_STREAMS - 1);
		assert_int_equal(proto_credit_take(&b->out_credit[f->hdr.stream][k], f->hdr.len), 0);
		if (!b->hold[f->hdr.stream])
			box_grant(b, f->hdr.stream, (uint8_t)(k + 1), f->hdr.len);
	}
	return false;
}

/* The next frame from init: 1, or 0 once init has closed the channel. Never blocks longer
 * than WAIT_MS without progress; keeps our own queue (and any stdin feed) flowing. */
static int box_next(struct box *b, struct proto_frame *f)
{
	for (;;) {
		int r = proto_conn_next(&b->c, f);
		assert_true(r >= 0);
		if (r == 1 && box_flow(b, f))
			continue;
		if (r == 1)
			return 1;
		if (b->c.eof)
			return 0;
		box_feed(b);
		r = proto_conn_flush(&b->c);
		assert_true(r == 0 || r == -EAGAIN || r == -EPIPE || r == -ECONNRESET);
		struct pollfd p = {.fd = b->c.fd, .events = POLLIN | (proto_conn_pending(&b->c) ? POLLOUT : 0)};
		assert_true(poll(&p, 1, WAIT_MS) > 0); /* no frame for 20 s: init hangs */
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = proto_conn_read(&b->c);
		if (r == -ECONNRESET)
			b->c.eof = true;
		else
			assert_true(r >= 0 || r == -EAGAIN);
	}
}

static void expect_hello(struct box *b)
{
	struct proto_frame f;
	uint16_t major, minor;
	assert_int_equal(box_next(b, &f), 1);
	assert_int_equal(f.hdr.stream, 0);
	assert_int_equal(proto_decode_hello(&f, &major, &minor), 0);
	assert_int_equal(major, PROTO_VERSION_MAJOR);
}

static void send_hello(struct box *b, uint16_t major, uint16_t minor)
{
	uint8_t p[8];
	proto_put_u32(p, PROTO_MAGIC);
	proto_put_u16(p + 4, major);
	proto_put_u16(p + 6, minor);
	box_send(b, PROTO_HELLO, 0, p, sizeof(p));
}

/* As a supervisor of this version does: with windows. */
static void box_start_ns(struct box *b, bool root_ok, bool ns)
{
	box_start_raw_ns(b, root_ok, ns);
	expect_hello(b);
	send_hello(b, PROTO_VERSION_MAJOR, PROTO_MINOR_WINDOW);
	b->windowed = true;
}

/* As a supervisor of minor 1 does (no windows): init then stops reading the channel, or
 * output, while a session's stdin, or the channel, is backed up. */
static void box_start_unwindowed(struct box *b)
{
	box_start_raw_ns(b, false, false);
	expect_hello(b);
	send_hello(b, PROTO_VERSION_MAJOR, PROTO_MINOR_OUTPUT_GONE);
}

static void box_start(struct box *b, bool root_ok)
{
	box_start_ns(b, root_ok, false);
}

/* Waits for init to exit (it must, within WAIT_MS) and returns its wait status. */
static int box_wait(struct box *b)
{
	int st = -1;
	for (uint64_t end = now_ms() + WAIT_MS; now_ms() < end; usleep(5000))
		if (waitpid(b->pid, &st, WNOHANG) == b->pid) {
			b->pid = -1;
			return st;
		}
	fail_msg("paddock-init did not exit");
	return st;
}

static void expect_exit_code(struct box *b, int code)
{
	struct proto_frame f;
	while (box_next(b, &f) == 1)
		; /* whatever it still had queued */
	int st = box_wait(b);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), code);
}

/* Drops the channel (init then kills its sessions and exits 1) and reaps what is left. */
static int teardown_box(void **state)
{
	if (B.c.fd >= 0)
		proto_conn_free(&B.c);
	if (B.pid > 0)
		(void)box_wait(&B);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	B = (struct box){.pid = -1, .c = {.fd = -1}};
	return 0;
}

/* ---- sessions ----------------------------------------------------------------------- */

struct opts {
	const char *const *env;
	const char *cwd, *user;
	bool tty;
	uint16_t rows, cols;
};

static uint32_t box_exec_on(struct box *b, uint32_t stream, const char *const *argv, const struct opts *o)
{
	static const struct opts none;
	o = o ? o : &none;
	struct proto_buf pb = {0};
	proto_encode_exec(&pb, (char *const *)argv, (char *const *)o->env, o->cwd, o->user, o->tty, o->rows, o->cols);
	box_send(b, PROTO_EXEC, stream, pb.data, (uint32_t)pb.len);
	proto_buf_free(&pb);
	for (uint8_t fd = 1; fd <= 2 && !b->hold[stream]; fd++)
		box_grant(b, stream, fd, OUT_WINDOW);
	return stream;
}

static uint32_t box_exec(struct box *b, const char *const *argv, const struct opts *o)
{
	return box_exec_on(b, b->next_stream++, argv, o);
}

static void append(char **buf, size_t *len, const uint8_t *p, size_t n)
{
	*buf = xrealloc(*buf, *len + n + 1);
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static void on_error_frame(struct result *r, const struct proto_frame *f)
{
	const char *msg;
	assert_false(r->started);
	assert_int_equal(proto_decode_error(f, &r->error_errno, &msg), 0);
	snprintf(r->error_msg, sizeof(r->error_msg), "%s", msg);
	r->error = true;
}

/* Applies one frame of the session to r; returns true once the stream has ended. */
static bool result_add(struct result *r, const struct proto_frame *f)
{
	uint32_t v;
	switch (f->hdr.type) {
	case PROTO_STARTED:
		assert_false(r->started);
		assert_int_equal(proto_decode_u32(f, &r->pid), 0);
		r->started = true;
		return false;
	case PROTO_STDOUT:
	case PROTO_STDERR: {
		bool out = f->hdr.type == PROTO_STDOUT;
		assert_true(r->started);
		assert_int_equal(r->eofs[out ? 1 : 2], 0); /* nothing after EOF */
		append(out ? &r->out : &r->err, out ? &r->out_len : &r->err_len, f->payload, f->hdr.len);
		return false;
	}
	case PROTO_EOF:
		assert_int_equal(f->hdr.len, 1);
		assert_in_range(f->payload[0], 1, 2);
		r->eofs[f->payload[0]]++;
		return false;
	case PROTO_EXIT:
		assert_true(r->started);
		assert_int_equal(r->eofs[1], 1); /* exactly one EOF of each, before EXIT */
		assert_int_equal(r->eofs[2], 1);
		assert_int_equal(proto_decode_u32(f, &v), 0);
		r->status = (int)v;
		r->exited = true;
		return true;
	case PROTO_ERROR:
		on_error_frame(r, f);
		return true;
	default:
		fail_msg("unexpected %s frame on a session stream", proto_type_name(f->hdr.type));
		return true;
	}
}

/* Collects frames of stream until it ends, or (needle) until its stdout contains needle. */
static void collect_until(struct box *b, uint32_t stream, struct result *r, const char *needle)
{
	struct proto_frame f;
	for (;;) {
		if (needle && r->out && strstr(r->out, needle))
			return;
		assert_int_equal(box_next(b, &f), 1);
		assert_int_equal(f.hdr.stream, stream);
		if (result_add(r, &f))
			return;
	}
}

static void collect(struct box *b, uint32_t stream, struct result *r)
{
	collect_until(b, stream, r, NULL);
}

static void wait_started(struct box *b, uint32_t stream, struct result *r)
{
	struct proto_frame f;
	while (!r->started) {
		assert_int_equal(box_next(b, &f), 1);
		assert_int_equal(f.hdr.stream, stream);
		assert_false(result_add(r, &f));
	}
}

static void run(const char *const *argv, const struct opts *o, struct result *r)
{
	collect(&B, box_exec(&B, argv, o), r);
}

static void send_u32(struct box *b, uint16_t type, uint32_t stream, uint32_t v)
{
	uint8_t p[4];
	proto_put_u32(p, v);
	box_send(b, type, stream, p, sizeof(p));
}

#define SH(...) ((const char *const[]){"/bin/sh", "-c", __VA_ARGS__, NULL})
#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- tests -------------------------------------------------------------------------- */

static void test_exec_pipes(void **state)
{
	struct result r = {0};
	box_start(&B, false);
	run(SH("echo out; echo err >&2; exit 7"), NULL, &r);
	assert_true(r.started);
	assert_true(r.pid > 0);
	assert_string_equal(r.out, "out\n");
	assert_string_equal(r.err, "err\n");
	assert_int_equal(r.status, 7);
	result_free(&r);
	run(ARGV("true"), NULL, &r); /* no output at all: still EOF, EOF, EXIT */
	assert_int_equal(r.out_len + r.err_len, 0);
	assert_int_equal(r.status, 0);
	result_free(&r);
	run(SH("kill -TERM $$"), NULL, &r);
	assert_int_equal(r.status, 143);
	result_free(&r);
}

static void stdin_binary(bool windowed)
{
	const size_t len = 1024 * 1024;
	_cleanup_free_ uint8_t *data = xmalloc(len);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i ^ (i >> 8) ^ (i >> 16));
	struct result r = {0};
	if (windowed)
		box_start(&B, false);
	else
		box_start_unwindowed(&B);
	B.feed_stream = box_exec(&B, SH("cat; echo done >&2"), NULL);
	B.feed = data, B.feed_len = len, B.feed_off = 0;
	collect(&B, B.feed_stream, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.out_len, len);
	assert_memory_equal(r.out, data, len);
	assert_string_equal(r.err, "done\n");
	bool seen[256] = {0};
	for (size_t i = 0; i < len; i++)
		seen[(uint8_t)r.out[i]] = true;
	for (int i = 0; i < 256; i++)
		assert_true(seen[i]);
	result_free(&r);
}

static void test_stdin_binary(void **state)
{
	stdin_binary(true);
}

static void test_stdin_binary_unwindowed(void **state)
{
	stdin_binary(false);
}

static void test_stdin_closed_early(void **state)
{
	/* head takes one byte and exits: the rest hits a closed pipe and is dropped */
	const size_t len = 512 * 1024;
	_cleanup_free_ uint8_t *data = xcalloc(len, 1);
	data[0] = 'x';
	struct result r = {0};
	box_start(&B, false);
	B.feed_stream = box_exec(&B, ARGV("head", "-c", "1"), NULL);
	B.feed = data, B.feed_len = len, B.feed_off = 0;
	collect(&B, B.feed_stream, &r);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "x");
	result_free(&r);
	run(ARGV("echo", "still alive"), NULL, &r);
	assert_string_equal(r.out, "still alive\n");
	result_free(&r);
}

static void large_output(bool windowed)
{
	/* 4 MiB while we do not read for a while: init must stop reading (backlog > 1 MiB; with
	 * windows, at the window) and lose nothing */
	struct result r = {0};
	if (windowed)
		box_start(&B, false);
	else
		box_start_unwindowed(&B);
	uint32_t s = box_exec(&B, ARGV("head", "-c", "4194304", "/dev/zero"), NULL);
	usleep(300 * 1000);
	collect(&B, s, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.out_len, 4194304);
	for (size_t i = 0; i < r.out_len; i++)
		if (r.out[i])
			fail_msg("byte %zu is not zero", i);
	result_free(&r);
}

static void test_large_output_backpressure(void **state)
{
	large_output(true);
}

static void test_large_output_unwindowed(void **state)
{
	large_output(false);
}

/* For ms: feeds, and takes init's grants, which must be all that comes. */
static void box_take_grants(struct box *b, uint64_t ms)
{
	struct proto_frame f;
	for (uint64_t end = now_ms() + ms; now_ms() < end;) {
		while (proto_conn_next(&b->c, &f) == 1)
			assert_true(box_flow(b, &f));
		box_feed(b);
		int r = proto_conn_flush(&b->c);
		assert_true(r == 0 || r == -EAGAIN);
		struct pollfd p = {.fd = b->c.fd, .events = POLLIN};
		if (poll(&p, 1, 50) > 0)
			assert_true(proto_conn_read(&b->c) > 0);
	}
}

/* One session's stdin backs up (its process never reads it): init holds at most its window
 * of it, and another session on the channel still starts, runs and ends. Without windows the
 * backed-up stdin made init stop reading the whole channel. */
static void test_window_stdin_backs_up_alone(void **state)
{
	const size_t len = 8u << 20;
	_cleanup_free_ uint8_t *data = xcalloc(len, 1);
	struct result a = {0}, b = {0};
	box_start(&B, false);
	uint32_t sa = box_exec(&B, ARGV("sleep", "100"), NULL);
	B.feed_stream = sa, B.feed = data, B.feed_len = len, B.feed_off = 0;
	wait_started(&B, sa, &a);
	box_take_grants(&B, 1000); /* until init stops granting: its pipe and its window are full */
	assert_int_equal(B.in_credit[sa], 0);
	assert_true(B.in_sent[sa] >= 256u << 10);
	assert_true(B.in_sent[sa] <= (256u << 10) + (1u << 20)); /* the window and a pipe */
	run(ARGV("echo", "ok"), NULL, &b);
	assert_int_equal(b.status, 0);
	assert_string_equal(b.out, "ok\n");
	send_u32(&B, PROTO_SIGNAL, sa, SIGKILL);
	collect(&B, sa, &a);
	assert_int_equal(a.status, 137);
	result_free(&a);
	result_free(&b);
}

/* One session's output is not granted again (its reader stalls): init sends no more than
 * was granted, and stops reading only that session's pipe; another session's output and
 * exit come; once granted, the rest follows and nothing is lost. */
static void test_window_output_held_alone(void **state)
{
	struct result a = {0}, b = {0};
	struct proto_frame f;
	box_start(&B, false);
	uint32_t sa = B.next_stream;
	B.hold[sa] = true;
	box_exec(&B, ARGV("head", "-c", "1048576", "/dev/zero"), NULL);
	box_grant(&B, sa, 1, 1000);
	box_grant(&B, sa, 2, 1);
	wait_started(&B, sa, &a);
	uint32_t sb = box_exec(&B, SH("echo ok; echo err >&2"), NULL);
	while (!b.exited) {
		assert_int_equal(box_next(&B, &f), 1);
		if (f.hdr.stream == sa) {
			assert_false(result_add(&a, &f));
			continue;
		}
		assert_int_equal(f.hdr.stream, sb);
		result_add(&b, &f);
	}
	assert_string_equal(b.out, "ok\n");
	assert_string_equal(b.err, "err\n");
	assert_true(a.out_len <= 1000);
	assert_int_equal(B.out_credit[sa][0], 1000 - a.out_len);
	B.hold[sa] = false;
	box_grant(&B, sa, 1, OUT_WINDOW);
	collect(&B, sa, &a);
	assert_int_equal(a.status, 0);
	assert_int_equal(a.out_len, 1048576);
	result_free(&a);
	result_free(&b);
}

static void test_tty(void **state)
{
	struct result r = {0};
	struct opts o = {.tty = true, .rows = 24, .cols = 80};
	box_start(&B, false);
	run(ARGV("tty"), &o, &r);
	assert_int_equal(r.status, 0);
	assert_true(startswith(r.out, "/dev/pts/"));
	assert_int_equal(r.err_len, 0); /* a pty has one output */
	result_free(&r);
	run(SH("echo err >&2; printf '%s' \"$TERM\""), &o, &r);
	assert_string_equal(r.out, "err\r\nxterm-256color");
	result_free(&r);
}

static void test_tty_resize(void **state)
{
	struct result r = {0};
	struct opts o = {.tty = true, .rows = 24, .cols = 80};
	uint8_t fd0 = 0, rs[4];
	box_start(&B, false);
	uint32_t s = box_exec(&B, SH("stty size; read x; stty size"), &o);
	collect_until(&B, s, &r, "24 80");
	box_send(&B, PROTO_EOF, s, &fd0, 1); /* ignored for a terminal */
	proto_put_u16(rs, 40);
	proto_put_u16(rs + 2, 100);
	box_send(&B, PROTO_RESIZE, s, rs, sizeof(rs));
	box_stdin(&B, s, "\n", 1);
	collect(&B, s, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "40 100"));
	result_free(&r);
}

static void test_signal(void **state)
{
	struct result r = {0};
	box_start(&B, false);
	uint32_t s = box_exec(&B, ARGV("sleep", "100"), NULL);
	wait_started(&B, s, &r); /* and signal at once: may race the child's setsid() */
	send_u32(&B, PROTO_SIGNAL, s, SIGINT);
	collect(&B, s, &r);
	assert_int_equal(r.status, 130);
	result_free(&r);
	/* the whole process group: sh and its sleep */
	s = box_exec(&B, SH("sleep 100; echo not reached"), NULL);
	wait_started(&B, s, &r);
	usleep(100 * 1000);
	send_u32(&B, PROTO_SIGNAL, s, SIGTERM);
	send_u32(&B, PROTO_SIGNAL, 0, SIGTERM); /* stream 0: ignored */
	send_u32(&B, PROTO_SIGNAL, 999, SIGTERM); /* no such stream: dropped */
	collect(&B, s, &r);
	assert_int_equal(r.status, 143);
	assert_int_equal(r.out_len, 0);
	result_free(&r);
}

static void test_exec_failures(void **state)
{
	struct result r = {0};
	box_start(&B, false);
	run(ARGV("/nonexistent/prog"), NULL, &r);
	assert_int_equal(r.status, 127);
	assert_string_equal(r.err, "paddock-init: cannot run /nonexistent/prog: No such file or directory\n");
	result_free(&r);
	run(ARGV("no-such-command-paddock"), NULL, &r);
	assert_int_equal(r.status, 127);
	result_free(&r);
	run(ARGV("/etc/passwd"), NULL, &r);
	assert_int_equal(r.status, 126);
	assert_string_equal(r.err, "paddock-init: cannot run /etc/passwd: Permission denied\n");
	result_free(&r);
	struct opts o = {.cwd = "/nonexistent"};
	run(ARGV("true"), &o, &r);
	assert_int_equal(r.status, 125);
	assert_string_equal(r.err, "paddock-init: cannot chdir to /nonexistent: No such file or directory\n");
	result_free(&r);
	o.cwd = "/tmp";
	run(ARGV("pwd"), &o, &r);
	assert_string_equal(r.out, "/tmp\n");
	result_free(&r);
	run(ARGV("pwd"), NULL, &r); /* $HOME (/home/agent) is missing here: falls back to / */
	assert_int_equal(r.status, 0);
	result_free(&r);
}

static void test_environment(void **state)
{
	struct result r = {0};
	const char *const env[] = {"LANG=de_DE.UTF-8", "FOO=bar baz", NULL};
	struct opts o = {.env = env};
	box_start(&B, false);
	run(ARGV("env"), &o, &r);
	assert_int_equal(r.status, 0);
	const char *shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
	_cleanup_free_ char *want = xasprintf(
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nHOME=/home/agent\n"
		"USER=agent\nLOGNAME=agent\nSHELL=%s\nLANG=de_DE.UTF-8\nFOO=bar baz\n", shell);
	assert_string_equal(r.out, want); /* nothing of init's own environment */
	result_free(&r);
}

static bool status_line(const char *status, const char *key, char *ret, size_t size)
{
	const char *p = strstr(status, key);
	if (!p)
		return false;
	p += strlen(key);
	while (*p == '\t' || *p == ' ')
		p++;
	size_t n = strcspn(p, "\n");
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	snprintf(ret, size, "%.*s", (int)n, p);
	return true;
}

static void assert_status(const char *status, const char *key, const char *want)
{
	char v[256];
	assert_true(status_line(status, key, v, sizeof(v)));
	assert_string_equal(v, want);
}

static void assert_no_caps(const char *status, bool bounding)
{
	assert_status(status, "\nCapInh:", "0000000000000000");
	assert_status(status, "\nCapPrm:", "0000000000000000");
	assert_status(status, "\nCapEff:", "0000000000000000");
	assert_status(status, "\nCapAmb:", "0000000000000000");
	assert_status(status, "\nNoNewPrivs:", "1");
	if (bounding)
		assert_status(status, "\nCapBnd:", "0000000000000000");
}

static void test_ids_and_caps(void **state)
{
	struct result r = {0};
	char want[128];
	box_start(&B, false);
	run(ARGV("cat", "/proc/self/status"), NULL, &r);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", agent_uid, agent_uid, agent_uid, agent_uid);
	assert_status(r.out, "\nUid:", want);
	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", agent_gid, agent_gid, agent_gid, agent_gid);
	assert_status(r.out, "\nGid:", want);
	if (privileged) {
		snprintf(want, sizeof(want), "%u", agent_gid);
		assert_status(r.out, "\nGroups:", want);
	}
	assert_no_caps(r.out, privileged);
	result_free(&r);
	/* root sessions are refused without a subordinate uid range: ERROR, no EXIT */
	struct opts o = {.user = "root"};
	run(ARGV("id"), &o, &r);
	assert_true(r.error);
	assert_int_equal(r.error_errno, EPERM);
	assert_string_equal(r.error_msg, "root sessions need a subordinate uid range");
	result_free(&r);
}

static void test_root_session(void **state)
{
	if (!privileged)
		skip();
	struct result r = {0};
	struct opts o = {.user = "root"};
	box_start(&B, true);
	run(ARGV("cat", "/proc/self/status"), &o, &r);
	assert_int_equal(r.status, 0);
	assert_status(r.out, "\nUid:", "0\t0\t0\t0");
	assert_status(r.out, "\nGroups:", "");
	assert_no_caps(r.out, true); /* root in name only */
	result_free(&r);
	run(ARGV("sh", "-c", "echo $HOME $USER"), &o, &r);
	assert_string_equal(r.out, "/root root\n");
	result_free(&r);
}

static void test_duplicate_stream(void **state)
{
	struct result r = {0}, dup = {0};
	struct proto_frame f;
	box_start(&B, false);
	uint32_t s = box_exec(&B, ARGV("sleep", "100"), NULL);
	wait_started(&B, s, &r);
	box_exec_on(&B, s, ARGV("true"), NULL);
	assert_int_equal(box_next(&B, &f), 1);
	assert_int_equal(f.hdr.stream, s);
	assert_int_equal(f.hdr.type, PROTO_ERROR);
	on_error_frame(&dup, &f);
	assert_int_equal(dup.error_errno, EEXIST);
	send_u32(&B, PROTO_SIGNAL, s, SIGKILL);
	collect(&B, s, &r);
	assert_int_equal(r.status, 137);
	result_free(&r);
}

static void test_info(void **state)
{
	struct proto_frame f;
	box_start(&B, false);
	box_send(&B, PROTO_INFO, 0, NULL, 0);
	assert_int_equal(box_next(&B, &f), 1);
	assert_int_equal(f.hdr.type, PROTO_INFO);
	struct proto_tlv_iter it = {f.payload, f.hdr.len};
	const char *want[] = {"pid1=ok", "sessions=0", "hostname=testbox"}, *s;
	uint16_t tag;
	const uint8_t *v;
	uint32_t len;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		assert_int_equal(proto_tlv_next(&it, &tag, &v, &len), 1);
		assert_int_equal(tag, PROTO_TAG_KV);
		assert_int_equal(proto_tlv_str(v, len, &s), 0);
		assert_string_equal(s, want[i]);
	}
	assert_int_equal(proto_tlv_next(&it, &tag, &v, &len), 0);
}

/* Processes of ours whose parent is ppid (optionally: named comm, in state). */
static int count_children(pid_t ppid, const char *comm, char state)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		char path[300], buf[512], name[64], st;
		int pp;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		_cleanup_fclose_ FILE *f = fopen(path, "re");
		if (!f || !fgets(buf, sizeof(buf), f))
			continue;
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		if (!open || !close || sscanf(close + 2, "%c %d", &st, &pp) != 2)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(close - open - 1), open + 1);
		if (pp == ppid && (!comm || streq(name, comm)) && (!state || st == state))
			n++;
	}
	return n;
}

static void test_orphans_reaped(void **state)
{
	struct result r = {0};
	box_start(&B, false);
	uint64_t t0 = now_ms();
	/* the background sleep keeps stdout open after sh exits: init gives up on it ~100 ms
	 * after sh's exit instead of waiting a second */
	run(SH("sleep 1 & echo started"), NULL, &r);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "started\n");
	assert_true(now_ms() - t0 < 900);
	/* the orphaned sleep now belongs to init ... */
	assert_int_equal(count_children(B.pid, NULL, 0), 1);
	/* ... which reaps it once it exits: no zombie (and nothing else) is left under init */
	for (uint64_t end = now_ms() + 5000; count_children(B.pid, NULL, 0) && now_ms() < end;)
		usleep(20 * 1000);
	assert_int_equal(count_children(B.pid, NULL, 0), 0);
	result_free(&r);
}

static void test_many_sessions_and_stop(void **state)
{
	struct result r[257] = {0};
	struct proto_frame f;
	box_start(&B, false);
	for (int i = 0; i < 256; i++) {
		box_exec(&B, ARGV("sleep", "100"), NULL);
		wait_started(&B, (uint32_t)i + 1, &r[i]);
	}
	run(ARGV("true"), NULL, &r[256]); /* the 257th */
	assert_true(r[256].error);
	assert_int_equal(r[256].error_errno, EMFILE);
	/* one that ignores SIGTERM: killed once the timeout runs out */
	send_u32(&B, PROTO_SIGNAL, 256, SIGKILL);
	collect(&B, 256, &r[255]);
	assert_int_equal(r[255].status, 137);
	box_exec_on(&B, 256, SH("trap '' TERM; echo ready; sleep 100; sleep 100"), NULL);
	result_free(&r[255]);
	collect_until(&B, 256, &r[255], "ready");
	send_u32(&B, PROTO_STOP, 0, 500);
	while (box_next(&B, &f) == 1 && f.hdr.type != PROTO_ACK) {
		assert_in_range(f.hdr.stream, 1, 256);
		result_add(&r[f.hdr.stream - 1], &f);
	}
	assert_int_equal(f.hdr.type, PROTO_ACK);
	for (int i = 0; i < 256; i++) {
		assert_true(r[i].exited);
		if (r[i].status != (i == 255 ? 137 : 143))
			fail_msg("session %d (pid %u) ended with %d", i + 1, r[i].pid, r[i].status);
	}
	expect_exit_code(&B, 0);
	for (int i = 0; i < 257; i++)
		result_free(&r[i]);
}

static void test_stop_idle(void **state)
{
	struct proto_frame f;
	box_start(&B, false);
	send_u32(&B, PROTO_STOP, 0, 1000);
	assert_int_equal(box_next(&B, &f), 1);
	assert_int_equal(f.hdr.type, PROTO_ACK);
	assert_int_equal(f.hdr.stream, 0);
	expect_exit_code(&B, 0);
}

static void test_sigterm_stops(void **state)
{
	struct result r = {0};
	box_start(&B, false);
	uint32_t s = box_exec(&B, ARGV("sleep", "100"), NULL);
	wait_started(&B, s, &r);
	assert_int_equal(kill(B.pid, SIGINT), 0); /* ignored */
	assert_int_equal(kill(B.pid, SIGHUP), 0); /* ignored */
	assert_int_equal(kill(B.pid, SIGTERM), 0);
	collect(&B, s, &r);
	assert_int_equal(r.status, 143);
	expect_exit_code(&B, 0);
	result_free(&r);
}

static void test_supervisor_gone(void **state)
{
	struct result r = {0};
	box_start(&B, false);
	uint32_t s = box_exec(&B, ARGV("sleep", "100"), NULL);
	wait_started(&B, s, &r);
	proto_conn_free(&B.c);
	int st = box_wait(&B);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	/* its session died with it (and came to us, the next subreaper, to be reaped) */
	int sst;
	pid_t p = waitpid((pid_t)r.pid, &sst, 0);
	assert_true(p == (pid_t)r.pid || (p < 0 && errno == ECHILD));
	if (p > 0)
		assert_true(WIFSIGNALED(sst) && WTERMSIG(sst) == SIGKILL);
	assert_int_equal(kill((pid_t)r.pid, 0), -1);
	result_free(&r);
}

static void bad_frame(uint16_t type, uint32_t stream, const void *p, uint32_t len)
{
	box_start(&B, false);
	box_send(&B, type, stream, p, len);
	expect_exit_code(&B, 2);
	teardown_box(NULL);
}

static void test_malformed(void **state)
{
	uint8_t hdr[PROTO_HDR_SIZE], three = 3;
	struct proto_hdr h = {.type = 999, .stream = 0, .len = 0};
	proto_encode_hdr(hdr, &h);
	box_start(&B, false);
	assert_int_equal(fd_write_all(B.c.fd, hdr, sizeof(hdr)), 0); /* unknown type */
	expect_exit_code(&B, 2);
	teardown_box(NULL);
	bad_frame(PROTO_STDOUT, 1, "x", 1);         /* ours to send, not to receive */
	bad_frame(PROTO_EXEC, 1, "\x01\x00", 2);    /* truncated TLV */
	bad_frame(PROTO_EXEC, 0, NULL, 0);          /* stream 0 */
	bad_frame(PROTO_EOF, 1, &three, 1);         /* stdin closed, stdout or stderr gone: 0..2 */
	bad_frame(PROTO_SIGNAL, 1, "\x00\x00\x01\x00", 4); /* no signal 65536 */
	bad_frame(PROTO_STOP, 0, "\x01", 1);
	bad_frame(PROTO_RESIZE, 1, "\x01", 1);
	/* a second HELLO, and a HELLO of another major version */
	box_start(&B, false);
	send_hello(&B, PROTO_VERSION_MAJOR, PROTO_MINOR_WINDOW);
	expect_exit_code(&B, 2);
	teardown_box(NULL);
	box_start_raw(&B, false);
	expect_hello(&B);
	send_hello(&B, PROTO_VERSION_MAJOR + 1, 0);
	expect_exit_code(&B, 2);
}

/* A WINDOW frame of n for fd of stream. */
static void send_window(struct box *b, uint32_t stream, uint8_t fd, uint32_t n)
{
	uint8_t p[5] = {fd};
	proto_put_u32(p + 1, n);
	box_send(b, PROTO_WINDOW, stream, p, sizeof(p));
}

/* A session whose stdin credit has come (a sleep that never reads it) */
static uint32_t box_sleeper(struct box *b, struct result *r)
{
	uint32_t s = box_exec(b, ARGV("sleep", "100"), NULL);
	wait_started(b, s, r);
	box_take_grants(b, 200);
	assert_int_equal(b->in_credit[s], SESSION_STDIN_WINDOW_TEST);
	return s;
}

/* What a supervisor must not do with windows, each an error that ends the box (init's rule for
 * a malformed frame); and a WINDOW from a supervisor that did not announce them. */
static void test_window_malformed(void **state)
{
	struct result r = {0};
	_cleanup_free_ uint8_t *big = xcalloc(SESSION_STDIN_WINDOW_TEST + 1, 1);
	/* stdin past the credit (once the pipe is full and init gives no more; sent in two
	 * frames: the sum counts) */
	box_start(&B, false);
	uint32_t s = box_sleeper(&B, &r);
	box_stdin(&B, s, big, B.in_credit[s]);
	box_take_grants(&B, 300);
	box_send(&B, PROTO_STDIN, s, big, B.in_credit[s]);
	box_send(&B, PROTO_STDIN, s, big, 1);
	expect_exit_code(&B, 2);
	teardown_box(NULL);
	result_free(&r);
	/* a grant for stdin (ours to give), an empty one, one past PROTO_WINDOW_MAX, and one
	 * that takes the credit past it */
	const struct { uint8_t fd; uint32_t n, n2; } bad[] = {
		{0, 4096, 0}, {1, 0, 0}, {2, PROTO_WINDOW_MAX + 1, 0}, {1, PROTO_WINDOW_MAX, 1},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		B.hold[1] = true; /* no grant of ours before the bad one */
		box_start(&B, false);
		s = box_sleeper(&B, &r);
		send_window(&B, s, bad[i].fd, bad[i].n);
		if (bad[i].n2)
			send_window(&B, s, bad[i].fd, bad[i].n2);
		expect_exit_code(&B, 2);
		teardown_box(NULL);
		result_free(&r);
	}
	/* stream 0, and a short payload */
	box_start(&B, false);
	send_window(&B, 0, 1, 10);
	expect_exit_code(&B, 2);
	teardown_box(NULL);
	bad_frame(PROTO_WINDOW, 1, "\x01\x00\x01", 3);
	/* for a stream that has ended: dropped, as other late frames */
	box_start(&B, false);
	send_window(&B, 77, 1, 10);
	run(ARGV("echo", "alive"), NULL, &r);
	assert_string_equal(r.out, "alive\n");
	result_free(&r);
	teardown_box(NULL);
	/* no windows announced: a WINDOW is no frame of ours */
	box_start_unwindowed(&B);
	send_window(&B, 1, 1, 10);
	expect_exit_code(&B, 2);
}

/* Whether unshare(1) can give us user + pid + mount namespaces here. */
static bool namespaces_work(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 1), dup2(nul, 2);
		execlp("unshare", "unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc",
		       "true", (char *)NULL);
		_exit(127);
	}
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_pid1_in_namespaces(void **state)
{
	/* The real contract: PID 1 of its own pid namespace, where kill(-1) is the whole box */
	if (!namespaces_work())
		skip();
	struct result r = {0};
	box_start_ns(&B, false, true);
	/* nothing in the box can kill, stop or end PID 1 */
	run(SH("kill -KILL 1; kill -STOP 1; kill -TERM 1; kill -INT 1; kill -HUP 1; echo $$"), NULL, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.pid, 2);
	assert_string_equal(r.out, "2\n");
	result_free(&r);
	/* nor read its memory, environment or fds: PID 1 is not dumpable */
	run(SH("cat /proc/1/environ || cat /proc/1/mem || ls -l /proc/1/fd/"), NULL, &r);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err, "Permission denied"));
	result_free(&r);
	/* the orphan of a session is reaped by PID 1, and STOP ends everything */
	run(SH("sleep 0.2 & echo started"), NULL, &r);
	assert_int_equal(r.status, 0);
	result_free(&r);
	uint32_t s = box_exec(&B, ARGV("sleep", "100"), NULL);
	wait_started(&B, s, &r);
	send_u32(&B, PROTO_STOP, 0, 2000);
	collect(&B, s, &r);
	assert_int_equal(r.status, 143);
	expect_exit_code(&B, 0);
	result_free(&r);
}

static void test_pid1_supervisor_gone(void **state)
{
	if (!namespaces_work())
		skip();
	struct result r = {0};
	box_start_ns(&B, false, true);
	uint32_t s = box_exec(&B, ARGV("sleep", "100"), NULL);
	wait_started(&B, s, &r);
	proto_conn_free(&B.c);
	int st = box_wait(&B);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	result_free(&r);
}

static bool have_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};
	uint32_t need = (1u << CAP_SETUID) | (1u << CAP_SETGID) | (1u << CAP_SETPCAP);
	return syscall(SYS_capget, &h, d) == 0 && (d[0].effective & need) == need;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-paddock-init\n", argv[0]);
		return 2;
	}
	init_path = argv[1];
	privileged = getuid() == 0 && have_caps();
	agent_uid = privileged ? 65534 : getuid();
	agent_gid = privileged ? 65534 : getgid();
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	const struct CMUnitTest tests[] = {
#define T(t) cmocka_unit_test_teardown(t, teardown_box)
		T(test_exec_pipes),       T(test_stdin_binary),   T(test_stdin_closed_early),
		T(test_large_output_backpressure), T(test_tty),   T(test_tty_resize),
		T(test_signal),           T(test_exec_failures),  T(test_environment),
		T(test_ids_and_caps),     T(test_root_session),   T(test_duplicate_stream),
		T(test_info),             T(test_orphans_reaped), T(test_many_sessions_and_stop),
		T(test_stop_idle),        T(test_sigterm_stops),  T(test_supervisor_gone),
		T(test_malformed),        T(test_pid1_in_namespaces), T(test_pid1_supervisor_gone),
		T(test_stdin_binary_unwindowed), T(test_large_output_unwindowed),
		T(test_window_stdin_backs_up_alone), T(test_window_output_held_alone),
		T(test_window_malformed),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
