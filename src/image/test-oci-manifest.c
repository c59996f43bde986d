/* test-oci-manifest.c — OCI / Docker metadata parsers: indexes and manifest lists with the
 * linux/amd64 pick, image manifests (layer media types, foreign layers, digests, sizes, caps),
 * image configs, docker-save manifest.json, OCI layouts, document type detection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "image/oci_manifest.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"
#define D4 "sha256:4444444444444444444444444444444444444444444444444444444444444444"

/* The shape of docker.io/library/node:22's index (with buildkit attestations). */
static const char oci_index[] =
	"{\"schemaVersion\": 2,\n"
	" \"mediaType\": \"application/vnd.oci.image.index.v1+json\",\n"
	" \"manifests\": [\n"
	"  {\"mediaType\": \"application/vnd.oci.image.manifest.v1+json\", \"digest\": \"" D1 "\","
	"   \"size\": 2150, \"platform\": {\"architecture\": \"arm64\", \"os\": \"linux\","
	"   \"variant\": \"v8\"}},\n"
	"  {\"mediaType\": \"application/vnd.oci.image.manifest.v1+json\", \"digest\": \"" D2 "\","
	"   \"size\": 566, \"platform\": {\"architecture\": \"unknown\", \"os\": \"unknown\"},"
	"   \"annotations\": {\"vnd.docker.reference.type\": \"attestation-manifest\","
	"   \"vnd.docker.reference.digest\": \"" D3 "\"}},\n"
	"  {\"mediaType\": \"application/vnd.oci.image.manifest.v1+json\", \"digest\": \"" D3 "\","
	"   \"size\": 2151, \"platform\": {\"architecture\": \"amd64\", \"os\": \"linux\"}},\n"
	"  {\"mediaType\": \"application/vnd.example.artifact\", \"digest\": \"" D4 "\","
	"   \"size\": 1}\n"
	" ]}\n";

static const char docker_list[] =
	"{\"schemaVersion\": 2,"
	" \"mediaType\": \"application/vnd.docker.distribution.manifest.list.v2+json\","
	" \"manifests\": [{\"mediaType\": \"application/vnd.docker.distribution.manifest.v2+json\","
	"   \"size\": 529, \"digest\": \"" D1 "\","
	"   \"platform\": {\"architecture\": \"amd64\", \"os\": \"linux\"}}]}";

static const char oci_manifest[] =
	"{\"schemaVersion\": 2,"
	" \"mediaType\": \"application/vnd.oci.image.manifest.v1+json\","
	" \"config\": {\"mediaType\": \"application/vnd.oci.image.config.v1+json\","
	"   \"digest\": \"" D1 "\", \"size\": 7442},"
	" \"layers\": ["
	"  {\"mediaType\": \"application/vnd.oci.image.layer.v1.tar+gzip\", \"digest\": \"" D2 "\","
	"   \"size\": 48484745},"
	"  {\"mediaType\": \"application/vnd.oci.image.layer.v1.tar+zstd\", \"digest\": \"" D3 "\","
	"   \"size\": 3},"
	"  {\"mediaType\": \"application/vnd.oci.image.layer.v1.tar\", \"digest\": \"" D4 "\","
	"   \"size\": 0}],"
	" \"annotations\": {\"org.opencontainers.image.base.name\": \"debian:bookworm\"}}";

static struct oci_manifest *manifest_ok(const char *text)
{
	struct oci_manifest *m = NULL;
	pd_err err = { 0 };
	if (oci_manifest_parse(text, strlen(text), &m, &err) < 0)
		fail_msg("%s", err.msg);
	return m;
}

static void manifest_bad(const char *text, const char *expect)
{
	struct oci_manifest *m = NULL;
	pd_err err = { 0 };
	assert_true(oci_manifest_parse(text, strlen(text), &m, &err) < 0);
	assert_null(m);
	if (!strstr(err.msg, expect))
		fail_msg("message '%s' lacks '%s'", err.msg, expect);
}

static void test_digest(void **state)
{
	assert_true(oci_digest_valid(D1));
	assert_false(oci_digest_valid("sha256:ABCD111111111111111111111111111111111111111111111111111111111111"));
	assert_false(oci_digest_valid("sha256:111"));
	assert_false(oci_digest_valid(D1 "1"));
	assert_false(oci_digest_valid("sha512:1111111111111111111111111111111111111111111111111111111111111111"));
	assert_false(oci_digest_valid("sha256:11111111111111111111111111111111111111111111111111111111111111/1"));
}

static void test_media_types(void **state)
{
	assert_int_equal(oci_media_type_from_string("application/vnd.oci.image.layer.v1.tar+gzip"),
			 OCI_MT_LAYER_GZIP);
	assert_int_equal(oci_media_type_from_string(
				 "application/vnd.docker.distribution.manifest.v2+json; charset=utf-8"),
			 OCI_MT_DOCKER_MANIFEST);
	assert_int_equal(oci_media_type_from_string("application/vnd.oci.image.layer.v1.tar+gzi"),
			 OCI_MT_INVALID);
	assert_int_equal(oci_layer_compression(OCI_MT_DOCKER_LAYER_GZIP), OCI_COMP_GZIP);
	assert_int_equal(oci_layer_compression(OCI_MT_LAYER_ZSTD), OCI_COMP_ZSTD);
	assert_int_equal(oci_layer_compression(OCI_MT_LAYER_TAR), OCI_COMP_NONE);
	assert_int_equal(oci_layer_compression(OCI_MT_CONFIG), OCI_COMP_INVALID);
	for (int t = OCI_MT_INVALID + 1; t < OCI_MT_MAX; t++)
		assert_int_equal(oci_media_type_from_string(oci_media_type_name(t)), t);
}

static void test_index_pick_amd64(void **state)
{
	struct oci_index *idx = NULL;
	pd_err err = { 0 };
	assert_int_equal(oci_index_parse(oci_index, strlen(oci_index), &idx, &err), 0);
	assert_int_equal(idx->media_type, OCI_MT_INDEX);
	assert_int_equal(idx->n_manifests, 3); /* the artifact is skipped */
	assert_true(idx->manifests[1].attestation);
	const struct oci_descriptor *d = NULL;
	assert_int_equal(oci_index_pick(idx, "linux", "amd64", NULL, &d, &err), 0);
	assert_string_equal(d->digest, D3);
	assert_int_equal(d->size, 2151);
	assert_int_equal(oci_index_pick(idx, "linux", "arm64", "v8", &d, &err), 0);
	assert_string_equal(d->digest, D1);
	assert_int_equal(oci_index_pick(idx, "linux", "riscv64", NULL, &d, &err), -ENOENT);
	assert_string_equal(err.msg, "no image for linux/riscv64 (available: linux/arm64/v8, "
				     "linux/amd64)");
	oci_index_free(idx);
}

/* an index entry for the platform may be another index (followed by ingest, 4 levels) */
static void test_index_pick_nested_index(void **state)
{
	static const char nested[] =
		"{\"schemaVersion\": 2, \"mediaType\": \"application/vnd.oci.image.index.v1+json\", \"manifests\": ["
		"{\"mediaType\": \"application/vnd.oci.image.index.v1+json\", \"digest\": \"" D2 "\", \"size\": 300,"
		" \"platform\": {\"os\": \"linux\", \"architecture\": \"amd64\"}}]}";
	struct oci_index *idx = NULL;
	pd_err err = {0};
	assert_int_equal(oci_index_parse(nested, strlen(nested), &idx, &err), 0);
	const struct oci_descriptor *d = NULL;
	assert_int_equal(oci_index_pick(idx, "linux", "amd64", NULL, &d, &err), 0);
	assert_string_equal(d->digest, D2);
	assert_true(oci_media_type_is_index(d->media_type));
	oci_index_free(idx);
}

static void test_docker_manifest_list(void **state)
{
	struct oci_index *idx = NULL;
	assert_int_equal(oci_index_parse(docker_list, strlen(docker_list), &idx, NULL), 0);
	assert_int_equal(idx->media_type, OCI_MT_DOCKER_LIST);
	const struct oci_descriptor *d = NULL;
	assert_int_equal(oci_index_pick(idx, "linux", "amd64", NULL, &d, NULL), 0);
	assert_int_equal(d->media_type, OCI_MT_DOCKER_MANIFEST);
	oci_index_free(idx);
}

static void test_index_errors(void **state)
{
	struct oci_index *idx = NULL;
	pd_err err = { 0 };
	const char *bad_digest = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		"\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:abc\",\"size\":1}]}";
	assert_int_equal(oci_index_parse(bad_digest, strlen(bad_digest), &idx, &err), -EINVAL);
	assert_string_equal(err.msg, "image index: manifests[0]: malformed sha256 digest "
				     "(sha256:abc)");
	const char *neg = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		"\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D1 "\",\"size\":-1}]}";
	assert_int_equal(oci_index_parse(neg, strlen(neg), &idx, &err), -EINVAL);
	assert_string_equal(err.msg, "image index: manifests[0].size: expected a non-negative "
				     "integer");
	const char *frac = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		"\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D1 "\",\"size\":1.5}]}";
	assert_int_equal(oci_index_parse(frac, strlen(frac), &idx, &err), -EINVAL);
	const char *manifest_as_index = oci_manifest;
	assert_int_equal(oci_index_parse(manifest_as_index, strlen(manifest_as_index), &idx, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "unexpected mediaType"));
	const char *dup = "{\"schemaVersion\":2,\"schemaVersion\":2,\"manifests\":[]}";
	assert_int_equal(oci_index_parse(dup, strlen(dup), &idx, &err), -EINVAL);
	assert_string_equal(err.msg, "image index: duplicate key \"schemaVersion\"");
	const char *nul = "{\"schemaVersion\":2,\"manifests\":[],\"x\":\"a\\u0000\"}";
	assert_int_equal(oci_index_parse(nul, strlen(nul), &idx, &err), -EINVAL);
	assert_null(idx);
}

static void test_index_too_many(void **state)
{
	size_t cap = 256 + (OCI_MANIFESTS_MAX + 1) * 200;
	_cleanup_free_ char *s = xmalloc(cap);
	if (!s)
		abort(); /* (xmalloc never returns NULL; tells the compiler) */
	char *o = s + sprintf(s, "{\"schemaVersion\":2,\"manifests\":[");
	for (int i = 0; i <= OCI_MANIFESTS_MAX; i++)
		o += sprintf(o, "%s{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
			     "\"digest\":\"" D1 "\",\"size\":1}", i ? "," : "");
	strcpy(o, "]}");
	struct oci_index *idx = NULL;
	pd_err err = { 0 };
	assert_int_equal(oci_index_parse(s, strlen(s), &idx, &err), -EINVAL);
	assert_string_equal(err.msg, "image index: more than 1024 manifests");
}

static void test_manifest(void **state)
{
	struct oci_manifest *m = manifest_ok(oci_manifest);
	assert_int_equal(m->media_type, OCI_MT_MANIFEST);
	assert_int_equal(m->config.media_type, OCI_MT_CONFIG);
	assert_string_equal(m->config.digest, D1);
	assert_int_equal(m->n_layers, 3);
	assert_int_equal(m->layers[0].size, 48484745);
	assert_int_equal(oci_layer_compression(m->layers[0].media_type), OCI_COMP_GZIP);
	assert_int_equal(oci_layer_compression(m->layers[1].media_type), OCI_COMP_ZSTD);
	assert_int_equal(oci_layer_compression(m->layers[2].media_type), OCI_COMP_NONE);
	oci_manifest_free(m);

	struct oci_manifest *dm = manifest_ok(
		"{\"schemaVersion\":2,\"mediaType\":"
		"\"application/vnd.docker.distribution.manifest.v2+json\",\"config\":{\"mediaType\":"
		"\"application/vnd.docker.container.image.v1+json\",\"size\":1,\"digest\":\"" D1 "\"},"
		"\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\","
		"\"size\":2,\"digest\":\"" D2 "\"}]}");
	assert_int_equal(dm->media_type, OCI_MT_DOCKER_MANIFEST);
	assert_int_equal(dm->layers[0].media_type, OCI_MT_DOCKER_LAYER_GZIP);
	oci_manifest_free(dm);
}

#define MANIFEST_WITH_LAYER(mt)                                                             \
	"{\"schemaVersion\":2,\"config\":{\"mediaType\":"                                    \
	"\"application/vnd.oci.image.config.v1+json\",\"size\":1,\"digest\":\"" D1 "\"},"      \
	"\"layers\":[{\"mediaType\":\"" mt "\",\"size\":2,\"digest\":\"" D2 "\"}]}"

static void test_manifest_refusals(void **state)
{
	manifest_bad(MANIFEST_WITH_LAYER("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"),
		     "image manifest: layers[0]: foreign layer refused: its content lives outside "
		     "the registry (application/vnd.docker.image.rootfs.foreign.diff.tar.gzip)");
	manifest_bad(MANIFEST_WITH_LAYER("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"),
		     "foreign layer refused");
	manifest_bad(MANIFEST_WITH_LAYER("application/x-bzip2"),
		     "image manifest: layers[0]: unsupported media type (application/x-bzip2)");
	manifest_bad(MANIFEST_WITH_LAYER("application/vnd.oci.image.config.v1+json"),
		     "layers[0]: not a layer media type");
	manifest_bad("{\"schemaVersion\":1,\"name\":\"x\",\"fsLayers\":[]}",
		     "schemaVersion 1 is not supported (Docker schema 1");
	manifest_bad("{\"schemaVersion\":2,\"config\":{\"mediaType\":"
		     "\"application/vnd.cncf.helm.config.v1+json\",\"size\":1,\"digest\":\"" D1 "\"},"
		     "\"layers\":[]}", "not a container image");
	manifest_bad("{\"schemaVersion\":2,\"config\":{\"mediaType\":"
		     "\"application/vnd.oci.image.config.v1+json\",\"size\":1,\"digest\":"
		     "\"sha512:" "1111111111111111111111111111111111111111111111111111111111111111\"},"
		     "\"layers\":[]}", "config: unsupported digest (only sha256)");
	manifest_bad("{\"schemaVersion\":2,\"config\":{\"mediaType\":"
		     "\"application/vnd.oci.image.config.v1+json\",\"size\":1099511627777,"
		     "\"digest\":\"" D1 "\"},\"layers\":[]}", "config.size: too large");
	manifest_bad("{\"schemaVersion\":2,\"layers\":[]}", "image manifest: config: missing");
	manifest_bad("[]", "image manifest: expected an object");
	manifest_bad("{\"schemaVersion\":2,", "image manifest: invalid JSON at byte 19");
}

static void test_document_type(void **state)
{
	enum oci_media_type t;
	pd_err err = { 0 };
	assert_int_equal(oci_document_type(oci_index, strlen(oci_index), NULL, &t, NULL), 0);
	assert_int_equal(t, OCI_MT_INDEX);
	assert_int_equal(oci_document_type("{}", 2,
			 "application/vnd.docker.distribution.manifest.v2+json", &t, NULL), 0);
	assert_int_equal(t, OCI_MT_DOCKER_MANIFEST);
	const char *bare = "{\"schemaVersion\":2,\"config\":{},\"layers\":[]}";
	assert_int_equal(oci_document_type(bare, strlen(bare), "application/json", &t, NULL), 0);
	assert_int_equal(t, OCI_MT_MANIFEST);
	const char *v1 = "{\"schemaVersion\":1,\"fsLayers\":[]}";
	assert_int_equal(oci_document_type(v1, strlen(v1), NULL, &t, &err), -EINVAL);
	assert_string_equal(err.msg, "Docker schema 1 manifests are not supported");
}

static const char config[] =
	"{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"2025-05-01T00:00:00Z\","
	" \"config\":{\"Env\":[\"PATH=/usr/local/bin:/usr/bin\",\"NODE_VERSION=22.15.0\"],"
	"  \"Entrypoint\":[\"docker-entrypoint.sh\"],\"Cmd\":[\"node\"],\"WorkingDir\":\"/app\","
	"  \"User\":\"1000:1000\",\"Labels\":null},"
	" \"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\",\"" D2 "\",\"" D3 "\"]},"
	" \"history\":[{\"created_by\":\"/bin/sh -c #(nop) CMD [\\\"node\\\"]\",\"empty_layer\":true}]}";

static void test_config(void **state)
{
	struct oci_config *c = NULL;
	pd_err err = { 0 };
	assert_int_equal(oci_config_parse(config, strlen(config), &c, &err), 0);
	assert_string_equal(c->os, "linux");
	assert_string_equal(c->architecture, "amd64");
	assert_int_equal(strv_len(c->env), 2);
	assert_string_equal(c->env[1], "NODE_VERSION=22.15.0");
	assert_string_equal(c->entrypoint[0], "docker-entrypoint.sh");
	assert_string_equal(c->cmd[0], "node");
	assert_string_equal(c->working_dir, "/app");
	assert_string_equal(c->user, "1000:1000");
	assert_int_equal(c->n_diff_ids, 3);
	assert_string_equal(c->diff_ids[2], D3);
	struct oci_manifest *m = manifest_ok(oci_manifest);
	assert_int_equal(oci_config_check_layers(c, m, &err), 0);
	m->n_layers = 2;
	assert_int_equal(oci_config_check_layers(c, m, &err), -EINVAL);
	m->n_layers = 3;
	oci_manifest_free(m);
	oci_config_free(c);

	const char *minimal = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":null,"
			      "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}";
	assert_int_equal(oci_config_parse(minimal, strlen(minimal), &c, &err), 0);
	assert_int_equal(strv_len(c->cmd), 0);
	assert_null(c->user);
	oci_config_free(c);

	const char *bad_env = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":"
			      "[\"NOEQUALS\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}";
	assert_int_equal(oci_config_parse(bad_env, strlen(bad_env), &c, &err), -EINVAL);
	assert_string_equal(err.msg, "image config: config.Env[0]: not NAME=VALUE (NOEQUALS)");
	const char *bad_id = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":"
			     "\"layers\",\"diff_ids\":[\"sha256:x\"]}}";
	assert_int_equal(oci_config_parse(bad_id, strlen(bad_id), &c, &err), -EINVAL);
	assert_string_equal(err.msg, "image config: rootfs.diff_ids[0]: not a sha256 digest");
}

static void test_docker_save(void **state)
{
	const char *text =
		"[{\"Config\":\"blobs/sha256/1111111111111111111111111111111111111111111111111111111111111111\","
		"  \"RepoTags\":[\"node:22\"],"
		"  \"Layers\":[\"blobs/sha256/22\",\"abc/layer.tar\"],"
		"  \"LayerSources\":{}}]";
	struct oci_docker_save *s = NULL;
	pd_err err = { 0 };
	assert_int_equal(oci_docker_save_parse(text, strlen(text), &s, &err), 0);
	assert_int_equal(s->n_images, 1);
	assert_string_equal(s->images[0].repo_tags[0], "node:22");
	assert_string_equal(s->images[0].layers[1], "abc/layer.tar");
	oci_docker_save_free(s);

	const char *evil = "[{\"Config\":\"c.json\",\"RepoTags\":null,"
			   "\"Layers\":[\"ok/layer.tar\",\"../../etc/shadow\"]}]";
	assert_int_equal(oci_docker_save_parse(evil, strlen(evil), &s, &err), -EINVAL);
	assert_string_equal(err.msg, "docker manifest.json: [0].Layers[1]: unsafe path "
				     "(../../etc/shadow)");
	const char *abs = "[{\"Config\":\"/etc/passwd\",\"Layers\":[]}]";
	assert_int_equal(oci_docker_save_parse(abs, strlen(abs), &s, &err), -EINVAL);
	assert_int_equal(oci_docker_save_parse("[]", 2, &s, &err), -EINVAL);
	assert_true(oci_archive_path_valid("a/b.tar"));
	assert_false(oci_archive_path_valid("a//b"));
	assert_false(oci_archive_path_valid("a/./b"));
	assert_false(oci_archive_path_valid("a/"));
	assert_false(oci_archive_path_valid(""));
}

static void test_oci_layout(void **state)
{
	pd_err err = { 0 };
	const char *ok = "{\"imageLayoutVersion\": \"1.0.0\"}";
	assert_int_equal(oci_layout_check(ok, strlen(ok), &err), 0);
	const char *v2 = "{\"imageLayoutVersion\": \"2.0.0\"}";
	assert_int_equal(oci_layout_check(v2, strlen(v2), &err), -EINVAL);

	const char *index =
		"{\"schemaVersion\":2,\"manifests\":["
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D1 "\","
		"\"size\":10,\"annotations\":{\"org.opencontainers.image.ref.name\":\"22\"}},"
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D2 "\","
		"\"size\":10,\"annotations\":{\"org.opencontainers.image.ref.name\":\"latest\"}}]}";
	struct oci_index *idx = NULL;
	assert_int_equal(oci_index_parse(index, strlen(index), &idx, &err), 0);
	const struct oci_descriptor *d = NULL;
	assert_int_equal(oci_index_find_ref(idx, "latest", &d, &err), 0);
	assert_string_equal(d->digest, D2);
	assert_int_equal(oci_index_find_ref(idx, "nope", &d, &err), -ENOENT);
	assert_string_equal(err.msg, "no image named 'nope' in the layout (names: 22, latest)");
	assert_int_equal(oci_index_find_ref(idx, NULL, &d, &err), -ENOENT);
	idx->n_manifests = 1;
	assert_int_equal(oci_index_find_ref(idx, NULL, &d, &err), 0);
	assert_string_equal(d->digest, D1);
	idx->n_manifests = 2;
	oci_index_free(idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_media_types),
		cmocka_unit_test(test_index_pick_amd64),
		cmocka_unit_test(test_index_pick_nested_index),
		cmocka_unit_test(test_docker_manifest_list),
		cmocka_unit_test(test_index_errors),
		cmocka_unit_test(test_index_too_many),
		cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_manifest_refusals),
		cmocka_unit_test(test_document_type),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_docker_save),
		cmocka_unit_test(test_oci_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
