/* cmd_logs.c — `paddock logs [-f] NAME`: the supervisor's log of the sandbox (start, stop,
 * sessions, refusals). */
#include <fcntl.h>
#include <getopt.h>

#include "cli/cli.h"
#include "util/fdio.h"

static int copy_out(int fd)
{
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (fd_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
			return -errno;
	return n < 0 ? -errno : 0;
}

int cmd_logs(int argc, char **argv)
{
	static const struct option opts[] = {
		{"follow", no_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {0}};
	bool follow = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("Usage: paddock logs [-f] NAME\n\nShow the sandbox's supervisor log; -f follows it "
			       "while the sandbox runs.\n");
			return 0;
		}
		if (c != 'f')
			return cli_usage("logs", "unknown option '%s'", argv[optind - 1]);
		follow = true;
	}
	if (optind != argc - 1)
		return cli_usage("logs", "logs takes exactly one NAME");
	pd_err err = {0};
	_cleanup_free_ char *dir = NULL;
	if (cli_box_dir(argv[optind], NULL, &dir, &err) < 0)
		return cli_fail(&err);
	_cleanup_free_ char *path = xasprintf("%s/supervisor.log", dir);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : cli_fail((pd_error(&err, errno, "cannot open %s", path), &err));
	copy_out(fd);
	while (follow && store_status(dir, NULL) == BOX_STATUS_RUNNING) {
		usleep(200000);
		copy_out(fd);
	}
	return 0;
}
