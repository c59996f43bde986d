/* fuzz-oci-manifest.c — libFuzzer target over the OCI metadata parsers: index / manifest list
 * (and the platform and ref-name picks), image manifest, image config, docker-save
 * manifest.json, oci-layout and document-type detection. The first byte chooses the parser.
 * Invariants: what parses has valid digests, known media types and counts within the caps. */
#include <assert.h>

#include "image/oci_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_descriptor(const struct oci_descriptor *d)
{
	assert(oci_digest_valid(d->digest));
	assert(d->media_type > OCI_MT_INVALID && d->media_type < OCI_MT_MAX);
	assert(d->size <= OCI_BLOB_SIZE_MAX);
}

static void fuzz_index(const char *s, size_t n)
{
	struct oci_index *idx = NULL;
	if (oci_index_parse(s, n, &idx, NULL) < 0)
		return;
	assert(idx->n_manifests <= OCI_MANIFESTS_MAX);
	for (size_t i = 0; i < idx->n_manifests; i++)
		check_descriptor(&idx->manifests[i]);
	const struct oci_descriptor *d = NULL;
	pd_err err;
	if (oci_index_pick(idx, "linux", "amd64", NULL, &d, &err) == 0)
		assert(oci_media_type_is_manifest(d->media_type) && !d->attestation);
	(void)oci_index_find_ref(idx, "latest", &d, &err);
	(void)oci_index_find_ref(idx, NULL, &d, &err);
	oci_index_free(idx);
}

static void fuzz_manifest(const char *s, size_t n)
{
	struct oci_manifest *m = NULL;
	if (oci_manifest_parse(s, n, &m, NULL) < 0)
		return;
	check_descriptor(&m->config);
	assert(m->n_layers <= OCI_LAYERS_MAX);
	for (size_t i = 0; i < m->n_layers; i++) {
		check_descriptor(&m->layers[i]);
		assert(oci_layer_compression(m->layers[i].media_type) != OCI_COMP_INVALID);
	}
	oci_manifest_free(m);
}

static void fuzz_config(const char *s, size_t n)
{
	struct oci_config *c = NULL;
	if (oci_config_parse(s, n, &c, NULL) < 0)
		return;
	assert(c->os && c->architecture && c->env && c->cmd && c->entrypoint);
	for (size_t i = 0; i < c->n_diff_ids; i++)
		assert(oci_digest_valid(c->diff_ids[i]));
	for (char **e = c->env; *e; e++)
		assert(strchr(*e, '=') && **e != '=');
	oci_config_free(c);
}

static void fuzz_docker_save(const char *s, size_t n)
{
	struct oci_docker_save *ds = NULL;
	if (oci_docker_save_parse(s, n, &ds, NULL) < 0)
		return;
	for (size_t i = 0; i < ds->n_images; i++) {
		assert(oci_archive_path_valid(ds->images[i].config));
		for (char **l = ds->images[i].layers; *l; l++)
			assert(oci_archive_path_valid(*l) && !streq(*l, "..") &&
			       !startswith(*l, "../") && !strstr(*l, "/../"));
	}
	oci_docker_save_free(ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 256 * 1024)
		return 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	enum oci_media_type t;
	switch (data[0] % 6) {
	case 0:
		fuzz_index(s, n);
		break;
	case 1:
		fuzz_manifest(s, n);
		break;
	case 2:
		fuzz_config(s, n);
		break;
	case 3:
		fuzz_docker_save(s, n);
		break;
	case 4:
		(void)oci_layout_check(s, n, NULL);
		break;
	default:
		if (oci_document_type(s, n, NULL, &t, NULL) == 0)
			assert(oci_media_type_is_index(t) || oci_media_type_is_manifest(t));
		break;
	}
	return 0;
}
