#!/usr/bin/env bash
# Forensics speed: loads 1,000,000 events over 10,000 runs into a
# workflow_events table shaped like world-postgres's (a schema of its own,
# dropped at the end), then times, alternating over rounds, (a) the bare
# SELECT id, pg_xact_commit_timestamp(xmin) of every row, (b) the attach-mode
# forensics of the same rows and (c) `stormctl forensics --pg-url` as shipped,
# and prints the ratios to (a) and the peak Go heap and resident set.
#
# Without --pg-url it starts a throw-away embedded PostgreSQL and removes it
# at the end. Every flag is passed to `stormctl bench forensics`, e.g.:
#
#   bench/forensics.sh --format markdown                       # ~3 minutes
#   bench/forensics.sh --events 20000 --runs 200 --rounds 1    # a smoke run
exec "$(dirname "$0")/run.sh" forensics "$@"
