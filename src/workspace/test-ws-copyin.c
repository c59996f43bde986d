/* test-ws-copyin.c — .paddockignore matching, default secret exclusions, the git config
 * credentials filter, and copy-in end to end (stream + manifest in one walk). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/mman.h>

#include "workspace/testlib-ws.h"

static struct ws_ignore *rules(const char *text, bool defaults)
{
	struct ws_ignore *ig = ws_ignore_new();
	if (defaults)
		ws_ignore_add_defaults(ig);
	assert_int_equal(ws_ignore_add_text(ig, text, strlen(text)), 0);
	return ig;
}

static bool ignored(const struct ws_ignore *ig, const char *path, bool dir)
{
	return ws_ignore_match(ig, path, dir) != WS_OK;
}

static void test_ignore_rules(void **state)
{
	struct ws_ignore *ig = rules("# comment\n\n*.log\n!keep.log\n/build\nout/\n**/tmp/**\n"
				     "a/**/b\ndocs/*.tmp\nx?z\n\\#hash\ncache/\n!cache/x\n", false);
	assert_true(ignored(ig, "debug.log", false));
	assert_true(ignored(ig, "src/deep/debug.log", false));
	assert_false(ignored(ig, "keep.log", false));
	assert_true(ignored(ig, "build", true));
	assert_false(ignored(ig, "src/build", true)); /* anchored */
	assert_true(ignored(ig, "out", true));
	assert_false(ignored(ig, "out", false));      /* dir only */
	assert_true(ignored(ig, "src/out/x.c", false)); /* beneath an ignored dir */
	assert_true(ignored(ig, "p/tmp/q", false));
	assert_false(ignored(ig, "p/tmp", true));      /* trailing ** needs something inside */
	assert_true(ignored(ig, "a/b", false));
	assert_true(ignored(ig, "a/x/y/b", false));
	assert_true(ignored(ig, "docs/x.tmp", false));
	assert_false(ignored(ig, "docs/sub/x.tmp", false)); /* '*' stays in one component */
	assert_true(ignored(ig, "xyz", false));
	assert_false(ignored(ig, "xyyz", false));
	assert_true(ignored(ig, "#hash", false));
	assert_true(ignored(ig, "cache/x", false));    /* no re-include under an excluded dir */
	assert_false(ignored(ig, "src/main.c", false));
	ws_ignore_free(ig);
}

static void test_ignore_defaults(void **state)
{
	struct ws_ignore *ig = rules("!.env.example\n", true);
	const char *secret[] = {".env", ".env.local", "cfg/.env.production", "tls/server.pem", "server.key",
				"id_rsa", "home/id_rsa.pub", "id_ed25519", "id_ecdsa", "id_dsa", ".netrc", "_netrc",
				".git-credentials", "web/.npmrc", ".pypirc", ".aws/credentials", "ops/.docker/config.json"};
	for (size_t i = 0; i < ARRAY_SIZE(secret); i++)
		assert_int_equal(ws_ignore_match(ig, secret[i], false), WS_R_DEFAULT_EXCLUDED);
	assert_false(ignored(ig, ".env.example", false));
	assert_false(ignored(ig, "environment.c", false));
	assert_false(ignored(ig, "keys.go", false));
	ws_ignore_free(ig);
	struct ws_ignore *big = ws_ignore_new();
	_cleanup_free_ char *line = xmalloc(WS_IGNORE_MAX_LINE + 2);
	memset(line, 'a', WS_IGNORE_MAX_LINE + 1);
	line[WS_IGNORE_MAX_LINE + 1] = '\0';
	assert_int_equal(ws_ignore_add_text(big, line, strlen(line)), -E2BIG);
	ws_ignore_free(big);
}

static void filter_is(const char *in, const char *want, bool changed)
{
	size_t len;
	bool ch;
	_cleanup_free_ char *out = ws_gitconfig_filter(in, strlen(in), &len, &ch);
	assert_string_equal(out, want);
	assert_int_equal(len, strlen(want));
	assert_int_equal(ch, changed);
}

static void test_gitconfig_filter(void **state)
{
	filter_is("[core]\n\tbare = false\n", "[core]\n\tbare = false\n", false);
	filter_is("[core]\n\tx = 1\n[credential]\n\thelper = store\n[user]\n\tname = a\n",
		  "[core]\n\tx = 1\n[user]\n\tname = a\n", true);
	filter_is("[credential \"https://github.com\"]\n\tusername = me\n\thelper = !echo token\n[core]\n",
		  "[core]\n", true);
	filter_is("[remote \"origin\"]\n\turl = https://user:ghp_SECRET@github.com/o/r.git\n",
		  "[remote \"origin\"]\n\turl = https://github.com/o/r.git\n", true);
	filter_is("\turl = https://ghp_TOKENONLY@github.com/o/r\n", "\turl = https://github.com/o/r\n", true);
	filter_is("\turl = ssh://git:pw@host/r\n\turl = ssh://git@host/r\n\turl = git@github.com:o/r\n",
		  "\turl = ssh://git@host/r\n\turl = ssh://git@host/r\n\turl = git@github.com:o/r\n", true);
	filter_is("[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic SECRET\n\tsslVerify = true\n",
		  "[http \"https://github.com/\"]\n\tsslVerify = true\n", true);
	filter_is("[http]\n\textraHeader = a \\\n  continued SECRET\n\tpostBuffer = 1\n",
		  "[http]\n\tpostBuffer = 1\n", true);
	filter_is("[Credential]\n\thelper = x", "", true);
	/* git takes a key on the header's own line: the key goes, the header (and its section's
	 * other keys) stay; a ']' inside the quoted subsection does not end the header */
	filter_is("[http \"https://github.com/\"] extraheader = AUTHORIZATION: basic SECRET\n\tsslVerify = true\n",
		  "[http \"https://github.com/\"]\n\tsslVerify = true\n", true);
	filter_is("[http \"https://a]b/\"]extraHeader=x: SECRET \\\n more SECRET\n\tpostBuffer = 1\n",
		  "[http \"https://a]b/\"]\n\tpostBuffer = 1\n", true);
	filter_is("[credential] helper = store\n[core]\n", "[core]\n", true);
	filter_is("[core] editor = vi\n", "[core] editor = vi\n", false);
}

struct fx {
	char *dir, *host, *staging;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = tl_tmpdir();
	f->host = xasprintf("%s/host", f->dir);
	f->staging = xasprintf("%s/staging", f->dir);
	mkdir(f->host, 0755);
	mkdir(f->staging, 0700);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	tl_rmrf(f->dir);
	free(f->dir);
	free(f->host);
	free(f->staging);
	free(f);
	return 0;
}

static bool noted(const struct ws_notes *n, enum ws_reason r, const char *path)
{
	for (size_t i = 0; i < n->n; i++)
		if (n->v[i].reason == r && streq(n->v[i].path, path))
			return true;
	return false;
}

static void test_copyin_end_to_end(void **state)
{
	struct fx *f = *state;
	tl_write(f->host, "src/main.c", "int main(void) { return 0; }\n", 0644);
	tl_write(f->host, "run.sh", "#!/bin/sh\n", 0755);
	tl_write(f->host, ".env", "API_KEY=secret\n", 0600);
	tl_write(f->host, "deploy/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n", 0600);
	tl_write(f->host, "node_modules/x/index.js", "module.exports = 1\n", 0644);
	tl_write(f->host, ".paddockignore", "node_modules/\n", 0644);
	tl_write(f->host, ".git/config", "[core]\n\tbare = false\n[credential]\n\thelper = store\n"
					 "[remote \"origin\"]\n\turl = https://u:tok@example.com/r\n", 0644);
	tl_write(f->host, ".git/HEAD", "ref: refs/heads/main\n", 0644);
	_cleanup_free_ char *fifo = xasprintf("%s/pipe", f->host), *lnk = xasprintf("%s/link", f->host);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	assert_int_equal(symlink("src/main.c", lnk), 0);
	int tar = memfd_create("copyin", MFD_CLOEXEC);
	_cleanup_close_ int root = tl_opendir(f->host);
	struct ws_manifest sent = {0}, got = {0};
	struct ws_notes notes = {0};
	pd_err err = {0};
	assert_int_equal(ws_copyin(root, tar, NULL, &sent, &notes, &err), 0);
	assert_true(noted(&notes, WS_R_DEFAULT_EXCLUDED, ".env"));
	assert_true(noted(&notes, WS_R_DEFAULT_EXCLUDED, "deploy/id_ed25519"));
	assert_true(noted(&notes, WS_R_IGNORED, "node_modules"));
	assert_true(noted(&notes, WS_R_SPECIAL_SKIPPED, "pipe"));
	assert_true(noted(&notes, WS_R_CREDENTIALS_REMOVED, ".git/config"));
	assert_null(ws_manifest_find(&sent, ".env"));
	assert_null(ws_manifest_find(&sent, "node_modules"));
	assert_int_equal(ws_manifest_find(&sent, "link")->type, WS_SYMLINK);
	assert_int_equal(ws_manifest_find(&sent, "run.sh")->mode, 0755);
	/* what the box receives is exactly what the manifest says */
	lseek(tar, 0, SEEK_SET);
	_cleanup_close_ int sfd = tl_opendir(f->staging);
	assert_int_equal(tl_ingest(tar, sfd, NULL, NULL, &got, NULL), 0);
	close(tar);
	struct ws_diff d;
	ws_diff_compute(&sent, &got, &d);
	assert_int_equal(d.n, 0);
	ws_diff_free(&d);
	const struct ws_entry *cfg = ws_manifest_find(&got, ".git/config");
	char hex[2 * WS_SHA256_LEN + 1];
	ws_sha256_hex(cfg->sha256, hex);
	_cleanup_free_ char *content = tl_read(f->staging, hex);
	assert_string_equal(content, "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/r\n");
	ws_manifest_free(&sent);
	ws_manifest_free(&got);
	ws_notes_free(&notes);
}

/* nothing to send (an empty tree, or one whose only file is left out): the stream is a valid
 * empty archive, written without libarchive, and the manifest is empty */
static void test_copyin_empty_tree(void **state)
{
	struct fx *f = *state;
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			tl_write(f->host, ".env", "API_KEY=secret\n", 0600);
		int tar = memfd_create("copyin", MFD_CLOEXEC);
		_cleanup_close_ int root = tl_opendir(f->host);
		struct ws_manifest sent = {0}, got = {0};
		struct ws_notes notes = {0};
		pd_err err = {0};
		assert_int_equal(ws_copyin(root, tar, NULL, &sent, &notes, &err), 0);
		assert_int_equal(sent.n, 0);
		assert_int_equal(notes.n, (size_t)round);
		struct stat st;
		assert_int_equal(fstat(tar, &st), 0);
		assert_int_equal(st.st_size, 1024);
		lseek(tar, 0, SEEK_SET);
		_cleanup_close_ int sfd = tl_opendir(f->staging);
		assert_int_equal(tl_ingest(tar, sfd, NULL, NULL, &got, NULL), 0);
		assert_int_equal(got.n, 0);
		close(tar);
		ws_manifest_free(&sent);
		ws_manifest_free(&got);
		ws_notes_free(&notes);
	}
}

/* the direct copy (ns: into the box's /workspace): the destination holds exactly what the
 * manifest says, with modes (a 0555 directory included) and mtimes, secrets left out,
 * credentials filtered; a symlink already in the destination is never followed */
static void test_copyin_to_dir(void **state)
{
	struct fx *f = *state;
	tl_write(f->host, "src/main.c", "int main(void) { return 0; }\n", 0644);
	tl_write(f->host, "run.sh", "#!/bin/sh\n", 0755);
	tl_write(f->host, "ro/inside.txt", "x\n", 0444);
	tl_write(f->host, ".env", "API_KEY=secret\n", 0600);
	tl_write(f->host, ".git/config", "[credential]\n\thelper = store\n[core]\n\tbare = false\n", 0644);
	_cleanup_free_ char *ro = xasprintf("%s/ro", f->host), *lnk = xasprintf("%s/link", f->host);
	assert_int_equal(chmod(ro, 0555), 0);
	assert_int_equal(symlink("src/main.c", lnk), 0);
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 5}};
	_cleanup_free_ char *mc = xasprintf("%s/src/main.c", f->host);
	assert_int_equal(utimensat(AT_FDCWD, mc, old, 0), 0);
	_cleanup_free_ char *dst = xasprintf("%s/dst", f->dir);
	assert_int_equal(mkdir(dst, 0755), 0);
	_cleanup_close_ int root = tl_opendir(f->host), dfd = tl_opendir(dst);
	struct ws_manifest sent = {0}, got = {0};
	struct ws_notes notes = {0};
	pd_err err = {0};
	assert_int_equal(ws_copyin_to_dir(root, dfd, NULL, &sent, &notes, &err), 0);
	assert_null(ws_manifest_find(&sent, ".env"));
	assert_false(tl_exists(dst, ".env"));
	tl_manifest_dir(dst, &got);
	struct ws_diff d;
	ws_diff_compute(&sent, &got, &d);
	assert_int_equal(d.n, 0);
	ws_diff_free(&d);
	_cleanup_free_ char *cfg = tl_read(dst, ".git/config");
	assert_string_equal(cfg, "[core]\n\tbare = false\n");
	struct stat st;
	_cleanup_free_ char *dmc = xasprintf("%s/src/main.c", dst), *dro = xasprintf("%s/ro", dst);
	assert_int_equal(stat(dmc, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_int_equal(st.st_mtim.tv_nsec, 5);
	assert_int_equal(stat(dro, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0555);
	ws_manifest_free(&sent);
	ws_manifest_free(&got);
	ws_notes_free(&notes);
	/* a destination that already has symlinks where a directory and a file go (an image's
	 * /workspace): they are replaced, as tar -x would, and nothing is written through them */
	_cleanup_free_ char *dst2 = xasprintf("%s/dst2", f->dir), *away = xasprintf("%s/away", f->dir);
	_cleanup_free_ char *trap = xasprintf("%s/src", dst2), *trap2 = xasprintf("%s/run.sh", dst2);
	_cleanup_free_ char *awayf = xasprintf("%s/away/f", f->dir);
	assert_int_equal(mkdir(dst2, 0755), 0);
	assert_int_equal(mkdir(away, 0755), 0);
	assert_int_equal(symlink(away, trap), 0);
	assert_int_equal(symlink(awayf, trap2), 0);
	_cleanup_close_ int dfd2 = tl_opendir(dst2);
	struct ws_manifest m2 = {0}, got2 = {0};
	struct ws_notes n2 = {0};
	assert_int_equal(ws_copyin_to_dir(root, dfd2, NULL, &m2, &n2, &err), 0);
	assert_int_equal(tl_count_entries(away), 0);
	tl_manifest_dir(dst2, &got2);
	ws_diff_compute(&m2, &got2, &d);
	assert_int_equal(d.n, 0);
	ws_diff_free(&d);
	ws_manifest_free(&m2);
	ws_manifest_free(&got2);
	ws_notes_free(&n2);
	_cleanup_free_ char *dro2 = xasprintf("%s/ro", dst2);
	assert_int_equal(chmod(dro2, 0755), 0);
	assert_int_equal(chmod(dro, 0755), 0); /* teardown removes the tree */
	assert_int_equal(chmod(ro, 0755), 0);
}

/* the direct copy's writing thread: a file of several chunks keeps its bytes, mode and mtime
 * (each chunk is its own queue item), an empty file is made, the baseline it records is the
 * scan the box would make (every entry, the inode numbers the destination has), and a
 * failure on the writer's side comes back as the copy's error with the entry's name */
static void test_copyin_to_dir_writer(void **state)
{
	struct fx *f = *state;
	size_t big = 700001;
	_cleanup_free_ char *bytes = xmalloc(big + 1);
	for (size_t i = 0; i < big; i++)
		bytes[i] = (char)('a' + i % 23);
	bytes[big] = '\0';
	tl_write(f->host, "data/big.bin", bytes, 0640);
	tl_write(f->host, "data/empty", "", 0600);
	tl_write(f->host, "run.sh", "#!/bin/sh\n", 0755);
	_cleanup_free_ char *bigp = xasprintf("%s/data/big.bin", f->host), *lnk = xasprintf("%s/l", f->host);
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 7}};
	assert_int_equal(utimensat(AT_FDCWD, bigp, old, 0), 0);
	assert_int_equal(symlink("data/big.bin", lnk), 0);
	_cleanup_free_ char *dst = xasprintf("%s/dst", f->dir);
	assert_int_equal(mkdir(dst, 0755), 0);
	_cleanup_close_ int root = tl_opendir(f->host), dfd = tl_opendir(dst);
	struct ws_manifest sent = {0}, got = {0};
	struct ws_notes notes = {0};
	struct ws_bscan scan = {0};
	struct ws_copyin_opts o = {.baseline = &scan};
	pd_err err = {0};
	assert_int_equal(ws_copyin_to_dir(root, dfd, &o, &sent, &notes, &err), 0);
	tl_manifest_dir(dst, &got);
	struct ws_diff d;
	ws_diff_compute(&sent, &got, &d);
	assert_int_equal(d.n, 0);
	ws_diff_free(&d);
	struct stat st;
	_cleanup_free_ char *dbig = xasprintf("%s/data/big.bin", dst);
	assert_int_equal(stat(dbig, &st), 0);
	assert_int_equal(st.st_size, (off_t)big);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_int_equal(st.st_mtim.tv_nsec, 7);
	_cleanup_free_ char *back = tl_read(dst, "data/big.bin");
	assert_memory_equal(back, bytes, big);
	/* the baseline: one record per entry made, as lstat of the destination sees it now */
	size_t made = 0;
	for (size_t i = 0; i < sent.n; i++)
		made += strcmp(sent.v[i].path, ".") != 0 && sent.v[i].path[0] != '\0';
	assert_int_equal(scan.n, made);
	for (size_t i = 0; i < scan.n; i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dst, scan.v[i].path);
		assert_int_equal(lstat(p, &st), 0);
		assert_int_equal(scan.v[i].ino, (uint64_t)st.st_ino);
		assert_int_equal(scan.v[i].mode, st.st_mode & 07777);
		assert_int_equal(scan.v[i].ctime_s, st.st_ctim.tv_sec);
		assert_int_equal(scan.v[i].ctime_ns, st.st_ctim.tv_nsec);
		assert_int_equal(scan.v[i].kind, S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'f');
	}
	ws_bscan_free(&scan);
	ws_manifest_free(&sent);
	ws_manifest_free(&got);
	ws_notes_free(&notes);
	/* a directory where a file goes: the writer cannot replace it; the copy fails, naming it */
	_cleanup_free_ char *dst2 = xasprintf("%s/dst2", f->dir), *block = xasprintf("%s/dst2/run.sh", f->dir);
	assert_int_equal(mkdir(dst2, 0755), 0);
	assert_int_equal(mkdir(block, 0755), 0);
	_cleanup_close_ int dfd2 = tl_opendir(dst2);
	struct ws_manifest m2 = {0};
	struct ws_notes n2 = {0};
	assert_true(ws_copyin_to_dir(root, dfd2, NULL, &m2, &n2, &err) < 0);
	assert_non_null(strstr(err.msg, "run.sh"));
	assert_int_equal(m2.n, 0);
	ws_notes_free(&n2);
}

static void test_copyin_refuses_symlinked_ignore(void **state)
{
	struct fx *f = *state;
	tl_write(f->dir, "elsewhere", "*\n", 0644);
	_cleanup_free_ char *lnk = xasprintf("%s/.paddockignore", f->host), *tgt = xasprintf("%s/elsewhere", f->dir);
	assert_int_equal(symlink(tgt, lnk), 0);
	_cleanup_close_ int root = tl_opendir(f->host);
	struct ws_ignore *ig = NULL;
	assert_int_equal(ws_ignore_load(root, true, &ig, NULL), -ELOOP);
}

static void test_tar_ingest_honours_ignore(void **state)
{
	struct fx *f = *state;
	struct tl_tar *t = tl_tar_new();
	tl_tar_file(t, "node_modules/big.js", "x", 0644);
	tl_tar_file(t, "src/a.c", "a", 0644);
	tl_tar_file(t, ".env", "SECRET=1", 0644);
	int fd = tl_tar_finish(t);
	struct ws_ignore *ig = rules("node_modules/\n", true);
	_cleanup_close_ int sfd = tl_opendir(f->staging);
	struct ws_tar_opts o = {.staging_fd = sfd, .ignore = ig};
	struct ws_manifest m = {0};
	assert_int_equal(ws_manifest_from_tar(fd, &o, &m, NULL, NULL), 0);
	close(fd);
	assert_null(ws_manifest_find(&m, "node_modules"));
	assert_null(ws_manifest_find(&m, "node_modules/big.js"));
	assert_null(ws_manifest_find(&m, ".env"));
	assert_non_null(ws_manifest_find(&m, "src/a.c"));
	ws_manifest_free(&m);
	ws_ignore_free(ig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ignore_rules),
		cmocka_unit_test(test_ignore_defaults),
		cmocka_unit_test(test_gitconfig_filter),
		cmocka_unit_test_setup_teardown(test_copyin_end_to_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copyin_empty_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copyin_to_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copyin_to_dir_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copyin_refuses_symlinked_ignore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_ingest_honours_ignore, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
