/* vm.c — runtime_vm: start (kernel, initramfs, accelerator, overlay disk, QEMU), kill (QMP
 * quit, then SIGKILL) and cleanup. See vm.h. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "guest/blob.h"
#include "image/initramfs.h"
#include "image/kernel_cache.h"
#include "image/kernel_spawn.h"
#include "runtime/vm/ext4sb.h"
#include "runtime/vm/qemu_spawn.h"
#include "runtime/vm/thp_trim.h"
#include "runtime/vm/vm.h"
#include "runtime/vm/vm_console.h"
#include "runtime/vm/vm_probe.h"
#include "runtime/vm/vm_template.h"
#include "util/fdio.h"
#include "util/log.h"

#define VM_DEFAULT_MEMORY_MIB 1024
#define VM_DEFAULT_DISK (UINT64_C(2) << 30) /* what a box may write, as on ns; run --help says so */
#define VM_DEFAULT_PIDS 4096 /* the guest's pids cgroup (vmboot: limit_pids); run --help says so */
#define VM_QMP_QUIT_WAIT_MS 1000
#define VM_INIT_OVERRIDE_MAX (64u * 1024u * 1024u)
#define VM_NET_SOCKBUF (4 * 1024 * 1024) /* capped by net.core.wmem_max/rmem_max */

/* box_handle.priv */
struct vm_box {
	int qmp_fd;
	pthread_t console, qemu_log;
	bool console_running;
	enum vm_accel accel;
	bool fresh;
	bool restored;            /* from tpl, not booted */
	struct vm_template tpl;
	char reason[320];
	/* a template to make once this box has greeted (vm_box_booted): none for a
	 * configuration that never comes up */
	struct vm_template build;
	char **build_argv, *build_base;
	uint64_t build_size;
	bool build_net;
	/* QEMU's huge pages split now and then (thp_trim.h): when next, how often so far */
	uint64_t ram_bytes;
	int64_t trim_at_ms; /* 0: never */
	unsigned trims;
};

/* $PADDOCK_HOME of the box: the environment's, else the grandparent of cfg->state_dir
 * ($PADDOCK_HOME/boxes/NAME). */
static char *box_home(const struct box_config *cfg)
{
	const char *env = getenv("PADDOCK_HOME");
	if (env && env[0] == '/')
		return xstrdup(env);
	_cleanup_free_ char *s = xstrdup(cfg->state_dir);
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(s, '/');
		if (slash && slash != s)
			*slash = '\0';
	}
	return TAKE_PTR(s);
}

char *vm_cache_home(const char *home)
{
	const char *env = getenv("PADDOCK_VM_CACHE_HOME");
	return xstrdup(env && env[0] == '/' ? env : home);
}

char *vm_home(const struct box_config *cfg)
{
	_cleanup_free_ char *home = box_home(cfg);
	return vm_cache_home(home);
}

bool vm_base_image_named(void)
{
	const char *env = getenv("PADDOCK_VM_IMAGE");
	return env && env[0] == '/';
}

char *vm_base_image(const char *home)
{
	return vm_base_image_named() ? xstrdup(getenv("PADDOCK_VM_IMAGE"))
				     : xasprintf("%s/cache/vm-rootfs/rootfs.img", home);
}

enum vm_accel_mode vm_accel_mode_from_env(void)
{
	enum vm_accel_mode m;
	return vm_accel_mode_parse(getenv("PADDOCK_VM_ACCEL"), &m) == 0 ? m : VM_ACCEL_MODE_AUTO;
}

/* The box's --accel, else the environment's */
static enum vm_accel_mode accel_mode(const struct box_config *cfg)
{
	enum vm_accel_mode m;
	return cfg->vm_accel && vm_accel_mode_parse(cfg->vm_accel, &m) == 0 ? m : vm_accel_mode_from_env();
}

enum vm_accel vm_box_accel(const struct box_handle *h)
{
	const struct vm_box *b = h->priv;
	return b ? b->accel : VM_ACCEL_INVALID;
}

bool vm_box_accel_fresh(const struct box_handle *h)
{
	const struct vm_box *b = h->priv;
	return b && b->fresh;
}

const char *vm_box_accel_reason(const struct box_handle *h)
{
	const struct vm_box *b = h->priv;
	return b ? b->reason : "";
}

bool vm_box_restored(const struct box_handle *h)
{
	const struct vm_box *b = h->priv;
	return b && b->restored;
}

void vm_box_reject_template(const struct box_handle *h)
{
	const struct vm_box *b = h->priv;
	if (b && b->restored)
		vm_template_reject(&b->tpl);
}

/* Everything one start owns until it succeeds or is undone. */
struct start_ctx {
	const struct box_config *cfg;
	char *home;
	struct kernel_cache kernel;
	char *initrd;
	char *qemu;
	char *init_override;
	struct vm_boot_files files;
	struct vm_accel_choice accel;
	char *disk;
	char *base;
	uint64_t disk_size;   /* the overlay's size: the base's and --disk's (vm_disk_plan), 0 = the base's */
	uint64_t resv_blocks; /* the base's free blocks, kept from the box (paddock.resv=) */
	int ctl[2], qmp[2], con[2], net[2];
	int log[2]; /* QEMU's stdout and stderr, copied into the capped qemu.log */
	/* templates (vm_template.h): a fresh box is restored from tpl when it is ready (state_fd
	 * open), else boots cold and has one built for the next box */
	bool use_template, restore;
	struct vm_template tpl;
	int state_fd;
};

static void start_ctx_done(struct start_ctx *c)
{
	free(c->home);
	kernel_cache_done(&c->kernel);
	free(c->initrd);
	free(c->qemu);
	free(c->init_override);
	free(c->disk);
	free(c->base);
	vm_template_done(&c->tpl);
	closep(&c->state_fd);
	for (int i = 0; i < 2; i++) {
		closep(&c->ctl[i]);
		closep(&c->qmp[i]);
		closep(&c->net[i]);
		closep(&c->con[i]);
		closep(&c->log[i]);
	}
}

static int validate(const struct box_config *cfg, pd_err *err)
{
	if (!cfg->state_dir || cfg->state_dir[0] != '/')
		return pd_error_msg(err, EINVAL, "vm: the box needs an absolute state directory");
	/* No host path is ever shared into a guest (no 9p, no virtiofs): the workspace travels by
	 * copy over the control channel. Refuse rather than silently drop a bind. */
	if (cfg->n_binds > 0)
		return pd_error_msg(err, EINVAL, "vm backend shares no host directory (%zu bind(s) asked, first %s); "
				    "use the workspace copy mode", cfg->n_binds, cfg->binds[0].host);
	return 0;
}

/* $PADDOCK_HOME/cache/initramfs (the box's own home, not the shared cache home). */
static char *private_cache_dir(const struct box_config *cfg)
{
	_cleanup_free_ char *h = box_home(cfg);
	return xasprintf("%s/cache/initramfs", h);
}

/* paddock-init's bytes: the embedded blob; tests (PADDOCK_TESTING=1) may name another build
 * of it in $PADDOCK_VM_INIT. */
static int init_bytes(struct start_ctx *c, const uint8_t **ret, size_t *ret_len, pd_err *err)
{
	const char *path = getenv("PADDOCK_VM_INIT");
	const char *testing = getenv("PADDOCK_TESTING");
	if (path && testing && streq(testing, "1")) {
		int r = read_file_at(AT_FDCWD, path, VM_INIT_OVERRIDE_MAX, &c->init_override, ret_len);
		if (r < 0)
			return pd_error(err, r, "cannot read PADDOCK_VM_INIT %s", path);
		*ret = (const uint8_t *)c->init_override;
		return 0;
	}
	*ret = guest_init_data(ret_len);
	return 0;
}

static int prepare_boot(struct start_ctx *c, pd_err *err)
{
	c->home = vm_home(c->cfg);
	int r = kernel_cache_ensure(c->home, &c->kernel, err);
	if (r < 0)
		return pd_err_prefix(err, "guest kernel");
	const uint8_t *init = NULL;
	size_t init_len = 0;
	r = init_bytes(c, &init, &init_len, err);
	if (r == 0) {
		/* a shared cache (PADDOCK_VM_CACHE_HOME) may be read-only to this user: then the
		 * archive for this paddock-init goes to the user's own cache */
		_cleanup_free_ char *own = private_cache_dir(c->cfg);
		r = initramfs_ensure(&c->kernel, own, init, init_len, &c->initrd, err);
	}
	if (r == 0)
		r = qemu_find_binary("qemu-system-x86_64", &c->qemu, err);
	if (r < 0)
		return r;
	c->files = (struct vm_boot_files){.home = c->home, .qemu = c->qemu, .kernel = c->kernel.boot_path,
					  .initrd = c->initrd, .kernel_digest = c->kernel.digest};
	r = vm_accel_choose(accel_mode(c->cfg), &c->files, &c->accel, err);
	if (r < 0)
		return r;
	if (c->accel.accel == VM_ACCEL_TCG)
		c->files.tsc_khz = vm_host_tsc_khz(c->home);
	pd_debug("vm %s: accelerator %s", c->cfg->name, c->accel.reason);
	return 0;
}

/* The virtual size of a qcow2 file QEMU made (its header: magic "QFI\xfb", big-endian size at 24). */
static int qcow2_size(const char *path, uint64_t *ret)
{
	uint8_t h[32];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h, "QFI\xfb", 4) != 0)
		return -EINVAL;
	uint64_t v = 0;
	for (int i = 24; i < 32; i++)
		v = v << 8 | h[i];
	*ret = v;
	return 0;
}

int vm_disk_plan(const char *base, uint64_t want, uint64_t *ret_size, uint64_t *ret_resv_blocks)
{
	struct stat st;
	struct ext4sb sb;
	*ret_size = 0, *ret_resv_blocks = 0;
	if (stat(base, &st) < 0)
		return -errno;
	int r = ext4sb_read(base, &sb);
	if (r < 0)
		return r;
	want = want ? want : VM_DEFAULT_DISK;
	if (want > VM_MAX_DISK)
		return -EFBIG;
	/* whole MiB: qcow2 and ext4 like round sizes */
	uint64_t mib = UINT64_C(1) << 20;
	/* the growth also carries ext4's own share, so that what the box can write is want: the
	 * new groups' inode tables and bitmaps (~1/64 at mkfs's defaults) and the default pool of
	 * reserved clusters (16 MiB at most), which the box cannot use either */
	uint64_t grow = want + want / 64 + (UINT64_C(16) << 20);
	*ret_size = ((uint64_t)st.st_size + grow + mib - 1) & ~(mib - 1);
	*ret_resv_blocks = sb.free_blocks;
	return 0;
}

/* The box's disk: a qcow2 overlay over the shared base image. QEMU opens the backing file
 * read-only, so nothing the guest does (as root, to its whole disk) reaches the base or any
 * other box (Kata CVE-2020-2025). Kept across restarts: it is the box's state. */
static int prepare_disk(struct start_ctx *c, pd_err *err)
{
	if (c->restore) {
		/* the template's overlay as it was when the guest parked: what the restored guest's
		 * page cache and mounted ext4 expect to find */
		pd_err terr = {0};
		if (vm_template_take(&c->tpl, c->disk, &c->state_fd, &terr) == 0)
			return 0;
		pd_debug("vm %s: template %s unusable (%s); booting", c->cfg->name, c->tpl.key, terr.msg);
		c->restore = false;
	}
	if (access(c->disk, F_OK) == 0)
		return 0;
	const char *base = c->base;
	if (access(base, R_OK) < 0)
		return pd_error(err, errno, c->cfg->disk_image ? "the image's vm disk %s" : "vm base image %s",
				base);
	_cleanup_free_ char *tmp = xasprintf("%s/disk.qcow2.tmp", c->cfg->state_dir);
	int r = vm_overlay_create(base, tmp, c->disk_size, err);
	if (r < 0)
		return pd_err_prefix(err, "cannot create the box's disk");
	if (rename(tmp, c->disk) < 0)
		return pd_error(err, errno, "cannot rename %s", tmp);
	return 0;
}

/* Tests (PADDOCK_TESTING=1 only, see box_config.test_fail_layer) make a layer fail to prove
 * that a box which cannot get it does not start. */
static bool injected(const struct box_config *cfg, const char *layer)
{
	const char *l = cfg->test_fail_layer;
	size_t n = strlen(layer);
	for (; l && *l; l += strcspn(l, ","), l += *l == ',')
		if (strncmp(l, layer, n) == 0 && (l[n] == ',' || l[n] == '\0'))
			return true;
	return false;
}

static int prepare_channels(struct start_ctx *c, pd_err *err)
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->ctl) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->qmp) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->con) < 0)
		return pd_error(err, errno, "cannot create the control sockets");
	/* The box's network interface: QEMU's virtio-net backend on one end, the supervisor's
	 * network stack on the other, one Ethernet frame per datagram (as a TAP fd reads and
	 * writes). A socketpair is not subject to net.unix.max_dgram_qlen (that limit only
	 * applies to senders the receiver is not connected to); the send buffer is raised so
	 * that a burst from the stack to the guest is queued rather than dropped. */
	if (c->cfg->network) {
		if (injected(c->cfg, "network"))
			return pd_error_msg(err, EPERM, "network layer: cannot create the guest's NIC (injected failure)");
		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, c->net) < 0)
			return pd_error(err, errno, "cannot create the network socket");
		int buf = VM_NET_SOCKBUF;
		for (int i = 0; i < 2; i++) {
			(void)setsockopt(c->net[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
			(void)setsockopt(c->net[i], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
		}
	}
	/* QEMU's output through a pipe, not straight into a file: a guest can make QEMU print
	 * without end (its complaints about the guest's devices), and a thread of the supervisor
	 * bounds what reaches the host's disk (vm_qemu_log_start). When it falls behind, QEMU
	 * blocks on the pipe: the guest waits, the host buffers nothing. */
	if (pipe2(c->log, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create the pipe for QEMU's output");
	return 0;
}

/* No --cpus: two vCPUs under KVM (if the host has them); one under TCG, where a second
 * vCPU makes boots slower, not faster. */
static unsigned default_cpus(enum vm_accel a)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return a == VM_ACCEL_KVM && n >= 2 ? 2 : 1;
}

static void fill_qemu_config(const struct start_ctx *c, struct qemu_config *q)
{
	const struct box_config *cfg = c->cfg;
	qemu_config_init(q);
	q->binary = c->qemu;
	q->name = cfg->name;
	q->accel = c->accel.accel;
	q->memory_mib = cfg->memory ? (cfg->memory + (1u << 20) - 1) >> 20 : VM_DEFAULT_MEMORY_MIB;
	q->cpus = cfg->cpus_milli ? (cfg->cpus_milli + 999) / 1000 : default_cpus(q->accel);
	q->pids = cfg->pids ? cfg->pids : VM_DEFAULT_PIDS;
	q->disk_resv_blocks = c->resv_blocks;
	q->kernel = c->kernel.boot_path;
	q->initrd = c->initrd;
	q->tsc_khz = c->files.tsc_khz;
	q->root_disk = c->disk;
	q->ctl_fd = 3;
	q->qmp_fd = 4;
	q->console_fd = 5; /* copied into the capped console.log by vm_console_start */
	q->net_fd = cfg->network ? 6 : -1;
	q->verbose = pd_debug_enabled;
	/* under TCG the guest's user space runs at fixed addresses unless the box asked for
	 * ASLR (qemu_kernel_cmdline says why that is safe and what it buys) */
	q->guest_aslr = q->accel == VM_ACCEL_KVM || cfg->vm_guest_aslr;
}

/* QEMU's argv for the template of this box's configuration, with disk as its disk. */
static int template_argv(const struct start_ctx *c, const char *disk, char ***ret, pd_err *err)
{
	struct qemu_config q;
	fill_qemu_config(c, &q);
	q.name = NULL;
	q.template_boot = true;
	q.root_disk = disk;
	return qemu_argv_build(&q, ret, err);
}

/* Which template a fresh box would come from, and whether it is ready (vm_template.h). Only a
 * box without a disk yet: a stopped box's disk is its own state, it boots. */
static int plan_template(struct start_ctx *c, pd_err *err)
{
	c->disk = xasprintf("%s/disk.qcow2", c->cfg->state_dir);
	/* an image's own disk (made by the CLI from its tree, image/vmdisk.h), else the default */
	c->base = c->cfg->disk_image ? xstrdup(c->cfg->disk_image) : vm_base_image(c->home);
	int dr = vm_disk_plan(c->base, c->cfg->disk, &c->disk_size, &c->resv_blocks);
	/* a --disk the user asked for is a limit: no box without it (without one, the default's
	 * size is a convenience and the box runs on the image's own) */
	if (dr < 0 && c->cfg->disk)
		return pd_error(err, -dr, "--disk: cannot size the box's disk over %s", c->base);
	if (dr < 0)
		pd_debug("vm %s: no disk size for %s (%s): the box's disk is the image's", c->cfg->name, c->base,
			 strerror(-dr));
	/* a disk the box has already (a restart) keeps its size; one made by an older paddock at
	 * the image's size has nothing to hold back: the box's files are in the image's space */
	uint64_t have = 0;
	if (access(c->disk, F_OK) == 0 && (qcow2_size(c->disk, &have) < 0 || have < c->disk_size)) {
		pd_debug("vm %s: the box's disk predates --disk (%llu bytes): not limited", c->cfg->name,
			 (unsigned long long)have);
		c->resv_blocks = 0;
	}
	if (!vm_template_enabled() || c->cfg->vm_cold || access(c->disk, F_OK) == 0)
		return 0;
	_cleanup_strv_ char **argv = NULL;
	int r = template_argv(c, "@disk", &argv, err);
	if (r < 0)
		return r;
	const char *files[] = {c->qemu, c->kernel.boot_path, c->initrd, c->base};
	_cleanup_free_ char *files_id = vm_template_identity(files, ARRAY_SIZE(files));
	/* a grown disk is another guest: its template is grown at its boot */
	_cleanup_free_ char *id = xasprintf("%sdisk-size %llu\n", files_id, (unsigned long long)c->disk_size);
	_cleanup_free_ char *key = vm_template_key(argv, id);
	_cleanup_free_ char *own = box_home(c->cfg);
	_cleanup_free_ char *dir = vm_template_dir(c->home, own);
	vm_template_init(&c->tpl, dir, key);
	c->use_template = true;
	c->restore = vm_template_ready(&c->tpl);
	pd_debug("vm %s: template %s %s", c->cfg->name, key, c->restore ? "ready: restoring" : "not made yet: booting");
	return 0;
}

/* The builder's argv for this configuration, kept in the box until it has greeted. */
static void build_template_later(struct start_ctx *c, struct vm_box *b)
{
	_cleanup_free_ char *disk = xasprintf("%s.tmp", c->tpl.disk);
	if (template_argv(c, disk, &b->build_argv, NULL) < 0)
		return;
	b->build = c->tpl, c->tpl = (struct vm_template){0};
	b->build_base = xstrdup(c->base);
	b->build_size = c->disk_size;
	b->build_net = c->cfg->network;
}

void vm_box_booted(struct box_handle *h)
{
	struct vm_box *b = h->priv;
	if (!b || !b->build_argv)
		return;
	vm_template_build_async(&b->build, b->build_argv, b->build_base, b->build_size, b->build_net);
	strv_free(TAKE_PTR(b->build_argv));
}

/* The first trim of QEMU's huge pages comes once a restored guest has resumed, loaded its
 * balloon driver and reported its free memory (2 s after it is freed); two more follow while a
 * new box settles, then one a minute for what the guest's own work made huge since (a walk of
 * the page tables: ~7 ms for 512 MiB, in the supervisor's loop). */
#define VM_TRIM_FIRST_MS 3000
#define VM_TRIM_SETTLE_MS 5000
#define VM_TRIM_EVERY_MS 60000

void vm_box_tick(struct box_handle *h, int64_t now_ms)
{
	struct vm_box *b = h->priv;
	if (!b || !b->trim_at_ms || now_ms < b->trim_at_ms)
		return;
	int64_t t0 = mono_ms(), r = thp_trim(h->pidfd, h->pid, b->ram_bytes);
	if (r < 0) {
		/* QEMU gone (the loop sees its pidfd next) or a kernel that refuses: no more tries */
		pd_debug("qemu: huge pages not split: %s", strerror((int)-r));
		b->trim_at_ms = 0;
		return;
	}
	b->trims++;
	pd_debug("qemu: huge pages split over %lld MiB of guest RAM in %lld ms", (long long)(r >> 20),
		 (long long)(mono_ms() - t0));
	b->trim_at_ms = now_ms + (b->trims < 3 ? VM_TRIM_SETTLE_MS : VM_TRIM_EVERY_MS);
}

static int spawn(struct start_ctx *c, struct box_handle *ret, pd_err *err)
{
	struct qemu_config q;
	fill_qemu_config(c, &q);
	size_t n_fds = c->cfg->network ? 4 : 3;
	struct qemu_fd fds[] = {{c->ctl[1], 3}, {c->qmp[1], 4}, {c->con[1], 5}, {c->net[1], 6}, {-1, -1}};
	if (c->restore) {
		q.template_boot = true;
		q.incoming_fd = 3 + (int)n_fds;
		fds[n_fds++] = (struct qemu_fd){c->state_fd, q.incoming_fd};
	}
	_cleanup_strv_ char **argv = NULL;
	int r = qemu_argv_build(&q, &argv, err);
	if (r < 0)
		return r;
	struct vm_box *b = xcalloc(1, sizeof(*b));
	r = vm_console_start(TAKE_FD(c->con[0]), c->cfg->state_dir, &b->console, err);
	if (r < 0) {
		free(b);
		return r;
	}
	r = vm_qemu_log_start(TAKE_FD(c->log[0]), c->cfg->state_dir, &b->qemu_log, err);
	if (r < 0) {
		closep(&c->con[1]); /* EOF for the console thread */
		c->con[1] = -1;
		vm_console_join(b->console);
		free(b);
		return r;
	}
	pid_t pid;
	int pidfd;
	r = qemu_spawn(argv, fds, n_fds, c->log[1], &pid, &pidfd, err);
	/* the restored guest's first read in its park: its name, the clock, fresh entropy */
	if (r == 0 && c->restore && (r = vm_template_resume(c->ctl[0], c->cfg->name, err)) < 0) {
		qemu_kill(pid, pidfd);
		(void)qemu_wait(pid, pidfd, 10000, &(int){0});
		closep(&pidfd);
	}
	if (r < 0) {
		closep(&c->con[1]); /* EOF for the console and log threads */
		closep(&c->log[1]);
		c->con[1] = c->log[1] = -1;
		vm_console_join(b->console);
		vm_console_join(b->qemu_log);
		free(b);
		return r;
	}
	b->restored = c->restore;
	b->ram_bytes = (uint64_t)q.memory_mib << 20;
	if (qemu_want_thp() && thp_trim_possible())
		b->trim_at_ms = mono_ms() + VM_TRIM_FIRST_MS;
	if (c->restore)
		b->tpl = c->tpl, c->tpl = (struct vm_template){0};
	b->console_running = true;
	b->qmp_fd = TAKE_FD(c->qmp[0]);
	b->accel = c->accel.accel;
	b->fresh = c->accel.fresh;
	snprintf(b->reason, sizeof(b->reason), "%s", c->accel.reason);
	*ret = (struct box_handle){.pid = pid, .pidfd = pidfd, .ctl_fd = TAKE_FD(c->ctl[0]),
				   .net_fd = c->cfg->network ? TAKE_FD(c->net[0]) : -1, .priv = b};
	return 0;
}

static int vm_start(const struct box_config *cfg, struct box_handle *ret, pd_err *err)
{
	struct start_ctx c = {.cfg = cfg, .ctl = {-1, -1}, .qmp = {-1, -1}, .con = {-1, -1}, .net = {-1, -1},
			      .log = {-1, -1}, .state_fd = -1};
	int r = validate(cfg, err);
	if (r == 0)
		r = prepare_boot(&c, err);
	if (r == 0)
		r = plan_template(&c, err);
	if (r == 0)
		r = prepare_disk(&c, err);
	if (r == 0)
		r = prepare_channels(&c, err);
	if (r == 0)
		r = spawn(&c, ret, err);
	/* no template for this configuration yet: the next fresh box gets one, made once this
	 * box has come up (a configuration that never boots gets no builder) */
	if (r == 0 && c.use_template && !c.restore)
		build_template_later(&c, ret->priv);
	/* QEMU's ends of the sockets close here: if QEMU dies, the supervisor sees EOF */
	start_ctx_done(&c);
	return r;
}

/* QMP "quit" ends QEMU at once (no guest shutdown: the graceful path is STOP through
 * paddock-init, before this). The commands are fixed strings; QEMU's replies are not read
 * (QEMU is on the far side of the boundary once a guest could have escaped into it). */
static void qmp_quit(int fd)
{
	static const char cmds[] = "{\"execute\":\"qmp_capabilities\"}\n{\"execute\":\"quit\"}\n";
	/* never blocks, never raises SIGPIPE when QEMU is already gone */
	(void)send(fd, cmds, sizeof(cmds) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Does not reap: the supervisor waits for and reaps QEMU through pid/pidfd. */
static void vm_kill(struct box_handle *h)
{
	struct vm_box *b = h->priv;
	if (b && b->qmp_fd >= 0 && h->pidfd >= 0) {
		qmp_quit(b->qmp_fd);
		struct pollfd p = {.fd = h->pidfd, .events = POLLIN};
		if (poll(&p, 1, VM_QMP_QUIT_WAIT_MS) > 0)
			return;
	}
	qemu_kill(h->pid, h->pidfd);
}

static void vm_cleanup(struct box_handle *h)
{
	struct vm_box *b = h->priv;
	if (b) {
		closep(&b->qmp_fd);
		/* QEMU has exited: its ends of the console socket and of its output pipe are
		 * closed, the copies end at EOF */
		if (b->console_running) {
			vm_console_join(b->console);
			vm_console_join(b->qemu_log);
		}
		vm_template_done(&b->tpl);
		vm_template_done(&b->build);
		strv_free(b->build_argv);
		free(b->build_base);
		free(b);
		h->priv = NULL;
	}
	closep(&h->pidfd);
	h->pidfd = -1;
	if (h->net_fd >= 0)
		closep(&h->net_fd);
}

/* ---- doctor -------------------------------------------------------------------------- */

static char *doctor_accel(const char *home, const char *qemu, const struct kernel_cache *k)
{
	struct vm_kvm_facts f;
	vm_kvm_check(&f);
	struct vm_boot_files b = {.home = home, .qemu = qemu, .kernel_digest = k->digest};
	if (k->digest && vm_accel_cached(&b, &f.probe_ok, f.probe_reason, sizeof(f.probe_reason)) == 0)
		f.probed = f.probe_cached = true;
	struct vm_accel_choice c;
	vm_accel_decide(vm_accel_mode_from_env(), &f, &c);
	if (c.need_probe)
		return xstrdup("info accelerator: /dev/kvm looks usable; a probe boot on the first vm start decides");
	/* what TCG changes in the guest is said where the choice is (qemu_kernel_cmdline) */
	return xasprintf("%s accelerator %s%s", c.accel == VM_ACCEL_INVALID ? "missing" : "ok", c.reason,
			 c.accel == VM_ACCEL_TCG ? "; under TCG a guest's user space has no ASLR unless --guest-aslr" : "");
}

char **vm_doctor(const char *home)
{
	char **v = xcalloc(1, sizeof(char *));
	_cleanup_free_ char *qemu = NULL, *img = vm_base_image(home);
	struct kernel_cache k = {0};
	pd_err err = {0};
	bool have_qemu = qemu_find_binary("qemu-system-x86_64", &qemu, &err) == 0;
	_cleanup_free_ char *ql = have_qemu ? xasprintf("ok %s", qemu) : xasprintf("missing %s", err.msg);
	v = strv_append(v, ql);
	if (kernel_cache_load(home, &k, &err) == 0) {
		_cleanup_free_ char *l = xasprintf("ok guest kernel %s (%s)", k.release, k.pvh ? "PVH ELF" : "bzImage");
		v = strv_append(v, l);
	} else {
		_cleanup_free_ char *l = xasprintf("missing %s", err.msg);
		v = strv_append(v, l);
	}
	/* without a base disk of the host's own a box gets paddock's vm-base image (cli/vmbase.c),
	 * built on first use; one named by $PADDOCK_VM_IMAGE must be there */
	_cleanup_free_ char *il = access(img, R_OK) == 0 ? xasprintf("ok base image %s", img)
				  : vm_base_image_named() ? xasprintf("missing base image %s ($PADDOCK_VM_IMAGE)", img)
							  : xasprintf("ok base image: paddock's vm-base image (built on first use; none at %s)", img);
	v = strv_append(v, il);
	if (have_qemu) {
		_cleanup_free_ char *al = doctor_accel(home, qemu, &k);
		v = strv_append(v, al);
	}
	_cleanup_free_ char *tl = vm_template_doctor(home), *hl = qemu_thp_doctor();
	v = strv_append(v, tl);
	v = strv_append(v, hl);
	kernel_cache_done(&k);
	return v;
}

const struct runtime_ops runtime_vm = {
	.name = "vm",
	.start = vm_start,
	.kill = vm_kill,
	.cleanup = vm_cleanup,
};
