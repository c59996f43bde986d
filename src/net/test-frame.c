/* test-frame.c — the frame classifier and the reply builders (checksums verified by
 * recomputing them over the result). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "net/frame.h"

static const uint8_t box_mac[6] = {2, 0, 0, 0, 0, 1}, our_mac[6] = {0x52, 0x55, 0xc6, 0x13, 0, 3};

/* An Ethernet+IPv4 frame from 198.19.0.100:sport to dst:dport of protocol proto. */
static size_t make(uint8_t *f, uint8_t proto, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t flags,
		   const char *payload)
{
	size_t pl = strlen(payload), l4 = (proto == 17 ? 8 : 20) + pl;
	memset(f, 0, 100 + pl);
	memcpy(f, our_mac, 6);
	memcpy(f + 6, box_mac, 6);
	f[12] = 8;
	uint8_t *ip = f + 14;
	ip[0] = 0x45;
	ip[2] = (uint8_t)((20 + l4) >> 8);
	ip[3] = (uint8_t)(20 + l4);
	ip[8] = 64;
	ip[9] = proto;
	ip[12] = 198, ip[13] = 19, ip[14] = 0, ip[15] = 100;
	ip[16] = (uint8_t)(dst >> 24), ip[17] = (uint8_t)(dst >> 16), ip[18] = (uint8_t)(dst >> 8), ip[19] = (uint8_t)dst;
	uint8_t *l = ip + 20;
	l[0] = (uint8_t)(sport >> 8), l[1] = (uint8_t)sport, l[2] = (uint8_t)(dport >> 8), l[3] = (uint8_t)dport;
	if (proto == 17) {
		l[4] = (uint8_t)(l4 >> 8), l[5] = (uint8_t)l4;
		memcpy(l + 8, payload, pl);
	} else {
		l[4] = 0, l[5] = 0, l[6] = 0x10, l[7] = 0; /* seq 0x1000 */
		l[12] = 5 << 4;
		l[13] = flags;
		memcpy(l + 20, payload, pl);
	}
	return 14 + 20 + l4;
}

static void test_classify(void **state)
{
	(void)state;
	uint8_t f[200];
	struct frame_info i;
	size_t n = make(f, 17, 0xc6130003u, 5000, 53, 0, "query");
	assert_int_equal(frame_classify(f, n, &i), FRAME_UDP);
	assert_int_equal(i.dst_ip, 0xc6130003u);
	assert_int_equal(i.dst_port, 53);
	assert_int_equal(i.payload_len, 5);
	assert_memory_equal(i.payload, "query", 5);
	n = make(f, 6, 0xc6120001u, 40000, 443, FRAME_TCP_SYN, "");
	assert_int_equal(frame_classify(f, n, &i), FRAME_TCP);
	assert_int_equal(i.tcp_flags, FRAME_TCP_SYN);
	assert_int_equal(i.tcp_seq, 0x1000);
	/* truncated: IPv4 total length beyond the frame */
	assert_int_equal(frame_classify(f, n - 1, &i), FRAME_MALFORMED);
	assert_int_equal(frame_classify(f, 10, &i), FRAME_MALFORMED);
	/* ICMP and fragments are "other" */
	n = make(f, 1, 0xc6130001u, 0, 0, 0, "");
	assert_int_equal(frame_classify(f, n, &i), FRAME_OTHER);
	n = make(f, 17, 0xc6130003u, 5000, 53, 0, "x");
	f[14 + 6] = 0x20; /* MF */
	assert_int_equal(frame_classify(f, n, &i), FRAME_OTHER);
	f[12] = 0x86, f[13] = 0xdd; /* IPv6 */
	assert_int_equal(frame_classify(f, n, &i), FRAME_OTHER);
	f[12] = 0x08, f[13] = 0x06;
	assert_int_equal(frame_classify(f, n, &i), FRAME_ARP);
}

static void test_udp_reply(void **state)
{
	(void)state;
	uint8_t f[200], out[FRAME_MAX];
	struct frame_info i, o;
	size_t n = make(f, 17, 0xc6130003u, 5000, 53, 0, "q");
	frame_classify(f, n, &i);
	size_t m = frame_build_udp_reply(&i, our_mac, (const uint8_t *)"answer", 6, out, sizeof(out));
	assert_int_equal(m, 14 + 20 + 8 + 6);
	assert_int_equal(frame_classify(out, m, &o), FRAME_UDP);
	assert_memory_equal(out, box_mac, 6);
	assert_int_equal(o.src_ip, 0xc6130003u);
	assert_int_equal(o.dst_ip, 0xc6130064u);
	assert_int_equal(o.src_port, 53);
	assert_int_equal(o.dst_port, 5000);
	assert_int_equal(frame_csum(out + 14, 20, 0), 0); /* IPv4 header checksum verifies */
	/* UDP checksum over the pseudo-header verifies to 0 */
	uint8_t ph[12] = {198, 19, 0, 3, 198, 19, 0, 100, 0, 17, 0, 14};
	uint32_t s = 0;
	for (int k = 0; k < 12; k += 2)
		s += (uint32_t)(ph[k] << 8 | ph[k + 1]);
	assert_int_equal(frame_csum(out + 34, 14, s), 0);
	/* too big for cap, and too big for any frame */
	assert_int_equal(frame_build_udp_reply(&i, our_mac, out, 1500, out, 1500), 0);
	assert_int_equal(frame_build_udp_reply(&i, our_mac, out, FRAME_MAX - 41, out, sizeof(out)), 0);
}

static void test_rst(void **state)
{
	(void)state;
	uint8_t f[200], out[128];
	struct frame_info i, o;
	size_t n = make(f, 6, 0x7f000001u, 40000, 22, FRAME_TCP_SYN, "");
	frame_classify(f, n, &i);
	size_t m = frame_build_tcp_rst(&i, our_mac, out, sizeof(out));
	assert_int_equal(m, 54);
	assert_int_equal(frame_classify(out, m, &o), FRAME_TCP);
	assert_int_equal(o.tcp_flags, FRAME_TCP_RST | FRAME_TCP_ACK);
	assert_int_equal(o.tcp_ack, 0x1001);
	assert_int_equal(o.src_port, 22);
	assert_int_equal(frame_csum(out + 14, 20, 0), 0);
	uint8_t ph[12] = {127, 0, 0, 1, 198, 19, 0, 100, 0, 6, 0, 20};
	uint32_t s = 0;
	for (int k = 0; k < 12; k += 2)
		s += (uint32_t)(ph[k] << 8 | ph[k + 1]);
	assert_int_equal(frame_csum(out + 34, 20, s), 0);
	/* never answer a RST */
	n = make(f, 6, 0x7f000001u, 40000, 22, FRAME_TCP_RST, "");
	frame_classify(f, n, &i);
	assert_int_equal(frame_build_tcp_rst(&i, our_mac, out, sizeof(out)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_udp_reply),
		cmocka_unit_test(test_rst),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
