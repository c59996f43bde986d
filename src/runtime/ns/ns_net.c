/* ns_net.c — the box's one network interface for the ns backend: a TAP device "eth0" created
 * by the box's first process inside the box's own network namespace, whose fd is handed to
 * the supervisor's userspace network stack. The box can reach nothing but that stack: the
 * namespace has no other interface, and when the supervisor exits the fd closes and the
 * interface carries nothing (fail closed). Child side only (no malloc, see ns.h), except
 * ns_net_recv_tap. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "net/vnet_if.h"
#include "runtime/ns/ns.h"

/* child: the TAP in this (the box's) network namespace. TUNSETIFF checks CAP_NET_ADMIN over
 * the namespace the fd was opened in, which is the box's own: nothing on the host changes. */
static int open_tap(struct ns_report *rep)
{
	struct ifreq ifr = {0};
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return ns_fail(rep, NS_LAYER_NET, errno, "cannot open /dev/net/tun");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", VNET_BOX_IFNAME);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int e = errno;
		close(fd);
		return ns_fail(rep, NS_LAYER_NET, e, "cannot create the TAP device " VNET_BOX_IFNAME);
	}
	return fd;
}

/* child: address, netmask, up, default route, and the MTU libslirp runs with (vnet.h: the
 * box's TCP then sends 64 KiB segments, one frame where 1,500 bytes would take 44) — all on
 * the box's own interface, in its own namespace, through one socket. */
static int configure(struct ns_report *rep)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ns_fail(rep, NS_LAYER_NET, errno, "cannot open a socket to configure " VNET_BOX_IFNAME);
	int r = vnet_if_configure(s);
	if (r < 0)
		return ns_fail(rep, NS_LAYER_NET, -r, "cannot configure " VNET_BOX_IFNAME);
	struct ifreq ifr = {.ifr_mtu = VNET_MTU};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", VNET_BOX_IFNAME);
	if (ioctl(s, SIOCSIFMTU, &ifr) < 0)
		return ns_fail(rep, NS_LAYER_NET, errno, "cannot set the MTU of " VNET_BOX_IFNAME);
	return 0;
}

/* child: the explicit proxy's listening socket, made in the box's own network namespace so
 * that a tool honouring HTTP(S)_PROXY reaches the supervisor over the box's kernel loopback
 * rather than through the userspace stack (no TAP frames, no libslirp copies). The proxy's
 * address is given to "lo" as a /32 alias, which makes it local to the box: nothing about the
 * box's reach changes (the address was the proxy's already; the supervisor judges every request
 * on it exactly as before). The box keeps no handle on the socket and, without CAP_NET_ADMIN
 * after become_box_user, cannot take the address away from anyone but itself; it cannot bind
 * the port again either (no SO_REUSEPORT). */
static int open_proxy(struct ns_report *rep)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ns_fail(rep, NS_LAYER_NET, errno, "cannot open a socket to configure lo");
	/* a label makes a second address, not a replacement of 127.0.0.1; SIOCSIFADDR gives it the
	 * classful /24 first, narrowed to /32 at once (nothing runs in the namespace yet). lo is
	 * still down here (uts_and_net brings it up): the address's local route, all bind() needs,
	 * is made regardless */
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo:proxy");
	vnet_if_sin(&ifr.ifr_addr, VNET_PROXY);
	int r = ioctl(s, SIOCSIFADDR, &ifr);
	vnet_if_sin(&ifr.ifr_netmask, 0xffffffffu);
	if (r == 0)
		r = ioctl(s, SIOCSIFNETMASK, &ifr);
	if (r < 0)
		return ns_fail(rep, NS_LAYER_NET, errno, "cannot give lo the proxy's address");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return ns_fail(rep, NS_LAYER_NET, errno, "cannot open the proxy's socket");
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(VNET_PROXY_PORT),
				 .sin_addr.s_addr = htonl(VNET_PROXY)};
	/* the same deep backlog as the supervisor's other listeners: it accepts each round */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0) {
		int e = errno;
		close(fd);
		return ns_fail(rep, NS_LAYER_NET, e, "cannot listen on the proxy's address");
	}
	return fd;
}

/* child: one message carrying the fd; the buffers are on the stack. -errno on failure. */
static int send_fd(int sock, int fd)
{
	char byte = 'n';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int ns_net_tap(const struct ns_plan *p, struct ns_report *rep)
{
	if (!p->network)
		return 0;
	if (ns_injected(p, NS_LAYER_NET))
		return ns_fail(rep, NS_LAYER_NET, EPERM, "cannot create the TAP device (injected failure)");
	int fd = open_tap(rep);
	if (fd < 0)
		return -1;
	int r = configure(rep);
	if (r == 0 && (r = send_fd(p->sync_fd, fd)) < 0)
		r = ns_fail(rep, NS_LAYER_NET, -r, "cannot hand the TAP device to the supervisor");
	/* the box keeps no handle on its own interface: only the supervisor holds the fd */
	close(fd);
	if (r < 0)
		return r;
	fd = open_proxy(rep);
	if (fd < 0)
		return -1;
	if ((r = send_fd(p->sync_fd, fd)) < 0)
		r = ns_fail(rep, NS_LAYER_NET, -r, "cannot hand the proxy's socket to the supervisor");
	close(fd);
	return r;
}

static int recv_fd(int sock, int *ret_fd)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&m) : NULL;
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EPROTO;
	memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	return 0;
}

int ns_net_recv_tap(int sock, int *ret_fd, int *ret_proxy_fd, pd_err *err)
{
	if (recv_fd(sock, ret_fd) < 0)
		return pd_error_msg(err, EPROTO, "the box's first process did not hand over its network interface");
	if (recv_fd(sock, ret_proxy_fd) < 0)
		return pd_error_msg(err, EPROTO, "the box's first process did not hand over the proxy's socket");
	return 0;
}

int ns_ws_send(const struct ns_plan *p, struct ns_report *rep)
{
	if (!p->ws_fd_wanted)
		return 0;
	int fd = open("/workspace", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r = fd < 0 ? -errno : send_fd(p->sync_fd, fd);
	if (fd >= 0)
		close(fd);
	return r < 0 ? ns_fail(rep, NS_LAYER_MOUNT, -r, "cannot hand /workspace to the supervisor") : 0;
}

int ns_ws_recv(int sock, int *ret_fd, pd_err *err)
{
	if (recv_fd(sock, ret_fd) < 0)
		return pd_error_msg(err, EPROTO, "the box's first process did not hand over its /workspace");
	return 0;
}
