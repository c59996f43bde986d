/* fuzz-sni.c — libFuzzer target over the ClientHello SNI extractor. Invariants: a FOUND name is
 * canonical, and every prefix of an input that gave a verdict is a NEED_MORE or that verdict's
 * stricter cousin (never FOUND from fewer bytes with another name). */
#include <assert.h>

#include "egress/sni.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[EGRESS_NAME_MAX + 1], canon[EGRESS_NAME_MAX + 1];
	enum egress_sni_result r = egress_sni_extract(data, size, name);
	assert(r > EGRESS_SNI_INVALID && r < EGRESS_SNI_RESULT_MAX);
	(void)egress_sni_result_str(r);
	if (r == EGRESS_SNI_FOUND) {
		assert(egress_name_canon(name, canon, sizeof(canon)) >= 0);
		assert(streq(name, canon));
		/* one byte less can never name a different host */
		char shorter[EGRESS_NAME_MAX + 1];
		if (size > 0 && egress_sni_extract(data, size - 1, shorter) == EGRESS_SNI_FOUND)
			assert(streq(shorter, name));
	}
	return 0;
}
