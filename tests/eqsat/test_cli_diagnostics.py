"""`eqsat check-rules`, `bisect`, `coverage` and the progress display."""

from __future__ import annotations

import io

import ir
import strategies
from ir import relay

from eqsat import RULESETS, Limits, call, pvars, rule, ruleset
from eqsat.cli import main
from eqsat.progress import ProgressLine
from eqsat.report import IterationRow
from eqsat.soundness.audit import audit_random, audit_rules
from eqsat.soundness.random_programs import DTYPES, OPERAND_SHAPES, random_programs

x, = pvars("x")


def test_check_rules_reports_every_rule_of_a_set(capsys):
    assert main(["check-rules", "--rules", "simplify"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 10 and lines[-1] == "simplify: 9 rules: 9 ok"
    assert lines[0].split()[:2] == ["relu-idempotent", "ok"] and "programs   2" in lines[0]


def test_check_rules_fails_on_an_unsound_rule(capsys, monkeypatch):
    drop = rule("relu-drop", call("nn.relu", x), x, example=lambda: relay.nn.relu(relay.var("a", shape=(2, 3))))
    monkeypatch.setitem(RULESETS, "planted", ruleset("planted", [drop]))
    assert main(["check-rules", "--rules", "simplify+planted"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].split()[:2] == ["relu-drop", "unsound"] and "bits differ" in lines[-2]
    assert lines[-1] == "simplify+planted: 10 rules: 9 ok, 1 unsound"


def test_random_programs_broadcast_and_cover_every_dtype():
    mods = list(random_programs(30, seed=3))
    assert [ir.astext(m) for m in random_programs(5, seed=3)] == [ir.astext(m) for m in mods[:5]]  # seeded
    mains = [ir.infer_type(m)["main"] for m in mods]  # every program type-checks
    assert {f.params[0].checked_type.dtype for f in mains} == set(DTYPES)
    assert all(tuple(p.checked_type.shape) in OPERAND_SHAPES for f in mains for p in f.params)


def test_random_audit_names_a_rule_that_breaks_random_programs():
    drop = rule("relu-drop", call("nn.relu", x), x)
    found = audit_random([*RULESETS["simplify"], drop], 40)
    assert set(found.unsound) == {"relu-drop"} and "nn.relu" in found.unsound["relu-drop"]
    assert found.fired > 0 and "unsound: relu-drop" in found.summary()
    assert not audit_random(RULESETS["default"], 15).unsound


def test_check_rules_runs_random_programs_when_asked(capsys):
    assert main(["check-rules", "--rules", "simplify", "--random", "10", "--seed", "2"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("random programs: 10, rules fired on ") and last.endswith("no rule unsound")


def test_audit_names_unsound_silent_and_exampleless_rules():
    a = lambda: relay.var("a", shape=(2, 3))  # noqa: E731
    zero = rule("zero-product", call("multiply", x, call("subtract", x, x)), call("subtract", x, x),
                example=lambda: a() * (a() - a()))
    relu_drop = rule("relu-drop", call("nn.relu", x), x, example=lambda: relay.nn.relu(a()))
    silent = rule("never", call("nn.relu", call("nn.relu", x)), x, example=lambda: relay.nn.relu(a()))
    misses = rule("relu-idem", call("nn.relu", call("nn.relu", x)), call("nn.relu", x),
                  example=lambda: relay.nn.relu(relay.nn.relu(a())), near_miss=lambda: relay.nn.relu(relay.nn.relu(a())))
    verdicts = {v.rule: v for v in audit_rules([zero, relu_drop, silent, misses, rule("bare", call("tanh", x), x)])}
    assert verdicts["relu-drop"].verdict == "unsound" and "bits differ" in verdicts["relu-drop"].detail
    assert verdicts["never"].verdict == "silent"
    assert verdicts["relu-idem"].verdict == "near-miss" and verdicts["relu-idem"].applied == 1
    assert verdicts["bare"].verdict == "no-example"


def test_a_failed_verification_names_the_unsound_rule(capsys, monkeypatch):
    planted = RULESETS["default"] + ruleset("planted", [rule("relu-drop", call("nn.relu", x), x)])
    monkeypatch.setitem(RULESETS, "planted", planted)
    assert main(["optimize", "resnet50", "--small", "--rules", "planted", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not compute what the original computes" in err
    assert "first unsound application: rule relu-drop in iteration 1 (e-class " in err and ": nn.relu(e-class " in err


def test_bisect_command(capsys):
    assert main(["bisect", "bert", "--small", "--quiet", "--input-sets", "2"]) == 0
    assert capsys.readouterr().out.startswith("no unsound rule application: ")


def test_coverage_command(tmp_path, capsys):
    mod, params = ir.models.get("nasrnn", small=True)
    log = tmp_path / "nasrnn.jsonl"
    strategies.tune(mod, "cpu", log=log, trials=1, repeat=1, params=params)
    assert main(["coverage", "nasrnn", "--small", "--log", str(log)]) == 0
    out = capsys.readouterr().out.splitlines()
    tuned, _, total = out[0].split(": ")[1].split()[:3]
    assert tuned == total and "workloads tuned; 0.0% of the cost" in out[0]
    assert all(" yes " in line for line in out[2:])
    assert main(["coverage", "nasrnn", "--small", "--log", str(tmp_path / "none.jsonl")]) == 2


def test_progress_is_off_unless_stderr_is_a_terminal_or_asked_for(capsys):
    run = ["optimize", "nasrnn", "--small", "--no-verify", "--iterations", "2"]
    assert main(run) == 0
    assert "iteration" not in capsys.readouterr().err
    assert main([*run, "--progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("iteration 1/2 · ") and "e-nodes" in err[0] and "s left" in err[0]
    assert main([*run, "--progress", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_live_progress_line_is_rewritten_and_cleared():
    stream = io.StringIO()
    row = IterationRow(1, 120, 100, {"add-commute": 4}, {}, {"search": 0.5, "apply": 0.25, "rebuild": 0.25})
    with ProgressLine(Limits(iterations=5, nodes=1000, seconds=10), stream, live=True) as show:
        show(row)
        show(row)
    text = stream.getvalue()
    assert text.startswith("\riteration 1/5 · 120/1000 e-nodes · 100 e-classes · 9.0 s of 10 s left · add-commute 4")
    assert "8.0 s of 10 s left" in text and text.endswith("\r") and "\n" not in text
