#!/usr/bin/env bash
# Builds kevo here and packs what a GPU host without kevo's build dependencies needs into DIR:
# bin/kevo plus the shared libraries such a host may lack (Lua, cJSON, libyaml, hiredis) in lib/,
# and redis-server and redis-cli with their own libraries (redis/lib) for the Redis tests and
# benchmark.
# On the GPU host: DIR/bin/kevo-env <command> (sets LD_LIBRARY_PATH), or run tests with
# KEVO=DIR/bin/kevo-env; DIR/bin/redis-server starts the bundled server.
# usage: scripts/gpu-bundle.sh [DIR]   (default .gpu-stage)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-.gpu-stage}"
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-gpu -j "$(nproc)" >/dev/null
rm -rf "$dir/bin" "$dir/lib" "$dir/redis"
mkdir -p "$dir/bin" "$dir/lib" "$dir/redis/lib"
cp build-gpu/kevo "$dir/bin/kevo"
for lib in liblua5.4.so.0 libcjson.so.1 libyaml-0.so.2 libhiredis.so.0.14; do
  path=$(ldd build-gpu/kevo | awk -v l="$lib" '$1 == l {print $3}')
  [ -n "$path" ] && cp -L "$path" "$dir/lib/"
done
cat > "$dir/bin/kevo-env" <<'SH'
#!/usr/bin/env bash
here="$(cd "$(dirname "$0")/.." && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/kevo" "$@"
SH
chmod +x "$dir/bin/kevo-env"
# redis-server (Debian's) and every library it loads but the C library's own, apart from kevo's
if command -v redis-server >/dev/null; then
  cp -L "$(command -v redis-server)" "$dir/redis/redis-server"
  ldd "$(command -v redis-server)" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    case $name in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
      *) cp -L "$path" "$dir/redis/lib/" ;;
    esac
  done
  command -v redis-cli >/dev/null && cp -L "$(command -v redis-cli)" "$dir/redis/redis-cli"
  for tool in redis-server redis-cli; do
    [ -e "$dir/redis/$tool" ] || continue
    printf '#!/usr/bin/env bash\nhere="$(cd "$(dirname "$0")/.." && pwd)"\n%s\n' \
      "LD_LIBRARY_PATH=\"\$here/redis/lib\" exec \"\$here/redis/$tool\" \"\$@\"" >"$dir/bin/$tool"
    chmod +x "$dir/bin/$tool"
  done
else
  echo "gpu-bundle: no redis-server here (scripts/setup.sh installs it): the bundle has none" >&2
fi
echo "gpu-bundle: $dir/bin/kevo-env"
