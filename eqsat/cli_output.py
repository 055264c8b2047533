"""What `eqsat optimize` writes: where the ONNX goes and its bytes (ours, ours without the op
families that do not pay, or the input, as the speed check finds: `eqsat.onnx_io.optimize_to_onnx`),
and the JSON report."""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path
from typing import Any

import ir

from .cli_errors import UsageError
from .compare import Comparison
from .explain import provenance_records
from .optimize import Optimized
from .soundness.verify import Verification
from .speed import SpeedVerdict

__all__ = ["onnx_output", "original_of", "report_record", "comparison_record", "verification_record"]


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


def original_of(model: str) -> str | None:
    """What a speed check times ours against (`eqsat.onnx_io.optimize_to_onnx`): `model` when it is
    a file, kept byte for byte when ours is not faster; else None (a zoo model: its input program
    written as ONNX)."""
    return model if Path(model).is_file() else None


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def verification_record(v: Verification | None, unverified: str = "--no-verify") -> dict[str, Any]:
    """The verification of a result as the JSON report gives it; `verified: false` when it was
    skipped, and why (`Optimized.unverified`)."""
    if v is None:
        return {"verified": False, "status": f"not verified ({unverified})"}
    return {"verified": v.passed, "status": v.status, "input_sets": v.trials, "kinds": list(v.kinds),
            "runner": v.runner, "boundaries": v.boundaries, "max_abs_diff": finite(v.max_abs_diff),
            "notes": list(v.notes), "seconds": v.seconds}


def _program_record(target: str, extractor: str, cost_before: float, cost_after: float, extract_seconds: float,
                    info: Any, verification: Verification | None, mod: ir.IRModule, provenance: Any,
                    unverified: str = "--no-verify") -> dict[str, Any]:
    """One extracted program as the JSON reports give it."""
    return {"target": target, "extractor": extractor,
            "cost_before": finite(cost_before), "cost_after": finite(cost_after), "extract_seconds": extract_seconds,
            "extractor_info": {k: v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
                               for k, v in info.items()},
            "verification": verification_record(verification, unverified),
            "program": provenance_records(mod, provenance)}


def report_record(model: str, res: Optimized, check: SpeedVerdict | None) -> dict[str, Any]:
    """What `optimize --json` writes: costs, the saturation report, the verification, the speed check
    and every node of the program with its rule chain; the program is the one written when the speed
    check kept ours without some op families."""
    kept = check.result if check is not None and check.result is not None else res
    return {"model": model, **_program_record(kept.target, kept.extractor, kept.cost_before, kept.cost_after,
                                              kept.extract_seconds, kept.info, kept.verification, kept.mod,
                                              kept.provenance, kept.unverified),
            "report": res.report.to_dict(), "speed_check": check.to_dict() if check else None}


def comparison_record(model: str, cmp: Comparison) -> dict[str, Any]:
    """What `compare --json` writes: the saturation report, then each candidate's program as
    `optimize --json` writes it, with its letter (equal letters, equal programs)."""
    return {"model": model, "report": cmp.report.to_dict(),
            "candidates": [{"program_letter": c.program, "unit": c.unit,
                            **_program_record(c.target, c.extractor, c.cost_before, c.cost_after, c.extract_seconds,
                                              c.info, c.verification, c.mod, c.provenance)}
                           for c in cmp.candidates]}
