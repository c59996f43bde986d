/* oci_manifest.h — pure parsers for OCI / Docker image metadata: image indexes and Docker
 * manifest lists (with the linux/amd64 pick), image manifests, image configs, the
 * manifest.json of a `docker save` tarball and an OCI layout's oci-layout and index.json.
 *
 * All of it is untrusted input (a registry, a tarball from anywhere): documents are size-capped
 * and strictly checked (oci_json.h), digests must be "sha256:" + 64 lowercase hex digits,
 * sizes exact non-negative integers, counts capped, media types known. Layers must be tar,
 * tar+gzip or tar+zstd (OCI or Docker spelling); foreign / non-distributable layers (content
 * fetched from elsewhere) and unknown media types are refused with a message naming them.
 * Docker schema 1 manifests are refused. No I/O. */
#pragma once

#include "util/error.h"

#define OCI_DOC_MAX (4 * 1024 * 1024)     /* index, manifest, index.json, manifest.json */
#define OCI_CONFIG_MAX (8 * 1024 * 1024)  /* image config blob */
#define OCI_MANIFESTS_MAX 1024            /* entries of one index */
#define OCI_LAYERS_MAX 512                /* layers of one image */
#define OCI_ARGV_MAX 4096                 /* Env, Entrypoint, Cmd entries */
#define OCI_BLOB_SIZE_MAX (1ULL << 40)    /* any one blob: 1 TiB */
#define OCI_IMAGE_SIZE_MAX (64ULL << 30)  /* all layers of one image, compressed: 64 GiB */
#define OCI_DIGEST_LEN 71                 /* "sha256:" + 64 */
#define OCI_PATH_MAX 4096                 /* paths inside a docker-save tarball */

enum oci_media_type {
	OCI_MT_INVALID = 0,
	OCI_MT_INDEX,              /* application/vnd.oci.image.index.v1+json */
	OCI_MT_DOCKER_LIST,        /* application/vnd.docker.distribution.manifest.list.v2+json */
	OCI_MT_MANIFEST,           /* application/vnd.oci.image.manifest.v1+json */
	OCI_MT_DOCKER_MANIFEST,    /* application/vnd.docker.distribution.manifest.v2+json */
	OCI_MT_CONFIG,             /* application/vnd.oci.image.config.v1+json */
	OCI_MT_DOCKER_CONFIG,      /* application/vnd.docker.container.image.v1+json */
	OCI_MT_LAYER_TAR,          /* application/vnd.oci.image.layer.v1.tar */
	OCI_MT_LAYER_GZIP,         /* application/vnd.oci.image.layer.v1.tar+gzip */
	OCI_MT_LAYER_ZSTD,         /* application/vnd.oci.image.layer.v1.tar+zstd */
	OCI_MT_DOCKER_LAYER_TAR,   /* application/vnd.docker.image.rootfs.diff.tar */
	OCI_MT_DOCKER_LAYER_GZIP,  /* application/vnd.docker.image.rootfs.diff.tar.gzip */
	OCI_MT_MAX,
};

enum oci_compression {
	OCI_COMP_INVALID = 0,
	OCI_COMP_NONE,
	OCI_COMP_GZIP,
	OCI_COMP_ZSTD,
	OCI_COMP_MAX,
};

/* The media type string; NULL for OCI_MT_INVALID. */
const char *oci_media_type_name(enum oci_media_type t);
/* OCI_MT_INVALID for anything unknown (parameters after ';' are ignored). */
enum oci_media_type oci_media_type_from_string(const char *s);
bool oci_media_type_is_index(enum oci_media_type t);
bool oci_media_type_is_manifest(enum oci_media_type t);
/* The layer's compression; OCI_COMP_INVALID when t is not a layer type. */
enum oci_compression oci_layer_compression(enum oci_media_type t);
/* True for "sha256:" followed by exactly 64 lowercase hex digits. */
bool oci_digest_valid(const char *s);

struct oci_descriptor {
	enum oci_media_type media_type;
	char digest[OCI_DIGEST_LEN + 1];
	uint64_t size;
	/* index entries only (NULL when absent) */
	char *os, *architecture, *variant;
	char *ref_name;    /* annotation org.opencontainers.image.ref.name (OCI layouts) */
	bool attestation;  /* vnd.docker.reference.type = attestation-manifest (not an image) */
};

struct oci_index {
	enum oci_media_type media_type;  /* OCI_MT_INDEX or OCI_MT_DOCKER_LIST */
	struct oci_descriptor *manifests;
	size_t n_manifests;
};

struct oci_manifest {
	enum oci_media_type media_type;  /* OCI_MT_MANIFEST or OCI_MT_DOCKER_MANIFEST */
	struct oci_descriptor config;
	struct oci_descriptor *layers;
	size_t n_layers;
};

struct oci_config {
	char *os, *architecture;
	char **env, **entrypoint, **cmd;  /* strv, never NULL (maybe empty) */
	char *working_dir, *user;         /* NULL when not set */
	char (*diff_ids)[OCI_DIGEST_LEN + 1];
	size_t n_diff_ids;
};

/* What a registry response or blob is: content_type (may be NULL) first, then the document's
 * mediaType, then its shape. -EINVAL with a message for schema 1 and unknown documents. */
int oci_document_type(const char *buf, size_t len, const char *content_type,
		      enum oci_media_type *ret, pd_err *err);

/* An image index or Docker manifest list (also an OCI layout's index.json). Entries whose
 * media type is neither a manifest nor an index are skipped. */
int oci_index_parse(const char *buf, size_t len, struct oci_index **ret, pd_err *err);
void oci_index_free(struct oci_index *idx);
/* The image manifest for os/arch (variant ignored when NULL; attestations skipped). -ENOENT
 * with the available platforms in the message. */
int oci_index_pick(const struct oci_index *idx, const char *os, const char *arch,
		   const char *variant, const struct oci_descriptor **ret, pd_err *err);
/* The entry whose ref name is ref (an OCI layout tag); with ref NULL, the only image entry.
 * -ENOENT listing the names, or when ambiguous. */
int oci_index_find_ref(const struct oci_index *idx, const char *ref,
		       const struct oci_descriptor **ret, pd_err *err);

int oci_manifest_parse(const char *buf, size_t len, struct oci_manifest **ret, pd_err *err);
void oci_manifest_free(struct oci_manifest *m);

int oci_config_parse(const char *buf, size_t len, struct oci_config **ret, pd_err *err);
void oci_config_free(struct oci_config *c);
/* -EINVAL unless config's diff_ids match the manifest's layer count. */
int oci_config_check_layers(const struct oci_config *c, const struct oci_manifest *m, pd_err *err);

/* `docker save` manifest.json: one entry per image in the tarball. Paths are relative,
 * without "..", "." or empty components. */
struct oci_docker_save_image {
	char *config;        /* path of the config blob inside the tarball */
	char **repo_tags;    /* strv (maybe empty) */
	char **layers;       /* strv of layer tar paths, base first */
};
struct oci_docker_save {
	struct oci_docker_save_image *images;
	size_t n_images;
};
int oci_docker_save_parse(const char *buf, size_t len, struct oci_docker_save **ret, pd_err *err);
void oci_docker_save_free(struct oci_docker_save *s);
/* True for a path as allowed above. */
bool oci_archive_path_valid(const char *path);

/* An OCI layout's oci-layout file: {"imageLayoutVersion": "1.0.0"}. */
int oci_layout_check(const char *buf, size_t len, pd_err *err);
