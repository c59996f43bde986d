/* cmd_cp.c — `paddock cp NAME:PATH HOSTDIR` and `paddock cp HOSTPATH NAME:DIR`, with the rules
 * of diff/apply: out of the box, the stream is hostile input read by the workspace library
 * and written with its safe apply (beneath HOSTDIR, never following a host symlink, no special
 * files, no setuid, atomic replace, existing files are conflicts unless --force); into the box,
 * paddock writes the tar stream itself and tar inside the box unpacks it. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/wsnap.h"
#include "proto/tarfmt.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"
#include "workspace/ws_apply.h"
#include "workspace/ws_copyin.h"
#include "util/thread.h"

/* Splits "NAME:PATH" when NAME is a valid sandbox name; NULL otherwise. */
static char *box_side(const char *arg, char **ret_path)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg)
		return NULL;
	_cleanup_free_ char *name = xstrndup(arg, (size_t)(colon - arg));
	if (!box_name_valid(name) || colon[1] != '/')
		return NULL;
	*ret_path = xstrdup(colon + 1);
	return TAKE_PTR(name);
}

static int running_box(const char *name, char **ret_dir, pd_err *err)
{
	int r = cli_box_dir(name, NULL, ret_dir, err);
	if (r == 0 && store_status(*ret_dir, NULL) != BOX_STATUS_RUNNING)
		r = pd_error_msg(err, ESRCH, "sandbox '%s' is not running; start it with 'paddock start %s'", name, name);
	return r;
}

static int copy_out(const char *name, const char *path, const char *hostdir, bool force, pd_err *err)
{
	_cleanup_free_ char *dir = NULL;
	int r = running_box(name, &dir, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *p1 = xstrdup(path), *p2 = xstrdup(path);
	char *argv[] = {WSTAR_BUILTIN, "-c", dirname(p1), basename(p2), NULL};
	_cleanup_free_ char *staging = xasprintf("%s/cp-staging", dir);
	rm_rf(staging);
	if (mkdir(staging, 0700) < 0)
		return pd_error(err, errno, "cannot create %s", staging);
	_cleanup_close_ int sfd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int p[2];
	if (sfd < 0 || pipe2(p, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot prepare the copy");
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		_exit(session_run_in(dir, argv, -1, p[1], NULL) == 0 ? 0 : 1);
	}
	close(p[1]);
	struct ws_manifest box = {0}, base = {0};
	struct ws_notes notes = {0};
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_tar_opts o = {.limits = &lim, .staging_fd = sfd};
	r = ws_manifest_from_tar(p[0], &o, &box, &notes, err);
	close(p[0]);
	int st = 0;
	if (r < 0)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (r == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		r = pd_error_msg(err, EIO, "cannot read %s in sandbox '%s'", path, name);
	_cleanup_free_ char *journal = cli_apply_journal();
	struct ws_apply_opts ao = {.force = force, .journal_dir = journal, .waiting = cli_apply_waiting};
	struct ws_apply_report rep = {0};
	/* an empty base: everything is new, and any file already at HOSTDIR is a conflict */
	if (r == 0)
		wsnap_print_notes(&notes, true);
	if (r == 0)
		r = ws_apply(hostdir, &base, &box, sfd, &ao, &rep, err);
	if (r == 0) {
		ws_apply_report_add_notes(&rep, &notes, NULL);
		ws_apply_report_render(stdout, &rep, isatty(STDOUT_FILENO));
	}
	bool clean = r == 0 && rep.count[WS_APPLIED] + rep.count[WS_ALREADY] == rep.n;
	ws_apply_report_free(&rep);
	ws_manifest_free(&box);
	ws_notes_free(&notes);
	rm_rf(staging);
	return r < 0 ? r : (clean ? 0 : 1);
}

/* Producer for copy-in: a tar stream of a host directory (ws_copyin) or of one regular file
 * (libarchive), written to out_fd (closed when done); a directory's copy-in manifest is
 * saved as box_dir/record when record is set. 0, or a negative errno with *err set (EPIPE:
 * the box's end went away). A thread, not a forked child: under `run --rm` this process runs
 * the box's network thread, and a child forked beside it must not take locks (malloc's, the
 * loader's for libcrypto) another thread may have held at the fork. */
struct producer {
	const char *hostpath, *box_dir, *record;
	int out_fd, status;
	pd_err err;
};

static int produce(const char *hostpath, int out_fd, const char *box_dir, const char *record, pd_err *ret_err)
{
	pd_err err = {0};
	struct stat st;
	int r = lstat(hostpath, &st) < 0 ? -errno : 0;
	if (r == 0 && S_ISDIR(st.st_mode)) {
		_cleanup_close_ int root = open(hostpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct ws_manifest m = {0};
		struct ws_notes n = {0};
		struct ws_copyin_opts o = {.no_default_excludes = true}; /* the user named this path */
		r = root < 0 ? -errno : ws_copyin(root, out_fd, &o, &m, &n, &err);
		close(out_fd); /* the box's tar may finish while the manifest is saved */
		_cleanup_close_ int dfd = record && r == 0 ? open(box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		if (record && r == 0)
			r = dfd < 0 ? pd_error(&err, errno, "cannot open %s", box_dir) : ws_manifest_save(&m, dfd, record, &err);
		ws_manifest_free(&m);
		ws_notes_free(&n);
	} else if (r == 0 && S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd = open(hostpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		struct archive *a = archive_write_new();
		archive_write_set_format_pax(a);
		r = fd < 0 ? -errno : archive_write_open_fd(a, out_fd) != ARCHIVE_OK ? -EIO : 0;
		struct archive_entry *e = archive_entry_new();
		_cleanup_free_ char *b = xstrdup(hostpath);
		archive_entry_set_pathname(e, basename(b));
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, st.st_mode & 0777);
		archive_entry_set_mtime(e, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		archive_entry_set_size(e, st.st_size);
		if (r == 0 && archive_write_header(a, e) != ARCHIVE_OK)
			r = -(archive_errno(a) > 0 ? archive_errno(a) : EIO);
		char buf[65536];
		ssize_t n;
		while (r == 0 && (n = read(fd, buf, sizeof(buf))) > 0)
			if (archive_write_data(a, buf, (size_t)n) != n)
				r = -(archive_errno(a) > 0 ? archive_errno(a) : EIO);
		archive_entry_free(e);
		archive_write_close(a);
		archive_write_free(a);
	} else if (r == 0)
		r = -EINVAL;
	if (!(r == 0 && S_ISDIR(st.st_mode)))
		close(out_fd); /* (a directory's is closed above, before its manifest is saved) */
	if (r < 0 && !err.msg[0])
		pd_error(&err, r, "cannot read %s", hostpath);
	if (r < 0)
		*ret_err = err;
	return r < 0 ? -(err.code ? err.code : EIO) : 0;
}

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	p->status = produce(p->hostpath, p->out_fd, p->box_dir, p->record, &p->err);
	return NULL;
}

int cli_copy_in(int conn, const char *hostpath, const char *name, const char *path, const char *record, pd_err *err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int own = -1;
	/* a connection given is to a box the caller runs itself (run --rm: state "created") */
	int r = conn >= 0 ? cli_box_dir(name, NULL, &dir, err) : running_box(name, &dir, err);
	if (r == 0 && conn < 0)
		r = conn = own = sup_connect(dir, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *dest = xstrdup(path);
	char *argv[] = {WSTAR_BUILTIN, "-x", dest, "--mkdir", NULL};
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	struct producer prod = {.hostpath = hostpath, .box_dir = dir, .record = record, .out_fd = p[1], .status = -EIO};
	pthread_t t;
	if ((r = thread_start_quiet(&t, NULL, producer_main, &prod)) < 0) {
		close(p[0]), close(p[1]);
		return pd_error(err, -r, "cannot start the copy's producer");
	}
	int st = session_run_on(conn, argv, p[0], STDOUT_FILENO, err);
	/* closed first: a producer still writing gets EPIPE (SIGPIPE is blocked in it) and ends */
	close(p[0]);
	pthread_join(t, NULL);
	if (st < 0)
		return st;
	/* one side's failure is the other's cut stream: a producer that lost its pipe (EPIPE)
	 * was ended by the box's tar, which said why; a box's tar that failed after the host side
	 * did read a stream cut short */
	if (prod.status < 0 && (prod.status != -EPIPE || st == 0)) {
		*err = prod.err;
		return pd_err_prefix(err, "cannot copy %s into sandbox '%s'", hostpath, name);
	}
	return st == 0 ? 0 : pd_error_msg(err, EIO, "cannot copy %s into sandbox '%s': its tar failed (status %d)",
					  hostpath, name, st);
}

int cmd_cp(int argc, char **argv)
{
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {0}};
	bool force = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("Usage: paddock cp [-f] NAME:/PATH HOSTDIR\n       paddock cp HOSTPATH NAME:/DIR\n\n"
			       "Copy out of a sandbox into an existing host directory (with apply's safety rules:\n"
			       "existing files are conflicts unless -f, escaping symlinks and special files are\n"
			       "refused), or copy a host file or directory into a directory inside the sandbox.\n");
			return 0;
		}
		if (c != 'f')
			return cli_usage("cp", "unknown option '%s'", argv[optind - 1]);
		force = true;
	}
	if (argc - optind != 2)
		return cli_usage("cp", "cp takes a source and a destination");
	_cleanup_free_ char *spath = NULL, *dpath = NULL;
	_cleanup_free_ char *sname = box_side(argv[optind], &spath);
	_cleanup_free_ char *dname = box_side(argv[optind + 1], &dpath);
	if (!!sname == !!dname)
		return cli_usage("cp", "exactly one side must be NAME:/PATH (an absolute path in the sandbox)");
	pd_err err = {0};
	if (sname) {
		int r = copy_out(sname, spath, argv[optind + 1], force, &err);
		return r < 0 ? cli_fail(&err) : r;
	}
	/* into the box: a directory lands as DIR/NAME, like a file (and like copying out), never
	 * spread over DIR; the host side must exist before anything is asked of the box */
	struct stat st;
	char real[PATH_MAX];
	if (lstat(argv[optind], &st) < 0)
		return cli_usage("cp", "cannot copy '%s': %s", argv[optind], strerror(errno));
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return cli_usage("cp", "cannot copy '%s': only a regular file or a directory is copied in (a symlink "
				 "is not followed)", argv[optind]);
	_cleanup_free_ char *dest = NULL;
	if (S_ISDIR(st.st_mode)) {
		if (!realpath(argv[optind], real) || streq(real, "/"))
			return cli_usage("cp", "cannot copy '%s' into a sandbox", argv[optind]);
		size_t n = strlen(dpath);
		dest = xasprintf("%s%s%s", dpath, n && dpath[n - 1] == '/' ? "" : "/", strrchr(real, '/') + 1);
	}
	int r = cli_copy_in(-1, argv[optind], dname, dest ? dest : dpath, NULL, &err);
	return r < 0 ? cli_fail(&err) : r;
}
