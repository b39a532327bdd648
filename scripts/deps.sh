#!/usr/bin/env bash
# deps.sh [openmpi|mpich] — install what gccl's build and tests need, only
# when it is missing: an MPI implementation (headers, pkg-config module,
# launcher), pkg-config, and UCX's libucp.so.0 (libucx0: the ucx network
# provider, which the multi-host tier runs; Debian's Open MPI and MPICH
# depend on it, but a machine may have MPI from elsewhere). Uses apt-get on
# Debian/Ubuntu, as root, non-interactively.
set -euo pipefail

mpi=${1:-openmpi}
case $mpi in
openmpi) module=ompi launcher=mpirun pkgs="libopenmpi-dev openmpi-bin" ;;
mpich) module=mpich launcher=mpiexec.mpich pkgs="libmpich-dev mpich" ;;
*) echo "deps.sh: unknown MPI '$mpi' (openmpi or mpich)" >&2; exit 2 ;;
esac

missing=""
if ! { command -v pkg-config >/dev/null && pkg-config --exists "$module" && command -v "$launcher" >/dev/null; }; then
	missing="$mpi (pkg-config module '$module', launcher '$launcher')"
fi
if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libucp\.so\.0 '; then
	missing="${missing:+$missing, }UCX (libucp.so.0)"
	pkgs="$pkgs libucx0"
fi
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null; then
	echo "deps.sh: $missing missing and apt-get is not available; install $pkgs pkg-config" \
		"(or their equivalents) with your package manager" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "deps.sh: installing $pkgs needs root (or sudo)" >&2; exit 1; }
	sudo="sudo"
fi
echo "deps.sh: installing $pkgs pkg-config"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q $pkgs pkg-config
