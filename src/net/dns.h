/* dns.h — the box's DNS server as a pure function: one query message in, one answer out.
 *
 * The supervisor answers every DNS query itself and never recurses (no DNS exfiltration:
 * nothing about a name the box asks for leaves the host at lookup time):
 *   - a name the policy denies (or that is not a valid host name: IP literals, binary labels)
 *     gets NXDOMAIN, whatever the record type;
 *   - an allowed name gets, for A, one synthetic address from ctx->fake_ip (TTL ctx->ttl);
 *     for AAAA, HTTPS and SVCB an empty NOERROR (no IPv6; no HTTPS records, hence no ECH
 *     configs); for every other type (TXT, MX, SRV, ANY, ...) REFUSED;
 *   - a query of another class than IN gets REFUSED, another opcode NOTIMP;
 *   - a malformed query whose header is readable gets FORMERR; one without a header, or a
 *     response (QR set), is dropped (-EBADMSG) so two servers can never ping-pong.
 * Strict parsing: exactly one question, no compression pointers in it, labels <= 63 bytes,
 * name <= 255 bytes on the wire, no answer/authority records, at most one additional record
 * and only an EDNS OPT (ignored; the answer carries none), no trailing bytes, queries larger
 * than DNS_QUERY_MAX refused. Answers always fit in 512 bytes.
 * Also the 2-byte length framing of DNS over TCP (RFC 1035 §4.2.2). */
#pragma once

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/policy.h"

#define DNS_HDR_LEN 12
#define DNS_QUERY_MAX 4096
#define DNS_ANSWER_MAX 512
#define DNS_EVENT_NAME_MAX 1024 /* a 255-byte wire name with every byte escaped as \DDD */

enum dns_rcode {
	DNS_RCODE_NOERROR = 0,
	DNS_RCODE_FORMERR = 1,
	DNS_RCODE_SERVFAIL = 2,
	DNS_RCODE_NXDOMAIN = 3,
	DNS_RCODE_NOTIMP = 4,
	DNS_RCODE_REFUSED = 5,
};

enum dns_qtype {
	DNS_TYPE_A = 1,
	DNS_TYPE_NS = 2,
	DNS_TYPE_CNAME = 5,
	DNS_TYPE_SOA = 6,
	DNS_TYPE_PTR = 12,
	DNS_TYPE_MX = 15,
	DNS_TYPE_TXT = 16,
	DNS_TYPE_AAAA = 28,
	DNS_TYPE_SRV = 33,
	DNS_TYPE_OPT = 41,
	DNS_TYPE_SVCB = 64,
	DNS_TYPE_HTTPS = 65,
	DNS_TYPE_ANY = 255,
};
#define DNS_CLASS_IN 1

struct dns_ctx {
	const struct egress_policy *policy;
	/* The synthetic address for an allowed canonical name (e.g. fakeip_assign() with the
	 * current time); a negative errno makes the answer SERVFAIL. */
	int (*fake_ip)(void *opaque, const char *canon_name, struct in_addr *ret_addr);
	void *opaque;
	uint32_t ttl; /* of A answers; 0 means FAKEIP_TTL_DEFAULT (60 s) */
};

/* What happened, for the audit log. */
struct dns_event {
	char name[DNS_EVENT_NAME_MAX]; /* canonical name; else the wire name, escaped; "" if none */
	uint16_t qtype;
	uint8_t rcode;
	enum egress_verdict verdict;   /* ALLOW only when the name was allowed and answered */
	const char *rule;              /* deciding rule (valid until the policy changes) or one of
					* "malformed", "not-implemented", "refused-class",
					* "refused-type", "invalid-name", "pool-exhausted" */
	struct in_addr addr;           /* the A answer, if any (else 0) */
};

/* Answers query[0..qlen) into out (outcap >= DNS_ANSWER_MAX is always enough). Returns 0
 * with *ret_len bytes in out, -EBADMSG if the query must be dropped unanswered, -ENOBUFS if
 * out is too small. ret_ev (optional) is filled in every case. */
int dns_answer(const uint8_t *query, size_t qlen, const struct dns_ctx *ctx, uint8_t *out,
	       size_t outcap, size_t *ret_len, struct dns_event *ret_ev);

/* DNS over TCP: the next length-prefixed message in buf[0..len). Returns the bytes it
 * occupies including the prefix (> 0), 0 if incomplete, -EBADMSG if the length is shorter
 * than a DNS header (the connection should be closed). */
int dns_tcp_next(const uint8_t *buf, size_t len, const uint8_t **ret_msg, size_t *ret_msglen);
/* Writes the 2-byte big-endian prefix for a msglen-byte message; -EMSGSIZE if > 65535. */
int dns_tcp_prefix(uint8_t out[2], size_t msglen);

const char *dns_rcode_str(uint8_t rcode);   /* "NOERROR", ..., "RCODE7" style never NULL */
const char *dns_qtype_str(uint16_t qtype);  /* "A", "AAAA", ..., or NULL if not one we name */
