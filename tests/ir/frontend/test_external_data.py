"""External tensor data is read only from files inside the model's folder (or the `base_dir` given),
never from the working directory, and every refusal names the tensor and the location."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from ir.frontend import FrontendError, from_onnx
from tests.ir.frontend.test_errors import F, model_of

WEIGHT = np.arange(6, dtype=np.float32).reshape(2, 3)


def external_model(location: str = "weights.bin", offset: int = 0) -> onnx.ModelProto:
    """A model adding initializer 'w' (stored in `location` at `offset`) to its input."""
    weight = numpy_helper.from_array(WEIGHT, "w")
    weight.raw_data = b""
    weight.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(WEIGHT.nbytes))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])], [weight])


def save(folder: Path, model: onnx.ModelProto, name: str = "model.onnx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(model.SerializeToString())
    return path


def added_weight(mod) -> np.ndarray:
    return np.asarray(mod["main"].body.args[1].data)


def test_external_data_next_to_the_model(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * 8 + WEIGHT.tobytes())
    path = save(tmp_path, external_model(offset=8))
    mod, _ = from_onnx(path)
    np.testing.assert_array_equal(added_weight(mod), WEIGHT)


def test_external_data_written_by_onnx_save(tmp_path):
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])],
                     [numpy_helper.from_array(WEIGHT, "w")])
    onnx.save(model, tmp_path / "m.onnx", save_as_external_data=True, location="w.data", size_threshold=0)
    mod, _ = from_onnx(str(tmp_path / "m.onnx"))
    np.testing.assert_array_equal(added_weight(mod), WEIGHT)


def test_bytes_with_external_data_need_a_base_dir(tmp_path, monkeypatch):
    (tmp_path / "weights.bin").write_bytes(WEIGHT.tobytes())
    monkeypatch.chdir(tmp_path)  # the file is in the working directory, which must not be searched
    model = external_model()
    for given in (model, model.SerializeToString()):
        with pytest.raises(FrontendError, match=r"initializer 'w' keeps its data in external file 'weights.bin', "
                                                r"but the model was not read from a file: pass base_dir="):
            from_onnx(given)
    np.testing.assert_array_equal(added_weight(from_onnx(model, base_dir=tmp_path)[0]), WEIGHT)
    assert model.graph.initializer[0].data_location == onnx.TensorProto.EXTERNAL  # the caller's proto is untouched


@pytest.mark.parametrize("location", ["../outside.bin", "inner/../../outside.bin"])
def test_a_location_leaving_the_folder(tmp_path, location):
    (tmp_path / "outside.bin").write_bytes(WEIGHT.tobytes())
    path = save(tmp_path / "model", external_model(location))
    with pytest.raises(FrontendError, match=rf"initializer 'w': external data location '{location}' resolves to "
                                            r"'.*outside.bin', outside the model's folder '.*model'"):
        from_onnx(path)


def test_an_absolute_location(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(WEIGHT.tobytes())
    path = save(tmp_path / "model", external_model(str(secret)))
    with pytest.raises(FrontendError, match=r"initializer 'w': external data location '.*secret.bin' is an absolute "
                                            r"path; only files inside the model's folder"):
        from_onnx(path)


def test_a_symlink_out_of_the_folder(tmp_path):
    (tmp_path / "secret.bin").write_bytes(WEIGHT.tobytes())
    path = save(tmp_path / "model", external_model("link.bin"))
    os.symlink(tmp_path / "secret.bin", tmp_path / "model" / "link.bin")
    with pytest.raises(FrontendError, match=r"initializer 'w': external data location 'link.bin' resolves to "
                                            r"'.*secret.bin', outside the model's folder"):
        from_onnx(path)


def test_a_symlink_within_the_folder_is_fine(tmp_path):
    path = save(tmp_path, external_model("link.bin"))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "w.bin").write_bytes(WEIGHT.tobytes())
    os.symlink(tmp_path / "data" / "w.bin", tmp_path / "link.bin")
    np.testing.assert_array_equal(added_weight(from_onnx(path)[0]), WEIGHT)


def test_a_missing_file(tmp_path):
    path = save(tmp_path, external_model("gone.bin"))
    with pytest.raises(FrontendError, match=r"initializer 'w': external data file 'gone.bin' does not exist in"):
        from_onnx(path)


def test_a_file_too_short_for_the_dims(tmp_path):
    (tmp_path / "weights.bin").write_bytes(WEIGHT.tobytes()[:12])
    path = save(tmp_path, external_model())
    with pytest.raises(FrontendError, match=r"initializer 'w' declares 24 bytes, but its external data is 24 bytes "
                                            r"at offset 0 of file 'weights.bin' \(12 bytes\)"):
        from_onnx(path)


def test_a_length_that_does_not_match_the_dims(tmp_path):
    (tmp_path / "weights.bin").write_bytes(WEIGHT.tobytes())
    model = external_model()
    model.graph.initializer[0].dims[:] = [40000, 40000]
    path = save(tmp_path, model)
    with pytest.raises(FrontendError, match=r"initializer 'w' declares 6400000000 bytes, but its external data is "
                                            r"24 bytes"):
        from_onnx(path)
