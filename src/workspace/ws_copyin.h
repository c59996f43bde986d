/* ws_copyin.h — copy the user's project into a box: one walk that writes an uncompressed
 * pax tar stream (libarchive) to an fd and records the copy-in manifest (the base that diff
 * and apply compare against) at the same time.
 *
 * Left out, each with a note for the user: .paddockignore matches, the default secret
 * exclusions (.env, .env.*, *.pem, *.key, id_rsa*, id_ed25519*, id_ecdsa*, id_dsa*), special
 * files, names a box could not hand back (control characters, over-long), apply's leftover
 * temp files. Git configs are copied with their credentials removed (ws_gitconfig_filter);
 * the manifest records the filtered bytes, which is what the box got. Host symlinks are
 * copied as symlinks and never followed. */
#pragma once

#include "ws_manifest.h"

struct ws_copyin_opts {
	const struct ws_limits *limits; /* NULL: WS_LIMITS_DEFAULT */
	bool no_default_excludes;       /* keep .env, keys, ... (the user asked explicitly) */
};

int ws_copyin(int rootfd, int out_fd, const struct ws_copyin_opts *o,
	      struct ws_manifest *ret_manifest, struct ws_notes *notes, pd_err *err);
