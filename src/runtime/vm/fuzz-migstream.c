/* fuzz-migstream.c — libFuzzer target over the migration stream rewriter (migstream.c): no
 * input may crash it, and what it accepts it must accept again as it wrote it, with nothing
 * more to drop (the output is a stream of the same kind, only without the markers). */
#include <stdlib.h>
#include <string.h>

#include "runtime/vm/migstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
	uint8_t *p;
	size_t len, cap;
};

static int sink(void *ctx, const uint8_t *buf, size_t len)
{
	struct out *o = ctx;
	if (o->len + len > o->cap) {
		o->cap = (o->len + len) * 2;
		o->p = realloc(o->p, o->cap);
		if (!o->p)
			abort();
	}
	memcpy(o->p + o->len, buf, len);
	o->len += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct out a = {0}, b = {0};
	struct mig_strip_stats st, st2;
	if (mig_strip_zero(data, size, MIG_GUEST_RAM_BLOCK, sink, &a, &st) == 0) {
		if (mig_strip_zero(a.p, a.len, MIG_GUEST_RAM_BLOCK, sink, &b, &st2) != 0 || st2.zero_dropped ||
		    st2.kept != st.kept || b.len != a.len || memcmp(a.p, b.p, a.len) != 0)
			abort();
	}
	free(a.p);
	free(b.p);
	return 0;
}
