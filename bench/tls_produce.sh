#!/usr/bin/env bash
# Produce over TLS against plaintext, over loopback, SYNC_FLUSH (FLUSH=ASYNC_FLUSH: the network
# path's CPU without the disk's latency): uringmq-net-bench against a
# fresh uringmq-broker for each measurement, the broker in tls.server.mode=permissive with a
# test certificate (EC P-256) in every run, so the only difference is the client: plain, or
# --tls 1. The two interleaved, RUNS of each; prints every run's JSON, the medians (messages/s),
# the ratio and the negotiated cipher suite.
# ACL=1: mode "tls" is TLS + ACL: its broker also runs with aclEnable=true and a plain_acl.yml of
# one account with PUB on the bench topic (DENY elsewhere), and the client signs every request
# (--acl-access-key/--acl-secret-key); mode "plain" stays plaintext without ACL (the baseline).
# Usage: bench/tls_produce.sh [build dir]   (needs uringmq-broker and uringmq-net-bench built)
# CONNS (16), PIPELINE (32), BYTES (128), RUNS (3), SECONDS_ (10), WARMUP (2), DATA (./bench-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
CONNS=${CONNS:-16} PIPELINE=${PIPELINE:-32} BYTES=${BYTES:-128} RUNS=${RUNS:-3}
SECONDS_=${SECONDS_:-10} WARMUP=${WARMUP:-2} ACL=${ACL:-0}
base=$(mkdir -p "${DATA:-$root/bench-data}" && cd "${DATA:-$root/bench-data}" && pwd)
data=$base/tls
certs=$base/tls-certs
source "$root/bench/broker_load.sh"
trap 'server_stop; rm -rf "$data" "$certs"' EXIT
mkdir -p "$certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -keyout "$certs/server.key" -out "$certs/server.pem" -subj /CN=127.0.0.1 2>/dev/null
EXTRA_CONF="tls.server.mode=permissive
tls.server.certPath=$certs/server.pem
tls.server.keyPath=$certs/server.key"
PLAIN_CONF=$EXTRA_CONF TLS_CONF=$EXTRA_CONF
if [ "$ACL" = 1 ]; then
  cp "$root/bench/plain_acl.yml" "$certs/plain_acl.yml"
  TLS_CONF+="
aclEnable=true
aclFilePath=$certs/plain_acl.yml"
fi
one() {  # one MODE: a fresh broker, one load of MODE, its JSON on stdout
  local extra=(--pipeline "$PIPELINE")
  EXTRA_CONF=$PLAIN_CONF
  if [ "$1" = tls ]; then
    extra+=(--tls 1)
    [ "$ACL" = 1 ] && extra+=(--acl-access-key benchProducer \
      --acl-secret-key benchProducerSecret)
    EXTRA_CONF=$TLS_CONF
  fi
  one_load 1073741824 "${extra[@]}"
}
out=$(mktemp)
run_modes "$out" plain tls
summarize_runs "$out" "$ACL" <<'PY'
for m, v in rows.items():
    label = "tls+acl" if m == "tls" and sys.argv[2] == "1" else m
    summary(label, v, lambda r: f", client {r['client_cpu_us_per_msg']:.2f} us/msg")
errors = {m: sum(r["errors"] for r in v) for m, v in rows.items()}
print(f"errors: {errors}")
label = "tls+acl" if sys.argv[2] == "1" else "tls"
print(f"{label} / plain: {med(rows['tls']) / med(rows['plain']):.2f}; "
      f"cipher {rows['tls'][0]['tls_cipher']}")
PY
rm -f "$out"
