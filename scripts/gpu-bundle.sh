#!/usr/bin/env bash
# Builds kevo here and packs what a GPU host without kevo's build dependencies needs into DIR:
# bin/kevo plus the shared libraries such a host may lack (Lua, cJSON, libyaml) in lib/.
# On the GPU host: DIR/bin/kevo-env <command> (sets LD_LIBRARY_PATH), or run tests with
# KEVO=DIR/bin/kevo-env.   usage: scripts/gpu-bundle.sh [DIR]   (default .gpu-stage)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-.gpu-stage}"
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-gpu -j "$(nproc)" >/dev/null
rm -rf "$dir/bin" "$dir/lib"
mkdir -p "$dir/bin" "$dir/lib"
cp build-gpu/kevo "$dir/bin/kevo"
for lib in liblua5.4.so.0 libcjson.so.1 libyaml-0.so.2; do
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
echo "gpu-bundle: $dir/bin/kevo-env"
