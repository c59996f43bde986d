/* boot.c — starting a box through its runtime and greeting its paddock-init. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/vm/vm.h"
#include "runtime/vm/vm_console.h"
#include "supervisor/net.h"
#include "supervisor/wsbox.h"
#include "util/fdio.h"
#include "util/log.h"

/* Whether this host has proven KVM works for real guests: the vm backend caches the verdict
 * of its probe boot (src/runtime/vm/accel.c) in $PADDOCK_HOME/cache/kvm-verdict. No verdict
 * yet, or "broken" (this machine), means no. */
static bool vm_kvm_proven(void)
{
	_cleanup_free_ char *home = NULL, *text = NULL;
	if (store_home(&home, NULL) < 0)
		return false;
	_cleanup_free_ char *path = xasprintf("%s/cache/kvm-verdict", home);
	if (read_file_at(AT_FDCWD, path, 4096, &text, NULL) < 0)
		return false;
	return strstr(text, "\nverdict ok\n") != NULL;
}

const struct runtime_ops *runtime_by_name(const char *name, pd_err *err)
{
	/* auto: the vm backend only where KVM is proven to work (a TCG guest is secure but takes
	 * seconds to boot); otherwise namespaces. `--backend vm` forces the vm (TCG if need be). */
	if (!name || streq(name, "ns"))
		return &runtime_ns;
	if (streq(name, "vm"))
		return &runtime_vm;
	if (streq(name, "auto"))
		return vm_kvm_proven() ? &runtime_vm : &runtime_ns;
	pd_error_msg(err, EINVAL, "unknown backend '%s' (available: ns, vm, auto)", name);
	return NULL;
}

#define SUP_RESTORE_TIMEOUT_MS (60 * 1000)

/* Reads exactly one frame with a deadline. buf holds PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD. */
static int recv_deadline(int fd, uint8_t *buf, struct proto_frame *f, int64_t deadline)
{
	for (;;) {
		int left = (int)(deadline - mono_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		if (box_boot_cancel)
			return -ECANCELED;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		/* short polls: a cancel (a signal's handler sets it) is seen within 100 ms */
		int r = poll(&p, 1, left < 100 ? left : 100);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			return proto_recv(fd, buf, f);
	}
}

volatile sig_atomic_t box_boot_cancel;

uint16_t sup_peer_minor;

/* An empty file at path, synced with its directory. */
static int write_file_str_new(const char *path)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fsync(fd) < 0)
		return -errno;
	_cleanup_free_ char *dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dfd < 0 || fsync(dfd) < 0 ? -errno : 0;
}

static int greet(int fd, int64_t deadline, pd_err *err)
{
	_cleanup_free_ uint8_t *buf = xmalloc(PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD);
	struct proto_frame f;
	uint16_t major, minor;
	int r = recv_deadline(fd, buf, &f, deadline);
	if (r == -ETIMEDOUT)
		return pd_error_msg(err, ETIMEDOUT, "paddock-init did not answer within %d s", SUP_BOOT_TIMEOUT_MS / 1000);
	if (r == -ECANCELED)
		return pd_error_msg(err, ECANCELED, "interrupted while the box started");
	if (r < 0)
		return pd_error(err, r, "paddock-init closed the control channel during start");
	if (proto_decode_hello(&f, &major, &minor) < 0)
		return pd_error_msg(err, EPROTO, "paddock-init sent a malformed greeting");
	if (major != PROTO_VERSION_MAJOR)
		return pd_error_msg(err, EPROTO, "paddock-init speaks protocol %u, expected %u", major, PROTO_VERSION_MAJOR);
	sup_peer_minor = minor < proto_minor() ? minor : proto_minor();
	r = proto_send_hello(fd);
	return r < 0 ? pd_error(err, r, "cannot greet paddock-init") : 0;
}

static void wsbox_copy_endp(struct wsbox_copy **c)
{
	box_workspace_end(*c);
}

/* A vm box's trusted CA bundle (PADDOCK_CA_FILE when it was made; a guest shares no host
 * file): copied in at every boot, since /run does not outlive the guest. Read here as the
 * user who made the box, written by the guest's root as a 0644 file; a bundle that cannot
 * be copied fails the boot, which beats TLS failing later for no visible reason. */
static int copy_ca(struct box *b, const char *path, pd_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pd_error(err, errno, "cannot open the CA bundle %s (PADDOCK_CA_FILE when the box was made)", path);
	char *argv[] = {"sh", "-c", "umask 022 && mkdir -p /run/paddock && cat >/run/paddock/ca.pem", NULL};
	char msg[512];
	int st = box_run_fed(b->h.ctl_fd, WSBOX_STREAM + 3, argv, "root", fd, msg, sizeof(msg), err);
	if (st < 0)
		return pd_err_prefix(err, "cannot copy the CA bundle %s into the box", path);
	if (st != 0)
		return pd_error_msg(err, EIO, "cannot copy the CA bundle %s into the box (%d): %s", path, st, msg);
	return 0;
}

char *box_boot_notes(const struct box *b, const char *log_of)
{
	/* which accelerator, and why, in one line: when a probe boot just decided it (later starts
	 * reuse the verdict silently; `paddock doctor` and PADDOCK_DEBUG=1 always say it) */
	_cleanup_free_ char *accel = b->rt == &runtime_vm && vm_box_accel_fresh(&b->h)
					     ? xasprintf("paddock: %s\n", vm_box_accel_reason(&b->h))
					     : xstrdup("");
	unsigned n = b->h.binds_plain;
	_cleanup_free_ char *where = log_of ? xasprintf(" in 'paddock logs %s'", log_of) : xstrdup("");
	_cleanup_free_ char *binds =
		n ? xasprintf("paddock: note: %u writable bind%s not idmapped (its filesystem refuses it, or a "
			      "world-writable sticky directory): the box's files there belong to its own subordinate "
			      "uids, not to root (PADDOCK_DEBUG=1 names %s%s)\n",
			      n, n > 1 ? "s are" : " is", n > 1 ? "them" : "it", where)
		  : xstrdup("");
	return *accel || *binds ? xasprintf("%s%s", accel, binds) : NULL;
}

/* Stops what box_boot started when a later step of it fails. */
static void boot_undo(struct box *b, struct sup_net *net)
{
	if (b->h.has_ws_fd)
		close(b->h.ws_fd);
	b->h.has_ws_fd = false;
	box_kill(b);
	sup_net_stop(net);
	box_shutdown(b, false, 0);
}

/* The runtime's start, the network, paddock-init's greeting. On failure nothing of the box
 * runs; b->restored says whether it was a vm restore that failed (its template rejected). */
static int start_and_greet(struct box *b, const struct box_spec *spec, const char *box_dir, int64_t t0,
			   struct sup_net **ret_net, pd_err *err)
{
	const struct runtime_ops *rt = b->rt;
	int r = rt->start(&b->cfg, &b->h, err);
	if (r < 0)
		return r;
	b->restored = rt == &runtime_vm && vm_box_restored(&b->h);
	pd_debug("box %s %s by %s in %lld ms", spec->name, b->restored ? "restored" : "started", rt->name,
		 (long long)(mono_ms() - t0));
	if (rt == &runtime_vm && !vm_box_accel_fresh(&b->h))
		pd_debug("box %s: accelerator %s", spec->name, vm_box_accel_reason(&b->h));
	_cleanup_free_ char *notes = box_boot_notes(b, NULL);
	if (notes)
		fputs(notes, stderr);
	/* the network thread comes up while paddock-init starts; a box whose network cannot be
	 * built does not run (fail closed) */
	struct sup_net *net = NULL;
	if (b->h.net_fd >= 0) {
		int proxy_fd = b->h.has_proxy_fd ? TAKE_FD(b->h.proxy_fd) : -1;
		b->h.has_proxy_fd = false;
		r = sup_net_start(spec, box_dir, TAKE_FD(b->h.net_fd), proxy_fd, &net, err);
	}
	if (r < 0) {
		box_shutdown(b, false, 0);
		b->restored = false; /* not the template's fault: no second try */
		return r;
	}
	/* a restore takes a second where a boot takes many: one that hangs is given up early */
	r = greet(b->h.ctl_fd, t0 + (b->restored ? SUP_RESTORE_TIMEOUT_MS : SUP_BOOT_TIMEOUT_MS), err);
	if (r < 0) {
		/* a template is dropped when its guest failed to come up, never because the user
		 * cancelled the start (the directory is shared: a Ctrl-C in the first half second
		 * of a run removed a good template, and everyone's next box booted cold) */
		if (b->restored && r != -ECANCELED && !box_boot_cancel)
			vm_box_reject_template(&b->h);
		boot_undo(b, net);
		b->rt = rt;
		/* a guest that never greeted: what QEMU and the console said (a panic, a memory
		 * QEMU could not get), not just "closed the control channel" */
		if (rt == &runtime_vm) {
			char was[sizeof(err->msg)];
			snprintf(was, sizeof(was), "%s", err->msg);
			_cleanup_free_ char *why = vm_box_diagnose(box_dir);
			/* one line: "a; b" (a trailing newline dropped) */
			size_t wl = strlen(why);
			while (wl && why[wl - 1] == '\n')
				why[--wl] = '\0';
			_cleanup_free_ char *one = xmalloc(2 * wl + 1);
			size_t k = 0;
			for (size_t i = 0; i < wl; i++) {
				if (why[i] == '\n') {
					one[k++] = ';';
					one[k++] = ' ';
				} else
					one[k++] = why[i];
			}
			one[k] = '\0';
			pd_error_msg(err, -r, "%s; %s", was, one);
		}
		return r;
	}
	if (rt == &runtime_vm)
		vm_box_booted(&b->h);
	*ret_net = net;
	return 0;
}

int box_boot(const struct box_spec *spec, const char *box_dir, struct box *ret, struct sup_net **ret_net, pd_err *err)
{
	struct box b = {.exit_status = -1};
	b.rt = runtime_by_name(spec->backend, err);
	if (!b.rt)
		return -EINVAL;
	box_config_from_spec(spec, box_dir, &b.cfg);
	int64_t t0 = mono_ms();
	_cleanup_(wsbox_copy_endp) struct wsbox_copy *ws = NULL;
	/* A vm box's disk outlives its QEMU: once its first copy-in has completed (the marker,
	 * written after it), the workspace on it is the box's own (the agent's edits and
	 * deletions included) and is not copied in again — a copy over it would undo edits and
	 * bring deleted files back. A disk without the marker holds a copy-in that never
	 * finished: it goes, and the copy-in starts over on a fresh one (else diff would read
	 * the missing files as deleted, and apply delete them on the host). An ns box's tmpfs
	 * dies with it: its restart copies the workspace saved at stop back in. */
	_cleanup_free_ char *disk = xasprintf("%s/disk.qcow2", box_dir);
	_cleanup_free_ char *marker = xasprintf("%s/%s", box_dir, WSBOX_ON_DISK);
	bool vm_copy = b.rt != &runtime_ns && spec->workspace && streq(spec->workspace, "copy") && spec->project;
	bool ws_on_disk = vm_copy && access(disk, F_OK) == 0 && access(marker, F_OK) == 0;
	if (vm_copy && !ws_on_disk)
		(void)unlink(disk);
	int r = ws_on_disk ? 0 : box_workspace_begin(spec, box_dir, b.rt == &runtime_ns, &ws, err);
	if (r < 0)
		return r;
	b.cfg.ws_direct = box_workspace_direct(ws);
	/* the network's libraries load while the runtime waits for the box's first process */
	b.cfg.while_waiting = sup_net_preload;
	struct sup_net *net = NULL;
	r = start_and_greet(&b, spec, box_dir, t0, &net, err);
	/* a vm box restored from a template that did not come up: that template is dropped and
	 * the box boots instead (its disk, a copy of the template's, goes too) */
	if (r < 0 && b.restored && r != -ECANCELED && !box_boot_cancel) {
		/* said always: every later box of this configuration boots until a new template is
		 * made, which is slower, and a restore that fails is a fault worth a report */
		fprintf(stderr, "paddock: box %s: the restore from its template failed (%s); the template is dropped and the box boots\n",
			spec->name, err->msg);
		(void)unlink(disk);
		b.cfg.vm_cold = true;
		r = start_and_greet(&b, spec, box_dir, mono_ms(), &net, err);
	}
	if (r < 0)
		return r;
	pd_debug("box %s greeted in %lld ms", spec->name, (long long)(mono_ms() - t0));
	r = spec->ca_file ? copy_ca(&b, spec->ca_file, err) : 0;
	if (r == 0)
		r = box_workspace_copyin(&b, ws, err);
	/* the vm box's disk now holds its whole workspace (synced by the guest before the tar
	 * ended): from here on it is the box's own */
	if (r == 0 && vm_copy && !ws_on_disk && (r = write_file_str_new(marker)) < 0)
		pd_error(err, r, "cannot record the box's workspace as copied");
	if (r < 0) {
		boot_undo(&b, net);
		return r;
	}
	*ret = b;
	*ret_net = net;
	return 0;
}

/* Waits for the box's PID 1 to exit (through its pidfd when the runtime gave one, so this
 * works whether or not PID 1 is our child) and reaps it when it is our child. */
static bool wait_exit(const struct box_handle *h, int64_t deadline, int *ret_status)
{
	int st;
	for (;;) {
		int left = (int)(deadline - mono_ms());
		if (h->pidfd >= 0) {
			struct pollfd p = {.fd = h->pidfd, .events = POLLIN};
			int r = poll(&p, 1, left > 0 ? left : 0);
			if (r > 0) {
				if (waitpid(h->pid, &st, WNOHANG) == h->pid && ret_status)
					*ret_status = st;
				return true;
			}
		} else {
			pid_t w = waitpid(h->pid, &st, WNOHANG);
			if (w == h->pid && ret_status)
				*ret_status = st;
			if (w == h->pid || (w < 0 && errno == ECHILD))
				return true;
			usleep(2000);
		}
		if (mono_ms() >= deadline)
			return false;
	}
}

/* In run --rm's remover (a copy of the box): the box's PID 1 finishing its exit, then the
 * backend's cleanup (its cgroup). Only this process's fds are open: the pidfd, under its
 * number, and the fds of fd_close_async_job. */
static void finish_later(void *ud)
{
	struct box *b = ud;
	b->h.ctl_fd = -1, b->h.net_fd = -1, b->h.has_proxy_fd = false;
	if (!wait_exit(&b->h, mono_ms() + 10000, &b->exit_status))
		pd_debug("shutdown: the box is still exiting after 10 s; cleaning up through its cgroup");
	b->rt->cleanup(&b->h);
}

bool box_shutdown_later(struct box *b, int link, const char *dir)
{
	if (!b->rt || !b->rt->forget || b->h.pidfd < 0)
		return false;
	if (b->h.ctl_fd >= 0)
		close(b->h.ctl_fd);
	b->h.ctl_fd = -1;
	fd_close_async_job(&(struct async_job){.fd = link, .dir = dir, .keep = b->h.pidfd, .first = finish_later,
						.ud = b, .exiting = true});
	b->rt->forget(&b->h);
	b->rt = NULL;
	return true;
}

void box_kill(struct box *b)
{
	if (b->rt)
		b->rt->kill(&b->h);
}

void box_shutdown(struct box *b, bool graceful, uint32_t timeout_ms)
{
	if (!b->rt)
		return;
	if (graceful && b->h.ctl_fd >= 0) {
		uint8_t t[4];
		proto_put_u32(t, timeout_ms);
		if (proto_send(b->h.ctl_fd, PROTO_STOP, 0, 0, t, sizeof(t)) == 0)
			graceful = wait_exit(&b->h, mono_ms() + timeout_ms + 1000, &b->exit_status);
		else
			graceful = false;
	}
	if (!graceful) {
		/* an init already gone keeps the status it died with: the kill below finds a
		 * zombie */
		b->rt->kill(&b->h);
		pd_debug("shutdown: killed");
		wait_exit(&b->h, mono_ms() + 10000, &b->exit_status);
		pd_debug("shutdown: exited");
	}
	if (b->h.ctl_fd >= 0)
		close(b->h.ctl_fd);
	b->h.ctl_fd = -1;
	b->rt->cleanup(&b->h);
	b->rt = NULL;
}
