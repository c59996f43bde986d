/* netopts.c — the network options of run/create (issue 4): --net PRESET, --allow RULE,
 * --deny RULE, --resolve NAME=ADDR, -p [HOSTADDR:]HOSTPORT:BOXPORT. Values are recorded in
 * the box's spec, each checked first by the parser that will use it (the egress policy's, the
 * resolve map's, the network layer's), so a bad value is a usage error (2) before anything
 * is created. */
#include "cli/cli.h"
#include "egress/dial.h"
#include "egress/policy.h"
#include "supervisor/net.h"

/* the parser's own words, as a usage error */
static int bad(const char *verb, const pd_err *err)
{
	return cli_usage(verb, "%s", err->msg);
}

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
		if (!*arg || strlen(arg) > 300 || strpbrk(arg, " \t\n/@") || arg[0] == '!')
			return cli_usage(verb, "--%s wants a rule like host, *.suffix or host:port, got '%s'",
					 which == 'O' ? "allow" : "deny", arg);
		{
			_cleanup_policy_ struct egress_policy *pol = egress_policy_new();
			pd_err err = {0};
			if (egress_policy_add(pol, arg, which == 'P', &err) < 0)
				return bad(verb, &err);
		}
		if (which == 'O')
			net->allow = strv_append(net->allow, arg);
		else
			net->deny = strv_append(net->deny, arg);
		return 0;
	case 'Q': /* --resolve */
		if (!strchr(arg, '=') || arg[0] == '=' || strlen(arg) > 300)
			return cli_usage(verb, "--resolve wants NAME=ADDR, got '%s'", arg);
		{
			char *one[] = {(char *)arg, NULL};
			struct egress_resolve_map *m = NULL;
			pd_err err = {0};
			if (egress_resolve_map_new(one, &m, &err) < 0)
				return bad(verb, &err);
			egress_resolve_map_free(m);
		}
		net->resolve = strv_append(net->resolve, arg);
		return 0;
	case 'p':
		if (!strchr(arg, ':') || strlen(arg) > 100)
			return cli_usage(verb, "-p wants [HOSTADDR:]HOSTPORT:BOXPORT, got '%s'", arg);
		{
			struct in_addr h;
			uint16_t hp, bp;
			pd_err err = {0};
			if (sup_net_parse_publish(arg, &h, &hp, &bp, &err) < 0)
				return bad(verb, &err);
		}
		net->publish = strv_append(net->publish, arg);
		return 0;
	}
	return cli_usage(verb, "unknown network option");
}
