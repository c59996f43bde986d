/* cmd_run.c — `paddock run` and `paddock create`. */
#include <signal.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "supervisor/net.h"
#include "supervisor/supervisor.h"
#include "util/log.h"

static const char box_options_help[] =
	"  -n, --name NAME        name the sandbox (default: a generated name)\n"
	"      --backend ns|auto  how the box is built (default: auto = ns for now)\n"
	"      --image IMAGE      the box's root is this image (paddock image ls) instead of the\n"
	"                         host's read-only view\n"
	"  -e, --env K[=V]        set K in the box (a bare K forwards the host's value)\n"
	"      --memory SIZE      memory limit (default 2G), e.g. 512M\n"
	"      --cpus N           CPU limit, e.g. 1.5 (default: no limit)\n"
	"      --pids N           maximum number of tasks (default 1024)\n"
	"      --disk SIZE        size of the box's writable layer (default 2G)\n"
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
	printf("Usage: paddock run [OPTIONS] [--] [COMMAND [ARG...]]\n\n"
	       "Run COMMAND (default: a shell) in a new sandbox and exit with its status.\n"
	       "Without --rm the sandbox stays running for exec/shell/stop/rm.\n\n"
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

/* run --rm: this process is the supervisor; no socket, no detached process. */
static int run_in_process(struct box_opts *o, const char *home, char **cmd, pd_err *err)
{
	_cleanup_free_ char *dir = store_box_dir(home, o->spec.name);
	pd_debug("run --rm: start");
	int r = store_create(home, &o->spec, err);
	if (r < 0)
		return r;
	int lock = store_lock(dir, "supervisor.lock", false);
	pd_debug("run --rm: state created");
	struct box box;
	struct sup_net *net = NULL;
	/* the network runs on its own thread of this process for the session's life */
	r = box_boot(&o->spec, dir, &box, &net, err);
	int status = EXIT_FAILURE_PD;
	pd_debug("run --rm: box up");
	if (r == 0) {
		/* no supervisor here to merge the box's defaults: the request carries them */
		_cleanup_strv_ char **env = session_env(o);
		struct session_req req = {.argv = cmd, .env = env, .cwd = o->spec.workdir,
					  .user = o->spec.user, .tty = o->tty};
		r = session_run(box.h.ctl_fd, 1, &req, &status, err);
		pd_debug("run --rm: session ended");
		/* --rm: nothing inside is worth a graceful stop; kill the whole box at once, and take
		 * its network down while the kernel tears the box down (a few ms of namespaces and
		 * mounts) */
		box_kill(&box);
		sup_net_stop(TAKE_PTR(net));
		pd_debug("run --rm: network stopped");
		box_shutdown(&box, false, 0);
		pd_debug("run --rm: box gone");
	}
	sup_net_stop(net);
	store_remove(dir, NULL);
	pd_debug("run --rm: state removed");
	if (lock >= 0)
		close(lock);
	return r < 0 ? r : status;
}

static int run_persistent(struct box_opts *o, const char *home, char **cmd, pd_err *err)
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
	_cleanup_close_ int fd = sup_connect(dir, err);
	if (fd < 0)
		return fd;
	/* the supervisor adds the box's -e, user and workdir itself; only TERM comes from here */
	_cleanup_strv_ char **env = NULL;
	const char *term = getenv("TERM");
	if (term && *term && o->tty != 0 && isatty(STDIN_FILENO)) {
		_cleanup_free_ char *kv = xasprintf("TERM=%s", term);
		env = strv_append(env, kv);
	}
	struct session_req req = {.argv = cmd, .env = env, .tty = o->tty};
	int status;
	r = session_run(fd, 1, &req, &status, err);
	return r < 0 ? r : status;
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
	if (!o.spec.name)
		o.spec.name = cli_random_name(o.rm ? "run" : "box");
	o.spec.rm = o.rm;
	if (cli_apply_workspace(&o, &err) < 0) {
		box_spec_free(&o.spec);
		return cli_usage("run", "%s", err.msg);
	}
	r = store_home(&home, &err);
	if (r == 0 && o.image)
		r = cli_image_for_box(o.image, &o.spec, cmd ? NULL : &cmd, &err);
	if (!cmd)
		cmd = default_command();
	if (r == 0)
		r = o.rm ? run_in_process(&o, home, cmd, &err) : run_persistent(&o, home, cmd, &err);
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
		return cli_usage("create", "create takes one NAME (or --name) and no command");
	}
	if (optind == argc - 1) {
		if (!box_name_valid(argv[optind])) {
			box_spec_free(&o.spec);
			return cli_usage("create", "invalid name '%s'", argv[optind]);
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
	r = store_home(&home, &err);
	if (r == 0 && o.image)
		r = cli_image_for_box(o.image, &o.spec, NULL, &err);
	_cleanup_free_ char *dir = r == 0 ? store_box_dir(home, o.spec.name) : NULL;
	if (r == 0)
		r = store_create(home, &o.spec, &err);
	if (r == 0 && (r = supervisor_spawn(dir, &err)) < 0)
		store_remove(dir, NULL);
	if (r == 0)
		printf("%s\n", o.spec.name);
	box_spec_free(&o.spec);
	return r < 0 ? cli_fail(&err) : 0;
}
