/* oci_auth.c — WWW-Authenticate challenges and token responses (oci_auth.h). */
#include <strings.h>

#include "image/oci_auth.h"
#include "image/oci_json.h"

struct lex {
	const char *s;
	size_t n, i;
};

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void skip_ows(struct lex *l)
{
	while (l->i < l->n && (l->s[l->i] == ' ' || l->s[l->i] == '\t'))
		l->i++;
}

/* A token into out (NUL-terminated); its length, 0 when there is none or it is too long. */
static size_t lex_token(struct lex *l, char *out, size_t max)
{
	size_t start = l->i;
	while (l->i < l->n && is_tchar(l->s[l->i]))
		l->i++;
	size_t n = l->i - start;
	if (n >= max)
		return 0;
	memcpy(out, l->s + start, n);
	out[n] = '\0';
	return n;
}

/* A quoted-string (after its opening quote) into out, unescaping. */
static int lex_quoted(struct lex *l, char *out, size_t max, pd_err *err)
{
	size_t o = 0;
	for (l->i++; l->i < l->n && l->s[l->i] != '"'; l->i++) {
		if (l->s[l->i] == '\\' && ++l->i >= l->n)
			break;
		unsigned char c = (unsigned char)l->s[l->i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return pd_error_msg(err, EINVAL, "WWW-Authenticate: control character in a "
					    "quoted value");
		if (o + 1 >= max)
			return pd_error_msg(err, EINVAL, "WWW-Authenticate: value longer than %d "
					    "bytes", OCI_AUTH_VALUE_MAX);
		out[o++] = (char)c;
	}
	if (l->i >= l->n)
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: unterminated quoted value");
	l->i++;
	out[o] = '\0';
	return 0;
}

static int lex_value(struct lex *l, char *out, size_t max, pd_err *err)
{
	if (l->i < l->n && l->s[l->i] == '"')
		return lex_quoted(l, out, max, err);
	if (lex_token(l, out, max) == 0)
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: expected a value at byte %zu",
				    l->i);
	/* token68-style padding ("abc==") is part of a bare value */
	size_t o = strlen(out);
	while (l->i < l->n && l->s[l->i] == '=' && o + 1 < max) {
		out[o++] = '=';
		l->i++;
	}
	out[o] = '\0';
	return 0;
}

static int set_param(struct oci_auth_challenge *c, const char *name, const char *value,
		     pd_err *err)
{
	char **slot = !strcasecmp(name, "realm") ? &c->realm
		      : !strcasecmp(name, "service") ? &c->service
		      : !strcasecmp(name, "scope") ? &c->scope : NULL;
	if (!slot)
		return 0;
	if (*slot)
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: repeated parameter %s", name);
	*slot = xstrdup(value);
	return 0;
}

/* True when the next thing is a new challenge ("Scheme name=..."), not a parameter
 * ("name = value"). */
static bool at_new_challenge(const struct lex *l)
{
	size_t i = l->i;
	while (i < l->n && is_tchar(l->s[i]))
		i++;
	if (i == l->i || i >= l->n || (l->s[i] != ' ' && l->s[i] != '\t'))
		return false;
	while (i < l->n && (l->s[i] == ' ' || l->s[i] == '\t'))
		i++;
	return i < l->n && l->s[i] != '=';
}

static int parse_param(struct lex *l, struct oci_auth_challenge *c, pd_err *err)
{
	char name[64], value[OCI_AUTH_VALUE_MAX + 1];
	if (lex_token(l, name, sizeof(name)) == 0)
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: expected a parameter name at "
				    "byte %zu", l->i);
	skip_ows(l);
	if (l->i >= l->n || l->s[l->i] != '=')
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: expected '=' after %s", name);
	l->i++;
	skip_ows(l);
	int r = lex_value(l, value, sizeof(value), err);
	if (r < 0)
		return r;
	return set_param(c, name, value, err);
}

static int parse_params(struct lex *l, struct oci_auth_challenge *c, pd_err *err)
{
	for (size_t count = 0;; count++) {
		skip_ows(l);
		while (l->i < l->n && l->s[l->i] == ',') {  /* empty list elements are allowed */
			l->i++;
			skip_ows(l);
		}
		if (l->i >= l->n || at_new_challenge(l))
			return 0;
		if (count >= OCI_AUTH_PARAMS_MAX)
			return pd_error_msg(err, EINVAL, "WWW-Authenticate: too many parameters");
		int r = parse_param(l, c, err);
		if (r < 0)
			return r;
		skip_ows(l);
		if (l->i < l->n && l->s[l->i] != ',')
			return pd_error_msg(err, EINVAL, "WWW-Authenticate: expected ',' at byte %zu",
					    l->i);
	}
}

static int parse_scheme(struct lex *l, struct oci_auth_challenge *c, pd_err *err)
{
	char scheme[32];
	skip_ows(l);
	if (lex_token(l, scheme, sizeof(scheme)) == 0)
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: expected an auth scheme");
	if (!strcasecmp(scheme, "Bearer"))
		c->scheme = OCI_AUTH_BEARER;
	else if (!strcasecmp(scheme, "Basic"))
		c->scheme = OCI_AUTH_BASIC;
	else
		return pd_error_msg(err, EOPNOTSUPP, "WWW-Authenticate: unsupported scheme %s",
				    scheme);
	if (l->i < l->n && l->s[l->i] != ' ' && l->s[l->i] != '\t')
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: expected a space after %s",
				    scheme);
	return 0;
}

static int check_challenge(const struct oci_auth_challenge *c, pd_err *err)
{
	if (c->scheme != OCI_AUTH_BEARER)
		return 0;
	if (!c->realm)
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: Bearer without a realm");
	if (!startswith(c->realm, "https://") && !startswith(c->realm, "http://"))
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: realm is not an http(s) URL");
	return 0;
}

void oci_auth_challenge_clear(struct oci_auth_challenge *c)
{
	free(c->realm);
	free(c->service);
	free(c->scope);
	memset(c, 0, sizeof(*c));
}

int oci_auth_challenge_parse(const char *header, size_t len, struct oci_auth_challenge *ret,
			     pd_err *err)
{
	memset(ret, 0, sizeof(*ret));
	if (len > OCI_AUTH_HEADER_MAX)
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: longer than %d bytes",
				    OCI_AUTH_HEADER_MAX);
	if (memchr(header, '\0', len))
		return pd_error_msg(err, EINVAL, "WWW-Authenticate: NUL byte");
	struct lex l = { .s = header, .n = len, .i = 0 };
	int r = parse_scheme(&l, ret, err);
	if (r == 0)
		r = parse_params(&l, ret, err);
	if (r == 0)
		r = check_challenge(ret, err);
	if (r < 0)
		oci_auth_challenge_clear(ret);
	return r;
}

static bool token_valid(const char *t)
{
	if (!t[0] || strlen(t) > OCI_TOKEN_MAX)
		return false;
	for (; *t; t++)
		if (*t <= ' ' || *t >= 0x7f)
			return false;
	return true;
}

static int token_from_tree(const cJSON *root, char **ret_token, unsigned *ret_expires,
			   pd_err *err)
{
	const char *what = "token response", *tok = NULL;
	int r = oci_json_string(root, "token", false, OCI_TOKEN_MAX, what, "", &tok, err);
	if (r == -ENOENT)
		r = oci_json_string(root, "access_token", false, OCI_TOKEN_MAX, what, "", &tok, err);
	if (r == -ENOENT)
		return pd_error_msg(err, EINVAL, "%s: no token", what);
	if (r < 0)
		return r;
	if (!token_valid(tok))
		return pd_error_msg(err, EINVAL, "%s: malformed token", what);
	uint64_t exp = 60;
	r = oci_json_u64(root, "expires_in", false, 365ULL * 24 * 3600, what, "", &exp, err);
	if (r < 0 && r != -ENOENT)
		return r;
	*ret_token = xstrdup(tok);
	if (ret_expires)
		*ret_expires = (unsigned)(exp ? exp : 60);
	return 0;
}

int oci_token_parse(const char *buf, size_t len, char **ret_token, unsigned *ret_expires_in,
		    pd_err *err)
{
	cJSON *root = NULL;
	int r = oci_json_parse(buf, len, OCI_TOKEN_RESPONSE_MAX, "token response", &root, err);
	if (r < 0)
		return r;
	r = cJSON_IsObject(root) ? token_from_tree(root, ret_token, ret_expires_in, err)
				 : pd_error_msg(err, EINVAL, "token response: expected an object");
	cJSON_Delete(root);
	return r;
}
