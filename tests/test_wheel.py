"""The way a new user meets toolreg: build the wheel, install it in a fresh venv, run the demo."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import venv
from pathlib import Path

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


def test_wheel_installs_and_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    pip = (sys.executable, "-m", "pip")
    run(*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, ROOT, cwd=tmp_path)
    (wheel,) = dist.glob("toolreg-*.whl")
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
