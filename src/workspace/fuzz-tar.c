/* fuzz-tar.c — arbitrary bytes as a box's tar stream: manifest-from-tar, then a forced
 * apply (every host-executing path allowed) into a small host tree. Asserts that nothing
 * appears or changes outside that tree: the canary directory beside it stays exactly as it
 * was, the fuzz root holds only its three directories, and no temp file survives an apply. */
#include <fcntl.h>
#include <sys/mman.h>

#include "util/fdio.h"
#include "testlib-ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *root, *host, *outside, *staging;
static struct ws_manifest base;
static int staging_fd = -1;

static void reset_host(void)
{
	tl_rmrf(host);
	tl_write(host, "a.txt", "alpha\n", 0644);
	tl_write(host, "dir/b.txt", "bravo\n", 0644);
	tl_write(host, ".git/config", "[core]\n", 0644);
	_cleanup_free_ char *lnk = xasprintf("%s/dir/up", host);
	if (symlink("../a.txt", lnk) < 0)
		abort();
}

static void cleanup(void)
{
	tl_rmrf(root);
}

static void init(void)
{
	root = tl_tmpdir();
	host = xasprintf("%s/host", root);
	outside = xasprintf("%s/outside", root);
	staging = xasprintf("%s/staging", root);
	tl_write(outside, "canary", "canary\n", 0644);
	if (mkdir(staging, 0700) < 0)
		abort();
	staging_fd = tl_opendir(staging);
	reset_host();
	tl_manifest_dir(host, &base);
	atexit(cleanup);
}

static void check_outside(void)
{
	_cleanup_free_ char *c = tl_read(outside, "canary");
	if (tl_count_entries(outside) != 1 || !c || !streq(c, "canary\n") || tl_count_entries(root) != 3)
		abort(); /* something escaped the host tree */
}

static bool temps_left(void)
{
	_cleanup_close_ int fd = tl_opendir(host);
	return ws_cleanup_temps(fd, NULL) != 0;
}

static void run_apply(const struct ws_manifest *box)
{
	char *allow_all[] = {"", NULL};
	struct ws_apply_opts o = {.force = true, .allow_exec = allow_all, .no_sync = true};
	struct ws_apply_report rep = {0};
	if (ws_apply(host, &base, box, staging_fd, &o, &rep, NULL) < 0)
		abort();
	check_outside();
	if (temps_left())
		abort();
	if (rep.count[WS_APPLIED] > 0)
		reset_host();
	ws_apply_report_free(&rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!root)
		init();
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	lim.max_file = 64 << 10;
	lim.max_total = 1 << 20;
	lim.max_entries = 2000;
	lim.max_depth = 32;
	int fd = memfd_create("fuzz-tar", MFD_CLOEXEC);
	if (fd < 0 || fd_write_all(fd, data, size) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	struct ws_manifest box = {0};
	struct ws_notes notes = {0};
	if (tl_ingest(fd, staging_fd, &base, &lim, &box, &notes) == 0)
		run_apply(&box);
	close(fd);
	check_outside();
	ws_manifest_free(&box);
	ws_notes_free(&notes);
	if (tl_count_entries(staging) > 64) {
		tl_rmrf(staging);
		close(staging_fd);
		if (mkdir(staging, 0700) < 0)
			abort();
		staging_fd = tl_opendir(staging);
	}
	return 0;
}
