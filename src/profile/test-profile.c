/* test-profile.c — agent profiles: the sandboxy format with every key, errors with exact
 * FILE:LINE:COL and key paths, unknown-key warnings, caps, built-ins, merging of user files,
 * printing, and the run-time helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "profile/profile.h"
#include "util/fdio.h"

/* A definition written for sandboxy, every key present. */
static const char full[] =
	"{\n"
	"    \"displayName\": \"Foo\",\n"
	"    \"baseImage\": \"docker.io/library/python:3.12-slim\",\n"
	"    \"installCommands\": [\n"
	"        \"pip install foo\"\n"
	"    ],\n"
	"    \"launchCommand\": [\"foo\", \"--yes\"],\n"
	"    \"environmentVariables\": [\"FOO_KEY\", \"DEBUG=1\"],\n"
	"    \"mounts\": [\n"
	"        {\"hostPath\": \"~/.foo\", \"containerPath\": \"/root/.foo\", \"readOnly\": true},\n"
	"        {\"hostPath\": \"/data\", \"containerPath\": \"/data\"}\n"
	"    ],\n"
	"    \"allowedHosts\": [\"api.example.com\", \"*.cdn.example.com\"]\n"
	"}\n";

static struct profile *parse_ok(const char *text, char ***warnings)
{
	struct profile *p = NULL;
	pd_err err = { 0 };
	if (profile_parse(text, strlen(text), "t.json", "t", &p, warnings, &err) < 0)
		fail_msg("unexpected error: %s", err.msg);
	return p;
}

static void parse_fails(const char *text, const char *expect)
{
	struct profile *p = NULL;
	pd_err err = { 0 };
	int r = profile_parse(text, strlen(text), "t.json", "t", &p, NULL, &err);
	assert_true(r < 0);
	assert_null(p);
	if (!streq(err.msg, expect))
		fail_msg("message\n  got:  '%s'\n  want: '%s'", err.msg, expect);
}

static void test_sandboxy_every_key(void **state)
{
	_cleanup_strv_ char **w = NULL;
	_cleanup_profile_ struct profile *p = parse_ok(full, &w);
	assert_int_equal(strv_len(w), 0);
	assert_int_equal(p->fields, PROFILE_REQUIRED | PROFILE_ENVIRONMENT | PROFILE_MOUNTS |
					    PROFILE_ALLOWED_HOSTS);
	assert_string_equal(p->display_name, "Foo");
	assert_string_equal(p->base_image, "docker.io/library/python:3.12-slim");
	assert_int_equal(strv_len(p->install_commands), 1);
	assert_string_equal(p->install_commands[0], "pip install foo");
	assert_string_equal(p->launch_command[1], "--yes");
	assert_string_equal(p->environment[0], "FOO_KEY");
	assert_int_equal(p->n_mounts, 2);
	assert_string_equal(p->mounts[0].host_path, "~/.foo");
	assert_string_equal(p->mounts[0].container_path, "/root/.foo");
	assert_true(p->mounts[0].read_only);
	assert_false(p->mounts[1].read_only); /* default, as in sandboxy */
	assert_string_equal(p->allowed_hosts[1], "*.cdn.example.com");
	assert_int_equal(profile_check_complete(p, NULL), 0);
}

static void test_error_positions(void **state)
{
	parse_fails("{\n  \"mounts\": [\n    {\"hostPath\": \"/a\", \"containerPath\": \"/a\"},\n"
		    "    {\"hostPath\": \"/b\", \"containerPath\": \"/b\", \"readOnly\": \"yes\"}\n"
		    "  ]\n}\n",
		    "t.json:4:59: mounts[1].readOnly: expected a boolean");
	parse_fails("{\"displayName\": 7}", "t.json:1:17: displayName: expected a string");
	parse_fails("{\n\t\"launchCommand\": [\"a\", 1]\n}",
		    "t.json:2:25: launchCommand[1]: expected a string");
	parse_fails("{\"allowedHosts\": \"x.com\"}",
		    "t.json:1:18: allowedHosts: expected an array of strings");
	parse_fails("[1]", "t.json:1:1: expected an object (an agent definition)");
	parse_fails("{\"mounts\": [{\"hostPath\": \"/a\"}]}",
		    "t.json:1:13: mounts[0]: missing \"containerPath\"");
	parse_fails("{\"mounts\": [{\"hostPath\": \"/a\", \"containerPath\": \"rel\"}]}",
		    "t.json:1:49: mounts[0].containerPath: \"rel\" is not an absolute path");
	parse_fails("{\"mounts\": [{\"hostPath\": \"/a\", \"containerPath\": \"/x/../etc\"}]}",
		    "t.json:1:49: mounts[0].containerPath: \"/x/../etc\" contains \"..\"");
	parse_fails("{\"environmentVariables\": [\"OK\", \"1BAD\"]}",
		    "t.json:1:33: environmentVariables[1]: \"1BAD\" is not NAME or NAME=VALUE");
	parse_fails("{\"displayName\": \"\"}", "t.json:1:17: displayName: must not be empty");
	parse_fails("{\"baseImage\": \"a b\"}",
		    "t.json:1:15: baseImage: contains a space or control character");
	parse_fails("{\"allowedHosts\": [\"!evil.com\"]}",
		    "t.json:1:19: allowedHosts[0]: \"!evil.com\": deny rules are not allowed here");
}

static void test_error_bad_host_mentions_position(void **state)
{
	struct profile *p = NULL;
	pd_err err = { 0 };
	const char *t = "{\"allowedHosts\": [\"ok.com\",\n  \"bad host\"]}";
	assert_int_equal(profile_parse(t, strlen(t), "t.json", "t", &p, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "t.json:2:3: allowedHosts[1]: "));
}

static void test_syntax_errors(void **state)
{
	parse_fails("{\n  \"displayName\": \"x\",\n  oops\n}",
		    "t.json:3:3: invalid JSON: expected a key in double quotes");
	parse_fails("{\"displayName\": \"x\"", "t.json:1:20: invalid JSON: expected ',' or '}'");
	parse_fails("{\n\"a\": [1, 2,]}", "t.json:2:12: invalid JSON: expected a value");
	parse_fails("{\"a\" 1}", "t.json:1:6: invalid JSON: expected ':' after the key");
	parse_fails("{\"a\": 01}", "t.json:1:8: invalid JSON: expected ',' or '}'");
	parse_fails("{\"a\": \"x\\q\"}", "t.json:1:10: invalid JSON: invalid escape in string");
	parse_fails("{\"a\": \"x\n\"}",
		    "t.json:1:9: invalid JSON: control character in string (escape it)");
	parse_fails("{\"a\": \"\u00e9t\u00e9\", \"b\": tru}",
		    "t.json:1:19: invalid JSON: expected a value");
	/* not UTF-8: a stray byte, an overlong form, a surrogate (RFC 8259 text is UTF-8) */
	parse_fails("{\"displayName\": \"a\xff\"}", "t.json:1:19: invalid JSON: invalid UTF-8 in string");
	parse_fails("{\"displayName\": \"\xc0\xaf\"}", "t.json:1:18: invalid JSON: invalid UTF-8 in string");
	parse_fails("{\"displayName\": \"\xed\xa0\x80\"}", "t.json:1:18: invalid JSON: invalid UTF-8 in string");
	parse_fails("", "t.json:1:1: invalid JSON: unexpected end of text");
	parse_fails("{} x", "t.json:1:4: invalid JSON: unexpected text after the end");
	parse_fails("{\"displayName\": \"a\\u0000b\"}", "t.json:1:19: NUL character in the text");
	/* what would fail every run is refused here, with its place */
	parse_fails("{\"launchCommand\": []}", "t.json:1:19: launchCommand: must name a program");
	parse_fails("{\"launchCommand\": [\"\"]}", "t.json:1:19: launchCommand: must name a program");
	parse_fails("{\"mounts\": [{\"hostPath\": \"rel/x\", \"containerPath\": \"/x\"}]}",
		    "t.json:1:26: mounts[0].hostPath: \"rel/x\" must be an absolute path or start with \"~/\"");
	parse_fails("{\"mounts\": [{\"hostPath\": \"~/x\", \"containerPath\": \"/\"}]}",
		    "t.json:1:50: mounts[0].containerPath: \"/\" must be a normalised absolute path, not \"/\" and outside /proc, /dev and /sys");
	parse_fails("{\"mounts\": [{\"hostPath\": \"/x\", \"containerPath\": \"/proc/1\"}]}",
		    "t.json:1:49: mounts[0].containerPath: \"/proc/1\" must be a normalised absolute path, not \"/\" and outside /proc, /dev and /sys");
	/* escaped UTF-16 surrogates must pair (cJSON refuses a lone one without saying where) */
	parse_fails("{\"x\": \"\\ud800\"}", "t.json:1:9: invalid JSON: a \\u escape of a high surrogate without a low one after it");
	parse_fails("{\"x\": \"\\ud800\\u0041\"}", "t.json:1:9: invalid JSON: a \\u escape of a high surrogate without a low one after it");
	parse_fails("{\"x\": \"a\\udc00\"}", "t.json:1:10: invalid JSON: a \\u escape of a low surrogate without a high one before it");
	struct profile *ok = NULL;
	pd_err e2 = {0};
	static const char pair[] = "{\"displayName\": \"\\ud83d\\ude00\"}";
	assert_int_equal(profile_parse(pair, strlen(pair), "t.json", "t", &ok, NULL, &e2), 0);
	assert_string_equal(ok->display_name, "\xf0\x9f\x98\x80");
	profile_free(ok);
	struct profile *p = NULL;
	pd_err err = { 0 };
	assert_int_equal(profile_parse("{}\0{}", 5, "t.json", "t", &p, NULL, &err), -EINVAL);
	assert_string_equal(err.msg, "t.json:1:3: NUL character in the text");
}

static void test_unknown_keys_warn(void **state)
{
	_cleanup_strv_ char **w = NULL;
	_cleanup_profile_ struct profile *p = parse_ok(
		"{\"displayName\": \"x\",\n \"colour\": \"red\",\n"
		" \"mounts\": [{\"hostPath\": \"/a\", \"containerPath\": \"/a\", \"mode\": 1}]}",
		&w);
	assert_int_equal(strv_len(w), 2);
	assert_string_equal(w[0], "t.json:2:2: unknown key \"colour\" in the definition (ignored)");
	assert_string_equal(w[1], "t.json:3:55: unknown key \"mode\" in mounts[0] (ignored)");
	assert_string_equal(p->display_name, "x");
	assert_int_equal(p->fields, PROFILE_DISPLAY_NAME | PROFILE_MOUNTS);
}

static void test_null_means_absent(void **state)
{
	_cleanup_profile_ struct profile *p = parse_ok(
		"{\"baseImage\": null, \"mounts\": [{\"hostPath\": \"/a\", \"containerPath\": \"/b\","
		" \"readOnly\": null}]}", NULL);
	assert_int_equal(p->fields, PROFILE_MOUNTS);
	assert_false(p->mounts[0].read_only);
}

static void test_duplicate_key(void **state)
{
	parse_fails("{\"baseImage\": \"a\",\n \"baseImage\": \"b\"}",
		    "t.json:2:2: baseImage: duplicate key");
}

static char *repeat_array(size_t n)
{
	size_t cap = 32 + n * 4;
	char *s = xmalloc(cap), *o = s;
	if (!s)
		abort(); /* (xmalloc never returns NULL; tells the compiler) */
	o += sprintf(o, "{\"installCommands\": [");
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, "%s\"\"", i ? "," : "");
	strcpy(o, "]}");
	return s;
}

static void test_caps(void **state)
{
	_cleanup_free_ char *ok = repeat_array(PROFILE_ITEMS_MAX);
	_cleanup_profile_ struct profile *p = parse_ok(ok, NULL);
	assert_int_equal(strv_len(p->install_commands), PROFILE_ITEMS_MAX);

	_cleanup_free_ char *many = repeat_array(PROFILE_ITEMS_MAX + 1);
	parse_fails(many, "t.json:1:3022: installCommands: more than 1000 items");

	_cleanup_free_ char *lng = xmalloc(PROFILE_STRING_MAX + 64);
	memset(lng, 'a', PROFILE_STRING_MAX + 1);
	lng[PROFILE_STRING_MAX + 1] = '\0';
	_cleanup_free_ char *t = xasprintf("{\"displayName\": \"%s\"}", lng);
	parse_fails(t, "t.json:1:17: displayName: string longer than 65536 bytes");

	char deep[128] = "{\"x\":";
	for (int i = 0; i < 17; i++)
		strcat(deep, "[");
	for (int i = 0; i < 17; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	parse_fails(deep, "t.json:1:22: x[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: "
			  "nested deeper than 16 levels");

	_cleanup_free_ char *huge = xmalloc(PROFILE_FILE_MAX + 2);
	memset(huge, ' ', PROFILE_FILE_MAX + 1);
	huge[PROFILE_FILE_MAX + 1] = '\0';
	parse_fails(huge, "t.json: larger than 1048576 bytes");
}

static void test_builtins(void **state)
{
	_cleanup_strv_ char **names = NULL;
	assert_int_equal(profile_list_at(NULL, &names, NULL), 0);
	const char *want[] = { "claude", "codex", "gemini", "opencode", "pi", "qwen", "shell" };
	assert_int_equal(strv_len(names), ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		assert_string_equal(names[i], want[i]);
		_cleanup_strv_ char **w = NULL;
		_cleanup_profile_ struct profile *p = NULL;
		pd_err err = { 0 };
		if (profile_load_at(NULL, want[i], &p, &w, &err) < 0)
			fail_msg("%s: %s", want[i], err.msg);
		assert_int_equal(strv_len(w), 0);
		assert_string_equal(p->name, want[i]);
		assert_string_equal(p->sources[0], "built-in");
		assert_string_equal(p->base_image, "debian:bookworm");
		if (!streq(want[i], "shell")) {
			assert_string_equal(p->launch_command[0], want[i]);
			assert_string_equal(p->allowed_hosts[strv_len(p->allowed_hosts) - 1],
					    "registry.npmjs.org");
		}
	}
}

static char *mkuserdir(void)
{
	char tmpl[] = "/tmp/test-profile.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	return xstrdup(tmpl);
}

static void put(const char *dir, const char *file, const char *text)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, path, text, strlen(text), 0644), 0);
}

static void test_partial_override_merges(void **state)
{
	_cleanup_free_ char *dir = mkuserdir();
	put(dir, "claude.json", "{\"allowedHosts\": [\"api.anthropic.com\"],\n"
				" \"launchCommand\": [\"claude\", \"--dangerously-skip-permissions\"]}");
	_cleanup_profile_ struct profile *builtin = NULL, *p = NULL;
	assert_int_equal(profile_load_at(NULL, "claude", &builtin, NULL, NULL), 0);
	pd_err err = { 0 };
	assert_int_equal(profile_load_at(dir, "claude", &p, NULL, &err), 0);
	/* arrays given in the override replace the built-in's whole */
	assert_int_equal(strv_len(p->allowed_hosts), 1);
	assert_string_equal(p->allowed_hosts[0], "api.anthropic.com");
	assert_int_equal(strv_len(p->launch_command), 2);
	/* absent keys keep the built-in values */
	assert_string_equal(p->display_name, builtin->display_name);
	assert_string_equal(p->base_image, builtin->base_image);
	assert_int_equal(strv_len(p->install_commands), strv_len(builtin->install_commands));
	assert_int_equal(strv_len(p->environment), strv_len(builtin->environment));
	assert_int_equal(strv_len(p->sources), 2);
	assert_string_equal(p->sources[0], "built-in");
	assert_true(startswith(p->sources[1], dir));
	rm_rf(dir);
}

static void test_new_profile_and_listing(void **state)
{
	_cleanup_free_ char *dir = mkuserdir();
	put(dir, "foo.json", full);
	put(dir, "half.json", "{\"displayName\": \"Half\", \"launchCommand\": [\"x\"]}");
	put(dir, "Bad Name.json", "{}");
	put(dir, "notes.txt", "{}");
	put(dir, PROFILE_VM_BASE ".json", full); /* paddock's own name: neither listed nor loaded */
	_cleanup_strv_ char **names = NULL;
	assert_int_equal(profile_list_at(dir, &names, NULL), 0);
	assert_int_equal(strv_len(names), 9);
	assert_false(strv_contains(names, PROFILE_VM_BASE));
	struct profile *own = NULL;
	pd_err own_err = { 0 };
	assert_int_equal(profile_load_at(dir, PROFILE_VM_BASE, &own, NULL, &own_err), -EINVAL);
	assert_null(own);
	assert_non_null(strstr(own_err.msg, "paddock's own image for vm boxes"));
	assert_string_equal(names[2], "foo");
	assert_string_equal(names[4], "half");

	_cleanup_profile_ struct profile *p = NULL;
	assert_int_equal(profile_load_at(dir, "foo", &p, NULL, NULL), 0);
	assert_string_equal(p->display_name, "Foo");

	struct profile *q = NULL;
	pd_err err = { 0 };
	assert_int_equal(profile_load_at(dir, "half", &q, NULL, &err), -EINVAL);
	_cleanup_free_ char *want =
		xasprintf("%s/half.json: incomplete agent definition: missing baseImage, "
			  "installCommands", dir);
	assert_string_equal(err.msg, want);
	rm_rf(dir);
}

static void test_user_file_error_names_file(void **state)
{
	_cleanup_free_ char *dir = mkuserdir();
	put(dir, "pi.json", "{\n  \"mounts\": [{\"hostPath\": 1}]\n}");
	struct profile *p = NULL;
	pd_err err = { 0 };
	assert_int_equal(profile_load_at(dir, "pi", &p, NULL, &err), -EINVAL);
	_cleanup_free_ char *want =
		xasprintf("%s/pi.json:2:27: mounts[0].hostPath: expected a string", dir);
	assert_string_equal(err.msg, want);
	rm_rf(dir);
}

static void test_unknown_profile_lists_known(void **state)
{
	struct profile *p = NULL;
	pd_err err = { 0 };
	assert_int_equal(profile_load_at(NULL, "clod", &p, NULL, &err), -ENOENT);
	assert_string_equal(err.msg, "unknown profile 'clod' (known: claude, codex, gemini, "
				     "opencode, pi, qwen, shell)");
	assert_int_equal(profile_load_at(NULL, "../etc/passwd", &p, NULL, &err), -EINVAL);
	assert_int_equal(profile_load_at(NULL, "", &p, NULL, &err), -EINVAL);
	assert_int_equal(profile_load_at(NULL, ".hidden", &p, NULL, &err), -EINVAL);
	assert_false(profile_name_valid("a/b"));
	assert_true(profile_name_valid("my-agent_2.x"));
}

static void test_to_json_round_trip(void **state)
{
	_cleanup_profile_ struct profile *p = parse_ok(full, NULL);
	_cleanup_free_ char *json = profile_to_json(p);
	assert_non_null(strstr(json, "\n    \"displayName\": \"Foo\",\n"));
	assert_non_null(strstr(json, "\"readOnly\": false"));
	_cleanup_profile_ struct profile *q = parse_ok(json, NULL);
	_cleanup_free_ char *again = profile_to_json(q);
	assert_string_equal(json, again);
	assert_int_equal(q->fields, p->fields);
}

static void test_env_resolve(void **state)
{
	_cleanup_profile_ struct profile *p = parse_ok(
		"{\"environmentVariables\": [\"KEY\", \"MISSING\", \"A=1\", \"A=2\", \"E=\"]}", NULL);
	char *host[] = { "KEYS=no", "KEY=secret", "PATH=/bin", NULL };
	_cleanup_strv_ char **env = profile_env_resolve(p, host);
	assert_int_equal(strv_len(env), 3);
	assert_string_equal(env[0], "KEY=secret");
	assert_string_equal(env[1], "A=2");
	assert_string_equal(env[2], "E=");
}

static void test_expand_home_and_rules(void **state)
{
	_cleanup_free_ char *a = profile_expand_home("~/.claude", "/home/u");
	_cleanup_free_ char *b = profile_expand_home("~", "/home/u");
	_cleanup_free_ char *c = profile_expand_home("~other/x", "/home/u");
	assert_string_equal(a, "/home/u/.claude");
	assert_string_equal(b, "/home/u");
	assert_string_equal(c, "~other/x");

	_cleanup_profile_ struct profile *p =
		parse_ok("{\"allowedHosts\": [\"a.com\", \"*.b.com\", \".c.com\"]}", NULL);
	_cleanup_strv_ char **r = profile_egress_rules(p);
	const char *want[] = { "a.com", "b.com", "*.b.com", "c.com", "*.c.com" };
	assert_int_equal(strv_len(r), ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(r[i], want[i]);
}

static void test_user_dir(void **state)
{
	setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
	_cleanup_free_ char *a = profile_user_dir();
	assert_string_equal(a, "/x/cfg/paddock/agents");
	setenv("XDG_CONFIG_HOME", "relative", 1); /* ignored, as the XDG spec says */
	setenv("HOME", "/home/u", 1);
	_cleanup_free_ char *b = profile_user_dir();
	assert_string_equal(b, "/home/u/.config/paddock/agents");
	unsetenv("XDG_CONFIG_HOME");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandboxy_every_key),
		cmocka_unit_test(test_error_positions),
		cmocka_unit_test(test_error_bad_host_mentions_position),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_unknown_keys_warn),
		cmocka_unit_test(test_null_means_absent),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_builtins),
		cmocka_unit_test(test_partial_override_merges),
		cmocka_unit_test(test_new_profile_and_listing),
		cmocka_unit_test(test_user_file_error_names_file),
		cmocka_unit_test(test_unknown_profile_lists_known),
		cmocka_unit_test(test_to_json_round_trip),
		cmocka_unit_test(test_env_resolve),
		cmocka_unit_test(test_expand_home_and_rules),
		cmocka_unit_test(test_user_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
