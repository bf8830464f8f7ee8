#!/usr/bin/env bash
# Runs the README's quick-start command 1, as written, twice on a fresh copy of the repository (start, stop,
# start again) and checks that the second start keeps the token the first one generated in ./.env, that
# .env is private, and that the server accepts that token. Exit 0 when all hold; prints why otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

# The line after "# 1." in the README's quick-start block, so that the check follows the README.
command1=$(awk '/^# 1\. /{getline; print; exit}' README.md)
[ -n "$command1" ] || { echo "quickstart: no command 1 in README.md"; exit 1; }

copy=$(mktemp -d /tmp/ev-ingest-quickstart-XXXXXX)
server=''
port=''
cleanup() {
  [ -n "$server" ] && kill -TERM -- "-$server" 2>/dev/null
  rm -rf "$copy"
}
trap cleanup EXIT

# A fresh copy: the tracked files as they are in the work tree, nothing installed, no .env, no database.
git ls-files -z | tar --null --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C "$copy"

# Starts command 1 in a process group of its own (PORT=0: a free port, the environment winning over .env) and
# waits up to 5 minutes (npm ci included) for the start-up line; sets server (the group) and port.
start() {
  (cd "$copy" && PORT=0 exec setsid sh -c "$command1") >"$copy/run.log" 2>&1 &
  server=$!
  for _ in $(seq 1 600); do
    port=$(grep -o ' info started .*address=http://[^ ]*' "$copy/run.log" | grep -Eo ':[0-9]+/' | tr -d ':/')
    [ -n "$port" ] && return 0
    sleep 0.5
  done
  echo "quickstart: command 1 did not start within 5 minutes:"
  tail -20 "$copy/run.log"
  return 1
}

# Stops the server and npm as Ctrl-C would (SIGTERM to the group), and waits up to 20 s for the group to end.
stop() {
  kill -TERM -- "-$server" 2>/dev/null
  for _ in $(seq 1 40); do
    pgrep -g "$server" >/dev/null || { server=''; return 0; }
    sleep 0.5
  done
  echo "quickstart: the server did not stop within 20 s"
  return 1
}

token() { grep '^INGEST_TOKEN=' "$copy/.env" | cut -d= -f2-; }

start || exit 1
first=$(token)
[ -n "$first" ] || { echo "quickstart: the first run wrote no INGEST_TOKEN to .env"; exit 1; }
stop || exit 1

start || exit 1
second=$(token)
[ "$first" = "$second" ] || { echo "quickstart: the token changed across a restart"; exit 1; }
[ "$(grep -c '^INGEST_TOKEN=' "$copy/.env")" = 1 ] \
  || { echo "quickstart: .env holds more than one INGEST_TOKEN"; exit 1; }
[ "$(stat -c %a "$copy/.env")" = 600 ] \
  || { echo "quickstart: .env is not private (mode $(stat -c %a "$copy/.env"))"; exit 1; }
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $second" \
  "http://127.0.0.1:$port/v1/consumption/history/5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01")
[ "$status" = 200 ] || { echo "quickstart: the kept token was answered $status, not 200"; exit 1; }
stop || exit 1
echo "quickstart: command 1 kept its token across a restart (${#second} characters, .env 0600, accepted)"
