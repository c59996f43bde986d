/* fuzz-subid.c — /etc/subuid parsing, id-file overlap checks and uid_map read-back. */
#include "runtime/ns/ns.h"
#include "runtime/ns/ns_idmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ns_subid_range r;
	struct ns_idmap m;
	struct ns_subid_range sub = {100000, 65536};
	char *text = xmalloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	ns_subid_find(text, size, "alice", 1000, &r);
	ns_subid_find(text, size, NULL, 0, &r);
	ns_subid_overlaps(text, size, NS_HOST_ROOT_BASE, NS_MAP_SPAN);
	ns_idfile_overlaps(text, size, NS_HOST_ROOT_BASE, NS_MAP_SPAN);
	ns_idmap_build(1000, false, &sub, &m);
	ns_idmap_matches(&m, text);
	free(text);
	return 0;
}
