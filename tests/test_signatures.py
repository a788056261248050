"""The command-head reduction's fast path splits words exactly as shlex does where it is taken."""

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from core.mining.signatures import _words, command_head

_TEXT = st.text(alphabet=st.sampled_from(list("ab -=./|&;:\t\r\n\x0b\x0c\u00a0\u2003é$*?~(){}[]<>!%@^+,")), max_size=40)
_ANY = st.text(alphabet=st.sampled_from(list("ab -=./\t\n\"'\\#$ é")), max_size=30)


@settings(max_examples=400)
@given(_TEXT)
def test_words_without_quotes_escapes_or_comments_are_shlex_words(segment):
    assert _words(segment) == shlex.split(segment, comments=True)


@settings(max_examples=300)
@given(_ANY)
def test_words_are_shlex_words_or_its_fallback(segment):
    try:
        expected = shlex.split(segment, comments=True)
    except ValueError:
        expected = segment.split()
    assert _words(segment) == expected


def test_heads_are_the_same_with_and_without_quotes():
    assert command_head("cd /x && pytest -q tests/") == "pytest"
    assert command_head('cd "/x y" && FOO=1 npm run build --prod') == "npm run build"
    assert command_head("git commit -m 'fix: # not a comment'") == "git commit"
    assert command_head("echo hi # a comment\nmake test") == "make test"
