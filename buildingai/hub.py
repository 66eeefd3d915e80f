"""``buildingai.hub``: PyTorch's ``torch.hub`` functions for pretrained weights, over
``buildingai.load``.

``load_state_dict_from_url(url)`` reads a local path or ``file://`` URL directly; for any other
URL it reads the copy in the cache (``get_dir()/checkpoints/<file name>``), downloading it there
first when it is missing. Without a network the error names the URL and where to put the file.
The file must be a safetensors checkpoint: BuildingAI never opens a pickle (``.pth`` files written
by ``torch.save``), and says how to convert one. ``torch.hub.load`` (which runs a repository's
code) has no counterpart.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.error
import urllib.parse
import urllib.request

from .errors import CheckpointError
from .serialization import load
from .serialization._atomic import write_atomically

_hub_dir: str | None = None
# torch.hub's convention: a file named "<name>-<first hex digits of its SHA-256>.<ext>"
_HASH_IN_NAME = re.compile(r"-([a-f0-9]+)\.")
_REMOTE_SCHEMES = ("http", "https", "ftp", "s3", "gs")


def get_dir() -> str:
    """The hub folder: ``set_dir``'s, else ``$BUILDINGAI_HOME/hub``, else
    ``~/.cache/buildingai/hub``. Downloaded weights go to its ``checkpoints`` folder."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.environ.get("BUILDINGAI_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "buildingai"
    )
    return os.path.join(home, "hub")


def set_dir(directory: str | os.PathLike) -> None:
    """Use ``directory`` as the hub folder from now on (``get_dir()`` returns it)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(directory))


def _local_path(url: str) -> str | None:
    """The file a local path or ``file://`` URL names; None for a remote URL."""
    parsed = urllib.parse.urlparse(os.fspath(url))
    if parsed.scheme == "file":
        return urllib.request.url2pathname(parsed.path)
    if parsed.scheme in _REMOTE_SCHEMES:
        return None
    return os.fspath(url)


def download_url_to_file(
    url: str, dst: str | os.PathLike, hash_prefix: str | None = None, progress: bool = True
) -> None:
    """Download ``url`` to ``dst`` (written atomically: ``dst`` never holds half a file). With
    ``hash_prefix``, the SHA-256 of the bytes must start with it. ``progress`` is accepted for
    PyTorch's signature; nothing is printed."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            payload = response.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise CheckpointError(
            f"[hub] cannot download {url}: {reason}",
            help=f"download it where there is a network and put it at {os.fspath(dst)}, or pass "
            "the local file's path instead of the URL",
        ) from None
    if hash_prefix is not None:
        digest = hashlib.sha256(payload).hexdigest()
        if not digest.startswith(hash_prefix):
            raise CheckpointError(
                f"[hub] {url} has SHA-256 {digest[:16]}..., not the {hash_prefix!r} its name "
                "promises; the file was not kept",
                help="download it again; if it persists, the published file has changed",
            )
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    write_atomically(os.fspath(dst), lambda file: file.write(payload))


def load_state_dict_from_url(
    url: str,
    model_dir: str | os.PathLike | None = None,
    map_location=None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
) -> dict:
    """The state dict stored at ``url``, as ``buildingai.load`` returns it (``{name: Tensor}``).

    A local path or ``file://`` URL is read directly; another URL is read from
    ``model_dir`` (default ``get_dir()/checkpoints``) under ``file_name`` (default the URL's last
    part), downloaded there first if missing. ``check_hash`` checks a download against the hex
    digits after the last ``-`` of the file name (torch.hub's naming). ``map_location`` is a
    device (``"cpu"``, ``"cuda:0"``) or None. ``weights_only`` is accepted for PyTorch's
    signature: a BuildingAI checkpoint holds only data, so loading never runs code.
    """
    local = _local_path(url)
    if local is not None:
        if not os.path.isfile(local):
            raise CheckpointError(
                f"[hub] no file at {local} (from {url})", help="check the path of the weights"
            )
        return load(local, map_location=map_location)
    folder = (
        os.fspath(model_dir) if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    )
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(folder, name)
    if not os.path.isfile(cached):
        match = _HASH_IN_NAME.search(name) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress)
    return load(cached, map_location=map_location)


__all__ = ["download_url_to_file", "get_dir", "load_state_dict_from_url", "set_dir"]
