/* ns_idmount.c — idmapped writable binds for boxes of host root: a user namespace holding the
 * mount id map, and the detached, idmapped clones of the bind sources (parent side). */
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "runtime/ns/ns_idmount.h"
#include "util/log.h"

/* A process that only holds a user namespace open until we have its fd. */
struct holder {
	pid_t pid;
	int pidfd;
	int gate;      /* write end of its pipe: EOF (our exit, or close) ends it */
};

/* Kills and reaps the holder: it is never left behind, on any path. */
static void holder_end(struct holder *h)
{
	if (h->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0);
	if (h->pid > 0)
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	if (h->pidfd >= 0)
		close(h->pidfd);
	if (h->gate >= 0)
		close(h->gate);
	*h = (struct holder){.pidfd = -1, .gate = -1};
}

/* A child in a new, empty user namespace, blocked on a pipe. A raw clone3 like the box's
 * first process (no fork handlers; the child makes system calls only, see ns.h). Safe: the
 * namespace has no map until we write one, and the child runs no code but read and _exit. */
static int holder_start(struct holder *h, pd_err *err)
{
	int gate[2];
	*h = (struct holder){.pidfd = -1, .gate = -1};
	if (pipe2(gate, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	struct clone_args ca = {.flags = CLONE_NEWUSER | CLONE_PIDFD, .pidfd = (uint64_t)(uintptr_t)&h->pidfd,
				.exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		char c;
		close(gate[1]);
		while (read(gate[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	int e = errno;
	close(gate[0]);
	if (pid < 0) {
		close(gate[1]);
		return pd_error(err, e, "cannot create a user namespace for the idmapped binds");
	}
	h->pid = (pid_t)pid;
	h->gate = gate[1];
	return 0;
}

/* The fd of a user namespace holding the mount maps of box (uid and gid). The maps are
 * written by us as host root and read back (ns_idmaps_write), like the box's own. */
static int mount_userns(const struct ns_idmaps *box, int *ret_fd, pd_err *err)
{
	struct ns_idmaps m = {0};
	struct holder h;
	char path[64];
	if (ns_idmap_build_mount(&box->uid, 0, &m.uid) < 0 || ns_idmap_build_mount(&box->gid, 0, &m.gid) < 0)
		return pd_error_msg(err, EINVAL, "the box's id map leaves no room for an idmapped bind");
	int r = holder_start(&h, err);
	if (r < 0)
		return r;
	r = ns_idmaps_write(&m, h.pid, err);
	if (r == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)h.pid);
		*ret_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*ret_fd < 0)
			r = pd_error(err, errno, "cannot open %s", path);
	}
	holder_end(&h);
	return r;
}

static bool idmap_refused(int e)
{
	return e == EINVAL || e == EPERM || e == ENOSYS || e == EOPNOTSUPP;
}

/* The bind stays the child's plain bind; said once per bind. */
static int plain(const struct box_bind *b, const char *why)
{
	pd_debug("ns: %s is not idmapped (%s); bound plainly: the box writes there as its own uids", b->host, why);
	return 1;
}

/* One writable bind: its host path opened as the child opens it (O_PATH|O_NOFOLLOW, not a
 * symlink, not a device), cloned recursively into a detached tree and idmapped. Safe: the
 * clone is a new mount tree that belongs to no namespace and is reachable only through the
 * returned fd; it only gains restrictions (nosuid, nodev) and an id map under which nothing
 * in the box acts as host root (box root stays its subordinate uid). Returns 0 (*ret_fd set,
 * or left -1 for a source the child will refuse with the usual message), 1 when the bind
 * stays plain, or a negative errno. */
static int one_tree(const struct box_bind *b, int userns_fd, int *ret_fd, pd_err *err)
{
	struct stat st;
	_cleanup_close_ int src = open(b->host, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0 || fstat(src, &st) < 0 || S_ISLNK(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		return 0;
	/* a shared scratch directory (/tmp, /var/tmp): files and symlinks the box made there as
	 * root would defeat protected_symlinks/protected_regular for the host's root processes */
	if (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH))
		return plain(b, "a world-writable sticky directory");
	_cleanup_close_ int t = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (t < 0)
		return idmap_refused(errno) ? plain(b, strerror(errno)) : pd_error(err, errno, "cannot clone the mount of %s", b->host);
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				.userns_fd = (uint64_t)userns_fd};
	if (mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0)
		return idmap_refused(errno) ? plain(b, strerror(errno)) : pd_error(err, errno, "cannot idmap the bind of %s", b->host);
	*ret_fd = TAKE_FD(t);
	return 0;
}

void ns_idmount_close(int fds[], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int ns_idmount_open(const struct box_bind *binds, size_t n, const struct ns_idmaps *box, int ret_fds[],
		    size_t *ret_plain, pd_err *err)
{
	_cleanup_close_ int userns_fd = -1;
	size_t n_plain = 0;
	int r = 0;
	for (size_t i = 0; i < n; i++)
		ret_fds[i] = -1;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (binds[i].readonly)
			continue;
		if (userns_fd < 0 && (r = mount_userns(box, &userns_fd, err)) < 0)
			break;
		r = one_tree(&binds[i], userns_fd, &ret_fds[i], err);
		if (r > 0) {
			n_plain++;
			r = 0;
		}
	}
	if (r < 0) {
		ns_idmount_close(ret_fds, n);
		return r;
	}
	*ret_plain = n_plain;
	return 0;
}
