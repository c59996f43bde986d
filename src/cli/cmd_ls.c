/* cmd_ls.c — `paddock ls [--json]`. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "runtime/ns/ns_cgroup.h"

static void age(int64_t t, char *buf, size_t n)
{
	int64_t d = time(NULL) - t;
	if (t <= 0)
		snprintf(buf, n, "-");
	else if (d < 60)
		snprintf(buf, n, "%llds ago", (long long)d);
	else if (d < 3600)
		snprintf(buf, n, "%lldm ago", (long long)(d / 60));
	else if (d < 86400)
		snprintf(buf, n, "%lldh ago", (long long)(d / 3600));
	else
		snprintf(buf, n, "%lldd ago", (long long)(d / 86400));
}

static void add_json(cJSON *arr, const struct box_spec *s, enum box_status st, const struct box_state *state)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddStringToObject(o, "status", box_status_name(st));
	cJSON_AddStringToObject(o, "backend", s->backend);
	cJSON_AddStringToObject(o, "user", s->user);
	cJSON_AddNumberToObject(o, "created", (double)s->created);
	if (st == BOX_STATUS_RUNNING)
		cJSON_AddNumberToObject(o, "supervisor_pid", state->supervisor_pid);
	if (state->last_exit >= 0)
		cJSON_AddNumberToObject(o, "last_exit", state->last_exit);
	cJSON_AddItemToArray(arr, o);
}

/* Why the box at dir cannot be listed from its config.json (store_load_spec said r, err), or
 * NULL when it is a box in the making: store_create makes the directory, then config.json,
 * written whole by a rename. One without it for 30 s (a create killed half-way) is broken. */
static char *broken_reason(const char *dir, int r, const pd_err *err)
{
	struct stat st;
	if (r == -ENOENT)
		return stat(dir, &st) == 0 && st.st_mtime + 30 < time(NULL) ? xstrdup("config.json is missing") : NULL;
	if (r == -EINVAL)
		return xstrdup(err->msg); /* "config.json is not valid JSON", "… is malformed" */
	return xasprintf("config.json cannot be read: %s", strerror(-r));
}

/* A box paddock cannot read: listed, never hidden (its name stays taken); rm removes it. */
static void add_broken_json(cJSON *arr, const char *name, const char *why, enum box_status st,
			    const struct box_state *state)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "status", "broken");
	cJSON_AddStringToObject(o, "reason", why);
	cJSON_AddNullToObject(o, "backend");
	cJSON_AddNullToObject(o, "user");
	cJSON_AddNullToObject(o, "created");
	if (st == BOX_STATUS_RUNNING)
		cJSON_AddNumberToObject(o, "supervisor_pid", state->supervisor_pid);
	if (state->last_exit >= 0)
		cJSON_AddNumberToObject(o, "last_exit", state->last_exit);
	cJSON_AddItemToArray(arr, o);
}

/* Lists the box at dir whose configuration could not be loaded (r, err), unless it is only
 * being made. The table's notes go to stderr, after it, with what removes the box. */
static void list_broken(cJSON *arr, bool json, const char *name, const char *dir, int r, const pd_err *err,
			char ***notes)
{
	_cleanup_free_ char *why = broken_reason(dir, r, err);
	if (!why)
		return;
	struct box_state state;
	enum box_status st = store_status(dir, &state);
	if (json) {
		add_broken_json(arr, name, why, st, &state);
		return;
	}
	printf("%-28s %-8s %-7s %s\n", name, "broken", "-", "-");
	_cleanup_free_ char *note = st == BOX_STATUS_RUNNING
		? xasprintf("%s is broken: %s; its supervisor still runs: 'paddock rm -f %s' stops and removes it",
			    name, why, name)
		: xasprintf("%s is broken: %s; 'paddock rm %s' removes it", name, why, name);
	*notes = strv_append(*notes, note);
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("Usage: paddock ls [--json]\n\nList sandboxes: running, stopped, dead (their "
			       "supervisor vanished; 'paddock rm' cleans them), or broken (their config.json cannot "
			       "be read; 'paddock rm' removes them).\n");
			return 0;
		}
		if (c != 'j')
			return cli_usage("ls", "unknown option '%s'", argv[optind - 1]);
		json = true;
	}
	if (optind < argc)
		return cli_usage("ls", "unexpected argument '%s'", argv[optind]);
	pd_err err = {0};
	_cleanup_free_ char *home = NULL;
	_cleanup_strv_ char **names = NULL, **notes = NULL;
	if (store_home(&home, &err) < 0)
		return cli_fail(&err);
	store_sweep_gone(home);
	if (store_list(home, &names, &err) < 0)
		return cli_fail(&err);
	cJSON *arr = cJSON_CreateArray();
	if (!json)
		printf("%-28s %-8s %-7s %s\n", "NAME", "STATUS", "BACKEND", "CREATED");
	for (size_t i = 0; names[i]; i++) {
		_cleanup_free_ char *dir = store_box_dir(home, names[i]);
		struct box_spec s = {0};
		struct box_state state;
		pd_err bad = {0};
		int r = store_load_spec(dir, &s, &bad);
		if (r < 0) {
			list_broken(arr, json, names[i], dir, r, &bad, &notes);
			continue;
		}
		enum box_status st = store_status(dir, &state);
		/* a `run --rm` whose run was killed (SIGKILL: it could not clean up) is what --rm
		 * asked to throw away: gone here, with its cgroups. Only once it is 30 s old: a run
		 * that is starting holds no lock for a moment after its state directory is made. */
		if (st == BOX_STATUS_DEAD && state.in_run && s.created + 30 < (int64_t)time(NULL)) {
			_cleanup_close_ int lock = store_lock(dir, "lock", false);
			if (lock >= 0 && store_status(dir, &state) == BOX_STATUS_DEAD) {
				_cleanup_free_ char *leaf = ns_cgroup_leaf(names[i], dir);
				ns_cgroup_remove_stale(leaf);
				store_remove(dir, NULL);
				box_spec_free(&s);
				continue;
			}
		}
		char a[32];
		age(s.created, a, sizeof(a));
		if (json)
			add_json(arr, &s, st, &state);
		else
			printf("%-28s %-8s %-7s %s\n", s.name, box_status_name(st), s.backend, a);
		box_spec_free(&s);
	}
	if (json) {
		char *out = cJSON_Print(arr);
		printf("%s\n", out);
		free(out);
	}
	fflush(stdout);
	for (size_t i = 0; notes && notes[i]; i++)
		fprintf(stderr, "paddock: note: %s\n", notes[i]);
	cJSON_Delete(arr);
	return 0;
}
