"""Locating and running real kubectl binaries against a test server.

The Google Cloud SDK ships versioned binaries (`kubectl.1.27` ... `kubectl.1.33`)
next to a dispatcher (`/usr/bin/kubectl`) that GETs /version first and then
execs the binary matching the *server's* minor version - so which kubectl the
dispatcher runs depends on the fake server's gitVersion.  Tests use the
concrete binaries to know exactly which client they exercise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SDK_BIN = Path("/usr/lib/google-cloud-sdk/bin")


def find_kubectl(version: str) -> Path | None:
    """The kubectl binary for a minor version like "1.32", if installed:
    the SDK's versioned binary, else a `kubectl.<version>` on PATH."""
    candidate = SDK_BIN / f"kubectl.{version}"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(f"kubectl.{version}")
    return Path(found) if found else None


@dataclass
class Kubectl:
    """Runs one kubectl binary with a private HOME and discovery cache, so
    neither the user's ~/.kube nor another test's cache can leak in."""

    binary: Path
    kubeconfig: Path
    home: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(self.home / "kube-cache"),
            # No proxies: the server is on loopback.
            "NO_PROXY": "*",
        }

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.binary), *args], env=self.env(), capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def ok(self, *args: str) -> str:
        """Run and return stdout; fail with kubectl's stderr on error."""
        proc = self.run(*args)
        if proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stderr}")
        return proc.stdout


def kubectl_for(version: str, kubeconfig: Path, home: Path) -> Kubectl | None:
    binary = find_kubectl(version)
    return None if binary is None else Kubectl(binary, kubeconfig, home)

