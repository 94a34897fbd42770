"""What the sandbox process loads before tools run, checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

PROBE = r'''
import sys
from finevo.sandbox.preload import _close_label_attribute_routes
_close_label_attribute_routes()
import numpy as np
import pandas as pd

label = "".join(chr(c) for c in (95, 95)) + "array_interface" + "".join(chr(c) for c in (95, 95))
forged = {"data": (16, False), "shape": (1,), "typestr": "<i8", "version": 3}
series = pd.Series({label: forged})
frame = pd.DataFrame({label: [forged]})
routes = {"series": series, "row": frame.iloc[0], "frame": frame}
for name, obj in routes.items():
    try:
        getattr(obj, label)
    except AttributeError:
        pass
    else:
        sys.exit(f"{name}: a dunder label answered as an attribute")
    # numpy must see an object array of the labelled value, never memory at the forged address
    if np.asarray(obj).dtype != object:
        sys.exit(f"{name}: numpy read the label as its array interface")
close = pd.DataFrame({"Close": [1.0, 2.0, 4.0]})
assert close.Close.sum() == 7.0 and close.rolling(2).mean().Close.iloc[-1] == 3.0
assert close.groupby("Close").Close.sum().sum() == 7.0
print("ok")
'''


def test_a_computed_dunder_label_is_no_attribute_after_preload() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr or proc.stdout
    assert proc.stdout.strip() == "ok"
