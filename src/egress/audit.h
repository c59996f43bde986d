/* audit.h — the egress audit log: one JSON line per decision (a DNS answer, a connection).
 *
 *   {"time":"2025-01-02T03:04:05.678Z","box":"b","kind":"tcp","name":"github.com","port":443,
 *    "rule":"github.com:443","verdict":"allow","reason":"","bytes_up":517,"bytes_down":4096,
 *    "duration_ms":35}
 *
 * kind is "dns" (port 53, qtype in "reason" with the rcode), "tcp" (transparent) or "proxy".
 * Strings are escaped by cJSON (names from the box may be any bytes). Appended to
 * state_dir/net.log, rotated to net.log.1 past EGRESS_AUDIT_MAX bytes. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#define EGRESS_AUDIT_MAX (16u << 20)

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
/* Appends one record (rotating when the file is too big). Errors are counted, not fatal. */
void egress_audit_write(struct egress_audit *a, const struct egress_audit_rec *r);
