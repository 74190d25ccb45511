# Sourced by scripts/setup and the build scripts that compile Debian source
# packages (subprojects/shells/build-shell.sh, scripts/build-musl.sh); POSIX sh.

# debian_source_dsc PACKAGE CACHE_DIR: prints the newest .dsc of Debian's
# source package PACKAGE in CACHE_DIR, fetching the package there with
# apt-get source first when there is none.  Returns 1 when apt-get fails
# (its messages are in CACHE_DIR/apt-source-PACKAGE.log).
debian_source_dsc() {
	ds_pkg=$1
	ds_cache=$2
	ds_dsc=$(ls "$ds_cache/$ds_pkg"_*.dsc 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -z "$ds_dsc" ]; then
		echo "fetching Debian's $ds_pkg source package into $ds_cache" >&2
		(cd "$ds_cache" && apt-get source --download-only "$ds_pkg" >/dev/null \
			2>"$ds_cache/apt-source-$ds_pkg.log") || return 1
		ds_dsc=$(ls "$ds_cache/$ds_pkg"_*.dsc | sort -V | tail -n 1)
	fi
	printf '%s\n' "$ds_dsc"
}
