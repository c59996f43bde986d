/* sni.h — TLS ClientHello server_name extraction: which host does this TLS stream claim?
 *
 * Given the first bytes a box sent on a TCP connection, finds the ClientHello and returns its
 * SNI host name, canonicalised (name.h), so the transparent path can require it to equal the
 * host name the connection's synthetic address stands for (no domain fronting).
 *
 * Strict and fail-closed: every length is checked against its container; the ClientHello may
 * span several handshake records but at most EGRESS_SNI_MAX_HELLO bytes; zero-length or
 * non-handshake records before it, duplicate extensions, an SNI list with anything but one
 * host_name, or trailing bytes inside the hello are MALFORMED. Any encrypted_client_hello
 * extension (and the older ESNI/ECH draft code points) gives ECH whatever the outer SNI says:
 * the inner name is unknowable to us, so it cannot be checked and is refused.
 * Pure: no I/O, no allocation. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "egress/name.h"

#define EGRESS_SNI_MAX_HELLO (16 * 1024) /* ClientHello body bytes we are willing to wait for */
#define EGRESS_SNI_MAX_EXTENSIONS 128

enum egress_sni_result {
	EGRESS_SNI_INVALID = 0,
	EGRESS_SNI_NEED_MORE, /* a prefix of a plausible ClientHello: read more and call again */
	EGRESS_SNI_NOT_TLS,   /* the stream does not start with a TLS handshake record */
	EGRESS_SNI_MALFORMED, /* TLS-looking but broken, or larger than the caps */
	EGRESS_SNI_NO_SNI,    /* a well-formed ClientHello without server_name */
	EGRESS_SNI_ECH,       /* an encrypted ClientHello extension is present */
	EGRESS_SNI_BAD_NAME,  /* server_name present but not a valid host name (IP literal, ...) */
	EGRESS_SNI_FOUND,     /* ret_name holds the canonical server name */
	EGRESS_SNI_RESULT_MAX,
};

/* Looks at buf[0..len). On EGRESS_SNI_FOUND, ret_name (EGRESS_NAME_MAX + 1 bytes) holds the
 * canonical name; otherwise it is left untouched. */
enum egress_sni_result egress_sni_extract(const uint8_t *buf, size_t len, char *ret_name);
/* "need-more", "not-tls", "malformed", "no-sni", "ech", "bad-name", "found" (audit log). */
const char *egress_sni_result_str(enum egress_sni_result r);
