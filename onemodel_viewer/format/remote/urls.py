"""URLs: which strings are one, what must never be shown of them, and where a relative location points.

Credentials never reach any output: :func:`redact` drops the user-info (``user:pass@``) and
replaces a query string (``?token=...``, presigned S3 signatures) and a fragment with ``?…``.
Everything that names a URL in a message goes through it. No imports beyond the standard library.
"""

from __future__ import annotations

import posixpath
import re

from ..errors import FormatError, Kind

SCHEMES = {"http": None, "https": None, "s3": "s3", "gs": "gcs", "gcs": "gcs", "hf": "hf"}
"""Supported schemes -> the extra that brings their client (None: built in)."""

CLIENTS = {"s3": ("s3fs", "s3"), "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"), "hf": ("huggingface_hub", "hf")}
"""Scheme -> (module to import, extra that installs it)."""

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def is_url(path) -> bool:
    """Whether ``path`` is ``scheme://...`` (any scheme: an unsupported one is refused by :func:`check_scheme`)."""
    return isinstance(path, str) and _URL.match(path) is not None


def shown_name(path: str) -> str:
    """What a UI shows for a file: a local path's base name, a URL whole but redacted."""
    return redact(path) if is_url(path) else posixpath.basename(path.replace("\\", "/"))


def scheme(url: str) -> str:
    m = _URL.match(url)
    return m.group(1).lower() if m else ""


def redact(text: str) -> str:
    """``text`` (a URL, or a message that may contain URLs) with user-info, query strings and fragments hidden."""
    return re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)([^\s'\"]*)", lambda m: m.group(1) + _redact_rest(m.group(2)), text)


def _redact_rest(rest: str) -> str:
    cut = len(rest)
    for sep in "?#":
        i = rest.find(sep)
        if i >= 0:
            cut = min(cut, i)
    tail = "?…" if cut < len(rest) else ""
    rest = rest[:cut]
    slash = rest.find("/")
    authority = rest if slash < 0 else rest[:slash]
    at = authority.rfind("@")
    if at >= 0:
        rest = "…@" + rest[at + 1:]
    return rest + tail


def split(url: str) -> tuple[str, str, str, str]:
    """``(scheme, authority, path, query)``; the authority is the host (http) or bucket/repo prefix."""
    sch = scheme(url)
    rest = url[len(sch) + 3:]
    cuts = [i for i in (rest.find("?"), rest.find("#")) if i >= 0]
    query = ""
    if cuts:
        query, rest = rest[min(cuts):], rest[:min(cuts)]
    slash = rest.find("/")
    if slash < 0:
        return sch, rest, "/", query
    return sch, rest[:slash], rest[slash:], query


def name_of(url: str) -> str:
    """The URL's path without query or fragment (what the format sniffers look at: ``.onemodel``, ``.ort``)."""
    sch, auth, path, _q = split(url)
    return f"{sch}://{auth}{path}"


def check_scheme(url: str) -> None:
    """``FormatError(Unsupported)`` for a scheme that is not read here, or whose client is not installed."""
    sch = scheme(url)
    if sch not in SCHEMES:
        raise FormatError(Kind.UNSUPPORTED, "file", None,
                          f"{sch}:// URLs are not supported (http, https, s3, gs, hf are)")
    need = missing_extra(url)
    if need:
        raise FormatError(Kind.UNSUPPORTED, "file", None, need)


def missing_extra(url: str) -> str:
    """"" when ``url``'s client can be imported, else the one-line message naming the ``pip install`` that fixes it."""
    sch = scheme(url)
    if sch in ("http", "https"):  # the standard library's client: nothing to install
        return ""
    module, extra = CLIENTS.get(sch, (None, None))
    mods = ["fsspec"] + ([module] if module else [])
    import importlib.util

    for mod in mods:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            pkg = f"onemodel-view[{extra}]" if extra and mod == module else "fsspec"
            return f"{sch}:// URLs need the {mod} package: pip install '{pkg}'"
    return ""


def relative(base_url: str, location: str) -> tuple[str | None, str]:
    """``(url, "")`` of an ONNX external-data ``location`` next to the model at ``base_url``, or
    ``(None, why)``: the rules on disk (no absolute location, no ``..``, not empty) and never another
    scheme, host or bucket (a location with ``scheme://``, or starting with ``//``, is absolute).
    The model's query string (a token) is not carried over to the data's URL."""
    if not location or "\x00" in location or is_url(location) or location.startswith(("/", "\\")) \
            or (len(location) > 1 and location[1] == ":"):
        return None, f"external data location {location!r} is absolute, empty or leaves the model's folder"
    parts = location.replace("\\", "/").split("/")
    if ".." in parts:
        return None, f"external data location {location!r} is absolute, empty or leaves the model's folder"
    if any(c in location for c in "?#") or "%2e" in location.lower() or "%2f" in location.lower():
        return None, f"external data location {location!r} has URL syntax (?, #, escaped . or /); refused"
    sch, auth, path, _q = split(base_url)
    folder = posixpath.dirname(path)
    joined = posixpath.normpath(posixpath.join(folder, "/".join(p for p in parts if p not in ("", "."))))
    if not joined.startswith(folder.rstrip("/") + "/"):
        return None, f"external data location {location!r} resolves outside the model's folder"
    if joined == path:
        return None, f"external data location {location!r} names the model file itself"
    return f"{sch}://{auth}{joined}", ""
