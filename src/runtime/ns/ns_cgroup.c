/* ns_cgroup.c — box cgroups on cgroup v2 (delegated or as root) with a v1 fallback. */
#include <fcntl.h>
#include <libgen.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>

#include "runtime/ns/ns_cgroup.h"
#include "util/fdio.h"
#include "util/log.h"

#define CG_PERIOD_US 100000u
#define CG_MIN_QUOTA_US 1000u
#define CG_BASE "/sys/fs/cgroup"

static const char *const ctrl_names[NS_CG_MAX] = {"memory", "pids", "cpu", "freezer"};

uint64_t ns_cgroup_cpu_quota(uint32_t cpus_milli)
{
	uint64_t q = (uint64_t)cpus_milli * CG_PERIOD_US / 1000u;
	return q < CG_MIN_QUOTA_US ? CG_MIN_QUOTA_US : q;
}

static void knob(struct ns_knob *k, size_t *n, enum ns_cg_ctrl c, const char *file, bool optional, uint64_t v)
{
	k[*n] = (struct ns_knob){.ctrl = c, .file = file, .optional = optional};
	snprintf(k[*n].value, sizeof(k[*n].value), "%llu", (unsigned long long)v);
	(*n)++;
}

size_t ns_cgroup_knobs(int version, const struct ns_limits *lim, struct ns_knob ret[NS_MAX_KNOBS])
{
	size_t n = 0;
	bool v2 = version == 2;
	knob(ret, &n, NS_CG_MEMORY, v2 ? "memory.max" : "memory.limit_in_bytes", false, lim->memory);
	/* no swap: a box must not push the host into swapping its memory out (optional: swap
	 * accounting may be off) */
	if (v2)
		knob(ret, &n, NS_CG_MEMORY, "memory.swap.max", true, 0);
	else
		knob(ret, &n, NS_CG_MEMORY, "memory.memsw.limit_in_bytes", true, lim->memory);
	knob(ret, &n, NS_CG_PIDS, "pids.max", false, lim->pids);
	if (lim->cpus_milli == 0)
		return n;
	uint64_t quota = ns_cgroup_cpu_quota(lim->cpus_milli);
	if (v2) {
		ret[n] = (struct ns_knob){.ctrl = NS_CG_CPU, .file = "cpu.max"};
		snprintf(ret[n].value, sizeof(ret[n].value), "%llu %u", (unsigned long long)quota, CG_PERIOD_US);
		n++;
	} else {
		knob(ret, &n, NS_CG_CPU, "cpu.cfs_period_us", false, CG_PERIOD_US);
		knob(ret, &n, NS_CG_CPU, "cpu.cfs_quota_us", false, quota);
	}
	return n;
}

void ns_cgroup_free(struct ns_cgroup *cg)
{
	if (!cg)
		return;
	for (int i = 0; i < NS_CG_MAX; i++)
		free(cg->dirs[i]);
	free(cg);
}

/* --- discovery -------------------------------------------------------------------------- */

static bool is_fs(const char *path, long magic)
{
	struct statfs s;
	return statfs(path, &s) == 0 && (long)s.f_type == magic;
}

/* The cgroup2 mount: /sys/fs/cgroup on unified hosts, /sys/fs/cgroup/unified on hybrid. */
static const char *v2_root(void)
{
	if (is_fs(CG_BASE, CGROUP2_SUPER_MAGIC))
		return CG_BASE;
	if (is_fs(CG_BASE "/unified", CGROUP2_SUPER_MAGIC))
		return CG_BASE "/unified";
	return NULL;
}

static unsigned need_mask(bool need_cpu)
{
	return (1u << NS_CG_MEMORY) | (1u << NS_CG_PIDS) | (need_cpu ? 1u << NS_CG_CPU : 0);
}

/* Controllers listed (space-separated) in dir/file, as a mask. */
static unsigned listed(const char *dir, const char *file)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file), *text = NULL;
	unsigned mask = 0;
	if (read_file_at(AT_FDCWD, path, 4096, &text, NULL) < 0)
		return 0;
	for (char *save = NULL, *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		for (int c = 0; c < NS_CG_MAX; c++)
			if (streq(w, ctrl_names[c]))
				mask |= 1u << c;
	return mask;
}

/* Enables the controllers in mask for dir's children (cgroup v2 subtree_control). */
static int enable_controllers(const char *dir, unsigned mask)
{
	_cleanup_free_ char *path = xasprintf("%s/cgroup.subtree_control", dir);
	unsigned have = listed(dir, "cgroup.subtree_control");
	for (int c = 0; c < NS_CG_MAX; c++) {
		if (!(mask & (1u << c)) || (have & (1u << c)))
			continue;
		char w[32];
		snprintf(w, sizeof(w), "+%s", ctrl_names[c]);
		int r = write_file_str(path, w);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool owned_writable(const char *dir, uid_t uid)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid && access(dir, W_OK) == 0;
}

/* The caller's cgroup v2 path ("/user.slice/..."), from /proc/self/cgroup. */
static char *own_v2_path(void)
{
	_cleanup_free_ char *text = NULL;
	if (read_file_at(AT_FDCWD, "/proc/self/cgroup", 65536, &text, NULL) < 0)
		return NULL;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (startswith(l, "0::/"))
			return xstrdup(l + 3);
	return NULL;
}

static struct ns_cgroup *cg_v2(char *dir)
{
	struct ns_cgroup *cg = xcalloc(1, sizeof(*cg));
	cg->version = 2;
	cg->dirs[0] = dir;
	return cg;
}

/* Host root: <v2>/paddock, with the controllers enabled in the root and in paddock. */
static struct ns_cgroup *v2_as_root(const char *root, unsigned need, bool prepare, char *why, size_t wn)
{
	_cleanup_free_ char *dir = xasprintf("%s/paddock", root);
	if ((listed(root, "cgroup.controllers") & need) != need) {
		snprintf(why, wn, "cgroup v2 at %s lacks memory/pids/cpu controllers", root);
		return NULL;
	}
	int r = 0;
	if (prepare && (r = enable_controllers(root, need)) == 0 && mkdir(dir, 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (prepare && r == 0)
		r = enable_controllers(dir, need);
	if (r < 0) {
		snprintf(why, wn, "cannot prepare %s: %s", dir, strerror(-r));
		return NULL;
	}
	return cg_v2(TAKE_PTR(dir));
}

/* Ordinary user, systemd-style delegation: the parent of our own cgroup belongs to us. */
static struct ns_cgroup *v2_delegated(const char *root, const char *own, unsigned need, bool prepare)
{
	if (!own || streq(own, "/"))
		return NULL;
	_cleanup_free_ char *copy = xstrdup(own);
	_cleanup_free_ char *dir = xasprintf("%s%s", root, dirname(copy));
	if (!owned_writable(dir, geteuid()) || (listed(dir, "cgroup.controllers") & need) != need)
		return NULL;
	if (prepare && enable_controllers(dir, need) < 0)
		return NULL;
	return cg_v2(TAKE_PTR(dir));
}

/* Ordinary user, root-made <v2>/paddock/<uid>: usable only from beneath it, because cgroup v2
 * lets a user move a process only within a subtree whose common ancestor it may write. */
static struct ns_cgroup *v2_paddock_user(const char *root, const char *own, unsigned need, char *why, size_t wn)
{
	_cleanup_free_ char *rel = xasprintf("/paddock/%u/", (unsigned)geteuid());
	_cleanup_free_ char *dir = xasprintf("%s/paddock/%u", root, (unsigned)geteuid());
	if (!owned_writable(dir, geteuid()))
		return NULL;
	if (!own || !startswith(own, rel) || (listed(dir, "cgroup.subtree_control") & need) != need) {
		snprintf(why, wn, "%s exists but cgroup v2 only lets you use it from a process already inside it", dir);
		return NULL;
	}
	return cg_v2(TAKE_PTR(dir));
}

/* True if the v1 hierarchy of controller c is mounted at /sys/fs/cgroup/<c>. */
static bool v1_mounted(enum ns_cg_ctrl c)
{
	_cleanup_free_ char *dir = xasprintf(CG_BASE "/%s", ctrl_names[c]);
	return is_fs(dir, CGROUP_SUPER_MAGIC);
}

/* v1: /sys/fs/cgroup/<c>/paddock (root, created) or .../paddock/<uid> (made by root for us). */
static char *v1_parent(enum ns_cg_ctrl c, bool prepare)
{
	_cleanup_free_ char *dir = xasprintf(CG_BASE "/%s/paddock", ctrl_names[c]);
	if (geteuid() == 0) {
		if (prepare && mkdir(dir, 0755) < 0 && errno != EEXIST)
			return NULL;
		return access(dir, W_OK) == 0 || !prepare ? TAKE_PTR(dir) : NULL;
	}
	char *udir = xasprintf("%s/%u", dir, (unsigned)geteuid());
	if (owned_writable(udir, geteuid()))
		return udir;
	free(udir);
	return NULL;
}

static struct ns_cgroup *v1(unsigned need, bool prepare, char *why, size_t wn)
{
	struct ns_cgroup *cg = xcalloc(1, sizeof(*cg));
	cg->version = 1;
	for (int c = 0; c < NS_CG_MAX; c++) {
		bool required = need & (1u << c);
		if (!required && c != NS_CG_FREEZER)
			continue;
		cg->dirs[c] = v1_mounted(c) ? v1_parent(c, prepare) : NULL;
		if (required && !cg->dirs[c]) {
			snprintf(why, wn, "cgroup v1 %s: %s", ctrl_names[c],
				 !v1_mounted(c) ? "not mounted" :
				 geteuid() == 0 ? "cannot create paddock/" : "no paddock/<uid> owned by you");
			ns_cgroup_free(cg);
			return NULL;
		}
	}
	return cg;
}

/* Finds (and with prepare, makes ready) the parent directories for box cgroups. */
static int locate(bool need_cpu, bool prepare, struct ns_cgroup **ret, pd_err *err)
{
	unsigned need = need_mask(need_cpu);
	const char *root = v2_root();
	_cleanup_free_ char *own = own_v2_path();
	char why2[256] = "no cgroup v2 mount", why1[256] = "";
	struct ns_cgroup *cg = NULL;
	if (root && geteuid() == 0)
		cg = v2_as_root(root, need, prepare, why2, sizeof(why2));
	else if (root) {
		snprintf(why2, sizeof(why2), "no delegated cgroup v2 subtree of yours (parent of %s)", own ? own : "?");
		cg = v2_delegated(root, own, need, prepare);
		if (!cg)
			cg = v2_paddock_user(root, own, need, why2, sizeof(why2));
	}
	if (!cg)
		cg = v1(need, prepare, why1, sizeof(why1));
	if (!cg)
		return pd_error_msg(err, EPERM, "no cgroup for the box's limits (%s; %s)", why2, why1);
	*ret = cg;
	return 0;
}

int ns_cgroup_locate(bool need_cpu, struct ns_cgroup **ret, pd_err *err)
{
	return locate(need_cpu, false, ret, err);
}

char *ns_cgroup_leaf(const char *name, const char *state_dir)
{
	if (!state_dir)
		return xstrdup(name);
	uint32_t h = 2166136261u; /* FNV-1a: a name, not a security boundary */
	for (const char *p = state_dir; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	struct stat st;
	uint64_t ino = stat(state_dir, &st) == 0 ? (uint64_t)st.st_ino : 0;
	for (int i = 0; i < 8; i++, ino >>= 8) /* little-endian bytes */
		h = (h ^ (uint8_t)ino) * 16777619u;
	return xasprintf("%s.%08x", name, h);
}

bool ns_cgroup_remove_stale(const char *name)
{
	struct ns_cgroup *cg = NULL;
	if (locate(true, false, &cg, NULL) < 0 && locate(false, false, &cg, NULL) < 0)
		return true;
	bool gone = true;
	/* rmdir only ever removes an empty cgroup: a box that still runs keeps its own */
	for (int i = 0; i < NS_CG_MAX; i++)
		if (cg->dirs[i]) {
			_cleanup_free_ char *dir = xasprintf("%s/box-%s", cg->dirs[i], name);
			if (rmdir(dir) < 0 && errno != ENOENT)
				gone = false;
		}
	ns_cgroup_free(cg);
	return gone;
}

/* --- one box cgroup --------------------------------------------------------------------- */

/* Makes parent/box-NAME; a stale empty one left by a crashed supervisor is replaced, a busy
 * one means the box is running. */
static int make_box_dir(const char *parent, const char *name, char **ret, pd_err *err)
{
	_cleanup_free_ char *dir = xasprintf("%s/box-%s", parent, name);
	if (mkdir(dir, 0755) < 0) {
		if (errno != EEXIST)
			return pd_error(err, errno, "cannot create cgroup %s", dir);
		if (rmdir(dir) < 0)
			return pd_error(err, errno, "cgroup %s exists and is in use (is box %s running?)", dir, name);
		if (mkdir(dir, 0755) < 0)
			return pd_error(err, errno, "cannot create cgroup %s", dir);
	}
	*ret = TAKE_PTR(dir);
	return 0;
}

static int write_knobs(const struct ns_cgroup *cg, const struct ns_limits *lim, pd_err *err)
{
	struct ns_knob k[NS_MAX_KNOBS];
	size_t n = ns_cgroup_knobs(cg->version, lim, k);
	for (size_t i = 0; i < n; i++) {
		const char *dir = cg->dirs[cg->version == 2 ? 0 : k[i].ctrl];
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, k[i].file);
		int r = write_file_str(path, k[i].value);
		if (r == -ENOENT && k[i].optional)
			continue;
		if (r < 0)
			return pd_error(err, r, "cannot set %s to %s", path, k[i].value);
	}
	return 0;
}

int ns_cgroup_create(const char *name, const struct ns_limits *lim, struct ns_cgroup **ret, pd_err *err)
{
	_cleanup_(ns_cgroup_freep) struct ns_cgroup *parent = NULL;
	int r = locate(lim->cpus_milli > 0, true, &parent, err);
	if (r < 0)
		return r;
	struct ns_cgroup *cg = xcalloc(1, sizeof(*cg));
	cg->version = parent->version;
	for (int c = 0; c < NS_CG_MAX && r == 0; c++)
		if (parent->dirs[c])
			r = make_box_dir(parent->dirs[c], name, &cg->dirs[c], err);
	if (r == 0)
		r = write_knobs(cg, lim, err);
	if (r < 0) {
		ns_cgroup_remove(cg);
		ns_cgroup_free(cg);
		return r;
	}
	pd_debug("ns: box cgroup v%d %s", cg->version, cg->dirs[0] ? cg->dirs[0] : cg->dirs[NS_CG_PIDS]);
	*ret = cg;
	return 0;
}

int ns_cgroup_attach(const struct ns_cgroup *cg, pid_t pid, pd_err *err)
{
	char num[16];
	snprintf(num, sizeof(num), "%d", (int)pid);
	for (int c = 0; c < NS_CG_MAX; c++) {
		if (!cg->dirs[c])
			continue;
		_cleanup_free_ char *path = xasprintf("%s/cgroup.procs", cg->dirs[c]);
		int r = write_file_str(path, num);
		if (r < 0)
			return pd_error(err, r, "cannot move the box into %s", path);
	}
	return 0;
}

_Static_assert(NS_CG_MAX == ARRAY_SIZE(((struct ns_plan *)0)->cg_join_fds), "one join fd per controller");

int ns_cgroup_open_join(const struct ns_cgroup *cg, int *ret_clone_fd, int ret_task_fds[NS_CG_MAX], pd_err *err)
{
	int fds[NS_CG_MAX];
	for (int c = 0; c < NS_CG_MAX; c++)
		fds[c] = -1;
	if (cg->version == 2) {
		int fd = open(cg->dirs[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return pd_error(err, errno, "cannot open cgroup %s", cg->dirs[0]);
		*ret_clone_fd = fd;
		memcpy(ret_task_fds, fds, sizeof(fds));
		return 0;
	}
	for (int c = 0; c < NS_CG_MAX; c++) {
		if (!cg->dirs[c])
			continue;
		_cleanup_free_ char *path = xasprintf("%s/tasks", cg->dirs[c]);
		fds[c] = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fds[c] < 0) {
			int e = errno;
			for (int k = 0; k <= c; k++)
				if (fds[k] >= 0)
					close(fds[k]);
			return pd_error(err, e, "cannot open %s", path);
		}
	}
	*ret_clone_fd = -1;
	memcpy(ret_task_fds, fds, sizeof(fds));
	return 0;
}

/* child: safe — the files are the box's own cgroups, opened by the supervisor (whose
 * credentials the kernel checks), and "0" moves nothing but this single-threaded process. */
int ns_cgroup_join_self(const struct ns_plan *p, struct ns_report *rep)
{
	for (int c = 0; c < NS_CG_MAX; c++) {
		if (p->cg_join_fds[c] < 0)
			continue;
		if (write(p->cg_join_fds[c], "0", 1) != 1)
			return ns_fail(rep, NS_LAYER_CGROUP, errno, "cannot join the box's %s cgroup", ctrl_names[c]);
	}
	return 0;
}

/* --- killing and removing --------------------------------------------------------------- */

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The pids in dir/cgroup.procs (at most 1 MiB of text); *ret is NULL when there are none. */
static size_t procs_read(const char *dir, pid_t **ret)
{
	_cleanup_free_ char *path = xasprintf("%s/cgroup.procs", dir), *text = NULL;
	size_t n = 0, cap = 0;
	*ret = NULL;
	if (read_file_at(AT_FDCWD, path, 1u << 20, &text, NULL) < 0)
		return 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long v = strtol(l, NULL, 10);
		if (v <= 0 || v > INT32_MAX)
			continue;
		if (n == cap)
			*ret = xrealloc(*ret, (cap = cap ? 2 * cap : 64) * sizeof(pid_t)); /* < 2^19 entries */
		(*ret)[n++] = (pid_t)v;
	}
	return n;
}

static size_t procs_relist(void *dir, pid_t **ret)
{
	return procs_read(dir, ret);
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* At most this many pidfds open at once: the supervisor's other fds keep their room. */
#define KILL_BATCH 256

size_t ns_cgroup_kill_pids(const pid_t *pids, size_t n, size_t (*relist)(void *ctx, pid_t **ret), void *ctx)
{
	for (size_t at = 0; at < n; at += KILL_BATCH) {
		size_t k = n - at < KILL_BATCH ? n - at : KILL_BATCH;
		int fds[KILL_BATCH];
		for (size_t i = 0; i < k; i++)
			fds[i] = (int)syscall(SYS_pidfd_open, pids[at + i], 0);
		/* A listed process may have exited, and its pid gone to a process outside the
		 * box, before its pidfd was opened. The list read after the opens settles it: a
		 * pidfd whose process is still alive when signalled held that pid through the
		 * second read, so a pid listed there is this very process, and it is in the box's
		 * cgroup. A process that has died since fails the signal (ESRCH); nothing else is
		 * ever signalled. */
		_cleanup_free_ pid_t *again = NULL;
		size_t m = relist(ctx, &again);
		if (m > 1)
			qsort(again, m, sizeof(pid_t), pid_cmp);
		for (size_t i = 0; i < k; i++) {
			if (fds[i] < 0)
				continue;
			if (m && bsearch(&pids[at + i], again, m, sizeof(pid_t), pid_cmp))
				syscall(SYS_pidfd_send_signal, fds[i], SIGKILL, NULL, 0);
			close(fds[i]);
		}
	}
	return n;
}

/* SIGKILLs each process listed in dir/cgroup.procs (ns_cgroup_kill_pids); returns how many
 * were listed. */
static int kill_listed(const char *dir)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = procs_read(dir, &pids);
	return (int)ns_cgroup_kill_pids(pids, n, procs_relist, (void *)dir);
}

/* Freezes the cgroup (so nothing forks or exits while we list it), kills, thaws; repeats
 * until empty. Without a freezer the pidfd makes each kill target the listed process. */
static void kill_loop(const char *dir, const char *freeze_file, const char *frozen, const char *thawed)
{
	for (int i = 0; i < 100; i++) {
		if (freeze_file && write_file_str(freeze_file, frozen) == 0)
			sleep_ms(1);
		int n = kill_listed(dir);
		if (freeze_file)
			write_file_str(freeze_file, thawed);
		if (n == 0)
			return;
		sleep_ms(5);
	}
}

void ns_cgroup_kill(const struct ns_cgroup *cg)
{
	if (!cg)
		return;
	if (cg->version == 2) {
		_cleanup_free_ char *k = xasprintf("%s/cgroup.kill", cg->dirs[0]);
		_cleanup_free_ char *fz = xasprintf("%s/cgroup.freeze", cg->dirs[0]);
		if (write_file_str(k, "1") == 0)
			return;
		kill_loop(cg->dirs[0], fz, "1", "0");
		return;
	}
	const char *dir = cg->dirs[NS_CG_MEMORY] ? cg->dirs[NS_CG_MEMORY] : cg->dirs[NS_CG_PIDS];
	_cleanup_free_ char *fz = cg->dirs[NS_CG_FREEZER] ? xasprintf("%s/freezer.state", cg->dirs[NS_CG_FREEZER]) : NULL;
	if (dir)
		kill_loop(dir, fz, "FROZEN", "THAWED");
}

int ns_cgroup_remove_now(const struct ns_cgroup *cg)
{
	int ret = 0;
	for (int c = 0; cg && c < NS_CG_MAX; c++)
		if (cg->dirs[c] && rmdir(cg->dirs[c]) < 0 && errno != ENOENT && ret == 0)
			ret = -errno;
	return ret;
}

int ns_cgroup_remove(const struct ns_cgroup *cg)
{
	int ret = 0;
	for (int c = 0; cg && c < NS_CG_MAX; c++) {
		if (!cg->dirs[c])
			continue;
		int r = -EBUSY;
		for (int i = 0; i < 200 && r == -EBUSY; i++) {
			r = rmdir(cg->dirs[c]) < 0 ? -errno : 0;
			if (r == -EBUSY)
				sleep_ms(10);
		}
		if (r < 0 && r != -ENOENT)
			ret = r;
	}
	return ret;
}

/* --- per-user delegation (root) --------------------------------------------------------- */

static int chown_files(const char *dir, uid_t uid, gid_t gid, const char *const *files)
{
	if (chown(dir, uid, gid) < 0)
		return -errno;
	for (; *files; files++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, *files);
		if (chown(p, uid, gid) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* Safe: the user gets only its own empty subtree below paddock/; the limits a box gets are
 * written by paddock into box-NAME below it, and a subtree cannot raise the ceiling of
 * memory/pids its ancestors impose. */
static int setup_user_v2(const char *root, uid_t uid, gid_t gid, pd_err *err)
{
	static const char *const files[] = {"cgroup.procs", "cgroup.subtree_control", "cgroup.threads", NULL};
	unsigned need = need_mask(true);
	char why[256];
	_cleanup_(ns_cgroup_freep) struct ns_cgroup *p = v2_as_root(root, need, true, why, sizeof(why));
	if (!p)
		return pd_error_msg(err, ENOTSUP, "%s", why);
	_cleanup_free_ char *dir = xasprintf("%s/%u", p->dirs[0], (unsigned)uid);
	int r = mkdir(dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
	if (r == 0)
		r = enable_controllers(dir, need);
	if (r == 0)
		r = chown_files(dir, uid, gid, files);
	return r < 0 ? pd_error(err, r, "cannot prepare %s", dir) : 0;
}

static int setup_user_v1(enum ns_cg_ctrl c, uid_t uid, gid_t gid, pd_err *err)
{
	static const char *const files[] = {"cgroup.procs", "tasks", NULL};
	_cleanup_free_ char *dir = xasprintf(CG_BASE "/%s/paddock/%u", ctrl_names[c], (unsigned)uid);
	int r = mkdir_p(dir, 0755);
	if (r == 0)
		r = chown_files(dir, uid, gid, files);
	return r < 0 ? pd_error(err, r, "cannot prepare %s", dir) : 0;
}

int ns_cgroup_setup_user(uid_t uid, gid_t gid, pd_err *err)
{
	if (geteuid() != 0)
		return pd_error_msg(err, EPERM, "cgroup delegation needs root (run it with sudo)");
	const char *root = v2_root();
	bool done = false;
	if (root && (listed(root, "cgroup.controllers") & need_mask(true)) == need_mask(true)) {
		int r = setup_user_v2(root, uid, gid, err);
		if (r < 0)
			return r;
		done = true;
	}
	for (int c = 0; c < NS_CG_MAX; c++) {
		if (!v1_mounted(c))
			continue;
		int r = setup_user_v1(c, uid, gid, err);
		if (r < 0)
			return r;
		done = true;
	}
	if (!done)
		return pd_error_msg(err, ENOTSUP, "neither cgroup v2 with memory/pids/cpu nor cgroup v1 hierarchies are available");
	return 0;
}
