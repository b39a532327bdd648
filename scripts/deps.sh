#!/usr/bin/env bash
# deps.sh [openmpi|mpich] — install what gccl's build and tests need, only
# when it is missing: an MPI implementation (headers, pkg-config module,
# launcher) and pkg-config. Uses apt-get on Debian/Ubuntu, as root, non-interactively.
set -euo pipefail

mpi=${1:-openmpi}
case $mpi in
openmpi) module=ompi launcher=mpirun pkgs="libopenmpi-dev openmpi-bin" ;;
mpich) module=mpich launcher=mpiexec.mpich pkgs="libmpich-dev mpich" ;;
*) echo "deps.sh: unknown MPI '$mpi' (openmpi or mpich)" >&2; exit 2 ;;
esac

if command -v pkg-config >/dev/null && pkg-config --exists "$module" && command -v "$launcher" >/dev/null; then
	exit 0
fi

if ! command -v apt-get >/dev/null; then
	echo "deps.sh: $mpi is missing (pkg-config module '$module', launcher '$launcher') and apt-get is not" \
		"available; install $mpi and pkg-config with your package manager" >&2
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
