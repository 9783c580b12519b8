# Sourced by .ci/run: a private PostgreSQL and a Chroma server for the tests, on free loopback ports, stopped by
# PID when the script exits. Never the system cluster (5432): initdb makes a throwaway one in a temp dir.
# Exports RAGCOURT_TEST_POSTGRES_URL and RAGCOURT_TEST_CHROMA_URL; CI=true makes a missing one a failure.

free_port() {
    python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Debian's server (about 4 s and 60 MiB once installed). Idempotent: skipped when present.
if ! ls /usr/lib/postgresql/*/bin/pg_ctl > /dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq > /dev/null && apt-get install -y -qq --no-install-recommends postgresql > /dev/null
fi
pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
services_dir="$(mktemp -d)"
pg_pid="" chroma_pid=""
stop_services() {
    # fast shutdown of our own postmaster and chroma, by the PIDs recorded at their start
    if [ -n "$pg_pid" ]; then kill -INT "$pg_pid" 2> /dev/null || true; fi
    if [ -n "$chroma_pid" ]; then kill "$chroma_pid" 2> /dev/null || true; fi
    for pid in $pg_pid $chroma_pid; do
        for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    done
    rm -rf "$services_dir"
}
trap stop_services EXIT

as_postgres=()
if [ "$(id -u)" = 0 ]; then  # initdb refuses root
    chown postgres: "$services_dir"
    as_postgres=(runuser -u postgres --)
fi
pg_port="$(free_port)"
"${as_postgres[@]}" "$pg_bin/initdb" -D "$services_dir/pg" --username=postgres --auth=trust --no-sync \
    --encoding=UTF8 --locale=C.UTF-8 > /dev/null
"${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$services_dir/pg" -l "$services_dir/pg.log" -w -t 30 \
    -o "-p $pg_port -k $services_dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start > /dev/null
pg_pid="$(head -n 1 "$services_dir/pg/postmaster.pid")"
export RAGCOURT_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$pg_port/postgres"

chroma_port="$(free_port)"
chroma run --host 127.0.0.1 --port "$chroma_port" --path "$services_dir/chroma" > "$services_dir/chroma.log" 2>&1 &
chroma_pid=$!
python - "$chroma_port" <<'EOF'
import sys, time, urllib.request
for _ in range(300):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v2/heartbeat", timeout=1).close()
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("chroma server did not start")
EOF
export RAGCOURT_TEST_CHROMA_URL="http://127.0.0.1:$chroma_port"
export CI="${CI:-true}"
