"""jitgrad.use_deterministic_algorithms & co: torch's switches, values and errors."""

import pytest

import jitgrad


@pytest.fixture(autouse=True)
def _restore():
    yield
    jitgrad.use_deterministic_algorithms(False)


def test_the_switches_read_back_as_set():
    assert not jitgrad.are_deterministic_algorithms_enabled()
    assert jitgrad.get_deterministic_debug_mode() == 0
    jitgrad.use_deterministic_algorithms(True)
    assert jitgrad.are_deterministic_algorithms_enabled()
    assert not jitgrad.is_deterministic_algorithms_warn_only_enabled()
    assert jitgrad.get_deterministic_debug_mode() == 2
    jitgrad.use_deterministic_algorithms(True, warn_only=True)
    assert jitgrad.is_deterministic_algorithms_warn_only_enabled()
    assert jitgrad.get_deterministic_debug_mode() == 1
    jitgrad.set_deterministic_debug_mode("default")
    assert not jitgrad.are_deterministic_algorithms_enabled()
    jitgrad.set_deterministic_debug_mode(2)
    assert jitgrad.are_deterministic_algorithms_enabled()


def test_the_switches_equal_torch():
    torch = pytest.importorskip("torch")
    try:
        for lib in (torch, jitgrad):
            for mode in ("warn", "error", "default", 1, 2, 0):
                lib.set_deterministic_debug_mode(mode)
                state = (lib.are_deterministic_algorithms_enabled(),
                         lib.is_deterministic_algorithms_warn_only_enabled(),
                         lib.get_deterministic_debug_mode())
                if lib is torch:
                    continue
                torch.set_deterministic_debug_mode(mode)
                assert state == (torch.are_deterministic_algorithms_enabled(),
                                 torch.is_deterministic_algorithms_warn_only_enabled(),
                                 torch.get_deterministic_debug_mode())
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("call", [
    lambda L: L.use_deterministic_algorithms(1),
    lambda L: L.use_deterministic_algorithms(True, warn_only=1),
    lambda L: L.set_deterministic_debug_mode("x"),
    lambda L: L.set_deterministic_debug_mode(3),
    lambda L: L.set_deterministic_debug_mode(1.0),
])
def test_errors_equal_torch(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=None) as ours:
        call(jitgrad)
    assert str(ours.value) == str(theirs.value)
