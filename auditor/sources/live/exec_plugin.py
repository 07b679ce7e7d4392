"""Running a kubeconfig's exec credential plugin, bounded in time and output.

A `users[].user.exec` entry names a program that prints an `ExecCredential`
(https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins,
https://kubernetes.io/docs/reference/config-api/client-authentication.v1/). The kubernetes
client's own runner waits for it forever, prints its standard error word for
word through `logging`, and on failure carries on without credentials (every
request is then a 401). This one:

* runs the plugin non-interactively (no standard input, `spec.interactive:
  false`; a plugin that demands a terminal, `interactiveMode: Always`, is
  refused), in its own process group, in the kubeconfig's folder;
* kills the whole group when it runs longer than `timeout` seconds
  (`--exec-timeout`) or prints more than `MAX_OUTPUT_BYTES`;
* turns every failure (cannot start, non-zero exit, a timeout, output that is
  not an `ExecCredential` with a token or a client certificate) into an
  `ExecPluginError` naming the plugin, with its standard error summarised
  and escaped (`safe_text.summary`). The credential itself is never quoted.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from typing import Any

from auditor.errors import ClusterError
from auditor.sources.live.safe_text import clean, summary

MAX_OUTPUT_BYTES = 1024 * 1024  # an ExecCredential is a few kilobytes
_READ = 65536


class ExecPluginError(ClusterError):
    """The plugin gave no usable credential: the run stops (exit 3)."""

    def __init__(self, message: str) -> None:
        super().__init__(clean(message))


def _exec_info(api_version: str, cluster: dict[str, Any] | None) -> str:
    spec: dict[str, Any] = {"interactive": False}
    if cluster is not None:
        spec["cluster"] = cluster
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "spec": spec})


def _environment(config: dict[str, Any], info: str) -> dict[str, str]:
    env = dict(os.environ)
    for item in config.get("env") or ():
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            env[item["name"]] = str(item.get("value", ""))
    env["KUBERNETES_EXEC_INFO"] = info
    return env


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _collect(process: subprocess.Popen[bytes], timeout: float | None, name: str) -> tuple[bytes, bytes]:
    """Both output streams, read until the plugin closes them, within the bounds."""
    assert process.stdout is not None and process.stderr is not None
    deadline = None if not timeout else time.monotonic() + timeout
    buffers = {process.stdout: bytearray(), process.stderr: bytearray()}
    with selectors.DefaultSelector() as selector:
        for stream in buffers:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                _kill(process)
                raise ExecPluginError(f"{name} did not finish within {timeout:g}s (--exec-timeout); it was stopped")
            for key, _ in selector.select(wait):
                chunk = os.read(key.fd, _READ)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer = buffers[key.fileobj]  # type: ignore[index]
                buffer.extend(chunk)
                if len(buffer) > MAX_OUTPUT_BYTES:
                    _kill(process)
                    raise ExecPluginError(f"{name} printed more than {MAX_OUTPUT_BYTES // 1024} KiB; it was stopped")
    return bytes(buffers[process.stdout]), bytes(buffers[process.stderr])


def _start(argv: list[str], env: dict[str, str], cwd: str | None, name: str,
           install_hint: str | None) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, cwd=cwd, start_new_session=True)
    except FileNotFoundError:
        hint = f" ({summary(install_hint)})" if install_hint else ""
        raise ExecPluginError(f"{name} not found{hint}") from None
    except OSError as error:
        raise ExecPluginError(f"{name} cannot be started: {error.strerror or error}") from None


def _credential(stdout: bytes, api_version: str, name: str) -> dict[str, Any]:
    try:
        document = json.loads(stdout)
    except (ValueError, UnicodeDecodeError):
        raise ExecPluginError(f"{name} did not print an ExecCredential (not JSON)") from None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential":
        raise ExecPluginError(f"{name} did not print an ExecCredential")
    if document.get("apiVersion") != api_version:
        raise ExecPluginError(f"{name} answered apiVersion {str(document.get('apiVersion'))[:80]!r}, "
                              f"not the {api_version} the kubeconfig asks for")
    status = document.get("status")
    if not isinstance(status, dict):
        raise ExecPluginError(f"{name} printed an ExecCredential without status")
    has_token = isinstance(status.get("token"), str) and bool(status["token"])
    has_certificate = isinstance(status.get("clientCertificateData"), str) and isinstance(
        status.get("clientKeyData"), str)
    if not has_token and not has_certificate:
        raise ExecPluginError(f"{name} printed an ExecCredential with neither a token nor a client certificate "
                              "and key")
    return status


def run(config: dict[str, Any], cwd: str | None, cluster: dict[str, Any] | None, timeout: float | None,
        user: str) -> dict[str, Any]:
    """Run the plugin of `config` (a kubeconfig `exec` mapping) and return its credential's `status`."""
    command, api_version = config.get("command"), config.get("apiVersion")
    if not isinstance(command, str) or not command:
        raise ExecPluginError(f"user {user}: exec has no command")
    name = f"exec plugin {os.path.basename(command)!r} (user {user})"
    if not isinstance(api_version, str) or not api_version:
        raise ExecPluginError(f"{name}: exec has no apiVersion")
    if config.get("interactiveMode") == "Always":
        raise ExecPluginError(f"{name} needs a terminal (interactiveMode: Always); audit runs plugins "
                              "non-interactively: log in first, or use a plugin mode that caches its credential")
    args = config.get("args") or []
    if not isinstance(args, list):
        raise ExecPluginError(f"{name}: exec args must be a list")
    hint = config.get("installHint") if isinstance(config.get("installHint"), str) else None
    env = _environment(config, _exec_info(api_version, cluster if config.get("provideClusterInfo") else None))
    process = _start([command, *[str(arg) for arg in args]], env, cwd or None, name, hint)
    try:
        stdout, stderr = _collect(process, timeout, name)
        code = process.wait()
    except BaseException:
        if process.poll() is None:
            _kill(process)
        raise
    if code != 0:
        said = summary(stderr.decode("utf-8", "replace"))
        raise ExecPluginError(f"{name} failed (exit status {code}): {said}")
    return _credential(stdout, api_version, name)
