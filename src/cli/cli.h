/* cli.h — the verb table's handlers and the helpers they share. Each verb parses its
 * options, calls the library, prints, and returns the process exit status:
 * the command's own status for run/exec, EXIT_USAGE for usage errors, EXIT_FAILURE_PD when
 * paddock itself failed. */
#pragma once

#include "supervisor/store.h"

#define EXIT_USAGE 2
#define EXIT_FAILURE_PD 125

struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

int cmd_run(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_shell(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_system(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_image(int argc, char **argv);

/* Prints "paddock VERB: message" and a hint to use --help; returns EXIT_USAGE. */
int cli_usage(const char *verb, const char *fmt, ...) _printf_(2, 3);
/* Prints the error once; returns EXIT_FAILURE_PD. */
int cli_fail(const pd_err *err);
/* 0, or a usage error (printed, EXIT_USAGE) when a command and its -e values cannot cross the
 * control protocol: an empty name, a string over PROTO_MAX_STR, more than PROTO_MAX_ARGS
 * arguments or PROTO_MAX_ENV values, more than one frame in all. */
int cli_check_command(const char *verb, char *const *cmd, char *const *env);
/* 0, or a usage error (printed, EXIT_USAGE) when name cannot be a sandbox's: said before
 * anything is looked up, by every verb that takes one. */
int cli_check_name(const char *verb, const char *name);
/* 0, or a usage error when -t (tty == 1) is asked without a terminal on stdin: said before
 * anything is made. */
int cli_check_tty(const char *verb, int tty);
/* What the copy-in left out (the box's copyin.notes), on stderr: at most 8 lines and a count. */
void cli_print_copyin_notes(const char *box_dir);

/* Parsers for option values (pure). Return 0 or -EINVAL. */
int cli_parse_size(const char *s, uint64_t *ret);
int cli_parse_cpus(const char *s, uint32_t *ret_milli);
int cli_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *ret);
/* -e KEY=VALUE, or -e KEY to forward the host's value (skipped when unset). */
int cli_env_arg(const char *arg, char ***env);
/* -v HOST:BOX[:ro|:rw] */
int cli_parse_bind(const char *arg, struct box_bind *ret, pd_err *err);
/* --net/--allow/--deny/--resolve/-p: which is 'N','O','P','Q' or 'p'. Returns 0 or EXIT_USAGE. */
int cli_net_option(const char *verb, int which, const char *arg, struct box_net *net);

/* Options shared by run and create; parsed into a spec. Returns 0, or EXIT_USAGE after
 * printing. *optind_io is advanced past the options. */
struct box_opts {
	struct box_spec spec;
	const char *workspace;  /* copy | ro | rw | none; NULL = default (copy, see opts.c) */
	const char *project;    /* -w DIR */
	const char *image;      /* --image REF: the root is this image's tree (cmd_image.c) */
	int tty;                /* -t = 1, -T = 0, default -1 (auto) */
	bool rm;
	bool help;
};
int cli_parse_box_opts(const char *verb, int argc, char **argv, struct box_opts *ret);
/* Resolves the workspace into binds and the default workdir. */
int cli_apply_workspace(struct box_opts *o, pd_err *err);
char *cli_random_name(const char *prefix);

/* Opens the image store of this user, with root's owner shift set (cmd_image.c). */
struct img_store;
struct img_record;
enum img_lock;
int cli_image_store(enum img_lock lock, struct img_store **ret, pd_err *err);
/* --image: finds the image (unpacking it if gc took its tree), records that box spec->name
 * uses it, and sets spec->image, spec->rootfs and the image's Env. ret_cmd (may be NULL) gets
 * the image's Entrypoint + Cmd, or stays NULL when it has none. */
int cli_image_for_box(const char *image, struct box_spec *spec, char ***ret_cmd, pd_err *err);

/* A stored image by reference, else pulled (registry mirror from the options' sources). */
int cli_image_pull(struct img_store *s, const char *ref, struct img_record **ret, pd_err *err);

/* Profiles (profile_build.c): the image of profile p, reused when one was built for the same
 * base, commands and build network, else built now (rebuild: always). resolve: --resolve
 * NAME=ADDR entries for the build box (the route, not part of what is built). */
#define PROFILE_IMAGE_PREFIX "localhost/paddock/"
/* The profile an image name (PROFILE_IMAGE_PREFIX NAME ":" KEY) was built for, or NULL. */
char *cli_profile_of_image(const char *image);
struct profile;
int cli_profile_image(const struct profile *p, bool rebuild, char *const *resolve, struct img_record **ret,
		      pd_err *err);
/* For each profile, its newest image: "built 3d ago", "not built" (or "?" without a
 * readable store), one reading of the store for all (cmd_image.c). */
char **cli_profile_image_states(char *const *profiles);
/* The vm backend's default root (vmbase.c): for a vm box that names no image on a host
 * without a base disk of its own, the vm-base image (built now if need be) becomes the box's
 * image as with --image (ret_cmd as there). Nothing for other boxes. */
int cli_vm_default_root(struct box_opts *o, const char *home, char ***ret_cmd, pd_err *err);
/* The vm-base profile (PROFILE_VM_BASE), defined in code */
struct profile *cli_vm_base_profile(void);
/* `paddock __build-layer capture|remove NSFD DIR`: the helper profile_build.c runs. */
int cli_build_layer_helper(int argc, char **argv);

/* Copies host file or directory hostpath into the running box NAME at path (a directory,
 * made if missing; a directory's contents land in it), as the agent (cmd_cp.c). With record,
 * a directory's copy-in manifest is saved beside the box under that name (for diff/apply).
 * conn: an open control connection to use (run --rm's own box), or -1 to reach NAME's
 * supervisor. */
int cli_copy_in(int conn, const char *hostpath, const char *name, const char *path, const char *record, pd_err *err);

/* Starts the box at dir unless it runs (under its lock); *ret_started says which. */
int cli_start_box(const char *dir, bool *ret_started, pd_err *err);

/* $PADDOCK_HOME/journal, the apply journal (ws_apply_opts.journal_dir); NULL when there is
 * no home (every apply then walks its whole tree for leftover temp files). */
char *cli_apply_journal(void);
/* Stops the box at dir (its processes get timeout_ms after SIGTERM); with save an ns box's
 * workspace is saved first (and a save that fails keeps it running unless force). */
int cli_stop_box(const char *dir, uint32_t timeout_ms, bool save, bool force, pd_err *err);
/* ws_apply_opts.waiting: says on stderr that another apply to root goes first */
void cli_apply_waiting(const char *root);

/* Opens the store and the box directory of NAME (which must exist). */
int cli_box_dir(const char *name, char **ret_home, char **ret_dir, pd_err *err);
