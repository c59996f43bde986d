/* fuzz-frame.c — libFuzzer target over the frame parser and every payload decoder. */
#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_frame f;
	size_t used;
	/* a requester's accounting over the whole input, as the frames come */
	struct proto_flow fl = {.on = true, .out_credit = {PROTO_FLOW_WINDOW, PROTO_FLOW_WINDOW}};
	while (size > 0 && proto_parse(data, size, &f, &used) == 1) {
		struct proto_exec *e = xmalloc(sizeof(*e));
		uint16_t a, b;
		uint32_t u;
		uint8_t fd;
		int en;
		const char *msg;
		if (proto_decode_exec(&f, e) == 0)
			for (size_t i = 0; i < e->argc; i++)
				(void)strlen(e->argv[i]);
		(void)proto_decode_hello(&f, &a, &b);
		(void)proto_decode_resize(&f, &a, &b);
		(void)proto_decode_u32(&f, &u);
		(void)proto_check_input(&f);
		(void)proto_decode_window(&f, &fd, &u);
		(void)proto_flow_recv(&fl, &f);
		if (proto_decode_error(&f, &en, &msg) == 0)
			(void)strlen(msg);
		free(e);
		data += used;
		size -= used;
	}
	return 0;
}
