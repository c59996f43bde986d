/* vm-bench.c — vm boot benchmark: N runs of each, interleaved, medians printed.
 *
 *   raw      QEMU with paddock's machine, CPU, accelerator, kernel and kernel command line, and
 *            an initramfs whose init powers off at once (the anchor): spawn → QEMU exit
 *   hello    runtime_vm.start → HELLO from paddock-init (overlay creation included)
 *   true     runtime_vm.start → HELLO → EXEC true → EXIT → STOP → QEMU exit
 *
 * Each also in QEMU CPU time (user+system of all its threads): under TCG the guest's work is
 * QEMU's CPU time, which — unlike wall time — barely moves when other work loads the host.
 *
 * usage: vm-bench ANCHOR_INIT [RUNS]   (PADDOCK_HOME as for test-vm-boot; see scripts/vm-bench.sh) */
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "image/initramfs.h"
#include "image/kernel_cache.h"
#include "proto/proto.h"
#include "runtime/vm/qemu_spawn.h"
#include "runtime/vm/vm.h"
#include "runtime/vm/vm_probe.h"
#include "util/fdio.h"
#include "util/log.h"

#define MAX_RUNS 50

static const char *home;

static _noreturn_ void die(const char *what, const pd_err *err)
{
	fprintf(stderr, "vm-bench: %s: %s\n", what, err ? err->msg : strerror(errno));
	exit(1);
}

/* The anchor initramfs: /init only (plus /dev/console so the kernel is happy). */
static char *anchor_initrd(const char *init_path)
{
	_cleanup_free_ char *init = NULL;
	size_t len;
	if (read_file_at(AT_FDCWD, init_path, 64u << 20, &init, &len) < 0)
		die(init_path, NULL);
	struct initramfs_entry ents[] = {
		{.kind = INITRAMFS_DIR, .path = "dev", .perm = 0755},
		{.kind = INITRAMFS_CHARDEV, .path = "dev/console", .perm = 0600, .rmajor = 5, .rminor = 1},
		{.kind = INITRAMFS_FILE, .path = "init", .perm = 0755}};
	struct cpio_buf b = {0};
	for (size_t i = 0; i < ARRAY_SIZE(ents); i++)
		if (cpio_add(&b, &ents[i], (const uint8_t *)init, i == 2 ? len : 0) < 0)
			die("cpio", NULL);
	cpio_finish(&b);
	char *path = xasprintf("%s/cache/bench-anchor.cpio", home);
	if (write_file_atomic_at(AT_FDCWD, path, b.data, b.len, 0644) < 0)
		die(path, NULL);
	cpio_buf_free(&b);
	return path;
}

static char **raw_argv(const struct kernel_cache *k, const char *initrd, enum vm_accel accel, uint64_t tsc)
{
	struct qemu_config c;
	qemu_config_init(&c);
	_cleanup_free_ char *qemu = NULL, *console = xasprintf("%s/cache/bench-anchor-console.log", home);
	pd_err err = {0};
	if (qemu_find_binary("qemu-system-x86_64", &qemu, &err) < 0)
		die("qemu", &err);
	c.binary = qemu;
	c.accel = accel;
	c.memory_mib = 512;
	c.kernel = k->boot_path;
	c.initrd = initrd;
	c.tsc_khz = tsc;
	c.probe = true; /* no control channel; the anchor init ignores the key */
	c.console_path = console;
	c.balloon = c.rng = false;
	char **argv;
	if (qemu_argv_build(&c, &argv, &err) < 0)
		die("argv", &err);
	return argv;
}

static uint64_t tv_ms(struct timeval a, struct timeval b)
{
	return (uint64_t)(a.tv_sec + b.tv_sec) * 1000u + (uint64_t)(a.tv_usec + b.tv_usec) / 1000u;
}

/* Waits for pid; returns its CPU time in ms. */
static uint64_t reap_cpu(pid_t pid, int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	if (poll(&p, 1, 120000) != 1)
		die("QEMU did not exit", NULL);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("QEMU did not power off cleanly", NULL);
	close(pidfd);
	return tv_ms(ru.ru_utime, ru.ru_stime);
}

/* CPU time so far of a running process, from /proc (clock ticks). */
static uint64_t proc_cpu_ms(pid_t pid)
{
	_cleanup_free_ char *path = xasprintf("/proc/%d/stat", (int)pid), *text = NULL;
	unsigned long ut, st;
	const char *p;
	if (read_file_at(AT_FDCWD, path, 4096, &text, NULL) < 0 || !(p = strrchr(text, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (ut + st) * 1000u / (uint64_t)sysconf(_SC_CLK_TCK);
}

static uint64_t run_raw(char **argv, uint64_t *ret_cpu)
{
	uint64_t t0 = qemu_now_ms();
	pid_t pid;
	int pidfd;
	pd_err err = {0};
	if (qemu_spawn(argv, NULL, 0, -1, &pid, &pidfd, &err) < 0)
		die("spawn", &err);
	*ret_cpu = reap_cpu(pid, pidfd);
	return qemu_now_ms() - t0;
}

static int recv_wait(int fd, uint8_t *buf, struct proto_frame *f)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 180000) != 1)
		return -ETIMEDOUT;
	return proto_recv(fd, buf, f);
}

static void exec_true(int fd, uint8_t *buf)
{
	char *argv[] = {"/bin/true", NULL}, *envp[] = {NULL};
	struct proto_buf b = {0};
	proto_encode_exec(&b, argv, envp, "/", "root", false, 0, 0);
	if (proto_send(fd, PROTO_EXEC, 0, 1, b.data, (uint32_t)b.len) < 0 || proto_send_windows(fd, 1, 65536) < 0)
		die("send EXEC", NULL);
	proto_buf_free(&b);
	struct proto_frame f;
	do
		if (recv_wait(fd, buf, &f) < 0)
			die("EXEC true: no EXIT", NULL);
	while (f.hdr.type != PROTO_EXIT);
}

struct box_times {
	uint64_t hello, hello_cpu, total, total_cpu;
};

/* One box: start→HELLO and start→QEMU exit (after exec true), wall and QEMU CPU. */
static void run_box(int i, struct box_times *ret, char *reason, size_t reason_len)
{
	_cleanup_free_ char *dir = xasprintf("%s/boxes/bench-%d-%d", home, (int)getpid(), i);
	if (mkdir_p(dir, 0700) < 0)
		die(dir, NULL);
	struct box_config cfg = {.name = "bench", .state_dir = dir, .memory = 512ull << 20};
	struct box_handle h;
	pd_err err = {0};
	_cleanup_free_ uint8_t *buf = xmalloc(PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD);
	struct proto_frame f;
	uint64_t t0 = qemu_now_ms();
	if (runtime_vm.start(&cfg, &h, &err) < 0)
		die("start", &err);
	if (recv_wait(h.ctl_fd, buf, &f) < 0 || f.hdr.type != PROTO_HELLO)
		die("no HELLO", NULL);
	ret->hello = qemu_now_ms() - t0;
	ret->hello_cpu = proc_cpu_ms(h.pid);
	snprintf(reason, reason_len, "%s", vm_box_accel_reason(&h));
	proto_send_hello(h.ctl_fd);
	exec_true(h.ctl_fd, buf);
	uint8_t t[4];
	proto_put_u32(t, 2000);
	proto_send(h.ctl_fd, PROTO_STOP, 0, 0, t, sizeof(t));
	ret->total_cpu = reap_cpu(h.pid, h.pidfd);
	ret->total = qemu_now_ms() - t0;
	h.pidfd = -1; /* closed by reap_cpu */
	close(h.ctl_fd);
	runtime_vm.cleanup(&h);
	rm_rf(dir);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_row(const char *name, uint64_t *v, int n)
{
	printf("%-10s", name);
	for (int i = 0; i < n; i++)
		printf(" %6llu", (unsigned long long)v[i]);
	printf("   median %llu ms\n", (unsigned long long)median(v, n));
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return fprintf(stderr, "usage: vm-bench ANCHOR_INIT [RUNS]\n"), 2;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (runs < 1 || runs > MAX_RUNS)
		return 2;
	pd_log_init();
	home = getenv("PADDOCK_HOME");
	if (!home || home[0] != '/')
		return fprintf(stderr, "vm-bench: set PADDOCK_HOME\n"), 2;
	struct kernel_cache k;
	pd_err err = {0};
	if (kernel_cache_load(home, &k, &err) < 0)
		die("kernel", &err);
	_cleanup_free_ char *initrd = anchor_initrd(argv[1]);
	uint64_t raw[MAX_RUNS], hello[MAX_RUNS], total[MAX_RUNS], raw_cpu[MAX_RUNS], hello_cpu[MAX_RUNS],
		total_cpu[MAX_RUNS];
	char reason[320] = "";
	_cleanup_strv_ char **rargv = NULL;
	for (int i = 0; i < runs; i++) {
		struct box_times t;
		run_box(i, &t, reason, sizeof(reason));
		hello[i] = t.hello, hello_cpu[i] = t.hello_cpu, total[i] = t.total, total_cpu[i] = t.total_cpu;
		if (!rargv) /* the same accelerator the box got */
			rargv = raw_argv(&k, initrd, startswith(reason, "kvm") ? VM_ACCEL_KVM : VM_ACCEL_TCG,
					 startswith(reason, "kvm") ? 0 : vm_host_tsc_khz(home));
		raw[i] = run_raw(rargv, &raw_cpu[i]);
	}
	printf("accelerator %s\nkernel %s (%s)\nraw argv:", reason, k.release, k.pvh ? "PVH ELF" : "bzImage");
	for (char **a = rargv; *a; a++)
		printf(" %s", *a);
	printf("\n\n%d runs each, ms (wall, then QEMU CPU time):\n", runs);
	print_row("raw", raw, runs);
	print_row("hello", hello, runs);
	print_row("true", total, runs);
	print_row("raw-cpu", raw_cpu, runs);
	print_row("hello-cpu", hello_cpu, runs);
	print_row("true-cpu", total_cpu, runs);
	printf("wall ratio true/raw %.2f, hello/raw %.2f; cpu ratio true/raw %.2f, hello/raw %.2f\n",
	       (double)median(total, runs) / (double)median(raw, runs), (double)median(hello, runs) / (double)median(raw, runs),
	       (double)median(total_cpu, runs) / (double)median(raw_cpu, runs),
	       (double)median(hello_cpu, runs) / (double)median(raw_cpu, runs));
	kernel_cache_done(&k);
	return 0;
}
