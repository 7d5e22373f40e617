"""The Docker images and compose file (no Docker engine here: their content is checked)."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[1] / "docker"


def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def test_compose_has_a_service_per_vendor_with_its_gpus():
    services = compose()["services"]
    cuda, rocm = services["aorta-cuda"], services["aorta-rocm"]
    (nvidia,) = cuda["deploy"]["resources"]["reservations"]["devices"]
    assert nvidia["driver"] == "nvidia" and nvidia["capabilities"] == ["gpu"] and nvidia["count"] == "all"
    assert set(rocm["devices"]) == {"/dev/kfd", "/dev/dri"}
    assert "video" in rocm["group_add"]
    for service, dockerfile in ((cuda, "docker/Dockerfile.cuda"), (rocm, "docker/Dockerfile.rocm")):
        assert service["build"] == {"context": "..", "dockerfile": dockerfile}
        assert (DOCKER.parent / dockerfile).is_file()
        assert service["ipc"] == "host"
        assert "../reports:/workspace/aorta/reports" in service["volumes"]


@pytest.mark.parametrize(
    "name,base", [("Dockerfile.cuda", "nvcr.io/nvidia/pytorch:"), ("Dockerfile.rocm", "rocm/pytorch:")]
)
def test_images_keep_the_vendor_torch_and_run_the_suite(name, base):
    text = (DOCKER / name).read_text()
    assert re.search(rf"^ARG BASE_IMAGE={re.escape(base)}\S+$", text, re.M)
    assert "FROM ${BASE_IMAGE}" in text
    assert "pip install --no-cache-dir --no-deps -e ." in text
    assert "diff - /tmp/torch_before" in text  # the build fails if torch was replaced
    assert text.rstrip().endswith('CMD ["scripts/run_suite.sh"]')


def test_requirements_line_of_the_images_reads_pyproject_without_torch(tmp_path):
    text = (DOCKER / "Dockerfile.cuda").read_text()
    (cmd,) = re.findall(r'(python -c "import re;.*?") > /tmp/requirements.txt', text)
    done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, cwd=DOCKER.parent, timeout=30)
    assert done.returncode == 0, done.stderr
    reqs = done.stdout.split()
    assert any(r.startswith("pytest-benchmark") for r in reqs)
    assert not any(r.startswith("torch") for r in reqs)
