/* registry.h — `paddock image pull REF`: the OCI distribution API over libcurl.
 *
 *   GET /v2/REPO/manifests/TAG|DIGEST   (Accept: OCI index / Docker list / manifests)
 *   GET /v2/REPO/blobs/DIGEST           (redirects followed, to http(s) only; the token is
 *                                        never sent to another host)
 * A 401 with "WWW-Authenticate: Bearer realm=…,service=…,scope=…" is answered by fetching an
 * anonymous token from the realm and retrying once. A manifest list / index is resolved to
 * linux/amd64 (ingest.h). Every manifest and blob is verified against the digest that names it
 * (a manifest pulled by tag is then pinned by its own digest), and blobs against their
 * size, before anything is stored; bodies are capped (manifests OCI_DOC_MAX, blobs their
 * descriptor's size).
 *
 * Plain HTTP is used for loopback registries only (localhost, 127.0.0.0/8, [::1]), as Docker
 * does; everything else is HTTPS with the system's CAs (or ca_file). A mirror
 * (--registry-mirror, $PADDOCK_REGISTRY_MIRROR) replaces docker.io's API endpoint; it is a
 * URL: http://… is accepted for loopback mirrors only. */
#pragma once

#include "image/ingest.h"

struct img_pull_opts {
	const char *mirror;    /* base URL for docker.io references, or NULL */
	const char *ca_file;   /* extra trust: a PEM bundle to verify TLS with, or NULL */
	const char *name;      /* store under this name (default: the reference, normalised) */
	FILE *progress;
};

int img_pull(struct img_store *s, const char *ref, const struct img_pull_opts *o,
	     struct img_record **ret, pd_err *err);

/* The base URL ("http://127.0.0.1:5000", "https://registry-1.docker.io") for a registry as an
 * OCI reference names it, given the mirror for docker.io (pure; tested). NULL with a message
 * for a mirror that is not an http(s) URL or is plain HTTP to a non-loopback host. */
char *img_registry_base_url(const char *registry, const char *mirror, pd_err *err);
/* True for localhost, 127.0.0.0/8 and [::1], with or without a port (pure; tested). */
bool img_registry_is_loopback(const char *hostport);
