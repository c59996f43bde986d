/* oci_auth.h — registry token authentication, the pure parts: the WWW-Authenticate challenge
 * of a 401 and the token server's JSON answer.
 *
 *   WWW-Authenticate: Bearer realm="https://auth.docker.io/token",service="registry.docker.io",
 *                     scope="repository:library/node:pull"
 *
 * RFC 9110 auth-param syntax: a scheme, then name=value pairs separated by commas, values as
 * tokens or quoted strings with backslash escapes; names and the scheme are case-insensitive.
 * Only the first challenge of a header is read. Caps: header <= 8 KiB, each value <= 2 KiB,
 * <= 32 parameters; a repeated parameter is refused. Pure. */
#pragma once

#include "util/error.h"

#define OCI_AUTH_HEADER_MAX 8192
#define OCI_AUTH_VALUE_MAX 2048
#define OCI_AUTH_PARAMS_MAX 32
#define OCI_TOKEN_RESPONSE_MAX (1024 * 1024)
#define OCI_TOKEN_MAX (64 * 1024)

enum oci_auth_scheme {
	OCI_AUTH_INVALID = 0,
	OCI_AUTH_BEARER,
	OCI_AUTH_BASIC,
	OCI_AUTH_MAX,
};

struct oci_auth_challenge {
	enum oci_auth_scheme scheme;
	char *realm;    /* required for Bearer: an http(s) URL */
	char *service;  /* optional */
	char *scope;    /* optional */
};

/* Parses one header value (without "WWW-Authenticate:"). Unknown parameters are ignored;
 * an unknown scheme is -EOPNOTSUPP. On error *ret is left cleared. */
int oci_auth_challenge_parse(const char *header, size_t len, struct oci_auth_challenge *ret,
			     pd_err *err);
void oci_auth_challenge_clear(struct oci_auth_challenge *c);

/* The token server's answer: {"token": …} or {"access_token": …} (token preferred when both),
 * "expires_in" seconds (default 60, per the distribution spec). The token must be a
 * printable-ASCII string without spaces. */
int oci_token_parse(const char *buf, size_t len, char **ret_token, unsigned *ret_expires_in,
		    pd_err *err);
