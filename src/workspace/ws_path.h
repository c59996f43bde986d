/* ws_path.h — pure checks on names that come from a box: relative path syntax, symlink
 * targets, host-executing paths, and a terminal-safe escaper for names and contents.
 *
 * Nothing here touches the filesystem. Every path the box hands back (tar entry names, link
 * targets, hard link targets) passes ws_path_normalize()/ws_symlink_check() before it is used
 * as a key, and every name or content byte shown on a terminal passes ws_escape(). */
#pragma once

#include "util/util.h"

/* Hard caps on what a box may hand back. Defaults: WS_LIMITS_DEFAULT. */
struct ws_limits {
	size_t max_name;      /* bytes per path component (255) */
	size_t max_path;      /* bytes per path (4096) */
	unsigned max_depth;   /* components per path (256) */
	uint64_t max_entries; /* entries per tree (1,000,000) */
	uint64_t max_total;   /* declared bytes of all files (10 GiB) */
	uint64_t max_file;    /* declared bytes of one file (4 GiB) */
	uint64_t max_names;   /* bytes of all paths held in memory (256 MiB) */
};

#define WS_LIMITS_DEFAULT ((struct ws_limits){ \
	.max_name = 255, .max_path = 4096, .max_depth = 256, \
	.max_entries = 1000000, .max_total = 10ull << 30, .max_file = 4ull << 30, \
	.max_names = 256ull << 20 })

/* Prefix of apply's temporary files; names with it are refused from the box and never
 * copied in, so the cleanup of leftovers can only ever remove paddock's own files. */
#define WS_TMP_PREFIX ".paddock-tmp-"

/* Why a name, a link or an entry was refused (or noted). WS_OK is 0. */
enum ws_reason {
	WS_OK = 0,
	WS_R_ROOT,               /* "." / "./": the tree root itself, not an error */
	WS_R_EMPTY,
	WS_R_ABSOLUTE,
	WS_R_DOTDOT,
	WS_R_DOT,
	WS_R_EMPTY_COMPONENT,
	WS_R_CONTROL_CHAR,
	WS_R_NAME_TOO_LONG,
	WS_R_PATH_TOO_LONG,
	WS_R_TOO_DEEP,
	WS_R_RESERVED_NAME,      /* starts with WS_TMP_PREFIX */
	WS_R_LINK_EMPTY,
	WS_R_LINK_ABSOLUTE,
	WS_R_LINK_ESCAPES,
	WS_R_LINK_DOTDOT_AFTER_NAME,
	WS_R_DEVICE,
	WS_R_FIFO,
	WS_R_SOCKET,
	WS_R_UNKNOWN_TYPE,
	WS_R_HARDLINK_OUTSIDE,   /* hard link to nothing earlier in the tree */
	WS_R_DUPLICATE,
	WS_R_PARENT_NOT_DIR,
	WS_R_PARENT_REFUSED,
	WS_R_SETID_STRIPPED,     /* note: setuid/setgid/sticky removed */
	WS_R_SPECIAL_SKIPPED,    /* note: host special file not copied */
	WS_R_IGNORED,            /* note: .paddockignore */
	WS_R_DEFAULT_EXCLUDED,   /* note: default secret exclusions */
	WS_R_CREDENTIALS_REMOVED,/* note: .git/config credentials filtered */
	WS_R_CHANGED_WHILE_READ, /* note: host file changed during copy-in */
	WS_R_NOT_READ,           /* the box could not read it (or what is beneath): left as it is */
	WS_R_MAX
};

const char *ws_reason_str(enum ws_reason r);
/* A note of this reason on the way back means the box's entry is not in the snapshot (not
 * shown as a change, never applied); false for notes about an entry that is kept
 * (setid bits removed), about new files the ignore rules keep out, and copy-in's own. */
bool ws_reason_left_out(enum ws_reason r);

/* Paths that make the host run code without any user action. */
enum ws_exec {
	WS_EXEC_NONE = 0,
	WS_EXEC_GIT_HOOK,        /* .git/hooks/..., .git/modules/x/hooks/... */
	WS_EXEC_GIT_CONFIG,      /* .git/config (core.fsmonitor, filters, pagers, ...) */
	WS_EXEC_GIT_ATTRIBUTES,  /* .gitattributes / .git/info/attributes with filter/diff/merge */
	WS_EXEC_GITMODULES,
	WS_EXEC_GIT_LINK,        /* a .git file, commondir, gitdir: redirect git elsewhere */
	WS_EXEC_ENVRC,
	WS_EXEC_VSCODE,
	WS_EXEC_DEVCONTAINER,
	WS_EXEC_IDEA,
	WS_EXEC_HOOK_MANAGER,    /* .husky/, .githooks/, .pre-commit-config.yaml, lefthook.yml:
				  * what a hook manager (or a core.hooksPath) runs at the next commit */
	WS_EXEC_IGNORE_RULES,    /* the project's .paddockignore: what the next copy-in leaves out
				  * (a box re-including .env would hand the host's secrets to the
				  * next box) */
	WS_EXEC_GIT_INTERNAL,    /* anything else inside .git: objects, refs, index, info/ ... —
				  * git data the host's git trusts; `apply --branch` is the way */
	WS_EXEC_MAX
};

const char *ws_exec_str(enum ws_exec e);

/* Strict check of an already normalised relative path of len bytes. */
enum ws_reason ws_path_check(const char *p, size_t len, const struct ws_limits *lim);

/* Normalises a raw name from a tar header (leading "./" and trailing "/" removed, nothing
 * else) and checks it. Returns WS_OK with *ret_path set (caller frees), WS_R_ROOT for the
 * root itself, or the reason the name is refused. */
enum ws_reason ws_path_normalize(const char *raw, const struct ws_limits *lim, char **ret_path);

/* True if path equals prefix or lies beneath it ("a/b" is under "a", "ab" is not). */
bool ws_path_under(const char *path, const char *prefix);

/* A symlink at linkpath pointing to target is allowed only if target is relative, has '..'
 * components only at its start, and climbs no higher than the tree root from
 * dirname(linkpath). Leading-only '..' makes the lexical answer the real one even when other
 * in-tree symlinks are followed on the way. */
enum ws_reason ws_symlink_check(const char *linkpath, const char *target, const struct ws_limits *lim);

/* Classifies a path by name only (ASCII case and Unicode look-alikes folded, as a
 * case-insensitive host filesystem would). is_dir: the entry is a directory. */
enum ws_exec ws_path_exec_class(const char *path, bool is_dir);
/* Directories (project-relative) that git runs hooks from besides .git/hooks — the host's
 * core.hooksPath when it points into the project; NULL clears. Everything under them is
 * then WS_EXEC_GIT_HOOK. */
void ws_exec_set_hook_dirs(char *const *dirs);

/* True if a gitattributes text sets filter=, diff= or merge= anywhere (those run drivers).
 * Texts over 1 MiB count as true. */
bool ws_gitattributes_is_exec(const char *buf, size_t len);

/* Escaping for terminals. Control bytes, DEL, invalid UTF-8 become \xNN; C1 controls,
 * bidi and zero-width characters become \u{NNNN}. WS_ESC_NAME also escapes \t, \n and the
 * backslash itself (so names are unambiguous); content keeps \t and \n. */
enum { WS_ESC_CONTENT = 0, WS_ESC_NAME = 1 };
char *ws_escape(const char *buf, size_t len, unsigned flags);
static inline char *ws_escape_name(const char *s) { return ws_escape(s, strlen(s), WS_ESC_NAME); }

/* True if buf is entirely valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
bool ws_utf8_valid(const char *buf, size_t len);
