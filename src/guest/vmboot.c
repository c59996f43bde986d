/* vmboot.c — stage 1 of paddock-init in a vm guest: mount the kernel filesystems, load the
 * virtio modules, find the control port, mount the box's disk and switch into it (see
 * vmboot.h). Everything here runs as PID 1 of a guest whose kernel is the boundary: the
 * guest is the box, so "privileged" steps below only affect the box itself. */
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/random.h>
#include <net/if.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "guest/vmboot.h"
#include "net/vnet_if.h"
#include "proto/proto.h"
#include "util/fdio.h"
#include "util/util.h"

#define DEVICE_WAIT_MS 20000 /* TCG on a loaded host is slow; KVM needs a few ms */
#define MODULE_MAX_BYTES (16u * 1024u * 1024u)

static void vlog(const char *fmt, ...) _printf_(1, 2);
static void vlog(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	dprintf(STDERR_FILENO, "paddock-init: vmboot: %s\n", buf);
}

/* ---- pure parts ---------------------------------------------------------------------- */

static bool charset_ok(const char *s, size_t n, const char *set)
{
	return n > 0 && strspn(s, set) >= n;
}

static const char host_set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";

/* One "key=value" item of a resume frame; *seen collects the keys (bit 0 host, 1 time, 2 seed). */
static int resume_item(const char *kv, struct vmboot_resume *r, unsigned *seen)
{
	size_t vl;
	if (!strncmp(kv, "host=", 5) && !(*seen & 1u)) {
		const char *v = kv + 5;
		vl = strlen(v);
		if (vl >= sizeof(r->hostname) || v[0] == '-' || !charset_ok(v, vl, host_set))
			return -EBADMSG;
		memcpy(r->hostname, v, vl + 1);
		*seen |= 1u;
	} else if (!strncmp(kv, "time=", 5) && !(*seen & 2u)) {
		unsigned long long t;
		char end;
		if (kv[5] < '1' || kv[5] > '9' || sscanf(kv + 5, "%llu%c", &t, &end) != 1 || t > INT64_MAX)
			return -EBADMSG;
		r->time_ns = (int64_t)t;
		*seen |= 2u;
	} else if (!strncmp(kv, "seed=", 5) && !(*seen & 4u)) {
		if (hex_decode(kv + 5, r->seed, VMBOOT_SEED_BYTES) < 0)
			return -EBADMSG;
		*seen |= 4u;
	} else
		return -EBADMSG;
	return 0;
}

int vmboot_parse_resume(const uint8_t *payload, size_t len, struct vmboot_resume *ret)
{
	struct proto_tlv_iter it = {payload, len};
	struct vmboot_resume r = {0};
	unsigned seen = 0;
	uint16_t tag;
	const uint8_t *v;
	uint32_t vlen;
	const char *kv;
	int n;
	while ((n = proto_tlv_next(&it, &tag, &v, &vlen)) > 0)
		if (tag != PROTO_TAG_KV || proto_tlv_str(v, vlen, &kv) < 0 || resume_item(kv, &r, &seen) < 0)
			return -EBADMSG;
	if (n < 0 || seen != 7u)
		return -EBADMSG;
	*ret = r;
	return 0;
}

static void cmdline_item(const char *tok, size_t n, struct vmboot_cmdline *c)
{
	char val[80];
	const char *eq = memchr(tok, '=', n);
	if (!eq || (size_t)(tok + n - eq - 1) >= sizeof(val))
		return;
	size_t kl = (size_t)(eq - tok), vl = n - kl - 1;
	memcpy(val, eq + 1, vl);
	val[vl] = '\0';
	if (kl == 13 && !strncmp(tok, "paddock.probe", kl))
		c->probe = streq(val, "1");
	else if (kl == 13 && !strncmp(tok, "paddock.debug", kl))
		c->debug = streq(val, "1");
	else if (kl == 11 && !strncmp(tok, "paddock.net", kl))
		c->net = streq(val, "1");
	else if (kl == 16 && !strncmp(tok, "paddock.template", kl))
		c->template_boot = streq(val, "1");
	else if (kl == 12 && !strncmp(tok, "paddock.pids", kl)) {
		unsigned p;
		char end;
		if (sscanf(val, "%u%c", &p, &end) == 1 && p >= 8 && p <= 4194304)
			c->pids = p;
	}
	else if (kl == 12 && !strncmp(tok, "paddock.resv", kl)) {
		unsigned long long b;
		char end;
		if (sscanf(val, "%llu%c", &b, &end) == 1 && val[0] >= '0' && val[0] <= '9' && b < (1ull << 48))
			c->resv_blocks = b;
	}
	else if (kl == 12 && !strncmp(tok, "paddock.root", kl) && vl < sizeof(c->root) &&
		 charset_ok(val, vl, "abcdefghijklmnopqrstuvwxyz0123456789"))
		memcpy(c->root, val, vl + 1);
	else if (kl == 12 && !strncmp(tok, "paddock.host", kl) && vl < sizeof(c->hostname) && val[0] != '-' &&
		 charset_ok(val, vl, host_set))
		memcpy(c->hostname, val, vl + 1);
	else if (kl == 13 && !strncmp(tok, "paddock.agent", kl)) {
		unsigned u, g;
		char end;
		if (sscanf(val, "%u:%u%c", &u, &g, &end) == 2 && u > 0 && g > 0 && u < 65534 && g < 65534)
			c->agent_uid = u, c->agent_gid = g;
	}
}

void vmboot_parse_cmdline(const char *text, struct vmboot_cmdline *ret)
{
	*ret = (struct vmboot_cmdline){.root = "vda", .agent_uid = 1000, .agent_gid = 1000};
	for (const char *p = text; *p;) {
		p += strspn(p, " \t\n");
		size_t n = strcspn(p, " \t\n");
		if (n > 0)
			cmdline_item(p, n, ret);
		p += n;
	}
}

int vmboot_pick_port(const char *const *names, const char *const *contents, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strcspn(contents[i], "\n");
		if (strncmp(names[i], "vport", 5) == 0 && l == strlen(VMBOOT_CTL_PORT) &&
		    strncmp(contents[i], VMBOOT_CTL_PORT, l) == 0)
			return (int)i;
	}
	return -1;
}

/* ---- small I/O helpers ---------------------------------------------------------------- */


static void nap(void)
{
	struct timespec ts = {0, 2 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

/* Reads a small file into buf (NUL-terminated); -errno on failure. */
static int read_small(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static bool debug;

/* With paddock.debug=1: "vmboot: <step> at <ms since the kernel started>". */
static void step(const char *what)
{
	struct timespec ts;
	if (!debug)
		return;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	vlog("%s at %lld ms", what, (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* ---- power off ------------------------------------------------------------------------ */

/* Registered with atexit(): when paddock-init ends (STOP, supervisor gone, fatal error), the
 * guest powers off cleanly instead of panicking with "Attempted to kill init". */
static void poweroff_at_exit(void)
{
	if (getpid() != 1)
		return; /* a forked child calling exit() must never take the box down */
	(void)kill(-1, SIGKILL);
	for (int64_t until = mono_ms() + 1000; mono_ms() < until;) {
		if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			break;
		nap();
	}
	sync();
	/* read-only before power-off: the journal is clean for diff/apply on the next boot */
	(void)mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL);
	sync();
	reboot(RB_POWER_OFF);
}

static void step(const char *what);

/* ---- stage 1 steps -------------------------------------------------------------------- */

static int mount_one(const char *src, const char *dst, const char *type, unsigned long flags, const char *data)
{
	if (mkdir(dst, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mount(src, dst, type, flags, data) < 0) {
		int e = -errno;
		vlog("cannot mount %s on %s: %s", type, dst, strerror(-e));
		return e;
	}
	return 0;
}

static int mount_early(void)
{
	const unsigned long nse = MS_NOSUID | MS_NOEXEC;
	int r = mount_one("proc", "/proc", "proc", nse | MS_NODEV, NULL);
	if (r == 0)
		r = mount_one("sysfs", "/sys", "sysfs", nse | MS_NODEV, NULL);
	if (r == 0)
		r = mount_one("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	return r;
}

/* Loads one module of the initramfs. The modules come from Debian's signed package through
 * the host's apt and are part of the initramfs the host built: nothing from the box's disk is
 * loaded here (the disk is not even mounted yet). */
static int module_open(const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s.ko", VMBOOT_MODULES_DIR, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		vlog("cannot open module %s: %s", name, strerror(-e));
		return e;
	}
	return fd;
}

static int module_load(int fd, const char *name)
{
	if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST) {
		int e = -errno;
		vlog("cannot load module %s: %s", name, strerror(-e));
		return e;
	}
	return 0;
}

static int load_module(const char *name)
{
	_cleanup_close_ int fd = module_open(name);
	return fd < 0 ? fd : module_load(fd, name);
}

/* The NIC's driver stack is loaded only for a box with a network: without one the guest has
 * no virtio-net device, and each module costs milliseconds of a TCG boot. */
static bool module_wanted(const char *name, bool net)
{
	static const char *const net_only[] = {"virtio_net", "net_failover", "failover"};
	for (size_t i = 0; !net && i < ARRAY_SIZE(net_only); i++)
		if (streq(name, net_only[i]))
			return false;
	return true;
}

/* A template's guest loads the balloon driver only once it is resumed as a box. The driver
 * reports the guest's free memory to the host when it starts, and the guest never reports a
 * page twice: reported at the template's boot, the free pages of every box restored from it
 * stayed in host memory for good once the restore had touched them (QEMU reads each page it
 * restores; where the host has no shared zero page that allocates it: 364 of 512 MB, for a
 * guest using 41). Started after the resume, the driver reports them and QEMU lets them go.
 * The module is kept open across the switch of root (which deletes the initramfs's files). */
static int deferred_balloon = -1;

/* The smallest free block the balloon driver reports: 2^6 pages (256 KiB), not the kernel's
 * default of a pageblock (2 MiB). A pass over a zone needs 32 blocks of the order free above
 * its low watermark, which the 16 MiB DMA zone never has at order 9: its free memory (15 MB,
 * resident after a restore that touched it) was never given back, nor were the free blocks
 * of 256 KiB to 1 MiB between used ones (another ~9 MB). Order 6 is the largest the DMA zone
 * passes. Written after the driver registered: Debian's 6.1 sets the order at registration,
 * over any value given before; the first pass runs 2 s later. The box cannot change it:
 * /sys is sealed before any box process runs. */
#define VMBOOT_REPORTING_ORDER "6"
#define VMBOOT_REPORTING_ORDER_PARAM "/sys/module/page_reporting/parameters/page_reporting_order"

static void set_reporting_order(void)
{
	_cleanup_close_ int fd = open(VMBOOT_REPORTING_ORDER_PARAM, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, VMBOOT_REPORTING_ORDER, strlen(VMBOOT_REPORTING_ORDER)) < 0)
		vlog("cannot set the free page reporting order: %s", strerror(errno));
}

static int load_modules(bool net, bool template_boot)
{
	char list[8192];
	int r = read_small(VMBOOT_ORDER_FILE, list, sizeof(list));
	if (r < 0) {
		vlog("cannot read %s: %s", VMBOOT_ORDER_FILE, strerror(-r));
		return r;
	}
	for (char *save = NULL, *l = strtok_r(list, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!charset_ok(l, strlen(l), "abcdefghijklmnopqrstuvwxyz0123456789_") || !module_wanted(l, net))
			continue;
		if (template_boot && streq(l, "virtio_balloon")) {
			deferred_balloon = module_open(l);
			if (deferred_balloon < 0)
				return deferred_balloon;
			continue;
		}
		r = load_module(l);
		if (r < 0)
			return r;
		if (streq(l, "virtio_balloon"))
			set_reporting_order();
		step(l);
	}
	return 0;
}

/* The index of the control port among /sys/class/virtio-ports entries, or -ENOENT. */
static int find_port(char *ret_dev, size_t size)
{
	_cleanup_closedir_ DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char p[PATH_MAX], content[128];
		if (strncmp(de->d_name, "vport", 5) != 0)
			continue;
		snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", de->d_name);
		if (read_small(p, content, sizeof(content)) < 0)
			continue;
		const char *names[] = {de->d_name}, *contents[] = {content};
		if (vmboot_pick_port(names, contents, 1) == 0) {
			snprintf(ret_dev, size, "/dev/%s", de->d_name);
			return 0;
		}
	}
	return -ENOENT;
}

/* Ports appear when the host announces them over virtio-serial's control queue, after the
 * driver probed: poll for them (and for the disk) with a deadline. */
static int wait_devices(const char *root, bool net, char *port, size_t size)
{
	char disk[64];
	snprintf(disk, sizeof(disk), "/dev/%s", root);
	int64_t deadline = mono_ms() + DEVICE_WAIT_MS;
	bool have_port = false, have_disk = false, have_net = !net;
	while (!(have_port && have_disk && have_net)) {
		have_port = have_port || find_port(port, size) == 0;
		have_disk = have_disk || access(disk, F_OK) == 0;
		have_net = have_net || if_nametoindex(VNET_BOX_IFNAME) > 0;
		if (mono_ms() > deadline) {
			vlog("%s did not appear within %d ms",
			     !have_port ? "the control port " VMBOOT_CTL_PORT : !have_disk ? disk : "the network interface " VNET_BOX_IFNAME,
			     DEVICE_WAIT_MS);
			return -ETIMEDOUT;
		}
		if (!(have_port && have_disk && have_net))
			nap();
	}
	return 0;
}

static int open_port(const char *dev)
{
	int fd = open(dev, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = -errno;
		vlog("cannot open %s: %s", dev, strerror(-e));
		return e;
	}
	if (fd < 3) { /* the contract wants it above stdio */
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = hi < 0 ? -errno : hi;
	}
	return fd;
}

/* ext4's online grow (fs/ext4/ioctl.c; not in the uapi headers): the new size in blocks */
#ifndef EXT4_IOC_RESIZE_FS
#define EXT4_IOC_RESIZE_FS _IOW('f', 16, uint64_t)
#endif

/* A disk made larger than its image (--disk on the vm backend: the overlay's virtual size)
 * gets its filesystem grown to fill it, online, before anything of the box runs. A disk of
 * the image's own size is a no-op for the kernel. A failure leaves the filesystem as it was
 * (the kernel grows it group by group, journalled) and the box runs with the image's size and
 * free space (nothing held back then: it would leave the box no room); the console says why.
 * False then. */
static bool grow_root(const char *disk)
{
	uint64_t bytes = 0;
	struct statfs sf;
	_cleanup_close_ int dev = open(disk, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int dir = open(VMBOOT_NEWROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dev < 0 || dir < 0 || ioctl(dev, BLKGETSIZE64, &bytes) < 0 || fstatfs(dir, &sf) < 0 || sf.f_bsize <= 0) {
		vlog("cannot size the box's disk: %s", strerror(errno));
		return false;
	}
	uint64_t blocks = bytes / (uint64_t)sf.f_bsize;
	/* statfs leaves out ext4's own overhead, so a disk of the filesystem's size still gets the
	 * call, which is then a no-op */
	if (blocks <= (uint64_t)sf.f_blocks)
		return true;
	if (ioctl(dir, EXT4_IOC_RESIZE_FS, &blocks) < 0) {
		vlog("cannot grow the box's disk to %llu MiB: %s", (unsigned long long)(bytes >> 20), strerror(errno));
		return false;
	}
	return true;
}

/* --disk: the image's free blocks (paddock.resv=) join ext4's reserved clusters, which only
 * the filesystem's own metadata may use, never a process of the box (root in the guest
 * included, whatever its capabilities): what the box can write is the disk's growth, its
 * --disk. The pool lives in the kernel's memory: set at every boot (a template's restored
 * guest has it from the template's). */
static int write_str(const char *path, const char *text);

static void reserve_root(const char *root, uint64_t blocks)
{
	char path[96], cur[32];
	if (!blocks)
		return;
	snprintf(path, sizeof(path), "/sys/fs/ext4/%s/reserved_clusters", root);
	unsigned long long now;
	char end;
	if (read_small(path, cur, sizeof(cur)) < 0 || sscanf(cur, "%llu%c", &now, &end) < 1) {
		vlog("cannot read %s: the box's disk is not limited", path);
		return;
	}
	char val[32];
	snprintf(val, sizeof(val), "%llu", now + (unsigned long long)blocks);
	if (write_str(path, val) < 0)
		vlog("cannot reserve %llu blocks of the box's disk: it is not limited", (unsigned long long)blocks);
}

/* The box's disk as the new root, with the kernel filesystems moved (not re-mounted) into it.
 * The disk is a qcow2 overlay private to this box: writable, and nothing written reaches the
 * shared base image. */
static int mount_root(const char *root, uint64_t resv_blocks)
{
	char disk[64];
	snprintf(disk, sizeof(disk), "/dev/%s", root);
	/* commit=1: with short_writeback(), a kill of QEMU (a power cut for the guest) loses at
	 * most the last ~2 s of the box's writes, not ext4's default 5 s of metadata */
	/* noinit_itable: the inode tables of groups a grow adds stay uninitialised (flagged so,
	 * checksummed) instead of being zeroed behind the box's back into its overlay */
	int r = mount_one(disk, VMBOOT_NEWROOT, "ext4", MS_NOATIME, "commit=1,noinit_itable");
	if (r == 0) {
		if (grow_root(disk))
			reserve_root(root, resv_blocks);
	}
	static const char *const moved[] = {"/dev", "/proc", "/sys"};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(moved); i++) {
		char dst[64];
		snprintf(dst, sizeof(dst), "%s%s", VMBOOT_NEWROOT, moved[i]);
		r = mount_one(moved[i], dst, NULL, MS_MOVE, NULL);
	}
	const unsigned long nsd = MS_NOSUID | MS_NODEV;
	if (r == 0)
		r = mount_one("devpts", VMBOOT_NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
			      "newinstance,ptmxmode=0666,mode=0620,gid=5");
	if (r == 0)
		r = mount_one("tmpfs", VMBOOT_NEWROOT "/dev/shm", "tmpfs", nsd, "mode=1777");
	if (r == 0)
		r = mount_one("tmpfs", VMBOOT_NEWROOT "/run", "tmpfs", nsd, "mode=0755");
	if (r == 0)
		r = mount_one("tmpfs", VMBOOT_NEWROOT "/tmp", "tmpfs", nsd, "mode=1777");
	return r;
}

/* The end of stage 1's kernel settings: /sys (with the cgroup2 mount under it) and /proc/sys
 * become read-only for everything the box runs. Sessions run without capabilities, but sysfs,
 * cgroupfs and sysctl files are mostly checked by owner and mode only, so a `--user root`
 * session (uid 0) could otherwise write ext4's reserved clusters (--disk), its cgroup's
 * pids.max (--pids) or the guest's vm sysctls; with no CAP_SYS_ADMIN it cannot remount them
 * back. A bind of /proc/sys onto itself first: it is not a mount of its own. */
static int seal_kernel_settings(bool cgroup)
{
	int r = 0;
	if (cgroup) /* limit_pids mounted it */
		r = mount_one(NULL, "/sys/fs/cgroup", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			      NULL);
	if (r == 0)
		r = mount_one(NULL, "/sys", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (r == 0)
		r = mount_one("/proc/sys", "/proc/sys", NULL, MS_BIND, NULL);
	if (r == 0)
		r = mount_one(NULL, "/proc/sys", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			      NULL);
	return r;
}

/* The initramfs stays in memory under the new root: free what we put there. */
static void free_initramfs(void)
{
	char list[8192], path[PATH_MAX];
	if (read_small(VMBOOT_ORDER_FILE, list, sizeof(list)) == 0)
		for (char *save = NULL, *l = strtok_r(list, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			snprintf(path, sizeof(path), "%s/%s.ko", VMBOOT_MODULES_DIR, l);
			(void)unlink(path);
		}
	(void)unlink(VMBOOT_ORDER_FILE);
	(void)unlink("/init");
}

static int switch_root(void)
{
	free_initramfs();
	/* MS_MOVE of the new root onto / and chroot into it: the classic switch_root (initramfs
	 * cannot be pivot_root'ed away). */
	if (chdir(VMBOOT_NEWROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0) {
		int e = -errno;
		vlog("cannot switch to the box's root: %s", strerror(-e));
		return e;
	}
	if (access("/dev/ptmx", F_OK) < 0)
		(void)symlink("pts/ptmx", "/dev/ptmx");
	return 0;
}

static int if_up(int s, const char *name)
{
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(s, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static int network_up(bool net)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	(void)if_up(s, "lo");
	int r = net ? vnet_if_configure(s) : 0;
	if (r < 0)
		vlog("cannot configure %s: %s", VNET_BOX_IFNAME, strerror(-r));
	return r;
}

static int write_str(const char *path, const char *text)
{
	int r = write_file_str(path, text);
	if (r < 0)
		vlog("cannot write %s to %s: %s", text, path, strerror(-r));
	return r;
}

/* The guest's page cache is written back after 1 s instead of 30: the disk is the box's
 * state (kept across restarts and after a crash of QEMU), and what the guest has not written
 * back when QEMU dies is lost. Best effort: a kernel without these knobs still boots. */
static void short_writeback(void)
{
	(void)write_str("/proc/sys/vm/dirty_expire_centisecs", "100");
	(void)write_str("/proc/sys/vm/dirty_writeback_centisecs", "100");
}

/* --pids inside the guest: PID 1 moves into a pids cgroup of the guest's own cgroup2
 * hierarchy, so every session and everything they start counts against pids.max (root in the
 * guest included: RLIMIT_NPROC would not bind root). A fork bomb then stops at the limit
 * instead of filling the guest's memory. Fails the boot if asked for and not possible. */
static int limit_pids(unsigned pids)
{
	char n[32];
	if (!pids)
		return 0;
	int r = mount_one("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (r == 0)
		r = write_str("/sys/fs/cgroup/cgroup.subtree_control", "+pids");
	if (r == 0 && mkdir("/sys/fs/cgroup/box", 0755) < 0 && errno != EEXIST)
		r = -errno;
	snprintf(n, sizeof(n), "%u", pids);
	if (r == 0)
		r = write_str("/sys/fs/cgroup/box/pids.max", n);
	if (r == 0)
		r = write_str("/sys/fs/cgroup/box/cgroup.procs", "0");
	return r;
}

/* Replaces path (on the box's own disk) with a fresh file holding text. */
static int write_file(const char *path, const char *text, mode_t mode)
{
	(void)unlink(path);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		int e = errno ? -errno : -EIO;
		vlog("cannot write %s: %s", path, strerror(-e));
		return e;
	}
	return 0;
}

/* True if the id-file text (passwd, group) has an entry whose third field is id. */
static bool has_id(const char *text, unsigned id)
{
	char want[16];
	snprintf(want, sizeof(want), "%u", id);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *f = l;
		for (int i = 0; i < 2 && f; i++) {
			f = strchr(f, ':');
			f = f ? f + 1 : NULL;
		}
		size_t n = strlen(want);
		if (f && strncmp(f, want, n) == 0 && f[n] == ':')
			return true;
	}
	return false;
}

/* Appends line to path unless it has an entry with that id (an image made for another
 * system has no "agent"); the guest's own disk, so nothing here reaches the host. */
static void ensure_entry(const char *path, unsigned id, const char *line)
{
	char text[65536];
	if (read_small(path, text, sizeof(text)) == 0 && has_id(text, id))
		return;
	_cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		vlog("cannot add the agent to %s: %s", path, strerror(errno));
}

/* Images other than paddock's base know no agent user and have no /home/agent. */
static void ensure_agent(const struct vmboot_cmdline *c)
{
	char line[128];
	snprintf(line, sizeof(line), "agent:x:%u:%u:agent:/home/agent:/bin/sh\n", c->agent_uid, c->agent_gid);
	ensure_entry("/etc/passwd", c->agent_uid, line);
	snprintf(line, sizeof(line), "agent:x:%u:\n", c->agent_gid);
	ensure_entry("/etc/group", c->agent_gid, line);
	(void)mkdir("/home", 0755);
	if (mkdir("/home/agent", 0700) == 0 && chown("/home/agent", c->agent_uid, c->agent_gid) < 0)
		vlog("cannot give /home/agent to the agent: %s", strerror(errno));
}

/* What the box's root needs on every boot, whatever the image: the workspace directory
 * (owned by the agent, as in the ns backend) and a resolv.conf naming the supervisor's DNS
 * answerer when there is a network (none otherwise: names do not resolve). */
static int box_files(const struct vmboot_cmdline *c)
{
	ensure_agent(c);
	if (mkdir(VMBOOT_WORKSPACE, 0755) == 0) {
		if (chown(VMBOOT_WORKSPACE, c->agent_uid, c->agent_gid) < 0)
			return -errno;
	} else if (errno != EEXIST) {
		int e = -errno;
		vlog("cannot create %s: %s", VMBOOT_WORKSPACE, strerror(-e));
		return e;
	}
	return write_file("/etc/resolv.conf",
			  c->net ? "nameserver " VNET_DNS_STR "\noptions attempts:1 timeout:2\n"
				 : "# paddock: this box has no network\n",
			  0644);
}

static void set_contract(int ctl, const struct vmboot_cmdline *c)
{
	char v[32];
	snprintf(v, sizeof(v), "%d", ctl);
	setenv("PADDOCK_CTL_FD", v, 1);
	snprintf(v, sizeof(v), "%u", c->agent_uid);
	setenv("PADDOCK_AGENT_UID", v, 1);
	snprintf(v, sizeof(v), "%u", c->agent_gid);
	setenv("PADDOCK_AGENT_GID", v, 1);
	/* the guest kernel is the boundary: root inside the guest is the box's own root */
	setenv("PADDOCK_ROOT_OK", "1", 1);
	if (c->hostname[0]) {
		setenv("PADDOCK_HOSTNAME", c->hostname, 1);
		(void)sethostname(c->hostname, strlen(c->hostname));
	}
}

/* The host's entropy into the guest's pool, then a reseed of the CRNG from it: every box
 * restored from one template starts with the same pool, and after this each has its own.
 * RNDADDENTROPY credits the bytes (they come from the host's getrandom()). */
static int reseed(const uint8_t *seed)
{
	_Alignas(struct rand_pool_info) uint8_t raw[sizeof(struct rand_pool_info) + VMBOOT_SEED_BYTES];
	struct rand_pool_info *info = (struct rand_pool_info *)raw;
	info->entropy_count = VMBOOT_SEED_BYTES * 8;
	info->buf_size = VMBOOT_SEED_BYTES;
	memcpy(info->buf, seed, VMBOOT_SEED_BYTES);
	_cleanup_close_ int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	int r = fd >= 0 && ioctl(fd, RNDADDENTROPY, info) == 0 && ioctl(fd, RNDRESEEDCRNG) == 0 ? 0 : -errno;
	explicit_bzero(raw, sizeof(raw));
	return r;
}

/* One run of the image's /bin/sh before the park, as the agent: the shell, the dynamic loader
 * and libc are then in the page cache the template saves, so a restored box's first command
 * does not read them from its disk (under TCG: ~80 ms). Best effort. It is the image's own
 * shell, which every box of this image (this template serves no other) runs anyway. */
static void warm_page_cache(const struct vmboot_cmdline *c)
{
	pid_t pid = fork();
	if (pid == 0) {
		static char *const argv[] = {"sh", "-c", "true", NULL};
		static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
		if (setgroups(0, NULL) == 0 && setgid(c->agent_gid) == 0 && setuid(c->agent_uid) == 0)
			execve("/bin/sh", argv, envp);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

/* A template boot parks here, its stage 1 done and nothing of any box in it yet: the host
 * snapshots the guest while it waits, and every box restored from that snapshot wakes up in
 * this read, gets its hostname, the wall-clock time (the snapshot's is stale) and fresh
 * entropy, and goes on to greet its own supervisor. The frame comes from the supervisor that
 * restored the box (the guest's only peer), before any session exists. */
static int park_and_resume(int ctl, struct vmboot_cmdline *c)
{
	warm_page_cache(c);
	step("page cache warmed");
	struct proto_buf b = {0};
	proto_tlv_put_str(&b, PROTO_TAG_KV, VMBOOT_PARKED);
	int r = proto_send(ctl, PROTO_INFO, 0, 0, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
	if (r < 0)
		return r;
	step("parked");
	_cleanup_free_ uint8_t *buf = xmalloc(PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD);
	struct proto_frame f;
	struct vmboot_resume res;
	r = proto_recv(ctl, buf, &f);
	if (r < 0 || f.hdr.type != PROTO_INFO || f.hdr.stream != 0 || vmboot_parse_resume(f.payload, f.hdr.len, &res) < 0) {
		vlog("no valid resume frame from the host (%s)", r < 0 ? strerror(-r) : "malformed");
		return r < 0 ? r : -EBADMSG;
	}
	struct timespec ts = {.tv_sec = res.time_ns / 1000000000, .tv_nsec = res.time_ns % 1000000000};
	if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		vlog("cannot set the clock: %s", strerror(errno));
	r = reseed(res.seed);
	explicit_bzero(&res.seed, sizeof(res.seed));
	if (r < 0) {
		vlog("cannot reseed the random number generator: %s", strerror(-r));
		return r;
	}
	memcpy(c->hostname, res.hostname, sizeof(c->hostname));
	step("resumed");
	if (deferred_balloon >= 0) {
		r = module_load(deferred_balloon, "virtio_balloon");
		closep(&deferred_balloon);
		if (r < 0)
			return r;
		set_reporting_order();
		step("virtio_balloon");
	}
	return 0;
}

static _noreturn_ void probe_poweroff(void)
{
	static const char msg[] = VMBOOT_PROBE_MARKER "\n";
	ssize_t n = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	(void)tcdrain(STDOUT_FILENO); /* the marker must leave the UART before power-off */
	reboot(RB_POWER_OFF);
	_exit(1);
}

int vmboot(void)
{
	if (getpid() != 1)
		return -EPERM;
	atexit(poweroff_at_exit);
	char text[4096], port[PATH_MAX];
	struct vmboot_cmdline c;
	int r = mount_early();
	if (r == 0)
		r = read_small("/proc/cmdline", text, sizeof(text));
	if (r < 0)
		return r;
	vmboot_parse_cmdline(text, &c);
	debug = c.debug;
	step("started");
	if (c.probe)
		probe_poweroff();
	r = load_modules(c.net, c.template_boot);
	step("modules loaded");
	if (r == 0)
		r = wait_devices(c.root, c.net, port, sizeof(port));
	if (r < 0)
		return r;
	step("devices found");
	int ctl = open_port(port);
	if (ctl < 0)
		return ctl;
	r = mount_root(c.root, c.resv_blocks);
	if (r == 0)
		r = switch_root();
	if (r == 0)
		r = box_files(&c);
	if (r == 0)
		r = network_up(c.net);
	if (r == 0)
		short_writeback();
	if (r == 0)
		r = limit_pids(c.pids);
	/* a template's guest seals once resumed: the balloon driver it loads then has its
	 * reporting order set through /sys; no box code has run before either */
	if (r == 0 && c.template_boot)
		r = park_and_resume(ctl, &c);
	if (r == 0)
		r = seal_kernel_settings(c.pids != 0);
	if (r < 0) {
		close(ctl);
		return r;
	}
	set_contract(ctl, &c);
	step("root switched");
	return ctl;
}
