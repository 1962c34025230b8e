# Sourced by bench/load.sh and bench/lab-threads.sh: nginx with one worker on CPU 0 serving a
# 1294-byte file, connection per request (keepalive_timeout 0), on 127.0.0.1:$1, its files
# under the directory $2 (0755: nginx's worker runs as nobody, and mktemp's 0700 left it a 403
# for every request until 2026-11-28). Sets NGX_PID and URL; fails unless the file is served.
start_nginx_cpr() {
  local port=$1 dir=$2
  chmod 755 "$dir"
  mkdir -p "$dir/www" "$dir/ngx"
  head -c 1294 /dev/zero | tr '\0' 'x' > "$dir/www/f.bin"
  cat > "$dir/ngx/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $dir/ngx/nginx.pid;
error_log $dir/ngx/error.log;
events { worker_connections 65536; }
http {
  access_log off;
  keepalive_timeout 0;
  server { listen 127.0.0.1:$port backlog=4096; root $dir/www; }
}
NGX
  taskset -c 0 nginx -c "$dir/ngx/nginx.conf" -p "$dir/ngx" &
  NGX_PID=$!
  sleep 1
  URL=http://127.0.0.1:$port/f.bin
  local got
  got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$URL" || true)
  [ "$got" = "200 1294" ] || { echo "nginx did not serve the 1294-byte file (got: $got); see $dir/ngx/error.log" >&2; return 1; }
}

# The closed connection-per-request scenario against it: 64 clients on CPU 1 for $2 seconds,
# probes at 1 s, written to the file $3.
cpr_scenario() {
  cat > "$3" <<TOML
duration = "${2}s"
[target]
kind = "address"
address = "127.0.0.1:$1"
[load]
mode = "closed"
clients = 64
cpus = [1]
workload = "custom"
[[load.mix]]
path = "/f.bin"
[probe]
interval = "1s"
TOML
}
