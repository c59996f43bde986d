#!/bin/bash
# bench/egress.sh — issue 4: throughput and connection set-up through paddock's egress
# path against the host downloading directly, tinyproxy as a CONNECT proxy, and
# sandbox-runtime's proxy, in one run. All traffic stays on loopback.
#
#   PADDOCK=build/src/cli/paddock bench/egress.sh
#
# Upstream: nginx (nginx-light) on 127.0.0.1, HTTP and HTTPS (a test CA made here with
# openssl; clients use -k, the same on every path), serving a 1 GiB file and a small one.
# Rows (throughput: median of BENCH_EG_RUNS downloads, default 3; connections: one run of
# BENCH_EG_CONNS sequential HTTPS requests, default 1000, each on a new connection
# (`Connection: close`), p50 of curl's time_appconnect = TCP + proxy + TLS set-up):
#   direct HTTP and HTTPS from the host
#   HTTPS through tinyproxy (CONNECT) on the host
#   HTTPS through srt's proxy (inside `srt`, curl follows its HTTPS_PROXY)
#   HTTPS from inside a paddock box, explicit proxy and transparent (--noproxy '*'),
#     via `--resolve bench.test=127.0.0.1 --allow bench.test:PORT` (guarded)
#   supervisor RSS while a box holds BENCH_EG_HOLD (1000) connections open (bench/hold-conns.py)
# Targets: paddock >= 0.5x direct and >= 2x srt throughput; connection p50 <= direct + 1 ms;
# RSS <= 64 MB.
set -u
. "$(dirname "$0")/lib.sh"

EG="$BENCH_WORK/egress"
SIZE_MB=${BENCH_EG_MB:-1024}
RUNS=${BENCH_EG_RUNS:-3}
CONNS=${BENCH_EG_CONNS:-1000}
HOLD=${BENCH_EG_HOLD:-1000}
HOLD_TIMEOUT=${BENCH_EG_HOLD_TIMEOUT:-300}
HTTP_PORT=${BENCH_EG_HTTP_PORT:-18080}
HTTPS_PORT=${BENCH_EG_HTTPS_PORT:-18443}
TP_PORT=${BENCH_EG_TINYPROXY_PORT:-18888}
NAME=bench.test
BIG=big-${SIZE_MB}m.bin
NA="paddock side not available yet"
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
}
trap cleanup EXIT

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }

make_files() {
	mkdir -p "$BENCH_WORK/empty-cwd"
	mkdir -p "$EG/www" "$EG/tmp" "$EG/logs"
	chmod 0755 "$BENCH_WORK" "$EG" "$EG/www"
	if [ "$(stat -c %s "$EG/www/$BIG" 2>/dev/null)" != $((SIZE_MB << 20)) ]; then
		bench_log "writing a ${SIZE_MB} MiB file (once)"
		head -c $((SIZE_MB << 20)) /dev/urandom >"$EG/www/$BIG"
	fi
	printf 'ok\n' >"$EG/www/small.txt"
	chmod 0644 "$EG/www/"*
	[ -s "$EG/server.pem" ] && return 0
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=paddock bench CA" \
		-keyout "$EG/ca.key" -out "$EG/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$NAME" -keyout "$EG/server.key" \
		-out "$EG/server.csr" 2>/dev/null
	printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1\n' "$NAME" >"$EG/san.ext"
	openssl x509 -req -in "$EG/server.csr" -CA "$EG/ca.pem" -CAkey "$EG/ca.key" \
		-CAcreateserial -days 3650 -extfile "$EG/san.ext" -out "$EG/server.pem" 2>/dev/null
}

start_nginx() {
	port_free "$HTTP_PORT" && port_free "$HTTPS_PORT" ||
		bench_die "port $HTTP_PORT or $HTTPS_PORT busy (set BENCH_EG_HTTP_PORT/BENCH_EG_HTTPS_PORT)"
	cat >"$EG/nginx.conf" <<-EOF
		daemon off;
		worker_processes 1;
		pid $EG/nginx.pid;
		error_log $EG/logs/error.log;
		events { worker_connections 4096; }
		http {
		    access_log off;
		    sendfile on;
		    tcp_nopush on;
		    keepalive_requests 100000;
		    client_body_temp_path $EG/tmp;
		    proxy_temp_path $EG/tmp;
		    fastcgi_temp_path $EG/tmp;
		    uwsgi_temp_path $EG/tmp;
		    scgi_temp_path $EG/tmp;
		    server {
		        listen 127.0.0.1:$HTTP_PORT;
		        listen 127.0.0.1:$HTTPS_PORT ssl;
		        ssl_certificate $EG/server.pem;
		        ssl_certificate_key $EG/server.key;
		        root $EG/www;
		    }
		}
	EOF
	nginx -p "$EG" -c "$EG/nginx.conf" 2>>"$EG/logs/error.log" &
	PIDS+=($!)
	wait_http "http://127.0.0.1:$HTTP_PORT/small.txt" || bench_die "nginx did not start (see $EG/logs)"
}

start_tinyproxy() {
	port_free "$TP_PORT" || bench_die "port $TP_PORT busy (set BENCH_EG_TINYPROXY_PORT)"
	# no ConnectPort line: CONNECT allowed to any port (the upstream is on a high one)
	cat >"$EG/tinyproxy.conf" <<-EOF
		Port $TP_PORT
		Listen 127.0.0.1
		Timeout 600
		MaxClients 2000
		Allow 127.0.0.1
		LogLevel Error
		DisableViaHeader Yes
	EOF
	[ "$(id -u)" = 0 ] && printf 'User nobody\nGroup nogroup\n' >>"$EG/tinyproxy.conf"
	tinyproxy -d -c "$EG/tinyproxy.conf" >"$EG/logs/tinyproxy.log" 2>&1 &
	PIDS+=($!)
	wait_http "https://127.0.0.1:$HTTPS_PORT/small.txt" -x "http://127.0.0.1:$TP_PORT" ||
		bench_die "tinyproxy did not start (see $EG/logs/tinyproxy.log)"
}

wait_http() {
	local i
	for i in $(seq 1 50); do
		curl -k -s -o /dev/null "$@" && return 0
		sleep 0.1
	done
	return 1
}

# speed_mbs CMD...: median MiB/s over RUNS of a curl CMD printing %{speed_download}
speed_mbs() {
	local r v samples=()
	for ((r = 0; r < RUNS; r++)); do
		v=$("$@" </dev/null) || { bench_log "download failed: $*"; return 1; }
		samples+=("$(awk -v b="$v" 'BEGIN { printf "%.1f\n", b / 1048576 }')")
	done
	printf '%s\n' "${samples[@]}" | bench_median
}

CURL_BIG=(curl -k -s -S -f -o /dev/null -w '%{speed_download}\n')

# curl config for CONNS sequential requests, each on a fresh connection
conn_config() {
	local url=$1 i
	printf 'header = "Connection: close"\n'
	printf 'write-out = "%%{time_appconnect}\\n"\n'
	for ((i = 0; i < CONNS; i++)); do
		printf 'url = "%s"\n' "$url"
		printf 'output = "/dev/null"\n'
	done
}

# conn_p50 FILE: p50 (ms) of the time_appconnect values in FILE
conn_p50() {
	local n
	n=$(grep -c . "$1")
	[ "$n" -ge "$CONNS" ] || { bench_log "only $n of $CONNS connections completed"; return 1; }
	awk '{ print $1 * 1000 }' "$1" | bench_percentile 50
}

host_side() {
	local url="https://127.0.0.1:$HTTPS_PORT" out="$EG/conns.txt"
	DIRECT=$(speed_mbs "${CURL_BIG[@]}" "$url/$BIG") || bench_die "direct download failed"
	local plain tp
	plain=$(speed_mbs "${CURL_BIG[@]}" "http://127.0.0.1:$HTTP_PORT/$BIG") || plain=-
	tp=$(speed_mbs "${CURL_BIG[@]}" -x "http://127.0.0.1:$TP_PORT" "$url/$BIG") || tp=-
	bench_row "HTTPS ${SIZE_MB} MiB, host direct" "$DIRECT" MiB/s
	bench_row "HTTP ${SIZE_MB} MiB, host direct (reference)" "$plain" MiB/s "$DIRECT" "direct HTTPS"
	bench_row "HTTPS ${SIZE_MB} MiB via tinyproxy CONNECT" "$tp" MiB/s "$DIRECT" "direct"
	conn_config "$url/small.txt" | curl -k -s -K - >"$out" || true
	CONN_DIRECT=$(conn_p50 "$out") || CONN_DIRECT=-
	bench_row "HTTPS connection set-up p50, direct ($CONNS seq.)" "$CONN_DIRECT" ms
	conn_config "$url/small.txt" | curl -k -s -x "http://127.0.0.1:$TP_PORT" -K - >"$out" || true
	tp=$(conn_p50 "$out") || tp=-
	bench_row "HTTPS connection set-up p50, via tinyproxy" "$tp" ms "$CONN_DIRECT" "direct"
}

# srt: curl inside the sandbox follows srt's HTTPS_PROXY; srt's NO_PROXY lists localhost
# and 127.0.0.1, so --noproxy '' sends even those through its proxy, and the settings
# allow the domain "localhost" (srt's resolved-address guard lets a loopback name reach
# only loopback addresses)
srt_side() {
	local url="https://localhost:$HTTPS_PORT" out="$EG/conns-srt.txt"
	local SRT_CMD
	bench_srt_cmd '"localhost"'
	local SRT=("${SRT_CMD[@]}")
	SRT_MBS=$(cd "$BENCH_WORK/empty-cwd" && speed_mbs "${SRT[@]}" "${CURL_BIG[@]}" --noproxy '' "$url/$BIG") || SRT_MBS=-
	bench_row "HTTPS ${SIZE_MB} MiB via srt's proxy (inside srt)" "$SRT_MBS" MiB/s "$DIRECT" "direct"
	conn_config "$url/small.txt" >"$EG/conns-srt.cfg"
	chmod 0644 "$EG/conns-srt.cfg"
	(cd "$BENCH_WORK/empty-cwd" && "${SRT[@]}" curl -k -s --noproxy '' -K "$EG/conns-srt.cfg" </dev/null) >"$out" || true
	local p
	p=$(conn_p50 "$out") || p=-
	bench_row "HTTPS connection set-up p50, via srt's proxy" "$p" ms "$CONN_DIRECT" "direct"
}

# ready = the options exist and one small HTTPS fetch through the box's network works
paddock_ready() {
	bench_paddock_works ns && "$PADDOCK" run --help 2>&1 | grep -q -- '--resolve' &&
		"$PADDOCK" run --rm --backend ns --net none --allow "$NAME:$HTTPS_PORT" \
			--resolve "$NAME=127.0.0.1" -- curl -k -s -f -o /dev/null \
			"https://$NAME:$HTTPS_PORT/small.txt" </dev/null >/dev/null 2>&1
}

paddock_side() {
	# an empty cwd: `run` copies the current directory into the box
	cd "$BENCH_WORK/empty-cwd" || bench_die "no $BENCH_WORK/empty-cwd"
	if ! paddock_ready; then
		bench_log "PADDOCK=${PADDOCK:-unset}: $NA"
		bench_row "HTTPS ${SIZE_MB} MiB from a paddock box" - MiB/s "" - "$NA"
		bench_row "HTTPS connection set-up p50 from a paddock box" - ms "" - "$NA"
		bench_row "supervisor RSS with 1000 concurrent connections" - KiB "" - "$NA"
		return 0
	fi
	local url="https://$NAME:$HTTPS_PORT" out="$EG/conns-pd.txt" v
	local PD=("$PADDOCK" run --rm --backend ns --net none --allow "$NAME:$HTTPS_PORT"
		--resolve "$NAME=127.0.0.1" --)
	v=$(speed_mbs "${PD[@]}" "${CURL_BIG[@]}" "$url/$BIG") || v=-
	bench_row "HTTPS ${SIZE_MB} MiB from a paddock box, explicit proxy" "$v" MiB/s "$DIRECT" "direct" \
		"target >= 0.5x direct; $(bench_ratio "$v" "$SRT_MBS")x srt (target >= 2x)"
	v=$(speed_mbs "${PD[@]}" "${CURL_BIG[@]}" --noproxy '*' "$url/$BIG") || v=-
	bench_row "HTTPS ${SIZE_MB} MiB from a paddock box, transparent" "$v" MiB/s "$DIRECT" "direct" \
		"target >= 0.5x direct; $(bench_ratio "$v" "$SRT_MBS")x srt (target >= 2x)"
	conn_config "$url/small.txt" | "${PD[@]}" curl -k -s -K - >"$out" || true
	v=$(conn_p50 "$out") || v=-
	bench_row "HTTPS connection set-up p50, paddock explicit proxy" "$v" ms "$CONN_DIRECT" "direct" \
		"target <= direct + 1 ms"
	conn_config "$url/small.txt" | "${PD[@]}" curl -k -s --noproxy '*' -K - >"$out" || true
	v=$(conn_p50 "$out") || v=-
	bench_row "HTTPS connection set-up p50, paddock transparent" "$v" ms "$CONN_DIRECT" "direct" \
		"target <= direct + 1 ms"
	hold_conns
}

# N connections held open from inside one box; for `run --rm` the supervisor (and its
# network stack) is the paddock process itself, so its VmRSS is the supervisor's
hold_conns() {
	local out="$EG/hold.out" pid i rss="-" hwm="-" t0 t1 took="-"
	rm -f "$out" # a line left by an earlier run must not count
	t0=$(bench_now_ns)
	"$PADDOCK" run --rm --backend ns --net none --allow "$NAME:$HTTP_PORT" \
		--resolve "$NAME=127.0.0.1" -- python3 -c "$(cat "$BENCH_DIR/hold-conns.py")" \
		"$NAME" "$HTTP_PORT" "$HOLD" 5 </dev/null >"$out" 2>&1 &
	pid=$!
	for ((i = 0; i < HOLD_TIMEOUT * 10; i++)); do
		grep -qs '^held' "$out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if grep -qs '^held' "$out"; then
		t1=$(bench_now_ns)
		took=$(awk -v d="$((t1 - t0))" 'BEGIN { printf "%.1f", d / 1e9 }')
		rss=$(bench_vmrss_kb "$pid") || rss=-
		hwm=$(bench_poll_hwm_kb "$pid") || hwm=-
	else
		t1=$(bench_now_ns)
		bench_log "the box did not hold $HOLD connections (after $(((t1 - t0) / 1000000000)) s, box $(kill -0 "$pid" 2>/dev/null && echo still running || echo gone)): $(tail -n 3 "$out" | tr '\n' ' ')"
		kill "$pid" 2>/dev/null
	fi
	wait "$pid"
	bench_row "supervisor RSS holding $HOLD concurrent connections (VmRSS)" "$rss" KiB "" - \
		"target <= 65536 KiB; peak (VmHWM) $hwm KiB; all open after $took s"
}

bench_header "egress (issue 4) — $(bench_machine)"
make_files
start_nginx
start_tinyproxy
host_side
srt_side
paddock_side
