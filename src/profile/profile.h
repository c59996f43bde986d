/* profile.h — agent profiles: what to install, what to launch, what to forward, what to reach.
 *
 * A profile is JSON in the format of the `sandboxy` example of apple/containerization, so
 * existing definitions work unchanged (docs/profiles.md):
 *
 *   displayName           string    shown to the user
 *   baseImage             string    image the profile is built on ("debian:bookworm", an OCI ref)
 *   installCommands       [string]  each run with `sh -c`, in order, in a build box
 *   launchCommand         [string]  argv of the agent (run-time ARGS are appended)
 *   environmentVariables  [string]  "NAME" forwards the host's value (when set), "NAME=VALUE" sets
 *   mounts                [{hostPath, containerPath, readOnly (default false)}]; "~" expands
 *   allowedHosts          [string]  exact names or "*.suffix"; empty = deny everything
 *
 * Built-ins (profiles/NAME.json, compiled in) come first; $XDG_CONFIG_HOME/paddock/agents/NAME.json
 * (default ~/.config/paddock/agents) adds a profile or overrides a built-in key by key: a key
 * present in the user file replaces the built-in's value whole (arrays are replaced, not
 * appended), absent keys keep the built-in's. A new profile needs displayName, baseImage,
 * installCommands and launchCommand (as in sandboxy).
 *
 * Errors carry FILE:LINE:COL and the key path ("claude.json:7:18: mounts[1].readOnly: expected
 * a boolean"). Unknown keys are warnings, returned in a list, never printed here.
 * Caps: file <= 1 MiB, <= 1000 items per array or object, strings <= 64 KiB, nesting <= 16. */
#pragma once

#include "util/error.h"

#define PROFILE_FILE_MAX (1024 * 1024)
#define PROFILE_ITEMS_MAX 1000
#define PROFILE_STRING_MAX (64 * 1024)
#define PROFILE_DEPTH_MAX 16
#define PROFILE_NAME_MAX 64
#define PROFILE_WARNINGS_MAX 100
/* paddock's own profile for the vm backend's default root (cli/vmbase.c): defined in code, so
 * no file may take its name (its image would replace paddock's) */
#define PROFILE_VM_BASE "vm-base"

/* Which keys a definition set (a user override sets only some). */
enum profile_field {
	PROFILE_DISPLAY_NAME = 1 << 0,
	PROFILE_BASE_IMAGE = 1 << 1,
	PROFILE_INSTALL_COMMANDS = 1 << 2,
	PROFILE_LAUNCH_COMMAND = 1 << 3,
	PROFILE_ENVIRONMENT = 1 << 4,
	PROFILE_MOUNTS = 1 << 5,
	PROFILE_ALLOWED_HOSTS = 1 << 6,
	PROFILE_REQUIRED = PROFILE_DISPLAY_NAME | PROFILE_BASE_IMAGE | PROFILE_INSTALL_COMMANDS |
			   PROFILE_LAUNCH_COMMAND,
};

struct profile_mount {
	char *host_path;       /* as written ("~/.claude"); see profile_expand_home() */
	char *container_path;  /* absolute, no ".." */
	bool read_only;
};

struct profile {
	char *name;
	unsigned fields;            /* enum profile_field bits set so far */
	char *display_name;
	char *base_image;
	char **install_commands;    /* strv; non-NULL once the field is set (maybe empty) */
	char **launch_command;
	char **environment;
	char **allowed_hosts;
	struct profile_mount *mounts;
	size_t n_mounts;
	char **sources;             /* where it came from, in merge order ("built-in", paths) */
};

void profile_free(struct profile *p);
static inline void profile_freep(struct profile **p) { profile_free(*p); }
#define _cleanup_profile_ _cleanup_(profile_freep)

/* True for [a-z0-9][a-z0-9._-]* up to PROFILE_NAME_MAX bytes (also a safe file name). */
bool profile_name_valid(const char *name);

/* Parses one definition. filename is only used in messages. Keys absent from the text are
 * left unset (p->fields says which are set). Unknown keys append a warning to *ret_warnings
 * (a strv, created if NULL; at most PROFILE_WARNINGS_MAX). Pure. */
int profile_parse(const char *text, size_t len, const char *filename, const char *name,
		  struct profile **ret, char ***ret_warnings, pd_err *err);
/* Copies every field set in over onto base (replacing it whole) and appends over's sources. */
void profile_merge(struct profile *base, const struct profile *over);
/* -EINVAL unless the required fields are set and launchCommand is non-empty. */
int profile_check_complete(const struct profile *p, pd_err *err);

/* The effective definition as pretty-printed JSON, keys in the canonical order, every key
 * present (what `paddock profile show NAME` prints). malloc'd. */
char *profile_to_json(const struct profile *p);

/* paddock's configuration directory: $XDG_CONFIG_HOME/paddock if XDG_CONFIG_HOME is absolute,
 * else $HOME/.config/paddock (HOME from the passwd entry when unset). malloc'd; NULL when
 * neither is known. */
char *profile_config_dir(void);
/* The user directory of profiles: profile_config_dir()/agents. */
char *profile_user_dir(void);

/* Loads NAME: built-in, then user_dir/NAME.json merged on top (user_dir may be NULL). An
 * unknown name fails with -ENOENT and lists the known ones. */
int profile_load_at(const char *user_dir, const char *name, struct profile **ret,
		    char ***ret_warnings, pd_err *err);
int profile_load(const char *name, struct profile **ret, char ***ret_warnings, pd_err *err);
/* Sorted, de-duplicated names: built-ins and user_dir/ *.json with a valid name. */
int profile_list_at(const char *user_dir, char ***ret_names, pd_err *err);
int profile_list(char ***ret_names, pd_err *err);

/* "~" -> home, "~/x" -> home/x, anything else copied. malloc'd. */
char *profile_expand_home(const char *host_path, const char *home);
/* The environment for the agent: "NAME=VALUE" entries as written; a bare "NAME" becomes
 * "NAME=<host value>" when host_env has it and is skipped otherwise. Later entries win. */
char **profile_env_resolve(const struct profile *p, char *const *host_env);
/* allowedHosts as egress rules (src/egress/policy.h) with sandboxy's meaning: sandboxy's
 * "*.example.com" also matches example.com itself, the egress rule does not, so both
 * "example.com" and "*.example.com" are emitted. */
char **profile_egress_rules(const struct profile *p);
