/* ws_ignore.h — what copy-in leaves out: gitignore-like rules from the project's
 * .paddockignore plus the default exclusions for secrets, and the .git/config filter that
 * removes credentials. Matching and filtering are pure; ws_ignore_load() reads the file.
 *
 * Rule syntax (one per line): blank lines and '#' comments ignored; '!' negates; a trailing
 * '/' matches directories only; a leading '/' or any '/' inside anchors the rule at the
 * project root, otherwise it matches a name at any depth; '*' and '?' and [..] match within
 * one component (fnmatch FNM_PATHNAME semantics), '**' matches any number of components.
 * The last matching rule wins; nothing under an excluded directory is ever re-included. */
#pragma once

#include "util/error.h"
#include "ws_path.h"

#define WS_IGNORE_MAX_RULES 10000
#define WS_IGNORE_MAX_LINE 4096
#define WS_IGNORE_FILE ".paddockignore"

struct ws_ignore;

struct ws_ignore *ws_ignore_new(void);
void ws_ignore_free(struct ws_ignore *ig);
static inline void ws_ignore_freep(struct ws_ignore **ig) { ws_ignore_free(*ig); }

/* The default exclusions (.env, .env.*, *.pem, *.key, id_rsa*, id_ed25519*, id_ecdsa*,
 * id_dsa*), tagged WS_R_DEFAULT_EXCLUDED. Rules added later (and '!' lines) override them. */
void ws_ignore_add_defaults(struct ws_ignore *ig);

/* Adds the rules of a .paddockignore text, tagged WS_R_IGNORED. -E2BIG past the caps. */
int ws_ignore_add_text(struct ws_ignore *ig, const char *buf, size_t len);

/* Defaults (unless !defaults) plus rootfd/.paddockignore if it exists (read beneath rootfd,
 * never through a symlink). */
int ws_ignore_load(int rootfd, bool defaults, struct ws_ignore **ret, pd_err *err);

/* WS_OK if path is kept, else the tag of the rule that excludes it. Checks the ancestors
 * too (an excluded directory excludes everything beneath it). */
enum ws_reason ws_ignore_match(const struct ws_ignore *ig, const char *path, bool is_dir);
/* Same without the ancestor check, for walkers that never descend into excluded dirs. */
enum ws_reason ws_ignore_match_one(const struct ws_ignore *ig, const char *path, bool is_dir);

/* Returns a copy of a git config text without [credential*] sections, without
 * http.extraHeader lines, and with the userinfo removed from http(s) URLs (and the password
 * from any other URL). *ret_changed says whether anything was removed. */
char *ws_gitconfig_filter(const char *buf, size_t len, size_t *ret_len, bool *ret_changed);
