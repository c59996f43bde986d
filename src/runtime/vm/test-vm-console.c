/* test-vm-console.c — sanitised console tails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "util/fdio.h"

#include "runtime/vm/vm_console.h"

static void check(const char *in, unsigned lines, size_t bytes, const char *want)
{
	char *out = vm_console_tail(in, strlen(in), lines, bytes);
	assert_string_equal(out, want);
	free(out);
}

static void test_tail(void **state)
{
	check("a\nb\nc\nd\n", 2, 100, "c\nd");
	check("a\nb\n", 5, 100, "a\nb");
	check("one line", 3, 100, "one line");
	check("", 3, 100, "");
	check("\n\n\n", 3, 100, "");
	check("abcdefghij", 3, 4, "ghij"); /* byte cap */
	check("x\r\ny\r\n", 5, 100, "x\ny");
}

static void test_sanitise(void **state)
{
	/* escape sequences, bells, high bytes never reach a terminal */
	check("ok\n\x1b]0;pwned\x07\x1b[2J\xff\xfe end\n", 5, 100, "ok\n?]0;pwned??[2J?? end");
	check("tab\there", 1, 100, "tab?here");
}

static void test_explain(void **state)
{
	const char *log = "[ 1.0] boot\npaddock-init: vmboot: cannot mount ext4 on /newroot: Invalid argument\n"
			  "[ 1.1] noise\n[ 1.2] Kernel panic - not syncing: Attempted to kill init!\n[ 1.3] RIP: 0033\n";
	char *out = vm_console_explain(log, strlen(log), 5, 1000);
	assert_string_equal(out, "paddock-init: vmboot: cannot mount ext4 on /newroot: Invalid argument\n"
				 "[ 1.2] Kernel panic - not syncing: Attempted to kill init!");
	free(out);
	out = vm_console_explain("a\nb\n", 4, 1, 100); /* nothing explains: the tail */
	assert_string_equal(out, "b");
	free(out);
	const char *esc = "x paddock-init: \x1b[31m";
	out = vm_console_explain(esc, strlen(esc), 1, 100); /* no final newline, sanitised */
	assert_string_equal(out, "x paddock-init: ?[31m");
	free(out);
}

static size_t file_size(const char *dir, const char *name)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	return stat(p, &st) == 0 ? (size_t)st.st_size : 0;
}

/* A flood through the copying thread: the two files never hold more than the cap, the newest
 * bytes are kept, and reading them back is sanitised. */
static void test_flood_is_capped(void **state)
{
	char dir[] = "/tmp/pd-vmcon.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pthread_t t;
	assert_int_equal(vm_console_start(sp[0], dir, &t, NULL), 0);
	char buf[4096];
	memset(buf, 'x', sizeof(buf));
	buf[sizeof(buf) - 1] = '\n';
	size_t total = 8 * VM_CONSOLE_CAP;
	for (size_t n = 0; n < total; n += sizeof(buf))
		assert_int_equal(fd_write_all(sp[1], buf, sizeof(buf)), 0);
	const char tail[] = "last line \x1b[2J\n";
	assert_int_equal(fd_write_all(sp[1], tail, strlen(tail)), 0);
	close(sp[1]);
	vm_console_join(t);
	size_t a = file_size(dir, VM_CONSOLE_FILE), b = file_size(dir, VM_CONSOLE_OLD);
	assert_true(a + b <= VM_CONSOLE_CAP);
	assert_true(a + b >= VM_CONSOLE_CAP / 2);
	char *text = vm_console_read(dir);
	size_t n = strlen(text);
	assert_true(n > 14);
	assert_string_equal(text + n - 14, "last line ?[2J"); /* the newest bytes are kept */
	assert_null(strchr(text, '\x1b'));
	free(text);
	_cleanup_free_ char *cmd = xasprintf("rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* A write error drops the data and forgets the file: the next write opens console.log anew,
 * and nothing is written to, or closed under, whatever else reuses the number. */
static void test_console_write_error_forgets_the_fd(void **state)
{
	char dir[] = "/tmp/pd-vmcon.XXXXXX";
	assert_non_null(mkdtemp(dir));
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct vm_console_log l = {.dir_fd = dfd, .fd = open("/dev/null", O_RDONLY | O_CLOEXEC), .cap = 1024};
	int stale = l.fd;
	assert_true(stale >= 0);
	vm_console_log_write(&l, "a", 1); /* EBADF */
	_cleanup_close_ int other = openat(dfd, "other", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(other >= 0);
	if (other != stale)
		assert_int_equal(dup3(other, stale, O_CLOEXEC), stale);
	vm_console_log_write(&l, "b", 1);
	vm_console_log_close(&l);
	assert_int_equal(file_size(dir, "other"), 0);
	assert_true(fcntl(stale, F_GETFD) >= 0); /* still open */
	assert_int_equal(file_size(dir, VM_CONSOLE_FILE), 1);
	if (other != stale)
		close(stale);
	_cleanup_free_ char *cmd = xasprintf("rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static char *slurp(const char *dir, const char *name, size_t *ret_len)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
	char *text = NULL;
	assert_int_equal(read_file_at(AT_FDCWD, p, 64u << 20, &text, ret_len), 0);
	return text;
}

/* The writer's model, with a small cap and odd write sizes: the file is always the stream's
 * first head bytes, then (once it was full) the marker and the stream's newest bytes. */
static void test_qemu_log_model(void **state)
{
	char dir[] = "/tmp/pd-vmqlog.XXXXXX";
	assert_non_null(mkdtemp(dir));
	_cleanup_free_ char *path = xasprintf("%s/log", dir);
	struct vm_qemu_log l = {.fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), .cap = 400, .head = 40};
	assert_true(l.fd >= 0);
	size_t mark = strlen(VM_QEMU_LOG_MARK), total = 0;
	char stream[5000];
	for (size_t i = 0; i < sizeof(stream); i++)
		stream[i] = (char)('a' + i % 23);
	for (size_t k = 1; total < sizeof(stream); k = k % 37 + 3) {
		size_t n = k < sizeof(stream) - total ? k : sizeof(stream) - total;
		vm_qemu_log_write(&l, stream + total, n);
		total += n;
		size_t len;
		_cleanup_free_ char *text = slurp(dir, "log", &len);
		assert_int_equal(len, l.size);
		assert_true(len <= l.cap);
		if (total <= l.cap) {
			assert_false(l.cut);
			assert_memory_equal(text, stream, total);
			continue;
		}
		assert_true(l.cut);
		assert_true(len > l.head + mark);
		assert_memory_equal(text, stream, l.head);
		assert_memory_equal(text + l.head, VM_QEMU_LOG_MARK, mark);
		size_t tail = len - l.head - mark;
		assert_true(tail >= (l.cap - l.head - mark) / 2);
		assert_memory_equal(text + l.head + mark, stream + total - tail, tail);
	}
	close(l.fd);
	_cleanup_free_ char *cmd = xasprintf("rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* QEMU flooding its stderr through the copying thread: qemu.log never passes the cap, its
 * first line and QEMU's last words survive, and the diagnosis shows the latter, sanitised. */
static void test_qemu_log_flood_is_capped(void **state)
{
	char dir[] = "/tmp/pd-vmqlog.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pthread_t t;
	assert_int_equal(vm_qemu_log_start(p[0], dir, &t, NULL), 0);
	const char first[] = "qemu-system-x86_64: warning: first words\n";
	assert_int_equal(fd_write_all(p[1], first, strlen(first)), 0);
	char buf[4096];
	memset(buf, 'g', sizeof(buf));
	buf[sizeof(buf) - 1] = '\n';
	for (size_t n = 0; n < 8 * VM_QEMU_LOG_CAP; n += sizeof(buf))
		assert_int_equal(fd_write_all(p[1], buf, sizeof(buf)), 0);
	const char last[] = "qemu-system-x86_64: last words \x1b[2J\n";
	assert_int_equal(fd_write_all(p[1], last, strlen(last)), 0);
	close(p[1]);
	vm_console_join(t);
	size_t len;
	_cleanup_free_ char *text = slurp(dir, VM_QEMU_LOG_FILE, &len);
	assert_true(len <= VM_QEMU_LOG_CAP);
	assert_true(len >= VM_QEMU_LOG_CAP / 2);
	assert_memory_equal(text, first, strlen(first));
	assert_non_null(strstr(text, VM_QEMU_LOG_MARK));
	assert_int_equal(memcmp(text + len - strlen(last), last, strlen(last)), 0);
	_cleanup_free_ char *why = vm_box_diagnose(dir);
	assert_non_null(strstr(why, "QEMU said: "));
	assert_non_null(strstr(why, "last words ?[2J"));
	_cleanup_free_ char *cmd = xasprintf("rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_sanitise),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_flood_is_capped),
		cmocka_unit_test(test_console_write_error_forgets_the_fd),
		cmocka_unit_test(test_qemu_log_model),
		cmocka_unit_test(test_qemu_log_flood_is_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
