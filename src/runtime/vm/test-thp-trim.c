/* test-thp-trim.c — finding QEMU's guest RAM in /proc/PID/maps, the ranges that split each of
 * its huge pages, and (where this process may and the kernel does) a real split of a child's
 * huge pages that gives their zero-filled pages back. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/vm/thp_trim.h"

/* the shape of a QEMU 7.2 microvm's maps with -m 512M and tb-size=128 (trimmed) */
static const char qemu_maps[] =
	"55d0c8a00000-55d0c8b9e000 r--p 00000000 fe:00 262510                     /usr/bin/qemu-system-x86_64\n"
	"55d0c9e67000-55d0ca2c9000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f3a40000000-7f3a48000000 rwxp 00000000 00:00 0 \n"
	"7f3a4be00000-7f3a6be00000 rw-p 00000000 00:00 0 \n"
	"7f3a6be00000-7f3a6c000000 rw-p 00000000 00:00 0\n"
	"7f3a6c000000-7f3a8c000000 rw-p 00000000 fe:00 12                         /memfd:guest (deleted)\n"
	"7f3aab000000-7f3aab001000 r--p 00000000 00:2a 9223372036854775809        /usr/lib/x86_64-linux-gnu/libz.so.1\n"
	"7f3a8c000000-7f3aac000000 rw-s 00000000 00:01 4242                       /dev/zero (deleted)\n"
	"7f3aac000000-7f3acc000000 rw-p 00000000 00:00 0                          [anon:elsewhere]\n"
	"7ffd6e1a0000-7ffd6e1c1000 rw-p 00000000 00:00 0                          [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

#define MIB(n) ((uint64_t)(n) << 20)

static void test_the_guest_ram_is_the_one_anonymous_mapping_of_its_size(void **state)
{
	(void)state;
	uint64_t start = 0;
	assert_int_equal(thp_maps_find(qemu_maps, strlen(qemu_maps), MIB(512), &start), 0);
	assert_int_equal(start, 0x7f3a4be00000);
	/* the TCG buffer (rwx), a file, a shared mapping and a named one are not guest RAM */
	assert_int_equal(thp_maps_find(qemu_maps, strlen(qemu_maps), MIB(128), &start), -ENOENT);
	assert_int_equal(thp_maps_find(qemu_maps, strlen(qemu_maps), MIB(1024), &start), -ENOENT);
	/* no trailing newline, and an empty text */
	assert_int_equal(thp_maps_find(qemu_maps, strlen(qemu_maps) - 1, MIB(512), &start), 0);
	assert_int_equal(thp_maps_find("", 0, MIB(512), &start), -ENOENT);
	/* two candidates: which one is the guest's cannot be told, so neither */
	static const char two[] = "7f0000000000-7f0020000000 rw-p 00000000 00:00 0\n"
				  "7f1000000000-7f1020000000 rw-p 00000000 00:00 0\n";
	assert_int_equal(thp_maps_find(two, strlen(two), MIB(512), &start), -EEXIST);
}

static void test_a_line_that_does_not_parse_is_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"7f0000000000 7f0020000000 rw-p 00000000 00:00 0\n",
		"7f0000000000-7f0020000000 rw-q 00000000 00:00 0\n",
		"7f0000000000-7f0020000000 rw- 00000000 00:00 0\n",
		"7f0000000000-7f0020000000 rw-p 00000000 00-00 0\n",
		"7f0000000000-7f0020000000 rw-p 00000000 00:00 x\n",
		"7f0000000000-7f0020000000 rw-p 00000000 00:00\n",
		"7f0000000000-7f0020000000 rw-p 00000000 00:00 0x\n",
		"7f0020000000-7f0000000000 rw-p 00000000 00:00 0\n",
		"17f00000000000000-17f00000020000000 rw-p 00000000 00:00 0\n",
		"7f0000000000-7f0020000000 rw-p\n",
		"7f0000000000-7f0020000000 rw-p 00000000 00:00 18446744073709551616\n",
		"-\n",
		"\n",
		"7f0000000000-7f0020000000 rw-p 00000000 00:00 0\nnonsense\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t start;
		if (thp_maps_find(bad[i], strlen(bad[i]), MIB(512), &start) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
	}
	/* every truncation of a good text is read without reading past it (a cut name can make a
	 * second candidate) */
	for (size_t n = 0; n < strlen(qemu_maps); n++) {
		uint64_t start;
		char *copy = malloc(n ? n : 1);
		memcpy(copy, qemu_maps, n);
		int r = thp_maps_find(copy, n, MIB(512), &start);
		if (!(r == 0 || r == -ENOENT || r == -EEXIST || r == -EINVAL))
			fail_msg("%zu bytes: %d", n, r);
		free(copy);
	}
}

static void test_each_huge_page_gets_a_range_that_covers_all_but_its_first_page(void **state)
{
	(void)state;
	struct iovec iov[3];
	size_t next = 0;
	const uint64_t start = 0x7f3a4be00000;
	assert_int_equal(thp_trim_ranges(start, MIB(8), &next, iov, 3), 3);
	assert_int_equal(next, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal((uintptr_t)iov[i].iov_base, start + i * MIB(2) + 4096);
		assert_int_equal(iov[i].iov_len, MIB(2) - 4096);
	}
	assert_int_equal(thp_trim_ranges(start, MIB(8), &next, iov, 3), 1);
	assert_int_equal((uintptr_t)iov[0].iov_base, start + MIB(6) + 4096);
	assert_int_equal(thp_trim_ranges(start, MIB(8), &next, iov, 3), 0);
	next = 0;
	assert_int_equal(thp_trim_ranges(start, 0, &next, iov, 3), 0);
	/* an odd size: only its whole huge pages */
	assert_int_equal(thp_trim_ranges(start, MIB(5), &next, iov, 3), 2);
}

/* "KEY: N kB" from /proc/PID/FILE, or -1 */
static long proc_kb(pid_t pid, const char *file, const char *key)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	FILE *f = fopen(path, "re");
	long kb = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static long anon_huge_kb(pid_t pid) { return proc_kb(pid, "smaps_rollup", "AnonHugePages"); }
static long rss_kb(pid_t pid) { return proc_kb(pid, "status", "VmRSS"); }

/* A child holds three huge pages, one byte written in each; after thp_trim they are split
 * and their zeros gone. Where this process cannot advise another one or the kernel keeps a
 * split page's zeros, the test is skipped (and the supervisor keeps QEMU off huge pages). */
static void test_a_childs_huge_pages_split_and_their_zeros_go(void **state)
{
	(void)state;
	if (!thp_trim_possible()) {
		fprintf(stderr, "skipped: %s\n", thp_trim_why_not());
		skip();
	}
	const uint64_t size = MIB(6);
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* exactly `size` bytes, 2 MiB aligned, madvised (which keeps it from merging with a
		 * neighbour): the shape of QEMU's guest RAM */
		char *raw = mmap(NULL, size + MIB(2), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			_exit(1);
		char *p = (char *)(((uintptr_t)raw + MIB(2) - 1) & ~(uintptr_t)(MIB(2) - 1));
		if (p > raw)
			munmap(raw, (size_t)(p - raw));
		munmap(p + size, (size_t)(raw + size + MIB(2) - (p + size)));
		if (madvise(p, size, MADV_HUGEPAGE) < 0)
			_exit(1);
		for (uint64_t o = 0; o < size; o += MIB(2))
			p[o + 8192] = 1;
		char c = 1;
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	long huge = anon_huge_kb(pid), before = rss_kb(pid);
	assert_true(huge >= 6144);
	assert_int_equal(thp_trim(pidfd, pid, size), (int64_t)(size - 3 * 4096));
	long after = rss_kb(pid);
	assert_true(anon_huge_kb(pid) <= huge - 6144);
	/* the three written pages stay; the other 1,533 go */
	if (before - after < 6000)
		fail_msg("the child's RSS went from %ld to %ld KiB", before, after);
	/* a size that is no mapping of the child's: nothing advised */
	assert_int_equal(thp_trim(pidfd, pid, MIB(14)), -ENOENT);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* QEMU gone: refused, not a crash */
	assert_true(thp_trim(pidfd, pid, size) < 0);
	close(pidfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_guest_ram_is_the_one_anonymous_mapping_of_its_size),
		cmocka_unit_test(test_a_line_that_does_not_parse_is_refused),
		cmocka_unit_test(test_each_huge_page_gets_a_range_that_covers_all_but_its_first_page),
		cmocka_unit_test(test_a_childs_huge_pages_split_and_their_zeros_go),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
