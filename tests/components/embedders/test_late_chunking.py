# SPDX-License-Identifier: Apache-2.0
import json

import numpy as np

from components.embedders.late_chunking import PoolingHead, locate_passages, token_ranges

ART_27 = (
    "Artículo 27\n\n1. Todos tienen el derecho a la educación.\n\n7. Los profesores, los padres y, en su caso,\n"
    "los alumnos intervendrán en el control y gestión de todos los centros."
)


def test_locate_passages_ignores_whitespace_and_finds_overlapping_passages():
    first = "Artículo 27 1. Todos tienen el derecho a la educación."
    seventh = "7. Los profesores, los padres y, en su caso, los alumnos intervendrán"
    overlap = "la educación. 7. Los profesores"
    spans = locate_passages(ART_27, [first, seventh, overlap])
    assert ART_27[spans[0][0] : spans[0][1]] == "Artículo 27\n\n1. Todos tienen el derecho a la educación."
    assert ART_27[spans[1][0] : spans[1][1]].startswith("7. Los profesores")
    assert ART_27[spans[1][0] : spans[1][1]].endswith("los alumnos intervendrán")
    assert ART_27[spans[2][0] : spans[2][1]] == "la educación.\n\n7. Los profesores"  # before the previous start


def test_locate_passages_gives_none_for_a_passage_not_in_the_text_or_blank():
    assert locate_passages(ART_27, ["el derecho de huelga", "  ", "Todos tienen"]) == [
        None, None, (ART_27.index("Todos"), ART_27.index("Todos") + len("Todos tienen"))]


def test_token_ranges_skip_special_tokens_and_spans_past_the_truncation():
    offsets = [(0, 0), (0, 5), (6, 9), (9, 10), (11, 20), (0, 0)]  # [CLS] ... [SEP]
    assert token_ranges(offsets, [(0, 10), (7, 15), (30, 40), None]) == [(1, 4), (2, 5), None, None]


def test_pooling_head_reproduces_the_models_sentence_embedding(tiny_dense_model):
    """The head on the mean of all token states is what sentence-transformers computes (Dense tanh + Normalize)."""
    import torch  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    model = SentenceTransformer(str(tiny_dense_model), local_files_only=True)
    features = model.tokenize(["el contrato de los trabajador"])
    with torch.no_grad():
        out = model.forward(features)
    states = out["token_embeddings"][0].numpy()
    head = PoolingHead.from_folder(tiny_dense_model)
    assert head is not None and len(head.layers) == 1 and head.normalize
    whole = head.passages(states, [(0, states.shape[0])])[0]
    np.testing.assert_allclose(whole, out["sentence_embedding"][0].numpy(), atol=1e-5)
    part = head.passages(states, [(1, 3), None])
    assert part[1] is None and abs(float(np.linalg.norm(part[0])) - 1.0) < 1e-5
    assert float(part[0] @ whole) < 0.9999  # a passage is not the whole text


def test_the_head_applied_once_to_several_texts_gives_each_passage_its_own_vector(tiny_dense_model):
    """`apply` over many texts' averaged states = `passages` text by text, in the same nesting, `None` kept."""
    head = PoolingHead.from_folder(tiny_dense_model)
    rng = np.random.default_rng(0)
    hidden = head.layers[0][0].shape[1]
    texts = [rng.normal(size=(n, hidden)).astype(np.float32) for n in (5, 9, 3)]
    ranges = [[(0, 2), None, (2, 5)], [None], [(0, 3), (1, 2)]]
    texts[2][1, 0] = np.nan  # a passage whose states are not finite gets no vector
    together = head.apply([head.means(states, r) for states, r in zip(texts, ranges, strict=True)])
    assert [[v is None for v in text] for text in together] == [[False, True, False], [True], [True, True]]
    for states, r, pooled in zip(texts, ranges, together, strict=True):
        for alone, vector in zip(head.passages(states, r), pooled, strict=True):
            assert (alone is None) == (vector is None)
            if vector is not None:
                np.testing.assert_allclose(vector, alone, atol=1e-6)
    assert float(together[0][0] @ together[0][2]) < 0.999  # two passages of one text: two vectors
    assert head.apply([[None], []]) == [[None], []]


def test_pooling_head_refuses_what_late_chunking_cannot_reproduce(tiny_dense_model, tmp_path):
    assert PoolingHead.from_folder(tmp_path) is None  # not a model folder
    folder = tmp_path / "cls"
    folder.mkdir()
    (folder / "1_Pooling").mkdir()
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert PoolingHead.from_folder(folder) is None  # CLS pooling: no mean over a passage's tokens
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    head = PoolingHead.from_folder(folder)
    assert head is not None and head.layers == [] and not head.normalize
    modules = json.loads((tiny_dense_model / "modules.json").read_text())
    modules.append({"idx": 9, "name": "9", "path": "", "type": "sentence_transformers.models.LayerNorm"})
    odd = tmp_path / "odd"
    import shutil  # noqa: PLC0415

    shutil.copytree(tiny_dense_model, odd)
    (odd / "modules.json").write_text(json.dumps(modules))
    assert PoolingHead.from_folder(odd) is None  # a module after pooling it does not know
