/* frame.h — the box's Ethernet frames as the supervisor sees them: what is this frame, and the
 * two replies the supervisor builds itself (a DNS answer over UDP, a TCP RST).
 *
 * Every frame comes from the box and is hostile: the classifier checks each length against its
 * container (Ethernet, IPv4 header and total length, UDP length, TCP data offset), refuses IPv4
 * options beyond the header length, fragments and anything it does not name, and never reads
 * past len. The builders compute the IPv4 header checksum and the UDP/TCP checksums over the
 * pseudo-header. Pure: no I/O, no allocation. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAME_ETH_HDR 14
#define FRAME_MAX 65534                  /* Ethernet header + VNET_MTU (65520) */
#define FRAME_ETHERTYPE_IPV4 0x0800
#define FRAME_ETHERTYPE_ARP 0x0806

#define FRAME_TCP_FIN 0x01
#define FRAME_TCP_SYN 0x02
#define FRAME_TCP_RST 0x04
#define FRAME_TCP_ACK 0x10

enum frame_kind {
	FRAME_INVALID = 0,
	FRAME_ARP,       /* for libslirp */
	FRAME_UDP,       /* IPv4 UDP, unfragmented */
	FRAME_TCP,       /* IPv4 TCP, unfragmented */
	FRAME_OTHER,     /* IPv6, ICMP, other protocols, fragments, other ethertypes: dropped */
	FRAME_MALFORMED, /* lengths that do not add up: dropped */
	FRAME_KIND_MAX,
};

struct frame_info {
	enum frame_kind kind;
	uint8_t dst_mac[6], src_mac[6];
	uint32_t src_ip, dst_ip;   /* host byte order */
	uint16_t src_port, dst_port;
	uint8_t tcp_flags;
	uint32_t tcp_seq, tcp_ack;
	const uint8_t *payload;    /* UDP/TCP payload inside the frame */
	size_t payload_len;
};

enum frame_kind frame_classify(const uint8_t *buf, size_t len, struct frame_info *ret);
const char *frame_kind_str(enum frame_kind k);

/* An IPv4 UDP frame answering req (addresses and ports swapped, our MAC as src_mac) carrying
 * payload. Returns the frame length, or 0 if it does not fit in cap / FRAME_MAX. */
size_t frame_build_udp_reply(const struct frame_info *req, const uint8_t our_mac[6],
			     const uint8_t *payload, size_t len, uint8_t *out, size_t cap);
/* The RST a closed port sends for the segment seg (RFC 793: for a SYN, RST|ACK with
 * ack = seq + 1 + data; else RST with seq = the segment's ack). 0 for a RST (never answered). */
size_t frame_build_tcp_rst(const struct frame_info *seg, const uint8_t our_mac[6], uint8_t *out, size_t cap);

/* The Internet checksum (RFC 1071) of buf, folded, starting from sum. */
uint16_t frame_csum(const uint8_t *buf, size_t len, uint32_t sum);
