"""Redaction: a copy of a profile (or a rendered report) that can leave the building.

Identifying values become ``redacted-<10 hex>``: the first ten hex digits of
``sha256(salt + kind + value)``. The same value under the same salt always gives the same
token, so two redacted reports from one installation can still be compared (the same GPU keeps
the same token), while a different salt gives unrelated tokens.

Replaced: the host name and machine id; the system serial number (DMI); every GPU serial and
UUID (NVML, MIG, torch); every network interface's hardware address (the 20-byte InfiniBand
ones too); and, in every string anywhere in the profile, IPv4/IPv6 addresses, MAC addresses,
UUIDs (also with ``GPU-``/``MIG-`` prefixes), the user part of home-folder paths (``/home/<user>``,
``/Users/<user>``, ``C:\\Users\\<user>``), the user names given or seen in home paths, host
names and their domains. Kept: PCI bus ids
(``00000000:17:00.0``), version strings (``12.4``, ``535.104.05``), model names, numbers.
"""

from __future__ import annotations

import getpass
import hashlib
import ipaddress
import os
import re
import secrets as _secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hwadvisor.model.profile import Profile

SALT_ENV = "HWADVISOR_REDACT_SALT"
PREFIX = "redacted-"

_HEX = "0-9A-Fa-f"
_UUID_RE = re.compile(
    rf"(?<![{_HEX}-])(?:MIG-)?(?:GPU-)?[{_HEX}]{{8}}-[{_HEX}]{{4}}-[{_HEX}]{{4}}-[{_HEX}]{{4}}-[{_HEX}]{{12}}(?![{_HEX}])"
)
# Six pairs with one consistent separator, not inside a longer hex/colon/dot run (bus ids).
_MAC_RE = re.compile(
    rf"(?<![{_HEX}:.-])[{_HEX}]{{2}}([:-])[{_HEX}]{{2}}(?:\1[{_HEX}]{{2}}){{4}}(?![{_HEX}:.-])"
)
# Cisco's dotted form (001a.2b3c.4d7f) and a bare 12-digit MAC (001A2B3C4D8F: at least one
# letter and one digit, so that a plain 12-digit number is never taken for one).
_MAC_DOTTED_RE = re.compile(
    rf"(?<![{_HEX}:.-])[{_HEX}]{{4}}\.[{_HEX}]{{4}}\.[{_HEX}]{{4}}(?![{_HEX}:.-])"
)
_MAC_BARE_RE = re.compile(
    rf"(?<![{_HEX}])(?=[{_HEX}]{{0,11}}[A-Fa-f])(?=[{_HEX}]{{0,11}}\d)[{_HEX}]{{12}}(?![{_HEX}])"
)
# Candidates only: every match is checked with ipaddress before it is replaced.
_IPV6_RE = re.compile(
    rf"(?<![0-9A-Za-z:.])(?:[{_HEX}]{{0,4}}:){{2,7}}(?:[{_HEX}]{{1,4}}|\d{{1,3}}(?:\.\d{{1,3}}){{3}})?(?![0-9A-Za-z:.])"
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4_RE = re.compile(rf"(?<![\d.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\d.])")
_HOME_RE = re.compile(r"(/home/|/Users/|[A-Za-z]:(?:\\+|/)Users(?:\\+|/))([^/\\\s'\"<>:;,|]+)")
_REDACTED_RE = re.compile(rf"^{PREFIX}[0-9a-f]{{10}}$")

#: Keys whose values are enums or versions: never rewritten by the free-text passes that could
#: misread them (an IPv4-like 4-part version such as cuDNN "8.9.2.26").
_ENUM_KEYS = frozenset({"source", "status", "severity", "backend", "schema_version"})
_NO_IPV4_KEY_PARTS = ("version", "kernel")
#: Names too common to be identifying, never replaced as free text (the field holding the
#: name is still replaced): a host called "node", "vm" or "gpu" must not turn "in a VM" or "the
#: GPU" in every sentence into tokens.
_COMMON_WORDS = (
    "a an and are as at be by for from in is it of on or the to with "
    "box cluster compute cpu cpus cuda data default dev device disk gpu gpus head host lab linux "
    "local login machine main master memory node nodes nvidia server test torch vm vms worker "
    "workstation"
)
_NOT_SECRET = frozenset(
    {
        "",
        "localhost",
        "root",
        "user",
        "admin",
        "none",
        "unknown",
        # A placeholder some tools print for a hidden serial: as a secret it would take the
        # first word of every token already made ("redacted-…" → "redacted-<token>-…").
        "redacted",
        *_COMMON_WORDS.split(),
    }
)


def token(salt: str, kind: str, value: str) -> str:
    """The stable replacement for ``value``: ``redacted-`` + 10 hex digits of sha256."""
    digest = hashlib.sha256((salt + kind + value).encode("utf-8", "surrogatepass")).hexdigest()
    return PREFIX + digest[:10]


def _mac(text: str) -> str:
    """One spelling of a MAC address whatever the notation, so each gives the same token."""
    digits = re.sub(f"[^{_HEX}]", "", text).lower()
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


def _hardware_address(text: str) -> str:
    """A network interface's address as its token is made from: a 6-byte MAC in the one
    spelling :func:`_mac` gives (as free text finds it), a longer one (InfiniBand) lower-cased."""
    digits = re.sub(f"[^{_HEX}]", "", text)
    return _mac(text) if len(digits) == 12 else text.strip().lower()


def _is_ipv6(candidate: str) -> bool:
    if candidate.count(":") < 2 or not any(c in "0123456789abcdefABCDEF" for c in candidate):
        return False
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True


def _usable(values: Iterable[str]) -> list[str]:
    out = {v.strip() for v in values if v and v.strip()}
    return sorted((v for v in out if v.lower() not in _NOT_SECRET and len(v) >= 2), key=len)[::-1]


def _literal_re(values: list[str]) -> re.Pattern[str] | None:
    if not values:
        return None
    alternatives = "|".join(re.escape(v) for v in values)
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)


class _Redactor:
    def __init__(self, salt: str, literals: dict[str, list[str]]) -> None:
        self.salt = salt
        # Longest first so "node1.example.com" wins over "node1".
        self.literals = [(kind, _literal_re(_usable(vals))) for kind, vals in literals.items()]

    def tok(self, kind: str, value: str) -> str:
        return token(self.salt, kind, value)

    def text(self, text: str, ipv4: bool = True) -> str:
        if not text or _REDACTED_RE.match(text):
            return text
        text = _UUID_RE.sub(lambda m: self.tok("uuid", m.group(0).lower()), text)
        text = _MAC_RE.sub(lambda m: self.tok("mac", _mac(m.group(0))), text)
        text = _MAC_DOTTED_RE.sub(lambda m: self.tok("mac", _mac(m.group(0))), text)
        text = _MAC_BARE_RE.sub(lambda m: self.tok("mac", _mac(m.group(0))), text)
        text = _IPV6_RE.sub(
            lambda m: self.tok("ip", m.group(0).lower()) if _is_ipv6(m.group(0)) else m.group(0),
            text,
        )
        if ipv4:
            text = _IPV4_RE.sub(lambda m: self.tok("ip", m.group(0)), text)
        text = _HOME_RE.sub(lambda m: m.group(1) + self.tok("user", m.group(2)), text)
        for kind, pattern in self.literals:
            if pattern is not None:
                text = pattern.sub(self._literal_sub(kind), text)
        return text

    def _literal_sub(self, kind: str) -> Callable[[re.Match[str]], str]:
        def sub(match: re.Match[str]) -> str:
            return self.tok(kind, match.group(0).lower())

        return sub

    def walk(self, node: Any, key: str = "", ipv4: bool = True) -> Any:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for k, v in node.items():
                child_ipv4 = ipv4 and not any(part in k.lower() for part in _NO_IPV4_KEY_PARTS)
                out[k] = v if k in _ENUM_KEYS else self.walk(v, k, child_ipv4)
            return out
        if isinstance(node, list):
            return [self.walk(v, key, ipv4) for v in node]
        if isinstance(node, str):
            return self.text(node, ipv4)
        return node


def _current_users() -> list[str]:
    try:
        return [getpass.getuser()]
    except (KeyError, OSError, ImportError):
        return []


def _fact_value(fact: Any) -> str | None:
    value = getattr(fact, "value", None)
    return value if isinstance(value, str) and value else None


def _hostnames(name: str) -> list[str]:
    """The name, its short form, and its domain ("node1.lab.example.org": "node1",
    "lab.example.org" and "example.org"), which identify the organisation as much as the host."""
    labels = [part for part in name.split(".") if part]
    out = [name]
    if len(labels) > 1:
        out.append(labels[0])
        for start in range(1, len(labels) - 1):
            out.append(".".join(labels[start:]))
    return out


def _home_users(data: Any) -> list[str]:
    """User names seen in home-folder paths anywhere in a dumped profile: they are redacted
    wherever else they appear too (an imported profile's user is not this machine's)."""
    found: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)
        elif isinstance(node, str):
            found.update(m.group(2) for m in _HOME_RE.finditer(node))

    visit(data)
    return sorted(found)


def _collect(profile: Profile) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {
        "hostname": [],
        "machine-id": [],
        "serial": [],
        "uuid": [],
        "mac": [],
    }
    if name := _fact_value(profile.host.hostname):
        found["hostname"].extend(_hostnames(name))
    if mid := _fact_value(profile.host.machine_id):
        found["machine-id"].append(mid)
    if serial := _fact_value(profile.system.serial):
        found["serial"].append(serial)
    for interface in profile.network.interfaces:
        if mac := _fact_value(interface.mac):
            found["mac"].append(_hardware_address(mac))
    for gpu in profile.gpus:
        if serial := _fact_value(gpu.serial):
            found["serial"].append(serial)
        if uuid := _fact_value(gpu.uuid):
            found["uuid"].append(uuid)
        for mig in gpu.mig_instances:
            if uuid := _fact_value(mig.uuid):
                found["uuid"].append(uuid)
    for device in profile.frameworks.torch.devices:
        if uuid := _fact_value(device.uuid):
            found["uuid"].append(uuid)
    return found


def profile_secrets(profile: Profile, users: list[str] | None = None) -> list[str]:
    """The identifying values :func:`redact_profile` replaces: for :func:`redact_text`."""
    values = [v for vals in _collect(profile).values() for v in vals]
    values.extend(users if users is not None else _current_users())
    return _usable(values)


def _replace_fact(section: dict[str, Any], field: str, new: str) -> None:
    fact = section.get(field)
    if isinstance(fact, dict) and isinstance(fact.get("value"), str) and fact["value"]:
        fact["value"] = new


def redact_profile(profile: Profile, salt: str, users: list[str] | None = None) -> Profile:
    """A copy of ``profile`` with identifying values replaced by stable salted tokens.

    ``users`` are the user names to hide in free text (default: the current user).
    """
    return redact_profiles([profile], salt, users)[0]


def redact_profiles(
    profiles: list[Profile], salt: str, users: list[str] | None = None
) -> list[Profile]:
    """:func:`redact_profile` for several profiles at once, each value of any of them replaced
    in all of them (``diff`` shows two machines side by side)."""
    redactor = _redactor_for(profiles, salt, users)
    return [_redact_one(p, redactor) for p in profiles]


def redact_label(text: str, profiles: list[Profile], salt: str) -> str:
    """A label shown beside redacted profiles (a file name such as ``node1-20261121.json``)
    with the same replacements."""
    return _redactor_for(profiles, salt, None).text(text)


def _redactor_for(profiles: list[Profile], salt: str, users: list[str] | None) -> _Redactor:
    literals: dict[str, list[str]] = {
        "hostname": [],
        "machine-id": [],
        "serial": [],
        "uuid": [],
        "mac": [],
        "user": list(users if users is not None else _current_users()),
    }
    for profile in profiles:
        for kind, values in _collect(profile).items():
            literals[kind].extend(values)
        literals["user"].extend(_home_users(profile.model_dump(mode="json")))
    return _Redactor(salt, literals)


def _redact_one(profile: Profile, redactor: _Redactor) -> Profile:
    data = profile.model_dump(mode="json")

    # Whole-value fields first, with their own kind, so the token does not depend on the text.
    host = data.get("host") or {}
    for field, kind in (("hostname", "hostname"), ("machine_id", "machine-id")):
        fact = host.get(field)
        if isinstance(fact, dict) and isinstance(fact.get("value"), str) and fact["value"]:
            _replace_fact(host, field, redactor.tok(kind, fact["value"].lower()))
    system = data.get("system") or {}
    fact = system.get("serial")
    if isinstance(fact, dict) and isinstance(fact.get("value"), str) and fact["value"]:
        _replace_fact(system, "serial", redactor.tok("serial", fact["value"].lower()))
    for interface in (data.get("network") or {}).get("interfaces") or []:
        fact = interface.get("mac")
        if isinstance(fact, dict) and isinstance(fact.get("value"), str) and fact["value"]:
            _replace_fact(interface, "mac", redactor.tok("mac", _hardware_address(fact["value"])))
    for gpu in data.get("gpus") or []:
        for field, kind in (("serial", "serial"), ("uuid", "uuid")):
            fact = gpu.get(field)
            if isinstance(fact, dict) and isinstance(fact.get("value"), str) and fact["value"]:
                _replace_fact(gpu, field, redactor.tok(kind, fact["value"].lower()))
        for mig in gpu.get("mig_instances") or []:
            fact = mig.get("uuid")
            if isinstance(fact, dict) and isinstance(fact.get("value"), str) and fact["value"]:
                _replace_fact(mig, "uuid", redactor.tok("uuid", fact["value"].lower()))
    for device in ((data.get("frameworks") or {}).get("torch") or {}).get("devices") or []:
        fact = device.get("uuid")
        if isinstance(fact, dict) and isinstance(fact.get("value"), str) and fact["value"]:
            _replace_fact(device, "uuid", redactor.tok("uuid", fact["value"].lower()))

    return Profile.model_validate(redactor.walk(data))


#: Row fields that hold one identifying value each, with the token kind :func:`redact_profile`
#: gives that value: a fleet report's host names match the single-host reports' tokens.
ROW_FIELDS = {
    "hostname": "hostname",
    "hostnames": "hostname",
    "host_names": "hostname",
    "machine_id": "machine-id",
    "host_key": "machine-id",
    "gpu_uuid": "uuid",
    "serial": "serial",
    "system_serial": "serial",
}


class WordSecrets:
    """Known identifying values (a fleet's host names and their domains, machine ids, serials,
    hardware addresses) found in free text by looking each word up in a set, not by a regular
    expression of thousands of alternatives. A word is a run of letters, digits and ``_``;
    runs joined by ``.`` or ``-`` are tried longest first, so "node7.lab.example.org" is one
    token, "node7-gpu0" gives "node7"'s token, and "db.lab.example.org" gives the domain's —
    as the single-host report's literal passes would."""

    _RUN = re.compile(r"[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*")
    _PART = re.compile(r"[.-]")

    def __init__(self, values: dict[str, list[str]]) -> None:
        self.kinds: dict[str, str] = {}
        odd: dict[str, list[str]] = {}
        for kind, found in values.items():
            for value in _usable(found):
                key = value.lower()
                self.kinds.setdefault(key, kind)
                if not self._RUN.fullmatch(value):  # a serial with a space or a slash
                    odd.setdefault(kind, []).append(value)
        self.odd = [(kind, _literal_re(vals)) for kind, vals in odd.items()]

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def sub(self, text: str, tok: Callable[[str, str], str]) -> str:
        for kind, pattern in self.odd:
            if pattern is not None:
                text = pattern.sub(_replacer(kind, tok), text)
        return self._RUN.sub(lambda m: self._run(m.group(0), tok), text)

    def _run(self, run: str, tok: Callable[[str, str], str]) -> str:
        if _REDACTED_RE.match(run):
            return run
        # Word starts and ends: every boundary at a "." or "-" inside the run.
        cuts = [0] + [m.start() for m in self._PART.finditer(run)] + [len(run)]
        out: list[str] = []
        i = 0
        while i < len(cuts) - 1:
            start = cuts[i] + (1 if i > 0 else 0)
            for j in range(len(cuts) - 1, i, -1):
                word = run[start : cuts[j]].lower()
                kind = self.kinds.get(word)
                if kind is not None:
                    if i > 0:
                        out.append(run[cuts[i]])
                    out.append(tok(kind, word))
                    i = j
                    break
            else:
                out.append(run[cuts[i] : cuts[i + 1]])
                i += 1
        return "".join(out)


def _replacer(kind: str, tok: Callable[[str, str], str]) -> Callable[[re.Match[str]], str]:
    def sub(match: re.Match[str]) -> str:
        return tok(kind, match.group(0).lower())

    return sub


def fleet_secret_values(
    hostnames: Iterable[str | None], **others: Iterable[str | None]
) -> dict[str, list[str]]:
    """The values a :class:`WordSecrets` looks for, by token kind: each host name with its short
    name and domains (as one host's report), and ``others`` (``serial=[...]``, ``mac=[...]``,
    ``machine_id=[...]``) as they are (MACs in the one spelling their tokens use)."""
    found: dict[str, list[str]] = {"hostname": []}
    for name in hostnames:
        if name:
            found["hostname"].extend(_hostnames(name))
    for kind, values in others.items():
        kind = kind.replace("_", "-")
        clean = [v for v in values if v]
        found[kind] = [_hardware_address(v) for v in clean] if kind == "mac" else clean
    return found


def redact_rows(
    node: Any,
    salt: str,
    fields: dict[str, str] | None = None,
    secrets: WordSecrets | None = None,
) -> Any:
    """A copy of tabular data (query rows, a roll-up dict) with identifying values replaced.

    A value under a key of ``fields`` (default :data:`ROW_FIELDS`; a list of them too) becomes
    its token as a whole; every other string gets the free-text passes (UUIDs, MACs, IPs, home
    folders) and, with ``secrets``, every known host name, domain, serial and hardware address
    inside it (a finding's title that names its host), with the tokens one host's redacted
    report gives them."""
    wanted = ROW_FIELDS if fields is None else fields
    redactor = _Redactor(salt, {})

    def whole(kind: str, value: Any) -> Any:
        if isinstance(value, list):
            return [whole(kind, v) for v in value]
        if isinstance(value, str) and value and not _REDACTED_RE.match(value):
            return redactor.tok(kind, value.lower())
        return value

    def visit(value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return {
                k: whole(wanted[k], v) if k in wanted else visit(v, k) for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [visit(v, key) for v in value]
        if isinstance(value, str) and key not in _ENUM_KEYS:
            ipv4 = not any(part in key.lower() for part in _NO_IPV4_KEY_PARTS)
            text = redactor.text(value, ipv4)
            return secrets.sub(text, redactor.tok) if secrets else text
        return value

    return visit(node, "")


# --------------------------------------------------------------------------------------------
# Salt


def _config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hwadvisor"


def resolve_salt() -> tuple[str, str | None]:
    """The installation's salt and, when it could not be kept, why.

    Order: ``$HWADVISOR_REDACT_SALT``; else ``<XDG_CONFIG_HOME or ~/.config>/hwadvisor/redact-salt``
    (created once, random, mode 0600); else a random salt for this run only, with a warning:
    never a fixed one, which would let anyone reverse a token with one hash.
    """
    if env := os.environ.get(SALT_ENV):
        return env, None
    try:
        key = str(_config_dir())
    except RuntimeError as exc:  # no home directory to be found
        key = f"no home: {exc}"
    if key not in _RESOLVED:  # once per process and folder: callers ask for salt and warning
        _RESOLVED[key] = _stored_salt()
    return _RESOLVED[key]


#: What :func:`resolve_salt` found, by config folder.
_RESOLVED: dict[str, tuple[str, str | None]] = {}


def _stored_salt() -> tuple[str, str | None]:
    try:
        folder = _config_dir()
        path = folder / "redact-salt"
        try:
            existing = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            existing = ""
        if existing:
            return existing, None
        folder.mkdir(parents=True, exist_ok=True)
        salt = _secrets.token_hex(16)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it first: use theirs
            existing = path.read_text(encoding="utf-8").strip()
            if existing:
                return existing, None
            raise
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(salt + "\n")
        return salt, None
    except (OSError, RuntimeError) as exc:
        # Random, for this run only (resolve_salt keeps it for the process): never a fixed salt,
        # which would let anyone reverse a token with one hash.
        return _secrets.token_hex(16), (
            f"redaction used a one-off salt: none could be stored ({exc}), so this run's "
            f"tokens will not match other runs'; set {SALT_ENV} to a private value to keep "
            "them comparable"
        )


def default_salt() -> str:
    """The installation's salt (see :func:`resolve_salt` for when it cannot be kept)."""
    return resolve_salt()[0]


def salt_warning() -> str | None:
    """Why redaction tokens of this run are not comparable with other runs', if they are not."""
    return resolve_salt()[1]


# --------------------------------------------------------------------------------------------
# A copy for logs (``hwadvisor fleet emit``)

#: Why a fact is null in a log copy.
LOG_REASON = "left out of the log copy (hwadvisor fleet emit --full keeps it)"
_LOG_IP = "(ip removed)"
_LOG_MAC = "(mac removed)"


def _addresses_removed(text: str, ipv4: bool) -> str:
    """``text`` with IP and MAC addresses replaced; UUIDs (the GPUs' ids) left as they are."""
    out: list[str] = []
    start = 0
    for match in [*_UUID_RE.finditer(text), None]:
        end = match.start() if match is not None else len(text)
        part = text[start:end]
        if part:
            for pattern in (_MAC_RE, _MAC_DOTTED_RE, _MAC_BARE_RE):
                part = pattern.sub(_LOG_MAC, part)
            part = _IPV6_RE.sub(lambda m: _LOG_IP if _is_ipv6(m.group(0)) else m.group(0), part)
            if ipv4:
                part = _IPV4_RE.sub(_LOG_IP, part)
        out.append(part)
        if match is not None:
            out.append(match.group(0))
            start = match.end()
    return "".join(out)


def log_copy(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of a dumped profile for logs that many people read: serial numbers (system,
    board, GPUs) and network hardware addresses become null with :data:`LOG_REASON`, IP and
    MAC addresses in free text ``(ip removed)``/``(mac removed)``. Kept, because the fleet
    needs them to tell machines apart: the host name, the machine id and the GPU UUIDs."""

    def is_fact(node: Any) -> bool:
        return isinstance(node, dict) and "value" in node and "reason" in node

    def walk(node: Any, key: str, ipv4: bool) -> Any:
        if isinstance(node, dict):
            if is_fact(node) and (key == "mac" or key == "serial" or key.endswith("_serial")):
                return {**node, "value": None, "reason": LOG_REASON} if node["value"] else node
            out: dict[str, Any] = {}
            for k, v in node.items():
                if k in _ENUM_KEYS or (key == "" and k == "host"):
                    out[k] = v
                    continue
                child_ipv4 = ipv4 and not any(part in k.lower() for part in _NO_IPV4_KEY_PARTS)
                out[k] = walk(v, k, child_ipv4)
            return out
        if isinstance(node, list):
            return [walk(v, key, ipv4) for v in node]
        if isinstance(node, str):
            return _addresses_removed(node, ipv4)
        return node

    result: dict[str, Any] = walk(data, "", True)
    return result
