#!/bin/sh
# Makes the example's base image from a statically linked busybox (Debian: busybox-static):
# /bin/busybox and a symbolic link per applet, imported as one layer. No registry, no network.
#
#   ./make-base.sh [NAME]        (default: forge-example-base:busybox)
set -eu

name="${1:-forge-example-base:busybox}"
busybox="$(command -v busybox || true)"
if [ -z "$busybox" ]; then
    echo "make-base.sh: busybox not found; install it with: apt-get install busybox-static" >&2
    exit 2
fi
case "$(file -L "$busybox" 2>/dev/null || echo unknown)" in
    *"statically linked"*|unknown) ;;
    *) echo "make-base.sh: $busybox is dynamically linked; install busybox-static" >&2; exit 2 ;;
esac

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/root"
cp "$busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
chmod 1777 "$root/tmp"

tar -C "$root" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -c . \
    | docker import --change 'ENV PATH=/bin' - "$name" >/dev/null
echo "$name"
