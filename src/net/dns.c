/* dns.c — DNS query parsing and answering (see dns.h). Wire format: RFC 1035 §4.1, EDNS OPT:
 * RFC 6891 §6.1. */
#include <errno.h>

#include "net/dns.h"
#include "net/fakeip.h"
#include "util/util.h"

#define FLAG_QR 0x8000u
#define FLAG_RD 0x0100u
#define FLAG_RA 0x0080u
#define WIRE_NAME_MAX 255
#define LABEL_MAX 63

struct query {
	uint16_t id, flags;
	const uint8_t *qsec; /* question section as received (echoed back verbatim) */
	size_t qsec_len;
	uint16_t qtype, qclass;
	bool hostname_bytes; /* every label byte is a host-name character */
	size_t text_len;
	char text[WIRE_NAME_MAX + 1];         /* dotted form, meaningful if hostname_bytes */
	size_t shown_len;
	char shown[DNS_EVENT_NAME_MAX];       /* escaped form for the audit log */
};

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static bool is_host_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* Appends one label to the dotted and the escaped forms. A label byte that is not a host-name
 * character (a '.', a NUL, anything binary) makes the name "not a host name": it is escaped
 * for the log and never turned into a dotted name that would read as different labels. */
static void add_label(struct query *q, const uint8_t *l, size_t n)
{
	if (q->text_len > 0) {
		q->text[q->text_len++] = '.';
		q->shown[q->shown_len++] = '.';
	}
	for (size_t i = 0; i < n; i++) {
		q->text[q->text_len++] = (char)l[i];
		if (is_host_byte(l[i])) {
			q->shown[q->shown_len++] = (char)l[i];
			continue;
		}
		q->hostname_bytes = false;
		snprintf(q->shown + q->shown_len, 5, "\\%03u", l[i]);
		q->shown_len += 4;
	}
	q->text[q->text_len] = '\0';
	q->shown[q->shown_len] = '\0';
}

/* The question name at m[*pos..]: plain labels only (compression pointers and the extended
 * label types 0x40/0x80 are refused), <= 63 bytes each, <= 255 bytes in all. */
static int parse_qname(const uint8_t *m, size_t len, size_t *pos, struct query *q)
{
	size_t p = *pos, wire = 0;
	q->hostname_bytes = true;
	for (;;) {
		if (p >= len)
			return -EBADMSG;
		uint8_t l = m[p++];
		wire++;
		if (l == 0)
			break;
		if (l > LABEL_MAX || wire + l > WIRE_NAME_MAX || len - p < l)
			return -EBADMSG; /* (l > 63 covers every pointer/extended type) */
		add_label(q, m + p, l);
		p += l;
		wire += l;
	}
	*pos = p;
	return 0;
}

/* At most one additional record, and it must be an EDNS OPT pseudo-record at the root. */
static int parse_additional(const uint8_t *m, size_t len, size_t *pos, uint16_t arcount)
{
	if (arcount == 0)
		return 0;
	size_t p = *pos;
	if (arcount > 1 || len - p < 11 || m[p] != 0 || get16(m + p + 1) != DNS_TYPE_OPT)
		return -EBADMSG;
	size_t rdlen = get16(m + p + 9);
	if (len - p - 11 < rdlen)
		return -EBADMSG;
	*pos = p + 11 + rdlen;
	return 0;
}

static int parse_query(const uint8_t *m, size_t len, struct query *q)
{
	if (len > DNS_QUERY_MAX || get16(m + 4) != 1 || get16(m + 6) != 0 || get16(m + 8) != 0)
		return -EBADMSG;
	size_t pos = DNS_HDR_LEN;
	if (parse_qname(m, len, &pos, q) < 0 || len - pos < 4)
		return -EBADMSG;
	q->qtype = get16(m + pos);
	q->qclass = get16(m + pos + 2);
	pos += 4;
	q->qsec = m + DNS_HDR_LEN;
	q->qsec_len = pos - DNS_HDR_LEN;
	if (parse_additional(m, len, &pos, get16(m + 10)) < 0 || pos != len)
		return -EBADMSG;
	return 0;
}

struct reply {
	uint8_t rcode;
	bool with_question;
	bool with_a;
	struct in_addr a;
	uint32_t ttl;
};

static int write_reply(const struct query *q, const struct reply *r, uint8_t *out,
		       size_t outcap, size_t *ret_len)
{
	size_t qs = r->with_question ? q->qsec_len : 0;
	size_t need = DNS_HDR_LEN + qs + (r->with_a ? 16 : 0);
	if (outcap < need)
		return -ENOBUFS;
	put16(out, q->id);
	put16(out + 2, (uint16_t)(FLAG_QR | (q->flags & FLAG_RD) | FLAG_RA | r->rcode));
	put16(out + 4, r->with_question);
	put16(out + 6, r->with_a);
	put16(out + 8, 0);
	put16(out + 10, 0);
	if (qs)
		memcpy(out + DNS_HDR_LEN, q->qsec, qs);
	if (r->with_a) {
		uint8_t *a = out + DNS_HDR_LEN + qs;
		put16(a, 0xc000 | DNS_HDR_LEN); /* pointer to the question name */
		put16(a + 2, DNS_TYPE_A);
		put16(a + 4, DNS_CLASS_IN);
		put16(a + 6, (uint16_t)(r->ttl >> 16));
		put16(a + 8, (uint16_t)r->ttl);
		put16(a + 10, 4);
		memcpy(a + 12, &r->a.s_addr, 4);
	}
	*ret_len = need;
	return 0;
}

static void decide(struct reply *r, struct dns_event *ev, uint8_t rcode, const char *rule,
		   enum egress_verdict v)
{
	r->rcode = rcode;
	ev->rcode = rcode;
	ev->rule = rule;
	ev->verdict = v;
}

/* An allowed name: the answer depends on the record type. */
static void answer_type(const struct query *q, const struct dns_ctx *ctx, const char *canon,
			const char *rule, struct reply *r, struct dns_event *ev)
{
	switch (q->qtype) {
	case DNS_TYPE_A:
		if (ctx->fake_ip(ctx->opaque, canon, &r->a) < 0) {
			decide(r, ev, DNS_RCODE_SERVFAIL, "pool-exhausted", EGRESS_DENY);
			break;
		}
		r->with_a = true;
		ev->addr = r->a;
		decide(r, ev, DNS_RCODE_NOERROR, rule, EGRESS_ALLOW);
		break;
	case DNS_TYPE_AAAA:  /* no IPv6 in the box */
	case DNS_TYPE_HTTPS: /* no HTTPS/SVCB records: no ECH configs, no alternative endpoints */
	case DNS_TYPE_SVCB:
		decide(r, ev, DNS_RCODE_NOERROR, rule, EGRESS_ALLOW);
		break;
	default:
		decide(r, ev, DNS_RCODE_REFUSED, "refused-type", EGRESS_DENY);
		break;
	}
}

/* The answer for a well-formed IN query: policy first, so a denied name is NXDOMAIN for every
 * type and nothing about it reaches the fake-IP pool. */
static void answer_name(const struct query *q, const struct dns_ctx *ctx, struct reply *r,
			struct dns_event *ev)
{
	char canon[EGRESS_NAME_MAX + 1];
	const char *rule = NULL;
	if (!q->hostname_bytes || egress_name_canon(q->text, canon, sizeof(canon)) < 0) {
		decide(r, ev, DNS_RCODE_NXDOMAIN, "invalid-name", EGRESS_DENY);
		return;
	}
	snprintf(ev->name, sizeof(ev->name), "%s", canon);
	if (!egress_policy_name_allowed(ctx->policy, canon, &rule)) {
		decide(r, ev, DNS_RCODE_NXDOMAIN, rule, EGRESS_DENY);
		return;
	}
	answer_type(q, ctx, canon, rule, r, ev);
}

int dns_answer(const uint8_t *query, size_t qlen, const struct dns_ctx *ctx, uint8_t *out,
	       size_t outcap, size_t *ret_len, struct dns_event *ret_ev)
{
	struct dns_event dummy, *ev = ret_ev ? ret_ev : &dummy;
	*ev = (struct dns_event){.verdict = EGRESS_DENY, .rule = "malformed"};
	if (qlen < DNS_HDR_LEN || (get16(query + 2) & FLAG_QR))
		return -EBADMSG; /* nothing to answer to, or an answer: drop */
	struct query q = {.id = get16(query), .flags = get16(query + 2)};
	struct reply r = {.ttl = ctx->ttl ? ctx->ttl : FAKEIP_TTL_DEFAULT};
	if (((q.flags >> 11) & 0xf) != 0)
		decide(&r, ev, DNS_RCODE_NOTIMP, "not-implemented", EGRESS_DENY);
	else if (parse_query(query, qlen, &q) < 0)
		decide(&r, ev, DNS_RCODE_FORMERR, "malformed", EGRESS_DENY);
	else {
		r.with_question = true;
		ev->qtype = q.qtype;
		snprintf(ev->name, sizeof(ev->name), "%s", q.shown);
		if (q.qclass != DNS_CLASS_IN)
			decide(&r, ev, DNS_RCODE_REFUSED, "refused-class", EGRESS_DENY);
		else
			answer_name(&q, ctx, &r, ev);
	}
	return write_reply(&q, &r, out, outcap, ret_len);
}

int dns_tcp_next(const uint8_t *buf, size_t len, const uint8_t **ret_msg, size_t *ret_msglen)
{
	if (len < 2)
		return 0;
	size_t n = get16(buf);
	if (n < DNS_HDR_LEN)
		return -EBADMSG;
	if (len - 2 < n)
		return 0;
	*ret_msg = buf + 2;
	*ret_msglen = n;
	return (int)(n + 2);
}

int dns_tcp_prefix(uint8_t out[2], size_t msglen)
{
	if (msglen > 65535)
		return -EMSGSIZE;
	put16(out, (uint16_t)msglen);
	return 0;
}

const char *dns_rcode_str(uint8_t rcode)
{
	static const char *const names[] = {"NOERROR", "FORMERR", "SERVFAIL",
					    "NXDOMAIN", "NOTIMP", "REFUSED"};
	return rcode < ARRAY_SIZE(names) ? names[rcode] : "RCODE-OTHER";
}

const char *dns_qtype_str(uint16_t qtype)
{
	switch (qtype) {
	case DNS_TYPE_A: return "A";
	case DNS_TYPE_NS: return "NS";
	case DNS_TYPE_CNAME: return "CNAME";
	case DNS_TYPE_SOA: return "SOA";
	case DNS_TYPE_PTR: return "PTR";
	case DNS_TYPE_MX: return "MX";
	case DNS_TYPE_TXT: return "TXT";
	case DNS_TYPE_AAAA: return "AAAA";
	case DNS_TYPE_SRV: return "SRV";
	case DNS_TYPE_OPT: return "OPT";
	case DNS_TYPE_SVCB: return "SVCB";
	case DNS_TYPE_HTTPS: return "HTTPS";
	case DNS_TYPE_ANY: return "ANY";
	default: return NULL;
	}
}
