"""Manifest look-ups in a child process, for the viewer's big manifests (:class:`LocateChild`).

Finding a record's manifest bytes (the hex pane's highlight) decodes the whole manifest and walks
it (:class:`~onemodel_viewer.format.onemodel.manifest_locate.Locator`). In the viewer's process that held
the interpreter from the UI thread: on a 139 MB manifest (10^6 nodes) the copy and the decode
alone took 0.3-4 s, and the walks ran as a third busy thread beside the background job. A child
process has its own interpreter (and the machine's other core): the viewer's look-up thread only
waits on a pipe.

The child is a :class:`~onemodel_viewer.helper_process.HelperProcess` (one per manifest) running
:func:`answer`: a request is the JSON ``{"path", "offset", "length", "unique", "where"}``, the reply
``[start, end]`` (byte offsets in the manifest) or ``null``. The child reads the manifest bytes
itself on the first request and keeps its :class:`Locator` for the next ones. Once the child has
failed (killed, or a bug) the :class:`LocateChild` answers nothing more.
"""

from __future__ import annotations

import json
import threading

from ...helper_process import HelperError, HelperProcess

__all__ = ["LocateChild", "NICE", "answer"]

NICE = 10
"""The look-up child's nice value, relative to the viewer's."""


class LocateChild:
    """One child process answering look-ups in one manifest (thread-safe: one look-up at a time)."""

    def __init__(self, path: str, offset: int, length: int, unique_keys: bool) -> None:
        self._request = {"path": path, "offset": offset, "length": length, "unique": unique_keys}
        self._closing = threading.Event()
        # niced: its first look-up decodes the whole manifest (10^6 nodes: seconds of CPU), while the
        # user moves through the tree (2 cores: the UI thread was waiting for one)
        self._helper: HelperProcess | None = HelperProcess(nice=NICE, restart=False)  # a child that died is not re-run
        self._helper.start()  # the child starts (and imports) while the first request is being made

    @property
    def pid(self) -> int | None:
        """The child's pid while it runs (None once it ended or was closed)."""
        helper = self._helper
        return helper.pid if helper is not None else None

    def span(self, where: str) -> tuple[int, int] | None:
        """``(start, end)`` of ``where`` in the manifest, None when there is none or the child is gone."""
        helper = self._helper
        if helper is None:
            return None
        try:
            reply = helper.call(f"{__name__}:answer", json.dumps(dict(self._request, where=where)).encode(),
                                cancel=self._closing)  # waits on the pipe, without the interpreter
            answer = json.loads(reply)
        except (HelperError, ValueError):  # the child ended (killed, or a bug): no more look-ups
            self.close()
            return None
        if isinstance(answer, list) and len(answer) == 2 and all(type(x) is int for x in answer):
            return answer[0], answer[1]
        return None

    def close(self) -> None:
        """End the child (a look-up under way in it is given up)."""
        self._closing.set()  # a look-up waiting on the child stops, and the child is killed
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close()


_LOCATOR: tuple[tuple, object] | None = None
"""In the child: the manifest's (path, offset, length, unique) and its Locator, made on the first request."""


def answer(payload: bytes) -> bytes:
    """In the child: the span of one request's ``where`` (``[start, end]`` or ``null``), as JSON."""
    global _LOCATOR
    from ...format.onemodel.manifest_locate import Locator

    req = json.loads(payload)
    key = (req["path"], req["offset"], req["length"], req["unique"])
    if _LOCATOR is None or _LOCATOR[0] != key:
        with open(req["path"], "rb") as f:
            f.seek(req["offset"])
            data = f.read(req["length"])
        _LOCATOR = (key, Locator(data, unique_keys=bool(req["unique"])))
    where = req.get("where")
    try:
        found = _LOCATOR[1].nearest(where) if isinstance(where, str) else None
    except Exception:  # a hostile manifest or path: no answer, never a failed request
        found = None
    return json.dumps([found[0], found[1]] if found else None).encode()
