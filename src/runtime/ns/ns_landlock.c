/* ns_landlock.c — Landlock rules for the box. */
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "runtime/ns/ns_landlock.h"

/* Debian 12's headers stop at ABI 2/3; the values are ABI and never change. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* struct landlock_ruleset_attr as of ABI 6 (the kernel accepts the prefix older ABIs know) */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

int ns_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : (int)abi;
}

uint64_t ns_landlock_fs_handled(int abi)
{
	if (abi < 1)
		return 0;
	uint64_t m = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
		     LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		     LANDLOCK_ACCESS_FS_MAKE_SYM;
	if (abi >= 2)
		m |= LANDLOCK_ACCESS_FS_REFER;     /* rename/link across directories */
	if (abi >= 3)
		m |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		m |= LANDLOCK_ACCESS_FS_IOCTL_DEV; /* ioctl on device files */
	return m;
}

uint64_t ns_landlock_fs_file_rights(int abi)
{
	return ns_landlock_fs_handled(abi) &
	       (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV);
}

uint64_t ns_landlock_scoped(int abi)
{
	return abi >= 6 ? LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL : 0;
}

/* Not listed, so never writable: "/" itself, /proc, /sys, /bin etc. (symlinks). /usr and
 * /etc are the box's own copies (overlay upper, tmpfs), so writing there stays in the box. */
static const char *const writable_dirs[] = {
	"/tmp", "/var/tmp", "/home", "/root", "/workspace", "/usr", "/etc", "/opt", "/run",
	"/dev", "/srv", "/var", NULL,
};

const char *const *ns_landlock_writable_dirs(void)
{
	return writable_dirs;
}

static size_t attr_size(int abi)
{
	if (abi >= 6)
		return sizeof(struct ll_ruleset_attr);
	return abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
}

/* child: allows every handled right beneath path (file rights only for a non-directory). A
 * missing optional directory gets no rule, which only means less access. */
static int allow(int ruleset, const struct ns_plan *p, const char *path, bool optional, struct ns_report *rep)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	struct stat st;
	if (fd < 0 && optional && errno == ENOENT)
		return 0;
	if (fd < 0)
		return ns_fail(rep, NS_LAYER_LANDLOCK, errno, "cannot open %s for a Landlock rule", path);
	struct landlock_path_beneath_attr pb = {.parent_fd = fd};
	pb.allowed_access = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) ? p->ll_handled_fs
									  : ns_landlock_fs_file_rights(p->landlock_abi);
	long r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	int e = errno;
	close(fd);
	return r < 0 ? ns_fail(rep, NS_LAYER_LANDLOCK, e, "cannot add a Landlock rule for %s", path) : 0;
}

/* child: builds and enforces the ruleset. Safe: Landlock only ever removes access, and the
 * domain is inherited by paddock-init and everything it starts. */
int ns_landlock_apply(const struct ns_plan *p, struct ns_report *rep)
{
	if (ns_injected(p, NS_LAYER_LANDLOCK))
		return ns_fail(rep, NS_LAYER_LANDLOCK, EPERM, "cannot create a Landlock ruleset (injected failure)");
	if (p->landlock_abi < 1)
		return ns_fail(rep, NS_LAYER_LANDLOCK, EOPNOTSUPP, "Landlock is not available in this kernel");
	struct ll_ruleset_attr attr = {.handled_access_fs = p->ll_handled_fs, .scoped = p->ll_scoped};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size(p->landlock_abi), 0);
	if (rs < 0)
		return ns_fail(rep, NS_LAYER_LANDLOCK, errno, "cannot create a Landlock ruleset (ABI %d)", p->landlock_abi);
	int r = 0;
	for (const char *const *d = writable_dirs; *d && r == 0; d++)
		r = allow(rs, p, *d, true, rep);
	for (size_t i = 0; i < p->n_binds && r == 0; i++)
		if (!p->binds[i].readonly)
			r = allow(rs, p, p->binds[i].box, false, rep);
	/* An image's root is the box's own overlay (the stored tree read-only below, every write
	 * in the box's upper layer), so the list above, made for the host view, only got in the
	 * way there: an install command's `mkdir /app` failed. A rule per top-level directory
	 * would not do: a file in a directory made after this ruleset (`mkdir /app && echo x >
	 * /app/f`) is writable only through a rule on an ancestor, and / is the only one. Safe:
	 * Landlock can only narrow access, never widen a mount's, so read-only binds stay
	 * read-only, and so does /proc, mounted read-only as a whole (ns_rootfs.c, build_proc)
	 * because it lies beneath this rule; /dev is a read-only tmpfs with devpts and /dev/shm,
	 * which the host view's list allows too; /sys is the image's own empty directory; and
	 * nothing of the host is writable beneath / but what the user bound read-write. */
	if (r == 0 && p->rootfs)
		r = allow(rs, p, "/", false, rep);
	if (r == 0 && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		r = ns_fail(rep, NS_LAYER_LANDLOCK, errno, "cannot enforce the Landlock ruleset");
	close(rs);
	return r;
}
