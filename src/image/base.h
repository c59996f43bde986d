/* base.h — Debian base images built with mmdebstrap through the host's own apt sources (the
 * only network paddock's image builds need besides what profiles name).
 *
 *   debian:bookworm        mmdebstrap --variant=apt bookworm
 *   debian:bookworm-slim   mmdebstrap --variant=minbase bookworm
 * mmdebstrap writes the tree as a tar on a pipe (its own progress goes to the terminal); the
 * tar is streamed into the store as a blob (hashed on the way: the layer's digest is its
 * diff_id), a config and a manifest are written for it, and the image is ingested like any
 * other (ingest.h). Stored under the reference's normalised name
 * (docker.io/library/debian:bookworm), source "mmdebstrap …". */
#pragma once

#include "image/ingest.h"

/* The mmdebstrap suite and variant for a base image name, or false when it is not one. */
bool img_base_lookup(const char *name, const char **ret_suite, const char **ret_variant);
int img_base_build(struct img_store *s, const char *name, FILE *progress, struct img_record **ret,
		   pd_err *err);

/* The host names of the http(s) URLs in apt source text: one-line ("deb [opts] URL suite ...")
 * and deb822 ("URIs: URL ...") forms, comments skipped, each name once, appended to hosts
 * (pure; tested). */
char **img_apt_hosts_parse(const char *text, size_t len, char **hosts);
/* The same over etc/apt/sources.list and etc/apt/sources.list.d/ *.list, *.sources of the
 * tree at root ("/" for the host's: what its mmdebstrap builds fetch from). Resolved with root
 * as the root (an image's symlinks stay inside its tree, no magic links), regular files only
 * (a FIFO or device planted by an image is skipped, never read from). */
char **img_apt_source_hosts(const char *root);
