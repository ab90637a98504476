"""Writing output files (writeup -o, --chart): whole files through a temporary file and a rename, the post and
its chart together or not at all, no temporary file left behind on an error, Ctrl-C or SIGTERM, and -o and
--chart never the same file."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from refusal import assert_refused, run

from llmcount.errors import LlmcountError
from llmcount.renderers import writeup


def test_post_and_chart_are_written(tmp_path: Path) -> None:
    result = run("writeup", "qwen3-8b", "-o", str(tmp_path / "post.md"), "--chart", str(tmp_path / "c.svg"))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.svg", "post.md"]  # and no temporary file


@pytest.mark.parametrize(
    ("output", "chart"),
    [("same.svg", "same.svg"), ("same.svg", "./same.svg"), ("sub/../same.svg", "same.svg")],
)
def test_chart_and_output_naming_the_same_path(tmp_path: Path, output: str, chart: str, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert_refused(run("writeup", "qwen3-8b", "-o", output, "--chart", chart), "same file")
    assert not (tmp_path / "same.svg").exists()


def test_chart_and_output_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "link.svg").symlink_to(tmp_path / "real.svg")
    result = run("writeup", "qwen3-8b", "-o", str(tmp_path / "link.svg"), "--chart", str(tmp_path / "real.svg"))
    assert_refused(result, "same file")


def test_chart_and_output_hard_linked(tmp_path: Path) -> None:
    (tmp_path / "a.svg").write_text("old")
    os.link(tmp_path / "a.svg", tmp_path / "b.svg")
    assert_refused(run("writeup", "qwen3-8b", "-o", str(tmp_path / "a.svg"), "--chart", str(tmp_path / "b.svg")))
    assert (tmp_path / "a.svg").read_text() == "old"


def _temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_nothing_written_when_one_file_cannot_be(tmp_path: Path) -> None:
    post = tmp_path / "post.md"
    post.write_text("old post")
    with pytest.raises(LlmcountError, match="cannot write"):
        writeup.save({post: b"new post", tmp_path / "gone" / "c.svg": b"<svg/>"})
    assert post.read_text() == "old post"
    assert _temporaries(tmp_path) == []


@pytest.mark.parametrize(("signum", "raised"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, SystemExit)])
@pytest.mark.parametrize("moment", ["while_staging", "while_renaming"])
def test_signal_during_writing_leaves_no_temporary_file(tmp_path: Path, monkeypatch, signum, raised, moment) -> None:
    post, chart = tmp_path / "post.md", tmp_path / "c.svg"
    post.write_text("old post")
    target = "chmod" if moment == "while_staging" else "replace"
    real = getattr(os, target)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signum)  # delivered before the next bytecode: in the middle of save
        return real(*args, **kwargs)

    monkeypatch.setattr(writeup.os, target, interrupted)
    with pytest.raises(raised) as caught:
        writeup.save({post: b"new post", chart: b"<svg/>"})
    if raised is SystemExit:
        assert caught.value.code == 128 + signal.SIGTERM
    assert _temporaries(tmp_path) == []
    assert post.read_text() == "old post"
    assert not chart.exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_sigterm_in_a_real_process_removes_the_temporary_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from llmcount.renderers import writeup\n"
        "real = os.replace\n"
        "def replace(*a):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real(*a)\n"
        "writeup.os.replace = replace\n"
        "writeup.save({Path(sys.argv[1]): b'new'})\n"
    )
    post = tmp_path / "post.md"
    done = subprocess.run([sys.executable, "-c", script, str(post)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_permissions_of_a_replaced_file_are_kept(tmp_path: Path) -> None:
    post = tmp_path / "post.md"
    post.write_text("old")
    post.chmod(0o640)
    writeup.save({post: b"new"})
    assert post.read_text() == "new" and post.stat().st_mode & 0o777 == 0o640
