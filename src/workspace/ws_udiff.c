/* ws_udiff.c — line diffs for `paddock diff` (pure): Myers' O(ND) greedy algorithm with a
 * cost cap, and a unified-format writer whose every content line is escaped. */
#include "ws_diff.h"

#define BINARY_PROBE 8192u
#define MAX_COST 50000000ull /* (lines) x (edit distance) before giving up on minimality */
#define MAX_D 4000

struct line {
	const char *s;
	size_t len; /* without the newline */
	uint64_t h;
	bool nl;    /* only the last line can lack it, and then it differs from one with it */
};

struct text {
	struct line *v;
	size_t n;
	bool last_has_nl;
};

/* One step of the edit script: 'k'eep, 'd'elete (from a), 'i'nsert (from b). */
struct op {
	char t;
	size_t a, b;
};

struct script {
	struct op *v;
	size_t n, cap;
};

bool ws_text_is_binary(const char *buf, size_t len)
{
	if (memchr(buf, '\0', len < BINARY_PROBE ? len : BINARY_PROBE))
		return true;
	return !ws_utf8_valid(buf, len);
}

static uint64_t hash_line(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static void split_lines(const char *buf, size_t len, struct text *t)
{
	size_t cap = 16;
	*t = (struct text){.v = xmalloc(cap * sizeof(struct line)), .last_has_nl = true};
	for (size_t start = 0; start < len;) {
		const char *nl = memchr(buf + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - buf) : len;
		if (t->n == cap)
			t->v = xrealloc(t->v, (cap *= 2) * sizeof(struct line));
		t->v[t->n++] = (struct line){buf + start, end - start, hash_line(buf + start, end - start), nl != NULL};
		t->last_has_nl = nl != NULL;
		start = end + 1;
	}
}

static bool same(const struct text *a, size_t i, const struct text *b, size_t j)
{
	return a->v[i].h == b->v[j].h && a->v[i].len == b->v[j].len && a->v[i].nl == b->v[j].nl &&
	       memcmp(a->v[i].s, b->v[j].s, a->v[i].len) == 0;
}

static void push(struct script *s, char t, size_t a, size_t b)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->v = xrealloc(s->v, s->cap * sizeof(struct op));
	}
	s->v[s->n++] = (struct op){t, a, b};
}

/* The middle a[a0..a1) vs b[b0..b1) replaced whole: used past the cost cap. */
static void replace_all(struct script *s, size_t a0, size_t a1, size_t b0, size_t b1)
{
	for (size_t i = a0; i < a1; i++)
		push(s, 'd', i, b0);
	for (size_t j = b0; j < b1; j++)
		push(s, 'i', a1, j);
}

/* Myers forward pass over a[a0..a0+n) and b[b0..b0+m); trace[d] is V[-d..d] after step d.
 * Returns the edit distance, or -1 past max_d. */
static long myers_forward(const struct text *a, size_t a0, long n, const struct text *b, size_t b0,
			  long m, long max_d, long **trace)
{
	long off = max_d + 1;
	_cleanup_free_ long *v = xcalloc((size_t)(2 * off + 1), sizeof(long));
	for (long d = 0; d <= max_d; d++) {
		for (long k = -d; k <= d; k += 2) {
			long x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1]
											 : v[off + k - 1] + 1;
			long y = x - k;
			while (x < n && y < m && same(a, a0 + (size_t)x, b, b0 + (size_t)y))
				x++, y++;
			v[off + k] = x;
		}
		trace[d] = xmalloc((size_t)(2 * d + 1) * sizeof(long));
		memcpy(trace[d], v + off - d, (size_t)(2 * d + 1) * sizeof(long));
		for (long k = -d; k <= d; k += 2)
			if (v[off + k] >= n && v[off + k] - k >= m)
				return d;
	}
	return -1;
}

#define TR(d, k) trace[d][(k) + (d)]

/* Walks the trace back from (n, m), emitting ops in reverse into rev. */
static void myers_back(long **trace, long dist, long n, long m, size_t a0, size_t b0, struct script *rev)
{
	long x = n, y = m;
	for (long d = dist; d > 0; d--) {
		long k = x - y;
		bool down = k == -d || (k != d && TR(d - 1, k - 1) < TR(d - 1, k + 1));
		long pk = down ? k + 1 : k - 1, px = TR(d - 1, pk), py = px - pk;
		long mx = down ? px : px + 1;
		for (; x > mx; x--, y--)
			push(rev, 'k', a0 + (size_t)x - 1, b0 + (size_t)y - 1);
		if (down)
			push(rev, 'i', a0 + (size_t)px, b0 + (size_t)py);
		else
			push(rev, 'd', a0 + (size_t)px, b0 + (size_t)py);
		x = px, y = py;
	}
	for (; x > 0; x--, y--)
		push(rev, 'k', a0 + (size_t)x - 1, b0 + (size_t)y - 1);
}

static void diff_middle(const struct text *a, size_t a0, size_t a1, const struct text *b, size_t b0,
			size_t b1, struct script *s)
{
	long n = (long)(a1 - a0), m = (long)(b1 - b0);
	long max_d = n + m;
	if ((uint64_t)(n + m) * (uint64_t)max_d > MAX_COST)
		max_d = (long)(MAX_COST / (uint64_t)(n + m + 1));
	if (max_d > MAX_D)
		max_d = MAX_D;
	long **trace = xcalloc((size_t)max_d + 1, sizeof(long *));
	long dist = myers_forward(a, a0, n, b, b0, m, max_d, trace);
	if (dist < 0) {
		replace_all(s, a0, a1, b0, b1);
	} else {
		struct script rev = {0};
		myers_back(trace, dist, n, m, a0, b0, &rev);
		for (size_t i = rev.n; i-- > 0;)
			push(s, rev.v[i].t, rev.v[i].a, rev.v[i].b);
		free(rev.v);
	}
	for (long d = 0; d <= max_d; d++)
		free(trace[d]);
	free(trace);
}

/* Common prefix and suffix are kept as is; only the middle goes through Myers. */
static void diff_texts(const struct text *a, const struct text *b, struct script *s)
{
	size_t pre = 0, suf = 0;
	while (pre < a->n && pre < b->n && same(a, pre, b, pre))
		pre++;
	while (suf < a->n - pre && suf < b->n - pre && same(a, a->n - 1 - suf, b, b->n - 1 - suf))
		suf++;
	for (size_t i = 0; i < pre; i++)
		push(s, 'k', i, i);
	diff_middle(a, pre, a->n - suf, b, pre, b->n - suf, s);
	for (size_t i = suf; i > 0; i--)
		push(s, 'k', a->n - i, b->n - i);
}

void ws_udiff_count(const char *a, size_t alen, const char *b, size_t blen,
		    unsigned *ret_added, unsigned *ret_deleted)
{
	struct text ta, tb;
	struct script s = {0};
	split_lines(a, alen, &ta);
	split_lines(b, blen, &tb);
	diff_texts(&ta, &tb, &s);
	*ret_added = *ret_deleted = 0;
	for (size_t i = 0; i < s.n; i++) {
		*ret_added += s.v[i].t == 'i';
		*ret_deleted += s.v[i].t == 'd';
	}
	free(s.v);
	free(ta.v);
	free(tb.v);
}

struct hunk_ctx {
	FILE *out;
	const struct text *a, *b;
	bool color;
};

static void put_line(const struct hunk_ctx *h, char sign, const struct text *t, size_t i)
{
	static const char *const colors[3] = {"", "\033[31m", "\033[32m"};
	const char *col = h->color ? colors[sign == '-' ? 1 : sign == '+' ? 2 : 0] : "";
	_cleanup_free_ char *esc = ws_escape(t->v[i].s, t->v[i].len, WS_ESC_CONTENT);
	fprintf(h->out, "%s%c%s%s\n", col, sign, esc, *col ? "\033[m" : "");
	if (i == t->n - 1 && !t->last_has_nl)
		fputs("\\ No newline at end of file\n", h->out);
}

/* Prints ops[start..end) as one hunk; pa/pb: lines of a/b before start. */
static void put_hunk(const struct hunk_ctx *h, const struct op *ops, size_t start, size_t end)
{
	size_t ca = 0, cb = 0;
	for (size_t i = start; i < end; i++) {
		ca += ops[i].t != 'i';
		cb += ops[i].t != 'd';
	}
	size_t sa = ops[start].a + (ca > 0), sb = ops[start].b + (cb > 0);
	fprintf(h->out, "%s@@ -%zu,%zu +%zu,%zu @@%s\n", h->color ? "\033[36m" : "", sa, ca, sb, cb,
		h->color ? "\033[m" : "");
	for (size_t i = start; i < end; i++) {
		if (ops[i].t == 'k')
			put_line(h, ' ', h->a, ops[i].a);
		else if (ops[i].t == 'd')
			put_line(h, '-', h->a, ops[i].a);
		else
			put_line(h, '+', h->b, ops[i].b);
	}
}

/* End of the hunk that starts with the change at c: changes closer than 2*ctx merge. */
static size_t hunk_end(const struct op *ops, size_t n, size_t c, size_t ctx)
{
	size_t last = c;
	for (size_t j = c; j < n; j++) {
		if (ops[j].t != 'k')
			last = j;
		else if (j - last > 2 * ctx)
			break;
	}
	return last + ctx + 1 < n ? last + ctx + 1 : n;
}

void ws_udiff_write(FILE *out, const char *a, size_t alen, const char *b, size_t blen,
		    unsigned context, bool color)
{
	struct text ta, tb;
	struct script s = {0};
	split_lines(a, alen, &ta);
	split_lines(b, blen, &tb);
	diff_texts(&ta, &tb, &s);
	struct hunk_ctx h = {out, &ta, &tb, color};
	size_t ctx = context ? context : 3;
	for (size_t i = 0; i < s.n;) {
		size_t c = i;
		while (c < s.n && s.v[c].t == 'k')
			c++;
		if (c == s.n)
			break;
		size_t start = c > i + ctx ? c - ctx : i, end = hunk_end(s.v, s.n, c, ctx);
		put_hunk(&h, s.v, start, end);
		i = end;
	}
	free(s.v);
	free(ta.v);
	free(tb.v);
}
