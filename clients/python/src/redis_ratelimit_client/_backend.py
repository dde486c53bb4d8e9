"""Backends: who answers a module command line. ``call(name, args)`` takes a
command's NAME without prefix (``"THROTTLE"``) and exactly the arguments the
module would get, and returns the raw reply the module would give."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Dict, MutableMapping, Optional, Protocol, Sequence, Union

import redis
import redis.asyncio
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from . import lua_backend
from ._errors import ModuleNotLoadedError
from ._limits import Arg

SyncClient = Union[redis.Redis, RedisCluster]
AsyncClient = Union[redis.asyncio.Redis, AsyncRedisCluster]

MODULE_NAME = "ratelimit"


class Backend(Protocol):
    """A synchronous backend."""

    kind: str

    def call(self, name: str, args: Sequence[Arg]) -> Any: ...


class AsyncBackend(Protocol):
    """An asyncio backend."""

    kind: str

    async def call(self, name: str, args: Sequence[Arg]) -> Any: ...


def first_key(name: str, args: Sequence[Arg]) -> Optional[Arg]:
    """The key that routes a command line on a cluster: the first key."""
    if name in ("ALLOW", "PEEK"):
        return args[1] if len(args) > 1 else None
    return args[0] if args else None


def _route(client: Any, name: str, args: Sequence[Arg]) -> Dict[str, Any]:
    # A cluster client would ask a node for the keys of a module command
    # (COMMAND GETKEYS) before sending it; the first key names the slot.
    if isinstance(client, (RedisCluster, AsyncRedisCluster)):
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


def _prefix_from(names: Any) -> Optional[str]:
    if isinstance(names, dict):  # a cluster client's answer per node
        names = next(iter(names.values()), [])
    for raw in names or []:
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        if name.upper().endswith(".THROTTLE"):
            return name[: -len(".THROTTLE")]
    return None


_DETECT = ("COMMAND LIST", "FILTERBY", "MODULE", MODULE_NAME)


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
    prefix = _prefix_from(send(*_DETECT, **_detect_options(client)))
    with _detected_lock:
        _detected[owner] = prefix
    return prefix


async def detect_prefix_async(client: AsyncClient) -> Optional[str]:
    """``detect_prefix`` for an asyncio client."""
    owner = _cache_owner(client)
    if owner in _detected:
        return _detected[owner]
    send: Any = client.execute_command
    names = await send(*_DETECT, **_detect_options(client))
    prefix = _prefix_from(names)
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


class AsyncLuaBackend:
    """The same on a ``redis.asyncio`` client."""

    kind = "lua"

    def __init__(self, client: AsyncClient, clock: str = "auto") -> None:
        self.client = client
        self.clock = clock

    async def call(self, name: str, args: Sequence[Arg]) -> Any:
        run: Any = lua_backend.execute_async
        return await run(self.client, f"RL.{name}", *args, clock=self.clock)


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
