/* test-ws-diff.c — classification of changes (renames included), exec flags, and the
 * renderers: escaping, binary summaries, unified hunks, JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include <sys/mman.h>

#include "util/fdio.h"
#include "workspace/testlib-ws.h"

static void add(struct ws_manifest *m, const char *path, enum ws_type t, mode_t mode, const char *content,
		const char *target)
{
	struct ws_entry e = {.path = (char *)path, .type = t, .mode = mode, .target = (char *)target};
	if (t == WS_FILE) {
		e.size = strlen(content);
		ws_sha256(content, e.size, e.sha256);
	}
	ws_manifest_add(m, &e);
}

static void add_refused(struct ws_manifest *m, const char *path, enum ws_reason r)
{
	ws_manifest_add(m, &(struct ws_entry){.path = (char *)path, .type = WS_REFUSED, .reason = r});
}

static const struct ws_delta *delta(const struct ws_diff *d, const char *path)
{
	for (size_t i = 0; i < d->n; i++)
		if (streq(ws_delta_path(&d->v[i]), path))
			return &d->v[i];
	return NULL;
}

static void test_classify(void **state)
{
	struct ws_manifest base = {0}, box = {0};
	add(&base, "dir", WS_DIR, 0755, NULL, NULL);
	add(&box, "dir", WS_DIR, 0700, NULL, NULL); /* dir mode: not a change */
	add(&base, "same", WS_FILE, 0644, "same\n", NULL);
	add(&box, "same", WS_FILE, 0644, "same\n", NULL);
	add(&base, "mod", WS_FILE, 0644, "a\n", NULL);
	add(&box, "mod", WS_FILE, 0755, "b\n", NULL);
	add(&base, "chmod", WS_FILE, 0644, "x\n", NULL);
	add(&box, "chmod", WS_FILE, 0755, "x\n", NULL);
	add(&base, "gone", WS_FILE, 0644, "bye\n", NULL);
	add(&box, "fresh", WS_FILE, 0644, "hi\n", NULL);
	add(&base, "link", WS_SYMLINK, 0777, NULL, "a");
	add(&box, "link", WS_SYMLINK, 0777, NULL, "b");
	add(&base, "typ", WS_FILE, 0644, "t\n", NULL);
	add(&box, "typ", WS_SYMLINK, 0777, NULL, "same");
	add(&base, "old/name.c", WS_FILE, 0644, "int x;\n", NULL);
	add(&box, "new/name.c", WS_FILE, 0644, "int x;\n", NULL);
	add(&base, "empty1", WS_FILE, 0644, "", NULL);
	add(&box, "empty2", WS_FILE, 0644, "", NULL);
	add_refused(&box, "dev", WS_R_DEVICE);
	ws_manifest_sort(&base);
	ws_manifest_sort(&box);
	struct ws_diff d;
	ws_diff_compute(&base, &box, &d);
	assert_null(delta(&d, "dir"));
	assert_null(delta(&d, "same"));
	assert_int_equal(delta(&d, "mod")->kind, WS_CHG_MODIFIED);
	assert_true(delta(&d, "mod")->mode_changed);
	assert_int_equal(delta(&d, "chmod")->kind, WS_CHG_MODE);
	assert_int_equal(delta(&d, "gone")->kind, WS_CHG_DELETED);
	assert_int_equal(delta(&d, "link")->kind, WS_CHG_SYMLINK);
	assert_int_equal(delta(&d, "typ")->kind, WS_CHG_TYPE);
	const struct ws_delta *r = delta(&d, "new/name.c");
	assert_int_equal(r->kind, WS_CHG_RENAMED);
	assert_string_equal(r->base->path, "old/name.c");
	assert_null(delta(&d, "old/name.c")); /* absorbed into the rename */
	assert_int_equal(delta(&d, "empty1")->kind, WS_CHG_DELETED); /* empty files: no renames */
	assert_int_equal(delta(&d, "empty2")->kind, WS_CHG_ADDED);
	assert_int_equal(delta(&d, "dev")->kind, WS_CHG_REFUSED);
	assert_int_equal(delta(&d, "dev")->refused, WS_R_DEVICE);
	assert_int_equal(delta(&d, "fresh")->kind, WS_CHG_ADDED);
	char *sel[] = {"new", NULL};
	assert_true(ws_delta_selected(delta(&d, "new/name.c"), sel));
	char *sel2[] = {"old", NULL};
	assert_true(ws_delta_selected(delta(&d, "new/name.c"), sel2)); /* via its old path */
	assert_false(ws_delta_selected(delta(&d, "mod"), sel));
	ws_diff_free(&d);
	ws_manifest_free(&base);
	ws_manifest_free(&box);
}

static void test_refused_parent_keeps_children(void **state)
{
	struct ws_manifest base = {0}, box = {0};
	add(&base, "lib", WS_DIR, 0755, NULL, NULL);
	add(&base, "lib/a.c", WS_FILE, 0644, "a\n", NULL);
	add_refused(&box, "lib", WS_R_LINK_ABSOLUTE); /* the box swapped lib for /usr/lib */
	ws_manifest_sort(&base);
	struct ws_diff d;
	ws_diff_compute(&base, &box, &d);
	assert_int_equal(delta(&d, "lib")->kind, WS_CHG_REFUSED);
	assert_int_equal(delta(&d, "lib/a.c")->kind, WS_CHG_REFUSED); /* not "deleted" */
	assert_int_equal(delta(&d, "lib/a.c")->refused, WS_R_PARENT_REFUSED);
	ws_diff_free(&d);
	ws_manifest_free(&base);
	ws_manifest_free(&box);
}

static void stage(int staging_fd, const char *content)
{
	uint8_t sha[WS_SHA256_LEN];
	char hex[2 * WS_SHA256_LEN + 1];
	ws_sha256(content, strlen(content), sha);
	ws_sha256_hex(sha, hex);
	assert_int_equal(write_file_atomic_at(staging_fd, hex, content, strlen(content), 0600), 0);
}

static void test_exec_marks(void **state)
{
	_cleanup_free_ char *dir = tl_tmpdir();
	_cleanup_close_ int sfd = tl_opendir(dir);
	struct ws_manifest base = {0}, box = {0};
	const char *lfs = "*.bin filter=lfs\n", *plain = "*.c text\n";
	stage(sfd, lfs);
	stage(sfd, plain);
	add(&box, ".git/hooks/post-checkout", WS_FILE, 0755, "#!/bin/sh\n", NULL);
	add(&box, ".gitattributes", WS_FILE, 0644, lfs, NULL);
	add(&box, "src/.gitattributes", WS_FILE, 0644, plain, NULL);
	add(&box, "bare/HEAD", WS_FILE, 0644, "ref: refs/heads/main\n", NULL);
	add(&box, "bare/objects", WS_DIR, 0755, NULL, NULL);
	add(&box, "bare/config", WS_FILE, 0644, "[core]\n\tfsmonitor = evil\n", NULL);
	add(&box, "notbare/config", WS_FILE, 0644, "x\n", NULL);
	/* git takes these for git directories too: HEAD a symlink, objects a symlink, or a
	 * commondir instead of objects (a linked worktree's) */
	add(&box, "b2/HEAD", WS_SYMLINK, 0777, NULL, "refs/heads/main");
	add(&box, "b2/objects", WS_DIR, 0755, NULL, NULL);
	add(&box, "b2/hooks/post-checkout", WS_FILE, 0755, "#!/bin/sh\n", NULL);
	add(&box, "b3/HEAD", WS_FILE, 0644, "ref: refs/heads/main\n", NULL);
	add(&box, "b3/objects", WS_SYMLINK, 0777, NULL, "../b2/objects");
	add(&box, "b3/config", WS_FILE, 0644, "[core]\n\tfsmonitor = evil\n", NULL);
	add(&box, "wt/HEAD", WS_FILE, 0644, "ref: refs/heads/main\n", NULL);
	add(&box, "wt/commondir", WS_FILE, 0644, "../b2\n", NULL);
	add(&box, "wt/config", WS_FILE, 0644, "[core]\n\tfsmonitor = evil\n", NULL);
	add(&box, "nohead/objects", WS_DIR, 0755, NULL, NULL);
	add(&box, "nohead/config", WS_FILE, 0644, "x\n", NULL);
	add(&base, ".envrc", WS_FILE, 0644, "use nix\n", NULL); /* deleted */
	ws_manifest_sort(&box);
	ws_manifest_sort(&base);
	struct ws_diff d;
	ws_diff_compute(&base, &box, &d);
	ws_diff_mark_exec(&d, &box, sfd);
	assert_int_equal(delta(&d, ".git/hooks/post-checkout")->exec, WS_EXEC_GIT_HOOK);
	assert_int_equal(delta(&d, ".gitattributes")->exec, WS_EXEC_GIT_ATTRIBUTES);
	assert_int_equal(delta(&d, "src/.gitattributes")->exec, WS_EXEC_NONE);
	assert_int_equal(delta(&d, "bare/config")->exec, WS_EXEC_GIT_CONFIG);
	assert_int_equal(delta(&d, "notbare/config")->exec, WS_EXEC_NONE);
	assert_int_equal(delta(&d, "b2/hooks/post-checkout")->exec, WS_EXEC_GIT_HOOK);
	assert_int_equal(delta(&d, "b3/config")->exec, WS_EXEC_GIT_CONFIG);
	assert_int_equal(delta(&d, "wt/config")->exec, WS_EXEC_GIT_CONFIG);
	assert_int_equal(delta(&d, "nohead/config")->exec, WS_EXEC_NONE);
	assert_int_equal(delta(&d, ".envrc")->exec, WS_EXEC_ENVRC);
	ws_diff_free(&d);
	ws_manifest_free(&base);
	ws_manifest_free(&box);
	tl_rmrf(dir);
}

/* An in-memory content source: entries' content looked up by hash in a small table. */
struct mem {
	const char *texts[8];
};

static int mem_load(void *ud, const struct ws_entry *e, bool from_box, size_t max, char **ret, size_t *ret_len)
{
	struct mem *m = ud;
	for (size_t i = 0; i < ARRAY_SIZE(m->texts) && m->texts[i]; i++) {
		uint8_t sha[WS_SHA256_LEN];
		ws_sha256(m->texts[i], strlen(m->texts[i]), sha);
		if (memcmp(sha, e->sha256, WS_SHA256_LEN) == 0) {
			*ret = xstrdup(m->texts[i]);
			*ret_len = strlen(m->texts[i]);
			return 0;
		}
	}
	return -ENOENT;
}

static char *render(void (*fn)(FILE *, const struct ws_diff *, const struct ws_render_opts *),
		    const struct ws_diff *d, const struct ws_render_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fn(f, d, o);
	fclose(f);
	return buf;
}

static void test_render_escapes(void **state)
{
	const char *old = "line1\nline2\n", *new = "line1\n\x1b]0;owned\x07line2 \xe2\x80\xae evil\n";
	struct mem mem = {{old, new}};
	struct ws_content src = {mem_load, &mem};
	struct ws_manifest base = {0}, box = {0};
	add(&base, "f.txt", WS_FILE, 0644, old, NULL);
	add(&box, "f.txt", WS_FILE, 0644, new, NULL);
	add(&box, "name\xe2\x80\xae" "txt.exe", WS_FILE, 0644, "x", NULL);
	add(&box, "bad\xff" "utf8", WS_FILE, 0644, "x", NULL);
	ws_manifest_sort(&box);
	struct ws_diff d;
	ws_diff_compute(&base, &box, &d);
	struct ws_render_opts o = {.content = &src};
	_cleanup_free_ char *patch = render(ws_diff_render_patch, &d, &o);
	_cleanup_free_ char *st = render(ws_diff_render_stat, &d, &o);
	_cleanup_free_ char *json = ws_diff_render_json(&d, &o);
	for (const char *out[] = {patch, st, json}, **p = out; p < out + 3; p++) {
		assert_null(strchr(*p, '\x1b'));
		assert_null(strstr(*p, "\xe2\x80\xae"));
		assert_null(strchr(*p, '\xff'));
		assert_null(strchr(*p, '\x07'));
	}
	assert_non_null(strstr(patch, "+\\x1b]0;owned\\x07line2 \\u{202E} evil\n"));
	assert_non_null(strstr(patch, "-line2\n"));
	assert_non_null(strstr(st, "name\\u{202E}txt.exe"));
	assert_non_null(strstr(st, "bad\\xffutf8"));
	assert_non_null(strstr(st, " M f.txt | +1 -1"));
	ws_diff_free(&d);
	ws_manifest_free(&base);
	ws_manifest_free(&box);
}

static void test_render_binary_and_color(void **state)
{
	const char bin[] = "ELF\0\1\2";
	struct ws_manifest base = {0}, box = {0};
	struct ws_entry e = {.path = "bin", .type = WS_FILE, .mode = 0755, .size = sizeof(bin)};
	ws_sha256(bin, sizeof(bin), e.sha256);
	ws_manifest_add(&box, &e);
	add(&base, "t", WS_FILE, 0644, "a\n", NULL);
	add(&box, "t", WS_FILE, 0644, "b\n", NULL);
	ws_manifest_sort(&box);
	struct mem mem = {{"a\n", "b\n"}};
	struct ws_content src = {mem_load, &mem};
	struct ws_diff d;
	ws_diff_compute(&base, &box, &d);
	struct ws_render_opts o = {.content = &src};
	_cleanup_free_ char *plain = render(ws_diff_render_patch, &d, &o);
	assert_non_null(strstr(plain, "binary or unavailable content differs (0 -> 7 bytes)"));
	assert_non_null(strstr(plain, "--- a/t\n+++ b/t\n@@ -1,1 +1,1 @@\n-a\n+b\n"));
	assert_null(strchr(plain, '\x1b'));
	o.color = true;
	_cleanup_free_ char *col = render(ws_diff_render_patch, &d, &o);
	assert_non_null(strstr(col, "\033[31m-a\033[m"));
	ws_diff_free(&d);
	ws_manifest_free(&base);
	ws_manifest_free(&box);
}

static void test_render_json(void **state)
{
	struct ws_manifest base = {0}, box = {0};
	add(&base, "a", WS_FILE, 0644, "same content\n", NULL);
	add(&box, "b", WS_FILE, 0644, "same content\n", NULL);
	add(&box, "l", WS_SYMLINK, 0777, NULL, "b");
	ws_manifest_sort(&box);
	struct ws_diff d;
	ws_diff_compute(&base, &box, &d);
	struct ws_render_opts o = {0};
	_cleanup_free_ char *json = ws_diff_render_json(&d, &o);
	cJSON *root = cJSON_Parse(json);
	assert_non_null(root);
	cJSON *arr = cJSON_GetObjectItem(root, "changes");
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	cJSON *c0 = cJSON_GetArrayItem(arr, 0);
	assert_string_equal(cJSON_GetObjectItem(c0, "change")->valuestring, "renamed");
	assert_string_equal(cJSON_GetObjectItem(c0, "old_path")->valuestring, "a");
	assert_string_equal(cJSON_GetObjectItem(c0, "path")->valuestring, "b");
	cJSON *c1 = cJSON_GetArrayItem(arr, 1);
	assert_string_equal(cJSON_GetObjectItem(c1, "target")->valuestring, "b");
	cJSON_Delete(root);
	ws_diff_free(&d);
	ws_manifest_free(&base);
	ws_manifest_free(&box);
}

static char *udiff(const char *a, const char *b)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ws_udiff_write(f, a, strlen(a), b, strlen(b), 1, false);
	fclose(f);
	return buf;
}

static void test_udiff_hunks(void **state)
{
	_cleanup_free_ char *u1 = udiff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nX\nd\ne\nf\ng\nY\n");
	assert_string_equal(u1, "@@ -2,3 +2,3 @@\n b\n-c\n+X\n d\n@@ -7,2 +7,2 @@\n g\n-h\n+Y\n");
	_cleanup_free_ char *u2 = udiff("", "new\n");
	assert_string_equal(u2, "@@ -0,0 +1,1 @@\n+new\n");
	_cleanup_free_ char *u3 = udiff("x\ny", "x\ny\n");
	assert_string_equal(u3, "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n");
	_cleanup_free_ char *u4 = udiff("same\n", "same\n");
	assert_string_equal(u4, "");
	unsigned add = 0, del = 0;
	ws_udiff_count("a\nb\nc\n", 6, "a\nc\nd\n", 6, &add, &del);
	assert_int_equal(add, 1);
	assert_int_equal(del, 1);
}

static void test_udiff_random(void **state)
{
	srand(42);
	for (int round = 0; round < 300; round++) {
		char a[256] = "", b[256] = "";
		int na = rand() % 40, nb = rand() % 40;
		for (int i = 0; i < na; i++)
			strcat(a, (const char *[]){"x\n", "y\n", "z\n"}[rand() % 3]);
		for (int i = 0; i < nb; i++)
			strcat(b, (const char *[]){"x\n", "y\n", "z\n"}[rand() % 3]);
		unsigned add, del;
		ws_udiff_count(a, strlen(a), b, strlen(b), &add, &del);
		assert_int_equal((int)add - (int)del, nb - na); /* a consistent edit script */
		assert_true((int)(add + del) <= na + nb);
	}
}

static void test_udiff_cost_cap(void **state)
{
	size_t n = 200000;
	char *a = xmalloc(n * 8), *b = xmalloc(n * 8);
	size_t la = 0, lb = 0;
	for (size_t i = 0; i < n; i++) {
		la += (size_t)sprintf(a + la, "a%zu\n", i);
		lb += (size_t)sprintf(b + lb, "b%zu\n", i);
	}
	unsigned add, del;
	ws_udiff_count(a, la, b, lb, &add, &del); /* completes quickly: replaced whole */
	assert_int_equal(add, n);
	assert_int_equal(del, n);
	free(a);
	free(b);
	assert_true(ws_text_is_binary("a\0b", 3));
	assert_true(ws_text_is_binary("\xff\xfe", 2));
	assert_false(ws_text_is_binary("caf\xc3\xa9\n", 6));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_refused_parent_keeps_children),
		cmocka_unit_test(test_exec_marks),
		cmocka_unit_test(test_render_escapes),
		cmocka_unit_test(test_render_binary_and_color),
		cmocka_unit_test(test_render_json),
		cmocka_unit_test(test_udiff_hunks),
		cmocka_unit_test(test_udiff_random),
		cmocka_unit_test(test_udiff_cost_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
