#!/usr/bin/env bash
# Append throughput against the physical limit: pgbench running the exact SQL
# the postgres world issues (legacy insert; seq counter+insert; fenced batch
# of 3) against stormctl's own append path (World.Append / AppendFenced from
# as many goroutines as pgbench has clients), HOT (one run) and SPREAD (a
# random run among --runs), 1, 4 and 16 clients, rounds alternating between
# the two sides. Prints per row the medians and the ratio stormctl/pgbench.
#
# Without --pg-url it starts a throw-away embedded PostgreSQL (initdb/pg_ctl
# and pgbench from the same installation) and removes it at the end. Every
# flag is passed to `stormctl bench append` (see its --help), for example:
#
#   bench/append.sh --format markdown                          # full matrix, ~8 min on 2 cores
#   bench/append.sh --clients 16 --rounds 2 --duration 2s      # a quicker look
exec "$(dirname "$0")/run.sh" append "$@"
