#!/usr/bin/env bash
# Builds what Folio's Windows build needs and Debian has no MinGW package of,
# once, into a cache folder (reused when present):
#   prefix/      Qt 6.4.2 (qtbase: Core, Gui, Widgets, PrintSupport, Network),
#                PCRE2 10.42 static, nlohmann-json and cpp-httplib headers
#   src/         Debian's source packages (qt6-base, pcre2, cpp-httplib, qcustomplot)
# All sources are Debian 12's own (`apt-get source`, needs a deb-src entry:
# this script adds one for deb.debian.org when none is there). Qt's host tools
# (moc, rcc, uic) are Debian's, the same 6.4.2 (QT_HOST_PATH=/usr).
#
#   bash packaging/windows/build-deps.sh [CACHE]      (default: ~/.cache/folio-windows)
#
# Qt's build takes ~40 minutes on 2 cores; a second run only checks.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${FOLIO_WIN_CACHE:-$HOME/.cache/folio-windows}}
mkdir -p "$cache/src" && cache=$(cd "$cache" && pwd)
prefix=$cache/prefix
jobs=${FOLIO_JOBS:-$(nproc)}
say() { echo "build-deps: $*" >&2; }
toolchain=(-DCMAKE_TOOLCHAIN_FILE="$here/mingw-w64-x86_64.cmake" -DFOLIO_WIN_PREFIX="$prefix")

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
source "$here/../../scripts/lib/apt.sh"
debs=(g++-mingw-w64-x86-64-posix gcc-mingw-w64-x86-64-posix nsis wine wine64 dpkg-dev
      cmake ninja-build qt6-base-dev-tools qt6-base-dev nlohmann-json3-dev libcpp-httplib-dev librsvg2-bin icoutils)
apt_ensure build-deps "${debs[@]}"

fetch_source() {  # package=version folder
  local pkg=$1 dir=$2
  [ -d "$cache/src/$dir" ] && return
  if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "adding a deb-src entry for Debian 12 (/etc/apt/sources.list.d/folio-deb-src.sources)"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
      "${sudo_cmd[@]}" tee /etc/apt/sources.list.d/folio-deb-src.sources >/dev/null
    "${sudo_cmd[@]}" apt-get update -qq
  fi
  (cd "$cache/src" && apt-get source -qq --download-only "$pkg" >/dev/null 2>&1 && dpkg-source -x "${pkg/=/_}.dsc" "$dir" >/dev/null) ||
    { say "could not fetch the Debian source of $pkg"; exit 1; }
}

# nlohmann-json: Debian's own headers, copied so the cross build never reads
# /usr/include.
if [ ! -f "$prefix/include/nlohmann/json.hpp" ]; then
  mkdir -p "$prefix/include" "$prefix/share/cmake"
  cp -r /usr/include/nlohmann "$prefix/include/"
  cp -r /usr/share/cmake/nlohmann_json "$prefix/share/cmake/"
fi

# cpp-httplib, header-only from its Debian source (Debian's -dev package holds
# only the declarations of its compiled library). Without OpenSSL, zlib or
# brotli; Winsock is the one library it needs.
if [ ! -f "$prefix/lib/pkgconfig/cpp-httplib.pc" ]; then
  fetch_source cpp-httplib=0.11.4+ds-1+deb12u1 cpp-httplib
  mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
  cp "$cache/src/cpp-httplib/httplib.h" "$prefix/include/"
  printf 'prefix=%s\nincludedir=${prefix}/include\n\nName: cpp-httplib\nDescription: header-only cpp-httplib for MinGW\nVersion: 0.11.4\nLibs: -lws2_32\nCflags: -I${includedir} -D_WIN32_WINNT=0x0A00\n' \
    "$prefix" >"$prefix/lib/pkgconfig/cpp-httplib.pc"
fi

# PCRE2, static (no MinGW package). PCRE2_STATIC is defined by Folio's build.
if [ ! -f "$prefix/lib/libpcre2-8.a" ]; then
  fetch_source pcre2=10.42-1 pcre2
  say "PCRE2 (static)"
  cmake -S "$cache/src/pcre2" -B "$cache/build-pcre2" -G Ninja "${toolchain[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF -DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF \
    -DPCRE2_SUPPORT_JIT=OFF >/dev/null
  cmake --build "$cache/build-pcre2" -j "$jobs" >/dev/null
  cmake --install "$cache/build-pcre2" >/dev/null
fi

# QCustomPlot: compiled into the studio from Debian's source (its patched
# header builds under Qt 6's moc; upstream's does not).
fetch_source qcustomplot=2.1.0+dfsg1-3.1 qcustomplot

# Qt 6.4.2 qtbase. Debian's tarball strips src/3rdparty/wintab, so tablet
# events are configured out (the Windows platform plugin's only user of it).
if [ ! -f "$prefix/lib/cmake/Qt6Widgets/Qt6WidgetsConfig.cmake" ]; then
  fetch_source qt6-base=6.4.2+dfsg-10 qtbase
  # Qt builds its DirectWrite font engine and database only together with
  # Direct2D (off here), but PrintSupport and the Windows platform plugin call
  # them wherever DirectWrite is on: build them with DirectWrite alone (the
  # fonts then work as in Qt's usual Windows builds, which have Direct2D), or
  # Qt6PrintSupport.dll and qwindows.dll do not link.
  sed -i 's/^\(qt_internal_extend_target(Gui CONDITION \)QT_FEATURE_direct2d AND \(QT_FEATURE_directwrite AND\)/\1\2/' \
    "$cache/src/qtbase/src/gui/CMakeLists.txt"
  sed -i 's/QT_CONFIG(directwrite) && QT_CONFIG(direct2d)/QT_CONFIG(directwrite)/' \
    "$cache/src/qtbase/src/gui/text/windows/"*.cpp
  # dynamicgl stays on when OpenGL is off, and one of its blocks in the Windows
  # platform plugin then names OpenGL classes that do not exist.
  sed -i '/^static inline bool isSoftwareGl()/,/^}/s/^#if QT_CONFIG(dynamicgl)$/#if QT_CONFIG(dynamicgl) \&\& QT_CONFIG(opengl)/' \
    "$cache/src/qtbase/src/plugins/platforms/windows/qwindowswindow.cpp"
  say "Qt 6.4.2 qtbase for MinGW (~40 min on 2 cores; log: $cache/build-qt.log)"
  cmake -S "$cache/src/qtbase" -B "$cache/build-qt" -G Ninja "${toolchain[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DQT_HOST_PATH=/usr -DQT_HOST_PATH_CMAKE_DIR=/usr/lib/x86_64-linux-gnu/cmake \
    -DQT_BUILD_EXAMPLES=OFF -DQT_BUILD_TESTS=OFF -DQT_BUILD_BENCHMARKS=OFF \
    -DFEATURE_sql=OFF -DFEATURE_testlib=OFF -DFEATURE_dbus=OFF -DFEATURE_opengl=OFF -DFEATURE_vulkan=OFF \
    -DFEATURE_tabletevent=OFF -DFEATURE_direct2d=OFF -DFEATURE_concurrent=OFF -DFEATURE_xml=OFF \
    -DFEATURE_system_zlib=OFF -DFEATURE_system_pcre2=OFF -DFEATURE_system_freetype=OFF -DFEATURE_system_harfbuzz=OFF \
    -DFEATURE_system_png=OFF -DFEATURE_system_jpeg=OFF -DFEATURE_system_doubleconversion=OFF \
    -DFEATURE_openssl=OFF -DFEATURE_zstd=OFF -DFEATURE_brotli=OFF -DFEATURE_icu=OFF -DFEATURE_glib=OFF \
    >"$cache/build-qt.log" 2>&1 || { say "Qt configure failed: $cache/build-qt.log"; exit 1; }
  cmake --build "$cache/build-qt" -j "$jobs" -- -k 0 >>"$cache/build-qt.log" 2>&1 || { say "Qt build failed: $cache/build-qt.log"; exit 1; }
  cmake --install "$cache/build-qt" >>"$cache/build-qt.log" 2>&1
fi
# Qt's licence texts, which the installer ships beside its DLLs.
mkdir -p "$prefix/share/doc/qtbase"
cp "$cache/src/qtbase/LICENSES/LGPL-3.0-only.txt" "$cache/src/qtbase/LICENSES/GPL-3.0-only.txt" "$prefix/share/doc/qtbase/"
say "ready: $prefix ($(du -sh "$prefix" | cut -f1))"
