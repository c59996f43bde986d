/* fuzz-frame.c — frame_classify and the reply builders on arbitrary frames. */
#include <stdint.h>
#include <stdlib.h>

#include "net/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame_info f;
	uint8_t out[FRAME_MAX], mac[6] = {0x52, 0x55, 1, 2, 3, 4};
	enum frame_kind k = frame_classify(data, size, &f);
	if (k == FRAME_UDP) {
		if (f.payload + f.payload_len > data + size)
			abort();
		frame_build_udp_reply(&f, mac, f.payload, f.payload_len, out, sizeof(out));
	}
	if (k == FRAME_TCP) {
		if (f.payload + f.payload_len > data + size)
			abort();
		frame_build_tcp_rst(&f, mac, out, sizeof(out));
	}
	return 0;
}
