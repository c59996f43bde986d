/* cmd_profile.c — `paddock profile ls` and `paddock profile show NAME`: agent definitions
 * (built-in, plus $XDG_CONFIG_HOME/paddock/agents/NAME.json merged on top). */
#include "cli/cli.h"
#include "workspace/ws_path.h"
#include "profile/profile.h"

static int profile_ls(void)
{
	pd_err err = {0};
	_cleanup_strv_ char **names = NULL;
	if (profile_list(&names, &err) < 0)
		return cli_fail(&err);
	_cleanup_strv_ char **states = cli_profile_image_states(names);
	printf("%-12s %-28s %-16s %s\n", "NAME", "DISPLAY NAME", "IMAGE", "FROM");
	for (size_t i = 0; names[i]; i++) {
		struct profile *p = NULL;
		_cleanup_strv_ char **warn = NULL;
		if (profile_load(names[i], &p, &warn, &err) < 0) {
			printf("%-12s (invalid: %s)\n", names[i], err.msg);
			continue;
		}
		_cleanup_free_ char *from = NULL;
		for (size_t k = 0; p->sources && p->sources[k]; k++) {
			char *n = xasprintf("%s%s%s", from ? from : "", from ? " + " : "", p->sources[k]);
			free(from);
			from = n;
		}
		/* a profile without install commands runs on its base: nothing of its own to build */
		const char *img = p->install_commands && p->install_commands[0] ? states[i] : "(base image)";
		/* a profile file's text never reaches the terminal raw (escape sequences) */
		_cleanup_free_ char *shown = ws_escape_name(p->display_name ? p->display_name : "");
		printf("%-12s %-28s %-16s %s\n", names[i], shown, img, from ? from : "");
		profile_free(p);
	}
	return 0;
}

static int profile_show(const char *name)
{
	if (!profile_name_valid(name)) /* no file can hold it: a usage error, as a sandbox name's */
		return cli_usage("profile", "invalid profile name '%s' (expected [a-z0-9][a-z0-9._-]*)", name);
	pd_err err = {0};
	struct profile *p = NULL;
	_cleanup_strv_ char **warn = NULL;
	if (profile_load(name, &p, &warn, &err) < 0)
		return cli_fail(&err);
	for (size_t i = 0; warn && warn[i]; i++)
		fprintf(stderr, "paddock: warning: %s\n", warn[i]);
	_cleanup_free_ char *json = profile_to_json(p);
	printf("%s\n", json);
	profile_free(p);
	return 0;
}

int cmd_profile(int argc, char **argv)
{
	bool help = argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"));
	for (int i = 2; i < argc; i++) /* `profile ls --help`, `profile show --help` */
		help = help || streq(argv[i], "--help") || streq(argv[i], "-h");
	if (argc < 2 || help) {
		printf("Usage: paddock profile ls\n       paddock profile show NAME\n\n"
		       "Agent definitions in the sandboxy JSON format: the built-ins (claude, codex, gemini, pi,\n"
		       "opencode, qwen, shell) and $XDG_CONFIG_HOME/paddock/agents/NAME.json, which adds a\n"
		       "profile or overrides a built-in key by key. show prints the effective merged JSON.\n");
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (streq(argv[1], "ls") && argc == 2)
		return profile_ls();
	if (streq(argv[1], "show") && argc == 3)
		return profile_show(argv[2]);
	return cli_usage("profile", "usage: paddock profile ls | paddock profile show NAME");
}
