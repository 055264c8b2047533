"""Hostile inputs to the engine and the `eqsat` command: output paths, costs, limits and API misuse."""

from __future__ import annotations

import os
import socket

import pytest

from eqsat.atomic import OutputFileError, write_files
from eqsat.cli import main

RUN = ["optimize", "nasrnn", "--small", "--quiet", "--no-verify", "--iterations", "2"]


def one_line_error(capsys, argv: list[str], status: int = 2) -> str:
    """Run the command, check its status and that stderr is one line without a traceback; that line."""
    assert main(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err.strip()


# --- output files: symbolic links are written through, special files refused -------------------------

def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real" / "report.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_files({link: b"new"})
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and (real.stat().st_mode & 0o777) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real"] and os.listdir(real.parent) == ["report.json"]


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.onnx"
    link.symlink_to(tmp_path / "target.onnx")
    write_files({link: b"model"})
    assert link.is_symlink() and (tmp_path / "target.onnx").read_bytes() == b"model"


def special_files(tmp_path) -> dict[str, str]:
    """A FIFO, a directory, a socket, a character device and a link to the FIFO in `tmp_path`."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dir").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    sock.close()
    (tmp_path / "fifo-link").symlink_to(fifo)
    return {"fifo": str(fifo), "dir": str(tmp_path / "dir"), "sock": str(tmp_path / "sock"),
            "device": "/dev/null", "fifo-link": str(tmp_path / "fifo-link")}


@pytest.mark.parametrize("kind", ["fifo", "dir", "sock", "device", "fifo-link"])
def test_special_files_are_refused_before_anything_is_written(tmp_path, kind):
    paths = special_files(tmp_path)
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(OutputFileError, match="not a regular file"):
        write_files({kept: b"new", paths[kind]: b"x"})
    assert kept.read_text() == "old" and sorted(os.listdir(tmp_path)) == before
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


@pytest.mark.parametrize("option, kind", [("--json", "fifo"), ("--onnx", "fifo-link"), ("--onnx", "device"),
                                          ("--json", "sock")])
def test_the_cli_refuses_special_outputs_in_one_line(tmp_path, capsys, option, kind):
    path = special_files(tmp_path)[kind]
    line = one_line_error(capsys, [*RUN, option, path])
    assert "not a regular file" in line and option in line
