/* fuzz-kernel.c — libFuzzer target over everything that parses kernel package bytes: the
 * bzImage setup header and payload (decompressed too, the output is capped by the appended
 * size), the ELF PVH note walk and the module .modinfo reader. */
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
	(void)kernel_elf_has_pvh(data, size);
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
