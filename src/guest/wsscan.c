/* wsscan.c — paddock-init's ws-scan built-in: the box's side of `paddock diff`/`apply`.
 *
 *     paddock-init:ws-scan --freeze|--no-freeze ROOT
 *
 * Started like any exec session (argv[0] WSSCAN_BUILTIN is recognised by the session child
 * before it would exec), so it reaches the host over the control protocol on every backend.
 * With --freeze it first pauses every other process of the box (SIGSTOP, see freeze()), then
 * walks ROOT without following a symlink and writes one wsscan record per entry to stdout,
 * then the END record, then holds the box paused until its stdin reaches EOF (or it gets
 * SIGHUP/SIGTERM/SIGINT: the host went away), resumes exactly the processes it stopped, and
 * exits 0. The host meanwhile fetches the changed entries through a second session, which
 * starts after the freeze and so is not paused. Exit 3: the box could not be paused.
 *
 * Why SIGSTOP and not the cgroup freezer: this process and PID 1, which carry the scan and
 * the fetch to the host, live in the box's cgroup (ns) or in the guest (vm); freezing the
 * cgroup or stopping QEMU would freeze the readers with the writers.
 *
 * Everything here runs in the box with PID 1's credentials (it must signal every process of
 * the box); it only reads metadata, never writes a file, and its output is hostile input to
 * the host, which parses it defensively (src/workspace/ws_boxscan.c). */
#include <fcntl.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <time.h>

#include "guest/wsscan.h"
#include "proto/wsscan.h"
#include "util/fdio.h"

#define SCAN_MAX_DEPTH 256
#define FREEZE_ROUNDS 200
#define PF_KTHREAD_FLAG 0x00200000u

struct out {
	uint8_t buf[256 * 1024];
	size_t len;
	uint64_t count;
	int err;
};

static void out_flush(struct out *o)
{
	if (o->len && !o->err)
		o->err = fd_write_all(STDOUT_FILENO, o->buf, o->len);
	o->len = 0;
}

static void out_rec(struct out *o, const struct wsscan_rec *r)
{
	if (o->len + WSSCAN_HDR + 2 * WSSCAN_MAX_PATH > sizeof(o->buf))
		out_flush(o);
	size_t n = wsscan_encode(o->buf + o->len, sizeof(o->buf) - o->len, r);
	o->len += n;
	o->count += n > 0;
}

/* --- freezing ------------------------------------------------------------------------- */

struct pids {
	pid_t *v;
	size_t n, cap;
};

static bool pids_has(const struct pids *p, pid_t pid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i] == pid)
			return true;
	return false;
}

static void pids_add(struct pids *p, pid_t pid)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->v = xrealloc(p->v, p->cap * sizeof(*p->v));
	}
	p->v[p->n++] = pid;
}

/* State letter and flags of /proc/PID[/task/TID]/stat; 0 when it is gone. */
static char proc_state(const char *path, unsigned long *ret_flags)
{
	char buf[1024];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* comm may hold anything, even ") " */
	char st;
	int ppid, pgrp, sess, tty, tpgid;
	if (!p || sscanf(p + 1, " %c %d %d %d %d %d %lu", &st, &ppid, &pgrp, &sess, &tty, &tpgid, ret_flags) != 7)
		return 0;
	return st;
}

static bool state_quiet(char st) { return st == 0 || st == 'T' || st == 't' || st == 'Z' || st == 'X'; }

/* true when every thread of pid is stopped (or gone) */
static bool threads_quiet(pid_t pid)
{
	char path[320];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	_cleanup_closedir_ DIR *d = opendir(path);
	if (!d)
		return true;
	struct dirent *de;
	while ((de = readdir(d))) {
		unsigned long fl;
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, de->d_name);
		if (!state_quiet(proc_state(path, &fl)))
			return false;
	}
	return true;
}

/* One pass over /proc: SIGSTOP every process of the box that still runs. Returns how many
 * were still running (0: the box is quiet), or -errno. Processes already stopped before our
 * first pass (a job the user suspended) are left alone and never resumed by us. */
static int freeze_pass(struct pids *stopped, bool first)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	int busy = 0;
	pid_t self = getpid();
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end, path[64];
		long pid = strtol(de->d_name, &end, 10);
		unsigned long flags = 0;
		if (*end || pid <= 1 || pid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		char st = proc_state(path, &flags);
		if (st == 0 || (flags & PF_KTHREAD_FLAG)) /* gone, or a kernel thread (vm) */
			continue;
		bool ours = pids_has(stopped, (pid_t)pid);
		if (state_quiet(st) && ((first && !ours) || threads_quiet((pid_t)pid)))
			continue;
		/* in the kernel with our SIGSTOP pending (a vfork() parent waits there for a child we
		 * stopped): it stops before it runs another instruction of its own */
		if (ours && st == 'D')
			continue;
		/* safe: we only ever stop processes of this box (our pid namespace), and every one
		 * we stop is recorded and resumed by thaw() */
		if (kill((pid_t)pid, SIGSTOP) == 0 && !ours)
			pids_add(stopped, (pid_t)pid);
		busy++;
	}
	return busy;
}

static int freeze(struct pids *stopped)
{
	for (int round = 0; round < FREEZE_ROUNDS; round++) {
		int r = freeze_pass(stopped, round == 0);
		if (r <= 0)
			return r;
		struct timespec ts = {0, (round < 10 ? round + 1 : 10) * 1000000L};
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

static void thaw(const struct pids *stopped)
{
	/* newest first: a shell is resumed after its children, so it never sees them stopped
	 * and takes its terminal back */
	for (size_t i = stopped->n; i-- > 0;)
		(void)kill(stopped->v[i], SIGCONT);
}

/* --- the walk --------------------------------------------------------------------------- */

static uint8_t kind_of(mode_t m)
{
	return S_ISREG(m) ? WSSCAN_FILE : S_ISDIR(m) ? WSSCAN_DIR : S_ISLNK(m) ? WSSCAN_LINK : WSSCAN_OTHER;
}

static void emit(struct out *o, uint8_t kind, const char *path, size_t plen, const struct stat *st,
		 const char *target, size_t tlen)
{
	struct wsscan_rec r = {
		.kind = kind, .mode = st ? st->st_mode & 07777 : 0, .size = st ? (uint64_t)st->st_size : 0,
		.ino = st ? st->st_ino : 0, .path = path, .path_len = plen, .target = target, .target_len = tlen,
	};
	if (st) {
		r.mtime_s = st->st_mtim.tv_sec, r.mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
		r.ctime_s = st->st_ctim.tv_sec, r.ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	}
	out_rec(o, &r);
}

static void walk(struct out *o, DIR *d, char *path, size_t plen, int depth);

/* A directory its owner may read but this process may not — on ns PID 1's credentials carry
 * no CAP_DAC_READ_SEARCH, and the agent makes 0700 directories (mkdtemp, caches) — is walked
 * with its owner's filesystem ids. Safe: setfsuid/setfsgid (PID 1 keeps CAP_SETUID and
 * CAP_SETGID to start sessions) change only which files this thread may open and look up;
 * the scan reads the metadata of the box's own files as their owner could, writes nothing,
 * and the ids are restored after. */
static bool as_owner(const struct stat *st, uid_t *ret_uid, gid_t *ret_gid)
{
	*ret_gid = (gid_t)setfsgid(st->st_gid);
	*ret_uid = (uid_t)setfsuid(st->st_uid);
	return (uid_t)setfsuid((uid_t)-1) == st->st_uid;
}

static void restore_ids(uid_t uid, gid_t gid)
{
	setfsuid(uid);
	setfsgid(gid);
}

/* *noted: the directory at path got its NOTE already (a second would repeat the path) */
static void entry(struct out *o, int dfd, const char *name, char *path, size_t plen, int depth, bool *noted)
{
	size_t nlen = strlen(name), full = plen ? plen + 1 + nlen : nlen;
	if (full > WSSCAN_MAX_PATH) {
		/* its directory was not read whole: a NOTE beside its 'd' record */
		if (!*noted)
			emit(o, WSSCAN_NOTE, path, plen, NULL, NULL, 0); /* plen > 0 here: names are <= 255 */
		*noted = true;
		return;
	}
	if (plen)
		path[plen] = '/';
	memcpy(path + (plen ? plen + 1 : 0), name, nlen);
	path[full] = '\0';
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		/* vanished: absent from the scan, so absent from the snapshot. Anything else (a
		 * directory readable but not searchable, chmod 644) means its directory was not
		 * read whole: a NOTE for it, so the host refuses rather than deletes what it had */
		if (errno != ENOENT && plen && !*noted) {
			emit(o, WSSCAN_NOTE, path, plen, NULL, NULL, 0);
			*noted = true;
		} else if (errno != ENOENT && !plen && !o->err) {
			o->err = -errno; /* the root itself: no scan rather than a wrong one */
		}
		goto out;
	}
	uint8_t k = kind_of(st.st_mode);
	char target[WSSCAN_MAX_PATH + 1];
	ssize_t tl = 0;
	if (k == WSSCAN_LINK) {
		tl = readlinkat(dfd, name, target, sizeof(target));
		if (tl <= 0 || (size_t)tl > WSSCAN_MAX_PATH)
			k = WSSCAN_OTHER, tl = 0; /* the host fetches it and judges the tar entry */
	}
	if (k != WSSCAN_DIR) {
		emit(o, k, path, full, &st, k == WSSCAN_LINK ? target : NULL, (size_t)tl);
		goto out;
	}
	/* a directory is a record of its own only when it is read whole: one too deep or that
	 * cannot be read (chmod 000) is a NOTE alone, so the host refuses what it had beneath it
	 * rather than take it for deleted */
	int sub = depth >= SCAN_MAX_DEPTH ? -1 : openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	uid_t uid;
	gid_t gid;
	bool switched = sub < 0 && errno == EACCES && as_owner(&st, &uid, &gid);
	if (switched)
		sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = sub < 0 ? NULL : fdopendir(sub);
	if (!d) {
		if (sub >= 0)
			close(sub);
		emit(o, WSSCAN_NOTE, path, full, NULL, NULL, 0);
	} else {
		emit(o, k, path, full, &st, NULL, 0);
		walk(o, d, path, full, depth + 1); /* closes d */
	}
	if (switched)
		restore_ids(uid, gid);
out:
	path[plen] = '\0';
}

static void walk(struct out *o, DIR *d, char *path, size_t plen, int depth)
{
	struct dirent *de;
	bool noted = false;
	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			entry(o, dirfd(d), de->d_name, path, plen, depth, &noted);
	closedir(d);
}

/* --- the built-in ------------------------------------------------------------------------ */

static volatile sig_atomic_t hangup;
static void on_hangup(int sig) { hangup = sig; }

/* Waits for EOF on stdin (or a hang-up signal): the host has read what it needs. */
static void hold(void)
{
	char buf[4096];
	while (!hangup) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EINTR))
			return;
	}
}

int guest_wsscan_main(char *const *argv)
{
	if (!argv[1] || !argv[2] || argv[3] || (!streq(argv[1], "--freeze") && !streq(argv[1], "--no-freeze"))) {
		dprintf(STDERR_FILENO, "usage: %s --freeze|--no-freeze ROOT\n", WSSCAN_BUILTIN);
		return 2;
	}
	bool frz = streq(argv[1], "--freeze");
	struct sigaction sa = {.sa_handler = on_hangup}; /* no SA_RESTART: read() returns EINTR */
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct pids stopped = {0};
	if (frz) {
		int r = freeze(&stopped);
		if (r < 0) {
			thaw(&stopped);
			dprintf(STDERR_FILENO, "paddock-init: cannot pause the box: %s\n", strerror(-r));
			return 3;
		}
	}
	int root = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* a root only its owner may read (chmod 700 /workspace): read as its owner, as below */
	struct stat rst;
	uid_t uid;
	gid_t gid;
	bool switched = root < 0 && errno == EACCES && stat(argv[2], &rst) == 0 && as_owner(&rst, &uid, &gid);
	if (switched)
		root = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		int e = errno;
		thaw(&stopped);
		dprintf(STDERR_FILENO, "paddock-init: cannot open %s: %s\n", argv[2], strerror(e));
		return 1;
	}
	static struct out o;
	char *path = xmalloc(WSSCAN_MAX_PATH + 1);
	path[0] = '\0';
	DIR *d = fdopendir(root);
	if (!d) {
		int e = errno;
		close(root);
		thaw(&stopped);
		dprintf(STDERR_FILENO, "paddock-init: cannot read %s: %s\n", argv[2], strerror(e));
		return 1;
	}
	walk(&o, d, path, 0, 0);
	if (switched)
		restore_ids(uid, gid);
	free(path);
	struct wsscan_rec end = {.kind = WSSCAN_END, .size = o.count};
	out_rec(&o, &end);
	out_flush(&o);
	if (frz && !o.err)
		hold();
	thaw(&stopped);
	free(stopped.v);
	return o.err ? 1 : 0;
}
