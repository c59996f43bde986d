/* sni.c — ClientHello SNI extraction (see sni.h). Record and handshake layouts: RFC 8446
 * §5.1 and §4.1.2, server_name: RFC 6066 §3, encrypted_client_hello: RFC 9460/ECH draft. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "egress/sni.h"

#define TLS_RECORD_HANDSHAKE 22
#define TLS_RECORD_HDR 5
#define TLS_RECORD_MAX 16384 /* 2^14: larger plaintext records are illegal (RFC 8446 §5.1) */
#define TLS_HS_CLIENT_HELLO 1
#define TLS_HS_HDR 4
#define TLS_EXT_SERVER_NAME 0
#define TLS_SNI_HOST_NAME 0

/* A bounds-checked cursor: every read checks the remaining length first and, once anything is
 * short, the cursor stays failed (ok == false) so callers can check once at the end. */
struct rd {
	const uint8_t *p;
	size_t left;
	bool ok;
};

static const uint8_t *rd_take(struct rd *r, size_t n)
{
	if (!r->ok || r->left < n) {
		r->ok = false;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

static unsigned rd_u8(struct rd *r)
{
	const uint8_t *p = rd_take(r, 1);
	return p ? p[0] : 0;
}

static unsigned rd_u16(struct rd *r)
{
	const uint8_t *p = rd_take(r, 2);
	return p ? (unsigned)(p[0] << 8 | p[1]) : 0;
}

/* A sub-cursor over the next n bytes (a length-prefixed vector). */
static struct rd rd_sub(struct rd *r, size_t n)
{
	const uint8_t *p = rd_take(r, n);
	return (struct rd){p, p ? n : 0, p != NULL};
}

static bool is_ech_type(unsigned t)
{
	/* 0xfe0d: RFC-track ECH; 0xfe08-0xfe0c and 0xff02/0xff03: ECH drafts; 0xffce: ESNI */
	return t == 0xfe0d || (t >= 0xfe08 && t <= 0xfe0c) || t == 0xff02 || t == 0xff03 ||
	       t == 0xffce;
}

struct hello_info {
	bool ech;
	const uint8_t *sni;
	size_t sni_len;
};

/* server_name extension body: exactly one host_name entry, nothing else. */
static bool parse_server_name(struct rd ext, struct hello_info *h)
{
	struct rd list = rd_sub(&ext, rd_u16(&ext));
	if (!ext.ok || ext.left != 0)
		return false;
	unsigned type = rd_u8(&list);
	size_t n = rd_u16(&list);
	const uint8_t *name = rd_take(&list, n);
	if (!list.ok || list.left != 0 || type != TLS_SNI_HOST_NAME || n == 0)
		return false;
	h->sni = name;
	h->sni_len = n;
	return true;
}

static bool seen_before(const unsigned *types, size_t n, unsigned t)
{
	for (size_t i = 0; i < n; i++)
		if (types[i] == t)
			return true;
	return false;
}

static bool parse_extensions(struct rd exts, struct hello_info *h)
{
	unsigned types[EGRESS_SNI_MAX_EXTENSIONS];
	size_t count = 0;
	while (exts.ok && exts.left > 0) {
		unsigned type = rd_u16(&exts);
		struct rd body = rd_sub(&exts, rd_u16(&exts));
		/* duplicates are illegal (RFC 8446 §4.2) and are how parsers are made to disagree
		 * about which server_name counts */
		if (!exts.ok || count == EGRESS_SNI_MAX_EXTENSIONS || seen_before(types, count, type))
			return false;
		types[count++] = type;
		if (is_ech_type(type))
			h->ech = true;
		else if (type == TLS_EXT_SERVER_NAME && !parse_server_name(body, h))
			return false;
	}
	return exts.ok;
}

/* ClientHello body (after the 4-byte handshake header). */
static enum egress_sni_result parse_hello(const uint8_t *b, size_t n, struct hello_info *h)
{
	struct rd r = {b, n, true};
	unsigned version = rd_u16(&r);
	(void)rd_take(&r, 32); /* random */
	size_t sid = rd_u8(&r);
	(void)rd_take(&r, sid);
	size_t cs = rd_u16(&r);
	(void)rd_take(&r, cs);
	size_t comp = rd_u8(&r);
	(void)rd_take(&r, comp);
	if (!r.ok || version >> 8 != 3 || sid > 32 || cs < 2 || cs % 2 || comp < 1)
		return EGRESS_SNI_MALFORMED;
	if (r.left == 0)
		return EGRESS_SNI_NO_SNI; /* legal: a hello without extensions */
	struct rd exts = rd_sub(&r, rd_u16(&r));
	if (!r.ok || r.left != 0 || !parse_extensions(exts, h))
		return EGRESS_SNI_MALFORMED;
	if (h->ech)
		return EGRESS_SNI_ECH;
	return h->sni ? EGRESS_SNI_FOUND : EGRESS_SNI_NO_SNI;
}

/* The first record header decides whether this is TLS at all (checked byte by byte, so a
 * one-byte prefix already gives NOT_TLS for "GET ..."). */
static bool looks_like_tls(const uint8_t *buf, size_t len)
{
	if (len >= 1 && buf[0] != TLS_RECORD_HANDSHAKE)
		return false;
	if (len >= 2 && buf[1] != 3)
		return false;
	return len < 3 || buf[2] <= 4;
}

struct reasm {
	uint8_t hs[TLS_HS_HDR + EGRESS_SNI_MAX_HELLO];
	size_t have, need; /* need: full handshake message size, 0 until its header is in */
};

/* Appends one record's payload; MALFORMED if the handshake header is wrong or too large. */
static enum egress_sni_result reasm_add(struct reasm *a, const uint8_t *p, size_t n)
{
	size_t room = sizeof(a->hs) - a->have;
	size_t take = n < room ? n : room;
	memcpy(a->hs + a->have, p, take);
	a->have += take;
	if (a->need == 0 && a->have >= TLS_HS_HDR) {
		size_t body = (size_t)a->hs[1] << 16 | (size_t)a->hs[2] << 8 | a->hs[3];
		if (a->hs[0] != TLS_HS_CLIENT_HELLO || body > EGRESS_SNI_MAX_HELLO)
			return EGRESS_SNI_MALFORMED;
		a->need = TLS_HS_HDR + body;
	}
	return EGRESS_SNI_NEED_MORE;
}

/* Gathers the ClientHello from consecutive handshake records into a. */
static enum egress_sni_result gather(const uint8_t *buf, size_t len, struct reasm *a)
{
	size_t pos = 0;
	for (;;) {
		if (len - pos < TLS_RECORD_HDR)
			return EGRESS_SNI_NEED_MORE;
		const uint8_t *h = buf + pos;
		size_t rlen = (size_t)h[3] << 8 | h[4];
		if (h[0] != TLS_RECORD_HANDSHAKE || h[1] != 3 || rlen == 0 || rlen > TLS_RECORD_MAX)
			return EGRESS_SNI_MALFORMED;
		size_t avail = len - pos - TLS_RECORD_HDR;
		if (avail > rlen)
			avail = rlen;
		if (reasm_add(a, h + TLS_RECORD_HDR, avail) == EGRESS_SNI_MALFORMED)
			return EGRESS_SNI_MALFORMED;
		if (a->need && a->have >= a->need)
			return EGRESS_SNI_FOUND;
		if (avail < rlen)
			return EGRESS_SNI_NEED_MORE;
		pos += TLS_RECORD_HDR + rlen;
	}
}

enum egress_sni_result egress_sni_extract(const uint8_t *buf, size_t len, char *ret_name)
{
	if (!looks_like_tls(buf, len))
		return EGRESS_SNI_NOT_TLS;
	struct reasm a;
	a.have = a.need = 0;
	enum egress_sni_result r = gather(buf, len, &a);
	if (r != EGRESS_SNI_FOUND)
		return r;
	struct hello_info h = {0};
	r = parse_hello(a.hs + TLS_HS_HDR, a.need - TLS_HS_HDR, &h);
	if (r != EGRESS_SNI_FOUND)
		return r;
	char name[EGRESS_NAME_MAX + 1];
	if (egress_name_canon_n((const char *)h.sni, h.sni_len, name, sizeof(name)) < 0)
		return EGRESS_SNI_BAD_NAME;
	memcpy(ret_name, name, strlen(name) + 1);
	return EGRESS_SNI_FOUND;
}

const char *egress_sni_result_str(enum egress_sni_result r)
{
	static const char *const names[EGRESS_SNI_RESULT_MAX] = {
		[EGRESS_SNI_INVALID] = "invalid",     [EGRESS_SNI_NEED_MORE] = "need-more",
		[EGRESS_SNI_NOT_TLS] = "not-tls",     [EGRESS_SNI_MALFORMED] = "malformed",
		[EGRESS_SNI_NO_SNI] = "no-sni",       [EGRESS_SNI_ECH] = "ech",
		[EGRESS_SNI_BAD_NAME] = "bad-name",   [EGRESS_SNI_FOUND] = "found",
	};
	return (unsigned)r < EGRESS_SNI_RESULT_MAX ? names[r] : "invalid";
}
