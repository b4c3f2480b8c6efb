"""The C++-level jobs, run from pytest so CI runs them: the standalone tests under ASan + UBSan, and the
aarch64 cross build (NEON kernel vs serial) under qemu-user."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(script: str) -> str:
    proc = subprocess.run([str(REPO / "scripts" / script)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{script} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_native_sanitize() -> None:
    out = _run("native-sanitize")
    assert "test_scan: " in out and "serial" in out
    assert "test_buddy: OK" in out
    assert "test_radix: OK" in out
    assert "test_qring: OK" in out
    assert "native-sanitize: OK" in out


def test_native_neon_under_qemu() -> None:
    out = _run("native-neon")
    assert "ISAs: neon, serial" in out  # the NEON kernel was built, registered and compared with serial
    assert "test_buddy: OK" in out
    assert "test_radix: OK" in out
    assert "test_qring: OK" in out
