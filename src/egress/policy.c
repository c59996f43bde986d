/* policy.c — rules, presets and matching (see policy.h). */
#include "egress/policy.h"

enum rule_kind {
	RULE_HOST,   /* exactly name */
	RULE_SUFFIX, /* strictly below name */
	RULE_ANY,    /* any public name */
};

#define PORT_DEFAULT (-1) /* 80 and 443 */
#define PORT_ANY 0

struct egress_rule {
	enum rule_kind kind;
	bool deny;
	int32_t port; /* PORT_DEFAULT, PORT_ANY or 1..65535 */
	size_t name_len;
	char name[EGRESS_NAME_MAX + 1];
	char text[EGRESS_NAME_MAX + 16]; /* canonical spelling, e.g. "*.github.com:443" */
};

struct egress_policy {
	struct egress_rule *rules;
	size_t n, cap;
};

/* Names `*` (open) never matches: RFC 6761 special-use and de-facto private TLDs. They resolve
 * (if at all) to local or private services, never to the public internet, so "any public
 * name" excludes them; an explicit rule can still name one. */
static const char *const special_use[] = {
	"localhost", "local", "localdomain", "internal", "arpa", "invalid", "onion",
	"test", "example", "lan", "home", "corp", "intranet", "private",
};

struct preset {
	const char *name;
	const char *const *rules;
};

/* The balanced preset, documented in docs/egress-policy.md (keep both in sync). HTTPS only
 * except where a client needs plain HTTP (apt) or SSH (git over ssh). */
static const char *const preset_balanced[] = {
	/* model APIs */
	"api.anthropic.com:443", "api.openai.com:443", "generativelanguage.googleapis.com:443",
	"cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443", "openrouter.ai:443",
	"api.mistral.ai:443", "dashscope.aliyuncs.com:443", "dashscope-intl.aliyuncs.com:443",
	/* package registries */
	"registry.npmjs.org:443", "registry.yarnpkg.com:443", "pypi.org:443",
	"files.pythonhosted.org:443", "deb.debian.org", "security.debian.org", "crates.io:443",
	"static.crates.io:443", "index.crates.io:443", "proxy.golang.org:443",
	"sum.golang.org:443",
	/* code hosts */
	"github.com:443", "github.com:22", "api.github.com:443", "codeload.github.com:443",
	"objects.githubusercontent.com:443", "raw.githubusercontent.com:443",
	"release-assets.githubusercontent.com:443", "gitlab.com:443", "gitlab.com:22",
	"bitbucket.org:443", "bitbucket.org:22",
	NULL,
};
static const char *const preset_none[] = {NULL};
static const char *const preset_open[] = {"*:*", NULL};

static const struct preset presets[] = {
	{"none", preset_none},
	{"balanced", preset_balanced},
	{"open", preset_open},
};

struct egress_policy *egress_policy_new(void)
{
	return xcalloc(1, sizeof(struct egress_policy));
}

void egress_policy_free(struct egress_policy *p)
{
	if (!p)
		return;
	free(p->rules);
	free(p);
}

size_t egress_policy_count(const struct egress_policy *p)
{
	return p->n;
}

/* ---- rule parsing ---- */

struct rule_error {
	size_t col; /* 1-based column in the rule text */
	const char *why;
};

static int rule_fail(struct rule_error *e, size_t col, const char *why)
{
	e->col = col;
	e->why = why;
	return -EINVAL;
}

static int parse_port(const char *s, size_t len, int32_t *ret_port)
{
	if (len == 1 && s[0] == '*') {
		*ret_port = PORT_ANY;
		return 0;
	}
	if (len == 0 || len > 5 || s[0] == '0')
		return -EINVAL;
	int32_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*ret_port = v;
	return 0;
}

/* Splits NAME from the name part into kind + canonical name. */
static int parse_name(const char *s, size_t len, size_t col, struct egress_rule *r,
		      struct rule_error *e)
{
	if (len == 1 && s[0] == '*') {
		r->kind = RULE_ANY;
		r->name[0] = '\0';
		r->name_len = 0;
		return 0;
	}
	size_t skip = 0;
	r->kind = RULE_HOST;
	if (len >= 2 && s[0] == '*' && s[1] == '.')
		skip = 2;
	else if (len >= 1 && s[0] == '.')
		skip = 1;
	if (skip)
		r->kind = RULE_SUFFIX;
	int n = egress_name_canon_n(s + skip, len - skip, r->name, sizeof(r->name));
	if (n < 0)
		return rule_fail(e, col + skip, egress_name_strerror(n));
	r->name_len = (size_t)n;
	return 0;
}

static void rule_render(struct egress_rule *r)
{
	const char *pre = r->kind == RULE_SUFFIX ? "*." : "";
	const char *name = r->kind == RULE_ANY ? "*" : r->name;
	if (r->port == PORT_DEFAULT)
		snprintf(r->text, sizeof(r->text), "%s%s", pre, name);
	else if (r->port == PORT_ANY)
		snprintf(r->text, sizeof(r->text), "%s%s:*", pre, name);
	else
		snprintf(r->text, sizeof(r->text), "%s%s:%d", pre, name, (int)r->port);
}

static int parse_rule(const char *s, size_t len, bool deny, struct egress_rule *ret,
		      struct rule_error *e)
{
	struct egress_rule r = {.deny = deny, .port = PORT_DEFAULT};
	size_t i = 0;
	if (len > EGRESS_RULE_TEXT_MAX)
		return rule_fail(e, EGRESS_RULE_TEXT_MAX + 1, "rule too long");
	if (len > 0 && s[0] == '!') {
		r.deny = true;
		i = 1;
	}
	if (i == len)
		return rule_fail(e, i + 1, "empty rule");
	const char *url = memmem(s + i, len - i, "://", 3);
	if (url)
		return rule_fail(e, (size_t)(url - s) + 1, "a rule is host[:port], not a URL");
	size_t end = len, colons = 0;
	for (size_t j = i; j < len; j++)
		if (s[j] == ':') {
			colons++;
			end = j;
		}
	/* Only one ':' can be a port separator; more means an IPv6 literal, which the name
	 * check below refuses with the right reason. */
	if (colons > 1)
		end = len;
	if (colons == 1 && parse_port(s + end + 1, len - end - 1, &r.port) < 0)
		return rule_fail(e, end + 2, "port must be 1-65535 or *");
	int k = parse_name(s + i, end - i, i + 1, &r, e);
	if (k < 0)
		return k;
	rule_render(&r);
	*ret = r;
	return 0;
}

/* ---- rule list ---- */

static bool rule_equal(const struct egress_rule *a, const struct egress_rule *b)
{
	return a->kind == b->kind && a->deny == b->deny && a->port == b->port &&
	       streq(a->name, b->name);
}

static ssize_t rule_find(const struct egress_policy *p, const struct egress_rule *r)
{
	for (size_t i = 0; i < p->n; i++)
		if (rule_equal(&p->rules[i], r))
			return (ssize_t)i;
	return -1;
}

static int rule_insert(struct egress_policy *p, const struct egress_rule *r)
{
	if (rule_find(p, r) >= 0)
		return 0;
	if (p->n >= EGRESS_RULE_MAX)
		return -E2BIG;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->rules = xrealloc(p->rules, p->cap * sizeof(*p->rules));
	}
	p->rules[p->n++] = *r;
	return 0;
}

static int rule_parse_err(const char *rule, bool deny, struct egress_rule *ret, pd_err *err)
{
	struct rule_error e = {0};
	size_t len = strnlen(rule, EGRESS_RULE_TEXT_MAX + 1);
	if (parse_rule(rule, len, deny, ret, &e) < 0)
		return pd_error_msg(err, EINVAL, "invalid rule '%.*s' (column %zu): %s",
				    (int)len, rule, e.col, e.why);
	return 0;
}

int egress_policy_add(struct egress_policy *p, const char *rule, bool deny, pd_err *err)
{
	struct egress_rule r;
	int k = rule_parse_err(rule, deny, &r, err);
	if (k < 0)
		return k;
	if (rule_insert(p, &r) < 0)
		return pd_error_msg(err, E2BIG, "cannot add rule '%s': more than %d rules", r.text,
				    EGRESS_RULE_MAX);
	return 0;
}

int egress_policy_remove(struct egress_policy *p, const char *rule, bool deny, pd_err *err)
{
	struct egress_rule r;
	int k = rule_parse_err(rule, deny, &r, err);
	if (k < 0)
		return k;
	ssize_t i = rule_find(p, &r);
	if (i < 0)
		return pd_error_msg(err, ENOENT, "no %s rule '%s'", r.deny ? "deny" : "allow",
				    r.text);
	memmove(&p->rules[i], &p->rules[i + 1], (p->n - (size_t)i - 1) * sizeof(*p->rules));
	p->n--;
	return 0;
}

static size_t count_new(const struct egress_policy *dst, const struct egress_policy *src)
{
	size_t n = 0;
	for (size_t i = 0; i < src->n; i++)
		if (rule_find(dst, &src->rules[i]) < 0)
			n++;
	return n;
}

int egress_policy_merge(struct egress_policy *dst, const struct egress_policy *src, pd_err *err)
{
	/* All or nothing: check the room first so a failed merge leaves dst unchanged. */
	if (dst->n + count_new(dst, src) > EGRESS_RULE_MAX)
		return pd_error_msg(err, E2BIG, "cannot merge policies: more than %d rules",
				    EGRESS_RULE_MAX);
	for (size_t i = 0; i < src->n; i++)
		(void)rule_insert(dst, &src->rules[i]);
	return 0;
}

int egress_policy_preset(struct egress_policy *p, const char *name, pd_err *err)
{
	for (size_t i = 0; i < ARRAY_SIZE(presets); i++) {
		if (!streq(presets[i].name, name))
			continue;
		_cleanup_policy_ struct egress_policy *tmp = egress_policy_new();
		for (const char *const *r = presets[i].rules; *r; r++) {
			int k = egress_policy_add(tmp, *r, false, err);
			if (k < 0)
				return k; /* a bad built-in rule: caught by the unit tests */
		}
		return egress_policy_merge(p, tmp, err);
	}
	return pd_error_msg(err, EINVAL, "unknown network preset '%s' (none, balanced, open)",
			    name);
}

/* ---- matching ---- */

static bool under(const char *host, size_t hlen, const char *suffix, size_t slen)
{
	/* strictly below, and only at a label boundary: "x.allowed.com" is under "allowed.com",
	 * "evilallowed.com" and "allowed.com" itself are not */
	return hlen > slen + 1 && host[hlen - slen - 1] == '.' &&
	       memcmp(host + hlen - slen, suffix, slen) == 0;
}

static bool is_public_name(const char *host, size_t hlen)
{
	if (!memchr(host, '.', hlen))
		return false; /* single-label names are never public */
	for (size_t i = 0; i < ARRAY_SIZE(special_use); i++) {
		size_t sl = strlen(special_use[i]);
		if ((hlen == sl && memcmp(host, special_use[i], sl) == 0) ||
		    under(host, hlen, special_use[i], sl))
			return false;
	}
	return true;
}

static bool rule_matches_name(const struct egress_rule *r, const char *host, size_t hlen)
{
	switch (r->kind) {
	case RULE_HOST:
		return hlen == r->name_len && memcmp(host, r->name, hlen) == 0;
	case RULE_SUFFIX:
		return under(host, hlen, r->name, r->name_len);
	case RULE_ANY:
		return is_public_name(host, hlen);
	}
	return false;
}

static bool rule_matches_port(const struct egress_rule *r, uint16_t port)
{
	if (r->port == PORT_DEFAULT)
		return port == 80 || port == 443;
	return r->port == PORT_ANY || r->port == port;
}

/* Defence in depth: callers pass canonical names, but a name that is not canonical (or too
 * long to be) is denied rather than compared, so no caller bug can widen a rule. */
static bool is_canonical(const char *host, size_t *ret_len)
{
	char buf[EGRESS_NAME_MAX + 1];
	int n = egress_name_canon(host, buf, sizeof(buf));
	if (n < 0 || !streq(buf, host))
		return false;
	*ret_len = (size_t)n;
	return true;
}

static enum egress_verdict set_rule(const char **ret_rule, const char *rule,
				    enum egress_verdict v)
{
	if (ret_rule)
		*ret_rule = rule;
	return v;
}

enum egress_verdict egress_policy_check(const struct egress_policy *p, const char *canon_host,
					uint16_t port, const char **ret_rule)
{
	size_t hlen;
	if (!is_canonical(canon_host, &hlen))
		return set_rule(ret_rule, EGRESS_RULE_BAD_NAME, EGRESS_DENY);
	const struct egress_rule *allow = NULL;
	for (size_t i = 0; port != 0 && i < p->n; i++) {
		const struct egress_rule *r = &p->rules[i];
		if (!rule_matches_port(r, port) || !rule_matches_name(r, canon_host, hlen))
			continue;
		if (r->deny) /* deny beats allow, whatever the order */
			return set_rule(ret_rule, r->text, EGRESS_DENY);
		if (!allow)
			allow = r;
	}
	if (!allow)
		return set_rule(ret_rule, EGRESS_RULE_DEFAULT, EGRESS_DENY);
	return set_rule(ret_rule, allow->text, EGRESS_ALLOW);
}

/* Could this allow rule win on some port for host? Deny rules cover at most two ports each and
 * there are at most EGRESS_RULE_MAX of them, so an any-port allow always leaves a port open
 * unless an any-port deny matches (checked by the caller). */
static bool allow_rule_wins(const struct egress_policy *p, const struct egress_rule *r,
			    const char *host)
{
	if (r->port == PORT_ANY)
		return true;
	if (r->port == PORT_DEFAULT)
		return egress_policy_check(p, host, 80, NULL) == EGRESS_ALLOW ||
		       egress_policy_check(p, host, 443, NULL) == EGRESS_ALLOW;
	return egress_policy_check(p, host, (uint16_t)r->port, NULL) == EGRESS_ALLOW;
}

static bool answer(const char **ret_rule, const char *rule, bool allowed)
{
	if (ret_rule)
		*ret_rule = rule;
	return allowed;
}

bool egress_policy_name_allowed(const struct egress_policy *p, const char *canon_host,
				const char **ret_rule)
{
	size_t hlen;
	if (!is_canonical(canon_host, &hlen))
		return answer(ret_rule, EGRESS_RULE_BAD_NAME, false);
	const struct egress_rule *first_deny = NULL;
	for (size_t i = 0; i < p->n; i++) {
		const struct egress_rule *r = &p->rules[i];
		if (!r->deny || !rule_matches_name(r, canon_host, hlen))
			continue;
		if (r->port == PORT_ANY)
			return answer(ret_rule, r->text, false);
		if (!first_deny)
			first_deny = r;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct egress_rule *r = &p->rules[i];
		if (!r->deny && rule_matches_name(r, canon_host, hlen) &&
		    allow_rule_wins(p, r, canon_host))
			return answer(ret_rule, r->text, true);
	}
	return answer(ret_rule, first_deny ? first_deny->text : EGRESS_RULE_DEFAULT, false);
}

/* ---- text form ---- */

struct text_error {
	size_t col;
	const char *why;
};

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

struct word {
	const char *s;
	size_t len, col; /* col: 1-based column of s[0] */
};

/* Next blank-separated word of line[*pos..len); len 0 if none. */
static struct word next_word(const char *line, size_t len, size_t *pos)
{
	while (*pos < len && is_blank(line[*pos]))
		(*pos)++;
	size_t start = *pos;
	while (*pos < len && !is_blank(line[*pos]))
		(*pos)++;
	return (struct word){line + start, *pos - start, start + 1};
}

static bool word_is(struct word w, const char *s)
{
	return w.len == strlen(s) && memcmp(w.s, s, w.len) == 0;
}

static int text_fail(struct text_error *e, size_t col, const char *why)
{
	e->col = col;
	e->why = why;
	return -EINVAL;
}

static int apply_preset(struct egress_policy *p, struct word arg, struct text_error *e)
{
	char name[16];
	if (arg.len >= sizeof(name))
		return text_fail(e, arg.col, "unknown preset (none, balanced, open)");
	memcpy(name, arg.s, arg.len);
	name[arg.len] = '\0';
	if (egress_policy_preset(p, name, NULL) < 0)
		return text_fail(e, arg.col, "unknown preset (none, balanced, open)");
	return 0;
}

static int apply_directive(struct egress_policy *p, struct word verb, struct word arg,
			   struct text_error *e)
{
	struct egress_rule r;
	struct rule_error re = {0};
	if (word_is(verb, "preset"))
		return apply_preset(p, arg, e);
	if (!word_is(verb, "allow") && !word_is(verb, "deny"))
		return text_fail(e, verb.col, "expected 'allow RULE', 'deny RULE' or 'preset NAME'");
	if (parse_rule(arg.s, arg.len, word_is(verb, "deny"), &r, &re) < 0)
		return text_fail(e, arg.col + re.col - 1, re.why);
	if (rule_insert(p, &r) < 0)
		return text_fail(e, arg.col, "too many rules");
	return 0;
}

static int parse_line(struct egress_policy *p, const char *line, size_t len,
		      struct text_error *e)
{
	const char *hash = memchr(line, '#', len);
	if (hash)
		len = (size_t)(hash - line);
	while (len > 0 && (is_blank(line[len - 1]) || line[len - 1] == '\r'))
		len--;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
			return text_fail(e, i + 1, "control character");
	size_t pos = 0;
	struct word verb = next_word(line, len, &pos);
	if (verb.len == 0)
		return 0; /* blank or comment-only line */
	struct word arg = next_word(line, len, &pos);
	if (arg.len == 0)
		return text_fail(e, arg.col, "missing argument");
	struct word extra = next_word(line, len, &pos);
	if (extra.len > 0)
		return text_fail(e, extra.col, "one rule per line");
	return apply_directive(p, verb, arg, e);
}

int egress_policy_parse(struct egress_policy *p, const char *text, size_t len,
			const char *filename, pd_err *err)
{
	if (len > EGRESS_POLICY_TEXT_MAX)
		return pd_error_msg(err, E2BIG, "%s: policy file larger than %d bytes", filename,
				    EGRESS_POLICY_TEXT_MAX);
	_cleanup_policy_ struct egress_policy *tmp = egress_policy_new();
	unsigned line = 1;
	for (size_t pos = 0; pos < len; line++) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		struct text_error e = {0};
		if (memchr(text + pos, '\0', end - pos))
			return pd_error_msg(err, EINVAL, "%s:%u: NUL byte in policy file", filename,
					    line);
		if (parse_line(tmp, text + pos, end - pos, &e) < 0)
			return pd_error_msg(err, EINVAL, "%s:%u:%zu: %s", filename, line, e.col,
					    e.why);
		pos = end + 1;
	}
	return egress_policy_merge(p, tmp, err);
}

char *egress_policy_format(const struct egress_policy *p)
{
	size_t cap = p->n * (sizeof(p->rules[0].text) + 8) + 1, len = 0;
	char *out = xmalloc(cap);
	out[0] = '\0';
	for (size_t i = 0; i < p->n; i++) {
		const struct egress_rule *r = &p->rules[i];
		int n = snprintf(out + len, cap - len, "%s %s\n", r->deny ? "deny" : "allow",
				 r->text);
		len += (size_t)n;
	}
	return out;
}
