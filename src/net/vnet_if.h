/* vnet_if.h — gives a box's one network interface its fixed addressing (vnet.h): address,
 * netmask, up, default route via the gateway. Shared by the ns backend (run in the box's first
 * process, where nothing may allocate) and the vm guest's stage 1 (src/guest/vmboot.c, built
 * into the static paddock-init), hence a header: no library either side would need to link.
 *
 * Whatever a box does to this configuration cannot widen its reach: the other end of the
 * interface is the supervisor's network stack, which decides what every frame may reach. */
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <net/route.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "net/vnet.h"

static inline void vnet_if_sin(struct sockaddr *sa, uint32_t host_order)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(host_order)};
	memcpy(sa, &in, sizeof(in));
}

/* sock: any AF_INET socket of the box's network namespace (or guest). -errno on failure. */
static inline int vnet_if_configure(int sock)
{
	struct ifreq ifr;
	struct rtentry rt;
	memset(&ifr, 0, sizeof(ifr));
	memset(&rt, 0, sizeof(rt));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", VNET_BOX_IFNAME);
	vnet_if_sin(&ifr.ifr_addr, VNET_BOX);
	int r = ioctl(sock, SIOCSIFADDR, &ifr);
	vnet_if_sin(&ifr.ifr_netmask, VNET_BOX_MASK);
	if (r == 0)
		r = ioctl(sock, SIOCSIFNETMASK, &ifr);
	if (r == 0)
		r = ioctl(sock, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (r == 0)
		r = ioctl(sock, SIOCSIFFLAGS, &ifr);
	vnet_if_sin(&rt.rt_dst, 0);
	vnet_if_sin(&rt.rt_genmask, 0);
	vnet_if_sin(&rt.rt_gateway, VNET_GATEWAY);
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	if (r == 0)
		r = ioctl(sock, SIOCADDRT, &rt);
	return r < 0 ? -errno : 0;
}
