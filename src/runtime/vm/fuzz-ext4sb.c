/* fuzz-ext4sb.c — libFuzzer target over the ext4 superblock parser (ext4sb.c). */
#include <stdlib.h>

#include "runtime/vm/ext4sb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ext4sb e;
	if (ext4sb_parse(data, size, &e) == 0 &&
	    (e.free_blocks > e.blocks || e.block_size < 1024 || e.block_size > 65536 || e.blocks >> 48))
		abort();
	return 0;
}
