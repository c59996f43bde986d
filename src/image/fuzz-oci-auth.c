/* fuzz-oci-auth.c — libFuzzer target over the WWW-Authenticate challenge parser and the token
 * response parser. Invariants: a Bearer challenge has an http(s) realm; values stay within
 * their caps; a token is printable ASCII without spaces. */
#include <assert.h>

#include "image/oci_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 16 * 1024)
		return 0;
	const char *s = (const char *)data;
	struct oci_auth_challenge c;
	if (oci_auth_challenge_parse(s, size, &c, NULL) == 0) {
		assert(c.scheme == OCI_AUTH_BEARER || c.scheme == OCI_AUTH_BASIC);
		assert(c.scheme != OCI_AUTH_BEARER || startswith(c.realm, "http"));
		assert(!c.realm || strlen(c.realm) <= OCI_AUTH_VALUE_MAX);
		assert(!c.scope || strlen(c.scope) <= OCI_AUTH_VALUE_MAX);
		oci_auth_challenge_clear(&c);
	} else {
		assert(!c.realm && !c.service && !c.scope);
	}
	char *tok = NULL;
	unsigned exp = 0;
	if (oci_token_parse(s, size, &tok, &exp, NULL) == 0) {
		assert(tok[0] && exp > 0);
		for (const char *p = tok; *p; p++)
			assert(*p > ' ' && *p < 0x7f);
		free(tok);
	}
	return 0;
}
