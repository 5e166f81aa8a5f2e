"""Signed checkpoints of the log, with an Ed25519 key that the database never holds.

Why Ed25519 and not an HMAC: a checkpoint has to be checked by people who must not be able to
make one. With an HMAC, every verifier holds the secret, and anyone who can check a log can
forge one. With Ed25519 only the recording lab holds the private key; the public key (32 bytes)
can be published with a paper, and anyone can check the log against it.

A checkpoint signs one line of text per subject, so a signature cannot be moved from one to
another: the log's head (``log``, global position, log hash) or, for an exported or imported
episode, a stream's head (``stream``, stream id, version, hash). A campaign's export signs the
list of its episodes' heads (:func:`export_message`), so that none can be left out of the file
unseen. ``cryptography`` is imported only when a key is used.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any

from inquitree.boundary.errors import InquiTreeError

KEY_ENV = "INQUITREE_SIGNING_KEY"
ALGORITHM = "ed25519"


def checkpoint_message(kind: str, subject: str, position: int, digest: str, signed_at: str) -> bytes:
    """The exact bytes a checkpoint's signature covers."""
    if kind not in ("log", "stream"):
        raise ValueError(f"unknown checkpoint kind {kind!r}")
    return f"inquitree checkpoint v1\n{kind}\n{subject}\n{position}\n{digest}\n{signed_at}".encode()


def export_message(subject: str, episodes: int, digest: str, signed_at: str) -> bytes:
    """The exact bytes a campaign export's signature covers: its name, how many episodes it
    holds, the digest of their heads (:func:`heads_digest`) and when it was signed. Its first line
    is not a checkpoint's, so neither signature can pass for the other."""
    return f"inquitree campaign export v1\n{subject}\n{episodes}\n{digest}\n{signed_at}".encode()


def heads_digest(heads: list[tuple[str, int, str]]) -> str:
    """The sha256 of a file's episodes' heads, each ``stream id, version, hash``, in the file's order."""
    return hashlib.sha256("".join(f"{s}\n{v}\n{h}\n" for s, v, h in heads).encode()).hexdigest()


def key_id_of(public_raw: bytes) -> str:
    """A short, stable name for a public key: the first 16 hex digits of its sha256."""
    return hashlib.sha256(public_raw).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Verifier:
    """A public key that checks signatures."""

    key: Any  # cryptography's Ed25519PublicKey
    key_id: str

    def verify(self, message: bytes, signature: str) -> bool:
        from cryptography.exceptions import InvalidSignature

        try:
            self.key.verify(base64.b64decode(signature, validate=True), message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclasses.dataclass(frozen=True)
class Signer:
    """A private key that signs checkpoints."""

    key: Any  # cryptography's Ed25519PrivateKey
    key_id: str

    def sign(self, message: bytes) -> str:
        return base64.b64encode(self.key.sign(message)).decode("ascii")

    @property
    def verifier(self) -> Verifier:
        return Verifier(self.key.public_key(), self.key_id)


@dataclasses.dataclass(frozen=True)
class Keyring:
    """The public keys a verifier trusts, by key id: a lab that merges signed exports from several
    signers checks each checkpoint with the key that made it (``db verify --key A --key B``)."""

    verifiers: tuple[Verifier, ...]

    @classmethod
    def of(cls, keys: "Verifier | Keyring | None") -> "Keyring | None":
        if keys is None or isinstance(keys, Keyring):
            return keys
        return cls((keys,))

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(v.key_id for v in self.verifiers)

    def get(self, key_id: str) -> Verifier | None:
        return next((v for v in self.verifiers if v.key_id == key_id), None)

    def describe(self) -> str:
        ids = self.key_ids
        return f"key {ids[0]}" if len(ids) == 1 else "keys " + ", ".join(ids)


def load_keyring(paths: "list[str] | tuple[str, ...]") -> Keyring | None:
    """The public keys in ``paths`` (None when there are none); the same key twice counts once."""
    verifiers: dict[str, Verifier] = {}
    for path in paths:
        v = load_verifier(path)
        verifiers.setdefault(v.key_id, v)
    return Keyring(tuple(verifiers.values())) if verifiers else None


def _raw_public(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    raw: bytes = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw


def generate(prefix: str | Path) -> tuple[Path, Path]:
    """Write a new key pair: ``PREFIX.key`` (private, PEM, readable by its owner only) and
    ``PREFIX.pub`` (public, PEM). Refuses to overwrite either file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private_path, public_path = Path(f"{prefix}.key"), Path(f"{prefix}.pub")
    for path in (private_path, public_path):
        if os.path.lexists(path):  # a link counts, dangling or not
            raise InquiTreeError(f"{path} exists: a key is never overwritten (choose another name)")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # Both made here, never opened through a link: O_EXCL refuses any name already there.
    for path, pem, mode in ((private_path, private_pem, 0o600), (public_path, public_pem, 0o644)):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
    return private_path, public_path


def _read_pem(path: str | Path) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise InquiTreeError(f"cannot read the key file {path}: {exc.strerror or exc}") from exc


def load_signer(path: str | Path) -> Signer:
    """The private key in ``path`` (PEM, as ``inquitree db keygen`` writes it)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(_read_pem(path), password=None)
    except (ValueError, TypeError) as exc:
        raise InquiTreeError(f"{path}: not an unencrypted PEM private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise InquiTreeError(f"{path}: an {type(key).__name__}, not an Ed25519 private key")
    return Signer(key, key_id_of(_raw_public(key.public_key())))


def load_verifier(path: str | Path) -> Verifier:
    """The public key in ``path``; a private key file is accepted too (its public half is used)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = _read_pem(path)
    if b"PRIVATE KEY" in data:
        return load_signer(path).verifier
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise InquiTreeError(f"{path}: not a PEM public key ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise InquiTreeError(f"{path}: an {type(key).__name__}, not an Ed25519 public key")
    return Verifier(key, key_id_of(_raw_public(key)))


def signer_from_env() -> Signer | None:
    """The signer named by ``$INQUITREE_SIGNING_KEY`` (a private key file), or None."""
    path = os.environ.get(KEY_ENV)
    return load_signer(path) if path else None
