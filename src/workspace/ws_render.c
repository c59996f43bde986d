/* ws_render.c — diff renderers: --stat summary, unified patch, JSON (cJSON). Every name and
 * content byte goes through ws_escape() before it reaches the output. */
#include <cjson/cJSON.h>

#include "ws_diff.h"

#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_BOLD "\033[1m"
#define C_OFF "\033[m"

static const char *col(const struct ws_render_opts *o, const char *c)
{
	return o->color ? c : "";
}

static char letter(const struct ws_delta *d)
{
	static const char letters[WS_CHG_MAX] = {
		[WS_CHG_ADDED] = 'A', [WS_CHG_DELETED] = 'D', [WS_CHG_MODIFIED] = 'M', [WS_CHG_MODE] = 'm',
		[WS_CHG_SYMLINK] = 'L', [WS_CHG_TYPE] = 'T', [WS_CHG_RENAMED] = 'R', [WS_CHG_REFUSED] = '!',
	};
	return letters[d->kind];
}

/* Loads both sides when they are small text files; false otherwise. */
static bool load_texts(const struct ws_render_opts *o, const struct ws_delta *d, char **a, size_t *al,
		       char **b, size_t *bl)
{
	*a = *b = NULL;
	*al = *bl = 0;
	if (!o->content)
		return false;
	const struct ws_entry *x = d->base, *y = d->box;
	if ((x && (x->type != WS_FILE || o->content->load(o->content->ud, x, false, WS_TEXT_MAX, a, al) < 0)) ||
	    (y && (y->type != WS_FILE || o->content->load(o->content->ud, y, true, WS_TEXT_MAX, b, bl) < 0)) ||
	    ws_text_is_binary(*a ? *a : "", *al) || ws_text_is_binary(*b ? *b : "", *bl)) {
		free(*a);
		free(*b);
		*a = *b = NULL;
		return false;
	}
	return true;
}

static bool line_counts(const struct ws_render_opts *o, const struct ws_delta *d, unsigned *add, unsigned *del)
{
	if (d->kind != WS_CHG_MODIFIED && d->kind != WS_CHG_ADDED && d->kind != WS_CHG_DELETED)
		return false;
	_cleanup_free_ char *a = NULL, *b = NULL;
	size_t al, bl;
	if (!load_texts(o, d, &a, &al, &b, &bl))
		return false;
	ws_udiff_count(a ? a : "", al, b ? b : "", bl, add, del);
	return true;
}

static void stat_detail(FILE *out, const struct ws_delta *d)
{
	if (d->kind == WS_CHG_RENAMED || d->kind == WS_CHG_TYPE || d->kind == WS_CHG_SYMLINK) {
		_cleanup_free_ char *old = ws_escape_name(d->base->path);
		if (d->kind == WS_CHG_RENAMED)
			fprintf(out, " (from %s)", old);
		if (d->kind == WS_CHG_TYPE)
			fprintf(out, " (%s -> %s)", ws_type_str(d->base->type), ws_type_str(d->box->type));
	}
	if (d->kind == WS_CHG_SYMLINK || (d->kind == WS_CHG_ADDED && d->box->type == WS_SYMLINK)) {
		_cleanup_free_ char *t = ws_escape_name(d->box->target);
		fprintf(out, " -> %s", t);
	}
	if (d->mode_changed || d->kind == WS_CHG_MODE)
		fprintf(out, " (mode %04o -> %04o)", (unsigned)d->base->mode, (unsigned)d->box->mode);
	if (d->kind == WS_CHG_REFUSED)
		fprintf(out, " (refused: %s)", ws_reason_str(d->refused));
}

void ws_diff_render_stat(FILE *out, const struct ws_diff *d, const struct ws_render_opts *o)
{
	size_t files = 0;
	unsigned long ins = 0, dels = 0;
	for (size_t i = 0; i < d->n; i++) {
		const struct ws_delta *x = &d->v[i];
		if (!ws_delta_selected(x, o->paths))
			continue;
		_cleanup_free_ char *p = ws_escape_name(ws_delta_path(x));
		const char *c = x->kind == WS_CHG_REFUSED || x->exec ? C_YELLOW
				: x->kind == WS_CHG_DELETED ? C_RED : C_GREEN;
		fprintf(out, " %s%c%s %s", col(o, c), letter(x), col(o, C_OFF), p);
		stat_detail(out, x);
		unsigned a = 0, r = 0;
		if (line_counts(o, x, &a, &r)) {
			fprintf(out, " | %s+%u%s %s-%u%s", col(o, C_GREEN), a, col(o, C_OFF), col(o, C_RED), r, col(o, C_OFF));
			ins += a, dels += r;
		}
		if (x->exec)
			fprintf(out, " %s[host-executing: %s; apply skips it unless allowed]%s", col(o, C_YELLOW),
				ws_exec_str(x->exec), col(o, C_OFF));
		fputc('\n', out);
		files++;
	}
	fprintf(out, " %zu path%s changed, %lu insertion%s(+), %lu deletion%s(-)\n", files, files == 1 ? "" : "s",
		ins, ins == 1 ? "" : "s", dels, dels == 1 ? "" : "s");
}

static void patch_header(FILE *out, const struct ws_delta *d, const struct ws_render_opts *o)
{
	_cleanup_free_ char *a = ws_escape_name(d->base ? d->base->path : ws_delta_path(d));
	_cleanup_free_ char *b = ws_escape_name(ws_delta_path(d));
	fprintf(out, "%sdiff --paddock a/%s b/%s%s\n", col(o, C_BOLD), a, b, col(o, C_OFF));
	if (d->exec)
		fprintf(out, "%s# host-executing path (%s): apply skips it unless allowed%s\n", col(o, C_YELLOW),
			ws_exec_str(d->exec), col(o, C_OFF));
	if (d->kind == WS_CHG_REFUSED)
		fprintf(out, "%s# refused: %s%s\n", col(o, C_YELLOW), ws_reason_str(d->refused), col(o, C_OFF));
	if (d->kind == WS_CHG_RENAMED)
		fprintf(out, "rename from %s\nrename to %s\n", a, b);
	if (d->kind == WS_CHG_ADDED && d->box->type == WS_FILE)
		fprintf(out, "new file mode %04o\n", (unsigned)d->box->mode);
	if (d->kind == WS_CHG_DELETED && d->base->type == WS_FILE)
		fprintf(out, "deleted file mode %04o\n", (unsigned)d->base->mode);
	if (d->mode_changed || d->kind == WS_CHG_MODE)
		fprintf(out, "old mode %04o\nnew mode %04o\n", (unsigned)d->base->mode, (unsigned)d->box->mode);
}

static void patch_symlinks(FILE *out, const struct ws_delta *d)
{
	if (d->base && d->base->type == WS_SYMLINK) {
		_cleanup_free_ char *t = ws_escape_name(d->base->target);
		fprintf(out, "-symlink -> %s\n", t);
	}
	if (d->box && d->box->type == WS_SYMLINK) {
		_cleanup_free_ char *t = ws_escape_name(d->box->target);
		fprintf(out, "+symlink -> %s\n", t);
	}
}

static void patch_body(FILE *out, const struct ws_delta *d, const struct ws_render_opts *o)
{
	const struct ws_entry *x = d->base, *y = d->box;
	if (d->kind == WS_CHG_MODE || d->kind == WS_CHG_RENAMED || d->kind == WS_CHG_REFUSED ||
	    (x && x->type == WS_DIR) || (y && y->type == WS_DIR))
		return;
	patch_symlinks(out, d);
	if (!(x && x->type == WS_FILE) && !(y && y->type == WS_FILE))
		return;
	_cleanup_free_ char *a = NULL, *b = NULL;
	size_t al, bl;
	if (!load_texts(o, d, &a, &al, &b, &bl)) {
		fprintf(out, "binary or unavailable content differs (%llu -> %llu bytes)\n",
			(unsigned long long)(x && x->type == WS_FILE ? x->size : 0),
			(unsigned long long)(y && y->type == WS_FILE ? y->size : 0));
		return;
	}
	_cleanup_free_ char *pa = ws_escape_name(ws_delta_path(d));
	fprintf(out, "--- %s%s\n+++ %s%s\n", a ? "a/" : "/dev/null", a ? pa : "", b ? "b/" : "/dev/null", b ? pa : "");
	ws_udiff_write(out, a ? a : "", al, b ? b : "", bl, o->context, o->color);
}

void ws_diff_render_patch(FILE *out, const struct ws_diff *d, const struct ws_render_opts *o)
{
	for (size_t i = 0; i < d->n; i++) {
		if (!ws_delta_selected(&d->v[i], o->paths))
			continue;
		patch_header(out, &d->v[i], o);
		patch_body(out, &d->v[i], o);
	}
}

static void json_str(cJSON *obj, const char *key, const char *raw)
{
	_cleanup_free_ char *esc = ws_escape_name(raw);
	cJSON_AddStringToObject(obj, key, esc);
}

static void json_side(cJSON *obj, const char *prefix, const struct ws_entry *e)
{
	char key[32], hex[2 * WS_SHA256_LEN + 1];
	snprintf(key, sizeof(key), "%stype", prefix);
	cJSON_AddStringToObject(obj, key, ws_type_str(e->type));
	if (e->type == WS_FILE) {
		snprintf(key, sizeof(key), "%smode", prefix);
		cJSON_AddNumberToObject(obj, key, (double)e->mode);
		snprintf(key, sizeof(key), "%ssize", prefix);
		cJSON_AddNumberToObject(obj, key, (double)e->size);
		ws_sha256_hex(e->sha256, hex);
		snprintf(key, sizeof(key), "%ssha256", prefix);
		cJSON_AddStringToObject(obj, key, hex);
	}
	if (e->type == WS_SYMLINK) {
		snprintf(key, sizeof(key), "%starget", prefix);
		json_str(obj, key, e->target);
	}
}

static cJSON *json_delta(const struct ws_delta *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "change", ws_change_str(d->kind));
	json_str(o, "path", ws_delta_path(d));
	if (d->kind == WS_CHG_RENAMED)
		json_str(o, "old_path", d->base->path);
	if (d->base)
		json_side(o, "old_", d->base);
	if (d->box)
		json_side(o, "", d->box);
	if (d->kind == WS_CHG_REFUSED)
		cJSON_AddStringToObject(o, "refused", ws_reason_str(d->refused));
	if (d->exec)
		cJSON_AddStringToObject(o, "exec", ws_exec_str(d->exec));
	return o;
}

char *ws_diff_render_json(const struct ws_diff *d, const struct ws_render_opts *o)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "changes");
	for (size_t i = 0; i < d->n; i++)
		if (ws_delta_selected(&d->v[i], o->paths))
			cJSON_AddItemToArray(arr, json_delta(&d->v[i]));
	char *s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!s)
		abort(); /* cJSON only fails on OOM */
	char *r = xstrdup(s);
	cJSON_free(s);
	return r;
}
