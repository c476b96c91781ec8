# shellcheck shell=bash
# What the builds of the project's software drivers (scripts/build-software-va-driver.sh,
# scripts/build-software-cuda.sh) share: whether the built libraries are older than a source,
# the development packages they need, and the C compiler and flags. Sourced.

# build_is_stale "LIBRARY..." SOURCE...: true when a library is missing or a source is newer
# than one of them.
build_is_stale() {
    local libraries
    read -r -a libraries <<<"$1"
    shift
    local library file
    for library in "${libraries[@]}"; do
        [ -f "$library" ] || return 0
    done
    for file in "$@"; do
        for library in "${libraries[@]}"; do
            if [ "$file" -nt "$library" ]; then return 0; fi
        done
    done
    return 1
}

# build_require_packages NAME PACKAGE...: exits 1 naming the first pkg-config package missing.
build_require_packages() {
    local name="$1" package
    shift
    for package in "$@"; do
        if ! pkg-config --exists "$package"; then
            echo "$name: pkg-config cannot find $package (install libva-dev, libavcodec-dev)" >&2
            exit 1
        fi
    done
}

# The C compiler ($CC, else gcc, else cc) and the flags of a shared library that hides what it
# does not export and links every symbol it uses.
build_compiler="${CC:-}"
if [ -z "$build_compiler" ]; then
    build_compiler=gcc
    command -v gcc >/dev/null 2>&1 || build_compiler=cc
fi
# shellcheck disable=SC2034,SC2054 # used by the sourcing script; the commas are the linker's (-Wl,...)
build_flags=(-std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -Wl,--no-undefined -Wl,-z,defs)
