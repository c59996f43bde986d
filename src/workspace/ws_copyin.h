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

#include "ws_boxscan.h"
#include "ws_manifest.h"

struct ws_copyin_opts {
	const struct ws_limits *limits; /* NULL: WS_LIMITS_DEFAULT */
	bool no_default_excludes;       /* keep .env, keys, ... (the user asked explicitly) */
	/* ws_copyin_to_dir: called with the bytes written so far (a progress bar), or NULL */
	void (*progress)(void *ud, uint64_t bytes);
	void *progress_ud;
	/* ws_copyin_to_dir: when set, filled with the scan the box would make of its fresh copy
	 * (the diff baseline; entries the copy did not make are not in it) */
	struct ws_bscan *baseline;
};

int ws_copyin(int rootfd, int out_fd, const struct ws_copyin_opts *o,
	      struct ws_manifest *ret_manifest, struct ws_notes *notes, pd_err *err);

/* The same walk, rules and manifest, but the entries are written beneath dst_fd (a directory
 * of a box that no process of the box can touch yet: the ns backend hands its /workspace over
 * before any session runs) instead of into a tar stream: no archive, no tar in the box, one
 * copy of each byte. Names are resolved beneath dst_fd without following any symlink and
 * created exclusively; files and directories get the project's permission bits and mtimes.
 * The writing runs on a thread of its own (ws_dirwriter) while this one walks, reads and
 * hashes; it is joined before this returns. */
int ws_copyin_to_dir(int rootfd, int dst_fd, const struct ws_copyin_opts *o,
		     struct ws_manifest *ret_manifest, struct ws_notes *notes, pd_err *err);
