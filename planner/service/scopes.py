"""Scoped credentials: which token may do what, and the per-topology tokens workers post records with.

One token for everything made every worker (so every topology's own code) able to bind plans, overwrite
profile sets and poison the records store. A token now carries scopes (:class:`Scope`); a token file holds
one token per line with the scopes it has (``plan,read TOKEN``), and a file of one bare token, the setup
every deployment had, gives that token every scope, so old files, tests and clusters keep working.

Workers get neither: each topology gets a records token of its own at submission
(:func:`records_token`, an HMAC of its name under the service's records secret), which may post that
topology's records and nothing else. The service recomputes it to check it, so it stores no list of them.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from planner.durable import write_atomic


class Scope(str, Enum):
    READ = "read"
    """Every GET: plans, bindings, profile sets, the ledger, the metrics summary, the page's overview."""
    PLAN = "plan"
    """Make, evaluate, repair and delete plans, size clusters (capacity); register, renew and release tenants (the Nimbus plugin)."""
    BIND = "bind"
    """Bind and unbind plans to running topologies (decides where a topology is placed at its next rebalance)."""
    PROFILES = "profiles"
    """Store and delete profile set versions."""
    RECORDS = "records"
    """Post workers' records of any topology, and hand out a topology's own records token."""


ALL_SCOPES: frozenset[Scope] = frozenset(Scope)
ALL_WORD = "all"
SCOPE_WORDS = ", ".join([s.value for s in Scope] + [ALL_WORD])

RECORDS_TOKEN_PREFIX = "records"
RECORDS_TOKEN = re.compile(r"^records\.([A-Za-z0-9_][A-Za-z0-9_-]{0,199})\.([0-9a-f]{64})$")
"""``records.<topology>.<hex HMAC>``: the topology names of the records store, which hold no dot."""
RECORDS_SECRET_FILE = "records-secret"


@dataclass(frozen=True)
class Grant:
    """What one caller may do: its scopes, and for a topology's records token the one topology it may post for."""

    scopes: frozenset[Scope]
    topology: str | None = None


EVERYTHING = Grant(ALL_SCOPES)


class TokenFileError(ValueError):
    """A token file that cannot be used; the message names the file and the fault."""


def read_token_file(path: Path) -> dict[str, frozenset[Scope]]:
    """The tokens in ``path`` with their scopes (:func:`parse_token_lines`); the file must exist and
    be readable by its owner only. A file of one bare token gives it every scope, as before scopes existed."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise TokenFileError(f"the token file {path} does not exist") from None
    except OSError as fault:
        raise TokenFileError(f"the token file {path} cannot be checked: {fault.strerror or fault}") from None
    if not stat.S_ISREG(mode):
        raise TokenFileError(f"the token file {path} is not a regular file")
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise TokenFileError(
            f"the token file {path} is readable by group or others (mode {stat.S_IMODE(mode):04o}); chmod 600 it")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as fault:
        raise TokenFileError(f"the token file {path} cannot be read: {getattr(fault, 'strerror', None) or fault}") from None
    return parse_token_lines(text, str(path))


def client_token(path: Path) -> str:
    """The one token a client sends, from a token file read as :func:`read_token_file` reads it (owner-only).

    A bare token, or one ``scopes TOKEN`` line; a file of several tokens (the service's own) is refused.
    """
    tokens = read_token_file(path)
    if len(tokens) != 1:
        raise TokenFileError(f"the token file {path} holds {len(tokens)} tokens; a client sends one: give a file of "
                             "one token")
    return next(iter(tokens))


def parse_token_lines(text: str, where: str) -> dict[str, frozenset[Scope]]:
    """Token -> scopes from a token file's text: one bare token (every scope), or lines ``scope[,scope] TOKEN``.

    Blank lines and lines starting with ``#`` are skipped; ``all`` stands for every scope.
    """
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.strip().startswith("#")]
    if not lines:
        raise TokenFileError(f"the token file {where} is empty")
    if len(lines) == 1 and len(lines[0][1].split()) == 1:
        token = lines[0][1]
        _check_token(token, where, lines[0][0])
        return {token: ALL_SCOPES}
    grants: dict[str, frozenset[Scope]] = {}
    for n, line in lines:
        words = line.split()
        if len(words) != 2:
            raise TokenFileError(f"the token file {where} line {n} is not 'scope[,scope] TOKEN' (scopes: {SCOPE_WORDS})")
        scope_text, token = words
        _check_token(token, where, n)
        scopes: set[Scope] = set()
        for word in scope_text.split(","):
            if word == ALL_WORD:
                scopes |= ALL_SCOPES
            elif word in Scope._value2member_map_:
                scopes.add(Scope(word))
            else:
                raise TokenFileError(f"the token file {where} line {n} names scope '{word}'; scopes are {SCOPE_WORDS}")
        if token in grants:
            raise TokenFileError(f"the token file {where} line {n} repeats a token of an earlier line")
        grants[token] = frozenset(scopes)
    return grants


def _check_token(token: str, where: str, line: int) -> None:
    if any(not 0x21 <= ord(c) <= 0x7E for c in token):
        raise TokenFileError(f"the token file {where} line {line} has a token an HTTP header cannot carry (printable ASCII only)")
    if RECORDS_TOKEN.match(token):
        raise TokenFileError(f"the token file {where} line {line} holds a topology's records token, which the service "
                             "derives itself; give the token a name that does not start with 'records.'")


def required_scope(method: str, path: str) -> Scope | None:
    """The scope a ``/v1`` call needs; None for a call this table does not know, which only an all-scope token may make.

    Unknown calls are refused to scoped tokens rather than guessed, so a new route is closed until it is listed here.
    """
    parts = [p for p in path.split("/") if p][1:]  # after "v1"
    head = parts[0] if parts else ""
    if method in ("GET", "HEAD"):
        return Scope.READ
    if head in ("plans", "evaluations", "repairs", "tenants", "capacity"):
        return Scope.PLAN
    if head == "assignments":
        return Scope.BIND
    if head == "profiles":
        return Scope.PROFILES
    if head == "metrics" and method == "POST" and parts[1:] in (["batches"], ["tokens"]):
        return Scope.RECORDS
    return None


SCOPE_ACTIONS = {
    Scope.READ: "read from the planner",
    Scope.PLAN: "plan or register topologies",
    Scope.BIND: "bind plans to running topologies",
    Scope.PROFILES: "store or delete profile sets",
    Scope.RECORDS: "post workers' records",
}


def refusal(grant: Grant, needed: Scope | None) -> str | None:
    """The one sentence a 403 answers where ``grant`` lacks what the call needs, else None."""
    if needed is None:
        if grant.scopes == ALL_SCOPES and grant.topology is None:
            return None
        return "this call needs a token with every scope ('all'), and this token has only " + _listed(grant)
    if needed not in grant.scopes:
        return f"this token may not {SCOPE_ACTIONS[needed]}: it lacks the '{needed.value}' scope (it has {_listed(grant)})"
    return None


def _listed(grant: Grant) -> str:
    if grant.topology is not None:
        return f"the records of topology '{grant.topology}' only"
    return ", ".join(sorted(s.value for s in grant.scopes)) or "no scope"


def records_token(secret: bytes, topology: str) -> str:
    """The token that lets a topology's workers post that topology's records, and nothing else."""
    digest = hmac.new(secret, f"hetsched records v1\0{topology}".encode(), hashlib.sha256).hexdigest()
    return f"{RECORDS_TOKEN_PREFIX}.{topology}.{digest}"


def records_grant(secret: bytes, token: str) -> Grant | None:
    """The grant of a topology's records token made under ``secret``, or None where ``token`` is not one."""
    found = RECORDS_TOKEN.match(token)
    if found is None or not hmac.compare_digest(records_token(secret, found.group(1)), token):
        return None
    return Grant(frozenset({Scope.RECORDS}), topology=found.group(1))


def load_records_secret(folder: Path) -> bytes:
    """The service's records secret, made once (32 random bytes, mode 0600) in the database's private folder.

    Kept beside the database so a restarted service still accepts the records tokens of running topologies.
    """
    path = Path(folder) / RECORDS_SECRET_FILE
    if not path.is_file():
        made = write_atomic(path.with_name(f".{RECORDS_SECRET_FILE}.{secrets.token_hex(8)}"), secrets.token_hex(32) + "\n")
        try:
            os.link(made, path)  # never replaces: a service that made it first keeps its secret
        except FileExistsError:
            pass
        finally:
            made.unlink()
    secret = bytes.fromhex(path.read_text(encoding="utf-8").strip())
    if len(secret) < 16:
        raise ValueError(f"the records secret {path} is shorter than 16 bytes: delete it and a new one is made")
    return secret
