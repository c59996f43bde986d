/* derive.h — a new image made of an image in the store plus one layer on top (what a profile
 * build produces): the base's config with the layer's diff_id appended, labels set and a
 * history entry added; an OCI manifest listing the base's layers and the new one. Both are
 * stored as blobs and the image is ingested like any other (ingest.h), so its tree is unpacked
 * from verified blobs and keyed by its config digest. */
#pragma once

#include <cjson/cJSON.h>

#include "image/ingest.h"

struct img_derive_opts {
	const char *name;        /* the new image's name ("localhost/paddock/pi:KEY") */
	const char *source;      /* what made it ("profile pi: 3 install commands") */
	const char *created_by;  /* the history entry's text */
	char **labels;           /* "KEY=VALUE" set in config.Labels (may be NULL) */
	char **env;              /* "KEY=VALUE" set in config.Env, replacing KEY (may be NULL) */
	FILE *progress;          /* may be NULL */
};

/* layer: a stored, uncompressed layer blob (its digest is its diff_id) of size bytes. */
int img_derive(struct img_store *s, const struct img_record *base, const char *layer, uint64_t size,
	       const struct img_derive_opts *o, struct img_record **ret, pd_err *err);

/* An OCI image manifest (JSON) naming config and the layers of base (a parsed manifest, or
 * NULL for none) plus one uncompressed layer. */

char *img_manifest_json(const cJSON *base, const char *config, size_t config_len, const char *layer,
			uint64_t size);

/* An img_fetcher fetch that fails: for images whose blobs were all stored by paddock itself. */
int img_fetch_stored_only(struct img_fetcher *f, struct img_store *s, const struct oci_descriptor *d,
			  bool manifest, pd_err *err);
