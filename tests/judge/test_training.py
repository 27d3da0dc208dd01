"""Training end to end on a tiny Switchboard-layout corpus, evaluation, and their metrics."""

import hashlib
import json

import numpy as np
import pytest

from judge.__main__ import main
from judge.evaluation import label_metrics, roc_auc, single_label_decisions
from judge.labels import LABELS
from judge.model import load_checkpoint
from judge.training import TrainingError, train
from tests.scripted import UTTERANCES, write_ms98


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Six MS-98 conversations (the scripted dialogue, shifted in time and with swapped sides)."""
    root = tmp_path_factory.mktemp("swb")
    ids = ["4001", "4002", "4003", "4004", "4005", "4006"]
    for n, conv_id in enumerate(ids):
        shift = 0.3 * n
        swap = n % 2 == 1
        utts = [((1 - spk) if swap else spk, s + shift, e + shift, text) for spk, s, e, text in UTTERANCES]
        write_ms98(root, conv_id, utts, duration=22.0)
    (root / "splits").mkdir()
    (root / "splits" / "train.txt").write_text("\n".join(ids[:4]) + "\n")
    (root / "splits" / "val.txt").write_text("\n".join(ids[4:]) + "\n")
    return root


def test_train_one_epoch_writes_checkpoint_manifest_and_card(corpus, tmp_path, capsys):
    out = tmp_path / "run" / "tiny.pt"
    status = main(["train", "--corpus", "switchboard", str(corpus), "--out", str(out), "--epochs", "1",
                   "--window-s", "4", "--batch-size", "4", "--hidden-size", "16", "--tbu-weight", "3",
                   "--cache-dir", str(tmp_path / "cache")])
    assert status == 0
    captured = capsys.readouterr()
    assert "epoch 1: train loss" in captured.err and "val loss" in captured.err
    assert "wrote" in captured.out

    manifest = json.loads((tmp_path / "run" / "tiny.manifest.json").read_text())
    assert manifest["checkpoint_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    data = manifest["data"]
    assert data["train_conversations"] == ["4001", "4002", "4003", "4004"]
    assert data["val_conversations"] == ["4005", "4006"]
    assert data["train_list_sha256"] == hashlib.sha256("4001\n4002\n4003\n4004".encode()).hexdigest()
    assert manifest["options"]["tbu_weight"] == 3.0 and manifest["options"]["epochs"] == 1
    assert manifest["best_epoch"] == 1 and len(manifest["history"]) == 1
    assert np.isfinite(manifest["validation"]["val_loss"])
    assert manifest["code_version"]["judge_code_sha256"]
    card = (tmp_path / "run" / "tiny.card.md").read_text()
    assert "MS-98" in card and "research" in card and "alpha = 3.0" in card
    assert list((tmp_path / "cache").glob("train-*.npz")) and list((tmp_path / "cache").glob("val-*.npz"))

    model = load_checkpoint(out)
    assert model.config.hidden_size == 16

    # evaluate the trained checkpoint on the val list, as JSON
    status = main(["evaluate", "--checkpoint", str(out), "--corpus", "switchboard", str(corpus),
                   "--split-list", str(corpus / "splits" / "val.txt"), "--json"])
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    for key in ("roc_auc", "f1"):
        assert set(result[key]) == {*LABELS, "overall"}
        assert all(0.0 <= v <= 1.0 for v in result[key].values() if v == v)
    assert result["n_conversations"] == 2 and result["future_activity_nll"] > 0


def test_train_words_judge_keeps_its_training_vocabulary(corpus, tmp_path, capsys):
    out = tmp_path / "words.pt"
    status = main(["train", "--corpus", "switchboard", str(corpus), "--out", str(out), "--inputs", "words",
                   "--vocabulary-size", "8", "--word-dim", "4", "--epochs", "1", "--window-s", "4",
                   "--batch-size", "4", "--hidden-size", "16", "--cache-dir", str(tmp_path / "cache")])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    model = load_checkpoint(out)
    assert model.needs_words and model.config.inputs == "words"
    # the scripted dialogue's 8 most frequent words ("i" 5 times in it, then "you", ...), from train only
    vocabulary = model.config.word_vocabulary
    assert len(vocabulary) == 8 and vocabulary[0] == "i"
    manifest = json.loads((tmp_path / "words.manifest.json").read_text())
    assert manifest["options"]["inputs"] == "words" and manifest["model_config"]["word_vocabulary"] == vocabulary
    card = (tmp_path / "words.card.md").read_text()
    assert "most recent word that has *ended*" in card and "Linear(16 -> 16)" in card
    arrays = list((tmp_path / "cache").glob("train-*.npz"))
    assert len(arrays) == 1 and np.load(arrays[0])["word_ids"].shape[1] == 2

    status = main(["evaluate", "--checkpoint", str(out), "--corpus", "switchboard", str(corpus), "--json"])
    assert status == 0
    assert json.loads(capsys.readouterr().out)["n_conversations"] == 2
    with pytest.raises(TrainingError, match="unknown inputs 'logmel'"):
        train(corpus, tmp_path / "x.pt", inputs="logmel")


def test_bad_training_input_gives_one_line_errors(tmp_path, capsys):
    assert main(["train", "--corpus", "switchboard", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "split list not found" in err and "\n" not in err
    assert main(["train", "--corpus", "fisher", str(tmp_path), "--out", str(tmp_path / "x.pt")]) == 2
    assert "unknown corpus" in capsys.readouterr().err
    assert main(["evaluate", "--corpus", "switchboard", str(tmp_path / "nowhere")]) == 2
    assert "corpus directory not found" in capsys.readouterr().err
    assert main(["evaluate", "--checkpoint", str(tmp_path / "none.pt"), "--corpus", "switchboard", str(tmp_path),
                 "--split-list", str(tmp_path / "list.txt")]) == 2
    assert "split list not found" in capsys.readouterr().err


def test_roc_auc_known_values():
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])) == pytest.approx(0.75)
    assert roc_auc(np.array([1.0, 1.0]), np.array([0, 1])) == pytest.approx(0.5)  # ties count half
    assert np.isnan(roc_auc(np.array([0.2, 0.3]), np.array([1, 1])))


def test_single_label_decisions_follow_the_priority_order():
    probs = np.array([
        [0.25, 0.05, 0.30, 0.30, 0.10],  # C over 0.2 wins although T and I are larger
        [0.10, 0.05, 0.10, 0.25, 0.50],  # NA over 0.45
        [0.15, 0.45, 0.00, 0.40, 0.00],  # I (0.40 is not > 0.4) -> BC 0.45
        [0.10, 0.15, 0.39, 0.36, 0.00],  # nothing over its threshold -> argmax T
    ])
    assert [LABELS[k] for k in single_label_decisions(probs)] == ["C", "NA", "BC", "T"]
    labels = np.array([0, 4, 1, 2])
    m = label_metrics(probs, labels)
    assert m["f1"]["C"] == 1.0 and m["f1"]["I"] == 0.0  # no I at all: F1 counts as 0
    assert m["f1"]["overall"] == pytest.approx(0.8)
    assert m["roc_auc"]["NA"] == 1.0
