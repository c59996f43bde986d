/* fuzz-policy.c — libFuzzer target over name canonicalisation, rule parsing, the policy text
 * format and matching. Invariants: a canonical name is a fixed point of canonicalisation, and
 * format() of a parsed policy parses back to the same text. */
#include <assert.h>

#include "egress/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_name(const char *s, size_t n)
{
	char out[EGRESS_NAME_MAX + 1], again[EGRESS_NAME_MAX + 1];
	int r = egress_name_canon_n(s, n, out, sizeof(out));
	if (r < 0)
		return;
	assert((size_t)r == strlen(out) && r <= EGRESS_NAME_MAX);
	assert(egress_name_canon(out, again, sizeof(again)) == r);
	assert(streq(out, again));
	assert(!egress_name_is_ip_literal(out, (size_t)r));
}

static void fuzz_policy_text(const char *s, size_t n)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	if (egress_policy_parse(p, s, n, "fuzz", NULL) < 0)
		return;
	_cleanup_free_ char *text = egress_policy_format(p);
	_cleanup_policy_ struct egress_policy *q = egress_policy_new();
	int r = egress_policy_parse(q, text, strlen(text), "again", NULL);
	assert(r == 0);
	_cleanup_free_ char *text2 = egress_policy_format(q);
	assert(streq(text, text2));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	const char *s = (const char *)data;
	fuzz_name(s, size);
	fuzz_policy_text(s, size);

	/* the first line as a rule, matched against the rest split in names */
	_cleanup_free_ char *rule = xstrndup(s, size);
	char *nl = strchr(rule, '\n');
	const char *rest = "";
	if (nl) {
		*nl = '\0';
		rest = nl + 1;
	}
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	(void)egress_policy_add(p, rule, false, NULL);
	(void)egress_policy_add(p, "!deny.example", false, NULL);
	char canon[EGRESS_NAME_MAX + 1];
	if (egress_name_canon(rest, canon, sizeof(canon)) >= 0) {
		const char *why = NULL;
		enum egress_verdict v = egress_policy_check(p, canon, 443, &why);
		assert(why && (v == EGRESS_ALLOW || v == EGRESS_DENY));
		(void)egress_policy_name_allowed(p, canon, &why);
	}
	(void)egress_policy_check(p, rest, 443, NULL);
	return 0;
}
