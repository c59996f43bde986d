/* frame.c — classify the box's Ethernet frames and build the replies we answer ourselves. */
#include <string.h>

#include "net/frame.h"

#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define IPV4_HDR 20
#define UDP_HDR 8
#define TCP_HDR 20

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }

static uint32_t csum_add(const uint8_t *buf, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(buf + i);
	if (len & 1)
		sum += (uint32_t)buf[len - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t frame_csum(const uint8_t *buf, size_t len, uint32_t sum)
{
	return csum_fold(csum_add(buf, len, sum));
}

static enum frame_kind classify_l4(const uint8_t *l4, size_t l4len, uint8_t proto, struct frame_info *f)
{
	if (proto == IP_PROTO_UDP) {
		if (l4len < UDP_HDR || get16(l4 + 4) < UDP_HDR || get16(l4 + 4) > l4len)
			return FRAME_MALFORMED;
		f->src_port = get16(l4);
		f->dst_port = get16(l4 + 2);
		f->payload = l4 + UDP_HDR;
		f->payload_len = get16(l4 + 4) - UDP_HDR;
		return FRAME_UDP;
	}
	if (proto == IP_PROTO_TCP) {
		size_t off = l4len >= TCP_HDR ? (size_t)(l4[12] >> 4) * 4 : 0;
		if (off < TCP_HDR || off > l4len)
			return FRAME_MALFORMED;
		f->src_port = get16(l4);
		f->dst_port = get16(l4 + 2);
		f->tcp_seq = get32(l4 + 4);
		f->tcp_ack = get32(l4 + 8);
		f->tcp_flags = l4[13];
		f->payload = l4 + off;
		f->payload_len = l4len - off;
		return FRAME_TCP;
	}
	return FRAME_OTHER;
}

static enum frame_kind classify_ipv4(const uint8_t *ip, size_t len, struct frame_info *f)
{
	if (len < IPV4_HDR || (ip[0] >> 4) != 4)
		return FRAME_MALFORMED;
	size_t ihl = (size_t)(ip[0] & 0x0f) * 4, tot = get16(ip + 2);
	if (ihl < IPV4_HDR || tot < ihl || tot > len)
		return FRAME_MALFORMED;
	f->src_ip = get32(ip + 12);
	f->dst_ip = get32(ip + 16);
	/* MF set or a fragment offset: fragments are never reassembled, only dropped */
	if (get16(ip + 6) & 0x3fff)
		return FRAME_OTHER;
	return classify_l4(ip + ihl, tot - ihl, ip[9], f);
}

enum frame_kind frame_classify(const uint8_t *buf, size_t len, struct frame_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (len < FRAME_ETH_HDR || len > FRAME_MAX + 4)
		return ret->kind = FRAME_MALFORMED;
	memcpy(ret->dst_mac, buf, 6);
	memcpy(ret->src_mac, buf + 6, 6);
	uint16_t type = get16(buf + 12);
	if (type == FRAME_ETHERTYPE_ARP)
		return ret->kind = FRAME_ARP;
	if (type != FRAME_ETHERTYPE_IPV4)
		return ret->kind = FRAME_OTHER;
	return ret->kind = classify_ipv4(buf + FRAME_ETH_HDR, len - FRAME_ETH_HDR, ret);
}

const char *frame_kind_str(enum frame_kind k)
{
	static const char *const n[FRAME_KIND_MAX] = {"invalid", "arp", "udp", "tcp", "other", "malformed"};
	return k > FRAME_INVALID && k < FRAME_KIND_MAX ? n[k] : "invalid";
}

/* Ethernet + IPv4 headers of a reply to req carrying l4len bytes of protocol proto. */
static void put_headers(const struct frame_info *req, const uint8_t our_mac[6], uint8_t proto, size_t l4len, uint8_t *out)
{
	memcpy(out, req->src_mac, 6);
	memcpy(out + 6, our_mac, 6);
	put16(out + 12, FRAME_ETHERTYPE_IPV4);
	uint8_t *ip = out + FRAME_ETH_HDR;
	memset(ip, 0, IPV4_HDR);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IPV4_HDR + l4len));
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = proto;
	put32(ip + 12, req->dst_ip);
	put32(ip + 16, req->src_ip);
	put16(ip + 10, frame_csum(ip, IPV4_HDR, 0));
}

/* The pseudo-header sum of an IPv4 reply: our (req's destination) and req's source address. */
static uint32_t pseudo_sum(const struct frame_info *req, uint8_t proto, size_t l4len)
{
	uint8_t ph[12];
	put32(ph, req->dst_ip);
	put32(ph + 4, req->src_ip);
	ph[8] = 0;
	ph[9] = proto;
	put16(ph + 10, (uint16_t)l4len);
	return csum_add(ph, sizeof(ph), 0);
}

size_t frame_build_udp_reply(const struct frame_info *req, const uint8_t our_mac[6],
			     const uint8_t *payload, size_t len, uint8_t *out, size_t cap)
{
	size_t l4len = UDP_HDR + len, total = FRAME_ETH_HDR + IPV4_HDR + l4len;
	if (total > cap || total > FRAME_MAX)
		return 0;
	put_headers(req, our_mac, IP_PROTO_UDP, l4len, out);
	uint8_t *u = out + FRAME_ETH_HDR + IPV4_HDR;
	put16(u, req->dst_port);
	put16(u + 2, req->src_port);
	put16(u + 4, (uint16_t)l4len);
	put16(u + 6, 0);
	if (len)
		memcpy(u + UDP_HDR, payload, len);
	uint16_t c = frame_csum(u, l4len, pseudo_sum(req, IP_PROTO_UDP, l4len));
	put16(u + 6, c ? c : 0xffff);
	return total;
}

size_t frame_build_tcp_rst(const struct frame_info *seg, const uint8_t our_mac[6], uint8_t *out, size_t cap)
{
	size_t total = FRAME_ETH_HDR + IPV4_HDR + TCP_HDR;
	if (seg->kind != FRAME_TCP || (seg->tcp_flags & FRAME_TCP_RST) || total > cap)
		return 0;
	put_headers(seg, our_mac, IP_PROTO_TCP, TCP_HDR, out);
	uint8_t *t = out + FRAME_ETH_HDR + IPV4_HDR;
	memset(t, 0, TCP_HDR);
	put16(t, seg->dst_port);
	put16(t + 2, seg->src_port);
	if (seg->tcp_flags & FRAME_TCP_ACK) {
		put32(t + 4, seg->tcp_ack);
		t[13] = FRAME_TCP_RST;
	} else {
		uint32_t ack = seg->tcp_seq + (uint32_t)seg->payload_len;
		ack += (seg->tcp_flags & FRAME_TCP_SYN) ? 1 : 0;
		ack += (seg->tcp_flags & FRAME_TCP_FIN) ? 1 : 0;
		put32(t + 8, ack);
		t[13] = FRAME_TCP_RST | FRAME_TCP_ACK;
	}
	t[12] = (TCP_HDR / 4) << 4;
	put16(t + 16, frame_csum(t, TCP_HDR, pseudo_sum(seg, IP_PROTO_TCP, TCP_HDR)));
	return total;
}
