/* cmd_version.c — `paddock version`. */
#include "cli/cli.h"
#include "config.h"
#include "proto/proto.h"

int cmd_version(int argc, char **argv)
{
	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		printf("Usage: paddock version\n\nPrint paddock's version and protocol version.\n");
		return 0;
	}
	if (argc > 1)
		return cli_usage("version", "version takes no arguments");
	printf("paddock %s (protocol %d.%d)\n", PADDOCK_VERSION, PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
	return 0;
}
