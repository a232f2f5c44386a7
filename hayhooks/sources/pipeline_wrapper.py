"""hayhooks pipeline `sources`: list or remove the laws the caller indexed."""

from typing import Any, Literal

from hayhooks import BasePipelineWrapper

from pipelines.serving.auth import current_principal, index_owner
from pipelines.serving.engine import get_engine
from pipelines.serving.errors import http_error, http_errors

MAX_LAW_IDS = 100


class PipelineWrapper(BasePipelineWrapper):
    """
    The laws an owner indexed through `/index/run`, and their removal (`LexHay.sources` / `LexHay.remove`), on the
    server's shared engine. The owner is the key's own scope, as when it indexed (a gateway key may name one of its
    tenant's users in `access`); removing runs alone, like indexing. Writer keys act on their own tenant / group /
    user scope; the public statutes (`scope: global`) need an admin key. Another owner's copy of a law is never
    listed or touched.
    """

    skip_mcp = True  # a destructive action: not an MCP tool

    def setup(self) -> None:
        self.engine = get_engine()

    def run_api(
        self,
        action: Literal["list", "remove"] = "list",
        law_ids: list[str] | None = None,
        scope: str | None = None,
        access: dict[str, Any] | None = None,
    ) -> dict:
        """
        List the laws this key indexed, or remove some of them.

        :param action: `list` (the default) or `remove`.
        :param law_ids: With `remove`: the laws' ids, as `list` gives them (at most 100).
        :param scope: The scope they were indexed into: tenant, group or user (default as for indexing: user with a
            user_id, else tenant); global (the public statutes) for admin keys only.
        :param access: Gateway keys only: the owner, within the gateway's tenant (as on `/index/run`).
        :returns: `list`: `sources`, one row per law (law_id, law_short, law_title, collection, country, source,
            articles, parents). `remove`: `removed` (chunks deleted per law id), `missing` (law ids this owner does
            not hold), `edges` (legal graph edges deleted).
        """
        with http_errors():  # a malformed body `access` is a 422
            owner, scope = index_owner(current_principal(), access, scope)
        if action == "list":
            if law_ids:
                raise http_error(422, "law_ids are for action 'remove'")
            with http_errors(), self.engine.reading() as lex:
                return {"sources": lex.sources(access=owner, scope=scope)}
        if not law_ids:
            raise http_error(422, "give the law_ids to remove (see action 'list')")
        if len(law_ids) > MAX_LAW_IDS:
            raise http_error(422, f"{len(law_ids)} law_ids in one request, at most {MAX_LAW_IDS}")
        with http_errors(), self.engine.writing() as lex:
            return lex.remove(law_ids, access=owner, scope=scope)
