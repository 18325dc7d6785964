#!/bin/sh
# Installs Debian's PMDK libpmemlog (and libpmem) for the libpmemlog rows of
# `nvpage-bench log` and for the log's test against libpmemlog, which are built only with the
# `pmdk` Cargo feature:
#   bench/scripts/install-pmdk.sh
#   cargo run --release -p nvpage-bench --features pmdk -- log
#   cargo test -p nvpage-wal --features pmdk --test raw_logs_match_libpmemlog
set -eu
if [ "$(id -u)" -ne 0 ]; then
    echo "run as root (or with sudo): it calls apt-get" >&2
    exit 1
fi
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y libpmemlog-dev
dpkg -L libpmemlog-dev | grep -E 'libpmemlog\.so$'
