/* fuzz-apt-sources.c — libFuzzer target over apt source parsing (img_apt_hosts_parse): an
 * image's /etc/apt/sources.list* decide what a profile build may reach. Invariants: every
 * host is a non-empty lower-case DNS name of letters, digits, '-' and '.', at most 253 bytes,
 * and appears once. */
#include <assert.h>
#include <ctype.h>

#include "image/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	_cleanup_strv_ char **h = img_apt_hosts_parse((const char *)data, size, NULL);
	for (size_t i = 0; h && h[i]; i++) {
		size_t n = strlen(h[i]);
		assert(n > 0 && n <= 253);
		for (const char *c = h[i]; *c; c++)
			assert(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '-' || *c == '.');
		for (size_t j = 0; j < i; j++)
			assert(!streq(h[i], h[j]));
	}
	return 0;
}
