#!/usr/bin/env bash
# Tests the static binary the Docker image holds, run as the image runs it: for a machine that
# cannot build or run the image itself (no container runtime, or no registry to pull the
# build stage's `rust` image from). Run it from anywhere as `bash scripts/test-static-build.sh`.
#
# It takes the build command, the default command and the health check from the Dockerfile,
# so the test follows the image when they change, then:
#   1. builds the binary with the build stage's command (needs `rustup target add
#      x86_64-unknown-linux-musl` and musl-gcc: `apt-get install musl-tools`);
#   2. checks that it is statically linked (`file`, `ldd`) and prints its size;
#   3. starts it with the image's CMD (another port, a temporary data directory, which is also
#      the working directory, as /data is in the image), waits for the HEALTHCHECK command
#      to pass, creates a table, puts and gets an item (curl with DynamoDB's JSON protocol,
#      and the AWS CLI too when installed), stops it with SIGTERM as `docker stop` does, and
#      finds the item again after a restart on the same directory;
#   4. checks that the health command fails when nothing answers;
#   5. starts DynamoDB Local's command line, `shoal -sharedDb -inMemory -port N`, and
#      `shoal -sharedDb -dbPath . -port N` (the data lands in the working directory), and
#      does the same round trip on each.
# Needs bash, curl, file and ldd. Prints each step; exits non-zero at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
binary="$target_dir/$target/release/shoal"
work="$(mktemp -d)"
server_pid=""

cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  if [ -f "$work/server.log" ]; then
    echo "--- server log" >&2
    tail -n 20 "$work/server.log" >&2
  fi
  exit 1
}
step() { echo "== $*"; }

for tool in curl file ldd; do
  command -v "$tool" >/dev/null || fail "$tool is not installed"
done

# The words of a Dockerfile exec-form array: ["a", "b"] -> a b (one per line).
exec_form_words() {
  sed -e 's/^[^[]*\[//' -e 's/\][[:space:]]*$//' <<<"$1" | tr ',' '\n' |
    sed -e 's/^[[:space:]]*"//' -e 's/"[[:space:]]*$//'
}

build_line="$(sed -n 's/^RUN \(cargo build .*\) \\$/\1/p' Dockerfile)"
cmd_line="$(grep '^CMD \[' Dockerfile || true)"
health_line="$(grep -A1 '^HEALTHCHECK' Dockerfile | sed -n 's/^[[:space:]]*CMD \(\[.*\]\)$/\1/p')"
[ -n "$build_line" ] || fail "no 'RUN cargo build ... \\' line in the Dockerfile"
[ -n "$cmd_line" ] || fail "no exec-form CMD in the Dockerfile"
[ -n "$health_line" ] || fail "no exec-form HEALTHCHECK CMD in the Dockerfile"
# The default command and DynamoDB Local's arguments below are arguments of /shoal.
grep -q '^ENTRYPOINT \["/shoal"\]$' Dockerfile || fail 'the entrypoint is not ["/shoal"]'
mapfile -t image_cmd < <(exec_form_words "$cmd_line")
mapfile -t health_cmd < <(exec_form_words "$health_line")

step "build: $build_line"
read -r -a build_words <<<"$build_line"
started=$(date +%s)
"${build_words[@]}"
echo "built in $(($(date +%s) - started)) s: $binary"

step "static linking and size"
file_says="$(file -b "$binary")"
echo "file: $file_says"
case "$file_says" in
  *"statically linked"* | *"static-pie linked"*) ;;
  *) fail "file does not call the binary static" ;;
esac
ldd_says="$(ldd "$binary" 2>&1 || true)"
echo "ldd: $(echo "$ldd_says" | tr -s '[:space:]' ' ' | sed -e 's/^ //' -e 's/ $//')"
case "$ldd_says" in
  *"statically linked"* | *"not a dynamic executable"*) ;;
  *) fail "ldd lists libraries the binary needs" ;;
esac
size=$(stat -c %s "$binary")
echo "size: $size bytes ($(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1048576 }') MiB)"

# A port nothing listens on (checked, not reserved: another process could take it first).
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  fail "no free port found"
}

# The health check's command with the image's port replaced by $1.
health() {
  local words=("${health_cmd[@]}")
  [ "${words[0]}" = /shoal ] || fail "the health check does not run /shoal: ${words[*]}"
  words[0]="$binary"
  words=("${words[@]//:8000/:$1}")
  "${words[@]}"
}

# Starts the binary with arguments "$@" in directory $dir (the container's /data) and waits
# until the health check passes on $port.
start() {
  (cd "$dir" && exec "$binary" "$@") >"$work/server.log" 2>&1 &
  server_pid=$!
  local started_ns
  started_ns=$(date +%s%N)
  for _ in $(seq 1 500); do
    if health "$port" >/dev/null 2>&1; then
      echo "healthy after $((($(date +%s%N) - started_ns) / 1000000)) ms: shoal $*"
      return
    fi
    kill -0 "$server_pid" 2>/dev/null || fail "the server exited: shoal $*"
    sleep 0.02
  done
  fail "no healthy answer within 10 s: shoal $*"
}

# SIGTERM, as `docker stop` sends; the server must exit 0 well within Docker's 10 s grace.
stop() {
  kill -TERM "$server_pid"
  local waited=0
  while kill -0 "$server_pid" 2>/dev/null; do
    [ $waited -lt 100 ] || fail "still running 10 s after SIGTERM"
    sleep 0.1
    waited=$((waited + 1))
  done
  local status=0
  wait "$server_pid" || status=$?
  server_pid=""
  [ $status -eq 0 ] || fail "exit status $status after SIGTERM"
  echo "stopped cleanly by SIGTERM"
}

# One DynamoDB JSON-protocol call; prints the response body, fails on a non-200 status.
api() {
  local operation=$1 body=$2 response status
  response="$(curl -sS -w '\n%{http_code}' -X POST "http://127.0.0.1:$port/" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H "X-Amz-Target: DynamoDB_20120810.$operation" \
    -H "X-Amz-Date: $(date -u +%Y%m%dT%H%M%SZ)" \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20261124/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    --data "$body")" || fail "$operation: no answer"
  status="${response##*$'\n'}"
  response="${response%$'\n'*}"
  [ "$status" = 200 ] || fail "$operation answered $status: $response"
  echo "$response"
}

item='{"Artist":{"S":"Ada"},"Song":{"S":"One"},"Plays":{"N":"3"}}'
key='{"Artist":{"S":"Ada"},"Song":{"S":"One"}}'

create_and_put() {
  api CreateTable '{"TableName":"Music",
    "AttributeDefinitions":[{"AttributeName":"Artist","AttributeType":"S"},{"AttributeName":"Song","AttributeType":"S"}],
    "KeySchema":[{"AttributeName":"Artist","KeyType":"HASH"},{"AttributeName":"Song","KeyType":"RANGE"}],
    "BillingMode":"PAY_PER_REQUEST"}' >/dev/null
  api PutItem "{\"TableName\":\"Music\",\"Item\":$item}" >/dev/null
  echo "created table Music, put an item"
}

expect_item() {
  local got
  got="$(api GetItem "{\"TableName\":\"Music\",\"Key\":$key,\"ConsistentRead\":true}")"
  case "$got" in
    *'"Plays":{"N":"3"}'*) echo "got the item back (curl)" ;;
    *) fail "GetItem returned $got" ;;
  esac
  if command -v aws >/dev/null; then
    got="$(AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_DEFAULT_REGION=us-east-1 \
      aws dynamodb get-item --endpoint-url "http://127.0.0.1:$port" --table-name Music \
      --key "$key" --output json)" || fail "aws dynamodb get-item failed"
    case "$got" in
      *'"Plays"'*'"3"'*) echo "got the item back (AWS CLI)" ;;
      *) fail "aws dynamodb get-item returned $got" ;;
    esac
  fi
}

# The image's CMD on another port and directory.
image_args() {
  local words=("${image_cmd[@]}") i
  for i in "${!words[@]}"; do
    case "${words[$i]}" in
      --port) words[i + 1]=$port ;;
      --data-dir) words[i + 1]=$dir ;;
    esac
  done
  printf '%s\n' "${words[@]}"
}

step "the image's command: ${image_cmd[*]}"
port=$(free_port)
dir="$work/data"
mkdir "$dir"
mapfile -t args < <(image_args)
start "${args[@]}"
# Listening on every interface, as a container needs: also reachable on a non-loopback address.
address="$(hostname -I 2>/dev/null | awk '{print $1}' || true)"
if [ -n "$address" ]; then
  "$binary" health --endpoint "http://$address:$port" --timeout-seconds 3 >/dev/null ||
    fail "not reachable on $address:$port"
  echo "reachable on $address:$port too"
fi
create_and_put
expect_item
stop
[ -f "$dir/CURRENT" ] || fail "no database in the data directory"

step "the same data directory after a restart"
start "${args[@]}"
expect_item
stop

step "the health check fails when nothing answers"
if health "$port" >/dev/null 2>&1; then fail "health passed with no server"; fi
echo "health exits non-zero with no server"

step "DynamoDB Local's command line, in memory"
port=$(free_port)
dir="$work/in-memory"
mkdir "$dir"
start -sharedDb -inMemory -port "$port"
create_and_put
expect_item
stop
[ -z "$(ls -A "$dir")" ] || fail "-inMemory wrote files: $(ls -A "$dir")"

step "DynamoDB Local's command line, -dbPath ."
port=$(free_port)
dir="$work/db-path"
mkdir "$dir"
start -sharedDb -dbPath . -port "$port"
create_and_put
expect_item
stop
[ -f "$dir/CURRENT" ] || fail "-dbPath . left no database in the working directory"

echo "PASS: the static binary serves as the image runs it"
