/* test-oci-ref.c — image references (Docker's normalisation) and registry token auth: the
 * WWW-Authenticate challenge and the token response. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "image/oci_auth.h"
#include "image/oci_ref.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"

static void ref_is(const char *in, const char *registry, const char *repo, const char *tag,
		   const char *digest, const char *canon)
{
	_cleanup_oci_ref_ struct oci_ref *r = NULL;
	pd_err err = { 0 };
	if (oci_ref_parse(in, &r, &err) < 0)
		fail_msg("%s: %s", in, err.msg);
	assert_string_equal(r->registry, registry);
	assert_string_equal(r->repository, repo);
	if (tag)
		assert_string_equal(r->tag, tag);
	else
		assert_null(r->tag);
	if (digest)
		assert_string_equal(r->digest, digest);
	else
		assert_null(r->digest);
	_cleanup_free_ char *f = oci_ref_format(r);
	assert_string_equal(f, canon);
	/* the canonical form is a fixed point */
	_cleanup_oci_ref_ struct oci_ref *again = NULL;
	assert_int_equal(oci_ref_parse(f, &again, NULL), 0);
	_cleanup_free_ char *f2 = oci_ref_format(again);
	assert_string_equal(f, f2);
}

static void ref_bad(const char *in, const char *expect)
{
	struct oci_ref *r = NULL;
	pd_err err = { 0 };
	assert_int_equal(oci_ref_parse(in, &r, &err), -EINVAL);
	assert_null(r);
	if (!strstr(err.msg, expect))
		fail_msg("'%s'\n  got:  %s\n  want: %s", in, err.msg, expect);
}

static void test_ref_docker_hub(void **state)
{
	ref_is("node:22", "docker.io", "library/node", "22", NULL, "docker.io/library/node:22");
	ref_is("node", "docker.io", "library/node", "latest", NULL, "docker.io/library/node:latest");
	ref_is("docker.io/library/node:22", "docker.io", "library/node", "22", NULL,
	       "docker.io/library/node:22");
	ref_is("index.docker.io/library/node", "docker.io", "library/node", "latest", NULL,
	       "docker.io/library/node:latest");
	ref_is("bitnami/redis:7.2", "docker.io", "bitnami/redis", "7.2", NULL,
	       "docker.io/bitnami/redis:7.2");
	ref_is("docker.io/node", "docker.io", "library/node", "latest", NULL,
	       "docker.io/library/node:latest");
	_cleanup_oci_ref_ struct oci_ref *r = NULL;
	assert_int_equal(oci_ref_parse("node:22", &r, NULL), 0);
	assert_string_equal(oci_ref_api_host(r), "registry-1.docker.io");
}

static void test_ref_registries(void **state)
{
	ref_is("localhost:5000/x/y@" D1, "localhost:5000", "x/y", NULL, D1,
	       "localhost:5000/x/y@" D1);
	ref_is("localhost/x", "localhost", "x", "latest", NULL, "localhost/x:latest");
	ref_is("ghcr.io/apple/containerization/vminit:0.26.5", "ghcr.io",
	       "apple/containerization/vminit", "0.26.5", NULL,
	       "ghcr.io/apple/containerization/vminit:0.26.5");
	ref_is("127.0.0.1:5000/a/b:v1@" D1, "127.0.0.1:5000", "a/b", "v1", D1,
	       "127.0.0.1:5000/a/b:v1@" D1);
	ref_is("[::1]:5000/img:t", "[::1]:5000", "img", "t", NULL, "[::1]:5000/img:t");
	ref_is("Registry.Example/img", "Registry.Example", "img", "latest", NULL,
	       "Registry.Example/img:latest");
	ref_is("a.b/c__d/e-f---g.h_i:_Tag.-x", "a.b", "c__d/e-f---g.h_i", "_Tag.-x", NULL,
	       "a.b/c__d/e-f---g.h_i:_Tag.-x");
	_cleanup_oci_ref_ struct oci_ref *r = NULL;
	assert_int_equal(oci_ref_parse("localhost:5000/x", &r, NULL), 0);
	assert_string_equal(oci_ref_api_host(r), "localhost:5000");
}

static void test_ref_errors(void **state)
{
	ref_bad("", "invalid image reference (empty or too long)");
	ref_bad("Node:22", "'Node:22': invalid repository name 'Node' (must be lower case)");
	ref_bad("node:", "'node:': invalid tag ''");
	ref_bad("node:-x", "'node:-x': invalid tag '-x'");
	ref_bad("node@sha256:abc",
		"'node@sha256:abc': invalid digest 'sha256:abc' (expected sha256: and 64 "
		"lower-case hex digits)");
	ref_bad("a..b/c", "'a..b/c': invalid registry 'a..b'");
	ref_bad("host:port/x", "'host:port/x': invalid registry 'host:port'");
	ref_bad("-bad.io/x", "'-bad.io/x': invalid registry '-bad.io'");
	ref_bad("x/y/", "'x/y/': invalid repository name 'x/y/'");
	ref_bad("x//y", "'x//y': invalid repository name 'x//y'");
	ref_bad("a/_b", "'a/_b': invalid repository name 'a/_b'");
	ref_bad("a/b___c", "'a/b___c': invalid repository name 'a/b___c'");
	ref_bad(":tag", "':tag': image reference lacks a name");
	ref_bad("@" D1, "'@" D1 "': image reference lacks a name");
	ref_bad("Rel/", "'Rel/': invalid repository name ''");
	ref_bad("a b", "'a b': invalid repository name 'a b'");
	char longname[300];
	memset(longname, 'a', 260);
	strcpy(longname + 260, ":t");
	ref_bad(longname, "image name longer than 255 bytes");
}

static void challenge_is(const char *h, enum oci_auth_scheme scheme, const char *realm,
			 const char *service, const char *scope)
{
	struct oci_auth_challenge c;
	pd_err err = { 0 };
	if (oci_auth_challenge_parse(h, strlen(h), &c, &err) < 0)
		fail_msg("'%s': %s", h, err.msg);
	assert_int_equal(c.scheme, scheme);
	if (realm)
		assert_string_equal(c.realm, realm);
	else
		assert_null(c.realm);
	if (service)
		assert_string_equal(c.service, service);
	else
		assert_null(c.service);
	if (scope)
		assert_string_equal(c.scope, scope);
	else
		assert_null(c.scope);
	oci_auth_challenge_clear(&c);
}

static void challenge_bad(const char *h, int code, const char *expect)
{
	struct oci_auth_challenge c;
	pd_err err = { 0 };
	assert_int_equal(oci_auth_challenge_parse(h, strlen(h), &c, &err), code);
	assert_null(c.realm);
	if (!strstr(err.msg, expect))
		fail_msg("'%s': message '%s' lacks '%s'", h, err.msg, expect);
}

static void test_challenge(void **state)
{
	challenge_is("Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
		     "scope=\"repository:library/node:pull\"",
		     OCI_AUTH_BEARER, "https://auth.docker.io/token", "registry.docker.io",
		     "repository:library/node:pull");
	challenge_is("bearer  Realm = \"http://127.0.0.1:5001/auth\" ,  Service=reg , , x=\"y\"",
		     OCI_AUTH_BEARER, "http://127.0.0.1:5001/auth", "reg", NULL);
	challenge_is("Bearer realm=\"https://a/t\",scope=\"repository:a:pull,push\"",
		     OCI_AUTH_BEARER, "https://a/t", NULL, "repository:a:pull,push");
	challenge_is("Bearer realm=\"https://a/\\\"q\\\\\"", OCI_AUTH_BEARER, "https://a/\"q\\",
		     NULL, NULL);
	challenge_is("Basic realm=\"Registry Realm\"", OCI_AUTH_BASIC, "Registry Realm", NULL,
		     NULL);
	/* only the first challenge is read */
	challenge_is("Basic realm=\"r\", Bearer realm=\"https://x/t\"", OCI_AUTH_BASIC, "r", NULL,
		     NULL);
	challenge_is("Bearer realm=\"https://x/t\",error=\"insufficient_scope\"",
		     OCI_AUTH_BEARER, "https://x/t", NULL, NULL);
}

static void test_challenge_errors(void **state)
{
	challenge_bad("Negotiate abc", -EOPNOTSUPP, "unsupported scheme Negotiate");
	challenge_bad("Bearer service=\"x\"", -EINVAL, "Bearer without a realm");
	challenge_bad("Bearer realm=\"file:///etc/passwd\"", -EINVAL, "not an http(s) URL");
	challenge_bad("Bearer realm=\"https://a\",realm=\"https://b\"", -EINVAL,
		      "repeated parameter realm");
	challenge_bad("Bearer realm=\"https://a", -EINVAL, "unterminated quoted value");
	challenge_bad("Bearer realm", -EINVAL, "expected '=' after realm");
	challenge_bad("Bearer realm=\"https://a\" service=x", -EINVAL, "expected ','");
	challenge_bad("", -EINVAL, "expected an auth scheme");
	challenge_bad("Bearer realm=\"https://a\x01\"", -EINVAL, "control character");
	char big[OCI_AUTH_HEADER_MAX + 2];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	challenge_bad(big, -EINVAL, "longer than 8192 bytes");
	char val[3000] = "Bearer realm=\"https://";
	memset(val + strlen(val), 'a', 2500);
	strcpy(val + 22 + 2500, "\"");
	challenge_bad(val, -EINVAL, "value longer than 2048 bytes");
}

static void test_token(void **state)
{
	_cleanup_free_ char *tok = NULL;
	unsigned exp = 0;
	const char *a = "{\"token\":\"abc.def\",\"access_token\":\"other\",\"expires_in\":300,"
			"\"issued_at\":\"2025-01-01T00:00:00Z\"}";
	assert_int_equal(oci_token_parse(a, strlen(a), &tok, &exp, NULL), 0);
	assert_string_equal(tok, "abc.def");
	assert_int_equal(exp, 300);
	_cleanup_free_ char *tok2 = NULL;
	const char *b = "{\"access_token\":\"xyz\"}";
	assert_int_equal(oci_token_parse(b, strlen(b), &tok2, &exp, NULL), 0);
	assert_string_equal(tok2, "xyz");
	assert_int_equal(exp, 60);
	char *t = NULL;
	pd_err err = { 0 };
	const char *c = "{\"token\":\"a b\"}";
	assert_int_equal(oci_token_parse(c, strlen(c), &t, &exp, &err), -EINVAL);
	assert_string_equal(err.msg, "token response: malformed token");
	assert_int_equal(oci_token_parse("{}", 2, &t, &exp, &err), -EINVAL);
	assert_string_equal(err.msg, "token response: no token");
	assert_int_equal(oci_token_parse("[]", 2, &t, &exp, &err), -EINVAL);
	const char *d = "{\"token\":\"x\",\"expires_in\":-5}";
	assert_int_equal(oci_token_parse(d, strlen(d), &t, &exp, &err), -EINVAL);
	assert_null(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ref_docker_hub),
		cmocka_unit_test(test_ref_registries),
		cmocka_unit_test(test_ref_errors),
		cmocka_unit_test(test_challenge),
		cmocka_unit_test(test_challenge_errors),
		cmocka_unit_test(test_token),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
