/* runtime_ns.c — the ns backend as the supervisor sees it: start (cgroup, clone3 into new
 * namespaces, id maps, then wait for the child to exec paddock-init or report which layer
 * failed), kill and cleanup. */
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "runtime/ns/ns.h"
#include "runtime/ns/ns_cgroup.h"
#include "runtime/ns/ns_confine.h"
#include "runtime/ns/ns_etc.h"
#include "runtime/ns/ns_idmap.h"
#include "runtime/ns/ns_idmount.h"
#include "runtime/ns/ns_landlock.h"
#include "runtime/ns/ns_seccomp.h"
#include "util/fdio.h"
#include "net/vnet.h"
#include "util/log.h"
#ifdef NS_HAVE_GUEST
#include "guest/blob.h"
#endif

/* box_handle.priv */
struct ns_box {
	struct ns_cgroup *cg;
};

/* Everything one start owns until it succeeds or is undone. */
struct start_ctx {
	struct ns_plan plan;
	struct ns_idmaps maps;
	struct ns_limits lim;
	struct ns_file etc[NS_ETC_N_GENERATED];
	struct ns_cgroup *cg;
	int cg_clone_fd;         /* v2: the box cgroup for CLONE_INTO_CGROUP */
	bool cg_attach;          /* the parent must move the child (v2 kernel without it) */
	int ctl[2], sync[2], report[2];
	pid_t pid;
	int pidfd;
	int net_fd, proxy_fd;
	size_t binds_plain;      /* writable binds of root's box the filesystem would not idmap */
};

/* Rewrites err as "<layer> layer: <what>; refusing to start: <what to do>". */
static int layer_error(pd_err *err, enum ns_layer l)
{
	if (!err)
		return -EIO;
	char what[640];
	size_t n = strnlen(err->msg, sizeof(what) - 1);
	memcpy(what, err->msg, n);
	what[n] = '\0';
	/* a bind the user asked for is the user's to fix, not the kernel's */
	const char *hint = l == NS_LAYER_MOUNT && strstr(what, "bind ")
				   ? "check the -v paths: a directory binds onto a directory and a file onto a file, "
				     "and the box path may not cross a symlink"
				   : ns_layer_hint(l);
	snprintf(err->msg, sizeof(err->msg), "%s layer: %s; refusing to start the box: %s", ns_layer_name(l), what,
		 hint);
	return -(err->code ? err->code : EIO);
}

static int injected(const struct start_ctx *c, enum ns_layer l, pd_err *err, const char *what)
{
	if (!ns_injected(&c->plan, l))
		return 0;
	pd_error(err, EPERM, "%s (injected failure)", what);
	return layer_error(err, l);
}

static int validate(const struct box_config *cfg, pd_err *err)
{
	if (!ns_name_valid(cfg->name))
		return pd_error_msg(err, EINVAL, "invalid box name '%s' (1-63 of A-Z a-z 0-9 _ . -)", cfg->name ? cfg->name : "");
	if (cfg->n_binds > NS_MAX_BINDS)
		return pd_error_msg(err, E2BIG, "too many binds (%zu, at most %d)", cfg->n_binds, NS_MAX_BINDS);
	for (size_t i = 0; i < cfg->n_binds; i++) {
		const struct box_bind *b = &cfg->binds[i];
		if (!b->host || b->host[0] != '/' || strlen(b->host) >= 4096)
			return pd_error_msg(err, EINVAL, "bind source '%s' is not an absolute path", b->host ? b->host : "");
		if (!ns_box_path_valid(b->box))
			return pd_error_msg(err, EINVAL, "bind target '%s' must be a normalised absolute path outside /proc, /dev and /sys",
					    b->box ? b->box : "");
	}
	return 0;
}

static int read_cap_last(void)
{
	_cleanup_free_ char *s = NULL;
	if (read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 64, &s, NULL) < 0)
		return 40; /* CAP_CHECKPOINT_RESTORE, Linux 5.9; dropping unknown caps is harmless */
	int v = atoi(s);
	return v > 0 && v < 64 ? v : 40;
}

static void plan_env(struct ns_plan *p, const char *name)
{
	snprintf(p->env_store[0], sizeof(p->env_store[0]), "PADDOCK_CTL_FD=%d", NS_CTL_FD);
	snprintf(p->env_store[1], sizeof(p->env_store[1]), "PADDOCK_AGENT_UID=%u", NS_AGENT_ID);
	snprintf(p->env_store[2], sizeof(p->env_store[2]), "PADDOCK_AGENT_GID=%u", NS_AGENT_ID);
	snprintf(p->env_store[3], sizeof(p->env_store[3]), "PADDOCK_ROOT_OK=%d", p->root_ok ? 1 : 0);
	snprintf(p->env_store[4], sizeof(p->env_store[4]), "PADDOCK_HOSTNAME=%s", name);
	/* only a build box's init hears of root capabilities (init.h root_caps) */
	snprintf(p->env_store[5], sizeof(p->env_store[5]), "PADDOCK_ROOT_CAPS=1");
	int n = p->rootfs_upper ? 6 : 5;
	for (int i = 0; i < n; i++)
		p->envp[i] = p->env_store[i];
	p->envp[n] = NULL;
	p->argv[0] = (char *)"paddock-init";
	p->argv[1] = NULL;
}

static void plan_limits(struct ns_plan *p, const struct ns_limits *lim)
{
	struct rlimit nofile, nproc, fsize;
	getrlimit(RLIMIT_NOFILE, &nofile);
	getrlimit(RLIMIT_NPROC, &nproc);
	getrlimit(RLIMIT_FSIZE, &fsize);
	ns_rlimits(lim, &nofile, &nproc, &fsize, p);
	snprintf(p->root_opts, sizeof(p->root_opts), "mode=0755,size=%llu", (unsigned long long)lim->disk);
	snprintf(p->shm_opts, sizeof(p->shm_opts), "mode=1777,size=%llu", (unsigned long long)(lim->memory / 4));
	p->caps_keep = p->rootfs_upper ? ns_caps_keep_build() : ns_caps_keep();
	p->cap_last = read_cap_last();
}

/* The seccomp flags of a box: set-id bits are refused where a host directory is writable. */
static unsigned seccomp_flags(const struct box_config *cfg)
{
	for (size_t i = 0; i < cfg->n_binds; i++)
		if (!cfg->binds[i].readonly)
			return NS_SC_WRITABLE_BIND;
	return 0;
}

static int plan_security(struct ns_plan *p, const struct box_config *cfg, pd_err *err)
{
	p->landlock_abi = ns_landlock_abi();
	if (p->landlock_abi < 1) {
		pd_error_msg(err, EOPNOTSUPP, "Landlock is not available in this kernel");
		return layer_error(err, NS_LAYER_LANDLOCK);
	}
	p->ll_handled_fs = ns_landlock_fs_handled(p->landlock_abi);
	p->ll_scoped = ns_landlock_scoped(p->landlock_abi);
	ns_seccomp_program(seccomp_flags(cfg), &p->seccomp);
	return 0;
}

/* With a network, the box's resolver is the supervisor's DNS answerer (and nothing else). */
static void use_box_resolver(struct ns_file *etc)
{
	for (size_t i = 0; i < NS_ETC_N_GENERATED; i++) {
		if (!etc[i].name || !streq(etc[i].name, "resolv.conf"))
			continue;
		free(etc[i].data);
		etc[i].data = xstrdup("nameserver " VNET_DNS_STR "\noptions attempts:1 timeout:2\n");
		etc[i].len = strlen(etc[i].data);
	}
}

/* Builds the plan: everything the child needs, so that it never allocates. */
static int prepare(struct start_ctx *c, const struct box_config *cfg, int init_fd, pd_err *err)
{
	struct ns_plan *p = &c->plan;
	ns_limits_from_cfg(cfg, &c->lim);
	p->fail_mask = ns_fail_mask_from_cfg(cfg);
	if (ns_idmaps_for_caller(&c->maps, err) < 0)
		return layer_error(err, NS_LAYER_USERNS);
	p->root_ok = c->maps.root_ok;
	p->uid = p->gid = p->root_ok ? 0 : NS_AGENT_ID;
	p->may_setgroups = !c->maps.setgroups_deny;
	p->tty_gid = ns_idmap_maps(&c->maps.gid, 5) ? 5 : -1;
	p->hostname = cfg->name;
	p->binds = cfg->binds;
	p->n_binds = cfg->n_binds;
	p->rootfs = cfg->rootfs;
	p->rootfs_upper = cfg->rootfs ? cfg->rootfs_upper : NULL;
	p->ws_alias = cfg->ws_alias;
	p->ws_fd_wanted = cfg->ws_direct;
	ns_etc_generate(cfg->name, access("/usr/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh", c->etc);
	if (cfg->network)
		use_box_resolver(c->etc);
	p->network = cfg->network;
	p->etc_files = c->etc;
	p->n_etc_files = NS_ETC_N_GENERATED;
	plan_limits(p, &c->lim);
	plan_env(p, cfg->name);
	p->init_fd = init_fd;
	p->trace_fd = pd_debug_enabled ? STDERR_FILENO : -1;
	return plan_security(p, cfg, err);
}

static int make_cgroup(struct start_ctx *c, const struct box_config *cfg, pd_err *err)
{
	int r = injected(c, NS_LAYER_CGROUP, err, "cannot create the box cgroup");
	_cleanup_free_ char *leaf = ns_cgroup_leaf(cfg->name, cfg->state_dir);
	if (r == 0 && ns_cgroup_create(leaf, &c->lim, &c->cg, err) < 0)
		r = layer_error(err, NS_LAYER_CGROUP);
	if (r == 0 && ns_cgroup_open_join(c->cg, &c->cg_clone_fd, c->plan.cg_join_fds, err) < 0)
		r = layer_error(err, NS_LAYER_CGROUP);
	return r;
}

static int open_channels(struct start_ctx *c, pd_err *err)
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->ctl) < 0)
		return pd_error(err, errno, "cannot create the control socket pair");
	/* a socket for the go-ahead, so that a child that died early gives EPIPE, not SIGPIPE */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->sync) < 0 || pipe2(c->report, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create the setup channels");
	c->plan.ctl_fd = c->ctl[1];
	c->plan.sync_fd = c->sync[0];
	c->plan.report_fd = c->report[1];
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Boxes of host root: each writable bind becomes a tree idmapped by the parent, so that the
 * agent writes root's project as root on disk (ns_idmount.h). Other callers' agent already is
 * the caller. Before spawn: the child finds the trees among the fds it inherits. */
static int idmapped_binds(struct start_ctx *c, const struct box_config *cfg, pd_err *err)
{
	if (geteuid() != 0 || !c->maps.root_ok || cfg->n_binds == 0)
		return 0;
	if (ns_idmount_open(cfg->binds, cfg->n_binds, &c->maps, c->plan.bind_trees, &c->binds_plain, err) < 0)
		return layer_error(err, NS_LAYER_MOUNT);
	return 0;
}

/* The box's first process, in new user, mount, pid, ipc, uts and network namespaces (the
 * cgroup namespace comes after the supervisor moved it into the box cgroup). It waits for
 * the id maps before doing anything. */
static int spawn(struct start_ctx *c, pd_err *err)
{
	struct clone_args ca = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&c->pidfd,
		.exit_signal = SIGCHLD,
	};
	long pid = -1;
	if (c->cg_clone_fd >= 0) {
		/* cgroup v2: born in the box cgroup (Linux >= 5.7), no migration at all */
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)c->cg_clone_fd;
		pid = syscall(SYS_clone3, &ca, sizeof(ca));
		if (pid < 0 && (errno == EINVAL || errno == E2BIG)) {
			/* an older kernel: clone plainly and move the child by pid before it goes on */
			ca.flags &= ~(uint64_t)CLONE_INTO_CGROUP;
			ca.cgroup = 0;
			c->cg_attach = true;
			pid = syscall(SYS_clone3, &ca, sizeof(ca));
		}
	} else {
		pid = syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid < 0) {
		pd_error(err, errno, "cannot create the box's namespaces (clone3)");
		return layer_error(err, NS_LAYER_USERNS);
	}
	if (pid == 0) {
		/* the supervisor's ends: held here too, they would keep the child's reads from
		 * ever seeing EOF, and a supervisor killed before the go-ahead would leave the
		 * child waiting forever (found with run --rm SIGKILLed at start) */
		close(c->ctl[0]);
		close(c->sync[1]);
		close(c->report[0]);
		ns_child_main(&c->plan);
	}
	c->pid = (pid_t)pid;
	close_fd(&c->ctl[1]);
	close_fd(&c->sync[0]);
	close_fd(&c->report[1]);
	close_fd(&c->cg_clone_fd);
	for (size_t i = 0; i < ARRAY_SIZE(c->plan.cg_join_fds); i++)
		close_fd(&c->plan.cg_join_fds[i]);
	ns_idmount_close(c->plan.bind_trees, ARRAY_SIZE(c->plan.bind_trees));
	return 0;
}

/* The cgroup (when the child could not join it itself: so everything the child allocates from
 * now on is charged and limited), then the id maps, then the go-ahead. */
static int release_child(struct start_ctx *c, pd_err *err)
{
	if (c->cg_attach && ns_cgroup_attach(c->cg, c->pid, err) < 0)
		return layer_error(err, NS_LAYER_CGROUP);
	int r = injected(c, NS_LAYER_USERNS, err, "cannot write the box's uid map");
	if (r == 0 && ns_idmaps_write(&c->maps, c->pid, err) < 0)
		r = layer_error(err, NS_LAYER_USERNS);
	if (r == 0 && send(c->sync[1], "g", 1, MSG_NOSIGNAL) != 1)
		r = pd_error(err, errno, "the box's first process died during setup");
	return r;
}

static int child_failed(const struct ns_report *rep, pd_err *err)
{
	char msg[sizeof(rep->msg) + 1];
	snprintf(msg, sizeof(msg), "%s", rep->msg);
	enum ns_layer l = rep->layer > NS_LAYER_INVALID && rep->layer < NS_LAYER_MAX ? (enum ns_layer)rep->layer : NS_LAYER_INVALID;
	pd_error(err, rep->code, "%s", msg);
	return layer_error(err, l);
}

/* EOF on the report pipe: the child either exec'd paddock-init (the pipe was close-on-exec)
 * or died without a word; waitid tells which. */
static int check_alive(const struct start_ctx *c, pd_err *err)
{
	siginfo_t si = {0};
	if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid != 0) {
		pd_error_msg(err, ECHILD, "paddock-init ended during start (%s %d)",
			     si.si_code == CLD_EXITED ? "exit status" : "signal", si.si_status);
		return layer_error(err, NS_LAYER_EXEC);
	}
	return 0;
}

static int await_child(struct start_ctx *c, pd_err *err)
{
	struct ns_report rep;
	struct pollfd p = {.fd = c->report[0], .events = POLLIN};
	int r;
	while ((r = poll(&p, 1, NS_SETUP_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	if (r == 0) {
		pd_error_msg(err, ETIMEDOUT, "the box's setup did not finish within %d s", NS_SETUP_TIMEOUT_MS / 1000);
		return layer_error(err, NS_LAYER_EXEC);
	}
	ssize_t n;
	while ((n = read(c->report[0], &rep, sizeof(rep))) < 0 && errno == EINTR)
		;
	if (n == 0)
		return check_alive(c, err);
	if (n != (ssize_t)sizeof(rep)) {
		pd_error_msg(err, EPROTO, "the box's first process sent a truncated failure report");
		return layer_error(err, NS_LAYER_EXEC);
	}
	return child_failed(&rep, err);
}

/* A child that failed before the go-ahead (a bind source it could not open) has already
 * said why; that beats the secondary error of talking to a dead process. */
static int early_report(struct start_ctx *c, int r, pd_err *err)
{
	struct ns_report rep;
	struct pollfd p = {.fd = c->report[0], .events = POLLIN};
	if (poll(&p, 1, 0) == 1 && read(c->report[0], &rep, sizeof(rep)) == (ssize_t)sizeof(rep))
		return child_failed(&rep, err);
	return r;
}

/* Undoes a failed start: the child (and with it its namespaces and mounts) is killed and
 * reaped, the cgroup removed, every fd closed. */
static void undo(struct start_ctx *c)
{
	if (c->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
	if (c->pid > 0)
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
	if (c->cg) {
		ns_cgroup_kill(c->cg);
		ns_cgroup_remove(c->cg);
		ns_cgroup_free(c->cg);
		c->cg = NULL;
	}
	close_fd(&c->pidfd);
	close_fd(&c->ctl[0]);
	close_fd(&c->net_fd);
	close_fd(&c->proxy_fd);
	close_fd(&c->cg_clone_fd);
	for (size_t i = 0; i < ARRAY_SIZE(c->plan.cg_join_fds); i++)
		close_fd(&c->plan.cg_join_fds[i]);
}

static void ctx_free(struct start_ctx *c)
{
	int *fds[] = {&c->ctl[0], &c->ctl[1], &c->sync[0], &c->sync[1], &c->report[0], &c->report[1]};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		close_fd(fds[i]);
	ns_etc_files_free(c->etc, NS_ETC_N_GENERATED);
	ns_idmount_close(c->plan.bind_trees, ARRAY_SIZE(c->plan.bind_trees));
}

int ns_start_with_init(const struct box_config *cfg, int init_fd, struct box_handle *ret, pd_err *err)
{
	struct start_ctx c = {.ctl = {-1, -1}, .sync = {-1, -1}, .report = {-1, -1}, .pidfd = -1, .net_fd = -1, .proxy_fd = -1,
			      .cg_clone_fd = -1, .plan.cg_join_fds = {-1, -1, -1, -1}};
	for (size_t i = 0; i < ARRAY_SIZE(c.plan.bind_trees); i++)
		c.plan.bind_trees[i] = -1;
	int r = validate(cfg, err);
	if (r == 0)
		r = prepare(&c, cfg, init_fd, err);
	pd_debug("ns: prepared");
	if (r == 0)
		r = make_cgroup(&c, cfg, err);
	pd_debug("ns: cgroup made");
	if (r == 0)
		r = open_channels(&c, err);
	if (r == 0)
		r = idmapped_binds(&c, cfg, err);
	if (r == 0)
		r = spawn(&c, err);
	pd_debug("ns: spawned");
	if (r == 0 && (r = release_child(&c, err)) < 0)
		r = early_report(&c, r, err);
	pd_debug("ns: released");
	if (r == 0 && cfg->while_waiting)
		cfg->while_waiting();
	if (r == 0)
		r = await_child(&c, err);
	pd_debug("ns: child exec'd");
	if (r == 0 && cfg->network && ns_net_recv_tap(c.sync[1], &c.net_fd, &c.proxy_fd, err) < 0)
		r = layer_error(err, NS_LAYER_NET);
	int ws_fd = -1;
	if (r == 0 && cfg->ws_direct && ns_ws_recv(c.sync[1], &ws_fd, err) < 0)
		r = layer_error(err, NS_LAYER_MOUNT);
	if (r < 0) {
		if (ws_fd >= 0)
			close(ws_fd);
		undo(&c);
		ctx_free(&c);
		return r;
	}
	struct ns_box *b = xcalloc(1, sizeof(*b));
	b->cg = TAKE_PTR(c.cg);
	bool has_proxy = c.proxy_fd >= 0; /* before TAKE_FD: an initialiser's order is unspecified */
	*ret = (struct box_handle){.pid = c.pid, .ctl_fd = TAKE_FD(c.ctl[0]), .pidfd = TAKE_FD(c.pidfd),
				   .net_fd = TAKE_FD(c.net_fd), .has_proxy_fd = has_proxy,
				   .proxy_fd = TAKE_FD(c.proxy_fd), .ws_alias_made = cfg->ws_alias != NULL,
				   .has_ws_fd = ws_fd >= 0, .ws_fd = ws_fd, .binds_plain = (unsigned)c.binds_plain,
				   .priv = b};
	ctx_free(&c);
	pd_debug("ns: box %s is pid %d (root %s)", cfg->name, (int)ret->pid, c.plan.root_ok ? "mapped" : "absent");
	return 0;
}

static int ns_start(const struct box_config *cfg, struct box_handle *ret, pd_err *err)
{
#ifdef NS_HAVE_GUEST
	int fd = guest_init_memfd(err);
	if (fd < 0)
		return pd_err_prefix(err, "exec layer: cannot load paddock-init");
	int r = ns_start_with_init(cfg, fd, ret, err);
	close(fd);
	return r;
#else
	(void)cfg, (void)ret;
	return pd_error_msg(err, ENOSYS, "exec layer: this build of paddock has no embedded paddock-init");
#endif
}

/* SIGKILL to PID 1 through its pidfd ends the pid namespace: the kernel kills every process in
 * it, and PID 1 is only reported dead once they are all gone. Every process of the box is in
 * that namespace (nothing in the box can leave it: setns and unshare are denied), so the
 * cgroup is empty when PID 1 has been reaped; ns_cleanup checks that and falls back to killing
 * through the cgroup. Without a pidfd the cgroup kill is the only way. */
static void ns_kill(struct box_handle *h)
{
	struct ns_box *b = h->priv;
	/* ESRCH: PID 1 has already exited, and with it everything in its pid namespace */
	if (h->pidfd >= 0 && (syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0) == 0 || errno == ESRCH))
		return;
	if (b)
		ns_cgroup_kill(b->cg);
}

/* The handle's memory and fds in this process only: the cgroup stays for the process that
 * holds a copy of the handle (run --rm's remover), which calls ns_cleanup once PID 1 is gone. */
static void ns_forget(struct box_handle *h)
{
	struct ns_box *b = h->priv;
	if (b) {
		ns_cgroup_free(b->cg);
		free(b);
		h->priv = NULL;
	}
	close_fd(&h->pidfd);
	if (h->net_fd >= 0)
		close_fd(&h->net_fd);
	if (h->has_proxy_fd)
		close_fd(&h->proxy_fd);
	h->has_proxy_fd = false;
}

static void ns_cleanup(struct box_handle *h)
{
	struct ns_box *b = h->priv;
	/* busy: something is still in the box cgroup (PID 1 not reaped yet, or a process that
	 * somehow left the pid namespace): kill through the cgroup, then wait */
	if (b && ns_cgroup_remove_now(b->cg) == -EBUSY) {
		pd_debug("ns: box cgroup busy after the box ended; killing through it");
		ns_cgroup_kill(b->cg);
		if (ns_cgroup_remove(b->cg) == -EBUSY) {
			ns_cgroup_kill(b->cg);
			ns_cgroup_remove(b->cg);
		}
	}
	ns_forget(h);
}

const struct runtime_ops runtime_ns = {
	.name = "ns",
	.start = ns_start,
	.kill = ns_kill,
	.cleanup = ns_cleanup,
	.forget = ns_forget,
};
