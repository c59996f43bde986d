/* wsalias.c — paddock-init's ws-alias built-in: makes the project's host path inside the box
 * a symlink to /workspace (so tools and error messages show the paths the user knows), as the
 * `mkdir -p DIR && ln -sfn /workspace PATH` it replaces, without starting three programs.
 *
 * Runs as an exec session of the box's root user with that session's credentials (after
 * child_privileges), on the box's own file system only: nothing here can reach the host. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest/wsalias.h"
#include "util/fdio.h"
#include "proto/wsscan.h"

int guest_wsalias_main(char *const *argv)
{
	const char *target = "/workspace";
	if (!argv[1] || argv[2] || argv[1][0] != '/' || strlen(argv[1]) >= PATH_MAX) {
		dprintf(STDERR_FILENO, "usage: %s /ABSOLUTE/PATH\n", WSALIAS_BUILTIN);
		return 2;
	}
	char path[PATH_MAX];
	strcpy(path, argv[1]);
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	if (streq(path, target) || n <= 1)
		return 0;
	char *slash = strrchr(path, '/');
	if (slash != path) { /* mkdir -p of its parent */
		*slash = '\0';
		int r = mkdir_p(path, 0755);
		*slash = '/';
		if (r < 0)
			return 1;
	}
	if (symlink(target, path) == 0)
		return 0;
	/* an old link (a restarted box) is replaced; anything else at the path is left alone */
	struct stat st;
	if (errno == EEXIST && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && unlink(path) == 0 &&
	    symlink(target, path) == 0)
		return 0;
	return 1;
}
