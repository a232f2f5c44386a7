"""hayhooks pipeline `index`: index uploaded statute files and/or files already on the server."""

import json
from typing import Any

from fastapi import UploadFile
from hayhooks import BasePipelineWrapper

from pipelines.serve import get_engine, http_error, index_files


class PipelineWrapper(BasePipelineWrapper):
    """
    The indexing pipeline (`yaml/indexing.yaml`) through `LexHay.index`, on the server's shared engine; indexing
    runs alone (retrieve / ask requests wait for it). Multipart form: `files` (uploads), `paths` (server-side files
    or folders under LEXHAY_INDEX_ROOTS), `collection`, `access` (a JSON object), `scope`.
    """

    skip_mcp = True  # uploads: not an MCP tool

    def setup(self) -> None:
        self.engine = get_engine()

    def run_api(
        self,
        files: list[UploadFile] | None = None,
        paths: list[str] | None = None,
        collection: str | None = None,
        access: str | None = None,
        scope: str | None = None,
    ) -> dict:
        """
        Index statute files: Markdown with YAML front matter, Brazilian Markdown, plain text or PDF.

        :param files: Files to upload and index (the file name's suffix gives the type: .md, .markdown, .txt, .pdf).
        :param paths: Files or folders on the server to index (under LEXHAY_INDEX_ROOTS, default its working dir).
        :param collection: Logical collection of these files (normativa by default; sentencias, criterios).
        :param access: Owner of these documents as a JSON object: keys among tenant_id, user_id, group_ids, case_id
            (none = global documents, visible to everyone).
        :param scope: Who sees them: global, tenant, group or user (default user with a user_id, else tenant).
        :returns: files, articles, parents, children, written, pruned, seconds and per-file errors.
        """
        known = self.engine.lex.settings.collections
        if collection is not None and collection not in known:
            raise http_error(422, f"unknown collection {collection!r}; configured: {sorted(known)}")
        owner = None
        if access:
            try:
                owner = json.loads(access)
            except json.JSONDecodeError as error:
                raise http_error(422, f"access must be a JSON object: {error.msg}") from None
        kwargs: dict[str, Any] = {"collection": collection, "access": owner, "scope": scope}
        return index_files(self.engine, files, paths, **kwargs)
