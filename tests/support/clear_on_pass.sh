#!/usr/bin/env bash
# clear_on_pass.sh WORK COMMAND [ARG...]: runs a test's COMMAND and exits with its status; when
# the test passes (0) or skips (77) it first removes WORK, the folder where the test kept its
# stores and logs. A broker's store holds preallocated CommitLog segments (128 MiB a shard in
# the tests), and a run of tools/test.sh starts about 60 brokers in two builds: kept, they
# filled the disk of a CI machine before the run ended. A failing test's folder stays for its
# logs.
work=${1:?usage: clear_on_pass.sh WORK COMMAND [ARG...]}
shift
"$@"
status=$?
if [ "$status" = 0 ] || [ "$status" = 77 ]; then
  rm -rf -- "$work" || echo "clear_on_pass.sh: could not remove $work" >&2
fi
exit "$status"
