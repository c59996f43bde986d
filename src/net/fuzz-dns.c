/* fuzz-dns.c — libFuzzer target over the DNS responder and the TCP framing. Invariants: an
 * answer fits in DNS_ANSWER_MAX, echoes the id, is a response, and an A record is only ever
 * handed out for a name the policy allows. */
#include <assert.h>

#include "net/dns.h"
#include "net/fakeip.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct egress_policy *policy;
static struct fakeip_pool *pool;
static uint64_t clock_s;

static int fake_ip(void *opaque, const char *canon, struct in_addr *ret)
{
	assert(egress_policy_name_allowed(policy, canon, NULL));
	return fakeip_assign(opaque, canon, clock_s++, ret);
}

static void init(void)
{
	if (policy)
		return;
	policy = egress_policy_new();
	(void)egress_policy_add(policy, "allowed.com", false, NULL);
	(void)egress_policy_add(policy, "*.allowed.org", false, NULL);
	(void)egress_policy_add(policy, "!bad.allowed.org", false, NULL);
	(void)egress_policy_add(policy, "a", false, NULL);
	(void)fakeip_pool_new((struct in_addr){htonl(FAKEIP_NET_DEFAULT)}, 64, 1, &pool);
}

static void one(const uint8_t *m, size_t n)
{
	struct dns_ctx ctx = {.policy = policy, .fake_ip = fake_ip, .opaque = pool};
	uint8_t out[DNS_ANSWER_MAX];
	size_t len = 0;
	struct dns_event ev;
	int r = dns_answer(m, n, &ctx, out, sizeof(out), &len, &ev);
	assert(r == 0 || r == -EBADMSG);
	assert(ev.rule && strlen(ev.name) < sizeof(ev.name));
	if (r < 0)
		return;
	assert(len >= DNS_HDR_LEN && len <= DNS_ANSWER_MAX);
	assert(out[0] == m[0] && out[1] == m[1] && (out[2] & 0x80));
	if (ev.verdict == EGRESS_ALLOW)
		assert(egress_policy_name_allowed(policy, ev.name, NULL));
	(void)dns_rcode_str(ev.rcode);
	(void)dns_qtype_str(ev.qtype);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	init();
	one(data, size);
	/* the same bytes as a DNS-over-TCP stream */
	const uint8_t *msg;
	size_t mlen;
	int used;
	while ((used = dns_tcp_next(data, size, &msg, &mlen)) > 0) {
		one(msg, mlen);
		data += used;
		size -= (size_t)used;
	}
	return 0;
}
