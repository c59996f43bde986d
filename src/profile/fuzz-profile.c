/* fuzz-profile.c — libFuzzer target over the profile parser. Invariants: a definition that
 * parses prints (profile_to_json) to text that parses back to the same definition, merging it
 * onto a built-in keeps the built-in complete, and the run-time helpers accept it. */
#include <assert.h>

#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct profile *p)
{
	_cleanup_free_ char *json = profile_to_json(p);
	_cleanup_profile_ struct profile *q = NULL;
	pd_err err = { 0 };
	int r = profile_parse(json, strlen(json), "again", "x", &q, NULL, &err);
	if (r < 0 && !(p->fields & (PROFILE_DISPLAY_NAME | PROFILE_BASE_IMAGE)))
		return; /* unset strings print as "", which is not a valid value */
	assert(r == 0);
	_cleanup_free_ char *json2 = profile_to_json(q);
	assert(streq(json, json2));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct profile *builtin;
	if (!builtin)
		assert(profile_load_at(NULL, "claude", &builtin, NULL, NULL) == 0);

	_cleanup_profile_ struct profile *p = NULL;
	_cleanup_strv_ char **warnings = NULL;
	if (profile_parse((const char *)data, size, "fuzz.json", "fuzz", &p, &warnings, NULL) < 0)
		return 0;
	assert(strv_len(warnings) <= PROFILE_WARNINGS_MAX);
	if ((p->fields & (PROFILE_DISPLAY_NAME | PROFILE_BASE_IMAGE)) ==
	    (PROFILE_DISPLAY_NAME | PROFILE_BASE_IMAGE))
		check_round_trip(p);

	_cleanup_profile_ struct profile *m = NULL;
	assert(profile_parse("{}", 2, "empty", "claude", &m, NULL, NULL) == 0);
	profile_merge(m, builtin);
	profile_merge(m, p);
	if (!(p->fields & PROFILE_LAUNCH_COMMAND) || (p->launch_command[0] && p->launch_command[0][0]))
		assert(profile_check_complete(m, NULL) == 0);
	char *host[] = { "A=1", "PATH=/bin", NULL };
	_cleanup_strv_ char **env = profile_env_resolve(m, host);
	_cleanup_strv_ char **rules = profile_egress_rules(m);
	assert(strv_len(env) <= strv_len(m->environment));
	assert(strv_len(rules) <= 2 * strv_len(m->allowed_hosts));
	for (size_t i = 0; i < m->n_mounts; i++)
		free(profile_expand_home(m->mounts[i].host_path, "/home/u"));
	return 0;
}
