/* test-ws-boxscan.c — the box's scan records (codec, streaming, caps, hostile shapes), the
 * fetch plan against a baseline and the copy-in manifest, and the merge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "proto/wsscan.h"
#include "workspace/ws_boxscan.h"
#include "workspace/ws_ignore.h"

struct sbuf {
	uint8_t *p;
	size_t len;
	uint64_t count;
};

static void put(struct sbuf *b, uint8_t kind, const char *path, const char *target, uint64_t size, int64_t ctime)
{
	struct wsscan_rec r = {
		.kind = kind, .mode = kind == WSSCAN_DIR ? 0755 : 0644, .size = size, .ino = 1000 + b->count,
		.mtime_s = 1700000000, .ctime_s = ctime, .path = path, .path_len = path ? strlen(path) : 0,
		.target = target, .target_len = target ? strlen(target) : 0,
	};
	if (kind == WSSCAN_END)
		r.size = b->count, r.mode = 0;
	b->p = xrealloc(b->p, b->len + WSSCAN_HDR + 2 * WSSCAN_MAX_PATH);
	size_t n = wsscan_encode(b->p + b->len, WSSCAN_HDR + 2 * WSSCAN_MAX_PATH, &r);
	assert_true(n > 0);
	b->len += n;
	b->count++;
}

static void end(struct sbuf *b)
{
	put(b, WSSCAN_END, NULL, NULL, 0, 0); /* its size: the records before it */
}

/* a small scan: d/, d/a (file), d/l -> a, top (file) */
static void sample(struct sbuf *b, int64_t ctime_a)
{
	put(b, WSSCAN_FILE, "top", NULL, 6, 5);
	put(b, WSSCAN_DIR, "d", NULL, 0, 5);
	put(b, WSSCAN_FILE, "d/a", NULL, 6, ctime_a);
	put(b, WSSCAN_LINK, "d/l", "a", 1, 5);
	end(b);
}

static int feed_all(struct ws_bscan *s, const struct sbuf *b)
{
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	return ws_bscan_feed(s, b->p, b->len, &lim, NULL);
}

/* an empty workspace: only the end record (found by UBSan: qsort of a NULL array) */
static void test_empty_scan(void **state)
{
	(void)state;
	struct sbuf b = {0};
	end(&b);
	struct ws_bscan s = {0};
	assert_int_equal(feed_all(&s, &b), 1);
	assert_int_equal(s.n, 0);
	ws_bscan_free(&s);
	free(b.p);
}

static void test_codec(void **state)
{
	(void)state;
	struct sbuf b = {0};
	put(&b, WSSCAN_LINK, "x/y", "../z", 3, 7);
	struct wsscan_rec r;
	size_t used;
	assert_int_equal(wsscan_decode(b.p, b.len, &r, &used), 1);
	assert_int_equal(used, b.len);
	assert_int_equal(r.kind, WSSCAN_LINK);
	assert_memory_equal(r.path, "x/y", 3);
	assert_memory_equal(r.target, "../z", 4);
	assert_int_equal(r.ctime_s, 7);
	for (size_t n = 0; n < b.len; n++) /* every prefix: "need more" */
		assert_int_equal(wsscan_decode(b.p, n, &r, &used), 0);
	/* hostile shapes */
	uint8_t bad[WSSCAN_HDR + 16];
	memcpy(bad, b.p, WSSCAN_HDR);
	bad[0] = 'q';
	assert_int_equal(wsscan_decode(bad, sizeof(bad), &r, &used), -EBADMSG);
	memcpy(bad, b.p, WSSCAN_HDR);
	bad[1] = 1; /* padding */
	assert_int_equal(wsscan_decode(bad, sizeof(bad), &r, &used), -EBADMSG);
	memcpy(bad, b.p, WSSCAN_HDR);
	bad[2] = 0, bad[3] = 0x20; /* path_len 8192 */
	assert_int_equal(wsscan_decode(bad, sizeof(bad), &r, &used), -EBADMSG);
	memcpy(bad, b.p, WSSCAN_HDR);
	bad[8] = 0xff, bad[9] = 0xff; /* mode past 07777 */
	assert_int_equal(wsscan_decode(bad, sizeof(bad), &r, &used), -EBADMSG);
	memcpy(bad, b.p, b.len > sizeof(bad) ? sizeof(bad) : b.len);
	bad[WSSCAN_HDR + 1] = 0; /* NUL inside the path */
	assert_int_equal(wsscan_decode(bad, b.len, &r, &used), -EBADMSG);
	memcpy(bad, b.p, WSSCAN_HDR);
	bad[0] = WSSCAN_FILE; /* a file with a target */
	assert_int_equal(wsscan_decode(bad, sizeof(bad), &r, &used), -EBADMSG);
	free(b.p);
}

static void test_feed_split_anywhere(void **state)
{
	(void)state;
	struct sbuf b = {0};
	sample(&b, 5);
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	for (size_t cut = 0; cut <= b.len; cut++) {
		struct ws_bscan s = {0};
		int r = ws_bscan_feed(&s, b.p, cut, &lim, NULL);
		assert_int_equal(r, cut == b.len ? 1 : 0);
		if (cut < b.len)
			assert_int_equal(ws_bscan_feed(&s, b.p + cut, b.len - cut, &lim, NULL), 1);
		assert_int_equal(s.n, 4);
		assert_string_equal(s.v[0].path, "d");
		assert_string_equal(s.v[1].path, "d/a");
		assert_string_equal(s.v[2].path, "d/l");
		assert_string_equal(s.v[2].target, "a");
		assert_string_equal(s.v[3].path, "top");
		ws_bscan_free(&s);
	}
	/* byte by byte */
	struct ws_bscan s = {0};
	int r = 0;
	for (size_t i = 0; i < b.len; i++)
		r = ws_bscan_feed(&s, b.p + i, 1, &lim, NULL);
	assert_int_equal(r, 1);
	assert_int_equal(s.n, 4);
	ws_bscan_free(&s);
	free(b.p);
}

static void test_feed_hostile(void **state)
{
	(void)state;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_bscan s = {0};
	/* the end record lies about the count */
	struct sbuf b = {0};
	put(&b, WSSCAN_FILE, "a", NULL, 1, 1);
	b.count = 7;
	put(&b, WSSCAN_END, NULL, NULL, 0, 0);
	assert_int_equal(feed_all(&s, &b), -EBADMSG);
	ws_bscan_free(&s), free(b.p), b = (struct sbuf){0};
	/* a path twice */
	put(&b, WSSCAN_FILE, "a", NULL, 1, 1);
	put(&b, WSSCAN_FILE, "a", NULL, 1, 1);
	end(&b);
	assert_int_equal(feed_all(&s, &b), -EBADMSG);
	ws_bscan_free(&s), free(b.p), b = (struct sbuf){0};
	/* a directory with a NOTE beside its record (a name too long beneath it) is one path
	 * sent twice that is allowed; a third record of it, or a NOTE beside a file, is not */
	put(&b, WSSCAN_DIR, "d", NULL, 0, 1);
	put(&b, WSSCAN_NOTE, "d", NULL, 0, 0);
	end(&b);
	assert_int_equal(feed_all(&s, &b), 1);
	ws_bscan_free(&s), free(b.p), b = (struct sbuf){0};
	put(&b, WSSCAN_DIR, "d", NULL, 0, 1);
	put(&b, WSSCAN_NOTE, "d", NULL, 0, 0);
	put(&b, WSSCAN_NOTE, "d", NULL, 0, 0);
	end(&b);
	assert_int_equal(feed_all(&s, &b), -EBADMSG);
	ws_bscan_free(&s), free(b.p), b = (struct sbuf){0};
	put(&b, WSSCAN_FILE, "f", NULL, 1, 1);
	put(&b, WSSCAN_NOTE, "f", NULL, 0, 0);
	end(&b);
	assert_int_equal(feed_all(&s, &b), -EBADMSG);
	ws_bscan_free(&s), free(b.p), b = (struct sbuf){0};
	/* bytes after the end */
	sample(&b, 5);
	size_t whole = b.len;
	put(&b, WSSCAN_FILE, "late", NULL, 1, 1);
	assert_int_equal(feed_all(&s, &b), -EBADMSG);
	ws_bscan_free(&s);
	assert_int_equal(ws_bscan_feed(&s, b.p, whole, &lim, NULL), 1); /* END then nothing */
	assert_int_equal(ws_bscan_feed(&s, b.p, 1, &lim, NULL), -EBADMSG);  /* more after it */
	ws_bscan_free(&s), free(b.p), b = (struct sbuf){0};
	/* too many entries, too many name bytes */
	struct ws_limits small = lim;
	small.max_entries = 3;
	sample(&b, 5);
	assert_int_equal(ws_bscan_feed(&s, b.p, b.len, &small, NULL), -EFBIG);
	ws_bscan_free(&s);
	small = lim;
	small.max_names = 5;
	assert_int_equal(ws_bscan_feed(&s, b.p, b.len, &small, NULL), -EFBIG);
	ws_bscan_free(&s), free(b.p);
	/* garbage */
	uint8_t junk[200];
	memset(junk, 'A', sizeof(junk));
	assert_int_equal(ws_bscan_feed(&s, junk, sizeof(junk), &lim, NULL), -EBADMSG);
	ws_bscan_free(&s);
}

static void base_add(struct ws_manifest *m, enum ws_type t, const char *path, const char *target, uint64_t size)
{
	struct ws_entry e = {.path = (char *)path, .target = (char *)target, .type = t, .size = size,
			     .mode = t == WS_DIR ? 0755 : 0644};
	ws_manifest_add(m, &e);
}

static void sample_base(struct ws_manifest *m)
{
	base_add(m, WS_DIR, "d", NULL, 0);
	base_add(m, WS_FILE, "d/a", NULL, 6);
	base_add(m, WS_SYMLINK, "d/l", "a", 0);
	base_add(m, WS_FILE, "top", NULL, 6);
	ws_manifest_sort(m);
}

static size_t fetch_has(const struct ws_bplan *p, const char *path)
{
	_cleanup_free_ char *want = xasprintf("./%s", path);
	for (size_t off = 0; off < p->fetch_len; off += strlen(p->fetch + off) + 1)
		if (streq(p->fetch + off, want))
			return 1;
	return 0;
}

static void test_plan(void **state)
{
	(void)state;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_manifest base = {0};
	sample_base(&base);
	struct sbuf b0 = {0}, b1 = {0};
	sample(&b0, 5);
	sample(&b1, 9); /* d/a's ctime moved: it was written */
	struct ws_bscan baseline = {0}, now = {0};
	assert_int_equal(feed_all(&baseline, &b0), 1);
	assert_int_equal(feed_all(&now, &b1), 1);
	struct ws_bplan p;
	struct ws_notes notes = {0};
	ws_bplan_make(&now, &baseline, &base, NULL, &lim, &p, &notes);
	assert_int_equal(p.n_fetch, 2); /* the directory and the written file */
	assert_true(fetch_has(&p, "d") && fetch_has(&p, "d/a"));
	assert_int_equal(p.same.n, 2);
	assert_non_null(ws_manifest_find(&p.same, "top"));
	assert_non_null(ws_manifest_find(&p.same, "d/l")); /* same target */
	ws_bplan_free(&p);
	/* without a baseline every file is fetched; links still compare by target */
	ws_bplan_make(&now, NULL, &base, NULL, &lim, &p, &notes);
	assert_int_equal(p.n_fetch, 3);
	assert_int_equal(p.same.n, 1);
	ws_bplan_free(&p);
	ws_bscan_free(&now), free(b1.p), b1 = (struct sbuf){0};
	/* names a box cannot hand back, an unscanned directory, a link retargeted, a size that
	 * differs from the copy-in manifest although the baseline agrees */
	put(&b1, WSSCAN_FILE, "top", NULL, 7, 5);
	put(&b1, WSSCAN_DIR, "d", NULL, 0, 5);
	put(&b1, WSSCAN_LINK, "d/l", "/etc/passwd", 11, 5);
	put(&b1, WSSCAN_FILE, "d/../../x", NULL, 1, 5);
	put(&b1, WSSCAN_FILE, "e\x1b[2J", NULL, 1, 5);
	put(&b1, WSSCAN_NOTE, "deep", NULL, 0, 0);
	end(&b1);
	assert_int_equal(feed_all(&now, &b1), 1);
	ws_bplan_make(&now, &baseline, &base, NULL, &lim, &p, &notes);
	assert_true(fetch_has(&p, "top") && fetch_has(&p, "d") && fetch_has(&p, "d/l"));
	assert_int_equal(p.n_fetch, 3);
	assert_int_equal(p.same.n, 0);
	assert_int_equal(notes.n, 2);
	/* the unscanned directory is refused, not a note: what the host had beneath it is
	 * unknown, not gone */
	assert_int_equal(p.unread.n, 1);
	assert_string_equal(p.unread.v[0].path, "deep");
	assert_int_equal(p.unread.v[0].type, WS_REFUSED);
	assert_int_equal(p.unread.v[0].reason, WS_R_NOT_READ);
	ws_bplan_free(&p);
	ws_notes_free(&notes);
	ws_bscan_free(&now), ws_bscan_free(&baseline);
	ws_manifest_free(&base);
	free(b0.p), free(b1.p);
}

static void test_merge(void **state)
{
	(void)state;
	struct ws_manifest fetched = {0}, same = {0}, out;
	struct ws_notes notes = {0};
	base_add(&fetched, WS_DIR, "d", NULL, 0);
	base_add(&fetched, WS_FILE, "d/a", NULL, 9);
	base_add(&fetched, WS_SYMLINK, "e", "d", 0); /* the box made e a link */
	ws_manifest_sort(&fetched);
	base_add(&same, WS_FILE, "d/a", NULL, 6);  /* loses the tie */
	base_add(&same, WS_FILE, "d/b", NULL, 6);
	base_add(&same, WS_FILE, "e/x", NULL, 6);  /* claimed under a link: dropped */
	base_add(&same, WS_FILE, "gone/y", NULL, 6); /* its directory was not fetched: dropped */
	base_add(&same, WS_FILE, "top", NULL, 6);
	ws_manifest_sort(&same);
	ws_bscan_merge(&fetched, &same, &out, &notes);
	assert_int_equal(out.n, 5);
	assert_int_equal(ws_manifest_find(&out, "d/a")->size, 9);
	assert_non_null(ws_manifest_find(&out, "d/b"));
	assert_null(ws_manifest_find(&out, "e/x"));
	assert_null(ws_manifest_find(&out, "gone/y"));
	assert_int_equal(notes.n, 2);
	ws_manifest_free(&out);
	ws_manifest_free(&fetched);
	ws_manifest_free(&same);
	ws_notes_free(&notes);
}

/* appends "./PATH\0" to the plan's fetch list, as ws_bplan_make does */
static void add_fetch_for_test(struct ws_bplan *p, const char *path, size_t *cap)
{
	size_t n = strlen(path) + 3;
	p->fetch = xrealloc(p->fetch, (*cap += n));
	memcpy(p->fetch + p->fetch_len, "./", 2);
	memcpy(p->fetch + p->fetch_len + 2, path, n - 2);
	p->fetch_len += n;
	p->n_fetch++;
}

/* What the box could not hand back is refused, never deleted: a directory its scan could not
 * read replaces the stream's entry of it, a listed entry missing from the stream is added
 * refused; a diff against a base then refuses what the base had beneath them. */
static void test_refuse_unread(void **state)
{
	(void)state;
	struct ws_bplan p = {0};
	size_t cap = 0;
	add_fetch_for_test(&p, "locked", &cap);
	add_fetch_for_test(&p, "ok", &cap);
	add_fetch_for_test(&p, "secret", &cap);
	base_add(&p.unread, WS_REFUSED, "locked", NULL, 0);
	struct ws_manifest fetched = {0};
	base_add(&fetched, WS_DIR, "locked", NULL, 0);
	base_add(&fetched, WS_FILE, "ok", NULL, 2);
	ws_manifest_sort(&fetched);
	ws_bplan_refuse_unread(&p, &fetched);
	assert_int_equal(fetched.n, 3);
	assert_int_equal(ws_manifest_find(&fetched, "locked")->type, WS_REFUSED);
	assert_int_equal(ws_manifest_find(&fetched, "locked")->reason, WS_R_NOT_READ);
	assert_int_equal(ws_manifest_find(&fetched, "ok")->type, WS_FILE);
	assert_int_equal(ws_manifest_find(&fetched, "secret")->type, WS_REFUSED);
	assert_int_equal(ws_manifest_find(&fetched, "secret")->reason, WS_R_NOT_READ);
	ws_manifest_free(&fetched);
	ws_bplan_free(&p);
}

static void test_keep_unchanged(void **state)
{
	(void)state;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_manifest base = {0}, restored = {0};
	sample_base(&base);
	base_add(&restored, WS_DIR, "d", NULL, 0);
	base_add(&restored, WS_FILE, "d/a", NULL, 6);
	restored.v[1].sha256[0] = 1; /* the saved copy changed d/a */
	base_add(&restored, WS_SYMLINK, "d/l", "a", 0);
	base_add(&restored, WS_FILE, "top", NULL, 6);
	ws_manifest_sort(&restored);
	struct sbuf b = {0};
	sample(&b, 5);
	struct ws_bscan s = {0}, back = {0};
	assert_int_equal(feed_all(&s, &b), 1);
	ws_bscan_keep_unchanged(&s, &restored, &base);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0].path, "top");
	uint8_t *enc;
	size_t n = ws_bscan_encode(&s, &enc);
	assert_int_equal(ws_bscan_feed(&back, enc, n, &lim, NULL), 1);
	assert_int_equal(back.n, 1);
	assert_string_equal(back.v[0].path, "top");
	assert_int_equal(back.v[0].ctime_s, 5);
	free(enc);
	ws_bscan_free(&s), ws_bscan_free(&back);
	ws_manifest_free(&base), ws_manifest_free(&restored);
	free(b.p);
}

/* A copied file the box moved into an ignored directory: the diff shows it deleted and its
 * new place is kept out, so a note names both; a file that only shares the name (other size)
 * and one deleted outright get none. */
static void test_note_moves(void **state)
{
	(void)state;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_manifest base = {0}, box = {0};
	sample_base(&base); /* d/, d/a (6), d/l, top (6) */
	struct ws_ignore *ig = ws_ignore_new();
	assert_int_equal(ws_ignore_add_text(ig, "cache/\n", 7), 0);
	struct sbuf b = {0};
	put(&b, WSSCAN_DIR, "cache", NULL, 0, 9);
	put(&b, WSSCAN_FILE, "cache/a", NULL, 6, 9);   /* d/a moved here */
	put(&b, WSSCAN_FILE, "cache/top", NULL, 2, 9); /* same name as top, other size */
	put(&b, WSSCAN_DIR, "d", NULL, 0, 9);
	end(&b);
	struct ws_bscan now = {0};
	assert_int_equal(feed_all(&now, &b), 1);
	struct ws_bplan p;
	struct ws_notes notes = {0};
	ws_bplan_make(&now, NULL, &base, ig, &lim, &p, &notes);
	assert_int_equal(p.ignored.n, 2);
	assert_false(fetch_has(&p, "cache/a"));
	base_add(&box, WS_DIR, "d", NULL, 0); /* d/a, d/l and top deleted */
	ws_bplan_note_moves(&p, &base, &box, &notes);
	assert_int_equal(notes.n, 1);
	assert_int_equal(notes.v[0].reason, WS_R_IGNORED);
	assert_string_equal(notes.v[0].path, "cache/a");
	assert_non_null(strstr(notes.v[0].detail, "'d/a'"));
	ws_notes_free(&notes);
	ws_bplan_free(&p);
	ws_bscan_free(&now);
	ws_ignore_free(ig);
	ws_manifest_free(&base), ws_manifest_free(&box);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codec),
		cmocka_unit_test(test_empty_scan),
		cmocka_unit_test(test_feed_split_anywhere),
		cmocka_unit_test(test_feed_hostile),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_refuse_unread),
		cmocka_unit_test(test_keep_unchanged),
		cmocka_unit_test(test_note_moves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
