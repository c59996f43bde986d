/* fuzz-tarfmt.c — libFuzzer target over paddock-init's tar reader (headers, pax and GNU
 * long-name records, content) and the path normalisation every extracted name goes through;
 * each entry it accepts is encoded again, which must succeed for a cleaned, non-root name. */

#include "proto/tarfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tarfmt_mem m = {data, size, 0};
	struct tarfmt_reader r;
	tarfmt_reader_init(&r, tarfmt_mem_read, &m);
	struct tarfmt_entry *e = xmalloc(sizeof(*e));
	uint8_t *hdr = xmalloc(TARFMT_HDR_MAX);
	char buf[700];
	int n;
	while ((n = tarfmt_next(&r, e)) > 0) {
		if (e->type == TARFMT_FILE)
			while (tarfmt_read_data(&r, buf, sizeof(buf)) > 0)
				;
		if (!tarfmt_clean_path(e->path) || !e->path[0])
			continue;
		e->size = e->type == TARFMT_FILE ? e->size : 0;
		if (tarfmt_encode(hdr, e) == 0 && e->mtime_ns <= 999999999u)
			__builtin_trap();
	}
	free(hdr);
	free(e);
	return 0;
}
