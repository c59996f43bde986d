/* fuzz-boxscan.c — arbitrary bytes as a box's ws-scan stream, fed in two pieces (the split
 * taken from the first byte), then planned against a small copy-in manifest and a baseline
 * made of the same stream, and merged. Asserts the plan's invariants: every fetched name is
 * "./" + a name ws_path_check() accepts, every unchanged entry is one of the copy-in
 * manifest's own, and the merge leaves no entry without a directory parent. */
#include <assert.h>

#include "workspace/ws_boxscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void base_of(struct ws_manifest *m)
{
	static const struct ws_entry es[] = {
		{.path = "a", .type = WS_FILE, .size = 6, .mode = 0644},
		{.path = "d", .type = WS_DIR, .mode = 0755},
		{.path = "d/b", .type = WS_FILE, .size = 1, .mode = 0644},
		{.path = "d/l", .type = WS_SYMLINK, .target = "b", .mode = 0777},
	};
	for (size_t i = 0; i < ARRAY_SIZE(es); i++)
		ws_manifest_add(m, &es[i]);
}

static void check(const struct ws_bplan *p, const struct ws_manifest *base, const struct ws_limits *lim)
{
	for (size_t off = 0; off < p->fetch_len; off += strlen(p->fetch + off) + 1) {
		const char *f = p->fetch + off;
		assert(f[0] == '.' && f[1] == '/');
		assert(ws_path_check(f + 2, strlen(f + 2), lim) == WS_OK);
	}
	for (size_t i = 0; i < p->same.n; i++)
		assert(ws_manifest_find(base, p->same.v[i].path));
	for (size_t i = 0; i < p->unread.n; i++)
		assert(p->unread.v[i].type == WS_REFUSED &&
		       ws_path_check(p->unread.v[i].path, strlen(p->unread.v[i].path), lim) == WS_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	lim.max_entries = 1000;
	struct ws_bscan now = {0}, baseline = {0};
	size_t cut = size ? data[0] % (size + 1) : 0;
	int r = ws_bscan_feed(&now, data, cut, &lim, NULL);
	if (r == 0)
		r = ws_bscan_feed(&now, data + cut, size - cut, &lim, NULL);
	if (r == 1 && ws_bscan_feed(&baseline, data, size, &lim, NULL) == 1) {
		struct ws_manifest base = {0}, out = {0};
		struct ws_notes notes = {0};
		struct ws_bplan p;
		base_of(&base);
		ws_bplan_make(&now, &baseline, &base, NULL, &lim, &p, &notes);
		check(&p, &base, &lim);
		/* what the box could not hand back refused over a copy of the unchanged entries */
		struct ws_manifest fetched = {0};
		for (size_t i = 0; i < p.same.n; i++)
			ws_manifest_add(&fetched, &p.same.v[i]);
		ws_bplan_refuse_unread(&p, &fetched);
		for (size_t i = 1; i < fetched.n; i++)
			assert(strcmp(fetched.v[i - 1].path, fetched.v[i].path) < 0);
		ws_bscan_merge(&fetched, &p.same, &out, &notes);
		ws_manifest_free(&fetched);
		for (size_t i = 0; i < out.n; i++) {
			const char *s = strrchr(out.v[i].path, '/');
			if (s) {
				_cleanup_free_ char *parent = xstrndup(out.v[i].path, (size_t)(s - out.v[i].path));
				const struct ws_entry *e = ws_manifest_find(&out, parent);
				assert(e && e->type == WS_DIR);
			}
		}
		ws_manifest_free(&out);
		ws_manifest_free(&base);
		ws_notes_free(&notes);
		ws_bplan_free(&p);
	}
	ws_bscan_free(&now);
	ws_bscan_free(&baseline);
	return 0;
}
