/* cmd_exec.c — `paddock exec NAME -- CMD…` and `paddock shell NAME`. */
#include <getopt.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "supervisor/supervisor.h"

struct exec_opts {
	char **env;
	const char *user, *cwd;
	int tty;
};

static int parse_exec(const char *verb, int argc, char **argv, struct exec_opts *o, bool *help)
{
	static const struct option opts[] = {
		{"env", required_argument, NULL, 'e'}, {"user", required_argument, NULL, 'u'},
		{"workdir", required_argument, NULL, 'w'}, {"tty", no_argument, NULL, 't'},
		{"no-tty", no_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'}, {0}};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+e:u:w:tTh", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (cli_env_arg(optarg, &o->env) < 0)
				return cli_usage(verb, "-e wants KEY=VALUE or KEY, got '%s'", optarg);
			break;
		case 'u':
			if (!streq(optarg, "agent") && !streq(optarg, "root"))
				return cli_usage(verb, "--user must be agent or root");
			o->user = optarg;
			break;
		case 'w':
			if (optarg[0] != '/')
				return cli_usage(verb, "-w wants an absolute path inside the box");
			o->cwd = optarg;
			break;
		case 't': o->tty = 1; break;
		case 'T': o->tty = 0; break;
		case 'h': *help = true; return 0;
		default: return cli_usage(verb, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	return 0;
}

static int exec_in(const char *name, struct exec_opts *o, char **cmd)
{
	pd_err err = {0};
	_cleanup_free_ char *dir = NULL;
	if (cli_box_dir(name, NULL, &dir, &err) < 0)
		return cli_fail(&err);
	struct box_state bs;
	enum box_status st = store_status(dir, &bs);
	if (st == BOX_STATUS_RUNNING && bs.in_run) {
		pd_error_msg(&err, EBUSY, "sandbox '%s' runs inside its 'paddock run --rm' and takes no other session "
					  "(create it with 'paddock create' to exec into it)", name);
		return cli_fail(&err);
	}
	if (st != BOX_STATUS_RUNNING) {
		pd_error_msg(&err, ESRCH, "sandbox '%s' is %s; start it with 'paddock start %s'", name,
			     box_status_name(st), name);
		return cli_fail(&err);
	}
	_cleanup_close_ int fd = sup_connect(dir, &err);
	if (fd < 0)
		return cli_fail(&err);
	const char *term = getenv("TERM");
	if (term && isatty(STDIN_FILENO) && o->tty != 0) {
		_cleanup_free_ char *kv = xasprintf("TERM=%s", term);
		o->env = strv_append(o->env, kv);
	}
	/* not while a snapshot holds the box paused: this process would run unpaused in it */
	int lock = store_lock_shared(dir, STORE_SNAPSHOT_LOCK);
	struct session_req req = {.argv = cmd, .env = o->env, .cwd = o->cwd, .user = o->user, .tty = o->tty,
				  .start_lock = &lock};
	int status;
	if (session_run(fd, 1, &req, &status, &err) < 0)
		return cli_fail(&err);
	return status;
}

int cmd_exec(int argc, char **argv)
{
	struct exec_opts o = {.tty = -1};
	bool help = false;
	int r = parse_exec("exec", argc, argv, &o, &help);
	if (r == 0 && help)
		printf("Usage: paddock exec [-e K[=V]] [--user agent|root] [-w DIR] [-t|-T] NAME [--] CMD [ARG...]\n\n"
		       "Run a command in a running sandbox; exits with its status (128+N if killed by\n"
		       "signal N). Signals to paddock go to the command; a second SIGINT or SIGTERM while\n"
		       "the sandbox has said nothing since the first stops waiting for it (exit 128+N).\n");
	if (r || help) {
		strv_free(o.env);
		return r;
	}
	if (optind >= argc) {
		strv_free(o.env);
		return cli_usage("exec", "which sandbox?");
	}
	const char *name = argv[optind++];
	if (cli_check_name("exec", name)) {
		strv_free(o.env);
		return EXIT_USAGE;
	}
	if (optind < argc && streq(argv[optind], "--"))
		optind++;
	if (optind >= argc) {
		strv_free(o.env);
		return cli_usage("exec", "what command? (paddock exec NAME -- CMD...)");
	}
	_cleanup_strv_ char **cmd = strv_copy(argv + optind);
	r = cli_check_command("exec", cmd, o.env);
	if (r == 0)
		r = cli_check_tty("exec", o.tty);
	if (r == 0)
		r = exec_in(name, &o, cmd);
	strv_free(o.env);
	return r;
}

int cmd_shell(int argc, char **argv)
{
	struct exec_opts o = {.tty = -1};
	bool help = false;
	int r = parse_exec("shell", argc, argv, &o, &help);
	if (r == 0 && help)
		printf("Usage: paddock shell [--user agent|root] NAME\n\nOpen an interactive shell in a running sandbox.\n");
	if (r || help || optind != argc - 1 || cli_check_name("shell", argv[optind])) {
		strv_free(o.env);
		return r || help ? r : optind != argc - 1 ? cli_usage("shell", "shell takes exactly one NAME") : EXIT_USAGE;
	}
	char *cmd[] = {"/bin/sh", "-c", "if command -v bash >/dev/null; then exec bash -l; else exec sh -l; fi", NULL};
	r = exec_in(argv[optind], &o, cmd);
	strv_free(o.env);
	return r;
}
