/* ws_resolve.c — open host paths beneath a root without ever following a symlink.
 *
 * This is what keeps apply (and the host-side reads of diff) inside the user's project:
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) when the kernel has
 * it; otherwise a walk that opens one component at a time with O_NOFOLLOW|O_DIRECTORY from
 * the previous fd (crun's safe_openat idea). Either way a symlink in any component — one the
 * host tree always had, or one a racing process swapped in — makes the open fail with ELOOP;
 * there is no string path that the kernel re-resolves later. */
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "ws_io.h"

static int force_fallback = -1; /* -1: not decided yet (read the environment) */
static bool openat2_missing;

void ws_resolve_force_fallback(bool on)
{
	force_fallback = on;
}

static bool fallback_forced(void)
{
	if (force_fallback < 0) {
		const char *e = getenv("PADDOCK_TEST_NO_OPENAT2");
		force_fallback = e && streq(e, "1");
	}
	return force_fallback;
}

bool ws_resolve_uses_openat2(void)
{
	return !fallback_forced() && !openat2_missing;
}

/* Defence in depth: callers pass validated paths, but the resolver refuses on its own any
 * absolute path and any "", "." or ".." component. */
static bool components_ok(const char *path)
{
	if (path[0] == '/')
		return false;
	for (const char *s = path; *s;) {
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s = *e ? e + 1 : e;
		if (*e && !*s)
			return false; /* trailing slash */
	}
	return true;
}

static int via_openat2(int rootfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	for (int tries = 0; tries < 16; tries++) {
		long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	return -EAGAIN;
}

/* After a failed O_NOFOLLOW open, says ELOOP if the component is a symlink. */
static int symlink_errno(int dirfd, const char *name, int err)
{
	struct stat st;
	if ((err == ENOTDIR || err == ELOOP) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return -ELOOP;
	return -err;
}

static int step(int dirfd, const char *name, int flags)
{
	/* O_NOFOLLOW: a symlink component is never followed, the open fails instead */
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : symlink_errno(dirfd, name, errno);
}

static int via_walk(int rootfd, const char *path, int flags)
{
	_cleanup_free_ char *copy = xstrdup(path);
	_cleanup_close_ int cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	char *p = copy, *comp;
	while ((comp = strsep(&p, "/"))) {
		if (!p) /* last component: open it with the caller's flags */
			return step(cur, comp, flags);
		int next = step(cur, comp, O_PATH | O_DIRECTORY);
		if (next < 0)
			return next;
		close(cur);
		cur = next;
	}
	return -EINVAL;
}

/* ENOSYS: old kernel. EPERM/E2BIG may also come from a seccomp filter or an older struct
 * open_how — then a plain open of the root fails the same way; a real EPERM does not. */
static bool openat2_unusable(int rootfd, int fd)
{
	if (fd == -ENOSYS)
		return true;
	if (fd != -EPERM && fd != -E2BIG)
		return false;
	int probe = via_openat2(rootfd, ".", O_PATH | O_DIRECTORY);
	if (probe >= 0)
		close(probe);
	return probe == -ENOSYS || probe == -EPERM || probe == -E2BIG;
}

int ws_open_beneath(int rootfd, const char *path, int flags, int *ret_fd)
{
	int fd;
	if (path[0] == '\0') {
		fd = openat(rootfd, ".", flags | O_CLOEXEC);
		fd = fd < 0 ? -errno : fd;
	} else if (!components_ok(path)) {
		return -EINVAL;
	} else if (ws_resolve_uses_openat2()) {
		fd = via_openat2(rootfd, path, flags);
		if (openat2_unusable(rootfd, fd)) {
			openat2_missing = true;
			fd = via_walk(rootfd, path, flags);
		} else if (fd == -ENOTDIR) {
			/* O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR: the walk tells a symlink
			 * (ELOOP) from a file apart, without following either */
			fd = via_walk(rootfd, path, flags);
		}
	} else {
		fd = via_walk(rootfd, path, flags);
	}
	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

int ws_open_parent(int rootfd, const char *path, int *ret_dirfd, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *parent = slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup("");
	int r = ws_open_beneath(rootfd, parent, O_RDONLY | O_DIRECTORY, ret_dirfd);
	if (r == 0)
		*ret_name = slash ? slash + 1 : path;
	return r;
}
