#!/usr/bin/env bash
# clear_on_pass.sh WORK COMMAND [ARG...]: runs a test's COMMAND and exits with its status; when
# the test passes (0) or skips (77) it first removes WORK, the folder where the test kept its
# stores and logs. A broker's store holds preallocated CommitLog segments (two of 64 MiB a shard
# in most tests; run_sh_test's store took 4.1 GiB): kept, the stores filled the disk of a CI
# machine before the run ended. A failing test's folder stays for its logs.
work=${1:?usage: clear_on_pass.sh WORK COMMAND [ARG...]}
shift
"$@"
status=$?
if [ "$status" = 0 ] || [ "$status" = 77 ]; then
  rm -rf -- "$work" || echo "clear_on_pass.sh: could not remove $work" >&2
fi
exit "$status"
