/* httpreq.h — the proxy's HTTP/1.x request-head parser: which host:port does this request
 * want, and is its framing unambiguous?
 *
 * Used by the explicit proxy (CONNECT authority-form, absolute-form "http://host[:port]/p")
 * and by the transparent plain-HTTP path (origin-form + Host). Framing is done by Debian's
 * http_parser library; on top of it this module refuses everything that lets two HTTP
 * parsers disagree about where a request ends or which host it is for (request smuggling,
 * fronting): Content-Length with Transfer-Encoding, repeated Content-Length, Transfer-Encoding
 * other than exactly "chunked", obs-fold, bare CR or LF line ends, NUL or control bytes,
 * header names with spaces, userinfo or fragments in URLs, absolute-form whose host differs
 * from Host, repeated Host, heads over EGRESS_HTTP_HEAD_MAX bytes or with more than
 * EGRESS_HTTP_HEADERS_MAX headers, HTTP versions other than 1.0/1.1, an Expect other than one
 * "100-continue" (which is reported, for the caller to drop: with it a front that answers
 * before the body would read the body as the next request — the "0.CL" desync).
 *
 * Only the head is parsed: ret->head_len says where it ends, so the caller sees whether
 * pipelined bytes follow (after a CONNECT they are tunnel data, to be checked as such).
 * Pure: no I/O; the state may be fed a growing buffer so a slow client costs O(n) in total. */
#pragma once

#include <http_parser.h>
#include <stdbool.h>
#include <stdint.h>

#include "egress/name.h"

#define EGRESS_HTTP_HEAD_MAX (64 * 1024)
#define EGRESS_HTTP_HEADERS_MAX 100

enum egress_http_form {
	EGRESS_HTTP_FORM_INVALID = 0,
	EGRESS_HTTP_CONNECT,  /* CONNECT host:port */
	EGRESS_HTTP_ABSOLUTE, /* METHOD http://host[:port]/path (explicit proxy) */
	EGRESS_HTTP_ORIGIN,   /* METHOD /path + Host (transparent path) */
	EGRESS_HTTP_FORM_MAX,
};

struct egress_httpreq {
	enum egress_http_form form;
	const char *method;            /* static, e.g. "GET" */
	unsigned http_major, http_minor;
	char host[EGRESS_NAME_MAX + 1]; /* canonical (name.h) */
	uint16_t port;                  /* origin-form: the Host header's port, 0 when it gives
					 * none — the transparent path keeps the connection's port
					 * and refuses a Host that names another */
	size_t head_len;                /* bytes of the head including the final CRLF CRLF */
	size_t path_off, path_len;      /* the target to send upstream in origin-form, in buf:
					 * empty means "/", one starting with '?' needs a "/"
					 * before it; for CONNECT both 0 */
	bool keep_alive;
	bool upgrade;                   /* Upgrade requested (or CONNECT): the rest is not HTTP */
	bool chunked;
	int64_t content_length;         /* -1 when absent */
	size_t expect_off, expect_len;  /* an "Expect: 100-continue" line (name to CRLF) in buf,
					 * which the engine drops before forwarding (len 0: none) */
};

/* Incremental state: init once per request, then feed the whole head buffer as it grows. */
struct egress_httpreq_state {
	http_parser parser;
	size_t fed;          /* bytes of the buffer already given to the parser */
	bool done;
	/* what the callbacks saw; offsets into the caller's buffer */
	const char *buf;
	const char *reason;
	unsigned nheaders, n_host, n_cl, n_te, n_expect;
	int cur;             /* which interesting header the current field is */
	bool in_value;
	size_t url_off, url_len, field_off, field_len, val_off, val_len;
	size_t host_off, host_len, te_off, te_len, expect_field_off, expect_off, expect_len;
	struct egress_httpreq *req;
};

void egress_httpreq_init(struct egress_httpreq_state *s);
/* buf[0..len) is everything received so far on this request (the same buffer, grown, on each
 * call). Returns 1 when the head is complete and acceptable (*ret filled), 0 when more bytes
 * are needed, -EBADMSG for a refused request and -E2BIG for a head over the cap, with a short
 * reason in *ret_reason (for X-Paddock-Reason and the audit log). */
int egress_httpreq_feed(struct egress_httpreq_state *s, const char *buf, size_t len,
			struct egress_httpreq *ret, const char **ret_reason);
/* One-shot form of the above. */
int egress_httpreq_parse(const char *buf, size_t len, struct egress_httpreq *ret,
			 const char **ret_reason);

/* A complete "HTTP/1.1 <status>" response with "X-Paddock-Reason: <reason>", a short text
 * body and "Connection: close" (the connection is always closed after a refusal, so nothing
 * pipelined behind a refused request is ever read). The reason is reduced to printable ASCII.
 * Returns a malloc'd buffer of *ret_len bytes (NUL-terminated too). */
char *egress_http_response(unsigned status, const char *reason, size_t *ret_len);
static inline char *egress_http_403(const char *reason, size_t *ret_len)
{
	return egress_http_response(403, reason, ret_len);
}
