"""
Indexing over HTTP: uploaded files and server-side `paths`.

Uploads are written to a private temporary folder, one subfolder per file (the file name, which names the law
when there is no front matter, is kept). The request's size and file count are bounded by the guard
(`pipelines.serving.guard`) before anything is spooled.

Server-side `paths` are off unless `LEXHAY_INDEX_ROOTS` names the folders they may come from, and only admin
callers may use them. Every file a folder expands to is resolved again (symlinks followed) and must still lie
under a root: a link that escapes one refuses the whole request (403), so nothing outside the roots is ever read.
"""

import tempfile
from pathlib import Path
from typing import Any

from pipelines.sdk import INDEXED_SUFFIXES, expand_paths
from pipelines.serving.auth import Principal, index_owner
from pipelines.serving.config import server_settings
from pipelines.serving.engine import Engine
from pipelines.serving.errors import http_error, http_errors


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def checked_paths(paths: list[str], principal: Principal) -> list[Path]:
    """
    The files to index for server-side `paths`, each resolved and under an index root.

    :raises HTTPException: 403 when `paths` are disabled, the caller is not admin, or a path or an expanded file
        (through a symlink) lies outside the roots; 404 for missing paths; 422 for malformed ones.
    """
    roots = server_settings().index_root_list
    if not roots:
        raise http_error(403, "indexing server-side paths is disabled on this server (set LEXHAY_INDEX_ROOTS)")
    if not principal.may("admin"):
        raise http_error(403, "only admin keys may index server-side paths")
    if not isinstance(paths, list) or not all(isinstance(p, str) and p.strip() for p in paths):
        raise http_error(422, "paths must be non-empty strings")
    given = [Path(raw.strip()).resolve() for raw in paths]
    outside = [raw for raw, path in zip(paths, given, strict=True) if not _under(path, roots)]
    if outside:
        raise http_error(403, f"paths outside the folders this server may index (LEXHAY_INDEX_ROOTS): {outside}")
    missing = [raw for raw, path in zip(paths, given, strict=True) if not path.exists()]
    if missing:
        raise http_error(404, f"paths not found: {missing}")
    files = [f.resolve() for f in expand_paths(given)]
    escaping = [str(f) for f in files if not _under(f, roots)]
    if escaping:
        raise http_error(403, f"files that resolve outside LEXHAY_INDEX_ROOTS (symlinks): {escaping[:5]}")
    return files


def save_uploads(uploads: list[Any], folder: Path) -> dict[Path, str]:
    """
    Writes uploaded files (FastAPI `UploadFile`s) under `folder`, each with its own name; saved path -> the name the
    client gave. 415 for an unsupported file type, 422 for a missing file name.
    """
    saved: dict[Path, str] = {}
    for n, upload in enumerate(uploads):
        name = Path(upload.filename or "").name
        if not name:
            raise http_error(422, "every uploaded file needs a file name (its suffix gives its type)")
        if Path(name).suffix.lower() not in INDEXED_SUFFIXES:
            raise http_error(415, f"{name}: unsupported file type; supported: {', '.join(INDEXED_SUFFIXES)}")
        target = folder / str(n) / name  # one folder per file: the file name (the law id without front matter) stays
        target.parent.mkdir(parents=True)
        with open(target, "wb") as out:
            while chunk := upload.file.read(1 << 20):
                out.write(chunk)
        saved[target] = name
    return saved


def index_files(engine: Engine, principal: Principal, uploads: list[Any] | None, paths: list[str] | None, *,
                collection: str | None = None, access: Any = None, scope: str | None = None) -> dict[str, Any]:
    """
    Indexes uploaded files and server-side paths for `principal`; the report as JSON, sources named as the client
    named them.

    The owner of the documents is the principal's own scope (`auth.index_owner`). Files that fail are reported in
    `errors` and the others are indexed; when nothing could be indexed the answer is a 422 carrying the report.
    """
    uploads = [u for u in uploads or [] if u is not None]
    if not uploads and not paths:
        raise http_error(422, "give files to upload (multipart field `files`) and/or server-side `paths`")
    with http_errors():  # a malformed body `access` is a 422
        owner, scope = index_owner(principal, access, scope)
    files = checked_paths(paths, principal) if paths else []
    if len(uploads) > server_settings().max_files:
        raise http_error(413, f"{len(uploads)} files in one request, at most {server_settings().max_files}")
    with tempfile.TemporaryDirectory(prefix="lexhay-upload-") as tmp:
        names = save_uploads(uploads, Path(tmp))
        sources = [*names, *files]
        if not sources:
            raise http_error(422, f"no indexable files ({', '.join(INDEXED_SUFFIXES)}) in {paths}")
        with http_errors(), engine.writing() as lex:
            report = lex.index(sources, collection=collection, access=owner, scope=scope)
        errors = [{**e, "source": names.get(Path(e.get("source", "")), e.get("source"))} for e in report.errors]
    result = {
        "files": report.files, "articles": report.articles, "parents": report.parents, "children": report.children,
        "written": report.written, "pruned": report.pruned, "unchanged": report.unchanged,
        "seconds": round(report.seconds, 3), "errors": errors,
    }
    if errors and report.written == 0:
        raise http_error(422, {"message": "no file could be indexed", **result})
    return result
