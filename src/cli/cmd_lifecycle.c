/* cmd_lifecycle.c — `paddock start`, `paddock stop` and `paddock rm`: the verbs that change
 * whether a sandbox runs. Each takes the box's `lock` so concurrent calls serialise. */
#include <poll.h>
#include <getopt.h>
#include <signal.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/wsnap.h"
#include "runtime/ns/ns_cgroup.h"
#include "supervisor/supervisor.h"
#include "supervisor/wsbox.h"
#include "util/fdio.h"

/* Waits until no supervisor holds the box (its supervisor.lock is free). */
static bool wait_supervisor_gone(const char *dir, int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;
	do {
		int fd = store_lock(dir, "supervisor.lock", false);
		if (fd >= 0) {
			close(fd);
			return true;
		}
		usleep(5000);
	} while (mono_ms() < end);
	return false;
}

/* Asks the supervisor to stop the box and waits for it to exit. Falls back to SIGKILL of
 * the supervisor, which takes the box down with it (init dies when its channel closes).
 * save: keep the box's workspace first; when that fails the box keeps running, unless
 * force (its unsaved work is then lost, which is said). */
int cli_stop_box(const char *dir, uint32_t timeout_ms, bool save, bool force, pd_err *err)
{
	struct box_state st;
	enum box_status now = store_status(dir, &st);
	/* a dead box (its supervisor killed): stopping it records that, and frees its cgroup */
	if (now == BOX_STATUS_DEAD && !st.in_run) {
		_cleanup_free_ char *base = xstrdup(dir);
		_cleanup_free_ char *leaf = ns_cgroup_leaf(basename(base), dir);
		ns_cgroup_remove_stale(leaf);
		st.status = BOX_STATUS_STOPPED;
		st.supervisor_pid = 0;
		st.stopped = (int64_t)time(NULL);
		return store_save_state(dir, &st, err);
	}
	if (now != BOX_STATUS_RUNNING)
		return 0;
	if (st.in_run)
		return pd_error_msg(err, EBUSY, "sandbox '%s' runs inside its 'paddock run --rm', which ends it with its "
						"command (Ctrl-C there, or signal that process); it takes no stop from outside",
				    strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir);
	/* the ns box's writable layer dies with it: keep the agent's work for diff/apply */
	if (save && wsnap_save_tar(dir, err) < 0) {
		if (!force) {
			char why[sizeof(err->msg)];
			snprintf(why, sizeof(why), "%s", err->msg);
			return pd_error_msg(err, err->code ?: EIO,
					    "%s; the sandbox keeps running so its work is not lost (take it out with "
					    "paddock diff/apply or paddock cp; 'paddock stop --force' stops it and loses it)",
					    why);
		}
		fputs("paddock: warning: ", stderr);
		pd_fputs_escaped(err->msg, stderr); /* it may quote the box's own words */
		fputs("; stopping anyway (--force): the box's unsaved work is lost\n", stderr);
	}
	int fd = sup_connect(dir, err);
	if (fd >= 0) {
		uint8_t t[4];
		proto_put_u32(t, timeout_ms);
		if (proto_send(fd, PROTO_STOP, 0, 0, t, 4) == 0) {
			uint8_t buf[PROTO_HDR_SIZE + 64];
			/* the answer is an ACK or EOF; both mean the box is going away. A supervisor
			 * that says nothing in time (its box wedged its control channel) is killed
			 * below: stop always ends */
			int64_t end = mono_ms() + (int64_t)timeout_ms + 5000;
			struct pollfd p = {.fd = fd, .events = POLLIN};
			for (int64_t left; (left = end - mono_ms()) > 0;) {
				if (poll(&p, 1, (int)left) <= 0)
					continue;
				if (read(fd, buf, sizeof(buf)) <= 0)
					break;
			}
		}
		close(fd);
	}
	if (wait_supervisor_gone(dir, (int)timeout_ms + 5000))
		return 0;
	if (st.supervisor_pid > 1)
		kill(st.supervisor_pid, SIGKILL);
	if (wait_supervisor_gone(dir, 5000)) {
		/* a killed supervisor removes no cgroup: the box's processes die with it (their
		 * parent-death signal), then their cgroup is empty and goes here */
		_cleanup_free_ char *base = xstrdup(dir);
		_cleanup_free_ char *leaf = ns_cgroup_leaf(basename(base), dir);
		for (int i = 0; i < 100 && !ns_cgroup_remove_stale(leaf); i++)
			usleep(20000);
		return 0;
	}
	return pd_error_msg(err, ETIMEDOUT, "the sandbox's supervisor (pid %d) did not exit", (int)st.supervisor_pid);
}

static int parse_names(const char *verb, int argc, char **argv, const struct option *opts, const char *help,
		       int (*each)(const char *name, void *ctx), void *ctx, int (*onopt)(int c, void *ctx))
{
	int c, fails = 0;
	/* the short forms of this verb's own options only (start takes no -f) */
	char shorts[16] = "+";
	for (const struct option *o = opts; o->name && strlen(shorts) < sizeof(shorts) - 3; o++)
		if (o->val == 'f' || o->val == 'a' || o->val == 't' || o->val == 'h') {
			size_t n = strlen(shorts);
			shorts[n] = (char)o->val;
			shorts[n + 1] = o->has_arg == required_argument ? ':' : '\0';
			shorts[n + 2] = '\0';
		}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(help, stdout);
			return 0;
		}
		if (c == 't' && onopt(c, ctx) < 0)
			return cli_usage(verb, "-t wants whole seconds from 0 to 600, got '%s'", optarg);
		if (c == '?' || (c != 't' && onopt(c, ctx) < 0))
			return cli_usage(verb, "unknown option or missing value: '%s'", argv[optind - 1]);
	}
	if (optind >= argc)
		return -1; /* caller decides whether no names is fine */
	for (int i = optind; i < argc; i++)
		if (cli_check_name(verb, argv[i]))
			return EXIT_USAGE;
	for (int i = optind; i < argc; i++)
		if (each(argv[i], ctx) != 0)
			fails++;
	return fails ? EXIT_FAILURE_PD : 0;
}

struct life_ctx {
	uint32_t timeout_ms;
	bool force, all;
};

static int life_opt(int c, void *vctx)
{
	struct life_ctx *x = vctx;
	if (c == 'f')
		x->force = true;
	else if (c == 'a')
		x->all = true;
	else if (c == 't') {
		uint32_t s;
		if (cli_parse_u32(optarg, 0, 600, &s) < 0)
			return -1;
		x->timeout_ms = s * 1000;
	} else
		return -1;
	return 0;
}

int cli_start_box(const char *dir, bool *ret_started, pd_err *err)
{
	_cleanup_close_ _unused_ int lock = store_lock(dir, "lock", true);
	struct box_state st;
	*ret_started = store_status(dir, &st) != BOX_STATUS_RUNNING;
	const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	/* a `run --rm` box lives and dies with its run: one left by a run that was killed is
	 * only ever removed, never turned into a persistent box */
	if (st.in_run)
		return pd_error_msg(err, EINVAL, "sandbox '%s' was made by 'paddock run --rm' and %s; remove it with 'paddock rm'", name,
				    st.status == BOX_STATUS_RUNNING ? "runs inside that run" : "its run is gone");
	struct box_spec spec = {0};
	/* a box whose configuration cannot be read cannot start: said with what removes it (the
	 * supervisor would only say what is wrong with the file, not of which box) */
	if (*ret_started && store_load_spec(dir, &spec, err) < 0) {
		char why[sizeof(err->msg)];
		snprintf(why, sizeof(why), "%s", err->msg);
		return pd_error_msg(err, err->code ?: EIO, "sandbox '%s' is broken: %s; 'paddock rm %s' removes it", name,
				    why, name);
	}
	/* an ns box that died kept nothing of its writable layer since its last stop */
	if (*ret_started && st.status == BOX_STATUS_DEAD && spec.backend && streq(spec.backend, "ns"))
		fprintf(stderr, "paddock: note: %s died without a stop: what it wrote since its last stop is gone; "
				"it starts from what that stop saved\n", name);
	box_spec_free(&spec);
	if (*ret_started) { /* the temp file of a save whose stop was killed half-way */
		_cleanup_free_ char *tmp = xasprintf("%s/%s.tmp", dir, WSBOX_SAVED_TAR);
		(void)unlink(tmp);
	}
	return *ret_started ? supervisor_spawn(dir, err) : 0;
}

static int start_one(const char *name, void *vctx)
{
	pd_err err = {0};
	_cleanup_free_ char *dir = NULL;
	bool started;
	if (cli_box_dir(name, NULL, &dir, &err) < 0 || cli_start_box(dir, &started, &err) < 0)
		return cli_fail(&err);
	return 0;
}

static const struct option start_opts[] = {{"help", no_argument, NULL, 'h'}, {0}};

int cmd_start(int argc, char **argv)
{
	struct life_ctx x = {0};
	int r = parse_names("start", argc, argv, start_opts,
			    "Usage: paddock start NAME...\n\nStart stopped sandboxes.\n", start_one, &x, life_opt);
	return r < 0 ? cli_usage("start", "which sandbox?") : r;
}

static int stop_one(const char *name, void *vctx)
{
	struct life_ctx *x = vctx;
	pd_err err = {0};
	_cleanup_free_ char *dir = NULL;
	int r = cli_box_dir(name, NULL, &dir, &err);
	if (r < 0)
		return cli_fail(&err);
	_cleanup_close_ _unused_ int lock = store_lock(dir, "lock", true);
	r = cli_stop_box(dir, x->timeout_ms, true, x->force, &err);
	return r < 0 ? cli_fail(&err) : 0;
}

static const struct option stop_opts[] = {
	{"time", required_argument, NULL, 't'}, {"force", no_argument, NULL, 'f'},
	{"help", no_argument, NULL, 'h'}, {0}};

int cmd_stop(int argc, char **argv)
{
	struct life_ctx x = {.timeout_ms = 5000};
	int r = parse_names("stop", argc, argv, stop_opts,
			    "Usage: paddock stop [-t SECONDS] [-f] NAME...\n\nStop sandboxes: their processes get SIGTERM, "
			    "then SIGKILL after SECONDS (default 5). The workspace is saved first; a sandbox "
			    "whose workspace cannot be saved keeps running unless -f (--force).\n", stop_one, &x, life_opt);
	return r < 0 ? cli_usage("stop", "which sandbox?") : r;
}

static int rm_one(const char *name, void *vctx)
{
	struct life_ctx *x = vctx;
	pd_err err = {0};
	_cleanup_free_ char *dir = NULL;
	int r = cli_box_dir(name, NULL, &dir, &err);
	if (r < 0)
		return cli_fail(&err);
	_cleanup_close_ _unused_ int lock = store_lock(dir, "lock", true);
	enum box_status st = store_status(dir, NULL);
	if (st != BOX_STATUS_RUNNING) {
		/* a dead box's supervisor (or a SIGKILLed `run --rm`, whose box reads "dead")
		 * never got to clean up; rmdir only ever removes an empty cgroup */
		_cleanup_free_ char *leaf = ns_cgroup_leaf(name, dir);
		ns_cgroup_remove_stale(leaf);
	}
	if (st == BOX_STATUS_RUNNING) {
		if (!x->force) {
			pd_error_msg(&err, EBUSY, "sandbox '%s' is running; stop it first or use rm -f", name);
			return cli_fail(&err);
		}
		if ((r = cli_stop_box(dir, 0, false, true, &err)) < 0)
			return cli_fail(&err);
	}
	r = store_remove(dir, &err);
	return r < 0 ? cli_fail(&err) : 0;
}

static const struct option rm_opts[] = {
	{"force", no_argument, NULL, 'f'}, {"all", no_argument, NULL, 'a'},
	{"help", no_argument, NULL, 'h'}, {0}};

int cmd_rm(int argc, char **argv)
{
	struct life_ctx x = {0};
	int r = parse_names("rm", argc, argv, rm_opts,
			    "Usage: paddock rm [-f] NAME... | paddock rm [-f] --all\n\nRemove sandboxes and "
			    "everything they hold. -f stops running ones first.\n", rm_one, &x, life_opt);
	if (r >= 0)
		return r;
	if (!x.all)
		return cli_usage("rm", "which sandbox? (or --all)");
	pd_err err = {0};
	_cleanup_free_ char *home = NULL;
	_cleanup_strv_ char **names = NULL;
	if (store_home(&home, &err) < 0 || store_list(home, &names, &err) < 0)
		return cli_fail(&err);
	int fails = 0;
	for (size_t i = 0; names[i]; i++)
		fails += rm_one(names[i], &x) != 0;
	return fails ? EXIT_FAILURE_PD : 0;
}
