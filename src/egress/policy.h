/* policy.h — the egress policy matcher: may this box reach host H on port P?
 *
 * A policy is a list of rules; each rule allows or denies, and deny beats allow whatever the
 * order. Nothing matches by default (default deny). Rule syntax (RULE below):
 *
 *     [!]NAME[:PORT]
 *     NAME  = host        exactly this canonical name
 *           | *.suffix    any name strictly below suffix (a.suffix, a.b.suffix), NOT suffix
 *           | .suffix     the same (both spellings are accepted; "*.suffix" is the one printed)
 *           | *           any public name (the `open` preset): at least two labels and not
 *                         under a special-use domain (localhost, local, internal, arpa, ...)
 *     PORT  = 1..65535 | *        (absent: 80 and 443; "*": every port)
 *     "!"   = this rule denies (same as passing deny=true / writing "deny RULE" in a file).
 *
 * Names are canonicalised with egress_name_canon() (name.h), so case and one trailing dot do
 * not matter, IDNs must be A-labels, and IP literals are refused as rules. Matching is exact
 * byte equality of canonical names; suffixes match only at a label boundary
 * ("evilallowed.com" is not under "*.allowed.com", "allowed.com.evil" is not "allowed.com").
 *
 * Policy text files: one directive a line, '#' starts a comment:
 *     allow RULE | deny RULE | preset NAME
 * Errors carry file:line:col.
 *
 * Presets (egress_policy_preset): `none` adds nothing, `balanced` adds model APIs, package
 * registries and code hosts (docs/egress-policy.md lists them), `open` adds "*:*".
 * Pure: no I/O; a policy is not thread-safe, callers swap whole policies for live changes. */
#pragma once

#include <stdint.h>

#include "egress/name.h"
#include "util/error.h"

#define EGRESS_RULE_MAX 4096       /* rules per policy */
#define EGRESS_RULE_TEXT_MAX 300   /* bytes of one rule as written */
#define EGRESS_POLICY_TEXT_MAX (1024 * 1024)

enum egress_verdict {
	EGRESS_VERDICT_INVALID = 0,
	EGRESS_ALLOW,
	EGRESS_DENY,
	EGRESS_VERDICT_MAX,
};

/* What ret_rule says when no rule matched (the default deny) or the name was not canonical. */
#define EGRESS_RULE_DEFAULT "default-deny"
#define EGRESS_RULE_BAD_NAME "invalid-name"

struct egress_policy;

struct egress_policy *egress_policy_new(void);
void egress_policy_free(struct egress_policy *p);
static inline void egress_policy_freep(struct egress_policy **p) { egress_policy_free(*p); }
#define _cleanup_policy_ _cleanup_(egress_policy_freep)

/* Adds one rule (syntax above); deny=true or a leading '!' makes it a deny rule. Adding a rule
 * that is already present is a no-op. -EINVAL (with the column in err) on a bad rule,
 * -E2BIG past EGRESS_RULE_MAX. */
int egress_policy_add(struct egress_policy *p, const char *rule, bool deny, pd_err *err);
/* Removes the rule equal (after canonicalisation) to rule/deny; -ENOENT if absent. */
int egress_policy_remove(struct egress_policy *p, const char *rule, bool deny, pd_err *err);
/* Adds the rules of preset "none", "balanced" or "open"; -EINVAL for another name. */
int egress_policy_preset(struct egress_policy *p, const char *name, pd_err *err);
/* Appends every rule of src to dst (global + per-sandbox rules). */
int egress_policy_merge(struct egress_policy *dst, const struct egress_policy *src, pd_err *err);
size_t egress_policy_count(const struct egress_policy *p);

/* The decision for canon_host:port. ret_rule (optional) receives the text of the deciding rule
 * ("*.github.com:443"), or EGRESS_RULE_DEFAULT / EGRESS_RULE_BAD_NAME; it stays valid until the
 * policy is changed or freed. A host that is not already canonical, or port 0, is denied. */
enum egress_verdict egress_policy_check(const struct egress_policy *p, const char *canon_host,
					uint16_t port, const char **ret_rule);
/* True if canon_host is allowed on at least one port (what DNS asks before handing out an
 * address). ret_rule as above: the allowing rule, or the deny/default that decided. */
bool egress_policy_name_allowed(const struct egress_policy *p, const char *canon_host,
				const char **ret_rule);

/* Parses a policy text (see above) and adds its rules to p, all or nothing. filename is only
 * used in messages ("FILE:LINE:COL: ..."). */
int egress_policy_parse(struct egress_policy *p, const char *text, size_t len,
			const char *filename, pd_err *err);
/* The policy as text in the same format (one "allow RULE"/"deny RULE" a line, presets
 * expanded); a NUL-terminated malloc'd string. parse(format(p)) gives an equal policy. */
char *egress_policy_format(const struct egress_policy *p);
