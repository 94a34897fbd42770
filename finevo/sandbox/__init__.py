"""Contained execution of generated tools: see :mod:`finevo.sandbox.api` for the interface.

``create_sandbox(snapshot_dir=None, backend=SandboxBackend.WARM, policy=True)`` returns the
sandbox every caller uses; the warm backend is the default.
"""

from __future__ import annotations

from finevo.sandbox.api import ExecStatus, ExecutionResult, Limits, Sandbox
from finevo.sandbox.backends import SubprocessSandbox, WarmSandbox, create_sandbox

__all__ = ["ExecStatus", "ExecutionResult", "Limits", "Sandbox", "SubprocessSandbox", "WarmSandbox",
           "create_sandbox"]
