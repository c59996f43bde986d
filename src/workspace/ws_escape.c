/* ws_escape.c — make names and file contents from a box safe to put on a terminal (pure).
 *
 * A box controls every byte of its file names and contents; printed raw, they can move the
 * cursor, rewrite earlier lines, set the window title, reorder text with bidi controls
 * ("Trojan Source") or hide characters. Everything that is not plain printable text comes
 * out as \xNN (bytes) or \u{NNNN} (code points). */
#include "ws_path.h"

struct out {
	char *buf;
	size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->buf = xrealloc(o->buf, o->cap);
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void put_byte_esc(struct out *o, unsigned char c)
{
	char b[8];
	int n = snprintf(b, sizeof(b), "\\x%02x", c);
	put(o, b, (size_t)n);
}

/* Decodes one UTF-8 sequence; returns its length, 0 if invalid (overlong, surrogate,
 * beyond U+10FFFF, truncated). */
static size_t utf8_decode(const unsigned char *s, size_t left, uint32_t *ret_cp)
{
	size_t n;
	uint32_t cp, min;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return n;
}

/* C1 controls, bidi controls and invisible characters: Unicode's whole Default_Ignorable set
 * (text hidden in tag characters U+E00xx reads as nothing on a terminal, and some tools pass
 * it on to a model) — but for the emoji presentation selectors VS15/VS16 in contents, which
 * every other emoji carries. */
static bool cp_needs_escape(uint32_t cp, unsigned flags)
{
	if ((cp == 0xfe0e || cp == 0xfe0f) && !(flags & WS_ESC_NAME))
		return false;
	return (cp >= 0x80 && cp <= 0x9f) ||
	       cp == 0xad || cp == 0x34f ||          /* SOFT HYPHEN, COMBINING GRAPHEME JOINER */
	       cp == 0x061c ||                       /* ARABIC LETTER MARK */
	       (cp >= 0x115f && cp <= 0x1160) || (cp >= 0x17b4 && cp <= 0x17b5) || (cp >= 0x180b && cp <= 0x180f) ||
	       (cp >= 0x200b && cp <= 0x200f) ||     /* zero-width, LRM, RLM */
	       (cp >= 0x2028 && cp <= 0x202e) ||     /* line/para separators, LRE..RLO */
	       (cp >= 0x2060 && cp <= 0x206f) ||     /* word joiner .. PDI, and the deprecated formats */
	       cp == 0x3164 || (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xffa0 || (cp >= 0xfff0 && cp <= 0xfffb) ||
	       cp == 0xfeff ||                       /* zero-width no-break space / BOM */
	       (cp >= 0x1bca0 && cp <= 0x1bca3) || (cp >= 0x1d173 && cp <= 0x1d17a) ||
	       (cp >= 0xe0000 && cp <= 0xe0fff);     /* tags, variation selectors supplement */
}

static void put_ascii(struct out *o, unsigned char c, unsigned flags)
{
	bool name = flags & WS_ESC_NAME;
	if (c == '\\' && name)
		put(o, "\\\\", 2);
	else if ((c == '\t' || c == '\n') && !name)
		put(o, (const char *)&c, 1);
	else if (c < 0x20 || c == 0x7f)
		put_byte_esc(o, c);
	else
		put(o, (const char *)&c, 1);
}

char *ws_escape(const char *buf, size_t len, unsigned flags)
{
	struct out o = {0};
	const unsigned char *s = (const unsigned char *)buf;
	put(&o, "", 0);
	for (size_t i = 0; i < len;) {
		if (s[i] < 0x80) {
			put_ascii(&o, s[i++], flags);
			continue;
		}
		uint32_t cp;
		size_t n = utf8_decode(s + i, len - i, &cp);
		if (n == 0) {
			put_byte_esc(&o, s[i++]);
		} else if (cp_needs_escape(cp, flags)) {
			char b[16];
			int k = snprintf(b, sizeof(b), "\\u{%04X}", (unsigned)cp);
			put(&o, b, (size_t)k);
			i += n;
		} else {
			put(&o, (const char *)s + i, n);
			i += n;
		}
	}
	o.buf[o.len] = '\0';
	return o.buf;
}

bool ws_utf8_valid(const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;
	uint32_t cp;
	for (size_t i = 0; i < len;) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t n = utf8_decode(s + i, len - i, &cp);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}
