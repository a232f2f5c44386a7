from components.legal.spelling import correct_spelling, sound_key


def test_sound_key_maps_the_spellings_people_confuse_to_one_form():
    assert sound_key("bacaciones") == sound_key("vacaciones")
    assert sound_key("indenisacion") == sound_key("indemnización")
    assert sound_key("trabaio") == sound_key("trabalho")
    assert sound_key("kuantos") == sound_key("cuantos")
    assert sound_key("ago") == sound_key("hago")
    assert sound_key("noiti") == sound_key("noite") and sound_key("tenhu") == sound_key("tenho")
    assert sound_key("despido") != sound_key("despedido")  # a missing syllable is no sound-alike


def test_correct_spelling_returns_the_text_and_each_change():
    text, changes = correct_spelling("kuantos dias de bacaciones tengo")
    assert text == "cuantos dias de vacaciones tengo"
    assert changes == [{"from": "kuantos", "to": "cuantos"}, {"from": "bacaciones", "to": "vacaciones"}]
    assert correct_spelling("¿Cuántos días de vacaciones tengo?") == ("¿Cuántos días de vacaciones tengo?", [])
    # stricter thresholds leave what the defaults correct
    assert correct_spelling("kuantos dias de bacaciones tengo", min_gain=9.0)[1] == []
