"""Backends: who answers a module command line. ``call(name, args)`` takes a
command's NAME without prefix (``"THROTTLE"``) and exactly the arguments the
module would get, and returns the raw reply the module would give."""

from __future__ import annotations

import threading
import weakref
from typing import (
    Any,
    Callable,
    Dict,
    List,
    MutableMapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
)

import redis
import redis.asyncio
import redis.exceptions
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from . import lua_backend
from ._errors import ModuleNotLoadedError
from ._limits import Arg

SyncClient = Union[redis.Redis, RedisCluster]
AsyncClient = Union[redis.asyncio.Redis, AsyncRedisCluster]

MODULE_NAME = "ratelimit"


class Backend(Protocol):
    """A synchronous backend. It may also have ``call_many(calls)``: the
    replies of several ``(name, args)`` in one round trip, an error reply
    in place as its exception (the clients call them one by one without
    it)."""

    kind: str

    def call(self, name: str, args: Sequence[Arg]) -> Any: ...


class AsyncBackend(Protocol):
    """An asyncio backend (``call_many`` too, awaited, where it has it)."""

    kind: str

    async def call(self, name: str, args: Sequence[Arg]) -> Any: ...


Calls = Sequence[Tuple[str, Sequence[Arg]]]


def first_key(name: str, args: Sequence[Arg]) -> Optional[Arg]:
    """The key that routes a command line on a cluster: the first key."""
    if name in ("ALLOW", "PEEK"):
        return args[1] if len(args) > 1 else None
    return args[0] if args else None


def _route(client: Any, name: str, args: Sequence[Arg]) -> Dict[str, Any]:
    # A cluster client would ask a node for the keys of a module command
    # (COMMAND GETKEYS) before sending it; the first key names the slot.
    if isinstance(client, (RedisCluster, AsyncRedisCluster)):
        if name == "TOP":  # each master answers for its own keys
            # The nodes themselves: a nodes flag would ask for RL.TOP's keys.
            return {"target_nodes": client.get_primaries()}
        key = first_key(name, args)
        if key is not None:
            name_ = key.decode() if isinstance(key, bytes) else str(key)
            return {"target_nodes": client.get_node_from_key(name_)}
    return {}


class ModuleBackend:
    """Sends ``<prefix>.<NAME> args...`` with the client's ``execute_command``."""

    kind = "module"

    def __init__(self, client: SyncClient, prefix: str = "RL") -> None:
        self.client = client
        self.prefix = prefix

    def call(self, name: str, args: Sequence[Arg]) -> Any:
        command = f"{self.prefix}.{name}"
        send: Any = self.client.execute_command
        return send(command, *args, **_route(self.client, name, args))

    def call_many(self, calls: Calls) -> List[Any]:
        """The calls in one pipeline (no transaction)."""
        pipe: Any = self.client.pipeline(transaction=False)
        for name, args in calls:
            pipe.execute_command(f"{self.prefix}.{name}", *args,
                                 **_route(self.client, name, args))
        return list(pipe.execute(raise_on_error=False))


class AsyncModuleBackend:
    """The same on a ``redis.asyncio`` client."""

    kind = "module"

    def __init__(self, client: AsyncClient, prefix: str = "RL") -> None:
        self.client = client
        self.prefix = prefix

    async def call(self, name: str, args: Sequence[Arg]) -> Any:
        command = f"{self.prefix}.{name}"
        send: Any = self.client.execute_command
        return await send(command, *args, **_route(self.client, name, args))

    async def call_many(self, calls: Calls) -> List[Any]:
        pipe: Any = self.client.pipeline(transaction=False)
        for name, args in calls:
            pipe.execute_command(f"{self.prefix}.{name}", *args,
                                 **_route(self.client, name, args))
        return list(await pipe.execute(raise_on_error=False))


def _prefix_from(names: Any) -> Optional[str]:
    if isinstance(names, dict):  # a cluster client's answer per node
        names = next(iter(names.values()), [])
    for raw in names or []:
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        if name.upper().endswith(".THROTTLE"):
            return name[: -len(".THROTTLE")]
    return None


_DETECT = ("COMMAND LIST", "FILTERBY", "MODULE", MODULE_NAME)
# Where an ACL refuses COMMAND LIST (or a server lacks it): COMMAND INFO of
# the default-prefix command, which finds the module under "RL" only.
_DETECT_INFO = ("COMMAND INFO", "RL.THROTTLE")


def _refused(error: redis.exceptions.ResponseError) -> bool:
    text = str(error)
    return (isinstance(error, redis.exceptions.NoPermissionError)
            or text.startswith("NOPERM") or "unknown subcommand" in text.lower()
            or "no permissions" in text.lower())


def _info_found(reply: Any) -> Optional[str]:
    """"RL" when COMMAND INFO RL.THROTTLE describes the command (its reply
    a list of one entry, nil when unknown; a cluster client's per node)."""
    if isinstance(reply, dict):
        reply = next(iter(reply.values()), None)
    return "RL" if isinstance(reply, (list, tuple)) and reply and reply[0] else None


def _detect_options(client: Any) -> Dict[str, Any]:
    if isinstance(client, (RedisCluster, AsyncRedisCluster)):
        return {"target_nodes": client.RANDOM}
    return {}


def _cache_owner(client: Any) -> Any:
    return getattr(client, "connection_pool", None) or client


# The detected prefix per connection pool (per client for a cluster): one
# COMMAND LIST for all the limiters made on one client.
_detected: MutableMapping[Any, Optional[str]] = weakref.WeakKeyDictionary()
_detected_lock = threading.Lock()


def detect_prefix(client: SyncClient) -> Optional[str]:
    """The module's command prefix on this client's server (``"RL"``, or the
    word given to its PREFIX option), or None when it is not loaded. Asked
    once per connection pool."""
    owner = _cache_owner(client)
    with _detected_lock:
        if owner in _detected:
            return _detected[owner]
    send: Any = client.execute_command
    try:
        prefix = _prefix_from(send(*_DETECT, **_detect_options(client)))
    except redis.exceptions.ResponseError as e:
        if not _refused(e):
            raise
        prefix = _info_found(send(*_DETECT_INFO, **_detect_options(client)))
    with _detected_lock:
        _detected[owner] = prefix
    return prefix


async def detect_prefix_async(client: AsyncClient) -> Optional[str]:
    """``detect_prefix`` for an asyncio client."""
    owner = _cache_owner(client)
    if owner in _detected:
        return _detected[owner]
    send: Any = client.execute_command
    try:
        prefix = _prefix_from(await send(*_DETECT, **_detect_options(client)))
    except redis.exceptions.ResponseError as e:
        if not _refused(e):
            raise
        prefix = _info_found(await send(*_DETECT_INFO, **_detect_options(client)))
    _detected[owner] = prefix
    return prefix


# Other backends by name ("lua"): factories that take the client.
SyncFactory = Callable[[SyncClient], Backend]
AsyncFactory = Callable[[AsyncClient], AsyncBackend]
_factories: Dict[str, tuple[SyncFactory, AsyncFactory]] = {}


def register_backend(kind: str, sync: SyncFactory, asyncio_: AsyncFactory) -> None:
    """Makes ``backend=kind`` (and, for ``"lua"``, ``backend="auto"`` on a
    server without the module) build these backends."""
    _factories[kind] = (sync, asyncio_)


def _not_loaded(kind: str) -> ModuleNotLoadedError:
    return ModuleNotLoadedError(
        "the ratelimit module is not loaded on this server "
        "(COMMAND LIST FILTERBY MODULE ratelimit lists no .THROTTLE command): "
        "load it (loadmodule /path/to/libredis_ratelimit.so), pass prefix=, "
        "or use backend='lua' (or 'auto')"
    )


def _known(choice: str) -> None:
    if choice not in _factories:
        raise ValueError(f"unknown backend {choice!r} (expected auto, module or lua)")


class LuaBackend:
    """Runs each command as its Lua script (``lua_backend.execute``), with the
    module's replies, on a server that cannot load the module."""

    kind = "lua"

    def __init__(self, client: SyncClient, clock: str = "auto") -> None:
        self.client = client
        self.clock = clock  # lua_backend.execute's: "auto", "server" or "client"

    def call(self, name: str, args: Sequence[Arg]) -> Any:
        run: Any = lua_backend.execute
        return run(self.client, f"RL.{name}", *args, clock=self.clock)

    def call_many(self, calls: Calls) -> List[Any]:
        run: Any = lua_backend.execute_many
        return list(run(self.client, [[f"RL.{name}", *args] for name, args in calls],
                        clock=self.clock))


class AsyncLuaBackend:
    """The same on a ``redis.asyncio`` client."""

    kind = "lua"

    def __init__(self, client: AsyncClient, clock: str = "auto") -> None:
        self.client = client
        self.clock = clock

    async def call(self, name: str, args: Sequence[Arg]) -> Any:
        run: Any = lua_backend.execute_async
        return await run(self.client, f"RL.{name}", *args, clock=self.clock)

    async def call_many(self, calls: Calls) -> List[Any]:
        run: Any = lua_backend.execute_many_async
        return list(await run(self.client, [[f"RL.{name}", *args] for name, args in calls],
                              clock=self.clock))


register_backend("lua", LuaBackend, AsyncLuaBackend)


BackendChoice = Union[str, Backend]

AsyncBackendChoice = Union[str, AsyncBackend]


def choose_backend(client: SyncClient, choice: BackendChoice, prefix: Optional[str]) -> Backend:
    """The backend for ``choice``: ``"auto"`` (the module when it is loaded,
    else the Lua backend), ``"module"``, ``"lua"``, or
    a Backend object, returned as it is."""
    if not isinstance(choice, str):
        return choice
    if choice in ("auto", "module"):
        found = prefix if prefix is not None else detect_prefix(client)
        if found is not None:
            return ModuleBackend(client, found)
        if choice == "module":
            raise _not_loaded("module")
        choice = "lua"
    _known(choice)
    return _factories[choice][0](client)


async def choose_backend_async(
    client: AsyncClient, choice: AsyncBackendChoice, prefix: Optional[str]
) -> AsyncBackend:
    """``choose_backend`` for an asyncio client."""
    if not isinstance(choice, str):
        return choice
    if choice in ("auto", "module"):
        found = prefix if prefix is not None else await detect_prefix_async(client)
        if found is not None:
            return AsyncModuleBackend(client, found)
        if choice == "module":
            raise _not_loaded("module")
        choice = "lua"
    _known(choice)
    return _factories[choice][1](client)
