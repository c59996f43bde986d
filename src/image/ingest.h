/* ingest.h — bringing an OCI image into the store, whatever it comes from (a registry, an OCI
 * layout, a `docker save` tarball): one walk over index -> manifest -> config + layers, every
 * blob verified against the digest that names it, then the layers unpacked and the record
 * written. Sources only say how to get one blob by digest. */
#pragma once

#include "image/store.h"

struct img_fetcher {
	/* Puts the blob d->digest (a manifest or index when manifest is true, else a config or a
	 * layer) into the store, verified against d->digest and d->size (skipped by the caller
	 * when the store already has it). */
	int (*fetch)(struct img_fetcher *f, struct img_store *s, const struct oci_descriptor *d,
		     bool manifest, pd_err *err);
	/* progress lines ("layer 2/5 …") go here when non-NULL */
	FILE *progress;
};

/* Walks from a stored manifest or index (top, already in the store): an index is resolved to
 * its linux/amd64 manifest, then the config and layers are fetched, the config checked against
 * the manifest, the layers unpacked into rootfs/ and the record for name saved. ret (may be
 * NULL) gets the new record. */
int img_ingest(struct img_store *s, struct img_fetcher *f, const char *top, const char *name,
	       const char *source, struct img_record **ret, pd_err *err);
