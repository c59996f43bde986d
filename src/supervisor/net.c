/* net.c — the network thread of one box (see net.h). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "egress/engine.h"
#include "util/thread.h"
#include "net/dns.h"
#include "net/frame.h"
#include "net/netstack.h"
#include "net/poller.h"
#include "net/vnet.h"
#include "supervisor/net.h"
#include "util/fdio.h"
#include "util/lazy.h"
#include "util/log.h"

#define NET_LISTENERS_MAX 1024
#define NET_POLL_MAX (8 + NET_LISTENERS_MAX + 2 * EGRESS_CONNS_MAX + 512)
#define NET_FRAMES_PER_ROUND 64

struct listener {
	int fd;
	enum egress_conn_kind kind;
	struct in_addr addr;
	uint16_t port;
};

struct file_id {
	bool exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct sup_net {
	const struct box_spec *spec;
	char *box_dir, *sock_dir, *global_path, *box_path;
	bool sock_dir_tmp;
	bool keep;            /* sup_net_stop_keep_link: the link fd and the sock dir stay */
	const struct sup_net_link *link;
	int link_fd, wake;
	int proxy_fd;         /* ns: the proxy's listener in the box's namespace until setup() */
	struct poller *poller;
	bool slirp_connected;
	pthread_t thread;
	bool running;
	struct netstack *stack;
	struct egress_engine *engine;
	struct egress_policy *policy;
	struct egress_resolve_map *resolve;
	struct fakeip_pool *pool;
	struct egress_audit *audit;
	struct listener lst[NET_LISTENERS_MAX];
	size_t n_lst;
	uint16_t published[64];   /* box ports reachable from the host (-p) */
	size_t n_published;
	struct file_id gid, bid;
	int64_t next_stat;
	struct pollfd *pfd;
	uint64_t dropped;
};

char **sup_net_proxy_env(char **env)
{
	static const char *const proxy[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
	for (size_t i = 0; i < ARRAY_SIZE(proxy); i++) {
		_cleanup_free_ char *kv = xasprintf("%s=" VNET_PROXY_URL, proxy[i]);
		env = strv_append(env, kv);
	}
	env = strv_append(env, "NO_PROXY=localhost,127.0.0.1");
	return strv_append(env, "no_proxy=localhost,127.0.0.1");
}

char *sup_net_global_policy_path(void)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	if (x && x[0] == '/')
		return xasprintf("%s/paddock/policy", x);
	const char *h = getenv("HOME");
	return xasprintf("%s/.config/paddock/policy", h && *h ? h : "/");
}

/* --- policy ---------------------------------------------------------------------------- */

/* The global file a box's supervisor reads: the one its environment named when it started
 * (recorded in BOX_DIR/policy.global), so `policy ls --sandbox` from another environment
 * shows what the box runs with; the caller's own when nothing is recorded. */
char *sup_net_box_global_record(const char *box_dir)
{
	_cleanup_free_ char *rec = xasprintf("%s/policy.global", box_dir), *buf = NULL;
	size_t len = 0;
	if (read_file_at(AT_FDCWD, rec, PATH_MAX, &buf, &len) < 0 || len < 2 || buf[0] != '/' || memchr(buf, '\0', len))
		return NULL;
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return xstrndup(buf, len);
}

static char *box_global_path(const char *box_dir)
{
	char *p = sup_net_box_global_record(box_dir);
	return p ? p : sup_net_global_policy_path();
}

static int add_file(struct egress_policy *p, const char *path, pd_err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_file_at(AT_FDCWD, path, EGRESS_POLICY_TEXT_MAX, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return pd_error(err, r, "cannot read %s", path);
	return egress_policy_parse(p, text, len, path, err);
}

int sup_net_load_policy(const struct box_spec *spec, const char *box_dir, struct egress_policy **ret,
			pd_err *err)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	_cleanup_free_ char *g = box_global_path(box_dir);
	_cleanup_free_ char *b = xasprintf("%s/policy", box_dir);
	int r = egress_policy_preset(p, spec->net.preset ? spec->net.preset : "none", err);
	for (char **a = spec->net.allow; r == 0 && a && *a; a++)
		r = egress_policy_add(p, *a, false, err);
	for (char **d = spec->net.deny; r == 0 && d && *d; d++)
		r = egress_policy_add(p, *d, true, err);
	if (r == 0)
		r = add_file(p, g, err);
	if (r == 0)
		r = add_file(p, b, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

static bool file_changed(const char *path, struct file_id *id)
{
	struct stat st;
	struct file_id now = {0};
	if (stat(path, &st) == 0)
		now = (struct file_id){.exists = true, .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
				       .mtime = st.st_mtim};
	bool changed = now.exists != id->exists || now.dev != id->dev || now.ino != id->ino ||
		       now.size != id->size || now.mtime.tv_sec != id->mtime.tv_sec ||
		       now.mtime.tv_nsec != id->mtime.tv_nsec;
	*id = now;
	return changed;
}

/* Once a second: a changed policy file is applied to the running box. */
static void maybe_reload(struct sup_net *n)
{
	int64_t now = mono_ms();
	if (now < n->next_stat)
		return;
	n->next_stat = now + 1000;
	bool g = file_changed(n->global_path, &n->gid), b = file_changed(n->box_path, &n->bid);
	if (!g && !b)
		return;
	pd_err err = {0};
	struct egress_policy *p = NULL;
	if (sup_net_load_policy(n->spec, n->box_dir, &p, &err) < 0) {
		fprintf(stderr, "paddock supervisor: policy not changed: %s\n", err.msg);
		return;
	}
	egress_engine_set_policy(n->engine, p);
	egress_policy_free(n->policy);
	n->policy = p;
	pd_debug("net: policy reloaded (%zu rules)", egress_policy_count(p));
}

/* --- the link ------------------------------------------------------------------------- */

static ssize_t tap_recv(int fd, uint8_t *buf, size_t cap)
{
	ssize_t n = read(fd, buf, cap);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? -EAGAIN : -errno;
	return n == 0 ? -EPIPE : n;
}

static int tap_send(int fd, const uint8_t *frame, size_t len)
{
	return write(fd, frame, len) < 0 ? -errno : 0;
}

const struct sup_net_link sup_net_link_tap = {
	.what = "TAP",
	.recv = tap_recv,
	.send = tap_send,
	/* the last close of a TAP waits for an RCU grace period (~50 ms here): let a grandchild
	 * pay it, the box is already gone and the device goes with its namespace */
	.close = fd_close_async,
};

/* An fd number this thread just got may have been polled before as another file. */
static void fd_fresh(void *opaque, int fd)
{
	struct sup_net *n = opaque;
	poller_fresh(n->poller, fd);
}

/* libslirp opened a socket: a connect() to one of our listeners (an accept with nothing
 * pending still allocates and frees a socket in the kernel, so only then) */
static void slirp_fd(void *opaque, int fd)
{
	struct sup_net *n = opaque;
	fd_fresh(n, fd);
	n->slirp_connected = true;
}

/* --- listeners (one unix socket per forwarded box address:port) ------------------------ */

static struct listener *find_listener(struct sup_net *n, uint32_t addr, uint16_t port)
{
	for (size_t i = 0; i < n->n_lst; i++)
		if (n->lst[i].addr.s_addr == htonl(addr) && n->lst[i].port == port)
			return &n->lst[i];
	return NULL;
}

/* The socket lives in a 0700 directory of the box's owner; libslirp connects to it. */
static int add_listener(struct sup_net *n, enum egress_conn_kind kind, uint32_t addr, uint16_t port)
{
	if (find_listener(n, addr, port))
		return 0;
	if (n->n_lst >= NET_LISTENERS_MAX)
		return -ENOSPC;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int len = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%08x-%u", n->sock_dir, addr, port);
	if (len < 0 || (size_t)len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	unlink(sa.sun_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	fd_fresh(n, fd);
	/* a deep backlog: libslirp's connect() to this socket is blocking, and it runs on this
	 * same thread; every pending connection is accepted in the same loop round */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	struct in_addr a = {htonl(addr)};
	if (netstack_add_unix(n->stack, sa.sun_path, a, port) < 0) {
		close(fd);
		return -EADDRINUSE;
	}
	n->lst[n->n_lst++] = (struct listener){.fd = fd, .kind = kind, .addr = a, .port = port};
	return 0;
}

static void accept_all(struct sup_net *n, struct listener *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		fd_fresh(n, fd);
		egress_engine_add(n->engine, fd, l->kind, l->addr, l->port);
	}
}

/* --- frames from the box --------------------------------------------------------------- */

static void to_box(void *opaque, const uint8_t *frame, size_t len)
{
	struct sup_net *n = opaque;
	/* the link is non-blocking; a frame the box cannot take now is dropped (TCP retransmits) */
	if (n->link->send(n->link_fd, frame, len) < 0)
		n->dropped++;
}

static void answer_dns(struct sup_net *n, const struct frame_info *f)
{
	uint8_t ans[DNS_ANSWER_MAX], out[FRAME_MAX], mac[6];
	size_t alen;
	if (egress_engine_dns(n->engine, f->payload, f->payload_len, ans, sizeof(ans), &alen) < 0)
		return;
	netstack_mac_for(f->dst_ip, mac);
	size_t len = frame_build_udp_reply(f, mac, ans, alen, out, sizeof(out));
	if (len)
		to_box(n, out, len);
}

static void send_rst(struct sup_net *n, const struct frame_info *f)
{
	uint8_t out[128], mac[6];
	netstack_mac_for(f->dst_ip, mac);
	size_t len = frame_build_tcp_rst(f, mac, out, sizeof(out));
	if (len)
		to_box(n, out, len);
}

static void refuse_syn(struct sup_net *n, const struct frame_info *f, const char *name, const char *rule,
		       const char *reason)
{
	char ip[INET_ADDRSTRLEN];
	struct in_addr a = {htonl(f->dst_ip)};
	if (!name)
		name = inet_ntop(AF_INET, &a, ip, sizeof(ip));
	egress_engine_log_refused(n->engine, name, f->dst_port, rule, reason);
	send_rst(n, f);
}

/* A SYN to a fake IP: live policy check on (name, port); allowed ones get their forward. */
static void syn_to_fake(struct sup_net *n, const uint8_t *buf, size_t len, const struct frame_info *f)
{
	struct in_addr a = {htonl(f->dst_ip)};
	const char *name = fakeip_lookup(n->pool, a, (uint64_t)(mono_ms() / 1000));
	const char *rule = NULL;
	if (!name) {
		refuse_syn(n, f, NULL, "", "unknown-address");
		return;
	}
	if (egress_policy_check(n->policy, name, f->dst_port, &rule) != EGRESS_ALLOW) {
		refuse_syn(n, f, name, rule ? rule : "", "denied-by-policy");
		return;
	}
	if (add_listener(n, EGRESS_CONN_TRANSPARENT, f->dst_ip, f->dst_port) < 0) {
		refuse_syn(n, f, name, rule ? rule : "", "too-many-forwards");
		return;
	}
	netstack_input(n->stack, buf, len);
}

/* The box's side of a -p connection: from a published box port, never a SYN of its own. */
static bool is_published(const struct sup_net *n, const struct frame_info *f)
{
	if ((f->tcp_flags & (FRAME_TCP_SYN | FRAME_TCP_ACK)) == FRAME_TCP_SYN)
		return false;
	for (size_t i = 0; i < n->n_published; i++)
		if (f->src_port == n->published[i])
			return true;
	return false;
}

static void tcp_frame(struct sup_net *n, const uint8_t *buf, size_t len, const struct frame_info *f)
{
	bool syn = (f->tcp_flags & (FRAME_TCP_SYN | FRAME_TCP_ACK)) == FRAME_TCP_SYN;
	bool fake = (f->dst_ip & 0xffff0000u) == VNET_FAKE_NET;
	if (fake && syn) {
		syn_to_fake(n, buf, len, f);
		return;
	}
	if (find_listener(n, f->dst_ip, f->dst_port) || is_published(n, f)) {
		netstack_input(n->stack, buf, len);
		return;
	}
	/* anything else: the host, the LAN, other ports of the gateway, real addresses */
	if (syn)
		refuse_syn(n, f, NULL, "", fake ? "unknown-address" : "not-a-fake-ip");
	else
		send_rst(n, f);
}

static void box_frame(struct sup_net *n, const uint8_t *buf, size_t len)
{
	struct frame_info f;
	switch (frame_classify(buf, len, &f)) {
	case FRAME_ARP:
		netstack_input(n->stack, buf, len);
		return;
	case FRAME_UDP:
		if (f.dst_ip == VNET_DNS && f.dst_port == VNET_DNS_PORT)
			answer_dns(n, &f);
		else
			n->dropped++; /* no UDP leaves the box: QUIC falls back to TCP */
		return;
	case FRAME_TCP:
		tcp_frame(n, buf, len, &f);
		return;
	default:
		n->dropped++; /* IPv6, ICMP, fragments, junk */
		return;
	}
}

/* Up to NET_FRAMES_PER_ROUND frames; false when the link is gone. */
static bool read_link(struct sup_net *n)
{
	uint8_t buf[FRAME_MAX + 64];
	for (int i = 0; i < NET_FRAMES_PER_ROUND; i++) {
		ssize_t len = n->link->recv(n->link_fd, buf, sizeof(buf));
		if (len == -EAGAIN)
			return true;
		if (len < 0)
			return false;
		box_frame(n, buf, (size_t)len);
	}
	return true;
}

/* --- the loop -------------------------------------------------------------------------- */

static void *net_thread(void *arg)
{
	struct sup_net *n = arg;
	for (;;) {
		size_t k = 0;
		/* policy files first, so no frame of this round is decided by a stale policy */
		maybe_reload(n);
		int timeout = (int)(n->next_stat - mono_ms());
		timeout = timeout < 0 ? 0 : timeout > 1000 ? 1000 : timeout;
		n->pfd[k++] = (struct pollfd){.fd = n->wake, .events = POLLIN};
		n->pfd[k++] = (struct pollfd){.fd = n->link_fd, .events = POLLIN};
		size_t lbase = k;
		for (size_t i = 0; i < n->n_lst; i++)
			n->pfd[k++] = (struct pollfd){.fd = n->lst[i].fd, .events = POLLIN};
		size_t nl = n->n_lst, sbase = k;
		netstack_fill(n->stack, n->pfd, &k, NET_POLL_MAX / 2, &timeout);
		egress_engine_fill(n->engine, n->pfd, &k, NET_POLL_MAX, &timeout);
		int r = poller_poll(n->poller, n->pfd, k, timeout);
		if (r < 0 && r != -EINTR)
			break;
		if (r > 0 && n->pfd[0].revents)
			break;
		if (r > 0 && n->pfd[1].revents & POLLIN && !read_link(n))
			break;
		if (r > 0 && n->pfd[1].revents & (POLLERR | POLLHUP | POLLNVAL))
			break;
		netstack_dispatch(n->stack, n->pfd, sbase, r < 0);
		for (size_t i = 0; r > 0 && i < nl; i++)
			if (n->pfd[lbase + i].revents & POLLIN)
				accept_all(n, &n->lst[i]);
		egress_engine_dispatch(n->engine, n->pfd);
		egress_audit_tick(n->audit);
		/* slirp connected to a listener during this round: accept right away */
		for (size_t i = 0; n->slirp_connected && i < n->n_lst; i++)
			accept_all(n, &n->lst[i]);
		n->slirp_connected = false;
	}
	return NULL;
}

/* --- start/stop ------------------------------------------------------------------------ */

static int make_sock_dir(struct sup_net *n, pd_err *err)
{
	n->sock_dir = xasprintf("%s/net", n->box_dir);
	if (strlen(n->sock_dir) + 24 < sizeof(((struct sockaddr_un *)0)->sun_path)) {
		if (mkdir(n->sock_dir, 0700) < 0 && errno != EEXIST)
			return pd_error(err, errno, "network layer: cannot create %s", n->sock_dir);
		return 0;
	}
	free(n->sock_dir);
	n->sock_dir = xstrdup("/tmp/paddock-net-XXXXXX");
	if (!mkdtemp(n->sock_dir))
		return pd_error(err, errno, "network layer: cannot create a socket directory in /tmp");
	n->sock_dir_tmp = true;
	return 0;
}

/* A port: 1-65535, decimal digits only. */
static int parse_port(const char *s, uint32_t *ret)
{
	uint32_t v = 0;
	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (uint32_t)(*s - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*ret = v;
	return 0;
}

int sup_net_parse_publish(const char *spec, struct in_addr *ret_host, uint16_t *ret_hp, uint16_t *ret_bp,
			  pd_err *err)
{
	/* fields by hand: sscanf's %u takes signs and spaces and wraps past UINT_MAX */
	const char *f[3];
	size_t nf = 0;
	for (const char *p = spec; nf < 3; p++) {
		f[nf++] = p;
		if (!(p = strchr(p, ':')))
			break;
	}
	if (nf < 2 || (nf == 3 && strchr(f[2], ':')) || strlen(spec) > 64)
		return pd_error_msg(err, EINVAL, "-p wants [HOSTADDR:]HOSTPORT:BOXPORT, got '%s'", spec);
	char host[64] = "127.0.0.1";
	if (nf == 3)
		snprintf(host, sizeof(host), "%.*s", (int)(f[1] - f[0] - 1), f[0]);
	uint32_t hp, bp;
	_cleanup_free_ char *hs = xstrndup(f[nf - 2], (size_t)(f[nf - 1] - f[nf - 2] - 1));
	if (inet_pton(AF_INET, host, ret_host) != 1 || parse_port(hs, &hp) < 0 || parse_port(f[nf - 1], &bp) < 0)
		return pd_error_msg(err, EINVAL, "-p wants an IPv4 HOSTADDR and ports 1-65535, got '%s'", spec);
	*ret_hp = (uint16_t)hp, *ret_bp = (uint16_t)bp;
	return 0;
}

static int publish(struct sup_net *n, const char *spec, pd_err *err)
{
	struct in_addr ha;
	uint16_t hp, bp;
	int r = sup_net_parse_publish(spec, &ha, &hp, &bp, err);
	if (r < 0)
		return r;
	if (n->n_published >= ARRAY_SIZE(n->published))
		return pd_error_msg(err, E2BIG, "at most %zu published ports", ARRAY_SIZE(n->published));
	if (netstack_add_hostfwd(n->stack, ha, hp, bp) < 0)
		return pd_error_msg(err, EADDRINUSE, "cannot publish %s (is the host port free?)", spec);
	n->published[n->n_published++] = bp;
	return 0;
}

/* Each connection costs three fds (libslirp's socket, the engine's box and upstream
 * sockets): the soft limit goes up to what EGRESS_CONNS_MAX needs (as far as the hard limit
 * allows; the box's own limits were set when it started), and the engine takes no more
 * connections than the fds left allow. An fd ceiling hit mid-accept would leave the pending
 * connection in the backlog and the loop spinning on it. */
static size_t fd_budget_conns(void)
{
	const rlim_t reserve = NET_LISTENERS_MAX + 128, want = reserve + 3 * (rlim_t)EGRESS_CONNS_MAX;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 16;
	if (rl.rlim_cur < want && rl.rlim_cur != RLIM_INFINITY) {
		struct rlimit up = {.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max,
				    .rlim_max = rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl.rlim_cur = up.rlim_cur;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return EGRESS_CONNS_MAX;
	size_t lim = (size_t)rl.rlim_cur, avail = lim > 128 + 48 ? (lim - 128) / 3 : 16;
	return avail;
}

/* libslirp (with glib) and http-parser are loaded for a box's network, not at every exec
 * (util/lazy.h): a missing one fails this start like any other network error (fail closed),
 * where a first call on the network thread would end the process */
static int load_libraries(pd_err *err)
{
	int (*const load[])(const char **ret_why) = {pd_lazy_load_slirp, pd_lazy_load_http_parser};
	for (size_t i = 0; i < ARRAY_SIZE(load); i++) {
		const char *why = NULL; /* dlerror()'s text names the library */
		int r = load[i](&why);
		if (r < 0)
			return pd_error_msg(err, -r, "network layer: %s (is its package installed? see scripts/install-deps.sh)",
					    why);
	}
	return 0;
}

void sup_net_preload(void)
{
	pd_err ignored = {0};
	(void)load_libraries(&ignored); /* setup() loads again and reports */
}

static int setup(struct sup_net *n, pd_err *err)
{
	_cleanup_free_ char *log = xasprintf("%s/net.log", n->box_dir);
	int r = load_libraries(err);
	if (r == 0)
		r = sup_net_load_policy(n->spec, n->box_dir, &n->policy, err);
	if (r == 0)
		r = egress_resolve_map_new(n->spec->net.resolve, &n->resolve, err);
	/* an address is reused only once the DNS answer that gave it has expired (60 s): a
	 * flood of other names must not hand a cached address to another host (it was 0) */
	if (r == 0 && fakeip_pool_new((struct in_addr){htonl(VNET_FAKE_NET)}, FAKEIP_CAPACITY_DEFAULT, FAKEIP_TTL_DEFAULT, &n->pool) < 0)
		r = pd_error_msg(err, EINVAL, "cannot create the fake-IP pool");
	if (r == 0 && (r = egress_audit_open(log, &n->audit)) < 0)
		pd_error(err, r, "cannot open %s", log);
	if (r == 0 && (r = netstack_new(to_box, n, &n->stack, err)) == 0)
		netstack_set_fd_hook(n->stack, slirp_fd);
	if (r == 0)
		r = make_sock_dir(n, err);
	if (r < 0)
		return r;
	n->engine = egress_engine_new(n->spec->name, n->audit, n->resolve, n->pool);
	egress_engine_set_fd_hook(n->engine, fd_fresh, n);
	egress_engine_set_max_conns(n->engine, fd_budget_conns());
	egress_engine_set_policy(n->engine, n->policy);
	if (n->proxy_fd >= 0) {
		/* the box reaches the proxy over its own loopback (ns_net.c): no forward in the stack,
		 * so a frame for the proxy's address on the TAP finds nothing there */
		fd_fresh(n, n->proxy_fd);
		if ((r = fd_set_nonblock(n->proxy_fd, true)) < 0)
			return pd_error(err, -r, "cannot use the proxy's socket");
		n->lst[n->n_lst++] = (struct listener){.fd = TAKE_FD(n->proxy_fd), .kind = EGRESS_CONN_PROXY,
						       .addr = {htonl(VNET_PROXY)}, .port = VNET_PROXY_PORT};
	} else if (add_listener(n, EGRESS_CONN_PROXY, VNET_PROXY, VNET_PROXY_PORT) < 0)
		return pd_error_msg(err, EIO, "cannot listen for the proxy forward in %s", n->sock_dir);
	if (add_listener(n, EGRESS_CONN_DNS, VNET_DNS, VNET_DNS_PORT) < 0)
		return pd_error_msg(err, EIO, "cannot listen for the DNS forward in %s", n->sock_dir);
	for (char **p = n->spec->net.publish; p && *p; p++)
		if ((r = publish(n, *p, err)) < 0)
			return r;
	file_changed(n->global_path, &n->gid);
	file_changed(n->box_path, &n->bid);
	return 0;
}

static void net_free(struct sup_net *n)
{
	egress_engine_free(n->engine);
	for (size_t i = 0; i < n->n_lst; i++)
		close(n->lst[i].fd);
	if (n->proxy_fd >= 0)
		close(n->proxy_fd);
	netstack_free(n->stack);
	egress_policy_free(n->policy);
	egress_resolve_map_free(n->resolve);
	fakeip_pool_free(n->pool);
	egress_audit_close(n->audit);
	/* kept: the caller removes the box's directory, the sock dir with it */
	if (n->sock_dir && !(n->keep && !n->sock_dir_tmp))
		rm_rf(n->sock_dir);
	if (n->link_fd >= 0 && !n->keep)
		n->link->close(n->link_fd);
	if (n->wake >= 0)
		close(n->wake);
	poller_free(n->poller);
	free(n->pfd);
	free(n->sock_dir);
	free(n->box_dir);
	free(n->global_path);
	free(n->box_path);
	free(n);
}

static int start(const struct box_spec *spec, const char *box_dir, const struct sup_net_link *link, int link_fd,
		 int proxy_fd, struct sup_net **ret, pd_err *err);

int sup_net_start(const struct box_spec *spec, const char *box_dir, int tap_fd, int proxy_fd,
		  struct sup_net **ret, pd_err *err)
{
	return start(spec, box_dir, &sup_net_link_tap, tap_fd, proxy_fd, ret, err);
}

int sup_net_start_link(const struct box_spec *spec, const char *box_dir, const struct sup_net_link *link,
		       int link_fd, struct sup_net **ret, pd_err *err)
{
	return start(spec, box_dir, link, link_fd, -1, ret, err);
}

static int start(const struct box_spec *spec, const char *box_dir, const struct sup_net_link *link, int link_fd,
		 int proxy_fd, struct sup_net **ret, pd_err *err)
{
	/* libslirp gives every TCP connection two 128 KiB socket buffers. With glibc's dynamic
	 * mmap threshold they soon come from reused heap chunks whose pages are resident, and 1,000
	 * idle connections cost ~250 MB; a fixed threshold keeps them in their own lazily-touched
	 * mappings (~14 MB for the same load, measured by tests/escape/net-egress.sh). */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	struct sup_net *n = xcalloc(1, sizeof(*n));
	n->spec = spec;
	n->link = link;
	n->link_fd = link_fd;
	n->proxy_fd = proxy_fd;
	n->box_dir = xstrdup(box_dir);
	n->global_path = sup_net_global_policy_path();
	n->box_path = xasprintf("%s/policy", box_dir);
	{ /* which global file this box follows, for `policy ls --sandbox` from elsewhere */
		_cleanup_free_ char *rec = xasprintf("%s/policy.global", box_dir), *line = xasprintf("%s\n", n->global_path);
		(void)write_file_replace_at(AT_FDCWD, rec, line, strlen(line), 0600, !spec->rm);
	}
	n->pfd = xcalloc(NET_POLL_MAX, sizeof(*n->pfd));
	n->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int r = n->wake < 0 ? pd_error(err, errno, "cannot create an eventfd") : 0;
	if (r == 0 && (r = poller_new(&n->poller)) < 0)
		pd_error(err, r, "cannot create an epoll set");
	if (r == 0)
		r = fd_set_nonblock(link_fd, true);
	if (r == 0)
		r = setup(n, err);
	if (r == 0) {
		r = thread_start_quiet(&n->thread, NULL, net_thread, n);
		if (r < 0)
			pd_error(err, -r, "cannot start the network thread");
	}
	if (r < 0) {
		net_free(n);
		return pd_err_prefix(err, "network layer");
	}
	n->running = true;
	*ret = n;
	return 0;
}

int sup_net_stop_keep_link(struct sup_net *n)
{
	if (!n)
		return -1;
	int fd = n->link_fd;
	n->keep = true;
	sup_net_stop(n);
	return fd;
}

void sup_net_stop(struct sup_net *n)
{
	if (!n)
		return;
	if (n->running) {
		uint64_t one = 1;
		(void)!write(n->wake, &one, sizeof(one));
		pthread_join(n->thread, NULL);
	}
	net_free(n);
}
