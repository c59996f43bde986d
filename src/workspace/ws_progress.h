/* ws_progress.h — a progress bar on stderr for long copy-ins and applies: shown only when
 * stderr is a terminal and only once the work has taken more than a second, redrawn at most
 * ten times a second, erased when done. The line is built by a pure formatter. */
#pragma once

#include "util/util.h"

struct ws_progress {
	bool on;          /* stderr is a terminal */
	bool shown;       /* a line is on the screen */
	bool bytes;       /* done/total count bytes (else items) */
	const char *what; /* "copying the project in", "applying" */
	uint64_t total;   /* 0: unknown */
	int64_t start_ms, last_ms;
};

void ws_progress_start(struct ws_progress *p, const char *what, uint64_t total, bool bytes);
void ws_progress_update(struct ws_progress *p, uint64_t done);
void ws_progress_end(struct ws_progress *p);

/* The line for done of total after elapsed_ms ("what [#####.....]  45%  450 MB / 1.0 GB
 * 85 MB/s"); at most len - 1 bytes, never a control character. */
void ws_progress_format(char *buf, size_t len, const char *what, uint64_t done, uint64_t total, bool bytes,
			int64_t elapsed_ms);
