/* fdio.c — fd and file helpers. */
#include <fcntl.h>
#include <link.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fdio.h"

int fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t fd_read(int fd, void *buf, size_t len)
{
	ssize_t n;
	while ((n = read(fd, buf, len)) < 0 && errno == EINTR)
		;
	return n < 0 ? -errno : n;
}

int fd_read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = fd_read(fd, p, len);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fd_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

int fd_set_cloexec(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0)
		return -errno;
	fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
	return fcntl(fd, F_SETFD, fl) < 0 ? -errno : 0;
}

int read_fd_all(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* sized from fstat for regular files (one allocation, usually), else max + 1. procfs and
	 * sysfs files say size 0 and must be read in one go: a sysctl file answers any read at a
	 * non-zero offset with EOF (a 1-byte first read of cap_last_cap "40" gave "4") */
	bool sized = S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= max;
	size_t cap = sized ? (size_t)st.st_size + 1 : max + 1, len = 0;
	_cleanup_free_ char *buf = xmalloc(cap + 1);
	for (;;) {
		if (len == cap && cap <= max) /* grew while we read it */
			buf = xrealloc(buf, (cap = max + 1) + 1);
		if (len >= cap)
			break;
		ssize_t n = fd_read(fd, buf + len, cap - len);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return -EFBIG;
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return read_fd_all(fd, max, ret_buf, ret_len);
}

int write_file_atomic_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode)
{
	return write_file_replace_at(dirfd, path, buf, len, mode, true);
}

int write_file_replace_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode, bool durable)
{
	_cleanup_free_ char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	/* whatever a crashed writer of our pid left under the name goes first, and the file is
	 * made afresh (O_EXCL): a FIFO or a link found there is never opened */
	(void)unlinkat(dirfd, tmp, 0);
	_cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	int r = fd_write_all(fd, buf, len);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, path) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmp, 0);
	return r;
}

int write_file_str(const char *path, const char *s)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	if (n < 0)
		return -errno;
	return (size_t)n == strlen(s) ? 0 : -EIO;
}

int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int dir_list_names(int fd, char ***ret)
{
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = -errno;
		close(dfd);
		return e;
	}
	_cleanup_closedir_ DIR *dir = d;
	rewinddir(dir); /* the duplicate shares fd's offset */
	_cleanup_strv_ char **names = xcalloc(1, sizeof(char *));
	struct dirent *de;
	while ((errno = 0, de = readdir(dir)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			names = strv_append(names, de->d_name);
	if (errno)
		return -errno;
	*ret = TAKE_PTR(names);
	return 0;
}

static int rm_tree_at(int parent, const char *name, dev_t dev, int depth)
{
	if (depth > 4096)
		return -ELOOP;
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (st.st_dev != dev)
		return -EXDEV; /* never cross into a mount point */
	_cleanup_close_ int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the directory entered is the one examined: one mounted or swapped in between is not */
	struct stat now;
	if (fstat(fd, &now) < 0)
		return -errno;
	if (now.st_dev != dev || now.st_ino != st.st_ino)
		return -EXDEV;
	_cleanup_strv_ char **names = NULL;
	int r = dir_list_names(fd, &names);
	for (char **n = names; n && *n; n++) {
		int q = rm_tree_at(fd, *n, dev, depth + 1);
		if (q < 0 && r == 0)
			r = q;
	}
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

int rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	return rm_tree_at(AT_FDCWD, path, st.st_dev, 0);
}

int rm_rf_at(int dirfd, const char *name)
{
	/* the filesystem of dirfd: a directory mounted at name itself is not entered either */
	struct stat st;
	if (fstat(dirfd, &st) < 0)
		return -errno;
	return rm_tree_at(dirfd, name, st.st_dev, 0);
}

void fd_close_all_but(int keep)
{
	if (keep > 3)
		close_range(3, (unsigned)keep - 1, 0);
	close_range(keep < 3 ? 3u : (unsigned)keep + 1, ~0u, 0);
}

/* Closes every fd but the n of keep (each >= 3 or -1), stdio included. */
static void close_all_except(int *keep, size_t n)
{
	for (size_t i = 1; i < n; i++) /* insertion sort: n <= 3 */
		for (size_t j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1], keep[j - 1] = t;
		}
	unsigned lo = 0;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0)
			continue;
		if ((unsigned)keep[i] > lo)
			close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	close_range(lo, ~0U, 0);
}

void fd_close_async_job(const struct async_job *j)
{
	if (j->fd < 0 && !j->dir && !j->first)
		return;
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) < 0) {
		if (j->first)
			j->first(j->ud);
		if (j->fd >= 0)
			close(j->fd);
		if (j->dir)
			rm_rf(j->dir);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* the child forks once more so nobody has to reap the closer (a caller about to exit
		 * leaves that to init: one fork, no wait) */
		if (j->exiting || fork() == 0) {
			/* hold nothing else (a caller's stdout pipe would keep its reader waiting), then
			 * wait until the parent has dropped its reference: ours must be the last one.
			 * first() finds its fd under the same number (never below 3: stdio is closed). */
			int keep = j->fd >= 0 ? fcntl(j->fd, F_DUPFD_CLOEXEC, 3) : -1, g = fcntl(gate[0], F_DUPFD_CLOEXEC, 3);
			bool ok = g >= 0 && (keep >= 0 || j->fd < 0) && (j->keep < 0 || j->keep >= 3);
			if (ok) {
				int v[3] = {keep, g, j->keep};
				close_all_except(v, 3);
				char c;
				while (read(g, &c, 1) < 0 && errno == EINTR)
					;
				if (j->first)
					j->first(j->ud);
				if (keep >= 0)
					close(keep);
				if (j->dir)
					rm_rf(j->dir);
			}
			_exit(0);
		}
		_exit(0);
	}
	close(gate[0]);
	if (j->fd >= 0)
		close(j->fd);
	close(gate[1]);
	if (pid > 0 && !j->exiting)
		waitpid(pid, NULL, 0);
	else if (pid < 0) {
		if (j->first)
			j->first(j->ud);
		if (j->dir)
			rm_rf(j->dir);
	}
}

void fd_close_async_rm(int fd, const char *dir, bool exiting)
{
	fd_close_async_job(&(struct async_job){.fd = fd, .dir = dir, .keep = -1, .exiting = exiting});
}

void fd_close_async(int fd)
{
	fd_close_async_rm(fd, NULL, false);
}

struct image_find {
	uintptr_t addr;
	size_t len;
	off_t offset;
	bool found;
};

/* The main program is the first object dl_iterate_phdr reports. */
static int find_in_main(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct image_find *f = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && f->addr >= start && f->addr + f->len <= start + ph->p_filesz) {
			f->offset = (off_t)(ph->p_offset + (f->addr - start));
			f->found = true;
		}
	}
	return 1; /* only the main program */
}

int fd_write_image_data(int fd, const void *data, size_t len)
{
	struct image_find f = {.addr = (uintptr_t)data, .len = len};
	dl_iterate_phdr(find_in_main, &f);
	_cleanup_close_ int exe = f.found ? open("/proc/self/exe", O_RDONLY | O_CLOEXEC) : -1;
	size_t done = 0;
	while (exe >= 0 && done < len) {
		ssize_t n = sendfile(fd, exe, &f.offset, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	/* anything sendfile could not do is written from memory */
	return done < len ? fd_write_all(fd, (const char *)data + done, len - done) : 0;
}
