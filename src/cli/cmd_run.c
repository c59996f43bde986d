/* cmd_run.c — `paddock run` and `paddock create`. */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/wsnap.h"
#include "cli/session.h"
#include "image/store.h"
#include "profile/profile.h"
#include "supervisor/net.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"
#include "util/log.h"

extern char **environ;

static const char box_options_help[] =
	"  -n, --name NAME        name the sandbox (default: a generated name)\n"
	"      --backend ns|vm|auto  how the box is built: namespaces, or a QEMU microVM with its own\n"
	"                         kernel (default auto: vm where KVM is proven usable, else ns)\n"
	"      --accel kvm|tcg|auto  a vm box's accelerator (default auto: KVM when a probe boot\n"
	"                         proves it, else TCG; kvm where it fails is an error)\n"
	"      --guest-aslr       keep a vm guest's address space randomisation under TCG too\n"
	"                         (default: off under TCG, where it makes every exec ~3x slower)\n"
	"      --image IMAGE      the box's root is this image (paddock image ls) instead of the\n"
	"                         host's read-only view\n"
	"  -e, --env K[=V]        set K in the box (a bare K forwards the host's value)\n"
	"      --memory SIZE      memory limit, e.g. 512M (default: 2G on ns, 1G on vm)\n"
	"      --cpus N           CPU limit, e.g. 1.5 (default: no limit on ns; a vm box gets\n"
	"                         1 vCPU under TCG, 2 under KVM)\n"
	"      --pids N           maximum number of tasks (default: 1024 on ns, 4096 on vm)\n"
	"      --disk SIZE        what the box can write (default 2G; on ns it lives in the box's\n"
	"                         memory and is capped to fit: 1G at the default --memory; on vm\n"
	"                         its disk grows by SIZE, the image's own free space held back)\n"
	"      --user agent|root  who commands run as inside (default agent, uid 1000)\n"
	"  -v, --volume H:B[:ro]  bind host path H at B inside the box\n"
	"      --workspace MODE   copy | ro | rw | none: how the project (-w) appears (default\n"
	"                         copy, except of / or your home); see paddock diff / apply\n"
	"  -w, --workdir DIR      the project (default: the current directory); with --workspace\n"
	"                         none, the directory to start in inside the box\n"
	"  -t, --tty / -T, --no-tty  force a terminal inside, or pipes (default: tty iff stdin is one)\n"
	"      --net PRESET       none | balanced | open: egress preset (default none)\n"
	"      --allow RULE       allow host, *.suffix or .suffix, optionally :PORT (repeatable)\n"
	"      --deny RULE        deny a rule (deny beats allow)\n"
	"      --resolve NAME=ADDR  dial NAME at ADDR (the only way to reach loopback/private addresses)\n"
	"  -p [HOSTADDR:]HOSTPORT:BOXPORT  publish a box port on the host (127.0.0.1 by default)\n";

static void run_help(void)
{
	printf("Usage: paddock run [OPTIONS] [--] [COMMAND [ARG...]]\n"
	       "       paddock run [OPTIONS] PROFILE [-- ARG...]\n\n"
	       "Run COMMAND (default: a shell) in a new sandbox and exit with its status.\n"
	       "Without --rm the sandbox stays running for exec/shell/stop/rm.\n\n"
	       "With a PROFILE (paddock profile ls), run the agent: its image is built once (and\n"
	       "reused; paddock image update PROFILE rebuilds it), the project is copied in, the\n"
	       "network reaches only the profile's allowedHosts, and the box PROFILE-DIRNAME stays for\n"
	       "diff/apply; running it again in the same directory reconnects to that box.\n\n"
	       "Options:\n"
	       "      --rm               remove the sandbox when the command exits\n%s"
	       "\nExit status: the command's own (128+N if killed by signal N); 125 if paddock\n"
	       "failed; 2 for a usage error.\n", box_options_help);
}

static void create_help(void)
{
	printf("Usage: paddock create [OPTIONS] NAME\n\n"
	       "Create a persistent sandbox and start it (idle) for exec/shell.\n\nOptions:\n%s",
	       box_options_help);
}

static char **default_command(void)
{
	char **v = NULL;
	v = strv_append(v, "/bin/sh");
	v = strv_append(v, "-c");
	v = strv_append(v, "if command -v bash >/dev/null; then exec bash -l; else exec sh -l; fi");
	return v;
}

static char **session_env(const struct box_opts *o)
{
	/* the host's TERM so a terminal session renders correctly; nothing else of the host */
	const char *term = getenv("TERM");
	char **env = NULL;
	/* what the supervisor's sup_merge_exec adds for a networked box: the explicit proxy */
	if (o->spec.net.preset)
		env = sup_net_proxy_env(env);
	for (char **e = o->spec.env; e && *e; e++)
		env = strv_append(env, *e);
	if (term && *term && o->tty != 0 && isatty(STDIN_FILENO)) {
		_cleanup_free_ char *kv = xasprintf("TERM=%s", term);
		env = strv_append(env, kv);
	}
	return env;
}

/* The end of a --rm box: its state directory is renamed out of sight (boxes/.gone-NAME-PID:
 * `ls` skips dot names, a box of the same name can be made at once) and one detached process
 * does the slow rest: waits for the killed box's PID 1 to finish exiting (the kernel frees the
 * box's memory then: 0.5 ms for an idle box, 170 ms for one holding a 326 MB workspace),
 * removes its cgroup, holds the last close of its network link (a TAP's waits for an RCU
 * grace period) and removes the state. This command returns with the box's processes dead
 * (SIGKILL delivered), not yet reaped. A box of the same name made meanwhile gets another
 * cgroup (ns_cgroup_leaf: the state directory's inode). `ls` sweeps a .gone- directory that
 * outlived its remover (a crash in that window). */
static void remove_later(const char *home, const char *dir, int link, struct box *box)
{
	_cleanup_free_ char *base = xstrdup(dir);
	_cleanup_free_ char *gone = xasprintf("%s/boxes/" STORE_GONE_PREFIX "%s-%d", home, basename(base), (int)getpid());
	store_drop_image_use(home, basename(base));
	bool renamed = rename(dir, gone) == 0;
	if (!renamed)
		store_remove(dir, NULL);
	/* the box (killed) finishes its exit and loses its cgroup in the same process */
	if (box && box_shutdown_later(box, link, renamed ? gone : NULL))
		return;
	if (box)
		box_shutdown(box, false, 0);
	fd_close_async_rm(link, renamed ? gone : NULL, true);
}

/* A profile's mounts on vm (a guest shares no host path): copied in once the box runs, before
 * the agent starts, over conn (run --rm: the box's own control fd) or through the box's
 * supervisor (-1). A read-write directory's changes stay in the box until `paddock diff
 * --mount` / `apply --mount` bring them back through the workspace's safe apply (its copy-in
 * manifest is recorded for that); a read-write file's through `paddock cp`, with the same
 * checks; with --rm (rm) they go with the box, which is said. A copy that fails is a note,
 * not a failed run. */
static void copy_mounts(int conn, bool rm, const char *name, const char *box_dir, const struct box_bind *m, size_t n)
{
	int recorded = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		/* a directory's contents land in the path; a file lands in its parent when the names
		 * agree (cp's rules) */
		_cleanup_free_ char *hb = xstrdup(m[i].host), *bb = xstrdup(m[i].box), *bd = xstrdup(m[i].box);
		bool dir = stat(m[i].host, &st) == 0 && S_ISDIR(st.st_mode);
		if (!dir && !streq(basename(hb), basename(bb))) {
			fprintf(stderr, "paddock: note: %s is not copied to %s on vm (a file lands under its own name)\n",
				m[i].host, m[i].box);
			continue;
		}
		pd_err err = {0};
		bool offer = dir && !m[i].readonly && !rm;
		_cleanup_free_ char *record = offer ? wsnap_mount_manifest(recorded) : NULL;
		if (cli_copy_in(conn, m[i].host, name, dir ? m[i].box : dirname(bd), record, &err) < 0) {
			fprintf(stderr, "paddock: note: %s was not copied to %s: %s\n", m[i].host, m[i].box, err.msg);
			continue;
		}
		if (offer && wsnap_mount_record(box_dir, m[i].box, m[i].host, &err) < 0) {
			fprintf(stderr, "paddock: note: %s: its changes can only come back with paddock cp\n", err.msg);
			offer = false;
		}
		recorded += offer;
		if (m[i].readonly)
			fprintf(stderr, "paddock: copied %s to %s (a vm box shares no host path)\n", m[i].host, m[i].box);
		else if (rm)
			fprintf(stderr,
				"paddock: copied %s to %s (a vm box shares no host path; changes there go with the box "
				"at exit — run without --rm to bring them back with paddock apply --mount)\n",
				m[i].host, m[i].box);
		else if (offer)
			fprintf(stderr,
				"paddock: copied %s to %s (a vm box shares no host path; changes stay in the box until "
				"paddock apply --mount %s %s brings them back — paddock diff --mount shows them)\n",
				m[i].host, m[i].box, m[i].box, name);
		else
			fprintf(stderr,
				"paddock: copied %s to %s (a vm box shares no host path; changes stay in the box until "
				"paddock cp brings them back)\n",
				m[i].host, m[i].box);
	}
}

/* run --rm: this process is the supervisor; no socket, and a detached process only for the
 * teardown (remove_later). */
static int run_in_process(struct box_opts *o, const char *home, char **cmd, const struct box_bind *copies,
			  size_t n_copies, pd_err *err)
{
	_cleanup_free_ char *dir = store_box_dir(home, o->spec.name);
	pd_debug("run --rm: start");
	int r = session_catch_signals();
	if (r < 0)
		return pd_error(err, r, "cannot catch signals");
	r = store_create(home, &o->spec, err);
	if (r < 0)
		return r;
	int lock = store_lock(dir, "supervisor.lock", false);
	pd_debug("run --rm: state created");
	struct box box;
	struct sup_net *net = NULL;
	int link = -1;
	/* the network runs on its own thread of this process for the session's life */
	r = box_boot(&o->spec, dir, &box, &net, err);
	bool up = r == 0;
	int status = EXIT_FAILURE_PD;
	pd_debug("run --rm: box up");
	if (r == 0 && !box_boot_cancel)
		cli_print_copyin_notes(dir);
	if (r == 0 && !box_boot_cancel && n_copies)
		copy_mounts(box.h.ctl_fd, true, o->spec.name, dir, copies, n_copies);
	/* a signal to end the run came while the box started (or its mounts were copied in): it
	 * ends before its command runs, as the command would have on that signal (a boot that
	 * gave up for it is not paddock's failure to report) */
	int sig = box_boot_cancel;
	if (sig) {
		status = 128 + sig;
		r = 0;
	} else if (up) {
		/* no supervisor here to merge the box's defaults: the request carries them */
		_cleanup_strv_ char **env = session_env(o);
		struct session_req req = {.argv = cmd, .env = env, .cwd = o->spec.workdir,
					  .user = o->spec.user, .tty = o->tty};
		r = session_run(box.h.ctl_fd, 1, &req, &status, err);
		pd_debug("run --rm: session ended");
	}
	if (up) {
		/* --rm: nothing inside is worth a graceful stop; kill the whole box at once, and take
		 * its network down while the kernel tears the box down (a few ms of namespaces and
		 * mounts) */
		box_kill(&box);
		link = sup_net_stop_keep_link(TAKE_PTR(net));
		pd_debug("run --rm: network stopped");
	}
	sup_net_stop(net);
	remove_later(home, dir, link, up ? &box : NULL);
	pd_debug("run --rm: state removed");
	if (lock >= 0)
		close(lock);
	return r < 0 ? r : status;
}

/* Runs cmd in the running box at dir through its supervisor; the supervisor adds the box's
 * -e, user and workdir itself, only TERM comes from here. */
static int attach(const char *dir, const struct box_opts *o, char **cmd, pd_err *err)
{
	_cleanup_close_ int fd = sup_connect(dir, err);
	if (fd < 0)
		return fd;
	_cleanup_strv_ char **env = NULL;
	const char *term = getenv("TERM");
	if (term && *term && o->tty != 0 && isatty(STDIN_FILENO)) {
		_cleanup_free_ char *kv = xasprintf("TERM=%s", term);
		env = strv_append(env, kv);
	}
	int lock = store_lock_shared(dir, STORE_SNAPSHOT_LOCK); /* as exec's */
	struct session_req req = {.argv = cmd, .env = env, .tty = o->tty, .start_lock = &lock};
	int status;
	int r = session_run(fd, 1, &req, &status, err);
	return r < 0 ? r : status;
}

static int run_persistent(struct box_opts *o, const char *home, char **cmd, const struct box_bind *copies,
			  size_t n_copies, pd_err *err)
{
	_cleanup_free_ char *dir = store_box_dir(home, o->spec.name);
	int r = store_create(home, &o->spec, err);
	if (r < 0)
		return r;
	r = supervisor_spawn(dir, err);
	if (r < 0) {
		store_remove(dir, NULL);
		return r;
	}
	cli_print_copyin_notes(dir);
	copy_mounts(-1, false, o->spec.name, dir, copies, n_copies);
	return attach(dir, o, cmd, err);
}

/* ---- paddock run PROFILE [-- ARGS...] ---- */

#define PROFILE_IMAGE_OLD (7 * 86400)

/* PROFILE-DIRNAME (the project's last component) as a box name: other characters become '-'. */
static char *profile_box_name(const char *profile, const char *project)
{
	char cwd[PATH_MAX];
	if (!project)
		project = getcwd(cwd, sizeof(cwd)); /* --workspace none: the directory it ran in */
	const char *base = project ? strrchr(project, '/') : NULL;
	base = base && base[1] ? base + 1 : "box";
	char *n = xasprintf("%s-%s", profile, base);
	for (char *c = n + 1; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
		      *c == '.' || *c == '-'))
			*c = '-';
	if (strlen(n) > BOX_NAME_MAX)
		n[BOX_NAME_MAX] = '\0';
	return n;
}

/* The same profile and project: the box is started if it is not running and the agent is
 * launched in it again (its copy of the project, with what the agent did before). */
static bool strv_same(char *const *a, char *const *b)
{
	size_t n = strv_len(a);
	if (n != strv_len(b))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!streq(a[i], b[i]))
			return false;
	return true;
}

static int profile_reconnect(const char *home, const struct box_opts *o, const struct profile *p, char **cmd,
			     pd_err *err)
{
	_cleanup_free_ char *dir = store_box_dir(home, o->spec.name);
	struct box_spec spec = {0};
	int r = store_load_spec(dir, &spec, err);
	if (r < 0)
		return r;
	bool same = spec.profile && streq(spec.profile, p->name) &&
		    ((!spec.project && !o->spec.project) ||
		     (spec.project && o->spec.project && streq(spec.project, o->spec.project)));
	if (!same)
		r = pd_error_msg(err, EEXIST, "a sandbox named '%s' exists for %s %s; name another with --name",
				 o->spec.name, spec.profile ? "profile" : "a plain run in", spec.profile ? spec.profile : spec.project ? spec.project : "/");
	/* a deny asked for now is never dropped with a note (that would fail open): refused,
	 * with the way to apply it to the box that exists */
	if (r == 0 && strv_len(o->spec.net.deny)) {
		int u = cli_usage("run", "%s exists and --deny applies only when a box is made: apply it with "
					 "'paddock policy deny %s --sandbox %s' (live), or 'paddock rm -f %s' first",
				  o->spec.name, o->spec.net.deny[0], o->spec.name, o->spec.name);
		box_spec_free(&spec);
		return u;
	}
	/* options that make a box do not change one that exists: say which were given in vain */
	char differ[200] = "";
	const struct {
		bool d;
		const char *opt;
	} opts[] = {
		{!streq(spec.backend ? spec.backend : "", o->spec.backend ? o->spec.backend : ""), "--backend"},
		{o->spec.memory && o->spec.memory != spec.memory, "--memory"},
		{o->spec.cpus_milli && o->spec.cpus_milli != spec.cpus_milli, "--cpus"},
		{o->spec.pids && o->spec.pids != spec.pids, "--pids"},
		{o->spec.disk && o->spec.disk != spec.disk, "--disk"},
		/* (here the lists hold only what was given on this command line: the profile's
		 * own are merged in when a box is made) */
		{strv_len(o->spec.env) > 0, "-e"},
		{!streq(spec.net.preset ? spec.net.preset : "", o->spec.net.preset ? o->spec.net.preset : ""), "--net"},
		{strv_len(o->spec.net.allow) > 0, "--allow"},
		{!strv_same(spec.net.resolve, o->spec.net.resolve), "--resolve"},
		{!strv_same(spec.net.publish, o->spec.net.publish), "-p"},
	};
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(opts); i++)
		if (opts[i].d)
			snprintf(differ + strlen(differ), sizeof(differ) - strlen(differ), "%s%s", differ[0] ? ", " : "",
				 opts[i].opt);
	if (differ[0])
		fprintf(stderr, "paddock: note: %s exists: %s apply only to a new box (paddock rm -f %s, then run again)\n",
			o->spec.name, differ, o->spec.name);
	box_spec_free(&spec);
	if (r < 0)
		return r;
	bool started;
	if ((r = cli_start_box(dir, &started, err)) < 0)
		return r;
	if (started)
		fprintf(stderr, "paddock: starting %s again\n", o->spec.name);
	else
		fprintf(stderr, "paddock: reconnecting to %s\n", o->spec.name);
	return attach(dir, o, cmd, err);
}

/* mounts: bound on ns (read-only unless readOnly is false); on vm collected in *copies for
 * copy_mounts; a missing host path is skipped with a note. */
static void profile_binds(const struct profile *p, struct box_spec *spec, struct box_bind **copies,
			  size_t *n_copies)
{
	const char *home = getenv("HOME");
	bool vm = streq(spec->backend, "vm");
	for (size_t i = 0; i < p->n_mounts; i++) {
		_cleanup_free_ char *host = profile_expand_home(p->mounts[i].host_path, home ? home : "/nonexistent");
		if (access(host, F_OK) < 0) {
			fprintf(stderr, "paddock: note: %s does not exist; not mounted at %s\n", host, p->mounts[i].container_path);
			continue;
		}
		/* as for -v (opts.c): at, under or above the project's places in the box, the
		 * copy-in would write into the mounted host directory (on vm, the copy would join
		 * the project's and come back with apply) */
		const char *b = p->mounts[i].container_path;
		if (spec->project && (path_under(b, "/workspace") || path_under(b, spec->project) || path_under(spec->project, b))) {
			fprintf(stderr, "paddock: note: not mounted at %s: it overlaps the project's place in the box\n", b);
			continue;
		}
		struct box_bind **v = vm ? copies : &spec->binds;
		size_t *n = vm ? n_copies : &spec->n_binds;
		*v = xrealloc(*v, (*n + 1) * sizeof(**v));
		(*v)[(*n)++] = (struct box_bind){xstrdup(host), xstrdup(p->mounts[i].container_path), p->mounts[i].read_only};
	}
}

static void binds_free(struct box_bind *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].host);
		free(v[i].box);
	}
	free(v);
}

static void note_age(const struct img_record *img, const char *profile)
{
	int64_t age = (int64_t)time(NULL) - img->created;
	if (age > PROFILE_IMAGE_OLD)
		fprintf(stderr, "paddock: the %s image was built %lld days ago; 'paddock image update %s' picks up new releases\n",
			profile, (long long)(age / 86400), profile);
}

static int run_profile(struct box_opts *o, const struct profile *p, char **args, pd_err *err)
{
	_cleanup_free_ char *home = NULL;
	int r = store_home(&home, err);
	if (r < 0)
		return r;
	if (!o->spec.name)
		o->spec.name = profile_box_name(p->name, o->spec.project);
	char **cmd = strv_copy(p->launch_command);
	for (char **a = args; a && *a; a++)
		cmd = strv_append(cmd, *a);
	_cleanup_strv_ char **cmdv = cmd;
	_cleanup_free_ char *dir = store_box_dir(home, o->spec.name);
	if (!o->rm && access(dir, F_OK) == 0)
		return profile_reconnect(home, o, p, cmdv, err);
	_cleanup_img_record_ struct img_record *img = NULL;
	if ((r = cli_profile_image(p, false, o->spec.net.resolve, &img, err)) < 0)
		return r;
	note_age(img, p->name);
	/* the profile's environment first, so -e given here wins */
	_cleanup_strv_ char **penv = profile_env_resolve(p, environ);
	for (char **e = o->spec.env; e && *e; e++)
		penv = strv_append(penv, *e);
	strv_free(o->spec.env);
	o->spec.env = TAKE_PTR(penv);
	/* the profile's allowedHosts (empty = nothing) plus any --allow given here */
	_cleanup_strv_ char **rules = profile_egress_rules(p);
	for (char **a = o->spec.net.allow; a && *a; a++)
		rules = strv_append(rules, *a);
	strv_free(o->spec.net.allow);
	o->spec.net.allow = TAKE_PTR(rules);
	struct box_bind *copies = NULL;
	size_t n_copies = 0;
	profile_binds(p, &o->spec, &copies, &n_copies);
	o->spec.profile = xstrdup(p->name);
	if ((r = cli_image_for_box(img->name, &o->spec, NULL, err)) == 0)
		r = o->rm ? run_in_process(o, home, cmdv, copies, n_copies, err) : run_persistent(o, home, cmdv, copies, n_copies, err);
	binds_free(copies, n_copies);
	if (r >= 0 && !o->rm)
		fprintf(stderr, "paddock: %s keeps the agent's work: paddock diff %s, paddock apply %s, paddock rm %s\n",
			o->spec.name, o->spec.name, o->spec.name, o->spec.name);
	return r;
}

/* `run NAME`: NAME is a profile when it comes before any "--" and a profile of that name
 * exists (`run -- NAME` always runs the command). -ENOENT when it is not one. */
static int find_profile(int argc, char **argv, struct profile **ret, pd_err *err)
{
	if (optind >= argc || (optind > 1 && streq(argv[optind - 1], "--")))
		return -ENOENT;
	_cleanup_strv_ char **warn = NULL;
	_cleanup_strv_ char **names = NULL;
	if (!profile_name_valid(argv[optind]) || profile_list(&names, NULL) < 0 || !strv_contains(names, argv[optind]))
		return -ENOENT;
	int r = profile_load(argv[optind], ret, &warn, err);
	for (char **w = warn; w && *w; w++)
		fprintf(stderr, "paddock: warning: %s\n", *w);
	return r;
}

int cmd_run(int argc, char **argv)
{
	struct box_opts o;
	int r = cli_parse_box_opts("run", argc, argv, &o);
	if (r || o.help) {
		if (o.help)
			run_help();
		box_spec_free(&o.spec);
		return r;
	}
	pd_err err = {0};
	_cleanup_free_ char *home = NULL;
	_cleanup_strv_ char **cmd = optind < argc ? strv_copy(argv + optind) : NULL;
	if ((r = cli_check_command("run", cmd, o.spec.env)) != 0 || (r = cli_check_tty("run", o.tty)) != 0) {
		box_spec_free(&o.spec);
		return r;
	}
	o.spec.rm = o.rm;
	if (cli_apply_workspace(&o, &err) < 0) {
		box_spec_free(&o.spec);
		return cli_usage("run", "%s", err.msg);
	}
	_cleanup_profile_ struct profile *prof = NULL;
	r = o.image ? -ENOENT : find_profile(argc, argv, &prof, &err);
	if (r == 0) {
		char **args = argv + optind + 1;
		if (*args && streq(*args, "--"))
			args++;
		r = run_profile(&o, prof, args, &err);
		box_spec_free(&o.spec);
		return r < 0 ? cli_fail(&err) : r;
	}
	if (r != -ENOENT) {
		box_spec_free(&o.spec);
		return cli_fail(&err);
	}
	if (!o.spec.name)
		o.spec.name = cli_random_name(o.rm ? "run" : "box");
	r = store_home(&home, &err);
	if (r == 0 && o.image)
		r = cli_image_for_box(o.image, &o.spec, cmd ? NULL : &cmd, &err);
	if (r == 0)
		r = cli_vm_default_root(&o, home, cmd ? NULL : &cmd, &err);
	if (!cmd)
		cmd = default_command();
	if (r == 0)
		r = o.rm ? run_in_process(&o, home, cmd, NULL, 0, &err) : run_persistent(&o, home, cmd, NULL, 0, &err);
	box_spec_free(&o.spec);
	return r < 0 ? cli_fail(&err) : r;
}

int cmd_create(int argc, char **argv)
{
	struct box_opts o;
	int r = cli_parse_box_opts("create", argc, argv, &o);
	if (r || o.help) {
		if (o.help)
			create_help();
		box_spec_free(&o.spec);
		return r;
	}
	if (o.rm || optind < argc - 1 || (optind == argc - 1 && o.spec.name)) {
		box_spec_free(&o.spec);
		return o.rm ? cli_usage("create", "--rm is for run: a created sandbox stays until 'paddock rm'")
			    : cli_usage("create", "create takes one NAME (or --name) and no command");
	}
	if (optind == argc - 1) {
		if (cli_check_name("create", argv[optind])) {
			box_spec_free(&o.spec);
			return EXIT_USAGE;
		}
		o.spec.name = xstrdup(argv[optind]);
	}
	if (!o.spec.name)
		o.spec.name = cli_random_name("box");
	pd_err err = {0};
	_cleanup_free_ char *home = NULL;
	if (cli_apply_workspace(&o, &err) < 0) {
		box_spec_free(&o.spec);
		return cli_usage("create", "%s", err.msg);
	}
	/* Ctrl-C or a TERM while the box is made undoes it: the supervisor is detached and
	 * ignores them, so the box came up running behind a command that reported failure */
	r = session_catch_signals();
	if (r < 0)
		r = pd_error(&err, r, "cannot catch signals");
	if (r == 0)
		r = store_home(&home, &err);
	if (r == 0 && o.image)
		r = cli_image_for_box(o.image, &o.spec, NULL, &err);
	if (r == 0)
		r = cli_vm_default_root(&o, home, NULL, &err);
	_cleanup_free_ char *dir = r == 0 ? store_box_dir(home, o.spec.name) : NULL;
	if (r == 0 && box_boot_cancel) {
		box_spec_free(&o.spec);
		return 128 + box_boot_cancel;
	}
	if (r == 0)
		r = store_create(home, &o.spec, &err);
	if (r == 0 && (r = supervisor_spawn(dir, &err)) < 0)
		store_remove(dir, NULL);
	if (r < 0 && box_boot_cancel && dir) {
		/* the supervisor gave up the start when told (supervisor_spawn) and removed it */
		fprintf(stderr, "paddock: interrupted: %s was not created\n", o.spec.name);
		box_spec_free(&o.spec);
		return 128 + box_boot_cancel;
	}
	if (r == 0 && box_boot_cancel) {
		pd_err gone = {0};
		(void)cli_stop_box(dir, 0, false, true, &gone);
		(void)store_remove(dir, NULL);
		fprintf(stderr, "paddock: interrupted: %s was not created\n", o.spec.name);
		box_spec_free(&o.spec);
		return 128 + box_boot_cancel;
	}
	if (r == 0)
		cli_print_copyin_notes(dir);
	if (r == 0)
		printf("%s\n", o.spec.name);
	box_spec_free(&o.spec);
	return r < 0 ? cli_fail(&err) : 0;
}
