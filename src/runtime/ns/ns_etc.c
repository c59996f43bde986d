/* ns_etc.c — what the box's /etc holds (pure). */
#include "runtime/ns/ns_etc.h"

static const struct ns_etc_entry entries[] = {
	/* the dynamic loader must find the host's libraries in /usr */
	{"ld.so.cache", NS_ETC_COPY},
	{"ld.so.conf", NS_ETC_COPY},
	{"ld.so.conf.d", NS_ETC_COPY_DIR},
	/* shells and terminals behave as on the host */
	{"bash.bashrc", NS_ETC_COPY},
	{"profile", NS_ETC_COPY},
	{"profile.d", NS_ETC_COPY_DIR},
	{"inputrc", NS_ETC_COPY},
	{"shells", NS_ETC_COPY},
	/* time, locale, names of things */
	{"localtime", NS_ETC_COPY},
	{"timezone", NS_ETC_COPY},
	{"locale.alias", NS_ETC_COPY},
	{"mime.types", NS_ETC_COPY},
	{"protocols", NS_ETC_COPY},
	{"services", NS_ETC_COPY},
	{"host.conf", NS_ETC_COPY},
	{"gai.conf", NS_ETC_COPY},
	{"os-release", NS_ETC_COPY},
	{"debian_version", NS_ETC_COPY},
	/* /usr/bin/editor, java, python3 ... point through here */
	{"alternatives", NS_ETC_BIND_RO},
	/* TLS trust (public certificates only: /etc/ssl/private is never exposed) */
	{"ssl/certs", NS_ETC_BIND_RO},
	{"ssl/openssl.cnf", NS_ETC_COPY},
	{"ca-certificates", NS_ETC_BIND_RO},
	{"ca-certificates.conf", NS_ETC_COPY},
};

static const char *const generated[] = {"passwd", "group", "hosts", "hostname", "resolv.conf", "nsswitch.conf"};

const struct ns_etc_entry *ns_etc_entries(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(entries);
	return entries;
}

bool ns_etc_generated(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(generated); i++)
		if (streq(name, generated[i]))
			return true;
	return false;
}

static struct ns_file file(const char *name, char *data)
{
	return (struct ns_file){.name = name, .data = data, .len = strlen(data), .mode = 0644};
}

/* No shadow file: nobody in a box has a password; root is reached through paddock exec. */
void ns_etc_generate(const char *hostname, const char *shell, struct ns_file ret[NS_ETC_N_GENERATED])
{
	ret[0] = file("passwd", xasprintf("root:x:0:0:root:/root:%s\n"
					  "agent:x:%u:%u:agent:/home/agent:%s\n"
					  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
					  shell, NS_AGENT_ID, NS_AGENT_ID, shell));
	ret[1] = file("group", xasprintf("root:x:0:\ntty:x:5:\nagent:x:%u:\nnogroup:x:65534:\n", NS_AGENT_ID));
	ret[2] = file("hosts", xasprintf("127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", hostname));
	ret[3] = file("hostname", xasprintf("%s\n", hostname));
	ret[4] = file("resolv.conf", xstrdup("# paddock: name service is provided by the supervisor once the box network is up\n"));
	ret[5] = file("nsswitch.conf", xstrdup("passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
					       "networks: files\nprotocols: files\nservices: files\n"
					       "ethers: files\nrpc: files\nnetgroup: files\n"));
}

void ns_etc_files_free(struct ns_file *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++)
		free(f[i].data);
}
