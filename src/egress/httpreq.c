/* httpreq.c — request-head parsing on top of http_parser, plus the checks that make the
 * framing unambiguous (see httpreq.h). */
#include <errno.h>
#include <limits.h>
#include <strings.h>

#include "egress/httpreq.h"
#include "util/util.h"

enum { HDR_OTHER, HDR_HOST, HDR_CL, HDR_TE };

static struct egress_httpreq_state *state_of(http_parser *p)
{
	return p->data;
}

static int refuse(struct egress_httpreq_state *s, const char *why)
{
	if (!s->reason)
		s->reason = why;
	return -1; /* any non-zero return makes http_parser stop with HPE_CB_* */
}

/* Data callbacks may arrive in pieces when the head is fed in chunks: keep (offset, length)
 * spans into the caller's buffer and extend them. */
static void span_extend(struct egress_httpreq_state *s, size_t *off, size_t *len, const char *at,
			size_t n, bool start)
{
	size_t o = (size_t)(at - s->buf);
	if (start)
		*off = o;
	*len = o + n - *off;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct egress_httpreq_state *s = state_of(p);
	span_extend(s, &s->url_off, &s->url_len, at, n, s->url_len == 0);
	return 0;
}

static bool is_tchar(char c)
{
	/* RFC 9110 §5.6.2 token characters: no space, no separators, no controls */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool name_is(const char *f, size_t n, const char *want)
{
	return n == strlen(want) && strncasecmp(f, want, n) == 0;
}

/* The previous header (field + value) is complete: validate and classify it. */
static int finish_header(struct egress_httpreq_state *s)
{
	const char *f = s->buf + s->field_off, *v = s->buf + s->val_off;
	if (s->field_len == 0)
		return refuse(s, "empty header name");
	for (size_t i = 0; i < s->field_len; i++)
		if (!is_tchar(f[i]))
			return refuse(s, "invalid character in header name");
	for (size_t i = 0; i < s->val_len; i++)
		if (v[i] == '\0' || v[i] == '\r' || v[i] == '\n')
			return refuse(s, "NUL, CR or LF in header value");
	if (name_is(f, s->field_len, "host")) {
		s->n_host++;
		s->host_off = s->val_off;
		s->host_len = s->val_len;
	} else if (name_is(f, s->field_len, "content-length")) {
		s->n_cl++;
	} else if (name_is(f, s->field_len, "transfer-encoding")) {
		s->n_te++;
		s->te_off = s->val_off;
		s->te_len = s->val_len;
	} else if (name_is(f, s->field_len, "expect")) {
		s->n_expect++;
		s->expect_field_off = s->field_off;
		s->expect_off = s->val_off;
		s->expect_len = s->val_len;
	}
	s->field_len = s->val_len = 0;
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
	struct egress_httpreq_state *s = state_of(p);
	if (s->in_value || s->nheaders == 0) {
		if (s->in_value && finish_header(s) < 0)
			return -1;
		s->in_value = false;
		if (++s->nheaders > EGRESS_HTTP_HEADERS_MAX)
			return refuse(s, "too many header fields");
		span_extend(s, &s->field_off, &s->field_len, at, n, true);
		return 0;
	}
	span_extend(s, &s->field_off, &s->field_len, at, n, false);
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
	struct egress_httpreq_state *s = state_of(p);
	span_extend(s, &s->val_off, &s->val_len, at, n, !s->in_value);
	s->in_value = true;
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct egress_httpreq_state *s = state_of(p);
	if (s->in_value && finish_header(s) < 0)
		return -1;
	s->in_value = false;
	s->req->chunked = (p->flags & F_CHUNKED) != 0;
	/* ULLONG_MAX: none given; a length past INT64_MAX is not "no body" to anyone else */
	if (p->content_length != ULLONG_MAX && p->content_length > INT64_MAX)
		return refuse(s, "Content-Length too large");
	s->req->content_length = p->content_length == ULLONG_MAX ? -1 : (int64_t)p->content_length;
	s->req->keep_alive = http_should_keep_alive(p) != 0;
	return 1; /* head only: tell the parser there is no body to read */
}

static int on_message_complete(http_parser *p)
{
	struct egress_httpreq_state *s = state_of(p);
	s->done = true;
	http_parser_pause(p, 1); /* stop right after this head; what follows is not ours */
	return 0;
}

static const http_parser_settings settings = {
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_message_complete = on_message_complete,
};

void egress_httpreq_init(struct egress_httpreq_state *s)
{
	memset(s, 0, sizeof(*s));
	http_parser_init(&s->parser, HTTP_REQUEST);
	s->parser.data = s;
}

/* ---- checks on the complete head ---- */

/* Byte-level rules http_parser (built non-strict) does not enforce: CRLF only, no obs-fold,
 * no controls, nothing before the request line. */
static const char *check_raw_head(const char *b, size_t n)
{
	bool line_start = true;
	if (n > 0 && (b[0] == '\r' || b[0] == '\n' || b[0] == ' ' || b[0] == '\t'))
		return "request must start with a method";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];
		if (c == '\r') {
			if (i + 1 >= n || b[i + 1] != '\n')
				return "bare CR in request head";
			i++;
			line_start = true;
			continue;
		}
		if (c == '\n')
			return "bare LF in request head (lines must end in CRLF)";
		if (line_start && (c == ' ' || c == '\t'))
			return "obsolete header line folding";
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return "control character in request head";
		line_start = false;
	}
	return NULL;
}

static const char *check_target_bytes(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i] <= 0x20 || t[i] >= 0x7f)
			return "non-ASCII or control byte in request target";
		if (t[i] == '\\' || t[i] == '#')
			return "backslash or fragment in request target";
	}
	return NULL;
}

static void trim_ows(const char **v, size_t *n)
{
	while (*n > 0 && (**v == ' ' || **v == '\t')) {
		(*v)++;
		(*n)--;
	}
	while (*n > 0 && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t'))
		(*n)--;
}

static bool parse_port(const char *s, size_t n, uint16_t *ret)
{
	unsigned v = 0;
	if (n == 0 || n > 5 || s[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return false;
	*ret = (uint16_t)v;
	return true;
}

/* "host[:port]" (a Host header value) into a canonical host and a port. */
static const char *parse_hostport(const char *s, size_t n, uint16_t defport, char *ret_host,
				  uint16_t *ret_port)
{
	trim_ows(&s, &n);
	if (!s || n == 0)
		return "empty host";
	if (s[0] == '[')
		return egress_name_strerror(-EADDRNOTAVAIL);
	const char *colon = memrchr(s, ':', n);
	uint16_t port = defport;
	if (colon && !memchr(s, ':', (size_t)(colon - s))) {
		if (!parse_port(colon + 1, n - (size_t)(colon - s) - 1, &port))
			return "invalid port";
		n = (size_t)(colon - s);
	}
	int r = egress_name_canon_n(s, n, ret_host, EGRESS_NAME_MAX + 1);
	if (r < 0)
		return egress_name_strerror(r);
	*ret_port = port;
	return NULL;
}

static bool field_is(const char *url, const struct http_parser_url *u, int f, const char *want)
{
	return u->field_data[f].len == strlen(want) &&
	       strncasecmp(url + u->field_data[f].off, want, strlen(want)) == 0;
}

/* URL host + port from http_parser_parse_url() output. */
static const char *url_host(const char *url, const struct http_parser_url *u,
			    struct egress_httpreq *req)
{
	if (u->field_set & (1 << UF_USERINFO))
		return "userinfo in URL";
	if (!(u->field_set & (1 << UF_HOST)))
		return "no host in request target";
	const char *h = url + u->field_data[UF_HOST].off;
	size_t hl = u->field_data[UF_HOST].len;
	/* http_parser drops the brackets of "[::1]"; the colon is still refused as a literal */
	int r = egress_name_canon_n(h, hl, req->host, sizeof(req->host));
	if (r < 0)
		return egress_name_strerror(r);
	if ((u->field_set & (1 << UF_PORT)) && u->port == 0)
		return "invalid port";
	return NULL;
}

static const char *parse_connect_target(const char *t, size_t n, struct egress_httpreq *req)
{
	struct http_parser_url u;
	http_parser_url_init(&u);
	if (http_parser_parse_url(t, n, 1, &u) != 0)
		return "CONNECT target must be host:port";
	const char *why = url_host(t, &u, req);
	if (why)
		return why;
	req->port = u.port;
	req->form = EGRESS_HTTP_CONNECT;
	return NULL;
}

static const char *parse_absolute_target(const char *t, size_t n, size_t t_off,
					 struct egress_httpreq *req)
{
	struct http_parser_url u;
	http_parser_url_init(&u);
	if (http_parser_parse_url(t, n, 0, &u) != 0)
		return "invalid request target";
	if (!(u.field_set & (1 << UF_SCHEMA)) || !field_is(t, &u, UF_SCHEMA, "http"))
		return "only http:// URLs can be proxied (use CONNECT for https)";
	const char *why = url_host(t, &u, req);
	if (why)
		return why;
	req->port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
	/* what goes upstream: everything after the authority */
	size_t rest = u.field_data[UF_HOST].off + u.field_data[UF_HOST].len;
	if (u.field_set & (1 << UF_PORT))
		rest = u.field_data[UF_PORT].off + u.field_data[UF_PORT].len;
	req->path_off = t_off + rest;
	req->path_len = n - rest;
	req->form = EGRESS_HTTP_ABSOLUTE;
	return NULL;
}

static const char *parse_target(const struct egress_httpreq_state *s, struct egress_httpreq *req)
{
	const char *t = s->buf + s->url_off;
	size_t n = s->url_len;
	const char *why = check_target_bytes(t, n);
	if (why || n == 0)
		return why ? why : "empty request target";
	if (s->parser.method == HTTP_CONNECT)
		return parse_connect_target(t, n, req);
	if (t[0] == '/') {
		req->form = EGRESS_HTTP_ORIGIN;
		req->path_off = s->url_off;
		req->path_len = n;
		return NULL;
	}
	if (n > 7 && strncasecmp(t, "http://", 7) == 0)
		return parse_absolute_target(t, n, s->url_off, req);
	return "request target must be /path, http://host/path or (CONNECT) host:port";
}

/* Host header against the target: one Host at most, and it must name the same host:port. */
static const char *check_host_header(const struct egress_httpreq_state *s,
				     struct egress_httpreq *req)
{
	if (s->n_host > 1)
		return "more than one Host header";
	bool http11 = req->http_minor == 1;
	if (s->n_host == 0) {
		if (req->form == EGRESS_HTTP_ORIGIN || (req->form == EGRESS_HTTP_ABSOLUTE && http11))
			return "missing Host header";
		return NULL;
	}
	char host[EGRESS_NAME_MAX + 1];
	uint16_t port = 0;
	uint16_t defport = req->form == EGRESS_HTTP_CONNECT ? req->port : req->form == EGRESS_HTTP_ORIGIN ? 0 : 80;
	const char *why = parse_hostport(s->buf + s->host_off, s->host_len, defport, host, &port);
	if (why)
		return why;
	if (req->form == EGRESS_HTTP_ORIGIN) {
		memcpy(req->host, host, sizeof(host));
		req->port = port;
		return NULL;
	}
	if (!streq(host, req->host) || port != req->port)
		return "Host header does not match the request target";
	return NULL;
}

/* Only one way to know where the body ends (RFC 9112 §6.3), and no body on CONNECT. */
static const char *check_framing(const struct egress_httpreq_state *s,
				 const struct egress_httpreq *req)
{
	if (s->n_cl > 1)
		return "more than one Content-Length header";
	if (s->n_te > 1)
		return "more than one Transfer-Encoding header";
	if (s->n_cl && s->n_te)
		return "both Content-Length and Transfer-Encoding";
	if (s->n_te) {
		const char *v = s->buf + s->te_off;
		size_t n = s->te_len;
		trim_ows(&v, &n);
		if (n != 7 || memcmp(v, "chunked", 7) != 0 || !req->chunked)
			return "Transfer-Encoding other than \"chunked\"";
	}
	if (req->form == EGRESS_HTTP_CONNECT && (req->chunked || req->content_length > 0))
		return "CONNECT with a body";
	return NULL;
}

/* Expect: only one "100-continue" is taken, and its whole line is reported for the engine to
 * drop (the box's client then sends its body after its own short wait, which is what it does
 * with a server that ignores Expect). Anything else is refused, as a server would (417). */
static const char *check_expect(const struct egress_httpreq_state *s, struct egress_httpreq *req)
{
	if (s->n_expect == 0)
		return NULL;
	if (s->n_expect > 1)
		return "more than one Expect header";
	const char *v = s->buf + s->expect_off;
	size_t n = s->expect_len;
	trim_ows(&v, &n);
	if (n != 12 || strncasecmp(v, "100-continue", 12) != 0)
		return "Expect other than 100-continue";
	const char *end = memmem(s->buf + s->expect_off + s->expect_len, req->head_len - s->expect_off - s->expect_len,
				 "\r\n", 2);
	if (!end)
		return "malformed Expect header";
	req->expect_off = s->expect_field_off;
	req->expect_len = (size_t)(end + 2 - (s->buf + s->expect_field_off));
	return NULL;
}

/* Exactly "METHOD SP target SP HTTP/1.x CRLF": http_parser tolerates extra spaces, and a
 * request line two parsers could split differently is not worth accepting. */
static const char *check_request_line(const struct egress_httpreq_state *s,
				      const struct egress_httpreq *req)
{
	size_t m = strlen(req->method), v = s->url_off + s->url_len;
	if (s->url_off != m + 1 || s->buf[m] != ' ' || v + 11 > req->head_len ||
	    memcmp(s->buf + v, " HTTP/1.", 8) != 0 || memcmp(s->buf + v + 9, "\r\n", 2) != 0)
		return "malformed request line";
	return NULL;
}

static const char *check_head(struct egress_httpreq_state *s, struct egress_httpreq *req)
{
	const char *why = check_raw_head(s->buf, req->head_len);
	if (why)
		return why;
	req->http_major = s->parser.http_major;
	req->http_minor = s->parser.http_minor;
	if (req->http_major != 1 || req->http_minor > 1)
		return "only HTTP/1.0 and HTTP/1.1 are supported";
	req->method = http_method_str((enum http_method)s->parser.method);
	req->upgrade = s->parser.upgrade;
	why = check_request_line(s, req);
	if (!why)
		why = parse_target(s, req);
	if (!why)
		why = check_framing(s, req);
	if (!why)
		why = check_host_header(s, req);
	if (!why)
		why = check_expect(s, req);
	return why;
}

static int fail(struct egress_httpreq_state *s, int r, const char *why, const char **ret_reason)
{
	s->done = true;
	if (!s->reason)
		s->reason = why;
	if (ret_reason)
		*ret_reason = s->reason;
	return r;
}

int egress_httpreq_feed(struct egress_httpreq_state *s, const char *buf, size_t len,
			struct egress_httpreq *ret, const char **ret_reason)
{
	if (s->done || len < s->fed)
		return fail(s, -EBADMSG, "request parser misused", ret_reason);
	struct egress_httpreq req = {.content_length = -1};
	size_t limit = len < EGRESS_HTTP_HEAD_MAX ? len : EGRESS_HTTP_HEAD_MAX;
	s->buf = buf;
	s->req = &req;
	size_t n = http_parser_execute(&s->parser, &settings, buf + s->fed, limit - s->fed);
	enum http_errno e = HTTP_PARSER_ERRNO(&s->parser);
	s->req = NULL;
	if (!s->done && e != HPE_OK)
		return fail(s, -EBADMSG, http_errno_description(e), ret_reason);
	s->fed += n;
	if (!s->done) {
		if (s->fed >= EGRESS_HTTP_HEAD_MAX)
			return fail(s, -E2BIG, "request head larger than 64 KiB", ret_reason);
		return 0;
	}
	req.head_len = s->fed;
	const char *why = check_head(s, &req);
	if (why)
		return fail(s, -EBADMSG, why, ret_reason);
	*ret = req;
	return 1;
}

int egress_httpreq_parse(const char *buf, size_t len, struct egress_httpreq *ret,
			 const char **ret_reason)
{
	struct egress_httpreq_state s;
	egress_httpreq_init(&s);
	return egress_httpreq_feed(&s, buf, len, ret, ret_reason);
}

/* ---- responses ---- */

static const char *status_text(unsigned status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* Printable ASCII only, at most 200 bytes: a reason can never add a header or end the head. */
static void sanitize_reason(const char *in, char *out, size_t outlen)
{
	size_t j = 0;
	for (size_t i = 0; in && in[i] && j + 1 < outlen; i++)
		out[j++] = (in[i] >= 0x20 && in[i] < 0x7f) ? in[i] : '?';
	out[j] = '\0';
}

char *egress_http_response(unsigned status, const char *reason, size_t *ret_len)
{
	char why[201];
	sanitize_reason(reason, why, sizeof(why));
	if (status < 100 || status > 599)
		status = 500;
	_cleanup_free_ char *body = xasprintf("paddock: %s\n", why);
	char *out = xasprintf("HTTP/1.1 %u %s\r\n"
			      "X-Paddock-Reason: %s\r\n"
			      "Content-Type: text/plain; charset=utf-8\r\n"
			      "Content-Length: %zu\r\n"
			      "Connection: close\r\n"
			      "\r\n"
			      "%s",
			      status, status_text(status), why, strlen(body), body);
	*ret_len = strlen(out);
	return out;
}
