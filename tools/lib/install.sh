# shellcheck shell=bash
# Installs what ether9 needs on a Debian bookworm machine, skipping each
# piece that is already there. Sourced by tools/run and tools/test.
#
#   QEMU >= 8 (igb needs it): qemu-system-x86 from bookworm-backports
#   a Debian kernel: linux-image-6.1.0-NN-amd64, unpacked into the cache
#     with six of its modules: uio and uio_pci_generic (the NICs' INTx),
#     and Linux's own e1000e and igb drivers with what igb needs (dca,
#     i2c-algo-bit), which the reference boot measures ether9 against
#   ovmf (UEFI firmware for QEMU), systemd-boot-efi (the EFI stub that
#     ether9.img's boot program is made from) and grub-efi-amd64-bin (GRUB,
#     the metal platform's ether9.img boot program, with grub-mkimage)
#   gcc (with binutils): builds the metal platform's ring-0 shim
#   tshark: the capture test reads the guest's pcap stream with it
#
# Nothing is written to the host's /boot: the kernel lives in
# ${XDG_CACHE_HOME:-$HOME/.cache}/ether9/kernel/<package>/boot/.

ETHER9_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ether9"
ETHER9_QEMU_MIN=8

e9_log() { printf '%s\n' "install: $*" >&2; }
e9_die() {
	printf '%s\n' "install: $*" >&2
	exit 1
}

# e9_root runs a command as root: directly when we are root, else via sudo.
e9_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		e9_die "need root to run '$*': run as root or install sudo"
	fi
}

e9_codename() {
	# shellcheck disable=SC1090
	(. "${ETHER9_OS_RELEASE:-/etc/os-release}" 2>/dev/null && printf '%s' "${VERSION_CODENAME:-}")
}

E9_APT_UPDATED=
e9_apt_update() {
	[ -n "$E9_APT_UPDATED" ] && return 0
	e9_log "apt-get update"
	e9_root apt-get update -qq >&2 || e9_die "apt-get update failed"
	E9_APT_UPDATED=1
}

# e9_qemu_major prints the major version of qemu-system-x86_64, or nothing.
e9_qemu_major() {
	command -v qemu-system-x86_64 >/dev/null 2>&1 || return 0
	qemu-system-x86_64 --version 2>/dev/null |
		sed -n 's/^QEMU emulator version \([0-9][0-9]*\)\..*/\1/p'
}

e9_backports() {
	local f=/etc/apt/sources.list.d/bookworm-backports.sources
	if grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		return 0
	fi
	e9_log "adding bookworm-backports ($f)"
	printf '%s\n' \
		'Types: deb' \
		'URIs: http://deb.debian.org/debian' \
		'Suites: bookworm-backports' \
		'Components: main' \
		'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' |
		e9_root tee "$f" >/dev/null
	E9_APT_UPDATED=
}

e9_install_qemu() {
	local major
	major="$(e9_qemu_major)"
	if [ -n "$major" ] && [ "$major" -ge "$ETHER9_QEMU_MIN" ]; then
		return 0
	fi
	if [ "$(e9_codename)" != bookworm ]; then
		e9_die "QEMU ${ETHER9_QEMU_MIN} or newer is missing (found: ${major:-none}); install qemu-system-x86 with your package manager"
	fi
	e9_backports
	e9_apt_update
	e9_log "installing qemu-system-x86 from bookworm-backports"
	e9_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 >&2 ||
		e9_die "apt-get install qemu-system-x86 failed"
	major="$(e9_qemu_major)"
	[ -n "$major" ] && [ "$major" -ge "$ETHER9_QEMU_MIN" ] ||
		e9_die "qemu-system-x86_64 is still older than ${ETHER9_QEMU_MIN} after install (found: ${major:-none})"
}

# E9_MODULES are the only modules kept from the kernel package, as paths
# under lib/modules/VER/kernel without .ko: uio and uio_pci_generic hand a
# NIC's legacy interrupt to /init, which polls without them; e1000e, igb
# and igb's dependencies (modinfo depends) are what the reference boot
# (go run ./boot -selftest -driver both) runs Linux's own drivers with.
E9_MODULES="drivers/uio/uio drivers/uio/uio_pci_generic
drivers/net/ethernet/intel/e1000e/e1000e drivers/net/ethernet/intel/igb/igb
drivers/dca/dca drivers/i2c/algos/i2c-algo-bit"

# e9_kernel_complete says whether kernel image $1 has E9_MODULES beside it.
e9_kernel_complete() {
	local ver dir m
	ver="${1##*/vmlinuz-}"
	dir="${1%/boot/*}/lib/modules/$ver/kernel"
	for m in $E9_MODULES; do
		ls "$dir/$m".ko* >/dev/null 2>&1 || return 1
	done
}

# e9_kernel_cached prints the newest kernel image already in the cache
# whose modules are kept too.
e9_kernel_cached() {
	local k
	for k in "$ETHER9_CACHE"/kernel/*/boot/vmlinuz-*; do
		[ -f "$k" ] && e9_kernel_complete "$k" && printf '%s\n' "$k"
	done | sort -V | tail -n 1
}

# e9_keep_modules deletes everything of unpacked package $1 but its kernel
# image, its config and E9_MODULES.
e9_keep_modules() {
	local pkg="$1" keep m f rel
	keep="$(mktemp -d)"
	for m in $E9_MODULES; do
		for f in "$pkg"/lib/modules/*/kernel/"$m".ko*; do
			[ -f "$f" ] || continue
			rel="${f#"$pkg"/}"
			mkdir -p "$keep/${rel%/*}"
			mv "$f" "$keep/$rel"
		done
	done
	rm -rf "$pkg/lib" "$pkg/usr"
	if [ -d "$keep/lib" ]; then
		mv "$keep/lib" "$pkg/lib"
	fi
	rm -rf "$keep"
}

e9_install_kernel() {
	if [ -n "$(e9_kernel_cached)" ]; then
		return 0
	fi
	command -v apt-cache >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
		e9_die "no kernel in $ETHER9_CACHE and no apt to fetch one: pass -kernel FILE or set ETHER9_KERNEL"
	local pkg tmp
	pkg="$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)"
	if [ -z "$pkg" ]; then
		e9_apt_update
		pkg="$(apt-cache depends linux-image-amd64 2>/dev/null |
			sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)"
	fi
	[ -n "$pkg" ] || e9_die "cannot resolve the kernel package behind linux-image-amd64"
	tmp="$(mktemp -d)"
	e9_log "fetching $pkg into $ETHER9_CACHE/kernel/$pkg"
	# apt-get download writes as the _apt user when root; let it.
	chmod 0777 "$tmp"
	if ! (cd "$tmp" && apt-get download -qq "$pkg" >&2); then
		rm -rf "$tmp"
		e9_die "apt-get download $pkg failed"
	fi
	mkdir -p "$ETHER9_CACHE/kernel"
	rm -rf "$ETHER9_CACHE/kernel/$pkg.partial"
	if ! dpkg-deb -x "$tmp"/"$pkg"_*.deb "$ETHER9_CACHE/kernel/$pkg.partial"; then
		rm -rf "$tmp" "$ETHER9_CACHE/kernel/$pkg.partial"
		e9_die "dpkg-deb -x $pkg failed"
	fi
	rm -rf "$tmp"
	e9_keep_modules "$ETHER9_CACHE/kernel/$pkg.partial"
	rm -rf "$ETHER9_CACHE/kernel/$pkg"
	mv "$ETHER9_CACHE/kernel/$pkg.partial" "$ETHER9_CACHE/kernel/$pkg"
	[ -n "$(e9_kernel_cached)" ] || e9_die "$pkg holds no boot/vmlinuz-* with $E9_MODULES beside it"
}

# The files of the three packages ether9.img needs: the test boots the
# disk under OVMF, and -o builds its boot program from systemd's stub
# (linux platform) or GRUB's x86_64-efi modules (metal platform).
ETHER9_OVMF_CODE="${ETHER9_OVMF_CODE:-/usr/share/OVMF/OVMF_CODE_4M.fd}"
ETHER9_EFI_STUB="${ETHER9_EFI_STUB:-/usr/lib/systemd/boot/efi/linuxx64.efi.stub}"
ETHER9_GRUB_EFI="${ETHER9_GRUB_EFI:-/usr/lib/grub/x86_64-efi/multiboot2.mod}"

e9_install_uefi() {
	[ -f "$ETHER9_OVMF_CODE" ] && [ -f "$ETHER9_EFI_STUB" ] && [ -f "$ETHER9_GRUB_EFI" ] && return 0
	command -v apt-get >/dev/null 2>&1 ||
		e9_die "$ETHER9_OVMF_CODE, $ETHER9_EFI_STUB or $ETHER9_GRUB_EFI is missing and there is no apt-get: install OVMF, systemd-boot's EFI stub and GRUB for x86_64-efi with your package manager"
	e9_apt_update
	e9_log "installing ovmf, systemd-boot-efi and grub-efi-amd64-bin"
	e9_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends ovmf systemd-boot-efi grub-efi-amd64-bin >&2 ||
		e9_die "apt-get install ovmf systemd-boot-efi grub-efi-amd64-bin failed"
	[ -f "$ETHER9_OVMF_CODE" ] || e9_die "ovmf is installed but $ETHER9_OVMF_CODE is missing"
	[ -f "$ETHER9_EFI_STUB" ] || e9_die "systemd-boot-efi is installed but $ETHER9_EFI_STUB is missing"
	[ -f "$ETHER9_GRUB_EFI" ] || e9_die "grub-efi-amd64-bin is installed but $ETHER9_GRUB_EFI is missing"
}

# e9_install_tool installs Debian package $2 unless command $1 is on PATH;
# $3 says what it is for.
e9_install_tool() {
	local cmd="$1" pkg="$2" why="$3"
	command -v "$cmd" >/dev/null 2>&1 && return 0
	command -v apt-get >/dev/null 2>&1 ||
		e9_die "$cmd is missing and there is no apt-get: install $pkg with your package manager"
	e9_apt_update
	e9_log "installing $pkg ($why)"
	e9_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "$pkg" >&2 ||
		e9_die "apt-get install $pkg failed"
	command -v "$cmd" >/dev/null 2>&1 || e9_die "$pkg is installed but $cmd is not on PATH"
}

# The compiler the metal platform's shim (kernel/metal/shim) is built with
# (gcc brings binutils).
ETHER9_GCC="${ETHER9_GCC:-gcc}"

e9_install_gcc() { e9_install_tool "$ETHER9_GCC" gcc "the metal shim's compiler"; }

# The packet dissector the capture test reads /net/etherN/capture with.
# Noninteractive: wireshark-common asks whether non-root users may
# capture; the default (no) is what a test machine wants.
ETHER9_TSHARK="${ETHER9_TSHARK:-tshark}"

e9_install_tshark() { e9_install_tool "$ETHER9_TSHARK" tshark "the capture test's pcap reader"; }

e9_check_go() {
	command -v go >/dev/null 2>&1 ||
		e9_die "go is not on PATH: install Go 1.26 or newer (https://go.dev/dl/)"
}

# e9_install_all installs every piece the runner and the QEMU tests need.
e9_install_all() {
	e9_check_go
	e9_install_qemu
	e9_install_kernel
	e9_install_uefi
	e9_install_gcc
	e9_install_tshark
}
