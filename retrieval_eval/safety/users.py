"""The users of ``retrieval-eval serve``'s own login: names, roles and hashed passwords in a file.

The file (``--users FILE``; default ``$RETRIEVAL_EVAL_HOME/users.yaml``) is YAML, written by
``retrieval-eval serve users add`` and readable by hand::

    users:
      ann: {role: rater, password: "scrypt$16384$8$1$<salt>$<hash>"}

Roles, each with the rights of the ones before: ``viewer`` reads the dashboard, ``rater`` also
grades the review queue (the rater's name is the judgment's rater), ``admin`` also manages
nothing more yet but is kept apart for what will. Passwords are hashed with scrypt
(``hashlib.scrypt``, RFC 7914: n=2**14, r=8, p=1, a 16-byte random salt, 32 bytes out), the
memory-hard KDF the standard library has (no passlib, bcrypt or argon2 is a dependency of the
``webui`` extra); a password is never stored, logged or taken as a command-line argument.
The file is written whole, readable by its owner only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from retrieval_eval.errors import ConfigError

Role = Literal["viewer", "rater", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "rater", "admin")
USERS_FILE = "users.yaml"  # in the home folder
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
MIN_PASSWORD = 8
_N, _R, _P, _SALT, _LEN = 2**14, 8, 1, 16, 32
_DUMMY = f"scrypt${_N}${_R}${_P}${'A' * 22}${'A' * 43}"  # a hash no password matches


def default_users_file() -> Path:
    from retrieval_eval.paths import home_dir

    return home_dir() / USERS_FILE


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str) -> str:
    """``scrypt$n$r$p$salt$hash`` of ``password`` with a new random salt."""
    salt = secrets.token_bytes(_SALT)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=_LEN)
    return f"scrypt${_N}${_R}${_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored`` (compared in constant time; a malformed hash
    matches nothing)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = _unb64(digest)
        found = hashlib.scrypt(
            password.encode(), salt=_unb64(salt), n=int(n), r=int(r), p=int(p),
            dklen=len(expected), maxmem=256 * 1024 * 1024,
        )  # fmt: skip
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(found, expected)


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: Role
    password_hash: str | None = None

    def may_grade(self) -> bool:
        return self.role in ("rater", "admin")


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ConfigError(
            f"user name {name!r}: use 1 to 64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    return name


def read_users(path: Path) -> dict[str, User]:
    """The users of ``path`` (none when it does not exist); a bad file is a
    :class:`ConfigError` naming the file, the user and the field."""
    from retrieval_eval.safety.yaml_input import describe, load_config_yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the users file ({exc.strerror})") from None
    try:
        import yaml

        data = load_config_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {describe(exc)}") from None
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, dict):
        raise ConfigError(
            f"{path}: a users file is a mapping 'users:' of name -> {{role, password}}; "
            "write it with `retrieval-eval serve users add NAME --role ROLE`"
        )
    found = {}
    for name, entry in users.items():
        where = f"{path}: users.{name}"
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ConfigError(f"{where}: not a user name (letters, digits, '.', '_', '@', '-')")
        if not isinstance(entry, dict) or set(entry) - {"role", "password"}:
            raise ConfigError(f"{where}: give 'role' and 'password' (nothing else)")
        role, hashed = entry.get("role"), entry.get("password")
        if role not in ROLES:
            raise ConfigError(f"{where}.role: {role!r} is no role: use one of {', '.join(ROLES)}")
        if not isinstance(hashed, str) or not hashed.startswith("scrypt$"):
            raise ConfigError(
                f"{where}.password: not a scrypt hash; set it with "
                f"`retrieval-eval serve users add {name} --role {role}`"
            )
        found[name] = User(name, role, hashed)
    return found


def write_users(path: Path, users: dict[str, User]) -> None:
    """Write ``users`` to ``path`` whole, readable and writable by its owner only."""
    import yaml

    from retrieval_eval.safety.files import write_file

    document = {
        "users": {u.name: {"role": u.role, "password": u.password_hash} for u in users.values()}
    }
    header = "# retrieval-eval serve's users: `retrieval-eval serve users add NAME --role ROLE`\n"
    write_file(path, header + yaml.safe_dump(document, sort_keys=True), make_folder=True)
    os.chmod(path, 0o600)


def authenticate(users: dict[str, User], name: str, password: str) -> User | None:
    """The user ``name`` when ``password`` is theirs; an unknown name costs the same time."""
    user = users.get(name)
    matches = verify_password(
        password, user.password_hash if user and user.password_hash else _DUMMY
    )
    return user if user is not None and matches else None
