"""Every English template has a Chinese twin that uses exactly the same placeholders."""
import pytest

from bot import i18n


def test_every_english_template_has_a_chinese_twin():
    assert i18n.template_names("en") == i18n.template_names("zh")


@pytest.mark.parametrize("name", i18n.template_names("en"))
def test_twins_use_the_same_placeholders(name):
    assert i18n.placeholders(name, "en") == i18n.placeholders(name, "zh")


@pytest.mark.parametrize("name", i18n.template_names("zh"))
def test_chinese_twin_is_written_in_chinese(name):
    env = i18n.environment()
    source = env.loader.get_source(env, i18n.template_path(name, "zh"))[0]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in source), f"zh/{name} has no Chinese text"


@pytest.mark.parametrize("text", ["plain", "a`b", "``x``", "line\nbreak", "`edge"])
def test_inline_code_cannot_be_broken_out_of(text):
    quoted = i18n.inline_code(text)
    fence = quoted[: len(quoted) - len(quoted.lstrip("`"))]
    body = quoted[len(fence): -len(fence)]
    assert fence not in body.replace("\n", "")
    assert "\n" not in quoted
