/* fuzz-oci-ref.c — libFuzzer target over image reference parsing. Invariants: a parsed
 * reference has a valid registry, repository, tag or digest; its canonical spelling parses
 * back to the same reference and is a fixed point. */
#include <assert.h>

#include "image/oci_manifest.h"
#include "image/oci_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1024)
		return 0;
	_cleanup_free_ char *s = xstrndup((const char *)data, size);
	_cleanup_oci_ref_ struct oci_ref *r = NULL;
	if (oci_ref_parse(s, &r, NULL) < 0)
		return 0;
	assert(r->registry[0] && r->repository[0] && (r->tag || r->digest));
	assert(!r->digest || oci_digest_valid(r->digest));
	assert(!strstr(r->repository, "//") && !strstr(r->repository, ".."));
	_cleanup_free_ char *f = oci_ref_format(r);
	_cleanup_oci_ref_ struct oci_ref *again = NULL;
	assert(oci_ref_parse(f, &again, NULL) == 0);
	_cleanup_free_ char *f2 = oci_ref_format(again);
	assert(streq(f, f2));
	assert(oci_ref_api_host(r)[0]);
	return 0;
}
