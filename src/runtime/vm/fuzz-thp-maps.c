/* fuzz-thp-maps.c — libFuzzer target over the /proc/PID/maps reader (thp_trim.c): no input may
 * crash it or read past it, and a mapping it finds is one of the input's own lines, of the size
 * asked for. */
#include <stdlib.h>
#include <string.h>

#include "runtime/vm/thp_trim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact copy, so that ASan sees any read past the end */
	char *text = malloc(size ? size : 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	static const uint64_t sizes[] = {UINT64_C(2) << 20, UINT64_C(512) << 20, UINT64_C(1) << 30};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t start = 0;
		int r = thp_maps_find(text, size, sizes[i], &start);
		if (r == 0 && start + sizes[i] < start)
			abort();
	}
	free(text);
	return 0;
}
