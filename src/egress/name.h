/* name.h — canonical host names: the one form in which the egress engine compares names.
 *
 * Every name that reaches a policy decision (a DNS question, a TLS SNI, an HTTP Host or
 * CONNECT authority, a rule) goes through egress_name_canon() first, and the matcher only
 * ever compares canonical names byte for byte. The canonical form is:
 *   - ASCII only, lowercased (A-Z -> a-z); non-ASCII (UTF-8) is refused: write IDNs as their
 *     A-labels ("xn--bcher-kva.example"), which are accepted and compared as opaque ASCII;
 *   - labels of [a-z0-9_-], 1..63 bytes, not starting or ending with '-'; '_' is accepted
 *     anywhere (real host names such as S3 buckets carry it; no parser downstream gives it a
 *     meaning), so "_dmarc.example" is a valid name that simply matches no ordinary rule;
 *   - at most 253 bytes, exactly one trailing dot stripped ("a.example." == "a.example");
 *   - never an IP literal: a name whose last label is numeric in the inet_aton()/WHATWG-URL
 *     sense (decimal "127.1", "2130706433", octal "0177.0.0.1", hex "0x7f.1", "0x7f000001")
 *     and anything with ':' or '[' (IPv6, "::ffff:127.0.0.1") is refused. No real top-level
 *     domain is numeric, so this costs nothing and closes every numeric-address spelling.
 * Pure: no I/O, no allocation, no locale. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define EGRESS_NAME_MAX 253   /* bytes of a canonical name, without the NUL */
#define EGRESS_LABEL_MAX 63

/* Canonicalises the NUL-terminated name in into out (outlen bytes, >= EGRESS_NAME_MAX + 1 is
 * always enough). Returns the canonical length, or:
 *   -EINVAL        empty name/label, bad character, hyphen at a label edge
 *   -ENAMETOOLONG  label > 63 or name > 253 bytes
 *   -EILSEQ        non-ASCII byte (IDN not given as A-labels)
 *   -EADDRNOTAVAIL an IP literal in any notation
 *   -ENOBUFS       out too small
 * On error out is not written. */
int egress_name_canon(const char *in, char *out, size_t outlen);
/* Same for a counted buffer (an embedded NUL is -EINVAL). */
int egress_name_canon_n(const char *in, size_t inlen, char *out, size_t outlen);
/* True if name (any case) is an IP literal in one of the notations above. */
bool egress_name_is_ip_literal(const char *in, size_t inlen);
/* A short English reason for an egress_name_canon() error, for messages and audit logs. */
const char *egress_name_strerror(int r);
