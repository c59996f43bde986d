/* cmd_system.c — `paddock system setup --user NAME` (root): prepares what an ordinary user
 * needs and cannot do alone — a delegated cgroup subtree for their boxes. */
#include <getopt.h>
#include <pwd.h>

#include "cli/cli.h"

int cmd_system(int argc, char **argv)
{
	if (argc < 2 || streq(argv[1], "--help")) {
		printf("Usage: paddock system setup --user NAME\n\nAs root: delegate a cgroup subtree to user NAME so "
		       "their sandboxes get memory/pids/cpu limits.\n");
		return argc < 2 ? EXIT_USAGE : 0;
	}
	return cli_usage("system", "not available yet");
}
