/* vmdisk.c — image trees as vm base disks (vmdisk.h). */
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "image/vmdisk.h"
#include "util/fdio.h"
#include "workspace/ws_io.h"

extern char **environ;

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

uint64_t img_vmdisk_size(uint64_t unpacked)
{
	uint64_t want = unpacked > (64ULL << 30) ? (129ULL << 30) : 2 * unpacked + GIB;
	if (want < 2 * GIB)
		want = 2 * GIB;
	return (want + MIB - 1) / MIB * MIB;
}

static int write_map(pid_t pid, const char *file, const char *text, pd_err *err)
{
	_cleanup_free_ char *p = xasprintf("/proc/%d/%s", (int)pid, file);
	int r = write_file_str(p, text);
	return r < 0 ? pd_error(err, r, "cannot write %s", p) : 0;
}

/* The maps of mkfs's namespace: inside 0.. = the owners the tree's files have on the host. */
static int set_maps(struct img_store *s, pid_t pid, pd_err *err)
{
	_cleanup_free_ char *um = NULL, *gm = NULL;
	if (geteuid() == 0) {
		um = xasprintf("0 %u 65536\n", s->uid_shift);
		gm = xasprintf("0 %u 65536\n", s->gid_shift);
	} else {
		um = xasprintf("0 %u 1\n", (unsigned)geteuid());
		gm = xasprintf("0 %u 1\n", (unsigned)getegid());
		int r = write_map(pid, "setgroups", "deny", err);
		if (r < 0)
			return r;
	}
	int r = write_map(pid, "uid_map", um, err);
	return r < 0 ? r : write_map(pid, "gid_map", gm, err);
}

/* mkfs.ext4 -d TREE OUT SIZE in a user namespace of its own (see vmdisk.h). */
static int mkfs_mapped(struct img_store *s, const char *tree, const char *out, uint64_t size, pd_err *err)
{
	_cleanup_free_ char *sz = xasprintf("%lluk", (unsigned long long)(size / 1024));
	char *argv[] = {"mkfs.ext4", "-q", "-F", "-L", "paddock-root", "-m", "0", "-E",
			"root_owner=0:0,lazy_itable_init=0,lazy_journal_init=0", "-d", (char *)tree, (char *)out, sz, NULL};
	int go[2], done[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	if (pipe2(done, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		return pd_error(err, errno, "cannot create a pipe");
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(go[0]), close(go[1]), close(done[0]), close(done[1]);
		return pd_error(err, e, "cannot fork");
	}
	if (pid == 0) {
		/* child (the parent may have threads: only async-signal-safe calls until exec):
		 * a new user namespace, wait for its maps, become its root, run mkfs */
		char c;
		if (unshare(CLONE_NEWUSER) < 0 || write(done[1], "u", 1) != 1 || read(go[0], &c, 1) != 1 || c != 'g')
			_exit(126);
		/* Root's case: this process stays host uid 0, which the namespace does not map (the
		 * tree's paths under root's 0700 store stay reachable as their owner), so it is
		 * not the namespace's root and exec would drop its capabilities: read access to
		 * the tree's files is carried over as ambient capabilities. They count only for
		 * files owned by the mapped range. (An ordinary user is the namespace's root.) */
		struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct d[2];
		if (syscall(SYS_capget, &h, d) < 0)
			_exit(126);
		d[0].inheritable |= (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_DAC_OVERRIDE);
		if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0) < 0 ||
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_OVERRIDE, 0, 0) < 0)
			_exit(126);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		execvpe("mkfs.ext4", argv, environ);
		_exit(127);
	}
	close(go[0]);
	close(done[1]);
	char c = 0;
	int r = read(done[0], &c, 1) == 1 && c == 'u' ? set_maps(s, pid, err)
						       : pd_error_msg(err, EPERM, "cannot create a user namespace for mkfs.ext4");
	if (r == 0 && write(go[1], "g", 1) != 1)
		r = pd_error(err, errno, "cannot start mkfs.ext4");
	close(go[1]);
	close(done[0]);
	if (r < 0)
		kill(pid, SIGKILL);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return pd_error(err, errno, "cannot wait for mkfs.ext4");
	if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		r = pd_error_msg(err, EIO, "mkfs.ext4 -d %s failed (status %d)%s", tree,
				 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
				 WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ": is e2fsprogs installed?" : "");
	return r;
}

/* A disk is a regular file reached beneath the store without a symlink on the way (its path
 * goes to QEMU, which opens whatever it names). */
bool img_vmdisk_exists(struct img_store *s, const struct img_record *r)
{
	_cleanup_free_ char *p = xasprintf("vmdisk/%s", r->config + 7);
	_cleanup_close_ int fd = -1;
	return img_open_regular(s->dirfd, p, p, &fd, NULL) == 0;
}

int img_vmdisk(struct img_store *s, const struct img_record *r, char **ret_path, pd_err *err)
{
	_cleanup_free_ char *path = xasprintf("%s/vmdisk/%s", s->dir, r->config + 7);
	if (img_vmdisk_exists(s, r)) {
		*ret_path = TAKE_PTR(path);
		return 0;
	}
	int q = img_rootfs_exists(s, r->config) ? 0 : img_rootfs_unpack(s, r->config, r->layers, NULL, err);
	if (q < 0)
		return q;
	/* tmp/ and vmdisk/ opened beneath the store (no symlink: img_store_open_dir); the disk is
	 * made under a fresh O_EXCL name there and renamed by fd + name */
	_cleanup_close_ int tmpfd = -1, diskdir = -1, fd = -1;
	if ((q = img_store_open_dir(s, "tmp", &tmpfd, err)) < 0 || (q = img_store_open_dir(s, "vmdisk", &diskdir, err)) < 0)
		return q;
	char name[WS_TMP_NAME_MAX];
	if ((q = ws_tmpfile_at(tmpfd, name, &fd)) < 0)
		return pd_error(err, q, "cannot create a disk in %s/tmp", s->dir);
	_cleanup_free_ char *tree = img_rootfs_path(s, r->config);
	_cleanup_free_ char *tmp = xasprintf("%s/tmp/%s", s->dir, name);
	uint64_t size = img_vmdisk_size(r->unpacked);
	q = mkfs_mapped(s, tree, tmp, size, err);
	if (q == 0 && fchmod(fd, 0444) < 0)
		q = pd_error(err, errno, "cannot chmod %s", tmp);
	/* a concurrent maker may have renamed the same disk already: same content */
	if (q == 0 && renameat(tmpfd, name, diskdir, r->config + 7) < 0)
		q = pd_error(err, errno, "cannot rename %s", tmp);
	if (q < 0) {
		unlinkat(tmpfd, name, 0);
		return pd_err_prefix(err, "cannot make the vm disk of %s", r->name);
	}
	*ret_path = TAKE_PTR(path);
	return 0;
}
