"""The branches of law the bundled corpus lacks (`components/legal/data/matters.yaml`)."""

import pytest

from components.legal.matters import MATTER_LANGUAGES, load_matters


def test_bundled_matters_have_labels_and_phrases_in_every_language():
    matters = load_matters()
    ids = [m.id for m in matters]
    assert len(ids) == len(set(ids)) >= 10
    assert {"criminal", "tenancy", "consumer", "traffic", "tax", "family"} <= set(ids)
    for matter in matters:
        assert set(matter.labels) == set(matter.phrases) == set(MATTER_LANGUAGES)
        assert all(matter.phrases[lang] for lang in MATTER_LANGUAGES)
    # the corpus's own branches are not among them: a labour question must never be told it is out of scope
    labels = {label for m in matters for label in m.labels.values()}
    assert not any(word in label for label in labels for word in ("laboral", "trabajo", "trabalho", "constitucional"))


def test_prototypes_name_the_matter_before_each_phrase():
    criminal = next(m for m in load_matters() if m.id == "criminal")
    prototypes = criminal.prototypes()
    assert "Derecho penal: robo" in prototypes and "Direito penal: furto" in prototypes
    assert len(prototypes) == sum(len(criminal.phrases[lang]) for lang in MATTER_LANGUAGES)


@pytest.mark.parametrize("text", [
    "- just a list\n",
    "criminal:\n  label: {es: derecho penal}\n  phrases: {es: [robo], pt: [furto]}\n",
    "criminal:\n  label: {es: derecho penal, pt: direito penal}\n  phrases: {es: [robo], pt: []}\n",
    "criminal:\n  label: {es: derecho penal, pt: direito penal}\n  phrases: {es: robo, pt: [furto]}\n",
])
def test_a_malformed_matters_file_is_a_clear_error(tmp_path, text):
    path = tmp_path / "matters.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="matter"):
        load_matters(path)


def test_a_custom_matters_file(tmp_path):
    path = tmp_path / "matters.yaml"
    path.write_text("maritime:\n  label: {es: derecho marítimo, pt: direito marítimo}\n"
                    "  phrases: {es: [buques, fletes], pt: [navios]}\n", encoding="utf-8")
    (maritime,) = load_matters(path)
    assert maritime.prototypes() == ["Derecho marítimo: buques", "Derecho marítimo: fletes", "Direito marítimo: navios"]
