/* thp_trim.c — QEMU's huge pages split, their zero-filled pages given back (see thp_trim.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/vm/thp_trim.h"
#include "util/fdio.h"
#include "util/util.h"

#ifndef MADV_COLD
#define MADV_COLD 20
#endif

/* Reads a hexadecimal (base 16) or decimal number at *p, up to end: 1 to 16 hex digits (an
 * address), or a decimal that fits 64 bits (an inode number: overlayfs's xino uses the high
 * bits, 19 digits). */
static int num(const char **p, const char *end, int base, uint64_t *ret)
{
	uint64_t v = 0;
	int n = 0;
	for (; *p < end; (*p)++, n++) {
		int d = base == 16 ? hex_digit(**p) : (**p >= '0' && **p <= '9' ? **p - '0' : -1);
		if (d < 0)
			break;
		if (base == 16 ? n == 16 : v > (UINT64_MAX - (uint64_t)d) / 10)
			return -EINVAL;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (n == 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

/* One line "start-end perms offset major:minor inode [name]" (no newline); *ret_anon_rw: an
 * anonymous private read-write mapping (inode 0, no name). */
static int maps_line(const char *p, const char *end, uint64_t *ret_start, uint64_t *ret_end, bool *ret_anon_rw)
{
	uint64_t start, stop, off, dev, inode;
	if (num(&p, end, 16, &start) < 0 || expect(&p, end, '-') < 0 || num(&p, end, 16, &stop) < 0 ||
	    expect(&p, end, ' ') < 0 || end - p < 5)
		return -EINVAL;
	const char *perms = p;
	for (int i = 0; i < 4; i++)
		if (!strchr(i == 0 ? "r-" : i == 1 ? "w-" : i == 2 ? "x-" : "ps", perms[i]) || !perms[i])
			return -EINVAL;
	p += 4;
	if (expect(&p, end, ' ') < 0 || num(&p, end, 16, &off) < 0 || expect(&p, end, ' ') < 0 ||
	    num(&p, end, 16, &dev) < 0 || expect(&p, end, ':') < 0 || num(&p, end, 16, &dev) < 0 ||
	    expect(&p, end, ' ') < 0 || num(&p, end, 10, &inode) < 0 || stop < start)
		return -EINVAL;
	if (p < end && *p != ' ')
		return -EINVAL;
	while (p < end && *p == ' ')
		p++;
	*ret_start = start;
	*ret_end = stop;
	*ret_anon_rw = memcmp(perms, "rw-p", 4) == 0 && inode == 0 && p == end;
	return 0;
}

int thp_maps_find(const char *text, size_t len, uint64_t size, uint64_t *ret_start)
{
	const char *p = text, *end = text + len;
	int found = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		uint64_t start, stop;
		bool anon;
		if (maps_line(p, eol, &start, &stop, &anon) < 0)
			return -EINVAL;
		if (anon && stop - start == size) {
			if (found++)
				return -EEXIST;
			*ret_start = start;
		}
		p = nl ? nl + 1 : end;
	}
	return found ? 0 : -ENOENT;
}

size_t thp_trim_ranges(uint64_t start, uint64_t size, size_t *next, struct iovec *iov, size_t max)
{
	size_t n = 0, regions = (size_t)(size / THP_TRIM_HUGE);
	const uint64_t page = 4096;
	for (; *next < regions && n < max; (*next)++, n++) {
		uint64_t base = start + (uint64_t)*next * THP_TRIM_HUGE;
		iov[n] = (struct iovec){.iov_base = (void *)(uintptr_t)(base + page), .iov_len = THP_TRIM_HUGE - page};
	}
	return n;
}

static long rss_pages(void)
{
	char buf[128];
	_cleanup_close_ int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	long size, rss;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return sscanf(buf, "%ld %ld", &size, &rss) == 2 ? rss : -1;
}

/* On a huge page of our own (one 2 MiB fault), whether MADV_COLD over all of it but its first
 * page gives back the rest, which is zero: true on Linux 6.12 and later with THP available to
 * a madvised mapping. Threads of this process that allocate meanwhile only blur the measure
 * (it asks for 1 MiB of 2). */
static bool split_gives_back_zero_pages(void)
{
	const size_t len = 2 * THP_TRIM_HUGE;
	char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return false;
	char *p = (char *)(((uintptr_t)raw + THP_TRIM_HUGE - 1) & ~(uintptr_t)(THP_TRIM_HUGE - 1));
	const long half = (long)(THP_TRIM_HUGE / 4096 / 2);
	bool ok = false;
	if (madvise(p, THP_TRIM_HUGE, MADV_HUGEPAGE) == 0) {
		long before = rss_pages();
		((volatile char *)p)[0] = 1;
		long huge = rss_pages();
		if (before >= 0 && huge - before >= half && madvise(p + 4096, THP_TRIM_HUGE - 4096, MADV_COLD) == 0)
			ok = huge - rss_pages() >= half;
	}
	munmap(raw, len);
	return ok;
}

static bool have_sys_nice(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};
	return syscall(SYS_capget, &h, d) == 0 && (d[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32)));
}

/* Whether process_madvise may advise another process of ours: the kernel asks for
 * CAP_SYS_NICE in the initial user namespace, which capget cannot tell apart from the same
 * capability in a container's own namespace; so it is asked of a child that only waits. */
static bool may_advise_another(void)
{
	static char page[4096] __attribute__((aligned(4096)));
	if (!have_sys_nice())
		return false;
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct iovec iov = {.iov_base = page, .iov_len = sizeof(page)};
	bool ok = pidfd >= 0 && syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_COLD, 0) >= 0;
	(void)kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (pidfd >= 0)
		close(pidfd);
	return ok;
}

const char *thp_trim_why_not(void)
{
	static int state; /* 0 unknown, 1 possible, 2 no capability, 3 kernel keeps the zero pages */
	if (!state)
		state = !may_advise_another() ? 2 : !split_gives_back_zero_pages() ? 3 : 1;
	return state == 2   ? "advising QEMU's memory needs CAP_SYS_NICE of the host"
	       : state == 3 ? "this kernel keeps a split huge page's zero-filled pages"
			    : NULL;
}

bool thp_trim_possible(void)
{
	return thp_trim_why_not() == NULL;
}

int64_t thp_trim(int pidfd, pid_t pid, uint64_t size)
{
	if (pidfd < 0)
		return -EINVAL;
	/* QEMU is our child: until we reap it its pid names no other process, so its maps are
	 * QEMU's; the advice itself goes through the pidfd. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = read_file_at(AT_FDCWD, path, 16u << 20, &text, &len);
	uint64_t start;
	if (r == 0)
		r = thp_maps_find(text, len, size, &start);
	if (r < 0)
		return r;
	if (start % THP_TRIM_HUGE)
		return -EINVAL;
	/* Why this is safe: MADV_COLD changes nothing QEMU reads. The zero-filled pages of a split
	 * huge page read back as zeros (the shared zero page) and a write to one faults in a page
	 * of its own, as for any page never written; the others stay as they are, moved to the
	 * inactive list (an idle box's memory is what the host should reclaim first anyway). It
	 * needs CAP_SYS_NICE, which only a root supervisor has, and reaches only our own QEMU. */
	int64_t total = 0;
	size_t next = 0, n;
	struct iovec iov[256];
	while ((n = thp_trim_ranges(start, size, &next, iov, ARRAY_SIZE(iov))) > 0) {
		ssize_t done = syscall(SYS_process_madvise, pidfd, iov, n, MADV_COLD, 0);
		if (done < 0)
			return -errno;
		total += done;
	}
	return total;
}
