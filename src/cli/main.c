/* main.c — paddock's verb table: each verb is one handler in one file (cmd_<verb>.c). */
#include <fcntl.h>

#include "cli/cli.h"
#include "runtime/vm/vm_template.h"
#include "util/log.h"

static const struct verb verbs[] = {
	{"run", cmd_run, "run a command in a new sandbox"},
	{"create", cmd_create, "create and start a persistent sandbox"},
	{"start", cmd_start, "start a stopped sandbox"},
	{"stop", cmd_stop, "stop a running sandbox"},
	{"rm", cmd_rm, "remove sandboxes"},
	{"ls", cmd_ls, "list sandboxes"},
	{"exec", cmd_exec, "run a command in a running sandbox"},
	{"shell", cmd_shell, "open a shell in a running sandbox"},
	{"logs", cmd_logs, "show a sandbox's log"},
	{"policy", cmd_policy, "show or edit egress rules (global or per sandbox)"},
	{"diff", cmd_diff, "show what a sandbox changed in its copy of the project"},
	{"apply", cmd_apply, "apply a sandbox's changes to the project, safely"},
	{"cp", cmd_cp, "copy files into or out of a sandbox"},
	{"profile", cmd_profile, "list and show agent profiles"},
	{"image", cmd_image, "list, import, pull and remove images"},
	{"doctor", cmd_doctor, "report what this host supports"},
	{"system", cmd_system, "host setup (root): delegate cgroups to a user"},
	{"version", cmd_version, "print the version"},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: paddock VERB [OPTIONS] [ARGS]\n\n"
		   "Disposable, isolated sandboxes for AI coding agents and untrusted commands.\n\nVerbs:\n");
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\n'paddock VERB --help' describes a verb.\n");
}

/* A closed 0, 1 or 2 would be handed to the next open (a pipe of ours as the command's
 * stdin, which then never ends): each is /dev/null instead, as for any well-behaved tool. */
static void std_fds_open(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0)
			_exit(EXIT_FAILURE_PD);
}

int main(int argc, char **argv)
{
	std_fds_open();
	pd_log_init();
	vm_template_enable("/proc/self/exe");
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/* `paddock help VERB` is `paddock VERB --help` */
	if (streq(argv[1], "help") && argc > 2) {
		for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
			if (streq(argv[2], verbs[i].name)) {
				char *args[] = {argv[2], (char *)"--help", NULL};
				return verbs[i].fn(2, args);
			}
		return cli_usage(NULL, "unknown verb '%s'", argv[2]);
	}
	if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	/* internal: the profile builder's layer helper (not a verb) */
	if (streq(argv[1], "__build-layer"))
		return cli_build_layer_helper(argc - 1, argv + 1);
	/* internal: the vm backend's detached template builder (runtime/vm/vm_template.h) */
	if (streq(argv[1], "__vm-template-build"))
		return vm_template_build_main(argc - 1, argv + 1);
	if (streq(argv[1], "--version"))
		return cmd_version(1, argv);
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (streq(argv[1], verbs[i].name))
			return verbs[i].fn(argc - 1, argv + 1);
	return cli_usage(NULL, "unknown verb '%s'", argv[1]);
}
