/* fuzz-vmboot.c — libFuzzer target over stage 1's parsers (src/guest/vmboot.c): the kernel
 * command line and the resume frame's payload. The first byte picks which. */
#include "guest/vmboot.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		struct vmboot_resume r;
		if (vmboot_parse_resume(data + 1, size - 1, &r) == 0 && strlen(r.hostname) >= sizeof(r.hostname))
			abort();
		return 0;
	}
	char *text = xstrndup((const char *)data + 1, size - 1);
	struct vmboot_cmdline c;
	vmboot_parse_cmdline(text, &c);
	if (strlen(c.hostname) >= sizeof(c.hostname) || strlen(c.root) >= sizeof(c.root))
		abort();
	free(text);
	return 0;
}
