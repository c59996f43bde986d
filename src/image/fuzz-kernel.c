/* fuzz-kernel.c — libFuzzer target over everything that parses kernel package bytes: the
 * bzImage setup header and payload (decompressed too, the output is capped by the appended
 * size), the ELF PVH note walk and trim, and the module .modinfo reader. */
#include "image/kernel.h"
#include "image/kernel_modules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kernel_payload p;
	if (kernel_bzimage_payload(data, size, &p) == 0 && p.out_size <= (1u << 20)) {
		uint8_t *out;
		size_t len;
		if (kernel_decompress(&p, &out, &len) == 0)
			free(out);
	}
	int pvh = kernel_elf_has_pvh(data, size);
	/* a trimmed ELF says the same about its PVH note; a refused one is unchanged */
	uint8_t *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	int r = kernel_elf_trim(copy, size);
	if ((r == 0 && pvh >= 0 && kernel_elf_has_pvh(copy, size) != pvh) || (r < 0 && memcmp(copy, data, size) != 0))
		abort();
	free(copy);
	if (kmod_strip_signature(data, size) > size)
		abort();
	char *v;
	if (kmod_modinfo_get(data, size, "depends", &v) == 0) {
		char **deps;
		if (kmod_split_depends(v, &deps) == 0)
			strv_free(deps);
		free(v);
	}
	return 0;
}
