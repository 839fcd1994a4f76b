"""tf.train.Checkpoint, CheckpointManager and latest_checkpoint (saving/), as TensorFlow's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tapeflow as tf


def _model(seed=0):
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.layers.Dense(5, activation="tanh"),
                                 tf.keras.layers.Dense(2)])
    return model


def _data():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((16, 3)).astype(np.float32),
            rng.standard_normal((16, 2)).astype(np.float32))


def _train(model, opt, steps):
    x, y = _data()
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize("make_opt", [lambda: tf.keras.optimizers.Adam(0.05),
                                      lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9),
                                      lambda: tf.keras.optimizers.RMSprop(0.01, momentum=0.5)],
                         ids=["adam", "sgd", "rmsprop"])
def test_training_resumed_from_a_checkpoint_gives_the_losses_of_a_run_never_stopped(
        tmp_path, make_opt):
    model, opt = _model(), make_opt()
    model(np.zeros((1, 3), np.float32))
    straight = _train(model, opt, 10)

    model, opt = _model(), make_opt()
    model(np.zeros((1, 3), np.float32))
    first = _train(model, opt, 4)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "ckpt"))
    assert os.path.basename(path) == "ckpt-1"
    assert os.path.isfile(path + ".index") and os.path.isfile(path + ".data-00000-of-00001")
    assert tf.train.latest_checkpoint(str(tmp_path)) == path

    # a fresh process's objects: another model (other initial weights), another optimizer
    model, opt = _model(seed=9), make_opt()
    model(np.zeros((1, 3), np.float32))
    status = tf.train.Checkpoint(model=model, optimizer=opt).restore(path)
    status.assert_existing_objects_matched()
    assert int(opt.iterations) == 4
    rest = _train(model, opt, 6)
    assert first + rest == straight  # exactly: the same state, the same arithmetic
    status.assert_consumed()  # the slots waited for the optimizer's first step


def test_restoring_before_the_model_is_built_assigns_when_its_weights_are_made(tmp_path):
    model, opt = _model(), tf.keras.optimizers.Adam(0.05)
    model(np.zeros((1, 3), np.float32))
    _train(model, opt, 3)
    want = [w.numpy() for w in model.weights]
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "w"))

    fresh, fresh_opt = _model(seed=5), tf.keras.optimizers.Adam(0.05)
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh_opt).restore(path)
    with pytest.raises(AssertionError, match="not restored"):
        status.assert_consumed()  # the weights do not exist yet
    fresh(np.zeros((1, 3), np.float32))  # build: the saved values are assigned
    for a, b in zip(fresh.weights, want):
        np.testing.assert_array_equal(a.numpy(), b)
    a_loss = _train(model, opt, 2)
    b_loss = _train(fresh, fresh_opt, 2)
    assert a_loss == b_loss
    status.assert_consumed()


def test_modules_lists_dicts_and_paths():
    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.arange(6.0).reshape(2, 3))
            self.blocks = [tf.Variable(1.0), {"b": tf.Variable([2.0, 3.0])}]
            self.shared = self.w  # reached twice: saved once

    net = Net()
    ckpt = tf.train.Checkpoint(net=net, step=tf.Variable(7, dtype=tf.int64))
    import tempfile
    path = ckpt.write(os.path.join(tempfile.mkdtemp(), "net"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert names == ["net/blocks/0/.ATTRIBUTES/VARIABLE_VALUE",
                     "net/blocks/1/b/.ATTRIBUTES/VARIABLE_VALUE",
                     "net/w/.ATTRIBUTES/VARIABLE_VALUE",
                     "step/.ATTRIBUTES/VARIABLE_VALUE"]
    np.testing.assert_array_equal(tf.train.load_variable(path, names[2]), net.w.numpy())
    other = Net()
    other.w.assign(np.zeros((2, 3)))
    tf.train.Checkpoint(net=other, step=tf.Variable(0, dtype=tf.int64)).read(path) \
        .assert_consumed()
    np.testing.assert_array_equal(other.w.numpy(), net.w.numpy())
    assert other.shared is other.w


def test_a_mismatch_names_the_variable_and_restores_nothing(tmp_path):
    a = tf.Variable(np.ones(3)), tf.Variable(np.ones((2, 2)))
    path = tf.train.Checkpoint(a=a[0], b=a[1]).write(str(tmp_path / "m"))
    x, y = tf.Variable(np.zeros(3)), tf.Variable(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"'b'.*\(2, 2\).*\(2, 3\)"):
        tf.train.Checkpoint(a=x, b=y).restore(path)
    np.testing.assert_array_equal(x.numpy(), np.zeros(3))  # nothing half-restored
    z = tf.Variable(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="float64.*float32"):
        tf.train.Checkpoint(a=z).restore(path)
    status = tf.train.Checkpoint(a=tf.Variable(np.zeros(3)), c=tf.Variable(1.0)).restore(path)
    with pytest.raises(AssertionError, match="'c'"):
        status.assert_existing_objects_matched()


def test_manager_keeps_the_newest_and_survives_a_new_process(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path),
                                         max_to_keep=3)
    for _ in range(5):
        step.assign_add(1)
        manager.save()
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-3", "ckpt-4", "ckpt-5"]
    assert not os.path.exists(str(tmp_path / "ckpt-1.index"))
    assert manager.latest_checkpoint == tf.train.latest_checkpoint(str(tmp_path))
    again = tf.train.CheckpointManager(tf.train.Checkpoint(step=tf.Variable(0, dtype=tf.int64)),
                                       str(tmp_path), max_to_keep=3)
    assert again.checkpoints == manager.checkpoints
    restored = tf.Variable(0, dtype=tf.int64)
    assert tf.train.CheckpointManager(tf.train.Checkpoint(step=restored), str(tmp_path),
                                      max_to_keep=3).restore_or_initialize().endswith("ckpt-5")
    assert int(restored) == 5
    with open(tmp_path / "checkpoint") as f:
        assert f.readline() == 'model_checkpoint_path: "ckpt-5"\n'


def test_bfloat16_and_integer_values_round_trip(tmp_path):
    values = {"h": tf.Variable(tf.constant([1.5, -2.0, 3.0e3], tf.bfloat16)),
              "f": tf.Variable(tf.constant([0.25], tf.float16)),
              "i": tf.Variable(np.arange(4, dtype=np.int32)),
              "b": tf.Variable(np.array([True, False])),
              "c": tf.Variable(np.array([1 + 2j], np.complex128)),
              "e": tf.Variable(np.zeros((0, 3)))}
    path = tf.train.Checkpoint(**values).write(str(tmp_path / "t"))
    fresh = {k: tf.Variable(tf.zeros_like(v)) for k, v in values.items()}
    tf.train.Checkpoint(**fresh).restore(path).assert_consumed()
    for k in values:
        assert fresh[k].dtype == values[k].dtype
        np.testing.assert_array_equal(np.asarray(fresh[k].numpy(), np.float64)
                                      if k in "hf" else fresh[k].numpy(),
                                      np.asarray(values[k].numpy(), np.float64)
                                      if k in "hf" else values[k].numpy())


# ------------------------------------------------------------------ hostile files
def _saved(tmp_path):
    v = tf.Variable(np.linspace(0.0, 1.0, 50))
    return tf.train.Checkpoint(v=v).write(str(tmp_path / "h")), v


@pytest.mark.parametrize("damage", ["truncate_data", "flip_data", "flip_index", "not_json",
                                    "other_kind", "bad_dtype", "big_offset", "no_data"])
def test_a_damaged_checkpoint_is_refused_naming_the_file(tmp_path, damage):
    import json
    path, _ = _saved(tmp_path)
    data, index = path + ".data-00000-of-00001", path + ".index"
    if damage == "truncate_data":
        with open(data, "r+b") as f:
            f.truncate(100)
    elif damage == "flip_data":
        raw = bytearray(open(data, "rb").read())
        raw[123] ^= 0x10
        open(data, "wb").write(bytes(raw))
    elif damage == "flip_index":
        text = open(index).read().replace('"shape": [\n    50', '"shape": [\n    51')
        open(index, "w").write(text)
    elif damage == "not_json":
        open(index, "wb").write(b"\x80\x00garbage")
    elif damage == "other_kind":
        np.save(index, np.zeros(3))
        os.replace(index + ".npy", index)
    elif damage in ("bad_dtype", "big_offset"):
        import zlib
        meta = json.load(open(index))
        entry = next(iter(meta["entries"].values()))
        if damage == "bad_dtype":
            entry["dtype"] = "object"
        else:
            entry["offset"] = 10 ** 12
        meta.pop("index_crc32")
        meta["index_crc32"] = zlib.crc32(json.dumps(meta, sort_keys=True,
                                                    separators=(",", ":")).encode())
        json.dump(meta, open(index, "w"))
    else:
        os.remove(data)
    target = tf.Variable(np.zeros(50))
    with pytest.raises(tf.errors.DataLossError, match=os.path.basename(path)):
        tf.train.Checkpoint(v=target).restore(path)
    np.testing.assert_array_equal(target.numpy(), np.zeros(50))


def test_a_missing_checkpoint_and_a_bad_pointer_file(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="nowhere"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(tmp_path / "nowhere"))
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-9"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # it points at nothing
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "unterminated\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


# ------------------------------------------------------------------ killed while saving
_SAVER = textwrap.dedent("""
    import sys, numpy as np, tapeflow as tf
    a = tf.Variable(np.zeros(300_000)); b = tf.Variable(np.zeros(1000))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(a=a, b=b), sys.argv[1],
                                         max_to_keep=2)
    step = 0
    while True:
        step += 1
        a.assign(np.full(300_000, float(step))); b.assign(np.full(1000, float(step)))
        manager.save()
        print(step, flush=True)
""")


def test_a_process_killed_while_saving_leaves_the_newest_complete_checkpoint(tmp_path):
    rng = np.random.default_rng(0)
    for trial in range(6):
        directory = tmp_path / f"run{trial}"
        proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(directory)],
                                stdout=subprocess.PIPE, text=True)
        proc.stdout.readline()  # one save done
        time.sleep(rng.uniform(0.0, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        latest = tf.train.latest_checkpoint(str(directory))
        assert latest is not None
        a, b = tf.Variable(np.zeros(300_000)), tf.Variable(np.zeros(1000))
        tf.train.Checkpoint(a=a, b=b).restore(latest).assert_consumed()
        step = a.numpy()[0]
        assert step >= 1 and np.all(a.numpy() == step) and np.all(b.numpy() == step)
        assert latest.endswith(f"ckpt-{int(step)}")


# ------------------------------------------------------------------ the loader, fuzzed
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzz_helpers import damaged  # noqa: E402

_FUZZ_VALUES = {"a": np.linspace(-1.0, 1.0, 37), "b": np.arange(6, dtype=np.int32).reshape(2, 3),
                "c": np.array([True, False, True])}


@pytest.fixture(scope="module")
def fuzz_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    path = tf.train.Checkpoint(**{k: tf.Variable(v) for k, v in _FUZZ_VALUES.items()}).write(
        str(directory / "f"))
    return {suffix: open(path + suffix, "rb").read()
            for suffix in (".index", ".data-00000-of-00001")}


@settings(max_examples=max(20, settings.default.max_examples // 2), deadline=None)
@given(which=st.sampled_from([".index", ".data-00000-of-00001"]),
       edits=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                      max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 10 ** 6)))
def test_a_damaged_file_is_refused_or_restores_exactly_what_was_saved(fuzz_files, tmp_path_factory,
                                                                       which, edits, cut):
    # Bytes changed (or the file cut short) anywhere: a DataLossError and every variable
    # untouched, or (a byte of padding, JSON whitespace) the saved values exactly.
    directory = tmp_path_factory.mktemp("case")
    files = dict(fuzz_files)
    files[which] = damaged(files[which], edits, cut)
    for suffix, content in files.items():
        (directory / ("f" + suffix)).write_bytes(content)
    targets = {k: tf.Variable(np.zeros_like(v)) for k, v in _FUZZ_VALUES.items()}
    try:
        tf.train.Checkpoint(**targets).restore(str(directory / "f"))
    except tf.errors.DataLossError as e:
        assert "f.index" in str(e) or "f.data" in str(e) or str(directory) in str(e)
        for k, v in targets.items():
            np.testing.assert_array_equal(v.numpy(), np.zeros_like(_FUZZ_VALUES[k]))
        return
    for k, v in targets.items():
        np.testing.assert_array_equal(v.numpy(), _FUZZ_VALUES[k])


def test_a_root_objects_dependencies_are_at_the_top_level(tmp_path):
    model = _model()
    model(np.zeros((1, 3), np.float32))
    path = tf.train.Checkpoint(model).write(str(tmp_path / "r"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert "_layers/0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in names, names
    fresh = _model(seed=4)
    tf.train.Checkpoint(fresh).restore(path)
    fresh(np.zeros((1, 3), np.float32))  # built after the restore: deferred
    for a, b in zip(fresh.weights, model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_module_variable_made_on_first_call_is_restored_when_made(tmp_path):
    class Lazy(tf.Module):
        def __call__(self, x):
            if not hasattr(self, "w"):
                self.w = tf.Variable(tf.zeros([3]))
            return x * self.w

    m = Lazy()
    m(tf.ones([3]))
    m.w.assign([1.0, 2.0, 3.0])
    path = tf.train.Checkpoint(m=m).write(str(tmp_path / "lazy"))
    fresh = Lazy()
    status = tf.train.Checkpoint(m=fresh).restore(path)
    with pytest.raises(AssertionError):
        status.assert_consumed()
    np.testing.assert_array_equal(fresh(tf.ones([3])).numpy(), [1.0, 2.0, 3.0])
    status.assert_consumed()


def test_model_save_weights_and_load_weights(tmp_path):
    model = _model()
    model(np.zeros((1, 3), np.float32))
    path = str(tmp_path / "weights")
    model.save_weights(path)
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    other = _model(seed=7)
    other(np.zeros((1, 3), np.float32))
    other.load_weights(path).assert_consumed()
    x = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
    with pytest.raises(NotImplementedError, match="Keras model file"):
        model.save_weights(str(tmp_path / "w.keras"))
    with pytest.raises(FileExistsError):
        model.save_weights(path, overwrite=False)
