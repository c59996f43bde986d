/* ns_idmap.c — subordinate id parsing, uid/gid map building (pure) and map writing. */
#include <fcntl.h>
#include <spawn.h>
#include <limits.h>
#include <pwd.h>
#include <sys/wait.h>

#include "runtime/ns/ns.h"
#include "runtime/ns/ns_idmap.h"
#include "util/fdio.h"
#include "util/log.h"

/* Returns the next line of text[0..len) starting at *pos, without its newline. */
static bool next_line(const char *text, size_t len, size_t *pos, const char **ret, size_t *ret_len)
{
	if (*pos >= len)
		return false;
	const char *s = text + *pos;
	const char *nl = memchr(s, '\n', len - *pos);
	size_t n = nl ? (size_t)(nl - s) : len - *pos;
	*ret = s;
	*ret_len = n;
	*pos += n + (nl ? 1 : 0);
	return true;
}

/* Strict decimal uint32 from s[0..n): no sign, no spaces, no overflow. */
static bool parse_u32(const char *s, size_t n, uint32_t *ret)
{
	uint64_t v = 0;
	if (n == 0 || n > 10)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	return true;
}

/* Splits "a:b:c" into exactly three fields (a subid line). */
static bool split3(const char *s, size_t n, const char *f[3], size_t fl[3])
{
	const char *c1 = memchr(s, ':', n);
	if (!c1)
		return false;
	const char *c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - s));
	if (!c2 || memchr(c2 + 1, ':', n - (size_t)(c2 + 1 - s)))
		return false;
	f[0] = s, fl[0] = (size_t)(c1 - s);
	f[1] = c1 + 1, fl[1] = (size_t)(c2 - c1 - 1);
	f[2] = c2 + 1, fl[2] = n - (size_t)(c2 + 1 - s);
	return true;
}

/* Parses one subid line; false for comments and malformed lines. */
static bool subid_line(const char *s, size_t n, const char **ret_owner, size_t *ret_owner_len,
		       struct ns_subid_range *ret)
{
	const char *f[3];
	size_t fl[3];
	struct ns_subid_range r;
	if (n == 0 || s[0] == '#' || !split3(s, n, f, fl) || fl[0] == 0)
		return false;
	if (!parse_u32(f[1], fl[1], &r.start) || !parse_u32(f[2], fl[2], &r.count) || r.count == 0)
		return false;
	if ((uint64_t)r.start + r.count > (UINT64_C(1) << 32))
		return false;
	*ret_owner = f[0];
	*ret_owner_len = fl[0];
	*ret = r;
	return true;
}

static bool owner_is(const char *o, size_t n, const char *name, uint32_t id)
{
	uint32_t v;
	if (name && strlen(name) == n && memcmp(o, name, n) == 0)
		return true;
	return parse_u32(o, n, &v) && v == id;
}

int ns_subid_find(const char *text, size_t len, const char *name, uint32_t id, struct ns_subid_range *ret)
{
	const char *line, *owner;
	size_t pos = 0, n, on, lines = 0;
	struct ns_subid_range r;
	if (len > NS_SUBID_MAX_TEXT)
		return -E2BIG;
	while (next_line(text, len, &pos, &line, &n)) {
		if (++lines > NS_SUBID_MAX_LINES)
			return -E2BIG;
		if (subid_line(line, n, &owner, &on, &r) && owner_is(owner, on, name, id)) {
			*ret = r;
			return 0;
		}
	}
	return -ENOENT;
}

static bool intersects(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return a < b + bn && b < a + an;
}

bool ns_subid_overlaps(const char *text, size_t len, uint32_t start, uint32_t count)
{
	const char *line, *owner;
	size_t pos = 0, n, on, lines = 0;
	struct ns_subid_range r;
	while (next_line(text, len, &pos, &line, &n) && ++lines <= NS_SUBID_MAX_LINES)
		if (subid_line(line, n, &owner, &on, &r) && intersects(r.start, r.count, start, count))
			return true;
	return false;
}

bool ns_idfile_overlaps(const char *text, size_t len, uint32_t start, uint32_t count)
{
	const char *line;
	size_t pos = 0, n, lines = 0;
	while (next_line(text, len, &pos, &line, &n) && ++lines <= NS_SUBID_MAX_LINES) {
		const char *c1 = memchr(line, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
		const char *c3 = c2 ? memchr(c2 + 1, ':', n - (size_t)(c2 + 1 - line)) : NULL;
		uint32_t id;
		if (c3 && parse_u32(c2 + 1, (size_t)(c3 - c2 - 1), &id) && id >= start && (uint64_t)id < (uint64_t)start + count)
			return true;
	}
	return false;
}

static void add(struct ns_idmap *m, uint32_t inside, uint32_t outside, uint32_t count)
{
	m->e[m->n++] = (struct ns_idmap_extent){inside, outside, count};
}

void ns_idmap_build(uint32_t caller_id, bool caller_is_root, const struct ns_subid_range *sub, struct ns_idmap *ret)
{
	*ret = (struct ns_idmap){0};
	uint32_t span = sub ? (sub->count < NS_MAP_SPAN ? sub->count : NS_MAP_SPAN) : 0;
	if (caller_is_root && sub) {
		add(ret, 0, sub->start, span);
		return;
	}
	if (span > 0)
		add(ret, 0, sub->start, span < NS_AGENT_ID ? span : NS_AGENT_ID);
	add(ret, NS_AGENT_ID, caller_id, 1);
	if (span > NS_AGENT_ID + 1)
		add(ret, NS_AGENT_ID + 1, sub->start + NS_AGENT_ID + 1, span - NS_AGENT_ID - 1);
}

/* The outside id of inside `id`, or false when unmapped. */
static bool map_down(const struct ns_idmap *m, uint32_t id, uint32_t *ret)
{
	for (size_t i = 0; i < m->n; i++)
		if (id >= m->e[i].inside && (uint64_t)id < (uint64_t)m->e[i].inside + m->e[i].count) {
			*ret = m->e[i].outside + (id - m->e[i].inside);
			return true;
		}
	return false;
}

/* Adds [start, start+count) as identity unless empty; -E2BIG when the map is full. */
static int add_identity(struct ns_idmap *m, uint32_t start, uint32_t count)
{
	if (count == 0)
		return 0;
	if (m->n == ARRAY_SIZE(m->e))
		return -E2BIG;
	add(m, start, start, count);
	return 0;
}

int ns_idmap_build_mount(const struct ns_idmap *box, uint32_t caller_id, struct ns_idmap *ret)
{
	struct ns_idmap m = {0};
	uint32_t agent;
	if (!map_down(box, NS_AGENT_ID, &agent))
		return -EINVAL;
	add(&m, caller_id, agent, 1);
	for (size_t i = 0; i < box->n; i++) {
		uint64_t lo = box->e[i].outside, hi = lo + box->e[i].count;
		if (caller_id >= lo && caller_id < hi)
			return -EINVAL; /* the caller's own id inside the box: two meanings for one id */
		bool has_agent = agent >= lo && agent < hi;
		uint64_t cut = has_agent ? agent : hi;
		int r = add_identity(&m, (uint32_t)lo, (uint32_t)(cut - lo));
		if (r == 0 && has_agent)
			r = add_identity(&m, agent + 1, (uint32_t)(hi - agent - 1));
		if (r < 0)
			return r;
	}
	*ret = m;
	return 0;
}

bool ns_idmap_maps(const struct ns_idmap *m, uint32_t id)
{
	for (size_t i = 0; i < m->n; i++)
		if (id >= m->e[i].inside && (uint64_t)id < (uint64_t)m->e[i].inside + m->e[i].count)
			return true;
	return false;
}

int ns_idmap_format(const struct ns_idmap *m, char *buf, size_t size)
{
	size_t off = 0;
	if (size == 0)
		return -ENOBUFS;
	buf[0] = '\0';
	for (size_t i = 0; i < m->n; i++) {
		int n = snprintf(buf + off, size - off, "%u %u %u\n", m->e[i].inside, m->e[i].outside, m->e[i].count);
		if (n < 0 || (size_t)n >= size - off)
			return -ENOBUFS;
		off += (size_t)n;
	}
	return 0;
}

bool ns_idmap_matches(const struct ns_idmap *m, const char *text)
{
	bool seen[ARRAY_SIZE(m->e)] = {false};
	size_t found = 0;
	const char *s = text;
	while (*s) {
		unsigned a, b, c;
		int used = 0;
		if (sscanf(s, " %u %u %u%n", &a, &b, &c, &used) != 3)
			break;
		s += used;
		size_t i;
		for (i = 0; i < m->n; i++)
			if (!seen[i] && m->e[i].inside == a && m->e[i].outside == b && m->e[i].count == c)
				break;
		if (i == m->n)
			return false;
		seen[i] = true;
		found++;
		while (*s == ' ' || *s == '\n')
			s++;
	}
	return *s == '\0' && found == m->n;
}

/* --- deciding the maps for the caller --------------------------------------------------- */

static int find_range(const char *file, const char *name, uint32_t id, struct ns_subid_range *ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = read_file_at(AT_FDCWD, file, NS_SUBID_MAX_TEXT, &text, &len);
	if (r < 0)
		return r;
	return ns_subid_find(text, len, name, id, ret);
}

static bool file_overlaps(const char *file, bool subid, uint32_t start, uint32_t count)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (read_file_at(AT_FDCWD, file, 16u << 20, &text, &len) < 0)
		return false; /* absent files own nothing */
	return subid ? ns_subid_overlaps(text, len, start, count) : ns_idfile_overlaps(text, len, start, count);
}

/* Host root's range: its own /etc/subuid entry when it spans a whole box, else the fixed
 * range, refused if any host user, group or subordinate range already owns part of it. */
static int root_range(bool gid, struct ns_subid_range *ret, pd_err *err)
{
	const char *sub = gid ? "/etc/subgid" : "/etc/subuid";
	if (find_range(sub, "root", 0, ret) == 0 && ret->count >= NS_MAP_SPAN)
		return 0;
	*ret = (struct ns_subid_range){NS_HOST_ROOT_BASE, NS_MAP_SPAN};
	const char *files[] = {"/etc/subuid", "/etc/subgid", gid ? "/etc/group" : "/etc/passwd"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		if (file_overlaps(files[i], i < 2, ret->start, ret->count))
			return pd_error_msg(err, EEXIST,
					    "the fixed id range %u-%u for boxes started by root overlaps an entry of %s; "
					    "give root its own range (usermod --add-subuids A-B --add-subgids A-B root)",
					    ret->start, ret->start + ret->count - 1, files[i]);
	return 0;
}

static int maps_for_root(struct ns_idmaps *ret, pd_err *err)
{
	struct ns_subid_range u, g;
	int r = root_range(false, &u, err);
	if (r < 0)
		return r;
	r = root_range(true, &g, err);
	if (r < 0)
		return r;
	ns_idmap_build(0, true, &u, &ret->uid);
	ns_idmap_build(0, true, &g, &ret->gid);
	ret->root_ok = true;
	return 0;
}

static const char *user_name(uid_t uid, char *buf, size_t n)
{
	struct passwd pw, *pwp = NULL;
	getpwuid_r(uid, &pw, buf, n, &pwp);
	return pwp ? pwp->pw_name : NULL;
}

int ns_subid_lookup(bool gid, uid_t uid, struct ns_subid_range *ret)
{
	char buf[4096];
	return find_range(gid ? "/etc/subgid" : "/etc/subuid", user_name(uid, buf, sizeof(buf)), uid, ret);
}

int ns_idmaps_for_caller(struct ns_idmaps *ret, pd_err *err)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	*ret = (struct ns_idmaps){0};
	if (uid == 0)
		return maps_for_root(ret, err);
	struct ns_subid_range su, sg;
	bool ranges = ns_subid_lookup(false, uid, &su) == 0 && ns_subid_lookup(true, uid, &sg) == 0;
	if (ranges && ns_idmap_helper(false) && ns_idmap_helper(true)) {
		ns_idmap_build(uid, false, &su, &ret->uid);
		ns_idmap_build(gid, false, &sg, &ret->gid);
		ret->use_helpers = true;
		ret->root_ok = true;
		return 0;
	}
	pd_debug("ns: uid %u has no usable subordinate ids (ranges=%d); mapping only agent", (unsigned)uid, ranges);
	ns_idmap_build(uid, false, NULL, &ret->uid);
	ns_idmap_build(gid, false, NULL, &ret->gid);
	ret->setgroups_deny = true;
	return 0;
}

/* --- writing the maps ------------------------------------------------------------------- */

const char *ns_idmap_helper(bool gid)
{
	static const char *const uid_paths[] = {"/usr/bin/newuidmap", "/usr/sbin/newuidmap", "/bin/newuidmap"};
	static const char *const gid_paths[] = {"/usr/bin/newgidmap", "/usr/sbin/newgidmap", "/bin/newgidmap"};
	const char *const *p = gid ? gid_paths : uid_paths;
	for (size_t i = 0; i < ARRAY_SIZE(uid_paths); i++)
		if (access(p[i], X_OK) == 0)
			return p[i];
	return NULL;
}

struct helper {
	const char *path;
	pid_t pid;
	int err_fd;       /* read end of the helper's stderr */
};

/* Starts newuidmap/newgidmap PID in out count... with an empty environment and no inherited
 * fds but its stderr pipe (posix_spawn: vfork, no copy of our address space). Safe: the
 * helper itself checks /etc/sub[ug]id for us, and pid is our unreaped child so it cannot
 * name another process. */
static int start_helper(bool gid, pid_t pid, const struct ns_idmap *m, struct helper *ret, pd_err *err)
{
	const char *path = ns_idmap_helper(gid);
	char *argv[2 + 3 * ARRAY_SIZE(m->e) + 1], num[1 + 3 * ARRAY_SIZE(m->e)][16];
	size_t a = 0, k = 0;
	char *envp[] = {NULL};
	if (!path)
		return pd_error_msg(err, ENOENT, "%s not found (apt-get install uidmap)", gid ? "newgidmap" : "newuidmap");
	argv[a++] = (char *)path;
	snprintf(num[k], sizeof(num[k]), "%d", (int)pid);
	argv[a++] = num[k++];
	for (size_t i = 0; i < m->n; i++) {
		uint32_t v[3] = {m->e[i].inside, m->e[i].outside, m->e[i].count};
		for (int j = 0; j < 3; j++) {
			snprintf(num[k], sizeof(num[k]), "%u", v[j]);
			argv[a++] = num[k++];
		}
	}
	argv[a] = NULL;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	int r = posix_spawn(&ret->pid, path, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (r != 0) {
		close(pfd[0]);
		return pd_error(err, r, "cannot start %s", path);
	}
	ret->path = path;
	ret->err_fd = pfd[0];
	return 0;
}

/* Collects its stderr and exit status. */
static int finish_helper(struct helper *h, pd_err *err)
{
	char msg[512];
	ssize_t n = 0, got;
	while (n < (ssize_t)sizeof(msg) - 1 && (got = read(h->err_fd, msg + n, sizeof(msg) - 1 - (size_t)n)) > 0)
		n += got;
	msg[n > 0 ? n : 0] = '\0';
	close(h->err_fd);
	int st;
	while (waitpid(h->pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return pd_error_msg(err, EPERM, "%s failed: %s", h->path, msg[0] ? strtok(msg, "\n") : "no output");
	return 0;
}

/* Both helpers run at once: the maps are independent, and each helper costs a process start
 * (a setuid binary with its libraries). */
static int run_helpers(const struct ns_idmaps *m, pid_t pid, pd_err *err)
{
	struct helper u, g;
	int r = start_helper(false, pid, &m->uid, &u, err);
	if (r < 0)
		return r;
	pd_err gerr = {0};
	int rg = start_helper(true, pid, &m->gid, &g, &gerr);
	r = finish_helper(&u, err);
	if (rg == 0)
		rg = finish_helper(&g, &gerr);
	if (r == 0 && rg < 0) {
		if (err)
			*err = gerr;
		r = rg;
	}
	return r;
}

static int write_proc(pid_t pid, const char *file, const char *s, pd_err *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int r = write_file_str(path, s);
	return r < 0 ? pd_error(err, r, "cannot write %s", path) : 0;
}

static int verify(pid_t pid, const char *file, const struct ns_idmap *m, pd_err *err)
{
	char path[64];
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int r = read_file_at(AT_FDCWD, path, 4096, &text, NULL);
	if (r < 0)
		return pd_error(err, r, "cannot read back %s", path);
	if (!ns_idmap_matches(m, text))
		return pd_error_msg(err, EIO, "%s does not hold the map we wrote", path);
	return 0;
}

static int verify_setgroups(pid_t pid, bool deny, pd_err *err)
{
	char path[64];
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	int r = read_file_at(AT_FDCWD, path, 64, &text, NULL);
	if (r < 0)
		return pd_error(err, r, "cannot read back %s", path);
	if (startswith(text, deny ? "deny" : "allow"))
		return 0;
	/* newgidmap writes "deny" itself when the map holds only the caller's own group */
	return pd_error_msg(err, EIO, "%s is \"%.5s\", expected \"%s\"", path, text, deny ? "deny" : "allow");
}

/* Writes the maps as their owner (unprivileged: one line each, setgroups denied first as
 * the kernel requires since CVE-2014-8989) or as host root (any map). */
static int write_direct(const struct ns_idmaps *m, pid_t pid, pd_err *err)
{
	char buf[256];
	int r = 0;
	if (m->setgroups_deny)
		r = write_proc(pid, "setgroups", "deny", err);
	if (r == 0 && (r = ns_idmap_format(&m->uid, buf, sizeof(buf))) == 0)
		r = write_proc(pid, "uid_map", buf, err);
	if (r == 0 && (r = ns_idmap_format(&m->gid, buf, sizeof(buf))) == 0)
		r = write_proc(pid, "gid_map", buf, err);
	return r;
}

int ns_idmaps_write(const struct ns_idmaps *m, pid_t pid, pd_err *err)
{
	int r;
	if (m->use_helpers) {
		r = run_helpers(m, pid, err);
	} else {
		r = write_direct(m, pid, err);
	}
	if (r == 0)
		r = verify(pid, "uid_map", &m->uid, err);
	if (r == 0)
		r = verify(pid, "gid_map", &m->gid, err);
	if (r == 0)
		r = verify_setgroups(pid, m->setgroups_deny, err);
	return r;
}
