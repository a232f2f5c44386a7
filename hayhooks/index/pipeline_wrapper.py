"""hayhooks pipeline `index`: index uploaded statute files and/or files already on the server."""

import json

from fastapi import UploadFile
from hayhooks import BasePipelineWrapper

from pipelines.serving.auth import current_principal
from pipelines.serving.engine import get_engine
from pipelines.serving.errors import http_error
from pipelines.serving.uploads import index_files


class PipelineWrapper(BasePipelineWrapper):
    """
    The indexing pipeline (`yaml/indexing.yaml`) through `LexHay.index`, on the server's shared engine; indexing
    runs alone (retrieve / ask requests wait for it). Multipart form: `files` (uploads), `paths` (server-side files
    or folders under LEXHAY_INDEX_ROOTS, admin keys only), `collection`, `access` (a JSON object, gateway keys
    only), `scope`. Writer keys index into their own scope; `global` needs an admin key.
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
        :param paths: Files or folders on the server to index (admin keys, under LEXHAY_INDEX_ROOTS; off by default).
        :param collection: Logical collection of these files (normativa by default; sentencias, criterios).
        :param access: Gateway keys only: the owner of these documents as a JSON object (tenant_id, user_id,
            group_ids, case_id) within the gateway's tenant. Other callers index into their key's own scope.
        :param scope: Who sees them: tenant, group or user (default user with a user_id, else tenant); global (the
            public documents) for admin keys only.
        :returns: files, articles, parents, children, written, pruned, seconds and per-file errors.
        """
        owner = None
        if access:
            try:
                owner = json.loads(access)
            except json.JSONDecodeError as error:
                raise http_error(422, f"access must be a JSON object: {error.msg}") from None
        return index_files(self.engine, current_principal(), files, paths, collection=collection, access=owner,
                           scope=scope)
