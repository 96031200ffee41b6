#!/usr/bin/env bash
# Builds Folio for Windows (MinGW-w64 cross build: the engine, folio.exe and
# folio-studio.exe), packs the NSIS installer and the portable ZIP, and tests
# the installer by installing it on a clean Windows: a fresh Wine prefix, the
# installer run silently, then `folio.exe --version`, `folio.exe run` on the
# default model and `folio-studio.exe` in a real window under Xvfb (model
# loaded, one reply; the studio's own screenshot and one of the X screen
# kept), then the uninstaller, which must leave no file, shortcut or registry
# key behind.
#
#   bash packaging/windows/test-install.sh [CACHE] [BUILD_DIR]
#
# CACHE: what build-deps.sh builds once (Qt for MinGW: ~40 min on 2 cores;
# default ~/.cache/folio-windows). BUILD_DIR: the cross build (default
# build-windows/). Results: BUILD_DIR/install-test/ (the packages, the
# screenshots, log.txt). Too slow for .ci/run on a cold cache; the README names
# it, and packaging/results/ keeps its runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
say() { echo "test-install: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
cache=${1:-${FOLIO_WIN_CACHE:-$HOME/.cache/folio-windows}}
build=${2:-$src/build-windows}
model=$src/models/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$model" ] || fail "the default model is missing ($model): run scripts/setup.sh"
start=$SECONDS

# 1. The dependencies, the cross build and the packages.
bash "$here/build-deps.sh" "$cache"
cache=$(cd "$cache" && pwd)
source "$src/scripts/lib/apt.sh"
apt_ensure test-install xvfb x11-utils imagemagick
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$here/mingw-w64-x86_64.cmake" \
  -DFOLIO_WIN_PREFIX="$cache/prefix" -DFOLIO_QCUSTOMPLOT_SOURCE="$cache/src/qcustomplot" \
  -DFOLIO_WITH_CUDA=OFF -DFOLIO_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
build=$(cd "$build" && pwd)
cmake --build "$build" -j "${FOLIO_JOBS:-$(nproc)}" --target folio folio-studio
built=$SECONDS
out=$build/install-test
rm -rf "$out" && mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
say "commit $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD || echo ' (with uncommitted changes)')"
(cd "$build" && cpack -G "NSIS;ZIP" -B "$out/cpack" >/dev/null) || fail "cpack"
installer=$(ls "$out"/cpack/folio-*-win64.exe) zip=$(ls "$out"/cpack/folio-*-win64.zip)
for p in "$installer" "$zip"; do say "$(basename "$p"): $(du -h "$p" | cut -f1)"; done
unzip -l "$zip" >"$out/zip-contents.txt"
say "ZIP unpacked: $(tail -1 "$out/zip-contents.txt" | awk '{printf "%.1f MB, %d files", $1 / 1e6, $2}')"
for f in bin/folio.exe bin/folio-studio.exe bin/Qt6Widgets.dll bin/platforms/qwindows.dll \
         bin/styles/qwindowsvistastyle.dll bin/libstdc++-6.dll share/doc/folio/LICENSE \
         share/doc/folio/third-party/Qt-LGPL-3.0-only.txt; do
  grep -q "/$f\$" "$out/zip-contents.txt" || fail "the ZIP lacks $f"
done
# What the executables import: Windows' own DLLs, and Qt and the MinGW runtime from bin/.
for exe in folio folio-studio; do
  x86_64-w64-mingw32-objdump -p "$build/app/$exe.exe" | sed -n 's/^\s*DLL Name: //p' | sort | tr '\n' ' ' >"$out/$exe-imports.txt"
  say "$exe.exe imports: $(cat "$out/$exe-imports.txt")"
done
grep -q "Qt6\|libstdc" "$out/folio-imports.txt" && fail "folio.exe is not self-contained"

# 2. A clean Windows: a new Wine prefix (no Mono or Gecko, no menu entries on
# this machine's desktop), and an X screen for the studio's window.
export WINEPREFIX=$out/wineprefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=;winemenubuilder.exe=d"
wineboot -i >/dev/null 2>&1 && wineserver -w
c=$WINEPREFIX/drive_c
exec 3>"$out/xvfb-display"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
exec 3>&-
trap 'kill $xvfb 2>/dev/null || true; wineserver -k 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$out/xvfb-display" ] && break; sleep 0.1; done
export DISPLAY=:$(cat "$out/xvfb-display")

# 3. The installer, silent (/S), as a user would run it with the defaults.
t=$SECONDS
wine "$installer" /S && wineserver -w || fail "the installer failed"
dir="$c/Program Files/Folio"
say "installed in $((SECONDS - t)) s: $(du -sh "$dir" | cut -f1) in 'C:\\Program Files\\Folio'"
for f in bin/folio.exe bin/folio-studio.exe bin/platforms/qwindows.dll Uninstall.exe; do
  [ -f "$dir/$f" ] || fail "the installer did not install $f"
done
shortcut=$(find "$c" -name 'Folio Studio.lnk' | head -1)
[ -n "$shortcut" ] || fail "no Start-menu shortcut 'Folio Studio'"
say "Start menu: ${shortcut#$c/}"
uninstall_key='HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\Folio' app_key='HKLM\Software\Folio\Folio'
wine reg query "$uninstall_key" >"$out/uninstall-key.txt" 2>&1 || fail "no uninstall entry in the registry"
wine reg query "$app_key" >/dev/null 2>&1 || fail "no $app_key (the install folder) in the registry"
grep -q "DisplayName.*Folio" "$out/uninstall-key.txt" || fail "the uninstall entry has no DisplayName"

# 4. The installed programs, run from where the installer put them.
cp "$model" "$c/model.gguf"
winmodel='C:\model.gguf'
wine "$dir/bin/folio.exe" --version | tr -d '\r' | tee "$out/version.txt" | grep -q "^folio " || fail "folio.exe --version"
wine "$dir/bin/folio.exe" run -m "$winmodel" --chat -p "Name three colours." -n 32 --temp 0 -t 2 \
  >"$out/run.txt" || fail "folio.exe run"
[ "$(wc -w <"$out/run.txt")" -ge 3 ] || fail "folio.exe run gave no answer"
say "folio.exe run answered: $(tr '\r\n' '  ' <"$out/run.txt" | cut -c1-120)"
# The studio in a real window: its own screenshot of the window (--smoke-test),
# and one of the X screen taken while the window is up.
FOLIO_STUDIO_DATA='C:\studio-data' wine "$dir/bin/folio-studio.exe" "$winmodel" --chat "Name three colours." \
  --smoke-test 'C:\studio.png' >"$out/studio.txt" 2>&1 &
studio=$!
for _ in $(seq 600); do
  if xwininfo -root -tree 2>/dev/null | grep -q '"Folio Studio'; then
    sleep 3 && import -window root "$out/screen.png" 2>/dev/null && break
  fi
  kill -0 $studio 2>/dev/null || break
  sleep 0.2
done
wait $studio || { cat "$out/studio.txt"; fail "folio-studio.exe smoke test"; }
[ -f "$out/screen.png" ] || fail "the studio's window never appeared on the X screen"
cp "$c/studio.png" "$out/studio.png" || fail "the studio saved no screenshot"
say "folio-studio.exe: $(tr -d '\r' <"$out/studio.txt" | grep 'smoke-test' | tail -1)"

# 5. The uninstaller: nothing left behind.
wine "$dir/Uninstall.exe" /S && wineserver -w || fail "the uninstaller failed"
for _ in $(seq 50); do [ -e "$dir/bin" ] || break; sleep 0.2; done  # it finishes from a copy of itself
[ ! -e "$dir/bin" ] || fail "the uninstaller left $(find "$dir" | wc -l) files behind"
[ -z "$(find "$c" -name 'Folio Studio.lnk')" ] || fail "the uninstaller left the Start-menu shortcut"
[ ! -e "$(dirname "$shortcut")" ] || fail "the uninstaller left the Start-menu folder"
for key in "$uninstall_key" "$app_key"; do
  ! wine reg query "$key" >/dev/null 2>&1 || fail "the uninstaller left $key in the registry"
done
say "uninstalled: no files, shortcut or registry entry left"

say "passed: $(basename "$installer") ($(du -h "$installer" | cut -f1)), $(basename "$zip") ($(du -h "$zip" | cut -f1));" \
    "build $((built - start)) s, test $((SECONDS - built)) s (results in $out)"
