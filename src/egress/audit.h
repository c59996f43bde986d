/* audit.h — the egress audit log: one JSON line per decision (a DNS answer, a connection).
 *
 *   {"time":"2025-01-02T03:04:05.678Z","box":"b","kind":"tcp","name":"github.com","port":443,
 *    "rule":"github.com:443","verdict":"allow","reason":"","bytes_up":517,"bytes_down":4096,
 *    "duration_ms":35}
 *
 * kind is "dns" (port 53, qtype in "reason" with the rcode), "tcp" (transparent) or "proxy".
 * Strings are escaped by cJSON (names from the box may be any bytes). Appended to
 * state_dir/net.log, rotated past EGRESS_AUDIT_MAX bytes to net.log.1 … net.log.N
 * (EGRESS_AUDIT_KEEP). The box decides how many lines there are: past EGRESS_AUDIT_RATE
 * lines in one second the rest of that second's are counted, not written, and one line of
 * kind "audit" (reason "rate-limited: N lines not written") says so — a flood of denied
 * names pushed a box's earlier lines out of the log in seconds. An allowed connection that
 * carried bytes is always written. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#define EGRESS_AUDIT_MAX (16u << 20)
#define EGRESS_AUDIT_KEEP 4    /* rotated files kept: at most 80 MiB per box in all */
#define EGRESS_AUDIT_RATE 500  /* lines per second written before the rest are counted */

struct egress_audit_rec {
	int64_t time_ms;         /* unix time in ms */
	const char *box, *kind, *name, *rule, *verdict, *reason;
	uint16_t port;
	uint64_t bytes_up, bytes_down;
	int64_t duration_ms;
};

/* The line, newline-terminated, malloc'd. Pure. */
char *egress_audit_format(const struct egress_audit_rec *r);

struct egress_audit;
/* Opens (creates 0600) path for appending. */
int egress_audit_open(const char *path, struct egress_audit **ret);
void egress_audit_close(struct egress_audit *a);
/* Appends one record (rotating when the file is too big; within the rate). Errors are
 * counted, not fatal. */
void egress_audit_write(struct egress_audit *a, const struct egress_audit_rec *r);
/* Writes the rate limit's pending summary line, if any (a box going away). */
void egress_audit_flush(struct egress_audit *a);
/* The summary of a second that has ended, without waiting for the next line (called by the
 * network thread at least once a second). */
void egress_audit_tick(struct egress_audit *a);
