"""The viewer's routes: parse the request, make one core call, render a template.

Invariants:
- writes go through ``Store`` methods; reads through ``Store``, ``stats``, ``browse``,
  ``sessions``, ``snapshot`` and ``search`` (no SQL here);
- each request opens its own ``Store`` in a worker thread, so requests share no connection;
- every POST passes ``security.check_request`` (middleware) and the CSRF token check, then
  redirects (303) so a reload never repeats a write;
- a ``CtxmodeError`` renders its message on a 400 page (404 for ``NotFound``); anything else
  renders a generic 500 page and the traceback goes to the server log only;
- templates autoescape everything (see ``templating``).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ctxmode import stats
from ctxmode.core import config
from ctxmode.core.errors import CtxmodeError, InvalidInput, NotFound
from ctxmode.core.models import CONTEXT_TYPES, RELATIONS, SCOPES, TASK_STATUSES, Context
from ctxmode.store import EVENT_CATEGORIES, Store
from ctxmode.web import forms, i18n
from ctxmode.web.charts import bar_chart
from ctxmode.web.security import CSRF_FIELD, Forbidden, GuardMiddleware, Scope, check_token
from ctxmode.web.templating import make_env

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
#: The viewer listens here and nowhere else.
HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: Rows per page of the contexts list.
PAGE_SIZE = 100
#: Characters of hits a search page may show (the core default suits agents, not people).
SEARCH_BUDGET = 100_000
#: Request bodies above this are refused (a context is at most 100k characters).
MAX_BODY_BYTES = 2 * 1024 * 1024
#: Messages shown after a redirect, keyed by the ``done`` query parameter.
DONE_MESSAGES = {
    "created": "Context created.",
    "updated": "Context saved.",
    "superseded": "Context superseded.",
    "deleted": "Context deleted.",
    "shared": "Context shared: commit its file under .context/shared to share it.",
    "unshared": "Context no longer shared: commit the deleted file.",
    "status": "Task status changed.",
    "refreshed": "The linked files' current content is accepted: not stale.",
    "task": "Task created.",
    "accepted": "Candidate stored as a context.",
    "rejected": "Candidate rejected: it is not proposed again.",
}

log = logging.getLogger("ctxmode.web")
T = TypeVar("T")


@dataclass(frozen=True)
class ViewerConfig:
    """What the app serves: one store file, its project root and the per-process secret."""

    db_path: Path
    root: Path
    csrf_token: str
    port: int | None = None


@dataclass(frozen=True)
class SnapshotView:
    """A resume snapshot as the sessions page shows it: stored, or built now for preview."""

    text: str
    bytes: int
    stored: bool
    consumed: bool
    created_at: int | None


# -- the application -------------------------------------------------------------------------


#: The fields of the new-context form, shown again as typed after an error.
_FORM_FIELDS = ("type", "content", "scope", "session", "task", "files", "relation", "owner",
                "metadata")  # fmt: skip


def _metadata_json(metadata: dict[str, Any]) -> str:
    """Metadata for people to read and edit: ctxmode's own ``shared_id`` left out."""
    shown = {k: v for k, v in metadata.items() if k != "shared_id"}
    return json.dumps(shown, indent=2, ensure_ascii=False) if shown else ""


class Viewer:
    """Route handlers bound to one store; built by ``create_app``."""

    def __init__(self, cfg: ViewerConfig) -> None:
        self.cfg = cfg
        self.env = make_env()
        self.env.globals["csrf_field"] = CSRF_FIELD
        self.env.globals["csrf_token"] = cfg.csrf_token
        self.env.globals["db_path"] = str(cfg.db_path)

    # plumbing

    def _with_store(self, work: Callable[[Store], T]) -> T:
        with Store.open(self.cfg.db_path, root=self.cfg.root, create=False) as store:
            store.refresh_shared()  # teammates' shared files (exchange.team)
            result = work(store)
            store.refresh_shared()  # this request's edits of shared items, to their files
            return result

    async def run(self, work: Callable[[Store], T]) -> T:
        return await run_in_threadpool(self._with_store, work)

    def render(
        self, request: Request | None, name: str, data: dict[str, Any], status: int = 200
    ) -> HTMLResponse:
        done = request.query_params.get("done", "") if request is not None else ""
        lang = i18n.language(request.headers.get("accept-language", "") if request else "")
        t = i18n.translator(lang)
        notice = DONE_MESSAGES.get(done, "")
        page = self.env.get_template(name).render(
            request_path=request.url.path if request is not None else "",
            notice=t(notice) if notice else "",
            lang=lang,
            tr=t,
            **data,
        )
        return HTMLResponse(page, status_code=status)

    async def form(self, request: Request) -> FormData:
        """The POSTed form, after the CSRF token check."""
        # Parts up to the body cap: a field between Starlette's 1 MB default and the cap would
        # get a generic 400 instead of the content limit's message.
        form = await request.form(max_part_size=MAX_BODY_BYTES)
        check_token(self.cfg.csrf_token, form.get(CSRF_FIELD))
        return form

    # pages

    async def overview(self, request: Request) -> Response:
        def work(store: Store) -> dict[str, Any]:
            st = stats.collect(store)
            last = store.session_snapshot(prefer="stored")
            return {
                "stats": st,
                "chart": bar_chart(st.events_per_day),
                "recent_sessions": store.sessions(limit=5),
                "last_snapshot": last if last.stored else None,
                "budget": store.settings.snapshot_bytes,
            }

        return self.render(request, "overview.html", await self.run(work))

    async def contexts(self, request: Request) -> Response:
        q = request.query_params
        filters = {
            "type": q.get("type", ""),
            "scope": q.get("scope", ""),
            "owner": q.get("owner", ""),
            "task": q.get("task", ""),
            "file": q.get("file", ""),
            "stale": q.get("stale", ""),
            "live": q.get("live", ""),
            "q": q.get("q", "").strip(),
        }
        page = max(1, forms.opt_int(q.get("page"), "page") or 1)
        task_id = forms.opt_int(filters["task"], "task")
        stale = forms.stale_flag(filters["stale"])

        def work(store: Store) -> dict[str, Any]:
            args: dict[str, Any] = {
                "context_type": filters["type"] or None,
                "scope": filters["scope"] or None,
                "owner": filters["owner"] or None,
                "task_id": task_id,
                "file_path": filters["file"] or None,
                "stale": stale,
                "include_superseded": not filters["live"],
            }
            if filters["q"]:
                ranked = _context_search(store, filters["q"])
                pool = {c.id: c for c in store.list_contexts(**args, limit=10_000)}
                rows = [pool[i] for i in ranked if i in pool]
                items = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE + 1]
            else:
                items = store.list_contexts(
                    **args, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE
                )
            return {
                "items": items[:PAGE_SIZE],
                "has_next": len(items) > PAGE_SIZE,
                "page": page,
                "filters": filters,
                "owners": store.owners(),
                "tasks": store.list_tasks(),
                "types": CONTEXT_TYPES,
                "scopes": SCOPES,
                "relations": RELATIONS,
            }

        return self.render(request, "contexts.html", await self.run(work))

    @staticmethod
    def _new_form_data(store: Store) -> dict[str, Any]:
        return {
            "tasks": store.list_tasks(),
            "types": CONTEXT_TYPES,
            "scopes": SCOPES,
            "relations": RELATIONS,
            "default_owner": store.default_owner,
            "values": {},
            "error": "",
        }

    async def context_new(self, request: Request) -> Response:
        return self.render(request, "context_new.html", await self.run(self._new_form_data))

    async def context_create(self, request: Request) -> Response:
        form = await self.form(request)
        try:
            return await self._create(form)
        except CtxmodeError as exc:
            # The form again, as typed, with what to fix: nothing typed is lost.
            values = {k: forms.text(form, k) for k in _FORM_FIELDS}
            data = await self.run(lambda store: self._new_form_data(store))
            status = 404 if isinstance(exc, NotFound) else 400
            return self.render(
                request, "context_new.html", {**data, "values": values, "error": str(exc)}, status
            )

    async def _create(self, form: FormData) -> Response:
        task_id = forms.opt_int(forms.text(form, "task"), "task")
        metadata = forms.metadata(forms.text(form, "metadata"))

        def work(store: Store) -> int:
            result = store.write_context(
                forms.text(form, "type"),
                forms.text(form, "content"),
                task_id=task_id,
                file_paths=forms.paths(forms.text(form, "files")),
                relation=forms.text(form, "relation") or "related",
                scope=forms.text(form, "scope") or "global",
                owner=forms.text(form, "owner").strip() or None,
                metadata=metadata,
                session_id=forms.text(form, "session").strip() or None,
            )
            return result.id

        new_id = await self.run(work)
        return RedirectResponse(f"/contexts/{new_id}?done=created", status_code=303)

    async def context_detail(self, request: Request) -> Response:
        context_id = int(request.path_params["id"])
        data = await self.run(lambda store: self._detail_data(store, context_id))
        return self.render(request, "context_detail.html", {**data, "values": {}, "error": ""})

    @staticmethod
    def _detail_data(store: Store, context_id: int) -> dict[str, Any]:
        detail = store.context_detail(context_id)
        history: list[Context] = []
        for cid in detail.history:
            try:
                history.append(store.get_context(cid))
            except NotFound:
                continue
        tasks = {t.id: t for t in store.list_tasks()}
        return {
            "d": detail,
            "c": detail.context,
            "shared_file": store.shared_file(context_id),
            "history": history,
            "task_names": {tid: t.name for tid, t in tasks.items()},
            "tasks": list(tasks.values()),
            "types": CONTEXT_TYPES,
            "metadata_json": _metadata_json(detail.context.metadata),
        }

    async def context_refresh(self, request: Request) -> Response:
        """Accept the linked files as they are now: the text still holds (not stale)."""
        context_id = int(request.path_params["id"])
        await self.form(request)
        await self.run(lambda store: store.accept_file_content(context_id))
        return RedirectResponse(f"/contexts/{context_id}?done=refreshed", status_code=303)

    async def context_edit(self, request: Request) -> Response:
        context_id = int(request.path_params["id"])
        form = await self.form(request)

        def work(store: Store) -> None:
            metadata = forms.metadata(forms.text(form, "metadata")) or {}
            # The sharing id is ctxmode's own bookkeeping: not shown, so kept as it was.
            shared_id = store.get_context(context_id).metadata.get("shared_id")
            if shared_id is not None:
                metadata["shared_id"] = shared_id
            store.update_context(
                context_id,
                content=forms.text(form, "content"),
                type=forms.text(form, "type") or None,
                metadata=metadata,
            )

        try:
            await self.run(work)
        except NotFound:
            raise
        except CtxmodeError as exc:
            # The page again with the edit form as typed and what to fix beside it.
            values = {k: forms.text(form, k) for k in ("type", "content", "metadata")}
            data = await self.run(lambda store: self._detail_data(store, context_id))
            return self.render(
                request, "context_detail.html", {**data, "values": values, "error": str(exc)}, 400
            )
        return RedirectResponse(f"/contexts/{context_id}?done=updated", status_code=303)

    async def context_supersede(self, request: Request) -> Response:
        context_id = int(request.path_params["id"])
        form = await self.form(request)
        by = forms.opt_int(forms.text(form, "by"), "superseding context id")
        task_id = forms.opt_int(forms.text(form, "task"), "task")

        def work(store: Store) -> int:
            if by is not None:
                store.supersede(context_id, by)
                return by
            old = store.get_context(context_id)
            result = store.write_context(
                forms.text(form, "type") or old.type,
                forms.text(form, "content"),
                task_id=task_id,
                file_paths=forms.paths(forms.text(form, "files")),
                scope=old.scope,
                owner=old.owner,
                session_id=old.session_id,
                supersedes=context_id,
            )
            return result.id

        target = await self.run(work)
        return RedirectResponse(f"/contexts/{target}?done=superseded", status_code=303)

    async def context_share(self, request: Request) -> Response:
        context_id = int(request.path_params["id"])
        await self.form(request)
        await self.run(lambda store: store.share([context_id]))
        return RedirectResponse(f"/contexts/{context_id}?done=shared", status_code=303)

    async def context_unshare(self, request: Request) -> Response:
        context_id = int(request.path_params["id"])
        await self.form(request)
        await self.run(lambda store: store.unshare(context_id))
        return RedirectResponse(f"/contexts/{context_id}?done=unshared", status_code=303)

    async def context_delete_confirm(self, request: Request) -> Response:
        context_id = int(request.path_params["id"])
        c = await self.run(lambda store: store.get_context(context_id))
        return self.render(request, "context_delete.html", {"c": c})

    async def context_delete(self, request: Request) -> Response:
        context_id = int(request.path_params["id"])
        form = await self.form(request)
        if forms.text(form, "confirm") != "yes":
            raise InvalidInput("deleting needs the confirmation step; use the Delete button")
        await self.run(lambda store: store.delete_context(context_id))
        return RedirectResponse("/contexts?done=deleted", status_code=303)

    async def tasks(self, request: Request) -> Response:
        def work(store: Store) -> dict[str, Any]:
            tasks = store.list_tasks()
            return {
                "tasks": tasks,
                "depths": store.task_depths(tasks),
                "contexts": {
                    t.id: store.list_contexts(task_id=t.id, include_superseded=False, limit=20)
                    for t in tasks
                },
                "files": {t.id: store.task_files(t.id) for t in tasks},
                "counts": store.task_context_counts(),
                "statuses": TASK_STATUSES,
            }

        return self.render(request, "tasks.html", await self.run(work))

    async def task_create(self, request: Request) -> Response:
        form = await self.form(request)
        parent = forms.opt_int(forms.text(form, "parent"), "parent task")
        await self.run(lambda store: store.create_task(forms.text(form, "name"), parent))
        return RedirectResponse("/tasks?done=task", status_code=303)

    async def task_status(self, request: Request) -> Response:
        task_id = int(request.path_params["id"])
        form = await self.form(request)
        await self.run(lambda store: store.update_task(task_id, forms.text(form, "status")))
        return RedirectResponse(f"/tasks?done=status#task-{task_id}", status_code=303)

    async def sessions(self, request: Request) -> Response:
        q = request.query_params
        chosen = [c for c in q.getlist("category") if c]
        wanted = q.get("session", "").strip()
        limit = min(max(1, forms.opt_int(q.get("limit"), "limit") or 200), 2000)

        def work(store: Store) -> dict[str, Any]:
            listed = store.sessions(limit=50)
            imported = store.imported_sessions()
            session_id = wanted or (listed[0].session_id if listed else None)
            events: list[Any] = []
            snap: SnapshotView | None = None
            if session_id:
                # The stored snapshot is what was (or will be) injected; else a preview.
                events = store.events(session_id, chosen or None, limit=limit)
                s = store.session_snapshot(session_id, prefer="stored")
                snap = SnapshotView(s.xml, s.bytes, s.stored, s.consumed, s.created_at)
            elif chosen:
                store.events("", chosen, limit=1)  # an unknown category is still an error
            return {
                "sessions": listed,
                "imported": imported,
                "session_id": session_id,
                "events": events,
                "categories": EVENT_CATEGORIES,
                "chosen": chosen,
                "snap": snap,
                "budget": store.settings.snapshot_bytes,
            }

        return self.render(request, "sessions.html", await self.run(work))

    async def inbox(self, request: Request) -> Response:
        def work(store: Store) -> dict[str, Any]:
            from ctxmode.core.models import CONTEXT_TYPES

            return {"candidates": store.candidates(limit=200), "types": CONTEXT_TYPES}

        return self.render(request, "inbox.html", await self.run(work))

    async def inbox_accept(self, request: Request) -> Response:
        candidate_id = int(request.path_params["id"])
        form = await self.form(request)
        type_ = forms.text(form, "type") or None
        files = forms.paths(forms.text(form, "files")) or None

        def work(store: Store) -> dict[str, Any]:
            return store.accept_candidate(candidate_id, type_=type_, files=files)

        done = await self.run(work)
        return RedirectResponse(f"/contexts/{done['context_id']}?done=accepted", status_code=303)

    async def inbox_reject(self, request: Request) -> Response:
        candidate_id = int(request.path_params["id"])
        await self.form(request)

        def work(store: Store) -> None:
            store.reject_candidate(candidate_id)

        await self.run(work)
        return RedirectResponse("/inbox?done=rejected", status_code=303)

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()

        def work(store: Store) -> dict[str, Any]:
            result = store.search(query, limit=50, budget_chars=SEARCH_BUDGET) if query else None
            return {"query": query, "result": result}

        return self.render(request, "search.html", await self.run(work))

    async def item(self, request: Request) -> Response:
        """The full text of one search hit (``doc:12``, ``evt:3``, ``task:4``)."""
        key = str(request.path_params["key"])

        def work(store: Store) -> dict[str, Any]:
            (found,) = store.get_items([key], budget_chars=200_000)
            return {"item": found, "query": request.query_params.get("q", "")}

        return self.render(request, "item.html", await self.run(work))

    # errors

    async def on_ctxmode_error(self, request: Request, exc: Exception) -> Response:
        status = 404 if isinstance(exc, NotFound) else 400
        return self.render(request, "error.html", {"status": status, "message": str(exc)}, status)

    async def on_forbidden(self, request: Request, exc: Exception) -> Response:
        return self.render(request, "error.html", {"status": 403, "message": str(exc)}, 403)

    async def on_http_error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = {404: "No such page.", 405: "This page does not accept that method."}.get(
            status, "The request could not be served."
        )
        return self.render(request, "error.html", {"status": status, "message": message}, status)

    async def on_crash(self, request: Request, exc: Exception) -> Response:
        log.exception("viewer request failed: %s %s", request.method, request.url.path)
        message = (
            "Something went wrong on the server; the terminal running `ctxmode ui` has details."
        )
        return self.render(request, "error.html", {"status": 500, "message": message}, 500)

    async def forbidden_page(self, scope: Scope, exc: Forbidden) -> tuple[int, bytes]:
        page = self.env.get_template("error.html").render(
            request_path="", notice="", status=403, message=str(exc), lang="en", tr=str
        )
        return 403, page.encode()


def _context_search(store: Store, query: str) -> list[int]:
    """Context ids matching ``query`` in the full-text index, best first."""
    result = store.search(
        query,
        refresh=False,
        limit=config.SEARCH_MAX_LIMIT,
        source="knowledge",
        budget_chars=SEARCH_BUDGET,
    )
    ids: list[int] = []
    for hit in result.hits:
        prefix, _, number = hit.id.partition(":")
        if hit.kind == "context" and prefix == "ctx" and number.isdigit():
            ids.append(int(number))
    return ids


def create_app(
    db_path: str | Path,
    root: str | Path | None = None,
    *,
    port: int | None = None,
    csrf_token: str | None = None,
) -> Starlette:
    """The viewer over the store at ``db_path`` (it must exist: ``ctxmode init`` creates it).

    ``port`` fixes the port the Host/Origin checks expect; by default it is read from the
    listening socket. ``csrf_token`` defaults to a fresh per-process secret.
    """
    path = Path(db_path).expanduser().absolute()
    cfg = ViewerConfig(
        db_path=path,
        root=Path(root).resolve() if root else config.root_for_db(path),
        csrf_token=csrf_token or secrets.token_urlsafe(32),
        port=port,
    )
    v = Viewer(cfg)
    routes = [
        Route("/", v.overview),
        Route("/contexts", v.contexts, methods=["GET"]),
        Route("/contexts", v.context_create, methods=["POST"]),
        Route("/contexts/new", v.context_new),
        Route("/contexts/{id:int}", v.context_detail),
        Route("/contexts/{id:int}/edit", v.context_edit, methods=["POST"]),
        Route("/contexts/{id:int}/refresh", v.context_refresh, methods=["POST"]),
        Route("/contexts/{id:int}/supersede", v.context_supersede, methods=["POST"]),
        Route("/contexts/{id:int}/share", v.context_share, methods=["POST"]),
        Route("/contexts/{id:int}/unshare", v.context_unshare, methods=["POST"]),
        Route("/contexts/{id:int}/delete", v.context_delete_confirm, methods=["GET"]),
        Route("/contexts/{id:int}/delete", v.context_delete, methods=["POST"]),
        Route("/tasks", v.tasks, methods=["GET"]),
        Route("/tasks", v.task_create, methods=["POST"]),
        Route("/tasks/{id:int}/status", v.task_status, methods=["POST"]),
        Route("/sessions", v.sessions),
        Route("/search", v.search),
        Route("/inbox", v.inbox),
        Route("/inbox/{id:int}/accept", v.inbox_accept, methods=["POST"]),
        Route("/inbox/{id:int}/reject", v.inbox_reject, methods=["POST"]),
        Route("/items/{key}", v.item),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    return Starlette(
        debug=False,
        routes=routes,
        middleware=[Middleware(GuardMiddleware, port=port, on_forbidden=v.forbidden_page)],
        exception_handlers={
            CtxmodeError: v.on_ctxmode_error,
            Forbidden: v.on_forbidden,
            HTTPException: v.on_http_error,
            Exception: v.on_crash,
        },
        max_body_size=MAX_BODY_BYTES,
    )


def serve(
    db_path: str | Path,
    root: str | Path | None = None,
    *,
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the viewer on 127.0.0.1:``port`` until interrupted (port 0: the OS picks one)."""
    import uvicorn

    if not 0 <= port <= 65535:
        raise InvalidInput(f"port {port} is outside 0..65535")
    app = create_app(db_path, root)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host=HOST, port=port, log_level="warning", access_log=False, server_header=False
        )
    )

    def announce() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if not server.started:
            return
        sockets = [s for srv in server.servers for s in srv.sockets]
        bound = int(sockets[0].getsockname()[1]) if sockets else port
        url = f"http://{HOST}:{bound}/"
        if on_ready is not None:
            on_ready(url)
        if open_browser:
            webbrowser.open(url)

    threading.Thread(target=announce, name="ctxmode-ui-announce", daemon=True).start()
    server.run()
