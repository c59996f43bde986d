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
	int64_t second;           /* the rate limit's current second (monotonic) */
	uint32_t in_second;       /* lines written in it */
	uint64_t dropped;         /* lines counted, not written, since the last summary */
	char box[128];            /* for the summary line */
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
	egress_audit_flush(a);
	if (a->fd >= 0)
		close(a->fd);
	free(a->path);
	free(a);
}

static void rotate(struct egress_audit *a)
{
	for (int i = EGRESS_AUDIT_KEEP - 1; i >= 1; i--) {
		_cleanup_free_ char *from = xasprintf("%s.%d", a->path, i), *to = xasprintf("%s.%d", a->path, i + 1);
		(void)rename(from, to);
	}
	_cleanup_free_ char *old = xasprintf("%s.1", a->path);
	rename(a->path, old);
	int fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	close(a->fd);
	a->fd = fd;
	a->size = 0;
}

static void append(struct egress_audit *a, const struct egress_audit_rec *r)
{
	_cleanup_free_ char *line = egress_audit_format(r);
	size_t n = strlen(line);
	if (a->size + n > EGRESS_AUDIT_MAX)
		rotate(a);
	if (fd_write_all(a->fd, line, n) == 0)
		a->size += n;
}

void egress_audit_flush(struct egress_audit *a)
{
	if (!a || !a->dropped)
		return;
	char reason[64];
	snprintf(reason, sizeof(reason), "rate-limited: %llu lines not written", (unsigned long long)a->dropped);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct egress_audit_rec s = {.time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, .box = a->box,
				     .kind = "audit", .name = "", .rule = "", .verdict = "deny", .reason = reason};
	a->dropped = 0;
	append(a, &s);
}

void egress_audit_tick(struct egress_audit *a)
{
	if (a && a->dropped && mono_ms() / 1000 != a->second)
		egress_audit_flush(a);
}

void egress_audit_write(struct egress_audit *a, const struct egress_audit_rec *r)
{
	if (!a)
		return;
	int64_t now = mono_ms() / 1000;
	if (now != a->second) {
		egress_audit_flush(a);
		a->second = now;
		a->in_second = 0;
	}
	if (r->box)
		snprintf(a->box, sizeof(a->box), "%s", r->box);
	/* a connection that was let through and carried bytes is always written: a flood of
	 * DNS questions or refusals must not hide the one connection that mattered */
	bool exempt = r->verdict && streq(r->verdict, "allow") && r->kind && !streq(r->kind, "dns") &&
		      (r->bytes_up || r->bytes_down);
	if (exempt) {
		append(a, r);
		return;
	}
	if (a->in_second >= EGRESS_AUDIT_RATE) {
		a->dropped++;
		return;
	}
	a->in_second++;
	append(a, r);
}
