/* layer_paths.c — tar entry names made safe to resolve, and the set of paths a layer wrote
 * (layer_int.h). Pure. */
#include "image/layer_int.h"

/* Appends component c (n bytes) to out (len so far); -ENAMETOOLONG when it does not fit. */
static int append_component(char *out, size_t *len, const char *c, size_t n)
{
	if (n > LAYER_NAME_MAX || *len + (*len ? 1 : 0) + n > LAYER_PATH_MAX)
		return -ENAMETOOLONG;
	if (*len)
		out[(*len)++] = '/';
	memcpy(out + *len, c, n);
	*len += n;
	out[*len] = '\0';
	return 0;
}

int layer_path_normalize(const char *name, unsigned max_depth, char **ret)
{
	if (strlen(name) > LAYER_PATH_MAX)
		return -ENAMETOOLONG;
	_cleanup_free_ char *out = xmalloc(LAYER_PATH_MAX + 1);
	size_t len = 0;
	unsigned depth = 0;
	out[0] = '\0';
	for (const char *p = name; *p;) {
		size_t n = strcspn(p, "/");
		bool skip = n == 0 || (n == 1 && p[0] == '.');
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -EINVAL;
		if (!skip) {
			if (++depth > max_depth)
				return -ELOOP;
			int r = append_component(out, &len, p, n);
			if (r < 0)
				return r;
		}
		p += n + (p[n] == '/');
	}
	*ret = TAKE_PTR(out);
	return 0;
}

/* ---- path set: open addressing, FNV-1a, load <= 1/2 ---- */

struct layer_pathset {
	char **slots;
	size_t cap, count;
	uint64_t bytes;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

struct layer_pathset *layer_pathset_new(void)
{
	struct layer_pathset *s = xcalloc(1, sizeof(*s));
	s->cap = 1024;
	s->slots = xcalloc(s->cap, sizeof(char *));
	return s;
}

void layer_pathset_free(struct layer_pathset *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i]);
	free(s->slots);
	free(s);
}

static char **find_slot(char **slots, size_t cap, const char *path)
{
	size_t i = hash(path) & (cap - 1);
	while (slots[i] && !streq(slots[i], path))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static void grow(struct layer_pathset *s)
{
	size_t cap = s->cap * 2;
	char **slots = xcalloc(cap, sizeof(char *));
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			*find_slot(slots, cap, s->slots[i]) = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
}

void layer_pathset_add(struct layer_pathset *s, const char *path)
{
	if ((s->count + 1) * 2 > s->cap)
		grow(s);
	char **slot = find_slot(s->slots, s->cap, path);
	if (*slot)
		return;
	*slot = xstrdup(path);
	s->count++;
	s->bytes += strlen(path) + 1;
}

void layer_pathset_add_with_parents(struct layer_pathset *s, const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (;;) {
		if (layer_pathset_has(s, p))
			return; /* its parents were added with it */
		layer_pathset_add(s, p);
		char *slash = strrchr(p, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
}

bool layer_pathset_has(const struct layer_pathset *s, const char *path)
{
	return *find_slot(s->slots, s->cap, path) != NULL;
}

uint64_t layer_pathset_bytes(const struct layer_pathset *s)
{
	return s->bytes;
}
