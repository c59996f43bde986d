/* oci_ref.h — image references ("node:22", "docker.io/library/node:22",
 * "localhost:5000/x/y@sha256:…"), parsed and normalised the way Docker does:
 *
 *   - the first path component is a registry when it contains '.' or ':', is "localhost", or
 *     has upper-case letters; otherwise the registry is docker.io;
 *   - on docker.io a one-component repository gets "library/" (node → library/node), and
 *     index.docker.io is spelled docker.io;
 *   - the tag defaults to "latest" unless a digest is given; a digest pins the content and
 *     the tag (if any) is informational.
 * Repository components are [a-z0-9]+ joined by '.', '_', "__" or dashes; tags are
 * [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; the name is at most 255 bytes. Pure. */
#pragma once

#include "util/error.h"

#define OCI_REF_MAX 512
#define OCI_NAME_MAX 255
#define OCI_TAG_MAX 128

struct oci_ref {
	char *registry;    /* "docker.io", "localhost:5000", "[::1]:5000" */
	char *repository;  /* "library/node" */
	char *tag;         /* "22"; NULL when only a digest was given */
	char *digest;      /* "sha256:…" or NULL */
};

int oci_ref_parse(const char *s, struct oci_ref **ret, pd_err *err);
void oci_ref_free(struct oci_ref *r);
static inline void oci_ref_freep(struct oci_ref **r) { oci_ref_free(*r); }
#define _cleanup_oci_ref_ _cleanup_(oci_ref_freep)
/* The canonical spelling: registry/repository[:tag][@digest]. malloc'd. */
char *oci_ref_format(const struct oci_ref *r);
/* The host to speak the distribution API to: registry-1.docker.io for docker.io. */
const char *oci_ref_api_host(const struct oci_ref *r);
