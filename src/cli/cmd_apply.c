/* cmd_apply.c — `paddock apply NAME [PATH…]`: writes the box's changes to the host project
 * through the workspace library's safe apply (docs/workspace.md): exactly what the last
 * `diff` showed (or a fresh snapshot when there was none), conflicts reported, host-executing
 * paths skipped unless allowed. */
#include <getopt.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/applybranch.h"
#include "cli/wsnap.h"
#include "workspace/ws_apply.h"
#include "workspace/ws_progress.h"

struct apply_args {
	struct ws_apply_opts o;
	char **allow_exec;
	bool fresh, uncommitted;
	const char *branch;
	const char *mount;
};

/* a branch name is data for git's refspec: anything that is not a plain name is refused */
static bool branch_name_ok(const char *branch)
{
	return !strpbrk(branch, " ~^:?*[\\") && branch[0] != '-' && !strstr(branch, "..");
}

static int parse(int argc, char **argv, struct apply_args *a)
{
	static const struct option opts[] = {
		{"dry-run", no_argument, NULL, 'n'}, {"force", no_argument, NULL, 'f'},
		{"allow-exec-paths", required_argument, NULL, 'x'}, {"fresh", no_argument, NULL, 'F'},
		{"branch", optional_argument, NULL, 'b'}, {"uncommitted", no_argument, NULL, 'u'},
		{"mount", required_argument, NULL, 'm'}, {"help", no_argument, NULL, 'h'}, {0}};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "nfh", opts, NULL)) != -1) {
		switch (c) {
		case 'n': a->o.dry_run = true; break;
		case 'f': a->o.force = true; break;
		case 'F': a->fresh = true; break;
		case 'b': a->branch = optarg ? optarg : ""; break;
		case 'u': a->uncommitted = true; break;
		case 'm': a->mount = optarg; break;
		case 'x': a->allow_exec = strv_append(a->allow_exec, optarg); break;
		case 'h':
			printf("Usage: paddock apply [--dry-run] [--force] [--fresh] [--allow-exec-paths PATH]... [--mount BOXPATH] NAME [PATH...]\n"
			       "       paddock apply --branch[=BRANCH] [--uncommitted] NAME\n\n"
			       "Write the sandbox's changes into the host project: exactly what the last 'paddock diff'\n"
			       "showed (--fresh takes a new snapshot instead). A host file changed since the copy-in is a\n"
			       "conflict and is left alone unless --force. Paths that make the host run code are skipped\n"
			       "unless named with --allow-exec-paths. Each file is replaced atomically; re-running an\n"
			       "interrupted apply completes it. Exit status 1 when anything was not applied.\n"
			       "PATHs name the project's entries from its root (src/x.c, ./src/, /workspace/src) or by\n"
			       "their absolute host path; not from the current directory.\n\n"
			       "--mount BOXPATH: a profile's read-write mount that a vm sandbox got as a copy goes back\n"
			       "to its host directory the same way (what 'paddock diff --mount BOXPATH' showed).\n\n"
			       "--branch: for git projects, the sandbox's commits (and with --uncommitted its uncommitted\n"
			       "changes as one more commit) become branch BRANCH (default paddock/NAME) of the host\n"
			       "repository: objects only, nothing checked out, no hooks run.\n");
			return 1;
		default:
			return cli_usage("apply", "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage("apply", "which sandbox?");
	if (cli_check_name("apply", argv[optind]))
		return EXIT_USAGE;
	if (a->mount && a->branch)
		return cli_usage("apply", "--branch is for the project, not a mount");
	if (a->branch && a->branch[0] && !branch_name_ok(a->branch))
		return cli_usage("apply", "'%s' is not a usable branch name", a->branch);
	a->o.allow_exec = a->allow_exec;
	return 0;
}

static int apply_to_branch(const char *name, struct apply_args *a)
{
	pd_err err = {0};
	_cleanup_free_ char *dir = NULL;
	_cleanup_free_ char *branch = a->branch[0] ? xstrdup(a->branch) : xasprintf("paddock/%s", name);
	struct box_spec spec = {0};
	int r = cli_box_dir(name, NULL, &dir, &err);
	if (r == 0)
		r = store_load_spec(dir, &spec, &err);
	if (r == 0 && store_status(dir, NULL) != BOX_STATUS_RUNNING)
		r = pd_error_msg(&err, ESRCH, "sandbox '%s' is not running; start it first", name);
	if (r == 0 && !spec.project)
		r = pd_error_msg(&err, EINVAL, "sandbox '%s' has no project", name);
	if (r == 0 && !branch_name_ok(branch)) /* the default one, of a name with ".." */
		r = pd_error_msg(&err, EINVAL, "'%s' is not a usable branch name", branch);
	if (r == 0)
		r = apply_branch(dir, spec.project, branch, a->uncommitted, &err);
	box_spec_free(&spec);
	strv_free(a->allow_exec);
	return r < 0 ? cli_fail(&err) : 0;
}

static void on_progress(void *ud, size_t done, size_t total)
{
	struct ws_progress *bar = ud;
	bar->total = total;
	ws_progress_update(bar, done);
}

int cmd_apply(int argc, char **argv)
{
	struct apply_args a = {0};
	int r = parse(argc, argv, &a);
	if (r) {
		strv_free(a.allow_exec);
		return r == 1 ? 0 : r;
	}
	const char *name = argv[optind++];
	a.o.paths = optind < argc ? argv + optind : NULL;
	pd_err err = {0};
	if (a.branch)
		return apply_to_branch(name, &a);
	struct wsnap s;
	r = a.fresh ? -ENOENT : wsnap_load(name, a.mount, &s, &err);
	bool saved = r == 0; /* the snapshot a diff took and showed */
	if (r == -ENOENT) {
		if (!a.fresh)
			wsnap_free(&s);
		r = wsnap_take(name, a.mount, &s, &err);
	}
	_cleanup_strv_ char **shown = NULL, **named = NULL;
	/* the paths as the workspace names them ("./x", "x/", an absolute path in the project;
	 * "." is everything) */
	bool gave_paths = a.o.paths != NULL;
	if (r == 0 && a.o.paths) {
		if (wsnap_paths(&s, a.o.paths, &named, &err) < 0) {
			wsnap_free(&s);
			strv_free(a.allow_exec);
			return cli_usage("apply", "%s", err.msg);
		}
		a.o.paths = named;
	}
	if (saved && !gave_paths && (shown = wsnap_load_paths(&s))) {
		/* that diff was limited to some paths: apply exactly what it showed */
		a.o.paths = shown;
		fprintf(stderr, "paddock: applying the changes 'paddock diff %s", name);
		for (char **p = shown; *p; p++)
			fprintf(stderr, " %s", *p);
		fprintf(stderr, "' showed %llds ago, only those (--fresh for a new snapshot of everything)\n",
			(long long)(time(NULL) - s.taken));
	} else if (saved)
		fprintf(stderr, "paddock: applying the changes 'paddock diff' showed %llds ago (--fresh for a new snapshot)\n",
			(long long)(time(NULL) - s.taken));
	struct ws_apply_report rep = {0};
	struct ws_progress bar;
	ws_progress_start(&bar, "applying", 0, false);
	a.o.progress = on_progress, a.o.progress_ud = &bar;
	_cleanup_free_ char *journal = cli_apply_journal();
	a.o.journal_dir = journal;
	a.o.waiting = cli_apply_waiting;
	if (r == 0)
		wsnap_print_notes(&s.notes, true);
	/* the host's core.hooksPath, when it points into the project, is flagged like .git/hooks */
	_cleanup_strv_ char **hooks = r == 0 ? cli_git_hook_dirs(s.project) : NULL;
	ws_exec_set_hook_dirs(hooks);
	struct ws_manifest moved = {0};
	a.o.ret_base = &moved;
	if (r == 0)
		r = ws_apply(s.project, &s.base, &s.box, s.staging_fd, &a.o, &rep, &err);
	/* what is now on the host is the box's new baseline: its next diff shows what came after,
	 * and a file this apply wrote that the agent changes again is no conflict */
	if (r == 0 && !a.o.dry_run && rep.count[WS_APPLIED] + rep.count[WS_ALREADY] > 0)
		r = wsnap_save_base(&s, &moved, &err);
	if (r < 0 && !err.msg[0])
		pd_error(&err, r, "cannot record what was applied");
	ws_manifest_free(&moved);
	ws_progress_end(&bar);
	/* what the snapshot left out is in the report too, and makes the status 1 */
	if (r == 0)
		ws_apply_report_add_notes(&rep, &s.notes, a.o.paths);
	if (r == 0)
		ws_apply_report_render(stdout, &rep, isatty(STDOUT_FILENO));
	/* a snapshot this apply took for itself was no diff's: the next apply takes its own (it
	 * was reused as "what 'paddock diff' showed", and the box's later changes said "already
	 * applied"); one a diff showed stays, for a rerun with --force. An apply cut short keeps
	 * it either way, for its rerun to finish */
	if (r == 0 && !saved && !a.o.dry_run)
		(void)wsnap_forget(&s);
	bool clean = r == 0 && rep.count[WS_CONFLICT] == 0 && rep.count[WS_REFUSED_ENTRY] == 0 &&
		     rep.count[WS_FAILED] == 0 && rep.count[WS_SKIPPED_EXEC] == 0;
	ws_apply_report_free(&rep);
	wsnap_free(&s);
	strv_free(a.allow_exec);
	if (r < 0)
		return cli_fail(&err);
	return clean ? 0 : 1;
}
