/* ns_rootfs.c — building the box's root (child side: system calls and stack buffers only).
 *
 * Why the mounts below are safe: they all happen in the box's own mount namespace, owned by
 * the box's own user namespace, so the kernel only lets them affect the box. Every mount that
 * came from the host (the copy made by CLONE_NEWNS) keeps its flags locked by the kernel, and
 * the host tree is detached at the end. */
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "runtime/ns/ns_etc.h"
#include "runtime/ns/ns_rootfs.h"

#define STAGE "/tmp"          /* host directory the staging tmpfs is first mounted on */
#define OLD "/oldroot"        /* the host's tree while we build (after the first pivot) */
#define BOX "/box"            /* the future root */

#define MFAIL(rep, ...) ns_fail(rep, NS_LAYER_MOUNT, errno, __VA_ARGS__)

struct kdirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static const char *const proc_masked[] = {
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", NULL,
};
static const char *const proc_readonly[] = {
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

const char *const *ns_proc_masked(void)
{
	return proc_masked;
}

const char *const *ns_proc_readonly(void)
{
	return proc_readonly;
}

/* child: snprintf into a path buffer, ENAMETOOLONG on truncation */
static int pathf(char *buf, size_t n, const char *a, const char *b)
{
	int r = snprintf(buf, n, "%s%s", a, b);
	if (r < 0 || (size_t)r >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int make_dir(const char *path, mode_t mode, struct ns_report *rep)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return MFAIL(rep, "cannot create %s", path);
	if (chmod(path, mode) < 0)
		return MFAIL(rep, "cannot chmod %s", path);
	return 0;
}

static int close_keep_errno(int fd)
{
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* child: clones the mount tree at dfd/path (AT_EMPTY_PATH when path is ""), adds the mount
 * attributes attr (only ever restrictions) and attaches the clone at tdfd/target. */
static int bind_at(int dfd, const char *path, int tdfd, const char *target, uint64_t attr, bool recursive,
		   struct ns_report *rep, const char *what)
{
	unsigned rec = recursive ? AT_RECURSIVE : 0;
	int t = open_tree(dfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec | (path[0] ? 0 : AT_EMPTY_PATH));
	if (t < 0)
		return MFAIL(rep, "cannot clone the mount of %s", what);
	struct mount_attr ma = {.attr_set = attr};
	if (attr && mount_setattr(t, "", AT_EMPTY_PATH | rec, &ma, sizeof(ma)) < 0)
		return close_keep_errno(t), MFAIL(rep, "cannot restrict the bind of %s", what);
	if (move_mount(t, "", tdfd, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return close_keep_errno(t), MFAIL(rep, "cannot bind %s at %s", what, target);
	close(t);
	return 0;
}

/* --- staging ---------------------------------------------------------------------------- */

/* No mount event of ours reaches the host and none of the host's reaches the box. */
static int make_private(struct ns_report *rep)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return MFAIL(rep, "cannot make the mount tree private");
	return 0;
}

/* The writable layer: a tmpfs of cfg->disk bytes mounted over the host's /tmp (in our mount
 * namespace only), which becomes our root while the host tree moves to /oldroot. */
static int stage(const struct ns_plan *p, struct ns_report *rep)
{
	static const char *const dirs[] = {STAGE OLD, STAGE BOX, STAGE "/lower", STAGE "/upper", STAGE "/work"};
	if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, p->root_opts) < 0)
		return MFAIL(rep, "cannot mount the box's tmpfs (%s)", p->root_opts);
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (make_dir(dirs[i], 0755, rep) < 0)
			return -1;
	if (ns_injected(p, NS_LAYER_PIVOT))
		return ns_fail(rep, NS_LAYER_PIVOT, EPERM, "cannot pivot_root into the staging tmpfs (injected failure)");
	if (syscall(SYS_pivot_root, STAGE, STAGE OLD) < 0 || chdir("/") < 0)
		return ns_fail(rep, NS_LAYER_PIVOT, errno, "cannot pivot_root into the staging tmpfs");
	/* the box's root must be a mount point of its own for the final pivot_root */
	if (mount(BOX, BOX, NULL, MS_BIND, NULL) < 0)
		return MFAIL(rep, "cannot bind %s onto itself", BOX);
	return 0;
}

struct dir_spec {
	const char *path;
	mode_t mode;
	bool agent;
};

static const struct dir_spec skeleton[] = {
	{BOX "/etc", 0755, false},      {BOX "/tmp", 01777, false},      {BOX "/var", 0755, false},
	{BOX "/var/tmp", 01777, false}, {BOX "/var/cache", 0755, false}, {BOX "/var/lib", 0755, false},
	{BOX "/var/log", 0755, false},  {BOX "/run", 0755, false},       {BOX "/root", 0700, false},
	{BOX "/home", 0755, false},     {BOX "/home/agent", 0700, true}, {BOX "/workspace", 0755, true},
	{BOX "/opt", 0755, false},      {BOX "/srv", 0755, false},       {BOX "/proc", 0555, false},
	{BOX "/sys", 0555, false},      {BOX "/dev", 0755, false},
};

/* An image's tree may hold anything at a skeleton path: a symlink there (say /tmp ->
 * /oldroot/home/user) would make the chmod/chown/mount below act on a host path. Whatever is
 * not a real directory is removed first (in the overlay: a whiteout on the tmpfs). */
static int clear_non_dir(const char *path, struct ns_report *rep)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : MFAIL(rep, "cannot inspect %s", path);
	if (S_ISDIR(st.st_mode))
		return 0;
	if (unlink(path) < 0)
		return MFAIL(rep, "cannot replace %s of the image", path);
	return 0;
}

static int make_skeleton(const struct ns_plan *p, struct ns_report *rep)
{
	for (size_t i = 0; i < ARRAY_SIZE(skeleton); i++) {
		if (p->rootfs && clear_non_dir(skeleton[i].path, rep) < 0)
			return -1;
		if (make_dir(skeleton[i].path, skeleton[i].mode, rep) < 0)
			return -1;
		if (skeleton[i].agent && chown(skeleton[i].path, NS_AGENT_ID, NS_AGENT_ID) < 0)
			return MFAIL(rep, "cannot give %s to the agent user", skeleton[i].path);
	}
	return 0;
}

/* --- the host view: /usr and friends ---------------------------------------------------- */

/* Host /NAME read-only (recursively, nosuid, nodev) as the lower layer of an overlay whose
 * upper layer is on the box's tmpfs: the box can "change" /usr, the host's never changes. */
static int overlay_host_dir(const char *name, struct ns_report *rep)
{
	char src[64], lower[64], upper[64], work[64], target[64], opts[256];
	if (pathf(src, sizeof(src), OLD "/", name) < 0 || pathf(lower, sizeof(lower), "/lower/", name) < 0 ||
	    pathf(upper, sizeof(upper), "/upper/", name) < 0 || pathf(work, sizeof(work), "/work/", name) < 0 ||
	    pathf(target, sizeof(target), BOX "/", name) < 0)
		return MFAIL(rep, "path too long for /%s", name);
	if (make_dir(lower, 0755, rep) < 0 || make_dir(upper, 0755, rep) < 0 || make_dir(work, 0700, rep) < 0 ||
	    make_dir(target, 0755, rep) < 0)
		return -1;
	if (bind_at(AT_FDCWD, src, AT_FDCWD, lower, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, rep, src) < 0)
		return -1;
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, upper, work);
	if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts) == 0)
		return 0;
	/* kernels before 5.11 do not know userxattr (and then refuse overlayfs in a userns anyway) */
	*strrchr(opts, ',') = '\0';
	if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		return MFAIL(rep, "cannot mount overlayfs on /%s", name);
	return 0;
}

/* /bin, /lib64...: the same symlinks as the host when it is merged-usr, else overlays. */
static int host_top(const char *name, struct ns_report *rep)
{
	char src[64], dst[64], link[PATH_MAX];
	struct stat st;
	if (pathf(src, sizeof(src), OLD "/", name) < 0 || pathf(dst, sizeof(dst), BOX "/", name) < 0)
		return MFAIL(rep, "path too long for /%s", name);
	if (lstat(src, &st) < 0)
		return errno == ENOENT ? 0 : MFAIL(rep, "cannot inspect host %s", src);
	if (S_ISDIR(st.st_mode))
		return overlay_host_dir(name, rep);
	if (!S_ISLNK(st.st_mode))
		return 0;
	ssize_t n = readlink(src, link, sizeof(link) - 1);
	if (n < 0)
		return MFAIL(rep, "cannot read host symlink %s", src);
	link[n] = '\0';
	if (symlink(link, dst) < 0)
		return MFAIL(rep, "cannot create %s", dst);
	return 0;
}

static int host_view(struct ns_report *rep)
{
	static const char *const tops[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
	if (overlay_host_dir("usr", rep) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(tops); i++)
		if (host_top(tops[i], rep) < 0)
			return -1;
	return 0;
}

/* --- an image's tree as the root ------------------------------------------------------- */

/* child: opens the image's tree (cfg->rootfs) like a bind source, with the caller's
 * credentials (the store is the caller's, mode 0700). */
static int open_rootfs(const struct ns_plan *p, int ret_fd[2], struct ns_report *rep)
{
	ret_fd[0] = open(p->rootfs, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ret_fd[0] < 0)
		return MFAIL(rep, "cannot open the image tree %s", p->rootfs);
	ret_fd[1] = -1;
	if (!p->rootfs_upper)
		return 0;
	/* the build directory is the caller's (made by the profile builder under the image
	 * store's tmp/, mode 0700); opened like the tree, before the ids change */
	ret_fd[1] = open(p->rootfs_upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return ret_fd[1] < 0 ? MFAIL(rep, "cannot open the build layer %s", p->rootfs_upper) : 0;
}

/* The tree read-only (nosuid, nodev: no setuid program or device node of an image works) as
 * the lower layer of an overlay that becomes the box's root; writes go to the tmpfs, the
 * stored tree never changes and is shared by every box of the image (O(1) per box). */
static int image_root(int fd, int upper_fd, struct ns_report *rep)
{
	static const char opts[] = "lowerdir=/lower/root,upperdir=/upper/root,workdir=/work/root,userxattr";
	/* volatile: the build's upper layer is scratch (captured from the page cache right after
	 * the box ends, then removed; a crash leaves a directory nobody mounts again), so the
	 * overlay need not sync the host filesystem when it goes — that syncfs was a second of
	 * every build's end. Kernels before 5.10 lack the option: mounted without it. */
	static const char build_opts[] = "lowerdir=/lower/root,upperdir=/build/upper,workdir=/build/work,userxattr,volatile";
	if (make_dir("/lower/root", 0755, rep) < 0 || make_dir("/upper/root", 0755, rep) < 0 ||
	    make_dir("/work/root", 0700, rep) < 0)
		return -1;
	if (bind_at(fd, "", AT_FDCWD, "/lower/root", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false, rep,
		    "the image tree") < 0)
		return -1;
	/* a build box writes into the caller's build directory instead of the tmpfs: bound
	 * nosuid, nodev like the tree, and reachable only through this mount namespace's staging
	 * root, which the final pivot_root detaches (the box sees only the merged overlay) */
	if (upper_fd >= 0 && (make_dir("/build", 0755, rep) < 0 ||
			      bind_at(upper_fd, "", AT_FDCWD, "/build", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false, rep,
				      "the build layer") < 0))
		return -1;
	int m = mount("overlay", BOX, "overlay", MS_NOSUID | MS_NODEV, upper_fd >= 0 ? build_opts : opts);
	if (m < 0 && upper_fd >= 0 && errno == EINVAL) {
		char plain[sizeof(build_opts)];
		snprintf(plain, sizeof(plain), "%.*s", (int)(sizeof(build_opts) - 1 - strlen(",volatile")), build_opts);
		m = mount("overlay", BOX, "overlay", MS_NOSUID | MS_NODEV, plain);
	}
	if (m < 0)
		return MFAIL(rep, "cannot mount overlayfs over the image tree");
	return 0;
}

/* --- /etc ------------------------------------------------------------------------------- */

static int copy_fd(int in, int out)
{
	char buf[16384];
	size_t total = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (int)n;
		total += (size_t)n;
		if (total > NS_ETC_MAX_FILE) {
			errno = EFBIG;
			return -1;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno != EINTR)
				return -1;
			off += w > 0 ? w : 0;
		}
	}
}

/* Copies one regular file (mode without set-id or write bits for others) or re-creates one
 * symlink; anything else, unreadable or too big is skipped. */
static int copy_entry(int sdir, const char *name, int ddir, struct ns_report *rep)
{
	struct stat st;
	char link[PATH_MAX];
	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(sdir, name, link, sizeof(link) - 1);
		if (n < 0)
			return 0;
		link[n] = '\0';
		return symlinkat(link, ddir, name) < 0 && errno != EEXIST ? MFAIL(rep, "cannot create /etc/.../%s", name) : 0;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)NS_ETC_MAX_FILE)
		return 0;
	int in = openat(sdir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (in < 0)
		return 0;
	int out = openat(ddir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, st.st_mode & 0755);
	if (out < 0)
		return close_keep_errno(in), MFAIL(rep, "cannot create /etc/.../%s", name);
	int r = copy_fd(in, out);
	int e = errno;
	close(in);
	close(out);
	errno = e;
	return r < 0 ? MFAIL(rep, "cannot copy host /etc/.../%s", name) : 0;
}

/* Opens the directory part of a one-level name like "ssl/openssl.cnf" on both sides
 * (creating it in the box); -1 when the host has no such directory. */
static int open_parents(int src_etc, int dst_etc, const char *dir, int *ret_s, int *ret_d)
{
	*ret_s = openat(src_etc, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*ret_s < 0)
		return -1;
	if (mkdirat(dst_etc, dir, 0755) < 0 && errno != EEXIST)
		return close_keep_errno(*ret_s);
	*ret_d = openat(dst_etc, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return *ret_d < 0 ? close_keep_errno(*ret_s) : 0;
}

static int copy_dir(int sdir, const char *name, int ddir, struct ns_report *rep)
{
	char buf[8192];
	int count = 0, r = 0;
	int s = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0)
		return 0;
	if (mkdirat(ddir, name, 0755) < 0 && errno != EEXIST)
		return close_keep_errno(s), MFAIL(rep, "cannot create /etc/%s", name);
	int d = openat(ddir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return close_keep_errno(s), MFAIL(rep, "cannot open /etc/%s", name);
	for (long n; r == 0 && (n = syscall(SYS_getdents64, s, buf, sizeof(buf))) > 0;) {
		for (long off = 0; r == 0 && off < n;) {
			struct kdirent64 *de = (struct kdirent64 *)(buf + off);
			off += de->d_reclen;
			if (streq(de->d_name, ".") || streq(de->d_name, "..") || ++count > NS_ETC_MAX_DIR_ENTRIES)
				continue;
			r = copy_entry(s, de->d_name, d, rep);
		}
	}
	close(s);
	close(d);
	return r;
}

/* A read-only, recursive bind of a host /etc directory (never a symlink to elsewhere). */
static int bind_etc(const char *name, struct ns_report *rep)
{
	char src[96], dst[96];
	struct stat st;
	if (pathf(src, sizeof(src), OLD "/etc/", name) < 0 || pathf(dst, sizeof(dst), BOX "/etc/", name) < 0)
		return MFAIL(rep, "path too long for /etc/%s", name);
	if (lstat(src, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	char *slash = strrchr(dst, '/');
	*slash = '\0';
	int r = strlen(dst) > strlen(BOX "/etc") ? make_dir(dst, 0755, rep) : 0;
	*slash = '/';
	if (r < 0 || make_dir(dst, 0755, rep) < 0)
		return -1;
	return bind_at(AT_FDCWD, src, AT_FDCWD, dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, rep, src);
}

static int etc_entry(int src_etc, int dst_etc, const struct ns_etc_entry *e, struct ns_report *rep)
{
	const char *slash = strchr(e->name, '/');
	char dir[64];
	int s, d, r;
	if (e->kind == NS_ETC_BIND_RO)
		return bind_etc(e->name, rep);
	if (!slash)
		return e->kind == NS_ETC_COPY_DIR ? copy_dir(src_etc, e->name, dst_etc, rep)
						  : copy_entry(src_etc, e->name, dst_etc, rep);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - e->name), e->name);
	if (open_parents(src_etc, dst_etc, dir, &s, &d) < 0)
		return 0; /* the host has no such directory */
	r = e->kind == NS_ETC_COPY_DIR ? copy_dir(s, slash + 1, d, rep) : copy_entry(s, slash + 1, d, rep);
	close(s);
	close(d);
	return r;
}

static int write_generated(int dst_etc, const struct ns_file *f, struct ns_report *rep)
{
	/* an image's file (or a symlink in its place) is replaced, never written through */
	if (unlinkat(dst_etc, f->name, 0) < 0 && errno != ENOENT && errno != EISDIR)
		return MFAIL(rep, "cannot replace /etc/%s", f->name);
	int fd = openat(dst_etc, f->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, f->mode);
	if (fd < 0)
		return MFAIL(rep, "cannot create /etc/%s", f->name);
	for (size_t off = 0; off < f->len;) {
		ssize_t w = write(fd, f->data + off, f->len - off);
		if (w < 0 && errno != EINTR)
			return close_keep_errno(fd), MFAIL(rep, "cannot write /etc/%s", f->name);
		off += w > 0 ? (size_t)w : 0;
	}
	close(fd);
	return 0;
}

/* Copies, not binds: nothing the box does to its /etc reaches the host. */
static int build_etc(const struct ns_plan *p, struct ns_report *rep)
{
	size_t n;
	const struct ns_etc_entry *e = ns_etc_entries(&n);
	int r = 0, s = open(OLD "/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int d = open(BOX "/etc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0 || d < 0) {
		r = MFAIL(rep, "cannot open the host's or the box's /etc");
		goto out;
	}
	/* an image brings its own /etc: nothing of the host's goes in */
	for (size_t i = 0; i < n && r == 0 && !p->rootfs; i++)
		r = etc_entry(s, d, &e[i], rep);
	for (size_t i = 0; i < p->n_etc_files && r == 0; i++)
		r = write_generated(d, &p->etc_files[i], rep);
	if (r == 0 && p->rootfs && unlinkat(d, "mtab", 0) < 0 && errno != ENOENT)
		r = MFAIL(rep, "cannot replace /etc/mtab of the image");
	if (r == 0 && symlinkat("../proc/self/mounts", d, "mtab") < 0)
		r = MFAIL(rep, "cannot create /etc/mtab");
out:
	if (s >= 0)
		close(s);
	if (d >= 0)
		close(d);
	return r;
}

/* --- /dev ------------------------------------------------------------------------------- */

/* A host device node bound read-only: reads and writes reach the driver (the kernel does not
 * apply the read-only flag to device I/O), but chmod/chown/utimes of the host's node fail. */
static int bind_dev_node(const char *name, bool optional, struct ns_report *rep)
{
	char src[64], dst[64];
	struct stat st;
	if (pathf(src, sizeof(src), OLD "/dev/", name) < 0 || pathf(dst, sizeof(dst), BOX "/dev/", name) < 0)
		return MFAIL(rep, "path too long for /dev/%s", name);
	if (stat(src, &st) < 0 || !S_ISCHR(st.st_mode)) {
		if (optional)
			return 0;
		errno = ENODEV;
		return MFAIL(rep, "host %s is not a character device", src);
	}
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return MFAIL(rep, "cannot create %s", dst);
	close(fd);
	return bind_at(AT_FDCWD, src, AT_FDCWD, dst, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, rep, src);
}

static int dev_links(struct ns_report *rep)
{
	static const char *const links[][2] = {
		{"pts/ptmx", BOX "/dev/ptmx"},         {"/proc/self/fd", BOX "/dev/fd"},
		{"/proc/self/fd/0", BOX "/dev/stdin"}, {"/proc/self/fd/1", BOX "/dev/stdout"},
		{"/proc/self/fd/2", BOX "/dev/stderr"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			return MFAIL(rep, "cannot create %s", links[i][1]);
	return 0;
}

/* A private devpts instance: the box sees only its own terminals. */
static int mount_pts(const struct ns_plan *p, struct ns_report *rep)
{
	char opts[96];
	if (p->tty_gid >= 0)
		snprintf(opts, sizeof(opts), "newinstance,ptmxmode=0666,mode=0620,gid=%d", p->tty_gid);
	else
		snprintf(opts, sizeof(opts), "newinstance,ptmxmode=0666,mode=0620");
	if (make_dir(BOX "/dev/pts", 0755, rep) < 0)
		return -1;
	if (mount("devpts", BOX "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, opts) < 0)
		return MFAIL(rep, "cannot mount devpts (%s)", opts);
	return 0;
}

static int build_dev(const struct ns_plan *p, struct ns_report *rep)
{
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom"};
	if (mount("tmpfs", BOX "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64") < 0)
		return MFAIL(rep, "cannot mount the tmpfs for /dev");
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++)
		if (bind_dev_node(nodes[i], false, rep) < 0)
			return -1;
	if (bind_dev_node("tty", true, rep) < 0 || mount_pts(p, rep) < 0 || dev_links(rep) < 0)
		return -1;
	if (make_dir(BOX "/dev/shm", 01777, rep) < 0)
		return -1;
	if (mount("tmpfs", BOX "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, p->shm_opts) < 0)
		return MFAIL(rep, "cannot mount /dev/shm");
	/* nothing new can appear in /dev itself (pts and shm are mounts of their own) */
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(AT_FDCWD, BOX "/dev", 0, &ma, sizeof(ma)) < 0)
		return MFAIL(rep, "cannot make /dev read-only");
	return 0;
}

/* --- cfg->binds ------------------------------------------------------------------------- */

int ns_rootfs_open_binds(const struct ns_plan *p, int fds[], struct ns_report *rep)
{
	if (p->rootfs && open_rootfs(p, &fds[p->n_binds], rep) < 0)
		return -1;
	for (size_t i = 0; i < p->n_binds; i++) {
		struct stat st;
		const char *h = p->binds[i].host;
		/* O_PATH|O_NOFOLLOW: the final component is never followed, so a symlink planted
		 * there cannot redirect the bind; fds pin what we checked */
		fds[i] = open(h, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fds[i] < 0)
			return MFAIL(rep, "cannot open bind source %s", h);
		if (fstat(fds[i], &st) < 0)
			return MFAIL(rep, "cannot inspect bind source %s", h);
		errno = EINVAL;
		if (S_ISLNK(st.st_mode))
			return MFAIL(rep, "bind source %s is a symlink (name its target instead)", h);
		if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
			return MFAIL(rep, "bind source %s is a device node", h);
	}
	return 0;
}

/* Opens the parent of box path `path` below /box, creating missing directories but never
 * following a symlink (so no bind target can point outside the box's root). */
static int open_target_parent(const char *path, char *last, size_t lastn, struct ns_report *rep)
{
	char comp[NAME_MAX + 1];
	int dfd = open(BOX, O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *s = path + 1;
	if (dfd < 0)
		return MFAIL(rep, "cannot open %s", BOX);
	for (size_t n; (n = strcspn(s, "/")), s[n] == '/'; s += n + 1) {
		snprintf(comp, sizeof(comp), "%.*s", (int)n, s);
		if (mkdirat(dfd, comp, 0755) < 0 && errno != EEXIST)
			return close_keep_errno(dfd), MFAIL(rep, "cannot create the parents of bind target %s", path);
		int next = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dfd);
		if (next < 0)
			return MFAIL(rep, "bind target %s crosses a symlink or a file", path);
		dfd = next;
	}
	snprintf(last, lastn, "%s", s);
	return dfd;
}

static int make_target(int pdir, const char *last, bool dir, const char *path, struct ns_report *rep)
{
	struct stat st;
	if (dir) {
		if (mkdirat(pdir, last, 0755) < 0 && errno != EEXIST)
			return MFAIL(rep, "cannot create bind target %s", path);
	} else {
		int fd = openat(pdir, last, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
		if (fd < 0)
			return MFAIL(rep, "cannot create bind target %s", path);
		close(fd);
	}
	if (fstatat(pdir, last, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return MFAIL(rep, "cannot inspect bind target %s", path);
	errno = ENOTDIR;
	if (S_ISDIR(st.st_mode) != dir)
		return MFAIL(rep, "bind target %s exists with another type", path);
	return 0;
}

/* child: attaches a tree the parent cloned and idmapped (ns_idmount.h) at pdir/last. The
 * tree is detached and reachable only through the fd we inherited; moving it into the box's
 * mount namespace needs CAP_SYS_ADMIN there, which box root holds until confine(). */
static int attach_tree(int tree, int pdir, const char *last, const struct box_bind *b, struct ns_report *rep)
{
	if (move_mount(tree, "", pdir, last, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return MFAIL(rep, "cannot bind %s at %s", b->host, b->box);
	close(tree);
	return 0;
}

/* Binds are recursive, always nosuid+nodev, read-only (the whole subtree) when asked; a
 * writable bind of root's box arrives as a tree the parent made (tree >= 0, already nosuid,
 * nodev and idmapped), whose type decides the target's. */
static int one_bind(const struct box_bind *b, int fd, int tree, struct ns_report *rep)
{
	char last[NAME_MAX + 1];
	struct stat st;
	uint64_t attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (b->readonly ? MOUNT_ATTR_RDONLY : 0);
	if (fstat(tree >= 0 ? tree : fd, &st) < 0)
		return MFAIL(rep, "cannot inspect bind source %s", b->host);
	int pdir = open_target_parent(b->box, last, sizeof(last), rep);
	if (pdir < 0)
		return -1;
	int r = make_target(pdir, last, S_ISDIR(st.st_mode), b->box, rep);
	if (r == 0)
		r = tree >= 0 ? attach_tree(tree, pdir, last, b, rep) : bind_at(fd, "", pdir, last, attr, true, rep, b->host);
	close(pdir);
	return r;
}

static int do_binds(const struct ns_plan *p, const int fds[], struct ns_report *rep)
{
	for (size_t i = 0; i < p->n_binds; i++)
		if (one_bind(&p->binds[i], fds[i], p->bind_trees[i], rep) < 0)
			return -1;
	return 0;
}

/* --- /proc ------------------------------------------------------------------------------ */

static int mask_proc(const char *path, struct ns_report *rep)
{
	char full[96];
	struct stat st;
	if (pathf(full, sizeof(full), BOX, path) < 0)
		return MFAIL(rep, "path too long: %s", path);
	if (lstat(full, &st) < 0)
		return errno == ENOENT ? 0 : MFAIL(rep, "cannot inspect %s", path);
	if (S_ISDIR(st.st_mode)) {
		if (mount("tmpfs", full, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=2,mode=0555") < 0)
			return MFAIL(rep, "cannot mask %s", path);
		return 0;
	}
	if (mount(BOX "/dev/null", full, NULL, MS_BIND, NULL) < 0)
		return MFAIL(rep, "cannot mask %s", path);
	return 0;
}

static int readonly_proc(const char *path, struct ns_report *rep)
{
	char full[96];
	if (pathf(full, sizeof(full), BOX, path) < 0)
		return MFAIL(rep, "path too long: %s", path);
	if (access(full, F_OK) < 0)
		return errno == ENOENT ? 0 : MFAIL(rep, "cannot inspect %s", path);
	return bind_at(AT_FDCWD, full, AT_FDCWD, full,
		       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true, rep, path);
}

/* The box's own procfs (it shows the box's pid namespace only), with the host-wide files
 * hidden or read-only as runc does, and the mount itself read-only. */
static int build_proc(struct ns_report *rep)
{
	if (mount("proc", BOX "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return MFAIL(rep, "cannot mount proc (is the host's /proc partly covered?)");
	for (const char *const *m = proc_masked; *m; m++)
		if (mask_proc(*m, rep) < 0)
			return -1;
	for (const char *const *m = proc_readonly; *m; m++)
		if (readonly_proc(*m, rep) < 0)
			return -1;
	/* No writes beneath /proc, whatever Landlock allows: an image's box may write beneath
	 * its / (ns_landlock.c: its new top-level directories must take files), and /proc is
	 * below it — the PSI triggers in /proc/pressure are 0666, the knobs of the box's own
	 * processes are theirs. The host view's Landlock rules already kept every write out of
	 * /proc, so nothing a box could do before is lost. This mount only: what /proc/self/fd/N
	 * leads to is written through its own mount, and the masks above stay as they are. */
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(AT_FDCWD, BOX "/proc", 0, &ma, sizeof(ma)) < 0)
		return MFAIL(rep, "cannot make /proc read-only");
	return 0;
}

/* --- the whole root --------------------------------------------------------------------- */

/* Enters the new root and detaches the staging root with the host's tree below it: from now
 * on no path leads to a host file that was not bound in on purpose. */
static int pivot_into_box(struct ns_report *rep)
{
	if (chdir(BOX) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
		return ns_fail(rep, NS_LAYER_PIVOT, errno, "cannot pivot_root into the box's root");
	if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return ns_fail(rep, NS_LAYER_PIVOT, errno, "cannot detach the host's tree");
	return 0;
}

/* The project also at its host path: a symlink to /workspace, its parents made as needed
 * (`mkdir -p DIR && ln -sfn /workspace PATH`). Inside the box's root only (after the pivot:
 * every path, symlinks included, resolves in the box), as the box's first user before any
 * session exists; best effort, like the paddock-init built-in that does it on other backends
 * (an unmapped root cannot create /home/USER, and /workspace is the path that always works).
 * A stack buffer and system calls: this runs in the clone3 child. */
static void make_ws_alias(const char *project)
{
	char path[PATH_MAX];
	size_t n = strlen(project);
	if (project[0] != '/' || n >= sizeof(path))
		return;
	memcpy(path, project, n + 1);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	if (n <= 1 || streq(path, "/workspace"))
		return;
	for (char *s = path + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		int r = mkdir(path, 0755);
		*s = '/';
		if (r < 0 && errno != EEXIST)
			return;
	}
	struct stat st;
	if (symlink("/workspace", path) < 0 && errno == EEXIST && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
	    unlink(path) == 0)
		(void)!symlink("/workspace", path); /* an old link (a restarted box) is replaced */
}

int ns_rootfs_build(const struct ns_plan *p, const int bind_fds[], struct ns_report *rep)
{
	if (ns_injected(p, NS_LAYER_MOUNT))
		return ns_fail(rep, NS_LAYER_MOUNT, EPERM, "cannot make the mount tree private (injected failure)");
	if (make_private(rep) < 0 || stage(p, rep) < 0)
		return -1;
	if (p->rootfs ? image_root(bind_fds[p->n_binds], bind_fds[p->n_binds + 1], rep) < 0 : 0)
		return -1;
	if (make_skeleton(p, rep) < 0 || (!p->rootfs && host_view(rep) < 0))
		return -1;
	ns_trace(p, "rootfs: root and skeleton");
	if (build_etc(p, rep) < 0)
		return -1;
	ns_trace(p, "rootfs: etc");
	if (build_dev(p, rep) < 0)
		return -1;
	ns_trace(p, "rootfs: dev");
	if (do_binds(p, bind_fds, rep) < 0 || build_proc(rep) < 0)
		return -1;
	ns_trace(p, "rootfs: binds and proc");
	if (pivot_into_box(rep) < 0)
		return -1;
	if (p->ws_alias)
		make_ws_alias(p->ws_alias);
	return 0;
}
