#!/usr/bin/env bash
# Prints N free TCP ports on one line, each free together with its neighbours port - 2 and
# port + 1 (a RocketMQ Java broker also listens there: VIP channel and HA) and each more than 3
# from the others, for tests that start Java NameServers, brokers or ours side by side.
# Usage: free-ports.sh N
set -euo pipefail
python3 - "${1:?usage: free-ports.sh N}" <<'PY'
import random, socket, sys
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
out = []
while len(out) < int(sys.argv[1]):
    p = random.randrange(20000, 60000)
    if all(free(q) for q in (p - 2, p, p + 1)) and all(abs(p - q) > 3 for q in out):
        out.append(p)
print(*out)
PY
