"""The remote mirror of ``torch.ops``: ``client.ops.myops.scale_shift(x, 2.0, 1.0)``.

Built from the server's listing (``Client.list_operators()``: one dict per
overload, mirroring ``myops.v1.OperatorInfo``) into namespaces
(``client.ops.torchvision``), overload packets (``...roi_align``, callable:
the first served overload whose schema accepts the arguments runs, as
``torch.ops`` picks one) and overloads (``...scale_shift.default``,
``.out``). Each has the schema as its docstring, an ``inspect`` signature
and a ``dir()`` of what it holds.

Arguments are bound to the schema here, before anything is sent, as a local
``torch.ops`` call binds them: too many positional arguments, a keyword-only
argument given by position, an unknown or repeated keyword, a missing
required argument or a value of the wrong type raise TypeError naming the
operator and the argument. Arguments left out are not sent: the server
applies the schema's defaults. Several results come back as a tuple.

Nothing here knows about gRPC: a call goes through the ``invoke`` function
of a ``Context`` (the client's native call with its options), so this module
is tested with listings and invoke functions written by hand. The asyncio
client (``myops_client.aio``) uses the same trees with an asynchronous
context: its invoke returns an awaitable, and a call binds and checks its
arguments at once, then returns a coroutine that awaits the RPC and converts
its results.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, Awaitable, Callable, Iterable, Iterator, Sequence, Union

from . import _values

# invoke(wire_op, arguments) -> (outputs, timing), or an awaitable of it in
# an asynchronous Context: arguments are (name or "", field, payload) triples
# and outputs (field, payload) pairs (see _values).
Sent = tuple[Sequence[tuple[int, Any]], Any]
Invoke = Callable[[str, list[tuple[str, int, Any]]],
                  Union[Sent, Awaitable[Sent]]]
# A call bound to its overload, ready to send: the overload, the arguments in
# wire form and the state its results are converted with (Catalog.bind).
Bound = tuple["Overload", list[tuple[str, int, Any]], _values.CallState]


def check_device(device: object) -> None:
    """Raises TypeError unless ``device`` is a str (a client's device choice,
    checked before any call is made)."""
    if not isinstance(device, str):
        raise TypeError(f"device must be a str ('', 'cpu', 'cuda', "
                        f"'cuda:N'), not {type(device).__name__}")


class Context:
    """How the operators of one ``ops`` tree are called: the invoke function
    (a client's native call, with its device and timeout), whether calls
    return ``(result, timing)``, whether result tensors are torch tensors
    (None: when a tensor argument was one), and whether invoke returns an
    awaitable (then calls return coroutines)."""

    __slots__ = ("invoke", "return_timing", "as_torch", "asynchronous")

    def __init__(self, invoke: Invoke, return_timing: bool = False,
                 as_torch: bool | None = None,
                 asynchronous: bool = False) -> None:
        self.invoke = invoke
        self.return_timing = return_timing
        self.as_torch = as_torch
        self.asynchronous = asynchronous


class Overload:
    """One overload's schema, from an OperatorInfo dict; binds arguments."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.name: str = info["name"]                  # "ns::op"
        self.overload: str = info.get("overload", "")  # "" = default
        self.schema: str = info.get("schema", "")
        self.arguments: list[dict[str, Any]] = list(info.get("arguments", ()))
        self.returns: list[dict[str, Any]] = list(info.get("returns", ()))
        self.devices: list[str] = list(info.get("devices", ()))
        self.served: bool = bool(info.get("served", True))
        self.reason: str = info.get("reason", "")
        self.attribute = self.overload or "default"
        # What Call's op field names: the default overload is the bare name.
        self.wire_name = (f"{self.name}.{self.overload}" if self.overload
                          else self.name)
        self.positional = sum(1 for a in self.arguments
                              if not a.get("kwarg_only"))
        self._index = {a["name"]: i for i, a in enumerate(self.arguments)}

    def doc(self) -> str:
        if self.served:
            devices = ", ".join(self.devices) or "none listed"
            note = f"Runs on the server (devices: {devices})."
        else:
            note = f"Not served: {self.reason or 'no reason given'}."
        return f"{self.schema}\n\n{note}"

    def signature(self) -> inspect.Signature | None:
        """The Python signature of the schema; None when its names are not
        Python identifiers (e.g. an argument named 'from')."""
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                 inspect.Parameter.KEYWORD_ONLY)
        try:
            return inspect.Signature([
                inspect.Parameter(
                    a["name"], kinds[bool(a.get("kwarg_only"))],
                    default=(_values.parse_default(a.get("default_value", ""))
                             if a.get("has_default") else
                             inspect.Parameter.empty))
                for a in self.arguments])
        except (ValueError, TypeError):
            return None

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any],
             state: _values.CallState) -> list[tuple[str, int, Any]]:
        """The wire arguments of a call with ``args`` and ``kwargs``:
        positional ones without a name, keywords by name, in schema order.
        TypeError (ValueError for an int outside int64) naming the argument
        when the schema does not accept them."""
        op, schema = self.wire_name, self.schema
        if not kwargs and len(args) == self.positional == len(self.arguments):
            # Every argument by position: nothing to look up or leave out.
            return [("", *_values.convert_argument(
                value, info, position, op, schema, state))
                for position, (value, info) in enumerate(
                    zip(args, self.arguments))]
        if len(args) > self.positional:
            if self.positional < len(self.arguments):
                first = self.arguments[self.positional]["name"]
                raise TypeError(
                    f"{op}() takes {self.positional} positional argument(s) "
                    f"but {len(args)} were given; argument '{first}' and "
                    f"those after it are keyword-only. Declaration: {schema}")
            raise TypeError(
                f"{op}() expected at most {len(self.arguments)} argument(s) "
                f"but received {len(args)} argument(s). Declaration: {schema}")
        for key in kwargs:
            index = self._index.get(key)
            if index is None:
                hint = difflib.get_close_matches(key, list(self._index), 1)
                raise TypeError(
                    f"Unknown keyword argument '{key}' for operator '{op}'"
                    f"{f' (did you mean {hint[0]!r}?)' if hint else ''}. "
                    f"Schema: {schema}")
            if index < len(args):
                raise TypeError(
                    f"{op}() got multiple values for argument '{key}' "
                    f"(given by position and by name). Declaration: {schema}")
        for info in self.arguments[len(args):]:
            if info["name"] not in kwargs and not info.get("has_default"):
                raise TypeError(
                    f"{op}() is missing value for argument '{info['name']}'. "
                    f"Declaration: {schema}")
        wire = []
        for position, value in enumerate(args):
            info = self.arguments[position]
            wire.append(("", *_values.convert_argument(
                value, info, position, op, schema, state)))
        for position in range(len(args), len(self.arguments)):
            info = self.arguments[position]
            if info["name"] in kwargs:
                wire.append((info["name"], *_values.convert_argument(
                    kwargs[info["name"]], info, position, op, schema, state)))
        return wire

    def prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> Bound:
        """A call of this overload bound, ready to send:
        NotImplementedError when it is not served, else as ``bind``."""
        if not self.served:
            raise NotImplementedError(
                f"{self.wire_name} is not served by this server: "
                f"{self.reason or 'no reason given'}")
        state = _values.CallState()
        return self, self.bind(args, kwargs, state), state

    def call(self, context: Context, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        _, wire, state = self.prepare(args, kwargs)
        return self.finish(context, wire, state)

    def finish(self, context: Context, wire: list[tuple[str, int, Any]],
               state: _values.CallState) -> Any:
        """Sends a bound call; its result (and timing, if asked for), or in
        an asynchronous context a coroutine of it."""
        sent = context.invoke(self.wire_name, wire)
        if context.asynchronous:
            return self._finish_later(context, sent, state)
        return self.results(context, sent, state)

    async def _finish_later(self, context: Context, sent: Any,
                            state: _values.CallState) -> Any:
        return self.results(context, await sent, state)

    def results(self, context: Context, sent: Any,
                state: _values.CallState) -> Any:
        """The value of a call from what the native call returned,
        ``(outputs, timing)``: one result as itself, several as a tuple,
        with the timing when the context asks for it."""
        outputs, timing = sent
        if context.as_torch is not None:
            state.torch = context.as_torch
        values = [_values.convert_result(field, payload, state)
                  for field, payload in outputs]
        result = (None if not values else values[0] if len(values) == 1
                  else tuple(values))
        return (result, timing) if context.return_timing else result


class Catalog:
    """The server's listing by operator: ``"ns::op"`` -> its overloads
    (the default first, then as listed), and exported programs (served with
    ``--program NAME=PATH``) by their ``NAME``, which has no namespace and so
    is callable with ``call`` only. Immutable; shared by the ``ops`` trees of
    every option set of one client."""

    def __init__(self, listing: Iterable[dict[str, Any]]) -> None:
        self.ops: dict[str, list[Overload]] = {}
        for info in listing:
            overload = Overload(info)
            self.ops.setdefault(overload.name, []).append(overload)
        for overloads in self.ops.values():
            overloads.sort(key=lambda o: o.overload != "")
        self.namespaces: dict[str, list[str]] = {}
        for name in sorted(self.ops):
            namespace, colons, op = name.partition("::")
            if colons:
                self.namespaces.setdefault(namespace, []).append(op)

    def resolve(self, op: str) -> tuple[list[Overload], str | None]:
        """The overloads of "ns::op" or "ns::op.overload" and the overload
        asked for (None: any). ValueError naming close matches when the
        server does not list it."""
        name, dot, overload = op.partition(".")
        overloads = self.ops.get(name)
        if overloads is None:
            hint = difflib.get_close_matches(name, list(self.ops), 3)
            raise ValueError(
                f"operator {name!r} is not listed by the server"
                + (f"; did you mean {', '.join(map(repr, hint))}?" if hint
                   else f" (it lists {len(self.ops)} operators: see "
                        f"Client.list_operators())"))
        return overloads, (overload or "default") if dot else None

    def call(self, context: Context, op: str, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        """``Client.call``: runs op "ns::name" (overload chosen by the
        arguments), "ns::name.overload" or program "NAME"."""
        overload, wire, state = self.bind(op, args, kwargs)
        return overload.finish(context, wire, state)

    def bind(self, op: str, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Bound:
        """A call of op (as ``call`` names it) bound to its overload and
        in wire form, ready to send."""
        overloads, wanted = self.resolve(op)
        if wanted is None:
            return bind_packet(overloads, args, kwargs)
        for overload in overloads:
            if overload.attribute == wanted:
                return overload.prepare(args, kwargs)
        raise ValueError(
            f"operator {overloads[0].name!r} has no overload {wanted!r}; it "
            f"has {', '.join(o.attribute for o in overloads)}")


def call_packet(context: Context, overloads: list[Overload],
                args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Calls the first served overload whose schema binds the arguments."""
    overload, wire, state = bind_packet(overloads, args, kwargs)
    return overload.finish(context, wire, state)


def bind_packet(overloads: list[Overload], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Bound:
    """Binds the arguments to the first served overload whose schema accepts
    them."""
    served = [o for o in overloads if o.served]
    if len(overloads) == 1 or len(served) == 1:
        return (served or overloads)[0].prepare(args, kwargs)
    if not served:
        raise NotImplementedError(
            f"{overloads[0].name} is not served by this server: "
            + "; ".join(f"{o.attribute}: {o.reason or 'no reason given'}"
                        for o in overloads))
    errors = []
    for overload in served:
        state = _values.CallState()
        try:
            wire = overload.bind(args, kwargs, state)
        except TypeError as error:
            errors.append(f"{overload.attribute}: {error}")
            continue
        return overload, wire, state
    raise TypeError(
        f"{overloads[0].name}: no served overload accepts these arguments:\n"
        + "\n".join(errors))


def _no_attribute(owner: str, kind: str, name: str,
                  names: Sequence[str]) -> AttributeError:
    hint = difflib.get_close_matches(name, list(names), 3)
    return AttributeError(
        f"{owner} has no {kind} {name!r}"
        + (f"; did you mean {', '.join(map(repr, hint))}?" if hint
           else f"; it has {', '.join(names) or 'none'}"))


class OpOverload:
    """One overload of a remote operator, e.g. ``ops.myops.scale_shift.out``.
    Callable with the schema's arguments; its docstring is the schema."""

    def __init__(self, overload: Overload, context: Context) -> None:
        self._overload = overload
        self._context = context
        self.__doc__ = overload.doc()
        self.__name__ = overload.attribute
        self.__qualname__ = overload.wire_name
        signature = overload.signature()
        if signature is not None:
            self.__signature__ = signature

    @property
    def schema(self) -> str:
        return self._overload.schema

    @property
    def served(self) -> bool:
        return self._overload.served

    @property
    def devices(self) -> list[str]:
        return list(self._overload.devices)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._overload.call(self._context, args, kwargs)

    def __repr__(self) -> str:
        return f"<remote operator {self._overload.wire_name}>"


class OpPacket:
    """A remote operator with all its overloads, e.g.
    ``ops.myops.scale_shift``: calling it runs the first served overload
    whose schema accepts the arguments; ``.default``, ``.out``, ... are the
    overloads."""

    def __init__(self, overloads: list[Overload], context: Context) -> None:
        self._overloads = overloads
        self._context = context
        self._by_attribute = {o.attribute: o for o in overloads}
        name = overloads[0].name
        self.__name__ = name.partition("::")[2]
        self.__qualname__ = name
        self.__doc__ = "\n\n".join(o.doc() for o in overloads)
        # The signature of the one overload a call can run, if only one can.
        served = [o for o in overloads if o.served]
        signature = served[0].signature() if len(served) == 1 else None
        if signature is not None:
            self.__signature__ = signature

    def overloads(self) -> list[str]:
        """The overload names ("default" for the default overload)."""
        return list(self._by_attribute)

    def __getattr__(self, name: str) -> OpOverload:
        by_attribute = self.__dict__.get("_by_attribute")
        if name.startswith("__") or by_attribute is None:
            raise AttributeError(name)
        overload = by_attribute.get(name)
        if overload is None:
            raise _no_attribute(f"operator {self.__qualname__!r}", "overload",
                                name, list(by_attribute))
        value = OpOverload(overload, self._context)
        self.__dict__[name] = value
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(self._by_attribute) | {"overloads"})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_packet(self._context, self._overloads, args, kwargs)

    def __repr__(self) -> str:
        return f"<remote operator {self.__qualname__}>"


class OpNamespace:
    """The operators of one namespace, e.g. ``ops.torchvision``."""

    def __init__(self, catalog: Catalog, namespace: str,
                 context: Context) -> None:
        self._catalog = catalog
        self._namespace = namespace
        self._context = context
        self.__name__ = namespace

    def __getattr__(self, name: str) -> OpPacket:
        if name.startswith("__") or "_catalog" not in self.__dict__:
            raise AttributeError(name)
        overloads = self._catalog.ops.get(f"{self._namespace}::{name}")
        if overloads is None:
            raise _no_attribute(f"namespace {self._namespace!r}", "operator",
                                name, self._catalog.namespaces[self._namespace])
        packet = OpPacket(overloads, self._context)
        self.__dict__[name] = packet
        return packet

    def __dir__(self) -> list[str]:
        return list(self._catalog.namespaces[self._namespace])

    def __iter__(self) -> Iterator[str]:
        return iter(self._catalog.namespaces[self._namespace])

    def __repr__(self) -> str:
        return f"<remote operator namespace {self._namespace!r}>"


class Ops:
    """The operators a server lists, by namespace: ``ops.myops``,
    ``ops.torchvision``; ``dir(ops)`` lists the namespaces."""

    def __init__(self, catalog: Catalog, context: Context) -> None:
        self._catalog = catalog
        self._context = context

    def __getattr__(self, name: str) -> OpNamespace:
        if name.startswith("__") or "_catalog" not in self.__dict__:
            raise AttributeError(name)
        if name not in self._catalog.namespaces:
            raise _no_attribute("the server", "operator namespace", name,
                                list(self._catalog.namespaces))
        namespace = OpNamespace(self._catalog, name, self._context)
        self.__dict__[name] = namespace
        return namespace

    def __dir__(self) -> list[str]:
        return list(self._catalog.namespaces)

    def __iter__(self) -> Iterator[str]:
        """The qualified names of every listed operator ("ns::op")."""
        return iter(sorted(self._catalog.ops))

    def __repr__(self) -> str:
        return (f"<remote operators: {len(self._catalog.ops)} in "
                f"{', '.join(self._catalog.namespaces) or 'no namespace'}>")
