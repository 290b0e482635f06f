#!/usr/bin/env bash
# Installs what speclens needs on a fresh machine (rustup/cargo, apt and npm present), skipping
# every step whose right version is already there. `--browser` adds Chromium and ChromeDriver
# for the browser tests, `--prometheus` Debian's Prometheus server for the fleet tests.
# Versions are pinned; docs/TOOLCHAIN.md says why.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

want_browser=0
want_prometheus=0
for arg in "$@"; do
  case "$arg" in
    --browser) want_browser=1 ;;
    --prometheus) want_prometheus=1 ;;
    *) die "unknown option $arg (usage: setup.sh [--browser] [--prometheus])" ;;
  esac
done

TRUNK_VERSION=0.21.14
BINARYEN_VERSION=132.0.0

command -v cargo >/dev/null || die "cargo not found: install Rust with rustup first"
command -v rustup >/dev/null || die "rustup not found: the wasm32 target is added with rustup"

# Rust components used by the checks, and the wasm target.
for component in clippy rustfmt; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    say "adding the $component component"
    rustup component add "$component" || die "could not add the $component component with rustup"
  fi
done
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown || die "could not add the wasm32-unknown-unknown target with rustup"
fi

# The build tools are compiled without their own release profiles' fat LTO and single codegen
# unit (Trunk's took 6 of a fresh CI run's minutes): they orchestrate, they do not compute, and
# `opt-level = 1` keeps them quick to run. Cargo's config (here its environment) takes
# precedence over a package's own [profile.release].
tool_profile=(env CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_OPT_LEVEL=1)

# Trunk builds the dashboard. 0.22 needs a newer rustc than this machine has.
if ! trunk --version 2>/dev/null | grep -q " $TRUNK_VERSION\$"; then
  say "installing trunk $TRUNK_VERSION (about 3 minutes on 2 cores)"
  "${tool_profile[@]}" cargo install trunk --version "$TRUNK_VERSION" --locked \
    || die "could not install trunk $TRUNK_VERSION from crates.io"
fi

# wasm-bindgen-cli must be exactly the wasm-bindgen version in Cargo.lock, or Trunk tries to
# download one. Installed without --locked: its own lockfile pins a crate the mirror lacks.
WASM_BINDGEN_VERSION="$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
[ -n "$WASM_BINDGEN_VERSION" ] || die "cannot read wasm-bindgen's version from Cargo.lock"
grep -q "wasm_bindgen = \"$WASM_BINDGEN_VERSION\"" Trunk.toml \
  || die "Trunk.toml's [tools] wasm_bindgen does not match Cargo.lock's wasm-bindgen $WASM_BINDGEN_VERSION"
if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 2 minutes)"
  "${tool_profile[@]}" cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" \
    || die "could not install wasm-bindgen-cli $WASM_BINDGEN_VERSION from crates.io"
fi

# wasm-opt from npm's binaryen, in a project-local prefix (Debian's v108 breaks the page).
if ! wasm-opt --version 2>/dev/null | grep -q "version ${BINARYEN_VERSION%%.*}"; then
  command -v npm >/dev/null || die "npm not found: wasm-opt comes from the npm package binaryen@$BINARYEN_VERSION"
  say "installing wasm-opt (npm binaryen@$BINARYEN_VERSION) into .tools/npm"
  npm install --prefix "$ROOT/.tools/npm" --no-audit --no-fund --loglevel=error "binaryen@$BINARYEN_VERSION" \
    || die "could not install binaryen@$BINARYEN_VERSION from npm"
fi

# Debian packages for the tests: Chromium and ChromeDriver (browser tests), Prometheus (fleet
# tests; the package's own service is not used, the tests start their own servers).
apt_install() { # apt_install "what it is for" [apt-get options] packages…
  local what="$1"
  shift
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "installing $what needs root or sudo"
    sudo=sudo
  fi
  say "installing $what from Debian (about a minute)"
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null || die "could not install $what with apt-get"
}
if [ "$want_browser" = 1 ] && ! { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }; then
  apt_install "chromium and chromium-driver" chromium chromium-driver
fi
if [ "$want_prometheus" = 1 ] && ! [ -x /usr/bin/prometheus ]; then
  apt_install "prometheus" --no-install-recommends prometheus
fi

# Trunk runs cargo offline (Trunk.toml), so every crate must be fetched first.
cargo fetch --locked -q 2>/dev/null || cargo fetch -q || die "cargo fetch failed"
