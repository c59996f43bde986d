/* import.h — `paddock image import FILE`: a `docker save` tarball (plain or compressed), an OCI
 * layout directory, or a tar of an OCI layout, into the image store.
 *
 * The archive is untrusted. Its files are streamed straight into the store as blobs (hashed
 * on the way; a file at blobs/sha256/HEX must hash to HEX), so nothing is ever extracted to a
 * path the archive names. Entry paths must be relative without ".." (oci_archive_path_valid);
 * symlinks and hard links between entries (old `docker save` links duplicate layers) are
 * followed only to other entries of the archive. A docker-save image is turned into an OCI
 * manifest whose layers must hash to the config's diff_ids, so every byte unpacked is named by
 * the config's digest. Caps: entries, sizes (OCI_* limits). */
#pragma once

#include "image/ingest.h"

#define IMG_IMPORT_ENTRIES_MAX 100000

struct img_import_opts {
	const char *name;   /* store it under this name (default: the archive's tag, else
			     * localhost/BASENAME:TAG) */
	const char *tag;    /* which image of an archive holding several (a ref name or a
			     * docker-save RepoTag) */
	FILE *progress;
};

int img_import(struct img_store *s, const char *path, const struct img_import_opts *o,
	       struct img_record **ret, pd_err *err);

/* The name an imported image gets when none is given (pure; tested): explicit, else the
 * archive's own tag (parsed as a reference), else localhost/BASENAME:TAG with BASENAME the
 * file's name up to its first '.', lower-cased. NULL when nothing valid can be made. */
char *img_import_default_name(const char *explicit_name, const char *archive_tag,
			      const char *path, const char *tag);
