#!/bin/sh
# Installs Debian's PostgreSQL server binaries for `nvpage-bench tpch --with-postgres`.
# The benchmark never uses the cluster the package may create: it runs its own throwaway server,
# as an unprivileged user, on a Unix socket in a temporary directory, and stops it afterwards.
set -eu
if [ "$(id -u)" -ne 0 ]; then
    echo "run as root (or with sudo): it calls apt-get" >&2
    exit 1
fi
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql
ls -d /usr/lib/postgresql/*/bin
