"""`rqconc cluster slots`: where each namespace lives on a Redis Cluster, and names that
would land on different masters (SPEC section 8).

A namespace is the unit of placement: all its keys share the hash tag `{namespace}`, so one
slot, so one master serves all of it. A namespace is known when a master holds its set of
queues (made by the first enqueue) or its registry of workers; finding them costs one SCAN
per master, an admin command's price, never a worker's.
"""

from __future__ import annotations

import json
from itertools import count
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import click
from redis.cluster import RedisCluster
from redis.crc import key_slot

from rqconc.cli.common import NAMESPACE_ENV, client_for, table, url_option
from rqconc.connection import cluster as cluster_connection
from rqconc.connection.clients import translated_errors
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import text

DEFAULT_NAMESPACE = KeySpace().namespace
# The keys that mark a namespace as in use: (KeySpace attribute, the glob finding them).
_MARKERS = ("queues", "workers")
_SCAN_COUNT = 1000
MAX_SUGGEST = 1000


@click.group()
def cluster() -> None:
    """Redis Cluster placement: which master serves each namespace."""


@cluster.command(name="slots")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    envvar=NAMESPACE_ENV,  # the namespace the other commands work on is shown too
    metavar="NAME",
    help="Also show this namespace, in use or not (repeatable).",
)
@click.option(
    "--suggest",
    type=click.IntRange(1, MAX_SUGGEST),
    default=None,
    metavar="N",
    help="Print N namespace names spread evenly over the masters instead.",
)
@click.option("--prefix", default="ns", show_default=True, help="The suggested names' prefix.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of a table.")
@url_option
def slots(
    namespaces: Sequence[str],
    suggest: Optional[int],
    prefix: str,
    as_json: bool,
    url: Optional[str],
) -> None:
    """Print the slot and master of every known namespace (those with rqconc keys, and the
    default `rqconc`), or with --suggest N, N names that land on different masters."""
    for name in (*namespaces, prefix):
        _check_name(name)
    client = client_for(url)
    if not cluster_connection.is_cluster(client):
        raise click.UsageError(
            f"--url must name a Redis Cluster ({cluster_connection.URL_FORM}): on one Redis "
            "every namespace lives on the same server"
        )
    with translated_errors(client):
        if suggest is not None:
            _print_suggestions(client, suggest, prefix, as_json)  # type: ignore[arg-type]
            return
        rows = placements(client, namespaces)  # type: ignore[arg-type]
    if as_json:
        click.echo(json.dumps({"namespaces": rows, "masters": masters(client)}))  # type: ignore[arg-type]
        return
    shown = [[r["namespace"], r["slot"], r["master"], r["replicas"], r["keys"]] for r in rows]
    click.echo(table(["NAMESPACE", "SLOT", "MASTER", "REPLICAS", "KEYS"], shown))
    used = {r["master"] for r in rows}
    click.echo(
        f"{len(used)} of {len(masters(client))} masters serve these namespaces"  # type: ignore[arg-type]
        "; `rqconc cluster slots --suggest N` names N namespaces on different masters"
    )


def _check_name(name: str) -> None:
    try:
        KeySpace(name)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def placements(client: RedisCluster, extra: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """One row per known namespace (and each of `extra`): slot, master, replicas, keys."""
    names = sorted(known_namespaces(client) | {DEFAULT_NAMESPACE} | set(extra))
    rows = []
    for name in names:
        slot = slot_of(name)
        master, replicas = _serving(client, slot)
        keys = client.cluster_countkeysinslot(slot)
        rows.append(
            {"namespace": name, "slot": slot, "master": master, "replicas": replicas, "keys": keys}
        )
    return rows


def slot_of(namespace: str) -> int:
    """The cluster slot every key of `namespace` hashes to (by its hash tag)."""
    return int(key_slot(KeySpace(namespace).seq.encode()))


def known_namespaces(client: RedisCluster) -> Set[str]:
    """Namespaces that hold a set of queues or a registry of workers on some master."""
    found: Set[str] = set()
    for node in client.get_primaries():
        for marker in _MARKERS:
            for key in _scan(client, node, "{*}:" + marker):
                name = text(key)
                found.add(name[1 : name.index("}")])
    return found


def _scan(client: RedisCluster, node: Any, pattern: str) -> Iterator[Any]:
    cursor = 0
    while True:
        server = node.redis_connection or client.get_redis_connection(node)
        cursor, keys = server.scan(cursor, match=pattern, count=_SCAN_COUNT)
        yield from keys
        if not cursor:
            return


def _serving(client: RedisCluster, slot: int) -> Tuple[str, List[str]]:
    nodes = client.nodes_manager.slots_cache.get(slot) or []
    if not nodes:
        return "-", []
    return nodes[0].name, sorted(node.name for node in nodes[1:])


def masters(client: RedisCluster) -> List[str]:
    return sorted(node.name for node in client.get_primaries())


def suggestions(client: RedisCluster, wanted: int, prefix: str) -> List[Tuple[str, str]]:
    """`wanted` (name, master) pairs: names `prefix0`, `prefix1`... picked so that each
    master serves as many of them as the others, give or take one."""
    all_masters = masters(client)
    picked: List[Tuple[str, str]] = []
    for index in count():
        if len(picked) == wanted:
            return picked
        target = all_masters[len(picked) % len(all_masters)]
        name = f"{prefix}{index}"
        master, _ = _serving(client, slot_of(name))
        if master == target and not any(name == p for p, _ in picked):
            picked.append((name, master))
    raise AssertionError("unreachable")  # pragma: no cover


def _print_suggestions(client: RedisCluster, wanted: int, prefix: str, as_json: bool) -> None:
    picked = suggestions(client, wanted, prefix)
    if as_json:
        click.echo(json.dumps([{"namespace": n, "master": m} for n, m in picked]))
        return
    click.echo(table(["NAMESPACE", "MASTER"], picked))
