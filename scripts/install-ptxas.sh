#!/bin/sh
# install-ptxas.sh [DEST]: NVIDIA's PTX assembler, ptxas (CUDA 11.8), for TestPTXAssembles, on
# Debian 12. Debian ships it in non-free's nvidia-cuda-toolkit, whose dependencies (the driver's
# userspace among them) weigh 1.6 GB: this downloads that one package (84 MB) through a private
# apt configuration — the machine's sources and package state stay as they are — and extracts
# only usr/bin/ptxas (statically linked but for glibc) to DEST (/usr/local/bin/ptxas).
# It does nothing when ptxas is already on PATH or at DEST.
set -eu
dest=${1:-/usr/local/bin/ptxas}
if command -v ptxas >/dev/null 2>&1 || [ -x "$dest" ]; then
	exit 0
fi
# The machine's Debian mirror (deb822 sources, else sources.list), with non-free instead of main.
mirror=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
echo "deb $mirror bookworm non-free" >"$tmp/sources.list"
apt="apt-get -qq -o Dir::Etc::SourceList=$tmp/sources.list -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists=$tmp/lists -o Dir::Cache=$tmp/cache -o APT::Sandbox::User=root"
echo "install-ptxas: downloading nvidia-cuda-toolkit (non-free, 84 MB) from $mirror for its ptxas"
$apt update
(cd "$tmp" && $apt download nvidia-cuda-toolkit)
dpkg-deb --fsys-tarfile "$tmp"/nvidia-cuda-toolkit_*.deb | tar -x -C "$tmp" ./usr/bin/ptxas
mkdir -p "$(dirname "$dest")"
install -m 0755 "$tmp/usr/bin/ptxas" "$dest"
"$dest" --version | tail -1
