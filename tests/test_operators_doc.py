"""docs/operators.md is what benchmarks/operators_doc.py generates from the code: partitioning of every factory op
model and the constraint checks' docstrings (the Vela column is measured by the command and read back here)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ethosu_tvm.partition import constraints
from ethosu_tvm.testing import models
from ethosu_tvm.testing.invalid_models import sin_model

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "operators_doc.py"


@pytest.fixture(scope="module")
def doc():
    spec = importlib.util.spec_from_file_location("benchmarks_operators_doc", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_operators_doc_is_up_to_date(doc):
    text = doc.DOC.read_text()
    expected = doc.render(doc.DEFAULT_ACCELERATOR, doc.stored_vela(text))
    stale = [(new, old) for new, old in zip(expected.splitlines(), text.splitlines()) if new != old]
    assert (stale[:3], len(expected.splitlines())) == ([], len(text.splitlines())), \
        "docs/operators.md is out of date: run .venv/bin/python benchmarks/operators_doc.py --keep-vela"


def test_vela_column_is_measured_for_every_row(doc):
    vela = doc.stored_vela(doc.DOC.read_text())
    assert sorted(vela) == sorted(doc.op_models())
    assert [key for key, cell in vela.items() if not cell] == []
    assert vela["conv2d", "int16"] == "NPU" and vela["div", "int8"] == "CPU: DIV"


def test_a_changed_docstring_changes_the_doc(doc, monkeypatch):
    monkeypatch.setattr(constraints.check_max_pool2d, "__doc__", "MAX_POOL_2D: a changed\n    limit.")
    assert "### check_max_pool2d\n\n`max_pool2d`: MAX_POOL_2D: a changed limit.\n" in doc.constraint_sections()


def test_a_check_without_docstring_is_an_error(doc, monkeypatch):
    monkeypatch.setitem(constraints.CHECKS, "abs", lambda match: "")
    with pytest.raises(ValueError, match=r"^the check of NPU pattern 'abs' \(<lambda>\) has no docstring$"):
        doc.constraint_sections()


@pytest.mark.parametrize("model, error", [
    (b"junk", "ModelFormatError: not a TFLite flatbuffer (missing the 'TFL3' file identifier)"),
    (sin_model(), "UnsupportedHostOp: operator #0 SIN has no NPU or host kernel (relax.sin)"),
])
def test_a_refused_model_is_placed_as_refused(doc, model, error):
    assert doc.placement(model, doc.DEFAULT_ACCELERATOR) == ("", f"refused: {error}", "", "")


def test_a_partly_offloaded_model_names_its_host_reason_and_kernels(doc):
    assert doc.placement(models.make("space_to_batch_nd", 0), doc.DEFAULT_ACCELERATOR) == (
        "SPACE_TO_BATCH_ND", "host: SPACE_TO_BATCH_ND (OFM is 6-D; tensors must not be greater than 4-D)",
        "[pad](#check_pad)", "reshape, transpose")
