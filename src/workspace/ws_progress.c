/* ws_progress.c — see ws_progress.h. */
#include <time.h>

#include "workspace/ws_progress.h"

#define BAR 24

static void human(char *buf, size_t len, uint64_t n, bool bytes)
{
	static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
	if (!bytes) {
		snprintf(buf, len, "%llu", (unsigned long long)n);
		return;
	}
	double v = (double)n;
	size_t u = 0;
	while (v >= 1000.0 && u + 1 < ARRAY_SIZE(units))
		v /= 1000.0, u++;
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void ws_progress_format(char *buf, size_t len, const char *what, uint64_t done, uint64_t total, bool bytes,
			int64_t elapsed_ms)
{
	char d[32], t[32], rate[40] = "";
	human(d, sizeof(d), done, bytes);
	human(t, sizeof(t), total, bytes);
	if (bytes && elapsed_ms > 0) {
		char r[32];
		human(r, sizeof(r), done * 1000 / (uint64_t)elapsed_ms, true);
		snprintf(rate, sizeof(rate), "  %s/s", r);
	}
	if (!total) {
		snprintf(buf, len, "paddock: %s: %s%s", what, d, rate);
		return;
	}
	unsigned pct = done >= total ? 100 : (unsigned)(done * 100 / total);
	char bar[BAR + 1];
	for (unsigned i = 0; i < BAR; i++)
		bar[i] = i < pct * BAR / 100 ? '#' : '.';
	bar[BAR] = '\0';
	snprintf(buf, len, "paddock: %s [%s] %3u%%  %s / %s%s", what, bar, pct, d, t, rate);
}

void ws_progress_start(struct ws_progress *p, const char *what, uint64_t total, bool bytes)
{
	*p = (struct ws_progress){.on = isatty(STDERR_FILENO) == 1, .what = what, .total = total,
				  .bytes = bytes, .start_ms = mono_ms()};
}

void ws_progress_update(struct ws_progress *p, uint64_t done)
{
	if (!p->on)
		return;
	int64_t now = mono_ms();
	if (now - p->start_ms < 1000 || now - p->last_ms < 100)
		return;
	p->last_ms = now;
	char line[160];
	ws_progress_format(line, sizeof(line), p->what, done, p->total, p->bytes, now - p->start_ms);
	fprintf(stderr, "\r%s\033[K", line);
	p->shown = true;
}

void ws_progress_end(struct ws_progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
	p->shown = false;
}
