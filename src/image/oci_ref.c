/* oci_ref.c — image reference parsing and normalisation (oci_ref.h). */
#include <ctype.h>

#include "image/oci_manifest.h"
#include "image/oci_ref.h"

#define DOCKER_HUB "docker.io"

void oci_ref_free(struct oci_ref *r)
{
	if (!r)
		return;
	free(r->registry);
	free(r->repository);
	free(r->tag);
	free(r->digest);
	free(r);
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static size_t alnum_run(const char *s, size_t n, size_t i)
{
	while (i < n && is_lower_alnum(s[i]))
		i++;
	return i;
}

/* End of the separator at i ('.', '_', "__" or dashes), i itself when there is none. */
static size_t separator_end(const char *s, size_t n, size_t i)
{
	if (s[i] == '.')
		return i + 1;
	if (s[i] == '_')
		return i + 1 < n && s[i + 1] == '_' ? i + 2 : i + 1;
	while (i < n && s[i] == '-')
		i++;
	return i;
}

/* One repository component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static bool component_valid(const char *s, size_t n)
{
	size_t i = alnum_run(s, n, 0);
	if (i == 0)
		return false;
	while (i < n) {
		size_t j = separator_end(s, n, i);
		if (j == i)
			return false;
		i = alnum_run(s, n, j);
		if (i == j)
			return false;
	}
	return true;
}

static bool repository_valid(const char *s)
{
	if (!*s)
		return false;
	while (*s) {
		size_t n = strcspn(s, "/");
		if (!component_valid(s, n))
			return false;
		s += n;
		if (*s == '/' && !*++s)
			return false;
	}
	return true;
}

static bool tag_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > OCI_TAG_MAX || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || strchr("_.-", s[i])))
			return false;
	return true;
}

/* host[:port]: DNS labels of [A-Za-z0-9-] (no dash at either end) or a bracketed IPv6 literal. */
static bool registry_valid(const char *s)
{
	const char *port = NULL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close == s + 1 || strspn(s + 1, "0123456789abcdefABCDEF:.") !=
		    (size_t)(close - s - 1))
			return false;
		port = close[1] == ':' ? close + 2 : NULL;
		if (close[1] && !port)
			return false;
	} else {
		size_t host = strcspn(s, ":");
		port = s[host] == ':' ? s + host + 1 : NULL;
		for (const char *l = s; l < s + host;) {
			size_t n = strcspn(l, ".:");
			if (n == 0 || n > 63 || l[0] == '-' || l[n - 1] == '-')
				return false;
			for (size_t i = 0; i < n; i++)
				if (!isalnum((unsigned char)l[i]) && l[i] != '-')
					return false;
			l += n;
			if (*l == '.' && (++l == s + host))
				return false;
		}
		if (host == 0)
			return false;
	}
	return !port || (port[0] && strlen(port) <= 5 && strspn(port, "0123456789") == strlen(port));
}

static bool first_is_registry(const char *name, size_t n)
{
	if (memchr(name, '.', n) || memchr(name, ':', n) || (n == 9 && !strncmp(name, "localhost", 9)))
		return true;
	for (size_t i = 0; i < n; i++)
		if (isupper((unsigned char)name[i]))
			return true;
	return false;
}

/* Splits "name" into registry and repository, normalising Docker Hub names. */
static int split_name(const char *name, struct oci_ref *r, pd_err *err)
{
	const char *slash = strchr(name, '/');
	bool has_registry = slash && first_is_registry(name, (size_t)(slash - name));
	const char *repo = has_registry ? slash + 1 : name;
	r->registry = has_registry ? xstrndup(name, (size_t)(slash - name)) : xstrdup(DOCKER_HUB);
	if (streq(r->registry, "index.docker.io")) {
		free(r->registry);
		r->registry = xstrdup(DOCKER_HUB);
	}
	if (!registry_valid(r->registry))
		return pd_error_msg(err, EINVAL, "invalid registry '%.100s'", r->registry);
	bool hub = streq(r->registry, DOCKER_HUB);
	r->repository = hub && !strchr(repo, '/') ? xasprintf("library/%s", repo) : xstrdup(repo);
	if (!repository_valid(r->repository))
		return pd_error_msg(err, EINVAL, "invalid repository name '%.100s'%s", repo,
				    strpbrk(repo, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
				    ? " (must be lower case)" : "");
	if (strlen(r->registry) + 1 + strlen(r->repository) > OCI_NAME_MAX)
		return pd_error_msg(err, EINVAL, "image name longer than %d bytes", OCI_NAME_MAX);
	return 0;
}

/* Splits "name[:tag][@digest]" off the end. */
static int split_tag_digest(char *s, struct oci_ref *r, pd_err *err)
{
	char *at = strchr(s, '@');
	if (at) {
		*at = '\0';
		if (!oci_digest_valid(at + 1))
			return pd_error_msg(err, EINVAL, "invalid digest '%.100s' (expected "
					    "sha256: and 64 lower-case hex digits)", at + 1);
		r->digest = xstrdup(at + 1);
	}
	char *slash = strrchr(s, '/'), *colon = strrchr(slash ? slash : s, ':');
	if (colon) {
		*colon = '\0';
		if (!tag_valid(colon + 1))
			return pd_error_msg(err, EINVAL, "invalid tag '%.100s'", colon + 1);
		r->tag = xstrdup(colon + 1);
	} else if (!r->digest) {
		r->tag = xstrdup("latest");
	}
	return 0;
}

int oci_ref_parse(const char *s, struct oci_ref **ret, pd_err *err)
{
	if (!s[0] || strlen(s) > OCI_REF_MAX)
		return pd_error_msg(err, EINVAL, "invalid image reference (empty or too long)");
	_cleanup_free_ char *copy = xstrdup(s);
	struct oci_ref *r = xcalloc(1, sizeof(*r));
	int e = split_tag_digest(copy, r, err);
	if (e == 0 && !copy[0])
		e = pd_error_msg(err, EINVAL, "image reference lacks a name");
	if (e == 0)
		e = split_name(copy, r, err);
	if (e < 0) {
		oci_ref_free(r);
		if (err)
			pd_err_prefix(err, "'%.100s'", s);
		return e;
	}
	*ret = r;
	return 0;
}

char *oci_ref_format(const struct oci_ref *r)
{
	return xasprintf("%s/%s%s%s%s%s", r->registry, r->repository, r->tag ? ":" : "",
			 r->tag ? r->tag : "", r->digest ? "@" : "", r->digest ? r->digest : "");
}

const char *oci_ref_api_host(const struct oci_ref *r)
{
	return streq(r->registry, DOCKER_HUB) ? "registry-1.docker.io" : r->registry;
}
