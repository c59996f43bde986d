/* cmd_policy.c — `paddock policy ls|allow|deny|rm [--sandbox NAME] [RULE]`: edit the egress
 * rule files. Global rules: $XDG_CONFIG_HOME/paddock/policy; per-sandbox rules: the box's
 * state directory, file `policy`. Both are policy.h text; each edit parses the file, changes
 * one rule and writes the whole file back atomically (a reader never sees half a file). A
 * running box's supervisor stats both files once a second and applies changes live. */
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>

#include "cli/cli.h"
#include "egress/policy.h"
#include "supervisor/net.h"
#include "util/fdio.h"

static void policy_help(void)
{
	printf("Usage: paddock policy ls [--sandbox NAME]\n"
	       "       paddock policy allow|deny|rm [--sandbox NAME] RULE\n\n"
	       "Edit the egress rules: global ones (every sandbox) or, with --sandbox, one sandbox's.\n"
	       "RULE is host, *.suffix or .suffix, optionally :PORT (default 80 and 443) or :*.\n"
	       "`rm` removes the rule whether it allows or denies. Running sandboxes apply changes\n"
	       "within a second. `ls --sandbox NAME` prints the policy the sandbox runs with.\n");
}

static int load(const char *path, struct egress_policy **ret, pd_err *err)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_file_at(AT_FDCWD, path, EGRESS_POLICY_TEXT_MAX, &text, &len);
	if (r < 0 && r != -ENOENT)
		return pd_error(err, r, "cannot read %s", path);
	if (r == 0 && egress_policy_parse(p, text, len, path, err) < 0)
		return -EINVAL;
	*ret = TAKE_PTR(p);
	return 0;
}

static int save(const char *path, const struct egress_policy *p, pd_err *err)
{
	_cleanup_free_ char *dir = xstrdup(path);
	_cleanup_free_ char *body = egress_policy_format(p);
	_cleanup_free_ char *text = xasprintf("# paddock egress rules (edit with `paddock policy`)\n%s", body);
	int r = mkdir_p(dirname(dir), 0700);
	if (r == 0)
		r = write_file_atomic_at(AT_FDCWD, path, text, strlen(text), 0600);
	return r < 0 ? pd_error(err, r, "cannot write %s", path) : 0;
}

static int edit(const char *verb, const char *path, const char *rule, pd_err *err)
{
	_cleanup_policy_ struct egress_policy *p = NULL;
	int r = load(path, &p, err);
	if (r < 0)
		return r;
	if (streq(verb, "allow") || streq(verb, "deny")) {
		bool deny = streq(verb, "deny");
		/* one rule, one verdict: allowing a denied rule drops the deny and vice versa */
		egress_policy_remove(p, rule, !deny, NULL);
		r = egress_policy_add(p, rule, deny, err);
	} else {
		int a = egress_policy_remove(p, rule, false, NULL), d = egress_policy_remove(p, rule, true, NULL);
		r = a < 0 && d < 0 ? pd_error_msg(err, ENOENT, "no rule '%s' in %s", rule, path) : 0;
	}
	return r < 0 ? r : save(path, p, err);
}

static int list(const char *box, const char *path, pd_err *err)
{
	_cleanup_policy_ struct egress_policy *p = NULL;
	int r;
	if (box) {
		_cleanup_free_ char *dir = NULL;
		struct box_spec spec = {0};
		r = cli_box_dir(box, NULL, &dir, err);
		if (r == 0)
			r = store_load_spec(dir, &spec, err);
		if (r == 0)
			r = sup_net_load_policy(&spec, dir, &p, err);
		box_spec_free(&spec);
	} else {
		r = load(path, &p, err);
	}
	if (r < 0)
		return r;
	_cleanup_free_ char *text = egress_policy_format(p);
	fputs(text, stdout);
	return 0;
}

/* A global change reaches the boxes whose supervisors read this file: say which running
 * ones read another (started with another XDG_CONFIG_HOME or HOME), where it does not. */
static void note_other_globals(const char *path)
{
	_cleanup_free_ char *home = NULL;
	_cleanup_strv_ char **names = NULL;
	if (store_home(&home, NULL) < 0 || store_list(home, &names, NULL) < 0)
		return;
	for (char **nm = names; nm && *nm; nm++) {
		_cleanup_free_ char *dir = store_box_dir(home, *nm);
		if (store_status(dir, NULL) != BOX_STATUS_RUNNING)
			continue;
		_cleanup_free_ char *got = sup_net_box_global_record(dir);
		if (got && !streq(got, path))
			fprintf(stderr, "paddock: note: %s follows %s, not this file: the change does not reach it\n", *nm, got);
	}
}

int cmd_policy(int argc, char **argv)
{
	static const struct option opts[] = {
		{"sandbox", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {0}};
	const char *box = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+s:h", opts, NULL)) != -1) {
		if (c == 'h') {
			policy_help();
			return 0;
		}
		if (c != 's')
			return cli_usage("policy", "unknown option '%s'", argv[optind - 1]);
		box = optarg;
	}
	if (optind >= argc)
		return cli_usage("policy", "policy wants ls, allow, deny or rm");
	const char *verb = argv[optind++];
	/* options may also follow the verb, before or after the rule: paddock policy allow
	 * --sandbox b x.com, paddock policy allow x.com --sandbox b. By hand: getopt keeps the
	 * first call's ordering mode ('+') for the rest of the process. */
	char **rest = xcalloc((size_t)argc + 1, sizeof(char *));
	int n_rest = 0;
	bool opts_end = false;
	for (int i = optind; i < argc; i++) {
		const char *a = argv[i];
		if (opts_end) {
			rest[n_rest++] = argv[i];
			continue;
		}
		if (streq(a, "--")) {
			opts_end = true;
			continue;
		}
		if (startswith(a, "-s") && a[2]) { /* -sNAME */
			box = a + 2;
			continue;
		}
		if (streq(a, "-h") || streq(a, "--help")) {
			free(rest);
			policy_help();
			return 0;
		}
		if (streq(a, "-s") || streq(a, "--sandbox")) {
			if (i + 1 >= argc) {
				free(rest);
				return cli_usage("policy", "%s wants a sandbox name", a);
			}
			box = argv[++i];
		} else if (startswith(a, "--sandbox=")) {
			box = a + strlen("--sandbox=");
		} else if (a[0] == '-' && a[1]) {
			free(rest);
			return cli_usage("policy", "unknown option '%s'", a);
		} else {
			rest[n_rest++] = argv[i];
		}
	}
	for (int i = 0; i < n_rest; i++)
		argv[optind + i] = rest[i];
	argc = optind + n_rest;
	free(rest);
	pd_err err = {0};
	_cleanup_free_ char *path = NULL, *dir = NULL;
	if (box && cli_check_name("policy", box))
		return EXIT_USAGE;
	if (box && cli_box_dir(box, NULL, &dir, &err) < 0)
		return cli_fail(&err);
	path = dir ? xasprintf("%s/policy", dir) : sup_net_global_policy_path();
	if (streq(verb, "ls")) {
		if (optind != argc)
			return cli_usage("policy", "ls takes no RULE");
		return list(box, path, &err) < 0 ? cli_fail(&err) : 0;
	}
	if (!streq(verb, "allow") && !streq(verb, "deny") && !streq(verb, "rm"))
		return cli_usage("policy", "unknown policy verb '%s' (ls, allow, deny, rm)", verb);
	if (optind != argc - 1)
		return cli_usage("policy", "%s takes exactly one RULE", verb);
	/* a bad rule is a usage error, said by the parser that will read it */
	const char *rule = argv[optind];
	if (rule[0] == '!')
		return cli_usage("policy", "'%s': the verb says allow or deny; a rule here has no '!'", rule);
	if (!streq(verb, "rm")) {
		_cleanup_policy_ struct egress_policy *t = egress_policy_new();
		if (egress_policy_add(t, rule, streq(verb, "deny"), &err) < 0)
			return cli_usage("policy", "%s", err.msg);
	}
	if (edit(verb, path, rule, &err) < 0)
		return cli_fail(&err);
	if (!dir)
		note_other_globals(path);
	return 0;
}
