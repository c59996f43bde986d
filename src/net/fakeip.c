/* fakeip.c — the fake-IP pool (see fakeip.h).
 *
 * Entries live in one array indexed by address offset; the name index is a glibc tsearch()
 * red-black tree, so lookups stay O(log n) whatever names a box chooses (no hash to flood).
 * Unreferenced entries sit on an LRU list, most recent at the head; entries held by a
 * connection are taken off the list, so the tail is always the eviction candidate. */
#include <arpa/inet.h>
#include <search.h>

#include "egress/name.h"
#include "net/fakeip.h"
#include "util/util.h"

#define NONE UINT32_MAX

struct fip_entry {
	char *name;         /* NULL: never used */
	uint32_t prev, next; /* LRU links (indices), NONE at the ends or when pinned */
	uint32_t refs;
	uint64_t last_used;
};

struct fakeip_pool {
	uint32_t net;      /* host byte order */
	uint32_t capacity, used, count, ttl;
	uint32_t head, tail;
	void *by_name;     /* tsearch root of struct fip_entry * */
	struct fip_entry *e;
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct fip_entry *)a)->name, ((const struct fip_entry *)b)->name);
}

int fakeip_pool_new(struct in_addr net, uint32_t capacity, uint32_t ttl,
		    struct fakeip_pool **ret)
{
	uint32_t n = ntohl(net.s_addr);
	/* only the two /16s of 198.18.0.0/15: never an address that could be someone's real one */
	if ((n != 0xc6120000u && n != 0xc6130000u) || capacity == 0 ||
	    capacity > FAKEIP_CAPACITY_MAX)
		return -EINVAL;
	struct fakeip_pool *p = xcalloc(1, sizeof(*p));
	p->net = n;
	p->capacity = capacity;
	p->ttl = ttl;
	p->head = p->tail = NONE;
	p->e = xcalloc(capacity, sizeof(*p->e));
	*ret = p;
	return 0;
}

static void free_nothing(void *node) { (void)node; }

void fakeip_pool_free(struct fakeip_pool *p)
{
	if (!p)
		return;
	tdestroy(p->by_name, free_nothing);
	for (uint32_t i = 0; i < p->used; i++)
		free(p->e[i].name);
	free(p->e);
	free(p);
}

static void lru_unlink(struct fakeip_pool *p, uint32_t i)
{
	struct fip_entry *e = &p->e[i];
	if (e->prev != NONE)
		p->e[e->prev].next = e->next;
	else
		p->head = e->next;
	if (e->next != NONE)
		p->e[e->next].prev = e->prev;
	else
		p->tail = e->prev;
	e->prev = e->next = NONE;
}

static void lru_push_front(struct fakeip_pool *p, uint32_t i)
{
	struct fip_entry *e = &p->e[i];
	e->prev = NONE;
	e->next = p->head;
	if (p->head != NONE)
		p->e[p->head].prev = i;
	p->head = i;
	if (p->tail == NONE)
		p->tail = i;
}

static void touch(struct fakeip_pool *p, uint32_t i, uint64_t now)
{
	p->e[i].last_used = now;
	if (p->e[i].refs == 0) {
		lru_unlink(p, i);
		lru_push_front(p, i);
	}
}

static struct in_addr addr_of(const struct fakeip_pool *p, uint32_t i)
{
	return (struct in_addr){.s_addr = htonl(p->net + 1 + i)};
}

/* The index addr stands for, or NONE if it is outside the assigned part of the pool. */
static uint32_t index_of(const struct fakeip_pool *p, struct in_addr addr)
{
	uint32_t a = ntohl(addr.s_addr);
	if (a <= p->net || a - p->net - 1 >= p->used || !p->e[a - p->net - 1].name)
		return NONE;
	return a - p->net - 1;
}

/* Frees the least recently used entry if no connection holds it and its answer has expired;
 * its index, or NONE. */
static uint32_t evict(struct fakeip_pool *p, uint64_t now)
{
	uint32_t i = p->tail;
	if (i == NONE || now < p->e[i].last_used + p->ttl)
		return NONE;
	lru_unlink(p, i);
	tdelete(&p->e[i], &p->by_name, cmp_entry);
	free(p->e[i].name);
	p->e[i].name = NULL;
	p->count--;
	return i;
}

int fakeip_assign(struct fakeip_pool *p, const char *canon_name, uint64_t now,
		  struct in_addr *ret_addr)
{
	char canon[EGRESS_NAME_MAX + 1];
	if (egress_name_canon(canon_name, canon, sizeof(canon)) < 0 || !streq(canon, canon_name))
		return -EINVAL;
	struct fip_entry key = {.name = canon};
	struct fip_entry **hit = tfind(&key, &p->by_name, cmp_entry);
	if (hit) {
		uint32_t i = (uint32_t)(*hit - p->e);
		touch(p, i, now);
		*ret_addr = addr_of(p, i);
		return 0;
	}
	uint32_t i = p->used < p->capacity ? p->used++ : evict(p, now);
	if (i == NONE)
		return -ENOSPC;
	struct fip_entry *e = &p->e[i];
	*e = (struct fip_entry){.name = xstrdup(canon), .prev = NONE, .next = NONE, .last_used = now};
	if (!tsearch(e, &p->by_name, cmp_entry))
		abort(); /* out of memory: not recoverable (util.h) */
	lru_push_front(p, i);
	p->count++;
	*ret_addr = addr_of(p, i);
	return 0;
}

const char *fakeip_lookup(struct fakeip_pool *p, struct in_addr addr, uint64_t now)
{
	uint32_t i = index_of(p, addr);
	if (i == NONE)
		return NULL;
	touch(p, i, now);
	return p->e[i].name;
}

int fakeip_ref(struct fakeip_pool *p, struct in_addr addr)
{
	uint32_t i = index_of(p, addr);
	if (i == NONE)
		return -ENOENT;
	if (p->e[i].refs++ == 0)
		lru_unlink(p, i); /* pinned: off the eviction list */
	return 0;
}

void fakeip_unref(struct fakeip_pool *p, struct in_addr addr, uint64_t now)
{
	uint32_t i = index_of(p, addr);
	if (i == NONE || p->e[i].refs == 0)
		return;
	if (--p->e[i].refs == 0) {
		p->e[i].last_used = now;
		lru_push_front(p, i);
	}
}

bool fakeip_in_pool(const struct fakeip_pool *p, struct in_addr addr)
{
	return (ntohl(addr.s_addr) & 0xffff0000u) == p->net;
}

size_t fakeip_count(const struct fakeip_pool *p)
{
	return p->count;
}
