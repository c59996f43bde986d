/* audit.c — formatting and appending audit lines. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "egress/audit.h"
#include "util/fdio.h"
#include "util/util.h"

static void iso_time(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

char *egress_audit_format(const struct egress_audit_rec *r)
{
	char ts[32];
	iso_time(r->time_ms, ts);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "time", ts);
	cJSON_AddStringToObject(o, "box", r->box ? r->box : "");
	cJSON_AddStringToObject(o, "kind", r->kind ? r->kind : "");
	cJSON_AddStringToObject(o, "name", r->name ? r->name : "");
	cJSON_AddNumberToObject(o, "port", r->port);
	cJSON_AddStringToObject(o, "rule", r->rule ? r->rule : "");
	cJSON_AddStringToObject(o, "verdict", r->verdict ? r->verdict : "");
	cJSON_AddStringToObject(o, "reason", r->reason ? r->reason : "");
	cJSON_AddNumberToObject(o, "bytes_up", (double)r->bytes_up);
	cJSON_AddNumberToObject(o, "bytes_down", (double)r->bytes_down);
	cJSON_AddNumberToObject(o, "duration_ms", (double)r->duration_ms);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		abort();
	char *line = xasprintf("%s\n", s);
	cJSON_free(s);
	return line;
}

struct egress_audit {
	char *path;
	int fd;
	uint64_t size;
};

int egress_audit_open(const char *path, struct egress_audit **ret)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	struct egress_audit *a = xcalloc(1, sizeof(*a));
	a->path = xstrdup(path);
	a->fd = fd;
	a->size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	*ret = a;
	return 0;
}

void egress_audit_close(struct egress_audit *a)
{
	if (!a)
		return;
	if (a->fd >= 0)
		close(a->fd);
	free(a->path);
	free(a);
}

static void rotate(struct egress_audit *a)
{
	_cleanup_free_ char *old = xasprintf("%s.1", a->path);
	rename(a->path, old);
	int fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	close(a->fd);
	a->fd = fd;
	a->size = 0;
}

void egress_audit_write(struct egress_audit *a, const struct egress_audit_rec *r)
{
	if (!a)
		return;
	_cleanup_free_ char *line = egress_audit_format(r);
	size_t n = strlen(line);
	if (a->size + n > EGRESS_AUDIT_MAX)
		rotate(a);
	if (fd_write_all(a->fd, line, n) == 0)
		a->size += n;
}
