# tests/integration/net-lib.sh — shared by the network tests: a test CA, the local upstream
# servers (net-upstreams.py) and helpers. Sourced after tests/lib.sh.
NET_DIR=$(mktemp -d /tmp/pdnet.XXXXXX)
chmod 0755 "$NET_DIR"
net_make_ca() {
	local d=$NET_DIR
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=paddock-test-ca \
		-keyout $d/ca.key -out $d/ca.pem >/dev/null 2>&1
	openssl req -newkey rsa:2048 -nodes -subj /CN=tls.test -keyout $d/leaf.key -out $d/leaf.csr >/dev/null 2>&1
	printf 'subjectAltName=DNS:tls.test,DNS:other.test\n' >$d/ext
	openssl x509 -req -in $d/leaf.csr -CA $d/ca.pem -CAkey $d/ca.key -CAcreateserial -days 2 \
		-extfile $d/ext -out $d/leaf.pem >/dev/null 2>&1
	chmod 0644 $d/*.pem
}
net_start_upstreams() {
	mkdir -p "$NET_DIR/logs"
	python3 "$(dirname "${BASH_SOURCE[0]}")/net-upstreams.py" "$NET_DIR/logs" "$NET_DIR/leaf.pem" "$NET_DIR/leaf.key" \
		>"$NET_DIR/ports" 2>"$NET_DIR/upstreams.err" &
	NET_UP_PID=$!
	for _ in $(seq 50); do [ -s "$NET_DIR/ports" ] && break; sleep 0.1; done
	read -r HTTP_PORT HTTPS_PORT ECHO_PORT <"$NET_DIR/ports"
	export HTTP_PORT HTTPS_PORT ECHO_PORT NET_DIR
}
net_stop() { kill "$NET_UP_PID" 2>/dev/null || true; wait "$NET_UP_PID" 2>/dev/null || true; rm -rf "$NET_DIR"; }
# the upstream log NAME (http, https, echo) as it is now, "" when empty
net_uplog() { cat "$NET_DIR/logs/$1.log" 2>/dev/null || true; }
net_uplog_clear() { rm -f "$NET_DIR/logs/"*.log; }
# the audit log of a persistent box
net_audit() { cat "$PADDOCK_HOME/boxes/$1/net.log" 2>/dev/null || true; }
