"""Hostile paths: names the system refuses, in every place a path is typed (the model argument, -o, --chart,
--index, --checkpoint), are one line on stderr naming the path and the reason, exit 1, nothing on stdout."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from refusal import assert_refused, run

from llmcount import files

PLACES = {
    "count_model": (["count"], ""),
    "verify_model": (["verify"], ""),
    "writeup_output": (["writeup", "qwen3-8b", "-o"], ".md"),
    "writeup_chart": (["writeup", "qwen3-8b", "--chart"], ".png"),
    "writeup_index": (["writeup", "qwen3-8b", "--index"], ".json"),
    "chart_output": (["chart", "qwen3-8b", "-o"], ".png"),
    "verify_index": (["verify", "qwen3-8b", "--index"], ".json"),
    "verify_checkpoint": (["verify", "qwen3-8b", "--checkpoint"], ".safetensors"),
}


def attack(place: str, path: str):
    args, suffix = PLACES[place]
    return run(*args, path + suffix if path else path)


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    file = tmp_path / "config.json"
    file.write_text("{}")
    return file


@pytest.mark.parametrize("place", sorted(PLACES))
def test_name_longer_than_name_max(tmp_path: Path, place: str) -> None:
    assert_refused(attack(place, str(tmp_path / ("a" * 300))), "aaaa", "File name too long")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_relative_name_longer_than_name_max(place: str) -> None:
    assert_refused(attack(place, "b" * 300), "bbbb", "File name too long")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_path_longer_than_path_max(tmp_path: Path, place: str) -> None:
    assert_refused(attack(place, str(tmp_path) + "/x" * 3000), "File name too long")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_tilde_of_a_user_who_does_not_exist(place: str) -> None:
    assert_refused(attack(place, "~nosuchuser0/x"), "~nosuchuser0", "no user")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_path_through_a_file(a_file: Path, place: str) -> None:
    assert_refused(attack(place, f"{a_file}/x"), f"{a_file} is a file, not a folder")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_symlink_loop(tmp_path: Path, place: str) -> None:
    _, suffix = PLACES[place]
    loop = tmp_path / f"loop{suffix}"
    loop.symlink_to(loop)
    args, _ = PLACES[place]
    assert_refused(run(*args, str(loop)), "loop", "symbolic links")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_nul_byte_in_the_name(place: str) -> None:
    assert_refused(attack(place, "x\0y"), "NUL")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_empty_name(place: str) -> None:
    assert_refused(attack(place, ""), "empty")


@pytest.mark.parametrize("place", sorted(PLACES))
def test_folder_that_may_not_be_entered(tmp_path: Path, place: str, monkeypatch) -> None:
    """As root a chmod 000 folder can still be entered, so the system's refusal is simulated at stat."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path).startswith(f"{locked}/"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(files.os, "stat", stat)
    assert_refused(attack(place, f"{locked}/x"), str(locked), "Permission denied")


@pytest.mark.skipif(os.geteuid() == 0, reason="root enters any folder")
def test_folder_that_may_not_be_entered_for_real(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "config.json").write_text("{}")
    locked.chmod(0)
    try:
        assert_refused(run("count", str(locked / "config.json")), "Permission denied")
    finally:
        locked.chmod(0o755)


def test_the_installed_command_prints_one_line_for_a_long_name(tmp_path: Path) -> None:
    """The same through a real process: main(), not only the typer app."""
    done = subprocess.run(
        [sys.executable, "-m", "llmcount", "writeup", "qwen3-8b", "-o", "~nosuchuser0/" + "c" * 300],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_config_named_like_a_hub_id_under_a_long_folder(tmp_path: Path) -> None:
    # org/name is a Hub id only when no local folder could be meant; a system error is not "not found"
    assert_refused(run("count", "c" * 300 + "/model"), "File name too long")


def test_valid_paths_still_work(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "vocab_size": 1000,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
            }
        )
    )
    assert run("count", str(config)).exit_code == 0
    assert run("count", str(tmp_path)).exit_code == 0
    assert run("writeup", "qwen3-8b", "-o", str(tmp_path / "post.md")).exit_code == 0
    assert (tmp_path / "post.md").read_text().strip()


@pytest.mark.parametrize("place", sorted(PLACES))
def test_newline_and_terminal_escape_in_the_name_stay_one_inert_line(tmp_path: Path, place: str) -> None:
    result = attack(place, str(tmp_path / "evil\n\x1b[2Jname" / "x"))  # a folder that does not exist
    assert_refused(result, "evil\\n\\x1b[2Jname")
    assert "\x1b" not in result.stderr
