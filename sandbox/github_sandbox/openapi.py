"""GitHub's REST description as the sandbox's router and judge: match paths, validate both directions with openapi-core.

The description is read at start from the pinned `@octokit/openapi` package (sandbox/github_sandbox/upstream.py):
`api.github.com` by default, or one of the GitHub Enterprise descriptions it ships (`ghes-3.19`, `ghec`),
then trimmed to the operations the sandbox serves (sandbox/github_sandbox/trim.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from openapi_core import Config, OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_schema_validator import OAS30Validator
from werkzeug.datastructures import Headers, ImmutableMultiDict

from . import upstream
from .trim import OPERATIONS, TrimError, trim

DEFAULT_API = "api.github.com"
# Path parameters whose real values carry slashes (file paths, refs like heads/feature, "a...b").
_SLASHED_PARAMS = {"path": ".*", "ref": ".+", "branch": ".+", "basehead": ".+"}
_METHODS = ("get", "post", "patch", "put", "delete")


def _text(data: bytes, **parameters: str) -> str:
    return data.decode(parameters.get("charset", "utf-8"))


# GitHub's own text media types (a diff, a patch, a bare SHA) are strings in its description.
_TEXT_MEDIA_TYPES = {f"application/vnd.github.{kind}": _text for kind in ("diff", "patch", "sha")}


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    operation_id: str
    doc_url: str
    statuses: frozenset[str]
    regex: re.Pattern[str]


@dataclass(frozen=True)
class Problem:
    """One reason a request or response breaks the description (GitHub's validation-error item shape)."""

    field: str
    code: str
    message: str

    def as_error(self, resource: str) -> dict[str, str]:
        return {"resource": resource, "field": self.field, "code": self.code, "message": self.message}


class UnknownAPI(ValueError):
    """`--api` names a description the installed package does not ship."""


def available_apis() -> list[str]:
    """The descriptions the installed package ships (its `generated/NAME.json`, not the dereferenced copies)."""
    generated = upstream.package_dir(upstream.OPENAPI) / "generated"
    return sorted(p.name.removesuffix(".json") for p in generated.glob("*.json") if not p.name.endswith(".deref.json"))


def description_path(api: str = DEFAULT_API) -> Path:
    known = available_apis()
    if api not in known:
        raise UnknownAPI(f"unknown GitHub API description {api!r}; @octokit/openapi@"
                         f"{upstream.package_version(upstream.OPENAPI)} ships: {', '.join(known)}\n"
                         f"未知的 GitHub API 描述 {api!r}；已安装的 @octokit/openapi 提供：{'、'.join(known)}")
    return upstream.package_dir(upstream.OPENAPI) / "generated" / f"{api}.json"


@lru_cache(maxsize=4)
def load_spec(api: str = DEFAULT_API) -> dict[str, Any]:
    """The trimmed description of `api`, with the in-memory adjustments below (the package stays untouched)."""
    spec = _trimmed(api)
    drop_unresolvable_discriminators(spec)
    allow_null_in_nullable_enums(spec)
    accept_documented_bare_arrays(spec)
    require_documented_conclusion(spec)
    return spec


def _json_bodies(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            schema = (((op.get("requestBody") or {}).get("content") or {}).get("application/json") or {}).get("schema")
            if isinstance(schema, dict):
                out.append((f"#/paths/{path}/{method}/requestBody", schema))
    return out


def require_documented_conclusion(spec: dict[str, Any]) -> list[str]:
    """A check run sent with `status: completed` must carry a `conclusion`, as its description says in bold.

    GitHub's description enforces it (checks/update: `anyOf` [completed + required conclusion, other
    statuses]); octokit/openapi ships an older hand-written checks/create without it. The same `anyOf` is
    added where the rule is stated but not encoded. Returns the JSON pointers changed.
    """
    changed = []
    for pointer, schema in _json_bodies(spec):
        props = schema.get("properties") or {}
        said = (props.get("conclusion") or {}).get("description", "")
        statuses = (props.get("status") or {}).get("enum") or []
        if "Required if you provide `completed_at` or a `status` of `completed`" in said and "completed" in statuses \
                and "anyOf" not in schema and "oneOf" not in schema:
            schema["anyOf"] = [
                {"properties": {"status": {"enum": ["completed"]}}, "required": ["conclusion"]},
                {"properties": {"status": {"enum": [s for s in statuses if s != "completed"]}}},
            ]
            changed.append(pointer)
    return changed


def accept_documented_bare_arrays(spec: dict[str, Any]) -> list[str]:
    """Let a request body be the bare array that a property's own description says GitHub also takes.

    GitHub documents e.g. for issues/add-labels: "You can also pass an `array` of labels directly", and its
    body is `oneOf` [object with `labels`, the array itself]. octokit/openapi removes the array alternatives
    from request bodies (its SDKs send objects), but PyGithub sends the bare array, as GitHub allows. The
    property's schema becomes an alternative again. Returns the JSON pointers changed.
    """
    changed: list[str] = []
    for pointer, schema in _json_bodies(spec):
        if not isinstance(schema.get("oneOf"), list):
            continue
        for alt in list(schema["oneOf"]):
            for name, prop in (alt.get("properties") or {}).items():
                said = prop.get("description", "")
                if prop.get("type") == "array" and "pass an `array`" in said and "directly" in said \
                        and prop not in schema["oneOf"]:
                    schema["oneOf"].append(prop)
                    changed.append(f"{pointer}/{name}")
    return changed


def _trimmed(api: str) -> dict[str, Any]:
    """Trim once per package version and operation list; later starts read the small cached result."""
    source = description_path(api)
    key = hashlib.sha256(repr(OPERATIONS).encode()).hexdigest()[:12]
    cached = upstream.cache_dir() / "trimmed" / f"{api}-{upstream.package_version(upstream.OPENAPI)}-{key}.json"
    if cached.is_file():
        try:
            return json.loads(cached.read_text(encoding="utf-8"))
        except ValueError:
            pass  # a torn write from an older crash: trim again below
    try:
        spec = trim(json.loads(source.read_text(encoding="utf-8")))
    except TrimError as exc:
        raise UnknownAPI(f"{api}: {exc}\n{api}：该描述缺少沙箱所需的操作") from None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(spec), encoding="utf-8")
        os.replace(tmp, cached)  # atomic: parallel starts never read half a file
    except OSError:
        pass  # a read-only cache only costs the trim on every start
    return spec


def spec_host(spec: dict[str, Any]) -> tuple[str, str]:
    """(scheme://host, path prefix) of the description's first server, variables at their defaults.

    api.github.com has `https://api.github.com`; GHES has `{protocol}://{hostname}/api/v3`. Requests are
    presented to openapi-core as if sent there.
    """
    server = spec["servers"][0]
    url = server["url"]
    for name, var in (server.get("variables") or {}).items():
        url = url.replace("{" + name + "}", str(var["default"]))
    scheme, _, rest = url.partition("://")
    host, slash, prefix = rest.partition("/")
    return f"{scheme}://{host}", (slash + prefix).rstrip("/")


def allow_null_in_nullable_enums(node: Any, pointer: str = "#") -> list[str]:
    """Add null to the enum of schemas marked `nullable: true` (e.g. check-run and job `conclusion`).

    Under OpenAPI 3.0.3's clarified rule an enum without null forbids null even when nullable is true, yet
    GitHub returns `"conclusion": null` for every check run and job that is not completed; the description
    says nullable, so null is what it means. Returns the JSON pointers changed.
    """
    changed: list[str] = []
    if isinstance(node, dict):
        enum = node.get("enum")
        if node.get("nullable") is True and isinstance(enum, list) and None not in enum:
            enum.append(None)
            changed.append(pointer)
        for key, value in node.items():
            changed += allow_null_in_nullable_enums(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            changed += allow_null_in_nullable_enums(value, f"{pointer}/{i}")
    return changed


def drop_unresolvable_discriminators(node: Any, pointer: str = "#", root: Any = None) -> list[str]:
    """Remove discriminators that cannot work; the oneOf they sit on still says what GitHub means.

    Two occur in GitHub's description: checks/create's body (`discriminator: {propertyName: status}` without
    a mapping over inline schemas, so a resolver looks for #/components/schemas/<status value>), and
    repos/get-content's 200 response (its mapping sends "array" to content-directory, an array, which has
    no property to discriminate on). Returns the JSON pointers changed.
    """
    root = node if root is None else root
    changed: list[str] = []
    if isinstance(node, dict):
        disc = node.get("discriminator")
        alternatives = node.get("oneOf") or node.get("anyOf") or []
        if isinstance(disc, dict):
            inline = "mapping" not in disc and any("$ref" not in a for a in alternatives)
            targets = [_resolve(root, ref) for ref in (disc.get("mapping") or {}).values()]
            if inline or any(t.get("type", "object") != "object" for t in targets):
                del node["discriminator"]
                changed.append(pointer)
        for key, value in node.items():
            changed += drop_unresolvable_discriminators(value, f"{pointer}/{key}", root)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            changed += drop_unresolvable_discriminators(value, f"{pointer}/{i}", root)
    return changed


def _resolve(root: Any, ref: str) -> dict[str, Any]:
    node = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    out = []
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            out.append(f"(?P<{name}>{_SLASHED_PARAMS.get(name, '[^/]+')})")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out))


class Router:
    """Maps (method, raw path) to the description's operation; the most literal template wins."""

    def __init__(self, spec: dict[str, Any]):
        routes = []
        for template, item in spec["paths"].items():
            regex = _template_regex(template)
            for method in _METHODS:
                op = item.get(method)
                if op is None:
                    continue
                routes.append(Route(
                    method=method.upper(),
                    template=template,
                    operation_id=op["operationId"],
                    doc_url=(op.get("externalDocs") or {}).get("url", "https://docs.github.com/rest"),
                    statuses=frozenset(op["responses"]),
                    regex=regex,
                ))
        # A template with more literal text is more specific: /commits/{ref}/statuses before /commits/{ref}.
        self.routes = sorted(routes, key=lambda r: -len(re.sub(r"\{[^}]+\}", "", r.template)))
        self.by_operation = {r.operation_id: r for r in self.routes}

    def match(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """Return (route, raw path params, path_known). path_known is True when another method would match."""
        path_known = False
        for route in self.routes:
            m = route.regex.fullmatch(path)
            if m is None:
                continue
            if route.method == method:
                return route, m.groupdict(), True
            path_known = True
        return None, {}, path_known


class _Request:
    """The openapi-core request protocol, with the route already known (no path search)."""

    def __init__(self, route: Route, params: dict[str, str], query: list[tuple[str, str]],
                 headers: dict[str, str], body: bytes, content_type: str, server: tuple[str, str]):
        self.host_url = server[0]
        self.path = server[1] + route.template
        self.path_pattern = server[1] + route.template
        self.method = route.method.lower()
        self.body = body
        self.content_type = content_type
        self.parameters = RequestParameters(
            path=params, query=ImmutableMultiDict(query), header=Headers(headers), cookie=ImmutableMultiDict()
        )


class _Response:
    def __init__(self, status: int, content_type: str, headers: dict[str, str], data: bytes):
        self.status_code = status
        self.content_type = content_type
        self.headers = Headers(headers)
        self.data = data


def _problems(exc: BaseException) -> list[Problem]:
    """Flatten openapi-core's exception chain into GitHub-style error items."""
    found: list[Problem] = []
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        for err in getattr(e, "schema_errors", ()) or ():
            where = ".".join(str(p) for p in err.absolute_path) or _where(e)
            code = "missing_field" if err.validator == "required" else "invalid"
            found.append(Problem(where, code, _short(err.message)))
        for attr in ("__cause__", "__context__"):
            nxt = getattr(e, attr, None)
            if nxt is not None:
                todo.append(nxt)
    if not found:
        found.append(Problem(_where(exc), _code(exc), _short(str(exc) or type(exc).__name__)))
    return found


def _short(message: str, limit: int = 300) -> str:
    """jsonschema quotes the whole offending value; a 64 KiB comment must not come back in the error."""
    return message if len(message) <= limit else message[:limit] + "… (truncated)"


def _where(exc: BaseException) -> str:
    name = getattr(exc, "name", None)
    return str(name) if name else "body"


def _code(exc: BaseException) -> str:
    return "missing_field" if type(exc).__name__.startswith("Missing") else "invalid"


@dataclass
class Verdict:
    valid: bool
    problems: list[Problem] = field(default_factory=list)
    schema: str = "operation"  # "operation", or the component used for an undocumented error status

    def messages(self) -> list[str]:
        return [f"{p.field}: {p.message}" for p in self.problems]


class SpecValidator:
    """openapi-core validators built once; error bodies for statuses an operation leaves out use the error components."""

    def __init__(self, spec: dict[str, Any] | None = None, api: str = DEFAULT_API):
        self.api_name = api
        self.spec = spec or load_spec(api)
        self.server = spec_host(self.spec)
        # GitHub's description is validated upstream before it is published; re-validating costs seconds per start.
        self.api = OpenAPI.from_dict(self.spec, config=Config(
            spec_validator_cls=None, extra_media_type_deserializers=_TEXT_MEDIA_TYPES))
        self.router = Router(self.spec)
        self.source = {"api": api, "package": upstream.OPENAPI,
                       "version": upstream.package_version(upstream.OPENAPI)}
        self._request_validator = self.api.request_validator
        self._response_validator = self.api.response_validator
        schemas = self.spec["components"]["schemas"]
        self._error_validators = {
            "basic-error": OAS30Validator(schemas["basic-error"]),
            "validation-error": OAS30Validator(schemas["validation-error"]),
        }

    def check_request(self, route: Route, params: dict[str, str], query: list[tuple[str, str]],
                      headers: dict[str, str], body: bytes, content_type: str) -> Verdict:
        req = _Request(route, params, query, headers, body, content_type, self.server)
        problems: list[Problem] = []
        for error in self._request_validator.iter_errors(req):
            problems.extend(_problems(error))
        return Verdict(not problems, problems)

    def check_response(self, route: Route, params: dict[str, str], query: list[tuple[str, str]],
                       status: int, content_type: str, headers: dict[str, str], data: bytes) -> Verdict:
        if str(status) not in route.statuses:
            return self.check_error_body(status, data)
        req = _Request(route, params, query, {}, b"", "", self.server)
        resp = _Response(status, content_type, headers, data)
        problems: list[Problem] = []
        for error in self._response_validator.iter_errors(req, resp):
            problems.extend(_problems(error))
        return Verdict(not problems, problems)

    def check_error_body(self, status: int, data: bytes) -> Verdict:
        """Statuses the description does not list for an operation (GitHub's description is not exhaustive
        about 401/403/404/422): the body must still be one of GitHub's error shapes."""
        if status < 400:
            return Verdict(False, [Problem("status", "invalid", f"status {status} is not described for this operation")])
        name = "validation-error" if status == 422 else "basic-error"
        try:
            body = json.loads(data)
        except ValueError as exc:
            return Verdict(False, [Problem("body", "invalid", f"not JSON: {exc}")], name)
        errors = [Problem(".".join(map(str, e.absolute_path)) or "body", "invalid", _short(e.message))
                  for e in self._error_validators[name].iter_errors(body)]
        return Verdict(not errors, errors, name)
