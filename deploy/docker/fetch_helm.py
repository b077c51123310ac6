"""Fetch the helm binary for the image (Dockerfile's `helm` stage), checked against the SHA-256
published beside it: `python fetch_helm.py <version> <arch> <directory>`."""

from __future__ import annotations

import hashlib
import sys
import tarfile
import urllib.request
from pathlib import Path


def main(version: str, arch: str, directory: str) -> None:
    url = f"https://get.helm.sh/helm-{version}-linux-{arch}.tar.gz"
    archive, _ = urllib.request.urlretrieve(url)
    with urllib.request.urlopen(url + ".sha256sum") as answer:
        expected = answer.read().split()[0].decode()
    actual = hashlib.sha256(Path(archive).read_bytes()).hexdigest()
    if actual != expected:
        raise SystemExit(f"helm {version} {arch}: sha256 {actual}, expected {expected}")
    with tarfile.open(archive) as tar:
        member = tar.getmember(f"linux-{arch}/helm")
        member.name = "helm"
        tar.extract(member, directory, filter="data")
    target = Path(directory) / "helm"
    target.chmod(0o755)
    print(f"helm {version} ({arch}) in {target}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
