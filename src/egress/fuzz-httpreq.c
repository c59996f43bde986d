/* fuzz-httpreq.c — libFuzzer target over the proxy request-head parser. The input is parsed
 * in one go and again fed in two pieces; both must agree, an accepted head must lie within the
 * input and name a canonical host. */
#include <assert.h>

#include "egress/httpreq.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > EGRESS_HTTP_HEAD_MAX + 16)
		return 0;
	const char *buf = (const char *)data;
	struct egress_httpreq a, b;
	const char *why = NULL;
	int ra = egress_httpreq_parse(buf, size, &a, &why);
	assert(ra == 1 || ra == 0 || ra == -EBADMSG || ra == -E2BIG);
	assert(ra >= 0 || why);

	struct egress_httpreq_state s;
	egress_httpreq_init(&s);
	size_t cut = size ? data[0] % (size + 1) : 0;
	int rb = egress_httpreq_feed(&s, buf, cut, &b, &why);
	if (rb == 0)
		rb = egress_httpreq_feed(&s, buf, size, &b, &why);
	if (ra == 1) {
		char canon[EGRESS_NAME_MAX + 1];
		assert(a.head_len <= size && a.path_off + a.path_len <= size);
		assert(egress_name_canon(a.host, canon, sizeof(canon)) >= 0 && streq(canon, a.host));
		assert(a.form > EGRESS_HTTP_FORM_INVALID && a.form < EGRESS_HTTP_FORM_MAX);
	}
	/* chunked feeding never accepts what the one-shot parse refused, and vice versa */
	assert((ra == 1) == (rb == 1));
	if (ra == 1) {
		assert(a.head_len == b.head_len && a.port == b.port && streq(a.host, b.host));
	}
	size_t n;
	_cleanup_free_ char *resp = egress_http_403(why, &n);
	assert(n == strlen(resp));
	return 0;
}
