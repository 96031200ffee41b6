#!/usr/bin/env bash
# Builds Folio's Linux packages and tests them by installing them on a clean
# system: a Debian 12 root made by debootstrap (from Debian's archive, into a
# folder of the build), the .deb installed there with apt (so its declared
# dependencies are what gets pulled in), then `folio --version`, `folio run`
# on the default model and `folio-studio` under the offscreen platform (model
# loaded, one reply, a screenshot kept). The .rpm's metadata is checked and it
# is installed into the same root with `rpm --root --nodeps` (no RPM
# distribution's archive is reachable here), run, and erased. The tarball's
# contents are checked.
#
#   bash packaging/linux/test-install.sh [BUILD_DIR]
#
# BUILD_DIR: a build of folio and folio-studio without CUDA (run.sh's build/
# on a machine without a driver); without one, or when it has CUDA, a CPU
# build is made in build-package/. Results: BUILD_DIR/package-test/ (the
# packages, the screenshot, log.txt). Needs root (debootstrap, chroot).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
say() { echo "test-install: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap and chroot)"
for tool in debootstrap rpm rpmbuild dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/setup.sh installs it)"
done
model=$src/models/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$model" ] || fail "the default model is missing ($model): run scripts/setup.sh"

build=${1:-}
if [ -z "$build" ] || ! grep -q '^FOLIO_WITH_CUDA:STRING=OFF' "$build/CMakeCache.txt" 2>/dev/null ||
   ! grep -q '^FOLIO_WITH_QT:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  build=$src/build-package
  say "a CPU build for the packages in $build"
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFOLIO_WITH_CUDA=OFF \
    -DFOLIO_BUILD_TESTS=OFF >/dev/null
fi
build=$(cd "$build" && pwd)
cmake --build "$build" -j "$(nproc)" --target folio folio-studio
out=$build/package-test
rm -rf "$out" && mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1

# 1. The packages.
(cd "$build" && cpack -G "DEB;RPM;TGZ" -B "$out/cpack" >/dev/null) || fail "cpack"
deb=$(ls "$out"/cpack/folio_*_amd64.deb) rpm=$(ls "$out"/cpack/folio-*.rpm) tgz=$(ls "$out"/cpack/folio-*.tar.gz)
for p in "$deb" "$rpm" "$tgz"; do say "$(basename "$p"): $(du -h "$p" | cut -f1)"; done
say ".deb depends: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -f "$deb" Depends | grep -q 'qt6-qpa-plugins' || fail "the .deb does not depend on qt6-qpa-plugins"
dpkg-deb -f "$deb" Depends | grep -q 'libqt6widgets6' || fail "the .deb does not depend on Qt's widgets library"
dpkg-deb -f "$deb" Depends | grep -q 'libqt6svg6' || fail "the .deb does not depend on Qt's SVG plugins (the icons)"
dpkg-deb -c "$deb" >"$out/deb-contents.txt"
for f in ./usr/bin/folio ./usr/bin/folio-studio ./usr/share/applications/org.folio.Studio.desktop \
         ./usr/share/metainfo/org.folio.Studio.metainfo.xml ./usr/share/icons/hicolor/scalable/apps/org.folio.Studio.svg \
         ./usr/share/doc/folio/copyright ./usr/share/doc/folio/README.md; do
  grep -q " $f\$" "$out/deb-contents.txt" || fail "the .deb lacks $f"
done
rpm -qpR "$rpm" >"$out/rpm-requires.txt"
grep -q 'libQt6Widgets' "$out/rpm-requires.txt" || fail "the .rpm does not require Qt's widgets library"
rpm -qpl "$rpm" >"$out/rpm-contents.txt"
grep -q '^/usr/bin/folio-studio$' "$out/rpm-contents.txt" || fail "the .rpm lacks /usr/bin/folio-studio"
tar tzf "$tgz" >"$out/tgz-contents.txt"
grep -q '/bin/folio$' "$out/tgz-contents.txt" || fail "the tarball lacks bin/folio"

# 2. A clean Debian 12 root: debootstrap once into the build, a fresh copy per run.
pristine=$build/debian12-minbase.tar
if [ ! -f "$pristine" ]; then
  say "debootstrap: Debian 12 minbase (once; kept as $pristine)"
  rm -rf "$build/debian12-bootstrap"
  debootstrap --variant=minbase bookworm "$build/debian12-bootstrap" http://deb.debian.org/debian >/dev/null
  tar -C "$build/debian12-bootstrap" -cf "$pristine" . && rm -rf "$build/debian12-bootstrap"
fi
root=$out/root
mkdir -p "$root" && tar -C "$root" -xf "$pristine"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@"
}

# 3. The .deb, installed with apt: its dependencies are what comes with it.
cp "$deb" "$root/tmp/"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" \
  >"$out/apt-install.txt" || fail "apt could not install the .deb (see apt-install.txt)"
cp "$model" "$root/tmp/model.gguf"
check_installed() {  # what: run the installed programs in the root
  local what=$1
  in_root folio --version | grep -q "folio" || fail "$what: folio --version"
  in_root folio run -m /tmp/model.gguf --chat -p "Name three colours." -n 32 --temp 0 >"$out/$what-run.txt" ||
    fail "$what: folio run"
  [ "$(wc -w <"$out/$what-run.txt")" -ge 3 ] || fail "$what: folio run gave no answer"
  say "$what: folio run answered: $(tr '\n' ' ' <"$out/$what-run.txt" | cut -c1-120)"
  in_root env QT_QPA_PLATFORM=offscreen FOLIO_STUDIO_DATA=/tmp/studio-$what folio-studio --version |
    grep -q "Folio Studio" || fail "$what: folio-studio --version"
  in_root env QT_QPA_PLATFORM=offscreen FOLIO_STUDIO_DATA=/tmp/studio-$what \
    folio-studio /tmp/model.gguf --chat "Name three colours." --smoke-test "/tmp/$what-studio.png" \
    >"$out/$what-studio.txt" 2>&1 || { cat "$out/$what-studio.txt"; fail "$what: folio-studio smoke test"; }
  cp "$root/tmp/$what-studio.png" "$out/" || fail "$what: no screenshot"
  say "$what: folio-studio showed its window, loaded the model and replied ($what-studio.png)"
}
check_installed deb
in_root dpkg -r folio >/dev/null || fail "dpkg -r folio"
[ ! -e "$root/usr/bin/folio" ] || fail "dpkg -r left /usr/bin/folio behind"

# 4. The .rpm, into the same root (its Qt libraries are still there from the .deb's dependencies).
rpm --root "$root" --nodeps -i "$rpm" || fail "rpm -i"
check_installed rpm
rpm --root "$root" -e folio || fail "rpm -e folio"
[ ! -e "$root/usr/bin/folio" ] || fail "rpm -e left /usr/bin/folio behind"

umount "$root/proc"; trap - EXIT
rm -rf "$root"
say "passed: $(basename "$deb"), $(basename "$rpm"), $(basename "$tgz") (results in $out)"
