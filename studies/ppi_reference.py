"""Reference values of prediction-powered estimates from ``ppi-python`` (``ppi_py``, the PPI++
authors' implementation), against which ``tests/test_stats.py`` checks
:func:`inquitree.stats.prediction_powered`.

    python -m venv /tmp/ppi && /tmp/ppi/bin/pip install ppi-python==0.2.3 numpy
    /tmp/ppi/bin/python studies/ppi_reference.py     # writes studies/results/ppi_reference.json

ppi_py is not one of InquiTree's dependencies (it brings numba, pandas, statsmodels, scikit-learn),
so its answers are kept with the data they answer: seeded samples of independent items (each item
its own paper, the case where the estimand of ``prediction_powered``, a mean over papers, is ppi_py's
mean), with predictions that agree with the labels to a varying degree. ppi_py is given the
predictions on every item as its "unlabelled" set, as ``prediction_powered`` is.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "ppi_reference.json"


def samples() -> list[dict]:
    """Three seeded data sets: 300 items, 40 labelled; the judge right 90%, 60% and 20% of the time
    (otherwise a coin), on 0/0.5/1 labels."""
    out = []
    for seed, right in ((1, 0.9), (2, 0.6), (3, 0.2)):
        rng = np.random.default_rng(seed)
        y = rng.choice([0.0, 0.5, 1.0], size=300, p=[0.6, 0.2, 0.2])
        f = np.where(rng.random(300) < right, y, rng.choice([0.0, 0.5, 1.0], size=300))
        labelled = sorted(int(i) for i in rng.choice(300, size=40, replace=False))
        out.append({"seed": seed, "right": right, "y": y.tolist(), "f": f.tolist(), "labelled": labelled})
    return out


def main() -> None:
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    try:
        from ppi_py import ppi_mean_pointestimate
    except ImportError:
        sys.exit("ppi_reference.py: needs ppi-python (pip install ppi-python==0.2.3 in a venv of its own)")

    found = []
    for data in samples():
        y, f = np.array(data["y"]), np.array(data["f"])
        at = np.array(data["labelled"])
        estimates = {
            str(lam): float(np.ravel(ppi_mean_pointestimate(y[at], f[at], f, lam=lam))[0]) for lam in (0.0, 0.5, 1.0)
        }
        estimates["tuned"] = float(np.ravel(ppi_mean_pointestimate(y[at], f[at], f))[0])
        found.append({**data, "ppi_py": estimates})
    Path(args.out).write_text(json.dumps({"ppi_python": "0.2.3", "samples": found}) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
