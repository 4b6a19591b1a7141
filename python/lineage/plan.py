"""The plan JSON written by the shim's ``io.ushas.spark.PlanWriter`` (format ``ushas-plan``,
documented in ``docs/internals/plan-json.md``), parsed into typed Python nodes.

Nodes and expressions arrive in post-order in flat arrays, so parsing is one linear loop with
no recursion (plans 10^4 nodes deep parse fine)."""
from __future__ import annotations

import gc
import os
import socket
import time
import weakref
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Union

import orjson
from ushas_catalog.errors import PlanFormatError, ShimUnavailable

from .shim_loader import ShimLoadError, load_writer, loaded_writer

FORMAT = "ushas-plan"
SUPPORTED_VERSIONS = frozenset({1, 2})


class Attr(NamedTuple):
    """An output attribute of a plan node (a typed tuple: immutable, hashable, cheap to build)."""

    name: str
    expr_id: int
    data_type: str


# Expr / PlanNode: slotted, non-frozen dataclasses (a frozen dataclass's __init__ costs ~4x more,
# and parsing builds thousands of them per plan). Treat them as read-only.
@dataclass(slots=True, eq=False)
class Expr:
    """One expression node: its class (``kind``), children, and for named expressions the
    exprId and name; ``subquery`` is the plan-node index of a subquery expression's plan;
    ``text`` (Spark's rendering) is set on top-level expressions only."""

    kind: str
    children: tuple[Expr, ...] = ()
    expr_id: int | None = None
    name: str | None = None
    subquery: int | None = None
    text: str | None = None

    def __str__(self) -> str:
        return self.text if self.text is not None else (
            f"{self.name}#{self.expr_id}" if self.expr_id is not None else self.kind)


ExprField = Union[Expr, tuple[Expr, ...], tuple[tuple[Expr, ...], ...]]
_NO_ARGS: Mapping[str, Any] = MappingProxyType({})
_new_tuple = tuple.__new__


@dataclass(slots=True, eq=False)
class PlanNode:
    """One logical plan node. ``exprs``: its expression-typed constructor fields by name
    (``projectList``, ``condition``, ``aggregateExpressions``...); ``args``: scalar and identity
    fields (``joinType``, ``catalogTable``...); ``plans``: plan-typed fields that are not children
    (``table`` of AppendData...), as node indices."""

    index: int
    kind: str
    children: tuple[int, ...]
    output: tuple[Attr, ...]
    exprs: Mapping[str, ExprField] = field(default_factory=dict)
    args: Mapping[str, Any] = field(default_factory=dict)
    plans: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class PlanDocument:
    version: int
    spark_version: str
    nodes: tuple[PlanNode, ...]
    root: int
    # plan-node indices of every subquery expression's plan (ScalarSubquery, Exists...)
    subqueries: frozenset[int] = frozenset()

    @property
    def root_node(self) -> PlanNode:
        return self.nodes[self.root]

    def __len__(self) -> int:
        return len(self.nodes)


class gc_paused:
    """Python's cyclic GC paused (a context manager): parsing and resolving allocate many small
    acyclic objects, and every full collection on the way re-scans all of them (super-linear on
    10^4-node plans). Nested pauses are free: only the outermost re-enables the GC. A class, not
    a ``@contextmanager`` generator: entered three times per ``df.lineage()``, the generator
    form cost ~4 µs a time."""

    __slots__ = ("_enabled",)

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            gc.enable()


def parse(text: str | bytes | Mapping[str, Any]) -> PlanDocument:
    """Parses plan JSON (text, bytes or an already decoded mapping): two linear loops."""
    with gc_paused():
        return _parse(text)


def _parse(text: str | bytes | Mapping[str, Any]) -> PlanDocument:
    doc: Mapping[str, Any] = orjson.loads(text) if isinstance(text, (str, bytes)) else text
    if doc.get("format") != FORMAT:
        raise PlanFormatError(f"not a {FORMAT} document (format={doc.get('format')!r})")
    version = doc.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise PlanFormatError(f"plan JSON version {version!r} not supported "
                              f"(supported: {sorted(SUPPORTED_VERSIONS)}); rebuild the shim jar")
    kinds: list[str] = doc["kinds"]
    # version 2: each distinct attribute and each distinct output list once, nodes refer to them
    attrs = [_new_tuple(Attr, a) for a in doc.get("attrs", ())]  # [name, exprId, type] each
    outputs = [tuple([attrs[i] for i in o]) for o in doc.get("outputs", ())]
    exprs: list[Expr] = []
    add = exprs.append
    subqueries: set[int] = set()
    if version == 1:
        for e in doc["exprs"]:
            c = e.get("c")
            sq = e.get("p")
            if sq is not None:
                subqueries.add(sq)
            add(Expr(kinds[e["k"]], tuple([exprs[i] for i in c]) if c else (), e.get("i"), e.get("n"), sq,
                     e.get("t")))
    else:  # [kind, children, exprId, name, subquery plan, text], trailing absent fields left out
        for e in doc["exprs"]:
            n = len(e)
            if n == 1:
                add(Expr(kinds[e[0]]))
                continue
            c = e[1]
            if n > 4 and e[4] is not None:
                subqueries.add(e[4])
            add(Expr(kinds[e[0]], tuple([exprs[i] for i in c]) if c else (), *e[2:]))
    nodes: list[PlanNode] = []
    for i, n in enumerate(doc["nodes"]):
        x = n.get("x")
        o = n.get("o", ())
        nodes.append(PlanNode(
            i, kinds[n["k"]], tuple(n.get("c", ())), outputs[o] if o.__class__ is int else tuple([Attr(*a) for a in o]),
            {k: _expr_field(v, exprs) for k, v in x.items()} if x else _NO_ARGS,
            n.get("a", _NO_ARGS), n.get("p", _NO_ARGS)))
    return PlanDocument(version=version, spark_version=doc.get("spark", ""), nodes=tuple(nodes),
                        root=doc["root"], subqueries=frozenset(subqueries))


def _expr_field(v: Any, exprs: list[Expr]) -> ExprField:
    if isinstance(v, int):
        return exprs[v]
    return tuple([_expr_field(x, exprs) for x in v])  # type: ignore[misc]


# ---- transport from the JVM -----------------------------------------------------------------
INLINE_LIMIT = 7000  # Py4J answers above ~8 k chars stall ~44 ms (SPARK-4.3-FACTS.md)
WRITER = "io.ushas.spark.PlanWriter"


_SERVERS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _server(gateway_client: Any) -> Any:
    """The JVM-side py4j GatewayServer (so PlanWriter can set TCP_NODELAY on our socket)."""
    server = _SERVERS.get(gateway_client)
    if server is None:
        from py4j import protocol
        from py4j.java_gateway import JavaObject

        server = _SERVERS[gateway_client] = JavaObject(protocol.GATEWAY_SERVER_OBJECT_ID, gateway_client)
    return server


#: how long the calling thread polls for PlanWriter's answer before it blocks (see _SpinningReader)
SPIN_SECONDS = 0.002


class _SpinningReader:
    """Wraps the ``stream`` of a Py4J connection: when armed, the next ``readline`` first peeks
    at the socket (without blocking, without consuming) until the whole answer line is there or
    :data:`SPIN_SECONDS` have passed — the thread stays on its CPU — and only then reads,
    blocking as before. A thread blocked in ``recv`` sleeps and must be woken when the answer
    arrives (once per TCP segment: answers of more than 8 k characters come in several), which
    costs ~0.05-0.1 ms a time on a virtual machine, a fifth of a TPC-H ``df.lineage()``; the
    JVM's walk takes ~0.15 ms, so the wait usually ends with the answer there. Anything else is
    delegated: py4j's own logic (retries, callbacks, interrupts) is untouched, and an unarmed
    reader is a plain stream."""

    __slots__ = ("_stream", "_sock", "_buf", "armed")

    def __init__(self, stream: Any, sock: socket.socket) -> None:
        self._stream = stream
        self._sock = sock
        self._buf = bytearray(1 << 16)
        self.armed = False

    def readline(self, *args: Any) -> bytes:
        if self.armed:
            self.armed = False
            peek, buf, flags = self._sock.recv_into, self._buf, socket.MSG_PEEK | socket.MSG_DONTWAIT
            deadline = time.perf_counter() + SPIN_SECONDS
            while time.perf_counter() < deadline:
                try:
                    n = peek(buf, 0, flags)
                except BlockingIOError:
                    continue
                except OSError:
                    break  # the read below raises what py4j expects
                if n == 0 or buf[n - 1] == 10 or n == len(buf):  # closed, a whole line, or a long answer
                    break
        return self._stream.readline(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _arm(gateway_client: Any) -> "_SpinningReader | None":
    """The spinning reader of the connection the calling thread's next command uses (pyspark's
    pinned-thread mode: the thread's own connection), armed; None when there is none yet or the
    py4j in use does not look like the one this was written for (then calls simply block)."""
    get = getattr(gateway_client, "get_thread_connection", None)
    conn = get() if get is not None else None
    stream = getattr(conn, "stream", None)
    if stream is None:
        return None
    if not isinstance(stream, _SpinningReader):
        sock = getattr(conn, "socket", None)
        if not isinstance(sock, socket.socket) or not hasattr(stream, "readline"):
            return None
        stream = conn.stream = _SpinningReader(stream, sock)
    stream.armed = True
    return stream


def _call(gateway_client: Any, method: str, *args: Any) -> str:
    """``PlanWriter.<method>(*args)`` in exactly one Py4J round trip: the command is written
    directly (``jvm.io.ushas.spark.PlanWriter.x`` costs one reflection round trip per name, and
    py4j's argument converters are not needed for JavaObject / str / int / None arguments), and
    the answer is awaited by polling first (:class:`_SpinningReader`). When the jar is not on the
    driver's classpath, it is loaded into the running JVM once (``lineage.shim_loader``) and the
    call goes to that PlanWriter (still one round trip)."""
    from py4j import protocol

    writer = loaded_writer(gateway_client)
    target = WRITER if writer is None else writer._target_id
    try:
        return _send(gateway_client, (protocol.STATIC_PREFIX + target) if writer is None else target,
                     method, args)
    except protocol.Py4JJavaError:
        raise
    except protocol.Py4JError as e:  # no such class / method: the jar is missing or stale
        if writer is not None:
            raise _unavailable(method, "(the jar loaded into the running driver is older than this package)") from e
        first = e
    try:
        writer = load_writer(gateway_client)
    except ShimLoadError as e:
        raise _unavailable(method, f"and {e}") from first
    try:
        return _send(gateway_client, writer._target_id, method, args)
    except protocol.Py4JJavaError:
        raise
    except protocol.Py4JError as e:  # Spark's own class loader has an older PlanWriter
        raise _unavailable(method, "(an older shim jar is on the driver's classpath)") from e


def _unavailable(method: str, detail: str) -> ShimUnavailable:
    return ShimUnavailable(
        f"{WRITER}.{method} is not on the Spark driver's classpath or is older than this package {detail}; "
        "start Spark with spark.jars=$(python -m ushas_catalog jar)")


def _send(gateway_client: Any, target: str, method: str, args: tuple[Any, ...]) -> str:
    from py4j import java_gateway, protocol

    command = (protocol.CALL_COMMAND_NAME + target + "\n" + method + "\n"
               + "".join(protocol.get_command_part(a) for a in args) + protocol.END_COMMAND_PART)
    reader = _arm(gateway_client)
    try:
        answer = gateway_client.send_command(command)
    finally:
        if reader is not None:
            reader.armed = False
    if answer.startswith(protocol.SUCCESS + protocol.STRING_TYPE) and "\\" not in answer:
        return answer[2:]  # a string py4j's unescaping (three splits and joins) would not change
    # looked up at call time: pyspark wraps it to raise AnalysisException & co.
    return java_gateway.get_return_value(answer, gateway_client, target, method)


def read_answer(answer: str) -> str:
    """The JSON of a ``PlanWriter.export*`` answer: inline, or the path of a private temp file
    that is read and deleted."""
    if answer.startswith("{"):
        return answer
    try:
        with open(answer, encoding="utf-8") as f:
            return f.read()
    finally:
        try:
            os.unlink(answer)
        except FileNotFoundError:
            pass


def fetch_dataset_json(jdf: Any, inline_limit: int = INLINE_LIMIT) -> str:
    """The plan JSON of a JVM ``Dataset``'s analyzed plan: ONE Py4J round trip. Inline at any size
    when the JVM could set TCP_NODELAY on this thread's Py4J socket, else through a temp file
    above ``inline_limit`` characters (docs/internals/plan-json.md, "Transport")."""
    client = jdf._gateway_client
    return read_answer(_call(client, "exportDataset", jdf, _server(client), inline_limit))


def fetch_sql_json(jspark: Any, sql: str, inline_limit: int = INLINE_LIMIT) -> str:
    """The plan JSON of ``sql`` analyzed (not executed) by a JVM ``SparkSession``: one round trip."""
    client = jspark._gateway_client
    return read_answer(_call(client, "exportSql", jspark, sql, _server(client), inline_limit))


def fetch_json(jvm: Any, jplan: Any, inline_limit: int = INLINE_LIMIT, nodelay: bool = True) -> str:
    """The plan JSON of a JVM ``LogicalPlan`` (one round trip). ``nodelay=False``: never ask for
    TCP_NODELAY, so answers above ``inline_limit`` characters always go through a temp file."""
    client = jplan._gateway_client
    return read_answer(_call(client, "exportPlan", jplan, _server(client) if nodelay else None, inline_limit))


def from_jvm(jvm: Any, jplan: Any) -> PlanDocument:
    return parse(fetch_json(jvm, jplan))
