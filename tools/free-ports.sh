#!/usr/bin/env bash
# Prints N free TCP ports on one line, each free together with its neighbours port - 2 and
# port + 1 (a RocketMQ Java broker also listens there: VIP channel and HA) and each more than 3
# from the others, for tests that start Java NameServers, brokers or ours side by side.
# With SHARDS (default 1), each port p is a uringmq listenPort for that many shards: every
# p + i * 10 (shard i's broker, shardPortStride 10) is free with its neighbours too, and the
# ports keep clear of each other's ranges. Ports are drawn below the kernel's ephemeral range
# (32768 up by default), where no test's client socket takes its local port: a broker binds its
# HA port only after its store opens, and a port free at the check could be taken by then.
# Usage: free-ports.sh N [SHARDS]
set -euo pipefail
python3 - "${1:?usage: free-ports.sh N [SHARDS]}" "${2:-1}" <<'PY'
import random, socket, sys
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
shards = int(sys.argv[2])
span = 10 * (shards - 1)
out = []
while len(out) < int(sys.argv[1]):
    p = random.randrange(10000, 32000 - span - 2)
    mains = [p + 10 * i for i in range(shards)]
    if all(free(q) for m in mains for q in (m - 2, m, m + 1)) and \
            all(p > q + span + 3 or q > p + span + 3 for q in out):
        out.append(p)
print(*out)
PY
