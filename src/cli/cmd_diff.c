/* cmd_diff.c — `paddock diff NAME [--stat] [--json] [PATH…]` (options anywhere; `--` before
 * paths that start with "-"): what the box changed in its
 * copy of the project. The snapshot it shows is saved; `apply` applies exactly that. */
#include <fcntl.h>
#include <getopt.h>

#include "cli/applybranch.h"
#include "cli/cli.h"
#include "cli/wsnap.h"
#include "workspace/ws_diff.h"

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{"stat", no_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
		{"color", no_argument, NULL, 'c'}, {"mount", required_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'}, {0}};
	bool stat = false, json = false, color = isatty(STDOUT_FILENO);
	const char *mount = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': stat = true; break;
		case 'j': json = true; break;
		case 'c': color = true; break;
		case 'm': mount = optarg; break;
		case 'h':
			printf("Usage: paddock diff [--stat] [--json] [--mount BOXPATH] NAME [PATH...]\n\n"
			       "Show what the sandbox changed in its copy of the project: added, modified, deleted,\n"
			       "renamed, mode and symlink changes, and what will never be applied (with why).\n"
			       "Paths that make the host run code (.git/hooks, .envrc, .vscode/tasks.json, ...) are\n"
			       "flagged. 'paddock apply NAME' applies exactly the changes shown here.\n\n"
			       "--mount BOXPATH: the same for a profile's read-write mount that a vm sandbox got as a\n"
			       "copy (a guest shares no host path); 'paddock apply --mount BOXPATH NAME' applies it.\n");
			return 0;
		default:
			return cli_usage("diff", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage("diff", "which sandbox?");
	const char *name = argv[optind++];
	if (cli_check_name("diff", name))
		return EXIT_USAGE;
	pd_err err = {0};
	struct wsnap s;
	if (wsnap_take(name, mount, &s, &err) < 0) {
		wsnap_free(&s);
		return cli_fail(&err);
	}
	/* the paths as the workspace names them; one that names nothing is a mistake (as for
	 * apply), not an empty diff */
	_cleanup_strv_ char **paths = NULL;
	if (wsnap_paths(&s, optind < argc ? argv + optind : NULL, &paths, &err) < 0) {
		wsnap_free(&s);
		return cli_usage("diff", "%s", err.msg);
	}
	/* what this diff shows is what a later `apply` without paths applies */
	if (wsnap_save_paths(&s, paths, &err) < 0) {
		wsnap_free(&s);
		return cli_fail(&err);
	}
	struct ws_diff d;
	ws_diff_compute(&s.base, &s.box, &d);
	/* the host's core.hooksPath, when it points into the project, is flagged like .git/hooks */
	_cleanup_strv_ char **hooks = cli_git_hook_dirs(s.project);
	ws_exec_set_hook_dirs(hooks);
	ws_diff_mark_exec(&d, &s.box, s.staging_fd);
	_cleanup_close_ int root = open(s.project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct ws_content_host ch = {.host_rootfd = root, .staging_fd = s.staging_fd};
	struct ws_content content = {.load = ws_content_host_load, .ud = &ch};
	struct ws_render_opts ro = {.color = color && !json, .paths = paths, .content = &content};
	wsnap_print_notes(&s.notes, false);
	if (json) {
		char *out = ws_diff_render_json(&d, &ro);
		printf("%s\n", out);
		free(out);
	} else if (stat)
		ws_diff_render_stat(stdout, &d, &ro);
	else
		ws_diff_render_patch(stdout, &d, &ro);
	ws_diff_free(&d);
	wsnap_free(&s);
	return 0;
}
