"""The analysis as a ``spark-submit`` application.

::

    spark-submit [--master URL] [--conf K=V ...] spark/job.py INPUT... --out DIR

Master and configuration come from spark-submit. Only the driver runs project code
(the jobs are DataFrame expressions, no Python UDFs), so executors need nothing but
Spark; the driver needs this project installed (``pip install -e '.[spark]'``) or its
root on ``PYTHONPATH``. Inputs and ``--out`` must be paths every executor can read and
write (local for ``local[*]``, a shared mount on a cluster).
"""

from __future__ import annotations

import sys
from pathlib import Path

# spark-submit puts this file's directory first on sys.path, where our module names
# (schema, session, ...) would shadow others: use the project root instead
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))


def main(argv: list[str] | None = None) -> int:
    import argparse
    import logging

    from spark.analyze import AnalyzeRequest, InputError, analyze
    from spark.dataset import DatasetError

    ap = argparse.ArgumentParser(prog="spark-submit spark/job.py",
                                 description="analyze tinySSB captures (see docs/spark.md)")
    ap.add_argument("inputs", nargs="+", metavar="INPUT",
                    help="capture file, directory of captures, or converted dataset")
    ap.add_argument("--out", "-o", required=True, metavar="DIR", help="report directory")
    ap.add_argument("--reconvert", action="store_true",
                    help="convert CBOR inputs again even if DIR/dataset is current")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    request = AnalyzeRequest(args.inputs, Path(args.out), master=None,
                             reconvert=args.reconvert)
    try:
        report = analyze(request, lambda m: print(f"analyze: {m}", file=sys.stderr,
                                                  flush=True))
    except (InputError, DatasetError) as exc:
        print(f"job: error: {exc}", file=sys.stderr)
        return 2
    print(report.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
