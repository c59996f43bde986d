/* vnet.h — the fixed addressing of every box's virtual network (one per box, all alike).
 *
 *   box eth0     198.19.0.100/16, default route via the gateway
 *   gateway      198.19.0.1   (libslirp's vhost: the box's default route)
 *   proxy        198.19.0.2:3128 (the explicit proxy)
 *   DNS          198.19.0.3   (answered by the supervisor, UDP and TCP 53)
 *   The proxy (on the vm backend; ns listens on it inside the box, see ns_net.c) and TCP DNS
 *   are libslirp forwards (slirp_add_unix), which libslirp refuses on
 *   its own vhost and vnameserver addresses, hence their own addresses; libslirp's
 *   vnameserver is set to an address nothing uses (198.19.0.254) and its DNS is disabled.
 *   fake-IP pool 198.18.0.0/16 (fakeip.h; reached through the gateway)
 *   libslirp's vnetwork is 198.18.0.0/15 so that every fake IP lies inside it: libslirp only
 *   treats a forward (slirp_add_unix) as local when its address is inside vnetwork; outside
 *   it, a restricted stack would connect() to the real address.
 * Everything is in 198.18.0.0/15 (RFC 2544, never routed on the internet). Host byte order. */
#pragma once

#define VNET_NETWORK 0xc6120000u  /* 198.18.0.0 */
#define VNET_NETMASK 0xfffe0000u  /* /15, libslirp's view */
#define VNET_FAKE_NET 0xc6120000u /* 198.18.0.0/16 */
#define VNET_GATEWAY 0xc6130001u  /* 198.19.0.1 */
#define VNET_PROXY 0xc6130002u    /* 198.19.0.2 */
#define VNET_DNS 0xc6130003u      /* 198.19.0.3 */
#define VNET_SLIRP_NAMESERVER 0xc61300feu /* 198.19.0.254: unused, libslirp DNS disabled */
#define VNET_BOX 0xc6130064u      /* 198.19.0.100 */
#define VNET_BOX_MASK 0xffff0000u /* /16, the box's view: fake IPs go via the gateway */
#define VNET_PROXY_PORT 3128
#define VNET_DNS_PORT 53
/* libslirp's largest (IF_MTU_MAX 65521 less one, as slirp4netns uses): the box's TCP sends
 * 64 KiB segments, one TAP write and one libslirp input per 64 KiB instead of per 1.5 KiB.
 * A peer with a smaller MTU (a vm guest at 1500) is fine: libslirp clamps to its MSS. */
#define VNET_MTU 65520
#define VNET_BOX_IFNAME "eth0"
#define VNET_DNS_STR "198.19.0.3"
#define VNET_PROXY_URL "http://198.19.0.2:3128"
