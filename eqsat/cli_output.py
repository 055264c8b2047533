"""What `eqsat optimize` writes: where the ONNX goes and which model (ours, or the input when the
speed check finds ours no faster), and the JSON report."""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path
from typing import Any

import ir

from .cli_errors import UsageError
from .explain import provenance_records
from .onnx_io import faster_of, to_onnx
from .optimize import Optimized
from .soundness.verify import Verification
from .speed import SpeedCheck

__all__ = ["onnx_output", "onnx_model", "report_record", "verification_record"]


def onnx_output(args: argparse.Namespace) -> str | None:
    """Where the optimized ONNX goes (the positional OUT or --onnx), checked before any work starts;
    sets `args.target` when none was given: ort for an .onnx model written back as ONNX, else cpu."""
    if args.output and args.onnx:
        raise UsageError(f"give the output file once: {args.output!r} or --onnx {args.onnx!r}")
    out = args.output or args.onnx
    if args.target is None:
        args.target = "ort" if out and Path(args.model).is_file() else "cpu"
    if not out and (args.onnx_contrib or args.standard_onnx):
        raise UsageError(f"{'--onnx-contrib' if args.onnx_contrib else '--standard-onnx'} says how to write ONNX: "
                         "give an output file (eqsat optimize IN.onnx OUT.onnx, or --onnx OUT.onnx)")
    if args.onnx_contrib and args.standard_onnx:
        raise UsageError("--onnx-contrib and --standard-onnx contradict each other: give one of them")
    if out:
        for package in ("onnx",) + (("onnxruntime",) if args.target == "ort" else ()):
            if importlib.util.find_spec(package) is None:
                raise UsageError(f"writing ONNX needs the {package} package: pip install 'relay-eqsat[onnx]'")
    return out


def onnx_model(args: argparse.Namespace, res: Any, mod: ir.IRModule, params: dict) -> tuple[bytes, SpeedCheck | None]:
    """The ONNX model to write: ours, or for the ort target the input (byte for byte when it is a
    file) when ours is not faster (`faster_of`, unless --no-speed-check), with the check's outcome."""
    ours = to_onnx(res, args.standard_onnx, args.onnx_contrib)
    if res.target != "ort" or not args.speed_check:
        return ours.SerializeToString(), None
    import onnx
    given = Path(args.model).is_file()
    original = onnx.load(args.model) if given else ir.frontend.to_onnx(mod, params)
    chosen, check = faster_of(res, original, ours, optimizer=args.ort_optimizer, threads=args.threads)
    if chosen is original and given:
        return Path(args.model).read_bytes(), check
    return chosen.SerializeToString(), check


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def verification_record(v: Verification | None) -> dict[str, Any]:
    """The verification of a result as the JSON report gives it; `verified: false` when it was skipped."""
    if v is None:
        return {"verified": False, "status": "not verified (--no-verify)"}
    return {"verified": v.passed, "status": v.status, "input_sets": v.trials, "kinds": list(v.kinds),
            "runner": v.runner, "boundaries": v.boundaries, "max_abs_diff": finite(v.max_abs_diff),
            "notes": list(v.notes), "seconds": v.seconds}


def report_record(model: str, res: Optimized, check: SpeedCheck | None) -> dict[str, Any]:
    """What `optimize --json` writes: costs, the saturation report, the verification, the speed check
    and every node of the program with its rule chain."""
    return {"model": model, "target": res.target, "extractor": res.extractor,
            "cost_before": finite(res.cost_before), "cost_after": finite(res.cost_after),
            "extract_seconds": res.extract_seconds,
            "extractor_info": {k: v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
                               for k, v in res.info.items()},
            "report": res.report.to_dict(), "verification": verification_record(res.verification),
            "speed_check": check.to_dict() if check else None,
            "program": provenance_records(res.mod, res.provenance)}
