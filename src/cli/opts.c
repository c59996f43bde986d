/* opts.c — the options `run` and `create` share, parsed into a box spec. */
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "runtime/ns/ns.h"
#include "runtime/vm/vm.h"
#include "supervisor/supervisor.h"

enum {
	OPT_RM = 0x100, OPT_BACKEND, OPT_MEMORY, OPT_CPUS, OPT_PIDS, OPT_DISK, OPT_USER,
	OPT_WORKSPACE, OPT_IMAGE, OPT_HELP, OPT_NET, OPT_ALLOW, OPT_DENY, OPT_RESOLVE, OPT_ACCEL,
	OPT_GUEST_ASLR,
};

static const struct option box_options[] = {
	{"name", required_argument, NULL, 'n'},
	{"rm", no_argument, NULL, OPT_RM},
	{"backend", required_argument, NULL, OPT_BACKEND},
	{"accel", required_argument, NULL, OPT_ACCEL},
	{"guest-aslr", no_argument, NULL, OPT_GUEST_ASLR},
	{"env", required_argument, NULL, 'e'},
	{"memory", required_argument, NULL, OPT_MEMORY},
	{"cpus", required_argument, NULL, OPT_CPUS},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"disk", required_argument, NULL, OPT_DISK},
	{"user", required_argument, NULL, OPT_USER},
	{"volume", required_argument, NULL, 'v'},
	{"workdir", required_argument, NULL, 'w'},
	{"workspace", required_argument, NULL, OPT_WORKSPACE},
	{"image", required_argument, NULL, OPT_IMAGE},
	{"tty", no_argument, NULL, 't'},
	{"no-tty", no_argument, NULL, 'T'},
	{"help", no_argument, NULL, OPT_HELP},
	{"net", required_argument, NULL, OPT_NET},
	{"allow", required_argument, NULL, OPT_ALLOW},
	{"deny", required_argument, NULL, OPT_DENY},
	{"resolve", required_argument, NULL, OPT_RESOLVE},
	{"publish", required_argument, NULL, 'p'},
	{0},
};

static int set_limit(const char *verb, int opt, const char *arg, struct box_spec *s)
{
	int r = 0;
	switch (opt) {
	case OPT_MEMORY:
		r = cli_parse_size(arg, &s->memory);
		if (r == -ERANGE)
			return cli_usage(verb, "--memory: '%s' is more than any machine has", arg);
		if (r == 0 && s->memory < (16u << 20))
			return cli_usage(verb, "--memory: '%s' is less than the 16M a box needs", arg);
		return r < 0 ? cli_usage(verb, "--memory wants a size (e.g. 512M, 2G), got '%s'", arg) : 0;
	case OPT_DISK:
		r = cli_parse_size(arg, &s->disk);
		if (r == -ERANGE)
			return cli_usage(verb, "--disk: '%s' is more than any disk holds", arg);
		if (r == 0 && s->disk < (1u << 20))
			return cli_usage(verb, "--disk: '%s' is less than 1M", arg);
		return r < 0 ? cli_usage(verb, "--disk wants a size (e.g. 512M, 2G), got '%s'", arg) : 0;
	case OPT_CPUS:
		r = cli_parse_cpus(arg, &s->cpus_milli);
		if (r == -ERANGE)
			return cli_usage(verb, "--cpus: '%s' is more than 1024", arg);
		return r < 0 ? cli_usage(verb, "--cpus wants a positive number (e.g. 1.5), got '%s'", arg) : 0;
	case OPT_PIDS:
		r = cli_parse_u32(arg, 8, 4194304, &s->pids);
		return r < 0 ? cli_usage(verb, "--pids wants a number from 8 to 4194304, got '%s'", arg) : 0;
	}
	return 0;
}

static int one_option(const char *verb, int c, struct box_opts *o)
{
	struct box_spec *s = &o->spec;
	pd_err err = {0};
	switch (c) {
	case 'n':
		if (cli_check_name(verb, optarg))
			return EXIT_USAGE;
		free(s->name);
		s->name = xstrdup(optarg);
		return 0;
	case OPT_RM: o->rm = true; return 0;
	case OPT_BACKEND:
		if (!streq(optarg, "ns") && !streq(optarg, "auto") && !streq(optarg, "vm"))
			return cli_usage(verb, "--backend must be ns, vm or auto (gvisor is not built yet), got '%s'", optarg);
		free(s->backend);
		s->backend = xstrdup(optarg);
		return 0;
	case OPT_ACCEL:
		if (!streq(optarg, "kvm") && !streq(optarg, "tcg") && !streq(optarg, "auto"))
			return cli_usage(verb, "--accel must be kvm, tcg or auto, got '%s'", optarg);
		free(s->accel);
		s->accel = xstrdup(optarg);
		return 0;
	case OPT_GUEST_ASLR: s->guest_aslr = true; return 0;
	case 'e':
		return cli_env_arg(optarg, &s->env) < 0 ? cli_usage(verb, "-e wants KEY=VALUE or KEY, got '%s'", optarg) : 0;
	case OPT_USER:
		if (!streq(optarg, "agent") && !streq(optarg, "root"))
			return cli_usage(verb, "--user must be agent or root, got '%s'", optarg);
		free(s->user);
		s->user = xstrdup(optarg);
		return 0;
	case 'v':
		if (s->n_binds >= 64)
			return cli_usage(verb, "too many -v options (at most 64)");
		s->binds = xrealloc(s->binds, (s->n_binds + 1) * sizeof(*s->binds));
		if (cli_parse_bind(optarg, &s->binds[s->n_binds], &err) < 0)
			return cli_usage(verb, "%s", err.msg);
		s->n_binds++;
		return 0;
	case 'w': o->project = optarg; return 0;
	case OPT_IMAGE:
		o->image = optarg;
		return 0;
	case OPT_WORKSPACE:
		if (!streq(optarg, "none") && !streq(optarg, "ro") && !streq(optarg, "rw") && !streq(optarg, "copy"))
			return cli_usage(verb, "--workspace must be copy, ro, rw or none, got '%s'", optarg);
		o->workspace = optarg;
		return 0;
	case 't': o->tty = 1; return 0;
	case 'T': o->tty = 0; return 0;
	case OPT_HELP:
	case 'h': o->help = true; return 0;
	case OPT_MEMORY: case OPT_DISK: case OPT_CPUS: case OPT_PIDS:
		return set_limit(verb, c, optarg, s);
	case OPT_NET: case OPT_ALLOW: case OPT_DENY: case OPT_RESOLVE: case 'p':
		return cli_net_option(verb, c == 'p' ? 'p' : c - OPT_NET + 'N', optarg, &s->net);
	default:
		return cli_usage(verb, "unknown option");
	}
}

int cli_parse_box_opts(const char *verb, int argc, char **argv, struct box_opts *o)
{
	*o = (struct box_opts){.tty = -1, .workspace = NULL};
	/* $PADDOCK_BACKEND is the default for new boxes (a bad value is refused below, like the
	 * option's) */
	const char *be = getenv("PADDOCK_BACKEND");
	o->spec.backend = xstrdup(be && *be ? be : "auto");
	o->spec.user = xstrdup("agent");
	o->spec.net.preset = xstrdup("none");
	o->spec.created = time(NULL);
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+n:e:v:w:tTp:h", box_options, NULL)) != -1) {
		if (c == '?')
			return cli_usage(verb, "unknown option or missing value: '%s'", argv[optind - 1]);
		int r = one_option(verb, c, o);
		if (r)
			return r;
	}
	if (!streq(o->spec.backend, "ns") && !streq(o->spec.backend, "vm") && !streq(o->spec.backend, "auto"))
		return cli_usage(verb, "PADDOCK_BACKEND must be ns, vm or auto, got '%s'", o->spec.backend);
	/* --accel and --guest-aslr are the vm backend's: they pick vm for auto and are refused
	 * with ns */
	if (o->spec.accel && streq(o->spec.backend, "ns"))
		return cli_usage(verb, "--accel %s: only a vm box has an accelerator (--backend vm)", o->spec.accel);
	if (o->spec.guest_aslr && streq(o->spec.backend, "ns"))
		return cli_usage(verb, "--guest-aslr: only a vm box has a guest kernel (--backend vm)");
	if ((o->spec.accel || o->spec.guest_aslr) && streq(o->spec.backend, "auto")) {
		free(o->spec.backend);
		o->spec.backend = xstrdup("vm");
	}
	/* auto is decided once, when the box is made: vm where KVM is proven, else ns */
	if (streq(o->spec.backend, "auto")) {
		free(o->spec.backend);
		o->spec.backend = xstrdup(runtime_by_name("auto", NULL)->name);
	}
	/* a guest shares no host directory: say it about what the user asked for, before
	 * anything is made (profile mounts are copied in instead, elsewhere) */
	if (streq(o->spec.backend, "vm") && o->workspace && (streq(o->workspace, "ro") || streq(o->workspace, "rw")))
		return cli_usage(verb, "--workspace %s: a vm box shares no host directory; use copy (the default) or none",
				 o->workspace);
	if (streq(o->spec.backend, "vm") && o->spec.n_binds)
		return cli_usage(verb, "-v %s:%s: a vm box shares no host directory (copy files in with paddock cp)",
				 o->spec.binds[0].host, o->spec.binds[0].box);
	/* a vCPU is a host thread: more than the host has only slows a guest (under TCG, 64 of
	 * them on 2 cores never booted) */
	long ncpu = streq(o->spec.backend, "vm") && o->spec.cpus_milli ? sysconf(_SC_NPROCESSORS_ONLN) : 0;
	if (ncpu > 0 && o->spec.cpus_milli > (uint32_t)ncpu * 1000u)
		return cli_usage(verb, "--cpus: a vm box gets at most %ld (this host's CPUs)", ncpu);
	if (streq(o->spec.backend, "vm") && o->spec.disk > VM_MAX_DISK)
		return cli_usage(verb, "--disk: a vm box's disk is at most 16T");
	if (streq(o->spec.backend, "vm") && o->spec.memory && o->spec.memory < (UINT64_C(128) << 20))
		return cli_usage(verb, "--memory: a vm box needs at least 128M (its kernel panics in less)");
	/* on ns the box's files live in its memory (ns_disk_cap): say so when --disk asks more */
	uint64_t mem = o->spec.memory ? o->spec.memory : NS_DEFAULT_MEMORY;
	uint64_t disk = o->spec.disk ? o->spec.disk : NS_DEFAULT_DISK;
	if (streq(o->spec.backend, "ns") && (o->spec.disk || o->spec.memory) && ns_disk_cap(disk, mem) < disk)
		fprintf(stderr, "paddock: note: on the ns backend the box's files live in its memory: its disk is %llu MiB "
				"at --memory %llu MiB (raise --memory for more)\n",
			(unsigned long long)(ns_disk_cap(disk, mem) >> 20), (unsigned long long)(mem >> 20));
	return 0;
}

static void add_bind(struct box_spec *s, const char *host, const char *box, bool ro)
{
	s->binds = xrealloc(s->binds, (s->n_binds + 1) * sizeof(*s->binds));
	s->binds[s->n_binds++] = (struct box_bind){xstrdup(host), xstrdup(box), ro};
}

/* The default: copy the project (-w, else the current directory) — unless that directory is
 * / or the user's home, which are never copied wholesale by default (secrets live there). */
/* The home directory dir is, or lies above, if any: $HOME, the caller's passwd entry, under
 * sudo the invoking user's, the usual places of everyone's (/home, /root) and every person's
 * passwd entry — whichever names it (a copy of it takes its secrets). */
static bool home_is_at_or_below(const char *home, const char *dir, char *buf, size_t n)
{
	char real[PATH_MAX];
	if (!home || home[0] != '/' || !realpath(home, real) || streq(real, "/") || !path_under(real, dir))
		return false;
	snprintf(buf, n, "%s", real);
	return true;
}

static const char *home_scan(const char *dir, char *buf, size_t n)
{
	const char *cands[5] = {getenv("HOME"), NULL, NULL, "/home", "/root"};
	struct passwd *pw = getpwuid(getuid());
	_cleanup_free_ char *mine = pw && pw->pw_dir ? xstrdup(pw->pw_dir) : NULL;
	const char *sudo = getenv("SUDO_USER");
	pw = sudo && *sudo ? getpwnam(sudo) : NULL;
	_cleanup_free_ char *theirs = pw && pw->pw_dir ? xstrdup(pw->pw_dir) : NULL;
	cands[1] = mine, cands[2] = theirs;
	for (size_t i = 0; i < ARRAY_SIZE(cands); i++)
		if (home_is_at_or_below(cands[i], dir, buf, n))
			return buf;
	/* and every other person's (root may copy any directory; a home elsewhere than /home
	 * counts too): the uids login.defs gives people by default, not the system's accounts,
	 * whose "homes" (/var/www, /var/lib/…) are ordinary projects. /etc/passwd itself, not an
	 * NSS enumeration: that walks whole directories (LDAP, systemd's userdb) at every run. */
	const char *found = NULL;
	_cleanup_fclose_ FILE *f = fopen("/etc/passwd", "re");
	while (f && !found && (pw = fgetpwent(f)))
		if (pw->pw_uid >= 1000 && pw->pw_uid < 65534 && home_is_at_or_below(pw->pw_dir, dir, buf, n))
			found = buf;
	return found;
}

/* home_scan, once per directory: the default workspace and the copy's check both ask about
 * the working directory, and each scan reads the passwd file twice */
static const char *home_at_or_below(const char *dir, char *buf, size_t n)
{
	static char last_dir[PATH_MAX], last_home[PATH_MAX];
	static bool known, found;
	if (!known || !streq(dir, last_dir)) {
		found = home_scan(dir, last_home, sizeof(last_home)) != NULL;
		known = strlen(dir) < sizeof(last_dir);
		snprintf(last_dir, sizeof(last_dir), "%s", dir);
	}
	if (!found)
		return NULL;
	snprintf(buf, n, "%s", last_home);
	return buf;
}

static const char *default_workspace(const struct box_opts *o)
{
	if (o->project)
		return "copy";
	char cwd[PATH_MAX], home[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)) || streq(cwd, "/") || home_at_or_below(cwd, home, sizeof(home)))
		return "none";
	return "copy";
}

/* a usage error here, before anything is made (store_create checks again for every path). A
 * home that cannot be made is no usage error: the caller's own store_home says so (125). */
static int state_mounts_ok(const struct box_spec *spec, pd_err *err)
{
	_cleanup_free_ char *home = NULL;
	return store_home(&home, NULL) < 0 ? 0 : store_check_mounts(home, spec, err);
}

int cli_apply_workspace(struct box_opts *o, pd_err *err)
{
	if (!o->workspace)
		o->workspace = default_workspace(o);
	free(o->spec.workspace);
	o->spec.workspace = xstrdup(o->workspace);
	if (streq(o->workspace, "none")) {
		if (o->project) {
			if (o->project[0] != '/')
				return pd_error_msg(err, EINVAL, "-w with --workspace none is the directory inside the box and must be absolute");
			o->spec.workdir = xstrdup(o->project);
		}
		return state_mounts_ok(&o->spec, err);
	}
	char real[PATH_MAX];
	const char *dir = o->project ? o->project : ".";
	struct stat st;
	if (!realpath(dir, real))
		return pd_error(err, errno, "cannot use '%s' as the project directory", dir);
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		return pd_error_msg(err, ENOTDIR, "cannot use '%s' as the project directory: not a directory", dir);
	if (streq(real, "/"))
		return pd_error_msg(err, EINVAL, "refusing to use / as the project directory");
	char home[PATH_MAX];
	if (streq(o->workspace, "copy") && home_at_or_below(real, home, sizeof(home)))
		return pd_error_msg(err, EINVAL, "refusing to copy %s into the box: it holds the home directory %s, "
				  "whose secrets would go with it; use a project directory, or --workspace ro|rw to show it",
				  real, home);
	/* A -v at or under the project's places in the box (/workspace, its host path), or above
	 * the host path, would take the copy-in's writes (and the host-path link) into that host
	 * directory instead of the box */
	for (size_t i = 0; i < o->spec.n_binds; i++) {
		const char *b = o->spec.binds[i].box;
		if (path_under(b, "/workspace") || path_under(b, real) || path_under(real, b))
			return pd_error_msg(err, EINVAL, "-v ...:%s overlaps the project's place in the box (/workspace, %s); "
					  "mount it elsewhere", b, real);
	}
	o->spec.project = xstrdup(real);
	if (streq(o->workspace, "copy")) {
		/* copied in at boot (src/supervisor/wsbox.c); sessions start in the copy */
		o->spec.workdir = xstrdup("/workspace");
	} else {
		bool ro = streq(o->workspace, "ro");
		/* the project appears at its host path (so paths in messages line up) and at
		 * /workspace */
		add_bind(&o->spec, real, real, ro);
		add_bind(&o->spec, real, "/workspace", ro);
		o->spec.workdir = xstrdup(real);
	}
	return state_mounts_ok(&o->spec, err);
}
