"""``dnnmap map --mapper marvel`` as a new user runs it."""

from __future__ import annotations

import subprocess
import sys


def test_map_command_runs_the_marvel_mapper():
    out = subprocess.run([sys.executable, "-m", "dnnmap.cli.main", "map", "mobilenetv2", "--arch", "marvel_platform2",
                          "--mapper", "marvel", "--layers", "block_1_depthwise,block_1_project"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "block_1_project" in out.stdout and "marvel" in out.stdout
