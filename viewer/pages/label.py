"""Labelling a sample in the browser (``inquitree view --label``): one item a page, shown as
``inquitree label`` shows it in a terminal (core/instrument/labels.py: the same sample, the same
screen, the same ``LabelRecorded`` events), answered with a button.

It is the viewer's only page that writes, so it is guarded twice: the viewer serves it on a
loopback address only (``view --label`` refuses any other), and every request carries the write
token the command printed (in the page's URL, and in each answer's form), compared in constant
time: another user of the machine, or a page of another site posting to this port, has no token.
Without ``--label`` the page says labelling is off.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from inquitree.viewer.state import Viewer

MAX_FORM = 4096  # an answer's form is a token, an item's key and a word


@dataclasses.dataclass
class Labelling:
    """What ``view --label`` labels: the store, the sample (kind, suite, agent, size, seed), who
    labels, and the write token. The session is made on the first request and kept."""

    db_url: str | None
    kind: str
    suite: str
    agent: str | None
    size: int
    seed: int
    labeller: str
    token: str = dataclasses.field(default_factory=lambda: secrets.token_urlsafe(24))
    _session: Any = None
    _store: Any = None
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def session(self) -> Any:
        if self._session is None:
            from inquitree.core.instrument import LabelSession
            from inquitree.events import EventStore

            self._store = EventStore(self.db_url, create=False)
            self._session = LabelSession(
                self._store, self.kind, self.suite, self.agent, self.size, self.seed, self.labeller
            )
        return self._session

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def allows(self, token: str | None) -> bool:
        return token is not None and secrets.compare_digest(token.encode(), self.token.encode())


def _key(item: Any) -> str:
    stream, position, item_id = item.key
    return f"{stream}|{position}|{item_id or ''}"


async def label_page(request: Request) -> Response:
    viewer: Viewer = request.app.state.viewer
    labelling: Labelling | None = getattr(request.app.state, "labelling", None)
    if labelling is None:
        return viewer.page(
            "missing.html.j2", what="labelling here: start the viewer with inquitree view --label", status_code=404
        )
    if request.method == "POST":
        body = await request.body()
        form = {k: v[0] for k, v in parse_qs(body[:MAX_FORM].decode("utf-8", "replace")).items()}
        if not labelling.allows(form.get("token")):
            return Response("no write token, or not this viewer's", status_code=403, media_type="text/plain")
        with labelling.lock:
            session = labelling.session()
            session.refresh()
            item = next((it for _, it in session.left() if _key(it) == form.get("key")), None)
            answer = form.get("answer", "")
            if item is not None and (answer == "skip" or answer in session.screen_of(item).choices):
                session.keep(item, answer)
        return RedirectResponse("/label?" + urlencode({"token": labelling.token}), status_code=303)
    if not labelling.allows(request.query_params.get("token")):
        return Response(
            "labelling needs the write token inquitree view --label printed (open the link it gave)",
            status_code=403,
            media_type="text/plain",
        )
    with labelling.lock:
        session = labelling.session()
        session.refresh()
        left = session.left()
        values: dict[str, Any] = {
            "sample": session.sample,
            "labeller": session.labeller,
            "total": len(session.items),
            "done": len(session.items) - len(left),
            "token": labelling.token,
            "kind": session.kind,
        }
        if left:
            n, item = left[0]
            values.update(n=n, key=_key(item), shown=session.screen_of(item))
        else:
            values.update(agreement=session.agreement())
    return viewer.page("label.html.j2", **values)
