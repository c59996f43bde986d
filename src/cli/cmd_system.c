/* cmd_system.c — `paddock system setup --user NAME` (root): prepares what an ordinary user
 * needs and cannot do alone — a delegated cgroup subtree for their boxes' limits. */
#include <getopt.h>
#include <pwd.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "runtime/ns/ns_cgroup.h"

static void help(void)
{
	printf("Usage: paddock system setup --user NAME\n\n"
	       "As root: delegate a cgroup subtree to user NAME (cgroup v2, or the memory, pids and\n"
	       "cpu v1 hierarchies) so their sandboxes get memory/pids/cpu limits. Idempotent.\n");
}

int cmd_system(int argc, char **argv)
{
	static const struct option opts[] = {
		{"user", required_argument, NULL, 'u'}, {"help", no_argument, NULL, 'h'}, {0}};
	const char *user = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "u:h", opts, NULL)) != -1) {
		if (c == 'h') {
			help();
			return 0;
		}
		if (c != 'u')
			return cli_usage("system", "unknown option or missing value: '%s'", argv[optind - 1]);
		user = optarg;
	}
	if (optind != argc - 1 || !streq(argv[optind], "setup") || !user)
		return cli_usage("system", "usage: paddock system setup --user NAME");
	struct passwd *pw = getpwnam(user);
	pd_err err = {0};
	if (!pw) {
		pd_error_msg(&err, ENOENT, "no user named '%s'", user);
		return cli_fail(&err);
	}
	if (geteuid() != 0) {
		pd_error_msg(&err, EPERM, "system setup must run as root (try: sudo paddock system setup --user %s)", user);
		return cli_fail(&err);
	}
	if (ns_cgroup_setup_user(pw->pw_uid, pw->pw_gid, &err) < 0)
		return cli_fail(&err);
	/* a box's network is a TAP its own user namespace opens: /dev/net/tun must be usable by
	 * everyone (Debian's default mode; the kernel still requires CAP_NET_ADMIN over a netns) */
	struct stat st;
	if (stat("/dev/net/tun", &st) == 0 && (st.st_mode & 0666) != 0666) {
		if (chmod("/dev/net/tun", st.st_mode | 0666) < 0) {
			pd_error(&err, errno, "cannot make /dev/net/tun usable by %s", user);
			return cli_fail(&err);
		}
		printf("/dev/net/tun made usable by every user (mode 0666, Debian's default)\n");
	}
	printf("cgroups delegated to %s (uid %u)\n", user, (unsigned)pw->pw_uid);
	return 0;
}
