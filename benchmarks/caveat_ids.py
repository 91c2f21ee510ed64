"""Print each calibration.json caveat's message id as a page looks it up (its figures masked as {n0}, {n1} …,
``planner.speed.caveats.caveat_said``), each figure beside its field, and whether messages.po has its Russian: what a
translator writes after a refit that changed a caveat's words (a dev script, not a test).

    PYTHONPATH=src .venv/bin/python benchmarks/caveat_ids.py [KEY ...]
"""

from __future__ import annotations

import re
import sys

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.caveats import caveat_said
from anchorgpu.web.i18n import PageText

if __name__ == "__main__":
    ru = PageText("ru")
    for key, text in calibration().caveats.items():
        if sys.argv[1:] and key not in sys.argv[1:]:
            continue
        line = caveat_said(text)
        shown = line.template
        for name, figure in line.values.items():
            shown = re.sub(r"\{" + name + r"(:,)?\}", f"{{{name}={figure}}}", shown)
        print(f"== {key}: {'translated' if ru.translated(line.template) else 'NOT translated'}\n{line.template}\n"
              f"-- figures: {shown}\n")
