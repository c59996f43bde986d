/* netopts.c — the network options of run/create (issue 4): --net PRESET, --allow RULE,
 * --deny RULE, --resolve NAME=ADDR, -p [HOSTADDR:]HOSTPORT:BOXPORT. Values are recorded in
 * the box's spec; the egress engine validates rules fully when the box starts. */
#include "cli/cli.h"

int cli_net_option(const char *verb, int which, const char *arg, struct box_net *net)
{
	switch (which) {
	case 'N': /* --net */
		if (!streq(arg, "none") && !streq(arg, "balanced") && !streq(arg, "open"))
			return cli_usage(verb, "--net must be none, balanced or open, got '%s'", arg);
		free(net->preset);
		net->preset = xstrdup(arg);
		return 0;
	case 'O': /* --allow */
	case 'P': /* --deny */
		if (!*arg || strlen(arg) > 300 || strpbrk(arg, " \t\n/@"))
			return cli_usage(verb, "--%s wants a rule like host, *.suffix or host:port, got '%s'",
					 which == 'O' ? "allow" : "deny", arg);
		if (which == 'O')
			net->allow = strv_append(net->allow, arg);
		else
			net->deny = strv_append(net->deny, arg);
		return 0;
	case 'Q': /* --resolve */
		if (!strchr(arg, '=') || arg[0] == '=' || strlen(arg) > 300)
			return cli_usage(verb, "--resolve wants NAME=ADDR, got '%s'", arg);
		net->resolve = strv_append(net->resolve, arg);
		return 0;
	case 'p':
		if (!strchr(arg, ':') || strlen(arg) > 100)
			return cli_usage(verb, "-p wants [HOSTADDR:]HOSTPORT:BOXPORT, got '%s'", arg);
		net->publish = strv_append(net->publish, arg);
		return 0;
	}
	return cli_usage(verb, "unknown network option");
}
