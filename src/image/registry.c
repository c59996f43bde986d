/* registry.c — pulling from an OCI registry over libcurl (registry.h). */
#include <curl/curl.h>
#include <dlfcn.h>
#include <strings.h>

#include "config.h"

#include "image/oci_auth.h"
#include "image/oci_ref.h"
#include "image/registry.h"

#define HEADER_KEEP_MAX 8192

/* ---- libcurl, loaded on first use ----
 * Every paddock command would otherwise map libcurl and its ~20 libraries (GSSAPI, LDAP,
 * SSH, RTMP, ...) at exec, though only pulls use it: it is dlopen'ed here instead, and called
 * through correctly typed pointers (setopt and getinfo are variadic in libcurl too). */
static struct curl_api {
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	CURLcode (*easy_perform)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	char *(*easy_escape)(CURL *, const char *, int);
	void (*free)(void *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
} C;

static int curl_api_load(pd_err *err)
{
	if (C.easy_init)
		return 0;
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return pd_error_msg(err, ENOENT, "cannot load libcurl (apt-get install libcurl4): %s", dlerror());
	struct { void **slot; const char *name; } syms[] = {
		{(void **)&C.easy_cleanup, "curl_easy_cleanup"}, {(void **)&C.easy_reset, "curl_easy_reset"},
		{(void **)&C.easy_setopt, "curl_easy_setopt"}, {(void **)&C.easy_getinfo, "curl_easy_getinfo"},
		{(void **)&C.easy_perform, "curl_easy_perform"}, {(void **)&C.easy_strerror, "curl_easy_strerror"},
		{(void **)&C.easy_escape, "curl_easy_escape"}, {(void **)&C.free, "curl_free"},
		{(void **)&C.slist_append, "curl_slist_append"}, {(void **)&C.slist_free_all, "curl_slist_free_all"},
		{(void **)&C.easy_init, "curl_easy_init"}, /* last: it marks the table complete */
	};
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++)
		if (!(*syms[i].slot = dlsym(h, syms[i].name)))
			return pd_error_msg(err, ENOENT, "libcurl lacks %s", syms[i].name);
	return 0;
}

/* ---- pure helpers ---- */

bool img_registry_is_loopback(const char *hostport)
{
	size_t n;
	if (startswith(hostport, "[::1]"))
		return hostport[5] == '\0' || hostport[5] == ':';
	n = strcspn(hostport, ":");
	if (n == 9 && !strncmp(hostport, "localhost", 9))
		return true;
	if (!startswith(hostport, "127."))
		return false;
	/* 127.a.b.c: digits and dots only */
	return strspn(hostport, "0123456789.") == n;
}

char *img_registry_base_url(const char *registry, const char *mirror, pd_err *err)
{
	if (mirror && streq(registry, "docker.io")) {
		bool http = startswith(mirror, "http://");
		if (!http && !startswith(mirror, "https://"))
			return pd_error_msg(err, EINVAL, "registry mirror '%s' is not an http(s) URL", mirror), NULL;
		const char *host = mirror + (http ? 7 : 8);
		_cleanup_free_ char *hp = xstrndup(host, strcspn(host, "/?#"));
		if (!*hp)
			return pd_error_msg(err, EINVAL, "registry mirror '%s' names no host", mirror), NULL;
		/* a name or address and a port, nothing else: "http://localhost:1@example.com" is
		 * example.com to curl, and must not pass the loopback check below as localhost */
		if (hp[strspn(hp, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]")] || host[strlen(hp)] == '?' ||
		    host[strlen(hp)] == '#')
			return pd_error_msg(err, EINVAL, "registry mirror '%s': give scheme://host[:port][/path], without user@, query or fragment",
					    mirror), NULL;
		if (http && !img_registry_is_loopback(hp))
			return pd_error_msg(err, EINVAL, "registry mirror '%s': plain http only to a loopback address; use https", mirror), NULL;
		char *u = xstrdup(mirror);
		for (size_t l = strlen(u); l > 8 && u[l - 1] == '/'; l--)
			u[l - 1] = '\0';
		return u;
	}
	if (streq(registry, "docker.io"))
		return xstrdup("https://registry-1.docker.io");
	return xasprintf("%s://%s", img_registry_is_loopback(registry) ? "http" : "https", registry);
}

/* ---- one HTTP request ---- */

struct client {
	struct img_fetcher f;
	CURL *curl;
	char *base, *repo;
	char *token;
	const struct img_pull_opts *o;
};

struct response {
	long status;
	char *ctype, *auth;              /* Content-Type, WWW-Authenticate */
	char *body;                      /* memory sink */
	size_t len, max;
	struct img_blob_writer *w;       /* or blob sink */
	pd_err *werr;
	bool overflow, werror;
	CURL *curl;
};

static void response_clear(struct response *r)
{
	free(r->ctype);
	free(r->auth);
	free(r->body);
	*r = (struct response){0};
}

static size_t on_header(char *buf, size_t size, size_t n, void *userdata)
{
	struct response *r = userdata;
	size_t len = size * n;
	if (len >= 5 && !strncmp(buf, "HTTP/", 5)) {
		/* a new response (after a redirect or a 100): forget the last one's headers */
		free(r->ctype);
		free(r->auth);
		r->ctype = r->auth = NULL;
		return len;
	}
	if (len > HEADER_KEEP_MAX)
		return len;
	char **slot = NULL;
	size_t skip = 0;
	if (len > 13 && !strncasecmp(buf, "content-type:", 13))
		slot = &r->ctype, skip = 13;
	else if (len > 17 && !strncasecmp(buf, "www-authenticate:", 17))
		slot = &r->auth, skip = 17;
	if (!slot || *slot)
		return len;
	const char *v = buf + skip;
	size_t vl = len - skip;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	*slot = xstrndup(v, vl);
	return len;
}

/* 2xx bodies go to the sink; others (error documents) to a small buffer for the message */
static size_t on_body(char *buf, size_t size, size_t n, void *userdata)
{
	struct response *r = userdata;
	size_t len = size * n;
	long code = 0;
	C.easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &code);
	bool ok = code >= 200 && code < 300;
	if (ok && r->w) {
		if (img_blob_writer_write(r->w, buf, len, r->werr) < 0) {
			r->werror = true;
			return 0; /* aborts the transfer */
		}
		return len;
	}
	size_t max = ok ? r->max : 4096;
	if (len > max - r->len) {
		if (ok) {
			r->overflow = true;
			return 0;
		}
		len = max - r->len; /* keep the start of an error document */
	}
	r->body = xrealloc(r->body, r->len + len + 1);
	memcpy(r->body + r->len, buf, len);
	r->len += len;
	r->body[r->len] = '\0';
	return size * n;
}

static void setup_easy(struct client *c, const char *url, struct response *resp, struct curl_slist *hdrs)
{
	CURL *h = c->curl;
	C.easy_reset(h);
	C.easy_setopt(h, CURLOPT_URL, url);
	C.easy_setopt(h, CURLOPT_USERAGENT, "paddock/" PADDOCK_VERSION);
	C.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	C.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	C.easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	/* never to file://, ftp:// and friends; an https registry is never downgraded to http */
	C.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	C.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, startswith(url, "https:") ? "https" : "http,https");
	C.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	C.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	C.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	C.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	C.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	C.easy_setopt(h, CURLOPT_HEADERDATA, resp);
	C.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	C.easy_setopt(h, CURLOPT_WRITEDATA, resp);
	if (c->o->ca_file)
		C.easy_setopt(h, CURLOPT_CAINFO, c->o->ca_file);
	if (c->token) {
		/* libcurl sends a bearer only to the host of the URL, never after a redirect to
		 * another host (CURLOPT_UNRESTRICTED_AUTH stays off) */
		C.easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		C.easy_setopt(h, CURLOPT_XOAUTH2_BEARER, c->token);
	}
	resp->curl = h;
}

static int perform(struct client *c, const char *url, struct response *resp, struct curl_slist *hdrs, pd_err *err)
{
	setup_easy(c, url, resp, hdrs);
	CURLcode cc = C.easy_perform(c->curl);
	C.easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (resp->werror)
		return -(resp->werr->code ? resp->werr->code : EIO);
	if (resp->overflow)
		return pd_error_msg(err, EFBIG, "%s: response larger than %zu bytes", url, resp->max);
	if (cc != CURLE_OK)
		return pd_error_msg(err, EIO, "%s: %s", url, C.easy_strerror(cc));
	return 0;
}

/* ---- token auth ---- */

static char *url_escape(CURL *h, const char *s)
{
	char *e = C.easy_escape(h, s, 0);
	if (!e)
		abort();
	char *out = xstrdup(e);
	C.free(e);
	return out;
}

/* Answers a 401: an anonymous token from the challenge's realm. */
static int get_token(struct client *c, const char *challenge, pd_err *err)
{
	struct oci_auth_challenge ch;
	int r = oci_auth_challenge_parse(challenge, strlen(challenge), &ch, err);
	if (r < 0)
		return pd_err_prefix(err, "registry authentication challenge");
	if (ch.scheme != OCI_AUTH_BEARER) {
		oci_auth_challenge_clear(&ch);
		return pd_error_msg(err, EACCES, "the registry wants a password (Basic auth); paddock pulls anonymously");
	}
	_cleanup_free_ char *scope = ch.scope ? xstrdup(ch.scope) : xasprintf("repository:%s:pull", c->repo);
	_cleanup_free_ char *es = url_escape(c->curl, scope);
	_cleanup_free_ char *url = NULL;
	if (ch.service) {
		_cleanup_free_ char *sv = url_escape(c->curl, ch.service);
		url = xasprintf("%s%sservice=%s&scope=%s", ch.realm, strchr(ch.realm, '?') ? "&" : "?", sv, es);
	} else
		url = xasprintf("%s%sscope=%s", ch.realm, strchr(ch.realm, '?') ? "&" : "?", es);
	oci_auth_challenge_clear(&ch);
	struct response resp = {.max = OCI_TOKEN_RESPONSE_MAX};
	free(c->token);
	c->token = NULL; /* the token server gets no stale token */
	r = perform(c, url, &resp, NULL, err);
	if (r == 0 && resp.status != 200)
		r = pd_error_msg(err, EACCES, "token server %s answered %ld", url, resp.status);
	unsigned expires;
	if (r == 0)
		r = oci_token_parse(resp.body ? resp.body : "", resp.len, &c->token, &expires, err);
	response_clear(&resp);
	return r;
}

/* GET with one retry after a 401 answered with a token. */
static int get(struct client *c, const char *url, struct response *resp, struct curl_slist *hdrs, pd_err *err)
{
	struct img_blob_writer *w = resp->w;
	size_t max = resp->max;
	for (int attempt = 0;; attempt++) {
		int r = perform(c, url, resp, hdrs, err);
		if (r < 0)
			return r;
		if (resp->status != 401 || attempt > 0 || !resp->auth)
			break;
		_cleanup_free_ char *challenge = TAKE_PTR(resp->auth);
		response_clear(resp);
		resp->w = w;
		resp->max = max;
		resp->werr = err;
		if ((r = get_token(c, challenge, err)) < 0)
			return r;
	}
	if (resp->status == 200)
		return 0;
	int code = resp->status == 404 ? ENOENT : resp->status == 401 || resp->status == 403 ? EACCES : EIO;
	return pd_error_msg(err, code, "%s: HTTP %ld%s%.300s", url, resp->status, resp->body ? ": " : "",
			    resp->body ? resp->body : "");
}

static struct curl_slist *manifest_accept(void)
{
	static const enum oci_media_type types[] = {OCI_MT_INDEX, OCI_MT_DOCKER_LIST, OCI_MT_MANIFEST,
						    OCI_MT_DOCKER_MANIFEST};
	struct curl_slist *l = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		_cleanup_free_ char *h = xasprintf("Accept: %s", oci_media_type_name(types[i]));
		l = C.slist_append(l, h);
	}
	return l;
}

/* A manifest or index by tag or digest into the store; expect (may be NULL) pins it. */
static int get_manifest(struct client *c, struct img_store *s, const char *ref, const char *expect,
			char ret_digest[OCI_DIGEST_LEN + 1], pd_err *err)
{
	_cleanup_free_ char *url = xasprintf("%s/v2/%s/manifests/%s", c->base, c->repo, ref);
	struct curl_slist *hdrs = manifest_accept();
	struct response resp = {.max = OCI_DOC_MAX, .werr = err};
	int r = get(c, url, &resp, hdrs, err);
	C.slist_free_all(hdrs);
	if (r == 0)
		r = img_blob_put_buf(s, resp.body ? resp.body : "", resp.len, expect, ret_digest, err);
	response_clear(&resp);
	return r < 0 ? pd_err_prefix(err, "manifest %s", ref) : 0;
}

static int fetch_registry(struct img_fetcher *f, struct img_store *s, const struct oci_descriptor *d,
			  bool manifest, pd_err *err)
{
	struct client *c = (struct client *)f;
	if (manifest)
		return get_manifest(c, s, d->digest, d->digest, NULL, err);
	struct img_blob_writer *w;
	int r = img_blob_writer_new(s, d->size, &w, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *url = xasprintf("%s/v2/%s/blobs/%s", c->base, c->repo, d->digest);
	struct response resp = {.w = w, .werr = err};
	r = get(c, url, &resp, NULL, err);
	response_clear(&resp);
	if (r < 0) {
		img_blob_writer_abort(w);
		return pd_err_prefix(err, "blob %s", d->digest);
	}
	r = img_blob_writer_commit(w, d->digest, d->size, NULL, NULL, err);
	return r < 0 ? pd_err_prefix(err, "blob from %s", url) : 0;
}

int img_pull(struct img_store *s, const char *refstr, const struct img_pull_opts *o,
	     struct img_record **ret, pd_err *err)
{
	_cleanup_oci_ref_ struct oci_ref *ref = NULL;
	int r = oci_ref_parse(refstr, &ref, err);
	if (r < 0)
		return r;
	if ((r = curl_api_load(err)) < 0)
		return r;
	const char *mirror = o->mirror ? o->mirror : getenv("PADDOCK_REGISTRY_MIRROR");
	struct client c = {.f = {.fetch = fetch_registry, .progress = o->progress}, .o = o};
	c.base = img_registry_base_url(ref->registry, mirror && *mirror ? mirror : NULL, err);
	if (!c.base)
		return -EINVAL;
	c.repo = xstrdup(ref->repository);
	c.curl = C.easy_init();
	if (!c.curl)
		abort();
	_cleanup_free_ char *name = o->name ? img_name_normalize(o->name) : oci_ref_format(ref);
	if (!name)
		return pd_error_msg(err, EINVAL, "invalid image name '%s'", o->name);
	_cleanup_free_ char *source = xasprintf("pull %s", c.base);
	char top[OCI_DIGEST_LEN + 1];
	if (o->progress)
		fprintf(o->progress, "pulling %s from %s\n", name, c.base);
	r = get_manifest(&c, s, ref->digest ? ref->digest : ref->tag, ref->digest, top, err);
	if (r == 0)
		r = img_ingest(s, &c.f, top, name, source, ret, err);
	C.easy_cleanup(c.curl);
	free(c.base);
	free(c.repo);
	free(c.token);
	return r < 0 ? pd_err_prefix(err, "cannot pull %s", refstr) : 0;
}
