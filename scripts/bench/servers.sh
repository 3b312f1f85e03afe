# Shared by the load scripts (sourced): logging, free ports, a work directory removed at exit
# with every process started in PIDS, and throwaway MariaDB servers with the options the test
# harness uses (src/testbed/mariadb.rs). The caller sets DB_USER, DB_PASSWORD, DB_NAME and
# SHARDED_DB (the databases each server gets) before starting servers.

log() { printf '==> %s\n' "$*" >&2; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

WORK="$(mktemp -d "${TMPDIR:-/tmp}/idgate-bench.XXXXXX")"
PIDS=()
# The MariaDB servers started here, whose CPU the load scripts account per statement.
SERVER_PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ROOT_OPT=()
[ "$(id -u)" -eq 0 ] && ROOT_OPT=(--user=root)
start_mariadb() { # start_mariadb NAME PORT [OPTION…]: a server in $WORK/NAME with both bench databases
    local dir="$WORK/$1" port=$2
    log "starting MariaDB $1 on 127.0.0.1:$port"
    mkdir -p "$dir"
    mariadb-install-db --no-defaults --datadir="$dir/data" --auth-root-authentication-method=normal \
        --skip-test-db "${ROOT_OPT[@]}" >"$dir/install.log" 2>&1 || {
        cat "$dir/install.log" >&2
        exit 1
    }
    cat >"$dir/init.sql" <<SQL
CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL ON *.* TO '$DB_USER'@'%' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE DATABASE IF NOT EXISTS $SHARDED_DB;
SQL
    mariadbd --no-defaults --datadir="$dir/data" --socket="$dir/sock" --pid-file="$dir/pid" \
        --init-file="$dir/init.sql" --log-error="$dir/error.log" --port="$port" --tmpdir="$dir" \
        --bind-address=127.0.0.1 --skip-name-resolve --skip-log-bin --innodb-buffer-pool-size=64M \
        --innodb-log-file-size=16M --innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0 \
        --max-allowed-packet=64M --max-connections=500 --character-set-server=utf8mb4 \
        --collation-server=utf8mb4_general_ci "${ROOT_OPT[@]}" "${@:3}" </dev/null >/dev/null 2>&1 &
    PIDS+=("$!")
    SERVER_PIDS+=("$!")
    for _ in $(seq 1 600); do
        mysql --no-defaults -h127.0.0.1 -P"$port" -u"$DB_USER" -p"$DB_PASSWORD" -e 'SELECT 1' \
            >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$dir/error.log" >&2
    exit 1
}
