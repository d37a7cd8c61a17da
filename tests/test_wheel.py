"""The way a new user meets toolreg: build the wheel, install it in a fresh venv, run the demo."""

from __future__ import annotations

import email
import os
import re
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")}
    env.pop("PYTHONPATH", None)
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.slow
def test_wheel_installs_and_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    pip = (sys.executable, "-m", "pip")
    run(*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, ROOT, cwd=tmp_path)
    (wheel,) = dist.glob("toolreg-*.whl")
    check_metadata(wheel)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(clear=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    # The new environment sees this one's packages (openai, jsonschema, ...) through a .pth
    # file, so the test needs no download, whether or not this run is itself in a venv;
    # pip still checks that the wheel's requirements are met. Only directories are added:
    # this environment's own .pth files (e.g. an editable toolreg) are not processed there.
    site_dir = next((env_dir / "lib").glob("python*/site-packages"))
    (site_dir / "_outer_packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run(*pip, "--python", bin_dir / "python", "install", "-q", "--no-index", wheel, cwd=tmp_path)
    done = run(bin_dir / "toolreg", "demo", "--sample", "expense_tracker", cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert lines[0] == "scripted model; set OPENAI_BASE_URL and TOOLREG_MODEL to use a real one"
    assert lines[-1].endswith("net, 6.00 USD with 20% tax.")
    where = run(bin_dir / "python", "-c", "import toolreg; print(toolreg.__file__)", cwd=tmp_path)
    assert str(env_dir) in where.stdout  # the installed wheel, not the checkout


def check_metadata(wheel: Path) -> None:
    """What an index shows: the license (its file shipped), the Pythons, the status, keywords."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
        (license_name,) = [n for n in names if n.endswith("/LICENSE")]
        license_text = archive.read(license_name).decode()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License")
    assert re.search(r'^license = "MIT"$', pyproject, re.MULTILINE)
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    classifiers = metadata.get_all("Classifier")
    lowest = re.search(r'^requires-python = ">=3\.(\d+)"$', pyproject, re.MULTILINE)
    assert lowest is not None
    pythons = sorted(
        int(c.rsplit(".", 1)[1])
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert pythons[0] == int(lowest.group(1))
    assert pythons == list(range(pythons[0], pythons[-1] + 1))  # no gap
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    keywords = metadata["Keywords"].split(",")
    assert {"llm", "function-calling", "mcp", "chatglm3"} <= set(keywords)
